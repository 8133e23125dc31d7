"""Releases of integer statistics as a release plan states them, each with its twin that
gives the `Release` it will record before any noise is drawn (for the budget check).

- `integer_release` and `planned_release`: one statistic at a plan's share, ε for the
  discrete Laplace mechanism (Δ₁), ρ for the discrete Gaussian (Δ₂², stated at δ).
- `unit_shift_gaussian` and `planned_unit_shift_gaussian`: count statistics that one record
  moves by at most 1 in at most K cells, with the discrete Gaussian at the σ of its exact
  privacy profile (`pymc_private.dp.events.unit_shift_epsilon`), as one vector release.

The noise is drawn by the mechanisms of `pymc_private.dp.mechanisms`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from pymc_private.dp import mechanisms
from pymc_private.dp.events import Release, unit_shift_epsilon, unit_shift_scale, zcdp_epsilon
from pymc_private.dp.mechanisms import RandomState, ceil_sqrt

__all__ = [
    "integer_release",
    "planned_release",
    "planned_unit_shift_gaussian",
    "unit_shift_gaussian",
]


def planned_release(
    statistic: str, share: float, delta: float, mechanism: str, secure: bool
) -> Release:
    """The `Release` a discrete Laplace (``share`` = ε) or discrete Gaussian (``share`` = ρ,
    stated at ``delta``) release of ``statistic`` will record, for a budget check before any
    noise is drawn."""
    if mechanism == "gaussian":
        return Release(
            "discrete_gaussian",
            zcdp_epsilon(share, delta),
            delta=delta,
            rho=share,
            statistic=statistic,
            secure=secure,
        )
    return Release("discrete_laplace", share, statistic=statistic, secure=secure)


def integer_release(
    exact,
    share: float,
    mechanism: str,
    *,
    sensitivity_l1: int,
    sensitivity_l2_squared: int,
    delta: float,
    rng: RandomState,
    secure: bool,
    statistic: str,
) -> tuple[np.ndarray, Release, float]:
    """One release of an integer statistic with the mechanism and share of a plan, as
    `planned_release` states it: `discrete_laplace` at ε = ``share`` and Δ₁, or
    `discrete_gaussian` at ρ = ``share`` and Δ₂ = `ceil_sqrt`(Δ₂²). Returns the noisy values,
    the release and the noise scale in integer steps (Laplace Δ₁/ε, Gaussian Δ₂/√(2ρ), with
    the ε or ρ the release records)."""
    if mechanism == "gaussian":
        sensitivity = ceil_sqrt(sensitivity_l2_squared)
        values, release = mechanisms.discrete_gaussian(
            exact, sensitivity, share, delta=delta, rng=rng, secure=secure, statistic=statistic
        )
        return values, release, sensitivity / math.sqrt(2.0 * release.rho)
    values, release = mechanisms.discrete_laplace(
        exact, sensitivity_l1, share, rng=rng, secure=secure, statistic=statistic
    )
    return values, release, sensitivity_l1 / release.epsilon


def unit_shift_gaussian(
    counts: Mapping[str, np.ndarray],
    shifts: int,
    epsilon: float,
    delta: float,
    *,
    rng: RandomState,
    secure: bool,
) -> tuple[dict[str, np.ndarray], Release, float]:
    """The discrete Gaussian on count statistics one record moves by at most 1 per cell, in at
    most ``shifts`` = K cells in all, at the σ of their exact privacy profile: one release.

    Every cell of every statistic in ``counts`` (name → exact int64 counts) gets independent
    N_ℤ(0, σ²) noise with σ = `events.unit_shift_scale`(ε, δ, K), the smallest σ whose
    (ε, δ) profile, `events.unit_shift_epsilon` (the K-fold composition of the unit-shift
    discrete Gaussian, proved the worst case there), is within (ε, δ). The statistics are one
    vector release, so they are recorded as one `Release` stating that profile's ε at δ, with
    ρ = K/(2σ²) as OpenDP's privacy map gives it at Δ₂ = `ceil_sqrt`(K) (the same noise is
    ρ-zCDP, which the ledger's Rényi route composes; `events.Release`). Compared with the
    zCDP calibration of `discrete_gaussian` (σ = √(K/2ρ), ρ = `zcdp_rho`(ε, δ)) it is about
    7 % less noise at ε = 1, δ = 10⁻⁶.

    ``secure=True`` draws with OpenDP's ``make_gaussian`` on integer vectors at scale σ (the
    exact sampler of Canonne, Kamath & Steinke 2020); ``secure=False`` rounds numpy normals of
    sd σ, marked not secure: the rounded continuous Gaussian is not the discrete one, and its
    profile is not proved here (it stayed below δ in every case computed in review; the
    unrounded continuous Gaussian at σ does not), so only the secure release carries the
    claim.

    Returns the noisy counts by name, the release and σ. The caller has validated ε, δ and
    checked that ``shifts`` bounds the moved cells (`pymc_private.privatize`); σ comes from
    `planned_unit_shift_gaussian`'s rule, so that a budget check sees the release recorded.
    """
    release = planned_unit_shift_gaussian(list(counts), shifts, epsilon, delta, secure)
    sigma = unit_shift_scale(epsilon, delta, shifts)
    values = {
        name: mechanisms.checked_values("counts", value, integer=True).astype(np.int64)
        for name, value in counts.items()
    }
    if secure:
        measurement = mechanisms.opendp_gaussian_at("int", sigma)
        noisy = {
            name: np.asarray(measurement(value.ravel().tolist()), dtype=np.int64).reshape(
                value.shape
            )
            for name, value in values.items()
        }
    else:
        generator = np.random.default_rng(rng)
        noisy = {
            name: value + np.rint(generator.normal(0.0, sigma, value.shape)).astype(np.int64)
            for name, value in values.items()
        }
    return noisy, release, sigma


def planned_unit_shift_gaussian(
    statistics: Sequence[str], shifts: int, epsilon: float, delta: float, secure: bool
) -> Release:
    """The one `Release` `unit_shift_gaussian` records for these statistics (a budget check
    before any noise): ε = `events.unit_shift_epsilon`(σ, K, δ) ≤ ``epsilon`` at δ, and ρ
    from OpenDP's map of the vector Gaussian at scale σ and Δ₂ = √K."""
    sigma = unit_shift_scale(epsilon, delta, shifts)
    sensitivity = ceil_sqrt(shifts)
    rho = float(mechanisms.opendp_gaussian_at("int", sigma).map(sensitivity))
    source = "OpenDP make_gaussian (int), exact sampler" if secure else "numpy normal rounded"
    return Release(
        "discrete_gaussian",
        unit_shift_epsilon(sigma, shifts, delta),
        delta=delta,
        rho=rho,
        sensitivity=sensitivity,
        statistic=", ".join(statistics),
        secure=secure,
        note=(
            f"{source}, scale={sigma!r}: one record moves at most {shifts} cells by 1; ε from "
            "the exact privacy profile (dp-accounting PLD)" + ("" if secure else ": not secure")
        ),
    )
