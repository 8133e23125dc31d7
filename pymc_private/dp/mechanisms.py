"""Noise primitives: the Laplace, Gaussian (continuous and discrete) and exponential mechanisms.

Each function validates its inputs (before any randomness), draws the noise, and returns the
noisy output together with a `~pymc_private.dp.events.Release` that states what the release
cost. A mechanism never touches a ledger: the caller records the release it is handed.

Secure and insecure noise
-------------------------
``secure=True`` (the default) samples with OpenDP's exact samplers, which draw from the
operating system's cryptographically secure generator and never round a continuous sample to
a float in a data-dependent way, so they are immune to the floating-point attack on textbook
Laplace samplers (Mironov 2012, "On significance of the least significant bits for
differential privacy", CCS). ``secure=False`` samples with numpy: fast and reproducible, for
simulations, tests and benchmarks; the release is marked ``secure=False`` because a textbook
floating-point sampler is not differentially private as implemented.

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
import numbers
from fractions import Fraction

import numpy as np
from opendp import measurements
from opendp.domains import atom_domain, vector_domain
from opendp.measures import zero_concentrated_divergence
from opendp.metrics import l1_distance, l2_distance, linf_distance
from opendp.mod import enable_features

from pymc_private.dp.checks import check_noise_rng, checked_privacy_parameter, checked_secure
from pymc_private.dp.events import PureEvent, Release, ZcdpEvent
from pymc_private.errors import DataBoundsError, InvalidPrivacyParameterError

__all__ = [
    "LOG_ODDS_BOUND",
    "ROUNDING_ALLOWANCE",
    "barker_epsilon",
    "barker_log_odds",
    "ceil_sqrt",
    "checked_values",
    "discrete_gaussian",
    "discrete_laplace",
    "exact_choice",
    "exponential_mechanism",
    "gaussian",
    "laplace",
    "opendp_gaussian_at",
]

enable_features("contrib")

_MAX_EXACT_INTEGER = 2**53

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
    epsilon, sensitivity, secure = _check_arguments(epsilon, sensitivity, secure, rng)
    values = checked_values("values", values, integer=False).astype(np.float64)
    scale = _checked_scale(sensitivity, epsilon)
    if secure:
        noisy, scale, epsilon_spent = _opendp_laplace_noise("float", values, sensitivity, epsilon)
        note = f"OpenDP make_laplace, scale={scale!r}, exact sampler on the 2^-1074 grid"
    else:
        noisy = np.random.default_rng(rng).laplace(loc=values, scale=scale)
        noisy = np.asarray(noisy, dtype=np.float64).reshape(values.shape)
        epsilon_spent = epsilon
        note = f"numpy Generator.laplace, scale={scale!r}: textbook floating-point sampler"
    release = Release(
        mechanism="laplace",
        event=PureEvent(epsilon_spent),
        sensitivity=sensitivity,
        statistic=statistic,
        secure=secure,
        note=note,
    )
    return noisy, release


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
        ``G_i ~ Geometric(1 − e^{−1/b})``, exact in distribution up to numpy's floating-point
        geometric sampler; the release records the nominal ε and ``secure=False``.
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
    epsilon, sensitivity, secure = _check_arguments(
        epsilon, sensitivity, secure, rng, integer_sensitivity=True
    )
    counts = checked_values("counts", counts, integer=True).astype(np.int64)
    scale = _checked_scale(sensitivity, epsilon)
    if secure:
        noisy, scale, epsilon_spent = _opendp_laplace_noise("int", counts, sensitivity, epsilon)
        note = f"OpenDP make_laplace (integer), scale={scale!r}, exact CKS20 sampler"
    else:
        generator = np.random.default_rng(rng)
        success = -math.expm1(-1.0 / scale)
        noise = generator.geometric(success, size=counts.shape) - generator.geometric(
            success, size=counts.shape
        )
        noisy = (counts + noise).astype(np.int64)
        epsilon_spent = epsilon
        note = f"numpy difference of geometrics, scale={scale!r}"
    release = Release(
        mechanism="discrete_laplace",
        event=PureEvent(epsilon_spent),
        sensitivity=sensitivity,
        statistic=statistic,
        secure=secure,
        note=note,
    )
    return noisy, release


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
        records the ρ that map returns. False: numpy, ``Z = round(N(0, σ²))``, which is the
        continuous Gaussian mechanism followed by rounding (post-processing, so ρ-zCDP over
        the reals, exact up to numpy's floating-point normal sampler); marked not secure.
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
    return _gaussian_mechanism(
        "discrete_gaussian", counts, sensitivity_l2, rho, delta, rng, secure, statistic
    )


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
    return _gaussian_mechanism(
        "gaussian", values, sensitivity_l2, rho, delta, rng, secure, statistic
    )


def _gaussian_mechanism(mechanism, values, sensitivity_l2, rho, delta, rng, secure, statistic):
    """`discrete_gaussian` (integers) and `gaussian` (floats): validate, add noise, record."""
    rho, sensitivity, delta, secure = _check_gaussian_arguments(
        rho, sensitivity_l2, delta, secure, rng
    )
    integer = mechanism == "discrete_gaussian"
    dtype = np.int64 if integer else np.float64
    name = "counts" if integer else "values"
    values = checked_values(name, values, integer=integer).astype(dtype)
    scale = _checked_scale(sensitivity, math.sqrt(2.0 * rho))
    if secure:
        kind = "int" if integer else "float"
        measurement, scale, rho_spent = _opendp_gaussian(kind, sensitivity, rho)
        noisy = np.asarray(measurement(values.ravel().tolist()), dtype=dtype)
        noisy = noisy.reshape(values.shape)
        note = f"OpenDP make_gaussian ({kind}), scale={scale!r}, exact sampler"
    else:
        noise = np.random.default_rng(rng).normal(0.0, scale, size=values.shape)
        # Integers: the continuous mechanism rounded (post-processing of x + N, x integral).
        noisy = values + (np.rint(noise).astype(np.int64) if integer else noise)
        rho_spent = rho
        note = f"numpy normal{' rounded' if integer else ''}, scale={scale!r}: not secure"
    release = Release(
        mechanism=mechanism,
        event=ZcdpEvent(rho_spent, delta),
        sensitivity=sensitivity,
        statistic=statistic,
        secure=secure,
        note=note,
    )
    return noisy, release


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
    epsilon, sensitivity, secure = _check_arguments(
        epsilon, sensitivity, secure, rng, monotone=monotone
    )
    scores = checked_values("scores", scores, integer=False).astype(np.float64)
    if scores.ndim != 1:
        raise DataBoundsError(
            f"scores must be one-dimensional (one utility per candidate), got {scores.ndim}"
            " dimensions; flatten the candidate set first."
        )
    factor = 1 if monotone else 2
    _checked_scale(factor * sensitivity, epsilon)
    if secure:
        measurement, scale, epsilon_spent = _opendp_gumbel_max(sensitivity, epsilon, bool(monotone))
        index = int(measurement(scores.tolist()))
        note = (
            f"OpenDP make_noisy_max (Gumbel), scale={scale!r}, exact comparisons;"
            " zCDP rho = epsilon^2/8"
        )
    else:
        generator = np.random.default_rng(rng)
        log_weights = scores * (epsilon / (factor * sensitivity))
        index = int(np.argmax(log_weights + generator.gumbel(size=scores.shape)))
        epsilon_spent = epsilon
        note = "numpy Gumbel-max in floating point"
    release = Release(
        mechanism="exponential_mechanism",
        event=PureEvent(epsilon_spent),
        sensitivity=sensitivity,
        statistic=statistic,
        secure=secure,
        note=note + (", monotone utility" if monotone else ""),
    )
    return index, release


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
        return int(_opendp_softmax()(weights.tolist()))
    return int(np.argmax(weights + rng.gumbel(size=weights.shape)))


@functools.lru_cache(maxsize=1)
def _opendp_softmax():
    """OpenDP's exact Gumbel noisy max of scale 1 over any number of float scores."""
    space = (
        vector_domain(atom_domain(T=float, nan=False)),
        linf_distance(T=float, monotonic=False),
    )
    return measurements.make_noisy_max(*space, zero_concentrated_divergence(), scale=1.0)


def _check_arguments(
    epsilon,
    sensitivity,
    secure,
    rng,
    *,
    integer_sensitivity: bool = False,
    monotone: bool = False,
) -> tuple[float, float, bool]:
    """The arguments every mechanism shares, validated in one order: ε, Δ (an integer when
    ``integer_sensitivity``), ``secure``, ``monotone``, ``rng``. Returns (ε, Δ, secure)."""
    epsilon = checked_privacy_parameter("epsilon", epsilon)
    sensitivity = checked_privacy_parameter("sensitivity", sensitivity)
    if integer_sensitivity and (
        sensitivity != math.floor(sensitivity) or sensitivity > _MAX_EXACT_INTEGER
    ):
        raise InvalidPrivacyParameterError(
            f"sensitivity must be a positive integer for discrete_laplace, got {sensitivity!r};"
            " use laplace() for a real-valued sensitivity."
        )
    secure = checked_secure(secure, TypeError)
    if not isinstance(monotone, bool | np.bool_):
        raise TypeError(f"monotone must be True or False, got {type(monotone).__name__}.")
    check_noise_rng(rng)
    return epsilon, sensitivity, secure


def _check_gaussian_arguments(rho, sensitivity, delta, secure, rng):
    """ρ, Δ₂, δ, ``secure``, ``rng`` validated in that order; returns (ρ, Δ₂, δ, secure)."""
    rho = checked_privacy_parameter("rho", rho)
    sensitivity = checked_privacy_parameter("sensitivity_l2", sensitivity)
    if (
        isinstance(delta, bool | np.bool_)
        or not isinstance(delta, numbers.Real)
        or not 0.0 < float(delta) < 1.0
    ):
        raise InvalidPrivacyParameterError(
            f"delta must be a number in (0, 1), got {delta!r}: a Gaussian release is "
            "(ε, δ)-DP only for δ > 0; e.g. delta=1e-6."
        )
    secure = checked_secure(secure, TypeError)
    check_noise_rng(rng)
    return rho, sensitivity, float(delta), secure


def checked_values(name: str, values, *, integer: bool) -> np.ndarray:
    """The validated array (no copy of private values into any message)."""
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as error:
        raise DataBoundsError(
            f"{name} must be an array of numbers with a regular shape; convert it with "
            "np.asarray first."
        ) from error
    if array.dtype.kind not in "iuf":
        raise DataBoundsError(
            f"{name} must have an integer or float dtype, got dtype {array.dtype}; convert it "
            f"with np.asarray({name}, dtype={'np.int64' if integer else 'float'})."
        )
    if array.size == 0:
        raise DataBoundsError(f"{name} is empty; pass at least one entry to privatise.")
    if array.dtype.kind == "f" and not np.all(np.isfinite(array)):
        raise DataBoundsError(
            f"{name} contains NaN or infinite entries; declare bounds on the private data "
            "(PrivateData bounds) so every statistic is finite."
        )
    if integer:
        if array.dtype.kind == "f" and not (
            np.all(array == np.floor(array)) and np.all(np.abs(array) <= _MAX_EXACT_INTEGER)
        ):
            raise DataBoundsError(
                f"{name} must hold integer counts, but some entries are not integers (or "
                "exceed 2**53 in magnitude); pass an integer array, or use laplace() for "
                "real-valued statistics."
            )
        if array.dtype.kind == "u" and np.any(array > np.iinfo(np.int64).max):
            raise DataBoundsError(f"{name} has entries beyond the int64 range; rescale them.")
    return array


def _checked_scale(sensitivity: float, epsilon: float) -> float:
    scale = sensitivity / epsilon
    if not (math.isfinite(scale) and scale > 0):
        raise InvalidPrivacyParameterError(
            "sensitivity / epsilon must be a finite positive noise scale; choose epsilon and "
            "sensitivity within a few hundred orders of magnitude of each other."
        )
    return scale


def _opendp_laplace_noise(
    kind: str, values: np.ndarray, sensitivity: float, epsilon: float
) -> tuple[np.ndarray, float, float]:
    """``values`` plus OpenDP Laplace noise (`_opendp_laplace`), in their shape and dtype.

    Returns ``(noisy, scale, mapped_epsilon)``.
    """
    measurement, scale, epsilon_spent = _opendp_laplace(kind, sensitivity, epsilon)
    noisy = np.asarray(measurement(values.ravel().tolist()), dtype=values.dtype)
    return noisy.reshape(values.shape), scale, epsilon_spent


@functools.lru_cache(maxsize=256)
def _opendp_laplace(kind: str, sensitivity: float, epsilon: float):
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
def _opendp_gaussian(kind: str, sensitivity: float, rho: float):
    """OpenDP's vector Gaussian with the smallest scale ≥ Δ₂/√(2ρ) whose map(Δ₂) ≤ ρ.

    Returns ``(measurement, scale, mapped_rho)``; the map is monotone decreasing in the
    scale, so a few `math.nextafter` steps reach it.
    """
    atom = atom_domain(T="i64") if kind == "int" else atom_domain(T=float, nan=False)
    space = vector_domain(atom), l2_distance(T=float)
    scale = sensitivity / math.sqrt(2.0 * rho)
    measurement = measurements.make_gaussian(*space, scale=scale)
    while measurement.map(sensitivity) > rho:
        scale = math.nextafter(scale, math.inf)
        measurement = measurements.make_gaussian(*space, scale=scale)
    return measurement, scale, float(measurement.map(sensitivity))


@functools.lru_cache(maxsize=256)
def opendp_gaussian_at(kind: str, scale: float):
    """OpenDP's vector Gaussian at exactly this scale (its map gives the ρ)."""
    atom = atom_domain(T="i64") if kind == "int" else atom_domain(T=float, nan=False)
    return measurements.make_gaussian(vector_domain(atom), l2_distance(T=float), scale=scale)


@functools.lru_cache(maxsize=256)
def _opendp_gumbel_max(sensitivity: float, epsilon: float, monotone: bool):
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
