"""Composition: the (ε, δ) of many releases, by the plain sum, dp-accounting's PLD or RDP.

Only the ledger composes (`pymc_private.dp.ledger`); this module holds how. Releases
(`pymc_private.dp.events.Release`) are grouped by their distinct typed events with a count
(`groups_of`), and `compose` gives the tightest figure of a group set at a target δ. Each
accountant says which event types it reads (`ACCOUNTANTS`), and a composition with an event
of a type none of them reads is refused (`UnsupportedEventError`). Every figure is an upper
bound; the smallest valid one is reported:

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
  distinct groups by direct convolution of their laws (dp-accounting's pessimistic FFT
  `compose` when that would be slow), and dp-accounting converts the result to ε.
- ``"profile"``: releases of the discrete Gaussian on unit-shifted counts
  (`pymc_private.dp.events.UnitShiftGaussianEvent`), when they are all there is and share one
  σ, by the exact privacy profile of all their unit shifts together (dp-accounting's PLD of
  the discrete Gaussian; `_unit_shift_profile_epsilon` has the proof).
- ``"rdp"``: Rényi DP, each ε_i-DP release bounded by the Rényi divergence of binary
  randomized response with ratio e^{ε_i} (Mironov 2017, Proposition 5; a valid RDP curve for
  any ε_i-DP mechanism by the same domination and data processing), converted to (ε, δ) by
  dp-accounting's `rdp_privacy_accountant.compute_epsilon`; the δ_i are paid as
  1 − Π_i(1 − δ_i) on top (the leaking branch of the same dominating pair). Releases of the
  Gaussian mechanism (ρ-zCDP, `pymc_private.dp.events.ZcdpEvent`) add their curve α·ρ
  instead, and no δ_i; steps of the Gaussian mechanism on a Poisson subsample
  (`pymc_private.dp.events.SubsampledGaussianEvent`) add their replace-one curve, and no δ_i.
  With such a step the orders are `pymc_private.dp.events.SUBSAMPLED_RDP_ORDERS`.

Zcdp and subsampled releases compose by their Rényi curves (``"rdp"``), or by the plain sum of
the (ε_i, δ_i) they state from their own δ_i on; the PLD route, which reads a randomized-
response worst case of (ε_i, δ_i), is not used for them (for a subsampled step it would also
need a dominating pair of the replace-one subsampled Gaussian, which is not proved here).

At δ = 0 the plain sum is reported. At δ > 0 the smallest of those that apply is reported (the
PLD only when its grid is small enough to compute quickly: many distinct ε values or huge
ratios between them leave the RDP figure); an accountant's figure replaces the plain sum only
when it is smaller by more than 0.1 %.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from fractions import Fraction
from functools import lru_cache
from typing import NamedTuple

import numpy as np
from dp_accounting.pld import privacy_loss_distribution
from dp_accounting.rdp import rdp_privacy_accountant
from scipy import stats
from scipy.special import expit

from pymc_private.dp.events import (
    JOURNAL_EVENTS,
    RDP_ORDERS,
    SUBSAMPLED_RDP_ORDERS,
    PrivacyEvent,
    PureEvent,
    Release,
    SubsampledGaussianEvent,
    UnitShiftGaussianEvent,
    sound_curve,
    unit_shift_epsilon,
)
from pymc_private.dp.risk import pure_gaussian_mu
from pymc_private.errors import InvalidPrivacyParameterError, UnsupportedEventError

__all__ = [
    "ACCOUNTANTS",
    "Composition",
    "Groups",
    "accepts",
    "add_releases",
    "compose",
    "counts_of",
    "exact_sum",
    "gaussian_mu",
    "groups_of",
    "has_rdp_only",
    "leaked_delta",
    "refuse_unknown",
    "rounded",
    "six_digits",
    "unavoidable_delta",
    "validated_releases",
    "within",
]

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
# Two laws are composed by direct convolution when the product of their sizes is at most
# this (~0.1 s): every term is a product of non-negative probabilities, so each composed
# probability is exact to a few ulps. FFT convolution, past it, adds round-off of about 1e-16
# to every probability, which at small δ moves ε in its tenth digit, below the exact value
# too, and differently with each SciPy release.
_PLD_DIRECT_WORK = 50_000_000
# The accountant's figure replaces the plain sum only when it is smaller by more than this
# fraction: differences at the accountant's resolution are not worth a less simple figure.
_REPORTING_RESOLUTION = 1e-3

_METHOD_DESCRIPTIONS = {
    "sum": "plain sum of the per-release ε (basic sequential composition)",
    "pld": "dp-accounting privacy-loss-distribution accountant (pessimistic)",
    "rdp": "Rényi-DP bound (randomized response, zCDP and subsampled Gaussian curves), "
    "converted by dp-accounting",
    "profile": "exact privacy profile of the unit-shift discrete Gaussian (dp-accounting PLD)",
}

# (event, count) for every distinct event that costs something, in the order of
# `_group_order`.
Groups = tuple[tuple[PrivacyEvent, int], ...]

ACCOUNTANTS: dict[str, tuple[type[PrivacyEvent], ...]] = {
    "sum": JOURNAL_EVENTS,
    "pld": (PureEvent,),
    "profile": (UnitShiftGaussianEvent,),
    "rdp": JOURNAL_EVENTS,
}
"""The event types each accountant reads, exactly (a subclass is not read as its base: its
bound may differ). The plain sum reads every event's own (ε_i, δ_i); the PLD a randomized-
response worst case of a pure event's (ε_i, δ_i) only (a dominating pair of the others' is not
used here); the profile the unit-shift discrete Gaussian's exact privacy profile, of events
of one σ; the RDP accountant every event's Rényi curve and the δ it pays apart. The sum and
the RDP accountant read every type a ledger takes, the event types of
`pymc_private.dp.events.JOURNAL_EVENTS`, which each state their own (ε, δ) and Rényi curve (so
a new event type is its class and its entry there), and `refuse_unknown` refuses the rest
before any composition; `compose` asks `accepts` of the PLD and the profile only."""


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
        distribution accountant), ``"rdp"`` (Rényi DP, converted by dp-accounting) or
        ``"profile"`` (the exact privacy profile of unit-shift discrete Gaussian releases).
    """

    epsilon: float
    delta: float
    method: str

    @property
    def description(self) -> str:
        """One line for a person: the guarantee and how it was obtained."""
        if self.method == "sum":  # Σ ε_i holds at the releases' own δ, any larger δ too
            return (
                f"ε = {six_digits(self.epsilon)} by the {_METHOD_DESCRIPTIONS['sum']}, at the "
                f"releases' own δ (the δ column), so also at δ = {six_digits(self.delta)}: no "
                "accountant does better here"
            )
        return (
            f"(ε = {six_digits(self.epsilon)}, δ = {six_digits(self.delta)})-DP by the "
            f"{_METHOD_DESCRIPTIONS[self.method]}"
        )


def six_digits(value: float) -> str:
    return f"{value:.6g}"


def validated_releases(releases: Iterable[Release], name: str) -> list[Release]:
    items = list(releases)
    for index, item in enumerate(items):
        if not isinstance(item, Release):
            raise TypeError(
                f"{name}[{index}] must be a Release, got {type(item).__name__}; describe each "
                "spend as Release(mechanism, PureEvent(epsilon), ...)."
            )
    refuse_unknown(tuple((item.event, item.count) for item in items))
    return items


def add_releases(counts: dict[PrivacyEvent, int], releases: Iterable[Release]) -> None:
    """Add each release's count to its event's (releases that cost nothing are left out)."""
    for release in releases:
        if release.epsilon > 0 or release.delta > 0:
            counts[release.event] = counts.get(release.event, 0) + release.count


def counts_of(releases: Iterable[Release]) -> dict[PrivacyEvent, int]:
    counts: dict[PrivacyEvent, int] = {}
    add_releases(counts, releases)
    return counts


def _group_order(group: tuple[PrivacyEvent, int]) -> tuple:
    """(ε, δ, ρ, q, z, type, count): the order in which earlier versions summed and composed
    the groups, so that every float sum runs in the same order."""
    event, count = group
    return (
        event.epsilon,
        event.delta,
        getattr(event, "rho", 0.0),
        getattr(event, "sampling_rate", 0.0),
        getattr(event, "noise_multiplier", 0.0),
        type(event).__name__,
        count,
    )


def groups_of(counts: Mapping[PrivacyEvent, int]) -> Groups:
    return tuple(sorted(counts.items(), key=_group_order))


def has_rdp_only(groups: Groups) -> bool:
    """Whether some event has no pure-ε form (the Gaussian events): then there is no finite
    ε at δ = 0, and the Rényi route composes."""
    return any(event.rdp_only for event, _ in groups)


def accepts(accountant: str, groups: Groups) -> bool:
    """Whether ``accountant`` reads every event of ``groups`` (`ACCOUNTANTS`)."""
    return all(type(event) in ACCOUNTANTS[accountant] for event, _ in groups)


def refuse_unknown(groups: Groups) -> None:
    """Raise `UnsupportedEventError` when an event of ``groups`` is of a type that the plain
    sum and the RDP accountant do not both read (every composition asks both): a ledger
    records no such release and a budget checks none."""
    known = set(ACCOUNTANTS["sum"]) & set(ACCOUNTANTS["rdp"])
    unknown = sorted({type(event).__name__ for event, _ in groups if type(event) not in known})
    if unknown:
        raise UnsupportedEventError(
            f"No accountant reads events of type {', '.join(unknown)}: the ledger composes "
            f"only {', '.join(sorted(kind.__name__ for kind in known))}. Describe the release "
            "by one of these events (a worst case: PureEvent(epsilon, delta)), or add the type "
            "to the accountants that can bound it (pymc_private.dp.composition.ACCOUNTANTS)."
        )


@lru_cache(maxsize=512)
def exact_sum(groups: Groups) -> Fraction:
    return sum((Fraction(event.epsilon) * count for event, count in groups), Fraction(0))


def rounded(exact: Fraction) -> float:
    """``exact`` rounded once to the nearest float (infinite beyond the float range)."""
    try:
        return float(exact)
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


def within(exact: Fraction, bound: float) -> bool:
    """The exact-sum rule: an exact spend fits when its once-rounded value is <= bound."""
    return rounded(exact) <= bound


@lru_cache(maxsize=512)
def leaked_delta(groups: Groups) -> float:
    """1 − Π_i(1 − δ_i) over ``groups``: the δ the plain sum and the PLD hold at."""
    if all(event.delta == 0 for event, _ in groups):
        return 0.0
    product_form = -math.expm1(
        math.fsum(count * math.log1p(-event.delta) for event, count in groups)
    )
    plain_sum = rounded(
        sum((Fraction(event.delta) * count for event, count in groups), Fraction(0))
    )
    return min(product_form, plain_sum)


def gaussian_mu(groups: Groups) -> float | None:
    """The Gaussian-DP μ of ``groups`` when every event is a pure ε-DP `PureEvent` (δ = 0):
    √(Σ count·μ(ε)²), μ(ε) = 2Φ⁻¹(e^ε / (1 + e^ε)) (`pymc_private.dp.risk`, where ε-DP ⇒ μ-GDP
    is proved; μ-GDP composes in quadrature, Dong, Roth & Su 2022, Corollary 3.3). None
    otherwise: no finite μ holds with δ > 0, and no Gaussian trade-off is proved here for the
    other events."""
    if not all(type(event) is PureEvent and event.delta == 0.0 for event, _ in groups):
        return None
    return math.sqrt(
        math.fsum(count * pure_gaussian_mu(event.epsilon) ** 2 for event, count in groups)
    )


def unavoidable_delta(groups: Groups) -> float:
    """The δ below which no ε makes the composition (ε, δ)-DP: 1 − Π(1 − δ_i) over the
    events with a pure form (the Gaussian events hold at every δ > 0)."""
    return leaked_delta(tuple(group for group in groups if not group[0].rdp_only))


def _pld_plan(groups: Groups) -> tuple[float, dict[tuple[int, float], int]] | None:
    """The PLD grid h and the counts of releases per (grid index n, δ_i), n = ⌈ε_i / h⌉.

    None when no grid meets the tolerances within the size limits.
    """
    eps = np.array([event.epsilon for event, _ in groups])
    eps_min = eps[eps > 0].min()
    if eps.max() > _PLD_MAX_POINTS * eps_min:
        return None
    counts = [c for _, c in groups]
    total = rounded(exact_sum(groups))
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
        for (event, count), n in zip(groups, points.astype(int).tolist(), strict=True):
            merged[(n, event.delta)] = merged.get((n, event.delta), 0) + count
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


class _LossLaw(NamedTuple):
    """A privacy-loss law on the PLD grid: ``probabilities[k]`` is the mass at loss
    (``lowest`` + k)·h, and ``infinity`` the mass at +∞."""

    lowest: int
    probabilities: np.ndarray
    infinity: float

    def composed(self, other: _LossLaw) -> _LossLaw:
        """The law of the sum of independent losses of the two laws, by direct convolution."""
        return _LossLaw(
            self.lowest + other.lowest,
            np.convolve(self.probabilities, other.probabilities),
            1 - (1 - self.infinity) * (1 - other.infinity),
        )

    def pld(self, grid: float) -> privacy_loss_distribution.PrivacyLossDistribution:
        """dp-accounting's PLD of this law on the grid h (losses from the highest down)."""
        nonzero = np.flatnonzero(self.probabilities)[::-1]
        losses = (nonzero + self.lowest).tolist()
        return privacy_loss_distribution.PrivacyLossDistribution.create_from_rounded_probability(
            dict(zip(losses, self.probabilities[nonzero].tolist(), strict=True)),
            self.infinity,
            grid,
        )


def _repeated_release_law(n: int, grid: float, delta: float, count: int) -> _LossLaw:
    """The loss law of ``count`` releases dominated by (n h, δ)-randomized response, composed.

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
        return _LossLaw(0, np.array([kept]), 1 - kept)
    negative = float(expit(-n * grid))
    half_tail = _PLD_TAIL_MASS_TRUNCATION / 2
    first = int(stats.binom.ppf(half_tail, count, negative))
    last = int(stats.binom.isf(half_tail, count, negative))
    j = np.arange(first, last + 1)
    probs = stats.binom.pmf(j, count, negative)
    probs[-1] += stats.binom.sf(last, count, negative)
    high_tail = float(stats.binom.cdf(first - 1, count, negative)) if first > 0 else 0.0
    lowest = (count - 2 * last) * n
    probabilities = np.zeros(2 * n * (last - first) + 1)
    probabilities[(count - 2 * j) * n - lowest] = kept * probs
    return _LossLaw(lowest, probabilities, 1 - kept + kept * high_tail)


def _pld_epsilon(groups: Groups, delta: float) -> float | None:
    plan = _pld_plan(groups)
    if plan is None:
        return None
    grid, merged = plan
    laws = [_repeated_release_law(n, grid, d, count) for (n, d), count in merged.items()]
    composed, rest = laws[0], laws[1:]
    while rest and composed.probabilities.size * rest[0].probabilities.size <= _PLD_DIRECT_WORK:
        composed, rest = composed.composed(rest[0]), rest[1:]
    pld = composed.pld(grid)
    for law in rest:
        pld = pld.compose(law.pld(grid), tail_mass_truncation=_PLD_TAIL_MASS_TRUNCATION)
    return float(pld.get_epsilon_for_delta(delta))


# The largest number of unit shifts composed by their exact profile: the FFT error margin of
# `pymc_private.dp.events.unit_shift_epsilon` was measured up to K = 1000.
_UNIT_SHIFT_MAX_COMPOSED = 1000


def _unit_shift_profile_epsilon(groups: Groups, delta: float) -> float | None:
    """The ε at δ of unit-shift discrete Gaussian releases of one σ, by their exact profile:
    `pymc_private.dp.events.unit_shift_epsilon` (σ, Σ_i k_i K_i, δ), for k_i releases of K_i
    unit shifts each; None when the σ differ or Σ_i k_i K_i exceeds 1000.

    Proof. `unit_shift_epsilon` proves that for one release of K shifts and every pair of
    neighbours D, D', the hockey-stick divergence H_{e^ε}(M(D) ‖ M(D')) is at most that of the
    pair (N_ℤ(1, σ²)^K, N_ℤ(0, σ²)^K) (in either order): that pair dominates the release
    (Zhu, Dong & Wang 2022, "Optimal accounting of differential privacy via characteristic
    function", AISTATS, Definition 7). The pair depends on public σ and K only, not on
    earlier outputs, so by their Theorem 10 the product of the releases' pairs, the
    (Σ_i k_i K_i)-fold product of the unit-shift pair, dominates their adaptive composition;
    its profile is the one `unit_shift_epsilon` computes (the same PLD self-composed, with its
    truncation and FFT margins for that many shifts).
    """
    sigmas = {event.sigma for event, _ in groups}
    shifts = sum(event.shifts * count for event, count in groups)
    if len(sigmas) != 1 or shifts > _UNIT_SHIFT_MAX_COMPOSED:
        return None
    return unit_shift_epsilon(sigmas.pop(), shifts, delta)


def _rdp_epsilon(groups: Groups, delta: float) -> float:
    """Σ of the events' Rényi curves, converted at δ less the δ the events pay apart from
    their curves, 1 − Π(1 − δ_i)."""
    subsampled = any(isinstance(event, SubsampledGaussianEvent) for event, _ in groups)
    orders = SUBSAMPLED_RDP_ORDERS if subsampled else RDP_ORDERS
    leak = -math.expm1(math.fsum(count * math.log1p(-event.paid_delta) for event, count in groups))
    pure_delta = (delta - leak) / (1 - leak)
    if pure_delta <= 0:
        return math.inf
    rdp = sum((count * event.rdp(orders) for event, count in groups), np.zeros_like(orders))
    epsilon = float(rdp_privacy_accountant.compute_epsilon(orders, sound_curve(rdp), pure_delta)[0])
    return math.inf if math.isnan(epsilon) else epsilon


@lru_cache(maxsize=512)
def compose(groups: Groups, delta: float) -> Composition:
    """The smallest figure of the accountants that read ``groups`` at ``delta``.

    Raises
    ------
    UnsupportedEventError
        An event is of a type no accountant reads (`ACCOUNTANTS`).
    InvalidPrivacyParameterError
        ``delta`` is below the δ the events pay apart (`unavoidable_delta`).
    """
    refuse_unknown(groups)
    floor = unavoidable_delta(groups)
    if delta < floor:
        raise InvalidPrivacyParameterError(
            f"The releases include δ_i > 0, so their composition is (ε, δ)-DP only for "
            f"δ >= 1 − Π(1 − δ_i) = {six_digits(floor)}; got delta={six_digits(delta)}. Ask for "
            f"a delta of at least {six_digits(floor)}."
        )
    if has_rdp_only(groups):
        # The sum and the PLD read each release's (ε_i, δ_i): valid from their leaked δ on.
        if delta == 0:
            return Composition(math.inf, 0.0, "rdp")
        rdp = Composition(_rdp_epsilon(groups, delta), delta, "rdp")
        profile = _unit_shift_profile_epsilon(groups, delta) if accepts("profile", groups) else None
        accountant = (
            rdp
            if profile is None or rdp.epsilon <= profile
            else Composition(profile, delta, "profile")
        )
        if delta < leaked_delta(groups):
            return accountant
        plain = Composition(rounded(exact_sum(groups)), delta, "sum")
        if accountant.epsilon < plain.epsilon * (1 - _REPORTING_RESOLUTION):
            return accountant
        return plain
    plain = Composition(rounded(exact_sum(groups)), delta, "sum")
    if delta == 0 or plain.epsilon == 0 or math.isinf(plain.epsilon):
        return plain
    pld = _pld_epsilon(groups, delta) if accepts("pld", groups) else None
    rdp = Composition(_rdp_epsilon(groups, delta), delta, "rdp")
    accountant = rdp if pld is None or rdp.epsilon < pld else Composition(pld, delta, "pld")
    if accountant.epsilon < plain.epsilon * (1 - _REPORTING_RESOLUTION):
        return accountant
    return plain
