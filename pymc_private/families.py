"""Likelihood families: what the privacy analysis and the private samplers know about each.

One object per family; a new family is one new object appended to `FAMILIES`. Each knows

- the PyMC random-variable op of its observed node and the names of its parameters (in the
  op's parameterisation, as returned by ``op.dist_params``);
- its sample space (``support``), intersected by the analysis with the declared bounds;
- its record log-likelihood range over a parameter box (DESIGN.md, "Computing L exactly"):
  ``sup_θ sup_{x,x'} |ℓ(x;θ) − ℓ(x';θ)|`` for one record element;
- its per-record statistic t(x), the sufficient statistics s(D) = Σ_i t(x_i) (grouped by a
  private index where the parameter is indexed by one) and their L1 sensitivity Δ₁ over one
  replaced record (Zhang et al. 2016, Lemma 1; Foulds et al. 2016, eq. 16);
- its conjugate prior and the tempered conjugate update (likelihood raised to 1/T,
  T ≥ 1: Dimitrakakis et al. 2017, §4; Foulds et al. 2016, §4.1);
- its log-likelihood written in terms of the statistics alone, for a model that sees only
  privatised statistics.

Vocabulary. A record of an observed array of shape ``(n, *record_shape)`` has
``prod(record_shape)`` *elements*; ℓ is the log density of one element. A parameter is
*varying* when it may differ between a record and its replacement (it is indexed by private
data, ``theta[y_obs]``, or computed from private covariates, ``X @ w``); otherwise both records
see the same parameter value and only the data changes. Every quantity here is a function of
public inputs: declared bounds, prior supports, shapes and constants.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import pytensor.tensor as pt
from pytensor.tensor.random.basic import (
    BernoulliRV,
    BinomialRV,
    CategoricalRV,
    ExponentialRV,
    NormalRV,
    PoissonRV,
)
from scipy.special import gammaln, xlogy

from pymc_private.errors import UnsupportedModelError

__all__ = [
    "FAMILIES",
    "Bernoulli",
    "Binomial",
    "Categorical",
    "ElementDomain",
    "Exponential",
    "Interval",
    "LikelihoodFamily",
    "LikelihoodTerm",
    "NormalFreeSigma",
    "NormalKnownSigma",
    "NormalLinearRegression",
    "ParameterTerm",
    "Poisson",
    "StatisticSpec",
    "complete_statistic",
    "find_family",
    "group_counts_statistic",
]


@dataclass(frozen=True)
class Interval:
    """A closed interval ``[lower, upper]`` (bounds may be infinite)."""

    lower: float
    upper: float

    @property
    def finite(self) -> bool:
        return math.isfinite(self.lower) and math.isfinite(self.upper)


_MAX_ENUMERATED = 1_000_000


@dataclass(frozen=True)
class ElementDomain:
    """The public domain of one record element: declared bounds within the family's support."""

    lower: float
    upper: float
    integer: bool

    def values(self) -> np.ndarray:
        """The integers of an integer domain, in order.

        Raises `UnsupportedModelError` beyond a million values: a family whose
        domain may be that large evaluates `candidates` instead.
        """
        if self.size > _MAX_ENUMERATED:
            raise UnsupportedModelError(
                f"The integer domain [{self.lower:g}, {self.upper:g}] holds {self.size:g} "
                f"values, more than the {_MAX_ENUMERATED} the privacy analysis enumerates; "
                "declare tighter bounds for the data (from public knowledge)."
            )
        return np.arange(math.ceil(self.lower), math.floor(self.upper) + 1, dtype=np.float64)

    def candidates(self, turning_points: Iterable[float]) -> np.ndarray:
        """The integers of an integer domain where a discrete-concave (or, piecewise,
        quasi-convex) function of x can attain its extremes: both endpoints and the
        integers from ⌊t⌋ − 1 to ⌊t⌋ + 2 around each turning point t, clipped into the
        domain. A few integers around each point make the set immune to rounding in t.
        """
        lower, upper = math.ceil(self.lower), math.floor(self.upper)
        points = [lower, upper]
        for point in turning_points:
            if math.isfinite(point):
                points.extend(math.floor(point) + k for k in (-1, 0, 1, 2))
        return np.unique(np.clip(points, lower, upper)).astype(np.float64)

    @property
    def size(self) -> float:
        """How many values the domain holds (``inf`` for a non-degenerate real interval)."""
        if self.integer:
            return float(math.floor(self.upper) - math.ceil(self.lower) + 1)
        return 1.0 if self.lower == self.upper else math.inf


@dataclass(frozen=True, eq=False)
class ParameterTerm:
    """How one parameter of an observed node depends on the model (public facts only).

    Parameters
    ----------
    name
        The family's name for the parameter (``"p"``, ``"mu"``, ``"sigma"``, ...).
    interval
        The range of every entry of the parameter over the prior supports and the declared
        bounds (interval arithmetic through the graph; a sound enclosure).
    shape
        Shape of the parameter before record indexing: the free variable's shape (``theta`` of
        shape ``(G, d)`` for ``theta[y_obs]``) or the constant's shape.
    free_variables
        Names of the free random variables the parameter depends on.
    varies_with_record
        True when the parameter may differ between a record and its replacement.
    constant
        The value when the parameter is a constant (public), else None.
    free_variable
        Set when the parameter is a single free variable through ``link`` (possibly indexed
        along axis 0 by ``group_by``): the structure conjugate updates and sufficient
        statistics need. None for any other expression.
    link
        How the parameter is computed from ``free_variable``: ``"identity"``,
        ``"reciprocal"`` (an Exponential scale from a rate), ``"inverse_sqrt"`` (a Normal
        sigma from a precision ``tau``), or ``"linear"`` (``covariates @ free_variable``).
    group_by
        The `PrivateData` index the parameter is indexed by (``theta[y_obs]`` → ``"y_obs"``).
    covariates
        The `PrivateData` covariate matrix of a linear predictor.
    radius
        ``‖w‖₂ ≤ radius`` for the weights of a linear predictor, when the prior says so.
    prior_family
        The family name `parameter_support` reports for ``free_variable`` (``"beta"``, ...).
    """

    name: str
    interval: Interval
    shape: tuple[int, ...] = ()
    free_variables: tuple[str, ...] = ()
    varies_with_record: bool = False
    constant: np.ndarray | None = None
    free_variable: str | None = None
    link: str = "identity"
    group_by: str | None = None
    covariates: str | None = None
    radius: float | None = None
    prior_family: str | None = None

    def apply_link(self, value):
        """The parameter (in the op's parameterisation) from its free variable's value.

        Works on numpy arrays and PyTensor tensors alike.
        """
        if self.link == "reciprocal":
            return 1.0 / value
        if self.link == "inverse_sqrt":
            return value**-0.5
        return value


@dataclass(frozen=True, eq=False)
class LikelihoodTerm:
    """One observed node bound to its family, with everything public the family needs.

    Parameters
    ----------
    node
        Name of the observed random variable.
    family
        Its `LikelihoodFamily`.
    data
        Name of the observed `PrivateData`.
    record_shape
        Shape of one record of the observed data.
    domains
        The distinct element domains of one record (declared bounds within the support),
        each with the number of elements that have it.
    parameters
        One `ParameterTerm` per family parameter.
    group_by, n_groups, group_domain
        The private index that selects this node's parameters per record (``y_obs`` in
        ``theta[y_obs]``), the number of groups and the index's domain.
    covariate_lower, covariate_upper
        Declared bounds of one record of the covariates of a linear predictor.
    n
        The public record count.
    """

    node: str
    family: LikelihoodFamily
    data: str
    record_shape: tuple[int, ...]
    domains: tuple[tuple[ElementDomain, int], ...]
    parameters: Mapping[str, ParameterTerm]
    n: int
    group_by: str | None = None
    n_groups: int | None = None
    group_domain: ElementDomain | None = None
    covariate_lower: np.ndarray | None = None
    covariate_upper: np.ndarray | None = None

    @property
    def free_variables(self) -> tuple[str, ...]:
        names: list[str] = []
        for term in self.parameters.values():
            names.extend(v for v in term.free_variables if v not in names)
        return tuple(names)

    @property
    def group_can_change(self) -> bool:
        """Whether replacing a record can move it to another group."""
        return self.group_domain is not None and self.group_domain.size > 1

    def totals_statistic(self) -> StatisticSpec | None:
        """The group sizes n_g a grouped node's statistics are completed with (None when
        ungrouped: the total is the public n)."""
        if self.group_by is None:
            return None
        return group_counts_statistic(self.group_by, self.n_groups, self.group_domain)

    def lipschitz(self) -> float:
        """L of this node over one record: the sum of its elements' log-likelihood ranges.

        Exact when distinct elements use distinct parameter entries (or identical elements
        share one), an upper bound otherwise: sup of a sum ≤ sum of sups.
        """
        return float(
            sum(
                count * self.family.log_likelihood_range(self.parameters, domain)
                for domain, count in self.domains
            )
        )


@dataclass(frozen=True)
class StatisticSpec:
    """One sufficient statistic s(D) = Σ_i t(x_i) of the pay-once route, as released.

    Parameters
    ----------
    name
        Unique public name, e.g. ``"counts(x_obs | y_obs)"``.
    kind
        ``"counts"``: per-category counts of integer data with categories ``0..K−1``; category
        0 is *not released*: it is derived as the total (n, or the group's count) minus the
        others, which is post-processing since n is public and group counts are released.
        ``"sum"``: Σ x per element. ``"sum_squares"``: Σ x² per element. ``"gram"``: XᵀX,
        released as its upper triangle in ``numpy.triu_indices`` order. ``"cross"``: Xᵀy.
    data
        The `PrivateData` names it is computed from (``(X, y)`` for ``"cross"``).
    shape
        Shape of the released array: ``(G,)`` if grouped, then the record shape, then
        ``(K − 1,)`` for counts; ``(p(p+1)/2,)`` for gram; ``(p,)`` for cross.
    integer
        Integer-valued statistic with integer Δ₁ (discrete Laplace) or not (Laplace).
    sensitivity_l1
        Δ₁ = sup ‖s(D) − s(D')‖₁ over one replaced record, for this statistic alone.
    group_by, n_groups
        The private index grouping the sums, and the number of groups.
    n_categories
        K, for counts.
    nodes
        The observed nodes that use it (a statistic shared by several nodes is released once).
    """

    name: str
    kind: str
    data: tuple[str, ...]
    shape: tuple[int, ...]
    integer: bool
    sensitivity_l1: float
    group_by: str | None = None
    n_groups: int | None = None
    n_categories: int | None = None
    nodes: tuple[str, ...] = field(default=())

    def compute(self, arrays: Mapping[str, np.ndarray]) -> np.ndarray:
        """s(D) from the raw arrays (by `PrivateData` name), in released form.

        Touches private data: its output must go through a mechanism before release.
        """
        group = None if self.group_by is None else np.asarray(arrays[self.group_by], dtype=int)
        if self.kind == "gram":
            x = np.asarray(arrays[self.data[0]], dtype=np.float64)
            gram = x.T @ x
            return gram[np.triu_indices(gram.shape[0])]
        if self.kind == "cross":
            x = np.asarray(arrays[self.data[0]], dtype=np.float64)
            return x.T @ np.asarray(arrays[self.data[1]], dtype=np.float64)
        x = np.asarray(arrays[self.data[0]])
        if self.kind == "counts":
            values = np.asarray(x, dtype=int)
            per_record = values[..., None] == np.arange(1, self.n_categories)
            return _group_sum(per_record.astype(np.int64), group, self.n_groups)
        dtype = np.int64 if self.integer else np.float64
        t = x.astype(dtype)
        if self.kind == "sum_squares":
            t = t * t
        return _group_sum(t, group, self.n_groups)


def _group_sum(t: np.ndarray, group: np.ndarray | None, n_groups: int | None) -> np.ndarray:
    if group is None:
        return t.sum(axis=0)
    out = np.zeros((n_groups, *t.shape[1:]), dtype=t.dtype)
    np.add.at(out, group, t)
    return out


def complete_statistic(spec: StatisticSpec, released: np.ndarray, totals) -> np.ndarray:
    """The full statistic from its released form (post-processing, free of privacy cost).

    Counts get their category 0 back as ``totals − Σ_{k≥1} counts_k`` (``totals`` is n, or the
    full group-count vector for grouped counts); a packed Gram matrix is unpacked to a
    symmetric matrix; other kinds are returned as they are.
    """
    released = np.asarray(released)
    if spec.kind == "counts":
        total = _expand_totals(np.asarray(totals), released.ndim - 1, spec.group_by is not None)
        first = total - released.sum(axis=-1)
        return np.concatenate([first[..., None], released], axis=-1)
    if spec.kind == "gram":
        size = round((math.sqrt(8 * released.size + 1) - 1) / 2)
        full = np.zeros((size, size), dtype=released.dtype)
        full[np.triu_indices(size)] = released
        return full + np.triu(full, 1).T
    return released


def _expand_totals(totals, ndim: int, grouped: bool):
    """Totals shaped to broadcast against a statistic of ``ndim`` dimensions."""
    if not grouped:
        return totals
    return totals.reshape((-1,) + (1,) * (ndim - 1))


def group_counts_statistic(index: str, n_groups: int, domain: ElementDomain) -> StatisticSpec:
    """The group sizes n_g of a private index, released as counts with category 0 derived.

    Δ₁: a record moving from group g to g' changes n_g and n_g' by one each; with n_0
    derived, only the released ones count: 2 when both g and g' may be non-zero, 1 when
    there are only two groups (Zhang et al. 2016, Lemma 1, with the public total).
    """
    return StatisticSpec(
        name=f"counts({index})",
        kind="counts",
        data=(index,),
        shape=(n_groups - 1,),
        integer=True,
        sensitivity_l1=_counts_sensitivity(domain, grouped=False),
        n_categories=n_groups,
    )


def _counts_sensitivity(domain: ElementDomain, *, grouped: bool) -> float:
    """Δ₁ of per-category counts over one element, category 0 derived.

    Replacing x by x' moves one count down (cell x) and one up (cell x'); cells of category
    0 are not released. Ungrouped, only x ≠ x' changes anything: 2 when two non-zero
    categories exist, 1 when one does (and another value to move to). Grouped (the record may
    change group), x = x' in two groups moves two released cells as soon as one category is
    non-zero.
    """
    nonzero = domain.size - (1.0 if domain.lower <= 0.0 <= domain.upper else 0.0)
    if grouped:
        return 2.0 if nonzero else 0.0
    if nonzero >= 2:
        return 2.0
    return 1.0 if nonzero == 1 and domain.size >= 2 else 0.0


def _sum_sensitivity(t_low: float, t_high: float, *, grouped: bool) -> float:
    """Δ₁ of Σ t over one element with t ∈ [t_low, t_high].

    Ungrouped: |t(x) − t(x')| ≤ t_high − t_low. Grouped (the record may change group):
    |t(x)| + |t(x')| ≤ 2·max|t|, which also covers a change within one group.
    """
    if grouped:
        return 2.0 * max(abs(t_low), abs(t_high))
    return t_high - t_low


def _square_interval(lower: float, upper: float) -> tuple[float, float]:
    low = 0.0 if lower <= 0.0 <= upper else min(lower * lower, upper * upper)
    return low, max(lower * lower, upper * upper)


def _product_width(a: tuple[float, float], b: tuple[float, float]) -> float:
    products = [x * y for x in a for y in b]
    return max(products) - min(products)


def _spread(values: np.ndarray) -> float:
    """max − min of log-likelihood values; infinite as soon as one is not finite."""
    values = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(values)):
        return math.inf
    return float(values.max() - values.min())


def _one_parameter_range(
    log_likelihood: Callable[[np.ndarray, np.ndarray], np.ndarray],
    xs: np.ndarray,
    interval: Interval,
    varying: bool,
    critical: Callable[[np.ndarray], np.ndarray] | None = None,
) -> float:
    """L of one element for a one-parameter exponential family ℓ(x; θ) concave in θ.

    Fixed parameter: ℓ(x) − ℓ(x') is linear in the natural parameter η(θ), monotone in θ, so
    the sup over θ of the range over x is attained at θ ∈ {lower, upper} (a maximum of affine
    functions of η is convex). Varying parameter: the range of ℓ over (x, θ) jointly; ℓ is
    concave in θ, so its minimum over θ is at an endpoint and its maximum at the critical
    point ``critical(x)`` clipped into the interval. ``xs`` holds every x that can attain an
    extreme (all of a finite domain, or an interval's endpoints when ℓ is monotone in x).
    """
    if not interval.finite:
        return math.inf
    thetas = np.array([interval.lower, interval.upper])
    with np.errstate(divide="ignore", invalid="ignore"):
        table = log_likelihood(xs[:, None], thetas[None, :])
        if not varying:
            return max(_spread(table[:, 0]), _spread(table[:, 1]))
        values = [table.ravel()]
        if critical is not None:
            inner = np.clip(critical(xs), interval.lower, interval.upper)
            values.append(log_likelihood(xs, inner))
    return _spread(np.concatenate(values))


class LikelihoodFamily(ABC):
    """What pymc-private knows about one likelihood family.

    Class attributes
    ----------------
    name
        Public name, as listed in error messages.
    rv_op
        The PyTensor random-variable op class of the observed node.
    parameters
        Parameter names in the order of ``op.dist_params``.
    roles
        What each parameter is (``"probability"``, ``"simplex"``, ``"rate"``, ``"scale"``,
        ``"location"``, ``"trials"``): used to say which truncated prior bounds it.
    conjugate_priors
        For each parameter with a conjugate update: the prior family of its free variable
        and the link it must come through.
    """

    name: str
    rv_op: type
    parameters: tuple[str, ...]
    roles: Mapping[str, str]
    conjugate_priors: Mapping[str, tuple[str, str]]

    def accepts(self, parameters: Mapping[str, ParameterTerm]) -> bool:
        """Whether the parameters have the structure this family object handles."""
        return True

    @abstractmethod
    def support(self, parameters: Mapping[str, ParameterTerm]) -> ElementDomain:
        """The sample space of one element."""

    @abstractmethod
    def log_likelihood_range(
        self, parameters: Mapping[str, ParameterTerm], domain: ElementDomain
    ) -> float:
        """sup over the parameter box of sup_{x,x' ∈ domain} |ℓ(x;θ) − ℓ(x';θ)| (one element),
        with varying parameters ranging independently for x and x'. ``inf`` when unbounded."""

    @abstractmethod
    def statistics(self, term: LikelihoodTerm) -> tuple[StatisticSpec, ...]:
        """The node's own sufficient statistics, with their Δ₁ over one record.

        A grouped node also needs its group sizes, `LikelihoodTerm.totals_statistic`.

        Raises `UnsupportedModelError` (with the reason) when the node's parameters are not
        plain free variables, so that the likelihood does not reduce to statistics.
        """

    @abstractmethod
    def logp_from_statistics(
        self,
        term: LikelihoodTerm,
        values: Mapping[str, object],
        statistics: Mapping[str, object],
        totals,
    ):
        """Σ_i ℓ(x_i; θ) written with the full statistics only (PyTensor or numpy).

        ``values`` maps each non-constant parameter name to its *free variable* (``theta``,
        not ``theta[y_obs]``); ``statistics`` maps each statistic kind to its full form
        (`complete_statistic`); ``totals`` is n, or the group counts n_g when grouped. Terms
        that do not depend on any parameter may be dropped (stated per family).
        """

    @abstractmethod
    def conjugate_update(
        self,
        term: LikelihoodTerm,
        target: str,
        prior: Mapping[str, np.ndarray],
        statistics: Mapping[str, np.ndarray],
        totals,
        temperature: float,
        state: Mapping[str, np.ndarray],
    ) -> dict[str, np.ndarray]:
        """Posterior parameters of ``target``'s free variable under the tempered likelihood.

        Tempering raises the likelihood to 1/T (T ≥ 1), which divides every statistic and
        total by T in the update. ``state`` holds the current values of the other
        parameters' free variables (the Gibbs conditional). The result is in the conjugate
        family's parameterisation (beta: alpha, beta; gamma: alpha, beta as a rate;
        dirichlet: a; normal: mu, sigma; mvnormal: mu, cov), for the parameter's shape.
        Raises `UnsupportedModelError` when ``target`` has no conjugate update.
        """

    def _require_plain(self, term: LikelihoodTerm, *, allow_linear: bool = False) -> None:
        for param in term.parameters.values():
            if param.constant is not None:
                continue
            if param.free_variable is None or (param.link == "linear") != (
                allow_linear and param.name == "mu"
            ):
                raise UnsupportedModelError(
                    f"`{term.node}` ({self.name}): parameter `{param.name}` is an expression, "
                    "not a free variable (possibly indexed by private data), so the likelihood "
                    "does not reduce to sufficient statistics; use a pay-per-draw route, or "
                    "pass the free variable itself."
                )
        groups = {p.group_by for p in term.parameters.values() if p.group_by is not None}
        if len(groups) > 1:
            raise UnsupportedModelError(
                f"`{term.node}` ({self.name}): parameters indexed by different private indices "
                f"{sorted(groups)}; sufficient statistics need one grouping per node."
            )

    def _conjugate_check(self, term: LikelihoodTerm, target: str) -> ParameterTerm:
        param = term.parameters.get(target)
        if param is None or target not in self.conjugate_priors or param.constant is not None:
            raise UnsupportedModelError(
                f"`{term.node}` ({self.name}) has no conjugate update for `{target}`; "
                f"conjugate parameters: {sorted(self.conjugate_priors)}."
            )
        family, link = self.conjugate_priors[target]
        if param.link != link or param.free_variable is None:
            raise UnsupportedModelError(
                f"`{term.node}` ({self.name}): `{target}` must be a free variable with a "
                f"{family} prior entering through the {link} link for a conjugate update; "
                f"it enters through {param.link!r}."
            )
        return param

    def _statistic(
        self, term: LikelihoodTerm, kind: str, t_range: Callable[[ElementDomain], tuple]
    ) -> StatisticSpec:
        """A per-element sum statistic of ``term``'s data with t ∈ t_range(domain)."""
        grouped = term.group_by is not None
        change = term.group_can_change
        sensitivity = sum(
            count * _sum_sensitivity(*t_range(domain), grouped=change)
            for domain, count in term.domains
        )
        integer = all(domain.integer for domain, _ in term.domains)
        suffix = f" | {term.group_by}" if grouped else ""
        return StatisticSpec(
            name=f"{kind}({term.data}{suffix})",
            kind=kind,
            data=(term.data,),
            shape=((term.n_groups,) if grouped else ()) + term.record_shape,
            integer=integer,
            sensitivity_l1=float(sensitivity),
            group_by=term.group_by,
            n_groups=term.n_groups,
        )

    def _sum_statistic(self, term: LikelihoodTerm) -> StatisticSpec:
        """Σ x of a node whose parameters are plain free variables, t(x) = x ∈ [lo, hi]."""
        self._require_plain(term)
        return self._statistic(term, "sum", lambda d: (d.lower, d.upper))

    def _counts(self, term: LikelihoodTerm, n_categories: int) -> StatisticSpec:
        grouped = term.group_by is not None
        sensitivity = sum(
            count * _counts_sensitivity(domain, grouped=term.group_can_change)
            for domain, count in term.domains
        )
        suffix = f" | {term.group_by}" if grouped else ""
        return StatisticSpec(
            name=f"counts({term.data}{suffix})",
            kind="counts",
            data=(term.data,),
            shape=((term.n_groups,) if grouped else ()) + term.record_shape + (n_categories - 1,),
            integer=True,
            sensitivity_l1=float(sensitivity),
            group_by=term.group_by,
            n_groups=term.n_groups,
            n_categories=n_categories,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _aligned(term: LikelihoodTerm, name: str, value, ndim: int):
    """A parameter's value shaped to broadcast against an element-resolution statistic.

    Grouped parameters keep their group axis first; their remaining axes are aligned to the
    right of the record axes.
    """
    param = term.parameters[name]
    if param.constant is not None:
        value = param.constant
    value = param.apply_link(value)
    if param.group_by is None:
        return value
    missing = ndim - len(param.shape)
    if missing <= 0:
        return value
    shape = (param.shape[0],) + (1,) * missing + tuple(param.shape[1:])
    return value.reshape(shape)


def _reduce(statistic, param: ParameterTerm) -> np.ndarray:
    """Sum an element-resolution statistic over the elements that share one entry of
    ``param`` (broadcast axes), keeping a grouped parameter's group axis."""
    statistic = np.asarray(statistic)
    lead = 1 if param.group_by is not None else 0
    shape = param.shape[lead:]
    extra = statistic.ndim - lead - len(shape)
    if extra > 0:
        statistic = statistic.sum(axis=tuple(range(lead, lead + extra)))
    axes = tuple(lead + i for i, s in enumerate(shape) if s == 1 and statistic.shape[lead + i] != 1)
    if axes:
        statistic = statistic.sum(axis=axes, keepdims=True)
    return statistic


def _record_counts(term: LikelihoodTerm, statistic, totals):
    """The records behind each entry of an element-resolution statistic: n, or the group
    counts n_g along the group axis of a grouped node (numpy or PyTensor)."""
    return _expand_totals(totals, statistic.ndim, term.group_by is not None)


def _sum_and_counts(
    term: LikelihoodTerm, statistics: Mapping[str, np.ndarray], totals
) -> tuple[np.ndarray, np.ndarray]:
    """Σ x as floats and `_record_counts` broadcast to its shape, for a conjugate update."""
    total = np.asarray(statistics["sum"], dtype=np.float64)
    count = np.broadcast_to(_record_counts(term, total, np.asarray(totals)), total.shape)
    return total, count


def _sum(x):
    return pt.sum(x) if isinstance(x, pt.TensorVariable) else np.sum(x)


def _log(x):
    return pt.log(x) if isinstance(x, pt.TensorVariable) else np.log(x)


class Bernoulli(LikelihoodFamily):
    """Bernoulli(p) on {0, 1}; t(x) = x; conjugate Beta.

    L (one element, p ∈ [a, b]): max over p ∈ {a, b} of |logit p|, which is ln((1−a)/a) on
    [a, 1−a] (Dimitrakakis et al. 2017, Lemma 21, Beta–Bernoulli). Statistics: counts of
    x = 1 (x = 0 derived from the total), Δ₁ = 1 per element, 2 when the record may change
    group (Zhang et al. 2016, Lemma 1). Symbolic log-likelihood: exact.
    """

    name = "Bernoulli"
    rv_op = BernoulliRV
    parameters = ("p",)
    roles = MappingProxyType({"p": "probability"})
    conjugate_priors = MappingProxyType({"p": ("beta", "identity")})

    def support(self, parameters):
        return ElementDomain(0.0, 1.0, True)

    @staticmethod
    def log_likelihood(x, p):
        return xlogy(x, p) + xlogy(1.0 - x, 1.0 - p)

    def log_likelihood_range(self, parameters, domain):
        p = parameters["p"]
        return _one_parameter_range(
            self.log_likelihood, domain.values(), p.interval, p.varies_with_record
        )

    def statistics(self, term):
        self._require_plain(term)
        return (self._counts(term, 2),)

    def logp_from_statistics(self, term, values, statistics, totals):
        counts = statistics["counts"]
        p = _aligned(term, "p", values.get("p"), counts.ndim - 1)
        return _sum(counts[..., 1] * _log(p) + counts[..., 0] * _log(1.0 - p))

    def conjugate_update(self, term, target, prior, statistics, totals, temperature, state):
        param = self._conjugate_check(term, target)
        counts = statistics["counts"]
        success = _reduce(counts[..., 1], param)
        failure = _reduce(counts[..., 0], param)
        return {
            "alpha": prior["alpha"] + success / temperature,
            "beta": prior["beta"] + failure / temperature,
        }


class Binomial(LikelihoodFamily):
    """Binomial(m, p) with m a known constant, on {0..m}; t(x) = x; conjugate Beta.

    L: the range of ℓ(x; p) over x at p ∈ {a, b} (fixed p), or over (x, p) jointly with p at
    its endpoints and at x/m clipped into [a, b] (varying p), x over the declared integers
    [lo, hi]. Only the endpoints and the integers next to (m+1)a, (m+1)b, ma and mb are
    evaluated, which is exact: ℓ(x; p) is concave in x (its increment log((m−x)/(x+1)) +
    logit p decreases), so over x its minimum is at lo or hi and its maximum at the mode
    ⌊(m+1)p⌋ clipped into [lo, hi]. For varying p, M(x) = max over p of ℓ(x; p) is ℓ(x; a)
    for x ≤ ma (concave: maximal at the mode of ℓ(·; a) or at ⌊ma⌋), ℓ(x; b) for x ≥ mb
    (maximal at the mode of ℓ(·; b) or at ⌈mb⌉), and ℓ(x; x/m) in between, whose increment
    φ(x) − φ(m−1−x) with φ(k) = k·log(1 + 1/k) increasing is negative below (m−1)/2 and
    positive above, so it is maximal at ⌈ma⌉ or ⌊mb⌋; the joint minimum is at x ∈ {lo, hi},
    p ∈ {a, b}. Statistics: Σ x, Δ₁ = max x − min x per element (2·max x when the record
    may change group). Symbolic log-likelihood: drops Σ log C(m, x_i).
    """

    name = "Binomial (n a constant)"
    rv_op = BinomialRV
    parameters = ("n", "p")
    roles = MappingProxyType({"n": "trials", "p": "probability"})
    conjugate_priors = MappingProxyType({"p": ("beta", "identity")})

    def accepts(self, parameters):
        trials = parameters["n"].constant
        return trials is not None and np.unique(trials).size == 1

    def _trials(self, parameters) -> int:
        return int(np.unique(parameters["n"].constant)[0])

    def support(self, parameters):
        return ElementDomain(0.0, float(self._trials(parameters)), True)

    def log_likelihood_range(self, parameters, domain):
        m = self._trials(parameters)
        p = parameters["p"]

        def log_likelihood(x, theta):
            return (
                gammaln(m + 1.0)
                - gammaln(x + 1.0)
                - gammaln(m - x + 1.0)
                + xlogy(x, theta)
                + xlogy(m - x, 1.0 - theta)
            )

        a, b = p.interval.lower, p.interval.upper
        return _one_parameter_range(
            log_likelihood,
            domain.candidates([(m + 1) * a, (m + 1) * b, m * a, m * b]),
            p.interval,
            p.varies_with_record,
            critical=lambda x: x / m,
        )

    def statistics(self, term):
        return (self._sum_statistic(term),)

    def logp_from_statistics(self, term, values, statistics, totals):
        total = statistics["sum"]
        trials = self._trials(term.parameters) * _record_counts(term, total, totals)
        p = _aligned(term, "p", values.get("p"), total.ndim)
        return _sum(total * _log(p) + (trials - total) * _log(1.0 - p))

    def conjugate_update(self, term, target, prior, statistics, totals, temperature, state):
        param = self._conjugate_check(term, target)
        total, count = _sum_and_counts(term, statistics, totals)
        trials = self._trials(term.parameters) * count
        return {
            "alpha": prior["alpha"] + _reduce(total, param) / temperature,
            "beta": prior["beta"] + _reduce(trials - total, param) / temperature,
        }


class Categorical(LikelihoodFamily):
    """Categorical(p) with K categories on {0..K−1}; t(x) = one-hot(x); conjugate Dirichlet.

    L (one element, every p_k ∈ [a, u]): ln(u/a); a truncated Dirichlet with min_prob a has
    u = 1 − (K−1)a, giving ln((1 − (K−1)a)/a) (DESIGN.md table; Dimitrakakis et al. 2017,
    Lemma 24 for one node). Statistics: counts of categories 1..K−1 (category 0 derived),
    Δ₁ = 1 for K = 2 and 2 for K ≥ 3 per element, 2 when the record may change group.
    Symbolic log-likelihood: exact.
    """

    name = "Categorical"
    rv_op = CategoricalRV
    parameters = ("p",)
    roles = MappingProxyType({"p": "simplex"})
    conjugate_priors = MappingProxyType({"p": ("dirichlet", "identity")})

    def support(self, parameters):
        return ElementDomain(0.0, float(parameters["p"].shape[-1] - 1), True)

    def log_likelihood_range(self, parameters, domain):
        p = parameters["p"]
        if domain.size <= 1 and not p.varies_with_record:
            return 0.0
        if not (p.interval.lower > 0.0 and math.isfinite(p.interval.upper)):
            return math.inf
        return math.log(p.interval.upper / p.interval.lower)

    def statistics(self, term):
        self._require_plain(term)
        spec = self._counts(term, term.parameters["p"].shape[-1])
        return (spec,)

    def logp_from_statistics(self, term, values, statistics, totals):
        counts = statistics["counts"]
        p = _aligned(term, "p", values.get("p"), counts.ndim)
        return _sum(counts * _log(p))

    def conjugate_update(self, term, target, prior, statistics, totals, temperature, state):
        param = self._conjugate_check(term, target)
        counts = np.asarray(statistics["counts"], dtype=np.float64)
        return {"a": prior["a"] + _reduce(counts, param) / temperature}


class Poisson(LikelihoodFamily):
    """Poisson(λ) on {0, 1, ...}; t(x) = x; conjugate Gamma on the rate.

    L: the range of ℓ(x; λ) over x ∈ {lo..hi} at λ ∈ {c1, c2} (fixed λ), or over (x, λ)
    jointly with λ at its endpoints and at x clipped into [c1, c2] (varying λ). Only the
    endpoints and the integers next to c1 and c2 are evaluated, which is exact: ℓ(x; λ) is
    concave in x (its increment log λ − log(x+1) decreases), so over x its minimum is at lo
    or hi and its maximum at the mode ⌊λ⌋ clipped into [lo, hi]. For varying λ, M(x) = max
    over λ of ℓ(x; λ) is ℓ(x; c1) for x ≤ c1 (concave: maximal at ⌊c1⌋ or lo), ℓ(x; c2)
    for x ≥ c2 (maximal at ⌈c2⌉ or hi) and ℓ(x; x) in between, whose increment
    x·log(1 + 1/x) − 1 (−1 at x = 0) is negative, so it is maximal at ⌈c1⌉; the joint
    minimum is at x ∈ {lo, hi}, λ ∈ {c1, c2}. Statistics: Σ x, Δ₁ = hi − lo per element
    (2·hi when the record may change group). Symbolic log-likelihood: drops Σ log x_i!.
    """

    name = "Poisson"
    rv_op = PoissonRV
    parameters = ("mu",)
    roles = MappingProxyType({"mu": "rate"})
    conjugate_priors = MappingProxyType({"mu": ("gamma", "identity")})

    def support(self, parameters):
        return ElementDomain(0.0, math.inf, True)

    @staticmethod
    def log_likelihood(x, lam):
        return xlogy(x, lam) - lam - gammaln(x + 1.0)

    def log_likelihood_range(self, parameters, domain):
        lam = parameters["mu"]
        return _one_parameter_range(
            self.log_likelihood,
            domain.candidates([lam.interval.lower, lam.interval.upper]),
            lam.interval,
            lam.varies_with_record,
            critical=lambda x: x,
        )

    def statistics(self, term):
        return (self._sum_statistic(term),)

    def logp_from_statistics(self, term, values, statistics, totals):
        total = statistics["sum"]
        count = _record_counts(term, total, totals)
        lam = _aligned(term, "mu", values.get("mu"), total.ndim)
        return _sum(total * _log(lam) - count * lam)

    def conjugate_update(self, term, target, prior, statistics, totals, temperature, state):
        param = self._conjugate_check(term, target)
        total, count = _sum_and_counts(term, statistics, totals)
        return {
            "alpha": prior["alpha"] + _reduce(total, param) / temperature,
            "beta": prior["beta"] + _reduce(count, param) / temperature,
        }


class Exponential(LikelihoodFamily):
    """Exponential with rate λ (the op's parameter is the scale 1/λ) on [0, ∞); t(x) = x;
    conjugate Gamma on the rate λ (the scale must be ``1/lam``).

    L (fixed rate, λ ∈ [c1, c2], x ∈ [lo, hi]): c2·(hi − lo), i.e. c2·B on [0, B]
    (Dimitrakakis et al. 2017, Lemma 19). Varying rate: the range of log λ − λx over the box,
    maximal at x = lo with λ = 1/lo clipped. Statistics: Σ x, Δ₁ = hi − lo per element (2·hi
    when the record may change group). Symbolic log-likelihood: exact.
    """

    name = "Exponential"
    rv_op = ExponentialRV
    parameters = ("scale",)
    roles = MappingProxyType({"scale": "rate"})
    conjugate_priors = MappingProxyType({"scale": ("gamma", "reciprocal")})

    def support(self, parameters):
        return ElementDomain(0.0, math.inf, False)

    @staticmethod
    def log_likelihood(x, scale):
        return -np.log(scale) - x / scale

    def log_likelihood_range(self, parameters, domain):
        scale = parameters["scale"]
        if not scale.interval.lower > 0.0:
            return math.inf
        xs = np.array([domain.lower, domain.upper])
        return _one_parameter_range(
            self.log_likelihood,
            xs,
            scale.interval,
            scale.varies_with_record,
            critical=lambda x: x,
        )

    def statistics(self, term):
        return (self._sum_statistic(term),)

    def logp_from_statistics(self, term, values, statistics, totals):
        total = statistics["sum"]
        count = _record_counts(term, total, totals)
        scale = _aligned(term, "scale", values.get("scale"), total.ndim)
        return _sum(-count * _log(scale) - total / scale)

    def conjugate_update(self, term, target, prior, statistics, totals, temperature, state):
        param = self._conjugate_check(term, target)
        total, count = _sum_and_counts(term, statistics, totals)
        return {
            "alpha": prior["alpha"] + _reduce(count, param) / temperature,
            "beta": prior["beta"] + _reduce(total, param) / temperature,
        }


class _Normal(LikelihoodFamily):
    """Shared by the Normal families: the log-likelihood range over a (μ, σ) box.

    ℓ(x; μ, σ) = −(x−μ)²/(2σ²) − log σ − ½ log 2π, x ∈ [lo, hi], μ ∈ [m1, m2], σ ∈ [s1, s2].

    - σ fixed, μ fixed: sup over the box of range_x (x−μ)²/(2σ²), i.e.
      max_{μ∈{m1,m2}} h(μ)/(2 s1²) with h(μ) = max_x (x−μ)² − min_x (x−μ)², which is convex in
      μ (DESIGN.md table, "Normal σ known").
    - σ fixed, μ varying (indexed by private data, or a linear predictor xᵀw with
      |xᵀw| ≤ Bx·R): (dmax² − dmin²)/(2 s1²), dmax and dmin the largest and smallest |x − μ|;
      for a linear regression with |y| ≤ By this is (By + Bx·R)²/(2σ²) (DESIGN.md table).
    - σ varying: the range of ℓ over the whole box (log σ no longer cancels).
    """

    roles = MappingProxyType({"mu": "location", "sigma": "scale"})
    parameters = ("mu", "sigma")
    rv_op = NormalRV

    def support(self, parameters):
        return ElementDomain(-math.inf, math.inf, False)

    def log_likelihood_range(self, parameters, domain):
        mu, sigma = parameters["mu"], parameters["sigma"]
        m1, m2 = mu.interval.lower, mu.interval.upper
        s1, s2 = sigma.interval.lower, sigma.interval.upper
        lo, hi = domain.lower, domain.upper
        if not (mu.interval.finite and s1 > 0.0 and math.isfinite(s1)):
            return math.inf
        d_min = max(0.0, m1 - hi, lo - m2)
        d_max = max(hi - m1, m2 - lo)
        if not sigma.varies_with_record:
            if mu.varies_with_record:
                spread = d_max**2 - d_min**2
            else:
                spread = max(
                    max((lo - m) ** 2, (hi - m) ** 2) - max(0.0, lo - m, m - hi) ** 2
                    for m in (m1, m2)
                )
            return spread / (2.0 * s1 * s1)
        if not math.isfinite(s2):
            return math.inf
        s_star = min(max(d_min, s1), s2)
        top = -(d_min**2) / (2.0 * s_star**2) - math.log(s_star)
        bottom = min(-(d_max**2) / (2.0 * s**2) - math.log(s) for s in (s1, s2))
        return top - bottom

    def _mu_update(self, param, prior, sum_x, count, sigma, temperature):
        """Normal prior N(mu0, sigma0²) on μ, data precision count/(Tσ²)."""
        prior_precision = 1.0 / np.asarray(prior["sigma"], dtype=np.float64) ** 2
        data_precision = _reduce(count / sigma**2, param) / temperature
        precision = prior_precision + data_precision
        mean = (
            prior_precision * prior["mu"] + _reduce(sum_x / sigma**2, param) / temperature
        ) / precision
        return {"mu": mean, "sigma": precision**-0.5}


class NormalKnownSigma(_Normal):
    """Normal(μ, σ) with σ a known constant; t(x) = x; conjugate Normal on μ.

    L: see `_Normal` (σ fixed). Statistics: Σ x, Δ₁ = hi − lo per element (2·max|x| when the
    record may change group). Symbolic log-likelihood: Σ_i −(x_i − μ)²/(2σ²) without the
    parameter-free terms (Σ x², log σ and log 2π), i.e. (μ S − N μ²/2)/σ².
    """

    name = "Normal (sigma a constant)"
    conjugate_priors = MappingProxyType({"mu": ("normal", "identity")})

    def accepts(self, parameters):
        return parameters["sigma"].constant is not None and parameters["mu"].covariates is None

    def statistics(self, term):
        return (self._sum_statistic(term),)

    def logp_from_statistics(self, term, values, statistics, totals):
        total = statistics["sum"]
        count = _record_counts(term, total, totals)
        mu = _aligned(term, "mu", values.get("mu"), total.ndim)
        sigma = _aligned(term, "sigma", None, total.ndim)
        return _sum((mu * total - 0.5 * count * mu * mu) / sigma**2)

    def conjugate_update(self, term, target, prior, statistics, totals, temperature, state):
        param = self._conjugate_check(term, target)
        total, count = _sum_and_counts(term, statistics, totals)
        sigma = np.asarray(term.parameters["sigma"].constant, dtype=np.float64)
        return self._mu_update(param, prior, total, count, sigma, temperature)


class NormalFreeSigma(_Normal):
    """Normal(μ, σ) with σ a free variable bounded away from 0 (and from ∞ when σ varies
    with the record): a truncated prior on σ, or on the precision τ passed as ``tau=``.

    t(x) = (x, x²); conjugate Normal on μ given σ, Gamma on τ = 1/σ² given μ (needs the
    prior on τ, ``pm.Normal(..., tau=tau)``). L: see `_Normal`. Statistics: Σ x and Σ x²,
    Δ₁ = (hi − lo) + (max x² − min x²) per element (each doubled to 2·max when the record may
    change group): the sum of the two statistics' sensitivities, an upper bound on the joint
    one. Symbolic log-likelihood: exact, −(S2 − 2μS1 + Nμ²)/(2σ²) − N log σ − (N/2) log 2π.
    """

    name = "Normal (sigma or tau a bounded free variable)"
    conjugate_priors = MappingProxyType(
        {"mu": ("normal", "identity"), "sigma": ("gamma", "inverse_sqrt")}
    )

    def accepts(self, parameters):
        return parameters["sigma"].constant is None and parameters["mu"].covariates is None

    def statistics(self, term):
        first = self._sum_statistic(term)
        second = self._statistic(term, "sum_squares", lambda d: _square_interval(d.lower, d.upper))
        return (first, second)

    def logp_from_statistics(self, term, values, statistics, totals):
        s1, s2 = statistics["sum"], statistics["sum_squares"]
        count = _record_counts(term, s1, totals)
        mu = _aligned(term, "mu", values.get("mu"), s1.ndim)
        sigma = _aligned(term, "sigma", values.get("sigma"), s1.ndim)
        quadratic = s2 - 2.0 * mu * s1 + count * mu * mu
        return _sum(
            -quadratic / (2.0 * sigma**2)
            - count * _log(sigma)
            - 0.5 * count * math.log(2 * math.pi)
        )

    def conjugate_update(self, term, target, prior, statistics, totals, temperature, state):
        param = self._conjugate_check(term, target)
        s1, count = _sum_and_counts(term, statistics, totals)
        s2 = np.asarray(statistics["sum_squares"], dtype=np.float64)
        if target == "mu":
            sigma = _aligned(term, "sigma", np.asarray(state["sigma"]), s1.ndim)
            return self._mu_update(param, prior, s1, count, sigma, temperature)
        mu = _aligned(term, "mu", np.asarray(state["mu"]), s1.ndim)
        quadratic = s2 - 2.0 * mu * s1 + count * mu * mu
        return {
            "alpha": prior["alpha"] + _reduce(count, param) / (2.0 * temperature),
            "beta": prior["beta"] + _reduce(quadratic, param) / (2.0 * temperature),
        }


class NormalLinearRegression(_Normal):
    """Normal(Xw, σ), X private with declared bounds, ‖w‖₂ ≤ R (TruncatedMvNormal), σ known
    or free; conjugate MvNormal on w (given σ) and Gamma on τ = 1/σ² (given w).

    L: (By + Bx·R)²/(2σ_min²) for |y| ≤ By and ‖x‖₂ ≤ Bx (DESIGN.md table; see `_Normal`, μ
    varying), tighter for asymmetric bounds on y. Statistics per record: t(x, y) =
    (x xᵀ, x y[, y²]), released as XᵀX (upper triangle), Xᵀy and, when σ is free, yᵀy.
    Δ₁ ≤ Σ_{j≤k} width(x_j x_k) + Σ_j width(x_j y) [+ width(y²)], the sum of each entry's
    range over the declared box (an upper bound on the joint sup). Symbolic
    log-likelihood: −(yᵀy − 2wᵀXᵀy + wᵀXᵀXw)/(2σ²) − n log σ − (n/2) log 2π, without yᵀy and
    the constants when σ is known.
    """

    name = "Normal linear regression (mu = X @ w, X PrivateData)"
    conjugate_priors = MappingProxyType(
        {"mu": ("mvnormal", "linear"), "sigma": ("gamma", "inverse_sqrt")}
    )

    def accepts(self, parameters):
        return parameters["mu"].covariates is not None

    def _sigma_known(self, term) -> bool:
        return term.parameters["sigma"].constant is not None

    def statistics(self, term):
        self._require_plain(term, allow_linear=True)
        if term.record_shape != () or term.group_by is not None:
            raise UnsupportedModelError(
                f"`{term.node}` ({self.name}): the response must hold one value per record "
                "and the weights must not be indexed by private data."
            )
        covariates = term.parameters["mu"].covariates
        x_ranges = list(
            zip(term.covariate_lower.tolist(), term.covariate_upper.tolist(), strict=True)
        )
        ((domain, _),) = term.domains
        y_range = (domain.lower, domain.upper)
        gram = sum(
            _product_width(x_ranges[j], x_ranges[k])
            if j != k
            else _square_interval(*x_ranges[j])[1] - _square_interval(*x_ranges[j])[0]
            for j in range(len(x_ranges))
            for k in range(j, len(x_ranges))
        )
        cross = sum(_product_width(x_range, y_range) for x_range in x_ranges)
        integer = False
        p = len(x_ranges)
        specs = [
            StatisticSpec(
                name=f"gram({covariates})",
                kind="gram",
                data=(covariates,),
                shape=(p * (p + 1) // 2,),
                integer=integer,
                sensitivity_l1=float(gram),
            ),
            StatisticSpec(
                name=f"cross({covariates}, {term.data})",
                kind="cross",
                data=(covariates, term.data),
                shape=(p,),
                integer=integer,
                sensitivity_l1=float(cross),
            ),
        ]
        if not self._sigma_known(term):
            low, high = _square_interval(*y_range)
            specs.append(
                StatisticSpec(
                    name=f"sum_squares({term.data})",
                    kind="sum_squares",
                    data=(term.data,),
                    shape=(),
                    integer=domain.integer,
                    sensitivity_l1=float(high - low),
                )
            )
        return tuple(specs)

    def _quadratic(self, w, statistics, matmul):
        gram, cross = statistics["gram"], statistics["cross"]
        value = -2.0 * _sum(w * cross) + _sum(w * matmul(gram, w))
        if "sum_squares" in statistics:
            value = value + statistics["sum_squares"]
        return value

    def logp_from_statistics(self, term, values, statistics, totals):
        w = values["mu"]
        tensor = isinstance(w, pt.TensorVariable)
        quadratic = self._quadratic(w, statistics, pt.dot if tensor else np.dot)
        sigma_term = term.parameters["sigma"]
        if sigma_term.constant is not None:
            sigma = float(np.unique(sigma_term.constant)[0])
            return -quadratic / (2.0 * sigma**2)
        sigma = sigma_term.apply_link(values["sigma"])
        return (
            -quadratic / (2.0 * sigma**2)
            - totals * _log(sigma)
            - 0.5 * totals * math.log(2 * math.pi)
        )

    def conjugate_update(self, term, target, prior, statistics, totals, temperature, state):
        self._conjugate_check(term, target)
        gram = np.asarray(statistics["gram"], dtype=np.float64)
        cross = np.asarray(statistics["cross"], dtype=np.float64)
        if target == "mu":
            sigma_term = term.parameters["sigma"]
            sigma = (
                float(np.unique(sigma_term.constant)[0])
                if sigma_term.constant is not None
                else float(sigma_term.apply_link(np.asarray(state["sigma"])))
            )
            prior_precision = np.linalg.inv(np.asarray(prior["cov"], dtype=np.float64))
            precision = prior_precision + gram / (temperature * sigma**2)
            cov = np.linalg.inv(precision)
            mean = cov @ (prior_precision @ prior["mu"] + cross / (temperature * sigma**2))
            return {"mu": mean, "cov": 0.5 * (cov + cov.T)}
        w = np.asarray(state["mu"], dtype=np.float64)
        quadratic = self._quadratic(w, statistics, np.dot)
        return {
            "alpha": prior["alpha"] + totals / (2.0 * temperature),
            "beta": prior["beta"] + quadratic / (2.0 * temperature),
        }


FAMILIES: tuple[LikelihoodFamily, ...] = (
    Bernoulli(),
    Binomial(),
    Categorical(),
    Poisson(),
    Exponential(),
    NormalLinearRegression(),
    NormalKnownSigma(),
    NormalFreeSigma(),
)
"""Every supported family, in the order they are tried."""


def find_family(op, parameters: Mapping[str, ParameterTerm]) -> LikelihoodFamily | None:
    """The first family of `FAMILIES` whose op matches and that accepts the parameters."""
    for family in FAMILIES:
        if isinstance(op, family.rv_op) and family.accepts(parameters):
            return family
    return None
