"""PrivateGibbs on a privatised naive Bayes model: draws per second against n, and against NUTS.

Run: ``python benchmarks/gibbs_scaling.py``. For n = 10³ … 10⁶ records (d = 10 binary
features) it privatises the model once (ε = 1, ``secure=False`` for speed) and times
`PrivateGibbs` in ``pm.sample`` (one chain, no tuning, after a short warm-up run): after the
release the sampler sees only the privatised counts, so its cost per draw does not depend on
n. It then times NUTS on the raw, non-private model at n = 10⁵ (the same priors and
likelihood, sampled by ``pm.sample`` with its defaults) and prints the ratio of draws per
second, all measured in this one run. Times are PyMC's own ``sampling_time`` (compilation
excluded).
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pymc as pm

from pymc_private.demo import naive_bayes_model
from pymc_private.privatize import privatize
from pymc_private.steps.gibbs import PrivateGibbs

SIZES = (1_000, 10_000, 100_000, 1_000_000)
FEATURES = 10
GIBBS_DRAWS = 2_000
NUTS_SIZE = 100_000
NUTS_TUNE, NUTS_DRAWS = 100, 100
A = 0.05


def naive_bayes(n: int, seed: int = 0) -> pm.Model:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    rates = np.where(labels[:, None] == 1, 0.7, 0.3)
    features = (rng.random((n, FEATURES)) < rates).astype(np.int64)
    return naive_bayes_model(labels, features, a=A)


def draws_per_second(model: pm.Model, step, *, tune: int, draws: int) -> float:
    with model:
        idata = pm.sample(
            draws,
            tune=tune,
            step=step,
            chains=1,
            cores=1,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
        )
    return (tune + draws) / idata.posterior.attrs["sampling_time"]


def main() -> None:
    warnings.filterwarnings("ignore")
    logging.getLogger("pymc").setLevel(logging.ERROR)
    print(f"PrivateGibbs on privatised naive Bayes (d = {FEATURES}), one chain")
    print(f"{'n':>10}{'draws/s':>12}")
    gibbs = {}
    for n in SIZES:
        private = privatize(naive_bayes(n), 1.0, secure=False, random_seed=n)
        with private:
            step = PrivateGibbs()
        draws_per_second(private, step, tune=0, draws=50)  # warm-up: first-call costs
        gibbs[n] = draws_per_second(private, step, tune=0, draws=GIBBS_DRAWS)
        print(f"{n:>10}{gibbs[n]:>12.0f}")
    spread = max(gibbs.values()) / min(gibbs.values())
    print(f"max/min draws per second over n: {spread:.2f} (flat in n: close to 1)")

    raw = naive_bayes(NUTS_SIZE)
    with raw:
        nuts = draws_per_second(raw, pm.NUTS(), tune=NUTS_TUNE, draws=NUTS_DRAWS)
    print(f"NUTS on the raw (non-private) model, n = {NUTS_SIZE}: {nuts:.1f} draws/s")
    print(f"PrivateGibbs / NUTS at n = {NUTS_SIZE}: {gibbs[NUTS_SIZE] / nuts:.0f}×")


if __name__ == "__main__":
    main()
