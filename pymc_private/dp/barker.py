"""Barker's acceptance test on the records' log-likelihood ratios (`pmp.PrivateMetropolis`):
the log-odds Λ summed exactly on a public grid and rounded once (`barker_log_odds`), and the ε
of one exact Barker choice between Λ and 0 (`barker_epsilon`, :ref:`costs-metropolis`). The
choice itself is `pymc_private.dp.mechanisms.exact_choice`.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from pymc_private.dp.measurements import ceil_float

__all__ = ["LOG_ODDS_BOUND", "ROUNDING_ALLOWANCE", "barker_epsilon", "barker_log_odds"]


LOG_ODDS_BOUND = 512.0
"""B: the Barker choice's log-odds Λ is clamped to [−B, B] before its one rounding (changes
σ(Λ) by less than e^−B)."""

ROUNDING_ALLOWANCE = Fraction(2, 2**53) * Fraction(LOG_ODDS_BOUND)
"""2uB = 2⁻⁴³ (u = 2⁻⁵³): how far the rounding of two clamped log-odds can move them apart."""


def barker_epsilon(sensitivity, temperature, log_likelihood_error=0) -> float:
    """The ε of one exact Barker choice (`pmp.PrivateMetropolis`'s step) whose tempered
    log-odds one record moves by at most 2L/T: (2L + 8η)/T + 2⁻⁴³, or 2c/T + 2⁻⁴³ when each
    record's ratio is clipped to ±c (c in place of L, η = 0), evaluated exactly and rounded up
    to a float (:ref:`costs-metropolis`). Infinite when it overflows floating point."""
    record = 2 * Fraction(sensitivity) + 8 * Fraction(log_likelihood_error)
    return ceil_float(record / Fraction(temperature) + ROUNDING_ALLOWANCE)


_GRID_BITS = 52  # each record's ratio is an integer multiple of K·2⁻⁵² in [−K, K]
_CHUNK = 1024  # 1024 · 2⁵² = 2⁶²: the sum of one chunk of grid indices fits in int64


def barker_log_odds(
    prior_ratio: float, record_ratios: np.ndarray, *, record_bound: float, temperature: float
) -> float:
    """Λ = RN(clamp(p + (g/T)·Σ_i m_i, −B, B)): the log-odds of Barker's acceptance.

    Each record's computed log-likelihood ratio r_i (NaN counts as 0) is clipped to [−K, K],
    K = ``record_bound``, and replaced by the integer m_i = rint(r_i/g) ∈ [−2⁵², 2⁵²] of the
    public grid g = K·2⁻⁵². The m_i are summed exactly in integers, and p + (g/T)·Σ m_i is
    formed as a fraction of integers, clamped to [−B, B] (B = `LOG_ODDS_BOUND`) and rounded
    to the nearest float by integer true division: one rounding in all, which moves the
    result by at most u·B = 2⁻⁴⁴. Nothing here raises or overflows, whatever the floats it
    is handed.

    Parameters
    ----------
    prior_ratio
        p: the log prior ratio plus the log proposal ratio, data-independent. When it is not
        finite (θ or θ' outside the prior support) it is returned as it is: the decision is
        then made by p alone.
    record_ratios
        The computed ℓ(x_i; θ') − ℓ(x_i; θ), one per record (any floats).
    record_bound
        K, a float in [2⁻⁹⁷⁰, ∞) (ignored when there are no records).
    temperature
        T ≥ 1.
    """
    if not math.isfinite(prior_ratio):
        return prior_ratio
    numerator, denominator = prior_ratio.as_integer_ratio()
    ratios = np.asarray(record_ratios, dtype=np.float64)
    if ratios.size:
        grid = math.ldexp(record_bound, -_GRID_BITS)
        clipped = np.clip(ratios, -record_bound, record_bound)
        clipped[np.isnan(clipped)] = 0.0
        indices = np.zeros(-(-ratios.size // _CHUNK) * _CHUNK, dtype=np.int64)
        indices[: ratios.size] = np.rint(clipped / grid)
        total = sum(indices.reshape(-1, _CHUNK).sum(axis=1).tolist())
        # p + g·total/T as one fraction of integers (every float is a ratio of integers).
        grid_numerator, grid_denominator = grid.as_integer_ratio()
        t_numerator, t_denominator = temperature.as_integer_ratio()
        numerator = (
            numerator * grid_denominator * t_numerator
            + grid_numerator * total * t_denominator * denominator
        )
        denominator *= grid_denominator * t_numerator
    bound = int(LOG_ODDS_BOUND)
    if numerator >= bound * denominator:
        return LOG_ODDS_BOUND
    if numerator <= -bound * denominator:
        return -LOG_ODDS_BOUND
    return numerator / denominator  # integer true division: correctly rounded
