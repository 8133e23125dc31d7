"""The budget split (issue 39): pmp.privatize spends ε across the released sums where the
planner predicts it informs the posterior most, from public quantities only, and warns before
spending when the release will barely inform a parameter."""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pymc as pm
import pytest

import pymc_private as pmp
from pymc_private.analysis.core import declared_analysis
from pymc_private.errors import UninformativeReleaseWarning
from pymc_private.pay_once.plans import chosen_plan
from pymc_private.planning.planner import _Planner, forecast

RANGE = (0.0, 2600.0)


def area_model(values) -> pm.Model:
    """A Normal mean and precision on a wide declared range: Σx's sensitivity is a
    thousandth of Σx²'s, and the default split (equal noise per cell) drowns Σx."""
    with pm.Model() as model:
        area = pmp.PrivateData("area_obs", values, bounds=RANGE, out_of_bounds="clip")
        mu = pmp.TruncatedNormal("mu", 1000.0, 2000.0, lower=0.0, upper=5000.0)
        tau = pmp.TruncatedGamma("tau", 1.0, 1e4, lower=1e-8, upper=1e-3)
        pm.Normal("area", mu, tau=tau, observed=area)
    return model


@pytest.fixture(scope="module")
def area():
    return np.clip(np.random.default_rng(0).gamma(4.0, 160.0, 600), *RANGE)


def test_the_split_lowers_the_predicted_posterior_variance_and_costs_epsilon(area):
    model = area_model(area)
    analysis = declared_analysis(model)
    planner = _Planner(model, analysis, "laplace", {}, {})
    split = planner.best_split(1.0, 0.0)
    assert split is not None and split["sum(area_obs)"] > 0.05 * sum(split.values())
    exact = np.diag(planner.basis @ planner.exact @ planner.basis.T)

    def variance(plan):
        covariance = planner._covariance(plan.noise_laws())
        return np.diag(planner.basis @ covariance @ planner.basis.T) / exact

    default, informed = chosen_plan(analysis, 1.0), chosen_plan(analysis, 1.0, split=split)
    assert np.all(variance(informed) < variance(default))
    assert np.mean(np.log(variance(informed))) < np.mean(np.log(variance(default))) - 0.5
    spent = sum((Fraction(r.epsilon) * r.count for r in informed.releases()), Fraction(0))
    assert spent <= 1
    assert float(spent) == pytest.approx(1.0, rel=1e-9)


def test_privatize_releases_with_the_planners_split_and_the_ledger_states_it(area):
    model = area_model(area)
    predicted = forecast(model, 1.0, 0.0, "auto")
    private = pmp.privatize(model, 1.0, secure=False, random_seed=1)
    shares = {r.statistic: r.epsilon for r in pmp.ledger_for(model).releases}
    total = sum(predicted.split.values())
    for name, weight in predicted.split.items():
        assert shares[name] == pytest.approx(weight / total, rel=1e-6)
    plan = pmp.plan(model, epsilon=1.0)  # the plan predicts the noise privatize drew
    laws = privatisation_laws(private)
    for row in plan.statistics:
        assert row.noise_sd == pytest.approx(laws[row.statistic], rel=1e-9)


def privatisation_laws(private):
    from pymc_private.analysis.privatisation import privatisation_of

    return {name: law.variance**0.5 for name, law in privatisation_of(private).noise.items()}


def test_the_split_is_public_the_same_for_any_records(area):
    first = forecast(area_model(area), 1.0, 0.0, "auto").split
    other = forecast(area_model(area[::-1] / 2), 1.0, 0.0, "auto").split
    assert first == other


def test_counts_keep_equal_noise_per_cell():
    labels = np.arange(200) % 2
    with pm.Model() as model:
        y = pmp.PrivateData("y_obs", labels, bounds=(0, 1))
        x = pmp.PrivateData("x_obs", labels, bounds=(0, 1))
        pi = pmp.TruncatedBeta("pi", 1.0, 1.0, lower=0.05, upper=0.95)
        theta = pmp.TruncatedBeta("theta", 1.0, 1.0, lower=0.05, upper=0.95, shape=2)
        pm.Bernoulli("label", p=pi, observed=y)
        pm.Bernoulli("feature", p=theta[y], observed=x)
    assert forecast(model, 1.0, 0.0, "auto") is None


def test_a_release_that_barely_informs_warns_before_anything_is_spent():
    values = np.clip(np.random.default_rng(2).gamma(4.0, 160.0, 30), *RANGE)
    model = area_model(values)
    with pytest.warns(UninformativeReleaseWarning, match=r"barely inform `tau`.*With ε = \d"):
        pmp.privatize(model, 0.05, secure=False, random_seed=3)
    fresh = area_model(values * 0.999)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UninformativeReleaseWarning)
        with pytest.raises(UninformativeReleaseWarning):
            pmp.privatize(fresh, 0.05, secure=False, random_seed=3)
    assert len(pmp.ledger_for(fresh).releases) == 0  # warned before any noise


def test_an_informative_release_does_not_warn(area):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UninformativeReleaseWarning)
        pmp.privatize(area_model(area * 1.001), 30.0, secure=False, random_seed=4)


def test_a_regressions_moments_keep_the_default_split():
    rng = np.random.default_rng(5)
    x = np.column_stack([np.ones(300), rng.uniform(-1, 1, (300, 2))])
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", x, bounds=([1.0, -1.0, -1.0], [1.0, 1.0, 1.0]))
        y_obs = pmp.PrivateData("y_obs", rng.uniform(-2, 2, 300), bounds=(-2.0, 2.0))
        w = pmp.TruncatedMvNormal("w", np.zeros(3), np.eye(3), radius=3.0)
        tau = pmp.TruncatedGamma("tau", 2.0, 1.0, lower=0.1, upper=50.0)
        pm.Normal("y", x_obs @ w, tau=tau, observed=y_obs)
    predicted = forecast(model, 1.0, 0.0, "auto")
    assert predicted is not None and predicted.split is None
