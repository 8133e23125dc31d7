"""Coverage of 90% credible intervals of privatised posteriors, noise-aware against plug-in.

Run: ``python benchmarks/calibration.py [--repetitions 300]``. For Beta–Bernoulli (θ on
[0.05, 0.95], Beta(1, 1) prior) and a Normal mean (σ = 1 known, μ ~ Normal(0, 1) on [−3, 3],
data bounds [−6, 6]) at n ∈ {100, 1000, 10000} and ε ∈ {0.1, 1}, with θ drawn from its
prior in every repetition (so that a correct posterior covers exactly 90%), it prints the
coverage of the noise-aware posterior (`pmp.privatize`'s default), of the plug-in one, and
the ratio of the noise-aware intervals' mean width to that of the exact noise-aware posterior
(exact binomial counts and exact discrete Laplace noise for the Beta–Bernoulli; for the
Normal mean the sum is exactly Normal, so the reference is the normal–Laplace posterior with
the Laplace noise of the same scale, which the discrete noise on a grid of step ~1e-7 is).
"""

from __future__ import annotations

import argparse
import logging
import warnings

import numpy as np
import pymc as pm
from scipy import special, stats

from pymc_private.data.declaration import PrivateData
from pymc_private.examples.calibration import coverage_study
from pymc_private.priors.distributions import TruncatedBeta, TruncatedNormal

A = 0.05
SIZES = (100, 1000, 10_000)
EPSILONS = (0.1, 1.0)
# Cells where n·ε ≤ 1: the noise far above the sampling spread.
NOISY = ((10, 0.1), (100, 0.01))


def bernoulli_model(x):
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", x, bounds=(0, 1))
        theta = TruncatedBeta("theta", 1, 1, lower=A, upper=1 - A)
        pm.Bernoulli("x", theta, observed=x_obs)
    return model


def normal_model(x):
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", x, bounds=(-6.0, 6.0))
        mu = TruncatedNormal("mu", 0.0, 1.0, lower=-3.0, upper=3.0)
        pm.Normal("x", mu, 1.0, observed=x_obs)
    return model


def bernoulli_simulation(n):
    def simulate(rng):
        theta = rng.uniform(A, 1 - A)
        return theta, rng.binomial(1, theta, n)

    return simulate


def normal_simulation(n):
    prior = stats.truncnorm(-3.0, 3.0)

    def simulate(rng):
        mu = float(prior.rvs(random_state=rng))
        return mu, np.clip(rng.normal(mu, 1.0, n), -6.0, 6.0)

    return simulate


def bernoulli_reference(n, epsilon):
    """Exact posterior given the noisy count: Σ_s DLap(s̃ − s; 1/ε) Binomial(s; n, θ)."""
    counts = np.arange(n + 1)

    def log_density(released, grid):
        z = float(np.ravel(released["counts(x_obs)"])[0])
        noise = -np.abs(z - counts) * epsilon  # discrete Laplace, Δ = 1, scale 1/ε
        binomial = stats.binom.logpmf(counts[None, :], n, grid[:, None])
        return special.logsumexp(binomial + noise[None, :], axis=1)

    return log_density


def normal_reference(n, epsilon):
    """Exact posterior given the noisy sum: Normal(nμ, n) + Laplace(12/ε), prior N(0, 1)."""
    scale = 12.0 / epsilon

    def log_density(released, grid):
        z = float(released["sum(x_obs)"])
        d = z - n * grid
        variance = float(n)
        terms = []
        for sign in (-1.0, 1.0):
            u = (variance / scale + sign * d) / np.sqrt(2 * variance)
            terms.append(
                variance / (2 * scale**2) + sign * d / scale + special.log_ndtr(-u * np.sqrt(2))
            )
        return np.logaddexp(*terms) - 0.5 * grid**2

    return log_density


def main(repetitions: int, sampled: int) -> None:
    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    print(f"coverage of 90% intervals over {repetitions} repetitions (θ drawn from its prior)")
    print(
        f"sampled: the intervals of pmp.sample's default noise-aware sampler ({sampled} tuning "
        "and draws × 2 chains); density: the noise-aware model's density on a grid (the NUTS "
        "target); plug-in: noise_aware=False; width/exact: density intervals against the exact "
        "posterior's"
    )
    columns = ("sampled", "density", "plug-in", "width/exact")
    print(
        f"{'model':16s} {'n':>6s} {'ε':>5s} {columns[0]:>8s} {columns[1]:>8s} "
        f"{columns[2]:>8s} {columns[3]:>12s}"
    )
    studies = {
        "Beta-Bernoulli": (
            bernoulli_model,
            bernoulli_simulation,
            bernoulli_reference,
            "theta",
            np.linspace(A + 1e-4, 1 - A - 1e-4, 1500),
        ),
        "Normal mean": (
            normal_model,
            normal_simulation,
            normal_reference,
            "mu",
            np.linspace(-2.999, 2.999, 1500),
        ),
    }
    for name, (build, simulation, reference, variable, grid) in studies.items():
        cells = [(n, epsilon) for n in SIZES for epsilon in EPSILONS] + list(NOISY)
        for n, epsilon in cells:
            common = {"repetitions": repetitions, "grid": grid, "seed": n}
            study = (build, simulation(n), variable, epsilon)
            drawn = coverage_study(*study, sampled=sampled, **common)
            aware = coverage_study(*study, reference=reference(n, epsilon), **common)
            plug_in = coverage_study(*study, noise_aware=False, **common)
            print(
                f"{name:16s} {n:6d} {epsilon:5g} {drawn.coverage:8.1%} "
                f"{aware.coverage:8.1%} {plug_in.coverage:8.1%} "
                f"{aware.width / aware.reference_width:12.3f}",
                flush=True,
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=300)
    parser.add_argument("--sampled", type=int, default=500, help="tuning and draws per chain")
    arguments = parser.parse_args()
    main(arguments.repetitions, arguments.sampled)
