"""An empirical privacy auditor: a statistically sound lower bound on a mechanism's ε.

A mechanism M is ε-DP only if, for the neighbouring data sets D and D' and every event E,

    P[M(D') ∈ E] ≤ e^ε · P[M(D) ∈ E]   and   P[M(D) ∈ E] ≤ e^ε · P[M(D') ∈ E].

The auditor fixes one event, estimates both probabilities from independent runs, and turns
Clopper–Pearson bounds on them into a lower bound on ε that exceeds the true ε with
probability at most α (the black-box audit of Jagielski, Ullman & Oprea 2020, "Auditing
differentially private machine learning", NeurIPS). It is a testing tool: run it on
synthetic or public neighbouring data sets, never on private data, since the event it
reports is computed from the mechanism's outputs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.stats import beta

from pymc_private.errors import InvalidPrivacyParameterError

__all__ = [
    "AuditResult",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "epsilon_lower_bound",
]

_MAX_THRESHOLDS = 2000
_MAX_EQUALITY_VALUES = 64


@dataclass(frozen=True)
class AuditResult:
    """The outcome of `epsilon_lower_bound`.

    Parameters
    ----------
    epsilon_lower_bound
        max(0, log(CP_low(p_num) / CP_high(p_den))): with probability ≥ 1 − α it does not
        exceed the mechanism's true ε (see `epsilon_lower_bound`). Clamped at 0 because
        ε ≥ 0 holds for every mechanism, so the clamp keeps the guarantee.
    event
        The event that was counted and which data set's probability is the numerator.
    counts
        How often the event occurred in the ``n`` counting runs on (data, neighbour).
    n
        Counting runs per data set.
    alpha
        The significance level: P[epsilon_lower_bound > true ε] ≤ alpha.
    """

    epsilon_lower_bound: float
    event: str
    counts: tuple[int, int]
    n: int
    alpha: float

    def passes(self, claimed_epsilon: float) -> bool:
        """True when the audit is consistent with the claim: ε_lb ≤ ``claimed_epsilon``."""
        if not (isinstance(claimed_epsilon, int | float) and claimed_epsilon >= 0):
            raise InvalidPrivacyParameterError(
                f"claimed_epsilon must be a number >= 0, got {claimed_epsilon!r}."
            )
        return self.epsilon_lower_bound <= claimed_epsilon


def clopper_pearson_lower(successes, trials: int, alpha: float):
    """One-sided Clopper–Pearson lower bound: P[bound > p] ≤ ``alpha`` for Binomial(trials, p).

    ``Beta⁻¹(alpha; k, n − k + 1)``, and 0 when k = 0. Vectorised over ``successes``.
    """
    k = np.asarray(successes, dtype=np.float64)
    safe = np.maximum(k, 1.0)
    return np.where(k > 0, beta.ppf(alpha, safe, trials - safe + 1.0), 0.0)


def clopper_pearson_upper(successes, trials: int, alpha: float):
    """One-sided Clopper–Pearson upper bound: P[bound < p] ≤ ``alpha`` for Binomial(trials, p).

    ``Beta⁻¹(1 − alpha; k + 1, n − k)``, and 1 when k = n. Vectorised over ``successes``.
    """
    k = np.asarray(successes, dtype=np.float64)
    safe = np.minimum(k, trials - 1.0)
    return np.where(k < trials, beta.ppf(1.0 - alpha, safe + 1.0, trials - safe), 1.0)


def epsilon_lower_bound(
    mechanism: Callable,
    data,
    neighbour,
    *,
    n: int,
    alpha: float = 0.05,
    event: Callable | None = None,
    random_seed: int | np.random.Generator | None = None,
    n_pilot: int | None = None,
    vectorized: bool = False,
    delta: float = 0.0,
) -> AuditResult:
    """An ε lower bound for ``mechanism`` from runs on two neighbouring data sets.

    Procedure. Without ``event``: ``n_pilot`` pilot runs per data set choose (i) the output
    coordinate to look at, the one whose pilot means differ most in units of the pooled
    standard deviation (scalar outputs have one coordinate); (ii) an event on it among
    ``{y ≤ t}`` and ``{y ≥ t}`` for thresholds t taken from the pooled pilot outputs (and
    ``{y = v}`` when the pilot shows at most 64 distinct values); and (iii) the direction,
    i.e. which data set is the numerator. The choice maximises the pilot's own bound
    ``log(CP_low(k̂_num)/CP_high(k̂_den))`` with the level α/2 shared (Bonferroni) among all
    candidates, a simultaneous bound that keeps rare tail events, whose pilot ratios are
    noisy, from winning by chance. Then ``n`` fresh runs per data set count the event and
    the result is

        ε_lb = log((CP_low(p_num; α/2) − δ) / CP_high(p_den; α/2)).

    With ``delta`` = 0 this bounds the ε of pure ε-DP; with δ > 0 the ε of (ε, δ)-DP, from
    ``p_num ≤ e^ε p_den + δ`` (the pilot's choice subtracts the same δ).

    With ``event`` (a callable ``output -> bool``) there is no pilot; both directions are
    bounded with four Clopper–Pearson bounds at α/4 each and ε_lb is the larger. Either way
    the reported value is max(0, ε_lb), which keeps the guarantee since every ε is ≥ 0.

    Soundness: P[ε_lb > true ε] ≤ α. For an ε-DP mechanism and a fixed event E,
    ``p_num ≤ e^ε p_den``. The event and direction depend only on the pilot runs, which are
    independent of the counting runs, so conditionally on them the counts are binomial
    with those p; the lower bound exceeds p_num with probability ≤ α/2 and the upper bound
    falls below p_den with probability ≤ α/2 (Bonferroni), so outside an event of
    probability α, ε_lb ≤ log(p_num/p_den) ≤ ε. With a given event, the four bounds at α/4
    give the same for the maximum over both directions. This needs independent runs: each
    call must draw fresh randomness (from ``rng`` or its own source) and keep no state.
    The guarantee is per call: k audits of a mechanism exceed its ε somewhere with
    probability up to kα.

    Parameters
    ----------
    mechanism
        ``mechanism(data, rng) -> number | array`` (one run), or, with ``vectorized=True``,
        ``mechanism(data, rng, size) -> array`` of ``size`` independent runs stacked on
        axis 0 (a fast path for numpy mechanisms). ``rng`` is a `numpy.random.Generator`.
    data, neighbour
        The neighbouring data sets D and D', passed to ``mechanism`` unchanged.
    n
        Counting runs per data set.
    alpha
        Significance level in (0, 1).
    event
        Optional ``output -> bool`` to count instead of a pilot-chosen event.
    random_seed
        An int seed or a Generator; the result is reproducible given it (for mechanisms
        that draw from the ``rng`` they are handed).
    n_pilot
        Pilot runs per data set (default ``max(1000, n // 2)``); not allowed with ``event``.
    vectorized
        Whether ``mechanism`` takes a ``size`` argument (see ``mechanism``).
    delta
        The δ of the claim audited, in [0, 1) (0 for pure ε-DP).

    Returns
    -------
    AuditResult
    """
    n = _check_count("n", n)
    if not (isinstance(alpha, float | int) and 0 < alpha < 1):
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}.")
    if event is not None and n_pilot is not None:
        raise ValueError("n_pilot has no effect when event is given; drop one of them.")
    if event is not None and not callable(event):
        raise TypeError("event must be a callable output -> bool, or None.")
    if not callable(mechanism):
        raise TypeError("mechanism must be a callable mechanism(data, rng).")
    if not (isinstance(delta, float | int) and 0 <= delta < 1):
        raise ValueError(f"delta must be in [0, 1), got {delta!r}.")
    pilot_rng, count_rng = np.random.default_rng(random_seed).spawn(2)

    if event is not None:
        hits = tuple(
            sum(bool(event(output)) for output in _runs(mechanism, d, count_rng, n, vectorized))
            for d in (data, neighbour)
        )
        quarter = alpha / 4
        bounds = [
            _log_ratio_bound(hits[1], hits[0], n, quarter, delta),
            _log_ratio_bound(hits[0], hits[1], n, quarter, delta),
        ]
        numerator = "neighbour" if bounds[0] >= bounds[1] else "data"
        return AuditResult(
            epsilon_lower_bound=max(0.0, *bounds),
            event=f"given event; numerator P[E | {numerator}]",
            counts=(int(hits[0]), int(hits[1])),
            n=n,
            alpha=float(alpha),
        )

    n_pilot = max(1000, n // 2) if n_pilot is None else _check_count("n_pilot", n_pilot)
    pilot = [
        _as_matrix(_runs(mechanism, d, pilot_rng, n_pilot, vectorized), n_pilot)
        for d in (data, neighbour)
    ]
    chosen = _choose_event(pilot[0], pilot[1], alpha / 2, delta)
    hits = tuple(
        int(np.count_nonzero(chosen.indicator(_as_matrix(runs, n))))
        for runs in (
            _runs(mechanism, data, count_rng, n, vectorized),
            _runs(mechanism, neighbour, count_rng, n, vectorized),
        )
    )
    numerator_hits, denominator_hits = (hits[1], hits[0]) if chosen.numerator else hits
    return AuditResult(
        epsilon_lower_bound=max(
            0.0, _log_ratio_bound(numerator_hits, denominator_hits, n, alpha / 2, delta)
        ),
        event=chosen.describe(pilot[0].shape[1]),
        counts=hits,
        n=n,
        alpha=float(alpha),
    )


@dataclass(frozen=True)
class _ThresholdEvent:
    """``{output[coordinate] <kind> threshold}``; ``numerator`` is 1 for the neighbour."""

    coordinate: int
    kind: str
    threshold: float
    numerator: int

    def indicator(self, outputs: np.ndarray) -> np.ndarray:
        y = outputs[:, self.coordinate]
        if self.kind == "<=":
            return y <= self.threshold
        if self.kind == ">=":
            return y >= self.threshold
        return y == self.threshold

    def describe(self, width: int) -> str:
        name = "output" if width == 1 else f"output[{self.coordinate}]"
        over = ("neighbour", "data") if self.numerator else ("data", "neighbour")
        return f"{name} {self.kind} {self.threshold!r}; P[E | {over[0]}] / P[E | {over[1]}]"


def _choose_event(
    pilot_data: np.ndarray, pilot_neighbour: np.ndarray, level: float, delta: float = 0.0
):
    """The threshold event and direction with the largest simultaneous pilot bound."""
    n_pilot = pilot_data.shape[0]
    spread = np.sqrt((pilot_data.var(axis=0) + pilot_neighbour.var(axis=0)) / 2)
    shift = np.abs(pilot_neighbour.mean(axis=0) - pilot_data.mean(axis=0))
    standardised = np.where(spread > 0, shift / np.where(spread > 0, spread, 1.0), 0.0)
    coordinate = int(np.argmax(np.where(np.isfinite(standardised), standardised, 0.0)))
    samples = [np.sort(p[:, coordinate]) for p in (pilot_data, pilot_neighbour)]

    values = np.unique(np.concatenate(samples))
    values = values[np.isfinite(values)]
    if values.size == 0:
        raise ValueError("the pilot outputs are all NaN or infinite; pass an explicit event.")
    thresholds = values
    if thresholds.size > _MAX_THRESHOLDS:
        thresholds = thresholds[np.linspace(0, thresholds.size - 1, _MAX_THRESHOLDS).astype(int)]
    counts = {}
    for index, sample in enumerate(samples):
        below = np.searchsorted(sample, thresholds, side="left")
        at_most = np.searchsorted(sample, thresholds, side="right")
        counts["<=", index] = at_most
        counts[">=", index] = n_pilot - below
        if values.size <= _MAX_EQUALITY_VALUES:
            counts["==", index] = at_most - below
    simultaneous = level / (len(counts) * thresholds.size)
    support = np.arange(n_pilot + 1)
    with np.errstate(divide="ignore"):
        lower = np.log(
            np.maximum(clopper_pearson_lower(support, n_pilot, simultaneous) - delta, 0.0)
        )
    upper = np.log(clopper_pearson_upper(support, n_pilot, simultaneous))
    best = None
    for kind in ("<=", ">=", "=="):
        if (kind, 0) not in counts:
            continue
        for numerator in (1, 0):
            score = lower[counts[kind, numerator]] - upper[counts[kind, 1 - numerator]]
            position = int(np.argmax(score))
            if best is None or score[position] > best[0]:
                event = _ThresholdEvent(coordinate, kind, float(thresholds[position]), numerator)
                best = (score[position], event)
    return best[1]


def _log_ratio_bound(
    numerator_hits: int, denominator_hits: int, n: int, level: float, delta: float = 0.0
) -> float:
    low = float(clopper_pearson_lower(numerator_hits, n, level)) - delta
    high = float(clopper_pearson_upper(denominator_hits, n, level))
    return math.log(low / high) if low > 0 else -math.inf


def _runs(mechanism: Callable, data, rng: np.random.Generator, size: int, vectorized: bool):
    if vectorized:
        outputs = np.asarray(mechanism(data, rng, size))
        if outputs.ndim == 0 or outputs.shape[0] != size:
            raise ValueError(
                f"a vectorized mechanism must return {size} runs stacked on axis 0; check that "
                "it honours its size argument."
            )
        return outputs
    return [mechanism(data, rng) for _ in range(size)]


def _as_matrix(outputs, size: int) -> np.ndarray:
    try:
        matrix = np.asarray(outputs, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(
            "mechanism outputs must be numbers or equally shaped numeric arrays."
        ) from error
    return matrix.reshape(size, -1)


def _check_count(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    return int(value)
