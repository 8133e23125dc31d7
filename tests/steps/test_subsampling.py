"""`PrivateMetropolis(sampling_rate=q)`: the Poisson-subsampled Gaussian test, its event and
its composition (pymc_private/dp/subsampling.py, `SubsampledGaussianEvent`)."""

from __future__ import annotations

import copy
import math

import dp_accounting
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pymc_private as pmp
from pymc_private.dp.audit import epsilon_lower_bound
from pymc_private.dp.events import (
    STEP_DELTA,
    SUBSAMPLED_RDP_ORDERS,
    PureEvent,
    Release,
    SubsampledGaussianEvent,
    ZcdpEvent,
    sound_curve,
    subsampled_gaussian_epsilon,
)
from pymc_private.dp.subsampling import SubsampledGaussianTest, exact_sampling_rate
from pymc_private.errors import BudgetExceededError, InvalidPrivacyParameterError
from pymc_private.release.seal import ledger_of
from pymc_private.sampling.sample import _rate_advice


def _core(test: SubsampledGaussianTest):
    """The step's mechanism on one record's clipped ratio (prior ratio 0)."""
    return lambda ratios, rng: test.noisy_log_odds(0.0, ratios, rng)


def _test_at(q: float, z: float, *, factor: float = 1.0) -> SubsampledGaussianTest:
    """A seeded test with clip 1, T = 1 and noise multiplier z (σ divided by ``factor``)."""
    sensitivity = SubsampledGaussianTest(q, 1.0, 1.0, 1.0, secure=False).sensitivity
    return SubsampledGaussianTest(q, 1.0, 1.0, z * sensitivity / factor, secure=False)


# The worst pair: the record's ratio at +c against −c (its term ±Δ from the null record).
# Audited at δ = 0.05, where 10⁴ runs see the loss; the claim is the event's Rényi curve
# converted at that δ. dp-accounting's REPLACE_ONE privacy-loss distribution of the same
# pair gives 0.49 (q = 0.5) and 1.30 (q = 0.9), which the audits nearly reach: the Rényi
# bound, through the null record, is about twice it.
AUDIT_DELTA = 0.05


@pytest.fixture(scope="module")
def audits():
    def audit(test):
        return epsilon_lower_bound(
            _core(test), [1.0], [-1.0], n=10_000, random_seed=3, delta=AUDIT_DELTA
        )

    return {
        "q=0.5": (audit(_test_at(0.5, 2.0)), subsampled_gaussian_epsilon(0.5, 2.0, AUDIT_DELTA)),
        "q=0.5 half noise": audit(_test_at(0.5, 2.0, factor=2.0)),
        "q=0.9": (audit(_test_at(0.9, 2.0)), subsampled_gaussian_epsilon(0.9, 2.0, AUDIT_DELTA)),
    }


@pytest.mark.slow
def test_audit_of_one_subsampled_step_is_within_its_amplified_epsilon(audits):
    for name in ("q=0.5", "q=0.9"):
        result, claim = audits[name]
        assert result.passes(claim), name
        assert result.epsilon_lower_bound > 0.35 * claim, name


def test_audit_catches_the_step_under_noised_by_half_or_charged_half(audits):
    _, claim = audits["q=0.5"]
    assert not audits["q=0.5 half noise"].passes(claim)
    result, claim = audits["q=0.9"]
    assert not result.passes(claim / 2)


def test_subsample_keeps_each_record_with_the_exact_rate():
    assert exact_sampling_rate(1.0) == 1.0
    assert exact_sampling_rate(0.1) >= 0.1
    assert exact_sampling_rate(0.1) - 0.1 < 2.0**-53
    for secure in (True, False):
        test = SubsampledGaussianTest(0.25, 1.0, 1.0, 1.0, secure=secure)
        kept = test.subsample(40_000, np.random.default_rng(1))
        assert abs(kept.mean() - 0.25) < 5 * math.sqrt(0.25 * 0.75 / 40_000)


def test_noisy_log_odds_is_the_scaled_clipped_sum_plus_noise():
    test = SubsampledGaussianTest(1.0, 0.5, 2.0, 1e-9, secure=False)
    rng = np.random.default_rng(0)
    # q = 1 keeps every record: Λ̂ = p + Σ clip(r_i)/(qT) = 0.25 + (0.5 − 0.5 + 0.1)/2.
    noisy = test.noisy_log_odds(0.25, np.array([3.0, -7.0, 0.1]), rng)
    assert noisy == pytest.approx(0.3, abs=1e-7)
    assert test.noisy_log_odds(-math.inf, np.array([1.0]), rng) == -math.inf
    assert not test.accepts(-math.inf, rng) and test.accepts(math.inf, rng)
    assert test.sensitivity == pytest.approx(0.5 / 2.0, rel=1e-12)


def test_penalty_decision_accepts_with_min_one_exp():
    test = SubsampledGaussianTest(1.0, 1.0, 1.0, 1.0, secure=False)
    rng = np.random.default_rng(2)
    accepted = np.mean([test.accepts(-0.5, rng) for _ in range(20_000)])
    expected = math.exp(-0.5 - 0.5)
    assert abs(accepted - expected) < 5 * math.sqrt(expected * (1 - expected) / 20_000)


def _replace_one_by_dp_accounting(q: float, z: float, count: int, delta: float) -> float:
    """The replace-one curve (α − ½)/(α − 1)·ε(2α) + ε(2α − 1) from dp-accounting's own
    RdpAccountant on ``count`` PoissonSampledDpEvent(q, GaussianDpEvent(z))."""
    event = dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z))
    curves = []
    for orders in (2 * SUBSAMPLED_RDP_ORDERS, 2 * SUBSAMPLED_RDP_ORDERS - 1):
        accountant = rdp_privacy_accountant.RdpAccountant(list(orders))
        accountant.compose(event, count)
        curves.append(np.array([accountant._rdp]).ravel())
    alphas = SUBSAMPLED_RDP_ORDERS
    curve = (alphas - 0.5) / (alphas - 1) * curves[0] + curves[1]
    return float(rdp_privacy_accountant.compute_epsilon(alphas, curve, delta)[0])


@pytest.mark.parametrize(("q", "z"), [(0.01, 2.0)])
def test_ledger_total_matches_dp_accounting_on_the_same_events(q, z):
    test = SubsampledGaussianTest(q, 1.0, 1.0, 1.0, secure=False)
    release = Release("subsampled_gaussian_metropolis", SubsampledGaussianEvent(q, z), count=1500)
    ledger = pmp.PrivacyLedger([release, release])  # two chains
    total = ledger.composition(1e-6)
    assert total.method == "rdp"
    expected = _replace_one_by_dp_accounting(q, z, 3000, 1e-6)
    assert total.epsilon == pytest.approx(expected, rel=0.01)
    # Replace-one costs more than dp-accounting's add/remove and REPLACE_ONE PLD figures.
    event = dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z))
    add_remove = rdp_privacy_accountant.RdpAccountant().compose(event, 3000).get_epsilon(1e-6)
    pld = pld_privacy_accountant.PLDAccountant(dp_accounting.NeighboringRelation.REPLACE_ONE)
    assert total.epsilon > add_remove
    assert total.epsilon > pld.compose(event, 3000).get_epsilon(1e-6)
    assert test.release("m", 3).event == SubsampledGaussianEvent(q, test.noise_multiplier)


def test_subsampled_steps_compose_with_pure_and_zcdp_releases_by_their_curves():
    step = Release("subsampled_gaussian_metropolis", SubsampledGaussianEvent(0.1, 4.0), count=500)
    laplace = Release("laplace", PureEvent(0.3))
    gaussian = Release("gaussian", ZcdpEvent(0.01, 1e-7))
    ledger = pmp.PrivacyLedger([step, laplace, gaussian])
    total = ledger.composition(1e-6)
    orders = SUBSAMPLED_RDP_ORDERS
    curve = (
        500 * SubsampledGaussianEvent(0.1, 4.0).rdp(orders)
        + PureEvent(0.3).rdp(orders)
        + ZcdpEvent(0.01, 1e-7).rdp(orders)
    )
    expected = rdp_privacy_accountant.compute_epsilon(orders, curve, 1e-6)[0]
    assert total.method == "rdp" and total.epsilon == pytest.approx(expected, rel=1e-9)
    assert ledger.composition(0.0).epsilon == math.inf
    with pytest.raises(BudgetExceededError, match="only for δ > 0"):
        pmp.Budget(100.0).check(ledger)


def test_a_subsampled_release_survives_json_and_the_journal_file(tmp_path):
    release = Release(
        "subsampled_gaussian_metropolis",
        SubsampledGaussianEvent(0.02, 3.0, STEP_DELTA),
        count=7,
    )
    ledger = pmp.PrivacyLedger([release])
    assert pmp.PrivacyLedger.from_json(ledger.to_json()).releases == (release,)
    # Releases without the event serialise as in earlier versions' journals.
    assert "sampling_rate" not in Release("laplace", PureEvent(1.0)).to_dict()
    assert Release.from_dict(release.to_dict()) == release
    path = tmp_path / "ledger.jsonl"
    pmp.PrivacyLedger.open(path, budget=pmp.Budget(10.0, delta=1e-6)).record(release)
    again = pmp.PrivacyLedger.open(path)
    assert again.releases == (release,)
    assert again.composition(1e-6) == ledger.composition(1e-6)


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    q=st.one_of(st.floats(allow_nan=True), st.just(0), st.just(True), st.text(max_size=2)).filter(
        lambda q: not (isinstance(q, float) and 0 < q <= 1)
    )
)
def test_invalid_sampling_rate_is_refused_before_the_model_is_read(mean_model, q):
    ledger = pmp.ledger_for(mean_model[0])
    before = len(ledger)
    with pytest.raises(InvalidPrivacyParameterError, match="sampling_rate"):
        pmp.PrivateMetropolis(clip=1.0, sampling_rate=q, model=mean_model[0])
    assert len(ledger) == before


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"sampling_rate": 0.1}, "needs clip"),
        ({"sampling_rate": 0.1, "clip": 1.0, "noise_scale": 0.0}, "noise_scale"),
        ({"sampling_rate": 0.1, "clip": 1.0, "noise_scale": math.inf}, "noise_scale"),
        # z below 2⁻¹⁰: dp-accounting's curve is NaN near z = 1e-152 (an attacker's ε = 0
        # step) and divides by zero near 1e-170; both refused before the model is read.
        ({"sampling_rate": 0.99, "clip": 1.0, "noise_scale": 1e-153}, "noise_multiplier"),
        (
            {"sampling_rate": 0.99, "clip": 1.0, "noise_scale": 1e-170, "secure": False},
            "noise_multiplier",
        ),
    ],
)
def test_missing_clip_or_bad_noise_is_refused_before_the_model_is_read(mean_model, kwargs, match):
    with pytest.raises(InvalidPrivacyParameterError, match=match):
        pmp.PrivateMetropolis(model=mean_model[0], **kwargs)


@pytest.mark.parametrize(
    "fields",
    [
        {"sampling_rate": 0.1},
        {"sampling_rate": 1.5, "noise_multiplier": 1.0},
        {"sampling_rate": 0.1, "noise_multiplier": -1.0},
        {"sampling_rate": 0.1, "noise_multiplier": 2.0**-11},
        {"sampling_rate": 0.1, "noise_multiplier": 1.0, "delta": 0.0},
    ],
)
def test_release_refuses_an_incomplete_or_invalid_subsampled_event(fields):
    data = {**Release("m", PureEvent(1.0, STEP_DELTA)).to_dict(), **fields}
    with pytest.raises(InvalidPrivacyParameterError):
        Release.from_dict(data)


@pytest.fixture(scope="module")
def mean_model():
    """A normal mean with bounded data: the cheapest model to compile (the step is built once)."""
    values = np.random.default_rng(0).uniform(-1, 1, size=50)
    with pm.Model() as model:
        y_obs = pmp.PrivateData("y_obs", values, bounds=(-1, 1))
        mu = pm.Normal("mu", 0, 2)
        pm.Normal("y", mu, 1.0, observed=y_obs)
    return model, _mean_step(model)


def _mean_step(model):
    return pmp.PrivateMetropolis(
        [model["mu"]],
        clip=0.1,
        sampling_rate=0.5,
        noise_scale=4.0,
        proposal_scale=0.1,
        secure=False,
        model=model,
    )


def test_sample_with_two_chains_is_reproducible_and_charges_the_event(mean_model):
    model, step = mean_model
    with model:
        runs = [
            pmp.sample(5, tune=5, chains=2, cores=1, step=step, random_seed=11) for _ in range(2)
        ]
    draws = [run.posterior["mu"].values for run in runs]
    np.testing.assert_array_equal(draws[0], draws[1])
    assert draws[0].shape == (2, 5)
    releases = ledger_of(runs[0]).releases
    assert {r.event.sampling_rate for r in releases} == {0.5}
    assert {r.event.noise_multiplier for r in releases} == {step.subsampled_test.noise_multiplier}
    assert step.subsampled_test.noise_multiplier == pytest.approx(4.0 * 0.5 / 0.1, rel=1e-9)
    assert runs[0].sample_stats["privacy_epsilon"].values.flat[0] == step.privacy_epsilon_per_draw


def test_budget_refusal_names_the_chain_length_and_noise_that_fit(mean_model):
    model, step = mean_model
    with model, pytest.raises(BudgetExceededError) as refusal:
        pmp.sample(1000, tune=20, chains=2, step=step, budget=pmp.Budget(2.0, delta=1e-6))
    message = str(refusal.value)
    assert "draws per chain fit" in message and "noise_scale" in message
    spent = list(pmp.ledger_for(model).releases)
    fitting = int(message.split("at most ")[1].split(" draws")[0])
    factor = float(message.split("by at least ")[1].split(" ")[0])
    assert 0 < fitting < 1000 and factor > 1
    planned = step.planned_release(20 + fitting, 0)
    assert pmp.PrivacyLedger([*spent, planned, planned]).composition(1e-6).epsilon <= 2.0
    over = step.planned_release(20 + fitting + 1, 0)
    assert pmp.PrivacyLedger([*spent, over, over]).composition(1e-6).epsilon > 2.0


def test_noisy_log_odds_is_unbiased_with_the_subsample_variance_on_top_of_the_noise():
    """Mean Σ r_i/T and variance σ² + (1 − q)/(q·T²)·Σ r_i² (the variance the penalty
    method does not correct)."""
    test = SubsampledGaussianTest(0.5, 0.1, 2.0, 1.0, secure=False)
    ratios = np.full(1000, 0.05)
    rng = np.random.default_rng(4)
    values = np.array([test.noisy_log_odds(0.0, ratios, rng) for _ in range(4000)])
    variance = 1.0 + 0.5 / (0.5 * 4.0) * np.sum(ratios**2)
    assert abs(values.mean() - 25.0) < 5 * math.sqrt(variance / 4000)
    assert values.var() == pytest.approx(variance, rel=0.1)


def test_plain_pm_sample_charges_each_subsampled_step_as_it_runs(mean_model):
    model, step = mean_model
    # The step charges the ledger it was built with (the module fixture's session).
    before = len(step.ledger.releases)
    with model, pytest.warns(UserWarning, match="outside pmp.sample"):
        runs = [
            pm.sample(3, tune=2, chains=2, cores=1, step=step, random_seed=5, progressbar=False)
            for _ in range(2)
        ]
    np.testing.assert_array_equal(runs[0].posterior["mu"], runs[1].posterior["mu"])
    charged = step.ledger.releases[before:]
    assert sum(r.count for r in charged) == 2 * 2 * (3 + 2)
    assert {r.event for r in charged} == {
        SubsampledGaussianEvent(0.5, step.subsampled_test.noise_multiplier)
    }


def test_a_curve_with_nan_is_charged_infinity_and_never_launders_the_ledger():
    """dp-accounting's log-sum of two infinite terms is NaN, and compute_epsilon would pick that
    order and return max(0, NaN) = 0: `sound_curve` makes it +∞ (and a rounded negative value
    0), so the ledger's RDP route cannot fall below a release it holds."""
    curve = sound_curve(np.array([np.nan, -1e-17, 0.5]))
    assert curve[0] == math.inf and curve[1] == 0.0 and curve[2] == 0.5
    raw = rdp_privacy_accountant._compute_rdp_poisson_subsampled_gaussian(
        0.99, 1e-153, SUBSAMPLED_RDP_ORDERS
    )
    assert np.isnan(raw).any()  # what the floor on z keeps out of every event
    ledger = pmp.PrivacyLedger(
        [
            Release("laplace", PureEvent(50.0)),
            Release("subsampled_gaussian_metropolis", SubsampledGaussianEvent(0.99, 2.0**-10)),
        ]
    )
    assert ledger.composition(1e-6).epsilon >= 50.0


@pytest.mark.parametrize("limit", [0, -1.0, math.inf, math.nan, True, "1"])
def test_invalid_max_step_size_is_refused_before_the_model_is_read(mean_model, limit):
    ledger = pmp.ledger_for(mean_model[0])
    before = len(ledger)
    with pytest.raises(InvalidPrivacyParameterError, match="max_step_size"):
        pmp.PrivateMetropolis(clip=1.0, max_step_size=limit, model=mean_model[0])
    assert len(ledger) == before


def test_tuning_never_grows_the_scale_past_max_step_size(mean_model):
    """Tiny moves are accepted about half the time, above the target 0.27: the scale grows
    without limit, and never past m/‖s‖ with ``max_step_size=m`` (a start above it is
    shrunk to it)."""
    model = mean_model[0]
    with model:
        steps = {
            limit: pmp.PrivateMetropolis(
                clip=0.1, proposal_scale=1e-3, max_step_size=limit, secure=False
            )
            for limit in (None, 5e-4)
        }
    assert steps[5e-4].scaling == pytest.approx(0.5)
    largest = {}
    for limit, step in steps.items():
        step.setup_chain(np.random.default_rng(5), tune=0, draws=0)
        state, scalings = model.initial_point(), []
        for _ in range(60):
            state, _ = step.step(state)
            scalings.append(step.scaling)
        largest[limit] = max(scalings)
    assert largest[None] > 4.0
    assert largest[5e-4] == pytest.approx(0.5, rel=1e-12)


@pytest.mark.slow
def test_a_released_warm_start_and_the_chain_share_one_ledger_and_budget():
    """The warm start of benchmarks/subsampled_mcmc.py: the pay-once GLM release at ε₀, its
    draws as starts and sds as the proposal; the budget check counts ε₀ with the chain."""
    rng = np.random.default_rng(1)
    x = np.column_stack([np.ones(200), rng.uniform(-1, 1, size=200)])
    y = (rng.random(200) < 0.5).astype(int)
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", x, bounds=([1, -1], [1, 1]))
        y_obs = pmp.PrivateData("y_obs", y, bounds=(0, 1))
        w = pmp.TruncatedMvNormal("w", np.zeros(2), np.eye(2), radius=3.0, default_transform=None)
        pm.Bernoulli("y", logit_p=x_obs @ w, observed=y_obs)
    with pmp.privatize(model, epsilon=0.3, delta=1e-6):
        warm = pmp.sample(5, tune=5, chains=1, random_seed=1, progressbar=False)
    draws = warm.posterior["w"].values.reshape(-1, 2)
    with model:
        step = pmp.PrivateMetropolis(
            clip=0.5,
            sampling_rate=0.5,
            noise_scale=4.0,
            proposal_scale=draws.std(0) + 1e-3,
            max_step_size=0.1,
            secure=False,
        )
        chain = step.planned_release(20, 0)
        alone = pmp.PrivacyLedger([chain]).composition(1e-6).epsilon
        warm_start = pmp.ledger_for(model).releases
        both = pmp.PrivacyLedger([*warm_start, chain]).composition(1e-6)
        assert both.epsilon > alone
        with pytest.raises(BudgetExceededError):
            pmp.sample(
                10,
                tune=10,
                chains=1,
                step=step,
                initvals=[{"w": draws[0]}],
                budget=pmp.Budget((alone + both.epsilon) / 2, delta=1e-6),
            )
    assert pmp.ledger_for(model).releases == warm_start  # refused before any step ran


@pytest.fixture(scope="module")
def rate_model():
    """Its own data set (ledger), and a step whose q = 0.01 leaves z = σq'T/c = 0.4."""
    values = np.random.default_rng(2).uniform(-1, 1, size=30)
    with pm.Model() as model:
        y_obs = pmp.PrivateData("y_obs", values, bounds=(-1, 1))
        mu = pm.Normal("mu", 0, 2)
        pm.Normal("y", mu, 1.0, observed=y_obs)
    step = pmp.PrivateMetropolis(
        [mu], clip=0.1, sampling_rate=0.01, noise_scale=4.0, secure=False, model=model
    )
    return model, step


@pytest.mark.slow
def test_budget_refusal_names_the_sampling_rate_that_fits(rate_model):
    """30 draws + 10 tuning × 2 chains at q = 0.01 cost ε ≈ 425 (δ = 1e-6), 2.15 at q = 1;
    ε falls with q (z grows): the refusal names the smallest q that fits at the same σ, T and
    c (to 10 %), or that none does."""
    model, step = rate_model

    with model, pytest.raises(BudgetExceededError) as refused:
        pmp.sample(30, tune=10, chains=2, step=step, budget=pmp.Budget(3.0, delta=1e-6))

    def total(q: float) -> float:
        return pmp.PrivateMetropolis.chain_epsilon(
            80, clip=0.1, sampling_rate=q, noise_scale=4.0, secure=False
        )

    rate = float(str(refused.value).split("sampling_rate ≥ ")[1].split(" ")[0])
    assert 0.01 < rate < 1 and total(rate) <= 3.0 < total(rate / 1.1)
    planned = [step.planned_release(40, chain) for chain in range(2)]
    none = _rate_advice(planned, lambda releases: False)  # as at a budget of 2 (2.15 at q = 1)
    assert "no sampling_rate in (0.01, 1] fits" in none
    assert not pmp.ledger_for(model).releases


def test_chain_epsilon_is_what_the_ledger_charges_for_the_chain(rate_model):
    _, step = rate_model
    planned = step.planned_release(40, 0)
    charged = pmp.PrivacyLedger([planned, planned]).composition(1e-6).epsilon
    chain = pmp.PrivateMetropolis.chain_epsilon(
        80, clip=0.1, sampling_rate=0.01, noise_scale=4.0, secure=False
    )
    assert chain == pytest.approx(charged, rel=1e-6)
    barker = pmp.PrivateMetropolis.chain_epsilon(80, clip=0.1, temperature=2.0, delta=0.0)
    assert barker == pytest.approx(80 * pmp.PrivateMetropolis.cost(0.1, 2.0), rel=1e-12)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"steps": 0},
        {"steps": True},
        {"steps": 1.5},
        {"sampling_rate": 0.0},
        {"sampling_rate": 1.5},
        {"noise_scale": -1.0},
        {"clip": math.nan},
        {"temperature": 0.5},
    ],
)
def test_chain_epsilon_refuses_invalid_settings(kwargs):
    settings = {"steps": 10, "clip": 0.1, "sampling_rate": 0.1, "noise_scale": 1.0, **kwargs}
    steps = settings.pop("steps")
    with pytest.raises(InvalidPrivacyParameterError):
        pmp.PrivateMetropolis.chain_epsilon(steps, **settings)


def test_analyze_shows_the_subsampled_chain_cost_before_any_data():
    """Where nothing pays once (a mean that is an expression), analyze states what a
    subsampled per-draw chain costs; a model that pays once is not told (test_analysis)."""
    with pm.Model() as model:
        y_obs = pmp.PrivateData("y_obs", np.zeros(4), bounds=(-1, 1))
        mu = pmp.TruncatedNormal("mu", 0, 2, lower=-3, upper=3)
        pm.Normal("y", mu * mu, 1.0, observed=y_obs)
    shown = repr(pmp.analyze(model))
    example = subsampled_gaussian_epsilon(0.05, 16.0, 1e-6, count=3000)
    assert f"q = 0.05: ε ≤ {example:.2f} for 3000 steps" in shown
    assert "pmp.PrivateMetropolis.chain_epsilon" in shown
    assert pmp.PrivateMetropolis.chain_epsilon(
        3000, clip=1 / 320, sampling_rate=0.05, noise_scale=1.0, secure=False
    ) == pytest.approx(example, rel=0.05)


def test_a_public_proxy_leaves_the_step_only_the_residual_ratios():
    """The control variate of benchmarks/subsampled_mcmc.py: a released quadratic proxy as a
    public `pm.Potential` (in the prior ratio) and per-record residuals as the observed
    `pm.CustomDist` (the ratios the step clips and sums)."""
    rng = np.random.default_rng(4)
    x = np.column_stack([np.ones(40), rng.uniform(-1, 1, size=40)])
    y = (rng.random(40) < 0.5).astype(int)
    beta, kappa, gram, cross = 0.5, 0.23, x.T @ x + 1.0, x.T @ y - 0.5  # released, say

    def residual(value, u):
        return beta * u + kappa * u**2 / 2 - pm.math.log1pexp(u)

    with pm.Model():
        x_obs = pmp.PrivateData("x_obs", x, bounds=([1, -1], [1, 1]))
        y_obs = pmp.PrivateData("y_obs", y, bounds=(0, 1))
        w = pm.Normal("w", 0, 2, shape=2)
        pm.Potential("proxy", w @ (cross - beta * gram[:, 0]) - kappa / 2 * w @ gram @ w)
        pm.CustomDist("y", x_obs @ w, logp=residual, observed=y_obs)
        step = pmp.PrivateMetropolis(
            clip=0.01,
            sampling_rate=0.5,
            noise_scale=1.0,
            secure=False,
            compile_kwargs={"mode": "FAST_COMPILE"},  # no C compiler: one evaluation
        )
    w0, w1 = np.array([0.1, 0.4]), np.array([0.11, 0.39])
    prior_ratio, ratios = step._log_ratio_terms(w1, w0)

    def g(u):
        return np.logaddexp(0, u) - beta * u - kappa * u**2 / 2

    def proxy(w):
        return w @ (cross - beta * gram[:, 0]) - kappa / 2 * w @ gram @ w - w @ w / 8

    np.testing.assert_allclose(ratios, g(x @ w0) - g(x @ w1), rtol=1e-9, atol=1e-15)
    assert float(prior_ratio) == pytest.approx(proxy(w1) - proxy(w0), rel=1e-9)
    assert np.abs(ratios).max() < 0.05 * np.abs(x @ (w1 - w0)).max()


def _spied(step):
    """The subsample function of ``step``, wrapped to record the rows of each call."""
    function = step._compiled_subset_terms()
    rows = []

    def spy(q1, q0, *data):
        rows.append(len(data[0]))
        return function(q1, q0, *data)

    step._subset_function = spy
    return rows


def test_a_subsampled_step_reads_only_its_subsample_and_releases_the_same_draws(mean_model):
    """The subsample is drawn before any record is read and only its rows are read (issue 38:
    93, 9.7, 0.74 steps per CPU second at n = 10⁴, 10⁵, 10⁶ with or without subsampling):
    the same words of the step's generator in the same order, so the same Λ̃ as reading
    every record and keeping the subsample's ratios, and the same seeded draws."""
    model, step = mean_model
    fast, full = copy.copy(step), _mean_step(model)
    full._subset_function = False  # reads every record (as a graph fixing n would)
    with model:
        runs = [
            pmp.sample(20, tune=10, chains=1, cores=1, step=s, random_seed=5) for s in (fast, full)
        ]
    np.testing.assert_array_equal(runs[0].posterior["mu"].values, runs[1].posterior["mu"].values)
    rows = _spied(fast)
    fast.rng, full.rng = np.random.default_rng(3), np.random.default_rng(3)
    q0 = np.zeros(1)
    for move in np.linspace(-0.3, 0.3, 25):
        assert fast._noisy_log_odds(q0 + move, q0) == full._noisy_log_odds(q0 + move, q0)
    # Each step reads the prior on no rows, then the subsample's (q = 0.5 of n = 50).
    assert rows[::2] == [0] * 25 and max(rows) < 50
    assert 15 < np.mean(rows[1::2]) < 35


def test_a_graph_that_fixes_n_reads_every_record():
    """A public covariate of n rows beside the records cannot be cut to the subsample: decided
    on public stand-ins, the step reads every record and keeps the subsample's ratios."""
    rng = np.random.default_rng(2)
    with pm.Model():
        z = pm.Data("z", rng.uniform(-1, 1, 30))
        y_obs = pmp.PrivateData("y_obs", rng.uniform(-1, 1, 30), bounds=(-1, 1))
        w = pm.Normal("w", 0, 1)
        pm.Normal("y", w * z, 1.0, observed=y_obs)
        step = pmp.PrivateMetropolis(
            [w], clip=0.1, sampling_rate=0.5, noise_scale=4.0, secure=False
        )
        assert step._compiled_subset_terms() is None
        idata = pmp.sample(5, tune=0, chains=1, cores=1, step=step, random_seed=1)
    assert idata.posterior["w"].shape == (1, 5)


def test_a_term_that_reads_the_record_count_reads_every_record():
    """σ = n/100 from the data's length (public): on the subsample's rows it would read the
    subsample's size instead (σ = 0.03 for σ = 2 here, ratios ×4000). Decided on public
    stand-ins of 1 to 3 rows, the step reads every record, with the full data's terms."""
    values = np.random.default_rng(2).uniform(-1, 1, size=200)
    with pm.Model() as model:
        y_obs = pmp.PrivateData("y_obs", values, bounds=(-1, 1))
        mu = pmp.TruncatedNormal("mu", 0, 2, lower=-3, upper=3)
        pm.Normal("y", mu, pt.cast(y_obs.shape[0], "float64") / 100.0, observed=y_obs)
    step = pmp.PrivateMetropolis(
        [mu], clip=0.1, sampling_rate=0.1, noise_scale=4.0, secure=False, model=model
    )
    assert step._compiled_subset_terms() is None
    _, ratios = step._log_ratio_terms(np.array([0.5]), np.zeros(1))  # on mu's interval scale
    moved = -3.0 + 6.0 / (1.0 + np.exp(-0.5))
    expected = (values**2 - (values - moved) ** 2) / (2 * 2.0**2)
    np.testing.assert_allclose(ratios, expected, rtol=1e-9)
