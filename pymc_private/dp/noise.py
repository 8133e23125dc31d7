"""Noise laws, one per noise family, given by the mechanism that draws it, and the numpy
samplers of ``secure=False`` integer noise.

A `NoiseLaw` is the law of the noise added to one released cell: its scale, its variance, its
log-probability on the integers (what the noise-aware sampler weighs latent counts by), its
log-density in any array namespace (numpy's or PyTensor's: what the noise-aware likelihood
reads; this package imports neither PyMC nor PyTensor), fresh draws (replicated releases), and
the reach of a conditional that has it as a factor. Each mechanism of
`pymc_private.dp.mechanisms` names its law (``noise_law``), so a plan reads the law from the
mechanism that drew the noise and no code compares the names of noises.

The samplers reach every integer at every scale: numpy's floating-point samplers skip integers
and saturate at huge scales, so above the scale `FLOAT_SAMPLER_SCALE_LIMIT` (2⁴⁰) the
geometric counts are drawn by their binary digits (`binary_digit_geometric`), and integer
outputs are exact sums saturated to the int64 range (`saturating_add`), as OpenDP's are.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

__all__ = [
    "FLOAT_SAMPLER_SCALE_LIMIT",
    "GaussianNoise",
    "LaplaceNoise",
    "NoiseLaw",
    "binary_digit_count",
    "binary_digit_geometric",
    "noise_dtype",
    "numpy_discrete_gaussian",
    "numpy_discrete_laplace",
    "saturating_add",
]


@dataclass(frozen=True)
class NoiseLaw:
    """The law of the noise added to one released cell, of scale ``scale`` in the cell's units
    (the Laplace scale b, the Gaussian σ; 0 for a cell released as is).

    Subclasses give the law's ``name`` (as reports show it), ``variance`` and
    ``standard_deviation``, ``log_pmf`` on the
    integers (up to a constant), ``log_density`` of residuals in an array namespace,
    ``sample`` of fresh draws in the cell's units, ``sample_integers`` of integer noise from
    numpy (``secure=False``) and ``reach``."""

    scale: float
    name: ClassVar[str]

    @property
    def variance(self) -> float:
        raise NotImplementedError

    @property
    def standard_deviation(self) -> float:
        raise NotImplementedError

    def log_pmf(self, z) -> np.ndarray:
        """log P(Z = z) on the integers, up to a constant."""
        raise NotImplementedError

    def log_density(self, residual, ops: Any):
        """The log-density of ``residual`` = released − true, elementwise, in the array
        namespace ``ops`` (``abs``, ``log``, ...: numpy's, or PyTensor's in a graph)."""
        raise NotImplementedError

    def sample(self, generator: np.random.Generator, shape) -> np.ndarray:
        """Fresh draws of the law in the cell's units (a zero scale draws zeros)."""
        raise NotImplementedError

    def sample_integers(self, generator: np.random.Generator, shape) -> np.ndarray:
        """Integer noise of the law's discrete counterpart from numpy (not secure)."""
        raise NotImplementedError

    def reach(self, spread: np.ndarray) -> np.ndarray:
        """Half-width of a first window for a conditional of standard deviation about
        ``spread`` that has this noise as a factor."""
        raise NotImplementedError


@dataclass(frozen=True)
class LaplaceNoise(NoiseLaw):
    """Laplace noise of scale b, or its discrete counterpart P(z) ∝ e^{−|z|/b} on the integers
    (variance 2b², that of the continuous law, which locates the windows)."""

    name: ClassVar[str] = "laplace"

    @property
    def variance(self) -> float:
        return 2.0 * self.scale**2

    @property
    def standard_deviation(self) -> float:
        return self.scale * math.sqrt(2.0)

    def log_pmf(self, z) -> np.ndarray:
        return -np.abs(z) / self.scale

    def log_density(self, residual, ops: Any):
        return -ops.abs(residual) / self.scale - math.log(2.0 * self.scale)

    def sample(self, generator: np.random.Generator, shape) -> np.ndarray:
        if self.scale == 0:
            return np.zeros(shape)
        return generator.laplace(0.0, self.scale, shape)

    def sample_integers(self, generator: np.random.Generator, shape) -> np.ndarray:
        return numpy_discrete_laplace(generator, self.scale, shape)

    def reach(self, spread: np.ndarray) -> np.ndarray:
        """Up to about 23 spreads (32 Laplace scales) where the Laplace factor's exponential
        tails dominate."""
        return spread * (9.0 + 14.0 * spread * spread / self.variance)


@dataclass(frozen=True)
class GaussianNoise(NoiseLaw):
    """Gaussian noise N(0, σ²), or the discrete Gaussian N_ℤ(0, σ²) on the integers."""

    name: ClassVar[str] = "gaussian"

    @property
    def variance(self) -> float:
        return self.scale**2

    @property
    def standard_deviation(self) -> float:
        return self.scale

    def log_pmf(self, z) -> np.ndarray:
        return -0.5 * (np.asarray(z, dtype=np.float64) / self.scale) ** 2

    def log_density(self, residual, ops: Any):
        return -0.5 * (residual / self.scale) ** 2 - math.log(self.scale * math.sqrt(2 * math.pi))

    def sample(self, generator: np.random.Generator, shape) -> np.ndarray:
        if self.scale == 0:
            return np.zeros(shape)
        return generator.normal(0.0, self.scale, shape)

    def sample_integers(self, generator: np.random.Generator, shape) -> np.ndarray:
        return numpy_discrete_gaussian(generator, self.scale, shape)

    def reach(self, spread: np.ndarray) -> np.ndarray:
        """9 spreads for Gaussian tails."""
        return 9.0 * spread


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


def noise_dtype(scale: float) -> np.dtype:
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
    out = np.empty(size, dtype=noise_dtype(scale))
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
