"""Reading the support of a free random variable, and its prior's parameters, from the graph.

`parameter_support` reads the support of any free random variable from its graph (the op
and its constant inputs), never from data and never from Python-side tags that cloning a
model would lose: the truncated priors of `pymc_private.priors.distributions`, `pm.Truncated` over
the
scalar families, and the plain PyMC priors whose support is an interval, the simplex or the
whole space. `prior_parameter_graphs` gives a scalar prior's parameters as graphs, for the
conjugate steps whose priors have hyperpriors.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.continuous import TruncatedNormalRV
from pymc.distributions.truncated import TruncatedRV
from pymc.pytensorf import constant_fold
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Variable
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import graph_inputs
from pytensor.tensor.random import basic as ptr
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.variable import TensorVariable

from pymc_private.errors import UnsupportedModelError
from pymc_private.priors.distributions import TruncatedDirichletRV, TruncatedMvNormalRV

__all__ = ["ParameterSupport", "parameter_support", "prior_parameter_graphs", "public_shape"]


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


def public_shape(rv: TensorVariable) -> tuple[int, ...]:
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
            f"The shape of `{rv.name or rv}` is not fixed by constants or model dimensions; "
            "give it a fixed `shape` or `dims`."
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
    shape = public_shape(rv)
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
    shape = public_shape(rv)
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
    shape = public_shape(rv)
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
