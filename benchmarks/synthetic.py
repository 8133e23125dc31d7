"""Coverage of downstream intervals on synthetic data from a noise-aware posterior.

Run: ``python benchmarks/synthetic.py [--repetitions 200] [--n 500] [--epsilon 1] [--m 100]
[--draws 500]`` (draws per chain, 2 chains). Each repetition draws a table of n records from
a fixed naive Bayes population (a binary label y, P(y = 1) = 0.4, and two binary features
with P(x_j = 1 | y) = THETA[y, j]), privatises the naive Bayes model at ε (`pmp.privatize`,
noise-aware), samples it, synthesises m data sets (`pmp.synthesize`) and runs on each the
analyst's regression, ordinary least squares of x_a on (1, y), whose slope is the difference
THETA[1, a] − THETA[0, a]. The m fits are combined by `pmp.combine_synthetic`: the mixture
with n_synthetic = 10 n, and Raghunathan et al.'s rule with n_synthetic = n. It prints the
coverage of their 90% intervals for the slope and the intercept (THETA[0, a]) over the
repetitions, their mean widths, and, for reference, those of the noise-aware posterior itself
and of the same regression on the raw table (the non-private analysis, without the privacy
noise).

Measured with the defaults (200 repetitions, Monte Carlo standard error 0.021), coverage
(mean width) of the intercept and the slope: mixture 0.890 (0.098), 0.905 (0.171); Rubin
0.880 (0.093), 0.905 (0.170); the posterior 0.890 (0.092), 0.890 (0.161); OLS on the raw
table 0.900 (0.081), 0.895 (0.128). With ``--draws 100 --m 50``: mixture 0.880, 0.875; Rubin
0.845, 0.890; the posterior 0.835, 0.865 (short chains give short quantile intervals). At
``--epsilon 0.1 --repetitions 100`` (standard error 0.030), where the noise dominates and the
intervals are 5 times wider: mixture 0.940 (0.382), 0.920 (0.682); Rubin 0.950, 0.950; the
posterior 0.950, 0.950 (the truncated prior is then informative and THETA sits well inside
it, so every Bayesian interval over-covers alike); OLS on the raw table 0.880, 0.880.
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings

import numpy as np
import pymc as pm

import pymc_private as pmp

THETA = np.array([[0.2, 0.3], [0.7, 0.6]])
PI = 0.4


def naive_bayes(labels, features) -> pm.Model:
    with pm.Model(coords={"cls": [0, 1], "feature": ["a", "b"]}) as model:
        y_obs = pmp.PrivateData("y_obs", labels, bounds=(0, 1))
        x_obs = pmp.PrivateData("x_obs", features, bounds=(0, 1), dims=("record", "feature"))
        pi = pmp.TruncatedBeta("pi", 1, 1, lower=0.05, upper=0.95)
        theta = pmp.TruncatedBeta("theta", 1, 1, lower=0.05, upper=0.95, dims=("cls", "feature"))
        pm.Bernoulli("y", pi, observed=y_obs)
        pm.Bernoulli("x", theta[y_obs], observed=x_obs, dims=("record", "feature"))
    return model


def least_squares(y, x) -> tuple[np.ndarray, np.ndarray]:
    """OLS of ``x`` on (1, ``y``): the coefficients and their variances (homoscedastic)."""
    design = np.column_stack([np.ones(len(y)), y])
    coefficients, *_ = np.linalg.lstsq(design, x, rcond=None)
    residuals = x - design @ coefficients
    scale = residuals @ residuals / (len(x) - 2)
    return coefficients, np.diag(scale * np.linalg.inv(design.T @ design))


def fits(frames) -> tuple[np.ndarray, np.ndarray]:
    """The regression on every synthetic data set: estimates and variances, (m, 2)."""
    pairs = [
        least_squares(frame["y_obs"].to_numpy(float), frame["x_obs[a]"].to_numpy(float))
        for frame in frames
    ]
    return np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])


def repetition(rng, n, epsilon, m, draws):
    labels = rng.binomial(1, PI, n)
    features = rng.binomial(1, THETA[labels])
    truth = np.array([THETA[0, 0], THETA[1, 0] - THETA[0, 0]])
    model = naive_bayes(labels, features)
    private = pmp.privatize(model, epsilon)
    idata = pmp.sample(draws, chains=2, model=private, progressbar=False, random_seed=rng)
    seed = int(rng.integers(2**31))
    results = {}
    for method, n_synthetic in (("mixture", 10 * n), ("rubin", n)):
        frames = pmp.synthesize(idata, model, m=m, n=n_synthetic, random_seed=seed)
        estimates, variances = fits(frames)
        combined = pmp.combine_synthetic(
            estimates, variances, n_synthetic=n_synthetic, n_original=n, method=method
        )
        results[method] = combined.interval(0.9)
    theta = idata.posterior["theta"].sel(feature="a").values.reshape(-1, 2)
    posterior = np.stack([theta[:, 0], theta[:, 1] - theta[:, 0]], axis=1)
    results["posterior"] = tuple(np.quantile(posterior, [0.05, 0.95], axis=0))
    coefficients, variances = least_squares(labels.astype(float), features[:, 0].astype(float))
    half = 1.6449 * np.sqrt(variances)
    results["raw data, non-private"] = (coefficients - half, coefficients + half)
    return {
        name: ((low <= truth) & (truth <= high), high - low)
        for name, (low, high) in results.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=200)
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--m", type=int, default=100)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")  # short chains, small synthetic sets: measured below
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    runs = [
        repetition(rng, args.n, args.epsilon, args.m, args.draws) for _ in range(args.repetitions)
    ]
    print(
        f"naive Bayes, n = {args.n}, ε = {args.epsilon}, m = {args.m} synthetic data sets, "
        f"{args.repetitions} repetitions ({time.perf_counter() - start:.0f} s); OLS of x_a on "
        "(1, y); coverage of 90% intervals (mean width)"
    )
    print(f"{'':32} {'intercept':>20} {'slope':>20}")
    for name in runs[0]:
        covered = np.mean([run[name][0] for run in runs], axis=0)
        width = np.mean([run[name][1] for run in runs], axis=0)
        label = {
            "mixture": "mixture, n_synthetic = 10 n",
            "rubin": "Rubin (RRR 2003), n_synthetic = n",
        }.get(name, name)
        cells = "".join(f"{c:>12.3f} ({w:.3f})" for c, w in zip(covered, width, strict=True))
        print(f"{label:32} {cells}")
    stderr = np.sqrt(0.9 * 0.1 / args.repetitions)
    print(f"(Monte Carlo standard error of a coverage near 0.9: {stderr:.3f})")


if __name__ == "__main__":
    main()
