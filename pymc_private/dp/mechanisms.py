"""Noise mechanisms: the Laplace, Gaussian (continuous and discrete, and the discrete Gaussian
on unit-shifted counts) and exponential mechanisms, one class each, and the Barker choice.

A mechanism object (`Mechanism`) is built from public parameters only and validates them; its
``event`` is what one call costs (a typed `~pymc_private.dp.events.PrivacyEvent`, from OpenDP's
privacy map at the scale it will draw with), known before any data; calling it validates the
data, draws the noise and returns the noisy output with the `~pymc_private.dp.events.Release`
of that same event. Release plans hold these objects, so a plan and its execution cannot
disagree. The functions `laplace`, `discrete_laplace`, `discrete_gaussian`, `gaussian` and
`exponential_mechanism` are calls of them. A mechanism never touches a ledger: the caller
records the release it is handed.

Secure and insecure noise
-------------------------
``secure=True`` (the default) samples with OpenDP's exact samplers, which draw from the
operating system's cryptographically secure generator and never round a continuous sample to
a float in a data-dependent way, so they are immune to the floating-point attack on textbook
Laplace samplers (Mironov 2012, "On significance of the least significant bits for
differential privacy", CCS). ``secure=False`` samples with numpy: fast and reproducible, for
simulations, tests and benchmarks; the release is marked ``secure=False`` because a textbook
floating-point sampler is not differentially private as implemented. Its integer noise still
reaches every integer at every scale: numpy's floating-point samplers skip integers and
saturate at huge scales, so above the scale `FLOAT_SAMPLER_SCALE_LIMIT` (2⁴⁰) the geometric
counts are drawn by their binary digits (`binary_digit_geometric`), and integer outputs are
exact sums saturated to the int64 range, as OpenDP's are.

Seeding
-------
With ``secure=True`` the output is **not** reproducible and ``rng`` is ignored. OpenDP's
samplers cannot be seeded, and deliberately so: a seedable sampler would make the noise, and
hence the private values under it, recomputable by whoever holds the seed, turning the seed
into a secret as sensitive as the data. With ``secure=False``, ``rng`` (a
`numpy.random.Generator` or anything `numpy.random.default_rng` accepts, e.g. an int seed)
makes the output reproducible; a Generator is advanced in place.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from pymc_private.dp.checks import (
    check_noise_rng,
    checked_gaussian_arguments,
    checked_mechanism_arguments,
    checked_privacy_parameter,
    checked_scale,
    checked_secure,
    checked_values,
)
from pymc_private.dp.events import (
    PrivacyEvent,
    PureEvent,
    Release,
    UnitShiftGaussianEvent,
    ZcdpEvent,
)
from pymc_private.dp.measurements import (
    gaussian_measurement,
    gumbel_max_measurement,
    laplace_measurement,
    opendp_gaussian_at,
    softmax_measurement,
)
from pymc_private.errors import DataBoundsError, InvalidPrivacyParameterError

__all__ = [
    "DiscreteGaussianMechanism",
    "DiscreteLaplaceMechanism",
    "ExponentialMechanism",
    "GaussianMechanism",
    "LaplaceMechanism",
    "Mechanism",
    "UnitShiftGaussianMechanism",
    "ceil_sqrt",
    "discrete_gaussian",
    "discrete_laplace",
    "exact_choice",
    "exponential_mechanism",
    "gaussian",
    "laplace",
]

RandomState = np.random.Generator | np.random.BitGenerator | np.random.SeedSequence | int | None

# The largest noise scale at which ``secure=False`` integer noise comes from numpy's
# floating-point samplers (the geometric counts of `numpy_discrete_laplace`, the rounded normals
# of `DiscreteGaussianMechanism`), whose seeded draws it keeps; above it, from
# `binary_digit_geometric`, exact in support at every scale.
FLOAT_SAMPLER_SCALE_LIMIT = 2.0**40
# Digit j of a geometric count of scale b is drawn while 2^j/b ≤ 708, i.e. while e^{−2^j/b} is a
# normal double (e^{−708} > 2⁻¹⁰²²).
_LAST_DIGIT_EXPONENT = 708.0
_WORD_BITS = 64
_WORD_MASK = (1 << _WORD_BITS) - 1
_DRAWS_PER_BLOCK = 1 << 13
_INT64 = np.iinfo(np.int64)


def laplace(
    values,
    sensitivity: float,
    epsilon: float,
    *,
    rng: RandomState = None,
    secure: bool = True,
    statistic: str | None = None,
) -> tuple[np.ndarray, Release]:
    """The Laplace mechanism on a real-valued statistic of any shape.

    Releases ``values + noise`` with independent ``noise_k ~ Laplace(b)``, ``b = Δ₁/ε``.
    If ``values = s(D)`` and ``‖s(D) − s(D')‖₁ ≤ Δ₁`` for every pair of neighbouring data
    sets, the release is ε-DP (Dwork & Roth 2014, Theorem 3.6; on sufficient statistics:
    Zhang et al. 2016, Algorithm 1; Foulds et al. 2016, eq. 16):

        ε = Δ₁ / b.

    Parameters
    ----------
    values
        The statistic s(D): a finite real array (or scalar) of any shape.
    sensitivity
        Δ₁, the L1 sensitivity of ``values`` over one replaced record: finite and > 0.
    epsilon
        The ε to spend: finite and > 0.
    rng
        Used only when ``secure=False`` (numpy Generator or int seed); ignored when
        ``secure=True`` (see the module docstring).
    secure
        True: OpenDP 0.16's ``make_laplace`` on ``vector_domain(atom_domain(T=float))`` with
        ``l1_distance``. It adds exact discrete Laplace noise on the grid 2⁻¹⁰⁷⁴ (every float
        is on it, so the discretisation costs nothing) with the Canonne–Kamath–Steinke 2020
        sampler and rounds the result to the nearest float (post-processing). The scale is
        the smallest float ≥ Δ₁/ε whose OpenDP privacy map at ``d_in = Δ₁`` is ≤ ε (the map
        rounds up, so Δ₁/ε itself can map one ulp above ε), and the release records the ε
        that map returns. False: ``numpy.random.Generator.laplace``, the textbook sampler
        that Mironov 2012 breaks; the release records the nominal ε and ``secure=False``.
    statistic
        Name of what ``values`` was computed from, for the release (names only).

    Returns
    -------
    noisy_values
        float64 array of the shape of ``values``.
    release
        ``Release("laplace", PureEvent(ε), sensitivity=Δ₁, secure=secure)``.

    Raises
    ------
    InvalidPrivacyParameterError
        ``epsilon`` or ``sensitivity`` is not a finite number > 0.
    DataBoundsError
        ``values`` is empty, not real-numeric, or holds NaN or infinite entries.
    """
    mechanism = LaplaceMechanism(sensitivity, epsilon, secure=secure)
    return mechanism(values, rng=rng, statistic=statistic)


def discrete_laplace(
    counts,
    sensitivity: int,
    epsilon: float,
    *,
    rng: RandomState = None,
    secure: bool = True,
    statistic: str | None = None,
) -> tuple[np.ndarray, Release]:
    """The discrete Laplace (two-sided geometric) mechanism on integer statistics.

    Releases ``counts + Z`` with independent ``P(Z = z) ∝ exp(−|z| / b)`` on the integers,
    ``b = Δ₁/ε``. If ``‖s(D) − s(D')‖₁ ≤ Δ₁`` for neighbouring data sets, the likelihood
    ratio of any output is at most ``exp(Δ₁/b)``, so the release is exactly ε-DP with

        ε = Δ₁ / b

    (Ghosh, Roughgarden & Sundararajan 2012; Canonne, Kamath & Steinke 2020, §5.2). This is the
    mechanism `pmp.privatize` uses for counts (:ref:`costs-privatize`; Zhang et al. 2016,
    Algorithm 1, whose Δ₁ = 2|I|; Foulds et al. 2016, eq. 16); integer noise has no least
    significant bits to leak (Mironov 2012).

    Parameters
    ----------
    counts
        The integer statistic: an integer array, or a float array whose entries are all
        integral with magnitude ≤ 2⁵³ (converted exactly). Any shape; not empty.
    sensitivity
        Δ₁: an integer ≥ 1 (an integral float such as ``2.0`` is accepted).
    epsilon
        The ε to spend: finite and > 0.
    rng
        Used only when ``secure=False``; ignored when ``secure=True`` (module docstring).
    secure
        True: OpenDP 0.16's integer ``make_laplace`` (the exact CKS20 discrete Laplace
        sampler), with the smallest float scale ≥ Δ₁/ε whose privacy map at ``d_in = Δ₁`` is
        ≤ ε; the release records that map's ε. False: numpy, ``Z = G₁ − G₂`` with
        ``G_i ~ Geometric(1 − e^{−1/b})`` (`numpy_discrete_laplace`). Up to b = 2⁴⁰
        (`FLOAT_SAMPLER_SCALE_LIMIT`) numpy's floating-point geometric sampler, exact in
        distribution up to it (its far tail, of probability ≤ b·2⁻⁶³ per draw, skips
        integers). Above, the counts are drawn by their binary digits, every integer
        reachable, and the release is, as implemented,

            (ε + J·2⁻⁴⁷, e^ε·2⁻¹⁰⁰⁰)-DP,   J = `binary_digit_count` (b) = ⌊log₂(708·b)⌋ + 1

        (J ≤ 1034; the proof is in `binary_digit_geometric`). The release records the nominal
        ε and ``secure=False``. Either way ``counts + Z`` is computed exactly and saturated to
        the int64 range, as OpenDP's sampler does (post-processing: no cost, never an error).
    statistic
        Name of what ``counts`` was computed from (names only).

    Returns
    -------
    noisy_counts
        int64 array of the shape of ``counts``.
    release
        ``Release("discrete_laplace", PureEvent(ε), sensitivity=Δ₁, secure=secure)``.

    Raises
    ------
    InvalidPrivacyParameterError
        ``epsilon`` is not finite and > 0, or ``sensitivity`` is not a positive integer.
    DataBoundsError
        ``counts`` is empty, not numeric, non-finite, or not integral.
    """
    mechanism = DiscreteLaplaceMechanism(sensitivity, epsilon, secure=secure)
    return mechanism(counts, rng=rng, statistic=statistic)


def ceil_sqrt(value: int) -> float:
    """The smallest float whose square is ≥ the integer ``value`` (exactly): an L2
    sensitivity √Δ₂² that floating point never rounds below the true one."""
    root = math.sqrt(value)
    while Fraction(root) ** 2 < value:
        root = math.nextafter(root, math.inf)
    return root


def discrete_gaussian(
    counts,
    sensitivity_l2: float,
    rho: float,
    *,
    delta: float,
    rng: RandomState = None,
    secure: bool = True,
    statistic: str | None = None,
) -> tuple[np.ndarray, Release]:
    """The discrete Gaussian mechanism on integer statistics: ρ-zCDP, stated at (ε, δ).

    Releases ``counts + Z`` with independent ``P(Z = z) ∝ exp(−z² / 2σ²)`` on the integers.
    If ``‖s(D) − s(D')‖₂ ≤ Δ₂`` for neighbouring data sets, the release is ρ-zCDP with

        ρ = Δ₂² / (2σ²)

    (Canonne, Kamath & Steinke 2020, Theorem 4 for the multivariate case with independent
    coordinates: the Rényi divergence of order α between shifted discrete Gaussians is at most
    α‖μ − μ'‖₂²/(2σ²)). ρ-zCDP implies (ε, δ)-DP for every δ > 0 at
    ``ε = events.zcdp_epsilon(ρ, δ)`` (the ledger's conversion). Integer outputs have no
    least significant bits to leak (Mironov 2012).

    Parameters
    ----------
    counts
        The integer statistic (as for `discrete_laplace`).
    sensitivity_l2
        Δ₂ in integer steps: finite and > 0 (need not be an integer).
    rho
        The ρ to spend: finite and > 0.
    delta
        The δ at which the release states its own ε (in (0, 1)); the ledger composes ρ.
    rng
        Used only when ``secure=False``; ignored when ``secure=True`` (module docstring).
    secure
        True: OpenDP 0.16's ``make_gaussian`` on ``vector_domain(atom_domain(T="i64"))``
        with ``l2_distance(T=float)`` (the exact CKS20 discrete Gaussian sampler), at the
        smallest scale ≥ Δ₂/√(2ρ) whose privacy map at ``d_in = Δ₂`` is ≤ ρ; the release
        records the ρ that map returns. False: numpy. Up to σ = 2⁴⁰
        (`FLOAT_SAMPLER_SCALE_LIMIT`), ``Z = round(N(0, σ²))``, which is the continuous
        Gaussian mechanism followed by rounding (post-processing, so ρ-zCDP over the reals,
        exact up to numpy's floating-point normal sampler). Above, where rounded normals
        leave integers out (measured: 42.6% of them are odd at σ = 2⁵⁰, 0.3% at σ = 10¹⁸),
        ``Z ~ N_ℤ(0, σ²)`` by `numpy_discrete_gaussian` (CKS 2020, Algorithm 3, on
        the discrete Laplace of `numpy_discrete_laplace`, every integer reachable), ρ-zCDP
        by the same Theorem 4 up to its floating-point acceptance test. ``counts + Z`` is
        computed exactly and saturated to the int64 range (post-processing); marked not
        secure.
    statistic
        Name of what ``counts`` was computed from (names only).

    Returns
    -------
    noisy_counts
        int64 array of the shape of ``counts``.
    release
        ``Release("discrete_gaussian", ZcdpEvent(ρ, δ), sensitivity=Δ₂, secure=secure)``:
        its event states ε = `zcdp_epsilon` (ρ, δ).

    Raises
    ------
    InvalidPrivacyParameterError
        ``rho`` or ``sensitivity_l2`` not a finite number > 0, ``delta`` not in (0, 1).
    DataBoundsError
        ``counts`` is empty, not numeric, non-finite, or not integral.
    """
    mechanism = DiscreteGaussianMechanism(sensitivity_l2, rho, delta, secure=secure)
    return mechanism(counts, rng=rng, statistic=statistic)


def gaussian(
    values,
    sensitivity_l2: float,
    rho: float,
    *,
    delta: float,
    rng: RandomState = None,
    secure: bool = True,
    statistic: str | None = None,
) -> tuple[np.ndarray, Release]:
    """The Gaussian mechanism on a real-valued statistic: ρ-zCDP, stated at (ε, δ).

    Releases ``values + N(0, σ² I)``; with ``‖s(D) − s(D')‖₂ ≤ Δ₂`` it is ρ-zCDP with
    ρ = Δ₂²/(2σ²) (Bun & Steinke 2016, Proposition 1.6), (ε, δ)-DP at
    ``ε = events.zcdp_epsilon(ρ, δ)``.

    Parameters
    ----------
    values
        The statistic s(D): a finite real array of any shape.
    sensitivity_l2, rho, delta, rng, statistic
        As for `discrete_gaussian`.
    secure
        True: OpenDP 0.16's ``make_gaussian`` on ``vector_domain(atom_domain(T=float))``
        with ``l2_distance(T=float)``, which samples exactly on a fine dyadic grid and rounds
        to the nearest float, its privacy map covering the discretisation; scale and recorded
        ρ chosen as in `discrete_gaussian`. False: ``numpy.random.Generator.normal``, a
        textbook floating-point sampler (not private as implemented); marked not secure.

    Returns
    -------
    noisy_values
        float64 array of the shape of ``values``.
    release
        ``Release(mechanism="gaussian", ...)`` as for `discrete_gaussian`.

    Raises
    ------
    InvalidPrivacyParameterError, DataBoundsError
        As for `discrete_gaussian` (``values`` need not be integral).
    """
    mechanism = GaussianMechanism(sensitivity_l2, rho, delta, secure=secure)
    return mechanism(values, rng=rng, statistic=statistic)


def exponential_mechanism(
    scores,
    sensitivity: float,
    epsilon: float,
    *,
    rng: RandomState = None,
    monotone: bool = False,
    secure: bool = True,
    statistic: str | None = None,
) -> tuple[int, Release]:
    """The exponential mechanism over a finite candidate set.

    Returns candidate i with probability

        P(i) ∝ exp(ε · u_i / (2Δ))      (``monotone=False``)
        P(i) ∝ exp(ε · u_i / Δ)         (``monotone=True``)

    where ``u_i = scores[i]`` is the utility of candidate i on the private data and Δ bounds
    ``|u_i(D) − u_i(D')|`` over neighbouring data sets for every i. The choice is ε-DP
    (McSherry & Talwar 2007; Dwork & Roth 2014, Theorem 3.10; Foulds et al. 2016, eq. 4).
    ``monotone=True`` is valid only when, for every pair of neighbours, all utilities move
    in the same direction (Dwork & Roth 2014, remark after Theorem 3.10); it halves the cost.
    Sampling is by the Gumbel-max trick, ``argmax_i(ε·u_i/(cΔ) + G_i)`` with i.i.d. standard
    Gumbel ``G_i`` and c = 2 (1 when monotone), which never exponentiates the scores.

    Parameters
    ----------
    scores
        The utilities u_i: a non-empty one-dimensional finite real array.
    sensitivity
        Δ: finite and > 0.
    epsilon
        The ε to spend: finite and > 0.
    rng
        Used only when ``secure=False``; ignored when ``secure=True`` (module docstring).
    monotone
        Whether the utilities are monotone in the data (see above).
    secure
        True: OpenDP 0.16's ``make_noisy_max`` with Gumbel noise of scale ``cΔ/ε`` (exact
        arbitrary-precision Gumbel comparisons; its output measure is zCDP with
        ρ = ε²/8, the bound of Cesar & Rogers 2021 for the exponential mechanism). The
        release records the pure ε = cΔ/scale of the exponential mechanism, computed
        exactly and rounded up, with the scale the smallest float ≥ cΔ/ε for which that
        ε ≤ the requested one. False: numpy Gumbel noise in floating point, which realises
        the distribution above only up to rounding (Ilvento 2020); ``secure=False``.
    statistic
        Name of what the scores were computed from (names only).

    Returns
    -------
    index
        The chosen candidate, a Python int in ``range(len(scores))``.
    release
        ``Release("exponential_mechanism", PureEvent(ε), sensitivity=Δ, ...)``.

    Raises
    ------
    InvalidPrivacyParameterError
        ``epsilon`` or ``sensitivity`` is not a finite number > 0.
    DataBoundsError
        ``scores`` is empty, not one-dimensional, not real-numeric, or non-finite.
    """
    mechanism = ExponentialMechanism(sensitivity, epsilon, monotone=monotone, secure=secure)
    return mechanism(scores, rng=rng, statistic=statistic)


class Mechanism:
    """A mechanism object: built from public parameters only, its `event` is what one call
    costs before any data is read, and calling it on the data draws the noise and returns the
    noisy output with a `~pymc_private.dp.events.Release` of that same event (`release`), so
    a plan and its execution cannot disagree (OpenDP's ``Measurement``: built from public
    parameters, its map gives the cost, invoking it runs it).

    Every public parameter is validated when the object is built, with the messages of the
    functions (`laplace`, `discrete_laplace`, `discrete_gaussian`, `gaussian`,
    `exponential_mechanism`), which are calls of these objects; the noise scale is checked and
    OpenDP's measurement built when the cost is first asked (`event`) or the noise first drawn.
    """

    name: ClassVar[str]
    sensitivity: float
    secure: bool

    @property
    def event(self) -> PrivacyEvent:
        """What one call costs, as its privacy map gives it, before any data."""
        raise NotImplementedError

    @property
    def note(self) -> str:
        """The sampler and its scale, for the report (public words only)."""
        raise NotImplementedError

    def release(self, statistic: str | None = None) -> Release:
        """The release one call records, known before any data."""
        return Release(
            self.name,
            self.event,
            sensitivity=self.sensitivity,
            statistic=statistic,
            secure=self.secure,
            note=self.note,
        )


@dataclass(frozen=True)
class LaplaceMechanism(Mechanism):
    """The Laplace mechanism of `laplace` at Δ₁ = ``sensitivity`` and ``epsilon``: ε = Δ₁/b,
    b = Δ₁/ε (Dwork & Roth 2014, Theorem 3.6); its event is `PureEvent` (ε), ε as OpenDP's
    privacy map returns it at the scale drawn (``secure=True``) or the nominal ε."""

    sensitivity: float
    epsilon: float
    secure: bool = True
    name: ClassVar[str] = "laplace"
    _kind: ClassVar[str] = "float"
    _values: ClassVar[str] = "values"

    def __post_init__(self) -> None:
        epsilon, sensitivity, secure = checked_mechanism_arguments(
            self.epsilon, self.sensitivity, self.secure, integer_sensitivity=self._integer
        )
        object.__setattr__(self, "epsilon", epsilon)
        object.__setattr__(self, "sensitivity", sensitivity)
        object.__setattr__(self, "secure", secure)

    @property
    def _integer(self) -> bool:
        return self._kind == "int"

    @cached_property
    def _noise(self) -> tuple[Any, float, float]:
        """(OpenDP's measurement or None, the scale b, the ε of the privacy map)."""
        scale = checked_scale(self.sensitivity, self.epsilon)
        if self.secure:
            return laplace_measurement(self._kind, self.sensitivity, self.epsilon)
        return None, scale, self.epsilon

    @property
    def event(self) -> PureEvent:
        return PureEvent(self._noise[2])

    @property
    def note(self) -> str:
        scale = self._noise[1]
        if self.secure:
            return f"OpenDP make_laplace, scale={scale!r}, exact sampler on the 2^-1074 grid"
        return f"numpy Generator.laplace, scale={scale!r}: textbook floating-point sampler"

    def __call__(
        self, values, *, rng: RandomState = None, statistic: str | None = None
    ) -> tuple[np.ndarray, Release]:
        """``values`` plus the noise, in their shape (float64; int64 for the discrete
        mechanism), and the release."""
        check_noise_rng(rng)
        dtype = np.int64 if self._integer else np.float64
        values = checked_values(self._values, values, integer=self._integer).astype(dtype)
        measurement, scale, _ = self._noise
        if self.secure:
            noisy = np.asarray(measurement(values.ravel().tolist()), dtype=dtype)
        else:
            noisy = self._numpy_noisy(np.random.default_rng(rng), values, scale)
        return noisy.reshape(values.shape), self.release(statistic)

    @staticmethod
    def _numpy_noisy(generator: np.random.Generator, values: np.ndarray, scale: float):
        return np.asarray(generator.laplace(loc=values, scale=scale), dtype=np.float64)


@dataclass(frozen=True)
class DiscreteLaplaceMechanism(LaplaceMechanism):
    """The discrete Laplace mechanism of `discrete_laplace` at the integer Δ₁ =
    ``sensitivity`` and ``epsilon``: ε = Δ₁/b (Ghosh, Roughgarden & Sundararajan 2012;
    Canonne, Kamath & Steinke 2020, §5.2); its event is `PureEvent` (ε) as for
    `LaplaceMechanism`."""

    name: ClassVar[str] = "discrete_laplace"
    _kind: ClassVar[str] = "int"
    _values: ClassVar[str] = "counts"

    @property
    def note(self) -> str:
        scale = self._noise[1]
        if self.secure:
            return f"OpenDP make_laplace (integer), scale={scale!r}, exact CKS20 sampler"
        if scale <= FLOAT_SAMPLER_SCALE_LIMIT:
            return f"numpy difference of geometrics, scale={scale!r}"
        return f"numpy difference of geometrics drawn by their binary digits, scale={scale!r}"

    @staticmethod
    def _numpy_noisy(generator: np.random.Generator, values: np.ndarray, scale: float):
        return saturating_add(values, numpy_discrete_laplace(generator, scale, values.shape))


@dataclass(frozen=True)
class GaussianMechanism(Mechanism):
    """The Gaussian mechanism of `gaussian` at Δ₂ = ``sensitivity`` and ``rho``: ρ-zCDP with
    ρ = Δ₂²/(2σ²) (Bun & Steinke 2016, Proposition 1.6), stated at ``delta``; its event is
    `ZcdpEvent` (ρ, δ), ρ as OpenDP's privacy map returns it at the scale drawn
    (``secure=True``) or the nominal ρ."""

    sensitivity: float
    rho: float
    delta: float
    secure: bool = True
    name: ClassVar[str] = "gaussian"
    _kind: ClassVar[str] = "float"

    def __post_init__(self) -> None:
        rho, sensitivity, delta, secure = checked_gaussian_arguments(
            self.rho, self.sensitivity, self.delta, self.secure
        )
        object.__setattr__(self, "rho", rho)
        object.__setattr__(self, "sensitivity", sensitivity)
        object.__setattr__(self, "delta", delta)
        object.__setattr__(self, "secure", secure)

    @cached_property
    def _noise(self) -> tuple[Any, float, float]:
        """(OpenDP's measurement or None, the scale σ, the ρ of the privacy map)."""
        scale = checked_scale(self.sensitivity, math.sqrt(2.0 * self.rho))
        if self.secure:
            return gaussian_measurement(self._kind, self.sensitivity, self.rho)
        return None, scale, self.rho

    @property
    def event(self) -> ZcdpEvent:
        return ZcdpEvent(self._noise[2], self.delta)

    @property
    def note(self) -> str:
        scale = self._noise[1]
        if self.secure:
            return f"OpenDP make_gaussian ({self._kind}), scale={scale!r}, exact sampler"
        return f"numpy normal, scale={scale!r}: not secure"

    def __call__(
        self, values, *, rng: RandomState = None, statistic: str | None = None
    ) -> tuple[np.ndarray, Release]:
        """``values`` plus the noise, in their shape (int64 for the discrete Gaussian, else
        float64), and the release."""
        check_noise_rng(rng)
        integer = self._kind == "int"
        dtype = np.int64 if integer else np.float64
        values = checked_values("counts" if integer else "values", values, integer=integer)
        values = values.astype(dtype)
        measurement, scale, _ = self._noise
        if self.secure:
            noisy = np.asarray(measurement(values.ravel().tolist()), dtype=dtype)
            noisy = noisy.reshape(values.shape)
        else:
            noisy = self._numpy_noisy(np.random.default_rng(rng), values, scale)
        return noisy, self.release(statistic)

    @staticmethod
    def _numpy_noisy(generator: np.random.Generator, values: np.ndarray, scale: float):
        return values + generator.normal(0.0, scale, size=values.shape)


@dataclass(frozen=True)
class DiscreteGaussianMechanism(GaussianMechanism):
    """The discrete Gaussian mechanism of `discrete_gaussian` on integer statistics at Δ₂ =
    ``sensitivity`` and ``rho``: ρ = Δ₂²/(2σ²) (Canonne, Kamath & Steinke 2020, Theorem 4),
    its event `ZcdpEvent` (ρ, δ) as for `GaussianMechanism`."""

    name: ClassVar[str] = "discrete_gaussian"
    _kind: ClassVar[str] = "int"

    @property
    def note(self) -> str:
        scale = self._noise[1]
        if self.secure:
            return super().note
        if scale <= FLOAT_SAMPLER_SCALE_LIMIT:
            return f"numpy normal rounded, scale={scale!r}: not secure"
        return f"numpy discrete Gaussian (CKS 2020, Algorithm 3), scale={scale!r}: not secure"

    @staticmethod
    def _numpy_noisy(generator: np.random.Generator, values: np.ndarray, scale: float):
        if scale <= FLOAT_SAMPLER_SCALE_LIMIT:
            # The continuous mechanism rounded (post-processing of x + N, x integral).
            noise = np.rint(generator.normal(0.0, scale, size=values.shape)).astype(np.int64)
        else:
            noise = numpy_discrete_gaussian(generator, scale, values.shape)
        return saturating_add(values, noise)


@dataclass(frozen=True)
class UnitShiftGaussianMechanism(Mechanism):
    """The discrete Gaussian N_ℤ(0, σ²) on every cell of count statistics that one record
    moves by at most 1 in at most K = ``shifts`` cells in all, as one vector release: its
    event is `UnitShiftGaussianEvent` (σ, K, ρ, δ), whose ε at δ is the exact privacy profile
    `pymc_private.dp.events.unit_shift_epsilon` (σ, K, δ) (proved there), with ρ = K/(2σ²) as
    OpenDP's map gives it at Δ₂ = `ceil_sqrt` (K).

    ``secure=True`` draws with OpenDP's ``make_gaussian`` on integer vectors at scale σ (the
    exact sampler of Canonne, Kamath & Steinke 2020); ``secure=False`` runs the same
    algorithm on numpy's floating-point generator (`numpy_discrete_gaussian`), marked not
    secure. (Rounded numpy normals, which it drew before, are not the discrete Gaussian: at
    σ = 1 their hockey-stick divergence exceeds the profile's, and two such releases at δ =
    10⁻⁶ have ε ≥ 7.13 against the profile's 7.00.) The event is computed before any noise.
    """

    sigma: float
    shifts: int
    delta: float
    secure: bool = True
    name: ClassVar[str] = "discrete_gaussian"

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", checked_privacy_parameter("sigma", self.sigma))
        if isinstance(self.shifts, bool) or not isinstance(self.shifts, int) or self.shifts < 1:
            raise InvalidPrivacyParameterError(
                f"shifts (K) must be a positive integer, got {self.shifts!r}."
            )
        if isinstance(self.delta, bool) or not (
            isinstance(self.delta, int | float) and 0.0 < self.delta < 1.0
        ):
            raise InvalidPrivacyParameterError(
                f"delta must be a number in (0, 1), got {self.delta!r}: a Gaussian release is "
                "(ε, δ)-DP only for δ > 0; e.g. delta=1e-6."
            )
        object.__setattr__(self, "delta", float(self.delta))
        object.__setattr__(self, "secure", checked_secure(self.secure, TypeError))

    @property
    def sensitivity(self) -> float:
        """Δ₂ = √K, rounded up."""
        return ceil_sqrt(self.shifts)

    @cached_property
    def event(self) -> UnitShiftGaussianEvent:
        rho = float(opendp_gaussian_at("int", self.sigma).map(self.sensitivity))
        return UnitShiftGaussianEvent(self.sigma, self.shifts, rho, self.delta)

    @property
    def note(self) -> str:
        source = (
            "OpenDP make_gaussian (int), exact sampler"
            if self.secure
            else "numpy discrete Gaussian (CKS 2020, Algorithm 3)"
        )
        return (
            f"{source}, scale={self.sigma!r}: one record moves at most {self.shifts} cells by 1; "
            "ε from the exact privacy profile (dp-accounting PLD)"
            + ("" if self.secure else ": not secure")
        )

    def __call__(
        self, counts: Mapping[str, np.ndarray], *, rng: RandomState = None
    ) -> tuple[dict[str, np.ndarray], Release]:
        """Each named count statistic plus N_ℤ(0, σ²) per cell, in their order, and the one
        release of them all."""
        check_noise_rng(rng)
        exact = {
            name: checked_values("counts", value, integer=True).astype(np.int64)
            for name, value in counts.items()
        }
        release = self.release(", ".join(exact))  # its event raises before any noise
        if self.secure:
            measurement = opendp_gaussian_at("int", self.sigma)
            noisy = {
                name: np.asarray(measurement(value.ravel().tolist()), dtype=np.int64).reshape(
                    value.shape
                )
                for name, value in exact.items()
            }
        else:
            generator = np.random.default_rng(rng)
            noisy = {
                name: saturating_add(
                    value, numpy_discrete_gaussian(generator, self.sigma, value.shape)
                )
                for name, value in exact.items()
            }
        return noisy, release


def numpy_discrete_laplace(generator: np.random.Generator, scale: float, shape) -> np.ndarray:
    """Draws of the discrete Laplace law P(y) ∝ e^{−|y|/b}, b = ``scale``, on numpy's generator
    (not secure): the difference G₁ − G₂ of two geometric counts, P(G = k) = (1 − r)·r^k on
    k ≥ 0, r = e^{−1/b}.

    - b ≤ `FLOAT_SAMPLER_SCALE_LIMIT` (2⁴⁰): numpy's ``Generator.geometric`` at success
      probability 1 − r, whose seeded draws this keeps. It inverts, ⌈E·b⌉ (up to the offset
      that cancels), with E a ziggurat exponential on a 53-bit grid: finer than 2⁻⁹ of an
      integer step below E = 7.7, so the point probabilities are those of the law up to a
      relative error of order b·2⁻⁵⁰; only its far tail, E > 7.7 + ln(2⁵³/b), steps over
      integers, with probability at most 4.6·10⁻⁴·b·2⁻⁵³ (≤ 2⁻²⁴ at b = 2⁴⁰) per count.
      Above this scale its steps leave integers out (at b = 2⁵², 49.1% of the draws are odd)
      and from b ≈ 10¹⁸ it returns 2⁶³ − 1 for most counts, so that G₁ − G₂ = 0.
    - b > 2⁴⁰: `binary_digit_geometric`, the exact law conditioned on G < 2^J, every point
      probability within a factor e^{±J·2⁻⁵⁰} of it (J = `binary_digit_count` (b)).

    Returns int64 when every count is below 2⁶³ (J ≤ 63, b < 1.3·10¹⁶), else an object array of
    Python ints; the random words consumed depend on b and the shape only.
    """
    if scale <= FLOAT_SAMPLER_SCALE_LIMIT:
        success = -math.expm1(-1.0 / scale)
        return generator.geometric(success, size=shape) - generator.geometric(success, size=shape)
    size = _size(shape)
    counts = binary_digit_geometric(generator, scale, 2 * size)
    return (counts[:size] - counts[size:]).reshape(shape)


def _noise_dtype(scale: float) -> np.dtype:
    """The dtype of `numpy_discrete_laplace` at ``scale``: int64, or object (Python ints) when
    its counts can exceed 2⁶³ − 1."""
    if scale <= FLOAT_SAMPLER_SCALE_LIMIT or binary_digit_count(scale) < _WORD_BITS:
        return np.dtype(np.int64)
    return np.dtype(object)


def _size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def binary_digit_count(scale: float) -> int:
    """J, the number of binary digits `binary_digit_geometric` draws at scale b: the smallest j
    with 2^j/b > 708, where e^{−2^j/b} leaves the normal doubles. P(G ≥ 2^J) = e^{−2^J/b} <
    e^{−708} < 2⁻¹⁰²¹."""
    return len(_binary_digit_plan(float(scale))[1])


@functools.lru_cache(maxsize=256)
def _binary_digit_plan(scale: float) -> tuple[int, tuple[tuple[int, ...], ...]]:
    """(u, thresholds): the lowest u digits of a geometric count of scale b have probability
    exactly ½ in double precision; for every digit j < J, the 64-bit words of the integer
    p̂_j·2^{64W}, most significant first, W the fewest words that hold the dyadic p̂_j exactly.

    p̂_j is the double nearest p_j = 1/(1 + e^{2^j/b}) up to 2⁻⁵⁰ relative (also for 1 − p_j):
    2^j/b is split exactly into a double and its remainder, e^{−a} is their two exponentials'
    product, and p̂_j = e^{−a}/(1 + e^{−a}), each step within an ulp on a libm whose ``exp``
    is (glibc's is)."""
    thresholds = []
    digit = 0
    while True:
        exponent = Fraction(2**digit) / Fraction(scale)
        high = float(exponent)
        if high > _LAST_DIGIT_EXPONENT:
            break
        tail = math.exp(-high) * math.exp(-float(exponent - Fraction(high)))
        probability = Fraction(tail / (1.0 + tail))
        bits = probability.denominator.bit_length() - 1
        words = -(-bits // _WORD_BITS)
        threshold = probability.numerator << (words * _WORD_BITS - bits)
        thresholds.append(
            tuple((threshold >> (_WORD_BITS * k)) & _WORD_MASK for k in reversed(range(words)))
        )
        digit += 1
    uniform = sum(1 for words in thresholds if words == (1 << (_WORD_BITS - 1),))
    return uniform, tuple(thresholds)


def binary_digit_geometric(generator: np.random.Generator, scale: float, size: int) -> np.ndarray:
    """``size`` geometric counts P(G = k) = (1 − r)·r^k, k ≥ 0, r = e^{−1/b}, b = ``scale``,
    drawn by their binary digits with exact support at every scale.

    The digits of G are independent: P(G = k) = Π_j p_j^{k_j}·(1 − p_j)^{1 − k_j} over the
    digits k_j of k, with p_j = r^{2^j}/(1 + r^{2^j}) = 1/(1 + e^{2^j/b}) (since
    1 − r = Π_j 1/(1 + r^{2^j})). Digits j < J = `binary_digit_count` (b) are drawn; digit j
    is 1 when W_j uniform 64-bit words, read as one integer U, are below p̂_j·2^{64W_j}, which
    is exactly Bernoulli(p̂_j) for the double p̂_j (`_binary_digit_plan`); the lowest digits,
    whose p̂_j is ½, are the top bits of one word. So the draws take every value in
    [0, 2^J) (the law of G conditioned on G < 2^J, whose mass outside is below 2⁻¹⁰²¹), each
    with probability within a factor e^{±J·2⁻⁵⁰} of it, and consume a number of words that
    depends on b and ``size`` only (in blocks of `_DRAWS_PER_BLOCK` draws).

    Returns int64 when J ≤ 63, else an object array of Python ints.
    """
    uniform, thresholds = _binary_digit_plan(float(scale))
    digits = len(thresholds)
    uniform_words = -(-uniform // _WORD_BITS)
    drawn = [(digit, words) for digit, words in enumerate(thresholds) if digit >= uniform]
    per_draw = uniform_words + sum(len(words) for _, words in drawn)
    limbs = np.zeros((max(1, -(-digits // _WORD_BITS)), size), dtype=np.uint64)
    for start in range(0, size, _DRAWS_PER_BLOCK):
        block = slice(start, min(start + _DRAWS_PER_BLOCK, size))
        words = generator.integers(
            0, 1 << _WORD_BITS, size=(per_draw, block.stop - block.start), dtype=np.uint64
        )
        for limb in range(uniform_words):
            width = min(_WORD_BITS, uniform - _WORD_BITS * limb)
            limbs[limb, block] = words[limb] >> np.uint64(_WORD_BITS - width)
        row = uniform_words
        for digit, threshold in drawn:
            below = words[row] < np.uint64(threshold[0])
            tied = words[row] == np.uint64(threshold[0])
            for word, part in zip(
                words[row + 1 : row + len(threshold)], threshold[1:], strict=True
            ):
                below |= tied & (word < np.uint64(part))
                tied &= word == np.uint64(part)
            row += len(threshold)
            limbs[digit // _WORD_BITS, block] |= below.astype(np.uint64) << np.uint64(
                digit % _WORD_BITS
            )
    if digits < _WORD_BITS:
        return limbs[0].astype(np.int64)
    counts = limbs[0].astype(object)
    for limb in range(1, len(limbs)):
        counts = counts + (limbs[limb].astype(object) << (_WORD_BITS * limb))
    return counts


def numpy_discrete_gaussian(generator: np.random.Generator, sigma: float, shape) -> np.ndarray:
    """Draws of N_ℤ(0, σ²) by Canonne, Kamath & Steinke 2020, Algorithm 3, on numpy's
    floating-point generator (not secure): Y from the discrete Laplace of scale t = ⌊σ⌋ + 1
    (`numpy_discrete_laplace`, so with exact support at every σ), kept with probability
    exp(−(|Y| − σ²/t)²/(2σ²)) (computed as exp(−(|Y|/σ − σ/t)²/2) above
    `FLOAT_SAMPLER_SCALE_LIMIT`, where σ² may overflow), until every draw is kept.

    Returns int64 or Python ints as `numpy_discrete_laplace` at scale t; its seeded draws are
    those of the numpy sampler while t ≤ `FLOAT_SAMPLER_SCALE_LIMIT` (σ < 2⁴⁰).
    """
    size = _size(shape)
    scale = math.floor(sigma) + 1
    out = np.empty(size, dtype=_noise_dtype(scale))
    pending = np.arange(size)
    while pending.size:
        draws = numpy_discrete_laplace(generator, scale, pending.size)
        kept = generator.random(pending.size) < _kept_probability(draws, sigma, scale)
        out[pending[kept]] = draws[kept]
        pending = pending[~kept]
    return out.reshape(shape)


def _kept_probability(draws: np.ndarray, sigma: float, scale: int) -> np.ndarray:
    """exp(−(|Y| − σ²/t)²/(2σ²)) of CKS 2020, Algorithm 3, for the draws Y."""
    if sigma <= FLOAT_SAMPLER_SCALE_LIMIT:
        return np.exp(-((np.abs(draws) - sigma**2 / scale) ** 2) / (2.0 * sigma**2))
    # |Y|/σ in doubles, |Y| and σ first divided by the same power of two: |Y| < 2^J < 1416·t,
    # so |Y| then stays below 2⁷⁶, a double, whatever σ.
    shift = max(0, math.frexp(sigma)[1] - _WORD_BITS)
    ratio = (np.abs(draws) >> shift).astype(np.float64) / math.ldexp(sigma, -shift)
    return np.exp(-((ratio - sigma / scale) ** 2) / 2.0)


def saturating_add(values: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """``values + noise`` computed exactly and clipped to the int64 range, as OpenDP's
    samplers add integer noise: a post-processing of the exact noisy value, so it costs no
    privacy, and whether it clips is never an error. ``values`` int64, ``noise`` int64 (then
    |noise| < 2⁶³) or Python ints."""
    values = np.asarray(values, dtype=np.int64)
    if noise.dtype == object:
        exact = values.astype(object) + noise
        return np.asarray(
            np.minimum(np.maximum(exact, _INT64.min), _INT64.max), dtype=np.int64
        ).reshape(values.shape)
    noise = np.asarray(noise, dtype=np.int64)
    total = np.empty(np.broadcast(values, noise).shape, dtype=np.int64)
    with np.errstate(over="ignore"):
        np.add(values, noise, out=total)  # int64 arithmetic wraps at most once
    total[(noise > 0) & (total < values)] = _INT64.max
    total[(noise < 0) & (total > values)] = _INT64.min
    return total


@dataclass(frozen=True)
class ExponentialMechanism(Mechanism):
    """The exponential mechanism of `exponential_mechanism` with utilities of sensitivity Δ =
    ``sensitivity`` at ``epsilon`` (McSherry & Talwar 2007; Dwork & Roth 2014, Theorem 3.10):
    its event is `PureEvent` (ε), ε = cΔ/scale computed exactly and rounded up
    (``secure=True``, c = 2, or 1 when ``monotone``) or the nominal ε."""

    sensitivity: float
    epsilon: float
    monotone: bool = False
    secure: bool = True
    name: ClassVar[str] = "exponential_mechanism"

    def __post_init__(self) -> None:
        epsilon, sensitivity, secure = checked_mechanism_arguments(
            self.epsilon, self.sensitivity, self.secure, monotone=self.monotone
        )
        object.__setattr__(self, "epsilon", epsilon)
        object.__setattr__(self, "sensitivity", sensitivity)
        object.__setattr__(self, "secure", secure)

    @property
    def _factor(self) -> int:
        return 1 if self.monotone else 2

    @cached_property
    def _noise(self) -> tuple[Any, float | None, float]:
        """(OpenDP's measurement or None, its Gumbel scale, the ε of the choice)."""
        checked_scale(self._factor * self.sensitivity, self.epsilon)
        if self.secure:
            return gumbel_max_measurement(self.sensitivity, self.epsilon, bool(self.monotone))
        return None, None, self.epsilon

    @property
    def event(self) -> PureEvent:
        return PureEvent(self._noise[2])

    @property
    def note(self) -> str:
        if self.secure:
            note = (
                f"OpenDP make_noisy_max (Gumbel), scale={self._noise[1]!r}, exact comparisons;"
                " zCDP rho = epsilon^2/8"
            )
        else:
            note = "numpy Gumbel-max in floating point"
        return note + (", monotone utility" if self.monotone else "")

    def __call__(
        self, scores, *, rng: RandomState = None, statistic: str | None = None
    ) -> tuple[int, Release]:
        """The chosen candidate's index and the release."""
        check_noise_rng(rng)
        scores = checked_values("scores", scores, integer=False).astype(np.float64)
        if scores.ndim != 1:
            raise DataBoundsError(
                f"scores must be one-dimensional (one utility per candidate), got {scores.ndim}"
                " dimensions; flatten the candidate set first."
            )
        measurement, _, _ = self._noise
        if self.secure:
            index = int(measurement(scores.tolist()))
        else:
            generator = np.random.default_rng(rng)
            log_weights = scores * (self.epsilon / (self._factor * self.sensitivity))
            index = int(np.argmax(log_weights + generator.gumbel(size=scores.shape)))
        return index, self.release(statistic)


def exact_choice(log_weights, *, secure: bool, rng: np.random.Generator | None = None) -> int:
    """Index k drawn with probability exp(w_k) / Σ_j exp(w_j), for finite float log-weights w.

    This is the sampling step of every exponential mechanism of the package (a grid draw
    from a tempered posterior, Barker's accept/reject as a choice between the scores Λ and
    0); it releases nothing by itself, and the caller states and records the cost.

    ``secure=True``: OpenDP 0.16's ``make_noisy_max`` with zero-concentrated divergence and
    scale 1, i.e. arg-max of w_k + G_k with exact Gumbel noise G_k compared in arbitrary
    precision. Each float w_k is an exact rational, so the output law is exactly the
    softmax of the w_k as given (no rounding of a continuous sample into a data-dependent
    set of floats: Mironov 2012, Ilvento 2020). The randomness comes from the operating
    system's generator; ``rng`` is not read, so no caller-visible generator state depends
    on the weights. ``secure=False``: ``argmax(w + rng.gumbel(size=K))`` in floating point,
    reproducible from ``rng``, which consumes exactly K standard Gumbel draws whatever the
    weights; it realises the softmax only up to rounding.

    Parameters
    ----------
    log_weights
        One-dimensional finite float array of K ≥ 1 entries (the caller validates: the
        weights are computed from private data and an error here would be a release).
    secure
        See above.
    rng
        The generator of ``secure=False``.
    """
    weights = np.asarray(log_weights, dtype=np.float64)
    if secure:
        return int(softmax_measurement()(weights.tolist()))
    return int(np.argmax(weights + rng.gumbel(size=weights.shape)))
