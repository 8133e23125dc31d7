"""The cost of exactness: raw-data draws on the public grid against inverse-CDF draws.

Run: ``python benchmarks/exact_draws.py``. For each model it builds a raw-data
`PrivateGibbs` step (T = 10) and times, in this one run, per sweep:

- the grid exponential mechanism with ``secure=True`` (OpenDP's exact selection) and with
  ``secure=False`` (seeded numpy Gumbel-max), as the step runs;
- the former inverse-CDF / rejection draw from the same conditionals
  (`pymc_private.priors.conjugate.ConjugateFamily.draw`, which is exact only up to floating point
  and is
  no longer used on raw data because the set of floats it can output depends on the data).

It prints sweeps per second of each and the ratios (how many times slower exactness is).
"""

from __future__ import annotations

import logging
import time
import warnings

import numpy as np
import pymc as pm

from pymc_private.data.declaration import PrivateData
from pymc_private.examples.demo import naive_bayes_model
from pymc_private.priors.distributions import TruncatedDirichlet, TruncatedGamma, TruncatedNormal
from pymc_private.steps.gibbs import PrivateGibbs

TEMPERATURE = 10.0
SWEEPS = 200


def beta_bernoulli() -> pm.Model:
    rng = np.random.default_rng(0)
    return naive_bayes_model(rng.integers(0, 2, 1000), rng.integers(0, 2, (1000, 1)))


def naive_bayes() -> pm.Model:
    rng = np.random.default_rng(1)
    return naive_bayes_model(rng.integers(0, 2, 1000), rng.integers(0, 2, (1000, 10)))


def normal_mean_precision() -> pm.Model:
    x = np.clip(np.random.default_rng(2).normal(0.5, 1.0, 1000), -3.0, 3.0)
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", x, bounds=(-3.0, 3.0))
        mu = TruncatedNormal("mu", 0.0, 2.0, lower=-2.0, upper=2.0)
        tau = TruncatedGamma("tau", 2.0, 1.0, lower=0.1, upper=10.0)
        pm.Normal("x", mu, tau=tau, observed=x_obs)
    return model


def categorical() -> pm.Model:
    labels = np.random.default_rng(3).integers(0, 3, 1000)
    with pm.Model() as model:
        c_obs = PrivateData("c_obs", labels, bounds=(0, 2))
        p = TruncatedDirichlet("p", a=np.ones(3), min_prob=0.05)
        pm.Categorical("c", p, observed=c_obs)
    return model


MODELS = {
    "Beta-Bernoulli (2 blocks, 3 entries)": beta_bernoulli,
    "naive Bayes, d = 10 (21 entries)": naive_bayes,
    "Normal mu, tau (2 blocks)": normal_mean_precision,
    "Categorical, K = 3 (lattice)": categorical,
}


def sweeps_per_second(step: PrivateGibbs, model: pm.Model) -> float:
    point = model.initial_point()
    step.setup_chain(np.random.default_rng(4), tune=0, draws=0)
    step.step(point)
    start = time.perf_counter()
    for _ in range(SWEEPS):
        point, _ = step.step(point)
    return SWEEPS / (time.perf_counter() - start)


def inverse_cdf_sweeps_per_second(step: PrivateGibbs, model: pm.Model) -> float:
    """The former raw-data sweep: the same exact conditionals, drawn by inverse CDF."""
    statistics = {
        node: ({k: np.asarray(v, dtype=float) for k, v in full.items()}, np.asarray(totals, float))
        for node, (full, totals) in step._statistics.items()
    }
    values = {
        block.name: np.asarray(block.support.lower + block.support.upper, float) / 2
        for block in step.blocks
    }
    rng = np.random.default_rng(5)
    start = time.perf_counter()
    for _ in range(SWEEPS):
        for block in step.blocks:
            parameters = block.conditional(statistics, values, TEMPERATURE)
            values[block.name] = block.family.draw(rng, parameters, block.support, name=block.name)
    return SWEEPS / (time.perf_counter() - start)


def main() -> None:
    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    header = f"{'model':38s} {'secure/s':>9s} {'seeded/s':>9s} {'inv-CDF/s':>10s}"
    print(header + f" {'inv/secure':>11s} {'inv/seeded':>11s}")
    for name, build in MODELS.items():
        model = build()
        with model:
            secure = PrivateGibbs(temperature=TEMPERATURE, secure=True)
            seeded = PrivateGibbs(temperature=TEMPERATURE, secure=False)
        rates = (
            sweeps_per_second(secure, model),
            sweeps_per_second(seeded, model),
            inverse_cdf_sweeps_per_second(seeded, model),
        )
        print(
            f"{name:38s} {rates[0]:9.0f} {rates[1]:9.0f} {rates[2]:10.0f}"
            f" {rates[2] / rates[0]:11.1f} {rates[2] / rates[1]:11.1f}"
        )


if __name__ == "__main__":
    main()
