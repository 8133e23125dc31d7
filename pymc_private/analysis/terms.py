"""The observed-node reader: each observed node of a model as the `LikelihoodTerm` its
likelihood family is handed.

`TermReader.term` finds the node's family (`pymc_private.families.registry`), its `PrivateData` and
the public domain of one record's elements within the family's support, the grids on which
the data and covariates enter sufficient statistics, and each parameter's bound from the
interval walker it extends (`pymc_private.analysis.intervals.GraphReader`). A record Lipschitz
constant that is infinite over the prior support is refused with `UnboundedSensitivityError`
naming the prior or the data to bound and how; a likelihood no family reads, or data that is
not `PrivateData`, with `UnsupportedModelError`.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pymc as pm
from pymc.distributions.mixture import MixtureRV
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant, Variable

from pymc_private.analysis.intervals import GraphReader
from pymc_private.analysis.leak_guard import pymc_log_density, strip_casts
from pymc_private.data.declaration import PrivateDataSpec, check_integer_values
from pymc_private.errors import UnboundedSensitivityError, UnsupportedModelError, with_article
from pymc_private.families.likelihood import LikelihoodTerm
from pymc_private.families.registry import FAMILIES, find_family
from pymc_private.families.statistics import (
    DataGrid,
    ElementDomain,
    Interval,
    ParameterTerm,
    data_grid,
    read_only,
)
from pymc_private.priors.support import public_shape

__all__ = ["TermReader"]


_SUGGESTIONS = {
    "probability": "[a, 1 − a] with 0 < a < 1/2: pmp.TruncatedBeta({name!r}, alpha, beta, "
    "lower=a, upper=1 - a)",
    "simplex": "every entry ≥ a > 0: pmp.TruncatedDirichlet({name!r}, a=..., min_prob=a)",
    "rate": "[c1, c2] with 0 < c1 < c2 < ∞: pmp.TruncatedGamma({name!r}, alpha, beta, "
    "lower=c1, upper=c2)",
    "scale": "[s1, s2] with 0 < s1 < s2 < ∞. The conjugate form, which every route runs "
    "(pmp.PrivateGibbs, pmp.privatize, pmp.PrivateMetropolis), is a precision: "
    "tau = pmp.TruncatedGamma('tau', alpha, beta, lower=1/s2**2, upper=1/s1**2) and "
    "`tau=tau` in the likelihood instead of `sigma=`; the scale itself, "
    "pmp.TruncatedGamma({name!r}, alpha, beta, lower=s1, upper=s2), is not conjugate (use "
    "pmp.PrivateMetropolis, or NUTS after pmp.privatize)",
    "location": "[m1, m2]: pmp.TruncatedNormal({name!r}, mu, sigma, lower=m1, upper=m2)",
    "weights": "the ball ‖w‖₂ ≤ R: pmp.TruncatedMvNormal({name!r}, mu, cov, radius=R)",
}
_EXPONENTIAL_SUGGESTION = (
    "[c1, c2] with 0 < c1 < c2 < ∞: pmp.TruncatedExponential({name!r}, lam, lower=c1, upper=c2)"
)
_PRIOR_ROLES = {
    "beta": "probability",
    "uniform": "probability",
    "dirichlet": "simplex",
    "gamma": "rate",
    "exponential": "rate",
    "inverse_gamma": "scale",
    "halfnormal": "scale",
    "lognormal": "scale",
    "mvnormal": "weights",
}


class TermReader(GraphReader):
    """Reads observed nodes into `LikelihoodTerm`; ``read_values=False`` leaves the check
    that float data of an integer family hold integers to the release."""

    def __init__(
        self, model: pm.Model, specs: dict[str, PrivateDataSpec], *, read_values: bool = True
    ) -> None:
        super().__init__(model, specs)
        self.read_values = read_values

    def term(self, observed: Variable) -> LikelihoodTerm:
        self.node = observed.name
        spec = self._observed_data(observed)
        self.n = spec.n
        op = observed.owner.op
        # A family bounds PyMC's own log-density of its op; a user's (a pm.CustomDist, a
        # logp registered for a subclass) is another function, which no family describes.
        candidates = [
            family
            for family in FAMILIES
            if isinstance(op, family.rv_op) and pymc_log_density(observed, self.model)
        ]
        if isinstance(op, MixtureRV):
            raise UnsupportedModelError(
                f"`{self.node}` is a mixture: its record log-likelihood log Σ_k w_k p_k(x) "
                "has no fixed-size sufficient statistics (so no pay-once route and no "
                "conjugate Gibbs), and the analysis does not bound its L."
            )
        if not candidates:
            raise self._unknown_family(f"{with_article(type(op).__name__)} likelihood")
        names = candidates[0].parameters
        inputs = op.dist_params(observed.owner)
        parameters = {
            name: self._parameter(name, expr) for name, expr in zip(names, inputs, strict=True)
        }
        # A constant whose batch axes reach the record axis with more than one entry takes
        # a value per record: sufficient statistics, sums over records, do not hold then.
        data_batch = observed.ndim - op.ndim_supp
        per_record = tuple(
            name
            for (name, param), core in zip(parameters.items(), op.ndims_params, strict=True)
            if param.constant is not None
            and data_batch >= 1
            and np.ndim(param.constant) - core == data_batch
            and np.shape(param.constant)[0] != 1
        )
        family = find_family(op, parameters)
        if family is None:
            raise self._unknown_family(f"this form of {candidates[0].name.split()[0]}")
        support = family.support(parameters)
        domains = self._domains(spec, family, support)
        groups = {p.group_by for p in parameters.values() if p.group_by is not None}
        group_by = n_groups = group_domain = group_values = None
        if len(groups) == 1:
            (group_by,) = groups
            grouped = next(p for p in parameters.values() if p.group_by == group_by)
            n_groups = grouped.n_intercepts or grouped.shape[0]
            group_values = grouped.group_values
            if group_values is None:
                index = self.specs[group_by]
                group_domain = ElementDomain(float(index.lower), float(index.upper), True)
        linear = [p for p in parameters.values() if p.covariates is not None]
        covariate_grid = covariate_gram = covariate_rows = None
        if linear and linear[0].covariate_values is not None:
            covariate_grid = _public_grid(linear[0].covariate_values, spec.n)
            m = covariate_grid.quantize(linear[0].covariate_values)
            covariate_gram = read_only((m.T @ m).astype(np.float64) * covariate_grid.quantum**2)
            covariate_rows = read_only(m.astype(np.float64) * covariate_grid.quantum)
        elif linear:
            covariate_grid = _grid(self.specs[linear[0].covariates])
        term = LikelihoodTerm(
            node=observed.name,
            family=family,
            data=spec.name,
            record_shape=spec.record_shape,
            domains=domains,
            parameters=parameters,
            n=spec.n,
            group_by=group_by,
            n_groups=n_groups,
            group_domain=group_domain,
            group_values=group_values,
            # Float data of an integer family hold integers (checked in `_domains`).
            grid=_grid(spec, integer=spec.integer or support.integer),
            covariate_grid=covariate_grid,
            covariate_gram=covariate_gram,
            covariate_rows=covariate_rows,
            per_record_constants=per_record,
        )
        if not math.isfinite(term.lipschitz()):
            raise self._unbounded(term)
        return term

    def _observed_data(self, observed: Variable) -> PrivateDataSpec:
        value = strip_casts(self.model.rvs_to_values[observed])
        if isinstance(value, SharedVariable) and value.name in self.specs:
            return self.specs[value.name]
        if isinstance(value, Constant):
            what = "a raw array"
        elif isinstance(value, SharedVariable):
            what = f"pm.Data `{value.name}`, which is not PrivateData"
        else:
            what = "a computed expression"
        lagged = (
            " For a lagged series (an AR(1) observing x[1:] given x[:-1]), make each "
            "(previous, next) pair a record: x_prev = pmp.PrivateData(name, x[:-1, None], "
            "bounds=...) and x_next = pmp.PrivateData(name, x[1:], bounds=...), with the mean "
            "x_prev @ rho (a linear regression). A series of T values then makes T − 1 "
            "records: when one person's series is what must be protected, pass the person "
            "of each pair and their number to both, unit=person_of_pair, max_records=T − 1, "
            "and the ledger charges and states ε per person ((T − 1)·ε for the Laplace "
            "route); without them ε protects one pair, and one value, sitting in two pairs, "
            "is protected as two records are (group privacy)."
            if what == "a computed expression"
            else ""
        )
        raise UnsupportedModelError(
            f"`{self.node}` observes {what}. Next to PrivateData every observed array is part "
            f"of the private records: declare it with pmp.PrivateData(name, value, "
            f"bounds=(lower, upper)) and pass that variable itself as `observed=`.{lagged}"
        )

    def _domains(
        self, spec: PrivateDataSpec, family, support: ElementDomain
    ) -> tuple[tuple[ElementDomain, int], ...]:
        if support.integer and not spec.integer and self.read_values:
            check_integer_values(self.model, spec, f"{family.name} `{self.node}`")
        outside = (spec.lower < support.lower) | (spec.upper > support.upper)
        if outside.any():
            column = tuple(int(i) for i in np.argwhere(outside)[0]) if outside.ndim else ()
            where = f" at column {column[0] if len(column) == 1 else column}" if column else ""
            lo = f"{support.lower:g}"
            hi = f"{support.upper:g}" if math.isfinite(support.upper) else "B"
            raise UnboundedSensitivityError(
                f"The declared bounds of PrivateData `{spec.name}`{where} exceed the support "
                f"[{support.lower:g}, {support.upper:g}] of {family.name} `{self.node}`, so "
                f"its log-likelihood is unbounded over the declared domain: declare bounds "
                f"within the support, e.g. bounds=({lo}, {hi})"
                + (" with a finite B you know from public information." if hi == "B" else ".")
            )
        integer = support.integer or spec.integer
        return tuple(
            (ElementDomain(lo, hi, integer), count) for lo, hi, count in spec.element_bounds()
        )

    def _parameter(self, name: str, expression: Variable) -> ParameterTerm:
        bound = self.bound(expression)
        shape = bound.shape
        if shape is None:
            shape = public_shape(expression)
        return ParameterTerm(
            name=name,
            interval=bound.interval,
            shape=shape,
            free_variables=bound.free,
            varies_with_record=bool(bound.private),
            constant=bound.constant,
            free_variable=bound.free_variable,
            link=bound.link,
            group_by=bound.group_by,
            group_values=bound.group_values,
            covariates=bound.covariates,
            covariate_values=bound.covariate_values,
            radius=bound.radius,
            prior_family=bound.prior_family,
            intercept=bound.intercept,
            n_intercepts=bound.n_intercepts,
        )

    # -- errors ------------------------------------------------------------------------

    def _unknown_family(self, what: str) -> UnsupportedModelError:
        supported = "; ".join(family.name for family in FAMILIES)
        return UnsupportedModelError(
            f"`{self.node}` is {what}, which the privacy analysis does not support. Supported "
            f"likelihoods: {supported}."
        )

    def _unbounded(self, term: LikelihoodTerm) -> UnboundedSensitivityError:
        culprits = []
        for name, param in term.parameters.items():
            if param.constant is not None:
                continue
            tame = dict(term.parameters)
            tame[name] = replace(
                param, interval=_interior_point(param.interval), varies_with_record=False
            )
            finite = all(
                math.isfinite(term.family.log_likelihood_range(tame, domain))
                for domain, _ in term.domains
            )
            if finite:
                culprits.append(param)
        if not culprits:
            culprits = [p for p in term.parameters.values() if p.constant is None]
        fixes = []
        for param in culprits:
            for variable in param.free_variables or ():
                fixes.append(self._fix(term, param, variable))
        if not fixes:
            fixes = [f"bound parameter `{p.name}` with a truncated prior" for p in culprits]
        return UnboundedSensitivityError(
            f"The record Lipschitz constant of `{term.node}` ({term.family.name}) is infinite "
            f"over the prior support: " + "; ".join(fixes) + "."
        )

    def _fix(self, term: LikelihoodTerm, param: ParameterTerm, variable: str) -> str:
        support = self.supports.get(variable)
        family = getattr(support, "family", None)
        if param.link == "linear" or family == "mvnormal" or variable in self.weights:
            role = "weights"  # a ball is cheaper than a box: ‖x‖₂R ≤ ‖x‖₁‖w‖∞
        elif param.free_variable == variable:
            role = term.family.roles[param.name]
        else:
            role = _PRIOR_ROLES.get(family, "location")
        template = _SUGGESTIONS[role]
        if role == "rate" and family == "exponential":
            template = _EXPONENTIAL_SUGGESTION
        interval = param.interval
        return (
            f"`{variable}` (prior {family}) lets `{param.name}` range over "
            f"[{interval.lower:g}, {interval.upper:g}]; truncate `{variable}` to "
            + template.format(name=variable)
        )


def _grid(spec: PrivateDataSpec, *, integer: bool | None = None) -> DataGrid:
    """The public grid of a `PrivateData` array (`pymc_private.families.statistics.data_grid`):
    step 1
    for integer data, and for float data known to hold integers (``integer``)."""
    return data_grid(
        spec.lower, spec.upper, spec.n, integer=spec.integer if integer is None else integer
    )


def _public_grid(values: np.ndarray, n: int) -> DataGrid:
    """The grid of public covariates (one row per record): that of `_grid`, with each
    column's smallest and largest value as its bounds (public, so reading them leaks
    nothing), so that every row lies on the grid's range and its products with the response
    are exact integers. One step serves every column, so a column far smaller than the
    widest could round to a constant: that is refused (rescale the columns)."""
    integer = values.dtype.kind in "iu" or bool(np.all(values == np.rint(values)))
    grid = data_grid(values.min(axis=0), values.max(axis=0), n, integer=integer)
    rows = grid.quantize(values).reshape(len(values), -1)
    flat = values.reshape(len(values), -1)
    collapsed = np.flatnonzero((np.ptp(rows, axis=0) == 0) & (np.ptp(flat, axis=0) > 0))
    if collapsed.size:
        raise UnsupportedModelError(
            f"The public covariates' column {int(collapsed[0])} varies, but on their shared grid "
            f"(step {grid.quantum:g}, set by the widest column) it rounds to one value and "
            "would drop out of the release: rescale the columns to comparable ranges."
        )
    return grid


def _interior_point(interval: Interval) -> Interval:
    """A finite point of an interval, used to test whether a parameter makes L infinite."""
    low, high = interval.lower, interval.upper
    if math.isfinite(low) and math.isfinite(high):
        point = 0.5 * (low + high)
    elif math.isfinite(low):
        point = low + 1.0
    elif math.isfinite(high):
        point = high - 1.0
    else:
        point = 0.0
    return Interval(point, point)
