"""Public inputs: group indices and covariates that are not `PrivateData`.

A public input (a numpy array, or ``pm.Data`` that is not `PrivateData`) is known to
everyone and shared by neighbouring data sets: a record cannot change group, the group sizes
are public and nothing about them is released, so per-group statistics cost what ungrouped
ones do. Audits at α = 0.01 on the worst neighbouring pair (one record's features all flip).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pymc as pm
import pytensor
import pytest
from scipy import optimize, special

import pymc_private as pmp
from pymc_private.analysis.core import analyze
from pymc_private.analysis.privatisation import privatisation_of
from pymc_private.data.ledgers import ledger_for
from pymc_private.dp.audit import epsilon_lower_bound
from pymc_private.dp.events import zcdp_epsilon
from pymc_private.pay_once.plans import CellsPlan, chosen_plan
from pymc_private.pay_once.privatize import release_statistics

N = 120
AUDIT_DELTA = 1e-3


def _features(groups: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    index = np.arange(N) % groups
    features = (rng.random((N, 2)) < 0.5).astype(int)
    return index, features


def grouped_bernoulli(index, features, *, kind: str = "numpy", groups: int | None = None):
    """Bernoulli features whose probabilities are indexed by a group: ``kind`` says how the
    index enters (a numpy array, public pm.Data, or PrivateData)."""
    groups = int(index.max()) + 1 if groups is None else groups
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", features, bounds=(0, 1))
        if kind == "numpy":
            g = index
        elif kind == "pm.Data":
            g = pm.Data("g", index)
        else:
            g = pmp.PrivateData("g", index, bounds=(0, groups - 1))
        theta = pmp.TruncatedBeta("theta", 1, 1, lower=0.05, upper=0.95, shape=(groups, 2))
        pm.Bernoulli("x", theta[g], observed=x_obs)
    return model


@pytest.mark.parametrize("kind", ["numpy", "pm.Data"])
def test_a_public_index_groups_the_statistics_without_releasing_group_sizes(kind):
    index, features = _features(4)
    analysis = analyze(grouped_bernoulli(index, features, kind=kind))
    (term,) = analysis.terms
    assert term.group_values is not None and not term.group_can_change
    np.testing.assert_array_equal(term.public_totals(), np.bincount(index))
    (spec,) = analysis.statistics  # no counts(g): the group sizes are public
    assert spec.shape == (4, 2, 1) and spec.sensitivity_l1 == 2.0
    counts = spec.compute({"x_obs": features})
    np.testing.assert_array_equal(counts[..., 0], [features[index == g].sum(0) for g in range(4)])
    assert "(public)" in repr(analysis)


def test_a_private_index_costs_more_than_the_same_index_public():
    index, features = _features(4)
    public = analyze(grouped_bernoulli(index, features, kind="numpy"))
    private = analyze(grouped_bernoulli(index, features, kind="PrivateData"))
    assert public.sensitivity_l1 == 2.0
    assert private.sensitivity_l1 > public.sensitivity_l1
    assert any(spec.name == "counts(g)" for spec in private.statistics)


def test_twelve_public_groups_cost_what_one_group_costs():
    spent, scales = {}, {}
    for groups in (1, 12):
        index, features = _features(groups)
        model = grouped_bernoulli(index, features, groups=groups)
        assert analyze(model).sensitivity_l1 == 2.0
        (name,) = (spec.name for spec in analyze(model).statistics)
        assert name.startswith("counts(x_obs | index of theta #")
        before = pmp.ledger_for(model).epsilon()  # one data set, one ledger
        private = pmp.privatize(model, epsilon=1.0, random_seed=1)
        spent[groups] = pmp.ledger_for(model).epsilon() - before
        scales[groups] = privatisation_of(private).noise[name].scale
        assert pmp.privatised_statistics(private)[name].shape == (groups, 2, 1)
    assert spent[1] == spent[12] == 1.0
    assert scales[1] == scales[12] == 2.0


def _audit_pair():
    """Record 0 (public group 0) has both features 0; in the neighbour both are 1: the two
    released cells of group 0 move by one each (Δ₁ = 2), the group sizes stay."""
    index, features = _features(3)
    features = features.copy()
    features[0] = 0
    neighbour = features.copy()
    neighbour[0] = 1
    return index, {"x_obs": features}, {"x_obs": neighbour}


@pytest.mark.slow
def test_audit_public_index_release_and_half_scale_copy_is_caught():
    index, data, neighbour = _audit_pair()
    analysis = analyze(grouped_bernoulli(index, data["x_obs"]))
    (spec,) = analysis.statistics
    before, target = (spec.compute(arrays).ravel() for arrays in (data, neighbour))
    direction = np.sign(target - before)
    assert np.count_nonzero(direction) == 2

    def corner(released):
        return bool(np.all(direction * (released - target) >= 0))

    def mechanism(epsilon):
        def run(arrays, rng):
            released = release_statistics(
                analysis, arrays, chosen_plan(analysis, epsilon, secure=False), rng=rng
            )
            return released.noisy[spec.name].ravel()

        return run

    honest = epsilon_lower_bound(
        mechanism(1.0), data, neighbour, n=2000, alpha=0.01, event=corner, random_seed=21
    )
    assert honest.passes(1.0)
    caught = epsilon_lower_bound(
        mechanism(2.0), data, neighbour, n=6000, alpha=0.01, event=corner, random_seed=22
    )
    assert not caught.passes(1.0)


def test_audit_public_index_secure_release_at_the_boundary():
    """The secure default on the worst pair, the event at the neighbour's value."""
    index, data, neighbour = _audit_pair()
    analysis = analyze(grouped_bernoulli(index, data["x_obs"]))
    (spec,) = analysis.statistics

    plan = chosen_plan(analysis, 1.0)

    def mechanism(arrays, rng):
        return release_statistics(analysis, arrays, plan).noisy[spec.name].ravel()[:2]

    result = epsilon_lower_bound(
        mechanism,
        data,
        neighbour,
        n=300,
        alpha=0.01,
        event=lambda s: bool(np.all(s >= 1)),
        random_seed=23,
    )
    assert result.passes(1.0)


@pytest.fixture(scope="module")
def hierarchical_public():
    rng = np.random.default_rng(5)
    index = rng.integers(0, 5, 150)
    values = np.clip(rng.normal(np.linspace(-1.0, 1.0, 5)[index], 1.0), -3.0, 3.0)
    with pm.Model() as model:
        v_obs = pmp.PrivateData("v_obs", values, bounds=(-3.0, 3.0))
        g = pm.Data("g", index)
        mu = pmp.TruncatedNormal("mu", 0.0, 1.0, lower=-2.0, upper=2.0, shape=5)
        pm.Normal("v", mu[g], 1.0, observed=v_obs)
    return model, index, values


def test_every_route_runs_a_hierarchy_grouped_by_public_pm_data(hierarchical_public):
    model, index, values = hierarchical_public
    with model:
        gibbs = pmp.PrivateGibbs(temperature=50.0)
    (full, totals) = gibbs._statistics["v"]
    np.testing.assert_array_equal(totals, np.bincount(index, minlength=5))
    sums = np.array([values[index == g].sum() for g in range(5)])
    np.testing.assert_allclose(np.asarray(full["sum"], dtype=float), sums, atol=1e-5)
    with model:
        idata = pmp.sample(5, step=gibbs, chains=1, progressbar=False, random_seed=1)
    assert idata.posterior["mu"].shape == (1, 5, 5)
    draws = pmp.sample_posterior(model, n=2, temperature=50.0, random_seed=2)
    assert draws.posterior["mu"].shape == (1, 2, 5)
    private = pmp.privatize(model, epsilon=1.0, random_seed=3)
    assert [rv.name for rv in private.free_RVs] == ["mu"]  # no latent group sizes
    with private:
        fit = pmp.sample(100, tune=100, chains=1, progressbar=False, random_seed=4)
    fit.update(pmp.sample_posterior_predictive(fit, private, random_seed=5))
    assert fit.posterior_predictive["sum(v_obs | g)"].shape == (1, 100, 5)
    assert "Releasable" in str(pmp.check_release(fit))


def test_fourier_release_refuses_a_public_index():
    index, features = _features(2)
    with pytest.raises(pmp.UnsupportedModelError, match="public index"):
        pmp.privatize(
            grouped_bernoulli(index, features), epsilon=1.0, release="fourier", noise_aware=False
        )


@pytest.fixture(scope="module")
def public_covariates():
    rng = np.random.default_rng(7)
    X = rng.uniform(-1.0, 1.0, (80, 2))
    y = np.clip(X @ [1.0, -0.5] + rng.normal(0.0, 0.3, 80), -3.0, 3.0)
    with pm.Model(coords={"obs": np.arange(80), "feature": ["a", "b"]}) as model:
        X_data = pm.Data("X", X, dims=("obs", "feature"))
        y_obs = pmp.PrivateData("y_obs", y, bounds=(-3.0, 3.0), dims="obs")
        w = pmp.TruncatedNormal("w", 0.0, 1.0, lower=-2.0, upper=2.0, dims="feature")
        pm.Normal("y", X_data @ w, 0.5, observed=y_obs, dims="obs")
    return model, X


def test_metropolis_compiles_public_pm_data_as_the_analysis_read_it(public_covariates):
    """L is computed from the public covariates' values: a later pm.set_data must not move
    the log-likelihood the step evaluates outside the range L bounds."""
    model, X = public_covariates
    with model:
        step = pmp.PrivateMetropolis(temperature=10.0)
    q1, q0 = np.array([0.3, -0.2]), np.zeros(2)
    before = step._log_ratio_terms(q1, q0)[1].copy()
    try:
        with model:
            pm.set_data({"X": 100.0 * X})
        np.testing.assert_array_equal(step._log_ratio_terms(q1, q0)[1], before)
    finally:
        with model:
            pm.set_data({"X": X})


def test_set_data_predictions_at_public_covariates(public_covariates):
    """The PyMC idiom: fit, pm.set_data the public covariates (new length, new coords),
    predict; or pass them as inputs. Both give the same sealed predictions."""
    model, X = public_covariates
    with model:
        idata = pmp.sample(
            20, step=pmp.PrivateMetropolis(temperature=10.0), chains=1, progressbar=False
        )
    new = np.array([[0.5, 0.5], [-1.0, 1.0], [0.0, 0.0]])
    by_inputs = pmp.sample_posterior_predictive(idata, model, inputs={"X": new}, random_seed=2)
    try:
        with model:
            pm.set_data({"X": new}, coords={"obs": np.arange(3)})
        by_set_data = pmp.sample_posterior_predictive(idata, model, random_seed=2)
    finally:
        with model:
            pm.set_data({"X": X}, coords={"obs": np.arange(len(X))})
    assert by_inputs.predictions["y"].shape == (1, 20, 3)
    np.testing.assert_array_equal(by_inputs.predictions["y"], by_set_data.predictions["y"])
    idata.update(by_inputs)
    assert "Releasable" in str(pmp.check_release(idata))


def test_metropolis_compiles_a_bare_shared_input_as_the_analysis_read_it():
    """The attack: a `pytensor.shared` covariate outside model.data_vars is read by the
    analysis as a public constant; set_value after the step was built must not reach the
    compiled log-likelihood (it did: Λ moved 50 times what L bounds)."""
    x = pytensor.shared(np.full(1, 10.0), name="x")
    with pm.Model():
        y_obs = pmp.PrivateData("y_obs", np.array([0.0]), bounds=(0.0, 0.1))
        w = pmp.TruncatedNormal("w", 0.0, 1.0, lower=-1.0, upper=1.0)
        pm.Normal("y", w * x, 1.0, observed=y_obs)
        step = pmp.PrivateMetropolis([w])
    q1, q0 = np.array([0.3]), np.array([-0.2])
    before = step._log_ratio_terms(q1, q0)[1].copy()
    x.set_value(np.full(1, 1000.0))
    np.testing.assert_array_equal(step._log_ratio_terms(q1, q0)[1], before)


@pytest.mark.parametrize("kind", ["numpy", "pm.Data"])
def test_a_public_parameter_per_record_has_no_sufficient_statistics(kind):
    """The attack: a per-record public sigma entered the conjugate update as if it scaled
    the summed statistics (posterior precision 1 + n·Σ1/σ_i² instead of 1 + Σ1/σ_i²), an
    update n times the likelihood the analysis charged. Such a node has no statistics: the
    statistic routes refuse it by name, private Metropolis (record by record) runs it."""
    n = 40
    with pm.Model() as model:
        y_obs = pmp.PrivateData("y_obs", np.zeros(n), bounds=(0.0, 1.0))
        sigma = np.full(n, 2.0) if kind == "numpy" else pm.Data("s", np.full(n, 2.0))
        mu = pmp.TruncatedNormal("mu", 0.0, 1.0, lower=-1.0, upper=1.0)
        pm.Normal("y", mu, sigma, observed=y_obs)
    assert analyze(model).terms[0].per_record_constants == ("sigma",)
    pattern = r"`sigma` take a value per record"
    with model, pytest.raises(pmp.UnsupportedModelError, match=pattern):
        pmp.PrivateGibbs()
    with pytest.raises(pmp.UnsupportedModelError, match=pattern):
        pmp.sample_posterior(model, n=1)
    with pytest.raises(pmp.UnsupportedModelError, match=pattern):
        pmp.privatize(model, epsilon=1.0)
    with model:
        assert pmp.PrivateMetropolis().privacy_epsilon_per_draw > 0


def test_two_numpy_indices_on_one_variable_keep_their_own_groups():
    """Unnamed public indices are named by their values: theta[g1] and theta[g2] over the
    same records are two statistics, not one grouped by g1 (found by the attacker: theta[1],
    seen only on ones through g2, was estimated at the lower bound)."""
    ones = np.ones(40, dtype=np.int64)
    g1, g2 = np.zeros(40, dtype=np.int64), np.repeat([0, 1], 20)
    with pm.Model() as model:
        a = pmp.PrivateData("a", ones, bounds=(0, 1))
        theta = pmp.TruncatedBeta("theta", 1.0, 1.0, lower=0.05, upper=0.95, shape=2)
        pm.Bernoulli("xa", theta[g1], observed=a)
        pm.Bernoulli("xb", theta[g2], observed=a)
    groupings = {spec.name: spec.group_values.tolist() for spec in analyze(model).statistics}
    assert sorted(groupings.values()) == sorted([g1.tolist(), g2.tolist()])
    estimate = pmp.private_map(model, 200.0, cells=256, secure=False, random_seed=1)
    assert estimate["theta"][1] > 0.9


# -- public covariates with a private outcome ----------------------------------------------

ROWS = np.array([[1.0, 0.5, -0.25], [1.0, -1.0, 0.75], [1.0, 0.125, 1.0], [1.0, 0.0, -0.5]])


def outcome_model(x, y, family="normal", *, bounds=(-2.0, 2.0), radius=3.0, named=True):
    """The prediction model: public X (``pm.Data`` or a numpy array), a private outcome,
    weights on a ball."""
    p = x.shape[1]
    with pm.Model() as model:
        X = pm.Data("X", x) if named else x
        y_obs = pmp.PrivateData("y_obs", y, bounds=bounds)
        w = pmp.TruncatedMvNormal("w", np.zeros(p), np.eye(p), radius=radius)
        if family == "normal":
            pm.Normal("y", X @ w, sigma=0.3, observed=y_obs)
        elif family == "tau":
            tau = pmp.TruncatedGamma("tau", 2.0, 0.2, lower=1.0, upper=100.0)
            pm.Normal("y", X @ w, tau=tau, observed=y_obs)
        elif family == "logistic":
            pm.Bernoulli("y", logit_p=X @ w, observed=y_obs)
        else:
            pm.Poisson("y", pm.math.exp(X @ w), observed=y_obs)
    return model


def simulated_outcome(n, family, seed=0):
    rng = np.random.default_rng(seed)
    x = np.column_stack([np.ones(n), rng.uniform(-1.0, 1.0, (n, 2))])
    s = x @ np.array([0.3, 0.8, -0.5])
    if family in ("normal", "tau"):
        return x, np.clip(s + rng.normal(0.0, 0.3, n), -2.0, 2.0), (-2.0, 2.0)
    if family == "logistic":
        return x, (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-s))).astype(np.int64), (0, 1)
    return x, np.minimum(rng.poisson(np.exp(s)), 10), (0, 10)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("family", "kinds"),
    [
        ("normal", ["cross"]),
        ("tau", ["cross", "sum_squares"]),
        ("logistic", ["cross"]),
        ("poisson", ["cross"]),
    ],
)
def test_public_covariates_release_only_the_moments_with_the_outcome(family, kinds):
    """XᵀX is public: only Xᵀy (and yᵀy with σ free) is released, once; sampling and
    predictions at new public X spend nothing more."""
    x, y, bounds = simulated_outcome(200, family)
    model = outcome_model(x, y, family, bounds=bounds)
    analysis = analyze(model)
    assert [spec.kind for spec in analysis.statistics] == kinds
    assert analysis.statistics[0].name == "cross(X, y_obs)"
    assert analysis.epsilon_per_draw("privatize") == 0
    assert analysis.epsilon_per_draw("posterior_sampling") > 10
    (term,) = analysis.terms
    grid = term.covariate_grid
    m = grid.quantize(x)
    np.testing.assert_array_equal(term.covariate_gram, (m.T @ m) * grid.quantum**2)
    private = pmp.privatize(model, 1.0, delta=1e-6, secure=False, random_seed=0)
    assert ledger_for(model).epsilon() == pytest.approx(1.0)
    with private:
        idata = pmp.sample(100, tune=100, chains=1, random_seed=1)
    pp = pmp.sample_posterior_predictive(idata, model, inputs={"X": x[:3]}, random_seed=2)
    assert pp.predictions["y"].shape == (1, 100, 3)
    assert ledger_for(model).epsilon() == pytest.approx(1.0)


def test_public_outcome_sensitivity_against_every_record_and_pair_of_outcomes():
    """Δ₁, Δ₂² (in grid steps) of Xᵀy over every public row and every pair of outcomes on
    y's grid ends and zero; with yᵀy, their joint Δ₂² within the sum of the two."""
    model = outcome_model(ROWS, np.array([0.5, -1.0, 2.0, 0.0]), "tau")
    cross, squares = analyze(model).statistics
    y_grid = squares.grids[0]
    m = cross.covariate_values.astype(object)  # Python integers: no int64 overflow
    levels = [int(y_grid.lower), 0, int(y_grid.upper)]
    moved = [
        (m[i] * (a - b), a * a - b * b)
        for i in range(len(ROWS))
        for a, b in itertools.product(levels, levels)
    ]
    assert max(sum(abs(v) for v in t) for t, _ in moved) == cross.sensitivity
    assert max(t @ t for t, _ in moved) == cross.sensitivity_l2_squared
    assert max(abs(s) for _, s in moved) == squares.sensitivity
    units = np.array([cross.unit, squares.unit])
    joint = max(float(units[0] ** 2 * float(t @ t) + (units[1] * s) ** 2) for t, s in moved)
    assert joint <= cross.sensitivity_l2**2 + squares.sensitivity_l2**2
    # The row of largest norm, ‖(1, −1, 0.75)‖₁ = 2.75, decides; y moves by 4.
    assert cross.sensitivity_l1 == 2.75 * 4.0
    # The released sum is the exact integer sum over the public rows on their grid.
    y = np.array([0.5, -1.0, 2.0, 0.0])
    assert (
        cross.compute({"y_obs": y}).tolist() == (m.T @ y_grid.quantize(y).astype(object)).tolist()
    )


@pytest.mark.parametrize("named", [True, False])
def test_a_numpy_design_matrix_is_public_too(named):
    analysis = analyze(outcome_model(ROWS, np.zeros(4), named=named))
    assert [spec.kind for spec in analysis.statistics] == ["cross"]


@pytest.mark.slow
def test_audit_public_covariates_on_the_worst_pair_and_catch_half_scale(plan_at_scale):
    """Xᵀy released with Gaussian noise as `privatize` draws it, on the worst neighbouring
    pair: the row of largest norm with y at its two bounds, seen along the move."""
    epsilon = 1.0
    x = np.array([[1.0, 1.0, -1.0], [1.0, 0.5, 0.0], [1.0, -0.5, 0.5]])
    model = outcome_model(x, np.zeros(3), bounds=(-1, 1))
    analysis = analyze(model)
    (spec,) = analysis.statistics
    exact = []
    for value in (-1, 1):
        y = np.zeros(3)
        y[0] = value
        exact.append({spec.name: spec.compute({"y_obs": y})})
    moved = (exact[1][spec.name] - exact[0][spec.name]).astype(np.float64)
    assert moved @ moved == spec.sensitivity_l2_squared
    direction = moved / np.linalg.norm(moved)
    plan = CellsPlan.of(analysis, epsilon, AUDIT_DELTA, "gaussian", secure=False)
    recorded = plan.run(exact[0], np.random.default_rng(0))[1]
    claim = zcdp_epsilon(float(sum(Fraction(r.rho) for r in recorded)), AUDIT_DELTA)
    assert claim <= epsilon * (1 + 1e-12)

    # Released in natural units; the move is in grid steps.
    mechanism = plan_at_scale(plan, exact, lambda stacked: (stacked / spec.unit) @ direction)
    audit = dict(n=300_000, alpha=0.01, vectorized=True, delta=AUDIT_DELTA)
    correct = epsilon_lower_bound(mechanism(1.0), 0, 1, random_seed=11, **audit)
    assert correct.epsilon_lower_bound <= claim
    under = epsilon_lower_bound(mechanism(0.5), 0, 1, random_seed=12, **audit)
    assert under.epsilon_lower_bound > claim


def _exact_posterior(x, y, family):
    """Mean and sd of the exact non-private posterior (prior N(0, I); the ball's truncation
    at R = 3 is negligible): closed form for the Normal, Laplace for the logistic."""
    if family == "normal":
        precision = np.eye(3) + x.T @ x / 0.09
        cov = np.linalg.inv(precision)
        return cov @ (x.T @ y) / 0.09, np.sqrt(np.diag(cov))

    def negative(w):
        s = x @ w
        return -(y * s - np.logaddexp(0.0, s)).sum() + 0.5 * w @ w

    mode = optimize.minimize(negative, np.zeros(3), method="BFGS").x
    p = special.expit(x @ mode)
    hessian = (x * (p * (1 - p))[:, None]).T @ x + np.eye(3)
    return mode, np.sqrt(np.diag(np.linalg.inv(hessian)))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("family", "noise_aware"), [("normal", True), ("normal", False), ("logistic", True)]
)
def test_public_covariates_posterior_at_large_epsilon_matches_the_exact_one(family, noise_aware):
    x, y, bounds = simulated_outcome(1000, family, seed=3)
    model = outcome_model(x, y, family, bounds=bounds)
    private = pmp.privatize(
        model, 500.0, delta=1e-6, noise_aware=noise_aware, secure=False, random_seed=1
    )
    with private:
        idata = pmp.sample(500, tune=300, chains=2, random_seed=2)
    draws = idata.posterior["w"].values.reshape(-1, 3)
    mean, sd = _exact_posterior(x, y, family)
    assert np.all(np.abs(draws.mean(0) - mean) < 0.5 * sd)
    np.testing.assert_allclose(draws.std(0), sd, rtol=0.25)


def test_predictions_at_new_public_covariates_follow_the_fit_and_spend_nothing():
    x, y, _ = simulated_outcome(300, "normal", seed=4)
    model = outcome_model(x, y)
    private = pmp.privatize(model, 2.0, secure=False, random_seed=5)
    with private:
        idata = pmp.sample(200, tune=200, chains=2, random_seed=6)
    spent = ledger_for(model).epsilon()
    new = np.array([[1.0, -1.0, 0.5], [1.0, 0.0, 0.0], [1.0, 0.5, 0.5]])
    pp = pmp.sample_posterior_predictive(idata, model, inputs={"X": new}, random_seed=7)
    assert pmp.check_release(pp).releasable
    weights = idata.posterior["w"].mean(("chain", "draw")).to_numpy()
    predicted = pp.predictions["y"].mean(("chain", "draw")).to_numpy()
    np.testing.assert_allclose(predicted, new @ weights, atol=0.08)
    np.testing.assert_array_equal(pp.predictions_constant_data["X"].to_numpy(), new)
    assert ledger_for(model).epsilon() == spent == pytest.approx(2.0)


@pytest.mark.parametrize(("bad", "named"), [(np.nan, False), (np.inf, True), (-np.inf, False)])
def test_bad_public_covariates_are_refused_before_any_noise(bad, named):
    """(pm.Data itself refuses NaN.)"""
    x, y, _ = simulated_outcome(20, "normal")
    x[4, 1] = bad
    model = outcome_model(x, y, named=named)
    with pytest.raises(pmp.DataBoundsError, match="NaN or infinite"):
        pmp.privatize(model, 1.0)
    assert ledger_for(model).epsilon() == 0


def test_covariates_computed_from_private_data_are_refused():
    x, y, _ = simulated_outcome(20, "normal")
    with pm.Model() as model:
        x_private = pmp.PrivateData("x_private", x, bounds=(-1.0, 1.0))
        y_obs = pmp.PrivateData("y_obs", y, bounds=(-2.0, 2.0))
        w = pmp.TruncatedMvNormal("w", np.zeros(3), np.eye(3), radius=3.0)
        pm.Normal("y", (2.0 * x_private) @ w, sigma=0.3, observed=y_obs)
    with pytest.raises(pmp.UnsupportedModelError, match="x_private"):
        analyze(model)


@pytest.mark.parametrize("family", ["normal", "logistic", "poisson"])
def test_numpy_and_pytensor_read_public_covariates_alike(family):
    """The numpy form (`pmp.sample`'s samplers) and the graph (NUTS) of Xᵀy's law agree;
    a GLM's is the exact sum over the public rows."""
    x, y, bounds = simulated_outcome(100, family, seed=8)
    analysis = analyze(outcome_model(x, y, family, bounds=bounds))
    (term,) = analysis.terms
    (spec,) = analysis.statistics
    name = "mu" if family != "logistic" else "p"
    full = {"cross": spec.natural(spec.compute({"y_obs": y}))}
    batch = np.random.default_rng(9).normal(size=(4, 3)) * 0.5
    [(_, _, mean, cov)] = term.family.statistic_moments(term, {name: batch}, full, 100)
    w = pytensor.tensor.vector("w")
    [(_, _, mean_graph, cov_graph)] = term.family.statistic_moments(term, {name: w}, full, 100)
    # (σ known: the covariance σ²XᵀX is a constant.)
    compiled = pytensor.function([w], [mean_graph, pytensor.tensor.as_tensor(cov_graph)])
    for k in range(4):
        graph_mean, graph_cov = compiled(batch[k])
        np.testing.assert_allclose(graph_mean, mean[k], rtol=1e-9)
        np.testing.assert_allclose(graph_cov, np.broadcast_to(cov, (4, 3, 3))[k], rtol=1e-9)
    if family != "normal":
        link = special.expit if family == "logistic" else np.exp
        v = term.covariate_grid.quantize(x) * term.covariate_grid.quantum
        np.testing.assert_allclose(mean[0], v.T @ link(v @ batch[0]), rtol=1e-12)


def test_a_public_column_that_rounds_to_a_constant_is_refused():
    """Public covariates share one grid step, set by the widest column: a column of values in
    [0, 0.001] beside one of ±4·10⁹ rounded to zeros and dropped silently out of Xᵀy and the
    Gram matrix (a reviewer). It is refused before any release, naming the fix."""
    rng = np.random.default_rng(0)
    n = 200
    x = np.column_stack([rng.uniform(0, 0.001, n), rng.uniform(-3e9, 4e9, n)])
    with pm.Model() as model:
        design = pm.Data("X", x)
        y_obs = pmp.PrivateData("y_obs", rng.uniform(-1, 1, n), bounds=(-1.0, 1.0))
        w = pmp.TruncatedMvNormal("w", np.zeros(2), np.eye(2), radius=2.0)
        pm.Normal("y", design @ w, 0.5, observed=y_obs)
    with pytest.raises(pmp.PrivacyError, match=r"column 0 varies.*rescale the columns"):
        pmp.privatize(model, 1.0)
    assert ledger_for(model).epsilon() == 0
