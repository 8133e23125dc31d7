"""Varying intercepts alpha[g] + X @ w in the numpy sampler (issue 38): the draws against the
log density the NUTS route samples, by importance sampling from a heavy-tailed fit to the
draws (a check that uses the sampler's draws only to place the proposal: a sampler targeting
another density gives other means than the weighted proposal)."""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

import pymc_private as pmp

GROUPS = 4


def _model(family: str, hyperprior: bool, n: int = 600, seed: int = 0) -> pm.Model:
    rng = np.random.default_rng(seed)
    g = rng.integers(0, GROUPS, n)
    x = rng.uniform(-1.0, 1.0, (n, 2))
    eta = rng.normal(0.3, 0.5, GROUPS)[g] + x @ np.array([0.8, -0.5])
    if family == "normal":
        y, bounds = np.clip(eta + 0.5 * rng.normal(size=n), -4.0, 4.0), (-4.0, 4.0)
    else:
        y, bounds = (rng.uniform(size=n) < special.expit(eta)).astype(np.int64), (0, 1)
    with pm.Model() as model:
        index = pm.Data("g", g)
        x_obs = pmp.PrivateData("x_obs", x, bounds=(-1.0, 1.0))
        y_obs = pmp.PrivateData("y_obs", y, bounds=bounds)
        if hyperprior:
            mu_a = pmp.TruncatedNormal("mu_a", 0.0, 1.0, lower=-3.0, upper=3.0)
            sigma_a = pmp.TruncatedGamma("sigma_a", 2.0, 4.0, lower=0.05, upper=3.0)
            alpha = pmp.TruncatedNormal("alpha", mu_a, sigma_a, lower=-3.0, upper=3.0, shape=GROUPS)
        else:
            alpha = pmp.TruncatedNormal("alpha", 0.0, 1.0, lower=-3.0, upper=3.0, shape=GROUPS)
        w = pmp.TruncatedMvNormal("w", np.zeros(2), np.eye(2), radius=3.0)
        eta = alpha[index] + x_obs @ w
        if family == "normal":
            pm.Normal("y", eta, 0.5, observed=y_obs)
        else:
            pm.Bernoulli("y", logit_p=eta, observed=y_obs)
    return model


def _agrees_with_importance_sampling(
    log_density, private: pm.Model, idata, names: list[str]
) -> None:
    """Every coordinate's posterior mean from the draws within 4.5 combined standard errors
    of the self-normalised importance-sampling estimate under a Student-t (ν = 5, covariance
    1.5² that of the draws) fitted to them (a scale on its log), and their spreads within 15%.
    """
    columns, sizes = [], []
    for name in names:
        values = idata.posterior[name].values
        values = np.log(values) if name == "sigma_a" else values
        columns.append(values.reshape(values.shape[0] * values.shape[1], -1))
        sizes.append(columns[-1].shape[1])
    draws = np.concatenate(columns, axis=1)
    proposal = stats.multivariate_t(draws.mean(axis=0), np.cov(draws.T) * 1.5**2, df=5, seed=1)
    points = proposal.rvs(100_000)
    parts = np.split(points, np.cumsum(sizes)[:-1], axis=1)
    shaped = [
        part.reshape(-1, *idata.posterior[name].shape[2:])
        for part, name in zip(parts, names, strict=True)
    ]
    log_weights = -proposal.logpdf(points)
    inside = np.ones(len(points), dtype=bool)
    if "sigma_a" in names:  # proposed on its log: the density there has a factor σ
        log_sigma = shaped[names.index("sigma_a")]
        shaped[names.index("sigma_a")] = np.exp(log_sigma)
        log_weights = log_weights + log_sigma
        # PyMC's log density raises on a scale outside its prior's support: 0 there.
        inside = (log_sigma > np.log(0.05)) & (log_sigma < np.log(3.0))
    with np.errstate(all="ignore"):
        log_value = log_density(private, names)(*(part[inside] for part in shaped))
    log_weights = np.where(inside, log_weights, -np.inf)
    log_weights[inside] += log_value
    log_weights = np.where(np.isnan(log_weights), -np.inf, log_weights)
    weights = np.exp(log_weights - special.logsumexp(log_weights))
    assert 1.0 / (weights**2).sum() > 2000  # the proposal covers the posterior
    mean = weights @ points
    spread = np.sqrt(weights @ (points - mean) ** 2)
    importance_error = np.sqrt(weights**2 @ (points - mean) ** 2)
    ess = np.ravel(az.ess(draws.reshape(4, -1, draws.shape[1])))
    assert ess.shape == (draws.shape[1],)
    mcse = draws.std(axis=0) / np.sqrt(ess)
    gap = np.abs(draws.mean(axis=0) - mean) / np.sqrt(mcse**2 + importance_error**2)
    assert gap.max() < 4.5, gap
    np.testing.assert_allclose(draws.std(axis=0), spread, rtol=0.15)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["normal", "logistic"])
def test_varying_intercepts_with_a_fixed_prior_are_sampled_in_numpy(family, nuts_log_density):
    private = pmp.privatize(_model(family, False), 1.0, delta=1e-6, secure=False, random_seed=1)
    idata = pmp.sample(1000, chains=4, model=private, random_seed=3, progressbar=False)
    assert "numpy" in idata.attrs["sampler"]
    _agrees_with_importance_sampling(nuts_log_density, private, idata, ["alpha", "w"])


@pytest.mark.slow
def test_varying_intercepts_under_a_hyperprior_are_sampled_in_numpy(nuts_log_density):
    """mu_a and sigma_a move with alpha carried along (the non-centred update) as well as
    alone: the joint posterior of the hierarchy, funnel included."""
    private = pmp.privatize(_model("normal", True), 1.0, delta=1e-6, secure=False, random_seed=2)
    idata = pmp.sample(1000, chains=4, model=private, random_seed=4, progressbar=False)
    assert "numpy" in idata.attrs["sampler"]
    assert float(az.rhat(idata.posterior["sigma_a"])) < 1.05
    _agrees_with_importance_sampling(
        nuts_log_density, private, idata, ["mu_a", "sigma_a", "alpha", "w"]
    )


def test_weights_with_an_entrywise_prior_move_as_one_vector_in_numpy(nuts_log_density):
    """Regression weights with a scalar prior per entry (TruncatedNormal(shape=p), not a
    TruncatedMvNormal): the likelihood does not factor over the entries, which move as one
    vector (they were once moved entry by entry against a joint likelihood, and failed)."""
    rng = np.random.default_rng(5)
    n = 800
    x = np.column_stack([np.ones(n), rng.uniform(-1.0, 1.0, (n, 2))])
    y = rng.poisson(np.exp(x @ np.array([1.0, 0.5, -0.7]))).clip(0, 20)
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", x, bounds=([1.0, -1.0, -1.0], [1.0, 1.0, 1.0]))
        y_obs = pmp.PrivateData("y_obs", y, bounds=(0, 20))
        w = pmp.TruncatedNormal("w", 0.0, 2.0, lower=-3.0, upper=3.0, shape=3)
        pm.Poisson("y", mu=pm.math.exp(x_obs @ w), observed=y_obs)
    private = pmp.privatize(model, 3.0, secure=False, random_seed=6)
    idata = pmp.sample(1000, chains=4, model=private, random_seed=7, progressbar=False)
    assert "numpy" in idata.attrs["sampler"]
    _agrees_with_importance_sampling(nuts_log_density, private, idata, ["w"])
