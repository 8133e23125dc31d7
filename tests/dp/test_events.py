"""Typed privacy events: what each states, how releases carry them to the journal, and the
accountants that read them by type and refuse the types they do not know."""

from __future__ import annotations

import json
import math
from dataclasses import FrozenInstanceError, dataclass, fields

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution
from scipy import stats

import pymc_private as pmp
from pymc_private.dp.composition import ACCOUNTANTS, accepts, compose, counts_of, groups_of
from pymc_private.dp.events import (
    JOURNAL_EVENTS,
    STEP_DELTA,
    PrivacyEvent,
    PureEvent,
    Release,
    SubsampledGaussianEvent,
    UnitShiftGaussianEvent,
    ZcdpEvent,
    randomized_response_rdp,
    subsampled_gaussian_epsilon,
    unit_shift_epsilon,
    zcdp_epsilon,
)
from pymc_private.dp.mechanisms import numpy_discrete_gaussian
from pymc_private.errors import InvalidPrivacyParameterError, UnsupportedEventError

SIGMA, SHIFTS, DELTA = 3.0, 4, 1e-6
RHO = math.nextafter(SHIFTS / (2 * SIGMA**2), math.inf)  # 2/9 rounded up, as OpenDP's map

EVENTS = [
    PureEvent(0.5),
    PureEvent(0.5, 1e-7),
    ZcdpEvent(0.02, DELTA),
    UnitShiftGaussianEvent(SIGMA, SHIFTS, RHO, DELTA),
    SubsampledGaussianEvent(0.1, 4.0),
]


@dataclass(frozen=True)
class PlantedEvent(PrivacyEvent):
    """An event of a type no accountant knows (its curve would even be valid)."""

    epsilon: float
    delta: float = 0.0
    rdp_only = False

    def rdp(self, orders: np.ndarray) -> np.ndarray:
        return randomized_response_rdp(np.array([self.epsilon]), orders)[0]


@dataclass(frozen=True)
class RenamedPureEvent(PureEvent):
    """A subclass is not read as its base: its bound may differ."""


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: type(e).__name__)
def test_every_event_is_frozen_hashable_replace_one_and_states_its_own_guarantee(event):
    assert event.neighbouring == "replace-one"
    assert hash(event) == hash(type(event)(**_fields(event)))
    with pytest.raises(FrozenInstanceError):
        event.epsilon = 0.0
    assert event.epsilon_at(event.delta) <= event.epsilon * (1 + 1e-9)
    curve = event.rdp(np.array([2.0, 8.0, 32.0]))
    assert np.all(np.isfinite(curve)) and np.all(np.diff(curve) >= 0)
    assert event.rdp_only == (not isinstance(event, PureEvent))
    assert event.paid_delta == (event.delta if isinstance(event, PureEvent) else 0.0)


def _fields(event: PrivacyEvent) -> dict:
    return {field.name: getattr(event, field.name) for field in fields(event)}


def test_events_state_their_epsilon_from_their_parameters_unless_given():
    assert ZcdpEvent(0.02, DELTA).epsilon == zcdp_epsilon(0.02, DELTA)
    assert ZcdpEvent(0.02, DELTA, 2.0).epsilon == 2.0  # a larger ε may be stated, not less:
    with pytest.raises(InvalidPrivacyParameterError, match="for epsilon >= "):
        ZcdpEvent(0.02, DELTA, 0.5)
    with pytest.raises(InvalidPrivacyParameterError, match="for epsilon >= "):
        SubsampledGaussianEvent(0.5, 0.5, DELTA, 1e-6)
    unit_shift = UnitShiftGaussianEvent(SIGMA, SHIFTS, RHO, DELTA)
    assert unit_shift.epsilon == unit_shift_epsilon(SIGMA, SHIFTS, DELTA)
    assert unit_shift.epsilon < zcdp_epsilon(RHO, DELTA)  # the exact profile beats zCDP
    assert unit_shift.epsilon_at(1e-3) == unit_shift_epsilon(SIGMA, SHIFTS, 1e-3)
    step = SubsampledGaussianEvent(0.1, 4.0)
    assert (step.delta, step.epsilon) == (STEP_DELTA, subsampled_gaussian_epsilon(0.1, 4.0, 1e-10))
    assert PureEvent(0.5, 1e-7).epsilon_at(1e-8) == math.inf


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: ZcdpEvent(0.1, 0.0), "delta > 0"),
        (lambda: ZcdpEvent(-1.0, DELTA), "rho"),
        (lambda: UnitShiftGaussianEvent(0.0, 1, 0.1, DELTA), "sigma"),
        (lambda: UnitShiftGaussianEvent(1.0, True, 0.1, DELTA), "shifts"),
        # σ, ρ and ε are read by different accountants: each must describe the same noise
        (lambda: UnitShiftGaussianEvent(100.0, 1, 0.5, DELTA), "rho must be K/"),
        (lambda: UnitShiftGaussianEvent(1.0, 1, 1e-4, DELTA), "rho must be K/"),
        (lambda: UnitShiftGaussianEvent(1.0, 1, 0.5, DELTA, 0.01), "for epsilon >= 4.49"),
        (lambda: SubsampledGaussianEvent(0.1, 2.0**-11), "noise_multiplier"),
        (lambda: PureEvent(math.nan), "Release epsilon"),
    ],
)
def test_invalid_events_are_refused_with_the_release_messages(build, match):
    with pytest.raises(InvalidPrivacyParameterError, match=match):
        build()


def test_a_release_needs_an_event():
    with pytest.raises(TypeError, match="PureEvent"):
        Release("laplace", 0.5)


def test_pure_and_zcdp_releases_serialise_with_the_keys_of_earlier_journals():
    keys = ["mechanism", "epsilon", "delta", "count", "sensitivity", "statistic", "secure"]
    keys += ["chain", "draw", "note", "rho"]
    for event in (PureEvent(0.5), ZcdpEvent(0.02, DELTA)):
        assert list(Release("m", event).to_dict()) == keys
    step = Release("m", SubsampledGaussianEvent(0.1, 4.0)).to_dict()
    assert list(step) == [*keys, "sampling_rate", "noise_multiplier"] and step["rho"] is None


def test_a_unit_shift_release_adds_its_sigma_and_shifts_and_reads_back_exactly(tmp_path):
    release = Release("discrete_gaussian", UnitShiftGaussianEvent(SIGMA, SHIFTS, RHO, DELTA))
    data = json.loads(json.dumps(release.to_dict()))
    assert (data["sigma"], data["shifts"], data["rho"]) == (SIGMA, SHIFTS, RHO)
    assert Release.from_dict(data) == release
    # An earlier version wrote the same release without them (ρ, Δ₂ = √K and the profile's
    # ε, below the zCDP conversion): σ and K are recovered from ρ and Δ₂, and the line reads
    # as the same unit-shift event, its ε to rounding; one stating less is refused.
    earlier_line = {k: v for k, v in data.items() if k not in ("sigma", "shifts")}
    earlier_line["sensitivity"] = math.sqrt(SHIFTS)
    earlier = Release.from_dict(earlier_line)
    assert type(earlier.event) is UnitShiftGaussianEvent and earlier.event.shifts == SHIFTS
    assert earlier.epsilon == pytest.approx(release.epsilon, rel=1e-4)
    with pytest.raises(InvalidPrivacyParameterError, match="below its noise's"):
        Release.from_dict(earlier_line | {"epsilon": 0.9 * release.epsilon})
    # secure=False drew rounded normals then, which are ρ-zCDP but not the profile's noise
    assert Release.from_dict(earlier_line | {"secure": False}).event == ZcdpEvent(RHO, DELTA)
    with pytest.raises(InvalidPrivacyParameterError, match="not a unit-shift release"):
        Release.from_dict(earlier_line | {"sensitivity": None})
    path = tmp_path / "ledger.jsonl"
    pmp.PrivacyLedger.open(path, budget=pmp.Budget(5.0, DELTA)).record(release)
    assert pmp.PrivacyLedger.open(path).releases == (release,)


def test_the_pld_reads_pure_events_only_and_every_known_type_has_an_accountant():
    for event in EVENTS:
        groups = groups_of({event: 3})
        assert accepts("pld", groups) == (type(event) is PureEvent)
        assert accepts("sum", groups) and accepts("rdp", groups)
    assert set(ACCOUNTANTS["pld"]) == {PureEvent}
    assert set(ACCOUNTANTS["profile"]) == {UnitShiftGaussianEvent}


def test_unit_shift_releases_of_one_sigma_compose_by_their_exact_profile():
    """k releases of K unit shifts each at one σ are dominated by the (kK)-fold unit-shift
    pair (`composition._unit_shift_profile_epsilon`): their ε at δ is `unit_shift_epsilon`
    (σ, kK, δ), below the RDP figure of their ρ that earlier versions reported, and at least
    dp-accounting's own figure for that pair (the profile pays its truncation and FFT
    margins on top)."""
    event = UnitShiftGaussianEvent(SIGMA, SHIFTS, RHO, DELTA)
    same_as_zcdp = ZcdpEvent(RHO, DELTA)  # its noise as a zCDP release, composed by ρ
    for count, delta in ((1, 1e-3), (1, 1e-9), (3, DELTA), (3, 1e-4)):
        total = pmp.PrivacyLedger([Release("dg", event, count=count)]).composition(delta)
        assert total.method == "profile"
        assert total.epsilon == unit_shift_epsilon(SIGMA, count * SHIFTS, delta)
        before = pmp.PrivacyLedger([Release("dg", same_as_zcdp, count=count)])
        assert total.epsilon < 0.97 * before.composition(delta).epsilon
        pair = privacy_loss_distribution.from_discrete_gaussian_mechanism(SIGMA, sensitivity=1)
        reference = pair.self_compose(count * SHIFTS).get_epsilon_for_delta(delta)
        assert reference <= total.epsilon <= reference * (1 + 1e-3)
    # At the release's own δ, one release is its own (ε, δ): the plain sum, as before.
    assert pmp.PrivacyLedger([Release("dg", event)]).composition(DELTA).method == "sum"
    # Other σ, or any other event beside them: the figures of earlier versions.
    other = UnitShiftGaussianEvent(2 * SIGMA, SHIFTS, RHO / 4, DELTA)
    for mixed in ([event, other], [event, PureEvent(0.1)], [event, ZcdpEvent(RHO, DELTA)]):
        ledger = pmp.PrivacyLedger([Release("m", e) for e in mixed])
        assert ledger.composition(1e-3).method != "profile"


@pytest.mark.parametrize("event", [PlantedEvent(0.1), RenamedPureEvent(0.1)])
def test_an_event_of_an_unknown_type_is_refused_and_nothing_is_recorded(event, tmp_path):
    planted = Release("planted", event)
    ledger = pmp.PrivacyLedger([Release("laplace", PureEvent(0.2))])
    for spend in (lambda: ledger.record(planted), lambda: ledger.record_all([planted])):
        with pytest.raises(UnsupportedEventError, match=type(event).__name__):
            spend()
    assert ledger.releases == (Release("laplace", PureEvent(0.2)),)
    with pytest.raises(UnsupportedEventError):
        pmp.Budget(10.0).check(ledger, [planted])
    with pytest.raises(UnsupportedEventError, match="ACCOUNTANTS"):
        compose(groups_of(counts_of([planted])), 1e-6)
    with pytest.raises(UnsupportedEventError):
        pmp.PrivacyLedger.open(tmp_path / "l.jsonl").record(planted)
    assert isinstance(UnsupportedEventError("x"), pmp.PrivacyError)


def test_a_unit_shift_event_below_the_profiles_delta_states_its_zcdp_epsilon():
    """Below δ = 1e-10 the profile is not used: the event states the zCDP conversion of ρ
    (finite), so a mechanism at such a δ has a cost before any noise is drawn."""
    event = UnitShiftGaussianEvent(1.0, 1, 0.5, 1e-12)
    assert event.epsilon == zcdp_epsilon(0.5, 1e-12)


def test_the_numpy_discrete_gaussian_is_the_discrete_gaussian():
    """secure=False draws N_ℤ(0, σ²) (Canonne, Kamath & Steinke 2020, Algorithm 3), whose
    profile the event states, not rounded normals (whose divergence exceeds it at σ = 1)."""
    draws = numpy_discrete_gaussian(np.random.default_rng(3), 1.0, (100_000,))
    support = np.arange(-6, 7)
    law = np.exp(-(support**2) / 2.0)
    law /= law.sum()
    counts = np.array([(draws == k).sum() for k in support])
    chi2 = ((counts - law * draws.size) ** 2 / (law * draws.size)).sum()
    assert stats.chi2.sf(chi2, support.size - 1) > 1e-3
    rounded = stats.norm.cdf(0.5) - stats.norm.cdf(-0.5)  # P(rint(N(0, 1)) = 0) = 0.383
    assert abs(counts[6] / draws.size - law[6]) < 0.005 < abs(law[6] - rounded)


def test_a_journal_line_is_read_as_the_event_whose_own_fields_it_holds():
    """`Release.from_dict` finds the event type by its journal fields: each type's
    `fields` are its `journal_fields`, and a line whose fields are no type's is refused."""
    events = (
        PureEvent(0.5),
        ZcdpEvent(0.02, DELTA),
        UnitShiftGaussianEvent(SIGMA, SHIFTS, RHO, DELTA),
        SubsampledGaussianEvent(0.01, 2.0),
    )
    assert {type(event) for event in events} == set(JOURNAL_EVENTS)
    for event in events:
        assert frozenset(event.fields()) == type(event).journal_fields
        release = Release("m", event, count=3)
        assert Release.from_dict(release.to_dict()) == release
    mixed = Release("m", SubsampledGaussianEvent(0.01, 2.0)).to_dict() | {"rho": 0.1}
    with pytest.raises(InvalidPrivacyParameterError, match="of no event type"):
        Release.from_dict(mixed)


def test_a_release_says_whether_its_noise_was_secure_with_a_boolean():
    with pytest.raises(TypeError, match="secure must be True or False"):
        Release("laplace", PureEvent(0.5), secure="yes")
