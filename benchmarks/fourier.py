"""Fourier-domain release (Zhang et al. 2016, Algorithm 2) against the default cell release.

Run: ``python benchmarks/fourier.py [--repetitions 20]``. The setting of Zhang et al.'s
Figure 1: Bernoulli naive Bayes with 16 binary features, synthetic data from a naive Bayes
model (class prior 1/2, each feature's probability per class uniform on [0.1, 0.9], drawn
once), 50 private training records and 1000 test records. For each ε, ``--repetitions``
fresh training sets and releases (numpy noise, for simulation) are fitted with the plug-in
posterior of each release (`pmp.sample_posterior`, 200 exact draws) and classified with the
posterior-mean classifier; it prints the mean test accuracy of each, and the non-private
accuracy (exact posterior of the raw counts). Both releases have Δ₁ = 2d + 1 = 33: the
default noises the 4d + 1 cells a record can move, the Fourier release the 2d + 1 parity
counts from which consistent tables are reconstructed.
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings

import numpy as np
import pymc as pm

import pymc_private as pmp

D, N_TRAIN, N_TEST = 16, 50, 1000
EPSILONS = (0.1, 0.3, 1.0, 3.0, 10.0)


def simulate(rng, probabilities, n):
    labels = rng.integers(0, 2, n)
    features = (rng.random((n, D)) < probabilities[labels]).astype(np.int64)
    return labels, features


def model_of(labels, features):
    with pm.Model() as model:
        y_obs = pmp.PrivateData("y_obs", labels, bounds=(0, 1))
        x_obs = pmp.PrivateData("x_obs", features, bounds=(0, 1))
        pi = pmp.TruncatedBeta("pi", 1, 1, lower=0.01, upper=0.99)
        theta = pmp.TruncatedBeta("theta", 1, 1, lower=0.01, upper=0.99, shape=(2, D))
        pm.Bernoulli("y", pi, observed=y_obs)
        pm.Bernoulli("x", theta[y_obs], observed=x_obs)
    return model


def accuracy(pi, theta, labels, features):
    log_odds = np.log(pi / (1 - pi)) + (
        features * np.log(theta[1] / theta[0])
        + (1 - features) * np.log((1 - theta[1]) / (1 - theta[0]))
    ).sum(axis=1)
    return float(np.mean((log_odds > 0) == labels))


def fitted(private):
    idata = pmp.sample_posterior(private, 200, secure=False, random_seed=0)
    post = idata.posterior
    return float(post["pi"].mean()), post["theta"].mean(("chain", "draw")).to_numpy()


def main(repetitions: int) -> None:
    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    rng = np.random.default_rng(0)
    probabilities = rng.uniform(0.1, 0.9, (2, D))
    test_labels, test_features = simulate(rng, probabilities, N_TEST)
    print(f"naive Bayes, d = {D}, {N_TRAIN} training and {N_TEST} test records, plug-in posterior")
    print(
        f"{'ε':>5s} {'cells':>7s} {'fourier':>8s} {'non-private':>12s}  ({repetitions} repetitions)"
    )
    for epsilon in EPSILONS:
        start = time.perf_counter()
        results = {"cells": [], "fourier": [], "non-private": []}
        for _ in range(repetitions):
            labels, features = simulate(rng, probabilities, N_TRAIN)
            model = model_of(labels, features)
            for release in ("cells", "fourier"):
                private = pmp.privatize(
                    model,
                    epsilon,
                    release=release,
                    noise_aware=False,
                    secure=False,
                    random_seed=rng,
                )
                pi, theta = fitted(private)
                results[release].append(accuracy(pi, theta, test_labels, test_features))
            counts = np.stack([features[labels == c].sum(0) for c in (0, 1)])
            sizes = np.bincount(labels, minlength=2)[:, None]
            theta = (counts + 1.0) / (sizes + 2.0)
            pi = (labels.sum() + 1.0) / (N_TRAIN + 2.0)
            results["non-private"].append(accuracy(pi, theta, test_labels, test_features))
        means = {name: np.mean(values) for name, values in results.items()}
        print(
            f"{epsilon:5g} {means['cells']:7.3f} {means['fourier']:8.3f} "
            f"{means['non-private']:12.3f}  ({time.perf_counter() - start:.0f} s)",
            flush=True,
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=20)
    main(parser.parse_args().repetitions)
