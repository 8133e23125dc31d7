"""Privacy events: the immutable `Release` a mechanism hands to a ledger, and what it costs.

A mechanism never composes anything itself: it describes what it spent as a `Release` (in
the spirit of dp-accounting's `DpEvent`) and hands it to a `~pymc_private.dp.ledger.PrivacyLedger`,
which alone composes (`pymc_private.dp.composition`). Releases are taken as worst-case
mechanisms with their stated (ε_i, δ_i) under the replace-one neighbouring relation; nothing
about their form is assumed. Each release's `Release.event` is the typed event the
composition reads: a `PureEvent` (an (ε, δ)-DP worst case, with the Rényi curve of randomized
response) or a `ZcdpEvent`.

Releases of the Gaussian mechanism carry ρ (``Release.rho``): they are ρ-zCDP (Bun & Steinke
2016), whose Rényi curve is α·ρ at every order α. Their ``epsilon`` and ``delta`` state their
own (ε_i, δ_i) guarantee (the conversion of ρ at δ_i, `zcdp_epsilon`, or the exact profile of
`unit_shift_epsilon` for counts), so the plain sum and the PLD, which read only (ε_i, δ_i),
stay sound wherever δ ≥ 1 − Π(1 − δ_i); the RDP route instead adds α·ρ for them (and no δ_i)
and holds at every δ > 0. A composition with a zCDP release has no finite ε at δ = 0.

The unit-shift Gaussian's privacy profile (`unit_shift_epsilon`, `unit_shift_scale`) is here
too: the exact (ε, δ) of the discrete Gaussian on counts that one record moves by at most 1
in at most K cells, which such a release states as its own (ε, δ).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import lru_cache

import numpy as np
from dp_accounting import dp_event
from dp_accounting.pld import privacy_loss_distribution
from dp_accounting.rdp import rdp_privacy_accountant
from scipy.special import expit

from pymc_private.errors import InvalidPrivacyParameterError

__all__ = [
    "RDP_ORDERS",
    "STEP_DELTA",
    "SUBSAMPLED_RDP_ORDERS",
    "PureEvent",
    "Release",
    "SubsampledGaussianEvent",
    "ZcdpEvent",
    "event_of",
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


@dataclass(frozen=True)
class Release:
    """One differentially private release, or ``count`` identical ones composed in sequence.

    Parameters
    ----------
    mechanism
        What produced it, in the papers' words (``"laplace"``, ``"discrete_laplace"``,
        ``"exponential_mechanism"``, ``"gibbs_exponential"``, ``"barker_metropolis"`` ...).
    epsilon
        The ε of one release, a function of public quantities only. ``0.0`` for releases that
        touch only already-privatised statistics. A negative zero is stored as ``+0.0`` (the
        same ε), so that equal releases serialise, group and compose identically.
    delta
        The δ of one release (0 for pure ε-DP; a negative zero is stored as ``+0.0``).
    count
        How many identical releases this record stands for (a sampler plans thousands).
        ``epsilon``, ``delta`` and ``count`` must be numbers, not booleans.
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
    rho
        ρ when the release is ρ-zCDP (the Gaussian mechanisms), else None. ``epsilon`` and
        ``delta`` then state its own (ε, δ) guarantee: ``zcdp_epsilon(rho, delta)``, or less
        when the mechanism's exact privacy profile is known (`unit_shift_epsilon`); the
        ledger composes its Rényi curve α·ρ (`event`) or that (ε, δ), whichever is smaller.
    sampling_rate, noise_multiplier
        q and z when the release is one step of the Gaussian mechanism on a Poisson
        subsample (`SubsampledGaussianEvent`), else None (both or neither). ``epsilon`` and
        ``delta`` then state its own (ε, δ) guarantee, `subsampled_gaussian_epsilon` at
        ``delta``, and the ledger composes the event's Rényi curve.
    """

    mechanism: str
    epsilon: float
    delta: float = 0.0
    count: int = 1
    sensitivity: float | None = None
    statistic: str | None = None
    secure: bool = True
    chain: int | None = None
    draw: int | None = None
    note: str = ""
    rho: float | None = None
    sampling_rate: float | None = None
    noise_multiplier: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.epsilon, bool) or not (
            isinstance(self.epsilon, int | float) and math.isfinite(self.epsilon)
        ):
            raise InvalidPrivacyParameterError(
                f"Release epsilon must be a finite number >= 0, got {self.epsilon!r}."
            )
        if self.epsilon < 0:
            raise InvalidPrivacyParameterError(
                f"Release epsilon must be >= 0, got {self.epsilon!r}."
            )
        if isinstance(self.delta, bool) or not (
            isinstance(self.delta, int | float) and 0.0 <= self.delta < 1.0
        ):
            raise InvalidPrivacyParameterError(
                f"Release delta must be in [0, 1), got {self.delta!r}."
            )
        if isinstance(self.count, bool) or not (isinstance(self.count, int) and self.count >= 1):
            raise InvalidPrivacyParameterError(
                f"Release count must be a positive integer, got {self.count!r}."
            )
        if self.rho is not None:
            if isinstance(self.rho, bool) or not (
                isinstance(self.rho, int | float) and math.isfinite(self.rho) and self.rho > 0
            ):
                raise InvalidPrivacyParameterError(
                    f"Release rho must be None or a finite number > 0, got {self.rho!r}."
                )
            if self.delta <= 0:
                raise InvalidPrivacyParameterError(
                    "A zCDP release (rho given) states its own (epsilon, delta) with delta > 0; "
                    f"got delta={self.delta!r}. Use epsilon=zcdp_epsilon(rho, delta)."
                )
            object.__setattr__(self, "rho", float(self.rho))
        if (self.sampling_rate is None) != (self.noise_multiplier is None):
            raise InvalidPrivacyParameterError(
                "A subsampled Gaussian release gives both sampling_rate and noise_multiplier; "
                f"got sampling_rate={self.sampling_rate!r}, "
                f"noise_multiplier={self.noise_multiplier!r}."
            )
        if self.sampling_rate is not None:
            _check_subsampled(self.sampling_rate, self.noise_multiplier)
            if self.rho is not None or self.delta <= 0:
                raise InvalidPrivacyParameterError(
                    "A subsampled Gaussian release states its own (epsilon, delta) with delta "
                    f"> 0 and no rho; got delta={self.delta!r}, rho={self.rho!r}. Use "
                    "epsilon=subsampled_gaussian_epsilon(q, z, delta)."
                )
            object.__setattr__(self, "sampling_rate", float(self.sampling_rate))
            object.__setattr__(self, "noise_multiplier", float(self.noise_multiplier))
        # + 0.0 turns a negative zero into +0.0 and leaves every other float as it is.
        object.__setattr__(self, "epsilon", float(self.epsilon) + 0.0)
        object.__setattr__(self, "delta", float(self.delta) + 0.0)

    @property
    def event(self) -> PureEvent | ZcdpEvent | SubsampledGaussianEvent:
        """The typed privacy event of one such release, with its Rényi privacy map."""
        return event_of(
            self.epsilon,
            self.delta,
            self.rho or 0.0,
            self.sampling_rate or 0.0,
            self.noise_multiplier or 0.0,
        )

    def to_dict(self) -> dict:
        """A JSON-serialisable dict; `Release.from_dict` inverts it exactly. The subsampled
        event's fields are left out when they are None, so a release without them reads and
        writes as in the journals of earlier versions."""
        fields = asdict(self)
        for name in ("sampling_rate", "noise_multiplier"):
            if fields[name] is None:
                del fields[name]
        return fields

    @classmethod
    def from_dict(cls, data: dict) -> Release:
        return cls(**data)


@dataclass(frozen=True)
class PureEvent:
    """An (ε, δ)-DP release taken as a worst case: dominated by (ε, δ) randomized response
    (Kairouz, Oh & Viswanath 2015), whose Rényi divergence of order α is that of binary
    randomized response with ratio e^ε (Mironov 2017, Proposition 5), plus δ paid apart."""

    epsilon: float
    delta: float = 0.0

    def rdp(self, orders: np.ndarray) -> np.ndarray:
        """The Rényi DP curve at ``orders`` (the δ is not part of it)."""
        return randomized_response_rdp(np.array([self.epsilon]), orders)[0]


@dataclass(frozen=True)
class ZcdpEvent:
    """A ρ-zCDP release: Rényi DP α·ρ at every order α > 1 (Bun & Steinke 2016, Def. 1.1),
    e.g. the (discrete) Gaussian mechanism with ρ = Δ₂²/(2σ²) (Canonne, Kamath & Steinke
    2020, Theorem 4)."""

    rho: float

    @property
    def delta(self) -> float:
        """The δ paid apart from the Rényi curve: none."""
        return 0.0

    def rdp(self, orders: np.ndarray) -> np.ndarray:
        """The Rényi DP curve at ``orders``."""
        return orders * self.rho


@dataclass(frozen=True)
class SubsampledGaussianEvent:
    """One Gaussian mechanism on a Poisson subsample, under replace-one neighbours.

    Each record enters the subsample independently with probability q = ``sampling_rate``;
    the mechanism releases s(S) + N(0, σ²) for a statistic s of the subsample S to which one
    record adds a term of magnitude at most Δ (so replacing a record moves s(S) by at most 2Δ
    when it is sampled, and not at all otherwise), with z = ``noise_multiplier`` = σ/Δ.

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

    sampling_rate: float
    noise_multiplier: float

    @property
    def delta(self) -> float:
        """The δ paid apart from the Rényi curve: none."""
        return 0.0

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
    curve = SubsampledGaussianEvent(sampling_rate, noise_multiplier).rdp(SUBSAMPLED_RDP_ORDERS)
    epsilon = float(
        rdp_privacy_accountant.compute_epsilon(SUBSAMPLED_RDP_ORDERS, count * curve, delta)[0]
    )
    return math.inf if math.isnan(epsilon) else epsilon


def event_of(
    epsilon: float, delta: float, rho: float, sampling_rate: float = 0.0, noise: float = 0.0
) -> PureEvent | ZcdpEvent | SubsampledGaussianEvent:
    """The event of a release (or a ledger group) with these (ε, δ, ρ, q, z); ρ = 0: not
    zCDP; q = 0: not subsampled."""
    if sampling_rate > 0:
        return SubsampledGaussianEvent(sampling_rate, noise)
    return ZcdpEvent(rho) if rho > 0 else PureEvent(epsilon, delta)


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
    if delta < _UNIT_SHIFT_MIN_DELTA:
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
