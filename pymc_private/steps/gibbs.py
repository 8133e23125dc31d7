"""`PrivateGibbs`: conjugate Gibbs sampling, free on a privatised model, paying 2·L_j/T per
block on raw private data.

Each block is one free variable drawn exactly from its closed-form (tempered) conditional
given the current values of the others, truncated to its prior's support
(`pymc_private.conjugate`). The conditional reads the data only through sufficient
statistics: the privatised ones of a model returned by `pmp.privatize` (post-processing,
ε = 0), or the exact ones computed once from the raw `PrivateData` (the exponential
mechanism, ε = 2·L_j/T per block).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

import numpy as np
import pymc as pm
from pymc.blocking import StatsType
from pymc.initial_point import PointType
from pymc.pytensorf import compile as compile_pytensor
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.util import get_random_generator
from pytensor.graph.basic import Variable
from pytensor.graph.traversal import ancestors

from pymc_private.analysis import PrivacyAnalysis, analyze, interval_of
from pymc_private.conjugate import CONJUGATE_FAMILIES, draw_conjugate
from pymc_private.data import datasets_of, exact_statistics
from pymc_private.dp.session import PrivatePayload
from pymc_private.errors import UnsupportedModelError
from pymc_private.exact import (
    DEFAULT_CELLS,
    GridBlock,
    check_family,
    checked_cells,
    intervals,
    statistic_bounds,
)
from pymc_private.families import Interval, LikelihoodTerm, as_exact
from pymc_private.ledgers import ledger_for
from pymc_private.priors import ParameterSupport, parameter_support, prior_parameter_graphs
from pymc_private.privatize import (
    POTENTIAL_SUFFIX,
    has_closed_form_conditional,
    privatised_route,
    term_statistics,
)
from pymc_private.steps.base import PrivateStep, checked_secure, checked_temperature

__all__ = [
    "ConjugateBlock",
    "PrivateGibbs",
    "conjugate_block",
    "grid_block",
    "has_conditional",
    "raw_statistics",
]


@dataclass(frozen=True, eq=False)
class ConjugateBlock:
    """The closed-form conditional of one free variable, from public quantities only.

    Attributes
    ----------
    name
        The free variable.
    family
        Its conjugate family: "beta", "gamma", "normal", "dirichlet" or "mvnormal".
    prior
        The prior's parameters in that family's parameterisation (an exponential prior is
        Gamma(1, λ), a uniform one on [a, b] ⊂ [0, 1] is Beta(1, 1) on [a, b]); empty when
        they depend on ``hyper``.
    hyper
        The free variables the prior's parameters depend on (hyperpriors, e.g. ``m0`` and
        ``s0`` in ``mu ~ TruncatedNormal(m0, s0)``): the conditional is then taken given
        their current values, which the step passes to `posterior` as ``prior``.
    prior_intervals
        With ``hyper``: an interval holding each of the prior's parameters (named as in
        `ParameterSupport.params`) over the supports of ``hyper``. The step clips the current
        parameters into them, and the grid mechanism's float allowance is computed over them,
        so it holds for every state (`prior_at`).
    support
        The prior's support, to which every draw is truncated.
    updates
        ``(term, parameter, state)`` for each observed node that depends on the variable:
        the node's parameter that is the variable, and the node's other free parameters
        (parameter name → free variable) the conditional is taken given.
    """

    name: str
    family: str
    prior: Mapping[str, np.ndarray]
    support: ParameterSupport
    updates: tuple[tuple[LikelihoodTerm, str, Mapping[str, str]], ...]
    hyper: tuple[str, ...] = ()
    prior_intervals: Mapping[str, Interval] | None = None

    def prior_at(self, parameters: Mapping[str, np.ndarray] | None = None) -> dict:
        """The prior in the conjugate family's parameters, from the prior's own parameters
        at the current values of ``hyper`` (clipped into ``prior_intervals``), or, without
        them, in interval arithmetic over every value of ``hyper`` (`IntervalNumber`)."""
        shape = np.shape(self.support.lower)
        values = {}
        for key, interval in self.prior_intervals.items():
            if parameters is None:
                values[key] = intervals(
                    np.full(shape, interval.lower), np.full(shape, interval.upper)
                )
            else:
                value = np.clip(parameters[key], interval.lower, interval.upper)
                values[key] = np.broadcast_to(value, shape)
        prior_of = _PRIORS_AS_CONJUGATE[self.support.family][1]
        return prior_of(values, self.support)

    def posterior(
        self,
        statistics: Mapping[str, tuple[dict[str, np.ndarray], object]],
        values: Mapping[str, np.ndarray],
        temperature,
        *,
        exact: bool = False,
        prior: Mapping[str, np.ndarray] | None = None,
        prior_power=1,
    ) -> dict[str, np.ndarray]:
        """The conditional in its family's additive coordinates (`CONJUGATE_FAMILIES`): the
        prior's plus each node's contribution, given full statistics by node and the others'
        values. ``exact=True`` computes in exact rationals (statistics, values, temperature
        and ``prior_power`` must then be exact too). ``prior`` replaces the constant prior:
        with ``hyper``, `prior_at` the current values (or over all of them). ``prior_power``
        raises the prior density to that power (the base measure times the utility's prior
        term of `pmp.private_map`)."""
        if prior is None:
            prior = self.prior
        prior = {k: as_exact(v) if exact else v for k, v in prior.items()}
        family = CONJUGATE_FAMILIES[self.family]
        parameters = family.additive(prior)
        if prior_power != 1:
            parameters = family.power(parameters, prior_power)
        for term, parameter, state in self.updates:
            full, totals = statistics[term.node]
            contribution = term.family.conjugate_contribution(
                term,
                parameter,
                full,
                totals,
                temperature,
                {name: values[variable] for name, variable in state.items()},
            )
            parameters = {k: parameters[k] + contribution[k] for k in parameters}
        return parameters

    def conditional(
        self,
        statistics: Mapping[str, tuple[dict[str, np.ndarray], object]],
        values: Mapping[str, np.ndarray],
        temperature: float,
        *,
        prior: Mapping[str, np.ndarray] | None = None,
    ) -> dict[str, np.ndarray]:
        """The conditional's usual parameters (beta: alpha, beta; gamma: alpha, beta;
        normal: mu, sigma; dirichlet: a; mvnormal: mu, cov)."""
        family = CONJUGATE_FAMILIES[self.family]
        return family.usual(self.posterior(statistics, values, temperature, prior=prior))


_PRIORS_AS_CONJUGATE: dict[str, tuple[str, Callable]] = {
    "beta": ("beta", lambda p, s: {"alpha": p["alpha"], "beta": p["beta"]}),
    "uniform": (
        "beta",
        lambda p, s: {"alpha": np.ones_like(s.lower), "beta": np.ones_like(s.lower)},
    ),
    "gamma": ("gamma", lambda p, s: {"alpha": p["alpha"], "beta": p["beta"]}),
    "exponential": ("gamma", lambda p, s: {"alpha": np.ones_like(p["lam"]), "beta": p["lam"]}),
    "normal": ("normal", lambda p, s: {"mu": p["mu"], "sigma": p["sigma"]}),
    "dirichlet": ("dirichlet", lambda p, s: {"a": p["a"]}),
    "mvnormal": ("mvnormal", lambda p, s: {"mu": p["mu"], "cov": p["cov"]}),
}


def conjugate_block(
    analysis: PrivacyAnalysis, rv: Variable, model: pm.Model, *, augmented: bool = False
) -> ConjugateBlock:
    """The conjugate conditional of free variable ``rv`` of ``model`` under ``analysis``'
    likelihood terms (given the terms' full statistics: on a noise-aware model, with
    ``augmented``, the latent true statistics of `pymc_private.augmentation`, whose
    likelihood Potentials then stand for the terms).

    The conditional is ξ(θ_j) times the likelihood terms of ``analysis`` that use θ_j; it is
    the model's full conditional only if no other logp term of ``model`` depends on θ_j, so
    a variable that is a parameter of another free variable's prior (a hyperprior), or an
    input of a Potential (other than the `pmp.privatize` likelihood Potentials
    ``<node>_privatised``) or of an observed node outside ``analysis.terms``, is refused.
    A prior whose parameters are other free variables (``mu ~ TruncatedNormal(m0, s0)``,
    constant bounds) is conjugate given their current values (`ConjugateBlock.hyper`).

    Raises
    ------
    UnsupportedModelError
        ``rv`` has no closed-form conditional (its prior is not conjugate to a likelihood
        that uses it, has non-constant parameters, a likelihood uses it through an
        expression, or another logp term depends on it); the message names ``rv`` and says
        why.
    """
    name = rv.name
    support = parameter_support(rv)
    if support is None or support.family not in _PRIORS_AS_CONJUGATE:
        family = "unreadable" if support is None else support.family
        raise _no_conditional(name, f"its prior ({family}) has no conjugate sampler")
    family, prior_of = _PRIORS_AS_CONJUGATE[support.family]
    hyper, prior_intervals = (), None
    if any(value is None for value in support.params.values()):
        hyper, prior_intervals = _hyperprior(model, rv)
        if not hyper:
            raise _no_conditional(
                name,
                "its prior's parameters are read from pm.Data or shared variables, which may "
                "change after the sampler is built: give them as numbers",
            )
    if support.family == "uniform" and not (
        np.all(support.lower >= 0.0) and np.all(support.upper <= 1.0)
    ):
        raise _no_conditional(name, "a uniform prior is conjugate only as a probability")
    outside = _logp_terms_outside(model, analysis, rv, augmented)
    if outside:
        raise _no_conditional(
            name,
            f"{outside} also depends on it, and that term is not part of a conjugate update",
        )
    updates = []
    for term in analysis.terms:
        if name not in term.free_variables:
            continue
        if term.node in analysis.statistics_unavailable:
            raise _no_conditional(name, analysis.statistics_unavailable[term.node])
        using = [p for p in term.parameters.values() if name in p.free_variables]
        if len(using) != 1 or using[0].free_variable != name:
            raise _no_conditional(
                name, f"`{term.node}` uses it through an expression, not as a parameter"
            )
        parameter = using[0]
        conjugate = term.family.conjugate_priors.get(parameter.name)
        if conjugate is None or conjugate[0] != family or conjugate[1] != parameter.link:
            raise _no_conditional(
                name,
                f"its {support.family} prior is not conjugate to parameter `{parameter.name}` "
                f"of {term.family.name} `{term.node}` (entering through {parameter.link!r})",
            )
        state = {
            p.name: p.free_variable
            for p in term.parameters.values()
            if p.constant is None and p.name != parameter.name
        }
        if any(variable is None for variable in state.values()):
            raise _no_conditional(name, f"the other parameters of `{term.node}` are expressions")
        updates.append((term, parameter.name, state))
    prior = {}
    if not hyper:
        prior = {
            key: np.asarray(value, dtype=np.float64)
            for key, value in prior_of(support.params, support).items()
        }
    return ConjugateBlock(name, family, prior, support, tuple(updates), hyper, prior_intervals)


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


def _hyperprior(model: pm.Model, rv: Variable) -> tuple[tuple[str, ...], dict[str, Interval]]:
    """The free variables a scalar prior's parameters depend on, and an interval holding
    each parameter as they range over their supports (`ConjugateBlock.prior_intervals`)."""
    graphs = prior_parameter_graphs(rv)
    if graphs is None:
        raise _no_conditional(rv.name, "its prior's parameters are not constants")
    free = {other.name for other in model.free_RVs}
    hyper = tuple(sorted({v.name for v in ancestors(list(graphs.values())) if v.name in free}))
    found = {}
    for key, graph in graphs.items():
        interval = interval_of(model, graph, rv.name)
        if not interval.finite:
            raise _no_conditional(
                rv.name,
                f"its prior's parameter `{key}` ranges over [{interval.lower:g}, "
                f"{interval.upper:g}] as {', '.join(hyper)} range over their supports; give "
                "the hyperpriors bounded supports (e.g. pmp.TruncatedNormal, "
                "pmp.TruncatedGamma) so that every state is covered",
            )
        found[key] = interval
    return hyper, found


def _logp_terms_outside(
    model: pm.Model, analysis: PrivacyAnalysis, rv: Variable, augmented: bool = False
) -> str:
    """The logp terms of ``model`` outside ``analysis.terms`` that depend on ``rv``, as
    text ("" when none): other free variables' priors, Potentials other than the
    likelihood Potentials of a privatised model (plug-in, or noise-aware when
    ``augmented``), observed nodes without a term."""
    nodes = {term.node for term in analysis.terms}
    privatisation = privatised_route(model)
    stands_for_terms = privatisation is not None and (augmented or not privatisation.noise_aware)
    likelihoods = {node + POTENTIAL_SUFFIX for node in nodes} if stands_for_terms else set()
    found = [
        f"the prior of `{other.name}`"
        for other in model.free_RVs
        if other is not rv and rv in ancestors(other.owner.inputs)
    ]
    found += [
        f"Potential `{potential.name}`"
        for potential in model.potentials
        if potential.name not in likelihoods and rv in ancestors([potential])
    ]
    found += [
        f"observed `{observed.name}`"
        for observed in model.observed_RVs
        if observed.name not in nodes and rv in ancestors(observed.owner.inputs)
    ]
    return ", ".join(found)


# On privatised statistics, rejection proposals per draw before a block (a Dirichlet or
# regression weights) moves by π-invariant Markov moves from its current value instead
# (`pymc_private.conjugate`, "Giving up, or moving on"): the chain never stops.
GIBBS_PROPOSALS = 1_000

NOISE_AWARE_GIBBS = (
    "This model is the noise-aware posterior of privatised statistics (the default of "
    "pmp.privatize), which has no closed-form conditionals: sample it with NUTS, which "
    "pmp.sample assigns by default (free: it reads released statistics only), or privatize "
    "with noise_aware=False for the plug-in posterior that PrivateGibbs and "
    "pmp.sample_posterior draw exactly (miscalibrated at small n·ε)."
)


def _no_conditional(name: str, reason: str) -> UnsupportedModelError:
    error = UnsupportedModelError(
        f"PrivateGibbs has no closed-form conditional for `{name}`: {reason}. Sample `{name}` "
        f"with another step: pmp.PrivateMetropolis([{name}]) on raw private data (pass "
        f"step=[pmp.PrivateGibbs([...]), pmp.PrivateMetropolis([{name}])]), or any PyMC step "
        "(e.g. NUTS) on a model returned by pmp.privatize."
    )
    error.reason = reason
    return error


class PrivateGibbs(BlockedStep, PrivateStep):
    r"""Conjugate Gibbs sampling through sufficient statistics, private by construction.

    One iteration (a sweep) draws each block θ_j, one free variable, from its tempered
    conditional restricted to its prior's support Θ_j,

        θ_j ~ ξ_j(θ_j) · Π_i p(x_i | θ_j, θ_−j)^{1/T}   on Θ_j,

    given the current values θ_−j of the other variables. The conditionals are the conjugate
    updates of `pymc_private.families` (Beta / Dirichlet for Bernoulli, Binomial and
    Categorical counts; Gamma for Poisson and Exponential rates and for the precision of a
    Normal; Normal for a mean with σ known or given; MvNormal for regression weights).

    Privacy cost per iteration
    --------------------------
    *On a model returned by* `pmp.privatize`: ε = 0. The statistics are the privatised ones,
    already paid for by the privatisation's release; every draw is post-processing, drawn
    exactly in floating point (`pymc_private.conjugate`); a Dirichlet or regression-weight
    block whose truncated conditional has almost no mass where rejection proposes (none of
    1000 proposals accepted) moves instead by Markov moves from its current value that leave
    the conditional invariant, so sampling never stops after ε was spent. This step is
    registered in ``pm.STEP_METHODS`` and claims (IDEAL competence) the conjugate variables
    of privatised models only.

    *On a model with raw* `PrivateData`: per sweep

        ε = Σ_j (2·L_j/T + a_j),

    L_j the record Lipschitz constant of the observed nodes that depend on θ_j over the prior
    supports of all parameters (`pmp.analyze(model).block_lipschitz`), a_j the block's
    floating-point allowance (`pymc_private.exact.GridBlock.allowance`, ~1e-13 for ordinary
    models). The argument (Foulds et al. 2016, §4.1; Dimitrakakis et al. 2017, Theorem 8
    applied per block): given the released current state θ_−j, the update draws θ_j with
    density ∝ ξ_j(θ_j) exp(u(D, θ_j)/T), u(D, θ_j) = Σ_i ℓ(x_i; θ_j, θ_−j); replacing one
    record moves u by at most L_j at every θ_j, so the update is the exponential mechanism,
    (2·L_j/T)-DP. As implemented, θ_j is drawn on a public grid of ``cells`` cells per entry
    by an exact selection (`pymc_private.exact`, whose module docstring proves the bound for
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
        Seed or generator; ``pm.sample`` replaces it per chain (`set_rng`).
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
                raise _no_conditional(
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
            self.privacy_epsilon_per_draw = analysis.epsilon_per_draw(
                "gibbs", self.temperature, blocks=blocks
            ) + sum(grid.allowance for grid in self._grids.values())
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
        self._current_values = model.compile_fn(
            model.replace_rvs_by_values(outputs),
            inputs=model.value_vars,
            on_unused_input="ignore",
            **(compile_kwargs or {}),
        )
        self._forward = {rv.name: _forward_transform(model, rv, compile_kwargs) for rv in rvs}
        self.rng = get_random_generator(rng)

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
            return draw_conjugate(
                self.rng,
                block.family,
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


def has_conditional(analysis: PrivacyAnalysis, rv: Variable, model: pm.Model) -> bool:
    """Whether ``rv`` has a closed-form conditional (`conjugate_block` succeeds)."""
    try:
        conjugate_block(analysis, rv, model)
    except UnsupportedModelError:
        return False
    return True


def raw_statistics(
    model: pm.Model, analysis: PrivacyAnalysis, nodes: list[str], *, exact: bool = False
) -> dict[str, np.ndarray]:
    """The statistics of ``nodes`` from the raw data in natural units (exact rationals with
    ``exact=True``): private, kept in the step."""
    specs = {}
    for node in nodes:
        totals = analysis.term(node).totals_statistic()
        for spec in [*analysis.statistics_of(node).values(), *([totals] if totals else [])]:
            specs[spec.name] = spec
    exact_values = exact_statistics(model, specs.values())
    return {name: spec.natural(exact_values[name], exact=exact) for name, spec in specs.items()}


def grid_block(
    block: ConjugateBlock,
    analysis: PrivacyAnalysis,
    model: pm.Model,
    temperature,
    cells: int,
    *,
    prior_power=1,
) -> GridBlock:
    """The grid exponential mechanism of a block on raw data, with its float allowance from
    the block's posterior (its prior to ``prior_power``) over every public data set and state
    (interval arithmetic)."""
    try:
        check_family(block.family)
    except UnsupportedModelError as error:
        raise _no_conditional(block.name, str(error)) from None
    nodes = {term.node for term, _, _ in block.updates}
    statistics = {node: statistic_bounds(analysis, node) for node in nodes}
    states = {variable for _, _, state in block.updates for variable in state.values()}
    values = {}
    for variable in states:
        support = parameter_support(model[variable])
        values[variable] = intervals(as_exact(support.lower), as_exact(support.upper))
    prior = block.prior_at() if block.hyper else None
    posterior = block.posterior(
        statistics, values, Fraction(temperature), exact=True, prior=prior, prior_power=prior_power
    )
    return GridBlock.build(block.family, block.support, cells, posterior)


def _forward_transform(model: pm.Model, rv: Variable, compile_kwargs: dict | None):
    """The compiled map from a constrained draw to the sampling space (None: identity)."""
    transform = model.rvs_to_transforms.get(rv)
    if transform is None:
        return None
    value = rv.type()
    return compile_pytensor(
        [value],
        transform.forward(value, *rv.owner.inputs),
        on_unused_input="ignore",
        **(compile_kwargs or {}),
    )


if PrivateGibbs not in pm.STEP_METHODS:
    pm.STEP_METHODS.append(PrivateGibbs)
