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
reaches every integer at every scale (`pymc_private.dp.noise`: above the scale
`~pymc_private.dp.noise.FLOAT_SAMPLER_SCALE_LIMIT` (2⁴⁰) the geometric counts are drawn by
their binary digits), and integer outputs are exact sums saturated to the int64 range, as
OpenDP's are.

Each mechanism names the law of the noise it draws (``noise_law``, a
`~pymc_private.dp.noise.NoiseLaw` class), which the release plans hand to the noise-aware
likelihood.

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
from pymc_private.dp.noise import (
    FLOAT_SAMPLER_SCALE_LIMIT,
    GaussianNoise,
    LaplaceNoise,
    NoiseLaw,
    numpy_discrete_gaussian,
    numpy_discrete_laplace,
    saturating_add,
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
    noise_law: ClassVar[type[NoiseLaw] | None] = None
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
    noise_law: ClassVar[type[NoiseLaw]] = LaplaceNoise
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
    noise_law: ClassVar[type[NoiseLaw]] = GaussianNoise
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
    noise_law: ClassVar[type[NoiseLaw]] = GaussianNoise

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
