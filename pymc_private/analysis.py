"""The privacy analysis of a PyMC model: L per node and per block, Δ₁, the ε of each route.

`analyze` walks the graph from every observed node on `PrivateData` to the free variables in
its parameters, reads the prior supports (`pymc_private.priors.parameter_support`) and the
declared data domains (`pymc_private.data.private_data`), and hands each node to its
likelihood family (`pymc_private.families`). Its numbers read public quantities only:
bounds, supports, shapes, constants and n. Two models that differ only in their data give
identical analyses, so the analysis (and a budget check built on it) can run before any data
is touched and leaks nothing. Before reading the graph it re-validates the data the model
holds now against its declarations (`pymc_private.data.check_private_data`, the checks of
`PrivateData` again, since ``pm.set_data`` can replace a value after it was declared), and it
refuses private data, or an observed variable, reaching anything but the observed
likelihoods (`refuse_private_paths`).

Parameters reach a family through interval arithmetic over the graph: a free variable
contributes its prior's support, a constant its value, a group index ``theta[y_obs]`` makes
``y_obs`` part of the record (the parameter may change with the record), and a linear
predictor ``X @ w`` with ``X`` private and ``‖w‖₂ ≤ R`` ranges over ``[−Bx·R, Bx·R]`` with
``Bx = sup ‖x‖₂`` over the declared box. Anything the analysis cannot bound is refused with
`UnsupportedModelError`; a bound that is infinite with `UnboundedSensitivityError` naming the
prior or the data to bound and how.
"""

from __future__ import annotations

import hashlib
import html
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pymc as pm
import pytensor.scalar as ps
import pytensor.scalar.math as psm
import pytensor.tensor as pt
from pymc.distributions.mixture import MixtureRV
from pymc.pytensorf import constant_fold
from pytensor import graph_replace
from pytensor.compile.ops import ViewOp
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant, Variable
from pytensor.graph.traversal import ancestors, graph_inputs
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.math import Dot
from pytensor.tensor.shape import Shape, Shape_i
from pytensor.tensor.subtensor import AdvancedSubtensor, AdvancedSubtensor1, Subtensor
from pytensor.tensor.type_other import NoneTypeT

from pymc_private.data import PrivateDataSpec, check_private_data, declaration, private_data
from pymc_private.errors import (
    DataBoundsError,
    InvalidPrivacyParameterError,
    UnboundedSensitivityError,
    UnsupportedModelError,
)
from pymc_private.families import (
    FAMILIES,
    DataGrid,
    ElementDomain,
    Interval,
    LikelihoodTerm,
    ParameterTerm,
    StatisticSpec,
    data_grid,
    find_family,
)
from pymc_private.priors import parameter_support

__all__ = [
    "ROUTES",
    "PrivacyAnalysis",
    "analyze",
    "check_initial_values",
    "reads_private_data",
    "refuse_private_paths",
    "shape_is_public",
]

ROUTES = ("posterior_sampling", "gibbs", "metropolis", "privatize")

_ROUTE_FORMULAS = {
    "posterior_sampling": ("2L/T", "Dimitrakakis et al. 2017, Theorem 8"),
    "gibbs": ("Σ_j 2L_j/T", "Foulds et al. 2016, §4.1"),
    "metropolis": ("2L/T", "Barker acceptance; docs: Mechanisms and their costs"),
    "privatize": ("0 per draw", "the ε of one Laplace release on s(D), Zhang et al. 2016, Alg. 1"),
}


@dataclass(frozen=True, eq=False)
class PrivacyAnalysis:
    """What a model costs under each private route, from public quantities only.

    Attributes
    ----------
    n_records
        The public record count n.
    private_data
        The `PrivateDataSpec` of every `PrivateData`, by name.
    terms
        One `LikelihoodTerm` per observed node: its family, data, parameters and domains
        (what the private samplers build on).
    node_lipschitz
        L of each observed node over one record (sum over the node's elements of
        sup_θ sup_{x,x'} |ℓ(x;θ) − ℓ(x';θ)|).
    record_lipschitz
        L over a whole record: the sum of ``node_lipschitz``. This bounds the record
        log-likelihood's range because a record's log-likelihood is the sum over its nodes
        and sup of a sum ≤ sum of sups; it is exact when the nodes have disjoint parameters
        (naive Bayes: the label's and the features' parameters are different variables).
    block_lipschitz
        L_j for each free variable: the sum of L over the nodes whose likelihood depends on
        it, every other parameter ranging over its support (0 when no node depends on it).
        Nodes that do not depend on θ_j add a term constant in θ_j to the utility of the
        exponential mechanism, which cancels in its normalisation.
    statistics
        The sufficient statistics of the pay-once route, each released once even when
        several nodes use it. To rebuild a node's log-likelihood from released values
        ``s̃[name]``: totals = n, or ``complete_statistic(term.totals_statistic(), s̃[...], n)``
        when grouped; full = ``{kind: complete_statistic(spec, s̃[spec.name], totals)}`` over
        `statistics_of(node)`; then ``term.family.logp_from_statistics(term, values, full,
        totals)`` (or ``conjugate_update``).
    sensitivity_l1
        Δ₁ over one whole record: the sum of the statistics' sensitivities (sup of a sum ≤
        sum of sups), or None when some node does not reduce to statistics. Naive Bayes with
        d binary features and a binary class: 2d + 1, one less than Zhang et al.'s 2(d + 1)
        (Lemma 1) because n is public: the count of class 0 is n minus the count of class 1
        and is derived, not noised; each feature table keeps two released cells per change
        (a record moving from class c to c' changes N[c, j, 1] and N[c', j, 1]), and the
        N[c, j, 0] cells are derived from the class counts.
    statistics_unavailable
        Why a node has no sufficient-statistic route, by node.
    clipped
        `PrivateData` declared with ``out_of_bounds="clip"``: clipping into the declared
        bounds is part of the mechanism for those arrays.
    """

    n_records: int
    private_data: dict[str, PrivateDataSpec]
    terms: tuple[LikelihoodTerm, ...]
    node_lipschitz: dict[str, float]
    record_lipschitz: float
    block_lipschitz: dict[str, float]
    statistics: tuple[StatisticSpec, ...]
    sensitivity_l1: float | None
    statistics_unavailable: dict[str, str] = field(default_factory=dict)
    clipped: tuple[str, ...] = ()

    @property
    def clipping_requested(self) -> bool:
        """Whether any `PrivateData` asked for clipping (whether anything was clipped is
        private and not known here)."""
        return bool(self.clipped)

    def term(self, node: str) -> LikelihoodTerm:
        """The `LikelihoodTerm` of an observed node."""
        for term in self.terms:
            if term.node == node:
                return term
        raise UnsupportedModelError(
            f"`{node}` is not an observed node of the model; observed nodes: "
            f"{sorted(t.node for t in self.terms)}."
        )

    def statistics_of(self, node: str) -> dict[str, StatisticSpec]:
        """A node's own statistics by kind (as its family's `logp_from_statistics` and
        `conjugate_update` name them), in their merged form. A grouped node's totals are
        ``self.term(node).totals_statistic()``, also among `statistics`."""
        if node in self.statistics_unavailable:
            raise UnsupportedModelError(self.statistics_unavailable[node])
        term = self.term(node)
        by_name = {spec.name: spec for spec in self.statistics}
        return {spec.kind: by_name[spec.name] for spec in term.family.statistics(term)}

    @property
    def routes(self) -> tuple[str, ...]:
        """The routes whose cost this analysis can state for the model."""
        if self.sensitivity_l1 is None:
            return ROUTES[:3]
        return ROUTES

    def lipschitz_for(self, names: Iterable) -> float:
        """L of a block of several free variables: the sum of L over the nodes whose
        likelihood depends on any of them (each node once), the other parameters ranging
        over their supports.

        Parameters
        ----------
        names
            Free variables of the model, by name or as variables.
        """
        wanted = {getattr(name, "name", name) for name in names}
        unknown = wanted - set(self.block_lipschitz)
        if unknown:
            raise UnsupportedModelError(
                f"Not free variables of the model: {sorted(unknown)}; free variables: "
                f"{sorted(self.block_lipschitz)}."
            )
        return float(
            sum(
                self.node_lipschitz[term.node]
                for term in self.terms
                if wanted & set(term.free_variables)
            )
        )

    def epsilon_per_draw(
        self,
        route: str,
        temperature: float = 1.0,
        *,
        blocks: Sequence[Sequence] | None = None,
    ) -> float:
        """The ε one draw costs under ``route``, at temperature T ≥ 1.

        - ``"posterior_sampling"``: one exact draw from the tempered posterior is the
          exponential mechanism with utility Σ_i ℓ(x_i; θ) of sensitivity L: ε = 2L/T
          (Dimitrakakis et al. 2017, Theorem 8; T = 1 is the plain posterior).
        - ``"gibbs"``: one sweep draws each block θ_j from its tempered conditional, each a
          (2L_j/T)-DP exponential mechanism given the released state: ε = Σ_j 2L_j/T
          (Foulds et al. 2016, §4.1). ``blocks`` lists the blocks (names or variables);
          default: one block per free variable.
        - ``"metropolis"``: one Barker step with a data-independent proposal moves its
          acceptance log-odds by at most 2L/T between neighbours: ε = 2L/T
          (:ref:`costs-metropolis`).
        - ``"privatize"``: 0 per draw. The whole cost is the ε of the single release of the
          privatised statistics (Laplace noise of scale Δ₁/ε); every draw after it is
          post-processing.
        """
        if route not in ROUTES:
            raise UnsupportedModelError(f"Unknown route {route!r}; routes: {', '.join(ROUTES)}.")
        if not (
            isinstance(temperature, int | float)
            and math.isfinite(temperature)
            and temperature >= 1.0
        ):
            raise InvalidPrivacyParameterError(
                f"temperature must be a finite number >= 1, got {temperature!r}."
            )
        if route == "privatize":
            if self.sensitivity_l1 is None:
                raise UnsupportedModelError(
                    "The privatize route is not available: "
                    + "; ".join(self.statistics_unavailable.values())
                )
            return 0.0
        if route == "gibbs":
            if blocks is None:
                total = sum(self.block_lipschitz.values())
            else:
                total = sum(self.lipschitz_for(block) for block in blocks)
            return 2.0 * total / temperature
        return 2.0 * self.record_lipschitz / temperature

    def to_dict(self) -> dict:
        """A JSON-serialisable summary of every public number in the analysis."""
        return {
            "n_records": self.n_records,
            "private_data": {
                name: {
                    "lower": spec.lower.tolist(),
                    "upper": spec.upper.tolist(),
                    "record_shape": list(spec.record_shape),
                    "integer": spec.integer,
                    "out_of_bounds": spec.out_of_bounds,
                }
                for name, spec in self.private_data.items()
            },
            "nodes": {
                term.node: {
                    "family": term.family.name,
                    "data": term.data,
                    "group_by": term.group_by,
                    "public_group_sizes": (
                        None if term.group_values is None else term.public_totals().tolist()
                    ),
                    "free_variables": list(term.free_variables),
                    "lipschitz": self.node_lipschitz[term.node],
                }
                for term in self.terms
            },
            "record_lipschitz": self.record_lipschitz,
            "block_lipschitz": dict(self.block_lipschitz),
            "statistics": [
                {
                    "name": s.name,
                    "kind": s.kind,
                    "shape": list(s.shape),
                    "unit": s.unit,
                    "sensitivity": s.sensitivity,
                    "sensitivity_l1": s.sensitivity_l1,
                    "nodes": list(s.nodes),
                }
                for s in self.statistics
            ],
            "sensitivity_l1": self.sensitivity_l1,
            "statistics_unavailable": dict(self.statistics_unavailable),
            "clipped": list(self.clipped),
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PrivacyAnalysis):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def _tables(self) -> list[tuple[str, list[str], list[list[str]], str]]:
        """(title, header, rows, footer) of each table of the report."""
        nodes = [
            [
                term.node,
                term.family.name,
                term.data,
                _grouping(term),
                ", ".join(term.free_variables) or "-",
                _fmt(self.node_lipschitz[term.node]),
            ]
            for term in self.terms
        ]
        clipping = ", ".join(f"`{c}`" for c in self.clipped) or "none requested"
        blocks = [[name, _fmt(value)] for name, value in self.block_lipschitz.items()]
        if self.sensitivity_l1 is None:
            stats_footer = "not available: " + "; ".join(self.statistics_unavailable.values())
        else:
            stats_footer = f"Δ₁ over one record = {_fmt(self.sensitivity_l1)}"
        stats = [
            [s.name, s.kind, str(s.shape), _fmt(s.unit), _fmt(s.sensitivity_l1)]
            for s in self.statistics
        ]
        routes = []
        for route in self.routes:
            formula, source = _ROUTE_FORMULAS[route]
            value = self.epsilon_per_draw(route)
            routes.append([route, formula, _fmt(value), source])
        return [
            (
                f"Observed nodes (n = {self.n_records} records; clipping: {clipping})",
                ["node", "family", "data", "grouped by", "depends on", "L (one record)"],
                nodes,
                f"record L = {_fmt(self.record_lipschitz)} (sum over the record's nodes)",
            ),
            ("Blocks (Gibbs)", ["free variable", "L_j"], blocks, ""),
            (
                "Sufficient statistics (pay once)",
                ["statistic", "kind", "shape", "grid step", "Δ₁"],
                stats,
                stats_footer,
            ),
            ("ε per draw at T = 1", ["route", "formula", "ε", "source"], routes, ""),
        ]

    def __repr__(self) -> str:
        lines = ["PrivacyAnalysis"]
        for title, header, rows, footer in self._tables():
            widths = [
                max(len(str(c)) for c in column) for column in zip(header, *rows, strict=False)
            ]
            lines.append("")
            lines.append(title)
            for row in [header, *rows]:
                cells = (str(c).ljust(w) for c, w in zip(row, widths, strict=True))
                lines.append(("  " + "  ".join(cells)).rstrip())
            if footer:
                lines.append("  " + footer)
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        parts = ["<div><strong>PrivacyAnalysis</strong>"]
        for title, header, rows, footer in self._tables():
            parts.append(f"<p>{html.escape(title)}</p><table><thead><tr>")
            parts.extend(f"<th>{html.escape(h)}</th>" for h in header)
            parts.append("</tr></thead><tbody>")
            for row in rows:
                parts.append(
                    "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>"
                )
            parts.append("</tbody></table>")
            if footer:
                parts.append(f"<p><em>{html.escape(footer)}</em></p>")
        parts.append("</div>")
        return "".join(parts)


def _grouping(term: LikelihoodTerm) -> str:
    if term.group_by is None:
        return "-"
    return term.group_by + (" (public)" if term.group_values is not None else "")


def _fmt(value: float) -> str:
    return f"{value:.6g}"


def analyze(model: pm.Model | None = None) -> PrivacyAnalysis:
    """The privacy analysis of a model whose sensitive data is declared with `PrivateData`.

    Parameters
    ----------
    model
        The model (default: the model on the context stack).

    Returns
    -------
    PrivacyAnalysis
        L per observed node, per record and per block, the sufficient statistics with Δ₁,
        and the ε per draw of each route. The numbers depend on public quantities only.

    Raises
    ------
    UnsupportedModelError
        No `PrivateData`; an observed node on a raw array or on `pm.Data` that is not
        `PrivateData`; an unknown likelihood family (the message lists the supported ones);
        private data, or an observed variable (which PyMC evaluates at its data), reaching a
        Deterministic, a Potential, a prior or an initial value (`refuse_private_paths`); a
        parameter graph the analysis cannot bound; a numeric initial value that is not
        finite or not strictly inside its prior's support (`check_initial_values`).
    UnboundedSensitivityError
        L is infinite: the message names the prior to truncate (and the truncated prior to
        use), or the `PrivateData` whose bounds exceed the family's support.
    DataBoundsError
        The current value of some `PrivateData` (possibly replaced with ``pm.set_data``) no
        longer fits its declaration (`pymc_private.data.check_private_data`, which also
        clips in place the data declared with ``out_of_bounds="clip"``); private data
        observed by a discrete family without an integer dtype; a group index whose declared
        bounds exceed the indexed axis.
    """
    model = pm.modelcontext(model)
    specs = private_data(model)
    if not specs:
        raise UnsupportedModelError(
            "The model has no PrivateData: declare the sensitive arrays with "
            "pmp.PrivateData(name, value, bounds=(lower, upper)) and observe those; there is "
            "nothing to analyse otherwise."
        )
    n = next(iter(specs.values())).n
    check_initial_values(model)
    check_private_data(model)
    refuse_private_paths(model)
    reader = _GraphReader(model, specs)
    observed_rvs = sorted(model.observed_RVs, key=lambda rv: rv.name)
    terms = tuple(reader.term(observed) for observed in observed_rvs)
    node_lipschitz = {term.node: term.lipschitz() for term in terms}
    block_lipschitz = {
        rv.name: float(sum(node_lipschitz[t.node] for t in terms if rv.name in t.free_variables))
        for rv in model.free_RVs
    }
    statistics, unavailable = _collect_statistics(terms)
    sensitivity = None if unavailable else float(sum(spec.sensitivity_l1 for spec in statistics))
    return PrivacyAnalysis(
        n_records=n,
        private_data=dict(specs),
        terms=terms,
        node_lipschitz=node_lipschitz,
        record_lipschitz=float(sum(node_lipschitz.values())),
        block_lipschitz=block_lipschitz,
        statistics=statistics,
        sensitivity_l1=sensitivity,
        statistics_unavailable=unavailable,
        clipped=tuple(name for name, spec in specs.items() if spec.out_of_bounds == "clip"),
    )


def _collect_statistics(
    terms: Sequence[LikelihoodTerm],
) -> tuple[tuple[StatisticSpec, ...], dict[str, str]]:
    """Every node's statistics, each released once (shared ones merged by name)."""
    merged: dict[str, StatisticSpec] = {}
    unavailable: dict[str, str] = {}
    for term in terms:
        if term.per_record_constants:
            varying = ", ".join(f"`{name}`" for name in term.per_record_constants)
            unavailable[term.node] = (
                f"`{term.node}` ({term.family.name}): the public parameter(s) {varying} take "
                "a value per record, so the likelihood does not reduce to sums over records; "
                "sample this model on raw data with pmp.PrivateMetropolis, which reads each "
                "record's value, or make the parameter one value shared by all records."
            )
            continue
        try:
            specs = term.family.statistics(term)
        except (UnsupportedModelError, DataBoundsError) as error:
            unavailable[term.node] = str(error)
            continue
        totals = term.totals_statistic()
        for spec in specs if totals is None else (totals, *specs):
            known = merged.get(spec.name)
            if known is None:
                merged[spec.name] = replace(spec, nodes=(term.node,))
                continue
            if (known.kind, known.shape, known.sensitivity_l1) != (
                spec.kind,
                spec.shape,
                spec.sensitivity_l1,
            ):
                raise UnsupportedModelError(
                    f"`{term.node}` and `{known.nodes[0]}` need different statistics named "
                    f"{spec.name} (e.g. a group index with more groups than its own "
                    "likelihood has categories); make them agree."
                )
            if term.node not in known.nodes:
                merged[spec.name] = replace(known, nodes=(*known.nodes, term.node))
    return tuple(merged.values()), unavailable


def interval_of(model: pm.Model, variable: Variable, where: str) -> Interval:
    """An interval holding every value of ``variable`` (a graph of free variables and public
    values, e.g. a prior's parameter) as the free variables range over their supports;
    ``where`` names the graph in refusals."""
    reader = _GraphReader(model, private_data(model))
    reader.node = where
    return reader.bound(variable).interval


def reads_private_data(model: pm.Model | None = None) -> bool:
    """Whether the model reads raw private data: it observes any value (observed values are
    private, :ref:`privacy-model-private-data`), or some `PrivateData` is an ancestor of a
    prior, a Potential or a Deterministic (through its values or through a shape computed from
    them). The graph decides the route (:ref:`privacy-model-graph`): a model that reads raw data
    is sampled by private steps and pays per draw, whatever else it holds (released statistics
    included); one that reads only released statistics is sampled for free."""
    model = pm.modelcontext(model)
    if model.observed_RVs:
        # An observed value is private data (:ref:`privacy-model-private-data`): next to
        # PrivateData it must be declared as such (`analyze` says so), and a privatised model
        # has none of its own.
        return True
    outputs = [
        *model.free_RVs,
        *model.observed_RVs,
        *(model.rvs_to_values[rv] for rv in model.observed_RVs),
        *model.potentials,
        *model.deterministics,
    ]
    # Any `PrivateData`, this model's or another's (a privatised model extended with the raw
    # model's data reads it as much as its own would).
    return any(declaration(variable) is not None for variable in ancestors(outputs))


def refuse_private_paths(model: pm.Model | None = None) -> None:
    """Refuse every way private data can reach a model other than its observed likelihoods.

    The privacy analysis bounds the observed likelihoods only, so private values must not
    reach a Deterministic (released with the draws), a Potential (weighs the posterior
    unaccounted), a prior or a symbolic initial value (where the chains start). Private
    values are those of every `PrivateData` and every observed variable: when PyMC evaluates
    a Deterministic, a Potential or a prior it replaces each observed variable by its
    observed data, so ``pm.Deterministic("s", y.sum())`` with ``y = pm.Bernoulli("y", p,
    observed=y_obs)`` releases the sum of ``y_obs``. Dependence on the shapes of declared
    arrays is allowed (n and the record shape are public); the shape of anything computed
    from private values (``pt.nonzero(x_obs)[0].shape[0]``, a boolean mask) is private
    (`shape_is_public`). `analyze` calls this; so should every mechanism that builds on a model's
    logp without going through `analyze`.

    Parameters
    ----------
    model
        The model (default: the model on the context stack).

    Raises
    ------
    UnsupportedModelError
        Naming the Deterministic, Potential, prior or initial value, the private variable
        it reads, and what to remove.
    """
    model = pm.modelcontext(model)
    own = set(model.data_vars)
    graphs = [*model.basic_RVs, *model.deterministics, *model.potentials]
    graphs += [v for v in model.rvs_to_initial_values.values() if isinstance(v, Variable)]
    for variable in graph_inputs(graphs):
        if variable not in own and declaration(variable) is not None:
            raise UnsupportedModelError(
                f"The model reads PrivateData `{variable.name}` of another model, where neither "
                "its ledger nor this analysis sees it as private (its values would count as "
                "public). Declare it in this model with pmp.PrivateData."
            )
    sources = _private_sources(model)
    doors = [
        *(
            (
                f"The prior of `{rv.name}`",
                list(rv.owner.inputs),
                "a prior must not be computed from the private data. Give "
                f"`{rv.name}` public parameters (constants or other free variables)",
            )
            for rv in model.free_RVs
        ),
        *(
            (
                f"The initial value of `{rv.name}`",
                [initval],
                "the chains would start at a point computed from the private data. Give "
                f"`{rv.name}` a constant initval or none",
            )
            for rv, initval in model.rvs_to_initial_values.items()
            if isinstance(initval, Variable)
        ),
        *(
            (
                f"Deterministic `{variable.name}`",
                [variable],
                "it would be released with the draws outside the analysed likelihood. "
                "Remove it, or compute it from the parameters only",
            )
            for variable in model.deterministics
        ),
        *(
            (
                f"Potential `{variable.name}`",
                [variable],
                "it would weigh the posterior outside the analysed likelihood. Remove it, "
                "or express the data's role as an observed likelihood on PrivateData",
            )
            for variable in model.potentials
        ),
    ]
    for what, outputs, fix in doors:
        touched = _private_value_inputs(outputs, sources)
        if touched:
            raise UnsupportedModelError(f"{what} depends on {touched[0]}: {fix}.")


def check_initial_values(model: pm.Model | None = None) -> None:
    """Refuse numeric initial values (``initval=``) that are not finite or not strictly inside
    the support of their prior (`pymc_private.priors.parameter_support`).

    An initial value is public (the user's choice), but it is where every chain starts. A
    non-finite value, or one on or beyond the boundary of the support (which the sampler's
    transform maps to ±∞), makes PyMC fail when sampling starts, with a message that lists
    the log-density of every variable at that point, the observed ones (computed from the
    private data) included. Checked from the constants alone, before any data is read. A
    symbolic initial value is checked when it is built from constants only; one that reads
    private data is refused by `refuse_private_paths`, and one that reads free variables is
    left to PyMC. `analyze` calls this.

    Interior means: ``lower < value < upper`` elementwise for a continuous variable
    (``lower <= value <= upper`` for a discrete one), every entry above the minimum
    probability and a sum of 1 on a simplex, and a norm below the radius on a ball.

    Parameters
    ----------
    model
        The model (default: the model on the context stack).

    Raises
    ------
    UnsupportedModelError
        Naming the variable, its support and what to change.
    """
    model = pm.modelcontext(model)
    for rv in model.free_RVs:
        initval = model.rvs_to_initial_values.get(rv)
        if initval is None or isinstance(initval, str):
            continue
        if isinstance(initval, Variable):
            if not _only_constants(initval):
                continue
            initval = constant_fold([initval])[0]
        problem = _initial_value_problem(rv, np.asarray(initval, dtype=np.float64))
        if problem is not None:
            raise UnsupportedModelError(
                f"The initial value of `{rv.name}` {problem}: the chains would start outside "
                f"the prior. Give `{rv.name}` an initval strictly inside the support of its "
                "prior, or none (pymc-private's truncated priors start inside their support on "
                "their own)."
            )


def _initial_value_problem(rv: Variable, value: np.ndarray) -> str | None:
    """What is wrong with a constant initial value of ``rv``, or None."""
    if not np.all(np.isfinite(value)):
        return "is not finite (NaN or infinite)"
    try:
        support = parameter_support(rv)
    except UnsupportedModelError:
        return None
    if support is None:
        return None
    shape = support.lower.shape
    try:
        value = np.broadcast_to(value, shape)
    except ValueError:
        return f"has shape {value.shape}, which does not broadcast to the variable's {shape}"
    lower, upper = support.lower, support.upper
    if rv.dtype.startswith(("int", "uint")):
        outside = (value < lower) | (value > upper)
        what = "lies outside the support {} of its prior{}"
    else:
        outside = (value <= lower) | (value >= upper)
        what = (
            "is not strictly inside the support {} of its prior{} (a point on its boundary "
            "is infinite in the sampler's unconstrained space)"
        )
    if outside.any():
        first = tuple(int(i) for i in np.argwhere(outside)[0])
        at = f" at index {first}" if first else ""
        return what.format(f"[{_fmt(lower[first])}, {_fmt(upper[first])}]", at)
    if support.simplex_min_prob is not None and not np.allclose(
        value.sum(axis=-1), 1.0, rtol=0.0, atol=1e-9
    ):
        return "does not sum to 1 along its last axis, the simplex of its prior"
    if support.radius is not None and np.any(np.sqrt(np.sum(value**2, axis=-1)) >= support.radius):
        return f"has a norm of at least the radius {_fmt(support.radius)} of its prior's ball"
    return None


def _private_sources(model: pm.Model) -> dict[Variable, str]:
    """Every variable whose value is private data, with how a message names it: each
    `PrivateData`, each observed variable and each observed value."""
    specs = private_data(model)
    sources = {v: f"PrivateData `{v.name}`" for v in model.data_vars if v.name in specs}
    for rv in model.observed_RVs:
        sources.setdefault(model.rvs_to_values[rv], f"the observed data of `{rv.name}`")
        sources[rv] = f"the observed variable `{rv.name}` (PyMC evaluates it at its observed data)"
    return sources


def _private_value_inputs(
    outputs: Sequence[Variable], sources: Mapping[Variable, str]
) -> list[str]:
    """How ``sources`` names the private variables whose values ``outputs`` depend on,
    directly or through a shape that is not public (`shape_is_public`)."""
    found: list[str] = []
    seen: set = set()
    stack = list(outputs)
    while stack:
        variable = stack.pop()
        if variable in seen:
            continue
        seen.add(variable)
        if variable in sources:
            found.append(sources[variable])
            continue
        owner = variable.owner
        if owner is None:
            continue
        if isinstance(owner.op, Shape | Shape_i) and shape_is_public(owner.inputs[0], sources):
            continue
        stack.extend(owner.inputs)
    return found


def shape_is_public(variable: Variable, declared) -> bool:
    """Whether the shape of ``variable`` is public: it is fixed in its type, or it is a
    declared array (a `PrivateData`, an observed variable or its value: n and the record
    shape are public in bounded DP). The shape of anything computed from private values
    (``nonzero``, a boolean mask, ``unique`` ...) is itself private."""
    if all(length is not None for length in variable.type.shape):
        return True
    return _strip_casts(variable) in declared


@dataclass(frozen=True, eq=False)
class _Bound:
    """What the walker knows about one graph variable."""

    interval: Interval
    free: tuple[str, ...] = ()
    private: tuple[str, ...] = ()
    constant: np.ndarray | None = None
    shape: tuple[int, ...] | None = None
    free_variable: str | None = None
    link: str = "identity"
    group_by: str | None = None
    group_values: np.ndarray | None = None
    covariates: str | None = None
    radius: float | None = None
    prior_family: str | None = None

    def unstructured(self, interval: Interval, *others: _Bound) -> _Bound:
        """A bound with ``interval`` that keeps dependencies but no conjugate structure."""
        bounds = (self, *others)
        return _Bound(
            interval=interval,
            free=_union(b.free for b in bounds),
            private=_union(b.private for b in bounds),
        )


def _union(groups: Iterable[tuple[str, ...]]) -> tuple[str, ...]:
    out: list[str] = []
    for group in groups:
        out.extend(name for name in group if name not in out)
    return tuple(out)


_SUGGESTIONS = {
    "probability": "[a, 1 − a] with 0 < a < 1/2: pmp.TruncatedBeta({name!r}, alpha, beta, "
    "lower=a, upper=1 - a)",
    "simplex": "every entry ≥ a > 0: pmp.TruncatedDirichlet({name!r}, a=..., min_prob=a)",
    "rate": "[c1, c2] with 0 < c1 < c2 < ∞: pmp.TruncatedGamma({name!r}, alpha, beta, "
    "lower=c1, upper=c2)",
    "scale": "[s1, s2] with 0 < s1 < s2 < ∞. The conjugate form, which every route runs "
    "(pmp.PrivateGibbs, pmp.privatize, pmp.PrivateMetropolis), is a precision: "
    "tau = pmp.TruncatedGamma('tau', alpha, beta, lower=1/s2**2, upper=1/s1**2) and "
    "`tau=tau` in the likelihood instead of `sigma=`; the scale itself, "
    "pmp.TruncatedGamma({name!r}, alpha, beta, lower=s1, upper=s2), is not conjugate (use "
    "pmp.PrivateMetropolis, or NUTS after pmp.privatize)",
    "location": "[m1, m2]: pmp.TruncatedNormal({name!r}, mu, sigma, lower=m1, upper=m2)",
    "weights": "the ball ‖w‖₂ ≤ R: pmp.TruncatedMvNormal({name!r}, mu, cov, radius=R)",
}
_EXPONENTIAL_SUGGESTION = (
    "[c1, c2] with 0 < c1 < c2 < ∞: pmp.TruncatedExponential({name!r}, lam, lower=c1, upper=c2)"
)
_PRIOR_ROLES = {
    "beta": "probability",
    "uniform": "probability",
    "dirichlet": "simplex",
    "gamma": "rate",
    "exponential": "rate",
    "inverse_gamma": "scale",
    "halfnormal": "scale",
    "lognormal": "scale",
    "mvnormal": "weights",
}


class _GraphReader:
    """Walks parameter graphs of observed nodes with interval arithmetic."""

    def __init__(self, model: pm.Model, specs: dict[str, PrivateDataSpec]) -> None:
        self.model = model
        self.specs = specs
        self.free = {rv: rv.name for rv in model.free_RVs}
        self.private = _private_sources(model)
        self.observed = {
            rv: _strip_casts(model.rvs_to_values[rv]).name for rv in model.observed_RVs
        }
        self.supports: dict[str, object] = {}
        self.node = ""
        self.n = 0
        self.weights: set[str] = set()  # free variables that weight covariates (X @ w)

    # -- observed nodes ------------------------------------------------------------------

    def term(self, observed: Variable) -> LikelihoodTerm:
        self.node = observed.name
        spec = self._observed_data(observed)
        self.n = spec.n
        op = observed.owner.op
        candidates = [family for family in FAMILIES if isinstance(op, family.rv_op)]
        if isinstance(op, MixtureRV):
            raise UnsupportedModelError(
                f"`{self.node}` is a mixture: its record log-likelihood log Σ_k w_k p_k(x) "
                "has no fixed-size sufficient statistics (so no pay-once route and no "
                "conjugate Gibbs), and the analysis does not bound its L. Sample it with "
                "pmp.PrivateMetropolis(clip=c), which bounds each record's log-likelihood "
                "ratio to ±c and pays 2c/T per step; the chain then targets the clipped "
                "posterior (:ref:`costs-metropolis`)."
            )
        if not candidates:
            raise self._unknown_family(f"a {type(op).__name__} likelihood")
        names = candidates[0].parameters
        inputs = op.dist_params(observed.owner)
        parameters = {
            name: self._parameter(name, expr) for name, expr in zip(names, inputs, strict=True)
        }
        # A constant whose batch axes reach the record axis with more than one entry takes
        # a value per record: sufficient statistics, sums over records, do not hold then.
        data_batch = observed.ndim - op.ndim_supp
        per_record = tuple(
            name
            for (name, param), core in zip(parameters.items(), op.ndims_params, strict=True)
            if param.constant is not None
            and data_batch >= 1
            and np.ndim(param.constant) - core == data_batch
            and np.shape(param.constant)[0] != 1
        )
        family = find_family(op, parameters)
        if family is None:
            raise self._unknown_family(f"this form of {candidates[0].name.split()[0]}")
        support = family.support(parameters)
        domains = self._domains(spec, family, support)
        groups = {p.group_by for p in parameters.values() if p.group_by is not None}
        group_by = n_groups = group_domain = group_values = None
        if len(groups) == 1:
            (group_by,) = groups
            grouped = next(p for p in parameters.values() if p.group_by == group_by)
            n_groups = grouped.shape[0]
            group_values = grouped.group_values
            if group_values is None:
                index = self.specs[group_by]
                group_domain = ElementDomain(float(index.lower), float(index.upper), True)
        linear = [p.covariates for p in parameters.values() if p.covariates is not None]
        covariate_spec = self.specs[linear[0]] if linear else None
        term = LikelihoodTerm(
            node=observed.name,
            family=family,
            data=spec.name,
            record_shape=spec.record_shape,
            domains=domains,
            parameters=parameters,
            n=spec.n,
            group_by=group_by,
            n_groups=n_groups,
            group_domain=group_domain,
            group_values=group_values,
            grid=_grid(spec),
            covariate_grid=None if covariate_spec is None else _grid(covariate_spec),
            per_record_constants=per_record,
        )
        if not math.isfinite(term.lipschitz()):
            raise self._unbounded(term)
        return term

    def _observed_data(self, observed: Variable) -> PrivateDataSpec:
        value = _strip_casts(self.model.rvs_to_values[observed])
        if isinstance(value, SharedVariable) and value.name in self.specs:
            return self.specs[value.name]
        if isinstance(value, Constant):
            what = "a raw array"
        elif isinstance(value, SharedVariable):
            what = f"pm.Data `{value.name}`, which is not PrivateData"
        else:
            what = "a computed expression"
        raise UnsupportedModelError(
            f"`{self.node}` observes {what}. Next to PrivateData every observed array is part "
            f"of the private records: declare it with pmp.PrivateData(name, value, "
            f"bounds=(lower, upper)) and pass that variable itself as `observed=`."
        )

    def _domains(
        self, spec: PrivateDataSpec, family, support: ElementDomain
    ) -> tuple[tuple[ElementDomain, int], ...]:
        if support.integer and not spec.integer:
            raise DataBoundsError(
                f"PrivateData `{spec.name}` is observed by {family.name} `{self.node}`, whose "
                "values are integers, but it has a float dtype: declare it with integer "
                "values (e.g. value.astype(int)) so that its domain is the integers within "
                "its bounds."
            )
        outside = (spec.lower < support.lower) | (spec.upper > support.upper)
        if outside.any():
            column = tuple(int(i) for i in np.argwhere(outside)[0]) if outside.ndim else ()
            where = f" at column {column[0] if len(column) == 1 else column}" if column else ""
            lo = f"{support.lower:g}"
            hi = f"{support.upper:g}" if math.isfinite(support.upper) else "B"
            raise UnboundedSensitivityError(
                f"The declared bounds of PrivateData `{spec.name}`{where} exceed the support "
                f"[{support.lower:g}, {support.upper:g}] of {family.name} `{self.node}`, so "
                f"its log-likelihood is unbounded over the declared domain: declare bounds "
                f"within the support, e.g. bounds=({lo}, {hi})"
                + (" with a finite B you know from public information." if hi == "B" else ".")
            )
        integer = support.integer or spec.integer
        return tuple(
            (ElementDomain(lo, hi, integer), count) for lo, hi, count in spec.element_bounds()
        )

    def _parameter(self, name: str, expression: Variable) -> ParameterTerm:
        bound = self.bound(expression)
        shape = bound.shape
        if shape is None:
            shape = _public_shape(expression)
        return ParameterTerm(
            name=name,
            interval=bound.interval,
            shape=shape,
            free_variables=bound.free,
            varies_with_record=bool(bound.private),
            constant=bound.constant,
            free_variable=bound.free_variable,
            link=bound.link,
            group_by=bound.group_by,
            group_values=bound.group_values,
            covariates=bound.covariates,
            radius=bound.radius,
            prior_family=bound.prior_family,
        )

    # -- errors ------------------------------------------------------------------------

    def _unknown_family(self, what: str) -> UnsupportedModelError:
        supported = "; ".join(family.name for family in FAMILIES)
        return UnsupportedModelError(
            f"`{self.node}` is {what}, which the privacy analysis does not support. Supported "
            f"likelihoods: {supported}."
        )

    def _unbounded(self, term: LikelihoodTerm) -> UnboundedSensitivityError:
        culprits = []
        for name, param in term.parameters.items():
            if param.constant is not None:
                continue
            tame = dict(term.parameters)
            tame[name] = replace(
                param, interval=_interior_point(param.interval), varies_with_record=False
            )
            finite = all(
                math.isfinite(term.family.log_likelihood_range(tame, domain))
                for domain, _ in term.domains
            )
            if finite:
                culprits.append(param)
        if not culprits:
            culprits = [p for p in term.parameters.values() if p.constant is None]
        fixes = []
        for param in culprits:
            for variable in param.free_variables or ():
                fixes.append(self._fix(term, param, variable))
        if not fixes:
            fixes = [f"bound parameter `{p.name}` with a truncated prior" for p in culprits]
        return UnboundedSensitivityError(
            f"The record Lipschitz constant of `{term.node}` ({term.family.name}) is infinite "
            f"over the prior support: " + "; ".join(fixes) + "."
        )

    def _fix(self, term: LikelihoodTerm, param: ParameterTerm, variable: str) -> str:
        support = self.supports.get(variable)
        family = getattr(support, "family", None)
        if param.link == "linear" or family == "mvnormal" or variable in self.weights:
            role = "weights"  # a ball is cheaper than a box: ‖x‖₂R ≤ ‖x‖₁‖w‖∞
        elif param.free_variable == variable:
            role = term.family.roles[param.name]
        else:
            role = _PRIOR_ROLES.get(family, "location")
        template = _SUGGESTIONS[role]
        if role == "rate" and family == "exponential":
            template = _EXPONENTIAL_SUGGESTION
        interval = param.interval
        return (
            f"`{variable}` (prior {family}) lets `{param.name}` range over "
            f"[{interval.lower:g}, {interval.upper:g}]; truncate `{variable}` to "
            + template.format(name=variable)
        )

    # -- interval arithmetic -----------------------------------------------------------

    def bound(self, variable: Variable) -> _Bound:
        if variable in self.free:
            return self._free(variable)
        if variable in self.observed:
            raise self._observed_variable(variable)
        if isinstance(variable, SharedVariable) and variable.name in self.specs:
            raise self._refuse_data(variable)
        if isinstance(variable, SharedVariable) or _only_constants(variable):
            # pm.Data that is not PrivateData is public: read once, as a constant
            # (PrivateMetropolis compiles the value read here, so pm.set_data cannot move it).
            value = _public_array(variable).astype(np.float64)
            return _Bound(
                interval=Interval(float(value.min()), float(value.max())),
                constant=value,
                shape=value.shape,
            )
        owner = variable.owner
        if owner is None:
            raise self._unsupported(f"the input `{variable}`")
        op = owner.op
        if _is_view(op):  # pm.Deterministic: the identity
            return self.bound(owner.inputs[0])
        if isinstance(op, DimShuffle):
            return self._dimshuffle(owner)
        if isinstance(op, AdvancedSubtensor | AdvancedSubtensor1):
            return self._advanced_index(owner)
        if isinstance(op, Subtensor):
            for index in owner.inputs[1:]:
                if self._depends_on_private(index):
                    raise self._unsupported("an index computed from private data")
            base = self.bound(owner.inputs[0])
            return base.unstructured(base.interval)
        if isinstance(op, Dot) or (isinstance(op, Blockwise) and isinstance(op.core_op, Dot)):
            return self._dot(owner)
        if isinstance(op, Elemwise):
            return self._elemwise(owner)
        raise self._unsupported(f"the operation {op}")

    def _depends_on_private(self, index: Variable) -> bool:
        """Whether an index depends on private values (not just on shapes)."""
        return bool(_private_value_inputs([index], self.private))

    def _observed_variable(self, rv: Variable) -> UnsupportedModelError:
        data = self.observed[rv]
        return UnsupportedModelError(
            f"The parameters of `{self.node}` read the observed variable `{rv.name}`, which "
            f"PyMC evaluates at its private data `{data}`: use that PrivateData itself as a "
            f"group index (theta[{data}]) or covariates ({data} @ w), or remove the dependence."
        )

    def _unsupported(self, what: str) -> UnsupportedModelError:
        return UnsupportedModelError(
            f"The privacy analysis cannot bound {what} in the parameters of `{self.node}`. "
            "Parameters may be free variables with bounded priors, constants and public pm.Data, "
            "indexing by a group index (theta[g], g PrivateData or public), a linear predictor "
            "X @ w (X PrivateData or public), and "
            "elementwise arithmetic (+, −, ×, /, powers, exp, log, sigmoid) of those."
        )

    def _refuse_data(self, variable: SharedVariable) -> UnsupportedModelError:
        return UnsupportedModelError(
            f"PrivateData `{variable.name}` enters the parameters of `{self.node}` other "
            f"than as a group index (theta[{variable.name}]) or covariates "
            f"({variable.name} @ w); the privacy analysis cannot bound that use."
        )

    def _free(self, rv: Variable) -> _Bound:
        support = parameter_support(rv)
        if support is None:
            raise UnsupportedModelError(
                f"The privacy analysis cannot read the support of the prior of `{rv.name}` "
                f"(a {type(rv.owner.op).__name__}); use a prior with a readable support, e.g. "
                "pmp.TruncatedBeta, pmp.TruncatedGamma, pmp.TruncatedNormal, "
                "pmp.TruncatedDirichlet or pmp.TruncatedMvNormal."
            )
        self.supports[rv.name] = support
        lower = float(np.min(support.lower)) if support.lower.size else -math.inf
        upper = float(np.max(support.upper)) if support.upper.size else math.inf
        return _Bound(
            interval=Interval(lower, upper),
            free=(rv.name,),
            shape=tuple(support.lower.shape),
            free_variable=rv.name,
            radius=support.radius,
            prior_family=support.family,
        )

    def _dimshuffle(self, node) -> _Bound:
        """Broadcasting on the left keeps a parameter's structure; so does squeezing the
        unit axis of a linear predictor ``X @ w[:, None]``; anything else (a transpose) keeps
        only its interval."""
        base = self.bound(node.inputs[0])
        order = tuple(node.op.new_order)
        kept = tuple(i for i in order if i != "x")
        in_order = kept == tuple(range(len(kept)))
        left_padding = in_order and order[len(order) - len(kept) :] == kept
        if left_padding and len(kept) == node.inputs[0].type.ndim:
            return base
        if in_order and "x" not in order and base.link == "linear":
            return base
        return base.unstructured(base.interval)

    def _private_index(self, variable: Variable) -> PrivateDataSpec | None:
        variable = _strip_casts(variable)
        if isinstance(variable, SharedVariable) and variable.name in self.specs:
            return self.specs[variable.name]
        return None

    def _advanced_index(self, node) -> _Bound:
        """Advanced indexing. A `PrivateData` index makes its array part of the record; when it
        selects rows of a free variable (``theta[y]``, ``theta[y, :]``) the parameter keeps its
        structure, grouped by the index. Every private index, wherever it appears, is checked
        against the public length of the axis it indexes (`_private_indices`)."""
        base = self.bound(node.inputs[0])
        private = self._private_indices(node, base)
        if not private:
            return self._public_groups(node, base) or base.unstructured(base.interval)
        names = _union((spec.name,) for _, spec in private)
        first, *rest = node.inputs[1:]
        rows = (
            len(private) == 1
            and self._private_index(first) is not None
            and all(_is_full_slice(index) for index in rest)
        )
        if rows and base.free_variable is not None and base.shape is not None:
            if base.link == "identity":
                group_by = private[0][1].name
                return replace(base, private=_union((base.private, names)), group_by=group_by)
        return _Bound(interval=base.interval, free=base.free, private=_union((base.private, names)))

    def _public_groups(self, node, base: _Bound) -> _Bound | None:
        """``theta[g]`` with ``g`` a public index, one integer per record (a numpy array, or
        ``pm.Data`` that is not `PrivateData`): the parameter keeps its structure, grouped by
        ``g``, whose values the analysis reads once and keeps (`ParameterTerm.group_values`).
        A public index is not part of the record, so neighbours share it
        (:ref:`privacy-model-public-inputs`). None for any other indexing."""
        first, *rest = node.inputs[1:]
        index = _strip_casts(first)
        if not (isinstance(index, SharedVariable) or _only_constants(index)):
            return None
        values = _public_array(index)
        structured = (
            base.free_variable is not None
            and base.link == "identity"
            and base.group_by is None
            and base.shape
            and all(_is_full_slice(other) for other in rest)
        )
        if not structured or values.dtype.kind not in "iu" or values.shape != (self.n,):
            return None
        groups = base.shape[0]
        if values.size and (values.min() < -groups or values.max() >= groups):
            return None
        values = np.where(values < 0, values + groups, values).astype(np.int64)
        values.setflags(write=False)
        name = index.name if isinstance(index, SharedVariable) else None
        if not name:  # named by its values: two different unnamed indices never merge
            digest = hashlib.blake2b(values.tobytes(), digest_size=4).hexdigest()
            name = f"index of {base.free_variable} #{digest}"
        return replace(base, group_by=name, group_values=values)

    def _private_indices(self, node, base: _Bound) -> list[tuple[int, PrivateDataSpec]]:
        """The `PrivateData` indices of an advanced-indexing node with the axis each indexes,
        after refusing indices computed from private data and checking each private index's
        declared bounds against its axis (`_check_group_index`)."""
        indexed = node.inputs[0]
        private = []
        axis = 0
        for index in node.inputs[1:]:
            if isinstance(index.type, NoneTypeT):
                continue
            spec = self._private_index(index)
            if spec is not None:
                self._check_group_index(spec, indexed, axis, base)
                private.append((axis, spec))
                axis += 1
                continue
            if _strip_casts(index) in self.observed:
                raise self._observed_variable(_strip_casts(index))
            if self._depends_on_private(index):
                raise self._unsupported("an index computed from private data")
            if _is_slice(index):
                axis += 1
                continue
            axis += index.ndim if index.dtype == "bool" else 1
        return private

    def _check_group_index(
        self, spec: PrivateDataSpec, indexed: Variable, axis: int, base: _Bound
    ) -> None:
        """A private index must be one integer per record whose declared bounds lie in
        [0, length − 1] of the axis it indexes: below 0 it would silently read another entry
        (negative indices count from the end), above it fail for some records only. Shapes
        and bounds are public, so this is decided before any value is read."""
        if not spec.integer or spec.record_shape != ():
            raise DataBoundsError(
                f"PrivateData `{spec.name}` indexes a parameter of `{self.node}`: declare it "
                "as one integer per record (a 1-d integer array with bounds (0, G − 1))."
            )
        length = _public_shape(indexed)[axis]
        lower, upper = int(spec.lower), int(spec.upper)
        if 0 <= lower and upper <= length - 1:
            return
        if base.free_variable is not None and base.link == "identity":
            what = f"`{base.free_variable}`"
        elif base.free:
            what = "an expression of " + ", ".join(f"`{name}`" for name in base.free)
        else:
            what = "a constant array"
        fix = (
            f"declare bounds=(0, {length - 1}) (or a narrower public range)"
            if length
            else "the axis is empty, so nothing can be indexed: give it at least one entry"
        )
        raise DataBoundsError(
            f"PrivateData `{spec.name}` indexes axis {axis} (length {length}) of {what} in the "
            f"parameters of `{self.node}`, but its declared bounds [{lower}, {upper}] reach "
            f"outside [0, {length - 1}]: a negative index would silently read another entry "
            f"and one beyond the axis would fail for some records only; {fix}."
        )

    def _dot(self, node) -> _Bound:
        left, right = node.inputs
        while right.owner is not None and isinstance(right.owner.op, DimShuffle):
            order = tuple(right.owner.op.new_order)
            if tuple(i for i in order if i != "x") != tuple(range(right.owner.inputs[0].ndim)):
                break
            right = right.owner.inputs[0]
        weights = self.bound(right)
        self.weights.update(weights.free)
        if weights.private:
            raise self._unsupported("a product whose right factor depends on private data")
        spec = self._private_index(left)
        w_abs = max(abs(weights.interval.lower), abs(weights.interval.upper))
        radius = _vector_radius(weights, right)
        if spec is not None:
            if len(spec.record_shape) != 1:
                raise self._unsupported(f"a product with PrivateData `{spec.name}` of rank > 2")
            b_abs = np.maximum(np.abs(spec.lower), np.abs(spec.upper))
            box = float(np.sum(b_abs)) * w_abs if w_abs > 0 else 0.0
            limit = box
            if radius is not None:
                limit = min(box, spec.l2_bound() * radius)
            plain = (
                weights.free_variable is not None
                and weights.group_by is None
                and weights.link == "identity"
            )
            return _Bound(
                interval=Interval(-limit, limit),
                free=weights.free,
                private=(spec.name,),
                shape=weights.shape,
                free_variable=weights.free_variable if plain else None,
                link="linear",
                covariates=spec.name,
                radius=weights.radius,
                prior_family=weights.prior_family,
            )
        design = self.bound(left)
        if design.constant is None:
            raise self._unsupported("a matrix product whose left factor is not PrivateData")
        rows = np.abs(design.constant)
        box = float(np.max(rows.sum(axis=-1))) * w_abs if w_abs > 0 else 0.0
        limit = box
        if radius is not None:
            limit = min(box, float(np.max(np.sqrt((rows**2).sum(axis=-1)))) * radius)
        return weights.unstructured(Interval(-limit, limit))

    def _elemwise(self, node) -> _Bound:
        scalar = node.op.scalar_op
        inputs = [self.bound(i) for i in node.inputs]
        first = inputs[0]
        if isinstance(scalar, ps.Cast | ps.Identity):
            return first
        if isinstance(scalar, ps.Reciprocal):
            return self._link(first, _reciprocal(first.interval), "identity", "reciprocal")
        if isinstance(scalar, ps.TrueDiv):
            numerator, denominator = inputs
            interval = _mul(numerator.interval, _reciprocal(denominator.interval))
            if _is_point(numerator, 1.0):
                return self._link(denominator, interval, "identity", "reciprocal")
            return first.unstructured(interval, *inputs[1:])
        if isinstance(scalar, ps.Pow):
            base, exponent = inputs
            if exponent.constant is None or np.unique(exponent.constant).size != 1:
                raise self._unsupported("a power with a non-constant exponent")
            c = float(exponent.constant.ravel()[0])
            interval = _pow(base.interval, c)
            if interval is None:
                raise self._unsupported("a fractional power of a possibly negative value")
            links = {-1.0: "reciprocal", -0.5: "inverse_sqrt"}
            if c in links:
                return self._link(base, interval, "identity", links[c])
            return base.unstructured(interval)
        if isinstance(scalar, ps.Abs):
            interval = _abs(first.interval)
            if first.interval.lower >= 0:
                return first
            return first.unstructured(interval)
        if isinstance(scalar, ps.Mul):
            interval = inputs[0].interval
            for other in inputs[1:]:
                interval = _mul(interval, other.interval)
            rest = [b for b in inputs if not (b.interval.lower == b.interval.upper == 1.0)]
            if len(rest) == 1 and rest[0].constant is None:
                return replace(
                    rest[0],
                    interval=interval,
                    free=_union(b.free for b in inputs),
                    private=_union(b.private for b in inputs),
                )
            return first.unstructured(interval, *inputs[1:])
        interval = self._elementwise_interval(scalar, [b.interval for b in inputs])
        return first.unstructured(interval, *inputs[1:])

    def _link(self, base: _Bound, interval: Interval, before: str, after: str) -> _Bound:
        if base.free_variable is not None and base.link == before:
            return replace(base, interval=interval, link=after)
        return base.unstructured(interval)

    def _elementwise_interval(self, scalar, intervals: list[Interval]) -> Interval:
        if isinstance(scalar, ps.Add):
            return Interval(sum(i.lower for i in intervals), sum(i.upper for i in intervals))
        if isinstance(scalar, ps.Sub):
            a, b = intervals
            return Interval(a.lower - b.upper, a.upper - b.lower)
        if isinstance(scalar, ps.Neg):
            (a,) = intervals
            return Interval(-a.upper, -a.lower)
        if isinstance(scalar, ps.Sign):
            (a,) = intervals
            return Interval(float(np.sign(a.lower)), float(np.sign(a.upper)))
        if isinstance(scalar, ps.Maximum | ps.Minimum):
            pick = max if isinstance(scalar, ps.Maximum) else min
            return Interval(pick(i.lower for i in intervals), pick(i.upper for i in intervals))
        increasing = {
            ps.Exp: np.exp,
            ps.Log: np.log,
            ps.Log1p: np.log1p,
            ps.Expm1: np.expm1,
            ps.Sqrt: np.sqrt,
            ps.Tanh: np.tanh,
            psm.Sigmoid: lambda x: 1.0 / (1.0 + np.exp(-x)),
            psm.Softplus: lambda x: np.logaddexp(0.0, x),
        }
        for kind, function in increasing.items():
            if isinstance(scalar, kind):
                (a,) = intervals
                domain_low = {ps.Log: 0.0, ps.Sqrt: 0.0, ps.Log1p: -1.0}.get(kind, -math.inf)
                if a.lower < domain_low:
                    raise self._unsupported(f"{scalar} of a value that may leave its domain")
                with np.errstate(divide="ignore", over="ignore"):
                    return Interval(float(function(a.lower)), float(function(a.upper)))
        raise self._unsupported(f"the operation {scalar}")


def _grid(spec: PrivateDataSpec) -> DataGrid:
    """The public grid of a `PrivateData` array (`pymc_private.families.data_grid`)."""
    return data_grid(spec.lower, spec.upper, spec.n, integer=spec.integer)


def _vector_radius(weights: _Bound, right: Variable) -> float | None:
    """R for the Cauchy–Schwarz bound |xᵀw| ≤ ‖x‖₂·R of a product ``x @ right``, or None
    when only the elementwise box bound applies.

    A norm-ball prior (``pmp.TruncatedMvNormal(radius=R)``) bounds the norm of each vector
    along its last axis. The product contracts x with the whole of ``right`` only when
    ``right`` is one such vector, the free variable itself: for weights W of shape (d, k)
    every row has ‖W[i]‖₂ ≤ R, but ``X @ W`` sums down the columns, whose norm reaches R·√d;
    a transformed vector (``1 / w``) is not in the ball at all.
    """
    single = weights.shape is not None and len(weights.shape) == 1 and right.ndim == 1
    if single and weights.free_variable is not None and weights.link == "identity":
        return weights.radius
    return None


def _interior_point(interval: Interval) -> Interval:
    """A finite point of an interval, used to test whether a parameter makes L infinite."""
    low, high = interval.lower, interval.upper
    if math.isfinite(low) and math.isfinite(high):
        point = 0.5 * (low + high)
    elif math.isfinite(low):
        point = low + 1.0
    elif math.isfinite(high):
        point = high - 1.0
    else:
        point = 0.0
    return Interval(point, point)


def _is_point(bound: _Bound, value: float) -> bool:
    return bound.interval.lower == bound.interval.upper == value and not bound.free


def _is_cast(op) -> bool:
    return _is_view(op) or (
        isinstance(op, Elemwise) and isinstance(op.scalar_op, ps.Cast | ps.Identity)
    )


def _is_view(op) -> bool:
    """The identity a `pm.Deterministic` wraps its expression in."""
    return isinstance(op, ViewOp)


def _strip_casts(variable: Variable) -> Variable:
    while variable.owner is not None and _is_cast(variable.owner.op):
        variable = variable.owner.inputs[0]
    return variable


def _is_slice(variable: Variable) -> bool:
    return type(variable.type).__name__ == "SliceType"


def _is_full_slice(variable: Variable) -> bool:
    if not _is_slice(variable):
        return False
    if isinstance(variable, Constant):
        value = variable.data
        return value.start is None and value.stop is None and value.step is None
    owner = variable.owner
    return owner is not None and all(isinstance(i.type, NoneTypeT) for i in owner.inputs)


def _public_array(variable: Variable) -> np.ndarray:
    """The value of a public input of a parameter graph (a graph of constants, or a shared
    variable that is not `PrivateData`: ``pm.Data``), in its own dtype, a copy."""
    if isinstance(variable, SharedVariable):
        return np.asarray(variable.get_value())
    return np.asarray(constant_fold([variable])[0])


def _only_constants(variable: Variable) -> bool:
    return all(isinstance(i, Constant) for i in graph_inputs([variable]))


def _public_shape(variable: Variable) -> tuple[int, ...]:
    """A variable's shape from static types, constants and shared dimension lengths (shapes
    are public: n is public in bounded DP)."""
    if all(length is not None for length in variable.type.shape):
        return tuple(int(length) for length in variable.type.shape)
    [folded] = constant_fold([variable.shape], raise_not_constant=False)
    if isinstance(folded, Variable):
        shared = {
            v: pt.constant(v.get_value())
            for v in graph_inputs([folded])
            if isinstance(v, SharedVariable)
        }
        [folded] = constant_fold([graph_replace(folded, shared)], raise_not_constant=False)
    if isinstance(folded, Variable):
        raise UnsupportedModelError(
            f"The shape of `{variable}` is not fixed by constants or model dimensions; give "
            "the parameters a fixed `shape` or `dims`."
        )
    return tuple(int(length) for length in np.asarray(folded))


def _mul(a: Interval, b: Interval) -> Interval:
    products = []
    for x in (a.lower, a.upper):
        for y in (b.lower, b.upper):
            products.append(0.0 if x == 0.0 or y == 0.0 else x * y)
    return Interval(min(products), max(products))


def _reciprocal(a: Interval) -> Interval:
    if a.lower > 0 or a.upper < 0:
        return Interval(1.0 / a.upper, 1.0 / a.lower)
    if a.lower == 0 and a.upper > 0:
        return Interval(1.0 / a.upper, math.inf)
    if a.upper == 0 and a.lower < 0:
        return Interval(-math.inf, 1.0 / a.lower)
    return Interval(-math.inf, math.inf)


def _abs(a: Interval) -> Interval:
    if a.lower >= 0:
        return a
    if a.upper <= 0:
        return Interval(-a.upper, -a.lower)
    return Interval(0.0, max(-a.lower, a.upper))


def _pow(a: Interval, c: float) -> Interval | None:
    """[a]^c, or None when it is undefined (a fractional power of a negative number)."""

    def power(x: float) -> float:
        if x == 0.0:
            return math.inf if c < 0 else (1.0 if c == 0 else 0.0)
        if math.isinf(x):
            return 0.0 if c < 0 else (math.inf if x > 0 or c % 2 == 0 else -math.inf)
        return x**c

    if a.lower >= 0:
        values = [power(a.lower), power(a.upper)]
        return Interval(min(values), max(values))
    if c != int(c):
        return None
    if c < 0 and a.lower <= 0 <= a.upper:
        return Interval(-math.inf, math.inf)
    values = [power(a.lower), power(a.upper)]
    if a.lower < 0 < a.upper and c > 0:
        values.append(0.0)
    return Interval(min(values), max(values))
