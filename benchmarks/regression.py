"""Private Bayesian linear regression on scikit-learn's diabetes data: failures and test MSE.

Run: ``python benchmarks/regression.py [--privatisations 20] [--delta 1e-6]``. 442
patients, 10 baseline features (scikit-learn ships them centred and scaled to standard
deviation 0.048; the public constant 0.1, about two standard deviations, maps them into the
declared bounds [−1, 1], clipping the ~4% of values beyond: a wider constant leaves the
bounds, and so the noise, for values that almost never occur), an intercept column of ones,
and disease progression y mapped to (y − 150)/100 and declared in [−2, 2]. A fixed split
(seed 0) keeps 353 training rows private and 89 for testing. The model: w ~ N(0, I) on the
ball ‖w‖ ≤ 3 (`TruncatedMvNormal`), noise precision τ ~ Gamma(2, 1) on [0.1, 50],
y ~ N(x·w, 1/τ).

For each ε, ``--privatisations`` independent privatisations (fresh secure noise each) are
sampled with `pmp.sample` (noise-aware posterior, NUTS); it prints how many failed to sample,
the test MSE of the posterior-mean predictor (in the original units of y), the baseline of
predicting the training mean, and ordinary least squares on the raw training rows (never
released, for comparison only).
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings

import numpy as np
import pymc as pm
from sklearn.datasets import load_diabetes

import pymc_private as pmp
from pymc_private.analysis.privatisation import privatisation_of

EPSILONS = (0.1, 1.0, 10.0)
SCALE_X, CENTRE_Y, SCALE_Y = 0.1, 150.0, 100.0


def load():
    features, target = load_diabetes(return_X_y=True)
    x = np.column_stack([np.ones(len(target)), np.clip(features / SCALE_X, -1.0, 1.0)])
    y = np.clip((target - CENTRE_Y) / SCALE_Y, -2.0, 2.0)
    order = np.random.default_rng(0).permutation(len(target))
    test, train = order[:89], order[89:]
    return x[train], y[train], x[test], target[test]


def model_of(x, y):
    p = x.shape[1]
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", x, bounds=(-1.0, 1.0))
        y_obs = pmp.PrivateData("y_obs", y, bounds=(-2.0, 2.0))
        w = pmp.TruncatedMvNormal("w", np.zeros(p), np.eye(p), radius=3.0)
        tau = pmp.TruncatedGamma("tau", 2.0, 1.0, lower=0.1, upper=50.0)
        pm.Normal("y", x_obs @ w, tau=tau, observed=y_obs)
    return model


def mse(weights, x, target):
    return float(np.mean((target - (CENTRE_Y + SCALE_Y * (x @ weights))) ** 2))


def main(privatisations: int, delta: float, draws: int, epsilons) -> None:
    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    x, y, x_test, target_test = load()
    model = model_of(x, y)
    baseline = float(np.mean((target_test - (CENTRE_Y + SCALE_Y * y.mean())) ** 2))
    ols = mse(np.linalg.lstsq(x, y, rcond=None)[0], x_test, target_test)
    print(f"{len(y)} private training rows, {len(target_test)} test rows, 10 features + intercept")
    print(f"test MSE: predict the training mean {baseline:.0f}; OLS on raw rows {ols:.0f}")
    options = {"delta": delta} if delta > 0 else {}
    for epsilon in epsilons:
        errors, failures, start = [], 0, time.perf_counter()
        for k in range(privatisations):
            try:
                private = pmp.privatize(model, epsilon, **options)
                with private:
                    idata = pmp.sample(
                        draws,
                        tune=draws,
                        chains=2,
                        cores=1,
                        random_seed=k,
                        progressbar=False,
                        compute_convergence_checks=False,
                    )
            except Exception as error:  # any failure counts (typed or not), and is shown
                failures += 1
                print(f"  ε = {epsilon:g}, privatisation {k}: {type(error).__name__}: {error}")
                continue
            weights = idata.posterior["w"].to_numpy().reshape(-1, x.shape[1]).mean(axis=0)
            errors.append(mse(weights, x_test, target_test))
        mechanism = {r.mechanism for r in privatisation_of(private).releases}
        print(
            f"ε = {epsilon:g} ({', '.join(sorted(mechanism))}): "
            f"failures {failures}/{privatisations}, "
            f"test MSE {np.mean(errors):.0f} ± {np.std(errors, ddof=1):.0f} "
            f"(min {np.min(errors):.0f}, max {np.max(errors):.0f}), "
            f"{np.mean(errors) / baseline:.2f}× the baseline "
            f"({time.perf_counter() - start:.0f} s)",
            flush=True,
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--privatisations", type=int, default=20)
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--epsilons", type=float, nargs="+", default=EPSILONS)
    args = parser.parse_args()
    main(args.privatisations, args.delta, args.draws, args.epsilons)
