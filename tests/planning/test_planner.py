"""The planner `pmp.plan`: its prediction against realised posteriors, its inverse, that it
reads no data and spends nothing, and its refusals."""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pymc_private as pmp
from pymc_private.analysis.privatisation import privatisation_of
from pymc_private.errors import (
    InvalidPrivacyParameterError,
    UnboundedSensitivityError,
    UnsupportedModelError,
)
from pymc_private.examples.calibration import spread_study
from pymc_private.examples.demo import naive_bayes_model

A = 0.05
N = 1000


def coin(values) -> pm.Model:
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", values, bounds=(0, 1))
        theta = pmp.TruncatedBeta("theta", 1, 1, lower=A, upper=1 - A)
        pm.Bernoulli("x", theta, observed=x_obs)
    return model


@pytest.fixture(scope="module")
def coin_model() -> pm.Model:
    return coin(np.random.default_rng(0).binomial(1, 0.5, N))


@pytest.fixture(scope="module")
def coin_plan(coin_model):
    return pmp.plan(coin_model, epsilon=0.1)


def test_beta_bernoulli_matches_the_closed_form(coin_plan):
    """s̃ = s + Laplace(1/ε): Var = nθ(1 − θ) + 2/ε², so sd(θ) = √(that)/n, up to the prior's
    precision (1/Var of the uniform on [0.05, 0.95], 2.6% of the likelihood's here)."""
    (row,) = coin_plan.parameters
    assert row.at == 0.5
    prior = 12 / 0.9**2
    exact = 1 / math.sqrt(N / 0.25 + prior)
    private = 1 / math.sqrt(N**2 / (N * 0.25 + 2 / 0.1**2) + prior)
    assert row.sd_exact == pytest.approx(exact, rel=0.02)
    assert row.sd_private == pytest.approx(private, rel=0.02)
    (noise,) = coin_plan.statistics
    assert noise.noise_sd == pytest.approx(math.sqrt(2) / 0.1)
    assert noise.sampling_sd == pytest.approx(math.sqrt(N * 0.25))


def test_noise_is_what_privatize_draws(coin_model, make_naive_bayes, rng):
    """The plan reads the noise laws of the release plan privatize runs: the same scales."""
    model = make_naive_bayes(rng.binomial(1, 0.5, 200), rng.binomial(1, 0.5, (200, 3)), A)
    for epsilon, delta, mechanism in ((0.5, 0.0, "auto"), (1.0, 1e-6, "gaussian")):
        planned = pmp.plan(model, epsilon, delta=delta, mechanism=mechanism)
        private = pmp.privatize(
            model, epsilon, delta=delta, mechanism=mechanism, secure=False, random_seed=1
        )
        noise = privatisation_of(private).noise
        assert {s.statistic: s.noise_sd for s in planned.statistics} == pytest.approx(
            {name: math.sqrt(law.variance) for name, law in noise.items()}, rel=1e-9
        )
        assert {s.mechanism for s in planned.statistics} == {planned.mechanism}
    assert planned.mechanism == "gaussian"


@pytest.mark.parametrize("epsilon", [0.1, 1.0])
def test_beta_bernoulli_prediction_matches_realised_sd(epsilon):
    """Within 20% of the noise-aware posterior's sd over repeated releases (issue 27)."""
    result = spread_study(
        lambda data: coin(data["x_obs"]),
        lambda rng: {"x_obs": rng.binomial(1, 0.5, N)},
        epsilon,
        repetitions=10,
        draws=200,
        seed=3,
    )
    assert result.largest_error < 0.2


NB_THETA = np.array([[0.3, 0.5, 0.7], [0.6, 0.4, 0.2]])


def nb_simulation(n: int):
    def simulate(rng):
        labels = rng.binomial(1, 0.4, n)
        return {"y_obs": labels, "x_obs": rng.binomial(1, NB_THETA[labels])}

    return simulate


@pytest.mark.slow
def test_naive_bayes_prediction_matches_realised_sd():
    """Within 20% of the noise-aware posterior's sd over repeated releases (issue 27; ε = 0.1
    and the other models in benchmarks/planner.py)."""
    result = spread_study(
        lambda data: naive_bayes_model(data["y_obs"], data["x_obs"], a=A),
        nb_simulation(2000),
        1.0,
        repetitions=4,
        draws=150,
        at={"pi": 0.4, "theta": NB_THETA},
        seed=5,
    )
    assert result.largest_error < 0.2


def test_group_sizes_are_measured_by_every_table():
    """The class counts are released directly and, by the 2 categories of each of the 3
    features' tables of each class, 6 times more (N_0 = n − N_1): at ε = 0.1 (b = 7/ε) π's sd
    is that of N_1 measured with noise variance 1/(1/2b² + 6/4b²) = b²/2, not 2b² (once)."""
    n, b = 5000, 70.0
    data = nb_simulation(n)(np.random.default_rng(0))
    model = naive_bayes_model(data["y_obs"], data["x_obs"], a=A)
    planned = pmp.plan(model, 0.1, at={"pi": 0.4, "theta": NB_THETA})
    assert planned.sd("pi") == pytest.approx(math.sqrt(n * 0.24 + 0.5 * b**2) / n, rel=0.03)


def test_smallest_epsilon_for_an_inflation(coin_model, coin_plan):
    """Inflation² = 1 + (2/ε²)/(nθ(1 − θ)) without the prior: ε = √(2/(n/4 · 0.21)) for 1.1."""
    epsilon = coin_plan.epsilon_for(target_sd_inflation=1.1)
    assert epsilon == pytest.approx(math.sqrt(2 / (N * 0.25 * 0.21)), rel=0.03)
    (row,) = pmp.plan(coin_model, epsilon).parameters
    assert row.inflation <= 1.1
    (row,) = pmp.plan(coin_model, epsilon * 0.99).parameters
    assert row.inflation > 1.1
    solved = pmp.plan(coin_model, target_sd_inflation=1.1)
    assert solved.epsilon == pytest.approx(epsilon)
    target = coin_plan.parameters[0].sd_exact * 1.5
    assert coin_plan.epsilon_for(target_sd=target) == pytest.approx(
        coin_plan.epsilon_for(target_sd={"theta": target})
    )


def test_plan_reads_no_data_and_spends_nothing(coin_model, make_naive_bayes, rng):
    """Values outside the declared bounds (pm.set_data) make analyze refuse; the plan does
    not read them, and the ledger stays empty."""
    model = make_naive_bayes(rng.binomial(1, 0.5, 50), rng.binomial(1, 0.5, (50, 2)), A)
    pm.set_data({"x_obs": np.full((50, 2), 7)}, model=model)
    with pytest.raises(pmp.DataBoundsError):
        pmp.analyze(model)
    planned = pmp.plan(model, epsilon=1.0)
    assert len(planned.parameters) == 5
    assert not pmp.ledger_for(model).releases and not pmp.ledger_for(coin_model).releases


def test_plan_of_dask_records_never_computes_them():
    """Dask records are read where they are, at declaration and at each release only."""
    da = pytest.importorskip("dask.array")
    declared = []

    def guarded(block):
        if declared:
            raise AssertionError("the planner read the records")
        return block

    records = da.zeros(300, chunks=100, dtype=np.int64).map_blocks(guarded, dtype=np.int64)
    model = coin(records)
    declared.append(True)
    planned = pmp.plan(model, epsilon=1.0)
    assert planned.n_records == 300
    with pytest.raises(AssertionError, match="read the records"):
        pmp.privatize(model, 1.0, secure=False)


def test_display(coin_plan):
    text = repr(coin_plan)
    assert text.startswith("PrivacyPlan: pmp.privatize at ε = 0.1 (laplace), n = 1000")
    assert "theta" in text and "counts(x_obs)" in text and "inflation" in text
    assert coin_plan._repr_html_().count("<table>") == 2


def test_regression_notes_its_assumptions_and_gram_noise(rng):
    n = 500
    x = np.column_stack([np.ones(n), rng.uniform(-1, 1, n)])
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", x, bounds=(-1.0, 1.0))
        y_obs = pmp.PrivateData("y_obs", rng.uniform(-1, 1, n), bounds=(-2.0, 2.0))
        w = pmp.TruncatedMvNormal("w", np.zeros(2), np.eye(2), radius=3.0)
        pm.Normal("y", x_obs @ w, 0.5, observed=y_obs)
    uniform = pmp.plan(model, 1.0)
    assert any("uniform on their declared bounds" in note for note in uniform.notes)
    assert any("will exceed this prediction" in note for note in uniform.notes)
    moment = np.array([[1.0, 0.0], [0.0, 1 / 3]])
    given_moment = pmp.plan(model, 1.0, covariate_moment={"x_obs": moment})
    assert not any("uniform" in note for note in given_moment.notes)
    # The intercept's second moment is 1, not the uniform's 1/3: a narrower posterior.
    assert given_moment.sd("w")[0] < uniform.sd("w")[0]
    with pytest.raises(InvalidPrivacyParameterError, match="covariate_moment"):
        pmp.plan(model, 1.0, covariate_moment={"y_obs": moment})
    with pytest.raises(InvalidPrivacyParameterError, match="2 × 2"):
        pmp.plan(model, 1.0, covariate_moment={"x_obs": np.eye(3)})
    with pytest.raises(InvalidPrivacyParameterError, match="2 × 2"):
        pmp.plan(model, 1.0, covariate_moment={"x_obs": "identity"})


def test_a_glm_planned_at_the_prior_centre_says_so(rng):
    """A logistic regression planned without at= for its weights notes that its sd depends on
    them (a user's realised sd was 21–48% wider than planned at w = 0); with at=, no note."""
    n = 300
    x = np.column_stack([np.ones(n), rng.uniform(-1, 1, n)])
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", x, bounds=([1.0, -1.0], [1.0, 1.0]))
        y_obs = pmp.PrivateData("y_obs", rng.integers(0, 2, n), bounds=(0, 1))
        w = pmp.TruncatedMvNormal("w", np.zeros(2), np.eye(2), radius=3.0)
        pm.Bernoulli("y", logit_p=x_obs @ w, observed=y_obs)
    assert any("pass at= your expected weights" in note for note in pmp.plan(model, 1.0).notes)
    at_weights = pmp.plan(model, 1.0, at={"w": np.array([0.5, 1.0])})
    assert not any("expected weights" in note for note in at_weights.notes)


def test_varying_intercepts_are_refused_with_what_to_do(rng):
    """alpha[g] + X @ w with a public g: a user's first plan raised KeyError 'alpha'; the
    prediction would leave out the per-group sums' noise (the weights' sd 2 to 3 times
    narrower than realised), so the plan refuses the model with a typed error naming what to do."""
    n, groups = 200, 5
    with pm.Model() as model:
        index = pm.Data("g", np.arange(n) % groups)
        x_obs = pmp.PrivateData("x_obs", rng.uniform(-1, 1, (n, 2)), bounds=(-1.0, 1.0))
        y_obs = pmp.PrivateData("y_obs", rng.uniform(-3, 3, n), bounds=(-3.0, 3.0))
        alpha = pmp.TruncatedNormal("alpha", 0.0, 1.0, lower=-2.0, upper=2.0, shape=groups)
        w = pmp.TruncatedMvNormal("w", np.zeros(2), np.eye(2), radius=2.0)
        pm.Normal("y", alpha[index] + x_obs @ w, 0.3, observed=y_obs)
    with pytest.raises(UnsupportedModelError, match="varying intercepts `alpha`"):
        pmp.plan(model, 1.0)
    assert len(pmp.ledger_for(model)) == 0


@given(st.sampled_from([0.0, -1.0, math.nan, math.inf, "1", None]))
def test_invalid_epsilon_is_refused(epsilon):
    model = coin(np.zeros(20, dtype=int))
    with pytest.raises(InvalidPrivacyParameterError):
        pmp.plan(model, epsilon=epsilon)


def test_invalid_requests_are_refused(coin_plan):
    model = coin(np.zeros(20, dtype=int))
    refusals = [
        ({"epsilon": 1.0, "delta": 1.0}, "delta"),
        ({"epsilon": 1.0, "mechanism": "gaussian"}, "delta"),
        ({"epsilon": 1.0, "target_sd_inflation": 1.1}, "not both"),
        ({"at": {"nope": 0.3}, "epsilon": 1.0}, "nope"),
        ({"at": {"theta": [0.3, 0.4]}, "epsilon": 1.0}, "shape"),
        ({"at": {"theta": "half"}, "epsilon": 1.0}, "finite numbers"),
        ({"at": {"theta": 0.99}, "epsilon": 1.0}, "outside the prior's support"),
        ({"target_sd_inflation": 0.9}, "> 1"),
        ({"target_sd": math.nan}, "> 0"),
        ({"target_sd": 1e-6}, "No ε up to"),
    ]
    for arguments, message in refusals:
        with pytest.raises(InvalidPrivacyParameterError, match=message):
            pmp.plan(model, **arguments)
    with pytest.raises(InvalidPrivacyParameterError, match="epsilon="):
        pmp.plan(model)
    with pytest.raises(InvalidPrivacyParameterError, match="nope"):
        coin_plan.epsilon_for(target_sd_inflation=1.1, parameters=["nope"])
    with pytest.raises(InvalidPrivacyParameterError, match="nope"):
        coin_plan.sd("nope")
    with pytest.raises(InvalidPrivacyParameterError, match="one target"):
        coin_plan.epsilon_for()


def test_a_model_the_analysis_cannot_bound_is_refused():
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", np.zeros(20, dtype=int), bounds=(0, 1))
        theta = pm.Beta("theta", 1, 1)
        pm.Bernoulli("x", theta, observed=x_obs)
    with pytest.raises(UnboundedSensitivityError):
        pmp.plan(model, epsilon=1.0)


def test_simplex_and_normal_sums():
    """A Dirichlet's entries move against category 0 (the simplex): sd ≈ √(p(1 − p)/n) without
    noise; a Normal mean with σ known: √(nσ² + 2b²)/n, b = Δ/ε = 12/ε on [−6, 6]."""
    n = 1000
    with pm.Model() as categorical:
        c = pmp.PrivateData("c", np.zeros(n, dtype=int), bounds=(0, 2))
        p = pmp.TruncatedDirichlet("p", np.ones(3), min_prob=0.05)
        pm.Categorical("k", p, observed=c)
    planned = pmp.plan(categorical, 1.0)
    np.testing.assert_allclose(planned.sd("p", private=False), math.sqrt(2 / 9 / n), rtol=0.02)
    assert np.all(planned.sd("p") > planned.sd("p", private=False))
    with pm.Model() as normal:
        x = pmp.PrivateData("x_obs", np.zeros(n), bounds=(-6.0, 6.0))
        mu = pmp.TruncatedNormal("mu", 0.0, 1.0, lower=-3.0, upper=3.0)
        pm.Normal("x", mu, 1.0, observed=x)
    (row,) = pmp.plan(normal, 0.5).parameters
    assert row.sd_private == pytest.approx(math.sqrt(n + 2 * 24.0**2) / n, rel=0.02)
