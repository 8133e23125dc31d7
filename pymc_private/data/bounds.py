"""Private bounds: a first pass that releases the clipping bounds of a `PrivateData` array
from its records, under its own ε, on the ledger of the data's source.

Every `PrivateData` needs declared bounds, and the noise of every route scales with them: a
range ten times wider than the data costs ten times the noise. Bounds read off the data are
not private. `private_bounds` releases, for each element of a record (each column), a low and
a high quantile of its values by the exponential mechanism on a public grid of candidates
(Smith 2011, "Privacy-preserving statistical estimation with optimal convergence rates", on a
grid as OpenDP's ``make_private_quantile``):

    P(c_i) ∝ exp(ε_q · u_i / 2),    u_i = −|r_i − t|,    r_i = #{records with x ≤ c_i},

for the grid c_1 < … < c_k, the target t = q·n rounded to a multiple of 2⁻ᵏ (n·2ᵏ ≤ 2⁵²,
`quantile_choice`: every u_i is then exact in float64) and ε_q = ε / (2·p) (p the elements of
a record, two quantiles each). **Privacy** (replace-one neighbours, n public): replacing one
record changes every r_i by −1, 0 or +1, so |u_i(D) − u_i(D')| ≤ 1 = Δ, exactly as computed,
and each choice is ε_q-DP
(McSherry & Talwar 2007; Dwork & Roth 2014, Theorem 3.10; `pymc_private.dp.mechanisms.
exponential_mechanism`, whose secure path samples it exactly with OpenDP and records an ε_q
rounded up, never above the one asked). The 2p choices compose to ε = Σ ε_q (basic
composition, exact for pure ε-DP): the released bounds are ε-DP. They are recorded on the
ledger of the ``source`` (`PrivateData(..., source=...)`) and checked against the ledgers of
the records as `PrivateData` would store them; those records, unclipped or clipped into the
released bounds, are linked to the source for the session, so that every later release from
them composes with the bounds, declared with the source or not (`datasets_of`). Sorting the
two choices (lower = the smaller) is post-processing.

**Use.** The result is a ``(lower, upper)`` pair that `PrivateData` accepts as ``bounds`` with
the same ``source`` and ``out_of_bounds="clip"`` (about a share q of the records lies beyond
each released bound and is clipped into it: clipping is part of every later mechanism, and an
error on such a value would itself depend on the data).

Bad input is refused before any record is read or any noise drawn, with the ledger
unchanged: ε ≤ 0 or not finite, quantiles outside (0, 1) or not increasing, a grid that is not
finite, sorted and of at least two points, a grid that the values' type cannot hold (integer
data: integer candidates within the dtype's range), a missing source; values that are NaN,
infinite, masked or not real numbers raise `DataBoundsError` before any noise.
"""

from __future__ import annotations

import math

import numpy as np

from pymc_private.data.declaration import (
    ReleasedBounds,
    as_real_array,
    checked_unit,
    per_person_records,
)
from pymc_private.data.ledgers import PrivacyLedger
from pymc_private.data.records import RecordCheck, dataset_identity, is_dask, source_dataset
from pymc_private.dp import session
from pymc_private.dp.budget import Budget
from pymc_private.dp.checks import checked_epsilon, checked_secure
from pymc_private.dp.ledger import checked_source, per_person_dataset
from pymc_private.dp.mechanisms import ExponentialMechanism
from pymc_private.errors import (
    DataBoundsError,
    InvalidPrivacyParameterError,
    UnsupportedModelError,
)

__all__ = ["private_bounds", "quantile_choice"]


def private_bounds(
    values,
    epsilon: float,
    *,
    grid,
    source: str,
    quantiles: tuple[float, float] = (0.01, 0.99),
    secure: bool = True,
    random_seed=None,
    budget: Budget | None = None,
    ledger: PrivacyLedger | None = None,
    unit=None,
    max_records: int | None = None,
) -> ReleasedBounds:
    """Release clipping bounds of ``values`` (records on axis 0) under ε, on the ledger of
    ``source`` (module docstring: the mechanism and its proof).

    Parameters
    ----------
    values
        The private records: a numpy array (or array-like) of real numbers, axis 0 the
        records; each element of a record (column) gets its own bounds.
    epsilon
        The ε of the whole release (ε / (2p) per quantile, p elements per record).
    grid
        The public candidates, one-dimensional, finite, strictly increasing, at least two:
        the released bounds are among them. Choose it from what is known about the domain
        (units, a plausible order of magnitude), never from the data; a geometric grid
        (``np.r_[-np.geomspace(1e4, 1e-2, 40), 0, np.geomspace(1e-2, 1e4, 40)]``) covers many
        orders of magnitude at a cost that grows only with log(k).
    source
        The data source (`PrivateData`'s ``source``): the ledger this release is charged to.
    quantiles
        The low and high quantiles released (0 < low < high < 1).
    secure
        True (default): OpenDP's exact sampling. False: numpy's Gumbel noise, reproducible
        from ``random_seed`` (benchmarks and tests only).
    random_seed
        The seed of ``secure=False``.
    budget
        A `Budget` to check the ledger against before anything is released.
    ledger
        A ledger file of this source (`PrivacyLedger.open(path, source=...)`): attached to the
        source before anything is released, so that its budget is checked and the release
        appended to it. Every file opened with this source in the session is attached so
        anyway (a file is otherwise attached to a model, which needs these bounds).
    unit, max_records
        Privacy per person, as `PrivateData` takes them: each person's first k records are
        kept, ``epsilon`` is per person (each quantile calibrated to ε/(2p·k) per record,
        charged k times that: group privacy), and the release is charged to the source's
        per-person ledger, which the same records declared with the same ``unit`` and
        ``max_records`` share.

    Returns
    -------
    ReleasedBounds
        ``(lower, upper)``, each of the record shape.

    Raises
    ------
    InvalidPrivacyParameterError
        ε, quantiles, grid or source invalid (before anything is read).
    DataBoundsError
        ``values`` empty, not real numbers, NaN or infinite (before any noise).
    BudgetExceededError
        The release would exceed the ledger's budget (nothing released).
    """
    epsilon = checked_epsilon(epsilon)
    secure = checked_secure(secure)
    if source is None:
        raise InvalidPrivacyParameterError(
            "private_bounds needs the data's source (source='survey-2026'): its ledger pays for "
            "the bounds, and PrivateData(..., source=...) of the same records composes with them."
        )
    source = checked_source(source)
    low, high = _checked_quantiles(quantiles)
    k = checked_unit("private_bounds", unit, max_records)
    array, missing = _public_form(values)
    candidates = _checked_grid(grid, array.dtype)  # before any value is read
    if k is not None:
        array, missing, _ = per_person_records("private_bounds", array, missing, unit, k)
    # The records as PrivateData would store them unclipped (missing or non-finite values
    # refused here): their ledgers (releases made from them before, without the source) are
    # checked with the source's, and a later declaration of them without the source is
    # charged to the source too.
    datasets = (source_dataset(source), *_identities(array, missing, None))
    charged = datasets if k is None else tuple(per_person_dataset(d, k) for d in datasets)
    columns = array.reshape(array.shape[0], -1)
    count = 2 * columns.shape[1]
    statistic = f"private_bounds({source})"
    for file in {*session.opened_for(source), *([] if ledger is None else [ledger])}:
        _attach(file, source, charged + datasets)
    view = PrivacyLedger._session_view(charged + datasets)
    share = view.per_record_epsilon(
        epsilon,
        lambda e: [ExponentialMechanism(1.0, e / count).release(statistic)] * count,
    )
    mechanism = ExponentialMechanism(1.0, share / count, secure=secure)
    planned = [mechanism.release(statistic) for _ in range(count)]
    rng = None if secure else np.random.default_rng(random_seed)
    with session.releasing():
        for limit in view.limits(budget):
            limit.check(view, planned)
        chosen, releases = [], []
        for column in columns.T:
            ordered = np.sort(column)
            pair = []
            for q in (low, high):
                value, release = quantile_choice(ordered, candidates, q, mechanism, rng, statistic)
                pair.append(value)
                releases.append(release)
            chosen.append(sorted(pair))
        view.record_all(releases, budget=budget)
    bounds = np.array(chosen).T.reshape((2, *array.shape[1:]))
    # The records clipped into the released bounds (the documented declaration) are the
    # source's too.
    for records in (*datasets[1:], *_identities(array, None, bounds)):
        session.declare_source(records, datasets[0])
    return ReleasedBounds(
        bounds[0],
        bounds[1],
        source=source,
        epsilon=math.fsum(release.epsilon for release in view.charged(releases)),
        quantiles=(low, high),
    )


def _attach(ledger: PrivacyLedger, source: str, datasets: tuple[str, ...]) -> None:
    """Attach a ledger file of ``source`` to the data sets the bounds are charged to."""
    if not isinstance(ledger, PrivacyLedger):
        raise InvalidPrivacyParameterError(
            "ledger must be a ledger file made by pmp.PrivacyLedger.open(path, source=...)."
        )
    book = ledger._odometer("be charged with private bounds")
    if book.source is not None and book.source != source:
        raise UnsupportedModelError(
            f"The ledger {book.path} is the ledger of source {book.source!r}, not {source!r}."
        )
    ledger._attach_datasets(datasets)


def _identities(array: np.ndarray, missing, bounds: np.ndarray | None) -> list[str]:
    """The ledger keys of ``array``'s records as `PrivateData` would store them (the same
    check and digest): unclipped (``bounds`` None; each dtype it may choose), or clipped into
    ``bounds``. Refuses missing or non-finite values (`DataBoundsError`)."""
    integer = array.dtype.kind in "biu"
    dtypes = (np.int32, np.int64) if integer else (np.float64,)
    shape = array.shape[1:]
    found = []
    for dtype in dtypes:
        if bounds is not None:
            lower, upper, mode = bounds[0], bounds[1], "clip"
        else:
            widest = np.iinfo(dtype).max if dtype is np.int32 else 2**53
            widest = widest if integer else np.finfo(np.float64).max
            lower, upper, mode = np.full(shape, -widest), np.full(shape, widest), "raise"
        check = RecordCheck("values", np.asarray(lower), np.asarray(upper), np.dtype(dtype), mode)
        _, checked = check.checked(array, missing)
        if checked.missing is not None:
            raise DataBoundsError(
                "private_bounds: the values hold missing, NaN or infinite entries; remove or "
                "impute them (with a rule that does not read the other records) first."
            )
        if checked.outside is None:
            found.append(dataset_identity(checked.digest, array.shape))
    return found


def quantile_choice(
    ordered: np.ndarray, candidates: np.ndarray, q: float, mechanism, rng, statistic
):
    """The candidate the exponential ``mechanism`` chooses as the q-quantile of the sorted
    values ``ordered``, with utility u_i = −|#{x ≤ c_i} − t| (Δ = 1 under replace-one
    neighbours; module docstring), and its release. The target t is q·n rounded to a multiple
    of 2⁻ᵏ with n·2ᵏ ≤ 2⁵², so that every rank minus t, hence every utility, is exact in
    float64 and moves by exactly 1 or 0 when one record is replaced (q·n itself would round
    r − q·n, and the utility would move by up to 1 + ulp(n))."""
    n = ordered.size
    scale = 2.0 ** max(0, 52 - n.bit_length())
    target = round(q * n * scale) / scale
    ranks = np.searchsorted(ordered, candidates, side="right")
    index, release = mechanism(-np.abs(ranks - target), rng=rng, statistic=statistic)
    return candidates[index], release


def _checked_quantiles(quantiles) -> tuple[float, float]:
    try:
        low, high = (float(q) for q in quantiles)
    except (TypeError, ValueError):
        low = high = math.nan
    if not 0.0 < low < high < 1.0:
        raise InvalidPrivacyParameterError(
            f"quantiles must be two numbers 0 < low < high < 1 (e.g. (0.01, 0.99)), got "
            f"{quantiles!r}."
        )
    return low, high


def _checked_grid(grid, dtype: np.dtype) -> np.ndarray:
    try:
        candidates = np.asarray(grid, dtype=np.float64)
    except (TypeError, ValueError):
        candidates = np.array([math.nan])
    if (
        candidates.ndim != 1
        or candidates.size < 2
        or not np.all(np.isfinite(candidates))
        or not np.all(np.diff(candidates) > 0)
    ):
        raise InvalidPrivacyParameterError(
            "grid must be a one-dimensional, finite, strictly increasing array of at least two "
            "public candidate bounds (e.g. np.linspace(0, 120, 121) for ages)."
        )
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        # Limits exact in float64 (2⁶⁴ − 1 and 2⁶³ − 1 are not: they round up, past the type).
        largest = min(info.max, 2**53)
        if not np.all(candidates == np.round(candidates)) or not (
            max(info.min, -(2**53)) <= candidates[0] and candidates[-1] <= largest
        ):
            raise InvalidPrivacyParameterError(
                f"The values are {dtype} integers: the grid must hold integers within "
                f"[{max(info.min, -(2**53))}, {largest}], which {dtype} can represent."
            )
        return candidates.astype(np.int64)
    return candidates


def _public_form(values) -> tuple[np.ndarray, np.ndarray | None]:
    """The records as `PrivateData` reads them (`as_real_array`: pandas, polars, pyarrow,
    masked arrays) and their mask, from what is public about them (dtype and shape); booleans
    as 0/1. Refused: Dask input, no element per record."""
    if is_dask(values):
        raise DataBoundsError(
            "private_bounds reads in-memory records: compute the columns first (a pass over "
            "them), or declare public bounds for the Dask data."
        )
    array, missing = as_real_array("private_bounds: the array", values)
    if array.dtype == bool:
        array = array.astype(np.int8)
    if array.size == 0:
        raise DataBoundsError(
            f"private_bounds: the values have no element per record (shape {array.shape})."
        )
    return array, missing
