"""The budget split the planner chooses against the default split, on real data, in one run.

Run: ``python benchmarks/budget_split.py [--repetitions 10]``. `pmp.privatize` spends ε on each
released statistic; by default in proportion to its sensitivity (every cell the same noise
scale), now in the shares that minimise the posterior variance `pmp.plan` predicts
(`pymc_private.planning.planner.forecast`; public quantities only). Both are run here on
the same privatisation seeds, the default by switching the planner's split off:

- **Normal mean and precision** on scikit-learn's breast cancer "mean area" (569 patients,
  declared in a public range [0, 2600] µm², clipped): Σx and Σx² are released. Printed per ε:
  the posterior mean's error against the non-private posterior mean, in units of the
  non-private posterior sd, the 90% interval's width and its coverage of the non-private
  mean.

Regressions keep the default split (the planner does not see the bias a noisier XᵀX
brings; `pymc_private.planning.planner._Planner.best_split` has the numbers).
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings
from unittest import mock

import numpy as np
import pymc as pm
from sklearn.datasets import load_breast_cancer

import pymc_private as pmp

AREA = (0.0, 2600.0)


def area_model(values):
    with pm.Model() as model:
        area = pmp.PrivateData("area_obs", values, bounds=AREA, out_of_bounds="clip")
        mu = pmp.TruncatedNormal("mu", 1000.0, 2000.0, lower=0.0, upper=5000.0)
        tau = pmp.TruncatedGamma("tau", 1.0, 1e4, lower=1e-8, upper=1e-3)
        pm.Normal("area", mu, tau=tau, observed=area)
    return model


def fit(model, epsilon, seed, informed):
    """The posterior draws of a privatisation at ε with the chosen split or the default."""
    split = None if informed else (lambda *_: None)
    patch = mock.patch("pymc_private.pay_once.privatize.forecast", split) if split else None
    if patch:
        patch.start()
    try:
        private = pmp.privatize(model, epsilon, secure=False, random_seed=seed)
    finally:
        if patch:
            patch.stop()
    return pmp.sample(model=private, random_seed=seed, progressbar=False).posterior


def normal_rows(repetitions):
    data = load_breast_cancer()
    values = np.clip(data.data[:, list(data.feature_names).index("mean area")], *AREA)
    with area_model(values):
        exact = pm.sample(1000, tune=1000, chains=2, random_seed=0, progressbar=False)
    centre = float(exact.posterior["mu"].mean())
    spread = float(exact.posterior["mu"].std())
    print(f"\nNormal mean of 'mean area' (n = 569): non-private mu = {centre:.1f} ± {spread:.1f}")
    print(f"{'ε':>5}  {'split':8}  {'|error|/sd':>10}  {'90% width':>9}  {'covers':>6}")
    for epsilon in (0.3, 1.0, 3.0):
        for informed in (False, True):
            errors, widths, covers = [], [], []
            for seed in range(repetitions):
                draws = fit(area_model(values), epsilon, seed, informed)["mu"].values.ravel()
                low, high = np.quantile(draws, [0.05, 0.95])
                errors.append(abs(draws.mean() - centre) / spread)
                widths.append(high - low)
                covers.append(low <= centre <= high)
            print(
                f"{epsilon:5g}  {'planner' if informed else 'default':8}  "
                f"{np.mean(errors):10.1f}  {np.mean(widths):9.0f}  {np.mean(covers):6.0%}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=10)
    arguments = parser.parse_args()
    warnings.filterwarnings("ignore")
    logging.getLogger("pymc").setLevel(logging.ERROR)
    logging.getLogger("pymc_private").setLevel(logging.ERROR)
    start = time.perf_counter()
    normal_rows(arguments.repetitions)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
