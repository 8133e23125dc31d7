"""The conjugate conditionals: the closed-form law of one free variable given the others and
the sufficient statistics of the likelihood terms that use it, built from public quantities
only (the model's graph and `pmp.analyze`).

`ConjugateBlock` is that conditional (its conjugate family, prior, support and the updates of
each observed node); `conjugate_block` reads it from a model or says why there is none.
`pmp.PrivateGibbs` draws the blocks in turn, `pmp.sample_posterior` and `pmp.private_map`
draw or maximise their product, and the numpy noise-aware sampler
(`pymc_private.noise_aware.sampler`) draws count parameters given latent statistics. On raw data,
`grid_block` is a block's grid exponential mechanism (`pymc_private.conditionals.exact`) and
`raw_statistics` the exact statistics it reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pymc as pm
from pytensor.graph.basic import Variable
from pytensor.graph.traversal import ancestors

from pymc_private.analysis.core import PrivacyAnalysis
from pymc_private.analysis.intervals import interval_of
from pymc_private.analysis.privatisation import POTENTIAL_SUFFIX, privatised_route
from pymc_private.conditionals.exact import GridBlock, check_family, intervals, statistic_bounds
from pymc_private.data.declaration import exact_statistics
from pymc_private.errors import UnsupportedModelError
from pymc_private.families.likelihood import LikelihoodTerm
from pymc_private.families.statistics import Interval, as_exact
from pymc_private.priors.conjugate import ConjugateFamily, conjugate_family
from pymc_private.priors.support import ParameterSupport, parameter_support, prior_parameter_graphs

__all__ = [
    "NOISE_AWARE_GIBBS",
    "ConjugateBlock",
    "conjugate_block",
    "grid_block",
    "has_conditional",
    "no_conditional",
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
        Its conjugate family (`pymc_private.priors.conjugate`: `BETA`, `GAMMA`, `NORMAL`,
        `DIRICHLET` or `MVNORMAL`; ``family.name`` names it).
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
    family: ConjugateFamily
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
        return self.family.prior_parameters(values, self.support)

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
        """The conditional in its family's additive coordinates (`ConjugateFamily`): the
        prior's plus each node's contribution, given full statistics by node and the others'
        values. ``exact=True`` computes in exact rationals (statistics, values, temperature
        and ``prior_power`` must then be exact too). ``prior`` replaces the constant prior:
        with ``hyper``, `prior_at` the current values (or over all of them). ``prior_power``
        raises the prior density to that power (the base measure times the utility's prior
        term of `pmp.private_map`)."""
        if prior is None:
            prior = self.prior
        prior = {k: as_exact(v) if exact else v for k, v in prior.items()}
        parameters = self.family.additive(prior)
        if prior_power != 1:
            parameters = self.family.power(parameters, prior_power)
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
        return self.family.usual(self.posterior(statistics, values, temperature, prior=prior))


def conjugate_block(
    analysis: PrivacyAnalysis, rv: Variable, model: pm.Model, *, augmented: bool = False
) -> ConjugateBlock:
    """The conjugate conditional of free variable ``rv`` of ``model`` under ``analysis``'
    likelihood terms (given the terms' full statistics: on a noise-aware model, with
    ``augmented``, the latent true statistics of `pymc_private.noise_aware.sampler`, whose
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
    family = None if support is None else conjugate_family(support.family)
    if family is None:
        found = "unreadable" if support is None else support.family
        raise no_conditional(name, f"its prior ({found}) has no conjugate sampler")
    hyper, prior_intervals = (), None
    if any(value is None for value in support.params.values()):
        hyper, prior_intervals = _hyperprior(model, rv)
        if not hyper:
            raise no_conditional(
                name,
                "its prior's parameters are read from pm.Data or shared variables, which may "
                "change after the sampler is built: give them as numbers",
            )
    refusal = family.refusal(support)
    if refusal is not None:
        raise no_conditional(name, refusal)
    outside = _logp_terms_outside(model, analysis, rv, augmented)
    if outside:
        raise no_conditional(
            name,
            f"{outside} also depends on it, and that term is not part of a conjugate update",
        )
    updates = []
    for term in analysis.terms:
        if name not in term.free_variables:
            continue
        if term.node in analysis.statistics_unavailable:
            raise no_conditional(name, analysis.statistics_unavailable[term.node])
        using = [p for p in term.parameters.values() if name in p.free_variables]
        if len(using) != 1 or using[0].free_variable != name or using[0].intercept is not None:
            raise no_conditional(
                name, f"`{term.node}` uses it through an expression, not as a parameter"
            )
        parameter = using[0]
        conjugate = term.family.conjugate_priors.get(parameter.name)
        if conjugate is None or conjugate[0] is not family or conjugate[1] != parameter.link:
            raise no_conditional(
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
            raise no_conditional(name, f"the other parameters of `{term.node}` are expressions")
        updates.append((term, parameter.name, state))
    prior = {}
    if not hyper:
        prior = {
            key: np.asarray(value, dtype=np.float64)
            for key, value in family.prior_parameters(support.params, support).items()
        }
    return ConjugateBlock(name, family, prior, support, tuple(updates), hyper, prior_intervals)


def has_conditional(analysis: PrivacyAnalysis, rv: Variable, model: pm.Model) -> bool:
    """Whether ``rv`` has a closed-form conditional (`conjugate_block` succeeds)."""
    try:
        conjugate_block(analysis, rv, model)
    except UnsupportedModelError:
        return False
    return True


def _hyperprior(model: pm.Model, rv: Variable) -> tuple[tuple[str, ...], dict[str, Interval]]:
    """The free variables a scalar prior's parameters depend on, and an interval holding
    each parameter as they range over their supports (`ConjugateBlock.prior_intervals`)."""
    graphs = prior_parameter_graphs(rv)
    if graphs is None:
        raise no_conditional(rv.name, "its prior's parameters are not constants")
    free = {other.name for other in model.free_RVs}
    hyper = tuple(sorted({v.name for v in ancestors(list(graphs.values())) if v.name in free}))
    found = {}
    for key, graph in graphs.items():
        interval = interval_of(model, graph, rv.name)
        if not interval.finite:
            raise no_conditional(
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


NOISE_AWARE_GIBBS = (
    "This model is the noise-aware posterior of privatised statistics (the default of "
    "pmp.privatize), which has no closed-form conditionals: sample it with NUTS, which "
    "pmp.sample assigns by default (free: it reads released statistics only), or privatize "
    "with noise_aware=False for the plug-in posterior that PrivateGibbs and "
    "pmp.sample_posterior draw exactly (miscalibrated at small n·ε)."
)


def no_conditional(name: str, reason: str) -> UnsupportedModelError:
    """The refusal of a block without a closed-form conditional: it names the variable, why,
    and the steps that sample it instead (``reason`` stays on the error as ``.reason``)."""
    error = UnsupportedModelError(
        f"PrivateGibbs has no closed-form conditional for `{name}`: {reason}. Sample `{name}` "
        f"with another step: pmp.PrivateMetropolis([{name}]) on raw private data (pass "
        f"step=[pmp.PrivateGibbs([...]), pmp.PrivateMetropolis([{name}])]), or any PyMC step "
        "(e.g. NUTS) on a model returned by pmp.privatize."
    )
    error.reason = reason
    return error


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
        raise no_conditional(block.name, str(error)) from None
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
