"""Private data: the only door through which raw data enters a pymc-private model.

`PrivateData` registers an array in the current model exactly like `pm.Data` (so the model
stays an ordinary PyMC model), after checking it against bounds the user declares. The bounds
are public knowledge, never computed from the data; together with the record axis (axis 0)
and the record count n they are everything the privacy analysis may know about the data.

Neighbouring data sets differ by replacing one record (bounded DP): n is public. A record is
one row across every `PrivateData` array of a model, so all of them share n.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pymc as pm
from pytensor.tensor.variable import TensorVariable

from pymc_private.errors import DataBoundsError, UnsupportedModelError

__all__ = [
    "RELEASED_TAG",
    "PrivateData",
    "PrivateDataSpec",
    "check_private_data",
    "dataset_id",
    "datasets_of",
    "private_data",
    "private_data_domain",
    "private_record_count",
]

_OUT_OF_BOUNDS = ("raise", "clip")


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
        The id of the private data set (`dataset_id`): the key of its ledger.
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
RELEASED_TAG = "pymc_private_released"
"""The tag of the data variables of a privatised model that hold released statistics; its
value has a ``datasets`` attribute, the ids of the data sets they were released from."""

# Data sets are identified by a keyed hash of their values (a key drawn per process, so the
# digests mean nothing outside it and reveal nothing about the data).
_DATASET_KEY = os.urandom(32)
_DATASET_IDS: dict[bytes, str] = {}


def dataset_id(array: np.ndarray) -> str:
    """The id of the private data set an array holds: the same values (dtype and shape
    included) give the same id in this process, whichever object or model holds them."""
    array = np.ascontiguousarray(array)
    digest = hashlib.blake2b(key=_DATASET_KEY, digest_size=32)
    digest.update(f"{array.dtype.str}{array.shape}".encode())
    digest.update(array.tobytes())
    return _DATASET_IDS.setdefault(digest.digest(), uuid.uuid4().hex)


def datasets_of(model: pm.Model | None = None) -> tuple[str, ...]:
    """The ids of the private data sets a model reads: those of its `PrivateData` and those
    its released statistics (a model returned by `pmp.privatize`) came from."""
    model = pm.modelcontext(model)
    found: list[str] = []
    for variable in model.data_vars:
        spec = getattr(variable.tag, _SPEC_TAG, None)
        released = getattr(variable.tag, RELEASED_TAG, None)
        ids = [spec.dataset] if spec is not None else list(getattr(released, "datasets", ()))
        found.extend(i for i in ids if i not in found)
    return tuple(found)


def PrivateData(
    name: str,
    value,
    bounds: tuple,
    *,
    dims: Sequence[str] | None = None,
    out_of_bounds: str = "raise",
) -> TensorVariable:
    """Register private data with declared public bounds in the current model.

    Works like `pm.Data` (and is a `pm.Data` underneath), with axis 0 the record axis. Every
    check runs before anything is registered; a failing check raises `DataBoundsError` naming
    the array, the column and the first offending row, never the offending value.

    Parameters
    ----------
    name
        Name of the data variable.
    value
        Array-like of real numbers with at least one dimension; axis 0 indexes records. Integer
        or boolean input keeps an integer domain (labels, counts); booleans become 0/1.
    bounds
        ``(lower, upper)``: scalars or arrays broadcastable to one record's shape
        (``value.shape[1:]``), finite, with ``lower <= upper``. For integer data the bounds must
        be integers. They are public: declare what you know about the domain, never values
        computed from this data.
    dims
        Dims as in `pm.Data` (the first one is the record dim).
    out_of_bounds
        ``"raise"`` (default): a value outside the bounds raises `DataBoundsError`.
        ``"clip"``: values are clipped into the bounds. Clipping is part of the private
        mechanism (each record is mapped into the declared domain before anything else touches
        it), so the privacy guarantee holds for the clipped data and the analysis reports that
        clipping was requested. NaN and infinite values are refused in both modes.

    Returns
    -------
    TensorVariable
        The registered data variable, usable as ``observed=`` or as an index (``theta[y]``).

    Raises
    ------
    DataBoundsError
        NaN or infinite values, non-numeric, complex or ragged input, invalid bounds, values
        outside the bounds (with ``out_of_bounds="raise"``), or a record count that differs from
        the other `PrivateData` of the model.
    """
    if out_of_bounds not in _OUT_OF_BOUNDS:
        raise DataBoundsError(
            f"PrivateData `{name}`: out_of_bounds must be 'raise' or 'clip', got {out_of_bounds!r}."
        )
    array = _as_real_array(name, value)
    record_shape = array.shape[1:]
    integer = array.dtype.kind in "iu"
    lower, upper = _check_bounds(name, bounds, record_shape, integer)
    _check_finite(name, array, dims)
    array = _check_within_bounds(name, array, lower, upper, dims, out_of_bounds)
    model = pm.modelcontext(None)
    n = array.shape[0]
    for other in private_data(model).values():
        if other.n != n:
            raise DataBoundsError(
                f"PrivateData `{name}` has {n} records (axis 0) but `{other.name}` has "
                f"{other.n}: every PrivateData of a model holds the same records, one row each."
            )
    variable = pm.Data(name, array, dims=dims)
    spec = PrivateDataSpec(
        name=variable.name,
        lower=lower,
        upper=upper,
        record_shape=record_shape,
        n=n,
        integer=integer,
        out_of_bounds=out_of_bounds,
        dims=tuple(dims) if dims is not None else None,
        dataset=dataset_id(array),
    )
    setattr(variable.tag, _SPEC_TAG, spec)
    return variable


def check_private_data(model: pm.Model | None = None) -> None:
    """Re-validate the value every `PrivateData` of a model holds now against its declaration.

    `PrivateData` checks its value when it is declared, but ``pm.set_data`` and
    ``set_value`` can replace that value later, keeping the shape. This runs the declaration's
    checks again on the current values, so call it (``pmp.analyze`` and ``pmp.sample`` do)
    after the last ``pm.set_data`` and before anything touches the data: the shape must be the
    declared n records of the declared record shape, the dtype integer exactly when it was
    declared integer, every value finite (NaN, infinite and masked entries, which
    ``pm.set_data`` makes of NaN, are refused in both modes), and every value within the
    declared bounds.

    Out of bounds, ``out_of_bounds="raise"`` raises `DataBoundsError`. With
    ``out_of_bounds="clip"`` the stored value is clipped into the bounds in place (the data
    variable is set to its clipped copy; the caller's array is not modified): clipping every
    record into the declared domain is the declared mechanism, and refusing instead would
    reveal that some value lay outside the bounds, which clip mode promises never to reveal.
    Every compiled function reading the variable, and every model sharing it (`pm.do`,
    clones, which carry the same declaration), sees the clipped values from then on; values
    within the bounds are left exactly as they are, so the check is idempotent.

    Parameters
    ----------
    model
        The model (default: the model on the context stack).

    Raises
    ------
    DataBoundsError
        A changed shape, a dtype other than the declared one, a NaN, infinite or masked
        value, or (with ``out_of_bounds="raise"``) a value outside the bounds. The message
        names the array, the row and the column, never the value.
    """
    model = pm.modelcontext(model)
    for variable in model.data_vars:
        spec = getattr(variable.tag, _SPEC_TAG, None)
        if spec is None:
            continue
        current = variable.get_value(borrow=True)
        array = np.ma.getdata(current)
        if array.shape != (spec.n, *spec.record_shape):
            raise DataBoundsError(
                f"PrivateData `{spec.name}` no longer has the shape it was declared with (was it "
                "replaced with pm.set_data?); declare new data with pmp.PrivateData so that it "
                "is checked against its bounds."
            )
        missing = np.ma.getmaskarray(current)
        if missing.any():
            array = np.where(missing, np.nan, array.astype(np.float64))
        _check_finite(spec.name, array, spec.dims)
        if array.dtype.kind not in "iuf" or (array.dtype.kind in "iu") != spec.integer:
            declared = "an integer" if spec.integer else "a float"
            raise DataBoundsError(
                f"PrivateData `{spec.name}` now holds dtype {array.dtype} but was declared with "
                f"{declared} dtype; replace its value with {declared} array of the declared "
                "shape, or declare new data with pmp.PrivateData."
            )
        checked = _check_within_bounds(
            spec.name, array, spec.lower, spec.upper, spec.dims, spec.out_of_bounds
        )
        if checked is not array:
            variable.set_value(checked)


def private_data(model: pm.Model | None = None) -> dict[str, PrivateDataSpec]:
    """Every `PrivateData` of a model, by name.

    The specification travels on the data variable itself, so it survives `pm.do`,
    `pm.observe` and model cloning.
    """
    model = pm.modelcontext(model)
    specs = {}
    for variable in model.data_vars:
        spec = getattr(variable.tag, _SPEC_TAG, None)
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


def _as_real_array(name: str, value) -> np.ndarray:
    try:
        array = np.asarray(value)
    except (ValueError, TypeError):
        raise DataBoundsError(
            f"PrivateData `{name}` is ragged or not array-like: pass a rectangular array of "
            "real numbers with records on axis 0."
        ) from None
    if array.dtype.kind == "b":
        array = array.astype(np.int64)
    if array.dtype.kind not in "iuf":
        raise DataBoundsError(
            f"PrivateData `{name}` has dtype {array.dtype}; pass real numbers (integer, boolean "
            "or float dtype), not objects, strings or complex numbers. Ragged lists also end "
            "up here: every record must have the same shape."
        )
    if array.ndim == 0:
        raise DataBoundsError(
            f"PrivateData `{name}` is a scalar; private data needs a record axis (axis 0), e.g. "
            "a 1-d array of n values."
        )
    if array.shape[0] == 0:
        raise DataBoundsError(f"PrivateData `{name}` has no records (axis 0 is empty).")
    return array


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
        if not np.all(np.isfinite(arr)):
            raise DataBoundsError(
                f"PrivateData `{name}`: the {which} bound must be finite (got a NaN or "
                "infinite bound); declare the finite range your data can take."
            )
        if integer and not np.all(arr == np.round(arr)):
            raise DataBoundsError(
                f"PrivateData `{name}` has an integer dtype: its {which} bound must be integers."
            )
        arr = arr.copy()
        arr.setflags(write=False)
        arrays.append(arr)
    lower, upper = arrays
    bad = np.argwhere(lower > upper)
    if bad.size:
        raise DataBoundsError(
            f"PrivateData `{name}`: lower bound above upper bound at "
            f"{_column(tuple(bad[0]), record_shape)}; declare bounds with lower <= upper."
        )
    return lower, upper


def _check_finite(name: str, array: np.ndarray, dims) -> None:
    if array.dtype.kind != "f":
        return
    bad = ~np.isfinite(array)
    if bad.any():
        row, column = _first(bad)
        raise DataBoundsError(
            f"PrivateData `{name}`: row {row}, {_column(column, array.shape[1:], dims)} is not a "
            "finite number (NaN or infinite); remove or impute such records before declaring "
            "the data."
        )


def _check_within_bounds(
    name: str,
    array: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    dims,
    out_of_bounds: str,
) -> np.ndarray:
    outside = (array < lower) | (array > upper)
    if not outside.any():
        return array
    if out_of_bounds == "clip":
        return np.clip(array, lower, upper).astype(array.dtype)
    row, column = _first(outside)
    raise DataBoundsError(
        f"PrivateData `{name}`: row {row}, {_column(column, array.shape[1:], dims)} lies outside "
        f"the declared bounds [{_fmt(lower[column])}, {_fmt(upper[column])}]; widen the bounds "
        "(from public knowledge, not from this data) or pass out_of_bounds='clip'."
    )


def _first(mask: np.ndarray) -> tuple[int, tuple[int, ...]]:
    index = tuple(int(i) for i in np.unravel_index(int(np.argmax(mask)), mask.shape))
    return index[0], index[1:]


def _column(column: tuple[int, ...], record_shape: tuple[int, ...], dims=None) -> str:
    if not record_shape:
        return "column 0 (one value per record)"
    if len(column) == 1:
        label = f"column {column[0]}"
    else:
        label = f"column {column}"
    if dims is not None and len(dims) == len(record_shape) + 1:
        label += f" (dims {tuple(dims[1:])})"
    return label


def _fmt(x: float) -> str:
    return f"{float(x):g}"
