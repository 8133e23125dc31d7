"""Statistic kinds: what a kind of sufficient statistic is, once, as an object.

A `pymc_private.families.statistics.StatisticSpec` says which statistic is released (its data,
shape,
grid and sensitivity); its kind says how such a statistic is computed from the records, how
its released form completes to the full statistic, how it is projected after noise and how
its entries enter the noise-aware likelihood. Each kind is one object below, and the rest of
the package asks it instead of comparing names:

- `COUNTS`: per-category counts of integer data (category 0 derived from the totals unless
  every category is released, Zhang et al. 2016, §4);
- `SUM` and `SUM_SQUARES`: Σ m and Σ m² per element of the data's grid integers m;
- `GRAM`: MᵀM of the covariates' grid integers, released as its upper triangle;
- `CROSS`: Mᵀm_y;
- `GROUP_GRAM` and `GROUP_CROSS`: Σ_{i∈g} m_i and Σ_{i∈g} m_y,i per group g of varying
  intercepts (the blocks of the one-hot design of g).

A kind is also its name: a `str` equal to ``"counts"``, ``"sum"``, …, which is what the
analysis displays and records in ``to_dict``, what keys the statistics a family is handed
(``statistics["sum"]``), and what a pickle stores (unpickling returns the same object, so
kinds compare by identity).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np
import pytensor.tensor as pt

__all__ = [
    "COUNTS",
    "CROSS",
    "GRAM",
    "GROUP_CROSS",
    "GROUP_GRAM",
    "KINDS",
    "SUM",
    "SUM_SQUARES",
    "Cells",
    "StatisticKind",
    "expand_totals",
    "gram_size",
    "round_preserving_total",
    "simplex_projection",
    "statistic_kind",
]

# Rows per block of the float32 products that count categories: every partial sum of a block
# is an integer below 2²⁴, exact in float32.
_FLOAT32_EXACT_ROWS = 2**24


class Cells(Protocol):
    """What a kind reads of the statistic it computes, completes and projects
    (`pymc_private.families.statistics.StatisticSpec` is one): its data and their public
    grids, its layout (shape, groups, categories, the derived first cell), a record's cell
    ranges, and the public covariates of a regression's moments."""

    data: tuple[str, ...]
    shape: tuple[int, ...]
    grids: tuple[Any, ...]
    group_by: str | None
    n_groups: int | None
    n_categories: int | None
    derived_first: bool
    record_lower: np.ndarray
    record_upper: np.ndarray
    covariate_values: np.ndarray | None

    def natural(self, values, *, exact: bool = False) -> np.ndarray: ...


class StatisticKind(str):
    """One kind of sufficient statistic s(D) = Σ_i t(x_i); the string is its public name.

    Attributes
    ----------
    categories
        Per-category counts: the last axis holds categories, and a cell's categories sum to
        its record count N (the projection puts them on that simplex).
    vector
        Its last axis is one vector of the noise-aware likelihood (a count's categories, a
        cross product's p entries, the per-group sums of y); otherwise each entry is one.
    """

    categories = False
    vector = False

    def __reduce__(self):
        return statistic_kind, (str(self),)

    @property
    def name(self) -> str:
        """The public name (a plain `str`)."""
        return str(self)

    def compute(self, spec: Cells, arrays: Mapping[str, np.ndarray], group, rows) -> np.ndarray:
        """s(D) of ``spec`` in released form, exact int64, from the raw arrays of the rows
        ``rows`` (`pymc_private.families.statistics.StatisticSpec.compute`); ``group`` is the
        group index at those rows."""
        raise NotImplementedError

    def complete(self, spec: Cells, released, totals):
        """The full statistic from its released form (post-processing): numpy arrays, object
        arrays of exact rationals, or PyTensor tensors. Returned as it is by default."""
        return released

    def project(self, spec: Cells, value, totals) -> np.ndarray:
        """A noisy released value onto what a data set of ``totals`` records per cell can
        produce (post-processing); floats as they are by default."""
        return np.asarray(value, dtype=np.float64)

    def l2_squared_bound(self, upper: list[int]) -> int | None:
        """A bound on Δ₂² in integer steps that holds for this kind only, from the upper ends
        ``upper`` of one record's cell ranges (`StatisticSpec.sensitivity_l2_squared`)."""
        return None


class _Counts(StatisticKind):
    categories = True
    vector = True

    def compute(self, spec, arrays, group, rows):
        """Counts of categories ``first..K−1`` per group and cell: for each category k ≥ 1 a
        product (group indicator)ᵀ · (value = k indicator) in float32, exact because every
        partial sum is an integer below 2²⁴ (blocks of at most 2²⁴ records); category 0,
        when released, is the group's size minus the others."""
        values = np.asarray(arrays[spec.data[0]])
        first = 1 if spec.derived_first else 0
        groups = spec.n_groups or 1
        cells = int(np.prod(values.shape[1:], dtype=np.int64))
        values = values.reshape(values.shape[0], cells)
        counts = np.zeros((groups, cells, spec.n_categories), dtype=np.int64)
        step = _FLOAT32_EXACT_ROWS
        for start in range(0, values.shape[0], step):
            block = values[start : start + step]
            if group is None:
                members = np.ones((1, block.shape[0]), dtype=np.float32)
            else:
                labels = group[start : start + step]
                members = (labels == np.arange(groups)[:, None]).astype(np.float32)
            here = np.zeros_like(counts)
            for k in range(1, spec.n_categories):
                indicator = (block == k).astype(np.float32)
                here[:, :, k] = np.rint(members @ indicator).astype(np.int64)
            sizes = members.sum(axis=1, dtype=np.int64)
            here[:, :, 0] = sizes[:, None] - here[:, :, 1:].sum(axis=2)
            counts += here
        return counts[..., first:].reshape(spec.shape)

    def complete(self, spec, released, totals):
        """Category 0, when derived, back as ``totals − Σ_{k≥1} counts_k`` (``totals`` is n,
        or the full group-count vector for grouped counts)."""
        if not spec.derived_first:
            return released
        grouped = spec.group_by is not None
        if isinstance(released, pt.TensorVariable):
            total = expand_totals(pt.as_tensor(totals), released.ndim - 1, grouped)
            first = total - released.sum(axis=-1)
            return pt.concatenate([pt.shape_padright(first), released], axis=-1)
        released = np.asarray(released)
        total = expand_totals(np.asarray(totals), released.ndim - 1, grouped)
        first = total - released.sum(axis=-1)
        return np.concatenate([np.asarray(first)[..., None], released], axis=-1)

    def project(self, spec, value, totals):
        """Counts onto {v ≥ 0, Σ v = N} per cell (category 0 included), then integers, in
        released form (category 0 dropped again when it is derived)."""
        totals = np.broadcast_to(totals, value.shape[:-1])
        full = value.astype(np.float64)
        derived = spec.derived_first
        if derived:
            full = np.concatenate([(totals - full.sum(axis=-1))[..., None], full], axis=-1)
        projected = round_preserving_total(simplex_projection(full, totals), totals)
        return (projected[..., 1:] if derived else projected).astype(np.int64)


class _Sum(StatisticKind):
    """Σ m^power per element, per group when grouped."""

    power = 1

    def compute(self, spec, arrays, group, rows):
        m = spec.grids[0].quantize(arrays[spec.data[0]])
        t = m * m if self.power == 2 else m
        if group is None:
            return t.sum(axis=0)
        out = np.zeros((spec.n_groups, *t.shape[1:]), dtype=t.dtype)
        np.add.at(out, group, t)
        return out


class _RecordSum(_Sum):
    """Σ m^power of a record's own elements, projected into what N records can sum to."""

    def project(self, spec, value, totals):
        """Σ t(x) into [N·min t, N·max t] elementwise, t's range on the data grid."""
        value = np.asarray(value)
        lower = totals * spec.natural(spec.record_lower)
        upper = totals * spec.natural(spec.record_upper)
        return np.clip(value, lower, upper).astype(value.dtype)


class _RecordSquares(_RecordSum):
    power = 2


class _GroupCross(_Sum):
    vector = True


class _Gram(StatisticKind):
    def compute(self, spec, arrays, group, rows):
        m = spec.grids[0].quantize(arrays[spec.data[0]])
        return (m.T @ m)[np.triu_indices(m.shape[1])]

    def complete(self, spec, released, totals):
        """The packed upper triangle unpacked to a symmetric matrix."""
        if isinstance(released, pt.TensorVariable):
            size = gram_size(spec.shape[0])
            rows, columns = np.triu_indices(size)
            upper = pt.set_subtensor(
                pt.zeros((size, size), dtype=released.dtype)[rows, columns], released
            )
            return upper + pt.triu(upper, 1).T
        released = np.asarray(released)
        size = gram_size(released.size)
        full = np.zeros((size, size), dtype=released.dtype)
        full[np.triu_indices(size)] = released
        lower = np.tril_indices(size, -1)
        full[lower] = full.T[lower]
        return full

    def l2_squared_bound(self, upper):
        """S² + Q with S = Σ_j M_j², Q = Σ_j M_j⁴, M_j² the upper end of the diagonal cell j's
        range (`StatisticSpec.sensitivity_l2_squared`, bound 3)."""
        rows, columns = np.triu_indices(gram_size(len(upper)))
        squares = [u for u, j, k in zip(upper, rows, columns, strict=True) if j == k]
        return sum(squares) ** 2 + sum(m * m for m in squares)


class _Cross(StatisticKind):
    vector = True

    def compute(self, spec, arrays, group, rows):
        """Mᵀm_y; with public covariates M is their grid integers, read at the rows."""
        if spec.covariate_values is not None:
            covariates = spec.covariate_values if rows is None else spec.covariate_values[rows]
            return covariates.T @ spec.grids[0].quantize(arrays[spec.data[0]])
        m = spec.grids[0].quantize(arrays[spec.data[0]])
        return m.T @ spec.grids[1].quantize(arrays[spec.data[1]])


COUNTS = _Counts("counts")
SUM = _RecordSum("sum")
SUM_SQUARES = _RecordSquares("sum_squares")
GRAM = _Gram("gram")
CROSS = _Cross("cross")
GROUP_GRAM = _Sum("group_gram")
GROUP_CROSS = _GroupCross("group_cross")
KINDS = {
    str(kind): kind for kind in (COUNTS, SUM, SUM_SQUARES, GRAM, CROSS, GROUP_GRAM, GROUP_CROSS)
}


def statistic_kind(name: str) -> StatisticKind:
    """The kind object of a name (a kind is returned as it is)."""
    try:
        return KINDS[str(name)]
    except KeyError:
        raise ValueError(f"unknown statistic kind {name!r}; known: {', '.join(KINDS)}") from None


def gram_size(packed: int) -> int:
    """p from the p(p+1)/2 entries of a packed upper triangle."""
    return round((math.sqrt(8 * packed + 1) - 1) / 2)


def expand_totals(totals, ndim: int, grouped: bool):
    """Totals shaped to broadcast against a statistic of ``ndim`` dimensions (numpy totals
    may carry leading batch axes, the chains of `pymc_private.noise_aware.sampler`)."""
    if not grouped:
        return totals
    if isinstance(totals, pt.TensorVariable):
        return totals.reshape((-1,) + (1,) * (ndim - 1))
    return totals.reshape(totals.shape + (1,) * (ndim - 1))


def simplex_projection(values: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Euclidean projection of each last-axis vector onto {x ≥ 0, Σ x = total}."""
    k = values.shape[-1]
    ordered = -np.sort(-values, axis=-1)
    excess = np.cumsum(ordered, axis=-1) - totals[..., None]
    positions = np.arange(1, k + 1)
    active = ordered - excess / positions > 0
    last = k - 1 - np.argmax(active[..., ::-1], axis=-1)
    shift = np.take_along_axis(excess, last[..., None], axis=-1) / (last[..., None] + 1)
    projected = np.maximum(values - shift, 0.0)
    return np.where(totals[..., None] > 0, projected, 0.0)


def round_preserving_total(values: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Largest-remainder rounding: integers with the same (integer) totals."""
    floor = np.floor(values)
    missing = np.rint(totals - floor.sum(axis=-1)).astype(np.int64)
    order = np.argsort(-(values - floor), axis=-1, kind="stable")
    ranks = np.argsort(order, axis=-1, kind="stable")
    return floor + (ranks < missing[..., None])
