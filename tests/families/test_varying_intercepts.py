"""Varying intercepts by a public group index, ``alpha[g] + X_obs @ w``
(`pymc_private.families.regression`, "Varying intercepts"): the graph forms that reach the pay-once
route, the joint sensitivity of the per-group moments against every pair of box corners, the
audit of their release, the posterior read from them (numpy and PyTensor alike, the Gram
noise's covariance against simulation, close to the exact posterior, intervals that cover),
and bad input refused before anything is drawn."""

from __future__ import annotations

import itertools
from fractions import Fraction

import hypothesis.strategies as st
import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from hypothesis import HealthCheck, given, settings
from pytensor.graph.traversal import graph_inputs
from scipy import optimize, special

import pymc_private as pmp
from pymc_private.analysis.core import analyze
from pymc_private.analysis.privatisation import privatisation_of
from pymc_private.data.ledgers import ledger_for
from pymc_private.dp.audit import epsilon_lower_bound
from pymc_private.dp.events import zcdp_epsilon
from pymc_private.errors import PrivacyError, UnsupportedModelError
from pymc_private.families.regression import (
    LogisticRegression,
    NormalLinearRegression,
    PoissonRegression,
    intercept_noise_covariance,
)
from pymc_private.families.statistics import (
    complete_statistic,
    regression_group,
    regression_l2_squared,
)
from pymc_private.noise_aware.likelihood import cell_log_likelihood, noise_laws, term_observations
from pymc_private.pay_once.plans import CellsPlan

AUDIT_DELTA = 1e-3
G = 3


def simulated(n, alpha, w, seed, family="normal", sigma=0.5):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, len(alpha), n)
    x = rng.uniform(-1.0, 1.0, (n, len(w)))
    s = alpha[g] + x @ w
    if family == "normal":
        y = np.clip(s + sigma * rng.normal(size=n), -4.0, 4.0)
    elif family == "logistic":
        y = (rng.uniform(size=n) < special.expit(s)).astype(np.int64)
    else:
        y = np.minimum(rng.poisson(np.exp(s)), 8)
    return g, x, y


def varying(g, x, y, family="normal", sigma=0.5, order="intercepts first", groups=G):
    """The model: alpha[g] + x_obs @ w under the family's link, g public (pm.Data)."""
    d = x.shape[1]
    upper = {"normal": 4.0, "logistic": 1, "poisson": 8}[family]
    with pm.Model() as model:
        index = pm.Data("g", g)
        x_obs = pmp.PrivateData("x_obs", x, bounds=(-1.0, 1.0))
        y_obs = pmp.PrivateData("y_obs", y, bounds=(-upper if family == "normal" else 0, upper))
        alpha = pmp.TruncatedNormal("alpha", 0.0, 1.0, lower=-3.0, upper=3.0, shape=groups)
        w = pmp.TruncatedMvNormal("w", np.zeros(d), np.eye(d), radius=3.0)
        eta = alpha[index] + x_obs @ w if order == "intercepts first" else x_obs @ w + alpha[index]
        if family == "normal":
            if sigma is None:
                tau = pmp.TruncatedGamma("tau", 2.0, 0.5, lower=0.1, upper=100.0)
                pm.Normal("y", eta, tau=tau, observed=y_obs)
            else:
                pm.Normal("y", eta, sigma, observed=y_obs)
        elif family == "logistic":
            pm.Bernoulli("y", logit_p=eta, observed=y_obs)
        else:
            pm.Poisson("y", pm.math.exp(eta), observed=y_obs)
    return model


TRUTH = (np.array([0.3, -0.4, 0.8]), np.array([0.7, -0.5]))


@pytest.mark.parametrize(
    ("family", "sigma", "kind", "kinds"),
    [
        ("normal", 0.5, NormalLinearRegression, ["gram", "cross", "group_gram", "group_cross"]),
        ("normal", None, NormalLinearRegression, ["gram", "cross", "group_gram", "group_cross"]),
        ("logistic", None, LogisticRegression, ["gram", "cross", "group_gram", "group_cross"]),
        ("poisson", None, PoissonRegression, ["gram", "cross", "group_gram", "group_cross"]),
    ],
)
def test_every_family_reads_varying_intercepts_as_per_group_moments(family, sigma, kind, kinds):
    g, x, y = simulated(60, *TRUTH, seed=1, family=family)
    for order in ("intercepts first", "weights first"):
        analysis = analyze(varying(g, x, y, family, sigma, order))
        (term,) = analysis.terms
        assert isinstance(term.family, kind)
        assert term.group_by == "g" and term.n_groups == G
        assert "privatize" in analysis.routes
        found = [spec.kind for spec in analysis.statistics]
        assert found == kinds + (["sum_squares"] if sigma is None and family == "normal" else [])
        # The predictor's range holds alpha's bounds: |alpha| ≤ 3 and |x·w| ≤ √2·3.
        interval = term.parameters[term.family.linear_parameter].interval
        if family == "normal":
            assert interval.upper == pytest.approx(3.0 + 3.0 * np.sqrt(2.0))
    if family != "normal":
        return
    # Δ₁ of the per-group sums: one group's cells, each column's range (Σx: 2 + 2, Σy: 8).
    assert [s.sensitivity_l1 for s in analysis.statistics][2:4] == [4.0, 8.0]
    assert "sum(x_obs | g)" in str(analysis) and "group_gram" in str(analysis)


def test_l_accounts_for_the_intercepts_bounds():
    """The logistic L is Bernoulli's over p ∈ [σ(−S), σ(S)], S = 3 + 3√2 (alpha's bound plus
    ‖x‖₂R), not over the weights' range alone."""
    g, x, y = simulated(40, *TRUTH, seed=2, family="logistic")
    (term,) = analyze(varying(g, x, y, "logistic")).terms
    bound = 3.0 + 3.0 * np.sqrt(2.0)
    assert term.lipschitz() == pytest.approx(np.log(special.expit(bound) / special.expit(-bound)))


def _refused_model(index, covariates, y, *, tau_shape=None) -> pm.Model:
    """alpha[index] + covariates @ w, for the refusals: ``index`` and ``covariates`` are
    builders called inside the model (PrivateData or pm.Data), ``tau_shape`` a per-group τ."""
    with pm.Model() as model:
        g, x = index(), covariates()
        alpha = pmp.TruncatedNormal("alpha", 0.0, 1.0, lower=-3.0, upper=3.0, shape=G)
        width = int(x.shape[1].eval())
        w = pmp.TruncatedMvNormal("w", np.zeros(width), np.eye(width), radius=3.0)
        y_obs = pmp.PrivateData("y_obs", y, bounds=(-4.0, 4.0))
        if tau_shape is None:
            pm.Normal("y", alpha[g] + x @ w, 0.5, observed=y_obs)
        else:
            tau = pmp.TruncatedGamma("tau", 2.0, 0.5, lower=0.1, upper=100.0, shape=tau_shape)
            pm.Normal("y", alpha[g] + x @ w, tau=tau[g], observed=y_obs)
    return model


def test_refusals_name_the_fix():
    g, x, y = simulated(40, *TRUTH, seed=3)
    ones = np.column_stack([np.ones(40), x])
    cases = [
        (
            lambda: pm.Data("g", g),
            lambda: pmp.PrivateData("x_obs", ones, bounds=([1.0, -1.0, -1.0], [1.0, 1.0, 1.0])),
            None,
            "drop the constant column 0",
        ),
        (lambda: pm.Data("g", g), lambda: pm.Data("design", x), None, "one-hot columns"),
        (
            lambda: pmp.PrivateData("g_obs", g, bounds=(0, G - 1)),
            lambda: pmp.PrivateData("x_obs", x, bounds=(-1.0, 1.0)),
            None,
            "public index",
        ),
        (
            lambda: pm.Data("g", g),
            lambda: pmp.PrivateData("x_obs", x, bounds=(-1.0, 1.0)),
            G,
            "`sigma` is indexed by the group",
        ),
    ]
    for index, covariates, tau_shape, match in cases:
        model = _refused_model(index, covariates, y, tau_shape=tau_shape)
        with pytest.raises(UnsupportedModelError, match=match):
            pmp.privatize(model, 1.0)
        assert ledger_for(model).epsilon() == 0


def _moved(analysis, pair, rows):
    """The released moments' move (natural units, every statistic) when the first record of
    ``rows`` is ``pair[0]`` against ``pair[1]``: records (x₁, x₂, y), all in group 0."""

    def moments(record):
        arrays = {
            "x_obs": np.vstack([record[:2], rows[0]]),
            "y_obs": np.r_[record[2], rows[1]],
        }
        return {spec.name: spec.compute(arrays) for spec in analysis.statistics}

    a, b = (moments(record) for record in pair)
    return np.concatenate(
        [spec.natural(a[spec.name] - b[spec.name]).ravel() for spec in analysis.statistics]
    ), moments(pair[0])


def _worst_squared_move(analysis) -> float:
    """The largest squared move of the released moments over every pair of records at the
    corners of the declared box (and 0), against the record (1, −1, −1) (`_moved`)."""
    corners = list(itertools.product((-1, 0, 1), (-1, 0, 1), (-2, 0, 2)))
    rows = (np.array([[1, -1]]), np.array([-1]))
    return max(
        float(moved @ moved)
        for pair in itertools.combinations(corners, 2)
        for moved in [_moved(analysis, pair, rows)[0]]
    )


def _integer_model(sigma_free: bool):
    """Integer covariates and response (grid step 1), two records in group 0 of G groups."""
    with pm.Model() as model:
        index = pm.Data("g", np.array([0, 0]))
        x_obs = pmp.PrivateData("x_obs", np.array([[1, -1], [0, 1]]), bounds=(-1, 1))
        y_obs = pmp.PrivateData("y_obs", np.array([2, -1]), bounds=(-2, 2))
        alpha = pmp.TruncatedNormal("alpha", 0.0, 1.0, lower=-3.0, upper=3.0, shape=G)
        w = pmp.TruncatedMvNormal("w", np.zeros(2), np.eye(2), radius=3.0)
        eta = alpha[index] + x_obs @ w
        if sigma_free:
            tau = pmp.TruncatedGamma("tau", 2.0, 0.5, lower=0.1, upper=100.0)
            pm.Normal("y", eta, tau=tau, observed=y_obs)
        else:
            pm.Normal("y", eta, 1.0, observed=y_obs)
    return model


@pytest.mark.parametrize("sigma_free", [False, True])
def test_joint_l2_bound_holds_against_every_pair_of_corners(sigma_free):
    """Δ₂² ≤ (1 + S)² + Q/2 (`regression_l2_squared`) over every pair of records at the corners
    of the declared box (and 0), both in one group: a record never changes group."""
    model = _integer_model(sigma_free)
    analysis = analyze(model)
    group = regression_group(analysis.statistics)
    assert len(group) == len(analysis.statistics)  # every moment in the joint release
    worst = _worst_squared_move(analysis)
    # S = 1 + 1 + 4 (x₁, x₂, y), Q = 1 + 1 + 16: (1 + S)² + Q/2 = 58.
    assert regression_l2_squared(group) == Fraction(58)
    assert worst <= regression_l2_squared(group)
    assert CellsPlan.merged_group(analysis) == group


def test_two_groupings_of_one_response_are_not_bound_as_one():
    """The same y read by alpha[g] + X @ w and beta[h] + X @ v: a record moves its row of each
    grouping's per-group sums, which the one-hot bound of `regression_l2_squared` does not
    take, so the moments are released apart, each at its own bound, and the planned Δ₂² covers
    every pair of records (found by an attacker: the joint bound was 58 against a move of 64)."""
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", np.array([[1, -1], [0, 1]]), bounds=(-1, 1))
        y_obs = pmp.PrivateData("y_obs", np.array([2, -1]), bounds=(-2, 2))
        alpha = pmp.TruncatedNormal("alpha", 0.0, 1.0, lower=-3.0, upper=3.0, shape=G)
        beta = pmp.TruncatedNormal("beta", 0.0, 1.0, lower=-3.0, upper=3.0, shape=G)
        w = pmp.TruncatedMvNormal("w", np.zeros(2), np.eye(2), radius=3.0)
        v = pmp.TruncatedMvNormal("v", np.zeros(2), np.eye(2), radius=3.0)
        pm.Normal("y", alpha[pm.Data("g", np.array([0, 0]))] + x_obs @ w, 1.0, observed=y_obs)
        pm.Normal("y2", beta[pm.Data("h", np.array([1, 1]))] + x_obs @ v, 1.0, observed=y_obs)
    analysis = analyze(model)
    assert regression_group(analysis.statistics) == ()
    worst = _worst_squared_move(analysis)
    assert worst == 64.0
    assert worst <= CellsPlan.l2_weights(analysis)[1]


@pytest.mark.slow
def test_audit_per_group_moments_on_their_worst_pair_and_catch_half_scale(plan_at_scale):
    """XᵀX, Xᵀy, yᵀy and the per-group Σx, Σy released together at the ρ of their joint bound,
    as `privatize` draws and records them, on the corner pair that moves them most, seen
    through the released vector's projection on that move."""
    model = _integer_model(sigma_free=True)
    analysis = analyze(model)
    corners = list(itertools.product((-1, 0, 1), (-1, 0, 1), (-2, 0, 2)))
    rows = (np.array([[1, -1]]), np.array([-1]))
    pair = max(
        itertools.combinations(corners, 2),
        key=lambda pair: float(np.sum(_moved(analysis, pair, rows)[0] ** 2)),
    )
    moved, _ = _moved(analysis, pair, rows)
    exact = [_moved(analysis, (record, record), rows)[1] for record in pair]
    direction = moved / np.linalg.norm(moved)
    epsilon = 1.0
    plan = CellsPlan.of(analysis, epsilon, AUDIT_DELTA, "gaussian", secure=False)
    recorded = plan.run(exact[0], np.random.default_rng(0))[1]
    assert len(recorded) == 1  # one joint release
    claim = zcdp_epsilon(float(recorded[0].rho), AUDIT_DELTA)
    assert claim <= epsilon * (1 + 1e-12)
    units = np.concatenate(
        [np.full(np.size(exact[0][spec.name]), spec.unit) for spec in analysis.statistics]
    )
    mechanism = plan_at_scale(plan, exact, lambda stacked: (stacked * units) @ direction)
    audit = dict(n=300_000, alpha=0.01, vectorized=True, delta=AUDIT_DELTA)
    correct = epsilon_lower_bound(mechanism(1.0), 0, 1, random_seed=11, **audit)
    assert correct.epsilon_lower_bound <= claim
    under = epsilon_lower_bound(mechanism(0.5), 0, 1, random_seed=12, **audit)
    assert under.epsilon_lower_bound > claim


def _read(model, epsilon=2.0, seed=0):
    """The node's term, statistics (kind → spec), noise laws, released statistics (full) and
    group sizes of ``model`` privatised at ε (δ = 1e-6)."""
    privatisation = privatisation_of(
        pmp.privatize(model, epsilon, delta=1e-6, secure=False, random_seed=seed)
    )
    analysis = privatisation.analysis
    (term,) = analysis.terms
    specs = analysis.statistics_of(term.node)
    count = term.public_totals()
    full = {
        kind: complete_statistic(spec, privatisation.statistics[spec.name], count)
        for kind, spec in specs.items()
    }
    return term, specs, noise_laws(privatisation), full, count


def _log_likelihood(read, values):
    """log p(s̃ | θ) of the noise-aware model, in numpy (``values`` by free variable)."""
    term, specs, laws, full, count = read
    found = term_observations(term, specs, laws, term.parameters_at(values), full, count, {})
    return sum(cell_log_likelihood(o) for o in found)


@pytest.mark.parametrize(
    ("family", "sigma"), [("normal", 0.5), ("normal", None), ("logistic", 0), ("poisson", 0)]
)
def test_numpy_and_pytensor_read_the_moments_alike(family, sigma):
    g, x, y = simulated(300, *TRUTH, seed=4, family=family)
    read = _read(varying(g, x, y, family, sigma))
    term, specs, laws, full, count = read
    rng = np.random.default_rng(5)
    batch = {"alpha": rng.normal(size=(4, G)) * 0.5, "w": rng.normal(size=(4, 2)) * 0.5}
    if sigma is None:
        batch["tau"] = rng.uniform(1.0, 5.0, size=4)
    numpy = _log_likelihood(read, batch)
    graphs = {"alpha": pt.vector("alpha"), "w": pt.vector("w"), "tau": pt.scalar("tau")}
    found = term_observations(term, specs, laws, term.parameters_at(graphs), full, count, {})
    [observation] = found
    inputs = [graphs[name] for name in ("alpha", "w", "tau") if name in batch]
    compiled = pytensor.function(
        inputs,
        [observation.mean, observation.cov],
        on_unused_input="ignore",
        mode="FAST_COMPILE",  # the Python linker: nothing to compile for a small graph
    )
    [numpy_observation] = term_observations(
        term, specs, laws, term.parameters_at(batch), full, count, {}
    )
    for k in range(4):
        mean, cov = compiled(*(batch[name][k] for name in ("alpha", "w", "tau") if name in batch))
        np.testing.assert_allclose(mean, numpy_observation.mean[k], rtol=1e-9)
        np.testing.assert_allclose(cov, numpy_observation.cov[k], rtol=1e-9, atol=1e-9)
    assert np.all(np.isfinite(numpy))


@pytest.mark.parametrize("squares", [False, True])
def test_intercept_noise_covariance_against_simulated_gram_noise(squares):
    """The covariance of (E_S w, E_Sᵀ alpha + E w[, 2 alphaᵀE_S w + wᵀE w]) over simulated
    noise E_S (per-group Σx, variance 1.5) and E (the Gram matrix's upper triangle, 0.5)."""
    rng = np.random.default_rng(6)
    alpha, w = np.array([0.5, -1.0, 2.0]), np.array([1.5, -0.5])
    draws = 200_000
    e_s = rng.normal(0.0, np.sqrt(1.5), (draws, G, 2))
    upper = rng.normal(0.0, np.sqrt(0.5), (draws, 3))
    e = np.zeros((draws, 2, 2))
    e[:, [0, 0, 1], [0, 1, 1]] = upper
    e[:, 1, 0] = e[:, 0, 1]
    moved = [e_s @ w, e_s.transpose(0, 2, 1) @ alpha + e @ w]
    if squares:
        moved.append((2.0 * np.einsum("g,ngj,j->n", alpha, e_s, w) + w @ e @ w)[:, None])
    simulated_cov = np.cov(np.concatenate(moved, axis=1), rowvar=False)
    formula = intercept_noise_covariance(alpha, w, 1.5, 0.5, squares)
    np.testing.assert_allclose(formula, simulated_cov, atol=0.05 * np.abs(formula).max())


def _laplace(read, d, sigma_free=False):
    """Mode and sd of the noise-aware posterior of (alpha, w) under N(0, 1) priors (the
    truncations far in the tails), by a Laplace approximation in numpy."""

    def negative(theta):
        values = {"alpha": theta[:G], "w": theta[G : G + d]}
        if sigma_free:
            values["tau"] = np.exp(theta[-1])
        value = -_log_likelihood(read, values) + 0.5 * theta[: G + d] @ theta[: G + d]
        return float(value) if np.isfinite(value) else 1e300

    size = G + d + (1 if sigma_free else 0)
    mode = optimize.minimize(negative, np.zeros(size), method="BFGS").x
    step, hessian = 1e-3, np.zeros((size, size))
    for j, k in itertools.product(range(size), repeat=2):
        shift_j, shift_k = np.eye(size)[j] * step, np.eye(size)[k] * step
        hessian[j, k] = (
            negative(mode + shift_j + shift_k)
            - negative(mode + shift_j - shift_k)
            - negative(mode - shift_j + shift_k)
            + negative(mode - shift_j - shift_k)
        ) / (4 * step * step)
    return mode, np.sqrt(np.diag(np.linalg.inv(hessian)))


def test_posterior_at_large_epsilon_matches_the_exact_one():
    """At ε = 10⁴ the noise-aware posterior is the exact one: least squares on the augmented
    design [onehot(g), x], σ known."""
    g, x, y = simulated(1000, *TRUTH, seed=7)
    mode, sd = _laplace(_read(varying(g, x, y), epsilon=1e4), 2)
    design = np.column_stack([np.eye(G)[g], x])
    precision = design.T @ design / 0.25 + np.eye(G + 2)
    exact = np.linalg.solve(precision, design.T @ y / 0.25)
    exact_sd = np.sqrt(np.diag(np.linalg.inv(precision)))
    np.testing.assert_allclose(mode, exact, atol=0.1 * exact_sd.min())
    np.testing.assert_allclose(sd, exact_sd, rtol=0.05)


@pytest.mark.slow
def test_intervals_cover_parameters_drawn_from_the_prior():
    """A small coverage check: 90% intervals of every intercept and weight over 12 simulated
    data sets (n = 500, ε = 1, δ = 1e-6, Normal with σ known), truths from the prior."""
    rng = np.random.default_rng(8)
    covered = []
    for k in range(12):
        alpha, w = rng.normal(size=G), rng.normal(size=2)
        g, x, y = simulated(500, alpha, w, seed=200 + k)
        mode, sd = _laplace(_read(varying(g, x, y), epsilon=1.0, seed=k), 2)
        covered.extend(np.abs(mode - np.r_[alpha, w]) <= 1.645 * sd)
    assert 0.75 <= np.mean(covered) <= 1.0


def test_hierarchical_intercepts_are_a_model_on_the_released_moments():
    """alpha ~ N(mu_a, 1) with a hyperprior on mu_a: the privatised model keeps the priors and
    reads the released moments only, so its density moves with mu_a through alpha's prior
    alone (the likelihood reads alpha, not mu_a), and any sampler of it is free."""
    g, x, y = simulated(200, *TRUTH, seed=9)
    with pm.Model() as model:
        index = pm.Data("g", g)
        x_obs = pmp.PrivateData("x_obs", x, bounds=(-1.0, 1.0))
        y_obs = pmp.PrivateData("y_obs", y, bounds=(-4.0, 4.0))
        mu_a = pmp.TruncatedNormal("mu_a", 0.0, 1.0, lower=-2.0, upper=2.0)
        alpha = pmp.TruncatedNormal("alpha", mu_a, 1.0, lower=-3.0, upper=3.0, shape=G)
        w = pmp.TruncatedMvNormal("w", np.zeros(2), np.eye(2), radius=3.0)
        pm.Normal("y", alpha[index] + x_obs @ w, 0.5, observed=y_obs)
    private = pmp.privatize(model, 3.0, delta=1e-6, secure=False, random_seed=1)
    assert {rv.name for rv in private.free_RVs} == {"mu_a", "alpha", "w"}
    logp = private.compile_logp(mode="FAST_COMPILE")
    point = private.initial_point()
    moved = dict(point, mu_a_interval__=point["mu_a_interval__"] + 0.3)
    assert np.isfinite(logp(point)) and logp(moved) != logp(point)
    (likelihood,) = private.potentials
    read = {v.name for v in graph_inputs([private.replace_rvs_by_values([likelihood])[0]])}
    assert {"alpha_interval__", "w_ball__"} <= read and "mu_a_interval__" not in read
    assert ledger_for(model).epsilon(1e-6) <= 3.0


def test_plug_in_model_reads_the_augmented_moments():
    """``noise_aware=False``: the released moments' log-likelihood (`logp_from_statistics`)
    in the model, finite at the start (a logistic one too, in numpy); no conjugate block
    claims the weights (the intercepts enter their predictor)."""
    g, x, y = simulated(200, *TRUTH, seed=12)
    model = varying(g, x, y)
    # The statistic the warning names is the one whose noise is largest next to its spread
    # given the released Gram matrix, which the seed fixes.
    with pytest.warns(pmp.errors.CalibrationWarning, match=r"noise on `(cross|sum)\(x?_?\w*"):
        private = pmp.privatize(
            model, 3.0, delta=1e-6, secure=False, noise_aware=False, random_seed=12
        )
    logp = private.compile_logp(mode="FAST_COMPILE")
    assert np.isfinite(logp(private.initial_point()))
    with pytest.raises(UnsupportedModelError, match="through an expression"):
        pmp.PrivateGibbs(model=model)
    g, x, y = simulated(200, *TRUTH, seed=12, family="logistic")
    term, _, _, full, count = _read(varying(g, x, y, "logistic"))
    values = term.parameters_at({"alpha": np.zeros((2, G)), "w": np.zeros((2, 2))})
    assert np.all(np.isfinite(term.family.logp_from_statistics(term, values, full, count)))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    bad=st.sampled_from([np.nan, np.inf, -np.inf, 1.5, -3.0]),
    column=st.integers(0, 1),
    row=st.integers(0, 19),
    epsilon=st.sampled_from([1.0, 0.0, -1.0, np.nan]),
)
def test_bad_covariates_are_refused_before_any_noise(bad, column, row, epsilon):
    g, x, y = simulated(20, *TRUTH, seed=10)
    x[row, column] = bad
    with pytest.raises(PrivacyError, match=rf"row {row}, column {column}"):
        pmp.privatize(varying(g, x, y), epsilon, delta=1e-6)


@settings(max_examples=15, deadline=None)
@given(epsilon=st.sampled_from([0.0, -1.0, np.nan, np.inf]), label=st.sampled_from([2, -1]))
def test_bad_epsilon_or_labels_leave_the_ledger_unchanged(epsilon, label):
    g, x, y = simulated(20, *TRUTH, seed=11, family="logistic")
    model = varying(g, x, y, "logistic")
    with pytest.raises(PrivacyError):
        pmp.privatize(model, epsilon, delta=1e-6)
    assert ledger_for(model).epsilon() == 0
    y[3] = label
    with pytest.raises(PrivacyError, match="row 3"):
        varying(g, x, y, "logistic")


def test_plug_in_augmented_gram_is_projected_with_its_public_group_sizes():
    """``noise_aware=False`` plugs in ZᵀZ = [[diag(n_g), Σ_g x], [·, XᵀX]] (and Zᵀy, yᵀy):
    with groups of two records and an empty one the noisy matrix was indefinite (smallest
    eigenvalue −212 over 20 releases), the plug-in quadratic unbounded below. The Schur
    complement is projected with the public n_g, and an empty group's sums are its exact 0."""
    rng = np.random.default_rng(0)
    n = 4
    g = np.array([0, 0, 1, 1])  # group G − 1 = 2 is empty
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", rng.uniform(-1, 1, (n, 2)), bounds=(-1.0, 1.0))
        y_obs = pmp.PrivateData("y_obs", rng.uniform(-1, 1, n), bounds=(-1.0, 1.0))
        alpha = pmp.TruncatedNormal("alpha", 0.0, 1.0, lower=-2.0, upper=2.0, shape=G)
        w = pmp.TruncatedMvNormal("w", np.zeros(2), np.eye(2), radius=2.0)
        tau = pmp.TruncatedGamma("tau", 2.0, 0.5, lower=0.1, upper=100.0)
        pm.Normal("y", alpha[pm.Data("g", g)] + x_obs @ w, tau=tau, observed=y_obs)
    sizes = np.bincount(g, minlength=G).astype(float)
    for seed in range(5):
        with pytest.warns(pmp.errors.CalibrationWarning):
            private = pmp.privatize(model, 0.5, secure=False, noise_aware=False, random_seed=seed)
        privatisation = privatisation_of(private)
        statistics = privatisation.statistics
        specs = privatisation.analysis.statistics_of("y")
        gram = complete_statistic(specs["gram"], statistics[specs["gram"].name], None)
        sums, totals = statistics[specs["group_gram"].name], statistics[specs["group_cross"].name]
        cross = np.r_[totals, statistics[specs["cross"].name]]
        augmented = np.block([[np.diag(sizes), sums], [sums.T, gram]])
        joint = np.block(
            [
                [augmented, cross[:, None]],
                [cross[None, :], np.array([[float(statistics[specs["sum_squares"].name])]])],
            ]
        )
        assert np.linalg.eigvalsh(joint).min() > -1e-9 * np.abs(joint).max()
        assert np.all(sums[G - 1] == 0) and totals[G - 1] == 0
