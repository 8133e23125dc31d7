"""The regressions: likelihood families whose parameter is a linear predictor X @ w of
private covariates X, released as their moments XᵀX and Xᵀy (`_regression_moments`): the
Normal linear regression (`NormalLinearRegression`) and the GLMs with a canonical link,
logistic (`LogisticRegression`) and Poisson (`PoissonRegression`), read through the law of
their moments (`_GeneralizedLinear`).

Generalized linear models
-------------------------
A GLM with canonical link g and per-record mean λ(s) = g⁻¹(s), s = x·w, X private with
declared bounds, one column constant (the intercept), w on a ball ‖w‖₂ ≤ R
(`pmp.TruncatedMvNormal`).

**Release** (pay once): the degree-2 moments of PASS-GLM (Huggins, Adams & Broderick
2017, §3; Kulkarni et al. 2021, eq. 4), XᵀX (upper triangle) and Xᵀy: the statistics of
`NormalLinearRegression` with σ known, on the same grids, with the same Δ₁ and Δ₂ (y's
bounds in place of a Normal response's); their cost is the mechanism's
(:ref:`costs-privatize`): with δ > 0 one Gaussian release at the joint Δ₂ of
`statistics.regression_l2_squared` when it is below the sum of their own
(`release_plan.CellsPlan.merged_group`), else one each. The constant column c·1 makes n = XᵀX_jj/c²
and Σx = XᵀX_{·j}/c part of the Gram matrix: nothing else is released.

**Posterior** (post-processing, free): PASS-GLM replaces log(1 + eˢ) (or eˢ) by a fixed
quadratic over a public range of s; measured on simulated logistic regressions (n = 10⁴,
Chebyshev on [−4, 4]), its 90% intervals covered the truth 38% of the time, its curvature
being the range's average and not the data's. Here the released moments are instead read
through the law of Xᵀy given w and the covariates (Kulkarni et al. 2021, §4, who model
the covariates as Gaussian): given X, E[Xᵀy] = Σ_i x_i λ(s_i) and Cov[Xᵀy] = Σ_i x_i x_iᵀ
λ′(s_i) (canonical link: Var y = λ′(s)). The sums over records are taken under the
Gaussian law of x with the released first two moments, μ = Σx/n and S = XᵀX/n − μμᵀ, for
which Stein's lemma gives, with s ~ N(μ·w, wᵀSw) and u = Sw,

    E[x λ(s)] = μ E[λ(s)] + u E[λ′(s)],

one-dimensional expectations (Gauss–Hermite, 24 nodes; closed form for eˢ), and the
covariance is taken as XᵀX·E[λ′(s)] (statistical linearisation of λ around the
predictor's law). Xᵀy is then Normal with these moments (central limit theorem), and
`pymc_private.noise_aware.likelihood` adds the release noise, the Gram noise through the mean (first
order: `gram_noise_covariance`). Exact when x is Gaussian; for other covariates the error is that
of a linear regression of x on s. Measured (Laplace approximations, 40 simulated data
sets, 3 covariates, no noise) against the exact non-private posterior, 90% interval
coverage: uniform covariates 0.86 (n = 10³) and 0.87 (10⁴), exact 0.88 and 0.87; ±1
covariates 0.88 and 0.69 (10⁴: the bias of the Gaussian law of x), exact 0.89, 0.91.

Public covariates
-----------------
``X @ w`` with X public (``pm.Data`` that is not `PrivateData`, or a constant: the usual
prediction model) and y private: X is not part of the record (:ref:`privacy-model-public-inputs`),
record i keeps its row x_i and neighbours differ in y_i alone. XᵀX is then public and is not
released; only Xᵀy (and yᵀy when σ is free) is, on a public grid of X (each column's own
range, one power-of-two step for all: a varying column it would round to a constant is
refused) and y's grid, an exact integer sum, with Δ₁ = max_i ‖x_i‖₁·width(y)
and Δ₂² = max_i ‖x_i‖₂²·width(y)² (`_public_cross`). The posterior reads the exact Gram
matrix of the gridded rows (`LikelihoodTerm.covariate_gram`: no Gram-noise term) and, for a
GLM, the law of Xᵀy summed over those rows exactly, E = Vᵀλ(Vw) and Cov = Vᵀdiag(λ′(Vw))V
(no Gaussian law of x, no intercept needed; the Normal law of Xᵀy given w remains the central
limit's).

Varying intercepts
------------------
``alpha[g] + X @ w`` with g a public index (``pm.Data`` or a numpy array, one integer per
record; not part of the record, :ref:`privacy-model-public-inputs`), X private with declared
bounds and no constant column, alpha a vector with bounded support, ‖w‖₂ ≤ R: the regression
on the augmented design Z = [E, X], E the one-hot design of g, with weights v = (alpha, w).

**Release** (pay once): ZᵀZ = [[diag(n_g), Σ_g x], [(Σ_g x)ᵀ, XᵀX]] and Zᵀy = (Σ_g y, Xᵀy)
[and yᵀy when σ is free]. The group sizes n_g are public and not released; the per-group sums
Σ_{i∈g} x_i (G × p, kind ``"group_gram"``) and Σ_{i∈g} y_i (G, ``"group_cross"``) join XᵀX,
Xᵀy [, yᵀy] in one release. A record keeps its group, so replacing it moves one group's cells:
each per-group sum has the Δ₁ of the same sum over all records, and the moments together have
Δ₂² ≤ (1 + S)² + Q/2 (`statistics.regression_l2_squared`: z = (e_g, x, y), whose cell e_g e_gᵀ
does not move), at the cost of one group, ε (δ) in all.

**Posterior** (post-processing, free). Normal: exact given the Gram matrix, Zᵀy ~
Normal(ZᵀZ v, σ²ZᵀZ) (with yᵀy as for X alone), the released ZᵀZ plugged in and the noise of
its released blocks through the mean (`intercept_noise_covariance`). Logistic and Poisson:
per group the Gaussian law of x with the group's mean μ_g = Σ_g x / n_g and the pooled
within-group covariance S = (XᵀX − Σ_g (Σ_g x)(Σ_g x)ᵀ/n_g)/n, so s ~ N(alpha_g + μ_g·w, wᵀSw)
in group g and Stein's lemma as above, with u = Sw:

    E[Σ_g y] = n_g E λ(s_g),    E[Xᵀy] = Σ_g (Σ_g x) E λ(s_g) + n u Ē λ′,

Ē λ′ = Σ_g n_g E λ′(s_g) / n, and the covariance by statistical linearisation,
Σ_g E λ′(s_g)·[[n_g, (Σ_g x)ᵀ], [Σ_g x, n_g S + (Σ_g x)(Σ_g x)ᵀ/n_g]] on group g's block.
The moments do not give a covariance per group, so S is shared: the law is exact when the
covariates are Gaussian with one covariance in every group. Hierarchical intercepts (alpha's
prior reading hyperpriors) are a model on the released moments like any other. `pmp.sample`'s
numpy sampler draws them (`pymc_private.noise_aware.slice_moves`): alpha with w by elliptical
slice sampling under a fixed prior; under a hyperprior, alpha alone and the hyperparameters
both alone and with alpha carried along (the non-centred update).
"""

from __future__ import annotations

import math
from dataclasses import replace
from types import MappingProxyType

import numpy as np
import pytensor.tensor as pt
from scipy import special

from pymc_private.errors import UnsupportedModelError
from pymc_private.families.kinds import CROSS, GRAM, GROUP_CROSS, GROUP_GRAM, SUM_SQUARES
from pymc_private.families.likelihood import LikelihoodFamily, LikelihoodTerm
from pymc_private.families.statistics import (
    grid_ranges,
    integer_statistic,
    product_range,
    read_only,
    square_range,
)
from pymc_private.families.univariate import Bernoulli, Poisson, _log, _Normal, _sum, _vector
from pymc_private.priors.conjugate import GAMMA, MVNORMAL

__all__ = [
    "LogisticRegression",
    "NormalLinearRegression",
    "PoissonRegression",
    "gram_noise_covariance",
]


def _regression_moments(family: LikelihoodFamily, term: LikelihoodTerm):
    """A regression's released moments: XᵀX (upper triangle) and Xᵀy, y one value per record,
    Δ₁ the sum of each entry's range over the declared box (an upper bound on the joint sup;
    `statistics.regression_l2_squared` bounds Δ₂ jointly); with varying intercepts, also the
    per-group sums of x and y (`_intercept_sums`)."""
    family._require_plain(term, allow_linear=True)
    parameter = term.parameters[family.linear_parameter]
    if term.record_shape != () or (term.group_by is not None and parameter.intercept is None):
        raise UnsupportedModelError(
            f"`{term.node}` ({family.name}): the response must hold one value per record "
            "and the weights must not be indexed by private data."
        )
    covariates = parameter.covariates
    x_grid, y_grid = term.covariate_grid, term.grid
    x_ranges = grid_ranges(x_grid)
    (y_range,) = grid_ranges(y_grid)
    p = len(x_ranges)
    if parameter.intercept is not None:
        _check_intercepts(family, term, parameter)
    if parameter.covariate_values is not None:
        return (_public_cross(term, covariates, x_grid.quantize(parameter.covariate_values)),)
    rows, columns = np.triu_indices(p)
    gram = [
        square_range(*x_ranges[j]) if j == k else product_range(x_ranges[j], x_ranges[k])
        for j, k in zip(rows.tolist(), columns.tolist(), strict=True)
    ]
    cross = [product_range(x_range, y_range) for x_range in x_ranges]
    return (
        integer_statistic(
            f"gram({covariates})",
            GRAM,
            (covariates,),
            (len(gram),),
            x_grid.quantum**2,
            gram,
            (len(gram),),
            term.n,
            grouped=False,
            grids=(x_grid,),
        ),
        integer_statistic(
            f"cross({covariates}, {term.data})",
            CROSS,
            (covariates, term.data),
            (p,),
            x_grid.quantum * y_grid.quantum,
            cross,
            (p,),
            term.n,
            grouped=False,
            grids=(x_grid, y_grid),
        ),
    ) + (_intercept_sums(term, covariates) if parameter.intercept is not None else ())


def _check_intercepts(family: LikelihoodFamily, term: LikelihoodTerm, parameter) -> None:
    """Refuse what varying intercepts cannot be read with: public covariates, another
    parameter indexed by the group (a per-group σ), and a constant covariate column (its
    weight and the intercepts would be one direction: the augmented Gram matrix is
    singular)."""
    fix = (
        f"`{term.node}` ({family.name}): varying intercepts `{parameter.intercept}"
        f"[{term.group_by}]` "
    )
    if parameter.covariate_values is not None:
        raise UnsupportedModelError(
            fix + "are read on the pay-once route with PrivateData covariates only; with "
            f"public covariates `{parameter.covariates}`, add the one-hot columns of the index "
            "to them (a public design) and leave out the intercepts."
        )
    grouped = [
        p.name for p in term.parameters.values() if p is not parameter and p.group_by is not None
    ]
    if grouped:
        raise UnsupportedModelError(
            fix + f"are the only per-group parameter this route reads: `{grouped[0]}` is "
            "indexed by the group too; give it one value for all records."
        )
    constant = [j for j, (low, high) in enumerate(grid_ranges(term.covariate_grid)) if low == high]
    if constant:
        raise UnsupportedModelError(
            fix + f"already hold the intercept: drop the constant column {constant[0]} of "
            f"`{parameter.covariates}` (declared bounds of one value)."
        )


def _intercept_sums(term: LikelihoodTerm, covariates: str):
    """The per-group moments of varying intercepts ``alpha[g] + X @ w``, g a public index:
    Σ_{i∈g} x_i (G × p) and Σ_{i∈g} y_i (G), the blocks of the one-hot design of g in the
    augmented Gram matrix and cross products (module docstring, "Varying intercepts"). A
    record never changes group, so one group's cells move: each has the Δ₁ of the same sum
    over all records (every cell's range; `statistics.regression_l2_squared` bounds Δ₂ of all
    the moments jointly)."""
    grouping = dict(group_by=term.group_by, group_values=term.group_values, n_groups=term.n_groups)
    x_grid, y_grid = term.covariate_grid, term.grid
    x_ranges = grid_ranges(x_grid)
    suffix = f" | {term.group_by}"
    return (
        integer_statistic(
            f"sum({covariates}{suffix})",
            GROUP_GRAM,
            (covariates,),
            (term.n_groups, len(x_ranges)),
            x_grid.quantum,
            x_ranges,
            (len(x_ranges),),
            term.n,
            grouped=False,
            grids=(x_grid,),
            **grouping,
        ),
        integer_statistic(
            f"sum({term.data}{suffix})",
            GROUP_CROSS,
            (term.data,),
            (term.n_groups,),
            y_grid.quantum,
            grid_ranges(y_grid),
            (),
            term.n,
            grouped=False,
            grids=(y_grid,),
            **grouping,
        ),
    )


def _public_cross(term: LikelihoodTerm, covariates: str, m: np.ndarray):
    """Xᵀy of public covariates X (grid integers ``m``, one row per record) and a private
    response y: the only moment with y released (XᵀX is public, `covariate_gram`).

    Sensitivity (one record replaced; :ref:`privacy-model-public-inputs`: record i keeps its
    public row x_i, only y_i changes). Xᵀy moves by x_i(y_i − y_i′), so in grid steps, with
    y's grid integers in [l, u],

        Δ₁ = max_i ‖m_i‖₁·(u − l),    Δ₂² = max_i ‖m_i‖₂²·(u − l)²,

    both attained (y_i = l against y_i′ = u at the row of largest norm). With yᵀy (σ free),
    the pair moves by (x_i(y_i − y_i′), y_i² − y_i′²), whose squared norm is at most
    ‖x_i‖₂²(y_i − y_i′)² + (y_i² − y_i′²)² ≤ max_i ‖x_i‖₂²·width(y)² + width(y²)²: the sum
    of the two statistics' own Δ₂², which is how the Gaussian plan counts them apart
    (`statistics.regression_group` pairs yᵀy with a Gram matrix only).
    """
    (y_low, y_high) = grid_ranges(term.grid)[0]
    width = y_high - y_low
    absolute = np.abs(m)
    ranges = [
        product_range((int(column.min(initial=0)), int(column.max(initial=0))), (y_low, y_high))
        for column in m.T
    ]
    return integer_statistic(
        f"cross({covariates}, {term.data})",
        CROSS,
        (term.data,),
        (m.shape[1],),
        term.covariate_grid.quantum * term.grid.quantum,
        ranges,
        (m.shape[1],),
        term.n,
        grouped=False,
        grids=(term.grid,),
        sensitivity=int(absolute.sum(axis=1).max(initial=0)) * width,
        covariate_values=read_only(m),
        l2_squared=int((m * m).sum(axis=1).max(initial=0)) * width * width,
    )


def gram_noise_covariance(w, variance: float, with_squares: bool):
    """Covariance that noise E on the released Gram matrix G̃ = G + E (independent entries
    of the upper triangle, variance v each, mirrored) adds to the residuals of the cross
    products and of yᵀy when G̃ is plugged in for G: for Ew,
    Cov((Ew)_i, (Ew)_k) = v(‖w‖² [i = k] + w_i w_k [i ≠ k]); for wᵀEw,
    Var = v(2‖w‖⁴ − Σ w_i⁴) and Cov(wᵀEw, (Ew)_k) = v·w_k(2‖w‖² − w_k²). ``w`` may carry
    leading batch axes (numpy). Zero when ``variance`` is (a Gram matrix released exactly)."""
    tensor = isinstance(w, pt.TensorVariable)
    concatenate = pt.concatenate if tensor else np.concatenate
    squared = w * w
    norm = squared.sum(axis=-1)[..., None, None]
    eye = (pt.eye if tensor else np.eye)(w.shape[-1])
    outer = w[..., :, None] * w[..., None, :]
    block = variance * (norm * eye + outer - squared[..., :, None] * eye)
    if not with_squares:
        return block
    norm = norm[..., 0]
    cross = variance * w * (2.0 * norm - squared)
    corner = variance * (2.0 * norm * norm - (squared * squared).sum(axis=-1)[..., None])
    top = concatenate([block, cross[..., :, None]], axis=-1)
    bottom = concatenate([cross, corner], axis=-1)[..., None, :]
    return concatenate([top, bottom], axis=-2)


def _gram(term: LikelihoodTerm, statistics):
    """The Gram matrix XᵀX: released (``statistics["gram"]``), or public covariates' own
    (`LikelihoodTerm.covariate_gram`, a constant in a graph), which has no noise."""
    if "gram" in statistics:
        return statistics["gram"]
    gram = term.covariate_gram
    return pt.as_tensor(gram) if isinstance(statistics["cross"], pt.TensorVariable) else gram


def _backend(*values):
    """PyTensor's (concatenate, matmul, eye) when any of ``values`` is a graph, numpy's."""
    if any(isinstance(value, pt.TensorVariable) for value in values):
        return pt.concatenate, pt.dot, pt.eye
    return np.concatenate, np.matmul, np.eye


def _blocks(rows, concatenate):
    """A matrix from rows of blocks over the last two axes."""
    return concatenate([concatenate(row, axis=-1) for row in rows], axis=-2)


def _outer(a, b):
    return a[..., :, None] * b[..., None, :]


def _design(term: LikelihoodTerm, values, statistics, totals):
    """(v, Gram matrix, cross products, their kinds, n) of a regression: (w, XᵀX, Xᵀy,
    ("cross",), n) or, with varying intercepts, those of the augmented design Z = [E, X], E
    the one-hot design of the public index g (module docstring, "Varying intercepts"):
    v = (alpha, w), ZᵀZ = [[diag(n_g), Σ_g x], [(Σ_g x)ᵀ, XᵀX]], Zᵀy = (Σ_g y, Xᵀy), and
    n = Σ_g n_g. ``v`` may carry leading batch axes (numpy)."""
    w = values[term.family.linear_parameter]
    gram, cross = _gram(term, statistics), statistics["cross"]
    if "group_gram" not in statistics:
        return w, gram, cross, ("cross",), totals
    alpha, sums = values["intercept"], statistics["group_gram"]
    concatenate, _, eye = _backend(w, alpha, cross, sums, gram)
    sizes = totals * 1.0
    augmented = _blocks([[sizes[:, None] * eye(term.n_groups), sums], [sums.T, gram]], concatenate)
    crosses = concatenate([statistics["group_cross"], cross], axis=-1)
    return (
        concatenate([alpha, w], axis=-1),
        augmented,
        crosses,
        ("group_cross", "cross"),
        sizes.sum(),
    )


def intercept_noise_covariance(alpha, w, sums_variance: float, gram_variance: float, squares):
    """Covariance that the noise of a released augmented Gram matrix (varying intercepts)
    adds to the residuals of (Σ_g y, Xᵀy[, yᵀy]) when it is plugged in: with E_S the noise
    of the per-group Σx (variance v_S per cell) and E the Gram matrix's (v), the residuals
    move by (E_S w, E_Sᵀ alpha + Ew[, 2 alphaᵀE_S w + wᵀEw]), whose covariance is

        v_S [[‖w‖² I, alpha wᵀ, 2‖w‖² alpha], [w alphaᵀ, ‖alpha‖² I, 2‖alpha‖² w],
             [2‖w‖² alphaᵀ, 2‖alpha‖² wᵀ, 4‖alpha‖²‖w‖²]]

    plus `gram_noise_covariance` (w, v) on the (Xᵀy[, yᵀy]) block. ``alpha`` and ``w`` may
    carry leading batch axes (numpy)."""
    concatenate, _, eye = _backend(alpha, w)
    groups, width = alpha.shape[-1], w.shape[-1]
    across = (w * w).sum(axis=-1)[..., None]
    down = (alpha * alpha).sum(axis=-1)[..., None]
    rows = [
        [across[..., None] * eye(groups), _outer(alpha, w)],
        [_outer(w, alpha), down[..., None] * eye(width)],
    ]
    if squares:
        rows[0].append(2.0 * (across * alpha)[..., :, None])
        rows[1].append(2.0 * (down * w)[..., :, None])
        rows.append([2.0 * (across * alpha)[..., None, :], 2.0 * (down * w)[..., None, :]])
        rows[2].append(4.0 * (down * across)[..., None])
    sums = sums_variance * _blocks(rows, concatenate)
    gram = gram_noise_covariance(w, gram_variance, squares)
    if isinstance(sums, pt.TensorVariable):
        return pt.inc_subtensor(sums[groups:, groups:], gram)
    sums[..., groups:, groups:] += gram
    return sums


class NormalLinearRegression(_Normal):
    """Normal(Xw, σ), X private with declared bounds or public (module docstring, "Public
    covariates": then Xᵀy[, yᵀy] alone are released), ‖w‖₂ ≤ R (TruncatedMvNormal), σ known
    or free; conjugate MvNormal on w (given σ) and Gamma on τ = 1/σ² (given w).

    L: (By + Bx·R)²/(2σ_min²) for |y| ≤ By and ‖x‖₂ ≤ Bx (:ref:`costs-lipschitz-table`;
    see `_Normal`, μ varying), tighter for asymmetric bounds on y. Statistics per record: t(x, y) =
    (x xᵀ, x y[, y²]), released as XᵀX (upper triangle), Xᵀy and, when σ is free, yᵀy.
    Δ₁ ≤ Σ_{j≤k} width(x_j x_k) + Σ_j width(x_j y) [+ width(y²)], the sum of each entry's
    range over the declared box (an upper bound on the joint sup). Symbolic
    log-likelihood: −(yᵀy − 2wᵀXᵀy + wᵀXᵀXw)/(2σ²) − n log σ − (n/2) log 2π, without yᵀy and
    the constants when σ is known.
    """

    name = "Normal linear regression (mu = X @ w, X PrivateData or public)"
    conjugate_priors = MappingProxyType(
        {"mu": (MVNORMAL, "linear"), "sigma": (GAMMA, "inverse_sqrt")}
    )

    def accepts(self, parameters):
        return _reads_linear_predictor(self, parameters)

    def _sigma_known(self, term) -> bool:
        return term.parameters["sigma"].constant is not None

    def statistics(self, term):
        specs = _regression_moments(self, term)
        if not self._sigma_known(term):
            # yᵀy over all records: σ is shared by the groups of varying intercepts.
            specs += (
                self._statistic(
                    replace(term, group_by=None, group_values=None, n_groups=None), SUM_SQUARES
                ),
            )
        return specs

    def _quadratic(self, weights, gram, cross, statistics, matmul):
        value = -2.0 * _sum(weights * cross) + _sum(weights * matmul(gram, weights))
        if "sum_squares" in statistics:
            value = value + statistics["sum_squares"]
        return value

    def logp_from_statistics(self, term, values, statistics, totals):
        weights, gram, cross, _, n = _design(term, values, statistics, totals)
        tensor = isinstance(weights, pt.TensorVariable)
        quadratic = self._quadratic(weights, gram, cross, statistics, pt.dot if tensor else np.dot)
        sigma_term = term.parameters["sigma"]
        if sigma_term.constant is not None:
            sigma = float(np.unique(sigma_term.constant)[0])
            return -quadratic / (2.0 * sigma**2)
        sigma = sigma_term.apply_link(values["sigma"])
        return -quadratic / (2.0 * sigma**2) - n * _log(sigma) - 0.5 * n * math.log(2 * math.pi)

    def statistic_moments(
        self, term, values, statistics, totals, gram_variance=0.0, group_gram_variance=0.0
    ):
        """Given the covariates' Gram matrix G = XᵀX (the released one, plugged in: the
        covariates have no model), Xᵀy ~ Normal(Gw, σ²G) exactly; with σ free, yᵀy joins it
        with mean wᵀGw + nσ², variance 2nσ⁴ + 4σ²wᵀGw and covariance 2σ²Gw with Xᵀy. The
        released G̃ = G + E moves the mean by Ew (and wᵀEw): `gram_noise_covariance` of w.
        With varying intercepts the same on the augmented design (`_design`), the noise of
        the released per-group Σx included (`intercept_noise_covariance`)."""
        found = self._exact_gram_moments(term, values, statistics, totals)
        [(kinds, observed, mean, cov)] = found
        squares = "sum_squares" in kinds
        if "group_gram" in statistics:
            noise = intercept_noise_covariance(
                values["intercept"], values["mu"], group_gram_variance, gram_variance, squares
            )
            return [(kinds, observed, mean, cov + noise)]
        if gram_variance > 0:
            noise = gram_noise_covariance(values["mu"], gram_variance, squares)
            found = [(kinds, observed, mean, cov + noise)]
        return found

    def _exact_gram_moments(self, term, values, statistics, totals):
        weights, gram, cross, kinds, n = _design(term, values, statistics, totals)
        concatenate, matmul, _ = _backend(weights, gram)
        fitted = matmul(weights, gram)  # G w, G symmetric; w may be batched
        sigma_term = term.parameters["sigma"]
        if sigma_term.constant is not None:
            var = float(np.unique(sigma_term.constant)[0]) ** 2
            return [(kinds, cross, fitted, var * gram)]
        var = _vector(sigma_term.apply_link(values["sigma"]) ** 2)
        quadratic = _vector((weights * fitted).sum(axis=-1))
        mean = concatenate([fitted, quadratic + n * var], axis=-1)
        corner = 2 * n * var * var + 4 * var * quadratic
        upper = concatenate([_vector(var) * gram, _vector(2 * var * fitted)], axis=-1)
        lower = concatenate([2 * var * fitted, corner], axis=-1)[..., None, :]
        observed = concatenate([cross, _vector(statistics["sum_squares"])], axis=-1)
        cov = concatenate([upper, lower], axis=-2)
        return [((*kinds, "sum_squares"), observed, mean, cov)]

    def conjugate_contribution(self, term, target, statistics, totals, temperature, state):
        self._conjugate_check(term, target)
        if "group_gram" in statistics:
            raise UnsupportedModelError(
                f"`{term.node}` ({self.name}): varying intercepts have no conjugate update "
                "here; sample the privatised model with NUTS."
            )
        gram, cross = np.asarray(_gram(term, statistics)), np.asarray(statistics["cross"])
        if target == "mu":
            sigma = term.parameters["sigma"]
            value = None if sigma.constant is not None else np.asarray(state["sigma"])
            precision = self._precision(term, value, cross)
            return {"h": cross * precision / temperature, "J": gram * precision / temperature}
        weights = np.asarray(state["mu"])
        quadratic = self._quadratic(weights, gram, cross, statistics, np.dot)
        return {"alpha": totals / (2 * temperature), "beta": quadratic / (2 * temperature)}


# Gauss–Hermite rule (probabilists'): E f(Z), Z ~ N(0, 1), as Σ_k π_k f(z_k); 24 nodes are exact
# for polynomials of degree 47 and within 1e-9 of E σ(m + sZ) for s ≤ 20.
_HERMITE_NODES, _HERMITE_WEIGHTS = np.polynomial.hermite_e.hermegauss(24)
_HERMITE_WEIGHTS = _HERMITE_WEIGHTS / _HERMITE_WEIGHTS.sum()
# Floor of the linear predictor's variance, so that its square root is differentiable.
_PREDICTOR_VARIANCE_FLOOR = 1e-12


def _gaussian_logp(residual, cov):
    """log N(residual; 0, cov) over the last axis (numpy with batch axes, or PyTensor)."""
    p = residual.shape[-1]
    if isinstance(residual, pt.TensorVariable) or isinstance(cov, pt.TensorVariable):
        factor = pt.linalg.cholesky(cov)
        z = pt.linalg.solve_triangular(factor, residual, lower=True)
        log_det = 2.0 * pt.sum(pt.log(pt.diagonal(factor)))
        return -0.5 * pt.sum(z * z) - 0.5 * log_det - 0.5 * p * math.log(2 * math.pi)
    factor = np.linalg.cholesky(cov)
    z = np.linalg.solve(factor, residual[..., None])[..., 0]
    log_det = 2.0 * np.log(np.diagonal(factor, axis1=-2, axis2=-1)).sum(axis=-1)
    return -0.5 * (z * z).sum(axis=-1) - 0.5 * log_det - 0.5 * p * math.log(2 * math.pi)


def _reads_linear_predictor(family: LikelihoodFamily, parameters) -> bool:
    """Whether the family's linear parameter is X @ w (covariates read) through its link:
    what the regression objects handle."""
    parameter = parameters[family.linear_parameter]
    return parameter.covariates is not None and parameter.link == family.linear_link


class _GeneralizedLinear:
    """A GLM with canonical link, mixed into the family of its response: the release and
    the posterior of the module docstring ("Generalized linear models").
    """

    conjugate_priors = MappingProxyType({})

    def accepts(self, parameters):
        return _reads_linear_predictor(self, parameters)

    def statistics(self, term):
        specs = _regression_moments(self, term)
        if term.covariate_gram is None and term.group_by is None:
            self._intercept(term)
        return specs

    def _intercept(self, term: LikelihoodTerm) -> tuple[int, float]:
        """(j, c): the first covariate column whose declared bounds are one value c ≠ 0."""
        grid = term.covariate_grid
        for j, (low, high) in enumerate(grid_ranges(grid)):
            if low == high != 0:
                return j, low * grid.quantum
        covariates = term.parameters[self.linear_parameter].covariates
        raise UnsupportedModelError(
            f"`{term.node}` ({self.name}): the pay-once route reads n and Σx from the Gram "
            f"matrix of an intercept column, and `{covariates}` has none. Add a column of "
            f"ones to {covariates} with declared bounds (1, 1) in that column (bounds=(lower, "
            "upper) as arrays over the columns), and leave out a separate intercept."
        )

    def _expectations(self, mean, variance):
        """(E λ(s), E λ′(s)) for s ~ N(mean, variance), elementwise."""
        raise NotImplementedError

    def _mean_and_slope(self, s):
        """(λ(s), λ′(s)), elementwise (numpy or PyTensor)."""
        raise NotImplementedError

    def _public_moments(self, term, w, statistics):
        """Public covariates: the sums over records are taken exactly, on the gridded rows
        V = q·M the released Xᵀy is computed from: E[Xᵀy | w] = Vᵀλ(Vw) and Cov[Xᵀy | w] =
        Vᵀ diag(λ′(Vw)) V (no law of x is assumed, and there is no Gram noise)."""
        rows = term.covariate_rows
        if isinstance(w, pt.TensorVariable):
            level, slope = self._mean_and_slope(pt.dot(rows, w))
            return pt.dot(level, rows), pt.dot(rows.T * slope, rows)
        level, slope = self._mean_and_slope(w @ rows.T)
        return level @ rows, np.einsum("...i,ij,ik->...jk", slope, rows, rows)

    def _linearised(self, term, w, statistics, totals):
        """(E[Xᵀy | w], the factor E λ′(s), μ·w, Σx) of the class docstring; ``w`` may carry
        leading batch axes (numpy)."""
        tensor = isinstance(w, pt.TensorVariable)
        gram = _gram(term, statistics)
        j, c = self._intercept(term)
        sums = gram[..., j] / c  # Σx
        fitted = (pt.dot if tensor else np.matmul)(w, gram)  # G w
        centre = (w * sums).sum(axis=-1) / totals
        spread = (w * fitted).sum(axis=-1) / totals - centre * centre
        spread = (pt.maximum if tensor else np.maximum)(spread, 0.0) + _PREDICTOR_VARIANCE_FLOOR
        level, slope = self._expectations(centre, spread)
        mean = sums * level[..., None] + (fitted - sums * centre[..., None]) * slope[..., None]
        return mean, level, slope, centre

    def _varying(self, term, values, statistics, totals, gram_variance, group_gram_variance):
        """The law of (Σ_g y, Xᵀy) with varying intercepts (module docstring, "Varying
        intercepts"): per group the Gaussian law of x with mean μ_g = Σ_g x / n_g and the
        pooled within-group covariance S, s ~ N(alpha_g + μ_g·w, wᵀSw). The noise of the
        released Gram matrix (v) and per-group Σx (v_S) moves the mean of Xᵀy by E w Ē λ′ +
        Σ_g e_g c_g, c_g = E λ_g − (μ_g·w) Ē λ′, Ē λ′ = Σ_g n_g E λ′_g / n (first order,
        holding the expectations, as without intercepts): covariance
        `gram_noise_covariance` (w Ē λ′, v) + v_S Σ_g c_g² I on that block."""
        w, alpha = values[self.linear_parameter], values["intercept"]
        sums, gram = statistics["group_gram"], _gram(term, statistics)
        concatenate, matmul, eye = _backend(w, alpha, sums, gram)
        tensor = concatenate is pt.concatenate
        sizes = totals * 1.0
        safe = (pt.maximum if tensor else np.maximum)(sizes, 1.0)
        n = sizes.sum()
        projected = matmul(w, sums.T) / safe  # μ_g·w
        centre = alpha + projected
        within = matmul(w, gram) - matmul(projected, sums)  # n S w
        spread = (w * within).sum(axis=-1) / n
        spread = (pt.maximum if tensor else np.maximum)(spread, 0.0) + _PREDICTOR_VARIANCE_FLOOR
        level, slope = self._expectations(centre, spread[..., None])
        average = (sizes * slope).sum(axis=-1) / n  # Ē λ′
        mean = concatenate([sizes * level, matmul(level, sums) + within * average[..., None]], -1)
        scatter = gram - matmul(sums.T / safe, sums)  # n S
        if tensor:
            outer = matmul(sums.T * (slope / safe), sums)
        else:
            outer = np.einsum("...g,gj,gk->...jk", slope / safe, sums, sums)
        corner = scatter * average[..., None, None] + outer
        diagonal = (sizes * slope)[..., None] * eye(term.n_groups)
        cov = _blocks(
            [[diagonal, slope[..., :, None] * sums], [sums.T * slope[..., None, :], corner]],
            concatenate,
        )
        shift = level - projected * average[..., None]
        noise = gram_noise_covariance(w * average[..., None], gram_variance, False)
        noise = noise + group_gram_variance * (shift * shift).sum(axis=-1)[..., None, None] * eye(
            w.shape[-1]
        )
        groups = term.n_groups
        if tensor:
            cov = pt.inc_subtensor(cov[groups:, groups:], noise)
        else:
            cov[..., groups:, groups:] += noise
        observed = concatenate([statistics["group_cross"], statistics["cross"]], axis=-1)
        return [(("group_cross", "cross"), observed, mean, cov)]

    def statistic_moments(
        self, term, values, statistics, totals, gram_variance=0.0, group_gram_variance=0.0
    ):
        """The law of Xᵀy (module docstring). A released Gram matrix G̃ = G + E moves the mean
        by E a, a = w E λ′ + e_j (E λ − (μ·w) E λ′)/c (first order, holding the expectations;
        the term through μ·w in u = Sw is left out): `gram_noise_covariance` of a. With
        varying intercepts, `_varying`."""
        w = values[self.linear_parameter]
        if "group_gram" in statistics:
            return self._varying(
                term, values, statistics, totals, gram_variance, group_gram_variance
            )
        if term.covariate_gram is not None:
            mean, cov = self._public_moments(term, w, statistics)
            return [(("cross",), statistics["cross"], mean, cov)]
        mean, level, slope, centre = self._linearised(term, w, statistics, totals)
        cov = _gram(term, statistics) * slope[..., None, None]
        if gram_variance > 0:
            j, c = self._intercept(term)
            unit = np.zeros(len(grid_ranges(term.covariate_grid)))
            unit[j] = 1.0 / c
            direction = w * slope[..., None] + unit * (level - centre * slope)[..., None]
            cov = cov + gram_noise_covariance(direction, gram_variance, False)
        return [(("cross",), statistics["cross"], mean, cov)]

    def logp_from_statistics(self, term, values, statistics, totals):
        """The log density of Xᵀy under its Normal law (class docstring), on the plug-in route."""
        [(_, observed, mean, cov)] = self.statistic_moments(term, values, statistics, totals)
        return _gaussian_logp(observed - mean, cov)

    def count_law(self, term, values, totals):
        return None

    def conjugate_contribution(self, term, target, statistics, totals, temperature, state):
        self._conjugate_check(term, target)  # raises: no conjugate prior


class LogisticRegression(_GeneralizedLinear, Bernoulli):
    """Bernoulli(σ(X @ w)) (``logit_p=X @ w``, ``p=pm.math.sigmoid(X @ w)`` or
    ``pm.math.invlogit``), pay once from XᵀX and Xᵀy (`_GeneralizedLinear`, λ = σ).

    L on the pay-per-draw routes: Bernoulli's, over p ∈ [σ(−S), σ(S)] with S = ‖x‖₂·R the
    bound of |x·w|."""

    name = "Logistic regression (p = sigmoid(X @ w), X PrivateData or public)"
    linear_parameter = "p"
    linear_link = "logistic"

    def _expectations(self, mean, variance):
        tensor = isinstance(mean, pt.TensorVariable)
        points = mean[..., None] + (pt.sqrt if tensor else np.sqrt)(variance)[..., None] * (
            _HERMITE_NODES
        )
        p = pt.sigmoid(points) if tensor else special.expit(points)
        return (p * _HERMITE_WEIGHTS).sum(axis=-1), (p * (1.0 - p) * _HERMITE_WEIGHTS).sum(axis=-1)

    def _mean_and_slope(self, s):
        p = pt.sigmoid(s) if isinstance(s, pt.TensorVariable) else special.expit(s)
        return p, p * (1.0 - p)


class PoissonRegression(_GeneralizedLinear, Poisson):
    """Poisson(exp(X @ w)) (``mu=pm.math.exp(X @ w)``), pay once from XᵀX and Xᵀy
    (`_GeneralizedLinear`, λ = exp, E eˢ = exp(m + v/2) exactly).

    L on the pay-per-draw routes: Poisson's, over λ ∈ [e^(−S), e^S]."""

    name = "Poisson regression (mu = exp(X @ w), X PrivateData or public)"
    linear_link = "log"

    def _expectations(self, mean, variance):
        level = (pt.exp if isinstance(mean, pt.TensorVariable) else np.exp)(mean + 0.5 * variance)
        return level, level

    def _mean_and_slope(self, s):
        level = (pt.exp if isinstance(s, pt.TensorVariable) else np.exp)(s)
        return level, level
