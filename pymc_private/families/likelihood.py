"""The likelihood-family contract: what the privacy analysis and the private samplers know
about each family (`LikelihoodFamily`), and one observed node bound to its family with
everything public the family needs (`LikelihoodTerm`).

The families are one object each in `pymc_private.families.univariate`. Each knows

- the PyMC random-variable op of its observed node and the names of its parameters (in the
  op's parameterisation, as returned by ``op.dist_params``);
- its sample space (``support``), intersected by the analysis with the declared bounds;
- its record log-likelihood range over a parameter box (:ref:`costs-lipschitz-table`):
  ``sup_θ sup_{x,x'} |ℓ(x;θ) − ℓ(x';θ)|`` for one record element;
- its per-record statistic t(x), the sufficient statistics s(D) = Σ_i t(x_i) (grouped by a
  private index where the parameter is indexed by one) and their L1 sensitivity Δ₁ over one
  replaced record (Zhang et al. 2016, Lemma 1; Foulds et al. 2016, eq. 16);
- its conjugate prior and the tempered conjugate update (likelihood raised to 1/T,
  T ≥ 1: Dimitrakakis et al. 2017, §4; Foulds et al. 2016, §4.1);
- its log-likelihood written in terms of the statistics alone, for a model that sees only
  privatised statistics.

The statistics, the data grid and the parameter terms a family reads are the vocabulary of
`pymc_private.families.statistics`, which also defines what a record's *elements* and a *varying*
parameter are.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from pymc_private.errors import UnsupportedModelError
from pymc_private.families.kinds import COUNTS, SUM, StatisticKind
from pymc_private.families.statistics import (
    DataGrid,
    ElementDomain,
    ParameterTerm,
    StatisticSpec,
    counts_sensitivity,
    grid_ranges,
    group_counts_statistic,
    integer_statistic,
    read_only,
    square_range,
)
from pymc_private.priors.conjugate import ConjugateFamily

__all__ = ["LikelihoodFamily", "LikelihoodTerm", "MultinomialCounts", "PoissonCounts"]


@dataclass(frozen=True)
class MultinomialCounts:
    """The exact law of a count statistic given θ: each cell holds the counts of K categories
    (last axis) in ``totals`` independent trials with ``probabilities``.

    ``trials`` > 1 marks a Binomial sum Σx over records of that many trials each: the
    statistic is the count of category 1 (successes) of the cell's ``trials``·T trials, whose
    totals are given here already multiplied; category 0 is never released.
    """

    totals: np.ndarray
    probabilities: np.ndarray
    trials: int = 1


@dataclass(frozen=True)
class PoissonCounts:
    """The exact law of an integer sum of Poisson records given θ: Poisson(``means``), with
    ``rates`` the per-record means (λ, broadcast like ``means``)."""

    means: np.ndarray
    rates: np.ndarray


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
        The index that selects this node's parameters per record (``y_obs`` in
        ``theta[y_obs]``), the number of groups and, for a private index, its domain.
    group_values
        The values of a public index (one per record), None for a private one. A public
        index is not part of the record: neighbours share it, so a record cannot change
        group, the group sizes n_g are public and nothing about them is released.
    n
        The public record count.
    grid, covariate_grid
        The public `DataGrid` of the observed data and of the covariates, on which their
        sufficient statistics are computed exactly.
    covariate_gram
        XᵀX of public covariates (`ParameterTerm.covariate_values`) on their grid, in natural
        units from the exact integer MᵀM: public, so not released, and read by a regression's
        posterior in place of a released Gram matrix. None for `PrivateData` covariates.
    covariate_rows
        The public covariates on their grid, q·M (one row per record, read-only): what the
        released Xᵀy is computed from, gridded once. None for `PrivateData` covariates.
    per_record_constants
        The constant (public) parameters that take a value per record: the node then has no
        sufficient statistics.
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
    group_values: np.ndarray | None = None
    grid: DataGrid | None = None
    covariate_grid: DataGrid | None = None
    covariate_gram: np.ndarray | None = None
    covariate_rows: np.ndarray | None = None
    per_record_constants: tuple[str, ...] = ()

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

    def parameters_at(self, values: Mapping[str, object]) -> dict[str, object]:
        """The node's non-constant parameters, by the family's names, at the free variables'
        ``values`` (by name): what `LikelihoodFamily.statistic_moments` and ``count_law``
        read; the varying intercepts of a linear predictor (`ParameterTerm.intercept`) under
        ``"intercept"``."""
        found = {
            name: values[p.free_variable]
            for name, p in self.parameters.items()
            if p.constant is None
        }
        for p in self.parameters.values():
            if p.intercept is not None:
                found["intercept"] = values[p.intercept]
        return found

    @property
    def cell_ndim(self) -> int:
        """Axes of the node's statistics at element resolution: the group axis (grouped),
        then the record's (a count's category axis comes after them)."""
        return (1 if self.group_by is not None else 0) + len(self.record_shape)

    def public_totals(self):
        """The records behind each group when that is public: n ungrouped, the group sizes
        n_g of a public index; None for a private index (`totals_statistic` releases them)."""
        if self.group_by is None:
            return self.n
        if self.group_values is None:
            return None
        return np.bincount(self.group_values, minlength=self.n_groups)

    def totals_statistic(self) -> StatisticSpec | None:
        """The group sizes n_g a grouped node's statistics are completed with, released
        (None when they are public: the total n, or a public index's `public_totals`)."""
        if self.group_by is None or self.group_values is not None:
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
    conjugate_priors: Mapping[str, tuple[ConjugateFamily, str]]
    linear_parameter: str = "mu"
    """The parameter a regression's linear predictor X @ w enters,"""
    linear_link: str = "linear"
    """through this link (``"logistic"``: sigmoid(X @ w); ``"log"``: exp(X @ w))."""

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
    def conjugate_contribution(
        self,
        term: LikelihoodTerm,
        target: str,
        statistics: Mapping[str, np.ndarray],
        totals,
        temperature,
        state: Mapping[str, np.ndarray],
    ) -> dict[str, np.ndarray]:
        """What this node adds to the conjugate posterior of ``target``'s free variable under
        the tempered likelihood, in the conjugate family's additive coordinates.

        Conjugate updates add: beta (alpha, beta), gamma (alpha, beta = rate) and dirichlet
        (a) add pseudo-counts; normal and mvnormal add to the precision ``J`` and to the
        precision-weighted mean ``h = J·mean`` (`pymc_private.priors.conjugate.ConjugateFamily`
        converts). Tempering raises the likelihood to 1/T (T ≥ 1), which divides every
        contribution by T. ``state`` holds the current values of the other parameters' free
        variables (the Gibbs conditional). The arithmetic is +, −, ×, / only, so the same code
        gives floats, exact rationals (object arrays of `fractions.Fraction` with a Fraction
        temperature, for the exact private samplers) or interval bounds. Raises
        `UnsupportedModelError` when ``target`` has no conjugate update.
        """

    @abstractmethod
    def statistic_moments(self, term: LikelihoodTerm, values, statistics, totals) -> list:
        """The mean and covariance of the node's released statistics given its parameters,
        for the noise-aware posterior (`pymc_private.noise_aware.likelihood`).

        A list of ``(kinds, observed, mean, cov)``: the statistics ``kinds`` (one, or
        several that are correlated, stacked in that order) have, per cell, a vector of ``v``
        entries on the last axis (a count's released categories, (Σx, Σx²), or (Xᵀy, yᵀy)):
        ``observed`` is that vector as released (assembled from ``statistics``), ``mean`` its
        expectation and ``cov`` its covariance over the last two axes (or a
        `pymc_private.families.univariate.DiagonalMinusOuter` for counts): the exact first and
        second moments of a sum of n independent records (the central-limit approximation of
        Bernstein & Sheldon 2018 uses them as a Normal). ``values``, ``statistics`` (full,
        natural units) and ``totals`` (n, or the group sizes) as in `logp_from_statistics`;
        numpy or PyTensor. A regression's covariates have no model: their released Gram
        matrix is plugged in, and the regressions take ``gram_variance=`` (the variance of its
        noise per cell), whose covariance through the mean they add.
        """

    def count_law(
        self, term: LikelihoodTerm, values, totals
    ) -> MultinomialCounts | PoissonCounts | None:
        """The exact law of the node's released statistic given its parameters, as latent
        integer counts (`pymc_private.noise_aware.latent`), for the data-augmentation sampler: per
        element-resolution cell, `MultinomialCounts` of the categories (a Binomial sum as the
        successes of its trials) or a `PoissonCounts` sum. ``values`` (numpy, with leading
        batch axes) and ``totals`` (n, or group sizes with the same batch axes) as in
        `statistic_moments`. None (the default) for a node whose statistics are not integer
        counts: its noise-aware likelihood is the normal law of `statistic_moments`."""
        return None

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
        """The conjugate posterior of ``target``'s free variable given this node alone, in
        the family's usual parameters (beta: alpha, beta; gamma: alpha, beta as a rate;
        dirichlet: a; normal: mu, sigma; mvnormal: mu, cov): ``prior`` plus
        `conjugate_contribution`."""
        family = self.conjugate_priors[target][0]
        contribution = self.conjugate_contribution(
            term, target, statistics, totals, temperature, state
        )
        additive = family.additive(prior)
        return family.usual({k: additive[k] + contribution[k] for k in additive})

    def _require_plain(self, term: LikelihoodTerm, *, allow_linear: bool = False) -> None:
        for param in term.parameters.values():
            if param.constant is not None:
                continue
            predictor = allow_linear and param.name == self.linear_parameter
            if (
                param.free_variable is None
                or (param.covariates is not None) != predictor
                or (predictor and param.link != self.linear_link)
            ):
                raise UnsupportedModelError(
                    f"`{term.node}` ({self.name}): parameter `{param.name}` is an expression, "
                    "so the likelihood does not reduce to sufficient statistics. Forms that "
                    "do: a free variable (theta), one indexed by a group index (theta[g], g a "
                    "PrivateData, a numpy array or pm.Data; a public index is not released), "
                    "and for a Normal mean the linear predictor X_obs @ w (X_obs PrivateData) "
                    "with w = pmp.TruncatedMvNormal(name, mu, cov, radius=R), and varying "
                    "intercepts alpha[g] + X_obs @ w by a public index g (pm.Data or a numpy "
                    "array); for one intercept, add a column of ones to X_obs with bounds "
                    "(1, 1) in that column instead of writing alpha + X_obs @ w; the same "
                    "predictor under a logistic link (pm.Bernoulli(logit_p=X_obs @ w)) or a "
                    "log link (pm.Poisson(pm.math.exp(X_obs @ w))). Other expressions: "
                    "sample on raw data on the pay-per-draw route, pmp.PrivateMetropolis "
                    "(with clip=c when the likelihood is unbounded)."
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
                f"{family.name} prior entering through the {link} link for a conjugate update; "
                f"it enters through {param.link!r}."
            )
        return param

    def _statistic(self, term: LikelihoodTerm, kind: StatisticKind) -> StatisticSpec:
        """Σ m (`SUM`) or Σ m² (`SUM_SQUARES`) per element of ``term``'s data, m the grid
        integers of its `DataGrid`."""
        grouped = term.group_by is not None
        ranges = grid_ranges(term.grid)
        if kind.power == 2:
            ranges = [square_range(*pair) for pair in ranges]
        unit = term.grid.quantum**kind.power
        suffix = f" | {term.group_by}" if grouped else ""
        return integer_statistic(
            f"{kind}({term.data}{suffix})",
            kind,
            (term.data,),
            ((term.n_groups,) if grouped else ()) + term.record_shape,
            unit,
            ranges,
            term.record_shape,
            term.n,
            grouped=term.group_can_change,
            grids=(term.grid,),
            group_by=term.group_by,
            group_values=term.group_values,
            n_groups=term.n_groups,
        )

    def _sum_statistic(self, term: LikelihoodTerm) -> StatisticSpec:
        """Σ x of a node whose parameters are plain free variables, t(x) = x ∈ [lo, hi]."""
        self._require_plain(term)
        return self._statistic(term, SUM)

    def _counts(self, term: LikelihoodTerm, n_categories: int) -> StatisticSpec:
        grouped = term.group_by is not None
        derived = not (term.group_can_change or n_categories >= 3)
        sensitivity = sum(
            count * counts_sensitivity(domain, grouped=term.group_can_change, derived=derived)
            for domain, count in term.domains
        )
        suffix = f" | {term.group_by}" if grouped else ""
        cells = (*term.record_shape, n_categories - 1 if derived else n_categories)
        return StatisticSpec(
            name=f"counts({term.data}{suffix})",
            kind=COUNTS,
            data=(term.data,),
            shape=((term.n_groups,) if grouped else ()) + cells,
            unit=1.0,
            sensitivity=int(sensitivity),
            record_lower=read_only(np.zeros(cells, dtype=np.int64)),
            record_upper=read_only(np.ones(cells, dtype=np.int64)),
            grids=(term.grid,),
            group_by=term.group_by,
            group_values=term.group_values,
            n_groups=term.n_groups,
            n_categories=n_categories,
            derived_first=derived,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
