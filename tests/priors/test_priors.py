"""Tests of the truncated priors and of `parameter_support`.

Densities are checked against scipy and by numerical integration; draws against the
support and against means computed by quadrature; NUTS against analytic (or quadrature)
truncated posterior means within 4 Monte Carlo standard errors. Every logp and draw
function is compiled in FAST_COMPILE mode; the one NUTS model is shared by a module fixture.
"""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pymc.distributions.shape_utils import change_dist_size
from pymc.exceptions import TruncationError
from pymc.initial_point import make_initial_point_fn
from pymc.model.fgraph import clone_model
from scipy import integrate, stats

from pymc_private.errors import (
    InvalidPrivacyParameterError,
    UnboundedSensitivityError,
    UnsupportedModelError,
)
from pymc_private.priors.distributions import (
    TruncatedBeta,
    TruncatedDirichlet,
    TruncatedExponential,
    TruncatedGamma,
    TruncatedMvNormal,
    TruncatedNormal,
    _InteriorTruncatedRV,
)
from pymc_private.priors.mass import _dirichlet_log_mass_by_convolution, _imhof_cdf
from pymc_private.priors.support import ParameterSupport, parameter_support

FAST = "FAST_COMPILE"
GAUSS_NODES, GAUSS_WEIGHTS = np.polynomial.legendre.leggauss(120)
UNIT_NODES, UNIT_WEIGHTS = (GAUSS_NODES + 1.0) / 2.0, GAUSS_WEIGHTS / 2.0


def compiled_logp(dist, value_ndim):
    value = pt.tensor("value", shape=(None,) * value_ndim)
    return pytensor.function([value], pm.logp(dist, value), mode=FAST)


def draw(dist, draws, seed):
    return pm.draw(dist, draws=draws, random_seed=seed, mode=FAST)


def truncated_simplex_grid(min_prob):
    """Gauss–Legendre nodes and weights on {p_1, p_2 ≥ m, p_3 = 1 − p_1 − p_2 ≥ m}."""
    s, t = np.meshgrid(UNIT_NODES, UNIT_NODES, indexing="ij")
    ws, wt = np.meshgrid(UNIT_WEIGHTS, UNIT_WEIGHTS, indexing="ij")
    width = 1.0 - 3.0 * min_prob
    q = np.stack([s, (1.0 - s) * t, (1.0 - s) * (1.0 - t)], axis=-1).reshape(-1, 3)
    weights = (ws * wt * (1.0 - s) * width**2).reshape(-1)
    return min_prob + width * q, weights


def disk_grid(radius, n_angles=256):
    """Gauss–Legendre in r, trapezoid (spectral for periodic integrands) in the angle."""
    r = radius * UNIT_NODES
    angle = 2.0 * np.pi * np.arange(n_angles) / n_angles
    rr, aa = np.meshgrid(r, angle, indexing="ij")
    weights = (radius * UNIT_WEIGHTS)[:, None] * rr * (2.0 * np.pi / n_angles)
    points = np.stack([rr * np.cos(aa), rr * np.sin(aa)], axis=-1).reshape(-1, 2)
    return points, weights.reshape(-1)


# ---------------------------------------------------------------------------------------
# Univariate priors: logp against scipy, normalisation, draws
# ---------------------------------------------------------------------------------------

SCALAR_CASES = {
    "beta": (
        lambda: TruncatedBeta.dist(2.0, 3.0, lower=0.2, upper=0.7),
        stats.beta(2.0, 3.0),
        (0.2, 0.7),
    ),
    "gamma": (
        lambda: TruncatedGamma.dist(2.0, 1.5, lower=0.5, upper=3.0),
        stats.gamma(2.0, scale=1 / 1.5),
        (0.5, 3.0),
    ),
    "exponential": (
        lambda: TruncatedExponential.dist(1.0, lower=1.0, upper=2.0),
        stats.expon(scale=1.0),
        (1.0, 2.0),
    ),
    "normal": (
        lambda: TruncatedNormal.dist(0.5, 2.0, lower=-1.0, upper=3.0),
        stats.norm(0.5, 2.0),
        (-1.0, 3.0),
    ),
}


@pytest.mark.parametrize("family", SCALAR_CASES)
def test_scalar_logp_matches_scipy_and_integrates_to_one(family):
    make, base, (lower, upper) = SCALAR_CASES[family]
    logp = compiled_logp(make(), 1)
    points = np.linspace(lower, upper, 7)
    expected = base.logpdf(points) - np.log(base.cdf(upper) - base.cdf(lower))
    # PyMC's TruncatedNormal normaliser is accurate to about 1e-8.
    np.testing.assert_allclose(logp(points), expected, rtol=0, atol=1e-7)
    total, _ = integrate.quad(lambda x: np.exp(logp(np.array([x]))[0]), lower, upper)
    assert total == pytest.approx(1.0, abs=1e-7)
    outside = logp(np.array([lower - 1e-6, upper + 1e-6]))
    assert np.all(outside == -np.inf)


@pytest.mark.parametrize("family", SCALAR_CASES)
def test_scalar_draws_inside_support_and_follow_truncated_cdf(family):
    make, base, (lower, upper) = SCALAR_CASES[family]
    dist = change_dist_size(make(), (4,))
    draws = draw(dist, 500, seed=11)
    assert draws.shape == (500, 4)
    assert np.all((draws >= lower) & (draws <= upper))
    mass = base.cdf(upper) - base.cdf(lower)
    ks = stats.kstest(draws.ravel(), lambda x: (base.cdf(x) - base.cdf(lower)) / mass)
    assert ks.pvalue > 1e-3


def test_truncated_beta_dims_draws_and_initial_point():
    with pm.Model(coords={"cls": [0, 1], "feature": ["a", "b", "c"]}) as model:
        theta = TruncatedBeta("theta", 1.0, 1.0, lower=0.05, upper=0.95, dims=("cls", "feature"))
    assert isinstance(theta.owner.op, _InteriorTruncatedRV)
    draws = draw(theta, 300, seed=3)
    assert draws.shape == (300, 2, 3)
    assert np.all((draws >= 0.05) & (draws <= 0.95))
    start = make_initial_point_fn(model=model, return_transformed=False)(0)["theta"]
    np.testing.assert_allclose(start, np.full((2, 3), 0.5))


def test_resized_truncated_prior_keeps_interior_initial_point():
    resized = change_dist_size(TruncatedExponential.dist(1.0, lower=1.0, upper=2.0), (5,))
    assert isinstance(resized.owner.op, _InteriorTruncatedRV)
    assert draw(resized, 1, seed=0).shape == (5,)


# ---------------------------------------------------------------------------------------
# TruncatedDirichlet
# ---------------------------------------------------------------------------------------


def test_truncated_dirichlet_k2_matches_truncated_beta_and_integrates_to_one():
    a, m = np.array([2.0, 3.0]), 0.1
    logp = compiled_logp(TruncatedDirichlet.dist(a, min_prob=m), 2)
    x = np.linspace(m, 1 - m, 9)[1:-1]
    base = stats.beta(2.0, 3.0)
    expected = base.logpdf(x) - np.log(base.cdf(1 - m) - base.cdf(m))
    np.testing.assert_allclose(logp(np.stack([x, 1 - x], -1)), expected, rtol=1e-10)
    total, _ = integrate.quad(lambda p: np.exp(logp(np.array([[p, 1 - p]]))[0]), m, 1 - m)
    assert total == pytest.approx(1.0, abs=1e-9)
    assert logp(np.array([[m / 2, 1 - m / 2]]))[0] == -np.inf


@pytest.mark.parametrize(
    ("a", "min_prob"),
    [
        ([1.0, 1.0, 1.0], 0.2),  # closed form (1 − K·m)^{K−1}
        ([2.0, 3.0, 0.5], 0.1),  # numerical convolution
        ([0.5, 0.7, 0.9], 0.05),  # a < 1: factors steep near the bound
        ([30.0, 20.0, 50.0], 0.2),  # concentrated, truncation binding
    ],
)
def test_truncated_dirichlet_k3_integrates_to_one(a, min_prob):
    logp = compiled_logp(TruncatedDirichlet.dist(np.array(a), min_prob=min_prob), 2)
    points, weights = truncated_simplex_grid(min_prob)
    assert np.sum(weights * np.exp(logp(points))) == pytest.approx(1.0, abs=1e-8)


def test_dirichlet_convolution_matches_closed_form_for_k5():
    log_mass = _dirichlet_log_mass_by_convolution(np.ones(5), 0.08)
    assert log_mass == pytest.approx(4 * np.log1p(-5 * 0.08), abs=1e-9)


@pytest.mark.parametrize(
    ("a", "min_prob"),
    [
        ([1.0, 1.0, 1.0], 0.2),  # proposal B, acceptance 1
        ([0.5, 0.5, 0.5], 0.1),  # proposal B with a < 1
        ([2.0, 3.0, 0.5], 0.1),  # proposal A (Dirichlet rejection)
        ([30.0, 20.0, 50.0], 0.2),  # proposal A
    ],
)
def test_truncated_dirichlet_draws_match_quadrature_mean(a, min_prob):
    a = np.array(a)
    draws = draw(TruncatedDirichlet.dist(a, min_prob=min_prob, shape=(2000, 3)), 1, seed=5)
    assert np.all(draws >= min_prob)
    np.testing.assert_allclose(draws.sum(-1), 1.0, atol=1e-12)
    points, weights = truncated_simplex_grid(min_prob)
    density = weights * np.exp(np.log(points) @ (a - 1.0))
    mean = density @ points / density.sum()
    standard_error = draws.std(0) / np.sqrt(draws.shape[0])
    assert np.all(np.abs(draws.mean(0) - mean) < 4 * standard_error)


def test_truncated_dirichlet_batch_shape_draws():
    a = np.array([[1.0, 2.0, 3.0, 4.0], [0.5, 0.5, 0.5, 0.5], [5.0, 1.0, 1.0, 1.0]])
    with pm.Model(coords={"cls": [0, 1], "feature": [0, 1, 2], "level": [0, 1, 2, 3]}):
        p = TruncatedDirichlet("p", a, min_prob=0.05, dims=("cls", "feature", "level"))
    draws = draw(p, 200, seed=2)
    assert draws.shape == (200, 2, 3, 4)
    assert draws.min() >= 0.05
    np.testing.assert_allclose(draws.sum(-1), 1.0, atol=1e-12)


def test_truncated_dirichlet_hopeless_rejection_fails_clearly():
    dist = TruncatedDirichlet.dist(np.array([1e4, 1.0, 1.0]), min_prob=0.3)
    with pytest.raises(TruncationError, match="Lower `min_prob`"):
        draw(dist, 1, seed=0)


# ---------------------------------------------------------------------------------------
# TruncatedMvNormal
# ---------------------------------------------------------------------------------------

BALL_CASES = {
    "isotropic": (np.zeros(2), 4.0 * np.eye(2), 1.5),  # chi-square CDF
    "general": (np.array([0.5, -0.3]), np.array([[1.0, 0.3], [0.3, 0.5]]), 1.2),  # Ruben
}


@pytest.mark.parametrize("case", BALL_CASES)
def test_truncated_mvnormal_logp_integrates_to_one_over_disk(case):
    mu, cov, radius = BALL_CASES[case]
    logp = compiled_logp(TruncatedMvNormal.dist(mu, cov, radius=radius), 2)
    points, weights = disk_grid(radius)
    assert np.sum(weights * np.exp(logp(points))) == pytest.approx(1.0, abs=1e-9)
    base = stats.multivariate_normal(mu, cov).logpdf(points[:5])
    offset = logp(points[:5]) - base
    np.testing.assert_allclose(offset, offset[0], atol=1e-12)
    assert logp(np.array([[radius * 1.001, 0.0]]))[0] == -np.inf


def test_imhof_matches_noncentral_chi_square():
    # Large noncentrality, where Ruben's series is not used.
    eigenvalues, noncentrality, threshold = np.array([1.0, 1.0]), np.array([1600.0, 0.0]), 41.0**2
    expected = stats.ncx2.cdf(threshold, 2, 1600.0)
    assert _imhof_cdf(eigenvalues, noncentrality, threshold) == pytest.approx(expected, abs=1e-9)


def test_truncated_mvnormal_draws_inside_ball_with_batch_shape():
    dist = TruncatedMvNormal.dist(np.zeros(3), 4.0 * np.eye(3), radius=1.0, shape=(2, 3))
    draws = draw(dist, 500, seed=4)
    assert draws.shape == (500, 2, 3)
    squared_radius = np.sum(draws**2, -1).ravel()
    assert squared_radius.max() <= 1.0
    top = stats.chi2.cdf(1.0 / 4.0, 3)
    ks = stats.kstest(squared_radius, lambda x: stats.chi2.cdf(x / 4.0, 3) / top)
    assert ks.pvalue > 1e-3


def test_truncated_mvnormal_rejection_draws_match_quadrature_mean():
    mu, cov, radius = BALL_CASES["general"]
    draws = draw(TruncatedMvNormal.dist(mu, cov, radius=radius, shape=(3000, 2)), 1, seed=8)
    assert np.linalg.norm(draws, axis=-1).max() <= radius
    points, weights = disk_grid(radius)
    density = weights * stats.multivariate_normal(mu, cov).pdf(points)
    mean = density @ points / density.sum()
    standard_error = draws.std(0) / np.sqrt(draws.shape[0])
    assert np.all(np.abs(draws.mean(0) - mean) < 4 * standard_error)


def test_truncated_mvnormal_hopeless_rejection_fails_clearly():
    dist = TruncatedMvNormal.dist(np.array([5.0, 0.0]), np.diag([0.1, 0.2]), radius=1.0)
    with pytest.raises(TruncationError, match="increase `radius`"):
        draw(dist, 1, seed=0)


# ---------------------------------------------------------------------------------------
# One NUTS model: conjugate truncated posteriors against analytic/quadrature means
# ---------------------------------------------------------------------------------------

BERNOULLI_DATA = np.array([1, 1, 1, 1, 1, 1, 1, 1, 0, 1])
COUNTS = np.array([15, 5, 0])
NORMAL_DATA = np.array([[1.0, 0.5], [0.8, 0.9]])
NORMAL_SIGMA = 0.5


@pytest.fixture(scope="module")
def nuts_idata():
    with pm.Model():
        theta = TruncatedBeta("theta", 1.0, 1.0, lower=0.2, upper=0.8)
        pm.Bernoulli("y", p=theta, observed=BERNOULLI_DATA)
        p = TruncatedDirichlet("p", np.ones(3), min_prob=0.1)
        pm.Multinomial("counts", n=COUNTS.sum(), p=p, observed=COUNTS)
        w = TruncatedMvNormal("w", np.zeros(2), np.eye(2), radius=1.0)
        pm.Normal("z", mu=w, sigma=NORMAL_SIGMA, observed=NORMAL_DATA)
        return pm.sample(
            500,
            tune=500,
            chains=2,
            cores=1,
            random_seed=20240517,
            progressbar=False,
            compute_convergence_checks=False,
        )


def assert_within_monte_carlo_error(idata, name, exact):
    """|posterior mean − exact| < 4 standard errors, the standard error from the ESS."""
    samples = idata.posterior[name]
    ess = az.ess(idata, var_names=[name])[name].to_numpy()
    sd = samples.std(("chain", "draw")).to_numpy()
    error = np.abs(samples.mean(("chain", "draw")).to_numpy() - exact)
    assert np.all(error < 4 * sd / np.sqrt(ess)), (error, sd / np.sqrt(ess))


@pytest.mark.slow
def test_nuts_has_no_divergences_and_stays_in_support(nuts_idata):
    assert int(nuts_idata.sample_stats["diverging"].sum()) == 0
    posterior = nuts_idata.posterior
    assert float(posterior["theta"].min()) >= 0.2 and float(posterior["theta"].max()) <= 0.8
    assert float(posterior["p"].min()) >= 0.1
    assert float(np.linalg.norm(posterior["w"].to_numpy(), axis=-1).max()) <= 1.0


def test_nuts_truncated_beta_bernoulli_posterior_mean(nuts_idata):
    successes, n = BERNOULLI_DATA.sum(), BERNOULLI_DATA.size
    posterior = stats.beta(1.0 + successes, 1.0 + n - successes)
    exact = posterior.expect(lambda x: x, lb=0.2, ub=0.8, conditional=True)
    assert_within_monte_carlo_error(nuts_idata, "theta", exact)


def test_nuts_truncated_dirichlet_multinomial_posterior_mean(nuts_idata):
    # Conjugacy: the posterior is TruncatedDirichlet(1 + counts, 0.1).
    points, weights = truncated_simplex_grid(0.1)
    density = weights * np.exp(np.log(points) @ COUNTS.astype(float))
    exact = density @ points / density.sum()
    assert_within_monte_carlo_error(nuts_idata, "p", exact)


def test_nuts_truncated_mvnormal_normal_posterior_mean(nuts_idata):
    precision = 1.0 + NORMAL_DATA.shape[0] / NORMAL_SIGMA**2
    mean = NORMAL_DATA.sum(0) / NORMAL_SIGMA**2 / precision
    points, weights = disk_grid(1.0)
    density = weights * stats.multivariate_normal(mean, np.eye(2) / precision).pdf(points)
    exact = density @ points / density.sum()
    assert_within_monte_carlo_error(nuts_idata, "w", exact)


# ---------------------------------------------------------------------------------------
# Initial points and parameter_support
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def prior_model():
    with pm.Model(coords={"cls": [0, 1], "feature": [0, 1, 2], "level": [0, 1, 2, 3]}) as model:
        TruncatedBeta("beta", 2.0, 3.0, lower=0.05, upper=0.95, dims=("cls", "feature"))
        TruncatedGamma("gamma", 2.0, 4.0, lower=[0.5, 1.0], upper=3.0)
        TruncatedExponential("exponential", 1.0, lower=1.0, upper=2.0)
        TruncatedNormal("normal", 5.0, 1.0, lower=-1.0, upper=1.0)
        TruncatedDirichlet("dirichlet", np.ones(4), min_prob=0.05, dims=("cls", "feature", "level"))
        TruncatedMvNormal("mvnormal", np.array([3.0, 0.0]), np.eye(2), radius=2.0)
        pm.Beta("plain_beta", 2.0, 2.0)
        pm.Gamma("plain_gamma", 2.0, beta=4.0, shape=3)
        pm.Normal("plain_normal", 1.0, 2.0)
        pm.Uniform("plain_uniform", -1.0, 3.0)
        pm.Dirichlet("plain_dirichlet", np.array([1.0, 2.0, 3.0]))
        pm.MvNormal("plain_mvnormal", np.zeros(2), np.eye(2))
    return model


def test_initial_point_strictly_inside_support(prior_model):
    start = make_initial_point_fn(model=prior_model, return_transformed=False)(0)
    for rv in prior_model.free_RVs:
        support = parameter_support(rv)
        value = start[rv.name]
        assert np.all((value > support.lower) & (value < support.upper)), rv.name
    # The base mean lies on or outside the bound: the start is clipped 1/20 of the width in.
    assert start["exponential"] == pytest.approx(1.05)
    assert start["normal"] == pytest.approx(0.0)
    assert np.linalg.norm(start["mvnormal"]) == pytest.approx(1.0)
    assert np.all(start["dirichlet"] > 0.05)


def test_parameter_support_of_truncated_priors(prior_model):
    beta = parameter_support(prior_model["beta"])
    assert beta.family == "beta" and beta.lower.shape == (2, 3)
    np.testing.assert_array_equal(beta.lower, 0.05)
    np.testing.assert_array_equal(beta.upper, 0.95)
    np.testing.assert_array_equal(beta.params["alpha"], np.full((2, 3), 2.0))
    assert beta.is_bounded and beta.simplex_min_prob is None and beta.radius is None

    gamma = parameter_support(prior_model["gamma"])
    assert gamma.family == "gamma"
    np.testing.assert_array_equal(gamma.lower, [0.5, 1.0])
    np.testing.assert_array_equal(gamma.params["beta"], [4.0, 4.0])  # rate, as pm.Gamma

    exponential = parameter_support(prior_model["exponential"])
    assert (exponential.family, float(exponential.params["lam"])) == ("exponential", 1.0)

    normal = parameter_support(prior_model["normal"])
    assert normal.family == "normal" and (float(normal.lower), float(normal.upper)) == (-1, 1)
    assert float(normal.params["mu"]) == 5.0 and float(normal.params["sigma"]) == 1.0

    dirichlet = parameter_support(prior_model["dirichlet"])
    assert dirichlet.family == "dirichlet" and dirichlet.simplex_min_prob == 0.05
    assert dirichlet.lower.shape == (2, 3, 4)
    np.testing.assert_allclose(dirichlet.upper, 1.0 - 3 * 0.05)
    np.testing.assert_array_equal(dirichlet.params["a"], np.ones((2, 3, 4)))

    mvnormal = parameter_support(prior_model["mvnormal"])
    assert mvnormal.family == "mvnormal" and mvnormal.radius == 2.0
    np.testing.assert_array_equal(mvnormal.lower, [-2.0, -2.0])
    np.testing.assert_array_equal(mvnormal.params["cov"], np.eye(2))


def test_parameter_support_of_plain_distributions(prior_model):
    plain_beta = parameter_support(prior_model["plain_beta"])
    assert (plain_beta.family, float(plain_beta.lower), float(plain_beta.upper)) == (
        "beta",
        0.0,
        1.0,
    )
    plain_gamma = parameter_support(prior_model["plain_gamma"])
    np.testing.assert_array_equal(plain_gamma.upper, np.full(3, np.inf))
    np.testing.assert_array_equal(plain_gamma.params["beta"], np.full(3, 4.0))
    assert not plain_gamma.is_bounded
    plain_normal = parameter_support(prior_model["plain_normal"])
    assert float(plain_normal.lower) == -np.inf and float(plain_normal.params["sigma"]) == 2.0
    plain_uniform = parameter_support(prior_model["plain_uniform"])
    assert (float(plain_uniform.lower), float(plain_uniform.upper)) == (-1.0, 3.0)
    plain_dirichlet = parameter_support(prior_model["plain_dirichlet"])
    assert plain_dirichlet.simplex_min_prob == 0.0
    np.testing.assert_array_equal(plain_dirichlet.params["a"], [1.0, 2.0, 3.0])
    plain_mvnormal = parameter_support(prior_model["plain_mvnormal"])
    assert plain_mvnormal.radius is None and not plain_mvnormal.is_bounded


def test_parameter_support_survives_cloning(prior_model):
    clone = clone_model(prior_model)
    for rv in prior_model.free_RVs:
        assert parameter_support(clone[rv.name]) == parameter_support(rv), rv.name


def test_parameter_support_is_read_only(prior_model):
    support = parameter_support(prior_model["beta"])
    with pytest.raises(ValueError, match="read-only"):
        support.lower[0, 0] = 0.0
    assert isinstance(support, ParameterSupport)


def test_parameter_support_refusals_and_unknowns():
    with pm.Model() as model:
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Uniform("u", 0.0, sigma)
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        TruncatedBeta("theta", alpha, 1.0, lower=0.1, upper=0.9)
        pm.Weibull("weibull", 2.0, 1.0)
        pm.Deterministic("double", 2 * sigma)
    with pytest.raises(UnsupportedModelError, match="not public and fixed"):
        parameter_support(model["u"])
    hyper = parameter_support(model["theta"])
    assert hyper.params["alpha"] is None and float(hyper.params["beta"]) == 1.0
    assert (float(hyper.lower), float(hyper.upper)) == (0.1, 0.9)
    assert parameter_support(model["weibull"]) is None
    assert parameter_support(model["double"]) is None


# ---------------------------------------------------------------------------------------
# Bad arguments
# ---------------------------------------------------------------------------------------

unit = st.floats(0.0, 1.0)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(lower=unit, upper=unit)
def test_reversed_interval_is_refused(lower, upper):
    if lower < upper:
        lower, upper = upper, lower
    with pytest.raises(InvalidPrivacyParameterError, match="need `lower` < `upper`"):
        TruncatedBeta.dist(1.0, 1.0, lower=lower, upper=upper)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    lower=st.floats(-10.0, -1e-9) | st.floats(0.0, 0.5),
    upper=st.floats(1.0 + 1e-9, 10.0) | st.floats(0.6, 1.0),
)
def test_interval_outside_base_support_is_refused(lower, upper):
    if lower >= 0.0 and upper <= 1.0:
        return
    with pytest.raises(InvalidPrivacyParameterError, match="inside the base support"):
        TruncatedBeta.dist(1.0, 1.0, lower=lower, upper=upper)


@pytest.mark.parametrize(
    "make",
    [
        lambda: TruncatedGamma.dist(2.0, 1.0, lower=0.1, upper=np.inf),
        lambda: TruncatedExponential.dist(1.0, lower=0.1, upper=np.inf),
        lambda: TruncatedNormal.dist(0.0, 1.0, lower=-np.inf, upper=1.0),
        lambda: TruncatedMvNormal.dist(np.zeros(2), np.eye(2), radius=np.inf),
    ],
)
def test_unbounded_support_raises_unbounded_sensitivity(make):
    with pytest.raises(UnboundedSensitivityError, match="finite"):
        make()


@settings(max_examples=40, deadline=None, derandomize=True)
@given(value=st.floats(-5.0, 0.0) | st.just(np.inf) | st.just(np.nan))
def test_non_positive_shape_parameters_are_refused(value):
    with pytest.raises(InvalidPrivacyParameterError, match="`alpha`"):
        TruncatedBeta.dist(value, 1.0, lower=0.1, upper=0.9)
    with pytest.raises(InvalidPrivacyParameterError, match="`sigma`"):
        TruncatedNormal.dist(0.0, value, lower=-1.0, upper=1.0)
    with pytest.raises(InvalidPrivacyParameterError, match="`a`"):
        TruncatedDirichlet.dist(np.array([1.0, value]), min_prob=0.1)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(k=st.integers(2, 6), excess=st.floats(0.0, 5.0))
def test_min_prob_too_large_is_refused(k, excess):
    min_prob = 1.0 / k + excess
    with pytest.raises(InvalidPrivacyParameterError, match="lower `min_prob`"):
        TruncatedDirichlet.dist(np.ones(k), min_prob=min_prob)


@settings(max_examples=20, deadline=None, derandomize=True)
@given(min_prob=st.floats(-5.0, -1e-12))
def test_negative_min_prob_is_refused(min_prob):
    with pytest.raises(InvalidPrivacyParameterError, match="0 ≤ `min_prob`"):
        TruncatedDirichlet.dist(np.ones(3), min_prob=min_prob)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(radius=st.floats(-10.0, 0.0))
def test_non_positive_radius_is_refused(radius):
    with pytest.raises(InvalidPrivacyParameterError, match="`radius` must be > 0"):
        TruncatedMvNormal.dist(np.zeros(2), np.eye(2), radius=radius)


def test_invalid_structures_are_refused():
    with pytest.raises(InvalidPrivacyParameterError, match="K ≥ 2"):
        TruncatedDirichlet.dist(np.ones(1), min_prob=0.1)
    with pytest.raises(InvalidPrivacyParameterError, match="positive definite"):
        TruncatedMvNormal.dist(np.zeros(2), np.array([[1.0, 2.0], [2.0, 1.0]]), radius=1.0)
    with pytest.raises(InvalidPrivacyParameterError, match=r"\(d, d\)"):
        TruncatedMvNormal.dist(np.zeros(3), np.eye(2), radius=1.0)
    with pm.Model():
        bound = pm.Uniform("bound", 0.0, 0.5)
        with pytest.raises(InvalidPrivacyParameterError, match="must be a fixed number"):
            TruncatedBeta("theta", 1.0, 1.0, lower=bound, upper=0.9)
