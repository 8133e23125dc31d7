"""Shared fixtures: seeded generators and the naive Bayes model of DESIGN.md §3."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

from pymc_private.data import PrivateData
from pymc_private.priors import TruncatedBeta


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20240601)


def naive_bayes_model(labels, features, a: float, *, out_of_bounds: str = "raise") -> pm.Model:
    """Bernoulli naive Bayes: binary class y, d binary features x, every probability
    truncated to [a, 1 − a]."""
    d = np.shape(features)[1]
    with pm.Model(coords={"cls": [0, 1], "feature": list(range(d))}) as model:
        y_obs = PrivateData("y_obs", labels, bounds=(0, 1), out_of_bounds=out_of_bounds)
        x_obs = PrivateData("x_obs", features, bounds=(0, 1), out_of_bounds=out_of_bounds)
        pi = TruncatedBeta("pi", 1, 1, lower=a, upper=1 - a)
        theta = TruncatedBeta("theta", 1, 1, lower=a, upper=1 - a, dims=("cls", "feature"))
        pm.Bernoulli("y", pi, observed=y_obs)
        pm.Bernoulli("x", theta[y_obs], observed=x_obs)
    return model


@pytest.fixture
def make_naive_bayes():
    """Builds `naive_bayes_model(labels, features, a)`."""
    return naive_bayes_model
