"""Boundary validators: the privacy parameters and options a public function accepts (ε, δ,
the temperature T, ``secure``, the random generator or seed, the grid's cells, a noise
mechanism's parameters, noise scale and values), each checked before anything is read, drawn
or recorded.

A validator returns the value in the type the package computes with, or raises with a message
that says what is accepted. Where two callers accept the same option with different meanings,
each keeps its own validator, named by what it checks: `checked_rng` (a ``random_seed``
turned into a generator) and `check_noise_rng` (a noise mechanism's ``rng``);
`checked_epsilon` (an ε to spend) and `checked_privacy_parameter` (a mechanism's ε, ρ or
sensitivity). One `checked_secure` serves steps, privatisations and noise mechanisms (these
raise ``TypeError``). Validators that read PyMC or PyTensor objects stay with them.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from pymc_private.errors import DataBoundsError, InvalidPrivacyParameterError

__all__ = [
    "check_noise_rng",
    "checked_cells",
    "checked_delta",
    "checked_epsilon",
    "checked_gaussian_arguments",
    "checked_mechanism_arguments",
    "checked_privacy_parameter",
    "checked_rng",
    "checked_scale",
    "checked_secure",
    "checked_temperature",
    "checked_values",
]

_MAX_EXACT_INTEGER = 2**53

_MAX_CELLS = 65_536


def checked_epsilon(epsilon) -> float:
    """Validate an ε to spend (a finite number > 0) at the boundary."""
    if isinstance(epsilon, bool | np.bool_) or not isinstance(epsilon, int | float | np.number):
        raise InvalidPrivacyParameterError(
            f"epsilon must be a finite number > 0, got {epsilon!r}; e.g. epsilon=1.0."
        )
    value = float(epsilon)
    if not (math.isfinite(value) and value > 0.0):
        raise InvalidPrivacyParameterError(
            f"epsilon must be a finite number > 0, got {epsilon!r}; smaller ε adds more noise, "
            "e.g. epsilon=1.0."
        )
    return value


def checked_delta(delta: float, name: str = "delta") -> float:
    """Validate a δ (a number in [0, 1)); ``name`` is the argument the message names."""
    if (
        isinstance(delta, bool | np.bool_)
        or not isinstance(delta, int | float | np.integer | np.floating)
        or not 0 <= delta < 1
    ):
        raise InvalidPrivacyParameterError(
            f"{name} must be a number in [0, 1), got {delta!r}; use 0 for pure ε-DP or a "
            "small value such as 1e-6."
        )
    return float(delta)


def checked_temperature(temperature, cost: str) -> float:
    """Validate a temperature T ≥ 1 (finite, a real number, not a bool) at the boundary.

    ``cost`` is the sampler's per-draw ε formula, quoted in the error message.
    """
    valid = isinstance(temperature, numbers.Real) and not isinstance(temperature, bool | np.bool_)
    if not valid or not (math.isfinite(float(temperature)) and float(temperature) >= 1.0):
        raise InvalidPrivacyParameterError(
            f"temperature must be a finite number >= 1, got {temperature!r}; T = 1 samples "
            f"the posterior, larger T tempers the likelihood and lowers ε = {cost}."
        )
    return float(temperature)


def checked_secure(secure, error: type[Exception] = InvalidPrivacyParameterError) -> bool:
    """Validate a ``secure`` flag (True or False) at the boundary: a step's, a privatisation's
    or a noise mechanism's (which raise ``TypeError``, as numpy does for a wrong type)."""
    if not isinstance(secure, bool | np.bool_):
        raise error(
            f"secure must be True or False, got {secure!r}: True draws data-dependent choices "
            "with exact samplers from the system's generator, False from the seeded rng."
        )
    return bool(secure)


def checked_privacy_parameter(name: str, value) -> float:
    """Validate a mechanism's ε, ρ or sensitivity ``name`` (a finite real number > 0)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise InvalidPrivacyParameterError(
            f"{name} must be a real number, got {type(value).__name__}; pass a finite float > 0."
        )
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise InvalidPrivacyParameterError(
            f"{name} must be finite and > 0, got {value!r}; pass a finite float > 0."
        )
    return value


def checked_rng(random_seed: Any) -> np.random.Generator:
    """Validate ``random_seed`` into a generator, before anything is read or recorded
    (numpy's error type kept)."""
    try:
        return np.random.default_rng(random_seed)
    except (TypeError, ValueError) as error:
        raise type(error)(
            "random_seed must be None, a non-negative integer (or sequence of them) or a "
            f"numpy.random.Generator, got {random_seed!r}: {error}"
        ) from None


def check_noise_rng(rng) -> None:
    """Validate a noise mechanism's ``rng`` (None, a non-negative int seed or a generator)."""
    accepted = np.random.Generator | np.random.BitGenerator | np.random.SeedSequence
    if rng is None or isinstance(rng, accepted):
        return
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool | np.bool_) and rng >= 0:
        return
    raise TypeError(
        f"rng must be None, a non-negative int seed or a numpy.random.Generator, got "
        f"{type(rng).__name__}; pass np.random.default_rng(seed)."
    )


def checked_cells(cells) -> int:
    """Validate the number of grid cells per entry (an integer in [2, 65536])."""
    valid = isinstance(cells, int | np.integer) and not isinstance(cells, bool | np.bool_)
    if not valid or not 2 <= int(cells) <= _MAX_CELLS:
        raise InvalidPrivacyParameterError(
            f"cells must be an integer in [2, {_MAX_CELLS}], got {cells!r}: the number of grid "
            "cells each parameter entry is drawn on (more cells: finer draws, slower)."
        )
    return int(cells)


def checked_mechanism_arguments(
    epsilon,
    sensitivity,
    secure,
    *,
    integer_sensitivity: bool = False,
    monotone: bool = False,
) -> tuple[float, float, bool]:
    """The public parameters a Laplace or exponential mechanism is built from, validated in
    one order: ε, Δ (an integer when ``integer_sensitivity``), ``secure``, ``monotone``.
    Returns (ε, Δ, secure); the mechanism's generator is checked when it is called."""
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
    return epsilon, sensitivity, secure


def checked_gaussian_arguments(rho, sensitivity, delta, secure):
    """The public parameters a Gaussian mechanism is built from: ρ, Δ₂, δ, ``secure``
    validated in that order; returns (ρ, Δ₂, δ, secure)."""
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


def checked_scale(sensitivity: float, epsilon: float) -> float:
    """Δ/ε (or Δ₂/√(2ρ)), refused unless a finite noise scale > 0 in floating point."""
    scale = sensitivity / epsilon
    if not (math.isfinite(scale) and scale > 0):
        raise InvalidPrivacyParameterError(
            "sensitivity / epsilon must be a finite positive noise scale; choose epsilon and "
            "sensitivity within a few hundred orders of magnitude of each other."
        )
    return scale
