"""Private data: the only door through which raw data enters a pymc-private model.

`PrivateData` registers an array in the current model like `pm.Data` (so the model stays an
ordinary PyMC model), after checking it against bounds the user declares, and stores exactly the
values it was given in a dtype chosen from the declaration alone. The bounds
are public knowledge, never computed from the data; together with the record axis (axis 0)
and the record count n they are everything the privacy analysis may know about the data.

Neighbouring data sets differ by replacing one record (bounded DP): n is public. A record is
one row across every `PrivateData` array of a model, so all of them share n.

The records are read by `pymc_private.data.records` alone, in chunks, whatever holds them (numpy,
pandas, polars, pyarrow, Dask): the same checks, the same data-set id (the ledger key) and the
same sufficient statistics for the same records, and the same refusals. A checked in-memory
value is made read-only and is not checked again until it is replaced.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pymc as pm
import pytensor
from pytensor.tensor.variable import TensorVariable

from pymc_private.data.persons import first_records, person_codes
from pymc_private.data.records import (
    RecordCheck,
    Source,
    column_label,
    dataset_identity,
    first_problem,
    is_dask,
    placeholder,
    rows_identity,
    rows_per_chunk,
    source_dataset,
    statistics_pass,
    unit_identity,
)
from pymc_private.dp import session
from pymc_private.dp.events import checked_group_size
from pymc_private.dp.ledger import (
    checked_source,
    dataset_records_per_person,
    per_person_dataset,
)
from pymc_private.errors import (
    DataBoundsError,
    InvalidPrivacyParameterError,
    UnsupportedModelError,
    with_article,
)

__all__ = [
    "RELEASED_TAG",
    "PrivateData",
    "PrivateDataSpec",
    "ReleasedBounds",
    "as_real_array",
    "check_integer_values",
    "check_private_data",
    "datasets_of",
    "exact_statistics",
    "holds_private_values",
    "in_memory_values",
    "private_data",
    "private_data_domain",
    "private_record_count",
    "record_sources",
]

_OUT_OF_BOUNDS = ("raise", "clip")
# Every integer of magnitude at most 2⁵³ is exactly a float64 (the analysis computes in
# float64); integer bounds must lie within it.
_EXACT_INTEGER_LIMIT = 2**53
# PyMC's ``pm.set_data`` casts integer values to int32 (``pymc.pytensorf.intX``) before storing.
_INT32 = np.iinfo(np.int32)


@dataclass(frozen=True, eq=False)
class PrivateDataSpec:
    """The public description of one `PrivateData` array.

    Parameters
    ----------
    name
        The name of the data variable in the model.
    lower, upper
        Declared bounds of every element of one record, broadcast to ``record_shape``
        (read-only float arrays). For integer data the domain is the integers in between.
    record_shape
        The shape of one record of this array (the array's shape without axis 0).
    n
        The number of records (public in bounded DP).
    integer
        Whether the data has an integer domain (integer or boolean input dtype).
    out_of_bounds
        ``"raise"`` or ``"clip"``: what was requested for values outside the bounds. Clipping is
        part of the mechanism (the analysis reports it); whether any value was actually clipped
        is private and is not recorded.
    dims
        The dims the data was registered with, if any.
    dataset
        The id of the private data set, the key of its ledger: the declared source's
        (`pymc_private.data.records.source_dataset`) when there is one, else the records'
        (``records``).
    records
        The id of the records (`pymc_private.data.records.dataset_identity`): the same records
        give the same id, in any order or container.
    source
        The data source declared with ``PrivateData(..., source=...)``, or None.
    max_records
        k when the records are declared per person (``PrivateData(..., unit=...,
        max_records=k)``: at most k records per person, `pymc_private.data.persons`), else
        None.
    unit
        For per-person data, the keyed hash of which records belong to one person
        (`pymc_private.data.records.unit_identity`), the same for every `PrivateData` of the
        model; else None.
    rows
        For per-person data, the keyed hash of the stored records row by row
        (`pymc_private.data.records.rows_identity`): the person of each row was read at the
        declaration, so the rows may not change, nor their order; else None.
    """

    name: str
    lower: np.ndarray
    upper: np.ndarray
    record_shape: tuple[int, ...]
    n: int
    integer: bool
    out_of_bounds: str
    dims: tuple[str, ...] | None = None
    dataset: str = ""
    records: str = ""
    source: str | None = None
    max_records: int | None = None
    unit: str | None = None
    rows: str | None = None

    def element_bounds(self) -> list[tuple[float, float, int]]:
        """The distinct (lower, upper) element domains of one record with their multiplicity."""
        pairs = np.stack([self.lower.ravel(), self.upper.ravel()], axis=1)
        if pairs.shape[0] == 0:
            return []
        unique, counts = np.unique(pairs, axis=0, return_counts=True)
        return [(float(lo), float(hi), int(c)) for (lo, hi), c in zip(unique, counts, strict=True)]

    def l2_bound(self) -> float:
        """sup of ‖x‖₂ over one record's box, the ``Bx`` of a linear predictor."""
        return float(np.sqrt(np.sum(np.maximum(self.lower**2, self.upper**2))))


_SPEC_TAG = "pymc_private_spec"
SOURCE_TAG = "pymc_private_source"
"""The tag of a `PrivateData` declared from a Dask collection: its `Source`."""
RELEASED_TAG = "pymc_private_released"
"""The tag of the data variables of a privatised model that hold released statistics; its
value has a ``datasets`` attribute, the ids of the data sets they were released from."""


def datasets_of(model: pm.Model | None = None) -> tuple[str, ...]:
    """The ids of the private data sets a model reads: those of its `PrivateData` and those
    its released statistics (a model returned by `pmp.privatize`) came from. A `PrivateData`
    with a declared source counts as its source and as its records, so that the same records
    declared without the source are charged too; records declared with a source (or whose
    bounds `pmp.private_bounds` released from one) earlier in the session count as that source
    too."""
    model = pm.modelcontext(model)
    found: list[str] = []
    for variable in model.data_vars:
        spec = getattr(variable.tag, _SPEC_TAG, None)
        released = getattr(variable.tag, RELEASED_TAG, None)
        if spec is not None:
            # Sources the same records were declared with, or released from (pmp.private_bounds),
            # in this session: charged too.
            ids = [spec.dataset, spec.records, *sorted(session.sources(spec.records))]
            if spec.max_records is not None:
                # Per person: the ledgers of the same data sets per person, charged per person,
                # and their ledgers per record, charged the same (larger) figure.
                ids = [per_person_dataset(i, spec.max_records) for i in ids] + ids
        else:
            ids = list(getattr(released, "datasets", ()))
        found.extend(i for i in ids if i not in found)
    per_record = [spec.name for spec in private_data(model).values() if spec.max_records is None]
    if per_record and any(dataset_records_per_person(i) is not None for i in found):
        raise UnsupportedModelError(
            f"This model reads statistics released per person and PrivateData `{per_record[0]}` "
            "declared per record: a release from both could not be charged per person (nothing "
            "bounds the records a person has in it). Declare it with the same unit= and "
            "max_records= as the data the statistics were released from."
        )
    return tuple(found)


class ReleasedBounds(tuple):
    """``(lower, upper)`` released by `private_bounds` (arrays of the record shape), with the
    ``source`` whose ledger paid ``epsilon`` for them and the ``quantiles`` released.
    `PrivateData` accepts it as ``bounds`` with the same source and ``out_of_bounds="clip"``."""

    source: str
    epsilon: float
    quantiles: tuple[float, float]

    def __new__(cls, lower, upper, *, source: str, epsilon: float, quantiles):
        lower, upper = (np.array(bound, copy=True) for bound in (lower, upper))
        for bound in (lower, upper):  # what was released stays as released
            bound.setflags(write=False)
        pair = super().__new__(cls, (lower, upper))
        for key, value in (("source", source), ("epsilon", epsilon), ("quantiles", quantiles)):
            object.__setattr__(pair, key, value)
        return pair

    def __setattr__(self, key, value):
        raise AttributeError("ReleasedBounds are read-only: what was released stays as released.")

    def __delattr__(self, key):
        raise AttributeError("ReleasedBounds are read-only: what was released stays as released.")

    def __reduce__(self):
        return (
            _rebuilt,
            (self[0], self[1], self.source, self.epsilon, self.quantiles),
        )


def _rebuilt(lower, upper, source, epsilon, quantiles) -> ReleasedBounds:
    return ReleasedBounds(lower, upper, source=source, epsilon=epsilon, quantiles=quantiles)


def PrivateData(
    name: str,
    value,
    bounds: tuple,
    *,
    dims: Sequence[str] | str | None = None,
    out_of_bounds: str = "raise",
    source: str | None = None,
    unit=None,
    max_records: int | None = None,
) -> TensorVariable:
    """Register private data with declared public bounds in the current model.

    Works like `pm.Data` (a shared variable in ``model.data_vars``, usable with ``observed=``,
    as an index and with ``pm.set_data``), with axis 0 the record axis. Every check runs before
    anything is registered, and every check that reads only public quantities (the dtype, the
    shape, the bounds, the dims) runs before any value is read; a failing check on values
    raises `DataBoundsError` naming the array, the column and the first offending row, never
    the offending value.

    The values are stored exactly as given (or clipped, see ``out_of_bounds``), never through
    PyMC's casts (``pm.Data`` stores int64 as int32, which wraps values beyond 2³¹), in a dtype
    chosen from the declaration alone (``variable.dtype``): real data as float64; integer and
    boolean data as int32 when the bounds lie within the int32 range (the dtype
    ``pm.set_data`` casts integers to), int64 otherwise. A later value (``pm.set_data``,
    ``set_value``) must have exactly that dtype: PyTensor refuses any other by dtype, whatever
    the values, so that no cast can wrap, round or unmask a value. In particular integer data
    with bounds beyond int32 refuses ``pm.set_data`` (whose int32 cast would wrap values within
    the bounds): replace its value with ``variable.set_value(np.asarray(values,
    dtype=np.int64))``. (Within int32 bounds that cast is exact for every value within the
    bounds; a value outside int32, hence outside the bounds, is wrapped by PyMC before
    pymc-private sees it.)

    Parameters
    ----------
    name
        Name of the data variable.
    value
        Array-like of real numbers with at least one dimension; axis 0 indexes records. Integer
        or boolean input keeps an integer domain (labels, counts); booleans become 0/1. Float
        input is stored as float64, so float types wider than float64 (``np.longdouble``) are
        refused. A `numpy.ma.MaskedArray` is accepted when nothing is masked. A pandas
        DataFrame or Series, a polars DataFrame or Series, or a pyarrow Table or Array is
        converted to numpy at this boundary (columns in order; missing entries are refused
        like NaN). A Dask array, DataFrame or Series (``pip install "pymc-private[dask]"``)
        stays where it is: its chunks are checked and hashed here, as a Dask computation
        on Dask's current scheduler (a `dask.distributed` client when one is active), and
        again with the sufficient statistics when a route reads them (`pmp.privatize`,
        `pmp.sample_posterior`, `pmp.PrivateGibbs`, `pmp.private_map`), which refuses the
        data if its records changed since; only statistics come back. The model's graph
        then holds a placeholder of the data's shape that takes no memory (NaN, or an
        integer below the declared bounds, so that a sampler that reads it by mistake fails
        at its first evaluation), and routes that read records one by one
        (`pmp.PrivateMetropolis`, ``release="fourier"``) refuse it.
    bounds
        ``(lower, upper)``: scalars or arrays broadcastable to one record's shape, or the
        `ReleasedBounds` of `pmp.private_bounds` (with its ``source`` and
        ``out_of_bounds="clip"``)
        (``value.shape[1:]``), finite, with ``lower <= upper``, each exactly a float64 (an
        integer beyond 2⁵³ or a ``np.longdouble`` that float64 would round is refused). For
        integer data the bounds must be integers of magnitude at most 2⁵³, so that every
        integer of the domain is exactly a float64. They are public: declare what you know
        about the domain, never values computed from this data.
    dims
        Dims as in `pm.Data` (the first one is the record dim).
    out_of_bounds
        ``"raise"`` (default): a value outside the bounds raises `DataBoundsError`.
        ``"clip"``: values are clipped into the bounds. Clipping is part of the private
        mechanism (each record is mapped into the declared domain before anything else touches
        it), so the privacy guarantee holds for the clipped data and the analysis reports that
        clipping was requested. NaN, infinite and masked (missing) values are refused in both
        modes.
    source
        The name of the data source these records come from (``"survey-2026"``): the unit
        the privacy budget protects. Every `PrivateData` declared with the same source is
        charged to one ledger, whatever records it holds, so a corrected record, a subset of
        rows or columns, or the same data in another container stays on the same budget, and
        a ledger file opened with this source (`PrivacyLedger.open`) charges it. Without a
        source the data set is identified by its records (see
        :ref:`privacy-model-ledger`).

    Returns
    -------
    TensorVariable
        The registered data variable, usable as ``observed=`` or as an index (``theta[y]``).

    Raises
    ------
    DataBoundsError
        NaN, infinite or masked values; non-numeric, complex, ragged or wider-than-float64
        input; invalid bounds or dims; values outside the bounds (with
        ``out_of_bounds="raise"``); or a record count that differs from the other
        `PrivateData` of the model.
    InvalidPrivacyParameterError
        ``source`` not None nor a non-empty string (see `checked_source`); ``max_records``
        not a positive integer, or only one of ``unit`` and ``max_records`` given.
    """
    source = checked_source(source)
    k = checked_unit(f"PrivateData `{name}`", unit, max_records)
    if isinstance(bounds, ReleasedBounds):
        _check_released_bounds(name, bounds, source, out_of_bounds)
    if out_of_bounds not in _OUT_OF_BOUNDS:
        raise DataBoundsError(
            f"PrivateData `{name}`: out_of_bounds must be 'raise' or 'clip', got {out_of_bounds!r}."
        )
    array, missing = as_real_array(f"PrivateData `{name}`", value)
    dims = _checked_dims(name, dims, array.ndim)
    record_shape = tuple(array.shape[1:])
    integer = array.dtype.kind in "biu"
    lower, upper = _check_bounds(name, bounds, record_shape, integer)
    model = pm.modelcontext(None)
    person = None
    if k is not None:
        array, missing, person = per_person_records(
            f"PrivateData `{name}`", array, missing, unit, k
        )
    n = array.shape[0]
    for other in private_data(model).values():
        if (other.unit, other.max_records) != (person, k):
            raise DataBoundsError(
                f"PrivateData `{name}` and `{other.name}` are declared with different persons: "
                "every PrivateData of a model takes the same unit= and max_records= (or "
                "neither), so that one record is one row of each."
            )
        if other.n != n:
            raise DataBoundsError(
                f"PrivateData `{name}` has {n} records (axis 0) but `{other.name}` has "
                f"{other.n}: every PrivateData of a model holds the same records, one row each."
            )
    dtype = _stored_dtype(integer, lower, upper)
    check = RecordCheck(name, lower, upper, dtype, out_of_bounds, dims)
    if is_dask(array):
        found = statistics_pass([], {name: Source(array, check)}).findings[name]
        stored = placeholder(check, array.shape)
    else:
        stored, found = check.checked(array, missing)
        check.refuse(found)
    # A fresh array (converted, clipped or a placeholder) is kept as is; the caller's own
    # array is copied, so that later changes to it cannot reach the model.
    variable = _registered(model, name, stored, dims, borrow=stored is not array)
    _remember_raw(value, array)
    if is_dask(array):
        # The filter of a shared variable stores a plain view; keep the Placeholder itself,
        # whose deep copies and pickles do not materialise it.
        variable.container.storage[0] = stored
        setattr(variable.tag, SOURCE_TAG, Source(array, check, stored))
    else:
        _mark_checked(variable)
    records = dataset_identity(found.digest, array.shape)
    spec = PrivateDataSpec(
        name=variable.name,
        lower=lower,
        upper=upper,
        record_shape=record_shape,
        n=n,
        integer=integer,
        out_of_bounds=out_of_bounds,
        dims=dims,
        dataset=source_dataset(source) if source else records,
        records=records,
        source=source,
        max_records=k,
        unit=person,
        rows=None if k is None else rows_identity(stored),
    )
    if source:
        session.declare_source(records, spec.dataset)
    setattr(variable.tag, _SPEC_TAG, spec)
    return variable


def checked_unit(label: str, unit, max_records) -> int | None:
    """k of a per-person declaration (``unit=``, ``max_records=``), None without one; both or
    neither must be given."""
    if (unit is None) != (max_records is None):
        raise InvalidPrivacyParameterError(
            f"{label}: privacy per person needs both unit= (the person of each record) and "
            "max_records= (the records one person contributes at most), e.g. "
            "unit=patient_ids, max_records=12."
        )
    return None if max_records is None else checked_group_size(max_records)


def per_person_records(label: str, array, missing, unit, k: int):
    """The records kept per person (each person's first k), their mask of missing entries,
    and the identity of the persons (`pymc_private.data.persons`)."""
    if is_dask(array):
        raise DataBoundsError(
            f"{label}: privacy per person (unit=) needs in-memory data; compute the Dask "
            "collection first, or declare it per record."
        )
    codes = person_codes(label, unit, array.shape[0])
    keep = first_records(codes, k)
    kept_missing = None if missing is None else missing[keep]
    return array[keep], kept_missing, unit_identity(codes[keep], k)


def _check_released_bounds(name: str, bounds, source: str | None, out_of_bounds: str) -> None:
    """Bounds released by `pmp.private_bounds` are declared with their source (whose ledger
    paid for them, so later releases compose with them) and with clipping (about a share q of
    the records lies beyond each; an error on one would depend on the data)."""
    if source != bounds.source:
        raise DataBoundsError(
            f"PrivateData `{name}`: its bounds were released from source {bounds.source!r}; "
            f"declare it with source={bounds.source!r}, so that what it releases is charged to "
            "the same ledger as the bounds."
        )
    if out_of_bounds != "clip":
        raise DataBoundsError(
            f"PrivateData `{name}`: released bounds leave about {bounds.quantiles[0]:g} and "
            f"{1 - bounds.quantiles[1]:g} of the records beyond them; declare it with "
            "out_of_bounds='clip' (clipping is part of the mechanism; an error would depend "
            "on the data)."
        )


def check_private_data(model: pm.Model | None = None) -> None:
    """Re-validate the value every `PrivateData` of a model holds now against its declaration.

    `PrivateData` checks its value when it is declared, but ``pm.set_data`` and
    ``set_value`` can replace that value later, keeping the shape. This runs the declaration's
    checks again on the current values, so call it (``pmp.analyze`` and ``pmp.sample`` do)
    after the last ``pm.set_data`` and before anything touches the data. First what is public:
    the shape must be the declared n records of the declared record shape, and the dtype the
    declared kind under the same rules as `PrivateData` (integer exactly when declared
    integer, and then able to hold every integer within the declared bounds; a float at most
    as wide as float64). Then the values: every value present and finite (NaN, infinite and
    masked entries, which ``pm.set_data`` makes of NaN, are refused in both modes), and every
    value within the declared bounds, compared exactly (integers as integers).

    Out of bounds, ``out_of_bounds="raise"`` raises `DataBoundsError`. With
    ``out_of_bounds="clip"`` the stored value is clipped into the bounds in place (the data
    variable is set to its clipped copy; the caller's array is not modified): clipping every
    record into the declared domain is the declared mechanism, and refusing instead would
    reveal that some value lay outside the bounds, which clip mode promises never to reveal.
    Every compiled function reading the variable, and every model sharing it (`pm.do`,
    clones, which carry the same declaration), sees the clipped values from then on; values
    within the bounds are left exactly as they are, so the check is idempotent.

    A checked value is made read-only, and a value that is still the same read-only object
    is not checked again (a cheap call on large data). Changes that keep the object (a
    writable base, a PyTensor update in place) are caught where it matters: every release
    checks and identifies the records as it reads them (`exact_statistics`,
    `in_memory_values`). Dask-backed data is checked as it is read, at every release.

    Parameters
    ----------
    model
        The model (default: the model on the context stack).

    Raises
    ------
    DataBoundsError
        A changed shape, a dtype other than the declared kind or too narrow for the declared
        bounds, a NaN, infinite or masked value, or (with ``out_of_bounds="raise"``) a value
        outside the bounds. The message names the array, the row and the column, never the
        value.
    """
    model = pm.modelcontext(model)
    for variable in model.data_vars:
        spec = getattr(variable.tag, _SPEC_TAG, None)
        if spec is None:
            continue
        current = variable.get_value(borrow=True)
        source = getattr(variable.tag, SOURCE_TAG, None)
        if source is not None and current is source.placeholder:
            continue  # Dask-backed: checked as it is read
        if source is None and _unchanged(variable, current):
            continue
        if source is not None:
            raise DataBoundsError(
                f"PrivateData `{spec.name}` was declared from a Dask collection and its value "
                "was replaced (pm.set_data?); declare the new data with pmp.PrivateData."
            )
        array = np.ma.getdata(current)
        if array.shape != (spec.n, *spec.record_shape):
            raise DataBoundsError(
                f"PrivateData `{spec.name}` no longer has the shape it was declared with (was it "
                "replaced with pm.set_data?); declare new data with pmp.PrivateData so that it "
                "is checked against its bounds."
            )
        _check_current_dtype(spec, array.dtype)
        missing = np.ma.getmaskarray(current) if np.ma.isMaskedArray(current) else None
        dtype = np.dtype(variable.dtype)
        check = RecordCheck(spec.name, spec.lower, spec.upper, dtype, spec.out_of_bounds, spec.dims)
        stored, found = check.checked(array, missing)
        check.refuse(found)
        if found.clipped:
            variable.set_value(stored)
        _mark_checked(variable)
        records = dataset_identity(found.digest, array.shape)
        if spec.rows is not None and rows_identity(stored) != spec.rows:
            raise DataBoundsError(
                f"PrivateData `{spec.name}` was declared per person (unit=, max_records=) and "
                "its rows were replaced or reordered (pm.set_data?): which person each row "
                "belongs to is known for the rows declared only. Declare the new data with "
                "pmp.PrivateData(..., unit=..., max_records=...)."
            )
        if records != spec.records:
            # New values (pm.set_data): other records, charged in their own ledger unless a
            # source was declared (the same people: the same ledger).
            dataset = spec.dataset if spec.source else records
            if spec.source:
                session.declare_source(records, dataset)
            setattr(variable.tag, _SPEC_TAG, replace(spec, dataset=dataset, records=records))


def check_integer_values(model: pm.Model, spec: PrivateDataSpec, observer: str) -> None:
    """Refuse float `PrivateData` observed by a family of integer values (``observer`` names
    the family and the node) unless its bounds are integers and so is every value it holds.

    Whether the values must be integers is public (the model's family and the declaration);
    they are then read as the declaration's checks read them (`check_private_data` ran
    first), and the first value that is not an integer is refused by its row and column,
    never its value, before anything is released, as a value outside the bounds is with
    ``out_of_bounds="raise"``: the domain the family and the integer bounds declare is the
    integers within the bounds. With ``out_of_bounds="clip"``, which promises never to
    refuse a value, float data is refused whatever its values. Integer-valued floats then
    enter every route exactly (a float64 holds every integer of magnitude up to 2⁵³,
    beyond every declared bound).

    Raises
    ------
    DataBoundsError
        Bounds that are not integers, ``out_of_bounds="clip"``, Dask-backed data (checked
        only as statistics are computed), or a value that is not an integer.
    """
    integer_bounds = all(
        np.all(np.isfinite(bound) & (bound == np.round(bound)))
        for bound in (spec.lower, spec.upper)
    )
    variable = model[spec.name]
    current = variable.get_value(borrow=True)
    source = getattr(variable.tag, SOURCE_TAG, None)
    if not integer_bounds:
        why = "bounds that are not integers: declare integer bounds, or"
    elif spec.out_of_bounds == "clip":
        why = "out_of_bounds='clip', which never refuses a value, so"
    elif source is not None:
        why = "from a Dask collection, whose values are read only into statistics, so"
    else:
        why = ""
    if why:
        raise DataBoundsError(
            f"PrivateData `{spec.name}` is observed by {observer}, whose values are integers, "
            f"but it is declared with a float dtype and {why} declare it with integer values "
            "(e.g. value.astype(int)), so that its domain is the integers within its bounds."
        )
    array = np.ma.getdata(current)
    rows = rows_per_chunk(int(np.prod(spec.record_shape, dtype=np.int64)))
    for start in range(0, spec.n, rows):
        block = array[start : start + rows]
        fractional = block != np.round(block)
        if fractional.any():
            row, column = first_problem(fractional, start)
            raise DataBoundsError(
                f"PrivateData `{spec.name}`: row {row}, "
                f"{column_label(column, spec.record_shape, spec.dims)} is not an integer, but "
                f"{observer} observes integers; encode the records as integers within the "
                "declared bounds before declaring the data."
            )


def record_sources(model: pm.Model, names) -> dict[str, Source]:
    """Where the records of the `PrivateData` ``names`` are, each with its declaration's
    checks, for `pymc_private.data.records.statistics_pass`: the in-memory value, or the Dask
    collection."""
    sources = {}
    for variable in model.data_vars:
        if variable.name in names:
            lazy = getattr(variable.tag, SOURCE_TAG, None)
            if lazy is None:
                spec = declaration(variable)
                dtype = np.dtype(variable.dtype)
                check = RecordCheck(
                    spec.name, spec.lower, spec.upper, dtype, spec.out_of_bounds, spec.dims
                )
                lazy = Source(variable.get_value(borrow=True), check)
            sources[variable.name] = lazy
    return sources


def exact_statistics(model: pm.Model, specs) -> dict[str, np.ndarray]:
    """s(D) of every statistic of ``specs`` (`pymc_private.families.statistics.StatisticSpec`) as
    exact int64, from every `PrivateData` of ``model`` in one pass
    (`pymc_private.data.records.statistics_pass`): private, for a mechanism only. Call
    `check_private_data` first (it identifies the data sets whose ledgers the caller
    checks). Every record is checked again as it is read, with the declaration's refusals,
    and the data is refused if it no longer holds the records identified then (a value
    changed in place, files of a Dask collection changed on disk): the ledger checked was
    not theirs."""
    declared = private_data(model)
    sources = record_sources(model, declared)
    result = statistics_pass(list(specs), sources)
    _check_identity(declared, sources, result.findings)
    return result.statistics


def in_memory_values(model: pm.Model, names, route: str) -> list[np.ndarray]:
    """The in-memory values of the `PrivateData` ``names`` for a route that reads records
    one by one (``route`` names it), checked again as `exact_statistics` does; a
    Dask-backed `PrivateData` is refused, since only sufficient statistics are computed
    from it."""
    sources = record_sources(model, names)
    lazy = [name for name, source in sources.items() if source.placeholder is not None]
    if lazy:
        raise UnsupportedModelError(
            f"PrivateData `{lazy[0]}` is a Dask collection, from which pymc-private computes "
            f"sufficient statistics only (pmp.privatize, pmp.sample_posterior, "
            f"pmp.PrivateGibbs, pmp.private_map); {route} reads the records one by one. "
            "Declare it from an in-memory array (collection.compute()) for this route."
        )
    _check_identity(private_data(model), sources, statistics_pass([], sources).findings)
    return [sources[name].values for name in names]


def _check_identity(declared: dict[str, PrivateDataSpec], sources, findings) -> None:
    """Refuse records that are not those whose ledger was checked: another digest, or an
    in-memory value that needed clipping (it was stored clipped when it was checked, so it
    changed in place since, and what reads it raw would see values out of bounds)."""
    for name, found in findings.items():
        spec = declared[name]
        moved = found.clipped and sources[name].placeholder is None
        if spec.rows is not None:  # per person: the same rows, in the same order
            moved = moved or rows_identity(sources[name].values) != spec.rows
        if moved or dataset_identity(found.digest, (spec.n, *spec.record_shape)) != spec.records:
            raise DataBoundsError(
                f"PrivateData `{name}` no longer holds the records it was checked with (a "
                "value changed in place, or the files of a Dask collection changed), so the "
                "ledger checked for it is not theirs: call pmp.data.check_private_data(model) "
                "after changing data, or declare it again with pmp.PrivateData."
            )


# Values `check_private_data` checked, by (variable, value) id: a value that is still the
# same read-only object is not checked again there (every release checks its records as it
# reads them anyway). Kept outside the variable's tag, so that models pickle.
_CHECKED: dict[tuple[int, int], weakref.ref] = {}


def _mark_checked(variable) -> None:
    """Record that the value the variable holds now was checked, and make it read-only."""
    value = variable.get_value(borrow=True)
    if value.flags.writeable:
        value.setflags(write=False)
    key = (id(variable), id(value))
    _CHECKED[key] = weakref.ref(value, lambda _, key=key: _CHECKED.pop(key, None))


# The arrays the caller declared as private (and their conversions), by id, kept as weak
# references: a Python function of a model that refers to one is reading raw data
# (`holds_private_values`).
_RAW: dict[int, weakref.ref] = {}


def _remember_raw(*arrays) -> None:
    for array in arrays:
        if isinstance(array, np.ndarray):
            key = id(array)
            _RAW[key] = weakref.ref(array, lambda _, key=key: _RAW.pop(key, None))


def holds_private_values(array: np.ndarray) -> bool:
    """Whether ``array`` may share memory with values declared private in this process: an
    array given to `PrivateData` (or its conversion), or one a `PrivateData` holds now. Read
    from memory addresses only, never from values."""
    held = [ref() for ref in [*_RAW.values(), *_CHECKED.values()]]
    return any(other is not None and np.may_share_memory(array, other) for other in held)


def _unchanged(variable, current) -> bool:
    checked = _CHECKED.get((id(variable), id(current)))
    return checked is not None and checked() is current and not current.flags.writeable


def declaration(variable) -> PrivateDataSpec | None:
    """The declaration a `PrivateData` variable carries, in any model (None for any other
    variable)."""
    return getattr(variable.tag, _SPEC_TAG, None)


def private_data(model: pm.Model | None = None) -> dict[str, PrivateDataSpec]:
    """Every `PrivateData` of a model, by name.

    The specification travels on the data variable itself, so it survives `pm.do`,
    `pm.observe` and model cloning.
    """
    model = pm.modelcontext(model)
    specs = {}
    for variable in model.data_vars:
        spec = declaration(variable)
        if spec is not None:
            specs[variable.name] = spec
    return specs


def private_data_domain(model: pm.Model | None, name: str) -> PrivateDataSpec:
    """The public specification of the `PrivateData` called ``name``.

    Raises
    ------
    UnsupportedModelError
        When ``name`` is not a `PrivateData` of the model.
    """
    specs = private_data(model)
    if name not in specs:
        known = ", ".join(f"`{k}`" for k in specs) or "none"
        raise UnsupportedModelError(
            f"`{name}` is not PrivateData of this model (PrivateData: {known}); declare it with "
            f"pmp.PrivateData({name!r}, value, bounds=(lower, upper))."
        )
    return specs[name]


def records_per_person(model: pm.Model | None = None) -> int | None:
    """k when the model's `PrivateData` are declared per person (``max_records=k``), else
    None: every release from them is charged per person."""
    bounds = [spec.max_records for spec in private_data(model).values()]
    return max((k for k in bounds if k is not None), default=None)


def private_record_count(model: pm.Model | None = None) -> int:
    """The public record count n shared by every `PrivateData` of the model.

    Raises
    ------
    UnsupportedModelError
        When the model has no `PrivateData`.
    """
    specs = private_data(model)
    if not specs:
        raise UnsupportedModelError(
            "The model has no PrivateData: declare the sensitive arrays with "
            "pmp.PrivateData(name, value, bounds=(lower, upper)) and observe those."
        )
    return next(iter(specs.values())).n


def as_real_array(label: str, value) -> tuple[np.ndarray, np.ndarray | None]:
    """The input as an array of a real dtype (a Dask array for Dask input, never
    computed), and which of its entries are masked (None when none can be); errors name it
    by ``label`` ("PrivateData `x`")."""
    value = _from_frame(label, value)
    missing = None
    try:
        if is_dask(value):
            array = value
        elif isinstance(value, np.ma.MaskedArray):
            array, missing = np.asarray(np.ma.getdata(value)), np.ma.getmaskarray(value)
        else:
            array = np.asarray(value)
    except (ValueError, TypeError):
        raise DataBoundsError(
            f"{label} is ragged or not array-like: pass a rectangular array of "
            "real numbers with records on axis 0."
        ) from None
    if array.dtype.kind not in "biuf":
        raise DataBoundsError(
            f"{label} has dtype {array.dtype}; pass real numbers (integer, boolean "
            "or float dtype), not objects, strings or complex numbers. Ragged lists also end "
            "up here: every record must have the same shape."
        )
    if array.dtype.kind == "f" and array.dtype.itemsize > 8:
        raise DataBoundsError(
            f"{label} has dtype {array.dtype}, wider than float64: it is stored as "
            "float64, which would round its values. Convert it to float64 yourself "
            "(value.astype(np.float64)) if that rounding is what you want."
        )
    if array.ndim == 0:
        raise DataBoundsError(
            f"{label} is a scalar; private data needs a record axis (axis 0), e.g. "
            "a 1-d array of n values."
        )
    if array.shape[0] == 0:
        raise DataBoundsError(f"{label} has no records (axis 0 is empty).")
    return array, missing


def _from_frame(label: str, value):
    """pandas, polars and pyarrow inputs as numpy (missing entries masked), Dask dataframes
    as Dask arrays converted partition by partition by the same rule (a masked Dask array
    when a column can hold missing entries); anything else as it is. Only dtypes, shapes and
    row counts are read here; values are checked by `RecordCheck`."""
    module = type(value).__module__.split(".")[0]
    if module == "dask":
        if hasattr(value, "to_dask_array"):
            value = _dask_records(label, value)
        if any(np.isnan(length) for length in value.shape):
            value = value.compute_chunk_sizes()
        return value
    if module in ("polars", "pyarrow"):
        if not hasattr(value, "to_pandas"):
            raise DataBoundsError(
                f"{label} cannot read {with_article(type(value).__name__)}: pass a "
                "polars DataFrame or Series (collect() a LazyFrame first), or a pyarrow Table "
                "or Array."
            )
        value = value.to_pandas()
        module = "pandas"
    if module != "pandas" or not hasattr(value, "isna"):
        return value
    return _pandas_records(value, label)


def _pandas_records(value, label: str):
    """A pandas object as numpy: the common numeric dtype of its columns (nullable ones by
    their numpy dtype, categorical ones by their categories' values), missing entries
    masked. A column of another type is refused by name."""
    dtypes = list(value.dtypes) if hasattr(value, "columns") else [value.dtype]
    columns = list(value.columns) if hasattr(value, "columns") else [getattr(value, "name", 0)]
    numeric = []
    for column, dtype in zip(columns, dtypes, strict=True):
        categories = getattr(dtype, "categories", None)
        base = getattr(dtype, "numpy_dtype", None) or getattr(categories, "dtype", dtype)
        if not (isinstance(base, np.dtype) and base.kind in "biuf"):
            raise DataBoundsError(
                f"{label}: column {column!r} has dtype {dtype}; pass real numbers "
                "(encode labels and strings as integers first, e.g. (s == 'benign').astype(int); "
                "categorical columns are read by their values, not their codes)."
            )
        numeric.append(base)
    dtype = np.result_type(*numeric) if numeric else np.dtype(np.float64)
    mask = np.asarray(value.isna())
    values = np.asarray(value.to_numpy(dtype=dtype, na_value=0))
    return np.ma.masked_array(values, mask) if mask.any() else values


def _dask_records(label: str, frame):
    """A Dask DataFrame or Series as a Dask array, each partition converted by
    `_pandas_records` (so that a column type is read as pandas reads it), with the
    partitions' lengths (row counts are public)."""
    import dask
    import dask.array as da

    frame = frame.optimize()
    meta = _pandas_records(frame._meta, label)
    lengths = frame.map_partitions(len).compute()
    shape, convert = meta.shape[1:], dask.delayed(_pandas_records)
    parts = [
        da.from_delayed(
            convert(part, label), shape=(int(rows), *shape), dtype=meta.dtype, meta=meta[:0]
        )
        for part, rows in zip(frame.to_delayed(), lengths, strict=True)
    ]
    return da.concatenate(parts) if parts else da.from_array(meta)


def _checked_dims(name: str, dims, ndim: int) -> tuple[str, ...] | None:
    if dims is None:
        return None
    dims = (dims,) if isinstance(dims, str) else tuple(dims)
    if len(dims) != ndim:
        raise DataBoundsError(
            f"PrivateData `{name}` has {ndim} axes but {len(dims)} dims {dims}: give one dim "
            "per axis, the record dim first."
        )
    return dims


def _check_bounds(
    name: str, bounds, record_shape: tuple[int, ...], integer: bool
) -> tuple[np.ndarray, np.ndarray]:
    if not (isinstance(bounds, Sequence | np.ndarray) and len(bounds) == 2):
        raise DataBoundsError(
            f"PrivateData `{name}`: bounds must be a pair (lower, upper) of scalars or arrays "
            "broadcastable to one record's shape, e.g. bounds=(0, 1)."
        )
    arrays = []
    for which, bound in zip(("lower", "upper"), bounds, strict=True):
        try:
            raw = np.asarray(bound)
        except (ValueError, TypeError):
            raw = np.asarray(None)
        if raw.dtype.kind not in "biuf":
            raise DataBoundsError(
                f"PrivateData `{name}`: the {which} bound must be real numbers, got dtype "
                f"{raw.dtype}."
            )
        try:
            arr = np.broadcast_to(raw.astype(np.float64), record_shape)
        except ValueError:
            raise DataBoundsError(
                f"PrivateData `{name}`: the {which} bound of shape {raw.shape} does not "
                f"broadcast to one record's shape {record_shape}."
            ) from None
        if not np.all(np.isfinite(raw)):
            raise DataBoundsError(
                f"PrivateData `{name}`: the {which} bound must be finite (got a NaN or "
                "infinite bound); declare the finite range your data can take."
            )
        exact = _exactly_float64(raw)
        if integer and not np.all(arr == np.round(arr)):
            raise DataBoundsError(
                f"PrivateData `{name}` has an integer dtype: its {which} bound must be integers."
            )
        if integer and not (exact and np.all(np.abs(arr) <= _EXACT_INTEGER_LIMIT)):
            raise DataBoundsError(
                f"PrivateData `{name}` has an integer dtype: its {which} bound must be integers "
                "of magnitude at most 2**53 (9007199254740992), beyond which not every integer "
                "is a float64 and the privacy analysis could not represent the domain exactly; "
                "declare tighter bounds or rescale the data."
            )
        if not exact:
            raise DataBoundsError(
                f"PrivateData `{name}`: the {which} bound is not exactly a float64 (an integer "
                "beyond 2**53 or a float wider than float64 would be rounded); declare bounds "
                "that are float64 numbers, e.g. float(bound) rounded the way you intend."
            )
        arr = arr.copy()
        arr.setflags(write=False)
        arrays.append(arr)
    lower, upper = arrays
    bad = np.argwhere(lower > upper)
    if bad.size:
        raise DataBoundsError(
            f"PrivateData `{name}`: lower bound above upper bound at "
            f"{column_label(tuple(bad[0]), record_shape)}; declare bounds with lower <= upper."
        )
    return lower, upper


def _exactly_float64(raw: np.ndarray) -> bool:
    """Whether every (finite) number of ``raw`` is exactly a float64."""
    if raw.dtype.kind == "b" or (raw.dtype.kind == "f" and raw.dtype.itemsize <= 8):
        return True
    converted = raw.astype(np.float64)
    if raw.dtype.kind == "f":
        return bool(np.all(converted == raw))
    return all(
        int(c) == int(r)
        for c, r in zip(converted.ravel().tolist(), raw.ravel().tolist(), strict=True)
    )


def _stored_dtype(integer: bool, lower: np.ndarray, upper: np.ndarray) -> np.dtype:
    """The dtype `PrivateData` stores: float64 for real data; for integer data int32 (what
    ``pm.set_data`` casts integers to) when it holds every integer within the bounds, int64
    otherwise (the bounds lie within ±2⁵³)."""
    if not integer:
        return np.dtype(np.float64)
    if lower.size and (lower.min() < _INT32.min or upper.max() > _INT32.max):
        return np.dtype(np.int64)
    return np.dtype(np.int32)


def _registered(
    model: pm.Model, name: str, values: np.ndarray, dims, *, borrow: bool = False
) -> TensorVariable:
    """Register ``values`` as data of ``model`` as `pm.Data` does, but with the dtype of
    ``values`` (``pm.Data`` casts int64 to int32 and float64 to floatX) and a strict container:
    a later value (``pm.set_data``, ``set_value``) must have that very dtype, so that no cast
    can wrap, round or unmask a value behind the declaration's back."""
    full_name = model.name_for(name)
    if model.named_vars.tree_contains(full_name):
        raise ValueError(f"Variable name {full_name} already exists.")
    variable = pytensor.shared(values, full_name, strict=True, borrow=borrow)
    for axis, dim in enumerate(dims or ()):
        if dim is not None and dim not in model.dim_lengths:
            model.add_coord(name=dim, values=None, length=variable.shape[axis])
    model.register_data_var(variable, dims=dims)
    return variable


def _check_current_dtype(spec: PrivateDataSpec, dtype: np.dtype) -> None:
    """The dtype rules of `PrivateData`, for a value stored after the declaration."""
    integer = dtype.kind in "biu"
    if integer != spec.integer or dtype.kind not in "biuf":
        declared = "an integer" if spec.integer else "a float"
        raise DataBoundsError(
            f"PrivateData `{spec.name}` now holds dtype {dtype} but was declared with "
            f"{declared} dtype; replace its value with {declared} array of the declared "
            "shape, or declare new data with pmp.PrivateData."
        )
    if dtype.kind == "f" and dtype.itemsize > 8:
        raise DataBoundsError(
            f"PrivateData `{spec.name}` now holds dtype {dtype}, wider than float64; replace its "
            "value with a float64 array of the declared shape."
        )
    if integer and spec.lower.size:
        least, most = (0, 1) if dtype.kind == "b" else (np.iinfo(dtype).min, np.iinfo(dtype).max)
        low, high = int(spec.lower.min()), int(spec.upper.max())
        if low < least or high > most:
            raise DataBoundsError(
                f"PrivateData `{spec.name}` now holds dtype {dtype}, which cannot hold every "
                f"integer within its declared bounds [{low}, {high}] (a cast to it may have "
                "wrapped values; pm.set_data casts integers to int32): replace its value with "
                f"`{spec.name}.set_value(np.asarray(values, dtype=np.int64))`."
            )
