"""Shared fixtures: seeded generators, the naive Bayes model of the quickstart notebook and a
coin-flip model."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
from hypothesis import settings

from pymc_private.demo import naive_bayes_model

# Property-based tests explore the same examples on every run (CI must not be flaky); run
# with --hypothesis-seed=random to explore afresh.
settings.register_profile("deterministic", derandomize=True)
settings.load_profile("deterministic")


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20240601)


@pytest.fixture
def make_naive_bayes():
    """Builds the naive Bayes model of the quickstart: ``(labels, features, a, **kwargs)``."""

    def make(labels, features, a: float, **kwargs) -> pm.Model:
        return naive_bayes_model(labels, features, a=a, **kwargs)

    return make


@pytest.fixture(scope="session")
def coin_model() -> pm.Model:
    """Six coin flips with a truncated Beta prior: the smallest model a ledger charges."""
    import pymc_private as pmp

    with pm.Model() as model:
        y = pmp.PrivateData("y", np.array([0, 1, 1, 0, 1, 1]), bounds=(0, 1))
        p = pmp.TruncatedBeta("p", 1.0, 1.0, lower=0.01, upper=0.99)
        pm.Bernoulli("obs", p, observed=y)
    return model


@pytest.fixture(autouse=True)
def fresh_ledgers(tmp_path):
    """Every test starts a fresh session: empty data-set ledgers whose journals live in the
    test's own directory, and no attached ledger files (ledgers are keyed by the data's
    values, so fixture models shared across tests would otherwise compose their spends)."""
    from pymc_private.dp import session

    folder = tmp_path / "session"
    folder.mkdir()
    session.reset(folder)
    try:
        yield
    finally:
        session.reset()
