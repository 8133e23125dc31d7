"""Privacy accounting: immutable releases, the ledger that alone composes them, and budgets.

A mechanism never composes anything itself: it describes what it spent as a `Release` (in
the spirit of dp-accounting's `DpEvent`) and hands it to a `PrivacyLedger`, which alone
composes. Releases are taken as worst-case mechanisms with their stated (ε_i, δ_i) under the
replace-one neighbouring relation; nothing about their form is assumed.

How the ledger composes (every figure is an upper bound; the smallest valid one is reported):

- ``"sum"``: basic sequential composition, ε = Σ_i ε_i (Dwork & Roth 2014, Theorem 3.16),
  exact for pure ε-DP. With δ_i > 0 it holds at δ = 1 − Π_i(1 − δ_i) ≤ Σ_i δ_i (Kairouz, Oh &
  Viswanath 2015, Theorem 3.3, the i = 0 term). Sums are exact over the binary values of the
  ε_i and rounded once, so thirty releases of 0.1 cost exactly 3.0.
- ``"pld"``: dp-accounting's privacy-loss-distribution accountant. An (ε_i, δ_i)-DP
  mechanism is dominated by (ε_i, δ_i) randomized response (Kairouz et al. 2015, §2), whose
  privacy loss is +∞ with probability δ_i and ±ε_i otherwise: the PLD of
  `privacy_loss_distribution.from_privacy_parameters`. Each ε_i is rounded up to a common grid
  (ε'-randomized response dominates every ε_i-DP mechanism when ε' >= ε_i; a single distinct
  ε is represented exactly), k identical releases are composed exactly by the binomial law,
  and distinct groups by dp-accounting's pessimistic `compose`, which also converts to ε.
- ``"rdp"``: Rényi DP, each ε_i-DP release bounded by the Rényi divergence of binary
  randomized response with ratio e^{ε_i} (Mironov 2017, Proposition 5; a valid RDP curve for
  any ε_i-DP mechanism by the same domination and data processing), converted to (ε, δ) by
  dp-accounting's `rdp_privacy_accountant.compute_epsilon`; the δ_i are paid as
  1 − Π_i(1 − δ_i) on top (the leaking branch of the same dominating pair).

Releases of the Gaussian mechanism carry ρ (``Release.rho``): they are ρ-zCDP (Bun & Steinke
2016), whose Rényi curve is α·ρ at every order α. Their ``epsilon`` and ``delta`` state their
own (ε_i, δ_i) guarantee (the conversion of ρ at δ_i below, or the exact profile of
`unit_shift_epsilon` for counts), so the plain sum and the PLD,
which read only (ε_i, δ_i), stay sound wherever δ ≥ 1 − Π(1 − δ_i); the RDP route instead
adds α·ρ for them (and no δ_i) and holds at every δ > 0. A composition with a zCDP release
has no finite ε at δ = 0.

At δ = 0 the plain sum is reported. At δ > 0 the smallest of the three is reported (the
PLD only when its grid is small enough to compute quickly: many distinct ε values or huge
ratios between them leave the RDP figure); an accountant's figure replaces the plain sum only
when it is smaller by more than 0.1 %.
"""

from __future__ import annotations

import fcntl
import html
import json
import logging
import math
import os
import uuid
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from fractions import Fraction
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np
from dp_accounting.pld import privacy_loss_distribution
from dp_accounting.rdp import rdp_privacy_accountant
from scipy import stats
from scipy.special import expit

from pymc_private import session
from pymc_private.data import checked_source, datasets_of, private_data
from pymc_private.errors import (
    BudgetExceededError,
    InvalidPrivacyParameterError,
    LedgerIntegrityError,
    UncoveredDataWarning,
    UnsupportedModelError,
)
from pymc_private.journal import LEGACY_FORMAT, SESSION_KIND, Journal, locked, replace
from pymc_private.records import source_dataset

__all__ = [
    "Budget",
    "Composition",
    "PrivacyLedger",
    "PureEvent",
    "Release",
    "ZcdpEvent",
    "dataset_ledger",
    "ledger_for",
    "unit_shift_epsilon",
    "unit_shift_scale",
    "zcdp_epsilon",
    "zcdp_rho",
]

# dp-accounting's default Rényi orders and a geometric grid of 2000 more from 1.001 to 10⁶:
# the conversion minimises over them, so a dense grid keeps it within 0.2 % of the optimum
# for ρ from 1e-4 and δ down to 1e-9.
_RDP_ORDERS = np.unique(
    np.concatenate(
        [rdp_privacy_accountant.DEFAULT_RDP_ORDERS, np.geomspace(1.001, 1e6, 2000)]
    ).astype(float)
)
_LEDGER_FORMAT = "pymc_private.PrivacyLedger"
_LEDGER_VERSION = 1

# The PLD grid h is the coarsest for which rounding every ε_i up to a multiple of h adds at
# most this fraction of the plain sum (a single distinct ε is represented exactly) ...
_PLD_GRID_TOLERANCE = 1e-4
# ... or, when that grid would be too large, the finest affordable one if it adds at most
# this fraction; otherwise the RDP accountant is used.
_PLD_COARSE_GRID_TOLERANCE = 2e-2
_PLD_GRID_DIVISORS = np.unique(
    np.concatenate(
        [np.arange(1, 17), np.geomspace(17, 1 / _PLD_GRID_TOLERANCE + 1, 60).astype(int)]
    )
)
# Size limits of the PLD: points of the composed dense PMF, distinct grid losses (one FFT
# composition each), and points times compositions.
_PLD_MAX_POINTS = 500_000
_PLD_MAX_GROUPS = 16
_PLD_MAX_WORK = 2_000_000
_PLD_TAIL_MASS_TRUNCATION = 1e-15
# The accountant's figure replaces the plain sum only when it is smaller by more than this
# fraction: differences at the accountant's resolution are not worth a less simple figure.
_REPORTING_RESOLUTION = 1e-3

_METHOD_DESCRIPTIONS = {
    "sum": "plain sum of the per-release ε (basic sequential composition)",
    "pld": "dp-accounting privacy-loss-distribution accountant (pessimistic)",
    "rdp": "Rényi-DP bound of randomized response, converted by dp-accounting",
}

# (epsilon, delta, rho, count) for every distinct (ε_i, δ_i, ρ_i) that costs something,
# sorted; ρ_i = 0.0 for releases that are not zCDP.
_Groups = tuple[tuple[float, float, float, int], ...]


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
        # + 0.0 turns a negative zero into +0.0 and leaves every other float as it is.
        object.__setattr__(self, "epsilon", float(self.epsilon) + 0.0)
        object.__setattr__(self, "delta", float(self.delta) + 0.0)

    @property
    def event(self) -> PureEvent | ZcdpEvent:
        """The typed privacy event of one such release, with its Rényi privacy map."""
        return _event(self.epsilon, self.delta, self.rho or 0.0)

    def to_dict(self) -> dict:
        """A JSON-serialisable dict; `Release.from_dict` inverts it exactly."""
        return asdict(self)

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
        return _randomized_response_rdp(np.array([self.epsilon]), orders)[0]


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


def _event(epsilon: float, delta: float, rho: float) -> PureEvent | ZcdpEvent:
    """The event of a release (or a ledger group) with these (ε, δ, ρ); ρ = 0: not zCDP."""
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
    orders = _RDP_ORDERS
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


class Composition(NamedTuple):
    """The (ε, δ) guarantee of a composition and the route that produced it.

    Parameters
    ----------
    epsilon
        The composed ε.
    delta
        The δ at which ``epsilon`` holds.
    method
        ``"sum"`` (basic composition, Σ ε_i), ``"pld"`` (dp-accounting's privacy loss
        distribution accountant) or ``"rdp"`` (Rényi DP, converted by dp-accounting).
    """

    epsilon: float
    delta: float
    method: str

    @property
    def description(self) -> str:
        """One line for a person: the guarantee and how it was obtained."""
        if self.method == "sum":  # Σ ε_i holds at the releases' own δ, any larger δ too
            return (
                f"ε = {_fmt(self.epsilon)} by the {_METHOD_DESCRIPTIONS['sum']}, at the "
                f"releases' own δ (the δ column), so also at δ = {_fmt(self.delta)}: no "
                "accountant does better here"
            )
        return (
            f"(ε = {_fmt(self.epsilon)}, δ = {_fmt(self.delta)})-DP by the "
            f"{_METHOD_DESCRIPTIONS[self.method]}"
        )


def _fmt(value: float) -> str:
    return f"{value:.6g}"


def checked_delta(delta: float, name: str = "delta") -> float:
    if (
        isinstance(delta, bool | np.bool_)
        or not isinstance(delta, int | float | np.integer | np.floating)
        or not 0 <= delta < 1
    ):
        raise InvalidPrivacyParameterError(
            f"{name} must be a number in [0, 1), got {delta!r}; use 0 for pure ε-DP or a "
            "small value such as 1e-6."
        )
    return float(delta)


def _validated_releases(releases: Iterable[Release], name: str) -> list[Release]:
    items = list(releases)
    for index, item in enumerate(items):
        if not isinstance(item, Release):
            raise TypeError(
                f"{name}[{index}] must be a Release, got {type(item).__name__}; describe each "
                "spend as Release(mechanism=..., epsilon=..., ...)."
            )
    return items


_Key = tuple[float, float, float]


def _add_releases(counts: dict[_Key, int], releases: Iterable[Release]) -> None:
    for release in releases:
        if release.epsilon > 0 or release.delta > 0:
            key = (release.epsilon, release.delta, release.rho or 0.0)
            counts[key] = counts.get(key, 0) + release.count


def _counts_of(releases: Iterable[Release]) -> dict[_Key, int]:
    counts: dict[_Key, int] = {}
    _add_releases(counts, releases)
    return counts


def _groups_of(counts: Mapping[_Key, int]) -> _Groups:
    return tuple(sorted((*key, count) for key, count in counts.items()))


def _has_zcdp(groups: _Groups) -> bool:
    return any(rho > 0 for _, _, rho, _ in groups)


@lru_cache(maxsize=512)
def _exact_sum(groups: _Groups) -> Fraction:
    return sum((Fraction(eps) * count for eps, _, _, count in groups), Fraction(0))


def _rounded(exact: Fraction) -> float:
    """``exact`` rounded once to the nearest float (infinite beyond the float range)."""
    try:
        return float(exact)
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


def _within(exact: Fraction, bound: float) -> bool:
    """The exact-sum rule: an exact spend fits when its once-rounded value is <= bound."""
    return _rounded(exact) <= bound


@lru_cache(maxsize=512)
def _leaked_delta(groups: _Groups) -> float:
    """1 − Π_i(1 − δ_i) over ``groups``: the δ the plain sum and the PLD hold at."""
    if all(delta == 0 for _, delta, _, _ in groups):
        return 0.0
    product_form = -math.expm1(
        math.fsum(count * math.log1p(-delta) for _, delta, _, count in groups)
    )
    plain_sum = _rounded(
        sum((Fraction(delta) * count for _, delta, _, count in groups), Fraction(0))
    )
    return min(product_form, plain_sum)


def _unavoidable_delta(groups: _Groups) -> float:
    """The δ below which no ε makes the composition (ε, δ)-DP: 1 − Π(1 − δ_i) over the
    releases that are not zCDP (a zCDP release holds at every δ > 0)."""
    return _leaked_delta(tuple(group for group in groups if group[2] == 0))


def _pld_plan(groups: _Groups) -> tuple[float, dict[tuple[int, float], int]] | None:
    """The PLD grid h and the counts of releases per (grid index n, δ_i), n = ⌈ε_i / h⌉.

    None when no grid meets the tolerances within the size limits.
    """
    eps = np.array([e for e, _, _, _ in groups])
    eps_min = eps[eps > 0].min()
    if eps.max() > _PLD_MAX_POINTS * eps_min:
        return None
    counts = [c for *_, c in groups]
    total = _rounded(_exact_sum(groups))
    hoeffding = 2 * math.log(2 / _PLD_TAIL_MASS_TRUNCATION)
    plan = None
    for divisor in _PLD_GRID_DIVISORS:
        # Rounded up, so that ε_min (and its float multiples) sit on or just below a point.
        grid = float(np.nextafter(eps_min / divisor, np.inf))
        points = np.ceil(eps / grid)
        points += points * grid < eps
        inflation = math.fsum(
            c * (n * grid - e) for c, n, e in zip(counts, points, eps, strict=True)
        )
        merged: dict[tuple[int, float], int] = {}
        for (_, delta, _, count), n in zip(groups, points.astype(int).tolist(), strict=True):
            merged[(n, delta)] = merged.get((n, delta), 0) + count
        # Points of each self-composed PMF after tail truncation (Hoeffding: a sum of c losses
        # in [-n h, n h] rarely leaves n h sqrt(2 c ln(2/τ)) of its mean).
        size = sum(2 * n * min(c, math.sqrt(hoeffding * c)) + 1 for (n, _), c in merged.items())
        if (
            size > _PLD_MAX_POINTS
            or len(merged) > _PLD_MAX_GROUPS
            or size * len(merged) > _PLD_MAX_WORK
        ):
            break
        plan = grid, merged, inflation
        if inflation <= _PLD_GRID_TOLERANCE * total:
            break
    if plan is None or plan[2] > _PLD_COARSE_GRID_TOLERANCE * total:
        return None
    return plan[0], plan[1]


def _repeated_release_pld(
    n: int, grid: float, delta: float, count: int
) -> privacy_loss_distribution.PrivacyLossDistribution:
    """The PLD of ``count`` releases dominated by (n h, δ)-randomized response, composed.

    One release has loss +n h or −n h with probabilities (1 − δ) e^{ε'}/(1 + e^{ε'}) and
    (1 − δ)/(1 + e^{ε'}), ε' = n h, and +∞ with probability δ (the PLD of
    `privacy_loss_distribution.from_privacy_parameters`). Their ``count``-fold composition is
    +∞ with probability 1 − (1 − δ)^count and otherwise (count − 2J) n h with
    J ~ Binomial(count, 1/(1 + e^{ε'})): computed here from the binomial law rather than by
    `self_compose`, whose FFT power amplifies round-off in the tails that small δ reads.
    Tails of mass below the truncation are moved pessimistically: the high-loss tail to +∞,
    the low-loss tail onto the lowest loss kept.
    """
    kept = math.exp(count * math.log1p(-delta))
    if n == 0:
        return privacy_loss_distribution.PrivacyLossDistribution.create_from_rounded_probability(
            {0: kept}, 1 - kept, grid
        )
    negative = float(expit(-n * grid))
    half_tail = _PLD_TAIL_MASS_TRUNCATION / 2
    first = int(stats.binom.ppf(half_tail, count, negative))
    last = int(stats.binom.isf(half_tail, count, negative))
    j = np.arange(first, last + 1)
    probs = stats.binom.pmf(j, count, negative)
    probs[-1] += stats.binom.sf(last, count, negative)
    high_tail = float(stats.binom.cdf(first - 1, count, negative)) if first > 0 else 0.0
    losses = ((count - 2 * j) * n).tolist()
    return privacy_loss_distribution.PrivacyLossDistribution.create_from_rounded_probability(
        dict(zip(losses, (kept * probs).tolist(), strict=True)),
        1 - kept + kept * high_tail,
        grid,
    )


def _pld_epsilon(groups: _Groups, delta: float) -> float | None:
    plan = _pld_plan(groups)
    if plan is None:
        return None
    grid, merged = plan
    composed = None
    for (n, release_delta), count in merged.items():
        repeated = _repeated_release_pld(n, grid, release_delta, count)
        composed = (
            repeated
            if composed is None
            else composed.compose(repeated, tail_mass_truncation=_PLD_TAIL_MASS_TRUNCATION)
        )
    return float(composed.get_epsilon_for_delta(delta))


def _randomized_response_rdp(eps: np.ndarray, orders: np.ndarray) -> np.ndarray:
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


def _rdp_epsilon(groups: _Groups, delta: float) -> float:
    """Σ of the releases' Rényi curves (their events' privacy maps), converted at δ less
    the δ the events pay apart from their curves, 1 − Π(1 − δ_i)."""
    events = [(_event(eps, release_delta, rho), count) for eps, release_delta, rho, count in groups]
    leak = -math.expm1(math.fsum(count * math.log1p(-event.delta) for event, count in events))
    pure_delta = (delta - leak) / (1 - leak)
    if pure_delta <= 0:
        return math.inf
    rdp = sum(
        (count * event.rdp(_RDP_ORDERS) for event, count in events), np.zeros_like(_RDP_ORDERS)
    )
    return float(rdp_privacy_accountant.compute_epsilon(_RDP_ORDERS, rdp, pure_delta)[0])


@lru_cache(maxsize=512)
def _compose(groups: _Groups, delta: float) -> Composition:
    floor = _unavoidable_delta(groups)
    if delta < floor:
        raise InvalidPrivacyParameterError(
            f"The releases include δ_i > 0, so their composition is (ε, δ)-DP only for "
            f"δ >= 1 − Π(1 − δ_i) = {_fmt(floor)}; got delta={_fmt(delta)}. Ask for a delta "
            f"of at least {_fmt(floor)}."
        )
    if _has_zcdp(groups):
        # The sum and the PLD read each release's (ε_i, δ_i): valid from their leaked δ on.
        if delta == 0:
            return Composition(math.inf, 0.0, "rdp")
        rdp = Composition(_rdp_epsilon(groups, delta), delta, "rdp")
        if delta < _leaked_delta(groups):
            return rdp
        plain = Composition(_rounded(_exact_sum(groups)), delta, "sum")
        return rdp if rdp.epsilon < plain.epsilon * (1 - _REPORTING_RESOLUTION) else plain
    plain = Composition(_rounded(_exact_sum(groups)), delta, "sum")
    if delta == 0 or plain.epsilon == 0 or math.isinf(plain.epsilon):
        return plain
    pld = _pld_epsilon(groups, delta)
    rdp = Composition(_rdp_epsilon(groups, delta), delta, "rdp")
    accountant = rdp if pld is None or rdp.epsilon < pld else Composition(pld, delta, "pld")
    if accountant.epsilon < plain.epsilon * (1 - _REPORTING_RESOLUTION):
        return accountant
    return plain


# The header fields of a journal made for a ledger that is not a ledger file (`open`), and of
# the journals of the session directory (not fsync'ed: see `pymc_private.journal`).
_JOURNAL_HEADER = {"kind": "journal", "budget": None, "source": None}
_SESSION_HEADER = {**_JOURNAL_HEADER, "kind": SESSION_KIND}
_ODOMETER = "odometer"
# The suffix of the copy `PrivacyLedger.migrate` keeps of a format-1 ledger file.
_FORMAT_1_BACKUP = ".format1"
_LOG = logging.getLogger("pymc_private")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class _Book:
    """A journal as a ledger reads it: the releases it holds (each uid once, also as an
    in-memory ledger for its budget check), its budget (the header's, or the last logged
    `PrivacyLedger.reset_budget`) and the source its header names."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        header = journal.header
        self.kind = header.get("kind")
        self.source = header.get("source")
        self.budget = self._budget(header.get("budget"), 1)
        self.ledger = PrivacyLedger()
        self._uids: set[str] = set()

    @property
    def path(self) -> str:
        return self.journal.path

    def _budget(self, fields: Any, line: int) -> Budget | None:
        try:
            return None if fields is None else Budget(**fields)
        except (TypeError, InvalidPrivacyParameterError):
            raise LedgerIntegrityError(
                f"The ledger journal {self.path}, line {line}, holds no valid budget; it was "
                "not written by pymc-private. Restore the file from a backup."
            ) from None

    def read_new(self) -> list[tuple[str, Release]]:
        """The releases appended since the last call (budget resets are applied)."""
        out = []
        for line, entry in self.journal.refresh():
            if set(entry) == {"uid", "release"}:
                try:
                    release = Release.from_dict(dict(entry["release"]))
                    uid = entry["uid"]
                    if not isinstance(uid, str):
                        raise TypeError(uid)
                except (TypeError, ValueError, InvalidPrivacyParameterError):
                    raise LedgerIntegrityError(
                        f"The ledger journal {self.path}, line {line}, holds no valid release: "
                        "it was not written by this version of pymc-private. Restore the file "
                        "from a backup."
                    ) from None
                if uid not in self._uids:
                    self._uids.add(uid)
                    self.ledger.record(release)
                out.append((uid, release))
            elif set(entry) == {"budget", "previous", "reason", "time"}:
                self.budget = self._budget(entry["budget"], line)
            else:
                raise LedgerIntegrityError(
                    f"The ledger journal {self.path}, line {line}, is of a kind this version of "
                    "pymc-private does not know (a newer version wrote it?): use that version."
                )
        return out

    def check(self, planned: list[Release]) -> None:
        """Refuse ``planned`` if it does not fit the journal's budget with everything the
        file holds (call under the file's lock, after reading it, for an atomic
        check-and-append)."""
        if self.budget is None:
            return
        try:
            self.budget.check(self.ledger, planned)
        except BudgetExceededError as error:
            raise BudgetExceededError(f"The ledger {self.path}: {error}") from None


def checked_budget(budget: Any) -> Budget | None:
    """Validate an optional ``budget`` argument at the boundary: a `Budget` or None."""
    if budget is not None and not isinstance(budget, Budget):
        raise TypeError(f"budget must be a pmp.Budget or None, got {type(budget).__name__}.")
    return budget


class PrivacyLedger:
    """Every release made from one data set, and their composition.

    Parameters
    ----------
    releases
        Releases to record at once (as `record_all`).
    journals
        Paths of append-only journal files to keep the ledger in (created if missing, in the
        checked format of `pymc_private.journal`). Every release recorded is written whole to
        each of them and ``fsync``'ed before `record_all` returns, and every read
        (`releases`, `composition`, a `Budget` check, ...) first picks up and checks what any
        process appended since, so a ledger shared by the worker processes of ``pm.sample``
        sees their charges. A ledger over several journals is the union of their releases
        (each recorded release appears once). Without journals the ledger lives in memory.

    Notes
    -----
    The ledger is append-only. A `Release` with ``count=k`` stands for k identical releases
    composed in sequence; releases of ε = 0 cost nothing but are kept as documentation.
    Compositions are cached on the ledger's contents, so asking twice is free.
    """

    def __init__(self, releases: Iterable[Release] = (), *, journals: Iterable = ()) -> None:
        books = [_Book(Journal.open(path, create=_JOURNAL_HEADER)) for path in journals]
        self._start(books)
        self.record_all(releases)

    def _start(self, books: list[_Book]) -> None:
        self._releases: list[Release] = []
        self._counts: dict[_Key, int] = {}
        self._books = books
        self._seen: set[str] = set()
        # The data sets of a session's ledger view (`dataset_ledger`), for its coverage check.
        self._datasets: tuple[str, ...] = ()
        self._warned = False
        self._sync()

    @property
    def journals(self) -> tuple[str, ...]:
        """The journal files of the ledger (empty for an in-memory ledger)."""
        return tuple(book.path for book in self._books)

    @classmethod
    def open(
        cls, path, budget: Budget | None = None, *, source: str | None = None
    ) -> PrivacyLedger:
        """A ledger kept in the file ``path``, across sessions and processes: an odometer.

        The file is created on first use, whole, with ``budget`` and ``source`` in its header
        (mode 0600); later opens, from any process, read them back (pass the same ones or
        none). A different budget is refused: change it with `reset_budget`, which keeps every
        release and logs the change in the file. `attach` a model to charge the file with every
        release from the private data the model reads.

        Every release recorded in the file is checked against its budget and appended in one
        step under an exclusive file lock, so processes sharing the file can never together
        spend past the budget (`BudgetExceededError`, nothing written). Its line is written
        whole and on disk (``fsync``) before the release is returned; if it cannot be
        (`LedgerWriteError`: a full disk, a file size limit), the file is cut back and the
        release is discarded. So a run that crashes has recorded every release it returned
        (`pmp.sample` records a run's whole planned spend before it draws). Every line carries
        a checksum chained to the lines before it: a file with a changed, removed or inserted
        line, or an edited header, is refused (`LedgerIntegrityError`, naming the line), as
        is an empty file; only a line torn by a crash, the last one, is skipped (see
        :ref:`accounting-files` for what the file protects against and what it cannot). The
        file holds releases (mechanism, ε, δ, counts), never data.

        Parameters
        ----------
        path
            The ledger file.
        budget
            What every release recorded in the file may cost together (None: no limit).
        source
            The data source the file is the ledger of (as declared by
            ``pmp.PrivateData(..., source=...)``): `attach` then charges every data set of
            that source, whichever records it holds. None: the file charges the data sets of
            the models it is attached to.

        Raises
        ------
        InvalidPrivacyParameterError
            ``budget`` not a `Budget` or different from the file's, ``source`` invalid or
            different from the file's, or ``path`` an existing file that is not a ledger file.
        LedgerIntegrityError
            The file fails its checks (see above).
        LedgerError
            A ledger file of format 1, written by an earlier pymc-private: `migrate` it.
        """
        if budget is not None and not isinstance(budget, Budget):
            raise InvalidPrivacyParameterError(
                f"budget must be a pmp.Budget or None, got {type(budget).__name__}."
            )
        source = checked_source(source)
        header = {"kind": _ODOMETER, "budget": None if budget is None else asdict(budget)}
        journal = Journal.open(path, create={**header, "source": source})
        book = _Book(journal)
        if book.kind != _ODOMETER:
            raise InvalidPrivacyParameterError(
                f"{journal.path} is a ledger journal, not a ledger file made by "
                "PrivacyLedger.open: pass the path of a file made by PrivacyLedger.open, or a "
                "new path."
            )
        ledger = cls.__new__(cls)
        ledger._start([book])
        if budget is not None and budget != book.budget:
            raise InvalidPrivacyParameterError(
                f"The ledger {journal.path} has budget {book.budget}, not {budget}: a budget "
                "is fixed when the ledger is created. Open it without budget= to use its own; "
                "to change it, keeping every release it holds, call "
                "PrivacyLedger.open(path).reset_budget(budget, reason=...), which logs the "
                "change in the file."
            )
        if source is not None and source != book.source:
            raise InvalidPrivacyParameterError(
                f"The ledger {journal.path} is the ledger of source {book.source!r}, not "
                f"{source!r}: a source is fixed when the file is created. Open it without "
                "source=, or create a ledger file for this source."
            )
        return ledger

    @classmethod
    def migrate(cls, path) -> PrivacyLedger:
        """Rewrite a ledger file of format 1 (written by an earlier pymc-private, without
        checksums) in the current format, with its budget and every release it holds, and
        open it; the original is kept beside it as ``path + ".format1"``.

        Run it once, while no process uses the file (a process of the earlier version would
        go on writing to the original). A complete line of the old file that does not parse
        (a line torn by a crash, which format 1 kept, or damage) cannot be told apart and is
        not carried over: its line numbers are logged and kept in the new header
        (``migrated``).

        Raises
        ------
        InvalidPrivacyParameterError
            ``path`` is not a ledger file of format 1.
        """
        path = os.path.abspath(os.fspath(path))
        with session.releasing():
            descriptor = os.open(path, os.O_RDWR | os.O_CLOEXEC)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX)
                with os.fdopen(os.dup(descriptor), "rb") as handle:
                    lines = handle.read().split(b"\n")
                header = _legacy(lines[0])
                if header is None or header.get("format") != LEGACY_FORMAT:
                    raise InvalidPrivacyParameterError(
                        f"{path} is not a ledger file of format 1; PrivacyLedger.open reads "
                        "the current format."
                    )
                entries, skipped = [], []
                for number, line in enumerate(lines[1:-1], start=2):
                    entry = _legacy(line)
                    try:
                        release = Release.from_dict(dict(entry["release"]))
                        entries.append({"uid": str(entry["uid"]), "release": release.to_dict()})
                    except (TypeError, KeyError, ValueError, InvalidPrivacyParameterError):
                        skipped.append(number)
                fields = {"kind": _ODOMETER, "budget": header.get("budget"), "source": None}
                fields["migrated"] = {"from_format": 1, "skipped_lines": skipped}
                replace(path, fields, entries, path + _FORMAT_1_BACKUP)
            finally:
                os.close(descriptor)
        if skipped:
            _LOG.warning(
                "Migrating %s: lines %s of the format-1 file did not parse (torn by a crash, or "
                "damaged) and were not carried over.",
                path,
                skipped,
            )
        return cls.open(path)

    @property
    def budget(self) -> Budget | None:
        """The budget of a ledger made by `open` (None if it was created without one, and
        for other ledgers)."""
        budgets = self.budgets
        return budgets[0] if len(self._books) == 1 and budgets else None

    @property
    def budgets(self) -> tuple[Budget, ...]:
        """The budgets of the ledger files this ledger writes to (`open`, `attach`), as they
        are now (a `reset_budget` from any process included): every release recorded here must
        fit each of them."""
        self._sync()
        return tuple(book.budget for book in self._books if book.budget is not None)

    def limits(self, budget: Budget | None = None) -> tuple[Budget, ...]:
        """What a release from this ledger's data must fit: ``budget`` (a call's own, when
        given) and the budgets of the ledger's files (`budgets`)."""
        return tuple(limit for limit in (budget, *self.budgets) if limit is not None)

    def _odometer(self, action: str) -> _Book:
        if len(self._books) != 1 or self._books[0].kind != _ODOMETER:
            raise UnsupportedModelError(
                f"Only a ledger made by pmp.PrivacyLedger.open(path) can {action}."
            )
        return self._books[0]

    def reset_budget(self, budget: Budget, *, reason: str) -> None:
        """Give the ledger file (made by `open`) a new budget, keeping every release it holds.

        The change is appended to the file as a checked line (new and previous budget, the
        reason, the time) and logged on the ``pymc_private`` logger; every process using the
        file checks against the new budget from its next release on.

        Raises
        ------
        InvalidPrivacyParameterError
            ``budget`` not a `Budget`, or ``reason`` not a non-empty string.
        UnsupportedModelError
            The ledger is not a file made by `open`.
        """
        book = self._odometer("have its budget reset")
        if not isinstance(budget, Budget):
            raise InvalidPrivacyParameterError(
                f"budget must be a pmp.Budget, got {type(budget).__name__}."
            )
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidPrivacyParameterError(
                "reason must say why the budget changes (e.g. who approved it); it is kept "
                "in the ledger file."
            )
        with locked([book.journal]) as held:
            self._sync()
            previous = book.budget
            entry = {"budget": asdict(budget), "previous": previous and asdict(previous)}
            held.append([(book.journal, [{**entry, "reason": reason, "time": _now()}])])
            self._sync()
        _LOG.warning(
            "The budget of the ledger file %s was reset from %s to %s: %s",
            book.path,
            previous,
            budget,
            reason,
        )

    def attach(self, model: Any = None) -> None:
        """Charge this ledger (made by `open`) with every release from the private data
        ``model`` reads (the model on the context stack by default), in this process, from
        now on, and with what this session released from it earlier.

        Attach once per session, before privatising or sampling. Releases then go to the
        session's ledger of the data set and to this file in one locked step, refused past
        the file's budget; `pmp.ledger_for` and the reports show the file's releases from
        earlier sessions too. A file that names a source (`open`) charges the data sets of
        that source only, including those declared later in the session (a corrected
        record, a subset), and the same records declared without the source.

        A process forked from one whose session it shares (see `pymc_private.session`) can
        attach only the files its parent attached: attach in the parent before forking.

        Raises
        ------
        UnsupportedModelError
            The ledger is not a file made by `open`; the model reads no private data, or no
            data of the file's source; or a forked child attaches a file of its own.
        """
        book = self._odometer("be attached to a model")
        datasets = datasets_of(model)
        if not datasets:
            raise UnsupportedModelError(
                "This model reads no pmp.PrivateData and no privatised statistics: there is "
                "no private data set to charge to the ledger."
            )
        if book.source is not None:
            if source_dataset(book.source) not in datasets:
                raise UnsupportedModelError(
                    f"The ledger {book.path} is the ledger of source {book.source!r}, and this "
                    "model reads no PrivateData declared with that source: declare it with "
                    f"pmp.PrivateData(..., source={book.source!r}) if it comes from the same "
                    "people, or attach a ledger file of its own."
                )
            source = source_dataset(book.source)
            # The source's records as declared here: the same records declared without the
            # source (a helper that forgot source=) are charged to the file too.
            records = {s.records for s in private_data(model).values() if s.dataset == source}
            datasets = (source, *sorted(records))
        with session.releasing():
            attached = session.attached()
            for dataset in datasets:
                if book.path in attached.get(dataset, {}):
                    continue
                if session.forked():
                    raise UnsupportedModelError(
                        f"This process was forked from a process whose session it shares, and "
                        f"{book.path} is not attached there: a forked child records where its "
                        "parent does. Attach the file in the parent before forking, or start "
                        "this process with the 'spawn' method (a session of its own)."
                    )
                self._copy_session(book, dataset)
                attached.setdefault(dataset, {})[book.path] = book.journal.header_line
                for key, view in session.views().items():
                    if dataset in key and book.path not in view.journals:
                        view._books.append(_attached_book(book.path, book.journal.header_line))
        self._sync()

    @staticmethod
    def _copy_session(book: _Book, dataset: str) -> None:
        """Append to the file what this session released from ``dataset`` and the file does
        not hold yet, with the same uids (so each release appears once), without a budget
        check: it was made."""
        session_book = _Book(Journal.open(session.journal(dataset), create=_SESSION_HEADER))
        file_book = _attached_book(book.path, book.journal.header_line)
        with locked([session_book.journal, file_book.journal]) as held:
            in_file = {uid for uid, _ in file_book.read_new()}
            entries = [
                {"uid": uid, "release": release.to_dict()}
                for uid, release in session_book.read_new()
                if uid not in in_file
            ]
            if entries:
                held.append([(file_book.journal, entries)])

    def _sync(self) -> None:
        """Add what the journals gained since the last read (from any process), checked."""
        with session.releasing():
            for book in self._books:
                for uid, release in book.read_new():
                    if uid not in self._seen:
                        self._seen.add(uid)
                        self._releases.append(release)
                        _add_releases(self._counts, [release])

    def __getstate__(self) -> dict[str, Any]:
        if self._books:
            return {"journals": self.journals}
        return {"releases": list(self._releases)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state.get("releases", ()), journals=state.get("journals", ()))

    def record(self, release: Release, *, budget: Budget | None = None) -> None:
        """Append one release (see `record_all`)."""
        self.record_all([release], budget=budget)

    def record_all(self, releases: Iterable[Release], *, budget: Budget | None = None) -> None:
        """Append every release, or none of them.

        With journals, under the process's release lock and an exclusive lock on every
        journal: everything the journals hold is read (and checked) first, then the releases
        are checked against ``budget`` (a call's own, against the whole ledger) and the budget
        of every ledger file among the journals (against what that file holds), and written
        whole to every journal and ``fsync``'ed, before this returns. Nothing is written when
        any of this fails.

        Raises
        ------
        TypeError
            An item is not a `Release`.
        BudgetExceededError
            The releases do not fit ``budget`` or a ledger file's budget.
        LedgerWriteError
            A journal could not take the lines whole (every journal is cut back).
        LedgerIntegrityError
            A journal fails its checks.
        """
        items = _validated_releases(releases, "releases")
        if not items:
            return
        with session.releasing():
            if not self._books:
                if budget is not None:
                    budget.check(self, items)
                self._releases.extend(items)
                _add_releases(self._counts, items)
                return
            entries = [{"uid": uuid.uuid4().hex, "release": item.to_dict()} for item in items]
            with locked([book.journal for book in self._books]) as held:
                self._sync()
                if budget is not None:
                    budget.check(self, items)
                for book in self._books:
                    book.check(items)
                held.append([(book.journal, entries) for book in self._books])
                self._sync()
        self._warn_uncovered()

    def _warn_uncovered(self) -> None:
        """Warn once if this session's view reads a data set no attached file covers while
        the session has attached files (`UncoveredDataWarning`)."""
        attached = session.attached()

        def covered(dataset: str) -> bool:
            # Attached to the data set, or to a source its records were declared with here.
            by_source = session.sources(dataset).intersection(self._datasets)
            return bool(attached.get(dataset)) or any(attached.get(s) for s in by_source)

        if self._warned or not attached or all(covered(d) for d in self._datasets):
            return
        self._warned = True
        warnings.warn(
            "This release reads a private data set that no ledger file attached in this "
            "session covers (the attached files cover other data sets): it is charged to this "
            "session's ledger only, not to a file's budget. If it comes from the same people "
            "as an attached file's data (a corrected record, a subset of rows or columns, "
            "another container), declare the same source for both, pmp.PrivateData(..., "
            "source=...), and attach the file to it; otherwise attach its own ledger file.",
            UncoveredDataWarning,
            stacklevel=3,
        )

    @property
    def releases(self) -> tuple[Release, ...]:
        """The recorded releases, in order."""
        self._sync()
        return tuple(self._releases)

    def __len__(self) -> int:
        return len(self.releases)

    def _groups(self, planned: Iterable[Release] = ()) -> _Groups:
        self._sync()
        counts = dict(self._counts)
        _add_releases(counts, planned)
        return _groups_of(counts)

    def composition(self, delta: float = 0.0) -> Composition:
        """The tightest (ε, δ) guarantee of everything recorded, at the given δ.

        Parameters
        ----------
        delta
            Target δ. With 0 the answer is the plain sum Σ ε_i, exact for pure ε-DP. With
            δ > 0 it is the smallest of the plain sum, dp-accounting's PLD accountant (when
            its grid is small enough) and the RDP bound, and ``method`` says which.

        Raises
        ------
        InvalidPrivacyParameterError
            If ``delta`` is outside [0, 1) or below the unavoidable δ = 1 − Π(1 − δ_i) of
            releases that are not pure.
        """
        return _compose(self._groups(), checked_delta(delta))

    def epsilon(self, delta: float = 0.0) -> float:
        """The composed ε at ``delta`` (see `composition`)."""
        return self.composition(delta).epsilon

    def would_compose(self, planned: Iterable[Release], delta: float = 0.0) -> Composition:
        """What `composition` would report if ``planned`` were recorded; records nothing."""
        items = _validated_releases(planned, "planned")
        return _compose(self._groups(items), checked_delta(delta))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict; `PrivacyLedger.from_dict` inverts it exactly."""
        return {
            "format": _LEDGER_FORMAT,
            "version": _LEDGER_VERSION,
            "releases": [release.to_dict() for release in self.releases],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PrivacyLedger:
        """Rebuild a ledger from `to_dict` output, validating every release."""
        if not isinstance(data, Mapping) or data.get("format") != _LEDGER_FORMAT:
            raise ValueError(
                f"Not a serialised PrivacyLedger: expected a dict with format={_LEDGER_FORMAT!r}."
            )
        if data.get("version") != _LEDGER_VERSION:
            raise ValueError(
                f"Unsupported PrivacyLedger version {data.get('version')!r}; this version of "
                f"pymc-private reads version {_LEDGER_VERSION}."
            )
        return cls(Release.from_dict(dict(item)) for item in data["releases"])

    def to_json(self) -> str:
        """The ledger as a JSON string (`to_dict`)."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, text: str) -> PrivacyLedger:
        """Rebuild a ledger from `to_json` output."""
        return cls.from_dict(json.loads(text))

    def summary(self, delta: float | None = None) -> list[dict[str, Any]]:
        """The ledger as table rows: one per kind of release, then the totals.

        Release rows group releases by (mechanism, statistic, ε, δ, secure) and give the
        per-release ε and δ, the total ``count`` and the ``subtotal`` Σ ε of the group. Total
        rows (``kind="total"``) give the composed ε in ``subtotal`` with its ``delta`` and
        ``method``: the plain sum (at δ = 0, or at the unavoidable δ when some release has
        δ_i > 0), and the composition at ``delta`` when it is given and gives a smaller ε.
        """
        rows: dict[tuple[Any, ...], dict[str, Any]] = {}
        for release in self.releases:
            key = (release.mechanism, release.statistic, release.epsilon, release.delta)
            key += (release.secure,)
            row = rows.setdefault(
                key,
                {
                    "kind": "release",
                    "mechanism": release.mechanism,
                    "statistic": release.statistic,
                    "epsilon": release.epsilon,
                    "delta": release.delta,
                    "count": 0,
                    "subtotal": Fraction(0),
                    "secure": release.secure,
                    "method": None,
                },
            )
            row["count"] += release.count
            row["subtotal"] += Fraction(release.epsilon) * release.count
        table = [{**row, "subtotal": _rounded(row["subtotal"])} for row in rows.values()]
        groups = self._groups()
        totals = [_compose(groups, _leaked_delta(groups))]
        if delta is not None:
            composed = self.composition(delta)
            if composed.epsilon < totals[0].epsilon:
                totals.append(composed)
        for total in totals:
            table.append(
                {
                    "kind": "total",
                    "mechanism": None,
                    "statistic": None,
                    "epsilon": None,
                    "delta": total.delta,
                    "count": sum(release.count for release in self._releases),
                    "subtotal": total.epsilon,
                    "secure": all(release.secure for release in self._releases),
                    "method": total.method,
                }
            )
        return table

    def _table(self, delta: float | None = None) -> tuple[str, list[str], list[list[str]]]:
        """Title, header and body of the displays, from one `summary`."""
        header = ["mechanism", "statistic", "ε each", "δ each", "count", "ε subtotal", "secure"]
        body = []
        rows = self.summary(delta)
        for row in rows:
            if row["kind"] == "release":
                cells = [row["mechanism"], row["statistic"] or "", _fmt(row["epsilon"])]
                cells += [_fmt(row["delta"]), str(row["count"]), _fmt(row["subtotal"])]
                cells.append("yes" if row["secure"] else "NO")
            else:
                cells = [f"total ({row['method']})", "", "", f"δ = {_fmt(row['delta'])}"]
                cells += [str(row["count"]), _fmt(row["subtotal"]), ""]
            body.append(cells)
        kinds = sum(row["kind"] == "release" for row in rows)
        count = sum(release.count for release in self._releases)
        title = (
            f"PrivacyLedger: {count} release{'s' if count != 1 else ''} in {kinds} "
            f"row{'s' if kinds != 1 else ''}"
        )
        return title, header, body

    def render(self, delta: float | None = None) -> str:
        """The ledger as a text table (totals composed at ``delta`` too, when given)."""
        if not self.releases:
            return "PrivacyLedger: no releases"
        title, header, body = self._table(delta)
        widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
        lines = [
            "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
            for line in [header, *body]
        ]
        return title + "\n" + "\n".join(lines)

    def render_html(self, delta: float | None = None) -> str:
        """The ledger as an HTML table, as `render`."""
        if not self.releases:
            return "<p>PrivacyLedger: no releases</p>"
        title, header, body = self._table(delta)
        head = "".join(f"<th>{html.escape(cell)}</th>" for cell in header)
        rows = "".join(
            "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in line) + "</tr>"
            for line in body
        )
        return (
            f"<p>{html.escape(title)}</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
        )

    def __repr__(self) -> str:
        return self.render()

    def _repr_html_(self) -> str:
        return self.render_html()


def _largest_fitting(fits: Callable[[int], bool], start: int, first_step: int = 1) -> int:
    """The largest k >= start with fits(k), for a monotone ``fits`` with fits(start) true."""
    low, step = start, max(1, first_step)
    while fits(low + step):
        low += step
        step *= 2
    high = low + step
    while high - low > 1:
        middle = (low + high) // 2
        if fits(middle):
            low = middle
        else:
            high = middle
    return low


# The δ a refused pure budget suggests (`Budget._delta_hint`).
_HINT_DELTA = 1e-6


@dataclass(frozen=True)
class Budget:
    """A privacy budget: the (ε, δ) that everything released from one data set may cost.

    Parameters
    ----------
    epsilon
        Total ε allowed, finite and > 0.
    delta
        Total δ allowed, in [0, 1). With 0 (the default: pure ε-DP, nothing may fail) the
        ledger's plain sum Σ ε_i is compared to ``epsilon`` (exactly: thirty spends of 0.1
        fit a budget of 3.0); with δ > 0 its tightest composition at ``delta``, often far
        smaller for many releases (pay per draw). A refusal at δ = 0 says when the releases
        would fit at δ = 1e-6, so the choice is visible; it is the data custodian's.
    """

    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        if (
            isinstance(self.epsilon, bool)
            or not isinstance(self.epsilon, int | float)
            or not math.isfinite(self.epsilon)
            or self.epsilon <= 0
        ):
            raise InvalidPrivacyParameterError(
                f"Budget epsilon must be a finite number > 0, got {self.epsilon!r}; "
                "e.g. Budget(1.0)."
            )
        object.__setattr__(self, "epsilon", float(self.epsilon))
        object.__setattr__(self, "delta", checked_delta(self.delta, "Budget delta"))

    def _over_delta_message(self, floor: float) -> str:
        return (
            f"The releases are (ε, δ)-DP only for δ >= 1 − Π(1 − δ_i) = {_fmt(floor)}, above "
            f"the budget's delta = {_fmt(self.delta)}. Nothing was recorded. Use releases with "
            f"smaller δ_i, or a budget with delta >= {_fmt(floor)}."
        )

    def check(self, ledger: PrivacyLedger, planned: Iterable[Release] = ()) -> Composition:
        """The composition of ``ledger`` plus ``planned``, if it fits; never records anything.

        Raises
        ------
        BudgetExceededError
            When the composition at the budget's δ exceeds the budget, with the planned spend,
            what is already spent and what to change.
        """
        items = _validated_releases(planned, "planned")
        groups = ledger._groups(items)
        floor = _unavoidable_delta(groups)
        if floor > self.delta:
            raise BudgetExceededError(self._over_delta_message(floor))
        if self.delta == 0 and _has_zcdp(groups):
            raise BudgetExceededError(
                "Gaussian (zCDP) releases are (ε, δ)-DP only for δ > 0, and this budget has "
                "delta = 0. Nothing was recorded. Use a Budget with delta > 0 (e.g. "
                "Budget(epsilon, delta=1e-6)) or the Laplace mechanism."
            )
        total = _compose(groups, self.delta)
        if total.epsilon > self.epsilon:
            spent = ledger.composition(self.delta)
            planned_sum = _rounded(_exact_sum(_groups_of(_counts_of(items))))
            raise BudgetExceededError(
                f"Planned spend ε = {_fmt(planned_sum)} ({sum(r.count for r in items)} "
                f"releases) on top of ε = {_fmt(spent.epsilon)} already spent composes to "
                f"ε = {_fmt(total.epsilon)} at δ = {_fmt(self.delta)} ({total.method}), over "
                f"the budget ε = {_fmt(self.epsilon)}. Nothing was recorded. Plan fewer "
                "releases (draws × chains), a smaller per-release ε (a higher temperature), "
                "or a larger budget; Budget.affordable_count says how many releases fit."
                + self._delta_hint(groups)
            )
        return total

    def _delta_hint(self, groups) -> str:
        """With δ = 0, what a small δ would change: many releases compose to a much smaller
        ε at δ = 1e-6 than their plain sum (the choice of δ is the custodian's to make)."""
        if self.delta > 0 or _unavoidable_delta(groups) > _HINT_DELTA:
            return ""
        relaxed = _compose(groups, _HINT_DELTA)
        if relaxed.epsilon > self.epsilon:
            return ""
        return (
            f" This budget has delta = 0, so it compares the plain sum; at δ = {_HINT_DELTA:g} "
            f"the same releases compose to ε = {_fmt(relaxed.epsilon)} ({relaxed.method}), "
            f"which fits: Budget({_fmt(self.epsilon)}, delta={_HINT_DELTA:g}) accepts them if "
            "a failure probability δ is acceptable."
        )

    def remaining(self, ledger: PrivacyLedger) -> float:
        """The budget ε minus the ledger's composed ε at the budget's δ (0 when none is left).

        With δ > 0 compositions are not additive: use `check` or `affordable_count` to ask
        whether planned releases fit, not this difference.
        """
        groups = ledger._groups()
        if _unavoidable_delta(groups) > self.delta:
            return 0.0
        if self.delta == 0 and _has_zcdp(groups):
            return 0.0
        if self.delta == 0:
            return max(0.0, _rounded(Fraction(self.epsilon) - _exact_sum(groups)))
        return max(0.0, self.epsilon - _compose(groups, self.delta).epsilon)

    def affordable_count(
        self, ledger: PrivacyLedger, epsilon_per_release: float, *, per_count: int = 1
    ) -> int:
        """The largest k such that k more groups of ``per_count`` releases fit the budget.

        Parameters
        ----------
        ledger
            What has been spent already.
        epsilon_per_release
            The ε of one planned (pure ε-DP) release, finite and > 0.
        per_count
            Releases per group, e.g. the number of chains when k counts draws.

        Returns
        -------
        int
            k >= 0. Exact under the plain sum when the budget's δ is 0; with δ > 0 a
            monotone search with the ledger's composition at that δ.
        """
        if (
            isinstance(epsilon_per_release, bool)
            or not isinstance(epsilon_per_release, int | float)
            or not math.isfinite(epsilon_per_release)
            or epsilon_per_release <= 0
        ):
            raise InvalidPrivacyParameterError(
                f"epsilon_per_release must be a finite number > 0, got {epsilon_per_release!r};"
                " releases that cost nothing need no budget."
            )
        if isinstance(per_count, bool) or not isinstance(per_count, int) or per_count < 1:
            raise InvalidPrivacyParameterError(
                f"per_count must be a positive integer (e.g. the number of chains), got "
                f"{per_count!r}."
            )
        eps = float(epsilon_per_release)
        ledger._sync()
        base = dict(ledger._counts)
        if _unavoidable_delta(_groups_of(base)) > self.delta or (
            self.delta == 0 and _has_zcdp(_groups_of(base))
        ):
            return 0
        spent = _exact_sum(_groups_of(base))
        group_cost = Fraction(eps) * per_count

        def fits_sum(k: int) -> bool:
            return _within(spent + k * group_cost, self.epsilon)

        by_sum = (
            _largest_fitting(fits_sum, max(0, int((Fraction(self.epsilon) - spent) / group_cost)))
            if fits_sum(0)
            else None
        )
        if self.delta == 0:
            return 0 if by_sum is None else by_sum

        def fits(k: int) -> bool:
            counts = dict(base)
            counts[(eps, 0.0, 0.0)] = counts.get((eps, 0.0, 0.0), 0) + k * per_count
            return _compose(_groups_of(counts), self.delta).epsilon <= self.epsilon

        # Without zCDP releases the composition at δ never exceeds the plain sum, so what the
        # sum affords fits; with them the sum may not hold at δ, and the search starts at 0.
        if _has_zcdp(_groups_of(base)):
            by_sum = None
        if by_sum is None and not fits(0):
            return 0
        start = by_sum or 0
        return _largest_fitting(fits, start, first_step=start // 4)


def _attached_book(path: str, header_line: bytes) -> _Book:
    """A reader of an attached ledger file, which must still be the file attached."""
    return _Book(Journal.open(path, header_line=header_line))


def _legacy(line: bytes) -> dict | None:
    """A line of a format-1 ledger file as a dict (None if it does not parse as one)."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def dataset_ledger(datasets: Iterable[str]) -> PrivacyLedger:
    """The ledger of everything released from the given private data sets (by the ids
    `pymc_private.data` gives them): the union of their journals in the session directory
    and of the ledger files attached to them. A release recorded in it is recorded for each
    of them."""
    key = tuple(sorted(set(datasets)))
    with session.releasing():
        views = session.views()
        ledger = views.get(key)
        if ledger is None:
            books = [_Book(Journal.open(session.journal(d), create=_SESSION_HEADER)) for d in key]
            files = {p: h for d in key for p, h in session.attached().get(d, {}).items()}
            books.extend(_attached_book(p, h) for p, h in files.items())
            ledger = views[key] = PrivacyLedger.__new__(PrivacyLedger)
            ledger._start(books)
            ledger._datasets = key
    return ledger


def ledger_for(model: Any) -> PrivacyLedger:
    """The ledger of everything released from the private data a model reads.

    One ledger per private data set (:ref:`privacy-model-ledger`): a `pmp.PrivateData` array is
    a data set, identified by its values, so the same data reached through another model,
    `pm.do`, a copy, a pickle or a second `PrivateData` declaration is the same data set; a
    model returned by `pmp.privatize` carries the data sets its statistics were released from. A
    model that reads several data sets charges each of them, and its ledger is the union of
    theirs. `pmp.privatize`, `pmp.sample`, `pmp.sample_posterior` and the private steps record
    here, and budgets are checked against it.

    Raises
    ------
    UnsupportedModelError
        When the model reads no private data and no released statistics.
    """
    datasets = datasets_of(model)
    if not datasets:
        raise UnsupportedModelError(
            "This model reads no pmp.PrivateData and no privatised statistics: there is no "
            "private data set whose ledger to use."
        )
    return dataset_ledger(datasets)
