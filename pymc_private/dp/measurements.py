"""OpenDP's measurements behind the noise mechanisms (`pymc_private.dp.mechanisms`), each at
the smallest scale whose privacy map stays within the cost asked, and the rounding up of exact
costs to floats.

OpenDP's privacy maps round up, so a scale computed as Δ/ε in floating point can map one ulp
above ε; each builder steps the scale up with `math.nextafter` until the map fits and returns
the measurement, its scale and the cost its map gives (what a release records). Builders are
cached on their public parameters: a measurement holds no data.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

from opendp import measurements
from opendp.domains import atom_domain, vector_domain
from opendp.measures import zero_concentrated_divergence
from opendp.metrics import l1_distance, l2_distance, linf_distance
from opendp.mod import enable_features

__all__ = [
    "ceil_float",
    "gaussian_measurement",
    "gumbel_max_measurement",
    "laplace_measurement",
    "opendp_gaussian_at",
    "softmax_measurement",
]

enable_features("contrib")


@functools.lru_cache(maxsize=1)
def softmax_measurement():
    """OpenDP's exact Gumbel noisy max of scale 1 over any number of float scores."""
    space = (
        vector_domain(atom_domain(T=float, nan=False)),
        linf_distance(T=float, monotonic=False),
    )
    return measurements.make_noisy_max(*space, zero_concentrated_divergence(), scale=1.0)


@functools.lru_cache(maxsize=256)
def laplace_measurement(kind: str, sensitivity: float, epsilon: float):
    """OpenDP's vector Laplace with the smallest scale ≥ Δ₁/ε whose map(Δ₁) ≤ ε.

    Returns ``(measurement, scale, mapped_epsilon)``. The privacy map is monotone decreasing
    in the scale and exceeds Δ₁/scale by at most a few ulps, so a few steps of
    `math.nextafter` reach a scale whose mapped ε does not exceed the request.
    """
    if kind == "float":
        space = vector_domain(atom_domain(T=float, nan=False)), l1_distance(T=float)
        d_in = sensitivity
    else:
        space = vector_domain(atom_domain(T="i64")), l1_distance(T="i64")
        d_in = int(sensitivity)
    scale = sensitivity / epsilon
    measurement = measurements.make_laplace(*space, scale=scale)
    while measurement.map(d_in) > epsilon:
        scale = math.nextafter(scale, math.inf)
        measurement = measurements.make_laplace(*space, scale=scale)
    return measurement, scale, float(measurement.map(d_in))


@functools.lru_cache(maxsize=256)
def gaussian_measurement(kind: str, sensitivity: float, rho: float):
    """OpenDP's vector Gaussian with the smallest scale ≥ Δ₂/√(2ρ) whose map(Δ₂) ≤ ρ.

    Returns ``(measurement, scale, mapped_rho)``; the map is monotone decreasing in the
    scale, so a few `math.nextafter` steps reach it.
    """
    scale = sensitivity / math.sqrt(2.0 * rho)
    measurement = opendp_gaussian_at(kind, scale)
    while measurement.map(sensitivity) > rho:
        scale = math.nextafter(scale, math.inf)
        measurement = opendp_gaussian_at(kind, scale)
    return measurement, scale, float(measurement.map(sensitivity))


@functools.lru_cache(maxsize=256)
def opendp_gaussian_at(kind: str, scale: float):
    """OpenDP's vector Gaussian at exactly this scale (its map gives the ρ)."""
    atom = atom_domain(T="i64") if kind == "int" else atom_domain(T=float, nan=False)
    return measurements.make_gaussian(vector_domain(atom), l2_distance(T=float), scale=scale)


@functools.lru_cache(maxsize=256)
def gumbel_max_measurement(sensitivity: float, epsilon: float, monotone: bool):
    """OpenDP's Gumbel noisy max with the smallest scale ≥ cΔ/ε whose exact ε is ≤ ε.

    Returns ``(measurement, scale, epsilon)`` where epsilon = cΔ/scale, rounded up.
    """
    factor = 1 if monotone else 2
    scale = factor * sensitivity / epsilon
    while _ceil_quotient(factor * sensitivity, scale) > epsilon:
        scale = math.nextafter(scale, math.inf)
    space = (
        vector_domain(atom_domain(T=float, nan=False)),
        linf_distance(T=float, monotonic=monotone),
    )
    measurement = measurements.make_noisy_max(*space, zero_concentrated_divergence(), scale=scale)
    return measurement, scale, _ceil_quotient(factor * sensitivity, scale)


def _ceil_quotient(numerator: float, denominator: float) -> float:
    """The smallest float ≥ numerator / denominator (exact rational arithmetic)."""
    return ceil_float(Fraction(numerator) / Fraction(denominator))


def ceil_float(exact: Fraction) -> float:
    """The smallest float ≥ ``exact`` (inf beyond the largest float): how every exact cost
    or bound of the package is rounded to a float without rounding it down."""
    try:
        nearest = float(exact)
    except OverflowError:
        return math.inf
    return nearest if Fraction(nearest) >= exact else math.nextafter(nearest, math.inf)
