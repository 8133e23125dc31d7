"""Likelihood families: what the privacy analysis and the private samplers know about each.

One object per family; a new family is one new object appended to `FAMILIES`. Each knows

- the PyMC random-variable op of its observed node and the names of its parameters (in the
  op's parameterisation, as returned by ``op.dist_params``);
- its sample space (``support``), intersected by the analysis with the declared bounds;
- its record log-likelihood range over a parameter box (:ref:`costs-lipschitz-table`):
  ``sup_θ sup_{x,x'} |ℓ(x;θ) − ℓ(x';θ)|`` for one record element;
- its per-record statistic t(x), the sufficient statistics s(D) = Σ_i t(x_i) (grouped by a
  private index where the parameter is indexed by one) and their L1 sensitivity Δ₁ over one
  replaced record (Zhang et al. 2016, Lemma 1; Foulds et al. 2016, eq. 16);
- its conjugate prior and the tempered conjugate update (likelihood raised to 1/T,
  T ≥ 1: Dimitrakakis et al. 2017, §4; Foulds et al. 2016, §4.1);
- its log-likelihood written in terms of the statistics alone, for a model that sees only
  privatised statistics.

Vocabulary. A record of an observed array of shape ``(n, *record_shape)`` has
``prod(record_shape)`` *elements*; ℓ is the log density of one element. A parameter is
*varying* when it may differ between a record and its replacement (it is indexed by private
data, ``theta[y_obs]``, or computed from private covariates, ``X @ w``); otherwise both records
see the same parameter value and only the data changes. Every quantity here is a function of
public inputs: declared bounds, prior supports, shapes and constants.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType

import numpy as np
import pytensor.tensor as pt
from pytensor.tensor.random.basic import (
    BernoulliRV,
    BinomialRV,
    CategoricalRV,
    ExponentialRV,
    NormalRV,
    PoissonRV,
)
from scipy.special import gammaln, xlogy

from pymc_private.conjugate import CONJUGATE_FAMILIES
from pymc_private.errors import DataBoundsError, UnsupportedModelError
from pymc_private.latent import MultinomialCounts, PoissonCounts

__all__ = [
    "FAMILIES",
    "Bernoulli",
    "Binomial",
    "Categorical",
    "DataGrid",
    "DiagonalMinusOuter",
    "ElementDomain",
    "Exponential",
    "Interval",
    "LikelihoodFamily",
    "LikelihoodTerm",
    "NormalFreeSigma",
    "NormalKnownSigma",
    "NormalLinearRegression",
    "ParameterTerm",
    "Poisson",
    "StatisticSpec",
    "as_exact",
    "complete_statistic",
    "data_grid",
    "find_family",
    "group_counts_statistic",
]


@dataclass(frozen=True)
class Interval:
    """A closed interval ``[lower, upper]`` (bounds may be infinite)."""

    lower: float
    upper: float

    @property
    def finite(self) -> bool:
        return math.isfinite(self.lower) and math.isfinite(self.upper)


_MAX_ENUMERATED = 1_000_000


@dataclass(frozen=True)
class ElementDomain:
    """The public domain of one record element: declared bounds within the family's support."""

    lower: float
    upper: float
    integer: bool

    def values(self) -> np.ndarray:
        """The integers of an integer domain, in order.

        Raises `UnsupportedModelError` beyond a million values: a family whose
        domain may be that large evaluates `candidates` instead.
        """
        if self.size > _MAX_ENUMERATED:
            raise UnsupportedModelError(
                f"The integer domain [{self.lower:g}, {self.upper:g}] holds {self.size:g} "
                f"values, more than the {_MAX_ENUMERATED} the privacy analysis enumerates; "
                "declare tighter bounds for the data (from public knowledge)."
            )
        return np.arange(math.ceil(self.lower), math.floor(self.upper) + 1, dtype=np.float64)

    def candidates(self, turning_points: Iterable[float]) -> np.ndarray:
        """The integers of an integer domain where a discrete-concave (or, piecewise,
        quasi-convex) function of x can attain its extremes: both endpoints and the
        integers from ⌊t⌋ − 1 to ⌊t⌋ + 2 around each turning point t, clipped into the
        domain. A few integers around each point make the set immune to rounding in t.
        """
        lower, upper = math.ceil(self.lower), math.floor(self.upper)
        points = [lower, upper]
        for point in turning_points:
            if math.isfinite(point):
                points.extend(math.floor(point) + k for k in (-1, 0, 1, 2))
        return np.unique(np.clip(points, lower, upper)).astype(np.float64)

    @property
    def size(self) -> float:
        """How many values the domain holds (``inf`` for a non-degenerate real interval)."""
        if self.integer:
            return float(math.floor(self.upper) - math.ceil(self.lower) + 1)
        return 1.0 if self.lower == self.upper else math.inf


# Float data enter statistics as integers m with |m| <= _GRID_LEVELS; a statistic of n
# records must fit in int64 (n · max|t(m)| < 2^62), and the sensitivity of squares and
# products over one record must be an integer a float holds exactly (< 2^53).
_GRID_LEVELS = 2**25
_STATISTIC_CAPACITY = 2**62
_SENSITIVITY_CAPACITY = 2**52
# Records per block of a float32 count: every partial sum stays an integer below 2²⁴.
_FLOAT32_EXACT_ROWS = 2**24
# A float grid must resolve the declared range into at least this many steps.
_MIN_GRID_STEPS = 2**10


@dataclass(frozen=True, eq=False)
class DataGrid:
    """The public grid on which one `PrivateData` array enters sufficient statistics.

    Every value x of the array is represented by the integer ``m = clip(rint(x / q),
    lower, upper)``, i.e. by ``v = q·m``, the nearest grid point inside the declared bounds.
    The map is applied to each record on its own and depends on public quantities only, so
    it is part of the mechanism (like clipping): the guarantees hold for the records v,
    which lie inside the declared bounds, so every Lipschitz constant computed over the
    declared domain covers them. Statistics of v are sums of integers, computed exactly in
    int64 (Casacuberta et al. 2022: float sums can move by far more than their nominal
    sensitivity; integer sums cannot).

    Integer data: q = 1 and m = x. Float data: q is the power of two for which
    ``max|bound| / q`` is at most ``min(2^25, sqrt(2^61 / n), sqrt(2^52 / (s(s+1))))``, s the
    number of elements of a record, so that squares and products of m summed over n records
    stay below 2^62 and their sensitivity over one record below 2^53; the representation
    error |x − v| is at most q/2 inside the bounds.

    Attributes
    ----------
    quantum
        q, the natural value of one grid step (a power of two, or 1 for integer data).
    lower, upper
        The smallest and largest integer m of each element of a record (int64 arrays of the
        record shape).
    coarse
        Whether some element's declared range spans fewer than 2^10 grid steps (a range too
        narrow for its magnitude); statistics are then refused.
    """

    quantum: float
    lower: np.ndarray
    upper: np.ndarray
    coarse: bool = False

    def quantize(self, values: np.ndarray) -> np.ndarray:
        """The integers m of raw values (records on axis 0), as int64. Touches private data."""
        values = np.asarray(values)
        if values.dtype.kind in "iu":
            return np.clip(values, self.lower, self.upper).astype(np.int64)
        return np.clip(np.rint(values / self.quantum), self.lower, self.upper).astype(np.int64)


def data_grid(lower: np.ndarray, upper: np.ndarray, n: int, *, integer: bool) -> DataGrid:
    """The `DataGrid` of a `PrivateData` array from its public declaration (bounds, n, dtype).

    Whether the grid resolves the declared range finely enough (``coarse``) is checked where
    a statistic is built on it, so that routes that do not use statistics are not refused.
    """
    lower = np.asarray(lower, dtype=np.float64)
    upper = np.asarray(upper, dtype=np.float64)
    magnitude = float(np.max(np.maximum(np.abs(lower), np.abs(upper)), initial=0.0))
    quantum = 1.0
    if not integer and magnitude > 0.0:
        size = max(lower.size, 1)
        levels = min(
            _GRID_LEVELS,
            math.isqrt(_STATISTIC_CAPACITY // (2 * max(n, 1))),
            math.isqrt(_SENSITIVITY_CAPACITY // (size * (size + 1))),
        )
        quantum = math.ldexp(1.0, max(math.ceil(math.log2(magnitude / levels)), -1074))
    grid_lower = [math.ceil(Fraction(v) / Fraction(quantum)) for v in lower.ravel().tolist()]
    grid_upper = [math.floor(Fraction(v) / Fraction(quantum)) for v in upper.ravel().tolist()]
    steps = (upper - lower) / quantum
    return DataGrid(
        quantum=quantum,
        lower=_read_only(np.array(grid_lower, dtype=np.int64).reshape(lower.shape)),
        upper=_read_only(np.array(grid_upper, dtype=np.int64).reshape(upper.shape)),
        coarse=bool(not integer and np.any((upper > lower) & (steps < _MIN_GRID_STEPS))),
    )


def _check_grids(name: str, data: tuple[str, ...], grids: tuple[DataGrid, ...]) -> None:
    """Refuse, from the declarations alone, a statistic on a grid too coarse for its range."""
    for array, grid in zip(data, grids, strict=False):
        if grid is not None and grid.coarse:
            raise DataBoundsError(
                f"The statistic {name} needs PrivateData `{array}` on a grid of step "
                f"{grid.quantum:g}, too coarse for its declared range: sufficient statistics are "
                "computed exactly on a grid of at most 2**25 steps up to the largest bound. "
                "Recentre or rescale the data (e.g. subtract a public reference value) so that "
                "its bounds are not far larger than their width."
            )


def _check_capacity(name: str, n: int, largest: int) -> None:
    """Refuse, from public quantities, a statistic whose exact int64 sum could overflow."""
    if n * largest >= _STATISTIC_CAPACITY:
        raise DataBoundsError(
            f"The statistic {name} of {n} records, each up to {largest} grid steps, could "
            "exceed the exact int64 range; declare tighter bounds for its data."
        )


@dataclass(frozen=True, eq=False)
class ParameterTerm:
    """How one parameter of an observed node depends on the model (public facts only).

    Parameters
    ----------
    name
        The family's name for the parameter (``"p"``, ``"mu"``, ``"sigma"``, ...).
    interval
        The range of every entry of the parameter over the prior supports and the declared
        bounds (interval arithmetic through the graph; a sound enclosure).
    shape
        Shape of the parameter before record indexing: the free variable's shape (``theta`` of
        shape ``(G, d)`` for ``theta[y_obs]``) or the constant's shape.
    free_variables
        Names of the free random variables the parameter depends on.
    varies_with_record
        True when the parameter may differ between a record and its replacement.
    constant
        The value when the parameter is a constant (public), else None.
    free_variable
        Set when the parameter is a single free variable through ``link`` (possibly indexed
        along axis 0 by ``group_by``): the structure conjugate updates and sufficient
        statistics need. None for any other expression.
    link
        How the parameter is computed from ``free_variable``: ``"identity"``,
        ``"reciprocal"`` (an Exponential scale from a rate), ``"inverse_sqrt"`` (a Normal
        sigma from a precision ``tau``), or ``"linear"`` (``covariates @ free_variable``).
    group_by
        The index the parameter is indexed by: a `PrivateData` (``theta[y_obs]`` →
        ``"y_obs"``), or a public one (`group_values`).
    group_values
        The values of a public group index, one per record (a numpy array or ``pm.Data``
        that is not `PrivateData`, read once by the analysis); None for a private index.
    covariates
        The `PrivateData` covariate matrix of a linear predictor.
    radius
        ``‖w‖₂ ≤ radius`` for the weights of a linear predictor, when the prior says so.
    prior_family
        The family name `parameter_support` reports for ``free_variable`` (``"beta"``, ...).
    """

    name: str
    interval: Interval
    shape: tuple[int, ...] = ()
    free_variables: tuple[str, ...] = ()
    varies_with_record: bool = False
    constant: np.ndarray | None = None
    free_variable: str | None = None
    link: str = "identity"
    group_by: str | None = None
    group_values: np.ndarray | None = None
    covariates: str | None = None
    radius: float | None = None
    prior_family: str | None = None

    def apply_link(self, value):
        """The parameter (in the op's parameterisation) from its free variable's value.

        Works on numpy arrays and PyTensor tensors alike.
        """
        if self.link == "reciprocal":
            return 1.0 / value
        if self.link == "inverse_sqrt":
            return value**-0.5
        return value


@dataclass(frozen=True, eq=False)
class LikelihoodTerm:
    """One observed node bound to its family, with everything public the family needs.

    Parameters
    ----------
    node
        Name of the observed random variable.
    family
        Its `LikelihoodFamily`.
    data
        Name of the observed `PrivateData`.
    record_shape
        Shape of one record of the observed data.
    domains
        The distinct element domains of one record (declared bounds within the support),
        each with the number of elements that have it.
    parameters
        One `ParameterTerm` per family parameter.
    group_by, n_groups, group_domain
        The index that selects this node's parameters per record (``y_obs`` in
        ``theta[y_obs]``), the number of groups and, for a private index, its domain.
    group_values
        The values of a public index (one per record), None for a private one. A public
        index is not part of the record: neighbours share it, so a record cannot change
        group, the group sizes n_g are public and nothing about them is released.
    n
        The public record count.
    grid, covariate_grid
        The public `DataGrid` of the observed data and of the covariates, on which their
        sufficient statistics are computed exactly.
    per_record_constants
        The constant (public) parameters that take a value per record: the node then has no
        sufficient statistics.
    """

    node: str
    family: LikelihoodFamily
    data: str
    record_shape: tuple[int, ...]
    domains: tuple[tuple[ElementDomain, int], ...]
    parameters: Mapping[str, ParameterTerm]
    n: int
    group_by: str | None = None
    n_groups: int | None = None
    group_domain: ElementDomain | None = None
    group_values: np.ndarray | None = None
    grid: DataGrid | None = None
    covariate_grid: DataGrid | None = None
    per_record_constants: tuple[str, ...] = ()

    @property
    def free_variables(self) -> tuple[str, ...]:
        names: list[str] = []
        for term in self.parameters.values():
            names.extend(v for v in term.free_variables if v not in names)
        return tuple(names)

    @property
    def group_can_change(self) -> bool:
        """Whether replacing a record can move it to another group."""
        return self.group_domain is not None and self.group_domain.size > 1

    def parameters_at(self, values: Mapping[str, object]) -> dict[str, object]:
        """The node's non-constant parameters, by the family's names, at the free variables'
        ``values`` (by name): what `LikelihoodFamily.statistic_moments` and ``count_law``
        read."""
        return {
            name: values[p.free_variable]
            for name, p in self.parameters.items()
            if p.constant is None
        }

    @property
    def cell_ndim(self) -> int:
        """Axes of the node's statistics at element resolution: the group axis (grouped),
        then the record's (a count's category axis comes after them)."""
        return (1 if self.group_by is not None else 0) + len(self.record_shape)

    def public_totals(self):
        """The records behind each group when that is public: n ungrouped, the group sizes
        n_g of a public index; None for a private index (`totals_statistic` releases them)."""
        if self.group_by is None:
            return self.n
        if self.group_values is None:
            return None
        return np.bincount(self.group_values, minlength=self.n_groups)

    def totals_statistic(self) -> StatisticSpec | None:
        """The group sizes n_g a grouped node's statistics are completed with, released
        (None when they are public: the total n, or a public index's `public_totals`)."""
        if self.group_by is None or self.group_values is not None:
            return None
        return group_counts_statistic(self.group_by, self.n_groups, self.group_domain)

    def lipschitz(self) -> float:
        """L of this node over one record: the sum of its elements' log-likelihood ranges.

        Exact when distinct elements use distinct parameter entries (or identical elements
        share one), an upper bound otherwise: sup of a sum ≤ sum of sups.
        """
        return float(
            sum(
                count * self.family.log_likelihood_range(self.parameters, domain)
                for domain, count in self.domains
            )
        )


@dataclass(frozen=True, eq=False)
class StatisticSpec:
    """One sufficient statistic s(D) = Σ_i t(x_i) of the pay-once route, as released.

    Every statistic is a sum of integers: counts, or functions of the grid integers m of the
    data (`DataGrid`), so it is computed exactly in int64 and released with the exact
    discrete Laplace mechanism; ``unit`` converts it to natural units afterwards.

    Parameters
    ----------
    name
        Unique public name, e.g. ``"counts(x_obs | y_obs)"``.
    kind
        ``"counts"``: per-category counts of integer data with categories ``0..K−1``; category
        0 is *not released*: it is derived as the total (n, or the group's count) minus the
        others, which is post-processing since n is public and group counts are released.
        ``"sum"``: Σ m per element. ``"sum_squares"``: Σ m² per element. ``"gram"``: MᵀM of
        the covariates' grid integers, released as its upper triangle in
        ``numpy.triu_indices`` order. ``"cross"``: Mᵀm_y.
    data
        The `PrivateData` names it is computed from (``(X, y)`` for ``"cross"``).
    shape
        Shape of the released array: ``(G,)`` if grouped, then the record shape, then
        ``(K − 1,)`` for counts; ``(p(p+1)/2,)`` for gram; ``(p,)`` for cross.
    unit
        The natural value of one integer step: 1 for counts and integer data, q for sums of
        float data on a grid of step q, q² for their squares, q_x·q_y for products.
    sensitivity
        Δ₁ in integer steps: sup ‖s(D) − s(D')‖₁ over one replaced record, exact.
    record_lower, record_upper
        The range of one record's contribution t to each cell (integer steps; arrays that
        broadcast against one group's cells), from which the projection after noise knows
        what a data set can produce.
    grids
        The `DataGrid` of each array in ``data``.
    group_by, n_groups
        The index grouping the sums, and the number of groups.
    group_values
        The values of a public index (then a record never changes group), None for a
        `PrivateData` index, whose values ``compute`` reads with the data.
    n_categories
        K, for counts.
    derived_first
        For counts: whether category 0 is derived from the totals instead of released. It is
        released (every cell a record can move, Zhang et al. 2016 §4's consistent release)
        whenever that leaves Δ₁ unchanged: counts of K ≥ 3 categories, and counts grouped by
        an index a record can change; the group sizes are then estimated jointly from all
        cells (`pymc_private.privatize`).
    nodes
        The observed nodes that use it (a statistic shared by several nodes is released once).
    """

    name: str
    kind: str
    data: tuple[str, ...]
    shape: tuple[int, ...]
    unit: float
    sensitivity: int
    record_lower: np.ndarray
    record_upper: np.ndarray
    grids: tuple[DataGrid | None, ...] = ()
    group_by: str | None = None
    n_groups: int | None = None
    group_values: np.ndarray | None = None
    n_categories: int | None = None
    derived_first: bool = True
    nodes: tuple[str, ...] = field(default=())

    @property
    def group_can_change(self) -> bool:
        """Whether replacing a record can move its contribution to another group: grouped by
        a `PrivateData` index (conservatively, whatever its declared domain)."""
        return self.group_by is not None and self.group_values is None

    @property
    def sensitivity_l1(self) -> float:
        """Δ₁ in natural units: ``unit · sensitivity``."""
        return float(Fraction(self.unit) * self.sensitivity)

    @property
    def sensitivity_linf(self) -> int:
        """Δ∞ in integer steps: the most one cell moves when one record is replaced.

        A cell moves by t(x) − t(x') ∈ [lower − upper, upper − lower]; when a record can also
        change group, a cell can lose or gain a whole contribution, up to max|t|.
        """
        lower, upper = np.asarray(self.record_lower), np.asarray(self.record_upper)
        moves = [int(np.max(upper - lower))]
        if self.group_can_change:
            moves += [int(np.max(np.abs(lower))), int(np.max(np.abs(upper)))]
        return max(moves)

    @property
    def sensitivity_l2_squared(self) -> int:
        """A bound on Δ₂² in integer steps: the smallest of three sound bounds on
        ‖t(x) − t(x′)‖₂² (one record replaced), each proved from the per-record ranges alone.

        1. Hölder, Δ₁·Δ∞ (‖v‖₂² ≤ ‖v‖₁‖v‖∞): exact for counts, whose cells move by at most 1
           (Δ₂ = √Δ₁: for naive Bayes √(2d + 1)), and for a scalar sum (Δ₂ = Δ₁).
        2. Cell by cell: each cell moves by at most u − l (its record range [l, u]), so
           Δ₂² ≤ Σ (u − l)²; when a record can change group it leaves its contribution t(x)
           in one group and adds t(x′) in another, so also ≤ 2 Σ max(l², u²).
        3. Gram matrices (the upper triangle of aaᵀ, a the record's covariates): for a
           symmetric A, Σ_{i≤j} A_ij² = ½(‖A‖_F² + Σ_i A_ii²), and with A = aaᵀ − bbᵀ,
           ‖A‖_F² = ‖a‖⁴ + ‖b‖⁴ − 2(a·b)² and A_ii² ≤ a_i⁴ + b_i⁴, so
           Δ₂² ≤ S² + Q with S = Σ_j M_j², Q = Σ_j M_j⁴, M_j = max|a_j| (M_j² is the upper end
           of the diagonal cell's range): p(p + 1)M⁴ for covariates in [−M, M], against
           Hölder's 2p²M⁴ and the cell-by-cell (2p² − p)M⁴ (p = 11: 132, 242, 231 M⁴).
        """
        bounds = [self.sensitivity * self.sensitivity_linf]
        cells = self.shape[1:] if self.group_by is not None else self.shape
        lower = np.broadcast_to(self.record_lower, cells).ravel().tolist()
        upper = np.broadcast_to(self.record_upper, cells).ravel().tolist()
        within = sum((u - low) ** 2 for low, u in zip(lower, upper, strict=True))
        if self.group_can_change:
            within = max(
                within, 2 * sum(max(low * low, u * u) for low, u in zip(lower, upper, strict=True))
            )
        bounds.append(within)
        if self.kind == "gram":
            rows, columns = np.triu_indices(_gram_size(len(upper)))
            squares = [u for u, j, k in zip(upper, rows, columns, strict=True) if j == k]
            bounds.append(sum(squares) ** 2 + sum(m * m for m in squares))
        return min(bounds)

    @property
    def sensitivity_l2(self) -> float:
        """Δ₂ in natural units: ``unit · √Δ₂²`` (`sensitivity_l2_squared`)."""
        return float(self.unit) * math.sqrt(self.sensitivity_l2_squared)

    def compute(self, arrays: Mapping[str, np.ndarray], rows: slice | None = None) -> np.ndarray:
        """s(D) in released form, as exact int64, from the raw arrays (by `PrivateData` name).

        ``rows`` says which records ``arrays`` hold (default: all of them), so that a public
        group index is read at the same rows: statistics are sums over records, so the
        statistic of the data set is the sum of those of its blocks
        (`pymc_private.records.statistics_pass`). Touches private data: its output must go
        through a mechanism before release.
        """
        group = self.group_values
        if group is not None and rows is not None:
            group = group[rows]
        if group is None and self.group_by is not None:
            group = np.asarray(arrays[self.group_by], dtype=np.int64)
        if self.kind == "counts":
            return self._counts(np.asarray(arrays[self.data[0]]), group)
        m = self.grids[0].quantize(arrays[self.data[0]])
        if self.kind == "gram":
            return (m.T @ m)[np.triu_indices(m.shape[1])]
        if self.kind == "cross":
            return m.T @ self.grids[1].quantize(arrays[self.data[1]])
        return _group_sum(m * m if self.kind == "sum_squares" else m, group, self.n_groups)

    def _counts(self, values: np.ndarray, group: np.ndarray | None) -> np.ndarray:
        """Counts of categories ``first..K−1`` per group and cell: for each category k ≥ 1 a
        product (group indicator)ᵀ · (value = k indicator) in float32, exact because every
        partial sum is an integer below 2²⁴ (blocks of at most 2²⁴ records); category 0,
        when released, is the group's size minus the others."""
        first = 1 if self.derived_first else 0
        groups = self.n_groups or 1
        cells = int(np.prod(values.shape[1:], dtype=np.int64))
        values = values.reshape(values.shape[0], cells)
        counts = np.zeros((groups, cells, self.n_categories), dtype=np.int64)
        step = _FLOAT32_EXACT_ROWS
        for start in range(0, values.shape[0], step):
            block = values[start : start + step]
            if group is None:
                members = np.ones((1, block.shape[0]), dtype=np.float32)
            else:
                labels = group[start : start + step]
                members = (labels == np.arange(groups)[:, None]).astype(np.float32)
            here = np.zeros_like(counts)
            for k in range(1, self.n_categories):
                indicator = (block == k).astype(np.float32)
                here[:, :, k] = np.rint(members @ indicator).astype(np.int64)
            sizes = members.sum(axis=1, dtype=np.int64)
            here[:, :, 0] = sizes[:, None] - here[:, :, 1:].sum(axis=2)
            counts += here
        return counts[..., first:].reshape(self.shape)

    def natural(self, values, *, exact: bool = False) -> np.ndarray:
        """Released-form integer values in natural units: ``unit · values``.

        ``exact=True`` returns an object array of `fractions.Fraction` (exact rationals),
        for the exact private samplers; otherwise floats (counts stay integers).
        """
        values = np.asarray(values)
        if exact:
            unit = Fraction(self.unit)
            return np.array([unit * int(v) for v in values.ravel()], dtype=object).reshape(
                values.shape
            )
        if self.unit == 1.0:
            return values
        return values.astype(np.float64) * self.unit


def regression_group(specs: Sequence[StatisticSpec]) -> tuple[StatisticSpec, ...]:
    """The statistics of ``specs`` that are one regression's released moments: its Gram
    matrix XᵀX, its Xᵀy and, when present, its yᵀy (empty when ``specs`` holds no Gram
    matrix with one matching cross product). `regression_l2_squared` bounds them jointly."""
    grams = [spec for spec in specs if spec.kind == "gram"]
    if len(grams) != 1:
        return ()
    (gram,) = grams
    crosses = [spec for spec in specs if spec.kind == "cross" and spec.data[0] == gram.data[0]]
    if len(crosses) != 1 or any(spec.kind == "cross" for spec in specs if spec not in crosses):
        return ()
    (cross,) = crosses
    squares = [
        spec
        for spec in specs
        if spec.kind == "sum_squares"
        and spec.data == cross.data[1:]
        and spec.group_by is None
        and spec.shape == ()
    ]
    return (gram, cross, *squares[:1])


def regression_l2_squared(group: Sequence[StatisticSpec]) -> Fraction:
    """A bound on the squared L2 sensitivity, in natural units, of a regression's released
    moments taken together (`regression_group`): XᵀX's upper triangle, Xᵀy and yᵀy.

    They are cells of the upper triangle of zzᵀ summed over records, z = (x, y) one record's
    covariates and response in natural units. Replacing a record a by b moves that triangle by
    A = aaᵀ − bbᵀ, and Σ_{i≤j} A_ij² = ½(‖A‖_F² + Σ_i A_ii²) with ‖A‖_F² = ‖a‖⁴ + ‖b‖⁴ −
    2(a·b)² ≤ 2S² and A_ii² = (a_i² − b_i²)² ≤ N_i⁴, where N_i = max|z_i| over the declared
    bounds (on the grid), S = Σ_i N_i² and Q = Σ_i N_i⁴:

        Δ₂² ≤ S² + Q/2.

    A subset of the cells (no yᵀy when σ is known) moves by no more. Against the sum of the
    three statistics' own bounds, S_x² + Q_x, (2·N_y·√S_x)² and N_y⁴, this counts the cross
    terms once: for diabetes (10 features and an intercept in [−1, 1], y in [−2, 2]) 238.5
    against 324.
    """
    cross = group[1]
    x_grid, y_grid = cross.grids
    bounds = [
        Fraction(grid.quantum) * max(abs(low), abs(high))
        for grid in (x_grid, y_grid)
        for low, high in _grid_ranges(grid)
    ]
    squares = [bound * bound for bound in bounds]
    return sum(squares, Fraction(0)) ** 2 + sum((m * m for m in squares), Fraction(0)) / 2


def _group_sum(t: np.ndarray, group: np.ndarray | None, n_groups: int | None) -> np.ndarray:
    if group is None:
        return t.sum(axis=0)
    out = np.zeros((n_groups, *t.shape[1:]), dtype=t.dtype)
    np.add.at(out, group, t)
    return out


def complete_statistic(spec: StatisticSpec, released, totals):
    """The full statistic from its released form in natural units (post-processing).

    Counts whose category 0 is derived get it back as ``totals − Σ_{k≥1} counts_k``
    (``totals`` is n, or the full group-count vector for grouped counts); a packed Gram
    matrix is unpacked to a symmetric matrix; other kinds are returned as they are. Works on
    floats, on object arrays of exact rationals and on PyTensor tensors (the data of a
    privatised model).
    """
    if isinstance(released, pt.TensorVariable):
        return _complete_tensor(spec, released, totals)
    released = np.asarray(released)
    if spec.kind == "counts" and spec.derived_first:
        total = _expand_totals(np.asarray(totals), released.ndim - 1, spec.group_by is not None)
        first = total - released.sum(axis=-1)
        return np.concatenate([np.asarray(first)[..., None], released], axis=-1)
    if spec.kind == "gram":
        size = _gram_size(released.size)
        full = np.zeros((size, size), dtype=released.dtype)
        full[np.triu_indices(size)] = released
        lower = np.tril_indices(size, -1)
        full[lower] = full.T[lower]
        return full
    return released


def _complete_tensor(spec: StatisticSpec, released: pt.TensorVariable, totals):
    if spec.kind == "counts" and spec.derived_first:
        grouped = spec.group_by is not None
        total = _expand_totals(pt.as_tensor(totals), released.ndim - 1, grouped)
        first = total - released.sum(axis=-1)
        return pt.concatenate([pt.shape_padright(first), released], axis=-1)
    if spec.kind == "gram":
        size = _gram_size(spec.shape[0])
        rows, columns = np.triu_indices(size)
        upper = pt.set_subtensor(
            pt.zeros((size, size), dtype=released.dtype)[rows, columns], released
        )
        return upper + pt.triu(upper, 1).T
    return released


def _gram_size(packed: int) -> int:
    """p from the p(p+1)/2 entries of a packed upper triangle."""
    return round((math.sqrt(8 * packed + 1) - 1) / 2)


def _expand_totals(totals, ndim: int, grouped: bool):
    """Totals shaped to broadcast against a statistic of ``ndim`` dimensions (numpy totals
    may carry leading batch axes, the chains of `pymc_private.augmentation`)."""
    if not grouped:
        return totals
    if isinstance(totals, pt.TensorVariable):
        return totals.reshape((-1,) + (1,) * (ndim - 1))
    return totals.reshape(totals.shape + (1,) * (ndim - 1))


def group_counts_statistic(index: str, n_groups: int, domain: ElementDomain) -> StatisticSpec:
    """The group sizes n_g of a private index, released as counts with category 0 derived.

    Δ₁: a record moving from group g to g' changes n_g and n_g' by one each: 2. With two
    groups n_0 is derived from the public total (Zhang et al. 2016, Lemma 1): 1.
    """
    derived = n_groups < 3
    released = n_groups - 1 if derived else n_groups
    return StatisticSpec(
        name=f"counts({index})",
        kind="counts",
        data=(index,),
        shape=(released,),
        unit=1.0,
        sensitivity=_counts_sensitivity(domain, grouped=False, derived=derived),
        record_lower=_read_only(np.zeros(released, dtype=np.int64)),
        record_upper=_read_only(np.ones(released, dtype=np.int64)),
        n_categories=n_groups,
        derived_first=derived,
    )


def _counts_sensitivity(domain: ElementDomain, *, grouped: bool, derived: bool = True) -> int:
    """Δ₁ of per-category counts over one element.

    Replacing x by x' moves one count down (cell x) and one up (cell x'). All categories
    released: 2 as soon as the record can move (x ≠ x', or another group). Category 0
    derived (not released): ungrouped, only x ≠ x' changes anything: 2 when two non-zero
    categories exist, 1 when one does (and another value to move to); grouped (the record
    may change group), x = x' in two groups moves two released cells as soon as one category
    is non-zero.
    """
    if not derived:
        return 2 if grouped or domain.size >= 2 else 0
    nonzero = domain.size - (1.0 if domain.lower <= 0.0 <= domain.upper else 0.0)
    if grouped:
        return 2 if nonzero else 0
    if nonzero >= 2:
        return 2
    return 1 if nonzero == 1 and domain.size >= 2 else 0


def _sum_sensitivity(t_lower, t_upper, *, grouped: bool) -> int:
    """Δ₁ of Σ t over the elements of one record, t ∈ [t_lower, t_upper] per element
    (Python integers).

    Ungrouped: |t(x) − t(x')| ≤ t_upper − t_lower per element. Grouped (the record may change
    group): |t(x)| + |t(x')| ≤ 2·max|t|, which also covers a change within one group.
    """
    if grouped:
        return sum(
            2 * max(abs(low), abs(high)) for low, high in zip(t_lower, t_upper, strict=False)
        )
    return sum(high - low for low, high in zip(t_lower, t_upper, strict=False))


def _square_range(lower: int, upper: int) -> tuple[int, int]:
    """The range of m² for integers m in [lower, upper]."""
    low = 0 if lower <= 0 <= upper else min(lower * lower, upper * upper)
    return low, max(lower * lower, upper * upper)


def _product_range(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    """The range of the product of integers in the intervals ``a`` and ``b``."""
    products = [x * y for x in a for y in b]
    return min(products), max(products)


def _read_only(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def _grid_ranges(grid: DataGrid) -> list[tuple[int, int]]:
    """(lower, upper) grid integers of each element of a record, as Python integers."""
    return list(zip(grid.lower.ravel().tolist(), grid.upper.ravel().tolist(), strict=True))


def _integer_statistic(
    name: str,
    kind: str,
    data: tuple[str, ...],
    shape: tuple[int, ...],
    unit: float,
    ranges: list[tuple[int, int]],
    record_shape: tuple[int, ...],
    n: int,
    *,
    grouped: bool,
    grids: tuple[DataGrid, ...],
    **grouping,
) -> StatisticSpec:
    """A sum statistic with per-record contributions t ∈ ``ranges`` (one range per cell of a
    record, in grid steps), after checking from public quantities that it fits int64."""
    lower = [low for low, _ in ranges]
    upper = [high for _, high in ranges]
    _check_grids(name, data, grids)
    _check_capacity(name, n, max([max(abs(v) for v in lower + upper), 1]))
    sensitivity = _sum_sensitivity(lower, upper, grouped=grouped)
    if sensitivity > 2 * _SENSITIVITY_CAPACITY:
        raise DataBoundsError(
            f"The statistic {name} moves by up to {sensitivity} integer steps when one record "
            "is replaced, more than an exact float integer (2**53); declare tighter bounds."
        )
    return StatisticSpec(
        name=name,
        kind=kind,
        data=data,
        shape=shape,
        unit=unit,
        sensitivity=sensitivity,
        record_lower=_read_only(np.array(lower, dtype=np.int64).reshape(record_shape)),
        record_upper=_read_only(np.array(upper, dtype=np.int64).reshape(record_shape)),
        grids=grids,
        **grouping,
    )


def _spread(values: np.ndarray) -> float:
    """max − min of log-likelihood values; infinite as soon as one is not finite."""
    values = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(values)):
        return math.inf
    return float(values.max() - values.min())


def _one_parameter_range(
    log_likelihood: Callable[[np.ndarray, np.ndarray], np.ndarray],
    xs: np.ndarray,
    interval: Interval,
    varying: bool,
    critical: Callable[[np.ndarray], np.ndarray] | None = None,
) -> float:
    """L of one element for a one-parameter exponential family ℓ(x; θ) concave in θ.

    Fixed parameter: ℓ(x) − ℓ(x') is linear in the natural parameter η(θ), monotone in θ, so
    the sup over θ of the range over x is attained at θ ∈ {lower, upper} (a maximum of affine
    functions of η is convex). Varying parameter: the range of ℓ over (x, θ) jointly; ℓ is
    concave in θ, so its minimum over θ is at an endpoint and its maximum at the critical
    point ``critical(x)`` clipped into the interval. ``xs`` holds every x that can attain an
    extreme (all of a finite domain, or an interval's endpoints when ℓ is monotone in x).
    """
    if not interval.finite:
        return math.inf
    thetas = np.array([interval.lower, interval.upper])
    with np.errstate(divide="ignore", invalid="ignore"):
        table = log_likelihood(xs[:, None], thetas[None, :])
        if not varying:
            return max(_spread(table[:, 0]), _spread(table[:, 1]))
        values = [table.ravel()]
        if critical is not None:
            inner = np.clip(critical(xs), interval.lower, interval.upper)
            values.append(log_likelihood(xs, inner))
    return _spread(np.concatenate(values))


class LikelihoodFamily(ABC):
    """What pymc-private knows about one likelihood family.

    Class attributes
    ----------------
    name
        Public name, as listed in error messages.
    rv_op
        The PyTensor random-variable op class of the observed node.
    parameters
        Parameter names in the order of ``op.dist_params``.
    roles
        What each parameter is (``"probability"``, ``"simplex"``, ``"rate"``, ``"scale"``,
        ``"location"``, ``"trials"``): used to say which truncated prior bounds it.
    conjugate_priors
        For each parameter with a conjugate update: the prior family of its free variable
        and the link it must come through.
    """

    name: str
    rv_op: type
    parameters: tuple[str, ...]
    roles: Mapping[str, str]
    conjugate_priors: Mapping[str, tuple[str, str]]

    def accepts(self, parameters: Mapping[str, ParameterTerm]) -> bool:
        """Whether the parameters have the structure this family object handles."""
        return True

    @abstractmethod
    def support(self, parameters: Mapping[str, ParameterTerm]) -> ElementDomain:
        """The sample space of one element."""

    @abstractmethod
    def log_likelihood_range(
        self, parameters: Mapping[str, ParameterTerm], domain: ElementDomain
    ) -> float:
        """sup over the parameter box of sup_{x,x' ∈ domain} |ℓ(x;θ) − ℓ(x';θ)| (one element),
        with varying parameters ranging independently for x and x'. ``inf`` when unbounded."""

    @abstractmethod
    def statistics(self, term: LikelihoodTerm) -> tuple[StatisticSpec, ...]:
        """The node's own sufficient statistics, with their Δ₁ over one record.

        A grouped node also needs its group sizes, `LikelihoodTerm.totals_statistic`.

        Raises `UnsupportedModelError` (with the reason) when the node's parameters are not
        plain free variables, so that the likelihood does not reduce to statistics.
        """

    @abstractmethod
    def logp_from_statistics(
        self,
        term: LikelihoodTerm,
        values: Mapping[str, object],
        statistics: Mapping[str, object],
        totals,
    ):
        """Σ_i ℓ(x_i; θ) written with the full statistics only (PyTensor or numpy).

        ``values`` maps each non-constant parameter name to its *free variable* (``theta``,
        not ``theta[y_obs]``); ``statistics`` maps each statistic kind to its full form
        (`complete_statistic`); ``totals`` is n, or the group counts n_g when grouped. Terms
        that do not depend on any parameter may be dropped (stated per family).
        """

    @abstractmethod
    def conjugate_contribution(
        self,
        term: LikelihoodTerm,
        target: str,
        statistics: Mapping[str, np.ndarray],
        totals,
        temperature,
        state: Mapping[str, np.ndarray],
    ) -> dict[str, np.ndarray]:
        """What this node adds to the conjugate posterior of ``target``'s free variable under
        the tempered likelihood, in the conjugate family's additive coordinates.

        Conjugate updates add: beta (alpha, beta), gamma (alpha, beta = rate) and dirichlet
        (a) add pseudo-counts; normal and mvnormal add to the precision ``J`` and to the
        precision-weighted mean ``h = J·mean`` (`pymc_private.conjugate.CONJUGATE_FAMILIES`
        converts). Tempering raises the likelihood to 1/T (T ≥ 1), which divides every
        contribution by T. ``state`` holds the current values of the other parameters' free
        variables (the Gibbs conditional). The arithmetic is +, −, ×, / only, so the same code
        gives floats, exact rationals (object arrays of `fractions.Fraction` with a Fraction
        temperature, for the exact private samplers) or interval bounds. Raises
        `UnsupportedModelError` when ``target`` has no conjugate update.
        """

    @abstractmethod
    def statistic_moments(self, term: LikelihoodTerm, values, statistics, totals) -> list:
        """The mean and covariance of the node's released statistics given its parameters,
        for the noise-aware posterior (`pymc_private.noise_aware`).

        A list of ``(kinds, observed, mean, cov)``: the statistics ``kinds`` (one, or
        several that are correlated, stacked in that order) have, per cell, a vector of ``v``
        entries on the last axis (a count's released categories, (Σx, Σx²), or (Xᵀy, yᵀy)):
        ``observed`` is that vector as released (assembled from ``statistics``), ``mean`` its
        expectation and ``cov`` its covariance over the last two axes (or a
        `DiagonalMinusOuter` for counts): the exact first and
        second moments of a sum of n independent records (the central-limit approximation of
        Bernstein & Sheldon 2018 uses them as a Normal). ``values``, ``statistics`` (full,
        natural units) and ``totals`` (n, or the group sizes) as in `logp_from_statistics`;
        numpy or PyTensor. A regression's covariates have no model: their released Gram
        matrix is plugged in.
        """

    def count_law(
        self, term: LikelihoodTerm, values, totals
    ) -> MultinomialCounts | PoissonCounts | None:
        """The exact law of the node's released statistic given its parameters, as latent
        integer counts (`pymc_private.latent`), for the data-augmentation sampler: per
        element-resolution cell, `MultinomialCounts` of the categories (a Binomial sum as the
        successes of its trials) or a `PoissonCounts` sum. ``values`` (numpy, with leading
        batch axes) and ``totals`` (n, or group sizes with the same batch axes) as in
        `statistic_moments`. None (the default) for a node whose statistics are not integer
        counts: its noise-aware likelihood is the normal law of `statistic_moments`."""
        return None

    def conjugate_update(
        self,
        term: LikelihoodTerm,
        target: str,
        prior: Mapping[str, np.ndarray],
        statistics: Mapping[str, np.ndarray],
        totals,
        temperature: float,
        state: Mapping[str, np.ndarray],
    ) -> dict[str, np.ndarray]:
        """The conjugate posterior of ``target``'s free variable given this node alone, in
        the family's usual parameters (beta: alpha, beta; gamma: alpha, beta as a rate;
        dirichlet: a; normal: mu, sigma; mvnormal: mu, cov): ``prior`` plus
        `conjugate_contribution`."""
        family = CONJUGATE_FAMILIES[self.conjugate_priors[target][0]]
        contribution = self.conjugate_contribution(
            term, target, statistics, totals, temperature, state
        )
        additive = family.additive(prior)
        return family.usual({k: additive[k] + contribution[k] for k in additive})

    def _require_plain(self, term: LikelihoodTerm, *, allow_linear: bool = False) -> None:
        for param in term.parameters.values():
            if param.constant is not None:
                continue
            if param.free_variable is None or (param.link == "linear") != (
                allow_linear and param.name == "mu"
            ):
                raise UnsupportedModelError(
                    f"`{term.node}` ({self.name}): parameter `{param.name}` is an expression, "
                    "so the likelihood does not reduce to sufficient statistics. Forms that "
                    "do: a free variable (theta), one indexed by a group index (theta[g], g a "
                    "PrivateData, a numpy array or pm.Data; a public index is not released), "
                    "and for a Normal mean the linear predictor X_obs @ w (X_obs PrivateData) "
                    "with w = pmp.TruncatedMvNormal(name, mu, cov, radius=R); for an "
                    "intercept, add a column of ones to X_obs with bounds "
                    "(1, 1) in that column instead of writing alpha + X_obs @ w. Links "
                    "(logistic, Poisson log) have no such statistics: sample those models on "
                    "raw data on a pay-per-draw route (pmp.PrivateMetropolis)."
                )
        groups = {p.group_by for p in term.parameters.values() if p.group_by is not None}
        if len(groups) > 1:
            raise UnsupportedModelError(
                f"`{term.node}` ({self.name}): parameters indexed by different private indices "
                f"{sorted(groups)}; sufficient statistics need one grouping per node."
            )

    def _conjugate_check(self, term: LikelihoodTerm, target: str) -> ParameterTerm:
        param = term.parameters.get(target)
        if param is None or target not in self.conjugate_priors or param.constant is not None:
            raise UnsupportedModelError(
                f"`{term.node}` ({self.name}) has no conjugate update for `{target}`; "
                f"conjugate parameters: {sorted(self.conjugate_priors)}."
            )
        family, link = self.conjugate_priors[target]
        if param.link != link or param.free_variable is None:
            raise UnsupportedModelError(
                f"`{term.node}` ({self.name}): `{target}` must be a free variable with a "
                f"{family} prior entering through the {link} link for a conjugate update; "
                f"it enters through {param.link!r}."
            )
        return param

    def _statistic(self, term: LikelihoodTerm, kind: str) -> StatisticSpec:
        """Σ m (``"sum"``) or Σ m² (``"sum_squares"``) per element of ``term``'s data, m the
        grid integers of its `DataGrid`."""
        grouped = term.group_by is not None
        ranges = _grid_ranges(term.grid)
        if kind == "sum_squares":
            ranges = [_square_range(*pair) for pair in ranges]
        unit = term.grid.quantum ** (2 if kind == "sum_squares" else 1)
        suffix = f" | {term.group_by}" if grouped else ""
        return _integer_statistic(
            f"{kind}({term.data}{suffix})",
            kind,
            (term.data,),
            ((term.n_groups,) if grouped else ()) + term.record_shape,
            unit,
            ranges,
            term.record_shape,
            term.n,
            grouped=term.group_can_change,
            grids=(term.grid,),
            group_by=term.group_by,
            group_values=term.group_values,
            n_groups=term.n_groups,
        )

    def _sum_statistic(self, term: LikelihoodTerm) -> StatisticSpec:
        """Σ x of a node whose parameters are plain free variables, t(x) = x ∈ [lo, hi]."""
        self._require_plain(term)
        return self._statistic(term, "sum")

    def _counts(self, term: LikelihoodTerm, n_categories: int) -> StatisticSpec:
        grouped = term.group_by is not None
        derived = not (term.group_can_change or n_categories >= 3)
        sensitivity = sum(
            count * _counts_sensitivity(domain, grouped=term.group_can_change, derived=derived)
            for domain, count in term.domains
        )
        suffix = f" | {term.group_by}" if grouped else ""
        cells = (*term.record_shape, n_categories - 1 if derived else n_categories)
        return StatisticSpec(
            name=f"counts({term.data}{suffix})",
            kind="counts",
            data=(term.data,),
            shape=((term.n_groups,) if grouped else ()) + cells,
            unit=1.0,
            sensitivity=int(sensitivity),
            record_lower=_read_only(np.zeros(cells, dtype=np.int64)),
            record_upper=_read_only(np.ones(cells, dtype=np.int64)),
            grids=(term.grid,),
            group_by=term.group_by,
            group_values=term.group_values,
            n_groups=term.n_groups,
            n_categories=n_categories,
            derived_first=derived,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _aligned(term: LikelihoodTerm, name: str, value, ndim: int):
    """A parameter (in the op's parameterisation) shaped to broadcast against an
    element-resolution statistic (see `entries_to_cells`)."""
    param = term.parameters[name]
    if param.constant is not None:
        value = param.constant
    return entries_to_cells(param, param.apply_link(value), ndim)


def entries_to_cells(param: ParameterTerm, value, ndim: int):
    """``value`` of ``param``'s shape (an entry axis may have length 1), reshaped to
    broadcast against a statistic of ``ndim`` dimensions: grouped parameters keep their
    group axis first; their remaining axes are aligned to the right of the record axes. Axes
    of a numpy ``value`` before ``param``'s shape are batch axes (the chains of
    `pymc_private.augmentation`), kept in front. The inverse of `reduce_to_entries`."""
    tensor = isinstance(value, pt.TensorVariable)
    lead = 0 if tensor else np.ndim(value) - len(param.shape)
    if param.group_by is None and not lead:
        return value
    missing = ndim - len(param.shape)
    if missing <= 0:
        return value
    batch, own = (), tuple(param.shape)
    if not tensor:
        batch, own = np.shape(value)[:lead], np.shape(value)[lead:]
    if param.group_by is None:
        shape = batch + (1,) * missing + own
    else:
        shape = batch + own[:1] + (1,) * missing + own[1:]
    return value.reshape(shape)


def as_exact(values) -> np.ndarray:
    """Real values as an object array of exact `fractions.Fraction` (floats are dyadic
    rationals, so nothing is rounded)."""
    values = np.asarray(values)
    if values.dtype == object:
        return values
    exact = [Fraction(v) for v in values.ravel().tolist()]
    return np.array(exact, dtype=object).reshape(values.shape)


def _like(value, reference):
    """A public float constant in the arithmetic of ``reference``: exact rationals when
    ``reference`` holds exact rationals (`as_exact`), else a float array."""
    value = np.asarray(value, dtype=np.float64)
    return as_exact(value) if np.asarray(reference).dtype == object else value


def reduce_to_entries(statistic, param: ParameterTerm, batch: int = 0) -> np.ndarray:
    """Sum an element-resolution statistic over the elements that share one entry of
    ``param`` (broadcast axes), keeping a grouped parameter's group axis and ``batch``
    leading batch axes."""
    statistic = np.asarray(statistic)
    grouped = 1 if param.group_by is not None else 0
    lead = batch + grouped
    shape = param.shape[grouped:]
    extra = statistic.ndim - lead - len(shape)
    if extra > 0:
        statistic = statistic.sum(axis=tuple(range(lead, lead + extra)))
    axes = tuple(lead + i for i, s in enumerate(shape) if s == 1 and statistic.shape[lead + i] != 1)
    if axes:
        statistic = statistic.sum(axis=axes, keepdims=True)
    return statistic


def _record_counts(term: LikelihoodTerm, statistic, totals):
    """The records behind each entry of an element-resolution statistic: n, or the group
    counts n_g along the group axis of a grouped node (numpy or PyTensor)."""
    return _expand_totals(totals, statistic.ndim, term.group_by is not None)


def _sum_and_counts(
    term: LikelihoodTerm, statistics: Mapping[str, np.ndarray], totals
) -> tuple[np.ndarray, np.ndarray]:
    """Σ x and `_record_counts` broadcast to its shape, in the statistics' arithmetic."""
    total = np.asarray(statistics["sum"])
    count = np.broadcast_to(_record_counts(term, total, np.asarray(totals)), total.shape)
    return total, count


@dataclass(frozen=True, eq=False)
class DiagonalMinusOuter:
    """A covariance ``diag(diagonal) − factor factorᵀ`` over the last axis (the multinomial's
    N (diag p − p pᵀ)), kept in that form so that its Normal density costs O(v) per cell
    (Sherman–Morrison) instead of a Cholesky factorisation."""

    diagonal: object
    factor: object

    def dense(self):
        """The matrix itself (numpy or PyTensor)."""
        tensor = isinstance(self.diagonal, pt.TensorVariable)
        size = self.diagonal.shape[-1]
        identity = pt.eye(size) if tensor else np.eye(size)
        outer = self.factor[..., :, None] * self.factor[..., None, :]
        return self.diagonal[..., :, None] * identity - outer

    def tail(self) -> DiagonalMinusOuter:
        """The covariance of all entries but the first."""
        return DiagonalMinusOuter(self.diagonal[..., 1:], self.factor[..., 1:])


def _counts_moments(spec: StatisticSpec, term: LikelihoodTerm, p, counts, totals):
    """``(kinds, observed, mean, cov)`` of released multinomial counts: N p and
    N (diag p − p pᵀ) over the released categories (category 0 dropped when derived)."""
    if spec.derived_first:
        p, counts = p[..., 1:], counts[..., 1:]
    count = _vector(_record_counts(term, _ones(len(spec.shape) - 1), totals))
    sqrt = pt.sqrt if isinstance(p, pt.TensorVariable) else np.sqrt
    cov = DiagonalMinusOuter(count * p, sqrt(count) * p)
    return (("counts",), counts, count * p, cov)


def _ones(ndim: int) -> np.ndarray:
    """A dummy array of ``ndim`` axes, to shape record counts like a statistic."""
    return np.ones((1,) * ndim)


def _vector(x):
    """``x`` with a trailing axis of length 1 (numpy or PyTensor)."""
    if not isinstance(x, pt.TensorVariable):
        x = np.asarray(x)
    return x[..., None]


def _stack(items):
    """Stack on a new last axis (numpy or PyTensor)."""
    if any(isinstance(item, pt.TensorVariable) for item in items):
        return pt.stack(pt.broadcast_arrays(*items), axis=-1)
    return np.stack(np.broadcast_arrays(*items), axis=-1)


def _sum(x):
    return pt.sum(x) if isinstance(x, pt.TensorVariable) else np.sum(x)


def _log(x):
    return pt.log(x) if isinstance(x, pt.TensorVariable) else np.log(x)


class Bernoulli(LikelihoodFamily):
    """Bernoulli(p) on {0, 1}; t(x) = x; conjugate Beta.

    L (one element, p ∈ [a, b]): max over p ∈ {a, b} of |logit p|, which is ln((1−a)/a) on
    [a, 1−a] (Dimitrakakis et al. 2017, Lemma 21, Beta–Bernoulli). Statistics: counts of
    x = 1 (x = 0 derived from the total), Δ₁ = 1 per element, 2 when the record may change
    group (Zhang et al. 2016, Lemma 1). Symbolic log-likelihood: exact.
    """

    name = "Bernoulli"
    rv_op = BernoulliRV
    parameters = ("p",)
    roles = MappingProxyType({"p": "probability"})
    conjugate_priors = MappingProxyType({"p": ("beta", "identity")})

    def support(self, parameters):
        return ElementDomain(0.0, 1.0, True)

    @staticmethod
    def log_likelihood(x, p):
        return xlogy(x, p) + xlogy(1.0 - x, 1.0 - p)

    def log_likelihood_range(self, parameters, domain):
        p = parameters["p"]
        return _one_parameter_range(
            self.log_likelihood, domain.values(), p.interval, p.varies_with_record
        )

    def statistics(self, term):
        self._require_plain(term)
        return (self._counts(term, 2),)

    def logp_from_statistics(self, term, values, statistics, totals):
        counts = statistics["counts"]
        p = _aligned(term, "p", values.get("p"), counts.ndim - 1)
        return _sum(counts[..., 1] * _log(p) + counts[..., 0] * _log(1.0 - p))

    def statistic_moments(self, term, values, statistics, totals):
        (spec,) = self.statistics(term)
        p = _aligned(term, "p", values.get("p"), len(spec.shape) - 1)
        return [_counts_moments(spec, term, _stack([1 - p, p]), statistics["counts"], totals)]

    def count_law(self, term, values, totals):
        ndim = term.cell_ndim
        p = _aligned(term, "p", values.get("p"), ndim)
        return MultinomialCounts(_record_counts(term, _ones(ndim), totals), _stack([1 - p, p]))

    def conjugate_contribution(self, term, target, statistics, totals, temperature, state):
        param = self._conjugate_check(term, target)
        counts = np.asarray(statistics["counts"])
        return {
            "alpha": reduce_to_entries(counts[..., 1], param) / temperature,
            "beta": reduce_to_entries(counts[..., 0], param) / temperature,
        }


class Binomial(LikelihoodFamily):
    """Binomial(m, p) with m a known constant, on {0..m}; t(x) = x; conjugate Beta.

    L: the range of ℓ(x; p) over x at p ∈ {a, b} (fixed p), or over (x, p) jointly with p at
    its endpoints and at x/m clipped into [a, b] (varying p), x over the declared integers
    [lo, hi]. Only the endpoints and the integers next to (m+1)a, (m+1)b, ma and mb are
    evaluated, which is exact: ℓ(x; p) is concave in x (its increment log((m−x)/(x+1)) +
    logit p decreases), so over x its minimum is at lo or hi and its maximum at the mode
    ⌊(m+1)p⌋ clipped into [lo, hi]. For varying p, M(x) = max over p of ℓ(x; p) is ℓ(x; a)
    for x ≤ ma (concave: maximal at the mode of ℓ(·; a) or at ⌊ma⌋), ℓ(x; b) for x ≥ mb
    (maximal at the mode of ℓ(·; b) or at ⌈mb⌉), and ℓ(x; x/m) in between, whose increment
    φ(x) − φ(m−1−x) with φ(k) = k·log(1 + 1/k) increasing is negative below (m−1)/2 and
    positive above, so it is maximal at ⌈ma⌉ or ⌊mb⌋; the joint minimum is at x ∈ {lo, hi},
    p ∈ {a, b}. Statistics: Σ x, Δ₁ = max x − min x per element (2·max x when the record
    may change group). Symbolic log-likelihood: drops Σ log C(m, x_i).
    """

    name = "Binomial (n a constant)"
    rv_op = BinomialRV
    parameters = ("n", "p")
    roles = MappingProxyType({"n": "trials", "p": "probability"})
    conjugate_priors = MappingProxyType({"p": ("beta", "identity")})

    def accepts(self, parameters):
        trials = parameters["n"].constant
        return trials is not None and np.unique(trials).size == 1

    def _trials(self, parameters) -> int:
        return int(np.unique(parameters["n"].constant)[0])

    def support(self, parameters):
        return ElementDomain(0.0, float(self._trials(parameters)), True)

    def log_likelihood_range(self, parameters, domain):
        m = self._trials(parameters)
        p = parameters["p"]

        def log_likelihood(x, theta):
            return (
                gammaln(m + 1.0)
                - gammaln(x + 1.0)
                - gammaln(m - x + 1.0)
                + xlogy(x, theta)
                + xlogy(m - x, 1.0 - theta)
            )

        a, b = p.interval.lower, p.interval.upper
        return _one_parameter_range(
            log_likelihood,
            domain.candidates([(m + 1) * a, (m + 1) * b, m * a, m * b]),
            p.interval,
            p.varies_with_record,
            critical=lambda x: x / m,
        )

    def statistics(self, term):
        return (self._sum_statistic(term),)

    def logp_from_statistics(self, term, values, statistics, totals):
        total = statistics["sum"]
        trials = self._trials(term.parameters) * _record_counts(term, total, totals)
        p = _aligned(term, "p", values.get("p"), total.ndim)
        return _sum(total * _log(p) + (trials - total) * _log(1.0 - p))

    def statistic_moments(self, term, values, statistics, totals):
        ndim = term.cell_ndim
        p = _aligned(term, "p", values.get("p"), ndim)
        trials = self._trials(term.parameters) * _record_counts(term, _ones(ndim), totals)
        mean, variance = trials * p, trials * p * (1 - p)
        return [(("sum",), _vector(statistics["sum"]), _vector(mean), _vector(_vector(variance)))]

    def count_law(self, term, values, totals):
        ndim = term.cell_ndim
        p = _aligned(term, "p", values.get("p"), ndim)
        m = self._trials(term.parameters)
        trials = m * _record_counts(term, _ones(ndim), totals)
        return MultinomialCounts(trials, _stack([1 - p, p]), trials=m)

    def conjugate_contribution(self, term, target, statistics, totals, temperature, state):
        param = self._conjugate_check(term, target)
        total, count = _sum_and_counts(term, statistics, totals)
        trials = self._trials(term.parameters) * count
        return {
            "alpha": reduce_to_entries(total, param) / temperature,
            "beta": reduce_to_entries(trials - total, param) / temperature,
        }


class Categorical(LikelihoodFamily):
    """Categorical(p) with K categories on {0..K−1}; t(x) = one-hot(x); conjugate Dirichlet.

    L (one element, every p_k ∈ [a, u]): ln(u/a); a truncated Dirichlet with min_prob a has
    u = 1 − (K−1)a, giving ln((1 − (K−1)a)/a) (:ref:`costs-lipschitz-table`;
    Dimitrakakis et al. 2017, Lemma 24 for one node). Statistics: counts of categories
    1..K−1 (category 0 derived), Δ₁ = 1 for K = 2 and 2 for K ≥ 3 per element, 2 when the
    record may change group. Symbolic log-likelihood: exact.
    """

    name = "Categorical"
    rv_op = CategoricalRV
    parameters = ("p",)
    roles = MappingProxyType({"p": "simplex"})
    conjugate_priors = MappingProxyType({"p": ("dirichlet", "identity")})

    def support(self, parameters):
        return ElementDomain(0.0, float(parameters["p"].shape[-1] - 1), True)

    def log_likelihood_range(self, parameters, domain):
        p = parameters["p"]
        if domain.size <= 1 and not p.varies_with_record:
            return 0.0
        if not (p.interval.lower > 0.0 and math.isfinite(p.interval.upper)):
            return math.inf
        return math.log(p.interval.upper / p.interval.lower)

    def statistics(self, term):
        self._require_plain(term)
        spec = self._counts(term, term.parameters["p"].shape[-1])
        return (spec,)

    def logp_from_statistics(self, term, values, statistics, totals):
        counts = statistics["counts"]
        p = _aligned(term, "p", values.get("p"), counts.ndim)
        return _sum(counts * _log(p))

    def statistic_moments(self, term, values, statistics, totals):
        (spec,) = self.statistics(term)
        p = _aligned(term, "p", values.get("p"), len(spec.shape))
        return [_counts_moments(spec, term, p, statistics["counts"], totals)]

    def count_law(self, term, values, totals):
        p = _aligned(term, "p", values.get("p"), term.cell_ndim + 1)
        return MultinomialCounts(_record_counts(term, _ones(term.cell_ndim), totals), p)

    def conjugate_contribution(self, term, target, statistics, totals, temperature, state):
        param = self._conjugate_check(term, target)
        return {"a": reduce_to_entries(np.asarray(statistics["counts"]), param) / temperature}


class Poisson(LikelihoodFamily):
    """Poisson(λ) on {0, 1, ...}; t(x) = x; conjugate Gamma on the rate.

    L: the range of ℓ(x; λ) over x ∈ {lo..hi} at λ ∈ {c1, c2} (fixed λ), or over (x, λ)
    jointly with λ at its endpoints and at x clipped into [c1, c2] (varying λ). Only the
    endpoints and the integers next to c1 and c2 are evaluated, which is exact: ℓ(x; λ) is
    concave in x (its increment log λ − log(x+1) decreases), so over x its minimum is at lo
    or hi and its maximum at the mode ⌊λ⌋ clipped into [lo, hi]. For varying λ, M(x) = max
    over λ of ℓ(x; λ) is ℓ(x; c1) for x ≤ c1 (concave: maximal at ⌊c1⌋ or lo), ℓ(x; c2)
    for x ≥ c2 (maximal at ⌈c2⌉ or hi) and ℓ(x; x) in between, whose increment
    x·log(1 + 1/x) − 1 (−1 at x = 0) is negative, so it is maximal at ⌈c1⌉; the joint
    minimum is at x ∈ {lo, hi}, λ ∈ {c1, c2}. Statistics: Σ x, Δ₁ = hi − lo per element
    (2·hi when the record may change group). Symbolic log-likelihood: drops Σ log x_i!.
    """

    name = "Poisson"
    rv_op = PoissonRV
    parameters = ("mu",)
    roles = MappingProxyType({"mu": "rate"})
    conjugate_priors = MappingProxyType({"mu": ("gamma", "identity")})

    def support(self, parameters):
        return ElementDomain(0.0, math.inf, True)

    @staticmethod
    def log_likelihood(x, lam):
        return xlogy(x, lam) - lam - gammaln(x + 1.0)

    def log_likelihood_range(self, parameters, domain):
        lam = parameters["mu"]
        return _one_parameter_range(
            self.log_likelihood,
            domain.candidates([lam.interval.lower, lam.interval.upper]),
            lam.interval,
            lam.varies_with_record,
            critical=lambda x: x,
        )

    def statistics(self, term):
        return (self._sum_statistic(term),)

    def logp_from_statistics(self, term, values, statistics, totals):
        total = statistics["sum"]
        count = _record_counts(term, total, totals)
        lam = _aligned(term, "mu", values.get("mu"), total.ndim)
        return _sum(total * _log(lam) - count * lam)

    def statistic_moments(self, term, values, statistics, totals):
        ndim = term.cell_ndim
        lam = _aligned(term, "mu", values.get("mu"), ndim)
        count = _record_counts(term, _ones(ndim), totals)
        mean, variance = _vector(count * lam), _vector(_vector(count * lam))
        return [(("sum",), _vector(statistics["sum"]), mean, variance)]

    def count_law(self, term, values, totals):
        ndim = term.cell_ndim
        lam = _aligned(term, "mu", values.get("mu"), ndim)
        return PoissonCounts(_record_counts(term, _ones(ndim), totals) * lam, lam)

    def conjugate_contribution(self, term, target, statistics, totals, temperature, state):
        param = self._conjugate_check(term, target)
        total, count = _sum_and_counts(term, statistics, totals)
        return {
            "alpha": reduce_to_entries(total, param) / temperature,
            "beta": reduce_to_entries(count, param) / temperature,
        }


class Exponential(LikelihoodFamily):
    """Exponential with rate λ (the op's parameter is the scale 1/λ) on [0, ∞); t(x) = x;
    conjugate Gamma on the rate λ (the scale must be ``1/lam``).

    L (fixed rate, λ ∈ [c1, c2], x ∈ [lo, hi]): c2·(hi − lo), i.e. c2·B on [0, B]
    (Dimitrakakis et al. 2017, Lemma 19). Varying rate: the range of log λ − λx over the box,
    maximal at x = lo with λ = 1/lo clipped. Statistics: Σ x, Δ₁ = hi − lo per element (2·hi
    when the record may change group). Symbolic log-likelihood: exact.
    """

    name = "Exponential"
    rv_op = ExponentialRV
    parameters = ("scale",)
    roles = MappingProxyType({"scale": "rate"})
    conjugate_priors = MappingProxyType({"scale": ("gamma", "reciprocal")})

    def support(self, parameters):
        return ElementDomain(0.0, math.inf, False)

    @staticmethod
    def log_likelihood(x, scale):
        return -np.log(scale) - x / scale

    def log_likelihood_range(self, parameters, domain):
        scale = parameters["scale"]
        if not scale.interval.lower > 0.0:
            return math.inf
        xs = np.array([domain.lower, domain.upper])
        return _one_parameter_range(
            self.log_likelihood,
            xs,
            scale.interval,
            scale.varies_with_record,
            critical=lambda x: x,
        )

    def statistics(self, term):
        return (self._sum_statistic(term),)

    def logp_from_statistics(self, term, values, statistics, totals):
        total = statistics["sum"]
        count = _record_counts(term, total, totals)
        scale = _aligned(term, "scale", values.get("scale"), total.ndim)
        return _sum(-count * _log(scale) - total / scale)

    def statistic_moments(self, term, values, statistics, totals):
        ndim = term.cell_ndim
        scale = _aligned(term, "scale", values.get("scale"), ndim)
        count = _record_counts(term, _ones(ndim), totals)
        mean, variance = _vector(count * scale), _vector(_vector(count * scale * scale))
        return [(("sum",), _vector(statistics["sum"]), mean, variance)]

    def conjugate_contribution(self, term, target, statistics, totals, temperature, state):
        param = self._conjugate_check(term, target)
        total, count = _sum_and_counts(term, statistics, totals)
        return {
            "alpha": reduce_to_entries(count, param) / temperature,
            "beta": reduce_to_entries(total, param) / temperature,
        }


class _Normal(LikelihoodFamily):
    """Shared by the Normal families: the log-likelihood range over a (μ, σ) box.

    ℓ(x; μ, σ) = −(x−μ)²/(2σ²) − log σ − ½ log 2π, x ∈ [lo, hi], μ ∈ [m1, m2], σ ∈ [s1, s2].

    - σ fixed, μ fixed: sup over the box of range_x (x−μ)²/(2σ²), i.e.
      max_{μ∈{m1,m2}} h(μ)/(2 s1²) with h(μ) = max_x (x−μ)² − min_x (x−μ)², which is convex in
      μ (:ref:`costs-lipschitz-table`).
    - σ fixed, μ varying (indexed by private data, or a linear predictor xᵀw with
      |xᵀw| ≤ Bx·R): (dmax² − dmin²)/(2 s1²), dmax and dmin the largest and smallest |x − μ|;
      for a linear regression with |y| ≤ By this is (By + Bx·R)²/(2σ²)
      (:ref:`costs-lipschitz-table`).
    - σ varying: the range of ℓ over the whole box (log σ no longer cancels).
    """

    roles = MappingProxyType({"mu": "location", "sigma": "scale"})
    parameters = ("mu", "sigma")
    rv_op = NormalRV

    def support(self, parameters):
        return ElementDomain(-math.inf, math.inf, False)

    def log_likelihood_range(self, parameters, domain):
        mu, sigma = parameters["mu"], parameters["sigma"]
        m1, m2 = mu.interval.lower, mu.interval.upper
        s1, s2 = sigma.interval.lower, sigma.interval.upper
        lo, hi = domain.lower, domain.upper
        if not (mu.interval.finite and s1 > 0.0 and math.isfinite(s1)):
            return math.inf
        d_min = max(0.0, m1 - hi, lo - m2)
        d_max = max(hi - m1, m2 - lo)
        if not sigma.varies_with_record:
            if mu.varies_with_record:
                spread = d_max**2 - d_min**2
            else:
                spread = max(
                    max((lo - m) ** 2, (hi - m) ** 2) - max(0.0, lo - m, m - hi) ** 2
                    for m in (m1, m2)
                )
            return spread / (2.0 * s1 * s1)
        if not math.isfinite(s2):
            return math.inf
        s_star = min(max(d_min, s1), s2)
        top = -(d_min**2) / (2.0 * s_star**2) - math.log(s_star)
        bottom = min(-(d_max**2) / (2.0 * s**2) - math.log(s) for s in (s1, s2))
        return top - bottom

    def _precision(self, term: LikelihoodTerm, value, reference):
        """1/σ² of the node's ``sigma`` parameter, shaped like ``reference`` and in its
        arithmetic, from its constant or from ``value``, the current value of its free
        variable: τ itself for ``tau=`` (link ``inverse_sqrt``), 1/σ² for σ, λ² for a scale
        ``1/λ``; exact in rational arithmetic."""
        sigma = term.parameters["sigma"]
        if sigma.constant is not None:
            value = _like(sigma.constant, reference)
            return 1 / (value * value)
        value = entries_to_cells(sigma, value, np.ndim(reference))
        if sigma.link == "inverse_sqrt":
            return value
        if sigma.link == "reciprocal":
            return value * value
        return 1 / (value * value)

    @staticmethod
    def _mu_contribution(param, sum_x, count, precision, temperature):
        """Normal prior on μ: data precision count/σ² and weighted mean Σx/σ², over T."""
        return {
            "h": reduce_to_entries(sum_x * precision, param) / temperature,
            "J": reduce_to_entries(count * precision, param) / temperature,
        }


class NormalKnownSigma(_Normal):
    """Normal(μ, σ) with σ a known constant; t(x) = x; conjugate Normal on μ.

    L: see `_Normal` (σ fixed). Statistics: Σ x, Δ₁ = hi − lo per element (2·max|x| when the
    record may change group). Symbolic log-likelihood: Σ_i −(x_i − μ)²/(2σ²) without the
    parameter-free terms (Σ x², log σ and log 2π), i.e. (μ S − N μ²/2)/σ².
    """

    name = "Normal (sigma a constant)"
    conjugate_priors = MappingProxyType({"mu": ("normal", "identity")})

    def accepts(self, parameters):
        return parameters["sigma"].constant is not None and parameters["mu"].covariates is None

    def statistics(self, term):
        return (self._sum_statistic(term),)

    def logp_from_statistics(self, term, values, statistics, totals):
        total = statistics["sum"]
        count = _record_counts(term, total, totals)
        mu = _aligned(term, "mu", values.get("mu"), total.ndim)
        sigma = _aligned(term, "sigma", None, total.ndim)
        return _sum((mu * total - 0.5 * count * mu * mu) / sigma**2)

    def statistic_moments(self, term, values, statistics, totals):
        ndim = term.cell_ndim
        mu = _aligned(term, "mu", values.get("mu"), ndim)
        sigma = _aligned(term, "sigma", None, ndim)
        count = _record_counts(term, _ones(ndim), totals)
        mean, variance = _vector(count * mu), _vector(_vector(count * sigma * sigma))
        return [(("sum",), _vector(statistics["sum"]), mean, variance)]

    def conjugate_contribution(self, term, target, statistics, totals, temperature, state):
        param = self._conjugate_check(term, target)
        total, count = _sum_and_counts(term, statistics, totals)
        precision = self._precision(term, None, total)
        return self._mu_contribution(param, total, count, precision, temperature)


class NormalFreeSigma(_Normal):
    """Normal(μ, σ) with σ a free variable bounded away from 0 (and from ∞ when σ varies
    with the record): a truncated prior on σ, or on the precision τ passed as ``tau=``.

    t(x) = (x, x²); conjugate Normal on μ given σ, Gamma on τ = 1/σ² given μ (needs the
    prior on τ, ``pm.Normal(..., tau=tau)``). L: see `_Normal`. Statistics: Σ x and Σ x²,
    Δ₁ = (hi − lo) + (max x² − min x²) per element (each doubled to 2·max when the record may
    change group): the sum of the two statistics' sensitivities, an upper bound on the joint
    one. Symbolic log-likelihood: exact, −(S2 − 2μS1 + Nμ²)/(2σ²) − N log σ − (N/2) log 2π.
    """

    name = "Normal (sigma or tau a bounded free variable)"
    conjugate_priors = MappingProxyType(
        {"mu": ("normal", "identity"), "sigma": ("gamma", "inverse_sqrt")}
    )

    def accepts(self, parameters):
        return parameters["sigma"].constant is None and parameters["mu"].covariates is None

    def statistics(self, term):
        first = self._sum_statistic(term)
        second = self._statistic(term, "sum_squares")
        return (first, second)

    def logp_from_statistics(self, term, values, statistics, totals):
        s1, s2 = statistics["sum"], statistics["sum_squares"]
        count = _record_counts(term, s1, totals)
        mu = _aligned(term, "mu", values.get("mu"), s1.ndim)
        sigma = _aligned(term, "sigma", values.get("sigma"), s1.ndim)
        quadratic = s2 - 2.0 * mu * s1 + count * mu * mu
        return _sum(
            -quadratic / (2.0 * sigma**2)
            - count * _log(sigma)
            - 0.5 * count * math.log(2 * math.pi)
        )

    def statistic_moments(self, term, values, statistics, totals):
        """(Σx, Σx²) per element: mean N(μ, σ² + μ²); covariance N[[σ², 2μσ²], [2μσ²,
        2σ⁴ + 4μ²σ²]] (the moments of x and x² for x ~ Normal(μ, σ))."""
        ndim = term.cell_ndim
        mu = _aligned(term, "mu", values.get("mu"), ndim)
        sigma = _aligned(term, "sigma", values.get("sigma"), ndim)
        count = _record_counts(term, _ones(ndim), totals)
        var = sigma * sigma
        mean = _stack([count * mu, count * (var + mu * mu)])
        cross = count * 2 * mu * var
        cov = _stack(
            [
                _stack([count * var, cross]),
                _stack([cross, count * (2 * var * var + 4 * mu * mu * var)]),
            ]
        )
        observed = _stack([statistics["sum"], statistics["sum_squares"]])
        return [(("sum", "sum_squares"), observed, mean, cov)]

    def conjugate_contribution(self, term, target, statistics, totals, temperature, state):
        param = self._conjugate_check(term, target)
        s1, count = _sum_and_counts(term, statistics, totals)
        if target == "mu":
            precision = self._precision(term, np.asarray(state["sigma"]), s1)
            return self._mu_contribution(param, s1, count, precision, temperature)
        mu_term = term.parameters["mu"]
        if mu_term.constant is not None:  # a known mean: no state to read
            mu = _like(mu_term.constant, s1)
        else:
            mu = entries_to_cells(mu_term, np.asarray(state["mu"]), s1.ndim)
        quadratic = np.asarray(statistics["sum_squares"]) - 2 * mu * s1 + count * mu * mu
        return {
            "alpha": reduce_to_entries(count, param) / (2 * temperature),
            "beta": reduce_to_entries(quadratic, param) / (2 * temperature),
        }


class NormalLinearRegression(_Normal):
    """Normal(Xw, σ), X private with declared bounds, ‖w‖₂ ≤ R (TruncatedMvNormal), σ known
    or free; conjugate MvNormal on w (given σ) and Gamma on τ = 1/σ² (given w).

    L: (By + Bx·R)²/(2σ_min²) for |y| ≤ By and ‖x‖₂ ≤ Bx (:ref:`costs-lipschitz-table`;
    see `_Normal`, μ varying), tighter for asymmetric bounds on y. Statistics per record: t(x, y) =
    (x xᵀ, x y[, y²]), released as XᵀX (upper triangle), Xᵀy and, when σ is free, yᵀy.
    Δ₁ ≤ Σ_{j≤k} width(x_j x_k) + Σ_j width(x_j y) [+ width(y²)], the sum of each entry's
    range over the declared box (an upper bound on the joint sup). Symbolic
    log-likelihood: −(yᵀy − 2wᵀXᵀy + wᵀXᵀXw)/(2σ²) − n log σ − (n/2) log 2π, without yᵀy and
    the constants when σ is known.
    """

    name = "Normal linear regression (mu = X @ w, X PrivateData)"
    conjugate_priors = MappingProxyType(
        {"mu": ("mvnormal", "linear"), "sigma": ("gamma", "inverse_sqrt")}
    )

    def accepts(self, parameters):
        return parameters["mu"].covariates is not None

    def _sigma_known(self, term) -> bool:
        return term.parameters["sigma"].constant is not None

    def statistics(self, term):
        self._require_plain(term, allow_linear=True)
        if term.record_shape != () or term.group_by is not None:
            raise UnsupportedModelError(
                f"`{term.node}` ({self.name}): the response must hold one value per record "
                "and the weights must not be indexed by private data."
            )
        covariates = term.parameters["mu"].covariates
        x_grid, y_grid = term.covariate_grid, term.grid
        x_ranges = _grid_ranges(x_grid)
        (y_range,) = _grid_ranges(y_grid)
        p = len(x_ranges)
        rows, columns = np.triu_indices(p)
        gram = [
            _square_range(*x_ranges[j]) if j == k else _product_range(x_ranges[j], x_ranges[k])
            for j, k in zip(rows.tolist(), columns.tolist(), strict=True)
        ]
        cross = [_product_range(x_range, y_range) for x_range in x_ranges]
        specs = [
            _integer_statistic(
                f"gram({covariates})",
                "gram",
                (covariates,),
                (len(gram),),
                x_grid.quantum**2,
                gram,
                (len(gram),),
                term.n,
                grouped=False,
                grids=(x_grid,),
            ),
            _integer_statistic(
                f"cross({covariates}, {term.data})",
                "cross",
                (covariates, term.data),
                (p,),
                x_grid.quantum * y_grid.quantum,
                cross,
                (p,),
                term.n,
                grouped=False,
                grids=(x_grid, y_grid),
            ),
        ]
        if not self._sigma_known(term):
            specs.append(self._statistic(term, "sum_squares"))
        return tuple(specs)

    def _quadratic(self, w, statistics, matmul):
        gram, cross = statistics["gram"], statistics["cross"]
        value = -2.0 * _sum(w * cross) + _sum(w * matmul(gram, w))
        if "sum_squares" in statistics:
            value = value + statistics["sum_squares"]
        return value

    def logp_from_statistics(self, term, values, statistics, totals):
        w = values["mu"]
        tensor = isinstance(w, pt.TensorVariable)
        quadratic = self._quadratic(w, statistics, pt.dot if tensor else np.dot)
        sigma_term = term.parameters["sigma"]
        if sigma_term.constant is not None:
            sigma = float(np.unique(sigma_term.constant)[0])
            return -quadratic / (2.0 * sigma**2)
        sigma = sigma_term.apply_link(values["sigma"])
        return (
            -quadratic / (2.0 * sigma**2)
            - totals * _log(sigma)
            - 0.5 * totals * math.log(2 * math.pi)
        )

    def statistic_moments(self, term, values, statistics, totals):
        """Given the covariates' Gram matrix G = XᵀX (the released one, plugged in: the
        covariates have no model), Xᵀy ~ Normal(Gw, σ²G) exactly; with σ free, yᵀy joins it
        with mean wᵀGw + nσ², variance 2nσ⁴ + 4σ²wᵀGw and covariance 2σ²Gw with Xᵀy."""
        w = values["mu"]
        tensor = isinstance(w, pt.TensorVariable)
        gram = statistics["gram"]
        fitted = (pt.dot if tensor else np.matmul)(w, gram)  # G w, G symmetric; w may be batched
        sigma_term = term.parameters["sigma"]
        if sigma_term.constant is not None:
            var = float(np.unique(sigma_term.constant)[0]) ** 2
            return [(("cross",), statistics["cross"], fitted, var * gram)]
        var = _vector(sigma_term.apply_link(values["sigma"]) ** 2)
        quadratic = _vector((w * fitted).sum(axis=-1))
        concatenate = pt.concatenate if tensor else np.concatenate
        mean = concatenate([fitted, quadratic + totals * var], axis=-1)
        corner = 2 * totals * var * var + 4 * var * quadratic
        upper = concatenate([_vector(var) * gram, _vector(2 * var * fitted)], axis=-1)
        lower = concatenate([2 * var * fitted, corner], axis=-1)[..., None, :]
        observed = concatenate([statistics["cross"], _vector(statistics["sum_squares"])], axis=-1)
        cov = concatenate([upper, lower], axis=-2)
        return [(("cross", "sum_squares"), observed, mean, cov)]

    def conjugate_contribution(self, term, target, statistics, totals, temperature, state):
        self._conjugate_check(term, target)
        gram, cross = np.asarray(statistics["gram"]), np.asarray(statistics["cross"])
        if target == "mu":
            sigma = term.parameters["sigma"]
            value = None if sigma.constant is not None else np.asarray(state["sigma"])
            precision = self._precision(term, value, cross)
            return {"h": cross * precision / temperature, "J": gram * precision / temperature}
        quadratic = self._quadratic(np.asarray(state["mu"]), statistics, np.dot)
        return {"alpha": totals / (2 * temperature), "beta": quadratic / (2 * temperature)}


FAMILIES: tuple[LikelihoodFamily, ...] = (
    Bernoulli(),
    Binomial(),
    Categorical(),
    Poisson(),
    Exponential(),
    NormalLinearRegression(),
    NormalKnownSigma(),
    NormalFreeSigma(),
)
"""Every supported family, in the order they are tried."""


def find_family(op, parameters: Mapping[str, ParameterTerm]) -> LikelihoodFamily | None:
    """The first family of `FAMILIES` whose op matches and that accepts the parameters."""
    for family in FAMILIES:
        if isinstance(op, family.rv_op) and family.accepts(parameters):
            return family
    return None
