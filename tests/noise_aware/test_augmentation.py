"""The default sampler of noise-aware privatised models (`pymc_private.noise_aware.sampler`): its
draws
against the exact noise-aware posterior computed by brute force (counts: exact binomial,
multinomial and Poisson laws with the exact integer noise; sums: the closed-form likelihood the
NUTS route samples, on a grid), its place in `pmp.sample`, and the models it leaves to NUTS."""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

import pymc_private as pmp
from pymc_private.analysis.privatisation import privatisation_of
from pymc_private.dp.noise import NoiseLaw
from pymc_private.noise_aware.sampler import augmented_sampler

A = 0.05
GRID = 2001


def _noise(private, name: str) -> NoiseLaw:
    return privatisation_of(private).noise[name]


def _released(private, name: str) -> np.ndarray:
    return np.asarray(pmp.privatised_statistics(private)[name], dtype=np.float64)


def _sample(private, draws=1000, chains=4, seed=0, **kwargs):
    with private:
        return pmp.sample(draws, chains=chains, random_seed=seed, progressbar=False, **kwargs)


def _ks(draws: np.ndarray, grid: np.ndarray, log_density: np.ndarray) -> float:
    """The KS p-value of ``draws`` (thinned to about 1000, roughly independent) against the
    distribution with ``log_density`` on a fine ``grid``."""
    density = np.exp(log_density - log_density.max())
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (density[1:] + density[:-1]) * np.diff(grid))])
    cdf /= cdf[-1]
    flat = np.asarray(draws).reshape(-1)
    thinned = flat[:: max(1, flat.size // 1000)]
    return stats.kstest(thinned, lambda x: np.interp(x, grid, cdf)).pvalue


def _log_sum_binomial(trials, theta, first, second, noise):
    """log Σ_x Binomial(x; T, θ)·P(Z = r₁ − x)·P(Z = r₂ − (T − x)) on a grid of θ (by brute
    force over x; r None: not released)."""
    x = np.arange(trials + 1)[:, None]
    value = stats.binom.logpmf(x, trials, theta[None, :])
    if first is not None:
        value = value + noise.log_pmf(first - x)
    if second is not None:
        value = value + noise.log_pmf(second - (trials - x))
    return special.logsumexp(value, axis=0)


def bernoulli(x, prior=(1.0, 1.0)):
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", x, bounds=(0, 1))
        theta = pmp.TruncatedBeta("theta", *prior, lower=A, upper=1 - A)
        pm.Bernoulli("x", theta, observed=x_obs)
    return model


def naive_bayes(labels, features):
    """Binary features given a binary class label, all private, on uniform truncated priors."""
    with pm.Model() as model:
        y_obs = pmp.PrivateData("y_obs", labels, bounds=(0, 1))
        x_obs = pmp.PrivateData("x_obs", features, bounds=(0, 1))
        pi = pmp.TruncatedBeta("pi", 1, 1, lower=A, upper=1 - A)
        shape = (2, features.shape[1])
        theta = pmp.TruncatedBeta("theta", 1, 1, lower=A, upper=1 - A, shape=shape)
        pm.Bernoulli("y", pi, observed=y_obs)
        pm.Bernoulli("x", theta[y_obs], observed=x_obs)
    return model


@pytest.mark.slow
@pytest.mark.parametrize(
    ("n", "epsilon", "delta", "prior", "method"),
    [
        (10, 0.1, 0.0, (1.0, 1.0), "independent exact draws"),
        (100, 0.01, 0.0, (1.0, 1.0), "independent exact draws"),
        (500, 1.0, 0.0, (2.0, 1.0), "independent exact draws"),
        (300, 0.5, 1e-6, (1.0, 1.0), "independent exact draws"),
        # A Beta(½, ½) prior: the cell's predictive is not log-concave, the chain runs.
        (100, 0.3, 0.0, (0.5, 0.5), "data augmentation"),
        (20, 0.2, 1e-6, (0.5, 0.5), "data augmentation"),
    ],
)
def test_beta_bernoulli_draws_are_the_exact_noise_aware_posterior(n, epsilon, delta, prior, method):
    """n·ε from 1 (noise far above the sampling spread) to 500, Laplace and Gaussian noise,
    independent draws and the Markov chain: KS against p(θ | s̃) ∝ ξ(θ) Σ_x Binomial(x; n, θ)
    ·P(Z = s̃ − x) on [a, 1 − a]."""
    x = np.random.default_rng(n).binomial(1, 0.3, n)
    model = bernoulli(x, prior)
    private = pmp.privatize(model, epsilon, delta=delta, secure=False, random_seed=n)
    idata = _sample(private, seed=1)
    assert idata.attrs["sampler"].startswith(f"noise-aware: {method}")
    grid = np.linspace(A, 1 - A, GRID)
    released = _released(private, "counts(x_obs)")[0]
    log_density = _log_sum_binomial(n, grid, released, None, _noise(private, "counts(x_obs)"))
    log_density = log_density + stats.beta.logpdf(grid, *prior)
    assert _ks(idata.posterior["theta"].values, grid, log_density) > 1e-3


@pytest.mark.slow
@pytest.mark.parametrize(("shape", "method"), [(2.0, "independent"), (0.8, "data augmentation")])
def test_poisson_rate_draws_are_the_exact_noise_aware_posterior(shape, method):
    """Gamma(2, 0.5) on [0.5, 10]: independent draws; Gamma(0.8, 0.5): the chain."""
    k = np.minimum(np.random.default_rng(7).poisson(3.0, 200), 20)
    with pm.Model() as model:
        k_obs = pmp.PrivateData("k_obs", k, bounds=(0, 20))
        lam = pmp.TruncatedGamma("lam", shape, 0.5, lower=0.5, upper=10.0)
        pm.Poisson("k", lam, observed=k_obs)
    private = pmp.privatize(model, 0.5, secure=False, random_seed=8)
    idata = _sample(private, seed=2)
    assert idata.attrs["sampler"].startswith(f"noise-aware: {method}")
    grid = np.linspace(0.5, 10.0, GRID)
    released = _released(private, "sum(k_obs)")[()]
    noise = _noise(private, "sum(k_obs)")
    sums = np.arange(0, 4000)[:, None]
    log_likelihood = special.logsumexp(
        stats.poisson.logpmf(sums, 200 * grid[None, :]) + noise.log_pmf(released - sums), axis=0
    )
    log_density = stats.gamma.logpdf(grid, shape, scale=2.0) + log_likelihood
    assert _ks(idata.posterior["lam"].values, grid, log_density) > 1e-3


@pytest.mark.slow
def test_naive_bayes_group_sizes_and_rates_are_the_exact_posterior():
    """One binary feature, a private class label: the class sizes N are latent (moved by
    thinning and along the ridge N ≈ n·π), every cell's split summed out. The exact marginals
    by brute force: p(π, θ₀, θ₁) ∝ Σ_N Binomial(N₁; n, π)·P(Z = Ñ₁ − N₁)·Π_g A_g(θ_g; N_g)
    with A_g the cell's split summed out."""
    rng = np.random.default_rng(9)
    n = 40
    labels = rng.integers(0, 2, n)
    feature = (rng.random(n) < np.where(labels == 1, 0.8, 0.3)).astype(int)[:, None]
    private = pmp.privatize(naive_bayes(labels, feature), 0.5, secure=False, random_seed=10)
    idata = _sample(private, seed=3)
    sizes, cells = "counts(y_obs)", "counts(x_obs | y_obs)"
    size_noise, cell_noise = _noise(private, sizes), _noise(private, cells)
    released_size = _released(private, sizes)[0]
    released_cells = _released(private, cells)  # (group, feature, category)
    grid = np.linspace(A, 1 - A, 801)
    groups = np.arange(n + 1)  # N₁
    # A[g][N_g, θ]: the cell of group g with its split summed out.
    cell = [
        np.stack(
            [
                _log_sum_binomial(
                    size, grid, released_cells[g, 0, 1], released_cells[g, 0, 0], cell_noise
                )
                for size in range(n + 1)
            ]
        )
        for g in (0, 1)
    ]
    size_term = stats.binom.logpmf(groups[:, None], n, grid[None, :])  # [N₁, π]
    size_term = size_term + size_noise.log_pmf(released_size - groups)[:, None]
    over_theta = [special.logsumexp(table, axis=1) for table in cell]  # [N_g]
    by_size = over_theta[0][n - groups] + over_theta[1][groups]  # [N₁]
    marginals = {
        "pi": special.logsumexp(size_term + by_size[:, None], axis=0),
        "theta0": special.logsumexp(
            special.logsumexp(size_term, axis=1)[:, None]
            + cell[0][n - groups]
            + over_theta[1][groups, None],
            axis=0,
        ),
        "theta1": special.logsumexp(
            special.logsumexp(size_term, axis=1)[:, None]
            + cell[1][groups]
            + over_theta[0][n - groups, None],
            axis=0,
        ),
    }
    posterior = idata.posterior
    assert _ks(posterior["pi"].values, grid, marginals["pi"]) > 1e-3
    assert _ks(posterior["theta"].values[..., 0, 0], grid, marginals["theta0"]) > 1e-3
    assert _ks(posterior["theta"].values[..., 1, 0], grid, marginals["theta1"]) > 1e-3
    share = idata.latent_posterior["counts(y_obs)_true_share"].values
    assert np.allclose(share.sum(axis=-1), 1.0) and np.all(np.rint(share * n) == share * n)


@pytest.mark.slow
def test_categorical_counts_with_a_dirichlet_are_the_exact_posterior():
    """K = 3 categories, all released: pairs of categories move with their split summed out
    (the Dirichlet's share of the pair's mass). Exact: p(π) ∝ Σ_c Mult(c; n, π)·Π_k P(Z_k)
    over the 2-simplex."""
    n = 14
    values = np.random.default_rng(11).choice(3, n, p=[0.6, 0.3, 0.1])
    with pm.Model() as model:
        v_obs = pmp.PrivateData("v_obs", values, bounds=(0, 2))
        p = pmp.TruncatedDirichlet("p", np.ones(3), min_prob=0.02)
        pm.Categorical("v", p, observed=v_obs)
    private = pmp.privatize(model, 0.7, secure=False, random_seed=12)
    idata = _sample(private, seed=4)
    noise, released = _noise(private, "counts(v_obs)"), _released(private, "counts(v_obs)")
    states = np.array([(a, b, n - a - b) for a in range(n + 1) for b in range(n + 1 - a)])
    noise_term = noise.log_pmf(released - states).sum(axis=1)
    grid = np.linspace(0.02, 0.96, 941)
    p0, p1 = np.meshgrid(grid, grid, indexing="ij")
    p2 = 1.0 - p0 - p1
    inside = p2 >= 0.02
    probabilities = np.stack([p0, p1, np.where(inside, p2, 0.5)], axis=-1)[inside]
    log_multinomial = (
        special.gammaln(n + 1)
        - special.gammaln(states + 1).sum(axis=1)[:, None]
        + (states[:, None, :] * np.log(probabilities[None])).sum(axis=-1)
    )
    log_joint = special.logsumexp(log_multinomial + noise_term[:, None], axis=0)
    full = np.full(p0.shape, -np.inf)
    full[inside] = log_joint
    for axis, name in ((1, 0), (0, 1)):
        marginal = special.logsumexp(full, axis=axis)
        assert _ks(idata.posterior["p"].values[..., name], grid, marginal) > 1e-3


@pytest.fixture(scope="module")
def normal_fit():
    z = np.clip(np.random.default_rng(13).normal(0.4, 1.5, 150), -5, 5)
    with pm.Model() as model:
        z_obs = pmp.PrivateData("z_obs", z, bounds=(-5.0, 5.0))
        mu = pmp.TruncatedNormal("mu", 0.0, 1.0, lower=-3.0, upper=3.0)
        tau = pmp.TruncatedGamma("tau", 2.0, 2.0, lower=0.04, upper=25.0)
        pm.Normal("z", mu, tau=tau, observed=z_obs)
    private = pmp.privatize(model, 1.0, secure=False, random_seed=14)
    return private, _sample(private, seed=5)


def _on_grid(logp, *axes):
    """``logp`` on the product grid of ``axes`` (each an array of values; vector values on
    a trailing axis), shaped by the axes."""
    points = np.meshgrid(*[np.arange(len(axis)) for axis in axes], indexing="ij")
    flat = [np.asarray(axis)[index.ravel()] for axis, index in zip(axes, points, strict=True)]
    return logp(*flat).reshape(points[0].shape)


@pytest.mark.slow
def test_normal_mean_and_precision_follow_the_likelihood_nuts_samples(normal_fit, nuts_log_density):
    """Released sums are sampled on the closed-form likelihood of the NUTS route: its compiled
    log density on a grid of (μ, τ) against the draws' marginals."""
    private, idata = normal_fit
    logp = nuts_log_density(private, ["mu", "tau"])
    mus, taus = np.linspace(-1.0, 3.0, 201), np.linspace(0.04, 4.5, 201)
    density = _on_grid(logp, mus, taus)
    assert _ks(idata.posterior["mu"].values, mus, special.logsumexp(density, axis=1)) > 1e-3
    assert _ks(idata.posterior["tau"].values, taus, special.logsumexp(density, axis=0)) > 1e-3


@pytest.mark.slow
def test_regression_weights_follow_the_likelihood_nuts_samples(nuts_log_density):
    """Linear regression with a released Gram matrix (errors in variables), τ free: the draws
    of w against the NUTS route's log density on a grid of (w, τ)."""
    rng = np.random.default_rng(15)
    x = np.column_stack([np.ones(200), rng.uniform(-1, 1, 200)])
    y = np.clip(0.3 + 0.5 * x[:, 1] + rng.normal(0, 0.4, 200), -2, 2)
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", x, bounds=([1.0, -1.0], [1.0, 1.0]))
        y_obs = pmp.PrivateData("y_obs", y, bounds=(-2.0, 2.0))
        w = pmp.TruncatedMvNormal("w", np.zeros(2), np.eye(2), radius=3.0)
        tau = pmp.TruncatedGamma("tau", 2.0, 1.0, lower=0.1, upper=50.0)
        pm.Normal("y", x_obs @ w, tau=tau, observed=y_obs)
    private = pmp.privatize(model, 3.0, delta=1e-6, secure=False, random_seed=16)
    idata = _sample(private, seed=6)
    logp = nuts_log_density(private, ["w", "tau"])
    w0, w1, taus = np.linspace(0.05, 0.6, 111), np.linspace(-0.2, 1.2, 111), np.linspace(1, 15, 71)
    weights = np.stack(np.meshgrid(w0, w1, indexing="ij"), axis=-1).reshape(-1, 2)
    joint = special.logsumexp(_on_grid(logp, weights, taus), axis=1).reshape(w0.size, w1.size)
    assert _ks(idata.posterior["w"].values[..., 0], w0, special.logsumexp(joint, axis=1)) > 1e-3
    assert _ks(idata.posterior["w"].values[..., 1], w1, special.logsumexp(joint, axis=0)) > 1e-3


@pytest.mark.slow
def test_the_default_route_is_an_ordinary_released_inference_data(normal_fit, tmp_path):
    """Chains, draws, seeds, ArviZ and netCDF as from pm.sample; reproducible by its seed."""
    private, idata = normal_fit
    posterior = idata.posterior
    assert posterior.sizes["chain"] == 4 and posterior.sizes["draw"] == 1000
    assert np.all(idata.sample_stats["privacy_epsilon"].values == 0.0)
    assert pmp.check_release(idata)
    again = _sample(private, seed=5)
    np.testing.assert_array_equal(again.posterior["mu"].values, posterior["mu"].values)
    other = _sample(private, seed=6)
    assert not np.array_equal(other.posterior["mu"].values, posterior["mu"].values)
    summary = az.summary(idata)
    assert summary["r_hat"].max() <= 1.02 and summary["ess_bulk"].min() > 300
    az.plot_trace(idata)
    idata.to_netcdf(tmp_path / "fit.nc")
    assert pmp.check_release(az.from_netcdf(tmp_path / "fit.nc"))


@pytest.mark.slow
def test_models_the_moves_do_not_cover_are_left_to_nuts():
    """A Potential of the user's: the sampler declines (pmp.sample then runs NUTS); the
    plug-in model keeps its independent exact draws."""
    x = np.random.default_rng(17).binomial(1, 0.3, 50)
    private = pmp.privatize(bernoulli(x), 1.0, secure=False, random_seed=18)
    with private:
        pm.Potential("shrink", -((private["theta"] - 0.5) ** 2))
    assert augmented_sampler(private, privatisation_of(private)) is None
    with pytest.warns(pmp.errors.NUTSFallbackWarning, match="Potential `shrink`"):
        idata = _sample(private, draws=20, chains=1, tune=20)
    assert idata.attrs["sampler"].startswith("pm.sample: ")
    with warnings.catch_warnings():
        warnings.simplefilter("error", pmp.errors.NUTSFallbackWarning)
        with private:
            _sample(private, draws=20, chains=1, tune=20, step=pm.NUTS())
    plug_in = pmp.privatize(bernoulli(x), 1.0, noise_aware=False, secure=False, random_seed=18)
    assert augmented_sampler(plug_in, privatisation_of(plug_in)) is None
    assert _sample(plug_in, draws=10).attrs["sampler"].startswith("independent exact draws")


def test_a_statistic_replaced_by_set_data_is_what_the_sampler_conditions_on():
    """`pm.set_data` on a released statistic changes what NUTS and the model's logp read; the
    numpy sampler and constant_data follow it (they read the graph, not the first release)."""
    x = np.random.default_rng(19).binomial(1, 0.3, 200)
    private = pmp.privatize(bernoulli(x), 1.0, secure=False, random_seed=0)
    (name,) = pmp.privatised_statistics(private)
    pm.set_data({name: np.full_like(private[name].get_value(), 180)}, model=private)
    idata = _sample(private, draws=500, chains=2)
    assert idata.constant_data[name].values.tolist() == [180]
    assert float(idata.posterior["theta"].mean()) == pytest.approx(180.5 / 202, abs=0.02)


def test_a_model_with_an_intervened_parameter_is_left_to_nuts():
    """pm.do fixes a parameter a likelihood term reads: the sampler declines (pmp.sample then
    runs NUTS on the intervened model) instead of failing on the vanished variable."""
    rng = np.random.default_rng(20)
    y = rng.binomial(1, 0.4, 60)
    x = rng.binomial(1, 0.3 + 0.4 * y[:, None], (60, 2))
    private = pmp.privatize(naive_bayes(y, x), 2.0, secure=False, random_seed=1)
    assert augmented_sampler(private, privatisation_of(private)) is not None
    intervened = pm.do(private, {"pi": 0.9})
    assert augmented_sampler(intervened, privatisation_of(intervened)) is None


def test_pm_sample_keywords_on_the_numpy_route():
    """var_names is honoured, keywords only PyMC's samplers use are named in a warning, and
    no draws is refused before anything runs, as on every other route."""
    x = np.random.default_rng(21).binomial(1, 0.3, 50)
    private = pmp.privatize(bernoulli(x), 1.0, secure=False, random_seed=22)
    with private:
        pm.Deterministic("odds", private["theta"] / (1 - private["theta"]))
    idata = _sample(private, draws=20, var_names=["odds"])
    assert list(idata.posterior.data_vars) == ["odds"] and pmp.check_release(idata)
    with pytest.warns(UserWarning, match="did not use init, discard_tuned_samples"):
        _sample(private, draws=20, init="adapt_diag", discard_tuned_samples=False)
    with pytest.raises(pmp.InvalidPrivacyParameterError, match="draws must be >= 1"):
        _sample(private, draws=0)
    with pytest.raises(TypeError, match=r"step=pm.NUTS\(target_accept=0.9\)"):
        _sample(private, draws=20, target_accept=0.9)
