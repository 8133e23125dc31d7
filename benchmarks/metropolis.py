"""PrivateMetropolis against pm.Metropolis: draws per second on the same model, in one run.

Run with ``python benchmarks/metropolis.py``. Both samplers sample the same Bayesian
logistic regression (bounded features, a TruncatedMvNormal prior on the weights) with one
chain on one core; compilation happens before the clock starts. `pm.Metropolis` proposes
every weight in turn (its default for a vector variable), PrivateMetropolis the whole block
at once with Barker acceptance (with L from the privacy analysis, or with per-record
clipping), so a "draw" is one sweep of each.
"""

from __future__ import annotations

import time

import numpy as np
import pymc as pm

from pymc_private.data import PrivateData
from pymc_private.priors import TruncatedMvNormal
from pymc_private.steps.metropolis import PrivateMetropolis

N_RECORDS = 1000
N_FEATURES = 5
DRAWS = 3000


def logistic_model(seed: int = 0) -> pm.Model:
    rng = np.random.default_rng(seed)
    features = rng.uniform(-1, 1, size=(N_RECORDS, N_FEATURES)) / np.sqrt(N_FEATURES)
    weights = rng.normal(size=N_FEATURES)
    labels = rng.uniform(size=N_RECORDS) < 1 / (1 + np.exp(-features @ weights))
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", features, bounds=(-1, 1))
        y_obs = PrivateData("y_obs", labels.astype(np.int64), bounds=(0, 1))
        w = TruncatedMvNormal("w", mu=np.zeros(N_FEATURES), cov=np.eye(N_FEATURES), radius=3.0)
        pm.Bernoulli("y", logit_p=x_obs @ w, observed=y_obs)
    return model


def draws_per_second(model: pm.Model, step) -> float:
    with model:
        start = time.perf_counter()
        pm.sample(
            DRAWS,
            tune=0,
            step=step,
            chains=1,
            cores=1,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
        )
    return DRAWS / (time.perf_counter() - start)


def main() -> None:
    model = logistic_model()
    with model:
        steps = {
            "PrivateMetropolis (2L/T)": PrivateMetropolis(proposal_scale=0.1),
            "PrivateMetropolis (clip=1)": PrivateMetropolis(clip=1.0, proposal_scale=0.1),
            "pm.Metropolis": pm.Metropolis(),
        }
    print(f"logistic regression, n={N_RECORDS}, d={N_FEATURES}, {DRAWS} draws, 1 chain")
    for name, step in steps.items():
        print(f"{name:28s} {draws_per_second(model, step):10.0f} draws/s")


if __name__ == "__main__":
    main()
