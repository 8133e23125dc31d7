"""Private bounds: a first pass that releases the clipping bounds of a `PrivateData` array
from its records, under its own ε, on the ledger of the data's source.

Every `PrivateData` needs declared bounds, and the noise of every route scales with them: a
range ten times wider than the data costs ten times the noise. Bounds read off the data are
not private. `private_bounds` releases, for each element of a record (each column), a low and
a high quantile of its values by the exponential mechanism on a public grid of candidates
(Smith 2011, "Privacy-preserving statistical estimation with optimal convergence rates", on a
grid as OpenDP's ``make_private_quantile``):

    P(c_i) ∝ exp(ε_q · u_i / 2),    u_i = −|r_i − q·n|,    r_i = #{records with x ≤ c_i},

for the grid c_1 < … < c_k, the quantile q and ε_q = ε / (2·p) (p the elements of a record,
two quantiles each). **Privacy** (replace-one neighbours, n public): replacing one record
changes every r_i by −1, 0 or +1, so |u_i(D) − u_i(D')| ≤ 1 = Δ, and each choice is ε_q-DP
(McSherry & Talwar 2007; Dwork & Roth 2014, Theorem 3.10; `pymc_private.dp.mechanisms.
exponential_mechanism`, whose secure path samples it exactly with OpenDP and records an ε_q
rounded up, never above the one asked). The 2p choices compose to ε = Σ ε_q (basic
composition, exact for pure ε-DP): the released bounds are ε-DP. They are recorded on the
ledger of the ``source`` (`PrivateData(..., source=...)`), so that every later release from the
same records composes with them. Sorting the two choices (lower = the smaller) is
post-processing.

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

from pymc_private.data.declaration import ReleasedBounds
from pymc_private.data.ledgers import PrivacyLedger
from pymc_private.data.records import source_dataset
from pymc_private.dp.budget import Budget
from pymc_private.dp.checks import checked_epsilon, checked_secure
from pymc_private.dp.ledger import checked_source
from pymc_private.dp.mechanisms import ExponentialMechanism
from pymc_private.dp.session import releasing
from pymc_private.errors import DataBoundsError, InvalidPrivacyParameterError

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
    array = _checked_values(values)
    candidates = _checked_grid(grid, array.dtype)
    columns = array.reshape(array.shape[0], -1)
    count = 2 * columns.shape[1]
    mechanism = ExponentialMechanism(1.0, epsilon / count, secure=secure)
    statistic = f"private_bounds({source})"
    ledger = PrivacyLedger._session_view([source_dataset(source)])
    planned = [mechanism.release(statistic) for _ in range(count)]
    rng = None if secure else np.random.default_rng(random_seed)
    with releasing():
        for limit in ledger.limits(budget):
            limit.check(ledger, planned)
        chosen, releases = [], []
        for column in columns.T:
            ordered = np.sort(column)
            pair = []
            for q in (low, high):
                value, release = quantile_choice(ordered, candidates, q, mechanism, rng, statistic)
                pair.append(value)
                releases.append(release)
            chosen.append(sorted(pair))
        ledger.record_all(releases, budget=budget)
    bounds = np.array(chosen).T.reshape((2, *array.shape[1:]))
    return ReleasedBounds(
        bounds[0],
        bounds[1],
        source=source,
        epsilon=math.fsum(release.epsilon for release in releases),
        quantiles=(low, high),
    )


def quantile_choice(
    ordered: np.ndarray, candidates: np.ndarray, q: float, mechanism, rng, statistic
):
    """The candidate the exponential ``mechanism`` chooses as the q-quantile of the sorted
    values ``ordered``, with utility u_i = −|#{x ≤ c_i} − q·n| (Δ = 1 under replace-one
    neighbours; module docstring), and its release."""
    ranks = np.searchsorted(ordered, candidates, side="right")
    index, release = mechanism(-np.abs(ranks - q * ordered.size), rng=rng, statistic=statistic)
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
        if not np.all(candidates == np.round(candidates)) or not (
            info.min <= candidates[0] and candidates[-1] <= info.max
        ):
            raise InvalidPrivacyParameterError(
                f"The values are {dtype} integers: the grid must hold integers within "
                f"[{info.min}, {info.max}], which {dtype} can represent."
            )
        return candidates.astype(np.int64)
    return candidates


def _checked_values(values) -> np.ndarray:
    if np.ma.isMaskedArray(values) and np.ma.getmaskarray(values).any():
        raise DataBoundsError("private_bounds: the values hold missing (masked) entries.")
    array = np.asarray(np.ma.getdata(values) if np.ma.isMaskedArray(values) else values)
    if array.dtype == bool:
        array = array.astype(np.int8)
    if array.dtype.kind not in "iuf" or array.ndim < 1 or array.shape[0] < 1:
        raise DataBoundsError(
            "private_bounds needs real numbers with the records on axis 0 (at least one), got "
            f"an array of dtype {array.dtype} and shape {array.shape}."
        )
    if array.dtype.kind == "f" and not np.all(np.isfinite(array)):
        raise DataBoundsError(
            "private_bounds: the values hold NaN or infinite entries; remove or impute them "
            "(with a rule that does not read the other records) first."
        )
    return array
