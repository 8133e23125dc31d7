"""The planner: what a pay-once release at ε will cost in accuracy, before any data is read.

`plan` answers from public quantities only: n, the declared bounds, the priors and the release
plan `pmp.privatize` would run (`pymc_private.pay_once.plans.chosen_plan`, whose `noise_laws`
are the noise it draws; no second noise formula). The analysis is built from the declarations
(`pymc_private.analysis.core.declared_analysis`): no value of any `PrivateData` is read.

The prediction is the Gaussian (Laplace-approximation) structure of the noise-aware posterior
(`pymc_private.noise_aware.likelihood`; Bernstein & Sheldon 2018). The released statistics are
s̃ = s + Z with s ~ Normal(m(θ), V(θ)) (`LikelihoodFamily.statistic_moments`, the exact first
two moments of a sum of n records) and Z of the plan's law, so s̃ ~ Normal(m(θ), C(θ)),
C = V + Σ_Z (a Laplace cell counted by its variance 2b², the variance-matching Normal the
noise-aware likelihood uses for vectors). At a point θ₀ its Fisher information is

    I_ab = Σ_cells ∂_a mᵀ C⁻¹ ∂_b m + ½ tr(C⁻¹ ∂_a C C⁻¹ ∂_b C)

(derivatives by central differences of the same moments), and the posterior covariance is
predicted as (I + P)⁻¹, P the precision of the prior's Normal approximation (its covariance
from prior draws). Without noise (Σ_Z = 0) the same formula gives the posterior of the raw
data; the ratio of the two standard deviations is the inflation privacy costs.

Where the moments need what only the data knows, the planner states an assumption: the group
sizes of a private index are their expectation at θ₀ (from the node that observes the index,
else n split evenly), their own noise left out of the grouped node (second order); the
covariates of a regression have per-record second moment E[x xᵀ] from the user
(``covariate_moment=``), else independent and uniform on their declared bounds.

The inverse (`PrivacyPlan.epsilon_for`, ``plan(model, target_sd_inflation=...)``) solves for ε
on a log scale (Brent's method) over the same prediction, which decreases as ε grows, and
returns the first ε within 0.5% that meets the target.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pymc as pm
from pymc.distributions.shape_utils import change_dist_size
from scipy.linalg import block_diag
from scipy.optimize import brentq, minimize

from pymc_private.analysis.core import PrivacyAnalysis, declared_analysis
from pymc_private.data.declaration import records_per_person
from pymc_private.dp.checks import checked_delta, checked_epsilon
from pymc_private.dp.ledger import per_record_epsilon
from pymc_private.dp.noise import NoiseLaw
from pymc_private.errors import InvalidPrivacyParameterError, UnsupportedModelError
from pymc_private.families.kinds import COUNTS, GRAM
from pymc_private.families.statistics import complete_statistic
from pymc_private.families.univariate import DiagonalMinusOuter
from pymc_private.noise_aware.likelihood import _vector_width
from pymc_private.pay_once.plans import CellsPlan, checked_mechanism, chosen_plan
from pymc_private.planning.plan import ParameterSpread, PrivacyPlan, StatisticNoise
from pymc_private.priors.density import support_centre
from pymc_private.priors.support import parameter_support

__all__ = ["plan"]

# Draws of the prior for its Normal approximation (fixed seed: the plan is reproducible).
_PRIOR_DRAWS = 20_000
# Keeps covariances of cells that can be empty strictly positive (as the noise-aware model).
_VARIANCE_FLOOR = 1e-9
# The Gram noise (sd over the expected diagonal) above which the prediction is optimistic
# (at 5% it held within 3%, at 10% the realised sd was 11% above it).
_GRAM_NOISE_SMALL = 0.08
# The ε searched by the inverse, and the relative precision of its answer.
_EPSILON_RANGE = (1e-4, 1e4)
_EPSILON_TOLERANCE = 5e-3


# A parameter entry whose predicted private posterior sd is at least this share of its
# prior's, and at least _WEAK_INFLATION times the raw-data posterior's, is barely informed by
# the release (`Forecast`).
WEAK = 0.5
_WEAK_INFLATION = 2.0
# The accuracy `Forecast.warning` quotes the ε for: posterior sd within 1.5× the raw data's.
_TARGET_INFLATION = 1.5
# The most noised sums whose budget split is optimised (a Normal's Σx and Σx²); beyond, the
# default split.
_SPLIT_MOST = 4
# The largest ratio of two statistics' weights, e^12: beyond it a share underflows.
_SPLIT_RANGE = 12.0
# Points per relative log weight in the split's first, coarse search.
_SPLIT_GRID = 13
# The least share of the budget a statistic keeps, as a fraction of its default share: its
# noise at most e³ ≈ 20 times the default's (a noise scale far beyond it in grid steps would
# not fit the int64 arithmetic of the release).
_SPLIT_FLOOR = math.exp(-3.0)


def plan(
    model: pm.Model | None = None,
    epsilon: float | None = None,
    *,
    delta: float = 0.0,
    mechanism: str = "auto",
    at: Mapping[str, object] | None = None,
    covariate_moment: Mapping[str, object] | None = None,
    target_sd_inflation: float | None = None,
    target_sd: float | Mapping[str, float] | None = None,
) -> PrivacyPlan:
    """Predict, before any data is read, the posterior sd `pmp.privatize` will give at ε.

    For every parameter entry: the posterior standard deviation with and without the
    release's noise (module docstring: the Fisher information of the released statistics'
    Normal law at a point θ₀, plus the prior's precision); for every noised statistic: its
    noise against its own sampling spread. With ``target_sd_inflation`` or ``target_sd``
    instead of ``epsilon``, the smallest ε that meets the target is found first
    (`PrivacyPlan.epsilon_for`) and the plan is at that ε.

    Nothing is read from the data: n, the declared bounds, the priors and the noise scales of
    the release plan `pmp.privatize` would run (`release_plan.chosen_plan`) are public. No
    ε is spent and the ledger is not touched.

    Parameters
    ----------
    model
        A model `pmp.privatize` accepts (default: the model on the context stack).
    epsilon
        The ε of the planned release: finite and > 0. Leave out to solve for it from a
        target.
    delta
        The δ of the planned release, in [0, 1) (δ > 0 lets ``mechanism="auto"`` choose the
        Gaussian, as `pmp.privatize` would).
    mechanism
        ``"auto"``, ``"laplace"`` or ``"gaussian"``, as for `pmp.privatize`.
    at
        θ₀ by free variable name (a guess of the values; arrays of the variable's shape).
        Default: each prior's typical point (`prior_density.support_centre`).
    covariate_moment
        For a regression on private covariates: E[x xᵀ] of one record (p × p), by covariate
        `PrivateData` name. Default: independent covariates, uniform on their declared bounds.
    target_sd_inflation
        Solve for the smallest ε whose private sd is at most this multiple (> 1) of the
        raw-data sd for every parameter entry.
    target_sd
        Solve for the smallest ε whose private sd is at most this for every parameter entry
        (or, by free variable name, for those named).

    Returns
    -------
    PrivacyPlan
        Rows per parameter entry and per statistic, with a text and an HTML display.

    Raises
    ------
    InvalidPrivacyParameterError
        ``epsilon`` not a finite number > 0 (or given together with a target, or neither
        given), ``delta`` not in [0, 1), ``mechanism`` unknown, an ``at`` or
        ``covariate_moment`` naming what the model does not have or of the wrong shape, or a
        target no ε meets (`PrivacyPlan.epsilon_for`).
    UnsupportedModelError, UnboundedSensitivityError
        The model has no pay-once release (`pmp.analyze` says why), or varying intercepts
        (not planned yet).
    """
    model = pm.modelcontext(model)
    targets = target_sd_inflation is not None or target_sd is not None
    if epsilon is None and not targets:
        raise InvalidPrivacyParameterError(
            "pmp.plan needs epsilon= (the ε of the planned release), or a target to solve "
            "for it: target_sd_inflation=1.1 or target_sd=0.05."
        )
    if epsilon is not None and targets:
        raise InvalidPrivacyParameterError(
            "pmp.plan takes epsilon= or a target (target_sd_inflation=, target_sd=), not both: "
            "a target solves for the epsilon."
        )
    delta = checked_delta(delta)
    if epsilon is not None:
        epsilon = checked_epsilon(epsilon)
    mechanism = checked_mechanism(mechanism, delta)
    analysis = declared_analysis(model)
    analysis.epsilon_per_draw("privatize")
    _refuse_varying_intercepts(analysis)
    planner = _Planner(model, analysis, mechanism, at or {}, covariate_moment or {})
    if epsilon is None:
        epsilon = planner.epsilon_for(delta, target_sd_inflation, target_sd, None)
    return planner.plan(epsilon, delta)


class Forecast:
    """What `pmp.privatize` at (ε, δ) is predicted to give, before anything is released: the
    budget split (`_Planner.best_split`; None: the default) and the parameter entries the
    release barely informs (``weak``: label, predicted posterior sd ÷ prior sd, at least
    `WEAK`, and ÷ the raw-data posterior sd, at least 2: the data would at most about triple
    the prior's precision, and privacy is why)."""

    def __init__(self, planner: _Planner, epsilon: float, delta: float) -> None:
        self.planner, self.epsilon, self.delta = planner, epsilon, delta
        plan = planner.plan(epsilon, delta)
        self.split = planner.splits[epsilon, delta]
        prior = np.sqrt(
            np.diag(planner.basis @ np.linalg.inv(planner.prior_precision) @ planner.basis.T)
        )
        self.weak = tuple(
            (row.parameter, float(row.sd_private / sd), float(row.inflation))
            for row, sd in zip(plan.parameters, prior, strict=True)
            if row.sd_private >= WEAK * sd and row.inflation >= _WEAK_INFLATION
        )

    def warning(self) -> str | None:
        """The `UninformativeReleaseWarning` message when some entry is weak, else None."""
        if not self.weak:
            return None
        label, ratio, inflation = max(self.weak, key=lambda item: item[1])
        try:
            needed = self.planner.epsilon_for(self.delta, _TARGET_INFLATION, None, None)
            advice = (
                f"With ε = {needed:.3g} every parameter's posterior sd would be within "
                f"{_TARGET_INFLATION:g}× the raw-data posterior's"
            )
        except InvalidPrivacyParameterError:
            advice = (
                f"No ε up to {_EPSILON_RANGE[1]:g} brings every parameter's posterior sd within "
                f"{_TARGET_INFLATION:g}× the raw-data posterior's"
            )
        others = f" and {len(self.weak) - 1} more" if len(self.weak) > 1 else ""
        return (
            f"At ε = {self.epsilon:g} the release will barely inform `{label}`{others}: its "
            f"predicted posterior sd is {ratio:.0%} of its prior's and {inflation:.3g}× the "
            f"raw-data posterior's, so the posterior will stay close to the prior and ε be "
            f"spent for little. {advice} "
            "(pmp.plan(model, target_sd_inflation=...) predicts it for any target); or "
            "declare tighter bounds (pmp.private_bounds), or use more records."
        )


def forecast(model: pm.Model, epsilon: float, delta: float, mechanism: str) -> Forecast | None:
    """The `Forecast` of `pmp.privatize` at (ε, δ) from the model's declarations (no value
    read); None where the planner does not predict (varying intercepts, a model it cannot
    read) and for releases of counts, which keep the default split and whose prediction
    (every table's cells, seconds for naive Bayes) `pmp.plan` gives on request."""
    try:
        analysis = declared_analysis(model)
        if any(spec.kind is COUNTS for spec in analysis.statistics if spec.sensitivity > 0):
            return None
        _refuse_varying_intercepts(analysis)
        return Forecast(_Planner(model, analysis, mechanism, {}, {}), epsilon, delta)
    except (UnsupportedModelError, InvalidPrivacyParameterError, np.linalg.LinAlgError):
        return None


def _refuse_varying_intercepts(analysis: PrivacyAnalysis) -> None:
    """Varying intercepts (alpha[g] + X @ w) are not planned: the noise on the per-group Σx
    reaches Xᵀy through alpha, which the prediction leaves out (measured: the realised sd of
    w 2 to 3 times the prediction at ε = 1, n = 1000, five groups)."""
    for term in analysis.terms:
        intercepts = [p.intercept for p in term.parameters.values() if p.intercept is not None]
        if intercepts:
            raise UnsupportedModelError(
                f"pmp.plan does not plan the varying intercepts `{intercepts[0]}` of "
                f"`{term.node}` yet: the noise on the per-group sums reaches the weights "
                "through them, and the prediction would be too narrow. Plan the pooled model "
                "(one intercept column in the covariates) for a lower bound on the posterior "
                "sd, or fit simulated data with pmp.privatize at the ε you consider."
            )


def _covariates(term) -> str | None:
    """The `PrivateData` covariates of a regression node, if any."""
    for parameter in term.parameters.values():
        if parameter.covariates is not None and parameter.covariate_values is None:
            return parameter.covariates
    return None


def _noise_variances(stacked, laws: Mapping[str, NoiseLaw]) -> np.ndarray:
    """The noise variance of each entry of a stacked vector of (statistic, entries)."""
    return np.concatenate(
        [np.full(width, laws[name].variance if name in laws else 0.0) for name, width in stacked]
    )


class _Planner:
    """The prediction of `plan` for one model, re-evaluated at any ε (module docstring)."""

    def __init__(
        self,
        model: pm.Model,
        analysis: PrivacyAnalysis,
        mechanism: str,
        at: Mapping[str, object],
        covariate_moment: Mapping[str, object],
    ) -> None:
        self.analysis = analysis
        self.mechanism = mechanism
        self.records_per_person = records_per_person(model)
        # The budget split chosen at each (ε, δ) asked (`best_split`; None: the default).
        self.splits: dict[tuple[float, float], dict[str, float] | None] = {}
        # The noise laws at each (ε, δ) asked (a Gaussian's privacy profile takes seconds).
        self.laws: dict[tuple[float, float], tuple[str, dict[str, NoiseLaw]]] = {}
        # The predicted sds at each (ε, δ) asked (each a finite-difference pass over the terms).
        self.sds: dict[tuple[float, float], tuple[np.ndarray, np.ndarray]] = {}
        self.notes: list[str] = []
        names = sorted(
            {
                parameter.free_variable
                for term in analysis.terms
                for parameter in term.parameters.values()
                if parameter.constant is None
            },
            key=[rv.name for rv in model.free_RVs].index,
        )
        unknown = sorted(set(at) - set(names))
        if unknown:
            raise InvalidPrivacyParameterError(
                f"at= names {unknown}, which the data does not inform; the parameters are {names}."
            )
        self.names = names
        self.point: dict[str, np.ndarray] = {}
        self.simplex: dict[str, bool] = {}
        for name in names:
            support = parameter_support(model[name])
            centre = support_centre(support)
            try:
                value = np.asarray(at.get(name, centre), dtype=np.float64)
            except (TypeError, ValueError):
                value = np.full(centre.shape, np.nan)
            if value.shape != centre.shape or not np.all(np.isfinite(value)):
                raise InvalidPrivacyParameterError(
                    f"at[{name!r}] must be finite numbers of shape {centre.shape}, got "
                    f"{at[name]!r}."
                )
            if np.any(value < support.lower) or np.any(value > support.upper):
                raise InvalidPrivacyParameterError(
                    f"at[{name!r}] = {at[name]!r} lies outside the prior's support "
                    f"[{np.min(support.lower):.4g}, {np.max(support.upper):.4g}]: the "
                    "posterior never reaches it; pass a point inside."
                )
            self.point[name] = value
            self.simplex[name] = support.family == "dirichlet"
        for term in analysis.terms:
            link = term.family.linear_link
            weights = term.parameters.get(term.family.linear_parameter)
            if link != "linear" and weights is not None and weights.free_variable not in at:
                self.notes.append(
                    f"`{term.node}` ({link} link) is planned at `{weights.free_variable}` = "
                    "the prior's centre, and its sd depends on the weights through the link's "
                    "curvature: pass at= your expected weights (for a logistic link the "
                    "centre gives the smallest sd; with effects that are not small a user's "
                    "realised sd was 21–48% wider)"
                )
        # Each axis's coordinate values (the model's coords where the axis has a dim).
        self.labels = {
            name: [
                list(model.coords[dim]) if dim is not None and dim in model.coords else range(size)
                for dim, size in zip(
                    model.named_vars_to_dims.get(name) or (None,) * self.point[name].ndim,
                    self.point[name].shape,
                    strict=True,
                )
            ]
            for name in names
        }
        self.basis = self._basis()
        self.prior_precision = self._prior_precision(model)
        self.step = 1e-4 * np.sqrt(np.diag(np.linalg.inv(self.prior_precision)))
        self.gram_diagonals: dict[str, np.ndarray] = {}
        self.statistics = self._statistics(covariate_moment)
        self.joints = self._joints()
        self.exact = self._covariance({})

    # -- coordinates --------------------------------------------------------------------

    def _basis(self) -> np.ndarray:
        """The map from the coordinates u to the flattened entries of every parameter: one
        column per entry, except a simplex, moved by category k ≥ 1 against category 0."""
        sizes = [self.point[name].size for name in self.names]
        columns = []
        offset = 0
        for name, size in zip(self.names, sizes, strict=True):
            if self.simplex[name]:
                width = self.point[name].shape[-1]
                for start in range(0, size, width):
                    for k in range(1, width):
                        column = np.zeros(sum(sizes))
                        column[offset + start + k] = 1.0
                        column[offset + start] = -1.0
                        columns.append(column)
            else:
                for entry in range(size):
                    column = np.zeros(sum(sizes))
                    column[offset + entry] = 1.0
                    columns.append(column)
            offset += size
        return np.array(columns).T

    def _values(self, shift: np.ndarray) -> dict[str, np.ndarray]:
        """θ₀ moved by ``basis @ shift``, by free variable."""
        flat = np.concatenate([self.point[name].ravel() for name in self.names])
        flat = flat + self.basis @ shift
        values, offset = {}, 0
        for name in self.names:
            size = self.point[name].size
            values[name] = flat[offset : offset + size].reshape(self.point[name].shape)
            offset += size
        return values

    def _prior_precision(self, model: pm.Model) -> np.ndarray:
        """The precision of the Normal approximation of the prior, in the coordinates u."""
        rvs = [change_dist_size(model[name], (_PRIOR_DRAWS,), expand=True) for name in self.names]
        draws = pm.draw(rvs, random_seed=0, mode="FAST_COMPILE")
        flat = np.concatenate(
            [np.asarray(d, dtype=np.float64).reshape(_PRIOR_DRAWS, -1) for d in draws], axis=1
        )
        # Least squares through the basis: the coordinates of each draw (exact for a simplex,
        # whose category 0 is the negative sum of the others' moves).
        coordinates = np.linalg.lstsq(self.basis, (flat - flat.mean(axis=0)).T, rcond=None)[0]
        covariance = np.atleast_2d(np.cov(coordinates))
        covariance += 1e-12 * np.eye(len(covariance)) * max(np.trace(covariance), 1e-300)
        return np.linalg.inv(covariance)

    # -- the statistics' moments ---------------------------------------------------------

    def _statistics(self, covariate_moment: Mapping[str, object]) -> dict[str, tuple]:
        """Per observed node: its statistics in the form the moments read (zeros, or the
        expected Gram matrix) and the records behind its cells (n, the public group sizes, or
        n split evenly, replaced in a joint block by E[N] at θ)."""
        analysis = self.analysis
        unknown = sorted(set(covariate_moment) - {_covariates(t) for t in analysis.terms})
        if unknown:
            raise InvalidPrivacyParameterError(
                f"covariate_moment= names {unknown}, which are not the private covariates of a "
                "regression of this model."
            )
        prepared = {}
        for term in analysis.terms:
            specs = analysis.statistics_of(term.node)
            count = term.public_totals()
            if term.totals_statistic() is not None:
                count = np.full(term.n_groups, analysis.n_records / term.n_groups)
            full = {}
            for kind, spec in specs.items():
                released = np.zeros(spec.shape)
                if kind is GRAM:
                    moment = self._covariate_moment(term, covariate_moment)
                    released = analysis.n_records * moment[np.triu_indices(len(moment))]
                    self.gram_diagonals[spec.name] = analysis.n_records * np.diag(moment)
                full[kind] = complete_statistic(spec, released, count)
            prepared[term.node] = (specs, full, count)
        return prepared

    def _joints(self) -> dict[str, tuple]:
        """For every private group index a node observes (``y ~ Bernoulli(pi)``), that node
        and the nodes it groups, whose released cells are one joint block: the group sizes N
        are shared. An index no node observes keeps n split evenly (an assumption)."""
        analysis = self.analysis
        joints: dict[str, tuple] = {}
        for term in analysis.terms:
            grouped = term.totals_statistic()
            if grouped is None or grouped.name in joints:
                continue
            members = tuple(
                t
                for t in analysis.terms
                if getattr(t.totals_statistic(), "name", None) == grouped.name
            )
            observers = [
                t
                for t in analysis.terms
                if t.totals_statistic() is None
                and getattr(analysis.statistics_of(t.node).get(COUNTS), "name", None)
                == grouped.name
            ]
            if observers:
                joints[grouped.name] = (observers[0], members)
            else:
                self.notes.append(
                    f"the {term.n_groups} groups of `{term.group_by}` hold n/{term.n_groups} "
                    "records each (no node observes the index)"
                )
        return joints

    def _covariate_moment(self, term, given: Mapping[str, object]) -> np.ndarray:
        """E[x xᵀ] of one record of ``term``'s private covariates: given, or independent
        uniform on the declared bounds."""
        covariates = _covariates(term)
        spec = self.analysis.private_data[covariates]
        lower = np.broadcast_to(spec.lower, spec.record_shape).ravel()
        upper = np.broadcast_to(spec.upper, spec.record_shape).ravel()
        if covariates in given:
            try:
                moment = np.asarray(given[covariates], dtype=np.float64)
            except (TypeError, ValueError):
                moment = np.full((), np.nan)
            if moment.shape != (lower.size, lower.size) or not np.all(np.isfinite(moment)):
                raise InvalidPrivacyParameterError(
                    f"covariate_moment[{covariates!r}] must be a finite "
                    f"{lower.size} × {lower.size} matrix E[x xᵀ], got shape {moment.shape}."
                )
            return moment
        self.notes.append(
            f"the covariates `{covariates}` are independent and uniform on their declared "
            "bounds (pass covariate_moment= with E[x xᵀ] of one record otherwise)"
        )
        mean = 0.5 * (lower + upper)
        return np.outer(mean, mean) + np.diag((upper - lower) ** 2 / 12.0)

    def _moments(self, values, laws: Mapping[str, NoiseLaw]) -> list[tuple]:
        """(mean, covariance of the true statistics, noise variance, statistic names and
        entries) of every independent block of released cells at ``values``: (cells, w),
        (cells, w, w), (cells, w), and per statistic its entries of w."""
        joined = {
            t.node for observer, members in self.joints.values() for t in (observer, *members)
        }
        found = []
        for term in self.analysis.terms:
            if term.node in joined:
                continue
            specs, _, count = self.statistics[term.node]
            for kinds, mean, cov in self._term_moments(term, values, laws, count):
                stacked = tuple((specs[kind].name, _vector_width(specs[kind])) for kind in kinds)
                noise = np.broadcast_to(_noise_variances(stacked, laws), mean.shape)
                found.append((mean, cov, noise, stacked))
        for observer, members in self.joints.values():
            found.append(self._joint_moments(observer, members, values, laws))
        return found

    def _term_moments(self, term, values, laws, count) -> list[tuple]:
        """``term``'s (kinds, mean, covariance) given the records ``count`` behind its cells,
        cells flattened; a released Gram matrix's noise is in the covariance (as in the
        noise-aware model)."""
        specs, full, _ = self.statistics[term.node]
        gram = specs.get(GRAM)
        noisy = {}
        if gram is not None and gram.name in laws:
            noisy = {"gram_variance": laws[gram.name].variance}
        found = []
        for kinds, _, mean, cov in term.family.statistic_moments(
            term, term.parameters_at(values), full, count, **noisy
        ):
            if isinstance(cov, DiagonalMinusOuter):
                cov = cov.dense()
            mean = np.asarray(mean, dtype=np.float64)
            cov = np.asarray(cov, dtype=np.float64)
            width = mean.shape[-1]
            cells = np.broadcast_shapes(mean.shape[:-1], cov.shape[:-2])
            mean = np.broadcast_to(mean, (*cells, width)).reshape(-1, width)
            cov = np.broadcast_to(cov, (*cells, width, width)).reshape(-1, width, width)
            found.append((kinds, mean, cov))
        return found

    def _joint_moments(self, observer, members, values, laws) -> tuple:
        """One block: the released counts of a group index and of the nodes it groups.

        The index's released counts are N itself (categories 1 … G−1 when category 0 is
        derived), N ~ Normal(n p(θ), V_N) by the observer's moments; a grouped node's cells
        have mean m(θ, N) and covariance C(θ, N) given N. With F = ∂m/∂N (the means are
        linear in N), the block's covariance is diag(0, C(θ, E N)) + F V_N Fᵀ."""
        n = float(self.analysis.n_records)
        specs, _, count = self.statistics[observer.node]
        [(_, index_mean, index_cov)] = self._term_moments(observer, values, laws, count)
        index_mean, index_cov = index_mean[0], index_cov[0]
        derived = specs[COUNTS].derived_first
        latent = index_mean if derived else index_mean[1:]
        latent_cov = index_cov if derived else index_cov[1:, 1:]
        to_released = np.eye(latent.size)
        if not derived:
            to_released = np.vstack([-np.ones(latent.size), to_released])

        def sizes(shift):
            moved = latent + shift
            return np.concatenate([[n - moved.sum()], moved])

        means, conditional, slopes = [index_mean], [np.zeros_like(index_cov)], [to_released]
        stacked = [(specs[COUNTS].name, index_mean.size)]
        for member in members:
            member_specs = self.statistics[member.node][0]
            centre = self._term_moments(member, values, laws, sizes(np.zeros(latent.size)))
            moved = [
                self._term_moments(member, values, laws, sizes(np.eye(latent.size)[k]))
                for k in range(latent.size)
            ]
            for position, (kinds, mean, cov) in enumerate(centre):
                means.append(mean.ravel())
                conditional.append(block_diag(*cov))
                slopes.append(
                    np.stack([m[position][1].ravel() - mean.ravel() for m in moved], axis=1)
                )
                stacked += [
                    (member_specs[kind].name, mean.shape[0] * _vector_width(member_specs[kind]))
                    for kind in kinds
                ]
        slope = np.vstack(slopes)
        cov = block_diag(*conditional) + slope @ latent_cov @ slope.T
        noise = _noise_variances(stacked, laws)
        mean = np.concatenate(means)
        return mean[None], cov[None], noise[None], tuple(stacked)

    def _covariance(self, laws: Mapping[str, NoiseLaw]) -> np.ndarray:
        """(I + P)⁻¹ in the coordinates u, I the Fisher information of s̃ at θ₀."""
        size = self.basis.shape[1]
        centre = self._moments(self._values(np.zeros(size)), laws)
        shifted = []
        for a in range(size):
            shift = np.zeros(size)
            shift[a] = self.step[a]
            up = self._moments(self._values(shift), laws)
            down = self._moments(self._values(-shift), laws)
            shifted.append((up, down))
        information = self.prior_precision.copy()
        for index, (_, cov, noise, _) in enumerate(centre):
            total = cov + (noise + _VARIANCE_FLOOR)[..., None] * np.eye(cov.shape[-1])
            inverse = np.linalg.inv(total)
            slopes = np.stack(
                [
                    (up[index][0] - down[index][0]) / (2 * self.step[a])
                    for a, (up, down) in enumerate(shifted)
                ]
            )
            bends = np.stack(
                [
                    (up[index][1] - down[index][1]) / (2 * self.step[a])
                    for a, (up, down) in enumerate(shifted)
                ]
            )
            information += np.einsum("acw,cwv,bcv->ab", slopes, inverse, slopes)
            whitened = np.einsum("cwv,acvu->acwu", inverse, bends)
            information += 0.5 * np.einsum("acwu,bcuw->ab", whitened, whitened)
        return np.linalg.inv(information)

    # -- answers --------------------------------------------------------------------------

    def noise_laws(self, epsilon: float, delta: float) -> tuple[str, dict[str, NoiseLaw]]:
        """The mechanism and the noise law of every noised statistic of the plan
        `pmp.privatize` would run at (ε, δ)."""
        if (epsilon, delta) not in self.laws:

            def plan_at(share: float):
                return chosen_plan(self.analysis, share, delta=delta, mechanism=self.mechanism)

            # Per person, the noise `pmp.privatize` calibrates per record for ε per person.
            share = per_record_epsilon(
                epsilon, self.records_per_person, lambda e: plan_at(e).releases(), delta
            )
            split = self.best_split(share, delta)
            release = chosen_plan(
                self.analysis, share, delta=delta, mechanism=self.mechanism, split=split
            )
            self.splits[epsilon, delta] = split
            laws = release.noise_laws()
            kinds = {law.name for law in laws.values()}
            self.laws[epsilon, delta] = (kinds.pop() if len(kinds) == 1 else "none"), laws
        return self.laws[epsilon, delta]

    def best_split(self, epsilon: float, delta: float) -> dict[str, float] | None:
        """The split of the budget across the noised statistics that minimises the
        predicted posterior variance (the mean over parameter entries of log(private
        variance / raw-data variance)), when it beats the default split (every cell the same
        noise scale, `CellsPlan.of`) by more than 1% in variance; else None.

        For a `CellsPlan` of 2 to `_SPLIT_MOST` sums released one by one (a Normal's Σx and
        Σx², with σ free). Not for a regression's moments: the noise-aware posterior plugs
        the Gram matrix in, and the prediction, second order in its noise, does not see the
        bias a noisier XᵀX brings (measured on diabetes: a split that moved ε from XᵀX to
        Xᵀy and yᵀy took the test MSE from 1.11 to 1.01 of the mean's at ε = 1, and from 0.68
        to 1.01 at ε = 10; with XᵀX's share fixed it gave Xᵀy's to yᵀy, the weights' sd
        up 7%). Counts keep the equal noise per cell of Zhang et al. 2016. Searched on a
        coarse grid of the log weights, then by Nelder–Mead; no share below e⁻³ of its
        default. Public: n, the bounds, the priors and θ₀, as every prediction here.
        """
        default = chosen_plan(self.analysis, epsilon, delta=delta, mechanism=self.mechanism)
        if not isinstance(default, CellsPlan) or default.joint:
            return None
        noised = [(spec, share) for spec, share in default.shares if share > 0]
        if any(spec.kind in (COUNTS, GRAM) for spec, _ in noised):
            return None
        moving = [(spec.name, share) for spec, share in noised]
        if not 2 <= len(moving) <= _SPLIT_MOST:
            return None
        names = [name for name, _ in moving]
        shares = np.array([share for _, share in moving])
        exact = np.diag(self.basis @ self.exact @ self.basis.T)

        def weights(free: np.ndarray) -> dict[str, float]:
            """The shares: the default total split by softmax(0, free)."""
            relative = np.exp(np.clip(np.r_[0.0, free], -_SPLIT_RANGE, _SPLIT_RANGE))
            return dict(
                zip(names, (shares.sum() * relative / relative.sum()).tolist(), strict=True)
            )

        def loss(free: np.ndarray) -> float:
            chosen = weights(free)
            if any(chosen[name] < _SPLIT_FLOOR * share for name, share in moving):
                return math.inf  # a statistic's noise more than e³ times its default
            try:
                plan = chosen_plan(
                    self.analysis, epsilon, delta=delta, mechanism=self.mechanism, split=chosen
                )
                private = np.diag(self.basis @ self._covariance(plan.noise_laws()) @ self.basis.T)
            except (InvalidPrivacyParameterError, np.linalg.LinAlgError):
                return math.inf
            return float(np.mean(np.log(private / exact)))

        origin = np.log(shares[1:]) - np.log(shares[0])
        # The loss is flat where a statistic's noise dwarfs its spread: a coarse grid of the
        # relative log weights first (steps of e², _SPLIT_GRID points per axis), then
        # Nelder–Mead from its best point.
        axis = np.linspace(-_SPLIT_RANGE, _SPLIT_RANGE, _SPLIT_GRID)
        grid = np.stack(np.meshgrid(*[axis] * origin.size, indexing="ij"), -1)
        grid = grid.reshape(-1, origin.size)
        losses = [loss(point) for point in grid]
        best = grid[int(np.argmin(losses))]
        found = minimize(
            loss,
            best,
            method="Nelder-Mead",
            options={
                "initial_simplex": np.vstack([best, best + np.eye(origin.size)]),
                "xatol": 0.02,
                "fatol": 1e-4,
                "maxfev": 80 * origin.size,
            },
        )
        chosen = found.x if found.fun <= min(losses) else best
        if not min(found.fun, min(losses)) < loss(origin) - 0.01:
            return None
        return weights(chosen)

    def entry_sd(self, epsilon: float, delta: float) -> tuple[np.ndarray, np.ndarray]:
        """The predicted sd of every flattened entry: private, and without the noise."""
        if (epsilon, delta) not in self.sds:
            _, laws = self.noise_laws(epsilon, delta)
            private = self.basis @ self._covariance(laws) @ self.basis.T
            exact = self.basis @ self.exact @ self.basis.T
            self.sds[epsilon, delta] = np.sqrt(np.diag(private)), np.sqrt(np.diag(exact))
        return self.sds[epsilon, delta]

    def sd(self, parameter: str, epsilon: float, delta: float, *, private: bool) -> np.ndarray:
        if parameter not in self.names:
            raise InvalidPrivacyParameterError(
                f"{parameter!r} is not a parameter the data informs; the parameters are "
                f"{self.names}."
            )
        sds = self.entry_sd(epsilon, delta)[0 if private else 1]
        return sds[self._slice(parameter)].reshape(self.point[parameter].shape)

    def _slice(self, parameter: str) -> slice:
        offset = 0
        for name in self.names:
            size = self.point[name].size
            if name == parameter:
                return slice(offset, offset + size)
            offset += size
        raise AssertionError(parameter)

    def plan(self, epsilon: float, delta: float) -> PrivacyPlan:
        mechanism, laws = self.noise_laws(epsilon, delta)
        private, exact = self.entry_sd(epsilon, delta)
        rows = []
        for name in self.names:
            part = self._slice(name)
            shape = self.point[name].shape
            for flat, (value, low, high) in enumerate(
                zip(self.point[name].ravel(), exact[part], private[part], strict=True)
            ):
                index = np.unravel_index(flat, shape) if shape else ()
                entry = ", ".join(
                    str(labels[int(i)]) for labels, i in zip(self.labels[name], index, strict=True)
                )
                label = f"{name}[{entry}]" if shape else name
                rows.append(ParameterSpread(label, float(value), float(low), float(high)))
        return PrivacyPlan(
            epsilon=epsilon,
            delta=delta,
            mechanism=mechanism,
            n_records=self.analysis.n_records,
            parameters=tuple(rows),
            statistics=self._statistic_rows(laws),
            notes=tuple(dict.fromkeys(self.notes + self._caveats(laws))),
            planner=self,
        )

    def _caveats(self, laws: Mapping[str, NoiseLaw]) -> list[str]:
        """Where the prediction is known to be optimistic: a released Gram matrix whose noise
        is not small next to its expected diagonal gives the errors-in-variables posterior
        heavier tails than its curvature shows (`benchmarks/planner.py`, ε = 0.1: at 10% the
        realised sd was 11% above the prediction, at 25% 37% above; at 5%, within 3%)."""
        caveats = []
        for name, diagonal in self.gram_diagonals.items():
            if name not in laws:
                continue
            ratio = math.sqrt(laws[name].variance) / float(np.min(diagonal))
            if ratio > _GRAM_NOISE_SMALL:
                caveats.append(
                    f"the noise on `{name}` is {ratio:.0%} of its expected diagonal, above "
                    f"{_GRAM_NOISE_SMALL:.0%}: the realised sd will exceed this prediction (by "
                    "about 11% at 10%, 37% at 25%); a larger ε or n brings it down"
                )
        return caveats

    def _statistic_rows(self, laws: Mapping[str, NoiseLaw]) -> tuple[StatisticNoise, ...]:
        spreads: dict[str, list[np.ndarray]] = {}
        for _, cov, _, stacked in self._moments(self._values(np.zeros(self.basis.shape[1])), {}):
            variances = np.diagonal(cov, axis1=-2, axis2=-1)
            offset = 0
            for name, width in stacked:
                spreads.setdefault(name, []).append(variances[:, offset : offset + width].ravel())
                offset += width
        rows = []
        for name, law in laws.items():
            cells = spreads.get(name)
            spread = math.nan if cells is None else float(np.sqrt(np.median(np.concatenate(cells))))
            rows.append(StatisticNoise(name, law.name, math.sqrt(law.variance), spread))
        return tuple(rows)

    def epsilon_for(self, delta, sd_inflation, sd, parameters) -> float:
        """The smallest ε meeting the target (`PrivacyPlan.epsilon_for`), within the
        tolerance, by Brent's method on log ε over the prediction."""
        if (sd_inflation is None) == (sd is None):
            raise InvalidPrivacyParameterError(
                "Give one target: target_sd_inflation= (e.g. 1.1) or target_sd= (e.g. 0.05)."
            )
        chosen = list(self.names if parameters is None else parameters)
        unknown = sorted(set(chosen) - set(self.names))
        if isinstance(sd, Mapping):
            unknown += sorted(set(sd) - set(self.names))
            chosen = list(sd)
        if unknown or not chosen:
            raise InvalidPrivacyParameterError(
                f"Unknown parameter(s) {unknown}; the parameters the data informs are {self.names}."
            )
        limits = np.concatenate(
            [np.full(self.point[name].size, self._limit(name, sd_inflation, sd)) for name in chosen]
        )
        entries = np.concatenate([np.arange(len(self.basis))[self._slice(n)] for n in chosen])

        def excess(log_epsilon: float) -> float:
            """The largest ratio of what an entry reaches to its target, less 1 (≤ 0: met);
            it decreases as ε grows."""
            private, exact = self.entry_sd(math.exp(log_epsilon), delta)
            reached = private[entries] / exact[entries] if sd is None else private[entries]
            return float(np.max(reached / limits)) - 1.0

        low, high = (math.log(bound) for bound in _EPSILON_RANGE)
        if excess(high) > 0:
            private, exact = self.entry_sd(math.exp(high), delta)
            what = "sd inflation" if sd is None else "posterior sd"
            reached = private[entries] / exact[entries] if sd is None else private[entries]
            raise InvalidPrivacyParameterError(
                f"No ε up to {_EPSILON_RANGE[1]:g} meets the target: there the largest {what} "
                f"of {chosen} is {np.max(reached):.4g} (target {np.min(limits):.4g}); without "
                f"noise the posterior sd is {np.max(exact[entries]):.4g}. Relax the target or "
                "collect more records."
            )
        if excess(low) <= 0:
            return _EPSILON_RANGE[0]
        # Brent's method on log ε, then the first ε on a grid of the tolerance that meets it.
        step = math.log1p(_EPSILON_TOLERANCE)
        log_epsilon = brentq(excess, low, high, xtol=step / 2)
        while excess(log_epsilon) > 0:
            log_epsilon += step / 2
        return math.exp(log_epsilon)

    def _limit(self, name: str, sd_inflation, sd) -> float:
        target = sd_inflation if sd is None else (sd[name] if isinstance(sd, Mapping) else sd)
        least = 1.0 if sd is None else 0.0
        if isinstance(target, bool) or not isinstance(target, (int, float, np.floating)):
            raise InvalidPrivacyParameterError(f"The target must be a number, got {target!r}.")
        if not (math.isfinite(target) and target > least):
            what = (
                "an sd inflation must be a finite number > 1"
                if sd is None
                else ("a target sd must be a finite number > 0")
            )
            raise InvalidPrivacyParameterError(f"{what}, got {target!r}.")
        return float(target)
