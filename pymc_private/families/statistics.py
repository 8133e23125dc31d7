"""The statistics vocabulary: what a likelihood family is handed and what it releases.

`Interval` and `ElementDomain` are the public ranges of parameters and of data elements;
`DataGrid` the public integer grid on which a `PrivateData` array enters sufficient
statistics; `ParameterTerm` what the graph reader knows about one parameter of an observed
node; `StatisticSpec` one sufficient statistic s(D) = Σ_i t(x_i) as released: its kind, shape,
per-record range and L1 sensitivity Δ₁ over one replaced record (Zhang et al. 2016, Lemma 1;
Foulds et al. 2016, eq. 16). The helpers below them build statistics of each kind, check from
public quantities that they are computed exactly in int64, complete released counts with
their derived category, and move a statistic between element resolution and the entries of
a parameter.

Vocabulary. A record of an observed array of shape ``(n, *record_shape)`` has
``prod(record_shape)`` *elements*; ℓ is the log density of one element. A parameter is
*varying* when it may differ between a record and its replacement (it is indexed by private
data, ``theta[y_obs]``, or computed from private covariates, ``X @ w``); otherwise both records
see the same parameter value and only the data changes. Every quantity here is a function of
public inputs: declared bounds, prior supports, shapes and constants.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import pytensor.tensor as pt

from pymc_private.errors import DataBoundsError, UnsupportedModelError
from pymc_private.families.kinds import (
    COUNTS,
    CROSS,
    GRAM,
    GROUP_CROSS,
    GROUP_GRAM,
    SUM_SQUARES,
    StatisticKind,
    statistic_kind,
)

__all__ = [
    "DataGrid",
    "ElementDomain",
    "Interval",
    "ParameterTerm",
    "StatisticSpec",
    "as_exact",
    "complete_statistic",
    "counts_sensitivity",
    "data_grid",
    "entries_to_cells",
    "grid_ranges",
    "group_counts_statistic",
    "integer_statistic",
    "product_range",
    "read_only",
    "reduce_to_entries",
    "regression_group",
    "regression_l2_squared",
    "square_range",
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
        lower=read_only(np.array(grid_lower, dtype=np.int64).reshape(lower.shape)),
        upper=read_only(np.array(grid_upper, dtype=np.int64).reshape(upper.shape)),
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
        The covariate matrix of a linear predictor: a `PrivateData` name, or the name of a
        public one (``pm.Data`` or a constant).
    covariate_values
        The values of public covariates, one row per record (read once by the analysis); None
        for `PrivateData`. Like a public index, public covariates are not part of the record:
        neighbours share them (:ref:`privacy-model-public-inputs`).
    radius
        ``‖w‖₂ ≤ radius`` for the weights of a linear predictor, when the prior says so.
    prior_family
        The family name `parameter_support` reports for ``free_variable`` (``"beta"``, ...).
    intercept, n_intercepts
        Varying intercepts of a linear predictor, ``alpha[g] + X @ w`` with ``g`` a public
        index (`group_by`, `group_values`): the free variable ``alpha`` and its length G.
        None for a predictor without them.
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
    covariate_values: np.ndarray | None = None
    radius: float | None = None
    prior_family: str | None = None
    intercept: str | None = None
    n_intercepts: int | None = None

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
        The `pymc_private.families.kinds.StatisticKind` (a name is parsed to it):
        ``"counts"``, per-category counts of integer data with categories ``0..K−1``, whose
        category 0 is *not released* when derived: it is the total (n, or the group's count)
        minus the others, which is post-processing since n is public and group counts are
        released. ``"sum"``: Σ m per element. ``"sum_squares"``: Σ m² per element.
        ``"gram"``: MᵀM of the covariates' grid integers, released as its upper triangle in
        ``numpy.triu_indices`` order. ``"cross"``: Mᵀm_y. The varying intercepts of a
        regression (``alpha[g] + X @ w``, g a public index) add the blocks of the one-hot
        design of g: ``"group_gram"``, Σ_{i∈g} m_i per group (G × p), and
        ``"group_cross"``, Σ_{i∈g} m_y,i per group (G).
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
        cells (`pymc_private.pay_once.privatize`).
    covariate_values
        For ``"cross"`` with public covariates: their grid integers M (one row per record,
        int64), read with the rows of the data like a public index; ``data`` then names the
        response alone.
    l2_squared
        A bound on Δ₂² in integer steps proved where the statistic is built, when it is
        tighter than those `sensitivity_l2_squared` derives from the per-record ranges.
    nodes
        The observed nodes that use it (a statistic shared by several nodes is released once).
    """

    name: str
    kind: StatisticKind
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
    covariate_values: np.ndarray | None = None
    l2_squared: int | None = None
    nodes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", statistic_kind(self.kind))

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
        if self.l2_squared is not None:
            bounds.append(self.l2_squared)
        cells = self.shape[1:] if self.group_by is not None else self.shape
        lower = np.broadcast_to(self.record_lower, cells).ravel().tolist()
        upper = np.broadcast_to(self.record_upper, cells).ravel().tolist()
        within = sum((u - low) ** 2 for low, u in zip(lower, upper, strict=True))
        if self.group_can_change:
            within = max(
                within, 2 * sum(max(low * low, u * u) for low, u in zip(lower, upper, strict=True))
            )
        bounds.append(within)
        own = self.kind.l2_squared_bound(upper)
        if own is not None:
            bounds.append(own)
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
        (`pymc_private.data.records.statistics_pass`). Touches private data: its output must go
        through a mechanism before release.
        """
        group = self.group_values
        if group is not None and rows is not None:
            group = group[rows]
        if group is None and self.group_by is not None:
            group = np.asarray(arrays[self.group_by], dtype=np.int64)
        return self.kind.compute(self, arrays, group, rows)

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
    matrix XᵀX, its Xᵀy and, when present, its yᵀy and the per-group Σx and Σy of varying
    intercepts (empty when ``specs`` holds no Gram matrix with one matching cross product, or
    per-group sums of more than one grouping).
    `regression_l2_squared` bounds them jointly."""
    grams = [spec for spec in specs if spec.kind is GRAM]
    if len(grams) != 1:
        return ()
    (gram,) = grams
    crosses = [spec for spec in specs if spec.kind is CROSS and spec.data[0] == gram.data[0]]
    if len(crosses) != 1 or any(spec.kind is CROSS for spec in specs if spec not in crosses):
        return ()
    (cross,) = crosses
    squares = [
        spec
        for spec in specs
        if spec.kind is SUM_SQUARES
        and spec.data == cross.data[1:]
        and spec.group_by is None
        and spec.shape == ()
    ]
    intercepts = [
        spec
        for spec in specs
        if (spec.kind is GROUP_GRAM and spec.data == gram.data)
        or (spec.kind is GROUP_CROSS and spec.data == cross.data[1:])
    ]
    if len({spec.group_by for spec in intercepts}) > 1:
        # Each grouping's one-hot design joins z: K groupings move K such rows, a bound
        # `regression_l2_squared` does not take. Released apart, each at its own bound.
        return ()
    return (gram, cross, *squares[:1], *intercepts)


def regression_l2_squared(group: Sequence[StatisticSpec]) -> Fraction:
    """A bound on the squared L2 sensitivity, in natural units, of a regression's released
    moments taken together (`regression_group`): XᵀX's upper triangle, Xᵀy and yᵀy.

    They are cells of the upper triangle of zzᵀ summed over records, z = (x, y) one record's
    covariates and response in natural units. Replacing a record a by b moves that triangle by
    A = aaᵀ − bbᵀ, and Σ_{i≤j} A_ij² = ½(‖A‖_F² + Σ_i A_ii²) with ‖A‖_F² = ‖a‖⁴ + ‖b‖⁴ −
    2(a·b)² ≤ 2S² and A_ii² = (a_i² − b_i²)² ≤ N_i⁴, where N_i = max|z_i| over the declared
    bounds (on the grid), S = Σ_i N_i² and Q = Σ_i N_i⁴:

        Δ₂² ≤ S² + Q/2.

    Varying intercepts by a public index g (``"group_gram"``, ``"group_cross"``): the one-hot
    design of g joins z, z = (e_g, x, y), and the per-group sums Σ_{i∈g} x_i and Σ_{i∈g} y_i
    are the cells e_g xᵀ and e_g y of zzᵀ. A record keeps its group (g is public, not part of
    the record), so a and b share e_g: the cells e_g e_gᵀ (the public n_g) do not move, and
    the others move as those of z = (1, x, y) do, with N_0 = 1 and A_00 = 0:

        Δ₂² ≤ (1 + S)² + Q/2.

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
        for low, high in grid_ranges(grid)
    ]
    squares = [bound * bound for bound in bounds]
    constant = Fraction(any(spec.kind in (GROUP_GRAM, GROUP_CROSS) for spec in group))
    return (constant + sum(squares, Fraction(0))) ** 2 + sum(
        (m * m for m in squares), Fraction(0)
    ) / 2


def complete_statistic(spec: StatisticSpec, released, totals):
    """The full statistic from its released form in natural units (post-processing).

    Counts whose category 0 is derived get it back as ``totals − Σ_{k≥1} counts_k``
    (``totals`` is n, or the full group-count vector for grouped counts); a packed Gram
    matrix is unpacked to a symmetric matrix; other kinds are returned as they are
    (`StatisticKind.complete`). Works on floats, on object arrays of exact rationals and on
    PyTensor tensors (the data of a privatised model).
    """
    if not isinstance(released, pt.TensorVariable):
        released = np.asarray(released)
    return spec.kind.complete(spec, released, totals)


def group_counts_statistic(index: str, n_groups: int, domain: ElementDomain) -> StatisticSpec:
    """The group sizes n_g of a private index, released as counts with category 0 derived.

    Δ₁: a record moving from group g to g' changes n_g and n_g' by one each: 2. With two
    groups n_0 is derived from the public total (Zhang et al. 2016, Lemma 1): 1.
    """
    derived = n_groups < 3
    released = n_groups - 1 if derived else n_groups
    return StatisticSpec(
        name=f"counts({index})",
        kind=COUNTS,
        data=(index,),
        shape=(released,),
        unit=1.0,
        sensitivity=counts_sensitivity(domain, grouped=False, derived=derived),
        record_lower=read_only(np.zeros(released, dtype=np.int64)),
        record_upper=read_only(np.ones(released, dtype=np.int64)),
        n_categories=n_groups,
        derived_first=derived,
    )


def counts_sensitivity(domain: ElementDomain, *, grouped: bool, derived: bool = True) -> int:
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


def square_range(lower: int, upper: int) -> tuple[int, int]:
    """The range of m² for integers m in [lower, upper]."""
    low = 0 if lower <= 0 <= upper else min(lower * lower, upper * upper)
    return low, max(lower * lower, upper * upper)


def product_range(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    """The range of the product of integers in the intervals ``a`` and ``b``."""
    products = [x * y for x in a for y in b]
    return min(products), max(products)


def read_only(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def grid_ranges(grid: DataGrid) -> list[tuple[int, int]]:
    """(lower, upper) grid integers of each element of a record, as Python integers."""
    return list(zip(grid.lower.ravel().tolist(), grid.upper.ravel().tolist(), strict=True))


def integer_statistic(
    name: str,
    kind: StatisticKind,
    data: tuple[str, ...],
    shape: tuple[int, ...],
    unit: float,
    ranges: list[tuple[int, int]],
    record_shape: tuple[int, ...],
    n: int,
    *,
    grouped: bool,
    grids: tuple[DataGrid, ...],
    sensitivity: int | None = None,
    **grouping,
) -> StatisticSpec:
    """A sum statistic with per-record contributions t ∈ ``ranges`` (one range per cell of a
    record, in grid steps), after checking from public quantities that it fits int64.
    ``sensitivity`` is a Δ₁ the caller proved tighter than the ranges' (public covariates)."""
    lower = [low for low, _ in ranges]
    upper = [high for _, high in ranges]
    _check_grids(name, data, grids)
    _check_capacity(name, n, max([max(abs(v) for v in lower + upper), 1]))
    if sensitivity is None:
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
        record_lower=read_only(np.array(lower, dtype=np.int64).reshape(record_shape)),
        record_upper=read_only(np.array(upper, dtype=np.int64).reshape(record_shape)),
        grids=grids,
        **grouping,
    )


def entries_to_cells(param: ParameterTerm, value, ndim: int):
    """``value`` of ``param``'s shape (an entry axis may have length 1), reshaped to
    broadcast against a statistic of ``ndim`` dimensions: grouped parameters keep their
    group axis first; their remaining axes are aligned to the right of the record axes. Axes
    of a numpy ``value`` before ``param``'s shape are batch axes (the chains of
    `pymc_private.noise_aware.sampler`), kept in front. The inverse of `reduce_to_entries`."""
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
