"""The Fourier-domain release of Boolean count tables (Zhang et al. 2016, Algorithm 2)."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pymc_private as pmp
from pymc_private.analysis.privatisation import privatisation_of
from pymc_private.dp.audit import epsilon_lower_bound
from pymc_private.errors import InvalidPrivacyParameterError, UnsupportedModelError
from pymc_private.pay_once.plans import ParityCounts, chosen_plan
from pymc_private.pay_once.privatize import release_statistics

D = 3


def _naive_bayes(labels, features):
    with pm.Model() as model:
        y_obs = pmp.PrivateData("y_obs", labels, bounds=(0, 1))
        x_obs = pmp.PrivateData("x_obs", features, bounds=(0, 1))
        pi = pmp.TruncatedBeta("pi", 1, 1, lower=0.05, upper=0.95)
        shape = (2, features.shape[1])
        theta = pmp.TruncatedBeta("theta", 1, 1, lower=0.05, upper=0.95, shape=shape)
        pm.Bernoulli("y", pi, observed=y_obs)
        pm.Bernoulli("x", theta[y_obs], observed=x_obs)
    return model


@pytest.fixture(scope="module")
def nb():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 60)
    features = (rng.random((60, D)) < np.where(labels[:, None] == 1, 0.8, 0.2)).astype(int)
    return _naive_bayes(labels, features), {"y_obs": labels, "x_obs": features}


def _worst_pair(n=40, d=1):
    """Every record (class 0, all features 0); the neighbour flips every feature of one
    record: 2d of the 2d + 1 parity counts move (the claim charges 2d + 1). One feature keeps
    the corner event frequent (2 of 3 counts move)."""
    labels, features = np.zeros(n, dtype=int), np.zeros((n, d), dtype=int)
    neighbour = features.copy()
    neighbour[0] = 1
    return {"y_obs": labels, "x_obs": features}, {"y_obs": labels, "x_obs": neighbour}


def test_tables_are_the_exact_counts_and_consistent_for_any_coefficients(nb):
    model, arrays = nb
    analysis = pmp.analyze(model)
    plan = ParityCounts.of(analysis)
    assert plan.size == 2 * D + 1 == analysis.sensitivity_l1
    exact = {spec.name: spec.compute(arrays) for spec in analysis.statistics}
    for name, table in plan.tables(plan.parities(arrays)).items():
        np.testing.assert_array_equal(table, exact[name])

    @settings(max_examples=50, deadline=None)
    @given(st.lists(st.floats(-1e6, 1e6), min_size=plan.size, max_size=plan.size))
    def consistent(coefficients):
        tables = plan.tables(np.array(coefficients))
        sizes = tables["counts(x_obs | y_obs)"].sum(axis=-1)  # (class, feature)
        ones = tables["counts(y_obs)"][0]
        np.testing.assert_allclose(sizes[1], ones, rtol=1e-9, atol=1e-6)
        np.testing.assert_allclose(sizes[0], 60 - ones, rtol=1e-9, atol=1e-6)

    consistent()


def _parities(plan, noisy):
    """The released parity counts, read back from the reconstructed tables."""
    cells = noisy["counts(x_obs | y_obs)"]
    ones = noisy["counts(y_obs)"][0]
    x_ones = cells[0, :, 1] + cells[1, :, 1]
    odd = cells[1, :, 0] + cells[0, :, 1]
    return np.concatenate([[ones], x_ones, odd])


@pytest.mark.slow
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 4.0])
def test_audit_worst_pair_passes_and_half_scale_is_caught(epsilon):
    data, neighbour = _worst_pair()
    analysis = pmp.analyze(_naive_bayes(data["y_obs"], data["x_obs"]))
    plan = ParityCounts.of(analysis)
    before, after = plan.parities(data), plan.parities(neighbour)
    direction = np.sign(after - before)
    assert np.count_nonzero(direction) == 2

    def corner(released):
        return bool(np.all(direction * (released - after) >= 0))

    def mechanism(scale_epsilon):
        fourier = chosen_plan(analysis, scale_epsilon, release="fourier", secure=False)

        def run(arrays, rng):
            noisy = release_statistics(analysis, arrays, fourier, rng=rng).noisy
            return _parities(plan, noisy)

        return run

    honest = epsilon_lower_bound(
        mechanism(epsilon), data, neighbour, n=1500, alpha=0.01, event=corner, random_seed=1
    )
    assert honest.passes(epsilon)
    if epsilon >= 1.0:  # at ε = 0.1 the gap e^{0.17} against e^{0.1} needs ~10⁵ runs
        caught = epsilon_lower_bound(
            mechanism(2 * epsilon),
            data,
            neighbour,
            n=4000,
            alpha=0.01,
            event=corner,
            random_seed=2,
        )
        assert not caught.passes(epsilon)


def test_privatize_records_one_release_of_consistent_tables(nb):
    model, _ = nb
    private = pmp.privatize(
        model, 1.0, release="fourier", noise_aware=False, secure=False, random_seed=3
    )
    (release,) = privatisation_of(private).releases
    assert release.mechanism == "discrete_laplace" and release.epsilon == 1.0
    assert release.sensitivity == 2 * D + 1 and release.statistic.startswith("fourier(")
    statistics = pmp.privatised_statistics(private)
    cells = statistics["counts(x_obs | y_obs)"]
    assert cells.min() >= 0 and np.all(cells.sum(-1)[1] == statistics["counts(y_obs)"][0])
    gaussian = pmp.privatize(
        model,
        1.0,
        delta=1e-6,
        mechanism="gaussian",
        release="fourier",
        noise_aware=False,
        secure=False,
        random_seed=4,
    )
    (release,) = privatisation_of(gaussian).releases
    assert release.mechanism == "discrete_gaussian" and release.rho > 0
    assert release.epsilon <= 1.0 and release.delta == 1e-6


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"release": "fourier"}, InvalidPrivacyParameterError, "noise_aware=False"),
        ({"release": "wavelet", "noise_aware": False}, InvalidPrivacyParameterError, "'cells'"),
        (
            {"release": "fourier", "noise_aware": False, "budget": pmp.Budget(0.5)},
            pmp.BudgetExceededError,
            "",
        ),
    ],
)
def test_refusals_release_nothing(nb, kwargs, error, match):
    model, _ = nb
    before = len(pmp.ledger_for(model).releases)
    with pytest.raises(error, match=match):
        pmp.privatize(model, 1.0, **kwargs)
    assert len(pmp.ledger_for(model).releases) == before


def test_models_of_non_boolean_variables_are_refused_before_noise():
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", np.array([0, 1, 2, 2]), bounds=(0, 2))
        p = pmp.TruncatedDirichlet("p", np.ones(3), min_prob=0.05)
        pm.Categorical("x", p, observed=x_obs)
    with pytest.raises(UnsupportedModelError, match=r"Boolean.*release='cells'"):
        pmp.privatize(model, 1.0, release="fourier", noise_aware=False)
    assert len(pmp.ledger_for(model).releases) == 0
