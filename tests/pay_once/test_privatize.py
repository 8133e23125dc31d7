"""`pmp.privatize`: the pay-once release of sufficient statistics and the model built on it.

Statistical checks use fixed seeds and state their tolerance: KS tests at α = 0.001, audits
at α = 0.01 (an ε-DP mechanism fails the audit with probability ≤ α), and the 1/n rate of
the private posterior mean within [7, 14] for a factor 10 in n.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction

import arviz as az
import hypothesis.strategies as st
import matplotlib
import numpy as np
import pymc as pm
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant
from pytensor.graph.traversal import ancestors
from scipy import special, stats

from pymc_private.analysis.core import analyze
from pymc_private.analysis.privatisation import privatisation_of, privatised_statistics
from pymc_private.data.declaration import RELEASED_TAG, PrivateData
from pymc_private.data.ledgers import ledger_for
from pymc_private.dp.audit import epsilon_lower_bound
from pymc_private.errors import InvalidPrivacyParameterError, UnsupportedModelError
from pymc_private.pay_once.plans import chosen_plan
from pymc_private.pay_once.privatize import privatize, release_statistics
from pymc_private.priors.distributions import (
    TruncatedBeta,
    TruncatedGamma,
    TruncatedMvNormal,
    TruncatedNormal,
)
from pymc_private.release.report import privacy_report
from pymc_private.release.seal import ledger_of
from pymc_private.sampling.sample import sample

matplotlib.use("Agg")

SENTINEL = 0.123456789
A = 0.05


def beta_bernoulli(y, a=A):
    with pm.Model() as model:
        y_obs = PrivateData("y_obs", np.asarray(y), bounds=(0, 1))
        p = TruncatedBeta("p", 1, 1, lower=a, upper=1 - a)
        pm.Bernoulli("y", p, observed=y_obs)
    return model


@pytest.fixture(scope="module")
def nb_data():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, 200)
    features = (rng.random((200, 3)) < np.where(labels[:, None] == 1, 0.7, 0.3)).astype(int)
    return labels, features


@pytest.fixture(scope="module")
def nb_model(nb_data):
    return _naive_bayes(*nb_data)


def _naive_bayes(labels, features, a=A):
    d = np.shape(features)[1]
    coords = {"cls": [0, 1], "feature": list(range(d)), "obs": list(range(len(labels)))}
    with pm.Model(coords=coords) as model:
        y_obs = PrivateData("y_obs", labels, bounds=(0, 1), dims="obs")
        x_obs = PrivateData("x_obs", features, bounds=(0, 1), dims=("obs", "feature"))
        pi = TruncatedBeta("pi", 1, 1, lower=a, upper=1 - a)
        theta = TruncatedBeta("theta", 1, 1, lower=a, upper=1 - a, dims=("cls", "feature"))
        pm.Bernoulli("y", pi, observed=y_obs)
        pm.Bernoulli("x", theta[y_obs], observed=x_obs)
    return model


def normal_free_precision(x):
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", x, bounds=(-3.0, 3.0))
        mu = TruncatedNormal("mu", 0.0, 10.0, lower=-5.0, upper=5.0)
        tau = TruncatedGamma("tau", 2.0, 2.0, lower=0.05, upper=20.0)
        pm.Normal("x", mu, tau=tau, observed=x_obs)
    return model


@pytest.fixture(scope="module")
def normal_data():
    x = np.clip(np.random.default_rng(2).normal(0.5, 1.0, 300), -3, 3)
    x[17] = SENTINEL
    return x


@pytest.fixture(scope="module")
def private_nb(nb_model):
    return privatize(nb_model, 1.0, noise_aware=False, secure=False, random_seed=3)


# ---------------------------------------------------------------------------------------
# The transform
# ---------------------------------------------------------------------------------------


def _graph_values(model):
    outputs = [
        *model.free_RVs,
        *model.potentials,
        *model.deterministics,
        *model.value_vars,
        *(v for v in model.dim_lengths.values() if hasattr(v, "owner")),
    ]
    values = []
    for variable in ancestors(outputs):
        if isinstance(variable, Constant):
            values.append(np.asarray(variable.data))
        elif isinstance(variable, SharedVariable):
            value = variable.get_value()
            if isinstance(value, np.ndarray | np.number | float | int):
                values.append(np.asarray(value))
    return values


def test_privatised_model_graph_holds_no_raw_data(nb_model, nb_data, private_nb, normal_data):
    labels, _ = nb_data
    released = analyze(nb_model).statistics
    assert sorted(v.name for v in private_nb.data_vars) == sorted(spec.name for spec in released)
    assert all(
        getattr(v.tag, RELEASED_TAG) is privatisation_of(private_nb) for v in private_nb.data_vars
    )
    for value in _graph_values(private_nb):
        assert value.shape[:1] != (len(labels),), "an array with one row per record"
    private_normal = privatize(normal_free_precision(normal_data), 2.0, secure=False)
    for value in _graph_values(private_normal):
        if value.dtype.kind == "f":
            assert not np.any(np.isclose(value, SENTINEL, rtol=0, atol=1e-12))
        assert value.size < len(normal_data)


def test_privatised_model_keeps_names_priors_and_coords(nb_model, private_nb):
    assert [rv.name for rv in private_nb.free_RVs] == ["pi", "theta"]
    assert [v.name for v in private_nb.value_vars] == ["pi_interval__", "theta_interval__"]
    assert sorted(p.name for p in private_nb.potentials) == ["x_privatised", "y_privatised"]
    assert private_nb.coords["feature"] == (0, 1, 2)
    assert "obs" not in private_nb.coords and "obs" not in private_nb.dim_lengths
    assert tuple(private_nb.named_vars_to_dims["theta"]) == ("cls", "feature")
    point = {"pi_interval__": np.array(0.3), "theta_interval__": np.full((2, 3), -0.2)}
    prior_original = nb_model.compile_logp(vars=nb_model.free_RVs)(point)
    prior_private = private_nb.compile_logp(vars=private_nb.free_RVs)(point)
    assert prior_private == pytest.approx(prior_original, rel=1e-12)


def test_privatised_logp_is_the_likelihood_at_the_released_statistics(private_nb):
    released = privatised_statistics(private_nb)
    n1 = int(released["counts(y_obs)"][0])
    cells = released["counts(x_obs | y_obs)"]
    zeros, ones = cells[..., 0], cells[..., 1]
    totals = np.array([200 - n1, n1])
    # The projection makes the cells of every feature add up to their class size.
    np.testing.assert_array_equal(zeros + ones, np.broadcast_to(totals[:, None], ones.shape))
    pi, theta = 0.4, np.array([[0.3, 0.5, 0.6], [0.7, 0.2, 0.4]])
    expected = n1 * math.log(pi) + (200 - n1) * math.log(1 - pi)
    expected += np.sum(ones * np.log(theta) + (totals[:, None] - ones) * np.log(1 - theta))
    logp = private_nb.compile_logp(vars=private_nb.potentials)
    point = {
        "pi_interval__": np.array(special.logit((pi - A) / (1 - 2 * A))),
        "theta_interval__": special.logit((theta - A) / (1 - 2 * A)),
    }
    assert logp(point) == pytest.approx(expected, rel=1e-10)


def test_one_release_per_statistic_and_statistics_are_projected(nb_model):
    """Δ₁ = 7: counts(y_obs) moves by 1 and counts(x_obs | y_obs) by 2d = 6; each gets its
    share ε·Δ_j/Δ₁ of ε = 0.02, the same noise scale Δ₁/ε."""
    ledger = ledger_for(nb_model)
    private = privatize(nb_model, 0.02, noise_aware=False, secure=False, random_seed=4)
    labels, features = ledger.releases
    assert [(r.mechanism, r.statistic, r.sensitivity) for r in ledger.releases] == [
        ("discrete_laplace", "counts(y_obs)", 1),
        ("discrete_laplace", "counts(x_obs | y_obs)", 6),
    ]
    assert labels.epsilon == pytest.approx(0.02 / 7) and features.epsilon == pytest.approx(0.12 / 7)
    assert Fraction(labels.epsilon) + Fraction(features.epsilon) <= Fraction(0.02)
    assert not labels.secure and not features.secure
    assert ledger_for(private).releases == ledger.releases
    released = privatised_statistics(private)
    n1 = released["counts(y_obs)"]
    assert n1.dtype == np.int64 and 0 <= n1[0] <= 200
    cells = released["counts(x_obs | y_obs)"]
    group = np.array([200 - n1[0], n1[0]])
    assert cells.dtype == np.int64 and cells.shape == (2, 3, 2)
    assert np.all(cells >= 0)
    np.testing.assert_array_equal(cells.sum(axis=-1), np.broadcast_to(group[:, None], (2, 3)))
    kept = int(n1[0])
    released["counts(y_obs)"][0] = -1
    assert privatised_statistics(private)["counts(y_obs)"][0] == kept


def test_float_statistics_are_projected_to_valid_posteriors(normal_data):
    private = privatize(
        normal_free_precision(normal_data), 0.01, noise_aware=False, secure=False, random_seed=5
    )
    released = privatised_statistics(private)
    s1, s2 = float(released["sum(x_obs)"]), float(released["sum_squares(x_obs)"])
    assert -900.0 <= s1 <= 900.0 and 0.0 <= s2 <= 2700.0
    assert s2 >= s1**2 / 300 - 1e-9


def test_regression_gram_matrix_is_projected_positive_semidefinite():
    rng = np.random.default_rng(6)
    x = rng.uniform(-1, 1, (100, 3))
    y = np.clip(x @ np.array([0.5, -0.3, 0.2]) + rng.normal(0, 0.3, 100), -2, 2)
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", x, bounds=(-1.0, 1.0))
        y_obs = PrivateData("y_obs", y, bounds=(-2.0, 2.0))
        w = TruncatedMvNormal("w", np.zeros(3), np.eye(3), radius=2.0)
        tau = TruncatedGamma("tau", 2.0, 1.0, lower=0.1, upper=50.0)
        pm.Normal("y", x_obs @ w, tau=tau, observed=y_obs)
    private = privatize(model, 0.05, noise_aware=False, secure=False, random_seed=7)
    released = privatised_statistics(private)
    gram = np.zeros((3, 3))
    gram[np.triu_indices(3)] = released["gram(x_obs)"]
    gram = gram + np.triu(gram, 1).T
    joint = np.block(
        [
            [gram, released["cross(x_obs, y_obs)"][:, None]],
            [
                released["cross(x_obs, y_obs)"][None, :],
                np.reshape(released["sum_squares(y_obs)"], (1, 1)),
            ],
        ]
    )
    assert np.linalg.eigvalsh(joint).min() >= -1e-8 * np.abs(joint).max()


def test_mixed_statistics_are_exact_integers_with_shares_of_epsilon():
    rng = np.random.default_rng(8)
    with pm.Model() as model:
        y_obs = PrivateData("y_obs", rng.integers(0, 2, 50), bounds=(0, 1))
        x_obs = PrivateData("x_obs", rng.uniform(0, 2, 50), bounds=(0.0, 2.0))
        p = TruncatedBeta("p", 1, 1, lower=0.1, upper=0.9)
        mu = TruncatedNormal("mu", 0.0, 1.0, lower=-3.0, upper=3.0)
        pm.Bernoulli("y", p, observed=y_obs)
        pm.Normal("x", mu, 1.0, observed=x_obs)
    assert analyze(model).sensitivity_l1 == 3.0  # counts: 1, sum over [0, 2]: 2
    ledger = ledger_for(model)
    privatize(model, 0.9, secure=False, random_seed=9)
    by_statistic = {r.statistic: r for r in ledger.releases}
    integer, real = by_statistic["counts(y_obs)"], by_statistic["sum(x_obs)"]
    assert (integer.mechanism, integer.sensitivity) == ("discrete_laplace", 1.0)
    # Σx on the grid of step 2⁻²⁴ (2 over 2²⁵ steps): Δ = 2 · 2²⁴ steps, exact discrete noise.
    assert (real.mechanism, real.sensitivity) == ("discrete_laplace", 2.0 * 2**24)
    assert integer.epsilon == pytest.approx(0.3) and real.epsilon == pytest.approx(0.6)
    assert Fraction(integer.epsilon) + Fraction(real.epsilon) <= Fraction(0.9)
    secure = ledger_for(privatize(model, 0.9)).releases[2:]
    assert len(secure) == 2 and all(r.secure for r in secure)
    assert sum(r.epsilon for r in secure) <= 0.9


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    epsilon=st.one_of(
        st.floats(max_value=0.0),
        st.sampled_from([math.nan, math.inf, -math.inf, True, "1.0", None]),
    )
)
def test_invalid_epsilon_is_refused_before_any_noise(nb_model, monkeypatch, epsilon):
    def no_noise(*args, **kwargs):
        raise AssertionError("noise drawn")

    # The noise is drawn in pymc_private.dp.mechanisms (`release_plan.CellsPlan.run`).
    module = sys.modules["pymc_private.dp.mechanisms"]
    monkeypatch.setattr(module, "discrete_laplace", no_noise)
    ledger = ledger_for(nb_model)
    recorded = len(ledger)
    with pytest.raises(InvalidPrivacyParameterError, match="epsilon must be a finite number > 0"):
        privatize(nb_model, epsilon)
    assert len(ledger) == recorded


def _tiny_real_part_model():
    rng = np.random.default_rng(8)
    with pm.Model() as model:
        y_obs = PrivateData("y_obs", rng.integers(0, 2, 20), bounds=(0, 1))
        x_obs = PrivateData("x_obs", rng.uniform(0, 1e-305, 20), bounds=(0.0, 1e-305))
        p = TruncatedBeta("p", 1, 1, lower=0.1, upper=0.9)
        mu = TruncatedNormal("mu", 0.0, 1.0, lower=-1.0, upper=1.0)
        pm.Bernoulli("y", p, observed=y_obs)
        pm.Normal("x", mu, 1.0, observed=x_obs)
    return model


@pytest.mark.parametrize(
    ("build", "epsilon", "message"),
    [
        # Σx moves by 1e-305 of Δ₁ ≈ 1: its share ≈ 1e-305, its scale in grid steps inf.
        (_tiny_real_part_model, 1.0, r"statistic sum\(x_obs\).*scale inf.*Rescale"),
        # A valid ε whose noise scale Δ₁/ε = 1/5e-324 overflows to inf.
        (lambda: beta_bernoulli([0, 1, 1]), 5e-324, r"statistic counts\(y_obs\).*scale inf"),
    ],
)
def test_split_of_epsilon_is_validated_before_any_noise(monkeypatch, build, epsilon, message):
    def no_noise(*args, **kwargs):
        raise AssertionError("noise drawn")

    module = sys.modules["pymc_private.dp.mechanisms"]
    monkeypatch.setattr(module, "discrete_laplace", no_noise)
    model = build()
    with pytest.raises(InvalidPrivacyParameterError, match=message):
        privatize(model, epsilon, secure=False, random_seed=0)
    assert len(ledger_for(model)) == 0


def _with_extras(*extras):
    """Beta–Bernoulli on PrivateData ``y_obs`` observed as ``y``, plus ``extra(y, p, y_obs)``
    for each extra (Deterministics and Potentials)."""
    with pm.Model() as model:
        y_obs = PrivateData("y_obs", np.array([0, 1, 1, 0]), bounds=(0, 1))
        p = TruncatedBeta("p", 1, 1, lower=0.1, upper=0.9)
        y = pm.Bernoulli("y", p, observed=y_obs)
        pm.Deterministic("odds", p / (1 - p))
        for extra in extras:
            extra(y, p, y_obs)
    return model


def test_deterministics_and_potentials_reading_data_shapes_are_refused_by_name(monkeypatch):
    """The audit's case: pmp.analyze allows reading a shape of private data or of an
    observed variable (n is public), but privatize rebuilt the model without them and
    silently dropped what read them. Each is named, before any noise; nothing is recorded."""

    def no_noise(*args, **kwargs):
        raise AssertionError("noise drawn")

    module = sys.modules["pymc_private.dp.mechanisms"]
    monkeypatch.setattr(module, "discrete_laplace", no_noise)
    model = _with_extras(
        lambda y, p, data: pm.Deterministic("per_record", p * data.shape[0]),
        lambda y, p, data: pm.Potential("shape_prior", 0.0 * p * y.shape[0]),
    )
    analyze(model)
    ledger = ledger_for(model)
    with pytest.raises(UnsupportedModelError) as info:
        privatize(model, 1.0, secure=False, random_seed=0)
    message = str(info.value)
    assert "Deterministic `per_record` (reads `y_obs`)" in message
    assert "Potential `shape_prior` (reads `y`, `y_obs`)" in message
    assert "`odds`" not in message
    assert "Remove each, or compute it from the parameters only" in message
    assert len(ledger) == 0


def test_deterministics_and_potentials_of_parameters_are_kept():
    model = _with_extras(lambda y, p, data: pm.Potential("prior_tilt", -(p**2)))
    private = privatize(model, 1.0, noise_aware=False, secure=False, random_seed=0)
    assert [v.name for v in private.deterministics] == ["odds"]
    assert sorted(v.name for v in private.potentials) == ["prior_tilt", "y_privatised"]

    def odds(m):
        [graph] = m.replace_rvs_by_values([m["odds"]])
        return m.compile_fn(graph, inputs=m.value_vars, on_unused_input="ignore")

    point = {name: np.asarray(0.3) for name in model.initial_point()}
    assert odds(private)(point) == pytest.approx(odds(model)(point))
    assert odds(private)(point) != pytest.approx(
        odds(private)({k: v - 1 for k, v in point.items()})
    )


def test_models_without_sufficient_statistics_are_refused_with_the_analysis_error():
    with pm.Model() as model:
        y_obs = PrivateData("y_obs", np.array([0, 1, 1]), bounds=(0, 1))
        p = TruncatedBeta("p", 1, 1, lower=0.1, upper=0.9)
        pm.Bernoulli("y", 0.5 * p + 0.2, observed=y_obs)
    with pytest.raises(
        UnsupportedModelError, match=r"privatize route is not available.*expression"
    ):
        privatize(model, 1.0)


def test_privatised_statistics_of_another_model_is_refused(nb_model):
    with pytest.raises(UnsupportedModelError, match=r"not returned by pmp\.privatize"):
        privatised_statistics(nb_model)


def test_a_privatised_model_reading_the_raw_models_data_is_refused():
    """A Deterministic of the privatised model over the raw model's PrivateData: the values
    would be released as if public; `pmp.sample` refuses before drawing anything."""
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", np.array([0, 1, 1, 0, 1]), bounds=(0, 1))
        theta = TruncatedBeta("theta", 1, 1, lower=0.05, upper=0.95)
        pm.Bernoulli("x", theta, observed=x_obs)
    private = privatize(model, 1.0, secure=False)
    spent = ledger_for(private).epsilon()
    with private:
        pm.Deterministic("leak", x_obs.sum() + 0 * private["theta"])
        with pytest.raises(UnsupportedModelError, match="PrivateData `x_obs` of another model"):
            sample(20, chains=2, progressbar=False)
    assert ledger_for(private).epsilon() == spent


def test_nuts_samples_the_privatised_model(private_nb):
    with private_nb:
        idata = pm.sample(
            100,
            tune=100,
            chains=1,
            random_seed=10,
            progressbar=False,
            compute_convergence_checks=False,
        )
    theta = idata.posterior["theta"].values
    assert theta.shape == (1, 100, 2, 3)
    assert np.all((theta >= A) & (theta <= 1 - A))


# ---------------------------------------------------------------------------------------
# Audits of the release (Jagielski et al. 2020 black-box audit, pmp.audit)
# ---------------------------------------------------------------------------------------


def _bb_arrays(successes, n=100):
    return {"y_obs": np.array([1] * successes + [0] * (n - successes))}


@pytest.fixture(scope="module")
def bb_analysis():
    return analyze(beta_bernoulli(np.array([1] * 40 + [0] * 60)))


def test_audit_beta_bernoulli_release_secure_default(bb_analysis):
    plan = chosen_plan(bb_analysis, 1.0)

    def mechanism(arrays, rng):
        return release_statistics(bb_analysis, arrays, plan).statistics["counts(y_obs)"][0]

    result = epsilon_lower_bound(
        mechanism,
        _bb_arrays(40),
        _bb_arrays(41),
        n=400,
        alpha=0.01,
        event=lambda s: s >= 41,
        random_seed=11,
    )
    assert result.passes(1.0)


@pytest.mark.slow
def test_audit_beta_bernoulli_release_and_half_scale_copy_is_caught(bb_analysis):
    def mechanism(epsilon):
        def run(arrays, rng):
            released = release_statistics(
                bb_analysis, arrays, chosen_plan(bb_analysis, epsilon, secure=False), rng=rng
            )
            return released.statistics["counts(y_obs)"][0]

        return run

    data, neighbour = _bb_arrays(40), _bb_arrays(41)
    honest = epsilon_lower_bound(
        mechanism(1.0), data, neighbour, n=3000, alpha=0.01, random_seed=12
    )
    assert honest.passes(1.0)
    assert honest.epsilon_lower_bound > 0.5
    half_scale = epsilon_lower_bound(
        mechanism(2.0), data, neighbour, n=3000, alpha=0.01, random_seed=13
    )
    assert not half_scale.passes(1.0)


def _nb_arrays(move_record: bool):
    """200 records with d = 2 features; the neighbour moves one record whose features are
    all 1 from class 0 to class 1: the worst case, every one of the 2d + 1 = 5 released
    cells changes by one (Δ₁ = 5)."""
    labels = np.array([0, 1] * 100)
    each_class = np.array([[1, 0], [0, 1], [1, 1], [0, 0]])  # every cell near its middle
    features = np.tile(np.stack([each_class, np.roll(each_class, 1, axis=0)], 1), (25, 1, 1))
    features = features.reshape(200, 2)
    features[0] = 1
    if move_record:
        labels = labels.copy()
        labels[0] = 1
    return {"y_obs": labels, "x_obs": features}


@pytest.mark.slow
def test_audit_naive_bayes_release_and_half_scale_copy_is_caught():
    data, neighbour = _nb_arrays(False), _nb_arrays(True)
    analysis = analyze(_naive_bayes(data["y_obs"], data["x_obs"]))
    assert analysis.sensitivity_l1 == 5.0
    before, target = (
        np.concatenate([spec.compute(arrays).ravel() for spec in analysis.statistics])
        for arrays in (data, neighbour)
    )
    direction = np.sign(target - before)
    assert np.count_nonzero(direction) == 5

    def corner(released):
        """Every changed cell on the neighbour's side of its neighbour value: the event
        whose probability ratio is e^ε for independent (discrete) Laplace noise."""
        return bool(np.all(direction * (released - target) >= 0))

    def mechanism(epsilon):
        def run(arrays, rng):
            # The mechanism's output before the (post-processing) projection.
            noisy = release_statistics(
                analysis, arrays, chosen_plan(analysis, epsilon, secure=False), rng=rng
            ).noisy
            return np.concatenate([noisy[spec.name].ravel() for spec in analysis.statistics])

        return run

    honest = epsilon_lower_bound(
        mechanism(1.0), data, neighbour, n=2000, alpha=0.01, event=corner, random_seed=14
    )
    assert honest.passes(1.0)
    caught = epsilon_lower_bound(
        mechanism(2.0), data, neighbour, n=6000, alpha=0.01, event=corner, random_seed=15
    )
    assert not caught.passes(1.0)


# ---------------------------------------------------------------------------------------
# Correctness of the private posterior
# ---------------------------------------------------------------------------------------


def _truncated_beta_cdf(a, b, lower, upper):
    low, high = special.betainc(a, b, lower), special.betainc(a, b, upper)
    return lambda x: (special.betainc(a, b, x) - low) / (high - low)


def _truncated_beta_mean(a, b, lower, upper):
    mass = special.betainc(a, b, upper) - special.betainc(a, b, lower)
    first = special.betainc(a + 1, b, upper) - special.betainc(a + 1, b, lower)
    return a / (a + b) * first / mass


def test_huge_epsilon_private_posterior_is_the_exact_posterior():
    y = np.array([1] * 37 + [0] * 63)
    private = privatize(beta_bernoulli(y), 1e9, noise_aware=False, secure=False, random_seed=16)
    assert privatised_statistics(private)["counts(y_obs)"][0] == 37
    with private:
        idata = sample(1000, tune=0, chains=2, cores=1, random_seed=17, progressbar=False)
    draws = idata.posterior["p"].values.ravel()
    cdf = _truncated_beta_cdf(1 + 37, 1 + 63, A, 1 - A)
    assert stats.kstest(draws, cdf).pvalue > 1e-3


def test_private_posterior_mean_error_shrinks_like_one_over_n():
    """Foulds et al. 2016, Theorem 3.1: the noise on s̃ is O(1) (discrete Laplace of scale
    Δ₁/ε, independent of n), so the private posterior mean moves by O(1/n). The same 150
    seeds at n and 10n (common random numbers) isolate the dependence on n: the mean
    absolute error at n must be 10× the one at 10n, within [7, 14] (projection and
    truncation are the only other effects)."""
    errors = {}
    for n in (1000, 10000):
        y = (np.arange(n) < 0.3 * n).astype(int)
        analysis = analyze(beta_bernoulli(y))
        exact = _truncated_beta_mean(1 + 0.3 * n, 1 + 0.7 * n, A, 1 - A)
        gaps = []
        for seed in range(150):
            released = release_statistics(
                analysis,
                {"y_obs": y},
                chosen_plan(analysis, 0.5, secure=False),
                rng=np.random.default_rng(seed),
            )
            s = float(released.statistics["counts(y_obs)"][0])
            gaps.append(abs(_truncated_beta_mean(1 + s, 1 + n - s, A, 1 - A) - exact))
        errors[n] = np.mean(gaps)
    assert 7.0 <= errors[1000] / errors[10000] <= 14.0


# ---------------------------------------------------------------------------------------
# Sampling the privatised model: chains, cores, reproducibility, ArviZ, netcdf, canary
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def private_normal(normal_data):
    return privatize(
        normal_free_precision(normal_data), 1.0, noise_aware=False, secure=False, random_seed=18
    )


def test_chains_cores_spawn_reproducible_and_arviz(private_nb):
    kwargs = {"tune": 50, "chains": 4, "random_seed": 19, "progressbar": False}
    with private_nb:
        serial = sample(60, cores=1, **kwargs)
        parallel = sample(60, cores=2, mp_ctx="spawn", **kwargs)
    np.testing.assert_array_equal(serial.posterior["theta"], parallel.posterior["theta"])
    assert serial.posterior.sizes["chain"] == 4
    assert np.all(serial.sample_stats["privacy_epsilon"].values == 0.0)
    summary = az.summary(serial, var_names=["pi", "theta"])
    assert len(summary) == 7
    # ArviZ 1's trace plot with a density beside it: one row, a dist and a trace panel.
    axes = az.plot_trace_dist(serial, var_names=["pi"]).viz["plot"]["pi"]
    assert dict(axes.sizes) == {"column": 2}


def _raw_data_in(idata: xr.DataTree, raw: np.ndarray) -> list[str]:
    """Where raw values appear in ``idata``: any value of any variable or coord of any group
    (every node of the tree, its root and nested groups included) equal to a raw value
    strictly inside the bounds (-3, 3) (the clipped ones equal the public bounds), or the
    sentinel's digits in the file's, a group's or a variable's attrs.
    """
    inner = raw[(raw > -3.0) & (raw < 3.0)]
    texts = {"attrs": str(dict(idata.attrs))}
    found = []
    for group in idata.subtree:
        group_name = group.path.lstrip("/")
        texts[f"{group_name}.attrs"] = str(dict(group.attrs))
        for name, array in {**group.data_vars, **group.coords}.items():
            texts[f"{group_name}/{name}.attrs"] = str(dict(array.attrs))
            values = np.asarray(array.values)
            if values.dtype.kind in "fiu" and np.isin(inner, values).any():
                found.append(f"{group_name}/{name}")
    found += [where for where, text in texts.items() if "0.1234567" in text]
    return found


def test_netcdf_keeps_ledger_and_leaks_no_raw_data(normal_data, tmp_path, capsys):
    private_normal = privatize(
        normal_free_precision(normal_data), 1.0, secure=False, random_seed=18
    )
    with private_normal:
        idata = sample(50, tune=10, chains=2, cores=1, random_seed=20, progressbar=False)
    # Uncompressed (xarray's default), so that raw float64 bytes in the file would be found
    # by a byte search (zlib compression would hide them from it).
    path = tmp_path / "private.nc"
    idata.to_netcdf(str(path))
    loaded = az.from_netcdf(path)
    ledger = ledger_of(loaded)
    assert {r.mechanism for r in ledger.releases} == {"discrete_laplace"}
    assert ledger.epsilon() == pytest.approx(1.0)
    assert "sum(x_obs)" in loaded.constant_data
    assert "observed_data" not in loaded.children
    assert _raw_data_in(idata, normal_data) == []
    assert _raw_data_in(loaded, normal_data) == []
    # The ledger JSON (floats written in full by repr) and the printed report are plain
    # text, so a substring search is meaningful; the table's numbers are compared as numbers
    # (its text rounds them to 6 decimals).
    shown = privacy_report(loaded)
    table = shown.table
    report = str(shown) + shown._repr_html_() + table.to_string()
    inner = [repr(float(v)) for v in normal_data if -3.0 < v < 3.0]
    for text in (report, idata.attrs["privacy_ledger"]):
        assert "0.123456789" not in text and "0.12345678" not in text
        assert not any(value in text for value in inner)
    numbers = table.select_dtypes("number").to_numpy(dtype=np.float64)
    assert not np.isin(normal_data[(normal_data > -3.0) & (normal_data < 3.0)], numbers).any()
    blob = path.read_bytes()
    assert np.float64(SENTINEL).tobytes() not in blob
    assert np.asarray(normal_data[:8]).tobytes() not in blob
    # Controls: the same checks find raw data written the same way.
    leaky = idata.copy()
    leaky.constant_data["x_obs"] = xr.DataArray(normal_data, dims="record")
    assert "x_obs" not in idata.constant_data
    assert _raw_data_in(leaky, normal_data) == ["constant_data/x_obs"]
    control = tmp_path / "control.nc"
    leaky.to_netcdf(str(control))
    assert _raw_data_in(az.from_netcdf(control), normal_data) == ["constant_data/x_obs"]
    assert np.float64(SENTINEL).tobytes() in control.read_bytes()
    assert np.asarray(normal_data[:8]).tobytes() in control.read_bytes()


def test_an_intercept_refusal_names_the_form_that_runs_and_that_form_privatizes():
    """`alpha + X @ w` does not reduce to sufficient statistics; the refusal says to put a
    column of ones in X, and that model privatizes."""
    rng = np.random.default_rng(4)
    X = rng.uniform(-1.0, 1.0, (50, 2))
    y = np.clip(0.3 + X @ [0.5, -0.3], -2.0, 2.0)
    with pm.Model() as model:
        X_obs = PrivateData("X", X, bounds=(-1.0, 1.0))
        y_obs = PrivateData("y", y, bounds=(-2.0, 2.0))
        alpha = TruncatedNormal("alpha", 0.0, 1.0, lower=-1.0, upper=1.0)
        w = TruncatedMvNormal("w", np.zeros(2), np.eye(2), radius=2.0)
        pm.Normal("obs", alpha + X_obs @ w, 0.5, observed=y_obs)
    with pytest.raises(UnsupportedModelError, match="column of ones") as refusal:
        privatize(model, epsilon=1.0)
    assert "PrivateMetropolis" in str(refusal.value)
    ones = np.column_stack([np.ones(50), X])
    with pm.Model() as fixed:
        X_obs = PrivateData("X", ones, bounds=([1.0, -1.0, -1.0], [1.0, 1.0, 1.0]))
        y_obs = PrivateData("y", y, bounds=(-2.0, 2.0))
        w = TruncatedMvNormal("w", np.zeros(3), np.eye(3), radius=2.0)
        pm.Normal("obs", X_obs @ w, 0.5, observed=y_obs)
    statistics = privatised_statistics(privatize(fixed, epsilon=1.0))
    assert statistics["gram(X)"].shape == (6,)  # the upper triangle of the 3 × 3 Gram matrix
