"""The privacy analysis: exact L per node, record and block, Δ₁ of the statistics, the ε of
each route, identical analyses for different data, and refusals with the fix in the message.

No sampling and no compiled logp: the analysis only reads the graph.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pymc.model.fgraph import clone_model
from scipy import stats

from pymc_private.analysis.core import analyze
from pymc_private.analysis.leak_guard import refuse_private_paths
from pymc_private.data.declaration import PrivateData
from pymc_private.data.ledgers import ledger_for
from pymc_private.errors import (
    DataBoundsError,
    InvalidPrivacyParameterError,
    UnboundedSensitivityError,
    UnsupportedModelError,
)
from pymc_private.families.statistics import (
    ElementDomain,
    Interval,
    ParameterTerm,
    complete_statistic,
)
from pymc_private.families.univariate import Binomial, Poisson
from pymc_private.pay_once.privatize import privatize
from pymc_private.priors.conjugate import GAMMA
from pymc_private.priors.distributions import (
    TruncatedBeta,
    TruncatedDirichlet,
    TruncatedExponential,
    TruncatedGamma,
    TruncatedMvNormal,
    TruncatedNormal,
)
from pymc_private.steps.gibbs import PrivateGibbs
from pymc_private.steps.metropolis import PrivateMetropolis

N = 12


def beta_bernoulli(a, labels=None, prior=None):
    labels = np.arange(N) % 2 if labels is None else labels
    with pm.Model() as model:
        y_obs = PrivateData("y_obs", labels, bounds=(0, 1))
        theta = prior() if prior else TruncatedBeta("theta", 2, 2, lower=a, upper=1 - a)
        pm.Bernoulli("y", theta, observed=y_obs)
    return model


@pytest.mark.parametrize("a", [0.01, 0.1, 0.3])
def test_beta_bernoulli_costs(a):
    """L = ln((1−a)/a) (docs: costs-lipschitz-table); every pay-per-draw route costs 2L/T a draw."""
    analysis = analyze(beta_bernoulli(a))
    expected = math.log((1 - a) / a)
    assert analysis.node_lipschitz == {"y": pytest.approx(expected, rel=1e-12)}
    assert analysis.record_lipschitz == pytest.approx(expected, rel=1e-12)
    assert analysis.block_lipschitz == {"theta": pytest.approx(expected, rel=1e-12)}
    for route in ("posterior_sampling", "gibbs", "metropolis"):
        assert analysis.epsilon_per_draw(route) == pytest.approx(2 * expected)
        assert analysis.epsilon_per_draw(route, temperature=4) == pytest.approx(expected / 2)
    assert analysis.epsilon_per_draw("privatize") == 0.0
    (statistic,) = analysis.statistics
    assert (statistic.name, statistic.shape, statistic.unit) == ("counts(y_obs)", (1,), 1.0)
    assert analysis.sensitivity_l1 == 1.0
    assert analysis.n_records == N
    assert analysis.routes == ("posterior_sampling", "gibbs", "metropolis", "privatize")


@pytest.mark.parametrize(("d", "a"), [(1, 0.05), (3, 0.05), (5, 0.2)])
def test_naive_bayes_costs(make_naive_bayes, rng, d, a):
    """Record L = (d+1)·ln((1−a)/a): the label node gives ln((1−a)/a); the feature node
    gives d·ln((1−a)/a), each feature's parameter θ[y, j] ranging over [a, 1−a] for both the
    record and its replacement (which may have another class).

    Δ₁ = 2d + 1, by Zhang et al. Lemma 1 with one derived cell: the class counts are n_1
    alone (n_0 = n − n_1 with n public), Δ = 1; each feature releases N[c, j, 1] for both
    classes, and a record moving from class c to c' with x_j = x'_j = 1 changes N[c, j, 1]
    and N[c', j, 1]: Δ = 2 per feature. Checked below against every pair of records.
    """
    model = make_naive_bayes(rng.integers(0, 2, N), rng.integers(0, 2, (N, d)), a)
    analysis = analyze(model)
    unit = math.log((1 - a) / a)
    assert analysis.node_lipschitz["y"] == pytest.approx(unit, rel=1e-12)
    assert analysis.node_lipschitz["x"] == pytest.approx(d * unit, rel=1e-12)
    assert analysis.record_lipschitz == pytest.approx((d + 1) * unit, rel=1e-12)
    assert analysis.block_lipschitz["pi"] == pytest.approx(unit, rel=1e-12)
    assert analysis.block_lipschitz["theta"] == pytest.approx(d * unit, rel=1e-12)
    assert analysis.lipschitz_for(["pi", "theta"]) == pytest.approx((d + 1) * unit)
    assert analysis.epsilon_per_draw("gibbs", 2.0) == pytest.approx((d + 1) * unit)
    assert analysis.epsilon_per_draw("gibbs", blocks=[["pi", "theta"]]) == pytest.approx(
        2 * (d + 1) * unit
    )
    names = [s.name for s in analysis.statistics]
    assert names == ["counts(y_obs)", "counts(x_obs | y_obs)"]
    # Both categories of each feature are released: a record that changes class moves two
    # cells per feature either way, so Δ₁ stays 2d + 1 and every cell informs the class sizes.
    assert analysis.statistics[1].shape == (2, d, 2)
    assert analysis.statistics[0].nodes == ("x", "y")
    assert analysis.sensitivity_l1 == 2 * d + 1
    records = [
        {"y_obs": np.array([y]), "x_obs": np.array([x])}
        for y in (0, 1)
        for x in itertools.product((0, 1), repeat=d)
    ]
    vectors = [
        np.concatenate([np.ravel(s.compute(r)) for s in analysis.statistics]) for r in records
    ]
    enumerated = max(np.abs(u - v).sum() for u, v in itertools.combinations(vectors, 2))
    assert enumerated == analysis.sensitivity_l1


def test_categorical_with_min_prob():
    k, a = 4, 0.05
    with pm.Model() as model:
        y_obs = PrivateData("y_obs", np.arange(N) % k, bounds=(0, k - 1))
        p = TruncatedDirichlet("p", np.ones(k), min_prob=a)
        pm.Categorical("y", p=p, observed=y_obs)
    analysis = analyze(model)
    assert analysis.record_lipschitz == pytest.approx(math.log((1 - (k - 1) * a) / a), rel=1e-12)
    assert analysis.sensitivity_l1 == 2.0


def test_poisson_by_enumeration():
    """λ ∈ [c1, c2], x ∈ {0..K}: L = max over λ ∈ {c1, c2} of the range of log p(x | λ)."""
    c1, c2, k = 0.5, 4.0, 6
    with pm.Model() as model:
        y_obs = PrivateData("y_obs", np.arange(N) % (k + 1), bounds=(0, k))
        lam = TruncatedGamma("lam", 2, 1, lower=c1, upper=c2)
        pm.Poisson("y", lam, observed=y_obs)
    xs = np.arange(k + 1)
    expected = max(np.ptp(stats.poisson.logpmf(xs, lam)) for lam in (c1, c2))
    analysis = analyze(model)
    assert analysis.record_lipschitz == pytest.approx(expected, rel=1e-12)
    assert analysis.sensitivity_l1 == k


@pytest.mark.parametrize("prior", ["gamma", "exponential"])
def test_exponential_is_c2_times_b(prior):
    c1, c2, big_b = 0.5, 3.0, 4.0
    with pm.Model() as model:
        y_obs = PrivateData("y_obs", np.linspace(0, big_b, N), bounds=(0, big_b))
        if prior == "gamma":
            lam = TruncatedGamma("lam", 2, 1, lower=c1, upper=c2)
        else:
            lam = TruncatedExponential("lam", 1, lower=c1, upper=c2)
        pm.Exponential("y", lam, observed=y_obs)
    analysis = analyze(model)
    assert analysis.record_lipschitz == pytest.approx(c2 * big_b, rel=1e-12)
    (term,) = analysis.terms
    assert (term.parameters["scale"].free_variable, term.parameters["scale"].link) == (
        "lam",
        "reciprocal",
    )


def test_normal_with_known_sigma():
    """μ ∈ [−0.5, 3], σ = 2, x ∈ [−1, 2]: max over μ ∈ {−0.5, 3} of the range of
    (x−μ)²/(2σ²) is at μ = 3, (16 − 1)/8 = 1.875."""
    with pm.Model() as model:
        y_obs = PrivateData("y_obs", np.linspace(-1, 2, N), bounds=(-1, 2))
        mu = TruncatedNormal("mu", 0, 1, lower=-0.5, upper=3)
        pm.Normal("y", mu, 2.0, observed=y_obs)
    analysis = analyze(model)
    assert analysis.record_lipschitz == pytest.approx(1.875, rel=1e-12)
    assert analysis.terms[0].family.name == "Normal (sigma a constant)"
    assert analysis.sensitivity_l1 == 3.0


def test_normal_with_a_truncated_precision():
    """τ ∈ [1/4, 4] so σ ∈ [1/2, 2]; shared (μ, σ): 15/(2·(1/2)²) = 30."""
    with pm.Model() as model:
        y_obs = PrivateData("y_obs", np.linspace(-1, 2, N), bounds=(-1, 2))
        mu = TruncatedNormal("mu", 0, 1, lower=-0.5, upper=3)
        tau = TruncatedGamma("tau", 2, 1, lower=0.25, upper=4)
        pm.Normal("y", mu, tau=tau, observed=y_obs)
    analysis = analyze(model)
    assert analysis.record_lipschitz == pytest.approx(30.0, rel=1e-12)
    assert analysis.block_lipschitz == {"mu": 30.0, "tau": 30.0}
    sigma = analysis.terms[0].parameters["sigma"]
    assert (sigma.free_variable, sigma.link, sigma.prior_family) == ("tau", "inverse_sqrt", "gamma")
    assert [s.name for s in analysis.statistics] == ["sum(y_obs)", "sum_squares(y_obs)"]


def test_linear_regression_bound():
    """|y| ≤ By = 2, x ∈ [−1, 1]³ so ‖x‖₂ ≤ Bx = √3, ‖w‖₂ ≤ R = 2, σ = 1.5:
    L = (By + Bx·R)²/(2σ²) (docs: costs-lipschitz-table), attained with y = −By and x ∥ w."""
    with pm.Model() as model:
        x_obs = PrivateData("X", np.zeros((N, 3)), bounds=(-1, 1))
        y_obs = PrivateData("y_obs", np.zeros(N), bounds=(-2, 2))
        w = TruncatedMvNormal("w", np.zeros(3), np.eye(3), radius=2.0)
        pm.Normal("y", x_obs @ w, 1.5, observed=y_obs)
    analysis = analyze(model)
    expected = (2 + math.sqrt(3) * 2) ** 2 / (2 * 1.5**2)
    assert analysis.record_lipschitz == pytest.approx(expected, rel=1e-12)
    assert [s.name for s in analysis.statistics] == ["gram(X)", "cross(X, y_obs)"]
    assert analysis.sensitivity_l1 == pytest.approx(9.0 + 12.0)


def test_logistic_regression_is_bounded_by_bx_times_r():
    """p = sigmoid(xᵀw), |xᵀw| ≤ Bx·R = c: L = log(σ(c)/σ(−c)) = c; no statistics."""
    with pm.Model() as model:
        x_obs = PrivateData("X", np.zeros((N, 2)), bounds=(0, 1))
        y_obs = PrivateData("y_obs", np.arange(N) % 2, bounds=(0, 1))
        w = TruncatedMvNormal("w", np.zeros(2), np.eye(2), radius=3.0)
        pm.Bernoulli("y", logit_p=x_obs @ w, observed=y_obs)
    analysis = analyze(model)
    assert analysis.record_lipschitz == pytest.approx(math.sqrt(2) * 3.0, rel=1e-10)
    assert analysis.sensitivity_l1 is None
    assert "y" in analysis.statistics_unavailable
    assert analysis.routes == ("posterior_sampling", "gibbs", "metropolis")
    with pytest.raises(UnsupportedModelError, match="privatize route is not available"):
        analysis.epsilon_per_draw("privatize")


def test_hierarchical_means_grouped_by_a_private_index():
    """μ_g ∈ [−1, 1] selected by the record's group, σ = 0.5, y ∈ [0, 1]:
    (dmax² − dmin²)/(2σ²) = (2² − 0)/0.5 = 8. Δ₁: group sizes 2 (three groups) + 2·max|y| = 2."""
    with pm.Model() as model:
        g = PrivateData("g", np.arange(N) % 3, bounds=(0, 2))
        y_obs = PrivateData("y_obs", np.linspace(0, 1, N), bounds=(0, 1))
        mu = TruncatedNormal("mu", 0, 1, lower=-1, upper=1, shape=3)
        pm.Normal("y", mu[g], 0.5, observed=y_obs)
    analysis = analyze(model)
    assert analysis.record_lipschitz == pytest.approx(8.0)
    assert [s.name for s in analysis.statistics] == ["counts(g)", "sum(y_obs | g)"]
    assert analysis.sensitivity_l1 == 4.0
    assert analysis.terms[0].group_by == "g"


def test_identical_analyses_for_different_data(make_naive_bayes, rng):
    first = make_naive_bayes(rng.integers(0, 2, N), rng.integers(0, 2, (N, 3)), 0.1)
    second = make_naive_bayes(1 - np.arange(N) % 2, np.ones((N, 3), dtype=int), 0.1)
    one, two = analyze(first), analyze(second)
    assert one == two
    assert repr(one) == repr(two)
    assert one._repr_html_() == two._repr_html_()
    assert one.to_dict() == two.to_dict()
    assert analyze(clone_model(first)) == one


def test_table_and_clipping_report(make_naive_bayes, rng):
    features = rng.integers(0, 2, (N, 2))
    features[0, 0] = 5
    model = make_naive_bayes(rng.integers(0, 2, N), features, 0.1, out_of_bounds="clip")
    analysis = analyze(model)
    assert analysis.clipped == ("y_obs", "x_obs")
    assert analysis.clipping_requested
    text = repr(analysis)
    for fragment in ("clipping: `y_obs`, `x_obs`", "counts(x_obs | y_obs)", "Σ_j 2L_j/T", "2L/T"):
        assert fragment in text
    assert f"{analysis.record_lipschitz:.6g}" in text
    # A model that pays once is not told about subsampled per-draw chains.
    assert "sampling_rate" not in text
    html = analysis._repr_html_()
    assert html.count("<table>") == 4
    assert "<td>theta</td>" in html
    assert not analyze(make_naive_bayes(np.zeros(N, int), np.zeros((N, 2), int), 0.1)).clipped


def test_invalid_route_and_temperature(make_naive_bayes):
    analysis = analyze(make_naive_bayes(np.zeros(N, int), np.zeros((N, 2), int), 0.1))
    with pytest.raises(InvalidPrivacyParameterError, match="temperature"):
        analysis.epsilon_per_draw("gibbs", temperature=0.5)
    with pytest.raises(InvalidPrivacyParameterError, match="temperature"):
        analysis.epsilon_per_draw("metropolis", temperature=math.inf)
    with pytest.raises(UnsupportedModelError, match="routes: posterior_sampling"):
        analysis.epsilon_per_draw("nuts")
    with pytest.raises(UnsupportedModelError, match=r"Not free variables of the model: \['beta'\]"):
        analysis.lipschitz_for(["beta"])


# -- refusals ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "fragments"),
    [
        (
            lambda: beta_bernoulli(0.1, prior=lambda: pm.Beta("theta", 1, 1)),
            [
                "`theta`",
                "[a, 1 − a]",
                "pmp.TruncatedBeta('theta', alpha, beta, lower=a, upper=1 - a)",
            ],
        ),
        (
            lambda: beta_bernoulli(0.1, prior=lambda: pm.Uniform("theta", 0, 1)),
            ["`theta`", "pmp.TruncatedBeta('theta'"],
        ),
    ],
)
def test_untruncated_probability_is_refused(build, fragments):
    with pytest.raises(UnboundedSensitivityError) as info:
        analyze(build())
    for fragment in fragments:
        assert fragment in str(info.value)


def test_unbounded_priors_name_the_truncated_prior_to_use():
    cases = []
    with pm.Model() as dirichlet:
        y_obs = PrivateData("y_obs", np.arange(N) % 3, bounds=(0, 2))
        pm.Categorical("y", p=pm.Dirichlet("p", np.ones(3)), observed=y_obs)
    cases.append((dirichlet, "pmp.TruncatedDirichlet('p', a=..., min_prob=a)"))
    with pm.Model() as normal:
        y_obs = PrivateData("y_obs", np.zeros(N), bounds=(-1, 1))
        pm.Normal("y", pm.Normal("m", 0, 1), 1.0, observed=y_obs)
    cases.append((normal, "pmp.TruncatedNormal('m', mu, sigma, lower=m1, upper=m2)"))
    with pm.Model() as scale:
        y_obs = PrivateData("y_obs", np.zeros(N), bounds=(-1, 1))
        pm.Normal("y", 0.0, pm.HalfNormal("s", 1), observed=y_obs)
    cases.append((scale, "pmp.TruncatedGamma('s', alpha, beta, lower=s1, upper=s2)"))
    with pm.Model() as rate:
        y_obs = PrivateData("y_obs", np.zeros(N), bounds=(0, 1))
        pm.Exponential("y", pm.Exponential("lam", 1.0), observed=y_obs)
    cases.append((rate, "pmp.TruncatedExponential('lam', lam, lower=c1, upper=c2)"))
    with pm.Model() as weights:
        x_obs = PrivateData("X", np.zeros((N, 2)), bounds=(-1, 1))
        y_obs = PrivateData("y_obs", np.zeros(N), bounds=(-1, 1))
        pm.Normal("y", x_obs @ pm.MvNormal("w", np.zeros(2), np.eye(2)), 1.0, observed=y_obs)
    cases.append((weights, "pmp.TruncatedMvNormal('w', mu, cov, radius=R)"))
    for model, fix in cases:
        with pytest.raises(UnboundedSensitivityError) as info:
            analyze(model)
        assert fix in str(info.value)
    with pytest.raises(UnboundedSensitivityError) as info:
        analyze(scale)
    assert "pmp.TruncatedGamma('tau', alpha, beta, lower=1/s2**2, upper=1/s1**2)" in str(info.value)


@pytest.mark.slow
def test_the_suggested_precision_form_runs_on_every_route_it_names():
    # The fix the HalfNormal scale's refusal suggests first: a truncated Gamma precision.
    data = np.random.default_rng(4).normal(0.0, 0.8, N).clip(-1, 1)
    with pm.Model() as model:
        y_obs = PrivateData("y_obs", data, bounds=(-1, 1))
        tau = TruncatedGamma("tau", 2.0, 1.0, lower=1 / 2**2, upper=1 / 0.1**2)
        pm.Normal("y", 0.0, tau=tau, observed=y_obs)
    point = model.initial_point()
    with model:
        for step in (PrivateGibbs(secure=False), PrivateMetropolis(secure=False)):
            step.setup_chain(np.random.default_rng(5), tune=0, draws=0)
            new_point, _ = step.step(point)
            assert np.isfinite(new_point["tau_interval__"])
    private = privatize(model, 1.0, noise_aware=False, secure=False, random_seed=6)
    with private:
        step = PrivateGibbs()
    assert [block.family for block in step.blocks] == [GAMMA]


def test_bounds_beyond_the_support_name_the_data_and_the_bounds():
    with pm.Model() as model:
        y_obs = PrivateData("y_obs", np.arange(N) % 2, bounds=(0, 3))
        pm.Bernoulli("y", TruncatedBeta("p", 1, 1, lower=0.1, upper=0.9), observed=y_obs)
    with pytest.raises(
        UnboundedSensitivityError, match=r"`y_obs`.*declare bounds.*bounds=\(0, 1\)"
    ):
        analyze(model)
    with pm.Model() as negative:
        y_obs = PrivateData("y_obs", np.zeros(N), bounds=(-1, 2))
        pm.Exponential("y", TruncatedGamma("lam", 1, 1, lower=1, upper=2), observed=y_obs)
    with pytest.raises(UnboundedSensitivityError, match=r"bounds=\(0, B\) with a finite B"):
        analyze(negative)


def test_unknown_family_lists_the_supported_ones():
    with pm.Model() as model:
        y_obs = PrivateData("y_obs", np.zeros(N), bounds=(-1, 1))
        m = TruncatedNormal("m", 0, 1, lower=-1, upper=1)
        pm.StudentT("y", nu=3, mu=m, sigma=1, observed=y_obs)
    with pytest.raises(UnsupportedModelError, match="StudentTRV") as info:
        analyze(model)
    for family in ("Bernoulli", "Categorical", "Poisson", "Exponential", "Normal (sigma a"):
        assert family in str(info.value)


@pytest.mark.parametrize("raw", ["numpy", "pm.Data"])
def test_raw_observed_data_next_to_private_data_is_refused(raw):
    with pm.Model() as model:
        y_obs = PrivateData("y_obs", np.arange(N) % 2, bounds=(0, 1))
        p = TruncatedBeta("p", 1, 1, lower=0.1, upper=0.9)
        pm.Bernoulli("y", p, observed=y_obs)
        other = np.ones(N, dtype=int) if raw == "numpy" else pm.Data("z_obs", np.ones(N, int))
        pm.Bernoulli("z", p, observed=other)
    with pytest.raises(UnsupportedModelError, match=r"`z` observes .*pmp\.PrivateData"):
        analyze(model)


def test_model_without_private_data_is_refused():
    with pm.Model() as model:
        pm.Bernoulli("y", TruncatedBeta("p", 1, 1, lower=0.1, upper=0.9), observed=np.ones(3))
    with pytest.raises(UnsupportedModelError, match="no PrivateData"):
        analyze(model)


def test_private_data_outside_the_likelihood_is_refused():
    with pm.Model() as model:
        y_obs = PrivateData("y_obs", np.linspace(0, 1, N), bounds=(0, 1))
        m = TruncatedNormal("m", 0, 1, lower=-1, upper=1)
        pm.Normal("y", m, 1.0, observed=y_obs)
        pm.Deterministic("leak", y_obs.mean())
    with pytest.raises(UnsupportedModelError, match="Deterministic `leak` depends on PrivateData"):
        analyze(model)


def test_the_probabilities_pymc_adds_to_an_ordinal_logit_are_refused_with_how_to_drop_them():
    labels = np.arange(N) % 3
    x = np.linspace(-1, 1, N)[:, None]

    def ordinal(eta, **kwargs):
        with pm.Model() as model:
            x_obs = PrivateData("x_obs", x, bounds=(-1, 1))
            y_obs = PrivateData("y_obs", labels, bounds=(0, 2))
            w = TruncatedNormal("w", 0, 1, lower=-1, upper=1, shape=1)
            cutpoints = pm.Normal("c", [-1, 1], 1, transform=pm.distributions.transforms.ordered)
            pm.OrderedLogistic("y", eta(x_obs, w), cutpoints, observed=y_obs, **kwargs)
        return model

    with pytest.raises(
        UnsupportedModelError,
        match=r"Deterministic `y_probs` depends on PrivateData `x_obs`.*PyMC made it "
        r"\(pm\.OrderedLogistic.*pass compute_p=False to turn it off",
    ):
        refuse_private_paths(ordinal(lambda x_obs, w: x_obs @ w))
    refuse_private_paths(ordinal(lambda x_obs, w: x_obs @ w, compute_p=False))
    refuse_private_paths(ordinal(lambda x_obs, w: w[0]))  # parameters only: released freely


def test_a_softmax_logit_has_the_softmax_interval_bound_which_brute_force_attains():
    """z = x·W_k in [−4, 4] (‖x‖∞ ≤ 1, |W| ≤ 2, two covariates), K = 3: every entry of
    softmax(z) lies in [1/(1 + 2e⁸), 1/(1 + 2e⁻⁸)], so L = ln((1 + 2e⁸)/(1 + 2e⁻⁸));
    no pair of records exceeds it, and x = ±(1, 1) with W's columns at ±(2, 2) attains it."""
    rng = np.random.default_rng(5)
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", rng.uniform(-1, 1, (N, 2)), bounds=(-1, 1))
        y_obs = PrivateData("y_obs", np.arange(N) % 3, bounds=(0, 2))
        W = TruncatedNormal("W", 0, 1, lower=-2, upper=2, shape=(2, 3))
        pm.Categorical("y", p=pm.math.softmax(x_obs @ W, axis=-1), observed=y_obs)
    bound = analyze(model).record_lipschitz
    assert bound == pytest.approx(math.log((1 + 2 * math.exp(8)) / (1 + 2 * math.exp(-8))))

    def log_softmax(x, weights):
        z = x @ weights
        return z - np.logaddexp.reduce(z, axis=-1, keepdims=True)

    weights = rng.uniform(-2, 2, (2000, 2, 3))
    first = log_softmax(rng.uniform(-1, 1, (2000, 1, 2)), weights)[:, 0]
    second = log_softmax(rng.uniform(-1, 1, (2000, 1, 2)), weights)[:, 0]
    spread = first.max(axis=-1) - second.min(axis=-1)
    assert spread.max() <= bound
    corner = np.array([[2.0, -2.0, -2.0], [2.0, -2.0, -2.0]])
    attained = log_softmax(np.ones(2), corner)[0] - log_softmax(-np.ones(2), corner)[0]
    assert attained == pytest.approx(bound, rel=1e-12)


def float_labels(values, bounds=(0, 1)):
    with pm.Model() as model:
        y_obs = PrivateData("y_obs", np.asarray(values, dtype=float), bounds=bounds)
        pm.Bernoulli("y", TruncatedBeta("p", 1, 1, lower=0.1, upper=0.9), observed=y_obs)
    return model


def test_float_labels_that_are_integers_within_integer_bounds_are_analysed_as_integers():
    labels = np.arange(N) % 2
    with pm.Model() as integers:
        y_obs = PrivateData("y_obs", labels, bounds=(0, 1))
        pm.Bernoulli("y", TruncatedBeta("p", 1, 1, lower=0.1, upper=0.9), observed=y_obs)
    floats, reference = analyze(float_labels(labels)), analyze(integers)
    assert floats.record_lipschitz == reference.record_lipschitz == math.log(0.9 / 0.1)
    assert floats.sensitivity_l1 == reference.sensitivity_l1 == 1.0
    assert floats.terms[0].domains == reference.terms[0].domains


def test_float_labels_that_are_not_integers_are_refused_by_row_before_any_release():
    labels = (np.arange(N) % 2).astype(float)
    labels[7] = 0.5
    model = float_labels(labels)
    before = len(ledger_for(model).releases)
    message = r"`y_obs`: row 7, column 0 \(one value per record\) is not an integer"
    with pytest.raises(DataBoundsError, match=message) as refusal:
        analyze(model)
    assert "0.5" not in str(refusal.value)
    with pytest.raises(DataBoundsError, match=message):
        privatize(model, epsilon=1.0)
    assert len(ledger_for(model).releases) == before
    with pytest.raises(DataBoundsError, match=r"`y_obs`.*float dtype and bounds that are not "):
        analyze(float_labels(np.zeros(N), bounds=(0, 0.5)))
    with pm.Model() as clipped:
        y_obs = PrivateData("y_obs", np.zeros(N), bounds=(0, 1), out_of_bounds="clip")
        pm.Bernoulli("y", TruncatedBeta("p", 1, 1, lower=0.1, upper=0.9), observed=y_obs)
    with pytest.raises(DataBoundsError, match=r"`y_obs`.*out_of_bounds='clip', which never"):
        analyze(clipped)


def test_out_of_range_group_index_is_refused():
    with pm.Model() as index:
        g = PrivateData("g", np.arange(N) % 2, bounds=(0, 3))
        y_obs = PrivateData("y_obs", np.zeros(N), bounds=(0, 1))
        mu = TruncatedNormal("mu", 0, 1, lower=-1, upper=1, shape=2)
        pm.Normal("y", mu[g], 1.0, observed=y_obs)
    with pytest.raises(
        DataBoundsError, match=r"`g` indexes axis 0 \(length 2\) of `mu`.*bounds=\(0, 1\)"
    ):
        analyze(index)


def _sigmoid(x):
    return pm.math.sigmoid(x)


def normal_mean(g_bounds, build, g_values=None):
    """A Normal likelihood on PrivateData whose mean ``build(g, mu)`` reads the private index
    ``g``; ``mu`` is a truncated normal of shape (2, 3)."""
    g_values = np.arange(N) % 2 if g_values is None else g_values
    with pm.Model() as model:
        g = PrivateData("g", g_values, bounds=g_bounds)
        y_obs = PrivateData("y_obs", np.zeros(N), bounds=(0, 1))
        mu = TruncatedNormal("mu", 0, 1, lower=-1, upper=1, shape=(2, 3))
        pm.Normal("y", build(g, mu), 1.0, observed=y_obs)
    return model


INDEX_FORMS = {
    "2 * mu[:, 0] indexed": (lambda g, mu: (2 * mu[:, 0])[g], 0, 2, "an expression of `mu`"),
    "mu[g, :]": (lambda g, mu: mu[g, :][:, 0], 0, 2, "`mu`"),
    "mu[g, 0]": (lambda g, mu: mu[g, 0], 0, 2, "`mu`"),
    "mu[:, g]": (lambda g, mu: mu[:, g][0], 1, 3, "`mu`"),
    "mu[None, :, g]": (lambda g, mu: mu[None, :, g][0, 0], 1, 3, "`mu`"),
    "mu[..., g]": (lambda g, mu: mu[..., g][1], 1, 3, "`mu`"),
    "sigmoid(mu)[g]": (lambda g, mu: _sigmoid(mu)[g, 1], 0, 2, "an expression of `mu`"),
    "constant[g]": (
        lambda g, mu: pt.as_tensor(np.array([0.1, 0.2, 0.3]))[g] + mu[0, 0],
        0,
        3,
        "a constant array",
    ),
    "mu[g, g]": (lambda g, mu: mu[g, g], 0, 2, "`mu`"),
}


@pytest.mark.parametrize("form", list(INDEX_FORMS))
@pytest.mark.parametrize("bounds", [(0, 5), (-1, 1)], ids=["above", "negative"])
def test_every_private_index_is_checked_against_the_axis_it_indexes(form, bounds):
    """The audit's cases: only a bare ``theta[y]`` was checked. Elsewhere an index beyond the
    axis failed at run time for some records only, and a negative one silently read another
    group. Refused from the shapes and the declared bounds, before any value is read, with
    the bounds to declare; the same for any data."""
    build, axis, length, what = INDEX_FORMS[form]
    bounds = (bounds[0], min(bounds[1], length - 1)) if bounds[0] < 0 else bounds
    match = (
        rf"PrivateData `g` indexes axis {axis} \(length {length}\) of {what} in the "
        rf"parameters of `y`, but its declared bounds \[{bounds[0]}, {bounds[1]}\] reach outside "
        rf"\[0, {length - 1}\]: .*declare bounds=\(0, {length - 1}\)"
    )
    for values in (np.arange(N) % 2, np.zeros(N, int)):
        with pytest.raises(DataBoundsError, match=match):
            analyze(normal_mean(bounds, build, values))


@pytest.mark.parametrize("form", list(INDEX_FORMS))
def test_private_indices_within_their_axis_are_analysed(form):
    build, *_ = INDEX_FORMS[form]
    one = analyze(normal_mean((0, 1), build))
    two = analyze(normal_mean((0, 1), build, np.ones(N, int)))
    assert one == two
    assert math.isfinite(one.record_lipschitz)


def test_only_whole_rows_of_a_free_variable_keep_the_group_structure():
    """``mu[g]`` and ``mu[g, :]`` select rows of ``mu`` (grouped statistics); ``mu[g, 0]`` is a
    column of them, which no grouped statistic of shape (2, 3) describes."""
    rows = analyze(normal_mean((0, 1), lambda g, mu: mu[g, :][:, 0]))
    assert rows.terms[0].group_by is None
    with pm.Model() as model:
        g = PrivateData("g", np.arange(N) % 2, bounds=(0, 1))
        y_obs = PrivateData("y_obs", np.zeros((N, 3)), bounds=(0, 1))
        mu = TruncatedNormal("mu", 0, 1, lower=-1, upper=1, shape=(2, 3))
        pm.Normal("y", mu[g, :], 1.0, observed=y_obs)
    assert analyze(model).terms[0].group_by == "g"
    column = analyze(normal_mean((0, 1), lambda g, mu: mu[g, 0]))
    assert column.terms[0].group_by is None
    assert column.terms[0].parameters["mu"].shape == (N,)


def test_statistics_rebuild_the_log_likelihood(make_naive_bayes, rng):
    """The pay-once pipeline without noise: released cells → completed statistics → each
    node's log-likelihood from statistics equals the log-likelihood of the raw data."""
    labels, features = rng.integers(0, 2, N), rng.integers(0, 2, (N, 3))
    analysis = analyze(make_naive_bayes(labels, features, 0.1))
    arrays = {"y_obs": labels, "x_obs": features}
    released = {spec.name: spec.compute(arrays) for spec in analysis.statistics}
    values = {"pi": 0.3, "theta": np.array([[0.2, 0.5, 0.9], [0.6, 0.4, 0.1]])}
    total = 0.0
    for term in analysis.terms:
        group = term.totals_statistic()
        totals = N if group is None else complete_statistic(group, released[group.name], N)
        full = {
            kind: complete_statistic(spec, released[spec.name], totals)
            for kind, spec in analysis.statistics_of(term.node).items()
        }
        parameters = {"p": values[term.parameters["p"].free_variable]}
        total += term.family.logp_from_statistics(term, parameters, full, totals)
    exact = stats.bernoulli.logpmf(labels, 0.3).sum()
    exact += stats.bernoulli.logpmf(features, values["theta"][labels]).sum()
    assert total == pytest.approx(exact, rel=1e-12)


def test_data_replaced_after_declaration_is_refused(make_naive_bayes):
    model = make_naive_bayes(np.zeros(N, int), np.zeros((N, 2), int), 0.1)
    with model:
        pm.set_data({"y_obs": np.zeros(N + 1, int)})
    with pytest.raises(DataBoundsError, match=r"`y_obs` no longer has the shape.*pm\.set_data"):
        analyze(model)


def test_values_replaced_with_set_data_are_checked_against_the_bounds():
    """The reviewer's case: same shape, a value far outside [0, 1] (L would not hold)."""
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", np.full(10, 0.5), bounds=(0.0, 1.0))
        mu = TruncatedNormal("mu", 0, 1, lower=-1, upper=1)
        pm.Normal("y", mu, 1.0, observed=x_obs)
        pm.set_data({"x_obs": np.concatenate([[1000.0], np.full(9, 0.5)])})
    with pytest.raises(DataBoundsError, match=r"`x_obs`: row 0, .* outside the declared bounds"):
        analyze(model)


# -- private data reaching the model through an observed variable ----------------------------


def observed_bernoulli(extra):
    """Beta–Bernoulli on PrivateData, then ``extra(y, p, x_obs)`` inside the model."""
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", np.arange(N) % 2, bounds=(0, 1))
        p = TruncatedBeta("p", 1, 1, lower=0.1, upper=0.9)
        y = pm.Bernoulli("y", p, observed=x_obs)
        extra(y, p, x_obs)
    return model


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (
            lambda y, p, x: pm.Deterministic("leak", y.sum() + 0.0 * p),
            r"Deterministic `leak` depends on the observed variable `y` .*Remove it",
        ),
        (
            lambda y, p, x: pm.Potential("pot", 50.0 * y.sum() * p),
            r"Potential `pot` depends on the observed variable `y` .*Remove it",
        ),
        (
            lambda y, p, x: TruncatedNormal("m", y.mean(), 1, lower=-1, upper=1),
            r"prior of `m` depends on the observed variable `y`.*public parameters",
        ),
        (
            lambda y, p, x: TruncatedNormal("m", 0, 1, lower=-1, upper=1, initval=y.mean()),
            r"initial value of `m` depends on the observed variable `y`.*constant initval",
        ),
        (
            lambda y, p, x: TruncatedNormal("m", 0, 1, lower=-1, upper=1, initval=x.mean()),
            r"initial value of `m` depends on PrivateData `x_obs`",
        ),
    ],
    ids=["deterministic", "potential", "prior", "initval via y", "initval via data"],
)
def test_observed_variables_are_private_outside_the_likelihood(extra, match):
    """PyMC evaluates Deterministics, Potentials, priors and initial values with each
    observed variable replaced by its data: ``y.sum()`` is the sum of the private data."""
    model = observed_bernoulli(extra)
    with pytest.raises(UnsupportedModelError, match=match):
        refuse_private_paths(model)
    with pytest.raises(UnsupportedModelError, match=match):
        analyze(model)


def test_observed_variables_in_likelihood_parameters_are_refused():
    """An observed variable as a group index or inside a parameter is its data in
    disguise: refused, with the PrivateData to use instead."""
    as_index = observed_bernoulli(
        lambda y, p, x: pm.Normal(
            "z",
            TruncatedNormal("mu", 0, 1, lower=-1, upper=1, shape=2)[y],
            1.0,
            observed=PrivateData("z_obs", np.zeros(N), bounds=(0, 1)),
        )
    )
    in_mean = observed_bernoulli(
        lambda y, p, x: pm.Normal(
            "z", p + y, 1.0, observed=PrivateData("z_obs", np.zeros(N), bounds=(0, 1))
        )
    )
    for model in (as_index, in_mean):
        with pytest.raises(
            UnsupportedModelError,
            match=r"`z` read the observed variable `y`.*PrivateData itself.*theta\[x_obs\]",
        ):
            analyze(model)


def test_shapes_and_parameters_of_observed_variables_stay_public():
    model = observed_bernoulli(
        lambda y, p, x: (pm.Deterministic("n", y.shape[0] + 0 * p), pm.Deterministic("q", 2 * p))
    )
    assert refuse_private_paths(model) is None
    assert analyze(model).record_lipschitz == pytest.approx(math.log(9.0))


# -- norm-ball weights ---------------------------------------------------------------------


def test_ball_radius_bounds_only_a_single_weight_vector():
    """The reviewer's numbers: W of shape (d, k) = (4, 2) with every row in the ball of
    radius R = 1, x ∈ [−1, 1]⁴, y ∈ [−1, 1]², σ = 1. ``X @ W`` sums down the columns: W with
    rows (1, 0) and x = 1 give μ₀ = 4 = d·R, beyond Bx·R = 2. The box bound |μ| ≤ d·1·1 = 4
    holds; L = k·(1 + 4)²/2 = 25, attained at y₀ = −1, μ₀ = 4 against y₀ = 1, μ₀ = 4."""
    n, d, k, radius = 5, 4, 2, 1.0
    with pm.Model() as model:
        x_obs = PrivateData("X", np.zeros((n, d)), bounds=(-1.0, 1.0))
        y_obs = PrivateData("Y", np.zeros((n, k)), bounds=(-1.0, 1.0))
        w = TruncatedMvNormal("W", mu=np.zeros(k), cov=np.eye(k), radius=radius, shape=(d, k))
        pm.Normal("y", x_obs @ w, 1.0, observed=y_obs)
    analysis = analyze(model)
    mu = analysis.term("y").parameters["mu"].interval
    weights = radius * np.column_stack([np.ones(d), np.zeros(d)])
    witness = (np.ones(d) @ weights)[0]
    assert witness == 4.0
    assert (mu.lower, mu.upper) == (-4.0, 4.0)
    per_element = stats.norm.logpdf(-1.0, witness, 1.0) - stats.norm.logpdf(1.0, witness, 1.0)
    assert abs(per_element) == pytest.approx(8.0)
    assert analysis.record_lipschitz == pytest.approx(k * (1 + 4) ** 2 / 2)


def test_ball_radius_does_not_bound_a_transformed_vector():
    """``1 / w`` is unbounded near w = 0 although ‖w‖₂ ≤ R."""
    with pm.Model() as model:
        x_obs = PrivateData("X", np.zeros((N, 3)), bounds=(-1.0, 1.0))
        y_obs = PrivateData("y_obs", np.zeros(N), bounds=(-1.0, 1.0))
        w = TruncatedMvNormal("w", np.zeros(3), np.eye(3), radius=1.0)
        pm.Normal("y", x_obs @ (1 / w), 1.0, observed=y_obs)
    with pytest.raises(UnboundedSensitivityError, match="`w`"):
        analyze(model)


# -- large integer domains -----------------------------------------------------------------


def brute_force_range(logpmf, xs, low, high, varying, critical):
    """L of one element by enumeration of every x and a fine grid of θ: sup over θ of the
    range over x (fixed θ, extreme at an end of [low, high]), or the joint range (varying
    θ; log p(x | θ) is concave in θ, maximal at θ = critical(x) clipped into [low, high])."""
    grid = np.linspace(low, high, 401)
    table = logpmf(xs[:, None], grid[None, :])
    if not varying:
        return float(np.max(np.ptp(table, axis=0)))
    peaks = logpmf(xs, np.clip(critical(xs), low, high))
    return float(max(table.max(), peaks.max()) - table.min())


@pytest.mark.parametrize("varying", [False, True], ids=["fixed", "varying"])
def test_poisson_and_binomial_evaluate_only_candidate_points_exactly(varying):
    """Endpoints and the integers next to the turning points give the same L as
    enumerating every x, on random domains and parameter intervals."""
    rng = np.random.default_rng(7)
    for _ in range(40):
        lo, hi = sorted(rng.integers(0, 60, 2))
        c1, c2 = sorted(rng.uniform(0.05, 70, 2))
        lam = ParameterTerm("mu", Interval(c1, c2), varies_with_record=varying)
        xs = np.arange(lo, hi + 1.0)
        expected = brute_force_range(stats.poisson.logpmf, xs, c1, c2, varying, lambda x: x)
        value = Poisson().log_likelihood_range({"mu": lam}, ElementDomain(lo, hi, True))
        assert value == pytest.approx(expected, rel=1e-9, abs=1e-9)
        m = int(rng.integers(max(hi, 1), 80))
        a, b = sorted(rng.uniform(0.01, 0.99, 2))
        parameters = {
            "n": ParameterTerm("n", Interval(m, m), constant=np.array(m)),
            "p": ParameterTerm("p", Interval(a, b), varies_with_record=varying),
        }
        expected = brute_force_range(
            lambda x, t, m=m: stats.binom.logpmf(x, m, t), xs, a, b, varying, lambda x, m=m: x / m
        )
        value = Binomial().log_likelihood_range(parameters, ElementDomain(lo, hi, True))
        assert value == pytest.approx(expected, rel=1e-9, abs=1e-9)


def test_huge_count_bounds_are_analysed_without_enumeration():
    """Poisson counts declared in [0, 10⁹] with λ ∈ [0.5, 4]: the range of log p(x | λ) over
    x is log p(⌊λ⌋ | λ) − log p(10⁹ | λ), largest at λ = 0.5. Binomial with 10⁹ trials and
    p ∈ [0.2, 0.8] over x ∈ [0, 10⁹]: the mode against an end, at p = 0.8."""
    big = 10**9
    with pm.Model() as poisson:
        y_obs = PrivateData("y_obs", np.arange(N), bounds=(0, big))
        pm.Poisson("y", TruncatedGamma("lam", 2, 1, lower=0.5, upper=4.0), observed=y_obs)
    expected = max(
        stats.poisson.logpmf(math.floor(lam), lam) - stats.poisson.logpmf(big, lam)
        for lam in (0.5, 4.0)
    )
    assert analyze(poisson).record_lipschitz == pytest.approx(expected, rel=1e-12)
    with pm.Model() as binomial:
        y_obs = PrivateData("y_obs", np.arange(N), bounds=(0, big))
        pm.Binomial("y", big, TruncatedBeta("p", 2, 2, lower=0.2, upper=0.8), observed=y_obs)
    expected = stats.binom.logpmf(round(0.8 * big), big, 0.8) - stats.binom.logpmf(0, big, 0.8)
    assert analyze(binomial).record_lipschitz == pytest.approx(expected, rel=1e-9)
    with pytest.raises(UnsupportedModelError, match=r"holds 1e\+09 values.*tighter bounds"):
        ElementDomain(1, big, True).values()


# -- numeric initial values ------------------------------------------------------------------


def with_prior(prior):
    """Beta–Bernoulli on PrivateData plus ``prior()`` (which may carry an initval)."""

    def priors():
        prior()
        return TruncatedBeta("theta", 2, 2, lower=0.1, upper=0.9)

    return beta_bernoulli(0.1, prior=priors)


@pytest.mark.parametrize(
    ("prior", "match"),
    [
        (
            lambda: TruncatedBeta("p", 1, 1, lower=0.1, upper=0.9, initval=np.nan),
            r"`p` is not finite \(NaN or infinite\)",
        ),
        (
            lambda: TruncatedNormal("p", 0, 1, lower=-1, upper=1, initval=np.inf),
            r"`p` is not finite",
        ),
        (
            lambda: TruncatedBeta("p", 1, 1, lower=0.1, upper=0.9, initval=0.9),
            r"`p` is not strictly inside the support \[0.1, 0.9\] of its prior \(a point on its "
            "boundary",
        ),
        (
            lambda: TruncatedBeta("p", 1, 1, lower=0.1, upper=0.9, initval=2.0),
            r"`p` is not strictly inside the support \[0.1, 0.9\]",
        ),
        (
            lambda: TruncatedNormal("p", 0, 1, lower=-1, upper=1, shape=3, initval=[0, 0, -1.5]),
            r"`p` is not strictly inside the support \[-1, 1\] of its prior at index \(2,\)",
        ),
        (
            lambda: TruncatedGamma("p", 2, 1, lower=0.5, upper=4.0, initval=pt.constant(0.25)),
            r"`p` is not strictly inside the support \[0.5, 4\]",
        ),
        (
            lambda: pm.HalfNormal("p", 1.0, initval=0.0),
            r"`p` is not strictly inside the support \[0, inf\]",
        ),
        (
            lambda: TruncatedDirichlet("p", a=np.ones(3), min_prob=0.1, initval=[0.3, 0.3, 0.3]),
            r"`p` does not sum to 1 along its last axis",
        ),
        (
            lambda: TruncatedDirichlet("p", a=np.ones(3), min_prob=0.1, initval=[0.5, 0.1, 0.4]),
            r"`p` is not strictly inside the support \[0.1, 0.8\] of its prior at index \(1,\)",
        ),
        (
            lambda: TruncatedMvNormal("p", np.zeros(2), np.eye(2), radius=1.0, initval=[0.8, 0.8]),
            r"`p` has a norm of at least the radius 1 of its prior's ball",
        ),
    ],
    ids=[
        "nan",
        "inf",
        "boundary",
        "outside",
        "vector",
        "symbolic constant",
        "halfnormal",
        "simplex sum",
        "simplex entry",
        "ball",
    ],
)
def test_invalid_numeric_initial_values_are_refused_before_the_data_is_read(prior, match):
    """The audit's case: initvals went unchecked, and PyMC fails on a bad start point with
    the log-density of every variable, observed ones included. Refused by name from the
    constants alone: here even data stored against its declaration is not looked at."""
    model = with_prior(prior)
    model["y_obs"].container.storage[0] = np.full(N, 7, dtype=np.int32)
    with pytest.raises(UnsupportedModelError, match=match + r".*initval strictly inside"):
        analyze(model)


@pytest.mark.parametrize(
    "prior",
    [
        lambda: TruncatedBeta("p", 1, 1, lower=0.1, upper=0.9, initval=0.5),
        lambda: TruncatedNormal("p", 0, 1, lower=-1, upper=1, shape=3, initval=[0, 0.5, -0.99]),
        lambda: TruncatedDirichlet("p", a=np.ones(3), min_prob=0.1, initval=[0.5, 0.3, 0.2]),
        lambda: TruncatedMvNormal("p", np.zeros(2), np.eye(2), radius=1.0, initval=[0.6, 0.6]),
        lambda: pm.Normal("p", 0, 1, initval=1e6),
        lambda: TruncatedBeta("p", 1, 1, lower=0.1, upper=0.9, initval="prior"),
    ],
    ids=["scalar", "vector", "simplex", "ball", "unbounded", "strategy"],
)
def test_valid_initial_values_are_accepted(prior):
    analysis = analyze(with_prior(prior))
    assert analysis.record_lipschitz == pytest.approx(math.log(9.0))


def _non_centred(deterministic: bool):
    groups = np.repeat(np.arange(5), 4)
    values = np.linspace(-2.0, 2.0, 20)
    with pm.Model() as model:
        g_obs = PrivateData("g_obs", groups, bounds=(0, 4))
        y_obs = PrivateData("y_obs", values, bounds=(-3.0, 3.0))
        mu = TruncatedNormal("mu", 0.0, 1.0, lower=-2.0, upper=2.0)
        z = TruncatedNormal("z", 0.0, 1.0, lower=-3.0, upper=3.0, shape=5)
        theta = mu + 0.5 * z
        if deterministic:
            theta = pm.Deterministic("theta", theta)
        pm.Normal("obs", theta[g_obs], 1.0, observed=y_obs)
    return model


def test_a_deterministic_in_a_non_centred_hierarchy_is_bounded_like_its_expression():
    with_deterministic, plain = analyze(_non_centred(True)), analyze(_non_centred(False))
    assert with_deterministic.record_lipschitz == plain.record_lipschitz
    assert with_deterministic.block_lipschitz == plain.block_lipschitz
    assert "metropolis" in with_deterministic.routes


def test_weights_of_an_expression_with_an_intercept_are_told_to_take_the_cheaper_ball():
    """``alpha + X @ w`` with plain priors: the refusal suggests the ball ‖w‖₂ ≤ R for ``w``
    (it weights covariates), and that prior's L is below the box of the same reach."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1.0, 1.0, (50, 3))
    y = np.clip(X @ [1.0, -0.5, 0.3], -2.0, 2.0)

    def regression(weights):
        with pm.Model() as model:
            X_obs = PrivateData("X", X, bounds=(-1.0, 1.0))
            y_obs = PrivateData("y", y, bounds=(-2.0, 2.0))
            alpha = (
                pm.Normal("alpha", 0.0, 1.0)
                if weights is None
                else TruncatedNormal("alpha", 0.0, 1.0, lower=-1.0, upper=1.0)
            )
            w = pm.Normal("w", 0.0, 1.0, shape=3) if weights is None else weights()
            pm.Normal("obs", alpha + X_obs @ w, 0.5, observed=y_obs)
        return model

    with pytest.raises(UnboundedSensitivityError) as refused:
        analyze(regression(None))
    message = str(refused.value)
    assert "truncate `w` to the ball ‖w‖₂ ≤ R: pmp.TruncatedMvNormal('w'" in message
    assert "truncate `alpha` to [m1, m2]" in message
    ball = analyze(regression(lambda: TruncatedMvNormal("w", np.zeros(3), np.eye(3), radius=2.0)))
    box = analyze(
        regression(lambda: TruncatedNormal("w", 0.0, 1.0, lower=-2.0, upper=2.0, shape=3))
    )
    assert ball.record_lipschitz < box.record_lipschitz


def test_every_prior_to_truncate_is_named_in_one_refusal(rng):
    """Naive Bayes on plain Beta and Dirichlet priors: one refusal names both `theta` and
    `pi`, not `theta` alone and then `pi` after the first fix."""
    with pm.Model() as model:
        y_obs = PrivateData("y_obs", rng.integers(0, 3, N), bounds=(0, 2))
        x_obs = PrivateData("x_obs", rng.integers(0, 2, (N, 2)), bounds=(0, 1))
        pi = pm.Dirichlet("pi", np.ones(3))
        theta = pm.Beta("theta", 1, 1, shape=(3, 2))
        pm.Categorical("label", p=pi, observed=y_obs)
        pm.Bernoulli("feature", p=theta[y_obs], observed=x_obs)
    with pytest.raises(UnboundedSensitivityError) as refusal:
        analyze(model)
    assert "TruncatedBeta('theta'" in str(refusal.value)
    assert "TruncatedDirichlet('pi'" in str(refusal.value)
