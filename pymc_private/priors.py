"""Truncated priors whose support the privacy analysis can read.

Why truncation
--------------
Posterior sampling is differentially private when the log-likelihood of one record is
Lipschitz over the prior's support: Dimitrakakis et al. (JMLR 2017), Assumption 1, asks for

    L = sup_{θ ∈ Θ} sup_{x, x'} |log p(x | θ) − log p(x' | θ)| < ∞,

and then one posterior draw is 2L-DP (Theorem 8). With an untruncated prior L is infinite
for every family of the L table (:ref:`costs-lipschitz-table`): a Bernoulli log-likelihood ratio
ln(θ/(1−θ)) is unbounded as θ → 0 or 1, a Poisson one as λ → 0, a Normal one as |μ| → ∞.
Restricting the prior's support Θ (θ ∈ [a, 1−a], every p_k ≥ a, λ ∈ [c1, c2], ‖w‖₂ ≤ R) is
what makes L finite, and that table gives L as a function of those bounds only, so the cost
of a release is known before any data is touched.

The priors
----------
`TruncatedBeta`, `TruncatedGamma`, `TruncatedExponential` and `TruncatedNormal` are
`pm.Truncated` (respectively `pm.TruncatedNormal`) on a finite interval inside the base
support; `TruncatedDirichlet` (every p_k ≥ min_prob) and `TruncatedMvNormal` (‖w‖₂ ≤ radius)
are distributions of their own. Each is used like any PyMC distribution (``name``, ``dims``,
``shape``, ``.dist``), has a normalised logp, draws inside its support, an initial point
strictly inside it and a transform so that NUTS samples it.

`parameter_support` reads the support of any free random variable from its graph (the op
and its constant inputs), never from data and never from Python-side tags that cloning a
model would lose.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from numpy.typing import ArrayLike
from pymc.distributions.continuous import TruncatedNormalRV
from pymc.distributions.dist_math import logpow
from pymc.distributions.distribution import Continuous
from pymc.distributions.distribution import support_point as pymc_support_point
from pymc.distributions.shape_utils import rv_size_is_none, to_tuple
from pymc.distributions.transforms import _default_transform, simplex
from pymc.distributions.truncated import Truncated, TruncatedRV
from pymc.exceptions import TruncationError
from pymc.logprob.transforms import Transform
from pymc.pytensorf import constant_fold
from pytensor import graph_replace
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Variable
from pytensor.graph.traversal import graph_inputs
from pytensor.tensor.random import basic as ptr
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.variable import TensorVariable
from scipy import integrate, signal, special, stats

from pymc_private import conjugate
from pymc_private.errors import (
    InvalidPrivacyParameterError,
    UnboundedSensitivityError,
    UnsupportedModelError,
)

TensorLike = ArrayLike | Variable
"""A number, array or PyTensor expression, as PyMC distributions accept."""

__all__ = [
    "ParameterSupport",
    "TruncatedBeta",
    "TruncatedDirichlet",
    "TruncatedExponential",
    "TruncatedGamma",
    "TruncatedMvNormal",
    "TruncatedNormal",
    "parameter_support",
]

# Rejection sampling gives up below this acceptance probability (10⁵ proposals per draw).
_MIN_ACCEPTANCE = 1e-5
# Proposals drawn per pending draw and round of rejection sampling, and the memory cap.


# ---------------------------------------------------------------------------------------
# Argument validation (at the boundary, before any graph is built)
# ---------------------------------------------------------------------------------------


def _constant(value: Any, argument: str, prior: str) -> np.ndarray:
    """Return ``value`` as a float array, refusing symbolic values that are not constant."""
    if isinstance(value, Variable):
        [folded] = constant_fold([value], raise_not_constant=False)
        if isinstance(folded, Variable):
            raise InvalidPrivacyParameterError(
                f"{prior}: `{argument}` must be a fixed number or array, not a random or "
                f"data-dependent expression: the support of a private prior is public "
                f"knowledge fixed before the data is seen. Pass a numpy value."
            )
        value = folded
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as error:
        raise InvalidPrivacyParameterError(
            f"{prior}: `{argument}` must be a number or an array of numbers."
        ) from error
    if np.isnan(array).any():
        raise InvalidPrivacyParameterError(f"{prior}: `{argument}` is NaN; pass a number.")
    return array


def _parameter(value: Any, argument: str, prior: str, *, positive: bool) -> Any:
    """Check a constant parameter is finite (and > 0 if ``positive``).

    A random parameter (a hyperprior) passes unchecked: it does not change the support.
    """
    if isinstance(value, Variable):
        [folded] = constant_fold([value], raise_not_constant=False)
        if isinstance(folded, Variable):
            return value
        value = folded
    array = _constant(value, argument, prior)
    if not np.isfinite(array).all() or (positive and not (array > 0).all()):
        requirement = "finite and > 0" if positive else "finite"
        raise InvalidPrivacyParameterError(
            f"{prior}: `{argument}` must be {requirement} everywhere; pass such a value."
        )
    return array


def _interval(
    lower: Any, upper: Any, base_support: tuple[float, float], prior: str
) -> tuple[np.ndarray, np.ndarray]:
    """Validate a finite truncation interval inside the base distribution's support."""
    lower_ = _constant(lower, "lower", prior)
    upper_ = _constant(upper, "upper", prior)
    for argument, bound in (("lower", lower_), ("upper", upper_)):
        if not np.isfinite(bound).all():
            raise UnboundedSensitivityError(
                f"{prior}: `{argument}` must be finite: an unbounded prior support makes the "
                f"record Lipschitz constant L infinite (JMLR 2017, Assumption 1). Pass a "
                f"finite `{argument}` that holds the values you believe plausible."
            )
    try:
        np.broadcast_shapes(lower_.shape, upper_.shape)
    except ValueError as error:
        raise InvalidPrivacyParameterError(
            f"{prior}: `lower` {lower_.shape} and `upper` {upper_.shape} do not broadcast; "
            f"pass arrays of compatible shapes."
        ) from error
    if not (lower_ < upper_).all():
        raise InvalidPrivacyParameterError(
            f"{prior}: need `lower` < `upper` everywhere; swap or widen the bounds."
        )
    base_lower, base_upper = base_support
    if (lower_ < base_lower).any() or (upper_ > base_upper).any():
        raise InvalidPrivacyParameterError(
            f"{prior}: the interval [`lower`, `upper`] must lie inside the base support "
            f"[{base_lower:g}, {base_upper:g}]; move the bounds inside it."
        )
    return lower_, upper_


# ---------------------------------------------------------------------------------------
# Univariate truncated priors: pm.Truncated with an initial point strictly inside
# ---------------------------------------------------------------------------------------


class _InteriorTruncatedRV(TruncatedRV):
    """`TruncatedRV` whose initial point lies strictly inside [lower, upper].

    PyMC's own support point for `TruncatedRV` keeps the base mean even on a bound (an
    Exponential(1) truncated to [1, 2] starts at 1) and falls back to (upper − lower)/2,
    which can lie outside the interval. Logp, transform and draws are PyMC's.
    """


def _interior_op(rv: TensorVariable) -> TensorVariable:
    """Rebuild a `TruncatedRV` node with the `_InteriorTruncatedRV` op."""
    op = rv.owner.op
    interior_op = _InteriorTruncatedRV(
        inputs=op.inner_inputs,
        outputs=op.inner_outputs,
        base_rv_op=op.base_rv_op,
        max_n_steps=op.max_n_steps,
        ndim_supp=0,
    )
    return interior_op(*rv.owner.inputs)


class _InteriorTruncated(Truncated):
    """`pm.Truncated` producing `_InteriorTruncatedRV` nodes."""

    rv_type = _InteriorTruncatedRV

    @classmethod
    def rv_op(cls, dist, lower, upper, max_n_steps, *, size=None):
        return _interior_op(Truncated.rv_op(dist, lower, upper, max_n_steps, size=size))

    def change_dist_size(rv, new_size, expand):
        *base_inputs, lower, upper = rv.owner.inputs
        base = rv.owner.op.base_rv_op.make_node(*base_inputs).default_output()
        if expand:
            new_size = to_tuple(new_size) + tuple(rv.shape)
        return _InteriorTruncated.rv_op(base, lower, upper, rv.owner.op.max_n_steps, size=new_size)

    def support_point(rv, *inputs):
        """The base support point clipped to [lower + w/20, upper − w/20], w = upper − lower."""
        *base_inputs, lower, upper = inputs
        base = rv.owner.op.base_rv_op.make_node(*base_inputs).default_output()
        margin = (upper - lower) / 20
        base_point = pymc_support_point(base)
        return pt.broadcast_to(pt.clip(base_point, lower + margin, upper - margin), rv.shape)


def _truncate(
    name: str | None,
    prior: str,
    base: type[pm.Distribution],
    base_support: tuple[float, float],
    parameters: dict[str, Any],
    lower: Any,
    upper: Any,
    kwargs: dict[str, Any],
) -> TensorVariable:
    """``base`` with positive ``parameters`` truncated to [lower, upper] ⊆ ``base_support``,
    validated in argument order (named, or unnamed when ``name`` is None)."""
    checked = {
        argument: _parameter(value, argument, prior, positive=True)
        for argument, value in parameters.items()
    }
    lower, upper = _interval(lower, upper, base_support, prior)
    dist = base.dist(**checked)
    if name is None:
        return _InteriorTruncated.dist(dist, lower=lower, upper=upper, **kwargs)
    return _InteriorTruncated(name, dist, lower=lower, upper=upper, **kwargs)


class _TruncatedShapeRate:
    """`TruncatedBeta` and `TruncatedGamma`: a base with two positive parameters ``alpha``
    and ``beta``, truncated to [lower, upper] inside ``_base_support``."""

    _base: type[pm.Distribution]
    _base_support: tuple[float, float]

    def __new__(
        cls,
        name: str,
        alpha: TensorLike,
        beta: TensorLike,
        *,
        lower: ArrayLike,
        upper: ArrayLike,
        **kwargs,
    ) -> TensorVariable:
        return cls._build(name, alpha, beta, lower, upper, kwargs)

    @classmethod
    def dist(
        cls, alpha: TensorLike, beta: TensorLike, *, lower: ArrayLike, upper: ArrayLike, **kwargs
    ) -> TensorVariable:
        """The unnamed distribution, as `pm.Beta.dist` (`pm.Gamma.dist`)."""
        return cls._build(None, alpha, beta, lower, upper, kwargs)

    @classmethod
    def _build(cls, name, alpha, beta, lower, upper, kwargs) -> TensorVariable:
        parameters = {"alpha": alpha, "beta": beta}
        return _truncate(
            name, cls.__name__, cls._base, cls._base_support, parameters, lower, upper, kwargs
        )


class TruncatedBeta(_TruncatedShapeRate):
    r"""Beta(α, β) truncated to [lower, upper] ⊆ [0, 1].

    .. math:: p(θ) = \frac{θ^{α−1}(1−θ)^{β−1}}{B(α, β)\,[I_{upper}(α, β) − I_{lower}(α, β)]},
              \quad lower ≤ θ ≤ upper

    With Bernoulli data and [lower, upper] = [a, 1 − a], the record Lipschitz constant is
    L = ln((1 − a)/a) (:ref:`costs-lipschitz-table`; JMLR 2017, Example 1).

    Parameters
    ----------
    name : str
        Name of the random variable in the model.
    alpha, beta : tensor_like of float
        Shape parameters (> 0), as in `pm.Beta`.
    lower, upper : array_like of float
        Finite truncation bounds with 0 ≤ lower < upper ≤ 1 (elementwise, broadcastable).
    **kwargs
        Passed to PyMC (``dims``, ``shape``, ``initval``, ...).

    Returns
    -------
    TensorVariable
        The random variable (a `pm.Truncated` node, readable by `parameter_support`).
    """

    _base = pm.Beta
    _base_support = (0.0, 1.0)


class TruncatedGamma(_TruncatedShapeRate):
    r"""Gamma(α, rate β) truncated to [lower, upper] ⊆ [0, ∞), both bounds finite.

    .. math:: p(λ) ∝ λ^{α−1} e^{−βλ}, \quad lower ≤ λ ≤ upper

    With Poisson data and λ ∈ [c1, c2], L follows by enumeration at λ ∈ {c1, c2}
    (:ref:`costs-lipschitz-table`).

    Parameters
    ----------
    name : str
        Name of the random variable in the model.
    alpha : tensor_like of float
        Shape (> 0).
    beta : tensor_like of float
        Rate (> 0), as ``beta`` of `pm.Gamma`.
    lower, upper : array_like of float
        Finite truncation bounds, 0 ≤ lower < upper < ∞.
    **kwargs
        Passed to PyMC (``dims``, ``shape``, ...).

    Returns
    -------
    TensorVariable
        The random variable (a `pm.Truncated` node).
    """

    _base = pm.Gamma
    _base_support = (0.0, np.inf)


class TruncatedExponential:
    r"""Exponential(rate λ) truncated to [lower, upper] ⊆ [0, ∞), both bounds finite.

    .. math:: p(θ) = \frac{λ e^{−λθ}}{e^{−λ\,lower} − e^{−λ\,upper}}, \quad lower ≤ θ ≤ upper

    With Exponential data on [0, B] and a rate θ ∈ [c1, c2], L = c2·B (JMLR 2017, Lemma 19).

    Parameters
    ----------
    name : str
        Name of the random variable in the model.
    lam : tensor_like of float
        Rate (> 0), as in `pm.Exponential`.
    lower, upper : array_like of float
        Finite truncation bounds, 0 ≤ lower < upper < ∞.
    **kwargs
        Passed to PyMC (``dims``, ``shape``, ...).

    Returns
    -------
    TensorVariable
        The random variable (a `pm.Truncated` node).
    """

    def __new__(
        cls, name: str, lam: TensorLike, *, lower: ArrayLike, upper: ArrayLike, **kwargs
    ) -> TensorVariable:
        return cls._build(name, lam, lower, upper, kwargs)

    @classmethod
    def dist(
        cls, lam: TensorLike, *, lower: ArrayLike, upper: ArrayLike, **kwargs
    ) -> TensorVariable:
        """The unnamed distribution, as `pm.Exponential.dist`."""
        return cls._build(None, lam, lower, upper, kwargs)

    @staticmethod
    def _build(name, lam, lower, upper, kwargs) -> TensorVariable:
        return _truncate(
            name,
            "TruncatedExponential",
            pm.Exponential,
            (0.0, np.inf),
            {"lam": lam},
            lower,
            upper,
            kwargs,
        )


class TruncatedNormal:
    r"""Normal(μ, σ) truncated to a finite interval [lower, upper].

    .. math:: p(θ) = \frac{φ((θ − μ)/σ)/σ}{Φ((upper − μ)/σ) − Φ((lower − μ)/σ)},
              \quad lower ≤ θ ≤ upper

    This is `pm.TruncatedNormal` with both bounds required finite (its initial point is the
    midpoint). With Normal data of known σ_x on [lo, hi] and a mean in [lower, upper], L is
    the range of (x − μ)²/(2σ_x²) at μ ∈ {lower, upper} (:ref:`costs-lipschitz-table`).

    Parameters
    ----------
    name : str
        Name of the random variable in the model.
    mu : tensor_like of float
        Location of the untruncated Normal.
    sigma : tensor_like of float
        Scale (> 0) of the untruncated Normal.
    lower, upper : array_like of float
        Finite truncation bounds, lower < upper.
    **kwargs
        Passed to PyMC (``dims``, ``shape``, ...).

    Returns
    -------
    TensorVariable
        The random variable (a `pm.TruncatedNormal` node).
    """

    def __new__(
        cls,
        name: str,
        mu: TensorLike,
        sigma: TensorLike,
        *,
        lower: ArrayLike,
        upper: ArrayLike,
        **kwargs,
    ) -> TensorVariable:
        mu, sigma, lower, upper = cls._checked(mu, sigma, lower, upper)
        return pm.TruncatedNormal(name, mu=mu, sigma=sigma, lower=lower, upper=upper, **kwargs)

    @classmethod
    def dist(
        cls, mu: TensorLike, sigma: TensorLike, *, lower: ArrayLike, upper: ArrayLike, **kwargs
    ) -> TensorVariable:
        """The unnamed distribution, as `pm.TruncatedNormal.dist`."""
        mu, sigma, lower, upper = cls._checked(mu, sigma, lower, upper)
        return pm.TruncatedNormal.dist(mu=mu, sigma=sigma, lower=lower, upper=upper, **kwargs)

    @staticmethod
    def _checked(mu, sigma, lower, upper) -> tuple[Any, Any, np.ndarray, np.ndarray]:
        mu = _parameter(mu, "mu", "TruncatedNormal", positive=False)
        sigma = _parameter(sigma, "sigma", "TruncatedNormal", positive=True)
        lower, upper = _interval(lower, upper, (-np.inf, np.inf), "TruncatedNormal")
        return mu, sigma, lower, upper


# ---------------------------------------------------------------------------------------
# Truncated Dirichlet: every p_k ≥ min_prob
# ---------------------------------------------------------------------------------------


def _dirichlet_log_mass(a: np.ndarray, min_prob: float) -> float:
    """log P_{Dirichlet(a)}(p_k ≥ min_prob for every k), for one concentration vector a.

    Exact for min_prob = 0, for K = 2 (regularised incomplete beta) and for a = 1
    ((1 − K·min_prob)^{K−1}). Otherwise: if the Bonferroni bound
    s = Σ_k P(p_k < min_prob) (marginals Beta(a_k, A − a_k)) is below 1e-12, log(1 − s)
    (error below 1e-12); else numerical convolution (`_dirichlet_log_mass_by_convolution`).
    """
    n_categories = a.shape[-1]
    if min_prob == 0.0:
        return 0.0
    if n_categories == 2:
        below = special.betainc(a[0], a[1], min_prob) + special.betainc(a[1], a[0], min_prob)
        if below < 0.5:
            return math.log1p(-below)
        mass = special.betainc(a[0], a[1], 1.0 - min_prob) - special.betainc(a[0], a[1], min_prob)
        return math.log(mass)
    if np.all(a == 1.0):
        return (n_categories - 1) * math.log1p(-n_categories * min_prob)
    below = float(special.betainc(a, a.sum() - a, min_prob).sum())
    if below < 1e-12:
        return math.log1p(-below)
    return _dirichlet_log_mass_by_convolution(a, min_prob)


def _dirichlet_log_mass_by_convolution(
    a: np.ndarray, min_prob: float, rtol: float = 1e-9, max_log2_grid: int = 20
) -> float:
    r"""log P_{Dirichlet(a)}(every p_k ≥ m) by iterated convolution on a grid.

    With p = m + c·q, c = 1 − K·m and q on the simplex,

    .. math:: P = \frac{c^{K−1}}{B(a)}\, e^{−λ} (g_1 * \dots * g_K)(1),
              \quad g_k(t) = (m + c t)^{a_k − 1} e^{λ t},

    the convolutions taken on [0, 1] (the simplex integral of a product is the convolution
    of its factors evaluated at 1, and the tilt e^{λ t} multiplies it by e^{λ} since
    Σ t_k = 1). λ = −Σ_k max(a_k − 1, 0)/(1 + K·m/c) puts every factor's peak near the
    Dirichlet mode and each g_k is scaled by its maximum, so that large concentrations neither
    overflow nor drown in rounding. Each g_k is smooth and bounded on [0, 1] because m > 0;
    every convolution is the trapezoid rule on a grid of N intervals (by FFT), and Richardson
    extrapolation in h² = 1/N² is refined by doubling N until two estimates agree to
    ``rtol`` (or N = 2^max_log2_grid).
    """
    n_categories = a.shape[-1]
    width = 1.0 - n_categories * min_prob
    tilt = -np.maximum(a - 1.0, 0.0).sum() / (1.0 + n_categories * min_prob / width)

    def log_factor(a_k: float, t: np.ndarray) -> np.ndarray:
        return (a_k - 1.0) * np.log(min_prob + width * t) + tilt * t

    # Exact maximum of each log-concave (a_k ≥ 1) or decreasing (a_k < 1) log-factor.
    stationary = np.clip(((a - 1.0) / -tilt if tilt < 0 else 0.0) - min_prob / width, 0.0, 1.0)
    log_peak = np.array(
        [
            max(log_factor(a_k, np.array([0.0, 1.0, t_k])))
            for a_k, t_k in zip(a, np.broadcast_to(stationary, a.shape), strict=True)
        ]
    )

    def trapezoid_convolution(n_intervals: int) -> float:
        step = 1.0 / n_intervals
        grid = np.linspace(0.0, 1.0, n_intervals + 1)
        running = np.exp(log_factor(a[0], grid) - log_peak[0])
        for a_k, peak_k in zip(a[1:], log_peak[1:], strict=True):
            factor = np.exp(log_factor(a_k, grid) - peak_k)
            full = signal.fftconvolve(running, factor)[: n_intervals + 1]
            running = step * (full - 0.5 * running[0] * factor - 0.5 * running * factor[0])
        return float(running[-1])

    log2_grid = 10
    coarse = trapezoid_convolution(2**log2_grid)
    previous = None
    while True:
        log2_grid += 1
        fine = trapezoid_convolution(2**log2_grid)
        extrapolated = (4.0 * fine - coarse) / 3.0
        converged = previous is not None and abs(extrapolated - previous) <= rtol * abs(
            extrapolated
        )
        if converged or log2_grid >= max_log2_grid:
            break
        coarse, previous = fine, extrapolated
    return float(
        (n_categories - 1) * math.log(width)
        + log_peak.sum()
        - tilt
        + math.log(extrapolated)
        - conjugate.log_multivariate_beta(a)
    )


def _dirichlet_log_masses(a: np.ndarray, min_prob: float) -> np.ndarray:
    """`_dirichlet_log_mass` for every row of a batch of concentration vectors."""
    rows = a.reshape(-1, a.shape[-1])
    unique_rows, inverse = np.unique(rows, axis=0, return_inverse=True)
    masses = np.array([_dirichlet_log_mass(row, min_prob) for row in unique_rows])
    return masses[inverse.reshape(-1)].reshape(a.shape[:-1])


class TruncatedDirichletRV(RandomVariable):
    """Dirichlet(a) restricted to {p on the simplex: every p_k ≥ min_prob}.

    Inputs are (a, min_prob, log_mass), log_mass = log P_{Dirichlet(a)}(support), computed
    once by `TruncatedDirichlet.dist` and carried in the graph as a constant.
    """

    name = "truncated_dirichlet"
    signature = "(k),(),()->(k)"
    dtype = "floatX"
    _print_name = ("TruncatedDirichlet", "\\operatorname{TruncatedDirichlet}")

    @classmethod
    def rng_fn(cls, rng, a, min_prob, log_mass, size):
        """Exact draws by rejection, from the better of two proposals per batch element.

        (A) p ~ Dirichlet(a), accepted when every p_k ≥ m: acceptance P = exp(log_mass).
        (B) p = m + c·q with q ~ Dirichlet(b), b_k = min(a_k, 1), accepted with probability
            Π_k ((m + c q_k)/(m + c))^{a_k−1} q_k^{1−b_k}, which is ≤ 1; its acceptance is
            P·B(a) / (c^{K−1} B(b) (m + c)^{Σ(a_k−1)}), exactly 1 when a = 1.
        Raises `TruncationError` when the better acceptance is below `_MIN_ACCEPTANCE`;
        the draws come from `pymc_private.conjugate.truncated_dirichlet`.
        """
        n_categories = a.shape[-1]
        batch_shape = (
            tuple(size)
            if size is not None
            else np.broadcast_shapes(a.shape[:-1], np.shape(min_prob), np.shape(log_mass))
        )
        a = np.broadcast_to(a, (*batch_shape, n_categories)).reshape(-1, n_categories)
        m = np.broadcast_to(min_prob, batch_shape).reshape(-1)
        log_mass = np.broadcast_to(log_mass, batch_shape).reshape(-1)
        width = 1.0 - n_categories * m
        b = np.minimum(a, 1.0)
        log_acceptance_a = log_mass
        log_acceptance_b = (
            log_mass
            + conjugate.log_multivariate_beta(a)
            - (n_categories - 1) * np.log(width)
            - conjugate.log_multivariate_beta(b)
            - (a - 1.0).sum(-1) * np.log(m + width)
        )
        best = np.maximum(log_acceptance_a, log_acceptance_b)
        if (best < math.log(_MIN_ACCEPTANCE)).any():
            raise TruncationError(
                f"TruncatedDirichlet: rejection sampling would accept fewer than "
                f"{_MIN_ACCEPTANCE:g} of proposals (acceptance {math.exp(best.min()):.2g}): "
                f"almost no Dirichlet(a) mass has every p_k ≥ min_prob. Lower `min_prob` or "
                f"use concentrations `a` closer to the truncated region."
            )
        # The sampler of the conjugate posteriors draws (same two proposals); `min_prob` is
        # one public number (`TruncatedDirichlet.dist`), broadcast above.
        draws = conjugate.truncated_dirichlet(rng, a, float(m[0]), name="TruncatedDirichlet")
        return draws.reshape((*batch_shape, n_categories))


truncated_dirichlet = TruncatedDirichletRV()


class _TruncatedSimplexTransform(Transform):
    """R^{K−1} → {p on the simplex: every p_k ≥ m}: p = m + c·softmax([z, −Σz]), c = 1 − K·m.

    PyMC's simplex transform scaled into the truncated simplex: a bijection onto its
    interior, with log|J| = log|J_simplex(z)| + (K − 1)·log c (the affine map scales each of
    the K − 1 free coordinates by c). The RV's inputs are (rng, size, a, min_prob, log_mass).
    """

    name = "truncated_simplex"

    def forward(self, value, *inputs):
        min_prob = pt.as_tensor(inputs[3])[..., None]
        width = 1.0 - value.shape[-1] * min_prob
        return simplex.forward((value - min_prob) / width)

    def backward(self, value, *inputs):
        min_prob = pt.as_tensor(inputs[3])[..., None]
        width = 1.0 - (value.shape[-1] + 1) * min_prob
        return min_prob + width * simplex.backward(value)

    def log_jac_det(self, value, *inputs):
        min_prob = pt.as_tensor(inputs[3])
        n_categories = value.shape[-1] + 1
        width = 1.0 - n_categories * min_prob
        return simplex.log_jac_det(value) + (n_categories - 1) * pt.log(width)


class TruncatedDirichlet(Continuous):
    r"""Dirichlet(a) restricted to every p_k ≥ min_prob (last axis the simplex).

    .. math:: p(\mathbf p) = \frac{\prod_k p_k^{a_k − 1}}{B(a)\,P_a},
              \quad \min_k p_k ≥ m, \quad P_a = P_{\mathrm{Dir}(a)}(\min_k p_k ≥ m)

    A true truncation, so it stays conjugate to Categorical/Multinomial counts: given counts
    n, the posterior is TruncatedDirichlet(a + n, min_prob). With Categorical data,
    L ≤ ln((1 − (K−1)m)/m) (:ref:`costs-lipschitz-table`); discrete Bayesian networks whose CPT
    entries are all ≥ m have L ≤ Σ_nodes ln(1/m) (JMLR 2017, Lemma 24).

    The normalising constant P_a is computed once, here, and carried in the graph: exactly
    for K = 2 (regularised incomplete beta), for a = 1 ((1 − K·m)^{K−1}) and for m = 0;
    otherwise by numerical convolution to a relative accuracy of about 1e-9 (see
    `_dirichlet_log_mass_by_convolution`). It is a constant: it does not affect sampling.
    Draws are exact (rejection, see `TruncatedDirichletRV.rng_fn`); NUTS samples through the
    transform p = m + (1 − K·m)·softmax([z, −Σz]); the initial point is m + (1 − K·m)·a/Σa.

    Parameters
    ----------
    name : str
        Name of the random variable in the model.
    a : array_like of float
        Concentrations (> 0), last axis of length K ≥ 2; leading axes are batch axes. Must be
        constant (the normalising constant is computed from it).
    min_prob : float
        The minimum probability m, with 0 ≤ m and K·m < 1.
    **kwargs
        Passed to PyMC (``dims``, ``shape``, ``size``, ...); batch shapes such as
        ``(classes, features, levels)`` work, the last axis being the simplex.
    """

    rv_op = truncated_dirichlet

    @classmethod
    def dist(cls, a: ArrayLike, *, min_prob: float, **kwargs) -> TensorVariable:
        a = _constant(a, "a", "TruncatedDirichlet")
        if a.ndim == 0 or a.shape[-1] < 2:
            raise InvalidPrivacyParameterError(
                "TruncatedDirichlet: `a` needs a last (simplex) axis of length K ≥ 2; pass a "
                "vector of K concentrations (use `shape` for batch axes)."
            )
        if not (np.isfinite(a).all() and (a > 0).all()):
            raise InvalidPrivacyParameterError(
                "TruncatedDirichlet: every concentration in `a` must be finite and > 0."
            )
        min_prob = _constant(min_prob, "min_prob", "TruncatedDirichlet")
        if min_prob.ndim != 0:
            raise InvalidPrivacyParameterError(
                "TruncatedDirichlet: `min_prob` must be a single number."
            )
        min_prob = float(min_prob)
        n_categories = a.shape[-1]
        if not 0.0 <= min_prob < 1.0 / n_categories:
            raise InvalidPrivacyParameterError(
                f"TruncatedDirichlet: need 0 ≤ `min_prob` < 1/K = {1.0 / n_categories:.6g} "
                f"with K = {n_categories} categories (K·min_prob = 1 leaves a single point); "
                f"lower `min_prob`."
            )
        log_mass = _dirichlet_log_masses(a, min_prob)
        return super().dist([a, min_prob, log_mass], **kwargs)

    def support_point(rv, size, a, min_prob, log_mass):
        min_prob = pt.as_tensor(min_prob)[..., None]
        width = 1.0 - a.shape[-1] * min_prob
        point = min_prob + width * a / pt.sum(a, axis=-1, keepdims=True)
        if not rv_size_is_none(size):
            point = pt.full(pt.concatenate([size, [a.shape[-1]]]), point)
        return point

    def logp(value, a, min_prob, log_mass):
        log_density = pt.sum(logpow(value, a - 1.0), axis=-1) - (
            pt.sum(pt.gammaln(a), axis=-1) - pt.gammaln(pt.sum(a, axis=-1)) + log_mass
        )
        outside = pt.or_(
            pt.any(pt.lt(value, pt.as_tensor(min_prob)[..., None]), axis=-1),
            pt.any(pt.gt(value, 1.0), axis=-1),
        )
        return pt.switch(outside, -np.inf, log_density)


@_default_transform.register(TruncatedDirichletRV)
def _truncated_dirichlet_default_transform(op, rv):
    return _TruncatedSimplexTransform()


# ---------------------------------------------------------------------------------------
# Truncated multivariate normal: ‖w‖₂ ≤ radius
# ---------------------------------------------------------------------------------------


def _ball_log_mass(mu: np.ndarray, cov: np.ndarray, radius: float) -> float:
    """log P(‖w‖₂ ≤ radius) for w ~ N(mu, cov), one vector and one matrix.

    ‖w‖² = Σ_j λ_j (z_j + b_j)², λ the eigenvalues of cov and b = Λ^{−1/2} Uᵀ mu.
    Isotropic cov = s²·I: exact (chi-square CDF for mu = 0, noncentral chi-square
    otherwise). General: Ruben's (1962) series of central chi-square CDFs with positive
    weights, truncated once the omitted weight bounds the error below 1e-12 relative;
    when the series is impractical (noncentrality Σ b_j² in the hundreds or more), Imhof's
    (1961) inversion integral by adaptive quadrature (absolute error about 1e-10).
    """
    eigenvalues, eigenvectors = np.linalg.eigh(cov)
    noncentrality = (eigenvectors.T @ mu) ** 2 / eigenvalues
    threshold = radius**2
    dimension = mu.shape[-1]
    if np.allclose(eigenvalues, eigenvalues[0], rtol=1e-12, atol=0.0):
        scaled = threshold / eigenvalues[0]
        total_noncentrality = float(noncentrality.sum())
        if total_noncentrality == 0.0:
            return float(stats.chi2.logcdf(scaled, dimension))
        return float(stats.ncx2.logcdf(scaled, dimension, total_noncentrality))
    log_mass = _ruben_log_cdf(eigenvalues, noncentrality, threshold)
    if log_mass is None:
        log_mass = math.log(_imhof_cdf(eigenvalues, noncentrality, threshold))
    return log_mass


def _ruben_log_cdf(
    eigenvalues: np.ndarray, noncentrality: np.ndarray, threshold: float, max_terms: int = 4000
) -> float | None:
    r"""log P(Σ_j λ_j χ²_1(δ_j²) ≤ x) by Ruben's series, or None if it would not converge.

    .. math:: P = \sum_{k ≥ 0} c_k\, F_{χ²_{d+2k}}(x/β), \quad β = \min_j λ_j,

    c_0 = exp(−Σδ²/2) Π (β/λ_j)^{1/2}, c_k = (1/2k) Σ_{r<k} g_{k−r} c_r,
    g_k = Σ_j (1 − β/λ_j)^k + kβ Σ_j (δ_j²/λ_j)(1 − β/λ_j)^{k−1}. All c_k ≥ 0 and Σ c_k = 1,
    so after K terms the error is at most (1 − Σ_{k<K} c_k)·F_{χ²_{d+2K}}(x/β).
    """
    beta = eigenvalues.min()
    log_c0 = -0.5 * noncentrality.sum() + 0.5 * np.log(beta / eigenvalues).sum()
    if log_c0 < -600.0:
        return None
    dimension = eigenvalues.size
    ratio = 1.0 - beta / eigenvalues
    orders = np.arange(1, max_terms + 1)[:, None]
    with np.errstate(under="ignore"):
        g = (ratio**orders).sum(-1) + orders[:, 0] * beta * (
            noncentrality / eigenvalues * ratio ** (orders - 1)
        ).sum(-1)
    weights = np.zeros(max_terms + 1)
    weights[0] = math.exp(log_c0)
    scaled = threshold / beta
    total = weights[0] * stats.chi2.cdf(scaled, dimension)
    weight_sum = weights[0]
    for k in range(1, max_terms + 1):
        weights[k] = np.dot(g[:k][::-1], weights[:k]) / (2 * k)
        weight_sum += weights[k]
        term_cdf = stats.chi2.cdf(scaled, dimension + 2 * k)
        total += weights[k] * term_cdf
        if max(0.0, 1.0 - weight_sum) * term_cdf <= 1e-12 * total:
            return math.log(total)
    return None


def _imhof_cdf(eigenvalues: np.ndarray, noncentrality: np.ndarray, threshold: float) -> float:
    r"""P(Σ_j λ_j χ²_1(δ_j²) ≤ x) by Imhof's (1961) inversion formula.

    .. math:: P = \frac12 − \frac1π \int_0^∞ \frac{\sin(φ(u) − xu/2)}{u\,ρ(u)}\,du,

    φ(u) = ½ Σ_j [arctan(λ_j u) + δ_j² λ_j u/(1 + λ_j² u²)],
    ρ(u) = Π_j (1 + λ_j² u²)^{1/4} exp(½ Σ_j δ_j² λ_j² u²/(1 + λ_j² u²)).
    The first period is integrated directly; the tail, sin φ·cos(xu/2) − cos φ·sin(xu/2)
    over a slowly varying amplitude, by QUADPACK's Fourier-integral routine (QAWF).
    """
    frequency = 0.5 * threshold

    def phase(u: float) -> float:
        scaled = eigenvalues * u
        return 0.5 * float(np.sum(np.arctan(scaled) + noncentrality * scaled / (1.0 + scaled**2)))

    def amplitude(u: float) -> float:
        squared = (eigenvalues * u) ** 2
        log_rho = 0.25 * np.sum(np.log1p(squared)) + 0.5 * np.sum(
            noncentrality * squared / (1.0 + squared)
        )
        return math.exp(-log_rho) / u

    split = 2.0 * math.pi / frequency
    head, _ = integrate.quad(
        lambda u: math.sin(phase(u) - frequency * u) * amplitude(u),
        0.0,
        split,
        limit=500,
        epsabs=1e-13,
    )
    tail_cos, _ = integrate.quad(
        lambda u: math.sin(phase(u)) * amplitude(u), split, np.inf, weight="cos", wvar=frequency
    )
    tail_sin, _ = integrate.quad(
        lambda u: math.cos(phase(u)) * amplitude(u), split, np.inf, weight="sin", wvar=frequency
    )
    return 0.5 - (head + tail_cos - tail_sin) / math.pi


def _ball_log_masses(mu: np.ndarray, cov: np.ndarray, radius: float) -> np.ndarray:
    batch_shape = np.broadcast_shapes(mu.shape[:-1], cov.shape[:-2])
    mu = np.broadcast_to(mu, (*batch_shape, mu.shape[-1]))
    cov = np.broadcast_to(cov, (*batch_shape, *cov.shape[-2:]))
    masses = np.empty(batch_shape)
    for index in np.ndindex(batch_shape):
        masses[index] = _ball_log_mass(mu[index], cov[index], radius)
    return masses


class TruncatedMvNormalRV(RandomVariable):
    """MvNormal(mu, cov) restricted to the Euclidean ball ‖w‖₂ ≤ radius.

    Inputs are (mu, cov, radius, log_mass), log_mass = log P_{N(mu, cov)}(‖w‖ ≤ radius),
    computed once by `TruncatedMvNormal.dist`.
    """

    name = "truncated_mvnormal"
    signature = "(n),(n,n),(),()->(n)"
    dtype = "floatX"
    _print_name = ("TruncatedMvNormal", "\\operatorname{TruncatedMvNormal}")

    @classmethod
    def rng_fn(cls, rng, mu, cov, radius, log_mass, size):
        """Exact draws.

        mu = 0 and cov = s²·I: ‖w‖² = s²·F⁻¹_{χ²_d}(U·F_{χ²_d}(R²/s²)) with a uniform
        direction (inverse CDF, any radius). Otherwise rejection from N(mu, cov), whose
        acceptance is exp(log_mass), by `pymc_private.conjugate.mvnormal_in_ball`;
        `TruncationError` below `_MIN_ACCEPTANCE`.
        """
        dimension = mu.shape[-1]
        batch_shape = (
            tuple(size)
            if size is not None
            else np.broadcast_shapes(
                mu.shape[:-1], cov.shape[:-2], np.shape(radius), np.shape(log_mass)
            )
        )
        mu = np.broadcast_to(mu, (*batch_shape, dimension)).reshape(-1, dimension)
        cov = np.broadcast_to(cov, (*batch_shape, dimension, dimension)).reshape(
            -1, dimension, dimension
        )
        radius = np.broadcast_to(radius, batch_shape).reshape(-1)
        log_mass = np.broadcast_to(log_mass, batch_shape).reshape(-1)
        variance = cov[:, 0, 0]
        isotropic_centred = (mu == 0).all(-1) & np.all(
            cov == variance[:, None, None] * np.eye(dimension), axis=(-2, -1)
        )
        if (~isotropic_centred).any() and (
            log_mass[~isotropic_centred] < math.log(_MIN_ACCEPTANCE)
        ).any():
            raise TruncationError(
                f"TruncatedMvNormal: rejection sampling would accept fewer than "
                f"{_MIN_ACCEPTANCE:g} of proposals (ball mass "
                f"{math.exp(log_mass[~isotropic_centred].min()):.2g}): increase `radius`, "
                f"move `mu` inside the ball or use mu = 0 with cov = s²·I (sampled exactly)."
            )
        draws = np.empty((mu.shape[0], dimension))
        n_iso = int(isotropic_centred.sum())
        if n_iso:
            sd = np.sqrt(variance[isotropic_centred])
            top = stats.chi2.cdf((radius[isotropic_centred] / sd) ** 2, dimension)
            radial = sd * np.sqrt(stats.chi2.ppf(rng.uniform(size=n_iso) * top, dimension))
            direction = rng.standard_normal((n_iso, dimension))
            direction /= np.linalg.norm(direction, axis=-1, keepdims=True)
            draws[isotropic_centred] = radial[:, None] * direction
        general = np.flatnonzero(~isotropic_centred)
        if general.size:
            draws[general] = conjugate.mvnormal_in_ball(
                rng, mu[general], cov[general], float(radius[0]), name="TruncatedMvNormal"
            )
        return draws.reshape((*batch_shape, dimension))


truncated_mvnormal = TruncatedMvNormalRV()


class _BallTransform(Transform):
    """R^d → open ball of radius R: w = R·z/√(1 + ‖z‖²).

    Radial map ρ(r) = R r/√(1 + r²), so log|J| = log ρ'(r) + (d − 1)·log(ρ(r)/r)
    = d·log R − ((d + 2)/2)·log(1 + ‖z‖²). Inverse: z = u/√(1 − ‖u‖²), u = w/R.
    The RV's inputs are (rng, size, mu, cov, radius, log_mass).
    """

    name = "ball"

    def forward(self, value, *inputs):
        scaled = value / pt.as_tensor(inputs[4])[..., None]
        squared_norm = pt.sum(pt.sqr(scaled), axis=-1, keepdims=True)
        return scaled / pt.sqrt(1.0 - squared_norm)

    def backward(self, value, *inputs):
        radius = pt.as_tensor(inputs[4])[..., None]
        squared_norm = pt.sum(pt.sqr(value), axis=-1, keepdims=True)
        return radius * value / pt.sqrt(1.0 + squared_norm)

    def log_jac_det(self, value, *inputs):
        radius = pt.as_tensor(inputs[4])
        dimension = value.shape[-1].astype(value.dtype)
        squared_norm = pt.sum(pt.sqr(value), axis=-1)
        return dimension * pt.log(radius) - 0.5 * (dimension + 2.0) * pt.log1p(squared_norm)


class TruncatedMvNormal(Continuous):
    r"""MvNormal(mu, cov) restricted to the Euclidean ball ‖w‖₂ ≤ radius (centred at 0).

    .. math:: p(w) = \frac{N(w; μ, Σ)}{P(‖W‖_2 ≤ R)}, \quad ‖w‖_2 ≤ R

    With Normal linear-regression data (‖x‖₂ ≤ B_x, |y| ≤ B_y, known σ),
    L ≤ (B_y + B_x·R)²/(2σ²) (:ref:`costs-lipschitz-table`; JMLR 2017, Lemma 23).

    The normalising constant P(‖W‖ ≤ R) is computed once, here: exactly for Σ = s²·I (the
    chi-square CDF for μ = 0, noncentral otherwise), else numerically (Ruben's series, or
    Imhof's integral for a large noncentrality; see `_ball_log_mass`). It is a constant: it
    does not affect sampling. Draws are exact (`TruncatedMvNormalRV.rng_fn`); NUTS samples
    through w = R·z/√(1 + ‖z‖²); the initial point is μ if ‖μ‖ ≤ R/2, else μ·R/(2‖μ‖).

    Parameters
    ----------
    name : str
        Name of the random variable in the model.
    mu : array_like of float
        Mean of the untruncated normal, last axis of length d. Constant.
    cov : array_like of float
        Symmetric positive-definite covariance, shape (..., d, d). Constant.
    radius : float
        Radius R > 0 (finite) of the ball.
    **kwargs
        Passed to PyMC (``dims``, ``shape``, ...); the last axis is the vector.
    """

    rv_op = truncated_mvnormal

    @classmethod
    def dist(cls, mu: ArrayLike, cov: ArrayLike, *, radius: float, **kwargs) -> TensorVariable:
        mu = _constant(mu, "mu", "TruncatedMvNormal")
        cov = _constant(cov, "cov", "TruncatedMvNormal")
        if mu.ndim == 0 or cov.ndim < 2 or cov.shape[-2:] != (mu.shape[-1], mu.shape[-1]):
            raise InvalidPrivacyParameterError(
                f"TruncatedMvNormal: `mu` must have a last axis of length d and `cov` a last "
                f"two axes (d, d); got mu {mu.shape} and cov {cov.shape}."
            )
        if not (np.isfinite(mu).all() and np.isfinite(cov).all()):
            raise InvalidPrivacyParameterError("TruncatedMvNormal: `mu` and `cov` must be finite.")
        symmetric = np.allclose(cov, np.swapaxes(cov, -1, -2), rtol=1e-10, atol=1e-12)
        positive = symmetric and (np.linalg.eigvalsh(cov) > 0).all()
        if not positive:
            raise InvalidPrivacyParameterError(
                "TruncatedMvNormal: `cov` must be symmetric positive definite; pass a valid "
                "covariance matrix."
            )
        radius = _constant(radius, "radius", "TruncatedMvNormal")
        if radius.ndim != 0:
            raise InvalidPrivacyParameterError(
                "TruncatedMvNormal: `radius` must be a single number."
            )
        radius = float(radius)
        if radius == np.inf:
            raise UnboundedSensitivityError(
                "TruncatedMvNormal: `radius` must be finite: an unbounded weight vector makes "
                "the record Lipschitz constant L infinite (JMLR 2017, Assumption 1). Pass the "
                "largest ‖w‖₂ you believe plausible."
            )
        if not radius > 0:
            raise InvalidPrivacyParameterError(
                "TruncatedMvNormal: `radius` must be > 0; pass a positive radius."
            )
        log_mass = _ball_log_masses(mu, cov, radius)
        if not np.isfinite(log_mass).all():
            raise InvalidPrivacyParameterError(
                "TruncatedMvNormal: the ball ‖w‖₂ ≤ `radius` holds no measurable mass of "
                "N(mu, cov); increase `radius` or move `mu` towards the origin."
            )
        return super().dist([mu, cov, radius, log_mass], **kwargs)

    def support_point(rv, size, mu, cov, radius, log_mass):
        norm = pt.sqrt(pt.sum(pt.sqr(mu), axis=-1, keepdims=True))
        half_radius = pt.as_tensor(radius)[..., None] / 2.0
        point = pt.switch(norm <= half_radius, mu, mu * half_radius / norm)
        if not rv_size_is_none(size):
            point = pt.full(pt.concatenate([size, [mu.shape[-1]]]), point)
        return point

    def logp(value, mu, cov, radius, log_mass):
        log_density = pm.MvNormal.logp(value, mu, cov) - log_mass
        norm = pt.sqrt(pt.sum(pt.sqr(value), axis=-1))
        return pt.switch(pt.le(norm, radius), log_density, -np.inf)


@_default_transform.register(TruncatedMvNormalRV)
def _truncated_mvnormal_default_transform(op, rv):
    return _BallTransform()


# ---------------------------------------------------------------------------------------
# Reading the support of a free random variable from its graph
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ParameterSupport:
    """The support of a free random variable and its prior's parameters, read from the graph.

    Attributes
    ----------
    family : str
        The base distribution: "beta", "gamma", "exponential", "normal", "uniform",
        "halfnormal", "lognormal", "inverse_gamma", "studentt", "cauchy", "laplace",
        "logistic", "dirichlet" or "mvnormal" (truncation shows in the bounds below).
    params : Mapping[str, numpy.ndarray | None]
        The base distribution's parameters in PyMC's user-facing parameterisation (beta:
        alpha, beta; gamma: alpha, beta = rate; exponential: lam; normal: mu, sigma;
        dirichlet: a; mvnormal: mu, cov; ...), broadcast to the variable's shape (with their
        core axes). None for a parameter that is not a constant (a hyperprior).
    lower, upper : numpy.ndarray
        Elementwise bounds broadcast to the variable's shape; ±inf where unbounded. For a
        truncated Dirichlet [m, 1 − (K − 1)m]; for a ball of radius R, [−R, R].
    simplex_min_prob : float | None
        The last axis is a simplex whose entries are ≥ this value (0 for a plain Dirichlet).
    radius : float | None
        The last axis lies in the Euclidean ball of this radius, centred at the origin.
    """

    family: str
    params: Mapping[str, np.ndarray | None]
    lower: np.ndarray
    upper: np.ndarray
    simplex_min_prob: float | None = None
    radius: float | None = None

    def __post_init__(self) -> None:
        def read_only(value: Any) -> np.ndarray:
            array = np.array(value, dtype=float)
            array.setflags(write=False)
            return array

        object.__setattr__(self, "lower", read_only(self.lower))
        object.__setattr__(self, "upper", read_only(self.upper))
        params = {
            name: None if value is None else read_only(value) for name, value in self.params.items()
        }
        object.__setattr__(self, "params", MappingProxyType(params))

    @property
    def is_bounded(self) -> bool:
        """Whether every coordinate has finite lower and upper bounds."""
        return bool(np.isfinite(self.lower).all() and np.isfinite(self.upper).all())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ParameterSupport):
            return NotImplemented
        return (
            self.family == other.family
            and self.simplex_min_prob == other.simplex_min_prob
            and self.radius == other.radius
            and np.array_equal(self.lower, other.lower)
            and np.array_equal(self.upper, other.upper)
            and self.params.keys() == other.params.keys()
            and all(_same_parameter(self.params[k], other.params[k]) for k in self.params)
        )

    __hash__ = None  # type: ignore[assignment]


def _same_parameter(first: np.ndarray | None, second: np.ndarray | None) -> bool:
    if first is None or second is None:
        return first is second
    return np.array_equal(first, second)


def _constant_value(variable: Variable) -> np.ndarray | None:
    """The value of a graph built from constants only (constant folding), else None."""
    [folded] = constant_fold([variable], raise_not_constant=False)
    return None if isinstance(folded, Variable) else np.asarray(folded, dtype=float)


def _public_shape(rv: TensorVariable) -> tuple[int, ...]:
    """The shape of ``rv``: static, or folded from constants and model dimension lengths.

    Shapes are public (n is public under bounded DP), so shared dimension lengths may be
    read; parameter values never are.
    """
    if all(length is not None for length in rv.type.shape):
        return tuple(int(length) for length in rv.type.shape)
    [folded] = constant_fold([rv.shape], raise_not_constant=False)
    if isinstance(folded, Variable):
        shared = {
            variable: pt.constant(variable.get_value())
            for variable in graph_inputs([folded])
            if isinstance(variable, SharedVariable)
        }
        [folded] = constant_fold([graph_replace(folded, shared)], raise_not_constant=False)
    if isinstance(folded, Variable):
        raise UnsupportedModelError(
            f"The shape of `{rv.name}` is not fixed by constants or model dimensions; give "
            f"it a fixed `shape` or `dims`."
        )
    return tuple(int(length) for length in np.asarray(folded))


_INF = np.inf

# op type → (family, reader); the reader maps the op's constant parameters (None where not
# constant) to (user-facing params, lower, upper).
_Reader = Callable[..., tuple[dict[str, np.ndarray | None], Any, Any]]


def _reciprocal(value: np.ndarray | None) -> np.ndarray | None:
    return None if value is None else 1.0 / value


_SCALAR_FAMILIES: dict[type, tuple[str, _Reader]] = {
    ptr.BetaRV: ("beta", lambda alpha, beta: ({"alpha": alpha, "beta": beta}, 0.0, 1.0)),
    ptr.UniformRV: (
        "uniform",
        lambda lower, upper: ({"lower": lower, "upper": upper}, lower, upper),
    ),
    ptr.GammaRV: (
        "gamma",
        lambda alpha, scale: ({"alpha": alpha, "beta": _reciprocal(scale)}, 0.0, _INF),
    ),
    ptr.ExponentialRV: ("exponential", lambda scale: ({"lam": _reciprocal(scale)}, 0.0, _INF)),
    ptr.HalfNormalRV: ("halfnormal", lambda loc, sigma: ({"sigma": sigma}, loc, _INF)),
    ptr.LogNormalRV: ("lognormal", lambda mu, sigma: ({"mu": mu, "sigma": sigma}, 0.0, _INF)),
    ptr.InvGammaRV: (
        "inverse_gamma",
        lambda alpha, beta: ({"alpha": alpha, "beta": beta}, 0.0, _INF),
    ),
    ptr.NormalRV: ("normal", lambda mu, sigma: ({"mu": mu, "sigma": sigma}, -_INF, _INF)),
    ptr.StudentTRV: (
        "studentt",
        lambda nu, mu, sigma: ({"nu": nu, "mu": mu, "sigma": sigma}, -_INF, _INF),
    ),
    ptr.CauchyRV: ("cauchy", lambda alpha, beta: ({"alpha": alpha, "beta": beta}, -_INF, _INF)),
    ptr.LaplaceRV: ("laplace", lambda mu, b: ({"mu": mu, "b": b}, -_INF, _INF)),
    ptr.LogisticRV: ("logistic", lambda mu, s: ({"mu": mu, "s": s}, -_INF, _INF)),
    TruncatedNormalRV: (
        "normal",
        lambda mu, sigma, lower, upper: ({"mu": mu, "sigma": sigma}, lower, upper),
    ),
}


def _not_public(rv: TensorVariable, family: str) -> UnsupportedModelError:
    return UnsupportedModelError(
        f"The support of `{rv.name}` ({family}) depends on random or data-dependent values, "
        f"so it is not public and fixed: the privacy analysis needs constant bounds. Use a "
        f"prior with fixed bounds, e.g. pmp.TruncatedBeta(..., lower=a, upper=1 - a) or "
        f"pmp.TruncatedNormal(..., lower=l, upper=u)."
    )


def _scalar_support(
    rv: TensorVariable,
    base_op: RandomVariable,
    params: list[Variable],
    truncation: tuple[Variable, Variable] | None,
) -> ParameterSupport | None:
    entry = _SCALAR_FAMILIES.get(type(base_op))
    if entry is None:
        return None
    family, reader = entry
    values, lower, upper = reader(*(_constant_value(param) for param in params))
    if lower is None or upper is None:
        raise _not_public(rv, family)
    if truncation is not None:
        truncation_lower, truncation_upper = (_constant_value(bound) for bound in truncation)
        if truncation_lower is None or truncation_upper is None:
            raise _not_public(rv, family)
        lower = np.maximum(lower, truncation_lower)
        upper = np.minimum(upper, truncation_upper)
    shape = _public_shape(rv)
    return ParameterSupport(
        family=family,
        params={
            name: None if value is None else np.broadcast_to(value, shape)
            for name, value in values.items()
        },
        lower=np.broadcast_to(lower, shape),
        upper=np.broadcast_to(upper, shape),
    )


def parameter_support(rv: TensorVariable) -> ParameterSupport | None:
    """Read the support of a free random variable, and its prior's parameters, from the graph.

    Only the variable's op and its constant inputs are read (constant folding; no data, no
    Python-side tags), so the answer survives cloning a model and is the same for any data.

    Recognised: the priors of this module; `pm.Truncated` over any family below; and plain
    Beta → [0, 1], Uniform(l, u) → [l, u], Gamma, Exponential, LogNormal, InverseGamma →
    [0, ∞), HalfNormal → [0, ∞), Normal, TruncatedNormal, StudentT, Cauchy, Laplace,
    Logistic → their interval, Dirichlet → the simplex (``simplex_min_prob=0``), MvNormal →
    unbounded.

    Parameters
    ----------
    rv : TensorVariable
        A random variable, e.g. an entry of ``model.free_RVs``.

    Returns
    -------
    ParameterSupport or None
        None when ``rv`` is not a random variable of a recognised family (the caller decides
        whether that is an error).

    Raises
    ------
    UnsupportedModelError
        The family is recognised but its support depends on random or data-dependent values
        (e.g. ``pm.Uniform("u", 0, sigma)`` with ``sigma`` free), or its shape is not fixed.
    """
    node = rv.owner
    if node is None:
        return None
    op = node.op
    if isinstance(op, TruncatedRV):
        *base_inputs, lower, upper = node.inputs
        return _scalar_support(rv, op.base_rv_op, base_inputs[2:], (lower, upper))
    if isinstance(op, TruncatedDirichletRV | ptr.DirichletRV):
        return _simplex_support(rv, op, node)
    if isinstance(op, TruncatedMvNormalRV | ptr.MvNormalRV):
        return _vector_support(rv, op, node)
    if isinstance(op, RandomVariable):
        return _scalar_support(rv, op, list(op.dist_params(node)), None)
    return None


def prior_parameter_graphs(rv: TensorVariable) -> dict[str, Variable] | None:
    """The parameters of a scalar prior as graphs, named and parameterised as
    `ParameterSupport.params` (normal: mu, sigma; gamma: alpha, beta = rate; ...): for a
    prior whose parameters are other free variables (hyperpriors), evaluated at their
    current values by a conjugate step. None for a prior that is not of a scalar family."""
    node = rv.owner
    if node is None:
        return None
    op = node.op
    if isinstance(op, TruncatedRV):
        base_op, params = op.base_rv_op, node.inputs[2:-2]
    elif isinstance(op, RandomVariable):
        base_op, params = op, list(op.dist_params(node))
    else:
        return None
    entry = _SCALAR_FAMILIES.get(type(base_op))
    if entry is None:
        return None
    values, _, _ = entry[1](*params)
    return {name: pt.as_tensor(value) for name, value in values.items()}


def _simplex_support(rv: TensorVariable, op: RandomVariable, node) -> ParameterSupport:
    params = op.dist_params(node)
    shape = _public_shape(rv)
    a = _constant_value(params[0])
    if isinstance(op, TruncatedDirichletRV):
        min_prob_value = _constant_value(params[1])
        if min_prob_value is None:
            raise _not_public(rv, "dirichlet")
        min_prob = float(np.max(min_prob_value))
    else:
        min_prob = 0.0
    n_categories = shape[-1]
    return ParameterSupport(
        family="dirichlet",
        params={"a": None if a is None else np.broadcast_to(a, shape)},
        lower=np.full(shape, min_prob),
        upper=np.full(shape, 1.0 - (n_categories - 1) * min_prob),
        simplex_min_prob=min_prob,
    )


def _vector_support(rv: TensorVariable, op: RandomVariable, node) -> ParameterSupport:
    params = op.dist_params(node)
    shape = _public_shape(rv)
    mu = _constant_value(params[0])
    cov = _constant_value(params[1])
    if isinstance(op, TruncatedMvNormalRV):
        radius_value = _constant_value(params[2])
        if radius_value is None:
            raise _not_public(rv, "mvnormal")
        radius: float | None = float(np.max(radius_value))
        bound = radius
    else:
        radius = None
        bound = np.inf
    return ParameterSupport(
        family="mvnormal",
        params={
            "mu": None if mu is None else np.broadcast_to(mu, shape),
            "cov": None if cov is None else np.broadcast_to(cov, (*shape, shape[-1])),
        },
        lower=np.full(shape, -bound),
        upper=np.full(shape, bound),
        radius=radius,
    )
