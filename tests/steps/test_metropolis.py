"""Tests of PrivateMetropolis: exact per-draw ε, exact acceptance, audits, float error, targets,
PyMC plumbing, bad input."""

from __future__ import annotations

import math
from fractions import Fraction
from unittest import mock

import arviz as az
import matplotlib
import numpy as np
import pymc as pm
import pytensor
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import pymc_private.steps.metropolis as metropolis_module
from pymc_private.analysis.core import analyze
from pymc_private.compiling import CHECKED_MODE
from pymc_private.data.declaration import PrivateData
from pymc_private.data.ledgers import PrivacyLedger, ledger_for
from pymc_private.dp.audit import epsilon_lower_bound
from pymc_private.dp.budget import Budget
from pymc_private.dp.mechanisms import exact_choice
from pymc_private.errors import (
    BudgetExceededError,
    DataBoundsError,
    InvalidPrivacyParameterError,
    UnboundedSensitivityError,
    UnsupportedModelError,
)
from pymc_private.examples.demo import naive_bayes_model
from pymc_private.priors.distributions import (
    TruncatedBeta,
    TruncatedDirichlet,
    TruncatedGamma,
    TruncatedMvNormal,
    TruncatedNormal,
)
from pymc_private.release.seal import ledger_of
from pymc_private.sampling.sample import sample as pmp_sample
from pymc_private.steps.metropolis import LOG_ODDS_BOUND, PrivateMetropolis, barker_log_odds

matplotlib.use("Agg")

A = 0.2  # TruncatedBeta support [A, 1 − A]
L_BERNOULLI = math.log((1 - A) / A)  # record Lipschitz constant of a Bernoulli record
LABELS = np.array([1] * 9 + [0])  # n = 10, s = 9: the truncation at 1 − A matters


def documented_epsilon(sensitivity: float, eta: float, temperature: float) -> float:
    """The class docstring's ε: the smallest float ≥ (2L + 8η)/T + 2⁻⁴³ (η = 0 with clip)."""
    exact = (2 * Fraction(sensitivity) + 8 * Fraction(eta)) / Fraction(temperature) + Fraction(
        1, 2**43
    )
    nearest = float(exact)
    return nearest if Fraction(nearest) >= exact else math.nextafter(nearest, math.inf)


def bernoulli_eta() -> float:
    # C = sup |ℓ(x; θ') − ℓ(x; θ)| = ln(1 − A) − ln(A) = L: ℓ(1; θ) = ln θ, ℓ(0; θ) = ln(1 − θ).
    return 2.0**-30 * max(1.0, L_BERNOULLI)


def beta_bernoulli_model(labels: np.ndarray) -> pm.Model:
    with pm.Model() as model:
        y_obs = PrivateData("y_obs", labels, bounds=(0, 1))
        theta = TruncatedBeta("theta", 1.0, 1.0, lower=A, upper=1 - A)
        pm.Bernoulli("y", theta, observed=y_obs)
    return model


def truncated_beta(alpha: float, beta: float):
    """Mean and CDF of Beta(alpha, beta) truncated to [A, 1 − A]."""
    base, above = stats.beta(alpha, beta), stats.beta(alpha + 1, beta)
    mass = base.cdf(1 - A) - base.cdf(A)
    mean = alpha / (alpha + beta) * (above.cdf(1 - A) - above.cdf(A)) / mass
    return mean, lambda x: (base.cdf(x) - base.cdf(A)) / mass


@pytest.fixture(scope="module")
def model():
    return beta_bernoulli_model(LABELS)


@pytest.fixture(scope="module")
def run_steps(model):
    """Steps at T = 1 and T = 3, and with clip = L (no record is ever clipped). T = 3 makes
    the secure (exact, unseeded) decision; the others are seeded (secure=False) so that they
    can be compared draw by draw."""
    return {
        "T=1": PrivateMetropolis(temperature=1.0, secure=False, model=model),
        "T=3": PrivateMetropolis(temperature=3.0, model=model),
        "clip=L": PrivateMetropolis(clip=L_BERNOULLI, secure=False, model=model),
    }


@pytest.fixture(scope="module")
def runs(model, run_steps):
    """pmp.sample with each of `run_steps`, one after the other on the same data set (so
    its ledger composes them: `run_releases` tells each run's releases apart). The secure
    run is unseeded: a seed would make it reproducible, hence not secure."""
    return {
        key: pmp_sample(
            2000,
            tune=500,
            step=step,
            chains=4,
            cores=1,
            random_seed=None if step.secure else 11,
            progressbar=False,
            model=model,
        )
        for key, step in run_steps.items()
    }


def run_releases(runs, key):
    """The releases the run ``key`` added to the data set's ledger."""
    keys = list(runs)
    before = len(ledger_of(runs[keys[keys.index(key) - 1]]).releases) if keys.index(key) else 0
    return ledger_of(runs[key]).releases[before:]


# --- the per-draw ε is the formula ----------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("key", "temperature", "secure"), [("T=1", 1.0, False), ("T=3", 3.0, True)]
)
def test_per_draw_epsilon_is_the_documented_formula(runs, run_steps, key, temperature, secure):
    step, releases = run_steps[key], run_releases(runs, key)
    epsilon = documented_epsilon(step.sensitivity, step.log_likelihood_error, temperature)
    assert epsilon == pytest.approx(2 * L_BERNOULLI / temperature, rel=1e-8)
    stat = runs[key].sample_stats["privacy_epsilon"]
    assert stat.shape == (4, 2000)
    assert set(np.unique(stat.values)) == {epsilon}
    assert {release.epsilon for release in releases} == {epsilon}
    assert {release.secure for release in releases} == {secure}
    assert PrivacyLedger(releases).epsilon() == pytest.approx(4 * 2500 * epsilon, rel=1e-12)


def test_step_epsilon_is_computed_from_the_analysis_and_the_error_bound(run_steps):
    step = run_steps["T=3"]
    assert step.sensitivity == pytest.approx(L_BERNOULLI, rel=1e-15)
    assert step.log_likelihood_error == pytest.approx(bernoulli_eta(), rel=1e-15)
    assert step.record_bound >= L_BERNOULLI + 4 * step.log_likelihood_error
    assert step.privacy_epsilon_per_draw == documented_epsilon(
        step.sensitivity, step.log_likelihood_error, 3.0
    )
    assert step.privacy_stats() == {"privacy_epsilon": step.privacy_epsilon_per_draw}
    assert PrivateMetropolis.cost(L_BERNOULLI, 3.0, bernoulli_eta()) == documented_epsilon(
        L_BERNOULLI, bernoulli_eta(), 3.0
    )
    assert PrivateMetropolis.cost(0.2, 2.0) == documented_epsilon(0.2, 0.0, 2.0)
    release = step.planned_release(7, chain=0)
    assert release.epsilon == step.privacy_epsilon_per_draw and release.secure


def test_clipped_per_draw_epsilon_is_two_c_over_t_and_lambda_clips_each_record(model):
    clip, temperature = 0.2, 2.0
    step = PrivateMetropolis(clip=clip, temperature=temperature, model=model)
    assert step.mechanism == "clipped_barker_metropolis"
    idata = pmp_sample(
        10, tune=0, step=step, chains=1, cores=1, random_seed=1, progressbar=False, model=model
    )
    epsilon = documented_epsilon(clip, 0.0, temperature)
    assert epsilon == pytest.approx(2 * clip / temperature, rel=1e-12)
    np.testing.assert_array_equal(idata.sample_stats["privacy_epsilon"], epsilon)
    assert ledger_of(idata).releases[-1].epsilon == epsilon

    # Λ_c by hand: θ = A + (1 − 2A)σ(u); flat prior, log-Jacobian log σ(u) + log σ(−u) + const.
    u, u_new = 0.2, 1.5
    theta, theta_new = (A + (1 - 2 * A) / (1 + math.exp(-v)) for v in (u, u_new))
    log_jacobian = [-np.logaddexp(0, -v) - np.logaddexp(0, v) for v in (u, u_new)]
    one, zero = math.log(theta_new / theta), math.log((1 - theta_new) / (1 - theta))
    expected = (
        log_jacobian[1]
        - log_jacobian[0]
        + (9 * np.clip(one, -clip, clip) + np.clip(zero, -clip, clip)) / temperature
    )
    assert abs(one) > clip and abs(zero) > clip  # both kinds of record are clipped here
    lam = step.log_acceptance_ratio(np.array([u_new]), np.array([u]))
    assert lam == pytest.approx(expected, rel=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("likelihood", "clip"), [("naive_bayes", None), ("naive_bayes", 1e3), ("logistic", 1e3)]
)
def test_per_record_log_likelihoods_add_up_to_the_likelihood(likelihood, clip, make_naive_bayes):
    # Without clip, or with one that never binds (each record on a grid of 1e3·2⁻⁵²), Λ is the
    # change of the model's log density: the per-record split of theta[y_obs] (indexing) and
    # x_obs @ w (linear predictor) loses and duplicates nothing.
    if likelihood == "naive_bayes":
        rng = np.random.default_rng(4)
        model = make_naive_bayes(rng.integers(0, 2, 30), rng.integers(0, 2, (30, 3)), 0.1)
    else:
        model = logistic_regression(lambda: pm.Normal("w", 0.0, 1.0, shape=3))
    step = PrivateMetropolis(clip=clip, model=model)
    point = model.initial_point()
    exact = model.compile_logp(jacobian=True)
    rng = np.random.default_rng(0)
    for _ in range(5):
        q0 = {
            name: value + rng.normal(scale=0.3, size=value.shape) for name, value in point.items()
        }
        q1 = {name: value + rng.normal(scale=0.3, size=value.shape) for name, value in q0.items()}
        lam = step.log_acceptance_ratio(
            *(np.concatenate([q[v.name].ravel() for v in step.vars]) for q in (q1, q0))
        )
        assert lam == pytest.approx(exact(q1) - exact(q0), rel=1e-9, abs=1e-9)


def _uniform_lambda(records, clip):
    """Λ_c(θ → θ') of the reviewer's model: x_i ~ Uniform(0, θ), a support that depends on θ."""
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", np.array(records), bounds=(0.0, 10.0))
        theta_rv = TruncatedNormal("theta", 5.0, 3.0, lower=0.5, upper=10.0)
        pm.Uniform("x", 0.0, theta_rv, observed=x_obs)
    step = PrivateMetropolis([theta_rv], clip=clip, model=model)

    def u(value):  # the interval transform of [0.5, 10]
        return np.array([math.log((value - 0.5) / (10.0 - value))])

    return lambda theta, theta_new: step.log_acceptance_ratio(u(theta_new), u(theta))


def test_clipped_ratio_of_records_outside_the_support_is_bounded():
    # ℓ(x; θ) = −log θ on x ≤ θ, −∞ beyond. From θ = 3 to θ' = 4 the record 5 is impossible
    # under both (−∞ − (−∞) = NaN: Λ = NaN would always be rejected under D and not under
    # D' = (1, 1), an infinite ε). It must count 0; the record 1 counts log(3/4);
    # the record 3.5 goes from impossible to possible (+∞, clipped to +c) and back (−c).
    clip = 1.0
    lam = {
        records: _uniform_lambda(records, clip) for records in ((5.0, 1.0), (1.0, 1.0), (3.5, 1.0))
    }
    up = {records: lam[records](3.0, 4.0) for records in lam}
    down = {records: lam[records](4.0, 3.0) for records in lam}
    assert all(math.isfinite(value) for value in [*up.values(), *down.values()])
    assert up[5.0, 1.0] - up[1.0, 1.0] == pytest.approx(-math.log(3 / 4), rel=1e-9)
    assert abs(up[5.0, 1.0] - up[1.0, 1.0]) <= 2 * clip
    assert up[3.5, 1.0] - up[5.0, 1.0] == pytest.approx(clip, rel=1e-9)
    assert down[3.5, 1.0] - down[5.0, 1.0] == pytest.approx(-clip, rel=1e-9)


@pytest.mark.slow
def test_block_no_likelihood_depends_on_costs_nothing_and_samples_its_prior_ratio():
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", np.array([0.2, 0.5, 0.9]), bounds=(0.0, 1.0))
        scale = TruncatedGamma("s", 2.0, 2.0, lower=0.1, upper=3.0)
        mu = TruncatedNormal("mu", 0.0, scale, lower=-1.0, upper=1.0)
        pm.Normal("y", mu, 1.0, observed=x_obs)
    compound = PrivateMetropolis([scale, mu], blocked=False, model=model)
    hyper, location = compound.methods
    assert hyper.privacy_epsilon_per_draw == 0.0 and not hyper.touches_raw_data
    # L of Normal(μ, 1) on x ∈ [0, 1], μ ∈ [−1, 1]: max over μ = ±1 of the range of (x−μ)²/2;
    # C = the range of (x−μ)²/2 over x and μ jointly = 2.
    assert location.sensitivity == pytest.approx(1.5)
    assert location.log_likelihood_error == pytest.approx(2.0**-30 * 2.0)
    epsilon = documented_epsilon(location.sensitivity, location.log_likelihood_error, 1.0)
    assert location.privacy_epsilon_per_draw == epsilon
    # Λ of the hyperprior block is the change of the model's log density (the likelihood,
    # which does not involve s, cancels).
    logp = model.compile_logp(jacobian=True)
    point = model.initial_point()
    moved = {**point, "s_interval__": point["s_interval__"] + 0.7}
    lam = hyper.log_acceptance_ratio(
        np.atleast_1d(moved["s_interval__"]), np.atleast_1d(point["s_interval__"])
    )
    assert lam == pytest.approx(logp(moved) - logp(point), rel=1e-9)
    idata = pmp_sample(
        10,
        tune=0,
        step=compound,
        chains=1,
        cores=1,
        random_seed=3,
        progressbar=False,
        model=model,
    )
    np.testing.assert_array_equal(idata.sample_stats["privacy_epsilon"], epsilon)
    assert ledger_of(idata).epsilon() == pytest.approx(10 * epsilon, rel=1e-12)


def test_a_block_whose_record_ratio_is_unbounded_is_refused_without_clip():
    # σ bounded below only: L of the μ-block is finite (log σ cancels between records), but a
    # move of σ changes each record's log-likelihood by log(σ'/σ), unbounded, so the step
    # cannot bound its float error (nor clip without changing the target): it refuses.
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", np.array([0.1, 0.5]), bounds=(-1.0, 2.0))
        mu = TruncatedNormal("mu", 0.0, 1.0, lower=-2.0, upper=3.0)
        sigma = pm.Truncated("sigma", pm.Gamma.dist(2.0, 2.0), lower=0.5)
        pm.Normal("x", mu, sigma, observed=x_obs)
    location = PrivateMetropolis([mu], model=model)
    # μ ∈ [−2, 3], x ∈ [−1, 2], σ ≥ 0.5: L = (4² − 1²)/(2·0.5²) at μ = −2, C = 4²/(2·0.5²).
    assert (location.sensitivity, location.record_bound) == pytest.approx((30.0, 32.0))
    with pytest.raises(UnboundedSensitivityError, match=r"moves of \['sigma'\].*clip=c"):
        PrivateMetropolis([sigma], model=model)
    assert PrivateMetropolis([sigma], clip=1.0, model=model).record_bound == 1.0


@pytest.fixture(scope="module")
def esjd_optimal_scale() -> float:
    """The proposal scale maximising the expected squared jump of the Barker walk on the
    Beta–Bernoulli posterior of LABELS in the sampling space u (quadrature in u and z)."""

    def log_target(u):
        theta = A + (1 - 2 * A) / (1 + np.exp(-u))
        jacobian = -np.logaddexp(0, -u) - np.logaddexp(0, u)
        return 9 * np.log(theta) + np.log(1 - theta) + jacobian

    u = np.linspace(-15, 15, 801)[:, None, None]
    weights = np.exp(log_target(u))
    z, z_weights = np.polynomial.hermite_e.hermegauss(40)
    scales = np.exp(np.linspace(-1, 2.5, 141))[:, None, None, None]
    accept = 1 / (1 + np.exp(log_target(u) - log_target(u + scales * z)))
    esjd = np.sum(weights * z_weights * accept * (scales * z) ** 2, axis=(1, 2, 3))
    return float(scales.ravel()[np.argmax(esjd)])


@pytest.mark.slow
@pytest.mark.parametrize("start", [0.001, 5.0])
def test_tuning_reaches_the_barker_scale_from_far_away(model, esjd_optimal_scale, start):
    optimum = esjd_optimal_scale
    assert 2.5 < optimum < 5.0  # inside the quadrature's range of scales
    step = PrivateMetropolis(proposal_scale=start, secure=False, model=model)
    step.setup_chain(np.random.default_rng(1), tune=500, draws=400)
    point = model.initial_point()
    for _ in range(500):
        point, _ = step.step(point)
    tuned = step.scaling * start
    assert optimum / 2 < tuned < 2 * optimum
    step.stop_tuning()
    accepted = []
    for _ in range(400):
        point, [stats] = step.step(point)
        accepted.append(stats["accepted"])
    assert step.scaling * start == tuned  # fixed once tuning stops
    # The tuned walk accepts near α*(1) = 0.268 (binomial sd ≈ 0.02, inflated by correlation).
    assert step.target_accept == pytest.approx(0.268)
    assert 0.17 < np.mean(accepted) < 0.37


# --- exact acceptance: no event is impossible under one data set and possible under another -

U0 = 6.0  # public state θ = A + (1 − 2A)σ(−U0) ≈ A; the proposal jumps to +U0, θ' ≈ 1 − A
THETA_AUDIT = A + (1 - 2 * A) / (1 + math.exp(U0))  # θ at −U0; θ' = 1 − θ at +U0
L_AUDIT = math.log((1 - THETA_AUDIT) / THETA_AUDIT)  # L' = ln(θ'/θ) ≈ L


class _Jump:
    """A data-independent point-mass proposal from −U0 to +U0 (fixes Λ for the audit).

    The privacy argument needs only a data-independent proposal and a data-independent log
    proposal ratio (here 0); by the interval transform's symmetry the log-Jacobians of ±U0
    cancel, so Λ is exactly the tempered log-likelihood ratio.
    """

    log_proposal_ratio = 0.0

    def __call__(self, rng):
        return np.array([2 * U0])


def _float_barker_accepts(log_ratio: float, rng) -> bool:
    """The acceptance test PrivateMetropolis made before it used `exact_choice` (kept here to
    show its flaw): accept iff log u < log σ(Λ) = −log(1 + e^−Λ), u a float uniform."""
    return bool(np.log(rng.uniform()) < -np.logaddexp(0.0, -log_ratio))


class _Uniform:
    """A generator stub whose uniform() returns one fixed value."""

    def __init__(self, value: float):
        self.value = value

    def uniform(self) -> float:
        return self.value


N_EDGE = 12_246  # records of the edge case; Λ = (#ones − #zeros)·L'/T under the jump


@pytest.fixture(scope="module")
def edge_steps():
    """Neighbours D (one 0, the rest 1) and D' (all 1) with Λ_D = 36.731, Λ_D' ≈ 36.737: the
    audit report's pair, on either side of 53·ln 2 = 36.7368."""
    temperature = (N_EDGE - 2) * L_AUDIT / 36.731
    steps = {}
    for zeros in (1, 0):
        labels = np.array([0] * zeros + [1] * (N_EDGE - zeros))
        steps[zeros] = PrivateMetropolis(
            temperature=temperature, tune=False, model=beta_bernoulli_model(labels)
        )
        steps[zeros].proposal_dist = _Jump()
    return steps


def test_float_acceptance_had_an_impossible_rejection_that_exact_acceptance_makes_possible(
    edge_steps, monkeypatch
):
    q1, q0 = np.array([U0]), np.array([-U0])
    lam = {zeros: step.log_acceptance_ratio(q1, q0) for zeros, step in edge_steps.items()}
    assert lam[1] == pytest.approx(36.731, abs=1e-9)
    assert lam[0] == pytest.approx(36.737, abs=1e-3)
    epsilon = edge_steps[1].privacy_epsilon_per_draw
    assert abs(lam[1] - lam[0]) <= epsilon

    # The old test: numpy's uniform() is k·2⁻⁵³ for k < 2⁵³, at most 1 − 2⁻⁵³, and the test
    # log u < t is monotone in u. Under D the largest u rejects: P(reject | D) ≥ 2⁻⁵³. Under
    # D' even the largest u accepts: P(reject | D') = 0 exactly. The ratio is infinite.
    largest = _Uniform(1.0 - 2.0**-53)
    assert not _float_barker_accepts(lam[1], largest)
    assert _float_barker_accepts(lam[0], largest)

    # The step now hands (Λ, 0) to the exact sampler, whose law is exactly their softmax:
    # P(accept) = σ(Λ) and P(reject) = σ(−Λ), both positive under both data sets, and their
    # log-ratios between D and D' are within ε.
    calls = []

    def recording_choice(log_weights, *, secure, rng):
        calls.append((list(log_weights), secure))
        return exact_choice(log_weights, secure=secure, rng=rng)

    monkeypatch.setattr(metropolis_module, "exact_choice", recording_choice)
    for step in edge_steps.values():
        step.setup_chain(np.random.default_rng(0), tune=0, draws=0)
        step.step({"theta_interval__": np.array(-U0)})
    assert calls == [([lam[1], 0.0], True), ([lam[0], 0.0], True)]
    for sign in (1.0, -1.0):  # accept: log σ(Λ) = −log(1 + e^−Λ); reject: log σ(−Λ)
        log_p = {zeros: -np.logaddexp(0.0, -sign * value) for zeros, value in lam.items()}
        assert all(math.isfinite(value) and value < 0 for value in log_p.values())
        assert abs(log_p[1] - log_p[0]) <= epsilon


def _metropolis_choice(log_weights, *, secure, rng):
    """PyMC's min(1, e^Λ) rule in `exact_choice`'s interface: index 0 iff log u < Λ."""
    return 0 if np.log(rng.uniform()) < log_weights[0] - log_weights[1] else 1


# --- audits: one step from a fixed public state on neighbouring data sets -------------------

AUDIT_DATA = ([1, 0, 0], [0, 0, 0], [1, 1, 0])


def _audit_steps(**step_kwargs):
    """One step per audited data set, each built on its own model: a step keeps the data it
    was built with, so neighbouring data sets need neighbouring steps."""
    steps, models = {}, {}
    for labels in AUDIT_DATA:
        models[tuple(labels)] = beta_bernoulli_model(np.array(labels))
        step = PrivateMetropolis(tune=False, model=models[tuple(labels)], **step_kwargs)
        step.proposal_dist = _Jump()
        steps[tuple(labels)] = step

    def one_step(labels, rng):
        step = steps[tuple(labels)]
        step.setup_chain(rng, tune=0, draws=0)
        point, _ = step.step({"theta_interval__": np.array(-U0)})
        return float(point["theta_interval__"])

    return steps, one_step, models


@pytest.fixture(scope="module")
def audit_step():
    return _audit_steps(secure=False)


@pytest.fixture(scope="module")
def secure_audit_step():
    return _audit_steps()


def _acceptance_audit(one_step, n: int, random_seed: int | None = None):
    """Audit of the jump's acceptance, D = (1, 0, 0) against D' = (0, 0, 0)."""
    return epsilon_lower_bound(
        one_step, [1, 0, 0], [0, 0, 0], n=n, event=lambda q: q > 0, random_seed=random_seed
    )


def _assert_acceptance_is_logistic(audit, log_ratios, p_value: float):
    for hits, log_ratio in zip(audit.counts, log_ratios, strict=True):
        assert 0 < hits < audit.n  # both outcomes occur under both data sets
        p = 1 / (1 + math.exp(-log_ratio))
        assert stats.binomtest(hits, audit.n, p).pvalue > p_value


# D = (1, 0, 0): Λ = −L'; D' = (0, 0, 0): Λ = −3L'. The gap 2L' nearly attains the bound 2L,
# and acceptance is the event with the largest ratio. The seeded audits (secure=False) are
# reproducible and large enough to nearly attain the claim and to catch half of it; the
# secure ones (OpenDP, ~0.2 ms a step, not reproducible) are smaller and check the claim
# itself for the decision a private run makes.


@pytest.fixture(scope="module")
def barker_audit(audit_step):
    return _acceptance_audit(audit_step[1], n=20_000, random_seed=5)


@pytest.fixture(scope="module")
def secure_barker_audit(secure_audit_step):
    return _acceptance_audit(secure_audit_step[1], n=8_000)


@pytest.mark.slow
def test_barker_step_acceptance_is_logistic_in_lambda(barker_audit, secure_barker_audit):
    _assert_acceptance_is_logistic(barker_audit, (-L_AUDIT, -3 * L_AUDIT), p_value=1e-3)
    # Not seeded: a false alarm has probability below 2·10⁻⁶.
    _assert_acceptance_is_logistic(secure_barker_audit, (-L_AUDIT, -3 * L_AUDIT), p_value=1e-6)


def test_audit_of_barker_step_is_within_its_epsilon_and_nearly_attains_it(
    audit_step, secure_audit_step, barker_audit, secure_barker_audit
):
    step = secure_audit_step[0][1, 0, 0]
    assert step.secure and not audit_step[0][1, 0, 0].secure
    assert step.privacy_epsilon_per_draw == documented_epsilon(
        step.sensitivity, step.log_likelihood_error, 1.0
    )
    assert secure_barker_audit.passes(step.privacy_epsilon_per_draw)
    assert barker_audit.passes(step.privacy_epsilon_per_draw)
    assert barker_audit.epsilon_lower_bound > 0.8 * step.privacy_epsilon_per_draw


def test_audit_catches_barker_step_charged_l_over_t(audit_step, barker_audit):
    step = audit_step[0][1, 0, 0]
    assert not barker_audit.passes(step.sensitivity)


CLIP, T_CLIP = 0.8, 1.25  # c well below L' ≈ 1.38: both kinds of record are clipped


@pytest.fixture(scope="module")
def clipped_audit_step():
    return _audit_steps(clip=CLIP, temperature=T_CLIP, secure=False)


@pytest.fixture(scope="module")
def secure_clipped_audit_step():
    return _audit_steps(clip=CLIP, temperature=T_CLIP)


# A 1 record's ratio is +L' and a 0 record's −L', clipped to ±c: D = (1, 0, 0) has Λ = −c/T,
# D' = (0, 0, 0) has Λ = −3c/T, the changed record going from +c to −c. The gap is the whole
# bound 2c/T; log σ(−c/T) − log σ(−3c/T) = 0.99 ≈ 0.78 · 2c/T.


@pytest.fixture(scope="module")
def clipped_barker_audit(clipped_audit_step):
    return _acceptance_audit(clipped_audit_step[1], n=20_000, random_seed=7)


@pytest.fixture(scope="module")
def secure_clipped_barker_audit(secure_clipped_audit_step):
    return _acceptance_audit(secure_clipped_audit_step[1], n=8_000)


@pytest.mark.slow
def test_clipped_barker_step_accepts_with_the_clipped_lambda(
    clipped_audit_step, clipped_barker_audit, secure_clipped_barker_audit
):
    steps = clipped_audit_step[0]
    q1, q0 = np.array([U0]), np.array([-U0])
    assert CLIP < L_AUDIT  # the clip binds: unclipped, Λ would be −L'/T and −3L'/T
    assert steps[1, 0, 0].log_acceptance_ratio(q1, q0) == pytest.approx(-CLIP / T_CLIP)
    assert steps[0, 0, 0].log_acceptance_ratio(q1, q0) == pytest.approx(-3 * CLIP / T_CLIP)
    log_ratios = (-CLIP / T_CLIP, -3 * CLIP / T_CLIP)
    _assert_acceptance_is_logistic(clipped_barker_audit, log_ratios, p_value=1e-3)
    _assert_acceptance_is_logistic(secure_clipped_barker_audit, log_ratios, p_value=1e-6)


def test_audit_of_clipped_barker_step_is_within_its_epsilon_and_nearly_attains_it(
    secure_clipped_audit_step, clipped_barker_audit, secure_clipped_barker_audit
):
    step = secure_clipped_audit_step[0][1, 0, 0]
    assert step.privacy_epsilon_per_draw == documented_epsilon(CLIP, 0.0, T_CLIP)
    assert secure_clipped_barker_audit.passes(step.privacy_epsilon_per_draw)
    assert clipped_barker_audit.passes(step.privacy_epsilon_per_draw)
    assert clipped_barker_audit.epsilon_lower_bound > 0.7 * step.privacy_epsilon_per_draw


def test_audit_catches_clipped_barker_step_charged_c_over_t(clipped_barker_audit):
    assert not clipped_barker_audit.passes(CLIP / T_CLIP)


@pytest.mark.slow
def test_audit_shows_min_one_acceptance_is_not_private(audit_step, monkeypatch):
    # The same step with PyMC's min(1, e^Λ) rule. D = (1, 1, 0): Λ = +L' > 0, never
    # rejected; D' = (1, 0, 0): Λ = −L', rejected with probability 1 − e^−L' ≈ 0.75.
    steps, one_step, _ = audit_step
    monkeypatch.setattr(metropolis_module, "exact_choice", _metropolis_choice)
    result = epsilon_lower_bound(
        one_step, [1, 1, 0], [1, 0, 0], n=3000, event=lambda q: q < 0, random_seed=6
    )
    assert result.counts[0] == 0
    assert not result.passes(steps[1, 1, 0].privacy_epsilon_per_draw)


@pytest.mark.parametrize("secure", [True, False])
def test_the_decision_reads_the_step_generator_only_when_not_secure(
    audit_step, secure_audit_step, secure
):
    # Gaussian proposals from a common seed on three data sets: the chains part ways, yet the
    # generator ends in the same state, the one the proposals alone (secure) or the proposals
    # and two Gumbel variates per step (secure=False) leave it in.
    steps = (secure_audit_step if secure else audit_step)[0]
    expected = np.random.default_rng(8)
    for _ in range(30):
        expected.normal(scale=np.ones(1))
        if not secure:
            expected.gumbel(size=2)
    paths = []
    for step in steps.values():
        step.proposal_dist = metropolis_module.GaussianRandomWalk(np.ones(1))
        try:
            step.setup_chain(np.random.default_rng(8), tune=0, draws=0)
            point, path = {"theta_interval__": np.array(-U0)}, []
            for _ in range(30):
                point, _ = step.step(point)
                path.append(float(point["theta_interval__"]))
            assert step.rng.bit_generator.state == expected.bit_generator.state
            paths.append(path)
        finally:
            step.proposal_dist = _Jump()
    assert len({tuple(path) for path in paths}) > 1


def test_step_keeps_the_checked_data_it_was_built_with(audit_step):
    # Λ from −U0 to +U0 is the log-likelihood ratio: −L' on (1, 0, 0), −3L' on (0, 0, 0).
    steps, _, models = audit_step
    step, neighbour = steps[1, 0, 0], steps[0, 0, 0]
    q1, q0 = np.array([U0]), np.array([-U0])
    before = step.log_acceptance_ratio(q1, q0)
    assert neighbour.log_acceptance_ratio(q1, q0) == pytest.approx(3 * before, rel=1e-9)
    data = models[1, 0, 0]["y_obs"]
    original = data.get_value()
    try:
        for replacement in ([0, 0, 0], [5, -3, 9]):  # in bounds; out of bounds
            data.set_value(np.array(replacement, dtype=data.dtype))
            assert step.log_acceptance_ratio(q1, q0) == before
    finally:
        data.set_value(original)


@pytest.mark.parametrize("clip", [None, 1.0])
def test_data_changed_out_of_bounds_before_the_step_is_built_are_refused(clip):
    model = beta_bernoulli_model(LABELS)
    with model:
        pm.set_data({"y_obs": np.where(LABELS == 1, 7, 0)})
    with pytest.raises(DataBoundsError, match=r"`y_obs`.*outside the declared bounds"):
        PrivateMetropolis(clip=clip, model=model)


# --- the chain targets the (tempered, clipped) truncated posterior --------------------------


@pytest.mark.parametrize(("key", "temperature"), [("T=1", 1.0), ("T=3", 3.0), ("clip=L", 1.0)])
def test_chain_targets_tempered_truncated_posterior(runs, key, temperature):
    successes, n = int(LABELS.sum()), LABELS.size
    mean, cdf = truncated_beta(1 + successes / temperature, 1 + (n - successes) / temperature)
    theta = runs[key].posterior["theta"]
    standard_error = float(theta.std()) / math.sqrt(float(az.ess(theta)))
    assert abs(float(theta.mean()) - mean) < 4.5 * standard_error
    thinned = theta.values[:, ::20].ravel()
    assert stats.kstest(thinned, cdf).pvalue > 1e-4  # T=3 is not seeded: rare false alarms
    assert A <= thinned.min() and thinned.max() <= 1 - A


def test_clip_that_never_binds_leaves_the_chain_unchanged(runs):
    # Every Bernoulli record ratio lies in [−L, L] on the support, so clip = L never binds:
    # same seed, same draws as the unclipped chain (the grids differ, by 8η·2⁻⁵², which moves
    # no decision here), at ε = 2L/T + 2⁻⁴³: the unclipped charge without its 8η/T for
    # assumption (A), which a clip makes unnecessary.
    np.testing.assert_array_equal(runs["clip=L"].posterior["theta"], runs["T=1"].posterior["theta"])
    epsilon = documented_epsilon(L_BERNOULLI, 0.0, 1.0)
    np.testing.assert_array_equal(runs["clip=L"].sample_stats["privacy_epsilon"], epsilon)
    assert epsilon < runs["T=1"].sample_stats["privacy_epsilon"].values[0, 0]


# --- floating point: Λ of neighbouring data sets never moves by more than ε -----------------

any_float = st.floats(allow_nan=True, allow_infinity=True)


@settings(max_examples=300, deadline=None)
@given(
    prior_ratio=st.floats(allow_nan=False, allow_infinity=False),
    records=st.lists(any_float, min_size=1, max_size=6),
    replacement=any_float,
    position=st.integers(0, 5),
    clip=st.floats(2.0**-970, 2.0**970),
    temperature=st.floats(1.0, 1e6),
)
def test_clipped_log_odds_of_neighbours_differ_by_at_most_epsilon_for_any_floats(
    prior_ratio, records, replacement, position, clip, temperature
):
    # Clause 3 of the proof: whatever floats the graph returns (NaN, ±inf, subnormals, huge),
    # replacing one record moves Λ by at most 2c/T + 2⁻⁴³, checked in exact arithmetic.
    neighbour = list(records)
    neighbour[position % len(records)] = replacement
    lam = [
        barker_log_odds(prior_ratio, np.array(r), record_bound=clip, temperature=temperature)
        for r in (records, neighbour)
    ]
    assert all(-LOG_ODDS_BOUND <= value <= LOG_ODDS_BOUND for value in lam)
    bound = Fraction(documented_epsilon(clip, 0.0, temperature))
    assert abs(Fraction(lam[0]) - Fraction(lam[1])) <= bound


NORMAL_BOUNDS = (-1.0, 2.0)
EXTREMES = [
    -1.0,
    2.0,
    math.nextafter(-1.0, 0.0),
    math.nextafter(2.0, 0.0),
    0.0,
    -0.0,
    5e-324,
    -5e-324,
    2.0**-1022,
    1.0 - 2.0**-53,
    0.5,
]


def _record_pool() -> np.ndarray:
    """Candidate records: the float extremes of the declared bounds and random values, twice
    (at other positions, to check that a record's float does not depend on where it
    stands)."""
    uniform = np.random.default_rng(9).uniform(*NORMAL_BOUNDS, size=13)
    return np.array([*EXTREMES, *uniform] * 2)


@pytest.fixture(scope="module")
def normal_pool_steps():
    """Steps on a Normal(μ, σ) model, μ and σ moved together, whose records are the pool:
    any neighbouring pair of small data sets from the pool is a pair of index vectors."""
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", _record_pool(), bounds=NORMAL_BOUNDS)
        mu = TruncatedNormal("mu", 0.5, 1.0, lower=-2.0, upper=3.0)
        sigma = TruncatedGamma("sigma", 2.0, 2.0, lower=0.5, upper=4.0)
        pm.Normal("x", mu, sigma, observed=x_obs)
    return {
        "unclipped": PrivateMetropolis(temperature=2.0, model=model),
        "clipped": PrivateMetropolis(clip=0.7, temperature=2.0, model=model),
    }


@pytest.fixture(scope="module")
def naive_bayes_pool_step():
    """Naive Bayes with two features: the 8 possible records (label, features), twice."""
    labels = np.repeat([0, 1], 4)
    features = np.array([[a, b] for a in (0, 1) for b in (0, 1)] * 2)
    model = naive_bayes_model(np.tile(labels, 2), np.vstack([features, features]), a=0.1)
    return PrivateMetropolis(temperature=1.5, model=model)


# Sampling-space coordinates: ordinary values, and values that put θ at the boundary of its
# support (σ(±745) rounds to 0 or 1) or next to it.
coordinate = st.one_of(
    st.floats(-40.0, 40.0),
    st.sampled_from([-800.0, -745.0, -36.7, -1e-300, 0.0, 5e-324, 36.7, 745.0, 800.0]),
)


def _assert_neighbours_within_epsilon(step, q1, q0, data):
    """Draw a small data set from the step's records and a neighbour (one record replaced),
    and check |Λ_D − Λ_D'| ≤ ε exactly; Λ as the step computes it from its records' floats."""
    prior_ratio, ratios = step._log_ratio_terms(np.array(q1), np.array(q0))
    assert math.isfinite(prior_ratio)
    half = len(ratios) // 2
    np.testing.assert_array_equal(ratios[:half], ratios[half:])  # position does not matter
    records = data.draw(st.lists(st.integers(0, len(ratios) - 1), min_size=1, max_size=5))
    neighbour = list(records)
    neighbour[data.draw(st.integers(0, len(records) - 1))] = data.draw(
        st.integers(0, len(ratios) - 1)
    )
    lam = [
        barker_log_odds(
            float(prior_ratio),
            ratios[indices],
            record_bound=step.record_bound,
            temperature=step.temperature,
        )
        for indices in (records, neighbour)
    ]
    assert abs(Fraction(lam[0]) - Fraction(lam[1])) <= Fraction(step.privacy_epsilon_per_draw)
    return ratios


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(q1=st.tuples(coordinate, coordinate), q0=st.tuples(coordinate, coordinate), data=st.data())
def test_normal_lambda_of_neighbouring_data_sets_moves_at_most_epsilon(
    normal_pool_steps, q1, q0, data
):
    for variant, step in normal_pool_steps.items():
        ratios = _assert_neighbours_within_epsilon(step, q1, q0, data)
        if variant == "unclipped":
            # Assumption (A) at work, and the analysis's L: one record's ratio against any
            # other's differs by at most 2L + 6η (2L exactly, plus the float error).
            assert np.ptp(ratios) <= 2 * step.sensitivity + 6 * step.log_likelihood_error
            assert np.max(np.abs(ratios)) < step.record_bound  # the clip never binds


@settings(max_examples=100, deadline=None)
@given(
    q1=st.lists(coordinate, min_size=5, max_size=5),
    q0=st.lists(coordinate, min_size=5, max_size=5),
    data=st.data(),
)
def test_naive_bayes_lambda_of_neighbouring_data_sets_moves_at_most_epsilon(
    naive_bayes_pool_step, q1, q0, data
):
    step = naive_bayes_pool_step
    ratios = _assert_neighbours_within_epsilon(step, q1, q0, data)
    assert np.ptp(ratios) <= 2 * step.sensitivity + 6 * step.log_likelihood_error


@settings(max_examples=100, deadline=None)
@given(q1=coordinate, q0=coordinate)
def test_a_step_on_small_data_computes_lambda_from_its_records_floats(
    audit_step, plumbing_step, q1, q0
):
    # The bridge between the pool tests above and real steps: a step built on the data set
    # (1, 0, 0) computes exactly the Λ that its records' floats give in a step built on
    # other data (LABELS: record 0 is a 1, record 9 a 0), bit for bit. And actual
    # neighbouring steps move Λ by at most ε.
    prior_ratio, ratios = plumbing_step._log_ratio_terms(np.array([q1]), np.array([q0]))
    index = {1: 0, 0: 9}
    lam = {}
    for labels, step in audit_step[0].items():
        lam[labels] = step.log_acceptance_ratio(np.array([q1]), np.array([q0]))
        assert step.record_bound == plumbing_step.record_bound
        expected = barker_log_odds(
            float(prior_ratio),
            ratios[[index[label] for label in labels]],
            record_bound=step.record_bound,
            temperature=1.0,
        )
        assert lam[labels] == expected
    epsilon = Fraction(audit_step[0][1, 0, 0].privacy_epsilon_per_draw)
    assert abs(Fraction(lam[1, 0, 0]) - Fraction(lam[0, 0, 0])) <= epsilon
    assert abs(Fraction(lam[1, 0, 0]) - Fraction(lam[1, 1, 0])) <= epsilon


# --- a non-conjugate model ------------------------------------------------------------------

BOX = 1 / math.sqrt(3)  # features in [−BOX, BOX]³, so ‖x‖₂ ≤ Bx = 1


def logistic_regression(prior) -> pm.Model:
    rng = np.random.default_rng(3)
    features = rng.uniform(-BOX, BOX, size=(200, 3))
    labels = rng.uniform(size=200) < 1 / (1 + np.exp(-features @ np.array([1.5, -1.5, 0.0])))
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", features, bounds=(-BOX, BOX))
        y_obs = PrivateData("y_obs", labels.astype(int), bounds=(0, 1))
        w = prior()
        pm.Bernoulli("y", logit_p=x_obs @ w, observed=y_obs)
    return model


def _sample_logistic(model, step, draws=300):
    return pmp_sample(
        draws,
        tune=200,
        step=step,
        chains=2,
        cores=1,
        random_seed=2,
        progressbar=False,
        model=model,
    )


def test_logistic_regression_runs_through_pmp_sample_at_two_bx_r_over_t():
    radius = 2.0
    model = logistic_regression(
        lambda: TruncatedMvNormal("w", mu=np.zeros(3), cov=np.eye(3), radius=radius)
    )
    # Seeded decisions (secure=False): the secure ones are not seeded, and their acceptance
    # rate over 2 × 1000 draws fell below 0.05 once in CI.
    step = PrivateMetropolis(temperature=2.0, proposal_scale=0.3, secure=False, model=model)
    idata = _sample_logistic(model, step, draws=1000)
    # ℓ(1; w) − ℓ(0; w) = xᵀw, so L = sup |xᵀw| = Bx·R (here Bx = 1).
    assert step.sensitivity == pytest.approx(radius, rel=1e-12)
    epsilon = documented_epsilon(step.sensitivity, step.log_likelihood_error, 2.0)
    np.testing.assert_array_equal(idata.sample_stats["privacy_epsilon"], epsilon)
    draws = idata.posterior["w"].values.reshape(-1, 3)
    assert np.all(np.linalg.norm(draws, axis=1) <= radius)
    assert 0.05 < float(idata.sample_stats["accepted"].mean()) < 0.95
    assert set(idata.children) == {"posterior", "sample_stats"}


def test_clip_samples_a_model_whose_lipschitz_constant_is_infinite():
    model = logistic_regression(lambda: pm.Normal("w", 0.0, 1.0, shape=3))
    with pytest.raises(UnboundedSensitivityError):
        PrivateMetropolis(model=model)
    step = PrivateMetropolis(clip=0.5, temperature=2.0, proposal_scale=0.3, model=model)
    idata = _sample_logistic(model, step)
    epsilon = documented_epsilon(0.5, 0.0, 2.0)
    np.testing.assert_array_equal(idata.sample_stats["privacy_epsilon"], epsilon)
    assert ledger_of(idata).epsilon() == pytest.approx(2 * 500 * epsilon, rel=1e-12)
    assert 0.05 < float(idata.sample_stats["accepted"].mean()) < 0.95


# --- PyMC plumbing: chains, cores, spawn, seeds, ArviZ, netCDF ------------------------------


@pytest.fixture(scope="module")
def plumbing_step(model):
    """Seeded decisions (secure=False): the chains are reproducible from the seed."""
    return PrivateMetropolis(secure=False, model=model)


def _sample(model, step, chains=4, **kwargs):
    return pmp_sample(
        50,
        tune=20,
        step=step,
        chains=chains,
        random_seed=2024,
        progressbar=False,
        model=model,
        **kwargs,
    )


@pytest.mark.slow
def test_chains_match_across_cores_and_start_methods(model, plumbing_step):
    serial = _sample(model, plumbing_step, cores=1)
    again = _sample(model, plumbing_step, cores=1)
    forked = _sample(model, plumbing_step, cores=2)
    reference = serial.posterior["theta"].values
    assert reference.shape == (4, 50)
    assert len({tuple(chain) for chain in reference}) == 4  # chains differ from each other
    for other in (again, forked):
        np.testing.assert_array_equal(other.posterior["theta"].values, reference)
        np.testing.assert_array_equal(
            other.sample_stats["accepted"].values, serial.sample_stats["accepted"].values
        )
    seeded = _sample(model, plumbing_step, chains=1, cores=1)
    assert [release.secure for release in ledger_of(seeded).releases[-1:]] == [False]
    # spawn starts one fresh interpreter per chain (seconds each): two chains suffice to
    # show that the step pickles and its per-chain state travels.
    spawned = _sample(model, plumbing_step, chains=2, cores=2, mp_ctx="spawn")
    serial_two = _sample(model, plumbing_step, chains=2, cores=1)
    np.testing.assert_array_equal(
        spawned.posterior["theta"].values, serial_two.posterior["theta"].values
    )


@pytest.mark.slow
@pytest.mark.parametrize("mp_ctx", ["fork", "spawn"])
def test_secure_chains_run_in_parallel(model, mp_ctx):
    step = PrivateMetropolis(model=model)
    idata = _sample(model, step, chains=2, cores=2, mp_ctx=mp_ctx)
    theta = idata.posterior["theta"].values
    assert theta.shape == (2, 50) and np.all((A <= theta) & (theta <= 1 - A))
    epsilon = documented_epsilon(step.sensitivity, step.log_likelihood_error, 1.0)
    np.testing.assert_array_equal(idata.sample_stats["privacy_epsilon"], epsilon)
    assert 0 < float(idata.sample_stats["accepted"].mean()) < 1
    assert [release.secure for release in ledger_of(idata).releases[-2:]] == [True, True]


@pytest.mark.slow
def test_a_seed_does_not_reproduce_secure_chains(model):
    # The seed drives the proposals only; the decisions come from the operating system.
    step = PrivateMetropolis(model=model)
    runs = [_sample(model, step, chains=2, cores=1) for _ in range(2)]
    assert not np.array_equal(runs[0].posterior["theta"], runs[1].posterior["theta"])


def test_plain_pm_sample_and_standalone_step(model, plumbing_step):
    # pmp.sample runs PyMC's samplers under the package's checked mode (C, whose indexing is
    # bounds-checked), whose transforms of the draws may differ from Numba's in the last bit.
    with model, pytensor.config.change_flags(mode=CHECKED_MODE):
        idata = pm.sample(
            50,
            tune=20,
            step=plumbing_step,
            chains=4,
            cores=1,
            random_seed=2024,
            progressbar=False,
            compute_convergence_checks=False,
        )
    private = _sample(model, plumbing_step, cores=1)
    np.testing.assert_array_equal(idata.posterior["theta"], private.posterior["theta"])
    assert "lp" not in idata.sample_stats  # the step never emits model_logp

    point = model.initial_point()
    results = []
    for _ in range(2):
        plumbing_step.setup_chain(np.random.default_rng(0), tune=0, draws=0)
        new_point, stats_list = plumbing_step.step(point)
        results.append(new_point["theta_interval__"])
    assert results[0] == results[1]
    assert [set(s) for s in stats_list] == [{"privacy_epsilon", "accepted"}]


def test_released_inference_data_works_with_arviz_and_netcdf(model, plumbing_step, tmp_path):
    idata = _sample(model, plumbing_step, cores=1)
    assert set(idata.children) == {"posterior", "sample_stats"}
    assert set(idata.sample_stats.data_vars) == {"privacy_epsilon", "accepted"}
    assert "theta" in az.summary(idata).index
    # ArviZ 1's trace plot with a density beside it: one row, a dist and a trace panel.
    axes = az.plot_trace_dist(idata, var_names=["theta"]).viz["plot"]["theta"]
    assert dict(axes.sizes) == {"column": 2}
    matplotlib.pyplot.close("all")
    path = tmp_path / "private.nc"
    idata.to_netcdf(path)
    loaded = az.from_netcdf(path)
    np.testing.assert_array_equal(loaded.posterior["theta"], idata.posterior["theta"])
    assert ledger_of(loaded).epsilon() == ledger_of(idata).epsilon()
    assert not {"observed_data", "constant_data", "log_likelihood"} & set(loaded.children)


# --- bad models and bad parameters ----------------------------------------------------------


def test_refuses_variables_that_are_not_free(model):
    with pytest.raises(UnsupportedModelError, match="free random variables only"):
        PrivateMetropolis([model["y"]], model=model)


def test_refuses_models_without_private_data():
    with pm.Model() as model:
        theta = TruncatedBeta("theta", 1.0, 1.0, lower=A, upper=1 - A)
        pm.Bernoulli("y", theta, observed=LABELS)
    with pytest.raises(UnsupportedModelError, match="no PrivateData"):
        PrivateMetropolis(model=model)


def _prior_from_data(y_obs):
    theta = TruncatedBeta("theta", 1.0 + y_obs.sum(), 1.0, lower=A, upper=1 - A)
    pm.Bernoulli("y", theta, observed=y_obs)


def _deterministic_from_data(y_obs):
    theta = TruncatedBeta("theta", 1.0, 1.0, lower=A, upper=1 - A)
    pm.Deterministic("share", theta * y_obs.mean())  # would be released with the draws
    pm.Bernoulli("y", theta, observed=y_obs)


def _potential_from_observed(y_obs):
    theta = TruncatedBeta("theta", 1.0, 1.0, lower=A, upper=1 - A)
    y = pm.Bernoulli("y", theta, observed=y_obs)
    pm.Potential("pot", 50.0 * y.sum() * theta)  # PyMC evaluates y at y_obs


def _deterministic_from_observed(y_obs):
    theta = TruncatedBeta("theta", 1.0, 1.0, lower=A, upper=1 - A)
    y = pm.Bernoulli("y", theta, observed=y_obs)
    pm.Deterministic("leak", y.sum() + 0.0 * theta)  # released: the sum of y_obs


def _records_mixed(y_obs):
    theta = TruncatedBeta("theta", 1.0, 1.0, lower=A, upper=1 - A)
    pm.Bernoulli("y", theta + 0 * y_obs.mean(), observed=y_obs)  # row i reads every row


@pytest.mark.parametrize(
    ("build", "clip", "message"),
    [
        (_prior_from_data, None, "prior of `theta` depends on PrivateData `y_obs`"),
        (_prior_from_data, 1.0, "prior of `theta` depends on PrivateData `y_obs`"),
        (_deterministic_from_data, 1.0, "Deterministic `share` depends on PrivateData `y_obs`"),
        (_potential_from_observed, None, "Potential `pot` depends on the observed variable `y`"),
        (_potential_from_observed, 1.0, "Potential `pot` depends on the observed variable `y`"),
        (_deterministic_from_observed, None, "Deterministic `leak` depends on the observed"),
        (_deterministic_from_observed, 1.0, "Deterministic `leak` depends on the observed"),
        (_records_mixed, 1.0, "does not observe PrivateData row by row"),
        (_records_mixed, None, "cannot bound the operation Sum"),
    ],
)
def test_refuses_private_data_outside_separable_likelihoods(build, clip, message):
    with pm.Model() as model:
        build(PrivateData("y_obs", LABELS, bounds=(0, 1)))
    with pytest.raises(UnsupportedModelError, match=message):
        PrivateMetropolis(clip=clip, model=model)


not_a_number = st.one_of(st.none(), st.text(max_size=3), st.booleans(), st.just([1.0, "a"]))
bad_temperature = st.one_of(
    not_a_number,
    st.floats(max_value=1.0, exclude_max=True),
    st.sampled_from([math.nan, math.inf, -math.inf]),
    st.integers(max_value=0),
)
bad_positive = st.one_of(
    not_a_number,
    st.floats(max_value=0.0),
    st.sampled_from([math.nan, math.inf, -math.inf]),
    st.integers(max_value=0),
)
bad_parameters = st.one_of(
    bad_temperature.map(lambda t: {"temperature": t}),
    bad_positive.map(lambda s: {"proposal_scale": s}),
    st.lists(bad_positive.filter(lambda s: isinstance(s, float)), min_size=1, max_size=3).map(
        lambda s: {"proposal_scale": [1.0, *s]}
    ),
    st.just({"proposal_scale": []}),
    bad_positive.filter(lambda c: c is not None).map(lambda c: {"clip": c}),
    st.floats(5e-324, 2.0**-971).map(lambda c: {"clip": c}),  # K·2⁻⁵² would not be exact
    st.floats(2.0**971, allow_infinity=False).map(lambda c: {"clip": c}),
    st.one_of(st.none(), st.integers(), st.floats(), st.text(max_size=3)).map(
        lambda s: {"secure": s}
    ),
)


@pytest.fixture(scope="module")
def public_model():
    """A model without PrivateData: reading it would raise UnsupportedModelError."""
    with pm.Model() as model:
        theta = TruncatedBeta("theta", 1.0, 1.0, lower=A, upper=1 - A)
        pm.Bernoulli("y", theta, observed=LABELS)
    return model


@settings(max_examples=150, deadline=None)
@given(parameters=bad_parameters)
def test_bad_parameters_raise_before_the_model_is_read_or_compiled(public_model, parameters):
    with (
        mock.patch.object(metropolis_module, "analyze", side_effect=AssertionError),
        mock.patch.object(metropolis_module, "compile", side_effect=AssertionError),
        pytest.raises(InvalidPrivacyParameterError, match=next(iter(parameters))),
    ):
        PrivateMetropolis(model=public_model, **parameters)


def test_a_run_refused_for_its_budget_compiles_nothing():
    """The step compiles its log-ratio function on first use: building it and having
    `pmp.sample` refuse the run for its budget never waits for the C compiler."""
    model = beta_bernoulli_model(LABELS[:20])
    step = PrivateMetropolis(temperature=1.0, model=model)
    before = len(ledger_for(model).releases)
    with mock.patch.object(
        metropolis_module, "compile_log_ratio_terms", side_effect=AssertionError("compiled")
    ):
        with pytest.raises(BudgetExceededError):
            pmp_sample(1000, step=step, chains=2, cores=1, budget=Budget(0.5), model=model)
    assert step._log_ratio_function is None
    assert len(ledger_for(model).releases) == before


# ---------------------------------------------------------------------------------------
# Mixtures: clipped Barker (the privacy analysis does not bound a mixture's L)
# ---------------------------------------------------------------------------------------


def normal_mixture(records):
    with pm.Model() as model:
        m_obs = PrivateData("m_obs", np.asarray(records), bounds=NORMAL_BOUNDS)
        weights = TruncatedDirichlet("weights", np.ones(2), min_prob=0.05)
        means = TruncatedNormal("means", 0.0, 1.0, lower=-2.0, upper=2.0, shape=2)
        pm.NormalMixture("m", w=weights, mu=means, sigma=1.0, observed=m_obs)
    return model


@pytest.fixture(scope="module")
def mixture_pool_step():
    return PrivateMetropolis(clip=0.8, temperature=2.0, model=normal_mixture(_record_pool()))


def test_a_mixture_is_refused_by_the_analysis_with_the_clipped_route():
    model = normal_mixture([0.0, 1.0])
    with pytest.raises(UnsupportedModelError, match=r"mixture.*PrivateMetropolis\(clip=c"):
        analyze(model)
    with pytest.raises(UnsupportedModelError, match=r"clip=c"):
        PrivateMetropolis(model=model)


@pytest.mark.slow
def test_mixture_records_are_separated_and_add_up_to_the_likelihood():
    """With a clip that never binds, Λ is the change of the model's log density: each
    record's log Σ_k w_k p_k(x_i) is computed on its own."""
    model = normal_mixture(np.linspace(*NORMAL_BOUNDS, 9))
    step = PrivateMetropolis(clip=1e3, model=model)
    exact = model.compile_logp(jacobian=True)
    point = model.initial_point()
    rng = np.random.default_rng(2)
    for _ in range(5):
        q0 = {k: v + rng.normal(scale=0.3, size=v.shape) for k, v in point.items()}
        q1 = {k: v + rng.normal(scale=0.3, size=v.shape) for k, v in q0.items()}
        lam = step.log_acceptance_ratio(
            *(np.concatenate([q[v.name].ravel() for v in step.vars]) for q in (q1, q0))
        )
        assert lam == pytest.approx(exact(q1) - exact(q0), rel=1e-9, abs=1e-9)


# ---------------------------------------------------------------------------------------
# Refusals of the analysis that clipped Barker runs: the message names it and its cost
# ---------------------------------------------------------------------------------------

_RNG = np.random.default_rng(25)
_X = _RNG.uniform(-1.0, 1.0, (30, 2))
_LABELS = _RNG.integers(0, 3, 30)


def student_t_regression():
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", _X, bounds=(-1.0, 1.0))
        y_obs = PrivateData("y_obs", _X @ [0.5, -0.3], bounds=(-2.0, 2.0))
        w = TruncatedNormal("w", 0.0, 1.0, lower=-2.0, upper=2.0, shape=2)
        pm.StudentT("y", nu=4, mu=x_obs @ w, sigma=0.5, observed=y_obs)
    return model


def per_record_binomial():
    with pm.Model() as model:
        trials = PrivateData("trials", _LABELS + 1, bounds=(1, 3))
        successes = PrivateData("successes", _LABELS, bounds=(0, 3))
        p = TruncatedBeta("p", 1.0, 1.0, lower=0.05, upper=0.95)
        pm.Binomial("k", n=trials, p=p, observed=successes)
    return model


def lagged_ar1():
    series = np.clip(np.cumsum(_RNG.normal(0.0, 0.5, 31)), -3.0, 3.0)
    with pm.Model() as model:
        previous = PrivateData("previous", series[:-1], bounds=(-3.0, 3.0))
        following = PrivateData("following", series[1:], bounds=(-3.0, 3.0))
        rho = TruncatedNormal("rho", 0.0, 1.0, lower=-0.99, upper=0.99)
        pm.Normal("s", rho * previous, 0.5, observed=following)
    return model


def ordinal_logit():
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", _X, bounds=(-1.0, 1.0))
        y_obs = PrivateData("y_obs", _LABELS, bounds=(0, 2))
        w = TruncatedNormal("w", 0.0, 1.0, lower=-2.0, upper=2.0, shape=2)
        cutpoints = pm.Normal(
            "cutpoints", [-1.0, 1.0], 1.0, transform=pm.distributions.transforms.ordered
        )
        pm.OrderedLogistic("y", eta=x_obs @ w, cutpoints=cutpoints, observed=y_obs, compute_p=False)
    return model


@pytest.mark.slow
@pytest.mark.parametrize(
    "build",
    [student_t_regression, per_record_binomial, lagged_ar1, ordinal_logit],
)
def test_a_refusal_that_clipped_barker_runs_names_it_and_its_cost_and_it_runs(build):
    model = build()
    cost = PrivateMetropolis.cost(1.0, 1.0)
    assert cost == 2.0 + 2.0**-43
    with pytest.raises(
        UnsupportedModelError,
        match=r"pmp\.PrivateMetropolis\(clip=c\) samples this model.*ε = 2c/T \+ 2\^-43 "
        r"\(ε = 2 per step at c = 1 and temperature T = 1\)",
    ) as refusal:
        analyze(model)
    assert ":ref:" not in str(refusal.value)
    with pytest.raises(UnsupportedModelError, match=r"PrivateMetropolis\(clip=c\)"):
        PrivateMetropolis(model=model)
    # Each record's log-likelihood is separated exactly: with a clip that never binds, Λ is
    # the change of the model's log density.
    unclipped = PrivateMetropolis(clip=1e3, model=model)
    exact = model.compile_logp(jacobian=True)
    point = model.initial_point()
    rng = np.random.default_rng(3)
    q0 = {k: v + rng.normal(scale=0.1, size=v.shape) for k, v in point.items()}
    q1 = {k: v + rng.normal(scale=0.1, size=v.shape) for k, v in q0.items()}
    lam = unclipped.log_acceptance_ratio(
        *(np.concatenate([q[v.name].ravel() for v in unclipped.vars]) for q in (q1, q0))
    )
    assert lam == pytest.approx(exact(q1) - exact(q0), rel=1e-9, abs=1e-9)
    step = PrivateMetropolis(clip=1.0, model=model)
    idata = pmp_sample(
        3, tune=0, step=step, chains=1, cores=1, random_seed=1, progressbar=False, model=model
    )
    np.testing.assert_array_equal(idata.sample_stats["privacy_epsilon"], cost)


@pytest.mark.slow
def test_a_softmax_logit_runs_on_its_record_lipschitz_constant_with_records_separated():
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", _X, bounds=(-1.0, 1.0))
        y_obs = PrivateData("y_obs", _LABELS, bounds=(0, 2))
        W = TruncatedNormal("W", 0.0, 1.0, lower=-2.0, upper=2.0, shape=(2, 3))
        pm.Categorical("y", p=pm.math.softmax(x_obs @ W, axis=-1), observed=y_obs)
    step = PrivateMetropolis(temperature=20.0, model=model)
    assert step.sensitivity == analyze(model).record_lipschitz
    exact = model.compile_logp(jacobian=True)
    point = model.initial_point()
    q1 = {k: v + 0.1 for k, v in point.items()}
    lam = step.log_acceptance_ratio(
        *(np.concatenate([q[v.name].ravel() for v in step.vars]) for q in (q1, point))
    )
    # Λ tempers the likelihood by 1/T; the prior ratio enters whole.
    prior = model.compile_logp(vars=model.free_RVs, jacobian=True)
    likelihood = (exact(q1) - prior(q1)) - (exact(point) - prior(point))
    assert lam == pytest.approx(prior(q1) - prior(point) + likelihood / 20.0, rel=1e-9)


def test_a_refusal_that_no_route_runs_does_not_name_clipped_barker():
    """Observing x[1:] given x[:-1] mixes records; the message says how to pair them."""
    series = np.linspace(-1.0, 1.0, 31)
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", series, bounds=(-3.0, 3.0))
        rho = TruncatedNormal("rho", 0.0, 1.0, lower=-0.99, upper=0.99)
        pm.Normal("s", rho * x_obs[:-1], 0.5, observed=x_obs[1:])
    with pytest.raises(UnsupportedModelError, match=r"lagged series.*x_prev @ rho") as refusal:
        analyze(model)
    assert "PrivateMetropolis" not in str(refusal.value)


def test_the_mixture_refusal_names_the_clipped_route_once():
    with pytest.raises(UnsupportedModelError) as refusal:
        analyze(normal_mixture([0.0, 1.0]))
    assert str(refusal.value).count("clip=c") == 1


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(
    q1=st.tuples(coordinate, coordinate, coordinate),
    q0=st.tuples(coordinate, coordinate, coordinate),
    data=st.data(),
)
def test_mixture_lambda_of_neighbouring_data_sets_moves_at_most_epsilon(
    mixture_pool_step, q1, q0, data
):
    step = mixture_pool_step
    assert step.privacy_epsilon_per_draw == pytest.approx(2 * 0.8 / 2.0)
    _assert_neighbours_within_epsilon(step, q1, q0, data)
