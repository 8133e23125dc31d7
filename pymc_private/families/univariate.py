"""Likelihood families, one object each: Bernoulli, Binomial, Categorical and Poisson
counts; Exponential, Normal with a known or a free σ (the regressions, whose parameter is a
linear predictor X @ w, are in `pymc_private.families.regression`).

A new family is one new object appended to `pymc_private.families.registry.FAMILIES`, the order in
which `find_family` tries them. What each family knows (its op, support, log-likelihood
range, statistics and their sensitivity, conjugate update and the log-likelihood of its
statistics) is the contract
`pymc_private.families.likelihood.LikelihoodFamily`; an observed node bound to its family is a
`pymc_private.families.likelihood.LikelihoodTerm`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
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

from pymc_private.families.kinds import SUM_SQUARES, expand_totals
from pymc_private.families.likelihood import (
    LikelihoodFamily,
    LikelihoodTerm,
    MultinomialCounts,
    PoissonCounts,
)
from pymc_private.families.statistics import (
    ElementDomain,
    Interval,
    StatisticSpec,
    as_exact,
    entries_to_cells,
    reduce_to_entries,
)
from pymc_private.priors.conjugate import BETA, DIRICHLET, GAMMA, NORMAL

__all__ = [
    "Bernoulli",
    "Binomial",
    "Categorical",
    "DiagonalMinusOuter",
    "Exponential",
    "NormalFreeSigma",
    "NormalKnownSigma",
    "Poisson",
]


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


def _aligned(term: LikelihoodTerm, name: str, value, ndim: int):
    """A parameter (in the op's parameterisation) shaped to broadcast against an
    element-resolution statistic (see `entries_to_cells`)."""
    param = term.parameters[name]
    if param.constant is not None:
        value = param.constant
    return entries_to_cells(param, param.apply_link(value), ndim)


def _like(value, reference):
    """A public float constant in the arithmetic of ``reference``: exact rationals when
    ``reference`` holds exact rationals (`as_exact`), else a float array."""
    value = np.asarray(value, dtype=np.float64)
    return as_exact(value) if np.asarray(reference).dtype == object else value


def _record_counts(term: LikelihoodTerm, statistic, totals):
    """The records behind each entry of an element-resolution statistic: n, or the group
    counts n_g along the group axis of a grouped node (numpy or PyTensor)."""
    return expand_totals(totals, statistic.ndim, term.group_by is not None)


def _sum_and_counts(
    term: LikelihoodTerm, statistics: Mapping[str, np.ndarray], totals
) -> tuple[np.ndarray, np.ndarray]:
    """Σ x and `_record_counts` broadcast to its shape, in the statistics' arithmetic."""
    total = np.asarray(statistics["sum"])
    count = np.broadcast_to(_record_counts(term, total, np.asarray(totals)), total.shape)
    return total, count


@dataclass(frozen=True, eq=False)
class DiagonalMinusOuter:
    """A covariance ``diag(diagonal) − factor factorᵀ`` over the last axis (the multinomial's
    N (diag p − p pᵀ)), kept in that form so that its Normal density costs O(v) per cell
    (Sherman–Morrison) instead of a Cholesky factorisation."""

    diagonal: object
    factor: object

    def dense(self):
        """The matrix itself (numpy or PyTensor)."""
        tensor = isinstance(self.diagonal, pt.TensorVariable)
        size = self.diagonal.shape[-1]
        identity = pt.eye(size) if tensor else np.eye(size)
        outer = self.factor[..., :, None] * self.factor[..., None, :]
        return self.diagonal[..., :, None] * identity - outer

    def tail(self) -> DiagonalMinusOuter:
        """The covariance of all entries but the first."""
        return DiagonalMinusOuter(self.diagonal[..., 1:], self.factor[..., 1:])


def _counts_moments(spec: StatisticSpec, term: LikelihoodTerm, p, counts, totals):
    """``(kinds, observed, mean, cov)`` of released multinomial counts: N p and
    N (diag p − p pᵀ) over the released categories (category 0 dropped when derived)."""
    if spec.derived_first:
        p, counts = p[..., 1:], counts[..., 1:]
    count = _vector(_record_counts(term, _ones(len(spec.shape) - 1), totals))
    sqrt = pt.sqrt if isinstance(p, pt.TensorVariable) else np.sqrt
    cov = DiagonalMinusOuter(count * p, sqrt(count) * p)
    return (("counts",), counts, count * p, cov)


def _ones(ndim: int) -> np.ndarray:
    """A dummy array of ``ndim`` axes, to shape record counts like a statistic."""
    return np.ones((1,) * ndim)


def _vector(x):
    """``x`` with a trailing axis of length 1 (numpy or PyTensor)."""
    if not isinstance(x, pt.TensorVariable):
        x = np.asarray(x)
    return x[..., None]


def _stack(items):
    """Stack on a new last axis (numpy or PyTensor)."""
    if any(isinstance(item, pt.TensorVariable) for item in items):
        return pt.stack(pt.broadcast_arrays(*items), axis=-1)
    return np.stack(np.broadcast_arrays(*items), axis=-1)


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
    conjugate_priors = MappingProxyType({"p": (BETA, "identity")})

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

    def statistic_moments(self, term, values, statistics, totals):
        (spec,) = self.statistics(term)
        p = _aligned(term, "p", values.get("p"), len(spec.shape) - 1)
        return [_counts_moments(spec, term, _stack([1 - p, p]), statistics["counts"], totals)]

    def count_law(self, term, values, totals):
        ndim = term.cell_ndim
        p = _aligned(term, "p", values.get("p"), ndim)
        return MultinomialCounts(_record_counts(term, _ones(ndim), totals), _stack([1 - p, p]))

    def conjugate_contribution(self, term, target, statistics, totals, temperature, state):
        param = self._conjugate_check(term, target)
        counts = np.asarray(statistics["counts"])
        return {
            "alpha": reduce_to_entries(counts[..., 1], param) / temperature,
            "beta": reduce_to_entries(counts[..., 0], param) / temperature,
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
    conjugate_priors = MappingProxyType({"p": (BETA, "identity")})

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

    def statistic_moments(self, term, values, statistics, totals):
        ndim = term.cell_ndim
        p = _aligned(term, "p", values.get("p"), ndim)
        trials = self._trials(term.parameters) * _record_counts(term, _ones(ndim), totals)
        mean, variance = trials * p, trials * p * (1 - p)
        return [(("sum",), _vector(statistics["sum"]), _vector(mean), _vector(_vector(variance)))]

    def count_law(self, term, values, totals):
        ndim = term.cell_ndim
        p = _aligned(term, "p", values.get("p"), ndim)
        m = self._trials(term.parameters)
        trials = m * _record_counts(term, _ones(ndim), totals)
        return MultinomialCounts(trials, _stack([1 - p, p]), trials=m)

    def conjugate_contribution(self, term, target, statistics, totals, temperature, state):
        param = self._conjugate_check(term, target)
        total, count = _sum_and_counts(term, statistics, totals)
        trials = self._trials(term.parameters) * count
        return {
            "alpha": reduce_to_entries(total, param) / temperature,
            "beta": reduce_to_entries(trials - total, param) / temperature,
        }


class Categorical(LikelihoodFamily):
    """Categorical(p) with K categories on {0..K−1}; t(x) = one-hot(x); conjugate Dirichlet.

    L (one element, every p_k ∈ [a, u]): ln(u/a); a truncated Dirichlet with min_prob a has
    u = 1 − (K−1)a, giving ln((1 − (K−1)a)/a) (:ref:`costs-lipschitz-table`;
    Dimitrakakis et al. 2017, Lemma 24 for one node). Statistics: counts of categories
    1..K−1 (category 0 derived), Δ₁ = 1 for K = 2 and 2 for K ≥ 3 per element, 2 when the
    record may change group. Symbolic log-likelihood: exact.
    """

    name = "Categorical"
    rv_op = CategoricalRV
    parameters = ("p",)
    roles = MappingProxyType({"p": "simplex"})
    conjugate_priors = MappingProxyType({"p": (DIRICHLET, "identity")})

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

    def statistic_moments(self, term, values, statistics, totals):
        (spec,) = self.statistics(term)
        p = _aligned(term, "p", values.get("p"), len(spec.shape))
        return [_counts_moments(spec, term, p, statistics["counts"], totals)]

    def count_law(self, term, values, totals):
        p = _aligned(term, "p", values.get("p"), term.cell_ndim + 1)
        return MultinomialCounts(_record_counts(term, _ones(term.cell_ndim), totals), p)

    def conjugate_contribution(self, term, target, statistics, totals, temperature, state):
        param = self._conjugate_check(term, target)
        return {"a": reduce_to_entries(np.asarray(statistics["counts"]), param) / temperature}


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
    conjugate_priors = MappingProxyType({"mu": (GAMMA, "identity")})

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

    def statistic_moments(self, term, values, statistics, totals):
        ndim = term.cell_ndim
        lam = _aligned(term, "mu", values.get("mu"), ndim)
        count = _record_counts(term, _ones(ndim), totals)
        mean, variance = _vector(count * lam), _vector(_vector(count * lam))
        return [(("sum",), _vector(statistics["sum"]), mean, variance)]

    def count_law(self, term, values, totals):
        ndim = term.cell_ndim
        lam = _aligned(term, "mu", values.get("mu"), ndim)
        return PoissonCounts(_record_counts(term, _ones(ndim), totals) * lam, lam)

    def conjugate_contribution(self, term, target, statistics, totals, temperature, state):
        param = self._conjugate_check(term, target)
        total, count = _sum_and_counts(term, statistics, totals)
        return {
            "alpha": reduce_to_entries(total, param) / temperature,
            "beta": reduce_to_entries(count, param) / temperature,
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
    conjugate_priors = MappingProxyType({"scale": (GAMMA, "reciprocal")})

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

    def statistic_moments(self, term, values, statistics, totals):
        ndim = term.cell_ndim
        scale = _aligned(term, "scale", values.get("scale"), ndim)
        count = _record_counts(term, _ones(ndim), totals)
        mean, variance = _vector(count * scale), _vector(_vector(count * scale * scale))
        return [(("sum",), _vector(statistics["sum"]), mean, variance)]

    def conjugate_contribution(self, term, target, statistics, totals, temperature, state):
        param = self._conjugate_check(term, target)
        total, count = _sum_and_counts(term, statistics, totals)
        return {
            "alpha": reduce_to_entries(count, param) / temperature,
            "beta": reduce_to_entries(total, param) / temperature,
        }


def _linear_predictor(parameters) -> bool:
    """Whether the mean is X @ w itself (`pymc_private.families.regression.NormalLinearRegression`);
    a function of it (exp(X @ w)) is an expression of the plain Normal families."""
    mu = parameters["mu"]
    return mu.covariates is not None and mu.link == "linear"


class _Normal(LikelihoodFamily):
    """Shared by the Normal families: the log-likelihood range over a (μ, σ) box.

    ℓ(x; μ, σ) = −(x−μ)²/(2σ²) − log σ − ½ log 2π, x ∈ [lo, hi], μ ∈ [m1, m2], σ ∈ [s1, s2].

    - σ fixed, μ fixed: sup over the box of range_x (x−μ)²/(2σ²), i.e.
      max_{μ∈{m1,m2}} h(μ)/(2 s1²) with h(μ) = max_x (x−μ)² − min_x (x−μ)², which is convex in
      μ (:ref:`costs-lipschitz-table`).
    - σ fixed, μ varying (indexed by private data, or a linear predictor xᵀw with
      |xᵀw| ≤ Bx·R): (dmax² − dmin²)/(2 s1²), dmax and dmin the largest and smallest |x − μ|;
      for a linear regression with |y| ≤ By this is (By + Bx·R)²/(2σ²)
      (:ref:`costs-lipschitz-table`).
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

    def _precision(self, term: LikelihoodTerm, value, reference):
        """1/σ² of the node's ``sigma`` parameter, shaped like ``reference`` and in its
        arithmetic, from its constant or from ``value``, the current value of its free
        variable: τ itself for ``tau=`` (link ``inverse_sqrt``), 1/σ² for σ, λ² for a scale
        ``1/λ``; exact in rational arithmetic."""
        sigma = term.parameters["sigma"]
        if sigma.constant is not None:
            value = _like(sigma.constant, reference)
            return 1 / (value * value)
        value = entries_to_cells(sigma, value, np.ndim(reference))
        if sigma.link == "inverse_sqrt":
            return value
        if sigma.link == "reciprocal":
            return value * value
        return 1 / (value * value)

    @staticmethod
    def _mu_contribution(param, sum_x, count, precision, temperature):
        """Normal prior on μ: data precision count/σ² and weighted mean Σx/σ², over T."""
        return {
            "h": reduce_to_entries(sum_x * precision, param) / temperature,
            "J": reduce_to_entries(count * precision, param) / temperature,
        }


class NormalKnownSigma(_Normal):
    """Normal(μ, σ) with σ a known constant; t(x) = x; conjugate Normal on μ.

    L: see `_Normal` (σ fixed). Statistics: Σ x, Δ₁ = hi − lo per element (2·max|x| when the
    record may change group). Symbolic log-likelihood: Σ_i −(x_i − μ)²/(2σ²) without the
    parameter-free terms (Σ x², log σ and log 2π), i.e. (μ S − N μ²/2)/σ².
    """

    name = "Normal (sigma a constant)"
    conjugate_priors = MappingProxyType({"mu": (NORMAL, "identity")})

    def accepts(self, parameters):
        return parameters["sigma"].constant is not None and not _linear_predictor(parameters)

    def statistics(self, term):
        return (self._sum_statistic(term),)

    def logp_from_statistics(self, term, values, statistics, totals):
        total = statistics["sum"]
        count = _record_counts(term, total, totals)
        mu = _aligned(term, "mu", values.get("mu"), total.ndim)
        sigma = _aligned(term, "sigma", None, total.ndim)
        return _sum((mu * total - 0.5 * count * mu * mu) / sigma**2)

    def statistic_moments(self, term, values, statistics, totals):
        ndim = term.cell_ndim
        mu = _aligned(term, "mu", values.get("mu"), ndim)
        sigma = _aligned(term, "sigma", None, ndim)
        count = _record_counts(term, _ones(ndim), totals)
        mean, variance = _vector(count * mu), _vector(_vector(count * sigma * sigma))
        return [(("sum",), _vector(statistics["sum"]), mean, variance)]

    def conjugate_contribution(self, term, target, statistics, totals, temperature, state):
        param = self._conjugate_check(term, target)
        total, count = _sum_and_counts(term, statistics, totals)
        precision = self._precision(term, None, total)
        return self._mu_contribution(param, total, count, precision, temperature)


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
        {"mu": (NORMAL, "identity"), "sigma": (GAMMA, "inverse_sqrt")}
    )

    def accepts(self, parameters):
        return parameters["sigma"].constant is None and not _linear_predictor(parameters)

    def statistics(self, term):
        first = self._sum_statistic(term)
        second = self._statistic(term, SUM_SQUARES)
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

    def statistic_moments(self, term, values, statistics, totals):
        """(Σx, Σx²) per element: mean N(μ, σ² + μ²); covariance N[[σ², 2μσ²], [2μσ²,
        2σ⁴ + 4μ²σ²]] (the moments of x and x² for x ~ Normal(μ, σ))."""
        ndim = term.cell_ndim
        mu = _aligned(term, "mu", values.get("mu"), ndim)
        sigma = _aligned(term, "sigma", values.get("sigma"), ndim)
        count = _record_counts(term, _ones(ndim), totals)
        var = sigma * sigma
        mean = _stack([count * mu, count * (var + mu * mu)])
        cross = count * 2 * mu * var
        cov = _stack(
            [
                _stack([count * var, cross]),
                _stack([cross, count * (2 * var * var + 4 * mu * mu * var)]),
            ]
        )
        observed = _stack([statistics["sum"], statistics["sum_squares"]])
        return [(("sum", "sum_squares"), observed, mean, cov)]

    def conjugate_contribution(self, term, target, statistics, totals, temperature, state):
        param = self._conjugate_check(term, target)
        s1, count = _sum_and_counts(term, statistics, totals)
        if target == "mu":
            precision = self._precision(term, np.asarray(state["sigma"]), s1)
            return self._mu_contribution(param, s1, count, precision, temperature)
        mu_term = term.parameters["mu"]
        if mu_term.constant is not None:  # a known mean: no state to read
            mu = _like(mu_term.constant, s1)
        else:
            mu = entries_to_cells(mu_term, np.asarray(state["mu"]), s1.ndim)
        quadratic = np.asarray(statistics["sum_squares"]) - 2 * mu * s1 + count * mu * mu
        return {
            "alpha": reduce_to_entries(count, param) / (2 * temperature),
            "beta": reduce_to_entries(quadratic, param) / (2 * temperature),
        }
