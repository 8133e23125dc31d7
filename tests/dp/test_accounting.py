"""Tests of the privacy ledger, its compositions and budgets (pymc_private.dp)."""

from __future__ import annotations

import functools
import json
import math
import operator

import numpy as np
import pytest
from dp_accounting import dp_event, privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from pymc_private.data.ledgers import PrivacyLedger
from pymc_private.dp.budget import Budget
from pymc_private.dp.composition import Composition
from pymc_private.dp.events import PureEvent, Release
from pymc_private.errors import BudgetExceededError, InvalidPrivacyParameterError

SETTINGS = settings(derandomize=True, deadline=None, max_examples=40)


def exact_epsilon(count: int, eps: float, delta: float) -> float:
    """The exact worst-case ε of ``count`` ε-DP releases at ``delta``, independent of the
    ledger: k-fold randomized response has privacy loss (k − 2j)ε with j ~ Binomial(k, q),
    q = 1/(1 + e^ε), and δ(ε') = E[(1 − e^{ε' − L})_+] (Kairouz et al. 2015, Theorem 3.3)."""
    j = np.arange(count + 1)
    prob = stats.binom.pmf(j, count, 1 / (1 + math.exp(eps)))
    loss = (count - 2 * j) * eps

    def excess(target: float) -> float:
        above = loss > target
        return float(np.sum(prob[above] * -np.expm1(target - loss[above]))) - delta

    if excess(0.0) <= 0:
        return 0.0
    return optimize.brentq(excess, 0.0, count * eps, xtol=1e-13)


def copies(eps: float, k: int, delta: float = 0.0, **fields) -> list[Release]:
    return [Release("exponential_mechanism", PureEvent(eps, delta), **fields) for _ in range(k)]


# --- the reference numbers -------------------------------------------------------------------


def test_hundred_releases_sum_exactly_at_delta_zero():
    for ledger in (PrivacyLedger(copies(0.1, 100)), PrivacyLedger(copies(0.1, 1, count=100))):
        assert ledger.composition() == Composition(10.0, 0.0, "sum")
        assert ledger.epsilon(0.0) == 10.0


def test_hundred_releases_at_delta_1e6_use_the_pld_and_match_the_exact_worst_case():
    ledger = PrivacyLedger(copies(0.1, 100))
    composition = ledger.composition(1e-6)
    exact = exact_epsilon(100, 0.1, 1e-6)
    assert exact == pytest.approx(4.7746, abs=1e-4)
    assert composition.method == "pld"
    assert composition.delta == 1e-6
    # Pessimistic (never below the exact worst case) and within 1e-6 of it. The 4.69 that
    # dp-accounting gives for LaplaceDpEvent holds for the Laplace mechanism only; a release
    # of unknown form (exponential mechanism, discrete Laplace) can reach 4.7746.
    assert exact - 1e-9 <= composition.epsilon <= exact + 1e-6


def test_five_releases_at_delta_1e6_report_the_plain_sum_not_the_looser_rdp():
    ledger = PrivacyLedger(copies(0.1, 5))
    assert ledger.composition(1e-6) == Composition(0.5, 1e-6, "sum")
    rdp = rdp_privacy_accountant.RdpAccountant()
    rdp.compose(dp_event.LaplaceDpEvent(10.0), 5)
    assert rdp.get_epsilon(1e-6) == pytest.approx(0.502, abs=1e-3)  # the figure not to report


def test_thirty_releases_of_a_tenth_cost_exactly_three():
    # Why float sums are not used (left to right, as a running total adds; Python 3.12's
    # sum() compensates its rounding, and happens to give 3.0 here):
    assert functools.reduce(operator.add, [0.1] * 30) != 3.0
    assert functools.reduce(operator.add, [0.1] * 11) != 1.1
    for ledger in (PrivacyLedger(copies(0.1, 30)), PrivacyLedger(copies(0.1, 1, count=30))):
        assert ledger.epsilon() == 3.0
        assert Budget(3.0).check(ledger) == Composition(3.0, 0.0, "sum")
    assert Budget(3.0).affordable_count(PrivacyLedger(), 0.1) == 30
    assert Budget(1.1).check(PrivacyLedger(), copies(0.1, 11)).epsilon == 1.1


@SETTINGS
@given(
    count=st.integers(1, 300),
    eps=st.floats(0.01, 1.0),
    delta=st.sampled_from([1e-9, 1e-6, 1e-3]),
)
def test_composition_is_sound_and_never_worse_than_the_plain_sum(count, eps, delta):
    ledger = PrivacyLedger(copies(eps, 1, count=count))
    composition = ledger.composition(delta)
    plain = ledger.epsilon(0.0)
    assert composition.epsilon <= plain
    assert composition.epsilon >= exact_epsilon(count, eps, delta) - 1e-9 * plain
    if composition.method != "sum":
        assert composition.epsilon < plain * (1 - 1e-3)


def test_large_counts_compose_by_self_composition_and_group_across_chains():
    per_chain = [
        Release("gibbs_exponential", PureEvent(0.01), count=25_000, chain=c) for c in range(4)
    ]
    ledger = PrivacyLedger(per_chain)
    composition = ledger.composition(1e-6)
    assert composition.method == "pld"
    assert composition.epsilon == pytest.approx(exact_epsilon(100_000, 0.01, 1e-6), rel=1e-6)
    one_record = PrivacyLedger([Release("gibbs_exponential", PureEvent(0.01), count=100_000)])
    assert one_record.composition(1e-6) == composition
    assert ledger.epsilon() == 1000.0
    assert PrivacyLedger(per_chain).composition(1e-6) is composition  # cached on the contents


def test_many_distinct_epsilons_fall_back_to_the_rdp_bound_of_randomized_response():
    values = np.linspace(0.01, 0.2, 40).tolist()
    ledger = PrivacyLedger(Release("laplace", PureEvent(eps), count=1000) for eps in values)
    composition = ledger.composition(1e-6)
    assert composition.method == "rdp"
    reference = rdp_privacy_accountant.RdpAccountant(
        neighboring_relation=privacy_accountant.NeighboringRelation.REPLACE_ONE
    )
    for eps in values:
        reference.compose(dp_event.RandomizedResponseDpEvent(2 / (1 + math.exp(eps)), 2), 1000)
    # The ledger minimises over dp-accounting's orders and a denser grid: never larger.
    reference_epsilon = reference.get_epsilon(1e-6)
    assert reference_epsilon * (1 - 1e-2) <= composition.epsilon <= reference_epsilon
    assert composition.epsilon < 0.2 * ledger.epsilon()


def exact_mixed_epsilon(groups: list[tuple[int, int]], grid: float, delta: float) -> float:
    """The exact worst-case ε of groups of (n, count) releases of ε = n·grid at ``delta``, by
    direct (not FFT) convolution of their randomized-response privacy-loss laws."""
    pmf, lowest = np.array([1.0]), 0
    for n, count in groups:
        j = np.arange(count + 1)
        law = np.zeros(2 * count * n + 1)
        law[(count - 2 * j) * n + count * n] = stats.binom.pmf(
            j, count, 1 / (1 + math.exp(n * grid))
        )
        pmf, lowest = np.convolve(pmf, law), lowest - count * n
    loss = (np.arange(len(pmf)) + lowest) * grid

    def excess(target: float) -> float:
        above = loss > target
        return float(np.sum(pmf[above] * -np.expm1(target - loss[above]))) - delta

    return optimize.brentq(excess, 0.0, loss[-1], xtol=1e-13)


@pytest.mark.parametrize("delta", [1e-6, 1e-9])
def test_mixed_epsilons_on_a_common_grid_match_the_exact_composition(delta):
    ledger = PrivacyLedger(
        [
            Release("a", PureEvent(0.1), count=50),
            Release("b", PureEvent(0.3), count=50),
            Release("c", PureEvent(0.17), count=20),
        ]
    )
    composition = ledger.composition(delta)
    exact = exact_mixed_epsilon([(10, 50), (30, 50), (17, 20)], 0.01, delta)
    assert composition.method == "pld"
    assert exact - 1e-9 <= composition.epsilon <= exact * (1 + 1e-6)


# --- releases with δ_i > 0 -------------------------------------------------------------------


def test_approximate_releases_have_an_unavoidable_delta():
    ledger = PrivacyLedger([Release("gaussian", PureEvent(1.0, 1e-6))])
    with pytest.raises(InvalidPrivacyParameterError, match=r"1e-06.*delta"):
        ledger.epsilon(0.0)
    with pytest.raises(InvalidPrivacyParameterError, match="at least 1e-06"):
        ledger.epsilon(5e-7)
    assert ledger.composition(1e-6) == Composition(1.0, 1e-6, "sum")


def test_approximate_releases_compose_as_randomized_response_with_a_leak():
    ledger = PrivacyLedger(copies(0.1, 1, count=100, delta=1e-8))
    leak = 1 - (1 - 1e-8) ** 100
    exact = exact_epsilon(100, 0.1, (1e-5 - leak) / (1 - leak))
    composition = ledger.composition(1e-5)
    assert composition.method == "pld"
    assert exact - 1e-9 <= composition.epsilon <= exact + 1e-6


# --- the ledger ------------------------------------------------------------------------------


def test_free_releases_are_kept_and_cost_nothing():
    ledger = PrivacyLedger([Release("posterior_predictive", PureEvent(0.0), count=1000)])
    assert len(ledger) == 1
    assert ledger.releases[0].count == 1000
    assert ledger.composition(1e-6) == Composition(0.0, 1e-6, "sum")
    ledger.record(Release("laplace", PureEvent(0.5)))
    assert ledger.epsilon() == 0.5


def test_would_compose_records_nothing_and_predicts_recording():
    ledger = PrivacyLedger(copies(0.1, 40))
    planned = copies(0.1, 1, count=60)
    before = ledger.to_dict()
    predicted = ledger.would_compose(planned, delta=1e-6)
    assert ledger.to_dict() == before
    ledger.record_all(planned)
    assert ledger.composition(1e-6) == predicted
    assert predicted.epsilon == pytest.approx(exact_epsilon(100, 0.1, 1e-6), abs=1e-6)


def test_releases_are_a_read_only_tuple():
    ledger = PrivacyLedger(copies(0.2, 3))
    assert isinstance(ledger.releases, tuple)
    assert len(ledger) == 3
    with pytest.raises(TypeError, match="must be a Release"):
        ledger.record({"mechanism": "laplace", "epsilon": 1.0})
    assert len(ledger) == 3


def test_json_round_trip_is_lossless():
    ledger = PrivacyLedger(
        [
            Release("discrete_laplace", PureEvent(0.5), sensitivity=2.0, statistic="counts[y, x]"),
            Release(
                "laplace", PureEvent(0.25), secure=False, statistic="sum x", note="numpy noise ε"
            ),
            Release("gaussian", PureEvent(0.3, 1e-7), sensitivity=1.5),
            Release("gibbs_exponential", PureEvent(0.01), count=500, chain=3, draw=250),
            Release("free", PureEvent(0.0), count=7, chain=0, draw=0),
        ]
    )
    text = ledger.to_json()
    restored = PrivacyLedger.from_json(text)
    assert restored.to_dict() == ledger.to_dict() == json.loads(text)
    assert restored.releases == ledger.releases
    assert restored.releases[1].secure is False
    assert restored.releases[3].chain == 3 and restored.releases[3].draw == 250
    assert restored.composition(1e-6) == ledger.composition(1e-6)


@pytest.mark.parametrize(
    ("fields", "twin"),
    [
        ({"epsilon": -0.0}, {"epsilon": 0.0}),
        ({"epsilon": 0.5, "delta": -0.0}, {"epsilon": 0.5, "delta": 0.0}),
        ({"epsilon": -0.0, "delta": -0.0, "count": 3}, {"epsilon": 0, "delta": 0, "count": 3}),
    ],
    ids=["epsilon", "delta", "both"],
)
def test_negative_zero_is_stored_as_zero_and_serialises_identically(fields, twin):
    """−0.0 is the same ε as +0.0; stored as is it serialised as "-0.0", printed as "-0" and
    grouped with +0.0 under whichever came first. Normalised, the two releases are one record:
    same JSON text, same ledger summary, same composition, in either order."""
    negative, positive = release_of(**fields), release_of(**twin)
    for value in (negative.epsilon, negative.delta):
        assert math.copysign(1.0, value) == 1.0
    assert json.dumps(negative.to_dict()) == json.dumps(positive.to_dict())
    restored = PrivacyLedger.from_json(PrivacyLedger([negative]).to_json())
    assert restored.releases == (positive,)
    assert math.copysign(1.0, restored.releases[0].epsilon) == 1.0
    first, second = PrivacyLedger([negative, positive]), PrivacyLedger([positive, negative])
    assert first.to_json() == second.to_json()
    assert first.summary(1e-6) == second.summary(1e-6)
    assert (
        first.composition() == second.composition() == PrivacyLedger([positive] * 2).composition()
    )


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"epsilon": True}, "epsilon"),
        ({"epsilon": 0.5, "delta": False}, "delta"),
        ({"epsilon": 0.5, "count": True}, "count"),
    ],
)
def test_booleans_are_not_numbers_in_a_release(fields, match):
    """True would be stored as ε = 1.0 or count True, serialised as ``true``."""
    with pytest.raises(InvalidPrivacyParameterError, match=f"Release {match}"):
        release_of(**fields)


def release_of(epsilon, delta=0.0, **fields) -> Release:
    return Release("laplace", PureEvent(epsilon, delta), **fields)


def test_from_dict_rejects_what_is_not_a_ledger():
    with pytest.raises(ValueError, match="format"):
        PrivacyLedger.from_dict({"releases": []})
    with pytest.raises(ValueError, match="version"):
        PrivacyLedger.from_dict({"format": "pymc_private.PrivacyLedger", "version": 99})
    data = PrivacyLedger(copies(0.1, 1)).to_dict()
    data["releases"][0]["epsilon"] = -1.0
    with pytest.raises(InvalidPrivacyParameterError, match="epsilon"):
        PrivacyLedger.from_dict(data)


def test_summary_groups_releases_and_reports_totals():
    releases = [Release("gibbs_exponential", PureEvent(0.01), count=250, chain=c) for c in range(4)]
    releases.append(Release("laplace", PureEvent(0.5), statistic="counts", secure=False))
    ledger = PrivacyLedger(releases)
    rows = ledger.summary(delta=1e-6)
    assert [row["kind"] for row in rows] == ["release", "release", "total", "total"]
    gibbs, laplace, plain, accounted = rows
    assert (gibbs["mechanism"], gibbs["count"], gibbs["subtotal"]) == (
        "gibbs_exponential",
        1000,
        10.0,
    )
    assert (laplace["statistic"], laplace["secure"], laplace["subtotal"]) == ("counts", False, 0.5)
    assert (plain["subtotal"], plain["delta"], plain["method"]) == (10.5, 0.0, "sum")
    assert plain["secure"] is False and plain["count"] == 1001
    assert accounted["delta"] == 1e-6
    assert accounted["subtotal"] == ledger.epsilon(1e-6) < 10.5
    text = repr(ledger)
    assert "gibbs_exponential" in text and "NO" in text and "10.5" in text
    assert [row["kind"] for row in ledger.summary()] == ["release", "release", "total"]


def test_reprs_are_readable_and_escaped():
    assert repr(PrivacyLedger()) == "PrivacyLedger: no releases"
    html = PrivacyLedger([Release("a<b", PureEvent(0.1), statistic="x&y")])._repr_html_()
    assert "<table>" in html and "a&lt;b" in html and "x&amp;y" in html
    # The title counts releases and table rows (three releases of one kind: one row), and a
    # composition at δ that is no smaller than the plain sum is not shown twice.
    ledger = PrivacyLedger(copies(0.1, 3))
    assert (
        repr(ledger).splitlines()[0] == "PrivacyLedger: 3 releases in 1 row; ε protects one record"
    )
    assert [row["kind"] for row in ledger.summary(1e-6)] == ["release", "total"]
    assert len(PrivacyLedger(copies(0.1, 100)).summary(1e-6)) == 3
    description = PrivacyLedger(copies(0.1, 100)).composition(1e-6).description
    assert "privacy-loss-distribution" in description and "4.77457" in description


# --- budgets ---------------------------------------------------------------------------------


def test_budget_refusal_states_the_numbers_and_changes_nothing():
    ledger = PrivacyLedger(copies(0.1, 8))
    before = ledger.to_dict()
    with pytest.raises(BudgetExceededError) as info:
        Budget(1.0).check(ledger, copies(0.1, 3))
    message = str(info.value)
    for figure in ("ε = 0.3", "ε = 0.8 already spent", "ε = 1.1", "budget ε = 1", "fewer"):
        assert figure in message
    assert ledger.to_dict() == before and len(ledger) == 8
    assert Budget(1.0).check(ledger, copies(0.1, 2)) == Composition(1.0, 0.0, "sum")
    assert "delta = 0" not in message  # at δ = 1e-6 these 11 releases do not fit either


def test_pure_budget_refusal_shows_what_a_small_delta_would_allow():
    # 2000 releases of 0.01: a plain sum of 20 against about 2.2 at δ = 1e-6.
    many = copies(0.01, 1, count=2000)
    with pytest.raises(BudgetExceededError) as info:
        Budget(5.0).check(PrivacyLedger(), many)
    message = str(info.value)
    relaxed = PrivacyLedger(many).composition(1e-6).epsilon
    assert relaxed < 5.0 and "Budget(5, delta=1e-06)" in message and "delta = 0" in message
    assert Budget(5.0, delta=1e-6).check(PrivacyLedger(), many).epsilon == relaxed
    with pytest.raises(BudgetExceededError) as info:
        Budget(1.0, delta=1e-6).check(PrivacyLedger(), many)
    assert "delta = 0" not in str(info.value)


def test_budget_with_delta_uses_the_accountant():
    ledger = PrivacyLedger(copies(0.1, 1, count=100))
    with pytest.raises(BudgetExceededError, match="ε = 10 at δ = 0"):
        Budget(5.0).check(ledger)
    assert Budget(5.0, 1e-6).check(ledger).method == "pld"


def test_budget_refuses_a_delta_it_cannot_cover():
    ledger = PrivacyLedger([Release("gaussian", PureEvent(0.1, 1e-5))])
    with pytest.raises(BudgetExceededError, match=r"1e-05.*delta = 1e-06"):
        Budget(10.0, 1e-6).check(ledger)
    assert Budget(10.0, 1e-6).remaining(ledger) == 0.0
    assert Budget(10.0, 1e-6).affordable_count(ledger, 0.1) == 0


def test_remaining_is_exact_at_delta_zero():
    ledger = PrivacyLedger(copies(0.1, 3))
    assert Budget(1.0).remaining(ledger) == 0.7
    assert Budget(0.2).remaining(ledger) == 0.0
    assert Budget(5.0, 1e-6).remaining(PrivacyLedger(copies(0.1, 100))) == pytest.approx(
        5.0 - exact_epsilon(100, 0.1, 1e-6), abs=1e-6
    )


def test_affordable_count_is_exact_at_delta_zero():
    assert Budget(1.0).affordable_count(PrivacyLedger(), 0.1, per_count=4) == 2
    assert Budget(1.0).affordable_count(PrivacyLedger(copies(0.25, 1)), 0.1, per_count=4) == 1
    assert Budget(1.0).affordable_count(PrivacyLedger(copies(0.5, 3)), 0.1) == 0
    assert Budget(3.0).affordable_count(PrivacyLedger(copies(0.1, 10)), 0.1) == 20


def test_affordable_count_with_delta_matches_the_exact_composition():
    budget = Budget(5.0, 1e-6)
    k = budget.affordable_count(PrivacyLedger(), 0.1)
    assert exact_epsilon(k, 0.1, 1e-6) <= 5.0 < exact_epsilon(k + 1, 0.1, 1e-6)
    assert k > 50  # the plain sum would allow 50
    budget.check(PrivacyLedger(), copies(0.1, 1, count=k))
    with pytest.raises(BudgetExceededError):
        budget.check(PrivacyLedger(), copies(0.1, 1, count=k + 1))
    chains = budget.affordable_count(PrivacyLedger(copies(0.1, 1, count=20)), 0.1, per_count=4)
    assert 20 + 4 * chains <= k < 20 + 4 * (chains + 1)
    # A ledger already over the budget by the plain sum (10 > 5) still affords more.
    assert budget.affordable_count(PrivacyLedger(copies(0.1, 1, count=100)), 0.1) == k - 100


# --- validation ------------------------------------------------------------------------------

bad_epsilons = st.one_of(
    st.floats(max_value=0.0), st.just(math.nan), st.just(math.inf), st.just(-math.inf)
)
bad_deltas = st.one_of(
    st.floats(max_value=0.0, exclude_max=True),
    st.floats(min_value=1.0),
    st.just(math.nan),
)


@SETTINGS
@given(eps=bad_epsilons)
def test_bad_budget_epsilon_is_refused(eps):
    with pytest.raises(InvalidPrivacyParameterError, match="Budget epsilon"):
        Budget(eps)


@SETTINGS
@given(delta=bad_deltas)
def test_bad_budget_delta_is_refused(delta):
    with pytest.raises(InvalidPrivacyParameterError, match="Budget delta"):
        Budget(1.0, delta)


@SETTINGS
@given(eps=st.one_of(st.floats(max_value=0.0, exclude_max=True), st.just(math.nan)))
def test_bad_release_epsilon_is_refused(eps):
    with pytest.raises(InvalidPrivacyParameterError, match="epsilon"):
        Release("laplace", PureEvent(eps))


@SETTINGS
@given(eps=st.sampled_from([math.inf, -math.inf]))
def test_infinite_release_epsilon_is_refused(eps):
    with pytest.raises(InvalidPrivacyParameterError, match="epsilon"):
        Release("laplace", PureEvent(eps))


@SETTINGS
@given(delta=bad_deltas)
def test_bad_release_delta_and_bad_query_delta_are_refused(delta):
    with pytest.raises(InvalidPrivacyParameterError, match="delta"):
        Release("laplace", PureEvent(1.0, delta))
    ledger = PrivacyLedger(copies(0.1, 3))
    with pytest.raises(InvalidPrivacyParameterError, match=r"delta must be a number in \[0, 1\)"):
        ledger.composition(delta)
    with pytest.raises(InvalidPrivacyParameterError):
        ledger.would_compose(copies(0.1, 1), delta=delta)
    assert len(ledger) == 3


@SETTINGS
@given(
    good=st.lists(st.floats(0.0, 2.0), max_size=8),
    position=st.integers(0, 8),
    bad=st.sampled_from([None, 0.5, {"mechanism": "laplace", "epsilon": 1.0}, "laplace"]),
)
def test_record_all_with_one_bad_item_records_nothing(good, position, bad):
    ledger = PrivacyLedger(copies(0.1, 2))
    before = ledger.to_dict()
    items = [Release("laplace", PureEvent(eps)) for eps in good]
    items.insert(min(position, len(items)), bad)
    with pytest.raises(TypeError, match=r"releases\[\d+\] must be a Release"):
        ledger.record_all(items)
    assert ledger.to_dict() == before


@SETTINGS
@given(spent=st.integers(0, 20), planned=st.integers(1, 40), budget=st.floats(0.05, 3.0))
def test_budget_check_never_records_and_refuses_exactly_when_over(spent, planned, budget):
    ledger = PrivacyLedger(copies(0.1, 1, count=spent) if spent else [])
    before = ledger.to_dict()
    total = ledger.would_compose(copies(0.1, 1, count=planned)).epsilon
    if total > budget:
        with pytest.raises(BudgetExceededError, match="Nothing was recorded"):
            Budget(budget).check(ledger, copies(0.1, 1, count=planned))
    else:
        assert Budget(budget).check(ledger, copies(0.1, 1, count=planned)).epsilon == total
    assert ledger.to_dict() == before


@pytest.mark.parametrize(
    ("eps", "per_count", "match"),
    [(0.0, 1, "epsilon_per_release"), (math.nan, 1, "epsilon_per_release"), (0.1, 0, "per_count")],
)
def test_affordable_count_validates_its_arguments(eps, per_count, match):
    with pytest.raises(InvalidPrivacyParameterError, match=match):
        Budget(1.0).affordable_count(PrivacyLedger(), eps, per_count=per_count)
