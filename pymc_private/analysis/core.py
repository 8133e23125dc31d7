"""The privacy analysis of a PyMC model: L per node and per block, Δ₁, the ε of each route.

`analyze` walks the graph from every observed node on `PrivateData` to the free variables in
its parameters (`pymc_private.analysis.terms`, on the interval walker of
`pymc_private.analysis.intervals`), reads the prior supports
(`pymc_private.priors.support.parameter_support`) and the declared data domains
(`pymc_private.data.declaration.private_data`), and hands each node to its likelihood family
(`pymc_private.families.univariate`). Its numbers read public quantities only: bounds, supports,
shapes,
constants and n. Two models that differ only in their data give identical analyses, so the
analysis (and a budget check built on it) can run before any data is touched and leaks
nothing. Before reading the graph it re-validates the data the model holds now against its
declarations (`pymc_private.data.declaration.check_private_data`, the checks of `PrivateData`
again, since
``pm.set_data`` can replace a value after it was declared), and it refuses private data, or an
observed variable, reaching anything but the observed likelihoods
(`pymc_private.analysis.leak_guard.refuse_private_paths`).
"""

from __future__ import annotations

import functools
import html
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pymc as pm

from pymc_private.analysis.leak_guard import check_initial_values, refuse_private_paths
from pymc_private.analysis.record_likelihood import clipped_route_note
from pymc_private.analysis.routes import RouteCost, route_costs
from pymc_private.analysis.terms import TermReader
from pymc_private.data.declaration import PrivateDataSpec, check_private_data, private_data
from pymc_private.dp.events import subsampled_gaussian_epsilon
from pymc_private.errors import (
    DataBoundsError,
    InvalidPrivacyParameterError,
    UnboundedSensitivityError,
    UnsupportedModelError,
)
from pymc_private.families.likelihood import LikelihoodTerm
from pymc_private.families.statistics import StatisticSpec, complete_statistic

__all__ = ["PrivacyAnalysis", "analyze", "declared_analysis", "term_statistics", "term_totals"]


@functools.cache
def _subsampled_note() -> str:
    """The routes table's footer: a subsampled chain's cost depends on σT/c and its length,
    not on L, with one example computed (the RDP bound of 3000 events (q, z = σqT/c) at
    q = 0.05, σT/c = 320)."""
    example = subsampled_gaussian_epsilon(0.05, 0.05 * 320.0, 1e-6, count=3000)
    return (
        "metropolis with clip=c, sampling_rate=q, noise_scale=σ is charged by its length, all "
        f"chains' steps together, not by L: its ε depends on σT/c and the length (σT/c = 320, "
        f"q = 0.05: ε ≤ {example:.2f} for 3000 steps in all at δ = 1e-6); "
        "pmp.PrivateMetropolis.chain_epsilon(steps, clip=c, "
        "sampling_rate=q, noise_scale=σ) gives any setting's before the data"
    )


def _terms(reader: TermReader, observed_rvs) -> tuple:
    """Every observed node's term; where several nodes are unbounded over the prior support,
    one refusal names every prior to truncate (a fix for the first alone would only lead to
    the next refusal)."""
    terms, unbounded = [], []
    for observed in observed_rvs:
        try:
            terms.append(reader.term(observed))
        except UnboundedSensitivityError as refusal:
            unbounded.append(refusal)
    if len(unbounded) == 1:
        raise unbounded[0]
    if unbounded:
        raise UnboundedSensitivityError(" ".join(str(refusal) for refusal in unbounded))
    return tuple(terms)


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
        return tuple(cost.name for cost in route_costs() if cost.unavailable(self) is None)

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

        Each route states its cost beside the code that runs it
        (`pymc_private.analysis.routes.RouteCost`), in exact arithmetic, before the steps'
        floating-point allowances:

        - ``"posterior_sampling"``: ε = 2L/T, L = ``record_lipschitz``
          (`pymc_private.sampling.posterior`).
        - ``"gibbs"``: ε = Σ_j 2L_j/T (`PrivateGibbs.cost`). ``blocks`` lists the blocks
          (names or variables); default: one block per free variable.
        - ``"metropolis"``: ε = 2L/T (`pymc_private.steps.metropolis`).
        - ``"privatize"``: 0 per draw. The whole cost is the ε of the single release of the
          privatised statistics (Laplace noise of scale Δ₁/ε); every draw after it is
          post-processing.
        """
        cost = self._route(route)
        if not (
            isinstance(temperature, int | float)
            and math.isfinite(temperature)
            and temperature >= 1.0
        ):
            raise InvalidPrivacyParameterError(
                f"temperature must be a finite number >= 1, got {temperature!r}."
            )
        why = cost.unavailable(self)
        if why is not None:
            raise UnsupportedModelError(f"The {cost.name} route is not available: {why}")
        return cost.epsilon(self, temperature, blocks)

    @staticmethod
    def _route(route: str) -> type[RouteCost]:
        costs = {cost.name: cost for cost in route_costs()}
        if route not in costs:
            raise UnsupportedModelError(f"Unknown route {route!r}; routes: {', '.join(costs)}.")
        return costs[route]

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
                    "kind": s.kind.name,
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
            stats_footer = (
                f"Δ₁ over one record = {_fmt(self.sensitivity_l1)}; the posterior sd a release "
                "at ε gives, before any data: pmp.plan(model, epsilon)"
            )
        stats = [
            [s.name, s.kind.name, str(s.shape), _fmt(s.unit), _fmt(s.sensitivity_l1)]
            for s in self.statistics
        ]
        routes = [
            [cost.name, cost.formula, _fmt(self.epsilon_per_draw(cost.name)), cost.source]
            for cost in route_costs()
            if cost.unavailable(self) is None
        ]
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
            (
                "ε per draw at T = 1",
                ["route", "formula", "ε", "source"],
                routes,
                # Per-draw chains on a subsample matter where nothing pays once.
                _subsampled_note() if self.sensitivity_l1 is None else "",
            ),
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
        When ``pmp.PrivateMetropolis(clip=c)`` runs the model all the same, the message says
        so with its cost per step (`pymc_private.analysis.record_likelihood.clipped_route_note`).
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
        longer fits its declaration (`pymc_private.data.declaration.check_private_data`, which also
        clips in place the data declared with ``out_of_bounds="clip"``); float private data
        observed by a discrete family whose bounds or values are not all integers
        (`pymc_private.data.declaration.check_integer_values`, naming the row, never the value); a
        group
        index whose declared bounds exceed the indexed axis.
    """
    return _analysis(pm.modelcontext(model), read_values=True)


def declared_analysis(model: pm.Model) -> PrivacyAnalysis:
    """`analyze` from the declarations alone: no value of any `PrivateData` is read, so
    nothing about the values is checked either (the release that follows checks them:
    `pmp.privatize` runs `analyze`). Float data observed by a family of integer values is
    taken at its word. `pmp.plan` answers from this."""
    return _analysis(model, read_values=False)


def _analysis(model: pm.Model, *, read_values: bool) -> PrivacyAnalysis:
    specs = private_data(model)
    if not specs:
        raise UnsupportedModelError(
            "The model has no PrivateData: declare the sensitive arrays with "
            "pmp.PrivateData(name, value, bounds=(lower, upper)) and observe those; there is "
            "nothing to analyse otherwise."
        )
    n = next(iter(specs.values())).n
    check_initial_values(model)
    if read_values:
        check_private_data(model)
    refuse_private_paths(model)
    reader = TermReader(model, specs, read_values=read_values)
    observed_rvs = sorted(model.observed_RVs, key=lambda rv: rv.name)
    try:
        terms = _terms(reader, observed_rvs)
    except UnsupportedModelError as refusal:
        note = clipped_route_note(model)
        if not note:
            raise
        raise UnsupportedModelError(f"{refusal} {note}") from None
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


def term_statistics(
    analysis: PrivacyAnalysis, statistics: dict[str, np.ndarray], node: str
) -> tuple[dict[str, np.ndarray], Any]:
    """The full statistics of one observed node, by kind, and its totals.

    ``statistics`` holds released-form statistics by name (privatised, or computed from raw
    data by a pay-per-draw sampler). Totals are n, or the group sizes n_g of a grouped node
    completed from the released group counts. Post-processing only.
    """
    term = analysis.term(node)
    totals = term_totals(term, statistics)
    full = {
        kind: complete_statistic(spec, statistics[spec.name], totals)
        for kind, spec in analysis.statistics_of(node).items()
    }
    return full, totals


def term_totals(term, statistics: dict[str, np.ndarray]) -> Any:
    """The records behind each cell of ``term``'s statistics: n, a public index's group
    sizes, or a private index's sizes completed from their released-form counts."""
    totals_spec = term.totals_statistic()
    if totals_spec is None:
        return term.public_totals()
    return complete_statistic(totals_spec, statistics[totals_spec.name], term.n)
