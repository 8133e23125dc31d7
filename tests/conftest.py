"""Shared fixtures: seeded generators, the naive Bayes model of the quickstart notebook and a
coin-flip model; the scaled release plans the audits run."""

from __future__ import annotations

import dataclasses

import numpy as np
import pymc as pm
import pytest
from hypothesis import settings

from pymc_private.examples.demo import naive_bayes_model

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


@pytest.fixture
def plan_at_scale():
    """``(plan, exact, project)`` ↦ ``mechanism(scale)``: the auditor's mechanism that runs a
    `CellsPlan` with every noise scale times ``scale`` (0.5: under-noised by half) on the exact
    statistics ``exact[which]`` (by name) and returns ``project`` of the noisy values stacked
    (size × cells)."""

    def make(plan, exact, project):
        def mechanism(scale):
            shares = tuple((spec, share / scale**2) for spec, share in plan.shares)
            scaled = dataclasses.replace(plan, shares=shares)

            def run(which, rng, size):
                values = {
                    name: np.broadcast_to(value, (size, *value.shape)).copy()
                    for name, value in exact[which].items()
                }
                noisy = scaled.run(values, rng)[0]
                return project(
                    np.concatenate([noisy[name].reshape(size, -1) for name in values], 1)
                )

            return run

        return mechanism

    return make
