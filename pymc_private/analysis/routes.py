"""What a private route costs per draw, as the analysis states it, before any data.

Each route states its ε per draw beside the code that runs it, as a `RouteCost` registered
with `route_cost`; `pymc_private.analysis.core` lists them (`route_costs`) without naming one.
A route reads the analysis through the `Analysed` protocol alone: the Lipschitz constants and
sensitivities of the model, never the module that computes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import ClassVar, Protocol

__all__ = ["Analysed", "RouteCost", "route_cost", "route_costs", "tempered_epsilon"]


class Analysed(Protocol):
    """What a route reads of a model's privacy analysis
    (`pymc_private.analysis.core.PrivacyAnalysis` is one)."""

    record_lipschitz: float
    block_lipschitz: Mapping[str, float]
    sensitivity_l1: float | None
    statistics_unavailable: Mapping[str, str]

    def lipschitz_for(self, names: Iterable) -> float: ...


def tempered_epsilon(lipschitz: float, temperature: float) -> float:
    """ε = 2L/T: the cost of one draw whose data enter through the tempered log-likelihood
    Σ_i ℓ(x_i; θ)/T, L the record Lipschitz constant (sup over θ in the prior support of
    sup over records x, x' of |ℓ(x; θ) − ℓ(x'; θ)|), T ≥ 1 the temperature.

    - An exact draw from the tempered posterior is the exponential mechanism with utility
      Σ_i ℓ(x_i; θ) of sensitivity L and base measure the prior: (2L/T)-DP (Dimitrakakis et
      al. 2017, Theorem 8; T = 1 is the plain posterior). `pmp.sample_posterior` pays it per
      draw.
    - A Gibbs sweep draws each block θ_j from its tempered conditional given the released
      state, each a (2L_j/T)-DP exponential mechanism: Σ_j 2L_j/T, this formula at
      L = Σ_j L_j (Foulds et al. 2016, §4.1; `pmp.PrivateGibbs`).
    - A Barker step with a data-independent proposal moves its acceptance log-odds by at
      most 2L/T between neighbours (:ref:`costs-metropolis`; `pmp.PrivateMetropolis`, which
      adds its floating-point allowance).

    The steps add the allowance of their floating-point arithmetic to this exact-arithmetic
    figure; `pmp.analyze` shows it per route at T = 1.
    """
    return 2.0 * lipschitz / temperature


class RouteCost:
    """One private route's ε per draw as `pmp.analyze` states it: the exact-arithmetic figure
    (before a step's floating-point allowance) from the analysis's L, L_j and Δ alone.

    The module that runs a route states its cost beside it and registers it with
    `route_cost` (`pymc_private.sampling.posterior`, `pymc_private.steps.gibbs`,
    `pymc_private.steps.metropolis`, `pymc_private.pay_once.privatize`); the analysis asks
    `route_costs` and names no route itself. A route reads the analysis through `Analysed`
    only, so no route module needs the analysis's own.

    Attributes
    ----------
    name, formula, source
        The route's name, its ε per draw as a formula and the paper that proves it, as the
        analysis shows them.
    row
        The route's row in the analysis's table.
    """

    name: ClassVar[str]
    formula: ClassVar[str]
    source: ClassVar[str]
    row: ClassVar[int]

    @classmethod
    def unavailable(cls, analysis: Analysed) -> str | None:
        """Why the route cannot run the analysed model; None when it can."""
        return None

    @classmethod
    def epsilon(
        cls, analysis: Analysed, temperature: float, blocks: Sequence[Sequence] | None
    ) -> float:
        """The ε of one draw at temperature T ≥ 1 (already checked); ``blocks``: the Gibbs
        blocks, None for one block per free variable. By default 2L/T, `tempered_epsilon`
        of the record's L: one exact draw or Barker choice whose log-weights one record
        moves by at most 2L/T."""
        return tempered_epsilon(analysis.record_lipschitz, temperature)


_ROUTE_COSTS: dict[str, type[RouteCost]] = {}


def route_cost(cost: type[RouteCost]) -> type[RouteCost]:
    """Register a route's cost (a class decorator, run when its module is imported)."""
    _ROUTE_COSTS[cost.name] = cost
    return cost


def route_costs() -> tuple[type[RouteCost], ...]:
    """The registered routes, in the rows of the analysis's table."""
    return tuple(sorted(_ROUTE_COSTS.values(), key=lambda cost: cost.row))
