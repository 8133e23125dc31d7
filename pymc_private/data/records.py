"""One pass over the records: validation, identity and sufficient statistics, in chunks.

Everything that reads private values row by row lives here, so that numpy, pandas, polars,
pyarrow and Dask inputs are read by the same code and give the same results and the same
refusals:

- `RecordCheck.chunk` validates a block of consecutive records against the public
  declaration (missing, non-finite and out-of-bounds values; clipping in clip mode) and
  reports the first problem by its global row;
- `record_digest` is an order-free (multiset) keyed hash of the records, from which
  `dataset_identity` derives the ledger key of a data set: the same records in any order,
  chunking, dtype or container give the same id;
- `statistics_pass` computes every sufficient statistic of a model in one pass over its
  records, exactly in int64, on numpy arrays in chunks of bounded size (so that the memory
  it needs beyond the data is small and does not grow with n) or on Dask collections as a
  tree reduction of the same per-chunk function, on whatever scheduler Dask uses (a
  `dask.distributed` client when one is active).

Dask collections are never brought into memory: their chunks are validated, hashed and
reduced to statistics where they live, and only the statistics come back. A chunk's
statistics are computed only after the chunk passed its checks (clip mode: from the clipped
values), so nothing is computed from values that were not checked.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from pymc_private.errors import DataBoundsError

__all__ = [
    "CHUNK_ELEMENTS",
    "Placeholder",
    "RecordCheck",
    "SharedRecords",
    "Source",
    "column_label",
    "dataset_identity",
    "first_problem",
    "is_dask",
    "placeholder",
    "record_digest",
    "rows_per_chunk",
    "statistics_pass",
]

# Elements of one array read per chunk: 2²⁰ float64 is 8 MiB, small against any data set
# worth chunking and large enough for numpy's per-call overhead to vanish.
CHUNK_ELEMENTS = 1 << 20
_EXACT_INTEGER_LIMIT = 2**53


def rows_per_chunk(record_size: int) -> int:
    """Records per chunk for records of ``record_size`` elements (at least one)."""
    return max(1, CHUNK_ELEMENTS // max(record_size, 1))


def is_dask(value: Any) -> bool:
    """Whether ``value`` is a Dask collection (array, dataframe or series), without
    importing Dask when it is not installed."""
    return type(value).__module__.split(".")[0] == "dask" and hasattr(value, "__dask_graph__")


# ---------------------------------------------------------------------------------------
# Checks against the declaration
# ---------------------------------------------------------------------------------------


class Problem(NamedTuple):
    """The first offending entry of some records: its global row and its column."""

    row: int
    column: tuple[int, ...]


def _earliest(a: Problem | None, b: Problem | None) -> Problem | None:
    if a is None or b is None:
        return a if b is None else b
    return min(a, b)


class Checked(NamedTuple):
    """What `RecordCheck.chunk` finds in a block of records."""

    values: np.ndarray | None
    missing: Problem | None
    outside: Problem | None
    clipped: bool
    digest: np.ndarray

    def merged(self, other: Checked) -> Checked:
        """The findings of two blocks together (values are not kept)."""
        return Checked(
            None,
            _earliest(self.missing, other.missing),
            _earliest(self.outside, other.outside),
            self.clipped or other.clipped,
            self.digest + other.digest,
        )


@dataclass(frozen=True, eq=False)
class RecordCheck:
    """The checks of one `PrivateData` declaration, applied to blocks of its records.

    Parameters
    ----------
    name
        The array's name (for messages).
    lower, upper
        The declared bounds, of the record shape.
    dtype
        The dtype values are stored in (`pymc_private.data.declaration`); integers are compared with
        the bounds as integers.
    out_of_bounds
        ``"raise"`` or ``"clip"``.
    dims
        The declared dims (for messages).
    """

    name: str
    lower: np.ndarray
    upper: np.ndarray
    dtype: np.dtype
    out_of_bounds: str
    dims: tuple[str, ...] | None = None

    def chunk(
        self, array: np.ndarray, missing: np.ndarray | None, offset: int, keys: np.ndarray
    ) -> Checked:
        """Check the records ``array`` (global rows from ``offset``): the values to store
        (clipped into the bounds in clip mode, of ``dtype``), the first missing or
        non-finite entry, the first entry outside the bounds (raise mode), whether any was
        clipped, and the records' digest (of the stored values, under ``keys``: the
        process's `DIGEST_KEYS`, sent along to Dask workers, whose own keys differ)."""
        if missing is None and self._within(array):  # the usual case: two reductions
            stored = array.astype(self.dtype, copy=False)
            return Checked(stored, None, None, False, record_digest(stored, keys))
        bad = missing
        if array.dtype.kind == "f":
            finite = ~np.isfinite(array)
            bad = finite if bad is None else bad | finite
        first_missing = first_problem(bad, offset) if bad is not None and bad.any() else None
        if array.dtype.kind in "biu":
            low, high = self.lower.astype(np.int64), self.upper.astype(np.int64)
            if array.dtype.kind == "u" and array.dtype.itemsize == 8:
                beyond = array > np.iinfo(np.int64).max
                values = np.where(beyond, high, array.astype(np.int64))
                outside = beyond | (values < low) | (values > high)
            else:
                values = array
                outside = (array < low) | (array > high)
        else:
            low, high = self.lower, self.upper
            values = array.astype(np.float64, copy=False)
            with np.errstate(invalid="ignore"):
                outside = (values < low) | (values > high)
        clipped = False
        first_outside = None
        if outside.any():
            if self.out_of_bounds == "clip":
                values = np.clip(values, low, high)
                clipped = True
            else:
                first_outside = first_problem(outside, offset)
        stored = values.astype(self.dtype, copy=False)
        digest = np.zeros(2, np.uint64)
        if first_missing is None:
            digest = record_digest(stored, keys)
        return Checked(stored, first_missing, first_outside, clipped, digest)

    def _within(self, array: np.ndarray) -> bool:
        """Whether every value is finite and within the bounds, from each column's least
        and largest value (NaN propagates into both; empty blocks are within)."""
        if not array.shape[0] or (array.dtype.kind == "u" and array.dtype.itemsize == 8):
            return not array.shape[0]
        if not array.size:
            return True
        low, high = self.lower, self.upper
        if array.dtype.kind in "biu":  # integers compared as integers (2⁵³ + 1 > 2⁵³)
            low, high = low.astype(np.int64), high.astype(np.int64)
        lowest, highest = array.min(), array.max()  # fast; per column only if needed
        if lowest >= low.max() and highest <= high.min():
            return True
        lowest, highest = array.min(axis=0), array.max(axis=0)
        return bool(np.all(lowest >= low) and np.all(highest <= high))

    def refuse(self, found: Checked) -> None:
        """Raise `DataBoundsError` for the first problem ``found`` (missing values first,
        as a whole-array check would), naming the row and the column, never the value."""
        if found.missing is not None:
            row, column = found.missing
            raise DataBoundsError(
                f"PrivateData `{self.name}`: row {row}, {self.column(column)} is missing or not "
                "a finite number (masked, NaN or infinite); remove or impute such records "
                "before declaring the data."
            )
        if found.outside is not None:
            row, column = found.outside
            raise DataBoundsError(
                f"PrivateData `{self.name}`: row {row}, {self.column(column)} lies outside the "
                f"declared bounds [{_fmt(self.lower[column])}, {_fmt(self.upper[column])}]; "
                "widen the bounds (from public knowledge, not from this data) or pass "
                "out_of_bounds='clip'."
            )

    def column(self, column: tuple[int, ...]) -> str:
        """A column of one record, as messages name it."""
        return column_label(column, self.lower.shape, self.dims)

    def checked(self, array: np.ndarray, missing: np.ndarray | None) -> tuple[np.ndarray, Checked]:
        """Check a whole in-memory array chunk by chunk: the stored values (a new array of
        ``dtype``, filled chunk by chunk, or ``array`` itself when it already is one and
        nothing was clipped) and the findings. Raises nothing: see `refuse`."""
        stored = None
        found = Checked(None, None, None, False, np.zeros(2, np.uint64))
        rows = rows_per_chunk(int(np.prod(array.shape[1:], dtype=np.int64)))
        keep = array.dtype == self.dtype and self.out_of_bounds == "raise"
        if not keep:
            stored = np.empty(array.shape, dtype=self.dtype)
        for start in range(0, array.shape[0], rows):
            part = self.chunk(
                array[start : start + rows],
                None if missing is None else missing[start : start + rows],
                start,
                DIGEST_KEYS,
            )
            if stored is not None:
                stored[start : start + rows] = part.values
            found = found.merged(part)
        return (array if stored is None else stored), found


def column_label(column: tuple[int, ...], record_shape: tuple[int, ...], dims=None) -> str:
    """A column of one record of ``record_shape``, as messages name it."""
    if not record_shape:
        return "column 0 (one value per record)"
    label = f"column {column[0]}" if len(column) == 1 else f"column {column}"
    if dims is not None and len(dims) == len(record_shape) + 1:
        label += f" (dims {tuple(dims[1:])})"
    return label


def first_problem(mask: np.ndarray, offset: int) -> Problem:
    """The global row (rows of ``mask`` from ``offset``) and column of its first True."""
    index = tuple(int(i) for i in np.unravel_index(int(np.argmax(mask)), mask.shape))
    return Problem(offset + index[0], index[1:])


def _fmt(x: float) -> str:
    """A declared bound, exactly (bounds are public)."""
    x = float(x)
    if x.is_integer() and abs(x) <= _EXACT_INTEGER_LIMIT:
        return str(int(x))
    return repr(x)


# ---------------------------------------------------------------------------------------
# The identity of a data set
# ---------------------------------------------------------------------------------------

# Data sets are identified by a keyed hash of their values (a key drawn per process and
# inherited by forked children, so the ids mean nothing outside them and reveal nothing about
# the data: a keyed hash is indistinguishable from random without its key).
_DATASET_KEY = os.urandom(32)
DIGEST_KEYS = np.random.default_rng(list(_DATASET_KEY)).integers(
    0, 2**64, size=(4, 64), dtype=np.uint64, endpoint=False
)


def _mix(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser (a bijection of uint64 that spreads every input bit)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _keys(keys: np.ndarray, width: int, lane: int) -> np.ndarray:
    reps = -(-width // keys.shape[1])
    keys = np.tile(keys[lane], reps)[:width]
    return keys ^ np.arange(width, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)


def record_digest(records: np.ndarray, keys: np.ndarray = DIGEST_KEYS) -> np.ndarray:
    """The order-free digest of some records: two uint64 lanes, the sums mod 2⁶⁴ over the
    records of h and of h², h a keyed hash of the record's values as float64 (a keyed
    linear combination of the values' bits, mixed by splitmix64) (so the digest of a union
    of blocks is the sum of theirs, whatever the order, chunking or dtype). Not a
    cryptographic hash: two data sets with the same digest share a ledger, which charges
    each for the other's releases (conservative), while the same records always get the
    same digest."""
    width = int(np.prod(records.shape[1:], dtype=np.int64))
    # Column-major: each column is one contiguous run, so that every step is a fast loop.
    values = np.array(records.reshape(records.shape[0], width).T, dtype=np.float64, order="C")
    if records.dtype.kind == "f":
        values += 0.0  # -0.0 and 0.0 are the same value
    words = values.view(np.uint64)
    offsets, weights = _keys(keys, width, 0), _keys(keys, width, 1) | np.uint64(1)
    np.bitwise_xor(words, offsets[:, None], out=words)
    np.multiply(words, weights[:, None], out=words)
    per_record = words.sum(axis=0, dtype=np.uint64)
    mixed = _mix(per_record ^ keys[2, 0])
    return np.array([mixed.sum(dtype=np.uint64), (mixed * mixed).sum(dtype=np.uint64)])


def dataset_identity(digest: np.ndarray, shape: tuple[int, ...]) -> str:
    """The ledger key of the records of ``shape`` (n, then one record's shape) whose
    `record_digest` summed to ``digest``: their keyed hash, the same in this process and in
    the processes it forks (so children that declare the same records share its ledger).
    Trailing unit axes do not count."""
    width = int(np.prod(shape[1:], dtype=np.int64))
    key = hashlib.blake2b(key=_DATASET_KEY, digest_size=16)
    key.update(f"{(int(shape[0]), width)}".encode())
    key.update(np.asarray(digest, dtype=np.uint64).tobytes())
    return key.hexdigest()


def unit_identity(codes: np.ndarray, k: int) -> str:
    """A keyed hash of which records belong to one person (``codes``, `pymc_private.data.
    persons.person_codes` of the kept records), and of k: the same for every `PrivateData` of
    a model declared with the same identifiers (codes relabelled by first
    appearance, so the labels themselves do not count)."""
    _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    relabelled = np.argsort(np.argsort(first))[inverse.reshape(-1)]
    key = hashlib.blake2b(key=_DATASET_KEY, digest_size=16)
    key.update(f"{int(k)}".encode())
    key.update(np.ascontiguousarray(relabelled, dtype=np.int64).tobytes())
    return key.hexdigest()


def rows_identity(values: np.ndarray) -> str:
    """A keyed hash of ``values`` row by row, in order (its dtype, shape and bytes): unlike
    `dataset_identity`, the same records in another order differ. Per-person data is tied to
    its rows (the person of each row), so it is checked row by row."""
    array = np.ascontiguousarray(values)
    key = hashlib.blake2b(key=_DATASET_KEY, digest_size=16)
    key.update(f"{array.dtype.str}{array.shape}".encode())
    key.update(memoryview(array).cast("B"))
    return key.hexdigest()


def source_dataset(source: str) -> str:
    """The ledger key of every data set declared with ``source`` (``pmp.PrivateData(...,
    source=...)``), whatever records it holds: the same in every process."""
    return "source-" + hashlib.sha256(source.encode()).hexdigest()[:32]


# ---------------------------------------------------------------------------------------
# Sufficient statistics in one pass
# ---------------------------------------------------------------------------------------


class Source(NamedTuple):
    """Where the records of one `PrivateData` are: an in-memory array or a Dask array, with
    the declaration's checks (``check``), applied to every chunk as it is read, or None for
    arrays the caller checked (simulations); for Dask, the `Placeholder` the model's graph
    holds instead of the records."""

    values: Any
    check: RecordCheck | None = None
    placeholder: np.ndarray | None = None


class SharedRecords(np.ndarray):
    """A read-only view of records that deep copies share instead of copying: a checked
    value cannot change through it, so a copy of the model (`clone_model`, `pm.do`,
    `fgraph_from_model`) needs no copy of n records."""

    def __deepcopy__(self, memo):
        return self


class Placeholder(SharedRecords):
    """What a model's graph holds in place of Dask-backed records: a zero-strided,
    read-only array of their shape (no memory), which deep copies of the model share and
    pickles rebuild without materialising it (so copies and pickles stay out of memory)."""

    def __reduce__(self):
        fill = self.reshape(-1)[0] if self.size else 0
        return (_placeholder_of, (self.dtype.str, self.shape, fill))


def placeholder(check: RecordCheck, shape: tuple[int, ...]) -> Placeholder:
    """The `Placeholder` of records of ``shape`` declared by ``check``: a value outside every
    declared bound, NaN for float records, one below the least lower bound for integer ones
    (one above the greatest upper bound when that does not fit the dtype).

    An integer placeholder read by mistake must not be an index out of its axis: PyTensor's
    Numba backend does not check indices, and reads whatever memory such an index points
    at. One below a lower bound of 0 or more (an index's declaration) is −1, the last entry,
    or a valid entry below the declared ones: memory of the array itself."""
    if check.dtype.kind == "f":
        fill = np.nan
    else:
        limits = np.iinfo(check.dtype)
        least = int(np.min(check.lower, initial=0))
        fill = least - 1 if least > limits.min else int(np.max(check.upper, initial=0)) + 1
    return _placeholder_of(check.dtype.str, shape, fill)


def _placeholder_of(dtype: str, shape: tuple[int, ...], fill) -> Placeholder:
    return np.broadcast_to(np.array(fill, dtype=dtype), shape).view(Placeholder)


class Pass(NamedTuple):
    """What `statistics_pass` returns: the statistics by name (exact int64), and the
    findings of the checks of each checked (Dask) source by name, their digests included."""

    statistics: dict[str, np.ndarray]
    findings: dict[str, Checked]


def statistics_pass(specs: Sequence[Any], sources: Mapping[str, Source]) -> Pass:
    """Every statistic of ``specs`` (`pymc_private.families.statistics.StatisticSpec`) over the
    records
    of ``sources`` (by `PrivateData` name), exactly in int64, in one pass.

    The records are read in blocks of consecutive rows, the same for every source; each
    block of a source with a ``check`` is checked against its declaration (and hashed)
    before anything is computed from it, and statistics are computed only while every block
    so far passed. In memory the blocks are chunks of `rows_per_chunk` records. When some
    source is a Dask array, every source is cut into the same Dask row blocks and each is
    checked and reduced (in such chunks) as one Dask task; the blocks' statistics and
    findings are summed in a tree and computed on Dask's current scheduler. A problem in any
    block raises the same `DataBoundsError` for every container (the first offending row;
    missing values before values out of bounds), and no statistic is returned. The
    findings carry each checked source's digest, for the caller to compare with the data
    set its ledger was checked for."""
    if any(is_dask(source.values) for source in sources.values()):
        return _dask_pass(specs, sources)
    names = list(sources)
    reduce = _block_statistics(specs, names, [sources[name].check for name in names], 0)
    statistics, findings = reduce(*(sources[name].values for name in names))
    for name, found in findings.items():
        sources[name].check.refuse(found)
    return Pass(statistics, findings)


def _block_statistics(
    specs: Sequence[Any], names: Sequence[str], checks: Sequence[RecordCheck | None], start: int
) -> Callable:
    keys = DIGEST_KEYS  # the caller's, not the worker's

    def reduce(*blocks):
        masks = [np.ma.getmaskarray(b) if np.ma.isMaskedArray(b) else None for b in blocks]
        blocks = [np.asarray(np.ma.getdata(block)) for block in blocks]
        size = len(blocks[0])
        width = max(int(np.prod(block.shape[1:], dtype=np.int64)) for block in blocks)
        rows = rows_per_chunk(width * max(len(specs), 1))
        statistics = {spec.name: np.zeros(spec.shape, np.int64) for spec in specs}
        findings = {
            name: Checked(None, None, None, False, np.zeros(2, np.uint64))
            for name, check in zip(names, checks, strict=True)
            if check is not None
        }
        failed = False
        for first in range(0, size, rows):
            window = slice(first, min(first + rows, size))
            arrays = {}
            for name, check, block, mask in zip(names, checks, blocks, masks, strict=True):
                if check is None:
                    arrays[name] = block[window]
                    continue
                missing = None if mask is None else mask[window]
                found = check.chunk(block[window], missing, start + first, keys)
                arrays[name] = found.values
                findings[name] = findings[name].merged(found)
            failed = failed or any(
                f.missing is not None or f.outside is not None for f in findings.values()
            )
            if not failed:  # statistics only of records that passed their checks
                rows_now = slice(start + window.start, start + window.stop)
                for spec in specs:
                    statistics[spec.name] += spec.compute(arrays, rows=rows_now)
        return ({} if failed else statistics), findings

    return reduce


def _combine(a, b):
    statistics_a, findings_a = a
    statistics_b, findings_b = b
    failed = not statistics_a or not statistics_b
    statistics = {} if failed else {k: statistics_a[k] + statistics_b[k] for k in statistics_a}
    findings = {k: findings_a[k].merged(findings_b[k]) for k in findings_a}
    return statistics, findings


def _dask_pass(specs, sources: Mapping[str, Source]) -> Pass:
    import dask
    import dask.array as da

    names = list(sources)
    dask_arrays = [s.values for s in sources.values() if is_dask(s.values)]
    row_chunks = dask_arrays[0].chunks[0]
    blocks = []
    for name in names:
        values = sources[name].values
        if not is_dask(values):
            values = da.from_array(np.asarray(values), chunks=-1)
        values = values.rechunk((row_chunks, *[-1] * (values.ndim - 1)))
        blocks.append(values.to_delayed().ravel())
    checks = [sources[name].check for name in names]
    starts = np.concatenate([[0], np.cumsum(row_chunks)[:-1]]).astype(int).tolist()
    parts = [
        dask.delayed(_block_statistics(specs, names, checks, start))(*block)
        for start, block in zip(starts, zip(*blocks, strict=True), strict=True)
    ]
    while len(parts) > 1:
        parts = [
            dask.delayed(_combine)(*parts[i : i + 2]) if i + 1 < len(parts) else parts[i]
            for i in range(0, len(parts), 2)
        ]
    statistics, findings = dask.compute(parts[0])[0]
    for name, found in findings.items():
        sources[name].check.refuse(found)
    return Pass(dict(statistics), findings)
