"""The noise-aware posterior of privatised models: its likelihood against numerical
integration, its calibration against the plug-in posterior, and how it samples."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import integrate, special, stats

import pymc_private as pmp
from pymc_private.analysis.privatisation import privatisation_of
from pymc_private.examples.calibration import coverage_study
from pymc_private.families.regression import gram_noise_covariance
from pymc_private.noise_aware.likelihood import normal_laplace_logp

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import calibration as study

A = 0.05


def _log_convolution(d, variance, scale):
    """log density of Normal(0, variance) + Laplace(0, scale) at d: the integral over the
    Laplace draw split at 0, each half a Gaussian integral (scipy's log_ndtr, independent of
    the code under test), checked against quadrature where quadrature is accurate."""
    sd = np.sqrt(variance)
    halves = [
        variance / (2 * scale**2) - d / scale + special.log_ndtr(d / sd - sd / scale),
        variance / (2 * scale**2) + d / scale + special.log_ndtr(-d / sd - sd / scale),
    ]
    value = np.logaddexp(*halves) - np.log(2 * scale)
    if abs(d) < 4 * (sd + scale):
        quadrature, _ = integrate.quad(
            lambda z: stats.norm.pdf(d - z, scale=sd) * stats.laplace.pdf(z, scale=scale),
            min(d, 0.0) - 30 * (sd + scale),
            max(d, 0.0) + 30 * (sd + scale),
            points=[0.0, d],
            limit=200,
        )
        assert value == pytest.approx(np.log(quadrature), rel=1e-6)
    return value


@pytest.mark.parametrize(
    ("d", "variance", "scale"),
    [
        (0.0, 1.0, 1.0),
        (3.0, 1.0, 10.0),
        (-40.0, 4.0, 5.0),
        (25.0, 100.0, 0.5),
        (-7.0, 0.01, 2.0),
        (60.0, 25.0, 3.0),
    ],
)
def test_normal_laplace_logp_is_the_convolution(d, variance, scale):
    value = pt.dscalar("value")
    logp = pytensor.function([value], normal_laplace_logp(value, 0.0, variance, scale))
    # PyTensor's fused elementwise code agrees with scipy's to ~1e-8 (the reference is exact
    # to double precision); far below what a posterior density needs.
    assert float(logp(d)) == pytest.approx(_log_convolution(d, variance, scale), rel=1e-7)


def test_normal_laplace_logp_is_finite_and_differentiable_far_in_the_tails():
    value = pt.dscalar("value")
    logp = normal_laplace_logp(value, 0.0, 1.0, 1.0)
    function = pytensor.function([value], [logp, pytensor.grad(logp, value)])
    for d in (-1e4, -50.0, 50.0, 1e4):
        density, slope = function(d)
        assert np.isfinite(density) and np.isfinite(slope)
        assert slope == pytest.approx(-np.sign(d), rel=1e-3)  # the Laplace tail dominates


GRID = np.linspace(A + 1e-4, 1 - A - 1e-4, 400)


@pytest.mark.slow
@pytest.mark.slow
def test_noise_aware_intervals_are_calibrated_where_plug_in_ones_are_not():
    """Beta–Bernoulli, n = 100, ε = 0.1: the plug-in posterior's 90% intervals covered the
    truth about half the time. 100 repetitions with θ from the prior: a calibrated posterior
    covers 90% ± 3% (one standard error); the noise-aware one must lie within 82–97% and be
    at most 1.3 times as wide as the exact posterior (exact binomial counts and discrete
    Laplace noise), the plug-in one covers less than 75%."""
    kwargs = {"repetitions": 100, "grid": GRID, "seed": 3}
    simulate = study.bernoulli_simulation(100)
    exact = study.bernoulli_reference(100, 0.1)
    aware = coverage_study(study.bernoulli_model, simulate, "theta", 0.1, reference=exact, **kwargs)
    assert 0.82 <= aware.coverage <= 0.97
    assert aware.width <= 1.3 * aware.reference_width
    plug_in = coverage_study(
        study.bernoulli_model, simulate, "theta", 0.1, noise_aware=False, **kwargs
    )
    assert plug_in.coverage < 0.75


@pytest.mark.slow
@pytest.mark.slow
@pytest.mark.parametrize(("model", "n", "epsilon"), [("bernoulli", 10, 0.1), ("normal", 100, 0.01)])
def test_the_default_sampler_is_calibrated_where_noise_dwarfs_the_data(model, n, epsilon):
    """n·ε = 1: the intervals of the draws `pmp.sample` makes by default (the numpy sampler)
    cover 90% ± 3% (one standard error over 100 repetitions): within 82–97%."""
    build = getattr(study, f"{model}_model")
    simulate = getattr(study, f"{model}_simulation")(n)
    grid = GRID if model == "bernoulli" else np.linspace(-2.999, 2.999, 400)
    variable = "theta" if model == "bernoulli" else "mu"
    drawn = coverage_study(
        build, simulate, variable, epsilon, repetitions=100, grid=grid, seed=5, sampled=150
    )
    assert 0.82 <= drawn.coverage <= 0.97


@pytest.mark.slow
def test_noise_aware_normal_mean_is_calibrated():
    kwargs = {"repetitions": 100, "grid": np.linspace(-2.999, 2.999, 400), "seed": 4}
    simulate = study.normal_simulation(100)
    exact = study.normal_reference(100, 0.1)
    aware = coverage_study(study.normal_model, simulate, "mu", 0.1, reference=exact, **kwargs)
    assert 0.82 <= aware.coverage <= 0.97
    assert aware.width <= 1.3 * aware.reference_width
    plug_in = coverage_study(study.normal_model, simulate, "mu", 0.1, noise_aware=False, **kwargs)
    assert plug_in.coverage < 0.5


@pytest.fixture(scope="module")
def naive_bayes_data():
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 2, 400)
    rates = np.where(labels[:, None] == 1, [0.8, 0.2, 0.6], [0.3, 0.7, 0.5])
    return labels, (rng.random((400, 3)) < rates).astype(int)


@pytest.mark.slow
def test_noise_aware_naive_bayes_samples_with_nuts_and_finds_the_rates(
    make_naive_bayes, naive_bayes_data
):
    """Grouped counts: the class sizes are a latent share of n, observed through the noisy
    class counts; at ε = 50 the posterior means sit at the empirical rates."""
    labels, features = naive_bayes_data
    model = make_naive_bayes(labels, features, A)
    private = pmp.privatize(model, 50.0)
    assert "counts(y_obs)_true_share" in private.named_vars
    for variable in ("pi", "theta"):
        assert pmp.PrivateGibbs.competence(private[variable], False).name == "INCOMPATIBLE"
    with private:  # seeded: an unseeded chain stuck once in a CI run of many
        idata = pmp.sample(300, tune=300, chains=2, cores=1, progressbar=False, random_seed=2)
    assert np.all(idata.sample_stats["privacy_epsilon"].values == 0.0)
    theta = idata.posterior["theta"].mean(("chain", "draw")).values
    for group in (0, 1):
        empirical = features[labels == group].mean(axis=0)
        np.testing.assert_allclose(theta[group], empirical, atol=0.06)
    assert "counts(y_obs)_true_share" not in idata.posterior  # only the user's variables
    share = idata.latent_posterior["counts(y_obs)_true_share"].mean(("chain", "draw")).values
    assert share[1] == pytest.approx(labels.mean(), abs=0.03)


def test_noise_aware_model_holds_the_noisy_values_and_refuses_exact_samplers(
    make_naive_bayes, naive_bayes_data
):
    model = make_naive_bayes(*naive_bayes_data, A)
    private = pmp.privatize(model, 0.05, secure=False, random_seed=1)
    privatisation = privatisation_of(private)
    assert privatisation.noise_aware
    noisy = pmp.privatised_statistics(private)
    # Unprojected: at ε = 0.05 the noisy class count leaves [0, n] or is not what the
    # projection would keep with probability near 1; the plug-in model holds projected ones.
    plug_in = pmp.privatize(model, 0.05, noise_aware=False, secure=False, random_seed=1)
    assert not all(
        np.array_equal(noisy[name], value)
        for name, value in pmp.privatised_statistics(plug_in).items()
    )
    with private, pytest.raises(pmp.UnsupportedModelError, match=r"noise-aware.*NUTS"):
        pmp.PrivateGibbs()
    with pytest.raises(pmp.UnsupportedModelError, match="noise_aware=False"):
        pmp.sample_posterior(private, 2)
    with plug_in:
        pmp.PrivateGibbs()


def test_gram_noise_covariance_matches_monte_carlo():
    # Noise E on a released 3×3 Gram matrix (independent upper triangle, variance v,
    # mirrored) moves Xᵀy's residual by −Ew and yᵀy's by −wᵀEw; the formula against 400k
    # simulated E.
    w, v = np.array([0.7, -1.2, 0.4]), 2.5
    rng = np.random.default_rng(3)
    upper = rng.laplace(0.0, np.sqrt(v / 2), (400_000, 6))
    noise = np.zeros((400_000, 3, 3))
    rows, columns = np.triu_indices(3)
    noise[:, rows, columns] = upper
    noise = noise + np.triu(noise, 1).transpose(0, 2, 1)
    residuals = np.concatenate([noise @ w, np.einsum("i,rij,j->r", w, noise, w)[:, None]], axis=1)
    empirical = np.cov(residuals, rowvar=False)
    formula = gram_noise_covariance(pt.as_tensor(w), v, True).eval()
    np.testing.assert_allclose(formula, empirical, rtol=0.03, atol=0.03)
    np.testing.assert_allclose(
        gram_noise_covariance(pt.as_tensor(w), v, False).eval(), formula[:3, :3]
    )
