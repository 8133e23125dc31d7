"""Privacy budgets: what everything released from one data set may cost, checked before
anything is released against what a ledger has spent.

A `Budget` judges a snapshot of the spending it is handed (`Spending.spent`: the releases
recorded so far, counted by event), never a ledger's own state: `pymc_private.dp.ledger`
uses budgets, and nothing here reads the ledger back."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

from pymc_private.dp.checks import checked_delta
from pymc_private.dp.composition import (
    Composition,
    add_releases,
    compose,
    counts_of,
    exact_sum,
    groups_of,
    has_rdp_only,
    rounded,
    six_digits,
    unavoidable_delta,
    validated_releases,
    within,
)
from pymc_private.dp.events import PrivacyEvent, PureEvent, Release
from pymc_private.errors import BudgetExceededError, InvalidPrivacyParameterError, counted

__all__ = ["Budget", "Spending", "checked_budget"]


class Spending(Protocol):
    """What a budget reads of a ledger: the releases recorded so far, counted by event, and
    how the ledger charges planned releases (per person, where its data sets bound each
    person's records) (a `pymc_private.dp.ledger.PrivacyLedger` is one)."""

    def spent(self) -> Mapping[PrivacyEvent, int]: ...

    def charged(self, releases: Iterable[Release]) -> tuple[Release, ...]: ...


def _counts(ledger: Spending, planned: Iterable[Release] = ()) -> dict[PrivacyEvent, int]:
    """The spending of ``ledger`` with ``planned`` added, counted by event (a copy)."""
    counts = dict(ledger.spent())
    add_releases(counts, planned)
    return counts


def checked_budget(budget: Any) -> Budget | None:
    """Validate an optional ``budget`` argument at the boundary: a `Budget` or None."""
    if budget is not None and not isinstance(budget, Budget):
        raise TypeError(f"budget must be a pmp.Budget or None, got {type(budget).__name__}.")
    return budget


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
            f"The releases are (ε, δ)-DP only for δ >= 1 − Π(1 − δ_i) = {six_digits(floor)}, "
            f"above the budget's delta = {six_digits(self.delta)}. Nothing was recorded. Use "
            f"releases with smaller δ_i, or a budget with delta >= {six_digits(floor)}."
        )

    def check(self, ledger: Spending, planned: Iterable[Release] = ()) -> Composition:
        """The composition of ``ledger`` plus ``planned``, if it fits; never records anything.

        Raises
        ------
        BudgetExceededError
            When the composition at the budget's δ exceeds the budget, with the planned spend,
            what is already spent and what to change.
        """
        items = ledger.charged(validated_releases(planned, "planned"))
        spending = _counts(ledger)
        groups = groups_of(_counts(ledger, items))
        floor = unavoidable_delta(groups)
        if floor > self.delta:
            raise BudgetExceededError(self._over_delta_message(floor))
        if self.delta == 0 and has_rdp_only(groups):
            raise BudgetExceededError(
                "Gaussian releases (zCDP or subsampled) are (ε, δ)-DP only for δ > 0, and this "
                "budget has "
                "delta = 0. Nothing was recorded. Use a Budget with delta > 0 (e.g. "
                "Budget(epsilon, delta=1e-6)) or the Laplace mechanism."
            )
        total = compose(groups, self.delta)
        if total.epsilon > self.epsilon:
            spent = compose(groups_of(spending), self.delta)
            planned_groups = groups_of(counts_of(items))
            planned_sum = rounded(exact_sum(planned_groups))
            count_hint = (
                ""
                if has_rdp_only(planned_groups)  # affordable_count plans pure releases only
                else "; Budget.affordable_count says how many releases fit"
            )
            raise BudgetExceededError(
                f"Planned spend ε = {six_digits(planned_sum)} "
                f"({counted(sum(r.count for r in items), 'release')}) on top of "
                f"ε = {six_digits(spent.epsilon)} already spent composes to "
                f"ε = {six_digits(total.epsilon)} at δ = {six_digits(self.delta)} "
                f"({total.method}), over the budget ε = {six_digits(self.epsilon)}. Nothing was "
                "recorded. Plan fewer releases (draws × chains), a smaller per-release ε (a "
                f"higher temperature), or a larger budget{count_hint}." + self._delta_hint(groups)
            )
        return total

    def _delta_hint(self, groups) -> str:
        """With δ = 0, what a small δ would change: many releases compose to a much smaller
        ε at δ = 1e-6 than their plain sum (the choice of δ is the custodian's to make)."""
        if self.delta > 0 or unavoidable_delta(groups) > _HINT_DELTA:
            return ""
        relaxed = compose(groups, _HINT_DELTA)
        if relaxed.epsilon > self.epsilon:
            return ""
        return (
            f" This budget has delta = 0, so it compares the plain sum; at δ = {_HINT_DELTA:g} "
            f"the same releases compose to ε = {six_digits(relaxed.epsilon)} "
            f"({relaxed.method}), which fits: Budget({six_digits(self.epsilon)}, "
            f"delta={_HINT_DELTA:g}) accepts them if a failure probability δ is acceptable."
        )

    def remaining(self, ledger: Spending) -> float:
        """The budget ε minus the ledger's composed ε at the budget's δ (0 when none is left).

        With δ > 0 compositions are not additive: use `check` or `affordable_count` to ask
        whether planned releases fit, not this difference.
        """
        groups = groups_of(_counts(ledger))
        if unavoidable_delta(groups) > self.delta:
            return 0.0
        if self.delta == 0 and has_rdp_only(groups):
            return 0.0
        if self.delta == 0:
            return max(0.0, rounded(Fraction(self.epsilon) - exact_sum(groups)))
        return max(0.0, self.epsilon - compose(groups, self.delta).epsilon)

    def affordable_count(
        self, ledger: Spending, epsilon_per_release: float, *, per_count: int = 1
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
        (charged,) = ledger.charged([Release("planned", PureEvent(float(epsilon_per_release)))])
        event = charged.event
        eps = event.epsilon
        base = _counts(ledger)
        if unavoidable_delta(groups_of(base)) > self.delta or (
            self.delta == 0 and has_rdp_only(groups_of(base))
        ):
            return 0
        spent = exact_sum(groups_of(base))
        group_cost = Fraction(eps) * per_count

        def fits_sum(k: int) -> bool:
            return within(spent + k * group_cost, self.epsilon)

        by_sum = (
            _largest_fitting(fits_sum, max(0, int((Fraction(self.epsilon) - spent) / group_cost)))
            if fits_sum(0)
            else None
        )
        if self.delta == 0:
            return 0 if by_sum is None else by_sum

        def fits(k: int) -> bool:
            counts = dict(base)
            counts[event] = counts.get(event, 0) + k * per_count
            return compose(groups_of(counts), self.delta).epsilon <= self.epsilon

        # Without zCDP releases the composition at δ never exceeds the plain sum, so what the
        # sum affords fits; with them the sum may not hold at δ, and the search starts at 0.
        if has_rdp_only(groups_of(base)):
            by_sum = None
        if by_sum is None and not fits(0):
            return 0
        start = by_sum or 0
        return _largest_fitting(fits, start, first_step=start // 4)
