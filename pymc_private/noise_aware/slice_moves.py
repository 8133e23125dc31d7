"""Elliptical slice sampling of the parameters of released sums and of hyperparameters, on
the closed-form noise-aware likelihood (`pymc_private.noise_aware.likelihood`), every chain at
once: the
moves of `pymc_private.noise_aware.sampler` for Normal, Exponential and regression statistics.

Scalar variables of one node (a Normal's μ and τ) or hyperparameters of one child move jointly,
entry by entry, on the real line (`to_line`: the logit of their share of a bounded support, the
log of the distance to one bound), against a reference Gaussian per entry (Murray, Adams &
MacKay 2010: the reference plays the prior, π divided by it the likelihood, so any reference
leaves π invariant); a weight vector moves against its prior first. References start wide (a
slice narrower than the target crawls) and are refitted to the tuning draws, never narrowed by
more than half at a time.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from pytensor.tensor.elemwise import DimShuffle
from scipy import linalg, special

from pymc_private.analysis.core import PrivacyAnalysis
from pymc_private.errors import UnsupportedModelError
from pymc_private.families.statistics import reduce_to_entries
from pymc_private.noise_aware.likelihood import cell_log_likelihood, term_observations
from pymc_private.priors.density import evaluate, log_density, mvnormal_log_density, prior_spread
from pymc_private.priors.support import ParameterSupport

__all__ = [
    "Carried",
    "SliceBlock",
    "SliceMoves",
    "SumsVariable",
    "from_line",
    "slice_blocks",
    "start_reference",
    "to_line",
]

# The reference Gaussian's spread over the tuning draws' (inflated a little, which keeps the
# slice's likelihood ratio tame in the tails), how often it is refitted while tuning, and the
# most shrinkages of one bracket (by then it is a point: the current one).
_INFLATION = 1.2
_REFIT = 25
_MAX_SHRINKS = 200


@dataclass(frozen=True, eq=False)
class SumsVariable:
    """A free variable of released sums, or a hyperparameter: its ``support``, whether its
    entries move as one ``vector`` (a weight vector's MvNormal; the varying ``intercepts``
    alpha[g] of a regression, a scalar prior per entry, each entry on the real line), the
    graphs of its prior's parameters that depend on other variables (``hyper``), the
    ``terms`` it enters (node, parameter name) and the variables whose prior it
    parameterises (``children``)."""

    name: str
    support: ParameterSupport
    vector: bool
    hyper: Mapping = field(default_factory=dict)
    terms: tuple = ()
    children: tuple[str, ...] = ()

    @property
    def intercepts(self) -> bool:
        """Whether its entries move as one vector with a scalar prior each (varying
        intercepts), not an MvNormal."""
        return self.vector and self.support.family != "mvnormal"


@dataclass(frozen=True)
class Carried:
    """Varying intercepts ``child`` with a Normal prior whose location and scale (``mu`` and
    ``sigma``) are hyperparameters of a scalar block, at least one of them a member: the
    block's non-centred update carries them along (`SliceMoves._carried_move`)."""

    child: str


@dataclass(eq=False)
class SliceBlock:
    """Variables moved together by elliptical slice sampling on the closed-form target,
    entry by entry: scalar ``members`` of equal shapes that share a likelihood term or a
    child (a Normal's mean and precision; a hierarchy's hyperparameters), stacked on a last
    axis, or one weight vector. The reference Gaussian per entry: ``centre`` and ``spread``
    (a lower Cholesky factor), refitted to the ``history`` of tuning draws."""

    members: tuple[str, ...]
    vector: bool
    carried: tuple[Carried, ...] = ()
    centre: np.ndarray | None = None
    spread: np.ndarray | None = None
    history: list = field(default_factory=list)


class SliceMoves:
    """The slice moves of `pymc_private.noise_aware.chain.AugmentedChain` (a mixin: it reads
    the chain's ``plan``, ``values``, ``chains``, ``rng`` and ``totals``)."""

    def _sums_log_likelihood(self, node: str, values=None, totals=None) -> np.ndarray:
        """log p(s̃ | θ) of a sums node per chain (its cells summed)."""
        cells = self._sums_cells(node, values, totals)
        return cells.reshape(self.chains, -1).sum(axis=1)

    def _sums_cells(self, node: str, values=None, totals=None) -> np.ndarray:
        term, specs, full = self.plan.sums[node]
        values = self.values if values is None else values
        count = self.totals(term) if totals is None else totals
        observations = term_observations(
            term, specs, self.plan.laws, term.parameters_at(values), full, count, {}
        )
        cells = sum(cell_log_likelihood(o) for o in observations)
        return np.broadcast_to(cells, (self.chains, *np.shape(cells)[1:]))

    def _block_target(self, block: SliceBlock, values) -> np.ndarray:
        """log prior + likelihood at ``values`` of ``block``'s entries (per chain and entry):
        its members' priors, their children's (each once, summed), and each likelihood term a
        member enters (once, read per entry)."""
        variables = self.plan.variables
        if block.vector:  # one prior per chain (varying intercepts: one per entry, summed)
            total = sum(
                self._prior(variables[name], values).reshape(self.chains, -1).sum(axis=1)
                for name in block.members
            )
        else:
            total = sum(self._prior(variables[name], values) for name in block.members)
        children = {child for name in block.members for child in variables[name].children}
        for child in sorted(children):
            prior = self._prior(variables[child], values).reshape(self.chains, -1).sum(axis=1)
            total = total + prior.reshape((self.chains,) + (1,) * (total.ndim - 1))
        seen = set()
        for name in block.members:
            for node, parameter in variables[name].terms:
                if node in seen:
                    continue
                seen.add(node)
                cells = self._sums_cells(node, values)
                if block.vector:
                    total = total + cells.reshape(self.chains, -1).sum(axis=1)
                else:
                    term = self.plan.sums[node][0]
                    total = total + reduce_to_entries(cells, term.parameters[parameter], batch=1)
        return total

    def _prior(self, variable: SumsVariable, values) -> np.ndarray:
        support, value = variable.support, values[variable.name]
        if variable.vector and not variable.intercepts:
            params = support.params
            precision = np.linalg.inv(np.asarray(params["cov"], dtype=np.float64))
            return mvnormal_log_density(params["mu"], precision, support.radius, value)
        params = dict(support.params)
        for key, graph in variable.hyper.items():
            params[key] = evaluate(graph, values, 1)
            if params[key] is None:
                raise UnsupportedModelError(f"the prior of {variable.name} is not readable")
        return log_density(
            support.family,
            params,
            support.lower,
            support.upper,
            value,
            normalised=bool(variable.hyper),
        )

    def _joined(self, block: SliceBlock, values) -> np.ndarray:
        """The block's members as one array, the members (or a vector block's entries, its
        members' side by side) last, each scalar member and each varying intercept on the
        real line (`to_line`: skewed posteriors of precisions and probabilities are closer to
        Gaussian there)."""
        variables = self.plan.variables
        lines = []
        for name in block.members:
            variable, value = variables[name], values[name]
            if block.vector and not variable.intercepts:
                lines.append(value)
            else:
                lines.append(to_line(value, variable.support.lower, variable.support.upper)[0])
        return np.concatenate(lines, axis=-1) if block.vector else np.stack(lines, axis=-1)

    def _split(self, block: SliceBlock, joined: np.ndarray):
        """The members back from `_joined`, and the log Jacobian of the map, per entry."""
        variables, members, jacobian = self.plan.variables, {}, 0.0
        start = 0
        for k, name in enumerate(block.members):
            variable = variables[name]
            if block.vector:
                size = self.values[name].shape[-1]
                line, start = joined[..., start : start + size], start + size
                if not variable.intercepts:
                    members[name] = line
                    continue
            else:
                line = joined[..., k]
            support = variable.support
            members[name], log_jacobian = from_line(line, support.lower, support.upper)
            if block.vector:
                log_jacobian = log_jacobian.sum(axis=-1)
            jacobian = jacobian + log_jacobian
        return members, jacobian

    def _slice(self, block: SliceBlock, iteration: int | None, tune: int) -> None:
        """One elliptical slice sampling update of every entry of ``block`` (Murray, Adams &
        MacKay 2010), with the reference Gaussian N(c, Σ) of the entry as its "prior" and
        π(θ)/N(θ; c, Σ) as its "likelihood": the update leaves π invariant whatever the
        reference, and moves every time (the bracket shrinks until a point is accepted). The
        entries of a block have their own slices: they touch disjoint cells. Then, for
        hyperparameters that are the location and scale of varying intercepts, the same
        update with the intercepts carried along (`_carried_level`)."""
        result = self._elliptical(block, self._slice_level)
        self.values.update(self._split(block, result)[0])
        for carried in block.carried:
            self._carried_move(block, carried)
        if iteration is None:
            return
        if iteration >= _REFIT:
            block.history.append(result)
        refit = (iteration >= 2 * _REFIT and iteration % _REFIT == 0) or iteration == tune - 1
        if refit and len(block.history) >= 2:
            history = np.stack(block.history)
            fit_reference(block, history[len(history) // 2 :])
        if iteration == tune - 1:
            block.history = []

    def _elliptical(self, block: SliceBlock, level_of) -> np.ndarray:
        """The new joined values of one elliptical slice update of ``block`` whose target
        (less the reference's log density) is ``level_of(block, joined)``."""
        rng = self.rng
        current = self._joined(block, self.values)
        entries = current.shape[:-1]
        offset = current - block.centre
        direction = np.einsum("...ij,...j->...i", block.spread, rng.standard_normal(current.shape))
        height = level_of(block, current) + np.log(rng.random(entries))
        angle = rng.uniform(0.0, 2.0 * np.pi, entries)
        low, high = angle - 2.0 * np.pi, angle.copy()
        result, pending = current.copy(), np.ones(entries, dtype=bool)
        for _ in range(_MAX_SHRINKS):
            turn = angle[..., None]
            proposal = block.centre + offset * np.cos(turn) + direction * np.sin(turn)
            level = level_of(block, proposal)
            accepted = pending & (level > height)
            result = np.where(accepted[..., None], proposal, result)
            pending &= ~accepted
            if not pending.any():
                break
            low = np.where(pending & (angle < 0.0), angle, low)
            high = np.where(pending & (angle >= 0.0), angle, high)
            angle = rng.uniform(low, high)
        return result

    def _slice_level(self, block: SliceBlock, joined) -> np.ndarray:
        """log π − log N(·; c, Σ) of the block's entries at ``joined`` (the target on the
        transformed scale: its Jacobian included)."""
        members, jacobian = self._split(block, joined)
        with np.errstate(all="ignore"):  # outside the support: −inf, or NaN, read as −inf
            level = self._block_target(block, {**self.values, **members}) + jacobian
        return self._less_reference(block, joined, level)

    def _less_reference(self, block: SliceBlock, joined, level) -> np.ndarray:
        offset = (joined - block.centre)[..., None]
        spread = np.broadcast_to(block.spread, offset.shape[:-1] + offset.shape[-2:-1])
        whitened = np.linalg.solve(spread, offset)
        reference = -0.5 * (whitened[..., 0] ** 2).sum(axis=-1)
        level = level - reference
        return np.where(np.isnan(level), -np.inf, level)

    def _carried_move(self, block: SliceBlock, carried: Carried) -> None:
        """The non-centred update of a hierarchy (Papaspiliopoulos, Roberts & Sköld 2007):
        the location m and scale s of a Normal child α (varying intercepts, group means)
        move with z = (α − m)/s held, α = m + s·z following them. In the coordinates
        (m, s, z, the rest) the posterior's density is π(m, s, m + s·z, …)·s^G (G the
        child's entries), so an elliptical slice update of (m, s) on that density given z
        leaves π invariant; it moves along the funnel that the centred update crawls."""
        child = self.plan.variables[carried.child]
        location, scale = self._location_scale(carried, self.values)
        z = (self.values[child.name] - location) / scale
        level_of = functools.partial(self._carried_level, carried=carried, z=z)
        result = self._elliptical(block, level_of)
        members = self._split(block, result)[0]
        self.values.update(members)
        location, scale = self._location_scale(carried, self.values)
        self.values[child.name] = location + scale * z

    def _location_scale(self, carried: Carried, values) -> tuple[np.ndarray, np.ndarray]:
        """The child's location and scale at ``values``, shaped against its entries."""
        graphs = self.plan.variables[carried.child].hyper
        shape = (self.chains,) + (1,) * (self.values[carried.child].ndim - 1)
        location = np.reshape(evaluate(graphs["mu"], values, 1), shape)
        return location, np.reshape(evaluate(graphs["sigma"], values, 1), shape)

    def _carried_level(self, block: SliceBlock, joined, carried: Carried, z) -> np.ndarray:
        """log π(m, s, m + s·z, …) + G·log s − log N(·; c, Σ) at ``joined`` (m, s among the
        block's members), with the Jacobian of the block's map to the line."""
        members, jacobian = self._split(block, joined)
        values = {**self.values, **members}
        with np.errstate(all="ignore"):
            location, scale = self._location_scale(carried, values)
            values[carried.child] = location + scale * z
            level = self._block_target(block, values) + jacobian
            entries = z[0].size
            level = level + entries * np.log(scale.reshape(self.chains))
            for node in sorted({node for node, _ in self.plan.variables[carried.child].terms}):
                level = level + self._sums_cells(node, values).reshape(self.chains, -1).sum(axis=1)
        return self._less_reference(block, joined, level)


# -- helpers ---------------------------------------------------------------------------


def slice_blocks(analysis: PrivacyAnalysis, variables: Mapping[str, SumsVariable]):
    """The variables of released sums grouped into slice blocks: a weight vector with the
    varying intercepts of its regression when their prior is fixed (moved jointly: they are
    correlated through the covariates' group means; under a hyperprior the intercepts move
    alone, their reference closer to their conditional, and with their hyperparameters,
    `Carried`), or alone; scalar variables of equal shapes joined when they are
    parameters of one node with equal shapes and grouping (a Normal's μ and τ), or
    hyperparameters of one child."""
    parent = {name: name for name in variables}

    def root(name):
        while parent[name] != name:
            name = parent[name]
        return name

    def join(first, second):
        if variables[first].vector != variables[second].vector:
            return
        if not variables[first].vector and (
            variables[first].support.lower.shape != variables[second].support.lower.shape
        ):
            return
        parent[root(first)] = root(second)

    for term in analysis.terms:
        inside = [
            (p.free_variable, (p.shape, p.group_by))
            for p in term.parameters.values()
            if p.free_variable in variables
        ]
        for (first, key), (second, other) in itertools.pairwise(inside):
            if key == other and not variables[first].vector:
                join(first, second)
        for p in term.parameters.values():
            intercepts = variables.get(p.intercept)
            if intercepts is not None and p.free_variable in variables and not intercepts.hyper:
                join(p.intercept, p.free_variable)
    for variable in variables.values():
        fathers = [name for name, other in variables.items() if variable.name in other.children]
        for first, second in itertools.pairwise(fathers):
            join(first, second)
    groups: dict[str, list[str]] = {}
    for name in variables:
        groups.setdefault(root(name), []).append(name)
    return [
        SliceBlock(tuple(members), variables[members[0]].vector, _carried(members, variables))
        for members in groups.values()
    ]


def _carried(members, variables: Mapping[str, SumsVariable]) -> tuple[Carried, ...]:
    """The varying intercepts with a Normal prior whose location or scale is a member of a
    block of scalar hyperparameters (the rest of the pair a constant or another free scalar),
    without children of their own: those its non-centred update carries along."""
    found = []
    for name in sorted({c for m in members for c in variables[m].children}):
        child = variables[name]
        graphs = child.hyper
        if variables[members[0]].vector or child.children or child.support.family != "normal":
            continue
        if not child.intercepts:  # entry-wise children mix well centred (measured: the
            continue  # five-group hierarchy ran 6× slower carried, at the same ESS)
        if not {"mu", "sigma"} <= set(child.support.params):
            continue
        parents = {_direct(graphs[key]) for key in ("mu", "sigma") if key in graphs}
        if parents & set(members) and None not in parents:
            found.append(Carried(name))
    return tuple(found)


def _direct(graph) -> str | None:
    """The name of the free variable ``graph`` is (through broadcasts), else None."""
    while graph.owner is not None and isinstance(graph.owner.op, DimShuffle):
        graph = graph.owner.inputs[0]
    return graph.name if graph.owner is not None else None


def start_reference(block: SliceBlock, variables, draws: dict, informed: dict) -> None:
    """The first reference Gaussian, wide rather than narrow (a slice reference narrower than
    the target moves the chain in small steps; a wider one only costs a few shrinkages): a
    weight vector's prior (the reference of plain elliptical slice sampling); for each scalar
    member and each varying intercept, centred on the plug-in draws (or its start), with the
    larger of twice their spread (``informed``; the noise-aware posterior is wider) and its
    prior's spread; independent members (a vector block's: block-diagonal)."""
    centres, spreads = [], []
    for name in block.members:
        support = variables[name].support
        if block.vector and not variables[name].intercepts:
            centres.append(np.asarray(support.params["mu"], dtype=np.float64))
            spreads.append(np.linalg.cholesky(np.asarray(support.params["cov"], dtype=np.float64)))
            continue
        pooled = draws[name].reshape(-1, *draws[name].shape[2:])
        lines, _ = to_line(pooled, support.lower, support.upper)
        centre = lines.mean(axis=0)
        centres.append(centre)
        # The prior's spread carried to the line by the map's slope at the centre.
        slope = np.exp(-from_line(centre, support.lower, support.upper)[1])
        spread = prior_spread(support) * slope
        if informed[name]:
            spread = np.maximum(spread, 2.0 * lines.std(axis=0))
        spread = np.maximum(np.minimum(spread, 10.0), 1e-9 * np.maximum(np.abs(centre), 1e-300))
        spreads.append(np.diag(spread) if block.vector else spread)
    if block.vector:
        block.centre = np.concatenate(centres)
        block.spread = linalg.block_diag(*spreads)
        return
    block.centre = np.stack(centres, axis=-1)
    block.spread = np.stack(spreads, axis=-1)[..., :, None] * np.eye(len(block.members))


def fit_reference(block: SliceBlock, history: np.ndarray) -> None:
    """The reference Gaussian of each entry from tuning draws (dims draw, chain, entry...,
    member), pooled over the chains, its covariance inflated a little, and not below a
    quarter of the previous one (in trace): a chain still crossing a wide posterior must not
    narrow its own reference."""
    pooled = history.reshape(-1, *history.shape[2:])
    block.centre = pooled.mean(axis=0)
    offset = pooled - block.centre
    cov = np.einsum("n...i,n...j->...ij", offset, offset) / max(len(pooled) - 1, 1)
    cov = cov * _INFLATION**2
    size = cov.shape[-1]
    previous = np.einsum("...ij,...kj->...ik", block.spread, block.spread)
    trace = np.trace(cov, axis1=-2, axis2=-1)
    floor = 0.25 * np.trace(previous, axis1=-2, axis2=-1)
    cov = cov * np.maximum(1.0, floor / np.maximum(trace, 1e-300))[..., None, None]
    scale = np.trace(cov, axis1=-2, axis2=-1)[..., None, None] / size
    cov = cov + (1e-9 * scale + 1e-300) * np.eye(size)
    block.spread = np.linalg.cholesky(cov)


def to_line(x, lower, upper):
    """x inside [lower, upper] (either may be infinite) to the real line — the logit of its
    share of a bounded interval, the log of its distance to a single bound, itself when
    unbounded — and log |dx/du| there."""
    low, high = np.isfinite(lower), np.isfinite(upper)
    with np.errstate(divide="ignore", invalid="ignore"):
        if low.all() and high.all():  # the usual truncated prior
            above, below = np.log(x - lower), np.log(upper - x)
            return above - below, above + below - np.log(upper - lower)
        above = np.log(np.where(low, x - lower, 1.0))
        below = np.log(np.where(high, upper - x, 1.0))
        width = np.log(np.where(low & high, upper - lower, 1.0))
        u = np.where(low & high, above - below, np.where(low, above, np.where(high, -below, x)))
        jacobian = np.where(
            low & high, above + below - width, np.where(low, above, np.where(high, below, 0.0))
        )
    return u, jacobian


def from_line(u, lower, upper):
    """The inverse of `to_line`, with log |dx/du| at the new point."""
    low, high = np.isfinite(lower), np.isfinite(upper)
    with np.errstate(over="ignore", invalid="ignore"):
        if low.all() and high.all():
            width = upper - lower
            x = np.clip(lower + width * special.expit(u), *_inside(lower, upper))
            jacobian = np.log(width) - np.logaddexp(0.0, u) - np.logaddexp(0.0, -u)
            return x, jacobian
        share = special.expit(u)
        x = np.where(
            low & high,
            lower + np.where(low & high, upper - lower, 0.0) * share,
            np.where(low, lower + np.exp(u), np.where(high, upper - np.exp(-u), u)),
        )
        width = np.log(np.where(low & high, upper - lower, 1.0))
        jacobian = np.where(
            low & high,
            width - np.logaddexp(0.0, u) - np.logaddexp(0.0, -u),
            np.where(low, u, np.where(high, -u, 0.0)),
        )
    return np.clip(x, *_inside(lower, upper)), jacobian


def _inside(lower, upper):
    """The closest floats inside the bounds: a point of the line never lands on one."""
    return np.nextafter(lower, np.inf), np.nextafter(upper, -np.inf)
