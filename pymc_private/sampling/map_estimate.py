"""A private MAP estimate by the exponential mechanism (Zhang et al. 2016, Algorithm 3).

`private_map` releases one point θ̂ of a bounded model with probability

    P(θ̂) ∝ exp(ε · u(D, θ̂) / (2L)) · ξ(θ̂),      u(D, θ) = Σ_i ℓ(x_i; θ) + log ξ(θ),

the exponential mechanism (McSherry & Talwar 2007) whose utility is the log posterior up to
its normalising constant, maximised by the MAP estimate, with base measure the prior ξ
(Zhang, Rubinstein & Dimitrakakis 2016, Algorithm 3 and Corollary 4). A record moves u by at
most L, the record Lipschitz constant over the prior's support and the declared bounds
(`pmp.analyze(model).record_lipschitz`), so the release is ε-DP. `map_utility_bound` is their
Lemma 4: the released point's log posterior is within 2t of the MAP's except with
probability exp(−εt/(2L)) / ξ(S_t).

Written with T = 2L/ε, the density is ξ(θ)^{1 + 1/T} · Π_i p(x_i | θ)^{1/T}: the tempered
posterior of `pmp.sample_posterior` with the prior raised to 1 + 1/T. So the release is drawn
by the same grid mechanism (`pymc_private.conditionals.exact`): a public cell per entry chosen
exactly,
with the prior's conjugate coordinates scaled (`ConjugateFamily.power`), and the chosen cell's
centre released (a Dirichlet's lattice point). The output lies on a public grid: every point
is possible under every data set.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pymc as pm

from pymc_private.analysis.core import analyze, term_statistics
from pymc_private.analysis.privatisation import privatised_route
from pymc_private.conditionals.blocks import ConjugateBlock, grid_block, raw_statistics
from pymc_private.conditionals.exact import DEFAULT_CELLS, GridBlock
from pymc_private.data.ledgers import ledger_for
from pymc_private.dp.budget import Budget, checked_budget
from pymc_private.dp.checks import checked_cells, checked_epsilon, checked_rng, checked_secure
from pymc_private.dp.events import PureEvent, Release
from pymc_private.dp.measurements import ceil_float
from pymc_private.dp.session import releasing
from pymc_private.errors import (
    InvalidPrivacyParameterError,
    UninformativeReleaseWarning,
    UnsupportedModelError,
)
from pymc_private.sampling.posterior import product_of_blocks

__all__ = ["map_utility_bound", "private_map"]

MECHANISM = "private_map"


# A temperature from which the estimate is said to be close to a prior draw: the records
# count as at most a quarter of themselves.
_WEAK_TEMPERATURE = 4


def _warn_tempered(mechanism: MapMechanism, epsilon: float, n: int) -> None:
    """An `UninformativeReleaseWarning`, before anything is released, when the estimate's
    likelihood is tempered so much (T = 2L/ε) that the n records count as n/T of them."""
    temperature = float(mechanism.temperature)
    if temperature < _WEAK_TEMPERATURE:
        return
    warnings.warn(
        f"At ε = {epsilon:g} the estimate is drawn from the posterior with the likelihood "
        f"tempered by T = 2L/ε = {temperature:.3g}: the {n} records count as {n / temperature:.3g} "
        "of them, so it will lie far from the posterior mode (near a prior draw when n/T is "
        "small). pmp.privatize(model, epsilon) spends the same ε once on the sufficient "
        "statistics and gives the whole noise-aware posterior; pmp.plan(model, epsilon) "
        "predicts its accuracy.",
        UninformativeReleaseWarning,
        stacklevel=3,
    )


def private_map(
    model: pm.Model | None,
    epsilon: float,
    *,
    cells: int = DEFAULT_CELLS,
    budget: Budget | None = None,
    secure: bool = True,
    random_seed: int | np.random.Generator | None = None,
) -> dict[str, np.ndarray]:
    r"""An ε-DP approximate MAP estimate: Zhang et al. (2016), Algorithm 3.

    The estimate costs ``epsilon`` once, checked against ``budget`` before the data is read.
    How it is drawn and why it is private: Notes below and :ref:`costs-map`.

    Parameters
    ----------
    model
        The model, with raw `pmp.PrivateData` (None: the context model).
    epsilon
        The ε to spend: finite and > 0.
    cells
        Grid cells per entry (an integer in [2, 65536]): the resolution of the estimate.
    budget
        A `pmp.Budget` the ledger plus this release must fit.
    secure
        True (default): the cell is chosen by OpenDP's exact sampler from the operating
        system's generator (``random_seed`` is not read). False: numpy's Gumbel-max on
        ``random_seed``, reproducible by whoever holds the seed and recorded as not secure.
    random_seed
        An int seed or a `numpy.random.Generator`, for ``secure=False``.

    Returns
    -------
    dict
        The estimate of every free variable, by name (as ``pm.find_MAP`` returns it, in the
        constrained space).

    Raises
    ------
    InvalidPrivacyParameterError
        ε not finite and > 0, ``cells`` out of range or ``secure`` not a bool.
    UnsupportedModelError
        A privatised model, or one whose posterior is not a product of conjugate blocks.
    UnboundedSensitivityError, DataBoundsError
        From `pmp.analyze`.
    BudgetExceededError
        The release does not fit ``budget`` or a budget attached to the ledger.

    Notes
    -----
    Draws θ̂ with density ∝ exp(ε·u(D, θ)/(2L))·ξ(θ) over the prior's support, where
    u(D, θ) = Σ_i ℓ(x_i; θ) + log ξ(θ) is the log posterior up to a constant (maximised by
    the MAP) and the base measure is the prior ξ, on a public grid of ``cells`` cells per
    entry (the module docstring). As ε grows the estimate concentrates at the MAP
    (`map_utility_bound`, their Lemma 4); at small ε it is close to a prior draw.

    **Privacy cost.**
    ε_rec = ε' + a ≤ ε, recorded exactly in the data sets' ledger as one release (mechanism
    ``"private_map"``). A record moves u(D, θ) by at most L for every θ (the prior term
    does not depend on the data), so the exponential mechanism with scale ε'/(2L) is
    ε'-DP (McSherry & Talwar 2007, Theorem 6; Zhang et al. 2016, Corollary 4, with Δ = L
    the Lipschitz constant of Dimitrakakis et al. 2017, Theorem 6). It is the grid
    mechanism of `pymc_private.conditionals.exact` at temperature T = 2L/ε' with the prior raised to
    1 + 1/T, whose cost as implemented is 2L/T + a = ε' + a, with a the float allowance of
    its scores (~1e-13): ε' = ε − 2a₀ is chosen so that the recorded ε_rec never exceeds
    the ε asked for. The cost depends on public quantities only, so ``budget`` is checked
    before the data is read (over budget: `BudgetExceededError`, nothing drawn, ledger
    unchanged); the release is recorded before the data is read.

    Supported models: those of `pmp.sample_posterior` on raw data (every free variable a
    conjugate Beta, Gamma, Normal or Dirichlet block with constant prior parameters, and
    every observed node depending on one of them). On a model returned by `pmp.privatize`,
    the MAP given the released statistics is post-processing: use ``pm.find_MAP`` there.
    """
    epsilon = checked_epsilon(epsilon)
    cells = checked_cells(cells)
    secure = checked_secure(secure)
    rng = checked_rng(random_seed)
    checked_budget(budget)
    model = pm.modelcontext(model)
    ledger = ledger_for(model)
    # Per person (data declared with max_records=k): calibrated per record to ε/k.
    share = ledger.per_record_epsilon(epsilon, lambda e: [Release(MECHANISM, PureEvent(e))])
    mechanism = MapMechanism(model, share, cells)
    release = Release(
        mechanism=MECHANISM,
        event=PureEvent(mechanism.epsilon),
        sensitivity=mechanism.lipschitz,
        statistic=", ".join(block.name for block in mechanism.blocks),
        secure=secure,
        note=(
            f"exponential mechanism with utility the log posterior on a grid of {cells} cells "
            "(Zhang et al. 2016, Algorithm 3); ε = 2L/T + float allowance at T = "
            f"{float(mechanism.temperature):.6g}"
        ),
    )
    _warn_tempered(mechanism, epsilon, mechanism.analysis.n_records)
    with releasing():  # one lock across check → record (pymc_private.dp.session)
        for limit in ledger.limits(budget):
            limit.check(ledger, [release])
        ledger.record(release, budget=budget)
    return mechanism.select(mechanism.scores(), secure=secure, rng=rng)


def map_utility_bound(epsilon: float, t: float, *, lipschitz: float, prior_mass: float) -> float:
    r"""Zhang et al. (2016), Lemma 4: a bound on P[u(θ̂) ≤ u* − 2t] for `private_map`.

    With u(θ) the log posterior up to a constant, u* its maximum (at the MAP) and
    S_t = {θ : u(θ) > u* − t}, the exponential mechanism at ε with sensitivity L and base
    measure ξ gives

        P[θ̂ ∉ S_2t] ≤ exp(−ε t / (2L)) / ξ(S_t),

    since the mass outside S_2t is at most exp(ε(u* − 2t)/(2L)) and the normaliser at least
    exp(ε(u* − t)/(2L)) ξ(S_t) (McSherry & Talwar 2007, Theorem 8). The paper writes it with
    the 2L absorbed into ε. On the grid of `private_map`, u* is the best grid point and
    ξ(S_t) the base measure of the cells in S_t (prior density times cell width,
    normalised). ξ(S_t) depends on the data, so this is a statement about the mechanism
    for an analyst who holds the data (or a synthetic stand-in), not a release.

    Parameters
    ----------
    epsilon
        The ε of the release (> 0).
    t
        The log-posterior gap t ≥ 0.
    lipschitz
        L, the record Lipschitz constant (> 0).
    prior_mass
        ξ(S_t) in (0, 1].
    """
    for name, value in (("epsilon", epsilon), ("lipschitz", lipschitz)):
        if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
            raise InvalidPrivacyParameterError(f"{name} must be finite and > 0, got {value!r}.")
    if not (isinstance(t, int | float) and math.isfinite(t) and t >= 0):
        raise InvalidPrivacyParameterError(f"t must be finite and >= 0, got {t!r}.")
    if not (isinstance(prior_mass, int | float) and 0 < prior_mass <= 1):
        raise InvalidPrivacyParameterError(f"prior_mass must be in (0, 1], got {prior_mass!r}.")
    return min(1.0, math.exp(-epsilon * t / (2 * lipschitz)) / prior_mass)


class MapMechanism:
    """The grid exponential mechanism of `private_map` for one model and ε, built from
    public quantities only: the blocks, their grids, the temperature T = 2L/ε' and the cost
    ``epsilon`` = ε' + a ≤ the ε asked for (`private_map`). `scores` reads the raw data;
    `select` draws the released point from them."""

    def __init__(self, model: pm.Model, epsilon: float, cells: int) -> None:
        if privatised_route(model) is not None:
            raise UnsupportedModelError(
                "This model holds privatised statistics: its MAP given them is post-processing "
                "and costs nothing. Use pm.find_MAP(model=...) on it; pmp.private_map spends ε "
                "on raw pmp.PrivateData."
            )
        self.model = model
        self.analysis = analyze(model)
        self.blocks: list[ConjugateBlock] = product_of_blocks(
            model, self.analysis, privatised=False, route="pmp.private_map"
        )
        for block in self.blocks:
            if block.hyper:
                raise UnsupportedModelError(
                    f"`{block.name}` has a prior with free parameters "
                    f"({', '.join(block.hyper)}): pmp.private_map needs constant prior "
                    "parameters, so that the base measure is public."
                )
        self.lipschitz = self.analysis.record_lipschitz
        if not self.lipschitz > 0:
            raise UnsupportedModelError(
                "The model's log-likelihood does not depend on the private records (L = 0): "
                "its MAP is the prior's mode, with nothing to privatise."
            )
        target = Fraction(epsilon)
        spend = target
        for _ in range(4):
            temperature = 2 * Fraction(self.lipschitz) / spend
            grids = {
                block.name: grid_block(
                    block, self.analysis, model, temperature, cells, prior_power=1 + 1 / temperature
                )
                for block in self.blocks
            }
            allowance = sum(Fraction(grid.allowance) for grid in grids.values())
            if spend + allowance <= target:
                break
            spend = target - 2 * allowance
            if spend <= 0:
                raise InvalidPrivacyParameterError(
                    f"epsilon={epsilon!r} is below the float allowance of the grid "
                    f"({float(allowance):.3g}): ask for a larger ε."
                )
        else:  # pragma: no cover - the allowance barely moves with T
            raise InvalidPrivacyParameterError(
                f"No temperature keeps the cost within epsilon={epsilon!r}."
            )
        self.temperature = temperature
        self.grids: dict[str, GridBlock] = grids
        self.epsilon = ceil_float(spend + allowance)

    def scores(self) -> dict[str, list[np.ndarray]]:
        """The float scores of every block's entries, from the raw data (private)."""
        nodes = sorted({term.node for block in self.blocks for term, _, _ in block.updates})
        exact = raw_statistics(self.model, self.analysis, nodes, exact=True)
        statistics = {node: term_statistics(self.analysis, exact, node) for node in nodes}
        power = 1 + 1 / self.temperature
        return {
            block.name: self.grids[block.name].scores(
                block.posterior(statistics, {}, self.temperature, exact=True, prior_power=power)
            )
            for block in self.blocks
        }

    def select(
        self, scores: dict[str, list[np.ndarray]], *, secure: bool, rng: np.random.Generator
    ) -> dict[str, np.ndarray]:
        """The released point: one exact selection per entry, the chosen cells' points."""
        return {
            name: grid.points(grid.choose(scores[name], secure=secure, rng=rng))
            for name, grid in self.grids.items()
        }
