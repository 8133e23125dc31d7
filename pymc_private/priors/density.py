"""Log densities of the supported priors in numpy, for the samplers that run without PyMC.

`pymc_private.noise_aware.sampler` updates the parameters of released sums (Normal means and
precisions, regression weights) and hyperparameters by Metropolis moves in numpy, all chains
at once. Their targets need the prior's log density, read from the graph by
`pymc_private.priors.support.parameter_support` and `prior_parameter_graphs`:

- with constant parameters, the density's kernel (its truncation to the support is a constant
  and drops out of every ratio);
- with parameters that are other free variables (``mu ~ TruncatedNormal(m0, s0)``), the
  normalised density on the truncated support, whose normalising constant depends on them:
  log(Φ(b) − Φ(a)) for a normal, log(P(α, βu) − P(α, βl)) for a gamma (regularised incomplete
  gamma), log(I_u − I_l) for a beta.

`evaluate` computes such parameter graphs from the current values, for the graphs a
hierarchical prior is written with (free variables, constants, broadcasting and elementwise
arithmetic); anything else is left to NUTS.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from pytensor.graph.basic import Constant, Variable
from pytensor.scalar import basic as scalar
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from scipy import special

__all__ = [
    "SCALAR_PRIORS",
    "evaluate",
    "log_density",
    "mvnormal_log_density",
    "prior_spread",
    "support_centre",
]

SCALAR_PRIORS = ("normal", "gamma", "exponential", "beta", "uniform", "halfnormal")
"""The scalar prior families these densities cover."""

_ELEMWISE = {
    scalar.Add: np.add,
    scalar.Sub: np.subtract,
    scalar.Mul: np.multiply,
    scalar.TrueDiv: np.divide,
    scalar.Pow: np.power,
    scalar.Neg: np.negative,
    scalar.Exp: np.exp,
    scalar.Log: np.log,
    scalar.Sqrt: np.sqrt,
    scalar.Reciprocal: np.reciprocal,
}


def evaluate(graph: Variable, values: Mapping[str, np.ndarray], batch: int) -> np.ndarray | None:
    """The value of ``graph`` given the free variables' ``values`` (by name, each with
    ``batch`` leading batch axes), keeping those axes in front; None when the graph uses an
    operation this reader does not know."""
    if isinstance(graph, Constant):
        return np.asarray(graph.data, dtype=np.float64)
    if graph.name in values and graph.owner is not None:
        return values[graph.name]
    node = graph.owner
    if node is None:
        return None
    inputs = [evaluate(item, values, batch) for item in node.inputs]
    if any(item is None for item in inputs):
        return None
    if isinstance(node.op, DimShuffle):
        (value,) = inputs
        lead = value.ndim - node.inputs[0].ndim
        kept = [axis for axis in node.op.new_order if axis != "x"]
        dropped = [lead + axis for axis in range(node.inputs[0].ndim) if axis not in kept]
        value = np.squeeze(value, axis=tuple(dropped))
        order = sorted(kept)
        value = np.transpose(value, (*range(lead), *(lead + order.index(a) for a in kept)))
        shape = list(value.shape[:lead])
        moved = iter(value.shape[lead:])
        shape += [1 if axis == "x" else next(moved) for axis in node.op.new_order]
        return value.reshape(shape)
    if isinstance(node.op, Elemwise) and type(node.op.scalar_op) in _ELEMWISE:
        return _ELEMWISE[type(node.op.scalar_op)](*inputs)
    return None


def log_density(
    family: str,
    params: Mapping[str, np.ndarray],
    lower: np.ndarray,
    upper: np.ndarray,
    x: np.ndarray,
    *,
    normalised: bool,
) -> np.ndarray:
    """log p(x) of a scalar prior of ``family`` (`SCALAR_PRIORS`) with ``params`` in
    `pymc_private.priors.support.ParameterSupport`'s parameterisation, truncated to [lower, upper]:
    its kernel, or with ``normalised`` the whole density including the truncation's
    normalising constant (needed when ``params`` vary). −inf outside [lower, upper]."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if family == "normal":
            mu, sigma = params["mu"], params["sigma"]
            value = -0.5 * ((x - mu) / sigma) ** 2
            if normalised:
                value = (
                    value - np.log(sigma) - _normal_mass((lower - mu) / sigma, (upper - mu) / sigma)
                )
        elif family == "halfnormal":
            sigma = params["sigma"]
            value = -0.5 * (x / sigma) ** 2
            if normalised:
                value = value - np.log(sigma) - _normal_mass(lower / sigma, upper / sigma)
        elif family in ("gamma", "exponential"):
            alpha = params["alpha"] if family == "gamma" else 1.0
            rate = params["beta"] if family == "gamma" else params["lam"]
            value = (alpha - 1.0) * np.log(x) - rate * x
            if normalised:
                mass = special.gammainc(alpha, rate * upper) - special.gammainc(alpha, rate * lower)
                value = value + alpha * np.log(rate) - special.gammaln(alpha) - np.log(mass)
        elif family == "beta":
            alpha, beta = params["alpha"], params["beta"]
            value = (alpha - 1.0) * np.log(x) + (beta - 1.0) * np.log1p(-x)
            if normalised:
                mass = special.betainc(alpha, beta, upper) - special.betainc(alpha, beta, lower)
                value = value - special.betaln(alpha, beta) - np.log(mass)
        elif family == "uniform":
            value = np.zeros(np.shape(x))
        else:
            raise ValueError(f"no numpy density for the {family} prior")
    return np.where((x >= lower) & (x <= upper), value, -np.inf)


def _normal_mass(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """log(Φ(b) − Φ(a)) for a < b, accurate in either tail."""
    upper_tail = a > 0  # both in the upper tail: use the survival function
    low = np.where(upper_tail, special.log_ndtr(-b), special.log_ndtr(a))
    high = np.where(upper_tail, special.log_ndtr(-a), special.log_ndtr(b))
    return high + np.log1p(-np.exp(low - high))


def mvnormal_log_density(mu: np.ndarray, precision: np.ndarray, radius, w: np.ndarray):
    """The kernel of MvNormal(μ, Σ) (``precision`` Σ⁻¹) restricted to ‖w‖ ≤ ``radius``
    (None: unrestricted), on the last axis of ``w``."""
    residual = w - mu
    value = -0.5 * np.einsum("...i,ij,...j->...", residual, precision, residual)
    if radius is None:
        return value
    return np.where(np.sqrt((w * w).sum(axis=-1)) <= radius, value, -np.inf)


def support_centre(support) -> np.ndarray:
    """A typical point of a prior inside its support: a scalar prior's mean (of its family,
    before truncation) clipped inside, the middle of the support when the prior's parameters
    are not constants; the simplex's centre; a weight vector's mean, pulled half way to the
    ball's edge when it lies further out."""
    if support.family == "dirichlet":
        width = support.lower.shape[-1]
        return np.full(support.lower.shape, 1.0 / width)
    if support.family == "mvnormal":
        mu = np.asarray(support.params["mu"], dtype=np.float64)
        norm = np.sqrt((mu * mu).sum(axis=-1, keepdims=True))
        limit = 0.5 * (support.radius if support.radius is not None else np.inf)
        return np.where(norm > limit, mu * limit / np.maximum(norm, 1e-300), mu)
    lower, upper = support.lower, support.upper
    middle = np.where(
        np.isfinite(lower) & np.isfinite(upper),
        0.5 * (lower + upper),
        np.where(np.isfinite(lower), lower + 1.0, np.where(np.isfinite(upper), upper - 1.0, 0.0)),
    )
    mean = _prior_mean(support.family, support.params)
    if mean is None:
        return np.asarray(middle, dtype=np.float64)
    inside = np.clip(mean, lower, upper)
    # A mean on a bound (a truncation far from the prior's mass): a tenth of the way in.
    edge = (inside <= lower) | (inside >= upper)
    return np.asarray(np.where(edge, inside + 0.1 * (middle - inside), inside), dtype=np.float64)


def _prior_mean(family: str, params) -> np.ndarray | None:
    if any(value is None for value in params.values()):
        return None
    if family == "normal":
        return params["mu"]
    if family == "gamma":
        return params["alpha"] / params["beta"]
    if family == "beta":
        return params["alpha"] / (params["alpha"] + params["beta"])
    if family == "exponential":
        return 1.0 / params["lam"]
    if family == "halfnormal":
        return params["sigma"] * np.sqrt(2.0 / np.pi)
    return None


def prior_spread(support) -> np.ndarray:
    """A scalar prior's standard deviation (of its family, before truncation) where its
    parameters are constants, at most half its support's width; a quarter of that width (or
    1 on an unbounded support) otherwise."""
    width = support.upper - support.lower
    fallback = np.where(np.isfinite(width), width / 4.0, 1.0)
    params = support.params
    if any(value is None for value in params.values()):
        return fallback
    family = support.family
    if family in ("normal", "halfnormal"):
        spread = params["sigma"] * (1.0 if family == "normal" else np.sqrt(1.0 - 2.0 / np.pi))
    elif family == "gamma":
        spread = np.sqrt(params["alpha"]) / params["beta"]
    elif family == "exponential":
        spread = 1.0 / params["lam"]
    elif family == "beta":
        a, b = params["alpha"], params["beta"]
        spread = np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1.0)))
    elif family == "uniform":
        spread = width / np.sqrt(12.0)
    else:
        return fallback
    return np.minimum(spread, np.where(np.isfinite(width), width / 2.0, np.inf))
