"""Privacy per person: records tied to a person identifier, at most k per person.

``PrivateData(..., unit=person_ids, max_records=k)`` keeps, of each person's records, the
first k in the order of the data and drops the others (`first_records`). The rule is stable:
which of a person's records are kept depends on that person's records and their rows only, so
replacing one person's records changes the kept records of no one else, and at most k kept
records in all.

**Neighbours per person.** Two data sets are neighbours when they differ in the records of one
person, each person keeping at most k (bounded DP per person: the number of persons and of
each one's kept records, hence n, are public, as n is per record). Such neighbours differ in
at most k records, so every release from them costs what its mechanism costs between data sets
that differ in k records: group privacy, `pymc_private.dp.events.PrivacyEvent.for_group`
(kε for pure ε-DP, exact for the Laplace mechanism on a sum; k²ρ for ρ-zCDP, exact for the
Gaussian mechanism on a sum). The ledger of such data (`pymc_private.dp.ledger.
per_person_dataset`) charges every release so (`PrivacyLedger.charged`), plans and budget
checks included, and states that ε protects one person. Subsampled per-draw steps, whose
amplification is per record, are refused for k > 1.

The identifiers are read once, here, to build the mask: they are not stored in the model, and
what is kept of them (`pymc_private.data.records.unit_identity`) is a keyed hash of which rows
belong together.
"""

from __future__ import annotations

import numpy as np

from pymc_private.data.records import is_dask
from pymc_private.errors import DataBoundsError

__all__ = ["first_records", "person_codes"]


def person_codes(label: str, unit, n: int) -> np.ndarray:
    """The person of each of the ``n`` records as integer codes (equal ids, equal codes).

    Raises
    ------
    DataBoundsError
        ``unit`` is not one-dimensional with n entries, holds a missing (None, NaN, masked) or
        infinite identifier, or mixes types that do not compare (strings and numbers).
    """
    if is_dask(unit):
        raise DataBoundsError(
            f"{label}: unit= must be in memory (a numpy array, list or pandas/polars Series); "
            "declare per-person data from in-memory arrays."
        )
    try:
        if type(unit).__module__.split(".")[0] == "pyarrow":
            unit = unit.to_pylist()  # nulls as None, refused below
        elif hasattr(unit, "to_numpy") and not isinstance(unit, np.ndarray):
            unit = unit.to_numpy()  # pandas, polars
    except Exception:  # a container's own conversion error: no identifier is read here
        raise DataBoundsError(
            f"{label}: unit= could not be read as one person identifier per record; pass a "
            "numpy array, list or pandas/polars Series of integers or strings."
        ) from None
    if np.ma.isMaskedArray(unit):
        if np.ma.getmaskarray(unit).any():
            raise DataBoundsError(f"{label}: unit= has missing (masked) person identifiers.")
        unit = np.ma.getdata(unit)
    try:
        ids = np.asarray(unit)
    except (ValueError, TypeError):
        raise DataBoundsError(
            f"{label}: unit= must be a one-dimensional array of person identifiers."
        ) from None
    if ids.ndim != 1 or ids.shape[0] != n:
        raise DataBoundsError(
            f"{label}: unit= must be one person identifier per record, a one-dimensional array "
            f"of {n} entries; got shape {ids.shape}."
        )
    if ids.dtype.kind not in "biufUSO":
        raise DataBoundsError(
            f"{label}: unit= has dtype {ids.dtype}; person identifiers are integers or strings."
        )
    if ids.dtype.kind == "f" and not np.isfinite(ids).all():
        raise DataBoundsError(
            f"{label}: unit= has a NaN or infinite person identifier; every record needs its "
            "person."
        )
    if ids.dtype.kind == "O":
        for value in ids:
            if not isinstance(value, str | int | np.integer) or isinstance(value, bool):
                raise DataBoundsError(
                    f"{label}: unit= holds an identifier that is neither a string nor an "
                    "integer (a missing value, None or NaN?); every record needs its person."
                )
    try:
        _, codes = np.unique(ids, return_inverse=True)
    except TypeError:
        raise DataBoundsError(
            f"{label}: unit= mixes identifiers of types that do not compare (strings and "
            "numbers); use one type."
        ) from None
    return codes.reshape(-1).astype(np.int64)


def first_records(codes: np.ndarray, k: int) -> np.ndarray:
    """Which records to keep: each person's first ``k`` in the order of the data (a boolean
    mask). A stable rule (module docstring)."""
    order = np.argsort(codes, kind="stable")
    ordered = codes[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    lengths = np.diff(np.r_[starts, ordered.size])
    rank = np.arange(ordered.size) - np.repeat(starts, lengths)
    keep = np.empty(codes.size, dtype=bool)
    keep[order] = rank < k
    return keep
