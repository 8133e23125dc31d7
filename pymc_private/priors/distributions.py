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

`pymc_private.priors.support.parameter_support` reads the support of any free random variable from
its graph; `pymc_private.priors.mass` computes the normalising constants of the truncated
Dirichlet and multivariate normal.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from numpy.typing import ArrayLike
from pymc.distributions.dist_math import logpow
from pymc.distributions.distribution import Continuous
from pymc.distributions.distribution import support_point as pymc_support_point
from pymc.distributions.shape_utils import rv_size_is_none, to_tuple
from pymc.distributions.transforms import _default_transform, simplex
from pymc.distributions.truncated import Truncated, TruncatedRV
from pymc.exceptions import TruncationError
from pymc.logprob.transforms import Transform
from pymc.pytensorf import constant_fold
from pytensor.graph.basic import Variable
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.variable import TensorVariable
from scipy import stats

from pymc_private.errors import (
    InvalidPrivacyParameterError,
    UnboundedSensitivityError,
)
from pymc_private.priors import truncated
from pymc_private.priors.mass import ball_log_masses, dirichlet_log_masses

TensorLike = ArrayLike | Variable
"""A number, array or PyTensor expression, as PyMC distributions accept."""

__all__ = [
    "TruncatedBeta",
    "TruncatedDirichlet",
    "TruncatedExponential",
    "TruncatedGamma",
    "TruncatedMvNormal",
    "TruncatedNormal",
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
        fgraph=op.fgraph,  # the same (immutable) inner graph
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
        the draws come from `pymc_private.priors.truncated.truncated_dirichlet`.
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
            + truncated.log_multivariate_beta(a)
            - (n_categories - 1) * np.log(width)
            - truncated.log_multivariate_beta(b)
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
        draws = truncated.truncated_dirichlet(rng, a, float(m[0]), name="TruncatedDirichlet")
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
    `pymc_private.priors.mass`). It is a constant: it does not affect sampling.
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
        log_mass = dirichlet_log_masses(a, min_prob)
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
        acceptance is exp(log_mass), by `pymc_private.priors.truncated.mvnormal_in_ball`;
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
            draws[general] = truncated.mvnormal_in_ball(
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
    Imhof's integral for a large noncentrality; see `pymc_private.priors.mass`). It is a
    constant: it does not affect sampling. Draws are exact (`TruncatedMvNormalRV.rng_fn`);
    NUTS samples through w = R·z/√(1 + ‖z‖²); the initial point is μ if ‖μ‖ ≤ R/2, else
    μ·R/(2‖μ‖).

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
        log_mass = ball_log_masses(mu, cov, radius)
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
