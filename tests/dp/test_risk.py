"""The attacker's bound beside ε (`pymc_private.dp.risk`): proved, tight where it can be, and
never below what an attacker reaches against the package's own Laplace releases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import special, stats

import pymc_private as pmp
from pymc_private.dp.composition import gaussian_mu
from pymc_private.dp.events import PureEvent, Release, ZcdpEvent
from pymc_private.dp.risk import pure_gaussian_mu, true_positive_bound
from pymc_private.errors import InvalidPrivacyParameterError


def _pure_tradeoff(epsilon: float, alpha: np.ndarray) -> np.ndarray:
    return np.maximum.reduce(
        [np.zeros_like(alpha), 1 - np.exp(epsilon) * alpha, np.exp(-epsilon) * (1 - alpha)]
    )


def _gaussian_tradeoff(mu: float, alpha: np.ndarray) -> np.ndarray:
    return stats.norm.cdf(stats.norm.isf(alpha) - mu)


@pytest.mark.parametrize("epsilon", [0.01, 0.3, 1.0, 3.0, 10.0])
def test_pure_dp_implies_gaussian_dp_with_the_smallest_mu(epsilon):
    """G_μ ≤ f_{ε,0} everywhere (the proof in the module docstring, on a fine grid), with
    equality at the kink α* = 1/(1 + e^ε): a smaller μ is not implied."""
    mu = pure_gaussian_mu(epsilon)
    alpha = np.concatenate([np.geomspace(1e-12, 0.5, 4000), 1 - np.geomspace(1e-12, 0.5, 4000)])
    assert np.all(_gaussian_tradeoff(mu, alpha) <= _pure_tradeoff(epsilon, alpha) + 1e-12)
    kink = special.expit(-epsilon)
    assert _gaussian_tradeoff(mu, np.array([kink]))[0] == pytest.approx(kink, rel=1e-9)
    assert _gaussian_tradeoff(0.99 * mu, np.array([kink]))[0] > kink


def test_one_pure_release_is_bounded_exactly_by_randomized_response():
    """ε-DP randomized response reaches TPR = e^ε·α below the kink, the bound itself."""
    epsilon = 1.0
    risk = pmp.PrivacyLedger([Release("laplace", PureEvent(epsilon))]).risk((0.001, 0.01, 0.1))
    np.testing.assert_allclose(risk.true_positive_rates, np.e * np.array([0.001, 0.01, 0.1]))
    assert risk.mu == pytest.approx(pure_gaussian_mu(epsilon))


def _laplace_attack(epsilon: float, copies: int, alpha: float, seed: int) -> tuple[float, float]:
    """The most powerful test (Neyman–Pearson: the log-likelihood ratio) of a count 0 against
    its neighbour 1, seen through ``copies`` releases of Laplace noise of scale 1/ε, at
    false-positive rate α: its true-positive rate by simulation, and a standard error."""
    rng = np.random.default_rng(seed)
    draws = 200_000

    def ratio(truth):
        y = truth + rng.laplace(0.0, 1.0 / epsilon, (draws, copies))
        return (epsilon * (np.abs(y) - np.abs(y - 1.0))).sum(axis=1)

    null, alternative = ratio(0.0), ratio(1.0)
    threshold = np.quantile(null, 1 - alpha)
    # Ties at the threshold (a single release's ratio is ±ε on both tails): randomise them.
    above, at = (null > threshold).mean(), (null == threshold).mean()
    share = 0.0 if at == 0 else (alpha - above) / at
    power = (alternative > threshold).mean() + share * (alternative == threshold).mean()
    return power, math.sqrt(power * (1 - power) / draws)


@pytest.mark.parametrize(("epsilon", "copies"), [(1.0, 1), (0.1, 30), (0.5, 8)])
@pytest.mark.parametrize("alpha", [0.01, 0.1])
def test_no_attack_on_laplace_releases_beats_the_bound(epsilon, copies, alpha):
    """The bound the ledger states for ``copies`` Laplace releases against the optimal
    attacker on a count and its neighbour: never exceeded (within 4 standard errors of the
    simulation), and close for one release (the Laplace law's trade-off touches f_ε)."""
    ledger = pmp.PrivacyLedger([Release("laplace", PureEvent(epsilon), count=copies)])
    (bound,) = ledger.risk((alpha,)).true_positive_rates
    power, error = _laplace_attack(epsilon, copies, alpha, seed=copies)
    assert power <= bound + 4 * error
    if copies == 1:
        assert power > 0.85 * bound


def test_the_bound_catches_a_mechanism_charged_half():
    """An auditor's check: 30 Laplace releases at ε = 0.2 recorded as ε = 0.1 each. The
    optimal attacker then beats the bound the ledger states."""
    ledger = pmp.PrivacyLedger([Release("laplace", PureEvent(0.1), count=30)])
    (bound,) = ledger.risk((0.1,)).true_positive_rates
    power, error = _laplace_attack(0.2, 30, 0.1, seed=7)
    assert power > bound + 4 * error


def test_gaussian_dp_composes_in_quadrature_and_only_for_pure_releases():
    groups = ((PureEvent(0.5), 4), (PureEvent(1.0), 1))
    expected = math.sqrt(4 * pure_gaussian_mu(0.5) ** 2 + pure_gaussian_mu(1.0) ** 2)
    assert gaussian_mu(groups) == pytest.approx(expected)
    assert gaussian_mu(((PureEvent(0.5, 1e-6), 1),)) is None
    assert gaussian_mu(((ZcdpEvent(0.1, 1e-6), 1),)) is None
    ledger = pmp.PrivacyLedger([Release("gaussian", ZcdpEvent(0.1, 1e-6))])
    risk = ledger.risk((0.01,))
    assert risk.mu is None and 0.01 < risk.true_positive_rates[0] < 1.0


def test_an_empty_ledger_leaves_the_attacker_guessing():
    risk = pmp.PrivacyLedger().risk((0.01, 0.2))
    assert risk.true_positive_rates == (0.01, 0.2) and risk.mu == 0.0


@given(
    st.lists(
        st.one_of(
            st.floats(allow_nan=True, allow_infinity=True),
            st.sampled_from([0.0, 1.0, -0.1, 1.5]),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_false_positive_rates_outside_the_open_interval_are_refused(rates):
    ledger = pmp.PrivacyLedger([Release("laplace", PureEvent(1.0))])
    if all(0.0 < rate < 1.0 for rate in rates):
        risk = ledger.risk(rates)
        assert all(
            fpr <= tpr <= 1.0
            for fpr, tpr in zip(risk.false_positive_rates, risk.true_positive_rates, strict=True)
        )
        return
    with pytest.raises(InvalidPrivacyParameterError, match="strictly between 0 and 1"):
        ledger.risk(rates)


@pytest.mark.parametrize("rates", [(), "0.1", None])
def test_false_positive_rates_that_are_not_numbers_are_refused(rates):
    with pytest.raises(InvalidPrivacyParameterError):
        pmp.PrivacyLedger().risk(rates)


@given(st.floats(0.01, 5.0), st.integers(1, 50), st.floats(1e-4, 0.5))
def test_the_bound_grows_with_what_was_spent_and_with_the_false_positive_rate(
    epsilon, count, alpha
):
    profile = [(epsilon, 0.0)]
    assert alpha <= true_positive_bound(profile, None, alpha) <= 1.0
    assert true_positive_bound(profile, None, alpha) <= true_positive_bound(
        [(2 * epsilon, 0.0)], None, alpha
    )
    assert true_positive_bound(profile, None, alpha / 2) <= true_positive_bound(
        profile, None, alpha
    )


def test_the_report_and_the_ledger_display_state_the_risk():
    ledger = pmp.PrivacyLedger([Release("laplace", PureEvent(0.1), count=30)])
    report = pmp.privacy_report(ledger, false_positive_rates=(0.05,))
    assert report.risk == ledger.risk((0.05,))
    assert "μ = 0.686" in report.description and "at 5%" in report.description
    assert report.risk.line in str(report)  # the display states the report's own rates
    assert "membership attacker" in repr(ledger) and "membership attacker" in ledger._repr_html_()


def test_floating_point_never_puts_the_bound_below_what_randomized_response_reaches():
    """The attacker's review: one ε-RR release reaches e^ε·α below the kink exactly; the
    computed bound (rounded up) is never below it, nor below α, and μ is accurate for tiny ε
    (2Φ⁻¹(e^ε/(1 + e^ε)) ≈ 2·(ε/4)·√(2π) = ε·√(π/2) for ε → 0)."""
    rng = np.random.default_rng(9)
    for epsilon, alpha in zip(rng.uniform(0.01, 3, 200), rng.uniform(1e-4, 0.3, 200), strict=True):
        kink = float(special.expit(-epsilon))
        if alpha < kink:
            exact = math.exp(epsilon) * alpha
            assert true_positive_bound([(epsilon, 0.0)], pure_gaussian_mu(epsilon), alpha) >= exact
    assert pure_gaussian_mu(1e-17) == pytest.approx(1e-17 * math.sqrt(math.pi / 2), rel=1e-9, abs=0)
    tiny = pmp.PrivacyLedger([Release("laplace", PureEvent(1e-17))]).risk((0.001, 0.1))
    rates = zip(tiny.false_positive_rates, tiny.true_positive_rates, strict=True)
    assert all(tpr >= fpr for fpr, tpr in rates)


def test_risk_is_stated_when_the_unavoidable_delta_is_above_one_half():
    ledger = pmp.PrivacyLedger([Release("laplace", PureEvent(0.1, 0.3), count=2)])
    risk = ledger.risk((0.01,))
    assert 0.01 <= risk.true_positive_rates[0] <= 1.0 and "membership attacker" in repr(ledger)
