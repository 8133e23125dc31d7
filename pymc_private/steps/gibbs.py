"""`PrivateGibbs`: conjugate Gibbs sampling, free on a privatised model, paying 2·L_j/T per
block on raw private data.

Each block is one free variable drawn exactly from its closed-form (tempered) conditional
given the current values of the others, truncated to its prior's support
(`pymc_private.conditionals.blocks`, `pymc_private.priors.conjugate`). The conditional reads the
data only
through sufficient statistics: the privatised ones of a model returned by `pmp.privatize`
(post-processing, ε = 0), or the exact ones computed once from the raw `PrivateData` (the
exponential mechanism, ε = 2·L_j/T per block).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import ClassVar

import numpy as np
import pymc as pm
from pymc.blocking import StatsType
from pymc.initial_point import PointType
from pymc.pytensorf import compile as compile_pytensor
from pymc.step_methods import STEP_METHODS
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.util import get_random_generator
from pytensor.graph.basic import Variable

from pymc_private.analysis.core import PrivacyAnalysis, analyze, term_statistics
from pymc_private.analysis.privatisation import has_closed_form_conditional, privatised_route
from pymc_private.analysis.python_code import private_step_class
from pymc_private.analysis.routes import RouteCost, route_cost, tempered_epsilon
from pymc_private.compiling import checked_compile_kwargs, compiling
from pymc_private.conditionals.blocks import (
    NOISE_AWARE_GIBBS,
    ConjugateBlock,
    conjugate_block,
    grid_block,
    has_conditional,
    no_conditional,
    raw_statistics,
)
from pymc_private.conditionals.exact import DEFAULT_CELLS
from pymc_private.data.declaration import datasets_of
from pymc_private.data.ledgers import ledger_for
from pymc_private.dp.checks import checked_cells, checked_secure, checked_temperature
from pymc_private.dp.session import PrivatePayload
from pymc_private.errors import UnsupportedModelError
from pymc_private.families.statistics import as_exact
from pymc_private.priors.support import prior_parameter_graphs
from pymc_private.steps.base import PrivateStep

__all__ = ["PrivateGibbs"]


def _blocks(
    analysis: PrivacyAnalysis, rvs: list[Variable], model: pm.Model, *, every: bool
) -> tuple[ConjugateBlock, ...]:
    """The conjugate block of each of ``rvs``. When ``every`` free variable was asked for
    and some have no conditional, one refusal names the compound step that samples them
    all: PrivateGibbs for the conjugate ones, PrivateMetropolis for the rest (at ε = 0 per
    step when no likelihood reads them, as for hyperparameters)."""
    blocks, refused = [], {}
    for rv in rvs:
        try:
            blocks.append(conjugate_block(analysis, rv, model))
        except UnsupportedModelError as error:
            if not every or not analysis.terms:
                raise
            refused[rv.name] = error
    if not refused:
        return tuple(blocks)
    if not blocks:
        raise next(iter(refused.values()))
    names = ", ".join(refused)
    free = [name for name in refused if analysis.block_lipschitz.get(name, 0.0) == 0.0]
    cost = (
        f" No likelihood reads {', '.join(f'`{n}`' for n in free)}, so PrivateMetropolis "
        "pays ε = 0 for them (it reads no data)."
        if free
        else ""
    )
    reasons = "; ".join(
        f"`{name}`: {getattr(error, 'reason', error)}" for name, error in refused.items()
    )
    raise UnsupportedModelError(
        f"PrivateGibbs has no closed-form conditional for {names} ({reasons}). Sample the "
        f"conjugate blocks with PrivateGibbs and the rest with PrivateMetropolis: step=["
        f"pmp.PrivateGibbs([{', '.join(block.name for block in blocks)}], ...), "
        f"pmp.PrivateMetropolis([{names}], ...)].{cost}"
    )


# On privatised statistics, rejection proposals per draw before a block (a Dirichlet or
# regression weights) moves by π-invariant Markov moves from its current value instead
# (`pymc_private.priors.conjugate`, "Giving up, or moving on"): the chain never stops.
GIBBS_PROPOSALS = 1_000


@private_step_class
class PrivateGibbs(BlockedStep, PrivateStep):
    r"""Conjugate Gibbs sampling through sufficient statistics, private by construction.

    On a model returned by `pmp.privatize` every sweep is free; on raw data a sweep costs
    Σ_j (2L_j/T + a_j), charged per iteration (tuning included) by `pmp.sample`. Why: Notes
    below and :ref:`costs-gibbs`.

    Parameters
    ----------
    vars
        Free variables (or their value variables), one block each. Default: on a privatised
        model, every free variable with a closed-form conditional (PyMC assigns the others
        its own samplers, free there); on raw data, every free variable (an unsupported one
        raises).
    temperature
        T ≥ 1, finite: the likelihood is raised to 1/T (ε per sweep Σ_j (2L_j/T + a_j) on raw
        data).
    cells
        On raw data, the number of grid cells each entry of a block is drawn on (an integer
        in [2, 65536], default 1024; a Dirichlet block uses the finest lattice of at most
        that many points). Public: choose it so that a cell (support width / cells) is well
        below the posterior's standard deviation. Ignored on a privatised model.
    secure
        On raw data: True (default) draws every data-dependent choice with OpenDP's exact
        sampler from the operating system's generator, not reproducible from a seed; False
        draws it from ``rng`` in floating point (reproducible by whoever holds the seed, and
        not exact), and the releases are marked not secure. A ``random_seed`` given to
        `pmp.sample` seeds ``rng`` only: with True, the chain is not reproducible from it.
    model
        The model (default: the context model).
    rng
        Seed or generator; ``pm.sample`` replaces it per chain (`setup_chain`).
    initial_point, compile_kwargs, blocked
        As in PyMC's step methods (``blocked`` is accepted for PyMC; blocks are always one
        per variable).

    Raises
    ------
    InvalidPrivacyParameterError
        A temperature below 1, NaN or infinite, or ``cells`` outside [2, 65536], before the
        model is read.
    UnsupportedModelError
        A variable without a closed-form conditional (the message names it and suggests
        pmp.PrivateMetropolis), a variable not of the model, or a model the privacy analysis
        cannot reduce to statistics for these variables.
    UnboundedSensitivityError, DataBoundsError
        From `pmp.analyze` on raw data.

    Notes
    -----
    One iteration (a sweep) draws each block θ_j, one free variable, from its tempered
    conditional restricted to its prior's support Θ_j,

        θ_j ~ ξ_j(θ_j) · Π_i p(x_i | θ_j, θ_−j)^{1/T}   on Θ_j,

    given the current values θ_−j of the other variables. The conditionals are the conjugate
    updates of `pymc_private.families.univariate` (Beta / Dirichlet for Bernoulli, Binomial and
    Categorical counts; Gamma for Poisson and Exponential rates and for the precision of a
    Normal; Normal for a mean with σ known or given; MvNormal for regression weights).

    **Privacy cost per iteration.**
    *On a model returned by* `pmp.privatize`: ε = 0. The statistics are the privatised ones,
    already paid for by the privatisation's release; every draw is post-processing, drawn
    exactly in floating point (`pymc_private.priors.conjugate`); a Dirichlet or regression-weight
    block whose truncated conditional has almost no mass where rejection proposes (none of
    1000 proposals accepted) moves instead by Markov moves from its current value that leave
    the conditional invariant, so sampling never stops after ε was spent. This step is
    registered in ``pymc.step_methods.STEP_METHODS`` and claims (IDEAL competence) the
    conjugate variables of privatised models only.

    *On a model with raw* `PrivateData`: per sweep

        ε = Σ_j (2·L_j/T + a_j),

    L_j the record Lipschitz constant of the observed nodes that depend on θ_j over the prior
    supports of all parameters (`pmp.analyze(model).block_lipschitz`), a_j the block's
    floating-point allowance (`pymc_private.conditionals.exact.GridBlock.allowance`, ~1e-13 for
    ordinary
    models). The argument (Foulds et al. 2016, §4.1; Dimitrakakis et al. 2017, Theorem 8
    applied per block): given the released current state θ_−j, the update draws θ_j with
    density ∝ ξ_j(θ_j) exp(u(D, θ_j)/T), u(D, θ_j) = Σ_i ℓ(x_i; θ_j, θ_−j); replacing one
    record moves u by at most L_j at every θ_j, so the update is the exponential mechanism,
    (2·L_j/T)-DP. As implemented, θ_j is drawn on a public grid of ``cells`` cells per entry
    by an exact selection (`pymc_private.conditionals.exact`, whose module docstring proves the
    bound for
    the code as it runs: data-independent output support, scores from exact rational
    statistics with a proved rounding bound a_j, OpenDP's exact Gumbel noisy max). A sweep is
    the sequential composition of its block updates, each conditioned on the already-released
    output of the previous ones. Every iteration is charged, tuning included (`pmp.sample`
    plans ``chains × (tune + draws)`` releases); thinning does not reduce the cost and
    convergence is not assumed. The statistics are computed once from the raw data when the
    step is built, kept inside it and never emitted; the only sample stat is
    ``privacy_epsilon``. The temperature must be T ≥ 1; the chain targets the tempered
    posterior ξ(θ) Π_i p(x_i | θ)^{1/T} on Θ, each block at the grid's resolution. Every
    sweep does the same work and consumes the same number of words from ``rng`` whatever the
    data (no rejection on raw data). Regression weights (an MvNormal block) have no exact grid
    sampler on raw data: sample them with `pmp.PrivateMetropolis`, or privatise first.

    Only the likelihood terms of the privacy analysis enter a conditional: a variable that
    is also a parameter of another free variable's prior (a hyperparameter) or an input of a
    Potential (other than the privatised likelihoods) is refused here and, on a privatised
    model, left by PyMC's assignment to NUTS. A block whose prior's parameters are such
    hyperparameters (``mu ~ TruncatedNormal(m0, s0)``, fixed bounds) is drawn given their
    current, released values: the prior is the exponential mechanism's base measure, so the
    cost is the same 2·L_j/T, and a_j is computed over every value the hyperparameters'
    (bounded) supports allow (:ref:`costs-gibbs`). The hyperparameters read no data:
    ``step=[PrivateGibbs([mu]), pmp.PrivateMetropolis([m0, s0])]`` pays for ``mu`` only.
    """

    name = "private_gibbs"
    default_blocked = True
    stats_dtypes_shapes: ClassVar = {"privacy_epsilon": (np.float64, [])}
    released_stats = ("privacy_epsilon",)
    _state_class = StepMethodState

    def __init__(
        self,
        vars=None,
        *,
        temperature: float = 1.0,
        cells: int = DEFAULT_CELLS,
        secure: bool = True,
        model: pm.Model | None = None,
        rng=None,
        initial_point: PointType | None = None,
        compile_kwargs: dict | None = None,
        blocked: bool = True,
    ):
        self.temperature = checked_temperature(temperature, "Σ_j 2L_j/T")
        cells = checked_cells(cells)
        self.secure = checked_secure(secure)
        model = pm.modelcontext(model)
        privatisation = privatised_route(model)
        if privatisation is not None and privatisation.noise_aware:
            raise UnsupportedModelError(NOISE_AWARE_GIBBS)
        analysis = analyze(model) if privatisation is None else privatisation.analysis
        rvs = _free_variables(model, vars)
        if vars is None and privatisation is not None:
            rvs = [rv for rv in rvs if has_conditional(analysis, rv, model)]
            if not rvs:
                raise no_conditional(
                    ", ".join(rv.name for rv in model.free_RVs), "none is conjugate"
                )
        self.blocks = _blocks(analysis, rvs, model, every=vars is None)
        nodes = sorted({term.node for block in self.blocks for term, _, _ in block.updates})

        if privatisation is None:
            self.mechanism = "gibbs_exponential"
            self.touches_raw_data = True
            self._grids = {
                block.name: grid_block(block, analysis, model, self.temperature, cells)
                for block in self.blocks
            }
            blocks = [[block.name] for block in self.blocks]
            allowances = [grid.allowance for grid in self._grids.values()]
            self.privacy_epsilon_per_draw = self.cost(
                analysis, blocks, self.temperature, allowances
            )
            self.sensitivity = float(sum(analysis.lipschitz_for(b) for b in blocks))
            self.ledger = ledger_for(model)
            self.datasets = datasets_of(model)
            released = raw_statistics(model, analysis, nodes, exact=True)
        else:
            self.mechanism = "gibbs_on_privatised_statistics"
            self.touches_raw_data = False
            self._grids = {}
            released = dict(privatisation.statistics)
            self.privacy_epsilon_per_draw = 0.0
            self.sensitivity = None
        # The raw statistics travel to worker processes as a reference to a private file of
        # the session, never inside a pickle of the step (pymc_private.dp.session).
        self._payload = PrivatePayload(
            {node: term_statistics(analysis, released, node) for node in nodes}
        )

        self.vars = [model.rvs_to_values[rv] for rv in rvs]
        self._value_names = {rv.name: model.rvs_to_values[rv].name for rv in rvs}
        given = sorted(
            {rv.name for rv in rvs}
            | {v for block in self.blocks for _, _, state in block.updates for v in state.values()}
        )
        self._given = given
        # The prior parameters of blocks with hyperpriors, at the current state.
        self._prior_keys = [
            (block.name, key, graph)
            for block in self.blocks
            if block.hyper
            for key, graph in prior_parameter_graphs(model[block.name]).items()
        ]
        outputs = [model[name] for name in given] + [graph for *_, graph in self._prior_keys]
        self._prior_keys = [(name, key) for name, key, _ in self._prior_keys]
        compile_kwargs = checked_compile_kwargs(compile_kwargs, "PrivateGibbs")
        with compiling(compile_kwargs["mode"]):
            self._current_values = model.compile_fn(
                model.replace_rvs_by_values(outputs),
                inputs=model.value_vars,
                on_unused_input="ignore",
                **compile_kwargs,
            )
            self._forward = {rv.name: _forward_transform(model, rv, compile_kwargs) for rv in rvs}
        self.rng = get_random_generator(rng)

    @staticmethod
    def cost(
        analysis: PrivacyAnalysis,
        blocks: Sequence[Sequence],
        temperature: float,
        allowances: Sequence[float] = (),
    ) -> float:
        """The ε of one sweep on raw data, from public quantities only: Σ_j (2·L_j/T + a_j)
        ("Privacy cost per iteration" above; `pymc_private.analysis.routes.tempered_epsilon`).

        Parameters
        ----------
        analysis
            The model's privacy analysis (L_j of each block: ``analysis.lipschitz_for``).
        blocks
            The blocks, each a sequence of free variables (names or variables).
        temperature
            T ≥ 1, already checked.
        allowances
            a_j, each block's floating-point allowance
            (`pymc_private.conditionals.exact.GridBlock`);
            none for the exact-arithmetic figure.
        """
        lipschitz = sum(analysis.lipschitz_for(block) for block in blocks)
        return tempered_epsilon(lipschitz, temperature) + sum(allowances)

    @staticmethod
    def competence(var, has_grad):
        """IDEAL for a conjugate variable of a model returned by `pmp.privatize`, else
        INCOMPATIBLE: PyMC must never assign a raw-data Gibbs sampler on its own, nor one
        whose conditional would miss a logp term (a hyperprior, a Potential)."""
        if has_closed_form_conditional(var):
            return Competence.IDEAL
        return Competence.INCOMPATIBLE

    @property
    def _statistics(self) -> dict:
        """The full statistics by node (exact and private on raw data)."""
        return self._payload.value

    def step(self, point: PointType) -> tuple[PointType, StatsType]:
        self.charge()
        outputs = self._current_values(point)
        values = dict(zip(self._given, outputs[: len(self._given)], strict=True))
        priors: dict[str, dict] = {}
        for (name, key), value in zip(self._prior_keys, outputs[len(self._given) :], strict=True):
            priors.setdefault(name, {})[key] = value
        new_point = dict(point)
        for block in self.blocks:
            prior = block.prior_at(priors[block.name]) if block.hyper else None
            draw = self._draw(block, values, prior)
            values[block.name] = draw
            value_name = self._value_names[block.name]
            current = point[value_name]
            forward = self._forward[block.name]
            sampled = draw if forward is None else forward(draw)
            new_point[value_name] = np.asarray(sampled, dtype=current.dtype).reshape(current.shape)
        return new_point, [self.privacy_stats()]

    def _draw(
        self, block: ConjugateBlock, values: Mapping[str, np.ndarray], prior: dict | None
    ) -> np.ndarray:
        """One draw of ``block`` given the others' ``values`` (and its prior at the current
        hyperparameters): exact floats on privatised statistics; on raw data the grid
        exponential mechanism, from the exact conditional."""
        if not self.touches_raw_data:
            parameters = block.conditional(self._statistics, values, self.temperature, prior=prior)
            return block.family.draw(
                self.rng,
                parameters,
                block.support,
                name=block.name,
                current=values[block.name],
                max_proposals=GIBBS_PROPOSALS,
            )
        exact = {name: as_exact(value) for name, value in values.items()}
        posterior = block.posterior(
            self._statistics, exact, Fraction(self.temperature), exact=True, prior=prior
        )
        return self._grids[block.name].draw(posterior, secure=self.secure, rng=self.rng)

    def release_note(self) -> str:
        if not self.touches_raw_data:
            return f"conjugate Gibbs on privatised statistics at T={self.temperature:g}; free"
        return (
            f"conjugate Gibbs (exponential mechanism per block) at T={self.temperature:g}; "
            "ε per sweep = Σ_j 2L_j/T"
        )


def _free_variables(model: pm.Model, vars) -> list[Variable]:
    if vars is None:
        return list(model.free_RVs)
    rvs = []
    for var in vars if isinstance(vars, list | tuple) else [vars]:
        rv = model.values_to_rvs.get(var, var)
        if rv not in model.free_RVs:
            name = getattr(var, "name", None) or repr(var)
            raise UnsupportedModelError(
                f"PrivateGibbs samples free random variables of the model; `{name}` is not one "
                "(observed variables, data and Deterministics are not sampled)."
            )
        rvs.append(rv)
    return rvs


def _forward_transform(model: pm.Model, rv: Variable, compile_kwargs: dict):
    """The compiled map from a constrained draw to the sampling space (None: identity)."""
    transform = model.rvs_to_transforms.get(rv)
    if transform is None:
        return None
    value = rv.type()
    return compile_pytensor(
        [value],
        transform.forward(value, *rv.owner.inputs),
        on_unused_input="ignore",
        **compile_kwargs,
    )


@route_cost
class GibbsCost(RouteCost):
    """One sweep of `PrivateGibbs` on raw data: ε = Σ_j 2L_j/T (`PrivateGibbs.cost` without
    the blocks' allowances)."""

    name = "gibbs"
    formula = "Σ_j 2L_j/T"
    source = "Foulds et al. 2016, §4.1"
    row = 1

    @classmethod
    def epsilon(cls, analysis, temperature, blocks):
        if blocks is None:
            blocks = [[name] for name in analysis.block_lipschitz]
        return PrivateGibbs.cost(analysis, blocks, temperature)


# PyMC's own step assignment (plain `pm.sample`) finds PrivateGibbs for the conjugate variables
# of a privatised model (`competence`): importing this module registers it.
if PrivateGibbs not in STEP_METHODS:
    STEP_METHODS.append(PrivateGibbs)
