"""`PrivateGibbs`: exact conjugate Gibbs on privatised models (free) and on raw private data
(2·L_j/T per block per sweep).

Statistical checks use fixed seeds and state their tolerance: KS tests at α = 0.001 and
audits at α = 0.01 (an ε-DP update fails its audit with probability ≤ α).
"""

from __future__ import annotations

import math
from fractions import Fraction

import arviz as az
import cloudpickle
import hypothesis.strategies as st
import numpy as np
import pymc as pm
import pytest
import xarray as xr
from hypothesis import given, settings
from pymc.sampling.mcmc import assign_step_methods
from pymc.step_methods import STEP_METHODS
from pymc.step_methods.compound import Competence
from scipy import special, stats

from pymc_private.analysis.core import analyze
from pymc_private.data.declaration import PrivateData
from pymc_private.data.ledgers import ledger_for
from pymc_private.dp.audit import epsilon_lower_bound
from pymc_private.errors import InvalidPrivacyParameterError, UnsupportedModelError
from pymc_private.examples.demo import naive_bayes_model
from pymc_private.pay_once.privatize import privatize
from pymc_private.priors.conjugate import GAMMA, MVNORMAL
from pymc_private.priors.distributions import (
    TruncatedBeta,
    TruncatedDirichlet,
    TruncatedGamma,
    TruncatedMvNormal,
    TruncatedNormal,
)
from pymc_private.release.report import privacy_report
from pymc_private.release.seal import ledger_of
from pymc_private.sampling.sample import sample
from pymc_private.steps.gibbs import PrivateGibbs
from pymc_private.steps.metropolis import PrivateMetropolis

SENTINEL = 0.123456789


def beta_bernoulli(y, *, alpha=2.0, beta=3.0, a=0.1):
    with pm.Model() as model:
        y_obs = PrivateData("y_obs", np.asarray(y), bounds=(0, 1))
        p = TruncatedBeta("p", alpha, beta, lower=a, upper=1 - a)
        pm.Bernoulli("y", p, observed=y_obs)
    return model


def normal_mean(x):
    """Normal(μ, σ = 1) with μ ∈ [−1, 1] and data in [−2, 2]: L = max over μ ∈ {−1, 1} of
    the range of (x − μ)²/2 over x, i.e. (2 + 1)²/2 − 0 = 4.5."""
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", x, bounds=(-2.0, 2.0))
        mu = TruncatedNormal("mu", 0.0, 10.0, lower=-1.0, upper=1.0)
        pm.Normal("x", mu, 1.0, observed=x_obs)
    return model


@pytest.fixture(scope="module")
def bb_data():
    return np.array([1] * 30 + [0] * 70)


@pytest.fixture(scope="module")
def bb_model(bb_data):
    return beta_bernoulli(bb_data)


@pytest.fixture(scope="module")
def nb_data():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, 120)
    features = (rng.random((120, 3)) < np.where(labels[:, None] == 1, 0.8, 0.3)).astype(int)
    features[:7] = [[1, 0, 1], [0, 1, 1], [1, 1, 1], [0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]]
    return labels, features


@pytest.fixture(scope="module")
def nb_model(nb_data):
    return naive_bayes_model(*nb_data)


@pytest.fixture(scope="module")
def normal_data():
    x = np.clip(np.random.default_rng(2).normal(0.4, 1.0, 80), -2.0, 2.0)
    x[11] = SENTINEL
    return x


@pytest.fixture(scope="module")
def normal_model(normal_data):
    return normal_mean(normal_data)


def _truncated_beta_cdf(a, b, lower, upper):
    low, high = special.betainc(a, b, lower), special.betainc(a, b, upper)
    return lambda x: (special.betainc(a, b, x) - low) / (high - low)


# ---------------------------------------------------------------------------------------
# Per-draw ε on raw data: Σ_j 2·L_j/T
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fixture", "temperature", "epsilon"),
    [
        ("bb_model", 3.0, 2 * math.log(0.9 / 0.1) / 3.0),
        # blocks pi (L = ln 19) and theta (3 features, L = 3 ln 19)
        ("nb_model", 5.0, 2 * (math.log(19) + 3 * math.log(19)) / 5.0),
        ("normal_model", 2.0, 2 * 4.5 / 2.0),
    ],
)
def test_privacy_epsilon_per_draw_is_the_formula(request, fixture, temperature, epsilon):
    model = request.getfixturevalue(fixture)
    with model:
        step = PrivateGibbs(temperature=temperature)
        idata = sample(
            6,
            step=step,
            tune=4,
            chains=1,
            cores=1,
            random_seed=3,
            progressbar=False,
        )
    per_draw = idata.sample_stats["privacy_epsilon"].values
    # The formula plus the blocks' float allowance (pymc_private.conditionals.exact), tiny but
    # never 0.
    allowance = sum(grid.allowance for grid in step._grids.values())
    assert 0 < allowance < 1e-9 * epsilon
    assert step.privacy_epsilon_per_draw == epsilon + allowance
    assert np.all(per_draw == step.privacy_epsilon_per_draw)
    assert step.touches_raw_data and step.mechanism == "gibbs_exponential"
    ledger = ledger_of(idata)
    assert ledger.epsilon() == pytest.approx(10 * (epsilon + allowance), rel=1e-12)
    # The cost is known before the step is built: the same figure from public quantities.
    analysis, blocks = analyze(model), [[block.name] for block in step.blocks]
    assert PrivateGibbs.cost(analysis, blocks, temperature) == analysis.epsilon_per_draw(
        "gibbs", temperature
    )
    allowances = [grid.allowance for grid in step._grids.values()]
    cost = PrivateGibbs.cost(analysis, blocks, temperature, allowances)
    assert cost == step.privacy_epsilon_per_draw
    assert list(idata.sample_stats.data_vars) == ["privacy_epsilon"]


# ---------------------------------------------------------------------------------------
# Targets: exact truncated posterior at T = 1, tempered one at T > 1
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("temperature", [1.0, 4.0])
def test_raw_gibbs_targets_the_tempered_truncated_posterior(bb_model, temperature):
    with bb_model:
        idata = sample(
            800,
            step=PrivateGibbs(temperature=temperature, secure=False),
            chains=2,
            cores=1,
            random_seed=4,
            progressbar=False,
        )
    draws = idata.posterior["p"].values.ravel()
    assert draws.min() >= 0.1 and draws.max() <= 0.9
    cdf = _truncated_beta_cdf(2 + 30 / temperature, 3 + 70 / temperature, 0.1, 0.9)
    assert stats.kstest(draws, cdf).pvalue > 1e-3
    wrong = _truncated_beta_cdf(2 + 30 / (2 * temperature), 3 + 70 / (2 * temperature), 0.1, 0.9)
    assert stats.kstest(draws, wrong).pvalue < 1e-3


@pytest.mark.slow
def test_naive_bayes_blocks_target_their_exact_conditionals(nb_model, nb_data):
    labels, features = nb_data
    with nb_model:
        idata = sample(
            800,
            step=PrivateGibbs(secure=False),
            chains=2,
            cores=1,
            random_seed=5,
            progressbar=False,
        )
    theta = idata.posterior["theta"].values.reshape(-1, 2, 3)
    ones = int(features[labels == 1, 2].sum())
    size = int((labels == 1).sum())
    cdf = _truncated_beta_cdf(1 + ones, 1 + size - ones, 0.05, 0.95)
    assert stats.kstest(theta[:, 1, 2], cdf).pvalue > 1e-3
    pi = idata.posterior["pi"].values.ravel()
    cdf = _truncated_beta_cdf(1 + size, 1 + len(labels) - size, 0.05, 0.95)
    assert stats.kstest(pi, cdf).pvalue > 1e-3


def test_conditionals_read_the_current_state_of_the_other_blocks():
    """Normal(μ, τ): the μ block given τ and the τ block given μ are the textbook updates,
    computed exactly (rationals) from the data on its public grid."""
    x = np.clip(np.random.default_rng(6).normal(1.0, 0.5, 40), -3, 3)
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", x, bounds=(-3.0, 3.0))
        mu = TruncatedNormal("mu", 0.0, 2.0, lower=-4.0, upper=4.0)
        tau = TruncatedGamma("tau", 2.0, 1.0, lower=0.1, upper=20.0)
        pm.Normal("x", mu, tau=tau, observed=x_obs)
        step = PrivateGibbs(temperature=2.0)
    grid = analyze(model).term("x").grid
    v = [Fraction(int(m)) * Fraction(grid.quantum) for m in grid.quantize(x)]
    n, s1, s2 = len(v), sum(v), sum(value * value for value in v)
    mu_block, tau_block = step.blocks
    half = Fraction(2)
    mu_post = mu_block.posterior(step._statistics, {"tau": Fraction(3)}, half, exact=True)
    assert mu_post["J"] == Fraction(1, 4) + n * Fraction(3) / 2
    assert mu_post["h"] == s1 * Fraction(3) / 2
    tau_post = tau_block.posterior(step._statistics, {"mu": Fraction(0.7)}, half, exact=True)
    assert tau_post["alpha"] == 2 + Fraction(n, 4)
    mu0 = Fraction(0.7)
    assert tau_post["beta"] == 1 + (s2 - 2 * mu0 * s1 + n * mu0 * mu0) / 4


def _privatised_regression(w_true, y_bound, seed):
    """400 records x ~ U[−1, 1]², y = x·w_true + N(0, 0.2²) clipped to ±y_bound; weights on
    the unit ball, a truncated Gamma precision; plug-in privatisation at ε = 10⁶."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (400, 2))
    y = np.clip(x @ w_true + rng.normal(0, 0.2, 400), -y_bound, y_bound)
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", x, bounds=(-1.0, 1.0))
        y_obs = PrivateData("y_obs", y, bounds=(-y_bound, y_bound))
        w = TruncatedMvNormal("w", np.zeros(2), np.eye(2), radius=1.0)
        tau = TruncatedGamma("tau", 2.0, 1.0, lower=0.1, upper=100.0)
        pm.Normal("y", x_obs @ w, tau=tau, observed=y_obs)
    return privatize(model, 1e6, noise_aware=False, secure=False, random_seed=seed + 1)


def test_regression_weights_and_precision_on_a_privatised_model():
    w_true = np.array([0.6, -0.4])
    private = _privatised_regression(w_true, 2.0, 7)
    with private:
        step = PrivateGibbs()
    assert [block.family for block in step.blocks] == [MVNORMAL, GAMMA]
    assert step.privacy_epsilon_per_draw == 0.0 and not step.touches_raw_data
    weights_and_tau = private.compile_fn(
        private.replace_rvs_by_values([private["w"], private["tau"]]),
        inputs=private.value_vars,
        on_unused_input="ignore",
    )
    point = private.initial_point()
    step.setup_chain(np.random.default_rng(9), tune=0, draws=0)
    draws = []
    for _ in range(300):
        point, _ = step.step(point)
        draws.append(weights_and_tau(point))
    weights = np.array([w for w, _ in draws[50:]])
    taus = np.array([t for _, t in draws[50:]])
    assert np.linalg.norm(weights, axis=1).max() <= 1.0
    assert taus.min() >= 0.1 and taus.max() <= 100.0
    np.testing.assert_allclose(weights.mean(axis=0), w_true, atol=0.03)


def test_regression_far_outside_the_ball_keeps_sampling():
    # The weights' conditional lies almost wholly outside the prior's ball (‖w_true‖ = 1.9
    # against radius 1, posterior sd ~0.01): rejection cannot accept, and before this the
    # chain stopped with UnsupportedModelError after ε was spent. Hit-and-run moves from the
    # current value keep it going, on the boundary point nearest the data's fit.
    w_true = np.array([1.5, -1.2])
    private = _privatised_regression(w_true, 4.0, 17)
    with private:
        idata = pm.sample(
            150,
            tune=50,
            chains=2,
            cores=1,
            step=PrivateGibbs(),
            random_seed=19,
            progressbar=False,
            compute_convergence_checks=False,
        )
    weights = idata.posterior["w"].to_numpy().reshape(-1, 2)
    norms = np.linalg.norm(weights, axis=1)
    assert norms.max() <= 1.0 and norms.min() > 0.95
    np.testing.assert_allclose(weights.mean(axis=0), w_true / np.linalg.norm(w_true), atol=0.05)


# ---------------------------------------------------------------------------------------
# Step contract, competence, errors
# ---------------------------------------------------------------------------------------


def test_step_contract_and_pickling(nb_model):
    with nb_model:
        step = PrivateGibbs(temperature=2.0, secure=False)
    point = nb_model.initial_point()
    frozen = {name: value.copy() for name, value in point.items()}
    step.setup_chain(np.random.default_rng(10), tune=0, draws=0)
    new_point, stats_list = step.step(point)
    assert [list(s) for s in stats_list] == [["privacy_epsilon"]]
    for name, value in point.items():
        np.testing.assert_array_equal(value, frozen[name])
        assert new_point[name].dtype == value.dtype and new_point[name].shape == value.shape
    clone = cloudpickle.loads(cloudpickle.dumps(step))
    step.setup_chain(np.random.default_rng(11), tune=0, draws=0)
    clone.setup_chain(np.random.default_rng(11), tune=0, draws=0)
    original, copied = step.step(point)[0], clone.step(point)[0]
    for name, value in original.items():
        np.testing.assert_array_equal(value, copied[name])


def test_competence_claims_privatised_conjugate_variables_only(bb_model):
    assert PrivateGibbs in STEP_METHODS
    private = privatize(bb_model, 1.0, noise_aware=False, secure=False, random_seed=12)
    assert PrivateGibbs.competence(private["p"], True) == Competence.IDEAL
    assert PrivateGibbs.competence(bb_model["p"], True) == Competence.INCOMPATIBLE
    with pm.Model():
        public = pm.Beta("q", 1, 1)
    assert PrivateGibbs.competence(public, True) == Competence.INCOMPATIBLE
    with private:
        idata = pm.sample(
            30,
            tune=10,
            chains=1,
            random_seed=13,
            progressbar=False,
            compute_convergence_checks=False,
        )
    assert np.all(idata.sample_stats["privacy_epsilon"].values == 0.0)


def hyperprior_and_potential(x):
    """The reviewer's model: ``mu`` is a parameter of ``nu``'s prior, and ``c`` enters only a
    Potential that pins it near 1. Neither conditional is a likelihood term's update."""
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", x, bounds=(-3.0, 3.0))
        mu = TruncatedNormal("mu", 0.0, 1.0, lower=-2.0, upper=2.0)
        nu = TruncatedNormal("nu", mu, 0.1, lower=-2.0, upper=2.0)
        pm.Normal("x", nu, 1.0, observed=x_obs)
        c = TruncatedNormal("c", 0.0, 1.0, lower=-2.0, upper=2.0)
        pm.Potential("pen", -200.0 * (c - 1.0) ** 2)
    return model


@pytest.mark.slow
def test_hyperparameters_and_potentials_go_to_nuts_and_the_hyperprior_child_to_gibbs():
    """A hyperparameter (``mu``, in ``nu``'s prior) and a Potential's input (``c``) have no
    conjugate update and are refused; ``nu`` is conjugate given the current ``mu``."""
    x = np.clip(np.random.default_rng(0).normal(1.5, 1.0, 500), -3.0, 3.0)
    model = hyperprior_and_potential(x)
    for variable, term in [("mu", "the prior of `nu`"), ("c", "Potential `pen`")]:
        pattern = rf"`{variable}`: {term} also depends on it.*PrivateMetropolis.*NUTS"
        with model, pytest.raises(UnsupportedModelError, match=pattern):
            PrivateGibbs([model[variable]])
    private = privatize(model, 100.0, noise_aware=False, secure=False, random_seed=0)
    for variable, competence in [("mu", "INCOMPATIBLE"), ("nu", "IDEAL"), ("c", "INCOMPATIBLE")]:
        assert PrivateGibbs.competence(private[variable], True) == Competence[competence]
    _, assigned = assign_step_methods(private)
    assert {method: [v.name for v in values] for method, values in assigned.items()} == {
        pm.NUTS: ["mu_interval__", "c_interval__"],
        PrivateGibbs: ["nu_interval__"],
    }
    with private:
        with pytest.raises(UnsupportedModelError, match="`mu`"):
            PrivateGibbs([private["mu"]])
        idata = sample(
            1000,
            tune=500,
            chains=2,
            cores=1,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
        )
    # Closed forms (untruncated: the posterior is > 6 sd inside [-2, 2]): c ~ N(0, 1)·e^{-200
    # (c-1)²} has mean 400/401; with s = Σx, nu's marginal prior N(0, 1.01) and the
    # likelihood N(s/n, 1/n) give E[nu] = s/(n + 1/1.01), and E[mu | nu] = nu/1.01. Before the
    # fix PrivateGibbs drew mu and c from their priors (mean 0). Tolerance 0.03: about 6 Monte
    # Carlo standard errors (posterior sd ≤ 0.1 over 2000 draws) plus the ε = 100 noise.
    n, total = x.size, x.sum()
    mean_nu = total / (n + 1.0 / 1.01)
    assert idata.posterior["c"].mean() == pytest.approx(400.0 / 401.0, abs=0.03)
    assert idata.posterior["nu"].mean() == pytest.approx(mean_nu, abs=0.03)
    assert idata.posterior["mu"].mean() == pytest.approx(mean_nu / 1.01, abs=0.03)


def _categorical_step(moved: int):
    """The reviewer's neighbours: 200 Categorical records in category 0, but for record 0 in
    category ``moved``; Dirichlet(1, 1, 1) with min_prob 0.2. The conditional Dirichlet(200,
    2, 1) once made a capped rejection sampler fail on ~3% of draws, and never under D."""
    y = np.zeros(200, dtype=int)
    y[0] = moved
    with pm.Model() as model:
        y_obs = PrivateData("y_obs", y, bounds=(0, 2))
        p = TruncatedDirichlet("p", a=np.ones(3), min_prob=0.2)
        pm.Categorical("y", p, observed=y_obs)
        step = PrivateGibbs()
    return model, step, model.rvs_to_values[p].name


def test_raw_gibbs_work_and_randomness_do_not_depend_on_the_data():
    """On raw data every block is drawn on its public grid by an exact selection: no
    rejection, no error, and the step's generator advanced identically whatever the data
    (the selection reads the system's generator; the jitter one uniform per entry)."""
    states = []
    for moved in (0, 1):
        model, step, name = _categorical_step(moved)
        point = model.initial_point()
        step.setup_chain(np.random.default_rng(21), tune=0, draws=0)
        for _ in range(20):
            point, _ = step.step(point)
        assert np.isfinite(point[name]).all()
        states.append(step.rng.bit_generator.state)
    assert states[0] == states[1]
    jitter = []
    for successes in (0, 5):
        with beta_bernoulli(np.array([1] * successes + [0] * (5 - successes))):
            step = PrivateGibbs()
        step.setup_chain(np.random.default_rng(22), tune=0, draws=0)
        point = {"p_interval__": np.array(0.0)}
        for _ in range(10):
            point, _ = step.step(point)
        jitter.append(step.rng.bit_generator.state)
    assert jitter[0] == jitter[1]


def test_unsupported_block_names_the_variable_and_the_alternative(normal_data):
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", normal_data, bounds=(-2.0, 2.0))
        mu = TruncatedNormal("mu", 0.0, 1.0, lower=-1.0, upper=1.0)
        sigma = TruncatedGamma("sigma", 2.0, 2.0, lower=0.5, upper=2.0)
        pm.Normal("x", mu, sigma, observed=x_obs)
        with pytest.raises(UnsupportedModelError, match=r"`sigma`.*pmp\.PrivateMetropolis"):
            PrivateGibbs()
        step = PrivateGibbs([mu])
    assert [v.name for v in step.vars] == ["mu_interval__"]
    assert step.privacy_epsilon_per_draw == pytest.approx(2 * analyze(model).block_lipschitz["mu"])


@settings(max_examples=25, deadline=None)
@given(
    temperature=st.one_of(
        st.floats(max_value=0.999999),
        st.sampled_from([math.nan, math.inf, True, "2", None]),
    )
)
def test_invalid_temperature_is_refused_and_nothing_is_recorded(temperature):
    with pytest.raises(InvalidPrivacyParameterError, match="temperature must be a finite number"):
        with _TEMPERATURE_MODEL:
            sample(5, step=PrivateGibbs(temperature=temperature), chains=1, progressbar=False)
    assert len(ledger_for(_TEMPERATURE_MODEL)) == 0


_TEMPERATURE_MODEL = beta_bernoulli(np.array([0, 1, 1]))


# ---------------------------------------------------------------------------------------
# Audit of one exponential-mechanism update, chains, canary
# ---------------------------------------------------------------------------------------


def _grid_update(step, prior=None):
    """The law of one update of a one-block step, as the exact selection draws it: the
    cell probabilities softmax(ŝ) of the step's own float scores, and its jitter (given the
    prior's parameters at the current hyperparameters, for a block with a hyperprior)."""
    (block,) = step.blocks
    grid = step._grids[block.name]
    prior = None if prior is None else block.prior_at(prior)
    posterior = block.posterior(
        step._statistics, {}, Fraction(step.temperature), exact=True, prior=prior
    )
    (scores,) = grid.scores(posterior)
    return grid, special.softmax(scores)


def _audit_beta_bernoulli_update(steps, *, prior, random_seed):
    """One update of θ ∈ [0.3, 0.7] on the neighbours D = five 0s (``steps[0]``) and D' =
    four 0s and a 1 (``steps[1]``): the claimed ε is 2L/T plus the float allowance; the exact
    privacy loss of the selection over every cell lies within it and beyond half of it; the
    audit (sampling the exact selection's law, vectorised, with the step's own jitter)
    passes the claim and catches a step charged L/T."""
    lipschitz = math.log(0.7 / 0.3)
    claimed = steps[0].privacy_epsilon_per_draw
    assert claimed == pytest.approx(2 * lipschitz) and claimed > 2 * lipschitz
    laws = {successes: _grid_update(step, prior) for successes, step in steps.items()}
    loss = np.abs(np.log(laws[0][1]) - np.log(laws[1][1])).max()
    assert lipschitz < loss <= claimed

    def update(successes, rng, size):
        grid, probabilities = laws[successes]
        cells = rng.choice(probabilities.size, size=size, p=probabilities)
        return grid.values(cells[:, None], rng)

    kwargs = {"n": 300_000, "alpha": 0.01, "vectorized": True, "event": lambda t: t >= 0.6614}
    result = epsilon_lower_bound(update, 0, 1, random_seed=random_seed, **kwargs)
    assert result.passes(claimed)
    assert not result.passes(lipschitz)


def test_audit_one_gibbs_update_and_catch_half_charge():
    """Beta–Bernoulli, θ ∈ [0.3, 0.7], T = 1: L = ln(7/3), claimed ε = 2L/T + allowance.
    Neighbours D = five 0s and D' = four 0s and a 1, where the posterior under D sits near
    0.3 so that the upper tail of θ is most sensitive (about 1.1·L/T is auditable there).
    The exact selection draws a cell with probability softmax(ŝ) exactly, so the audit
    samples that law (vectorised) and the step's own jitter."""
    steps = {}
    for successes in (0, 1):
        with beta_bernoulli(
            np.array([1] * successes + [0] * (5 - successes)), alpha=1, beta=1, a=0.3
        ):
            steps[successes] = PrivateGibbs()
    _audit_beta_bernoulli_update(steps, prior=None, random_seed=15)


def test_raw_gibbs_chains_cores_and_canary(normal_model, normal_data, tmp_path, capsys):
    kwargs = {"tune": 5, "chains": 4, "random_seed": 16, "progressbar": False}
    with normal_model:
        serial = sample(20, step=PrivateGibbs(temperature=10.0, secure=False), cores=1, **kwargs)
        parallel = sample(20, step=PrivateGibbs(temperature=10.0, secure=False), cores=2, **kwargs)
    np.testing.assert_array_equal(serial.posterior["mu"], parallel.posterior["mu"])
    assert set(serial.children) == {"posterior", "sample_stats"}
    assert az.summary(serial, var_names=["mu"]).shape[0] == 1
    path = tmp_path / "raw_gibbs.nc"
    serial.to_netcdf(path)
    loaded = az.from_netcdf(path)
    assert ledger_of(loaded).epsilon() == pytest.approx(4 * 25 * 2 * 4.5 / 10.0)
    shown = privacy_report(loaded)
    report = str(shown) + shown._repr_html_() + shown.table.to_string()
    for text in (report, serial.attrs["privacy_ledger"]):
        assert "0.123456789" not in text and "0.12345678" not in text
    assert_no_raw_data(loaded, normal_data)
    # zlib compression would hide raw bytes from a byte search: the byte search is on an
    # uncompressed copy (xarray's default).
    plain = tmp_path / "raw_gibbs_uncompressed.nc"
    serial.to_netcdf(plain)
    assert_no_raw_bytes(plain.read_bytes(), normal_data)


def assert_no_raw_data(idata: xr.DataTree, data: np.ndarray) -> None:
    """No attribute (top-level or of a group), variable or coordinate of any node of the tree
    (its root and nested groups included) holds a raw value, a run of the raw array or its
    sum (the sentinel record makes a copy of the data recognisable)."""
    raw = np.asarray(data, dtype=np.float64)
    recognisable = {SENTINEL, float(raw.sum())}
    assert "0.12345678" not in repr(idata.attrs)
    for dataset in idata.subtree:
        group = dataset.path.lstrip("/")
        texts = [repr(dataset.attrs)]
        for name, variable in dataset.variables.items():
            texts.append(repr(variable.attrs))
            if not np.issubdtype(variable.dtype, np.number):
                texts.append(repr(variable.values.tolist()))
                continue
            values = np.asarray(variable.values, dtype=np.float64).ravel()
            assert not recognisable & set(values.tolist()), f"raw value in {group}/{name}"
            assert raw[8:16].tobytes() not in values.tobytes(), f"raw run in {group}/{name}"
        for text in texts:
            assert "0.123456789" not in text and "0.12345678" not in text, group


def assert_no_raw_bytes(blob: bytes, data: np.ndarray) -> None:
    raw = np.asarray(data, dtype=np.float64)
    assert np.float64(SENTINEL).tobytes() not in blob
    assert raw[8:16].tobytes() not in blob
    assert np.float64(raw.sum()).tobytes() not in blob


def test_canary_checks_catch_raw_data_in_a_saved_file(normal_data, tmp_path):
    """The canary checks above are not vacuous: they fail on a file that holds the data,
    compressed (the in-file check) or not (the byte search)."""
    leaky = az.from_dict(
        {"posterior": {"mu": np.zeros((2, 5))}, "constant_data": {"x": np.asarray(normal_data)}}
    )
    path = tmp_path / "leak.nc"
    leaky.to_netcdf(path, encoding={"/constant_data": {"x": {"zlib": True}}})
    with pytest.raises(AssertionError, match="raw value in constant_data/x"):
        assert_no_raw_data(az.from_netcdf(path), normal_data)
    plain = tmp_path / "leak_uncompressed.nc"
    leaky.to_netcdf(plain)
    with pytest.raises(AssertionError):
        assert_no_raw_bytes(plain.read_bytes(), normal_data)
    in_attrs = az.from_dict(
        {"posterior": {"mu": np.zeros((2, 5))}}, attrs={"/": {"note": f"{SENTINEL}"}}
    )
    with pytest.raises(AssertionError):
        assert_no_raw_data(in_attrs, normal_data)


# ---------------------------------------------------------------------------------------
# Hyperpriors: a block whose prior's parameters are other free variables
# ---------------------------------------------------------------------------------------


def hierarchical(values, index, *, spread_prior=None):
    """Five group means with hyperparameters: mu_g ~ TruncatedNormal(m0, s0) on [−2, 2]."""
    with pm.Model() as model:
        v_obs = PrivateData("v_obs", values, bounds=(-3.0, 3.0))
        m0 = TruncatedNormal("m0", 0.0, 1.0, lower=-2.0, upper=2.0)
        s0 = (
            spread_prior() if spread_prior else TruncatedGamma("s0", 2.0, 2.0, lower=0.2, upper=3.0)
        )
        mu = TruncatedNormal("mu", m0, s0, lower=-2.0, upper=2.0, shape=5)
        pm.Normal("v", mu[index], 1.0, observed=v_obs)
    return model


@pytest.fixture(scope="module")
def hierarchical_data():
    rng = np.random.default_rng(8)
    index = rng.integers(0, 5, 150)
    values = np.clip(rng.normal(np.linspace(-1.0, 1.0, 5)[index], 1.0), -3.0, 3.0)
    return values, index


@pytest.mark.slow
def test_a_hyperprior_block_is_the_conjugate_block_at_the_current_hyperparameters(
    hierarchical_data,
):
    values, index = hierarchical_data
    with hierarchical(values, index):
        step = PrivateGibbs([pm.modelcontext(None)["mu"]], temperature=4.0)
    (block,) = step.blocks
    assert block.hyper == ("m0", "s0") and block.prior == {}
    with pm.Model():
        v_obs = PrivateData("v_obs", values, bounds=(-3.0, 3.0))
        mu = TruncatedNormal("mu", 0.3, 0.7, lower=-2.0, upper=2.0, shape=5)
        pm.Normal("v", mu[index], 1.0, observed=v_obs)
        fixed = PrivateGibbs(temperature=4.0)
    (constant,) = fixed.blocks
    at_state = block.prior_at({"mu": np.array(0.3), "sigma": np.array(0.7)})
    for exact in (False, True):
        temperature = Fraction(4) if exact else 4.0
        expected = constant.posterior(fixed._statistics, {}, temperature, exact=exact)
        found = block.posterior(step._statistics, {}, temperature, exact=exact, prior=at_state)
        for key in expected:
            np.testing.assert_array_equal(found[key], expected[key])
    # Hyperparameters outside their supports (float edges) are clipped into them, so the
    # float allowance, computed over the supports, holds for every state.
    clipped = block.prior_at({"mu": np.array(5.0), "sigma": np.array(0.01)})
    np.testing.assert_allclose(clipped["mu"], 2.0)
    np.testing.assert_allclose(clipped["sigma"], 0.2)
    assert 0 < step._grids["mu"].allowance < 1e-9
    assert step.privacy_epsilon_per_draw > fixed.privacy_epsilon_per_draw - 1e-9


@pytest.mark.slow
def test_gibbs_refusal_names_the_compound_step_that_runs_a_hierarchy(hierarchical_data):
    values, index = hierarchical_data
    model = hierarchical(values, index)
    pattern = (
        r"no closed-form conditional for m0, s0.*step=\[pmp.PrivateGibbs\(\[mu\], \.\.\.\), "
        r"pmp.PrivateMetropolis\(\[m0, s0\], \.\.\.\)\].*ε = 0"
    )
    with model, pytest.raises(UnsupportedModelError, match=pattern):
        PrivateGibbs()
    with model:
        steps = [
            PrivateGibbs([model["mu"]], temperature=20.0),
            PrivateMetropolis([model["m0"], model["s0"]]),
        ]
        idata = sample(20, step=steps, chains=2, cores=1, random_seed=3, progressbar=False)
    assert set(idata.posterior.data_vars) == {"m0", "s0", "mu"}
    ledger = ledger_of(idata)
    by_mechanism = {}
    for release in ledger.releases:
        by_mechanism.setdefault(release.mechanism, set()).add(release.epsilon)
    assert by_mechanism["barker_metropolis"] == {0.0}  # reads no data
    assert by_mechanism["gibbs_exponential"] == {steps[0].privacy_epsilon_per_draw}
    assert steps[0].privacy_epsilon_per_draw == pytest.approx(2 * 12.5 / 20.0)


def test_a_hyperprior_without_bounded_support_is_refused_by_name(hierarchical_data):
    values, index = hierarchical_data
    model = hierarchical(values, index, spread_prior=lambda: pm.HalfNormal("s0", 1.0))
    with model, pytest.raises(UnsupportedModelError, match=r"`sigma` ranges over .*bounded"):
        PrivateGibbs([model["mu"]])


def test_audit_one_gibbs_update_under_a_hyperprior_and_catch_half_charge():
    """The Beta–Bernoulli audit of one update, with θ ~ TruncatedBeta(a0, 1) and a0 a free
    hyperparameter on [0.5, 2], at the state a0 = 1: the claimed ε holds the float allowance
    over every a0, and the half charge is caught on the same neighbours."""
    steps = {}
    for successes in (0, 1):
        with pm.Model():
            y_obs = PrivateData(
                "y_obs", np.array([1] * successes + [0] * (5 - successes)), bounds=(0, 1)
            )
            a0 = TruncatedGamma("a0", 2.0, 2.0, lower=0.5, upper=2.0)
            p = TruncatedBeta("p", a0, 1.0, lower=0.3, upper=0.7)
            pm.Bernoulli("y", p, observed=y_obs)
            steps[successes] = PrivateGibbs([p])
    state = {"alpha": np.array(1.0), "beta": np.array(1.0)}
    _audit_beta_bernoulli_update(steps, prior=state, random_seed=16)
