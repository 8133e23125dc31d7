"""Draws per second on a privatised naive Bayes model: batched exact draws, NUTS, PrivateGibbs.

Run: ``python benchmarks/gibbs_scaling.py`` (about 3 minutes on a 2-core machine).

For n = 10³ … 10⁶ records (d = 10 binary features) it privatises the model once (ε = 1,
``noise_aware=False``, whose posterior is a product of conjugate blocks, ``secure=False``
for speed) and times, all in this one run:

- ``pmp.sample`` without ``step``: the batched exact sampler (every chain and draw of a
  block drawn in one vectorised call; 4 chains × 25,000 independent draws), whole calls
  timed (building the InferenceData included);
- ``pmp.sample(step=pmp.PrivateGibbs())``: the conjugate Gibbs step inside ``pm.sample``,
  one chain, no tuning;
- ``pmp.sample(step=pm.NUTS())`` on the same privatised model, one chain, 100 tuning
  iterations and 200 draws (tuning iterations count as draws: both are work).

Batched times are the best of five calls (each ~0.2 s, so one call's time is noisy) and
Gibbs times one call, wall-clock, after a warm-up call; NUTS times
are PyMC's own ``sampling_time`` (compilation excluded). It prints draws per second for
each n, the ratios batched/NUTS and batched/Gibbs, and max/min over n (flat in n: close
to 1; the statistics, not the records, are what the samplers read).
"""

from __future__ import annotations

import logging
import time
import warnings

import numpy as np
import pymc as pm

import pymc_private as pmp
from pymc_private.examples.demo import naive_bayes_model

SIZES = (1_000, 10_000, 100_000, 1_000_000)
FEATURES = 10
CHAINS, BATCHED_DRAWS = 4, 25_000
REPEATS = 5  # batched calls take ~0.2 s: the best of five, as timeit does
GIBBS_DRAWS = 2_000
NUTS_TUNE, NUTS_DRAWS = 100, 200
A = 0.05


def privatised(n: int, seed: int = 0) -> pm.Model:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    rates = np.where(labels[:, None] == 1, 0.7, 0.3)
    features = (rng.random((n, FEATURES)) < rates).astype(np.int64)
    model = naive_bayes_model(labels, features, a=A)
    return pmp.privatize(model, 1.0, noise_aware=False, secure=False, random_seed=n)


def batched(model: pm.Model) -> float:
    kwargs = dict(model=model, chains=CHAINS, random_seed=1, progressbar=False)
    pmp.sample(100, **kwargs)  # warm-up
    seconds = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        pmp.sample(BATCHED_DRAWS, **kwargs)
        seconds.append(time.perf_counter() - start)
    return CHAINS * BATCHED_DRAWS / min(seconds)


def stepped(model: pm.Model, step, *, tune: int, draws: int, wall: bool) -> float:
    kwargs = dict(model=model, step=step, chains=1, cores=1, random_seed=1, progressbar=False)
    pmp.sample(20, tune=0, compute_convergence_checks=False, **kwargs)  # warm-up
    start = time.perf_counter()
    idata = pm.sample(
        draws,
        tune=tune,
        step=step,
        chains=1,
        cores=1,
        random_seed=1,
        progressbar=False,
        model=model,
        compute_convergence_checks=False,
    )
    seconds = time.perf_counter() - start if wall else idata.posterior.attrs["sampling_time"]
    return (tune + draws) / seconds


def main() -> None:
    warnings.filterwarnings("ignore")
    logging.getLogger("pymc").setLevel(logging.ERROR)
    print(f"Privatised naive Bayes (d = {FEATURES}, ε = 1, plug-in posterior): draws per second")
    print(f"{'n':>10}{'batched':>12}{'Gibbs':>10}{'NUTS':>10}{'b/NUTS':>9}{'b/Gibbs':>9}")
    rates = {"batched": [], "gibbs": [], "nuts": []}
    for n in SIZES:
        model = privatised(n)
        with model:
            gibbs_step, nuts_step = pmp.PrivateGibbs(), pm.NUTS()
        rates["batched"].append(batched(model))
        rates["gibbs"].append(stepped(model, gibbs_step, tune=0, draws=GIBBS_DRAWS, wall=True))
        rates["nuts"].append(
            stepped(model, nuts_step, tune=NUTS_TUNE, draws=NUTS_DRAWS, wall=False)
        )
        b, g, u = (rates[k][-1] for k in ("batched", "gibbs", "nuts"))
        print(f"{n:>10,}{b:>12,.0f}{g:>10,.0f}{u:>10,.0f}{b / u:>9.0f}{b / g:>9.0f}")
    for name, values in rates.items():
        print(f"{name}: max/min draws per second over n = {max(values) / min(values):.2f}")


if __name__ == "__main__":
    main()
