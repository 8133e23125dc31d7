"""The noise-aware posterior of a privatised model: the default of `pmp.privatize`.

A privatised statistic is s̃ = s + Z, the true statistic s = Σ_i t(x_i) plus noise Z of a
known law (the mechanism's: Laplace or Gaussian of a public scale). Treating s̃ as if it
were s (the *plug-in* posterior, ``noise_aware=False``) keeps the non-private width of every
interval and is miscalibrated when the noise is not small next to the sampling spread of s,
that is at small n·ε (at n = 100, ε = 0.1, 90% intervals covered the truth 23–51% of the
time). The noise-aware posterior conditions on what was actually released:

    p(θ | s̃) ∝ ξ(θ) ∫ p(s̃ | s) p(s | θ) ds,

with p(s̃ | s) the mechanism's noise law and p(s | θ) the sampling distribution of the
statistic. Following Bernstein & Sheldon (2018, "Differentially private Bayesian inference for
exponential families", NeurIPS), p(s | θ) is the Normal with the exact first two moments of a
sum of n independent records (`LikelihoodFamily.statistic_moments`; central limit theorem).
The integral is then exact:

- one scalar statistic cell with Laplace noise of scale b: the density of Normal(m, v) +
  Laplace(0, b), the normal–Laplace convolution (`normal_laplace_logp`, computed with the
  scaled complementary error function so that it is stable in the tails);
- Gaussian noise of standard deviation σ: Normal(m, V + σ² I) (a vector of correlated cells
  too);
- Laplace noise on a vector of correlated cells (the categories of one count, (Σx, Σx²)):
  Normal(m, V + 2b² I), the Gaussian with the noise's variance, an approximation stated here.
- Regression: the covariates have no model, so the released Gram matrix G̃ is plugged into
  the mean G̃w of Xᵀy (and wᵀG̃w of yᵀy); its noise E = G̃ − G then enters their residuals as
  −Ew (and −wᵀEw), whose covariance given w is added (`regression.gram_noise_covariance`; errors in
  variables, first order in the Gram noise, after Bernstein & Sheldon 2019, who model the
  covariates instead).

The noise of the discrete mechanisms (discrete Laplace and Gaussian, on integer grid steps)
is modelled by its continuous counterpart of the same scale (their variances differ by less
than 1% once the scale exceeds 4 grid steps, below which the noise is negligible next to the
sampling spread).

Group sizes. When a node's parameters are indexed by a private group index (naive Bayes'
``theta[y_obs]``), its cells have N_g records, and the released group counts are noisy too:
N = (N_1 … N_G) is a latent variable, n times a point of the simplex, whose prior is the
Normal approximation of its own node's multinomial counts (``y ~ Categorical(p)``; flat on
the simplex when no node observes the index) and whose released counts are a noisy
observation of it. The model holds θ and that latent share (continuous, so the discrete
counts are relaxed) for NUTS; `pmp.sample` draws it in numpy instead
(`pymc_private.noise_aware.sampler`): released counts with their exact laws, by data augmentation
(Ju et al. 2022), the integer group sizes included, and released sums on the likelihood here,
evaluated in numpy by the same formulas (`term_observations`, `cell_log_likelihood`).

Everything here reads released statistics and public scales only: post-processing, free of
privacy cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from scipy import special

from pymc_private.compiling import compiling
from pymc_private.dp.noise import GaussianNoise, LaplaceNoise, NoiseLaw
from pymc_private.families.kinds import GRAM, GROUP_GRAM
from pymc_private.families.statistics import complete_statistic
from pymc_private.families.univariate import DiagonalMinusOuter
from pymc_private.priors.density import support_centre
from pymc_private.priors.support import parameter_support

__all__ = [
    "Observation",
    "add_noise_aware_likelihood",
    "cell_log_likelihood",
    "noise_laws",
    "noise_to_spread",
    "normal_laplace_logp",
    "observations",
    "replicate_statistics",
    "term_observations",
]

_SQRT2 = math.sqrt(2.0)
# Keeps variances of cells that can be empty (a group of no records) strictly positive.
_VARIANCE_FLOOR = 1e-9

# The operations the likelihood's formulas use, for PyTensor graphs (NUTS) and for numpy
# arrays with leading batch axes (`pymc_private.noise_aware.sampler`): one formula, two backends.
_PYTENSOR = SimpleNamespace(
    sqrt=pt.sqrt,
    log=pt.log,
    log1p=pt.log1p,
    exp=pt.exp,
    abs=pt.abs,
    maximum=pt.maximum,
    minimum=pt.minimum,
    erfc=pt.erfc,
    erfcx=pt.erfcx,
    where=pt.switch,
    eye=pt.eye,
    concatenate=pt.concatenate,
)
_NUMPY = SimpleNamespace(
    sqrt=np.sqrt,
    log=np.log,
    log1p=np.log1p,
    exp=np.exp,
    abs=np.abs,
    maximum=np.maximum,
    minimum=np.minimum,
    erfc=special.erfc,
    erfcx=special.erfcx,
    where=np.where,
    eye=np.eye,
    concatenate=np.concatenate,
)


def _ops(*values) -> SimpleNamespace:
    """PyTensor's operations when any of ``values`` is a graph, numpy's otherwise."""
    return _PYTENSOR if any(isinstance(v, pt.Variable) for v in values) else _NUMPY


def normal_laplace_logp(value, mean, variance, scale):
    """log density at ``value`` of Normal(``mean``, ``variance``) + Laplace(0, ``scale``).

    With d = value − mean, v = variance, b = scale, the density is (Reed 2006)

        (1/4b) [e^{v/2b² − d/b} erfc((v/b − d)/√(2v)) + e^{v/2b² + d/b} erfc((v/b + d)/√(2v))],

    and each term is evaluated as e^{−d²/2v} erfcx(u) when its argument u ≥ 0 (erfcx the
    scaled complementary error function), as written otherwise, so that neither overflows.
    """
    ops = _ops(value, mean, variance)
    d = value - mean
    root = ops.sqrt(variance)
    terms = []
    for sign in (-1.0, 1.0):
        u = (variance / scale + sign * d) / (root * _SQRT2)
        inside = -(d * d) / (2.0 * variance) + ops.log(ops.erfcx(ops.maximum(u, 0.0)))
        outside = (
            variance / (2.0 * scale * scale)
            + sign * d / scale
            + ops.log(ops.erfc(ops.minimum(u, 0.0)))
        )
        terms.append(ops.where(u >= 0.0, inside, outside))
    first, second = terms
    # log(e^first + e^second), stable in value and gradient (pt.logaddexp is not).
    larger = ops.maximum(first, second)
    return larger + ops.log1p(ops.exp(-ops.abs(first - second))) - math.log(4.0 * scale)


def _noise_logp(observed, true, law: NoiseLaw):
    """log density of released values given the true ones, elementwise (continuous laws)."""
    return law.log_density(observed - true, pt)


def _marginal_logp(observed, mean, cov, laws: list[tuple[NoiseLaw, int]]):
    """log p(s̃ | θ) of released cells: the exact normal–Laplace convolution for scalar cells
    with Laplace noise, the Normal with the noise's variance added otherwise. ``laws`` holds
    the noise law of each stacked statistic and how many entries of the vector axis it
    takes."""
    low_rank = isinstance(cov, DiagonalMinusOuter)
    if len(laws) == 1 and laws[0][1] == 1 and isinstance(laws[0][0], LaplaceNoise):
        if low_rank:
            variance = cov.diagonal[..., 0] - cov.factor[..., 0] ** 2
        else:
            variance = cov[..., 0, 0]
        scale = laws[0][0].scale
        variance = pt.maximum(variance, _VARIANCE_FLOOR)
        return pt.sum(normal_laplace_logp(observed[..., 0], mean[..., 0], variance, scale))
    noise = np.concatenate([np.full(width, law.variance) for law, width in laws])
    if low_rank:
        return _diagonal_minus_outer_logp(
            observed, mean, cov.diagonal + noise + _VARIANCE_FLOOR, cov.factor
        )
    total = cov + pt.diag(noise) + _VARIANCE_FLOOR * pt.eye(noise.size)
    return pt.sum(pm.logp(pm.MvNormal.dist(mu=mean, cov=total), observed))


def _diagonal_minus_outer_logp(observed, mean, diagonal, factor):
    """Σ over cells of log Normal(observed; mean, diag(diagonal) − factor factorᵀ), by the
    matrix determinant lemma and Sherman–Morrison: with a = Σ f²/d,
    log det = Σ log d + log(1 − a) and rᵀΣ⁻¹r = Σ r²/d + (Σ r f/d)² / (1 − a)."""
    residual = observed - mean
    shrink = 1.0 - pt.sum(factor * factor / diagonal, axis=-1)
    quadratic = (
        pt.sum(residual * residual / diagonal, axis=-1)
        + pt.sum(residual * factor / diagonal, axis=-1) ** 2 / shrink
    )
    size = diagonal.shape[-1]
    log_det = pt.sum(pt.log(diagonal), axis=-1) + pt.log(shrink)
    return -0.5 * pt.sum(quadratic + log_det + size * math.log(2 * math.pi))


def _vector_width(spec) -> int:
    """Entries of the vector axis a statistic takes: a count's released categories, a
    cross-product's p entries, the G per-group sums of y of varying intercepts, one for a
    sum."""
    return spec.shape[-1] if spec.kind.vector else 1


@dataclass(frozen=True)
class Observation:
    """One stacked vector of released cells and its law given θ (`statistic_moments`):
    ``names`` of the statistics stacked on the last axis, each ``widths`` entries wide, with
    noise ``laws``, of the observed ``node``; ``observed`` as released, ``mean`` and ``cov``
    (dense, or a `DiagonalMinusOuter`) of the true values. For the counts of a group index,
    ``latent`` holds the latent group sizes N_1 … N_{G−1}, whose prior ``mean`` and ``cov``
    are (the Normal approximation of the multinomial)."""

    node: str
    names: tuple[str, ...]
    widths: tuple[int, ...]
    laws: tuple[NoiseLaw, ...]
    observed: object
    mean: object
    cov: object
    latent: object = None


def noise_laws(privatisation) -> dict[str, NoiseLaw]:
    """The noise law of every released statistic (a zero scale where Δ = 0: released as is)."""
    exact = GaussianNoise(0.0)
    return {name: privatisation.noise.get(name, exact) for name in privatisation.statistics}


def observations(
    model: pm.Model, analysis, privatisation, totals: dict, *, latent_sizes: bool = True
) -> list[Observation]:
    """The `Observation`s of every observed node of ``analysis`` on the released statistics
    held by ``model``'s data variables, given its free variables and the group sizes
    ``totals`` (by group-count statistic): with ``latent_sizes``, the latent N of the noise-aware
    model, whose counts are their prior; without, the released counts of a plug-in model,
    observed like any other statistic."""
    released = {name: model[name] for name in privatisation.statistics}
    laws = noise_laws(privatisation)
    free = {rv.name: rv for rv in model.free_RVs}
    found = []
    for term in analysis.terms:
        specs = analysis.statistics_of(term.node)
        grouped = term.totals_statistic()
        count = term.public_totals() if grouped is None else totals[grouped.name]
        full = {
            kind: complete_statistic(spec, released[spec.name], count)
            for kind, spec in specs.items()
        }
        values = term.parameters_at(free)
        sizes = totals if latent_sizes else {}
        found += term_observations(term, specs, laws, values, full, count, sizes)
    return found


def term_observations(
    term, specs: dict, laws: dict, values: dict, full: dict, count, sizes: dict
) -> list[Observation]:
    """The `Observation`s of one observed node: its released statistics ``full`` (by kind,
    completed), their noise ``laws`` (by name), its parameters' ``values`` (by parameter
    name: graphs, or numpy arrays with leading batch axes) and its record counts ``count``.
    For the node that observes a group index whose latent sizes are in ``sizes`` (by
    group-count statistic), the counts are those sizes, with their prior."""
    found = []
    # A released Gram matrix is plugged into the mean; the family adds its noise's covariance.
    gram = specs.get(GRAM)
    noisy = {} if gram is None else {"gram_variance": laws[gram.name].variance}
    if GROUP_GRAM in specs:  # the per-group Σx of varying intercepts
        noisy["group_gram_variance"] = laws[specs[GROUP_GRAM].name].variance
    moments = term.family.statistic_moments(term, values, full, count, **noisy)
    for kinds, observed, mean, cov in moments:
        names = tuple(specs[kind].name for kind in kinds)
        latent = None
        if names[0] in sizes:
            # The node that observes a group index: its counts are the latent group sizes.
            if not specs[kinds[0]].derived_first:  # the prior of N_1 … N_{G−1}
                mean, cov = mean[..., 1:], cov.tail()
            cov = cov.dense() + _VARIANCE_FLOOR * pt.eye(mean.shape[-1])
            latent = sizes[names[0]][1:]
        found.append(
            Observation(
                node=term.node,
                names=names,
                widths=tuple(_vector_width(specs[kind]) for kind in kinds),
                laws=tuple(laws[name] for name in names),
                observed=observed,
                mean=mean,
                cov=cov,
                latent=latent,
            )
        )
    return found


def cell_log_likelihood(observation: Observation) -> np.ndarray:
    """log p(s̃ | θ) of every cell of a numpy `Observation` (parameters with leading batch
    axes), its vector axis summed: the terms `_marginal_logp` adds up in the model, cell by
    cell, with the same approximation (`pymc_private.noise_aware.sampler` reads them per parameter
    entry)."""
    laws = list(zip(observation.laws, observation.widths, strict=True))
    observed = np.asarray(observation.observed, dtype=np.float64)
    mean, cov = observation.mean, observation.cov
    if isinstance(cov, DiagonalMinusOuter):
        cov = cov.dense()
    if len(laws) == 1 and laws[0][1] == 1 and isinstance(laws[0][0], LaplaceNoise):
        variance = np.maximum(cov[..., 0, 0], _VARIANCE_FLOOR)
        return normal_laplace_logp(observed[..., 0], mean[..., 0], variance, laws[0][0].scale)
    noise = np.concatenate([np.full(width, law.variance) for law, width in laws])
    total = cov + np.diag(noise + _VARIANCE_FLOOR)
    residual = observed - mean
    # The covariance may be one for all batch entries (a public Gram matrix, σ known).
    batch = np.broadcast_shapes(total.shape[:-2], residual.shape[:-1])
    root = _cholesky(np.broadcast_to(total, batch + total.shape[-2:]))
    residual = np.broadcast_to(residual, batch + residual.shape[-1:])
    whitened = np.linalg.solve(root, residual[..., None])[..., 0]
    log_det = 2.0 * np.log(np.diagonal(root, axis1=-2, axis2=-1)).sum(axis=-1)
    size = noise.size
    value = -0.5 * ((whitened * whitened).sum(axis=-1) + log_det + size * math.log(2 * math.pi))
    return np.where(np.isnan(value), -np.inf, value)


def _cholesky(matrices: np.ndarray) -> np.ndarray:
    """Cholesky factors of a batch of covariances, NaN where one is not positive definite
    (a density of 0 there, as PyMC's MvNormal gives NUTS: a released Gram matrix plugged in
    need not be positive definite)."""
    try:
        return np.linalg.cholesky(matrices)
    except np.linalg.LinAlgError:
        flat = matrices.reshape(-1, *matrices.shape[-2:])
        roots = np.full(flat.shape, np.nan)
        for index, matrix in enumerate(flat):
            try:
                roots[index] = np.linalg.cholesky(matrix)
            except np.linalg.LinAlgError:
                continue
        return roots.reshape(matrices.shape)


def true_share_name(statistic: str) -> str:
    """The name of the latent group share observed through the released group counts
    ``statistic`` (a variable of the noise-aware model the user never declared)."""
    return f"{statistic}_true_share"


def latent_names(model: pm.Model, privatisation) -> list[str]:
    """The latent variables ``model``'s noise-aware likelihood added (the group shares), in
    the order of the analysis' terms; none on a plug-in model."""
    names = []
    for term in privatisation.analysis.terms:
        spec = term.totals_statistic()
        if spec is not None and true_share_name(spec.name) in model.named_vars:
            names.append(true_share_name(spec.name))
    return list(dict.fromkeys(names))


def add_noise_aware_likelihood(model: pm.Model, analysis, privatisation) -> None:
    """Add to ``model`` (a privatised model without likelihood terms) the noise-aware
    likelihood of every observed node of ``analysis``, given the released statistics held by
    the model's data variables and their noise laws (``privatisation.noise``)."""
    laws = noise_laws(privatisation)
    n = analysis.n_records
    with model:
        totals = {}
        for term in analysis.terms:
            spec = term.totals_statistic()
            if spec is None or spec.name in totals:
                continue
            share = pm.Dirichlet(true_share_name(spec.name), a=np.ones(term.n_groups))
            totals[spec.name] = n * share
            if laws[spec.name].scale > 0:
                true = totals[spec.name][1:] if spec.derived_first else totals[spec.name]
                observation = _noise_logp(model[spec.name], true, laws[spec.name])
                pm.Potential(f"{spec.name}_noise", pt.sum(observation))
        logp = dict.fromkeys((term.node for term in analysis.terms), 0.0)
        for observation in observations(model, analysis, privatisation, totals):
            logp[observation.node] = logp[observation.node] + _observation_logp(observation)
        for node, value in logp.items():
            pm.Potential(f"{node}_privatised", value)


def _observation_logp(observation: Observation):
    """log p(s̃ | θ) of one `Observation` (`_marginal_logp`), or the prior density of the
    latent group sizes."""
    if observation.latent is not None:
        normal = pm.MvNormal.dist(mu=observation.mean, cov=observation.cov)
        return pt.sum(pm.logp(normal, observation.latent))
    return _marginal_logp(
        pt.as_tensor(observation.observed, dtype="float64"),
        observation.mean,
        observation.cov,
        list(zip(observation.laws, observation.widths, strict=True)),
    )


def noise_to_spread(model: pm.Model, analysis, privatisation) -> dict[str, float]:
    """For each noised statistic of ``privatisation``: the largest ratio, over its cells, of
    the noise's standard deviation to the statistic's own sampling standard deviation given θ
    at its prior's typical point (`pymc_private.priors.density.support_centre`), with the
    records of a private group spread evenly. Public quantities only (bounds, priors, n, the
    noise scales; a regression's released Gram matrix). Above about ½ a plug-in posterior's
    90% intervals cover less than 86% (it ignores a variance ratio² of the noise)."""
    laws = noise_laws(privatisation)
    ratios: dict[str, float] = {}
    for term in analysis.terms:
        specs = analysis.statistics_of(term.node)
        grouped = term.totals_statistic()
        count = term.public_totals()
        if grouped is not None:
            count = np.full(term.n_groups, analysis.n_records / term.n_groups)
        full = {
            kind: complete_statistic(spec, privatisation.statistics[spec.name], count)
            for kind, spec in specs.items()
        }
        values = term.parameters_at(
            {name: support_centre(parameter_support(model[name])) for name in term.free_variables}
        )
        for kinds, _, _, cov in term.family.statistic_moments(term, values, full, count):
            cov = cov.dense() if isinstance(cov, DiagonalMinusOuter) else np.asarray(cov)
            spread = np.sqrt(np.maximum(np.diagonal(cov, axis1=-2, axis2=-1), 1e-300))
            offset = 0
            for kind in kinds:
                spec = specs[kind]
                width = _vector_width(spec)
                noise = laws[spec.name].standard_deviation
                if noise > 0:
                    cells = spread[..., offset : offset + width]
                    ratio = float(np.max(noise / cells))
                    ratios[spec.name] = max(ratios.get(spec.name, 0.0), ratio)
                offset += width
    return ratios


def replicate_statistics(
    posterior, model: pm.Model, privatisation, rng: np.random.Generator
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Replicated released statistics for posterior predictive checks, and the released ones.

    For each posterior draw θ: s_rep ~ Normal(m(θ), V(θ)), the law of the true statistics
    the noise-aware likelihood uses (`observations`), plus fresh noise of the released
    statistic's law (continuous Laplace or Gaussian of its public scale), so that
    s̃_rep ~ p(s̃ | θ) is comparable with the released s̃. Group counts are the latent group
    sizes plus noise; a plug-in model has no latent, and the node that observes its group
    index (if any) replicates them like any other statistic. Reads released statistics,
    public scales and the posterior only: post-processing, free of privacy cost.

    Returns ``(replicated, released)``: arrays by statistic name, of shape
    (chain, draw, *cells) and (*cells,), a vector axis of width 1 dropped.
    """
    analysis, laws = privatisation.analysis, noise_laws(privatisation)
    n = analysis.n_records
    totals, targets = {}, {}
    for term in analysis.terms:
        spec = term.totals_statistic()
        if spec is None or spec.name in totals:
            continue
        share = true_share_name(spec.name)
        if share in model.named_vars:  # noise-aware: the latent sizes, observed with noise
            totals[spec.name] = n * model[share]
            targets[spec.name] = totals[spec.name][1:] if spec.derived_first else totals[spec.name]
        else:  # plug-in: the released sizes, whose own node replicates them
            totals[spec.name] = complete_statistic(spec, model[spec.name], n)
    found = observations(model, analysis, privatisation, totals, latent_sizes=bool(targets))
    found = [o for o in found if o.latent is None]
    outputs = list(targets.values())
    for observation in found:
        cov = observation.cov
        outputs += [observation.mean, cov.dense() if isinstance(cov, DiagonalMinusOuter) else cov]
    inputs = [rv for rv in model.free_RVs if rv.name in posterior]
    outputs = [pt.as_tensor(output) for output in outputs]  # a moment may be a constant
    with compiling():
        function = pytensor.function(inputs, outputs, on_unused_input="ignore")
        given = pytensor.function([], [pt.as_tensor(o.observed) for o in found])()
    released = {name: np.asarray(model[name].get_value()) for name in targets}
    for observation, observed in zip(found, given, strict=True):
        for name, cells in _cells(observation):
            released[name] = _squeezed(np.asarray(observed)[..., cells])
    chains, draws = posterior.sizes["chain"], posterior.sizes["draw"]
    replicated: dict[str, list] = {}
    for chain in range(chains):
        for draw in range(draws):
            values = iter(function(*(posterior[rv.name].values[chain, draw] for rv in inputs)))
            for name in targets:
                true = next(values)
                replicated.setdefault(name, []).append(true + laws[name].sample(rng, true.shape))
            for observation in found:
                mean, cov = next(values), next(values)
                root = np.linalg.cholesky(cov + _VARIANCE_FLOOR * np.eye(cov.shape[-1]))
                true = mean + (root @ rng.standard_normal(mean.shape)[..., None])[..., 0]
                for (name, cells), law in zip(_cells(observation), observation.laws, strict=True):
                    value = true[..., cells] + law.sample(rng, true[..., cells].shape)
                    replicated.setdefault(name, []).append(_squeezed(value))
    shaped = {
        name: np.stack(values).reshape(chains, draws, *values[0].shape)
        for name, values in replicated.items()
    }
    return shaped, released


def _cells(observation: Observation) -> list[tuple[str, slice]]:
    """Each stacked statistic's name and its entries on the observation's vector axis."""
    ends = np.cumsum(observation.widths)
    return [
        (name, slice(end - width, end))
        for name, width, end in zip(observation.names, observation.widths, ends, strict=True)
    ]


def _squeezed(value: np.ndarray) -> np.ndarray:
    """A statistic of one entry per cell without its vector axis."""
    return value[..., 0] if value.shape[-1] == 1 else value
