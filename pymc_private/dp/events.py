"""Privacy events: what a release costs, as a typed event, and the immutable `Release` that
carries it to a ledger.

A mechanism never composes anything itself: it describes what it spent as a `Release` (in
the spirit of dp-accounting's `DpEvent`) and hands it to a `~pymc_private.dp.ledger.PrivacyLedger`,
which alone composes (`pymc_private.dp.composition`). A release stores its event and its
provenance; its ``epsilon``, ``delta`` and ``rho`` are read from the event. One event class per
mechanism family, each a frozen dataclass of the mechanism's public parameters that states its
own (ε_i, δ_i), its Rényi curve, its ε(δ) and its neighbouring relation (replace-one
everywhere; `PrivacyEvent`):

- `PureEvent` (ε, δ): an (ε, δ)-DP worst case, with the Rényi curve of randomized response
  (the Laplace, discrete Laplace and exponential mechanisms, every sampler step);
- `ZcdpEvent` (ρ, δ, ε): a ρ-zCDP release (Bun & Steinke 2016), Rényi curve α·ρ, stating its
  own ε at δ (the conversion of ρ, `zcdp_epsilon`, unless a tighter one is given);
- `UnitShiftGaussianEvent` (σ, K, ρ, δ, ε): the discrete Gaussian on counts that one record
  moves by at most 1 in at most K cells, stating the ε of its exact privacy profile
  (`unit_shift_epsilon`, `unit_shift_scale`, here too), ρ-zCDP as well;
- `SubsampledGaussianEvent` (q, z, δ, ε): one Gaussian step on a Poisson subsample, with its
  replace-one Rényi curve.

The plain sum reads the (ε_i, δ_i) an event states, sound wherever δ ≥ 1 − Π(1 − δ_i); the
PLD reads pure events as randomized response; the RDP route adds the Rényi curves of the
Gaussian events (and no δ_i) and holds at every δ > 0; unit-shift releases of one σ alone
compose by their exact profile (`pymc_private.dp.composition`). A composition with a Gaussian
event has no finite ε at δ = 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import lru_cache
from typing import ClassVar

import numpy as np
from dp_accounting import dp_event
from dp_accounting.pld import privacy_loss_distribution
from dp_accounting.rdp import rdp_privacy_accountant
from scipy.special import expit

from pymc_private.dp.measurements import ceil_float
from pymc_private.errors import InvalidPrivacyParameterError, UnsupportedModelError

__all__ = [
    "JOURNAL_EVENTS",
    "RDP_ORDERS",
    "STEP_DELTA",
    "SUBSAMPLED_RDP_ORDERS",
    "PrivacyEvent",
    "PureEvent",
    "Release",
    "SubsampledGaussianEvent",
    "UnitShiftGaussianEvent",
    "ZcdpEvent",
    "checked_group_size",
    "randomized_response_rdp",
    "sound_curve",
    "subsampled_gaussian_epsilon",
    "unit_shift_epsilon",
    "unit_shift_scale",
    "zcdp_epsilon",
    "zcdp_rho",
]

# dp-accounting's default Rényi orders and a geometric grid of 2000 more from 1.001 to 10⁶:
# the conversion minimises over them, so a dense grid keeps it within 0.2 % of the optimum
# for ρ from 1e-4 and δ down to 1e-9.
RDP_ORDERS = np.unique(
    np.concatenate(
        [rdp_privacy_accountant.DEFAULT_RDP_ORDERS, np.geomspace(1.001, 1e6, 2000)]
    ).astype(float)
)

# Orders α at which a composition with a `SubsampledGaussianEvent` is evaluated: its curve reads
# the sampled Gaussian's Rényi DP at 2α and 2α − 1, which dp-accounting computes exactly at
# integer orders (its series for fractional orders converges slowly for large α), so α runs
# over half-integers and integers up to 64, then a coarser grid to 256 (the conversion at
# δ ≥ 1e-10 picks α ≈ 1 + log(1/δ)/ε below 256 for every ε above 0.1).
SUBSAMPLED_RDP_ORDERS = np.concatenate(
    [np.arange(1.5, 64.5, 0.5), [80, 96, 128, 160, 192, 256]]
).astype(float)

STEP_DELTA = 1e-10
"""δ_i at which a `SubsampledGaussianEvent` release states its own (ε_i, δ_i) (the plain sum
reads it; the ledger composes the event's Rényi curve)."""


def _stated(stated: float | None, least: float, what: str) -> float:
    """The ε an event states at its δ: ``least``, its own bound there, unless a larger ε is
    given. A smaller one is refused: the plain sum reads it, and every accountant's figure
    must describe the same noise."""
    epsilon = least if stated is None else stated
    if not epsilon >= least:
        raise InvalidPrivacyParameterError(
            f"A release of {what} is (epsilon, delta)-DP at its delta for epsilon >= "
            f"{least!r} only; got epsilon={stated!r}."
        )
    return _checked_epsilon(epsilon)


class PrivacyEvent:
    """What one release costs, as a typed event: the base of `PureEvent`, `ZcdpEvent`,
    `UnitShiftGaussianEvent` and `SubsampledGaussianEvent`.

    Every event is a frozen, hashable dataclass of the mechanism's public parameters, and
    states:

    - ``epsilon``, ``delta``: its own (ε_i, δ_i) guarantee, which the plain sum reads;
    - `rdp`: its Rényi DP curve at given orders, and `paid_delta`, the δ paid apart from
      that curve, which the RDP accountant reads;
    - `epsilon_at`: its ε at any δ, where known;
    - ``neighbouring``: the neighbouring relation of every guarantee it states, replace-one
      (two data sets of the same size n that differ in one record) everywhere in this
      package.

    ``rdp_only`` is True for the events with no pure (ε, 0) form (the Gaussian mechanisms):
    a composition with one of them holds at every δ > 0 and at no δ = 0. The ledger's
    accountants (`pymc_private.dp.composition`) read events by their type and refuse a type
    they do not know.
    """

    neighbouring: ClassVar[str] = "replace-one"
    journal_fields: ClassVar[frozenset[str]] = frozenset()
    """The names of `fields`: what identifies the event's type in a journal line."""
    rdp_only: ClassVar[bool] = True
    epsilon: float
    delta: float

    @property
    def paid_delta(self) -> float:
        """The δ paid apart from the Rényi curve: none unless the event says otherwise."""
        return 0.0

    def rdp(self, orders: np.ndarray) -> np.ndarray:
        """The Rényi DP curve at ``orders`` (the δ of `paid_delta` is not part of it)."""
        raise NotImplementedError

    def epsilon_at(self, delta: float) -> float:
        """The ε at which one such release is (ε, δ)-DP, by the event's own bound."""
        raise NotImplementedError

    def fields(self) -> dict:
        """The event's journal fields beyond ε and δ (`Release.to_dict`)."""
        return {}

    def for_group(self, k: int) -> PrivacyEvent:
        """What the same release costs between data sets that differ in up to ``k`` records
        (one person's, when each person contributes at most k): group privacy, proved by each
        event type for its own guarantee, rounded up. ``k = 1`` is the event itself.

        Raises
        ------
        UnsupportedModelError
            For an event type with no group form proved here.
        """
        raise UnsupportedModelError(
            f"A {type(self).__name__} has no per-person (group) cost in this package."
        )


def _checked_epsilon(epsilon) -> float:
    if isinstance(epsilon, bool) or not (
        isinstance(epsilon, int | float) and math.isfinite(epsilon)
    ):
        raise InvalidPrivacyParameterError(
            f"Release epsilon must be a finite number >= 0, got {epsilon!r}."
        )
    if epsilon < 0:
        raise InvalidPrivacyParameterError(f"Release epsilon must be >= 0, got {epsilon!r}.")
    # + 0.0 turns a negative zero into +0.0 and leaves every other float as it is.
    return float(epsilon) + 0.0


def _checked_delta(delta) -> float:
    if isinstance(delta, bool) or not (isinstance(delta, int | float) and 0.0 <= delta < 1.0):
        raise InvalidPrivacyParameterError(f"Release delta must be in [0, 1), got {delta!r}.")
    return float(delta) + 0.0


@dataclass(frozen=True)
class PureEvent(PrivacyEvent):
    """An (ε, δ)-DP release taken as a worst case: dominated by (ε, δ) randomized response
    (Kairouz, Oh & Viswanath 2015), whose Rényi divergence of order α is that of binary
    randomized response with ratio e^ε (Mironov 2017, Proposition 5), plus δ paid apart.
    The Laplace, discrete Laplace and exponential mechanisms and every sampler step release
    such events (δ = 0). A negative zero is stored as +0.0 (the same ε), so that equal
    releases serialise, group and compose identically."""

    epsilon: float
    delta: float = 0.0
    rdp_only: ClassVar[bool] = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _checked_epsilon(self.epsilon))
        object.__setattr__(self, "delta", _checked_delta(self.delta))

    @property
    def paid_delta(self) -> float:
        """δ, paid apart from the Rényi curve (the leaking branch of randomized response)."""
        return self.delta

    def rdp(self, orders: np.ndarray) -> np.ndarray:
        """The Rényi DP curve at ``orders`` (the δ is not part of it)."""
        return randomized_response_rdp(np.array([self.epsilon]), orders)[0]

    def epsilon_at(self, delta: float) -> float:
        """ε at every δ ≥ the event's own, +∞ below it."""
        return self.epsilon if delta >= self.delta else math.inf

    def for_group(self, k: int) -> PureEvent:
        """(k·ε, k·e^((k−1)ε)·δ): an (ε, δ)-DP mechanism is (kε, k·e^((k−1)ε)·δ)-DP between
        data sets that differ in k records (Dwork & Roth 2014, Theorem 2.2 for δ = 0, exact
        for the Laplace mechanism on a sum; Vadhan 2017, "The complexity of differential
        privacy", Lemma 2.2 for δ > 0), by the triangle inequality along the chain of k
        single replacements. Both rounded up.

        Raises
        ------
        InvalidPrivacyParameterError
            When the group δ reaches 1 (no guarantee left).
        """
        if checked_group_size(k) == 1:
            return self
        epsilon = ceil_float(Fraction(self.epsilon) * k)
        delta = 0.0
        if self.delta > 0:
            # exp is within 1 ulp and each product within ½ ulp: 4 ulps up covers them.
            product = k * math.exp((k - 1) * self.epsilon) * self.delta
            delta = math.nextafter(product * (1.0 + 4.0 * 2.0**-52), math.inf)
            if not delta < 1:
                raise InvalidPrivacyParameterError(
                    f"A release of (epsilon, delta) = ({self.epsilon!r}, {self.delta!r}) has no "
                    f"guarantee for {k} records of one person (group delta "
                    f"k·e^((k−1)ε)·δ >= 1): use a smaller max_records or a release with "
                    "delta = 0."
                )
        return PureEvent(epsilon, delta)


def checked_group_size(k) -> int:
    """A group size: a positive integer, the records one person contributes at most
    (``PrivateData(..., max_records=k)`` is validated here too)."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise InvalidPrivacyParameterError(
            f"max_records (a group size) must be a positive integer, the records one person "
            f"contributes at most, got {k!r}; e.g. max_records=12 for up to 12 visits per "
            "patient."
        )
    return int(k)


def _group_zcdp(event: ZcdpEvent | UnitShiftGaussianEvent, k: int) -> PrivacyEvent:
    """The k²ρ-zCDP event of a ρ-zCDP release for groups of k records, at the same δ (the
    event itself for k = 1)."""
    if checked_group_size(k) == 1:
        return event
    return ZcdpEvent(ceil_float(Fraction(event.rho) * k * k), event.delta)


def _checked_rho(rho) -> float:
    if isinstance(rho, bool) or not (
        isinstance(rho, int | float) and math.isfinite(rho) and rho > 0
    ):
        raise InvalidPrivacyParameterError(f"Release rho must be a finite number > 0, got {rho!r}.")
    return float(rho)


def _checked_own_delta(delta, what: str, use: str) -> float:
    """The δ at which an event without a pure form states its own ε: in (0, 1)."""
    delta = _checked_delta(delta)
    if delta <= 0:
        raise InvalidPrivacyParameterError(
            f"A {what} states its own (epsilon, delta) with delta > 0; got delta={delta!r}. "
            f"Use {use}."
        )
    return delta


@dataclass(frozen=True)
class ZcdpEvent(PrivacyEvent):
    """A ρ-zCDP release: Rényi DP α·ρ at every order α > 1 (Bun & Steinke 2016, Def. 1.1),
    e.g. the (discrete) Gaussian mechanism with ρ = Δ₂²/(2σ²) (Canonne, Kamath & Steinke
    2020, Theorem 4), stating its own (ε, δ): ``epsilon`` = `zcdp_epsilon` (ρ, δ), or a
    larger ε if given (never a smaller one: the plain sum reads it).

    The plain sum reads that (ε, δ), which holds wherever δ ≥ 1 − Π(1 − δ_i); the RDP route
    adds α·ρ (and no δ_i) and holds at every δ > 0. No finite ε holds at δ = 0.
    """

    journal_fields: ClassVar[frozenset[str]] = frozenset({"rho"})

    rho: float
    delta: float
    epsilon: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", _checked_rho(self.rho))
        delta = _checked_own_delta(
            self.delta, "zCDP release (rho given)", "epsilon=zcdp_epsilon(rho, delta)"
        )
        object.__setattr__(self, "delta", delta)
        least = zcdp_epsilon(self.rho, delta)
        object.__setattr__(self, "epsilon", _stated(self.epsilon, least, f"rho={self.rho!r}"))

    def rdp(self, orders: np.ndarray) -> np.ndarray:
        """The Rényi DP curve at ``orders``: α·ρ."""
        return orders * self.rho

    def epsilon_at(self, delta: float) -> float:
        """`zcdp_epsilon` (ρ, δ)."""
        return zcdp_epsilon(self.rho, delta)

    def for_group(self, k: int) -> PrivacyEvent:
        """k²ρ-zCDP between data sets that differ in k records (Bun & Steinke 2016,
        Proposition 1.9; exact for the Gaussian mechanism on a sum, whose L2 sensitivity grows
        k-fold), rounded up, stating its ε at the same δ."""
        return _group_zcdp(self, k)

    def fields(self) -> dict:
        return {"rho": self.rho}


@dataclass(frozen=True)
class UnitShiftGaussianEvent(PrivacyEvent):
    """The discrete Gaussian N_ℤ(0, σ²) on integer cells of which one replaced record moves
    at most K = ``shifts`` by at most 1 each: its exact privacy profile is
    `unit_shift_epsilon` (σ, K, δ) (proved there), which it states at its own δ as
    ``epsilon`` (computed unless given). The same noise is ρ-zCDP with ``rho`` = K/(2σ²) as
    OpenDP's privacy map gives it at Δ₂ = √K (Canonne, Kamath & Steinke 2020, Theorem 4):
    its Rényi curve α·ρ, which the RDP accountant adds as for a `ZcdpEvent`.
    """

    journal_fields: ClassVar[frozenset[str]] = frozenset({"rho", "sigma", "shifts"})

    sigma: float
    shifts: int
    rho: float
    delta: float
    epsilon: float | None = None

    def __post_init__(self) -> None:
        if not _number_in(self.sigma, 0.0, math.inf) or self.sigma == 0:
            raise InvalidPrivacyParameterError(
                f"A unit-shift Gaussian release's sigma must be a finite number > 0, got "
                f"{self.sigma!r}."
            )
        if isinstance(self.shifts, bool) or not (isinstance(self.shifts, int) and self.shifts >= 1):
            raise InvalidPrivacyParameterError(
                f"A unit-shift Gaussian release's shifts K must be a positive integer, got "
                f"{self.shifts!r}."
            )
        object.__setattr__(self, "sigma", float(self.sigma))
        object.__setattr__(self, "rho", _checked_rho(self.rho))
        # The accountants read σ (the profile), ρ (the Rényi curve) and ε (the sum) apart and
        # report the smallest figure, so the three must describe one noise: ρ is K/(2σ²) up to
        # rounding (OpenDP's map rounds up, a float quotient may be an ulp below), and is
        # stored as at least the exact K/(2σ²) rounded up.
        least = Fraction(self.shifts) / (2 * Fraction(self.sigma) ** 2)
        if (
            not least * (1 - Fraction(1, 10**12))
            <= Fraction(self.rho)
            <= least * (1 + Fraction(1, 10**6))
        ):
            raise InvalidPrivacyParameterError(
                f"A unit-shift Gaussian release's rho must be K/(2 sigma^2) = {float(least)!r} "
                f"(rounded up), got rho={self.rho!r} for sigma={self.sigma!r}, K={self.shifts}."
            )
        object.__setattr__(self, "rho", max(self.rho, ceil_float(least)))
        delta = _checked_own_delta(
            self.delta,
            "unit-shift Gaussian release",
            "epsilon=unit_shift_epsilon(sigma, shifts, delta)",
        )
        object.__setattr__(self, "delta", delta)
        what = f"sigma={self.sigma!r}, K={self.shifts}"
        object.__setattr__(self, "epsilon", _stated(self.epsilon, self.epsilon_at(delta), what))

    def rdp(self, orders: np.ndarray) -> np.ndarray:
        """The Rényi DP curve at ``orders``: α·ρ."""
        return orders * self.rho

    def epsilon_at(self, delta: float) -> float:
        """The exact profile `unit_shift_epsilon` (σ, K, δ), or the zCDP conversion of ρ where
        that is smaller (the profile is +∞ below δ = 1e-10)."""
        return min(
            unit_shift_epsilon(self.sigma, self.shifts, delta), zcdp_epsilon(self.rho, delta)
        )

    def for_group(self, k: int) -> PrivacyEvent:
        """k²ρ-zCDP (a `ZcdpEvent`) between data sets that differ in k records: the noise is
        ρ-zCDP (class docstring), and zCDP's group privacy (Bun & Steinke 2016, Proposition
        1.9) gives k²ρ; k records move at most kK cells by at most k in all, an L2 distance
        ≤ k√K, the same figure. The exact unit-shift profile does not carry over (a cell may
        move by more than 1)."""
        return _group_zcdp(self, k)

    def fields(self) -> dict:
        return {"rho": self.rho, "sigma": self.sigma, "shifts": self.shifts}


@dataclass(frozen=True)
class SubsampledGaussianEvent(PrivacyEvent):
    """One Gaussian mechanism on a Poisson subsample, under replace-one neighbours.

    Each record enters the subsample independently with probability q = ``sampling_rate``;
    the mechanism releases s(S) + N(0, σ²) for a statistic s of the subsample S to which one
    record adds a term of magnitude at most Δ (so replacing a record moves s(S) by at most 2Δ
    when it is sampled, and not at all otherwise), with z = ``noise_multiplier`` = σ/Δ. The
    event states its own ε at ``delta`` (`STEP_DELTA` unless given) as ``epsilon``,
    `subsampled_gaussian_epsilon` (q, z, δ) unless given.

    Rényi curve (replace-one), proved here. Let D, D' differ in record j and D₀ be D with
    record j's term set to 0 (a *null* record, the REPLACE_SPECIAL relation of
    dp-accounting). (M(D), M(D₀)) and (M(D₀), M(D')) are the two directions of the Poisson
    subsampled Gaussian under add/remove-one with sensitivity Δ, whose Rényi divergence of
    order α, in either direction, is at most ε_AR(α) = dp-accounting's
    ``PoissonSampledDpEvent(q, GaussianDpEvent(z))`` curve (Mironov, Talwar & Zhang 2019,
    "Rényi differential privacy of the sampled Gaussian mechanism", Theorems 4 and 5). The
    weak triangle inequality of Rényi divergences (Mironov 2017, "Rényi differential
    privacy", Proposition 11, with p = q = 2) then gives

        D_α(M(D) ‖ M(D')) ≤ (α − ½)/(α − 1) · ε_AR(2α) + ε_AR(2α − 1),

    the curve `rdp` returns. Rényi DP composes adaptively (Mironov 2017, Proposition 1), so a
    chain of such steps composes by adding curves, and dp-accounting's conversion gives its
    (ε, δ). This charges replace-one about twice (in ε) what add/remove would: the sound,
    larger figure. The tight replace-one privacy-loss distribution (dp-accounting's
    ``REPLACE_ONE`` pair q N(−Δ) + (1 − q)N(0) against q N(Δ) + (1 − q)N(0)) is not used:
    that pair is not proved here to dominate every replaced pair of terms in [−Δ, Δ], so the
    PLD route refuses this event (`pymc_private.dp.composition`).
    """

    journal_fields: ClassVar[frozenset[str]] = frozenset({"sampling_rate", "noise_multiplier"})

    sampling_rate: float
    noise_multiplier: float
    delta: float = STEP_DELTA
    epsilon: float | None = None

    def __post_init__(self) -> None:
        _check_subsampled(self.sampling_rate, self.noise_multiplier)
        object.__setattr__(self, "sampling_rate", float(self.sampling_rate))
        object.__setattr__(self, "noise_multiplier", float(self.noise_multiplier))
        delta = _checked_own_delta(
            self.delta,
            "subsampled Gaussian release",
            "epsilon=subsampled_gaussian_epsilon(q, z, delta)",
        )
        object.__setattr__(self, "delta", delta)
        least = subsampled_gaussian_epsilon(self.sampling_rate, self.noise_multiplier, delta)
        what = f"q={self.sampling_rate!r}, z={self.noise_multiplier!r}"
        object.__setattr__(self, "epsilon", _stated(self.epsilon, least, what))

    @property
    def add_remove_event(self) -> dp_event.PoissonSampledDpEvent:
        """dp-accounting's event whose curve ε_AR the replace-one curve is built from."""
        return dp_event.PoissonSampledDpEvent(
            self.sampling_rate, dp_event.GaussianDpEvent(self.noise_multiplier)
        )

    def rdp(self, orders: np.ndarray) -> np.ndarray:
        """The replace-one Rényi DP curve at ``orders`` (each α with 2α an integer)."""
        return _subsampled_rdp(
            self.sampling_rate, self.noise_multiplier, tuple(np.asarray(orders).tolist())
        )

    def epsilon_at(self, delta: float) -> float:
        """`subsampled_gaussian_epsilon` (q, z, δ)."""
        return subsampled_gaussian_epsilon(self.sampling_rate, self.noise_multiplier, delta)

    def fields(self) -> dict:
        return {"sampling_rate": self.sampling_rate, "noise_multiplier": self.noise_multiplier}

    def for_group(self, k: int) -> PrivacyEvent:
        """No group form: amplification by subsampling is per record (each record is sampled
        on its own, not each person), and no group bound of the replace-one curve is proved
        here.

        Raises
        ------
        UnsupportedModelError
            For k > 1, always.
        """
        if checked_group_size(k) == 1:
            return self
        raise UnsupportedModelError(
            "A subsampled per-draw step (PrivateMetropolis(sampling_rate=...)) samples records, "
            "not persons, and has no per-person cost in this package: run it without "
            "sampling_rate, or with max_records=1 (one record per person)."
        )


@dataclass(frozen=True)
class Release:
    """One differentially private release, or ``count`` identical ones composed in sequence:
    its typed event (what it cost) and its provenance.

    Parameters
    ----------
    mechanism
        What produced it, in the papers' words (``"laplace"``, ``"discrete_laplace"``,
        ``"exponential_mechanism"``, ``"gibbs_exponential"``, ``"barker_metropolis"`` ...).
    event
        What one such release costs (`PrivacyEvent`): a `PureEvent` (ε, δ) for the Laplace
        and exponential mechanisms and every sampler step (``PureEvent(0.0)`` for releases
        that touch only already-privatised statistics), a `ZcdpEvent` or
        `UnitShiftGaussianEvent` for the Gaussian mechanisms, a `SubsampledGaussianEvent` for
        a step on a Poisson subsample. ``epsilon``, ``delta`` and ``rho`` read it.
    count
        How many identical releases this record stands for (a sampler plans thousands): a
        positive integer, not a boolean.
    sensitivity
        The sensitivity the noise was calibrated to (Δ₁, or the record Lipschitz constant L),
        when there is one.
    statistic
        What private data it was computed from (names only, never values).
    secure
        False when the noise came from a textbook floating-point sampler (``secure=False``).
    chain, draw
        Where it happened inside sampling, when it did (``draw`` is the first draw index of a
        composed run of ``count`` draws).
    note
        Free text for the report (public words only).
    records_per_person
        None for a release whose event is its cost per record. k when the event is its cost
        per person, each person contributing at most k records to the data it read
        (`per_person`: the event is the per-record one's `PrivacyEvent.for_group` (k)).
    """

    mechanism: str
    event: PrivacyEvent
    count: int = 1
    sensitivity: float | None = None
    statistic: str | None = None
    secure: bool = True
    chain: int | None = None
    draw: int | None = None
    note: str = ""
    records_per_person: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.event, PrivacyEvent):
            raise TypeError(
                f"A Release's event must be a PrivacyEvent, got {type(self.event).__name__}; "
                "describe the cost as e.g. Release(mechanism, PureEvent(epsilon))."
            )
        if isinstance(self.count, bool) or not (isinstance(self.count, int) and self.count >= 1):
            raise InvalidPrivacyParameterError(
                f"Release count must be a positive integer, got {self.count!r}."
            )
        if not isinstance(self.secure, bool):
            raise TypeError(f"Release secure must be True or False, got {self.secure!r}.")
        if self.records_per_person is not None:
            object.__setattr__(
                self, "records_per_person", checked_group_size(self.records_per_person)
            )

    def per_person(self, k: int | None) -> Release:
        """This release charged per person, each contributing at most ``k`` records to the
        data it read: its event's `PrivacyEvent.for_group` (k), marked with k. A release
        already charged per person, or ``k`` None, is returned as it is.

        Raises
        ------
        UnsupportedModelError
            An event with no group form (a subsampled step) and k > 1.
        InvalidPrivacyParameterError
            k not a positive integer, or a group δ of 1 or more.
        """
        if k is None or self.records_per_person is not None:
            return self
        k = checked_group_size(k)
        return replace(self, event=self.event.for_group(k), records_per_person=k)

    @property
    def epsilon(self) -> float:
        """The ε of one release, as its event states it (at ``delta``)."""
        return self.event.epsilon

    @property
    def delta(self) -> float:
        """The δ at which the event states ``epsilon`` (0 for pure ε-DP)."""
        return self.event.delta

    @property
    def rho(self) -> float | None:
        """ρ when the event is ρ-zCDP (the Gaussian mechanisms), else None."""
        return getattr(self.event, "rho", None)

    def to_dict(self) -> dict:
        """A JSON-serialisable dict; `Release.from_dict` inverts it exactly. Its keys are
        those of earlier versions' journals (``rho`` None for events without it), followed by
        the event's own fields beyond ρ (``sampling_rate`` and ``noise_multiplier`` of a
        subsampled step, ``sigma`` and ``shifts`` of a unit-shift release), then
        ``records_per_person`` when it is set, so that a release
        of a pure or zCDP event reads and writes as in those journals."""
        fields = self.event.fields()
        return {
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "count": self.count,
            "sensitivity": self.sensitivity,
            "statistic": self.statistic,
            "secure": self.secure,
            "chain": self.chain,
            "draw": self.draw,
            "note": self.note,
            "rho": fields.pop("rho", None),
            **fields,
            **(
                {}
                if self.records_per_person is None
                else {"records_per_person": self.records_per_person}
            ),
        }

    @classmethod
    def from_dict(cls, data: dict) -> Release:
        """The release of `to_dict`'s output: its event is the type of `JOURNAL_EVENTS`
        whose own fields (`PrivacyEvent.fields`) are the ones it holds (a ``rho`` of None
        counts as absent), built from them and its ε and δ."""
        fields = dict(data)
        epsilon, delta = fields.pop("epsilon", None), fields.pop("delta", 0.0)
        names = {name for kind in JOURNAL_EVENTS for name in kind.journal_fields}
        own = {name: fields.pop(name) for name in sorted(names) if name in fields}
        own = {name: value for name, value in own.items() if value is not None}
        rho = own.get("rho")
        if set(own) == {"rho"} and epsilon is not None and epsilon < zcdp_epsilon(rho, delta):
            event = (
                _earlier_unit_shift(rho, delta, epsilon, fields.get("sensitivity"))
                if fields.get("secure", True)
                else ZcdpEvent(rho, delta)  # rounded normals then: ρ-zCDP, not the profile
            )
            return cls(event=event, **fields)
        for kind in JOURNAL_EVENTS:
            if kind.journal_fields == frozenset(own):
                return cls(event=kind(epsilon=epsilon, delta=delta, **own), **fields)
        raise InvalidPrivacyParameterError(
            f"A release with the event fields {sorted(own)} is of no event type this version "
            f"reads ({', '.join(kind.__name__ for kind in JOURNAL_EVENTS)})."
        )


def _earlier_unit_shift(rho: float, delta: float, epsilon: float, sensitivity) -> PrivacyEvent:
    """A unit-shift release as journals before `UnitShiftGaussianEvent` wrote it: ρ, the
    sensitivity Δ₂ = `ceil_sqrt` (K) and the exact profile's ε (below the zCDP conversion),
    without σ and K. They are recovered, K = round(Δ₂²) and σ = Δ₂/√(2ρ) (ρ is OpenDP's map,
    rounded up, so this σ is at most the one drawn with, up to rounding). The line reads as
    that event, charged its own ε at the recovered σ (a sound figure for the noise drawn),
    when the ε it states is within 10⁻³ of it (the profile's loss grid makes ulps of σ move
    it by about 10⁻⁵); a line stating less is refused."""
    if (
        isinstance(sensitivity, bool)
        or not isinstance(sensitivity, int | float)
        or not sensitivity >= 1
    ):
        raise InvalidPrivacyParameterError(
            f"A zCDP release states epsilon={epsilon!r} below the conversion of its "
            f"rho={rho!r}, and is not a unit-shift release (sensitivity={sensitivity!r})."
        )
    event = UnitShiftGaussianEvent(
        sensitivity / math.sqrt(2.0 * rho), round(sensitivity**2), rho, delta
    )
    if not event.epsilon <= epsilon * (1 + 1e-3):
        raise InvalidPrivacyParameterError(
            f"A unit-shift release states epsilon={epsilon!r}, below its noise's "
            f"{event.epsilon!r} at delta={delta!r}."
        )
    return event


JOURNAL_EVENTS = (PureEvent, ZcdpEvent, UnitShiftGaussianEvent, SubsampledGaussianEvent)
"""The event types a journal line is read as (`Release.from_dict`), by their own fields."""


@lru_cache(maxsize=256)
def _subsampled_rdp(q: float, z: float, orders: tuple[float, ...]) -> np.ndarray:
    alphas = np.array(orders)
    if not np.all(alphas * 2 == np.round(alphas * 2)):
        raise InvalidPrivacyParameterError(
            "A subsampled Gaussian event's Rényi curve is computed at orders α with 2α an "
            "integer (SUBSAMPLED_RDP_ORDERS)."
        )
    add_remove = rdp_privacy_accountant._compute_rdp_poisson_subsampled_gaussian(
        q, z, np.concatenate([2 * alphas, 2 * alphas - 1])
    )
    double, odd = add_remove[: alphas.size], add_remove[alphas.size :]
    return sound_curve((alphas - 0.5) / (alphas - 1) * double + odd)


def sound_curve(curve: np.ndarray) -> np.ndarray:
    """A computed Rényi curve made safe to convert: NaN (dp-accounting's log-sum of two
    infinite terms, at tiny noise multipliers) becomes +∞, and a negative value (rounding
    of a divergence that is ≥ 0) becomes 0. `rdp_privacy_accountant.compute_epsilon` would
    otherwise pick a NaN order and return ε = max(0, NaN) = 0, for the whole ledger."""
    return np.maximum(np.where(np.isnan(curve), np.inf, curve), 0.0)


MIN_NOISE_MULTIPLIER = 2.0**-10
"""The smallest z of a subsampled Gaussian step: below it dp-accounting's curve loses
finiteness in floating point (NaN below about 1e-151, a division by zero below 1e-160), and
one step costs more than any budget (its add/remove ε alone exceeds 2⁻¹/z² − 1)."""


def _check_subsampled(sampling_rate, noise_multiplier) -> None:
    if not _number_in(sampling_rate, 0.0, 1.0) or sampling_rate == 0.0:
        raise InvalidPrivacyParameterError(
            f"A subsampled Gaussian release's sampling_rate must be a number in (0, 1], got "
            f"{sampling_rate!r}."
        )
    if not _number_in(noise_multiplier, MIN_NOISE_MULTIPLIER, math.inf):
        raise InvalidPrivacyParameterError(
            "A subsampled Gaussian release's noise_multiplier z must be a finite number of at "
            f"least 2⁻¹⁰, got {noise_multiplier!r}: raise the noise scale σ or the temperature "
            "T, or lower the clip c (z = σ·q·T/c)."
        )


def _number_in(value, lower: float, upper: float) -> bool:
    """A finite int or float (not a bool) in [lower, upper]."""
    return (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and math.isfinite(value)
        and lower <= value <= upper
    )


@lru_cache(maxsize=1024)
def subsampled_gaussian_epsilon(
    sampling_rate: float, noise_multiplier: float, delta: float, count: int = 1
) -> float:
    """The ε at δ of ``count`` `SubsampledGaussianEvent` (q, z) composed: their Rényi curve
    (`SubsampledGaussianEvent.rdp`) times ``count``, converted by dp-accounting's
    `rdp_privacy_accountant.compute_epsilon` at `SUBSAMPLED_RDP_ORDERS`."""
    _check_subsampled(sampling_rate, noise_multiplier)
    if not (0.0 < delta < 1.0):
        raise InvalidPrivacyParameterError(
            f"A subsampled Gaussian release is (ε, δ)-DP only for δ in (0, 1); got {delta!r}."
        )
    curve = _subsampled_rdp(
        float(sampling_rate), float(noise_multiplier), tuple(SUBSAMPLED_RDP_ORDERS.tolist())
    )
    epsilon = float(
        rdp_privacy_accountant.compute_epsilon(SUBSAMPLED_RDP_ORDERS, count * curve, delta)[0]
    )
    return math.inf if math.isnan(epsilon) else epsilon


@lru_cache(maxsize=4096)
def zcdp_epsilon(rho: float, delta: float) -> float:
    """The ε at which ρ-zCDP is (ε, δ)-DP, as the ledger converts it (δ in (0, 1)).

    dp-accounting's `rdp_privacy_accountant.compute_epsilon` on the curve α·ρ at the ledger's
    orders (dp-accounting's defaults and a dense geometric grid; the conversion of Canonne,
    Kamath & Steinke 2020, Proposition 12, minimised over those orders): an upper bound on
    the optimal conversion, within 0.2 % of OpenDP's ``make_zCDP_to_approxDP`` in the tests.
    """
    if not (0.0 < delta < 1.0):
        raise InvalidPrivacyParameterError(
            f"A zCDP release is (ε, δ)-DP only for δ > 0; got delta={delta!r}."
        )
    orders = RDP_ORDERS
    return float(rdp_privacy_accountant.compute_epsilon(orders, orders * rho, delta)[0])


def zcdp_rho(epsilon: float, delta: float) -> float:
    """The largest ρ (to a relative 1e-12) whose `zcdp_epsilon` at ``delta`` is ≤ ``epsilon``."""
    low, high = 0.0, max(epsilon, 1.0)
    while zcdp_epsilon(high, delta) <= epsilon:
        low, high = high, 2 * high
    for _ in range(200):
        middle = (low + high) / 2
        if middle in (low, high):
            break
        if zcdp_epsilon(middle, delta) <= epsilon:
            low = middle
        else:
            high = middle
        if high - low <= 1e-12 * high:
            break
    return low


# dp-accounting's discrete Gaussian privacy loss truncates the noise at ⌈11.6σ⌉, outside of
# which a coordinate has mass at most 1e-30 (Canonne, Kamath & Steinke 2020, supplement,
# Proposition 1).
_DISCRETE_GAUSSIAN_TRUNCATED_MASS = 1e-30
# Below this δ the profile is not used (+∞, so the zCDP route serves): dp-accounting composes
# by FFT, whose rounding leaves absolute errors ~1e-15 in the loss distribution's tail; at
# δ ~ 1e-14 and K ≥ 300 they under-stated ε (10.02 true against 9.96 recorded at ε = 10,
# δ = 1e-14, against a positive-term convolution). At 1e-10 they are 1e-5 of δ.
_UNIT_SHIFT_MIN_DELTA = 1e-10
# Above it, the FFT's absolute error in δ(ε) is paid as a margin of this much per shift (K
# self-compositions): the largest error measured against a positive-term convolution was
# 1.6e-14 at K = 1000 (3.4e-15 at K = 100), 60 and 30 times below the margin.
_UNIT_SHIFT_FFT_ERROR_PER_SHIFT = 1e-15
# The PLD's loss grid: pessimistic rounding to multiples of this (dp-accounting's default).
_UNIT_SHIFT_PLD_GRID = 1e-4
# One unit shift's privacy loss spans (2⌈11.6σ⌉ + 1)/(2σ²) ≤ 23.2/σ + 1/σ²; wider than
# this (4·10⁶ grid steps, σ below about 0.08) the PLD would not fit in memory, and the
# profile is not used (+∞, so the zCDP route serves).
_UNIT_SHIFT_MAX_LOSS = 4e6 * _UNIT_SHIFT_PLD_GRID
# `unit_shift_scale` stops its bisection when the bracket is this narrow (relative): the
# scale it returns is then at most this fraction above the smallest one the PLD allows.
_UNIT_SHIFT_SCALE_TOLERANCE = 1e-3


@lru_cache(maxsize=1024)
def unit_shift_epsilon(sigma: float, shifts: int, delta: float) -> float:
    """The ε at which the discrete Gaussian of parameter σ on integer cells is (ε, δ)-DP when
    one replaced record moves at most ``shifts`` = K cells by at most 1 each: its privacy
    profile, computed.

    The noise law on each cell is N_ℤ(0, σ²), P(z) ∝ exp(−z²/2σ²) (OpenDP's ``make_gaussian``
    on integers). Between neighbours the cells move by v ∈ {−1, 0, 1}^m with ‖v‖₁ ≤ K. Proof of
    the worst case:

    1. Cells with v_i = 0 have the same law under both data sets, independent of the others,
       so they drop out of every hockey-stick divergence.
    2. The reflection z ↦ −z maps N_ℤ(−1, σ²) to N_ℤ(1, σ²) and fixes N_ℤ(0, σ²), so a cell
       moved by −1 is as one moved by +1.
    3. Dropping a moved cell is post-processing (a marginal), which cannot raise the
       divergence, so K cells moved by +1 each is the worst pair.
    4. That pair is the K-fold composition of the unit-shift pair N_ℤ(0, σ²), N_ℤ(1, σ²), whose
       two directions have the same profile (the reflection z ↦ 1 − z swaps them).

    The profile of the K-fold composition is dp-accounting's privacy loss distribution of the
    discrete Gaussian (``from_discrete_gaussian_mechanism(σ, sensitivity=1)``, pessimistic
    estimate, an upper bound) composed K times (``self_compose``). dp-accounting models the
    noise truncated at ⌈11.6σ⌉, where each coordinate leaves out mass ≤ 10⁻³⁰. The true law
    is within total variation η = K·10⁻³⁰ of that model, and a hockey-stick divergence moves
    by at most (1 + e^ε)·η when both laws move by η. FFT rounding in the composition leaves
    absolute errors in its tail (up to 1.6·10⁻¹⁴ measured at K = 1000), so below δ = 1e-10
    (`_UNIT_SHIFT_MIN_DELTA`) the profile is not used (+∞), above it a margin φ = K·10⁻¹⁵ is
    paid for them, and an ε whose δ the same distribution does not confirm is refused
    likewise. So the returned ε is the PLD's at δ − (1 + e^ε₀)·η − φ, ε₀ its ε at δ/2 (+∞
    should those slacks exceed δ/2).

    Against the zCDP conversion of the same release (ρ = K/2σ², `zcdp_epsilon`), this is the
    exact curve rather than a bound through Rényi divergences: at ε = 1, δ = 10⁻⁶ it allows
    σ about 7 % smaller (`unit_shift_scale`). The tests check it against a direct K-fold
    convolution of the discrete Gaussian.
    """
    if not (0.0 < delta < 1.0):
        raise InvalidPrivacyParameterError(
            f"A Gaussian release is (ε, δ)-DP only for δ in (0, 1); got delta={delta!r}."
        )
    if delta < _UNIT_SHIFT_MIN_DELTA or (23.2 / sigma + sigma**-2) > _UNIT_SHIFT_MAX_LOSS:
        return math.inf
    loss = privacy_loss_distribution.from_discrete_gaussian_mechanism(
        sigma, sensitivity=1, value_discretization_interval=_UNIT_SHIFT_PLD_GRID
    )
    composed = loss.self_compose(shifts) if shifts > 1 else loss
    truncated = shifts * _DISCRETE_GAUSSIAN_TRUNCATED_MASS
    # ε₀ at δ/2 bounds the ε returned below (whose δ − slack is ≥ δ/2), so the slack paid at
    # ε₀ covers the slack at the returned ε; the FFT's error is paid on top.
    slack = (1.0 + math.exp(min(composed.get_epsilon_for_delta(delta / 2), 700.0))) * truncated
    slack += shifts * _UNIT_SHIFT_FFT_ERROR_PER_SHIFT
    if slack > delta / 2:
        return math.inf
    # The same distribution's δ must confirm the ε: rounding that left negative masses in the
    # tail makes the two disagree by far more than the 1e-11 of their own interpolation,
    # which the 1e-9 step up covers.
    epsilon = float(composed.get_epsilon_for_delta(delta - slack)) * (1.0 + 1e-9)
    if not composed.get_delta_for_epsilon(epsilon) <= delta - slack:
        return math.inf
    return epsilon


@lru_cache(maxsize=256)
def unit_shift_scale(epsilon: float, delta: float, shifts: int) -> float | None:
    """The smallest σ (to a relative `_UNIT_SHIFT_SCALE_TOLERANCE`, rounded up) whose
    `unit_shift_epsilon` at ``delta`` is ≤ ``epsilon``; None when it is not below the σ of the
    zCDP route, √(K/2ρ) with ρ = `zcdp_rho`(ε, δ), which then serves."""
    zcdp_scale = math.sqrt(shifts / (2.0 * zcdp_rho(epsilon, delta)))
    high = zcdp_scale
    if unit_shift_epsilon(high, shifts, delta) > epsilon:
        return None
    low = 0.8 * high  # the profile's σ is within 10 % of the zCDP one at usual (ε, δ)
    while unit_shift_epsilon(low, shifts, delta) <= epsilon:
        high, low = low, 0.8 * low
    while high - low > _UNIT_SHIFT_SCALE_TOLERANCE * high:
        middle = (low + high) / 2.0
        if unit_shift_epsilon(middle, shifts, delta) <= epsilon:
            high = middle
        else:
            low = middle
    return high if high < zcdp_scale else None


def randomized_response_rdp(eps: np.ndarray, orders: np.ndarray) -> np.ndarray:
    """Rényi divergence of order α between binary randomized response pairs with ratio e^ε.

    Mironov (2017), Proposition 5: D_α = log(p^α q^{1−α} + q^α p^{1−α}) / (α − 1) with
    p = e^ε / (1 + e^ε), q = 1 − p. With a = (α − 1) ε the argument of the log is
    1 + 2 sinh²(a/2) + tanh(ε/2) sinh(a), evaluated without cancellation (or as
    a + log(p + q e^{−2a}) when a is large). Rows are ε values, columns orders.
    """
    with np.errstate(over="ignore"):  # an overflowing (α − 1) ε makes D_α infinite, as it is
        a = (orders[None, :] - 1) * eps[:, None]
        small = np.minimum(a, 30.0)
        excess = 2 * np.sinh(small / 2) ** 2 + np.tanh(eps[:, None] / 2) * np.sinh(small)
        log_sum = np.where(
            a <= 30.0,
            np.log1p(excess),
            a + np.log(expit(eps[:, None]) + expit(-eps[:, None]) * np.exp(-2 * a)),
        )
    return log_sum / (orders[None, :] - 1)
