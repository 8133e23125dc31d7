"""The projection Π of released statistics onto what some data set could produce.

Post-processing of a release (Zhang et al. 2016, §4; Hay et al. 2010): counts onto their
simplex and integers, group sizes estimated from every cell that measures them and made to
sum to n, Σx² raised to at least (Σx)²/N, and Gram matrices onto the positive semi-definite
cone. The plug-in posterior reads the projected values; so do the starting points of the
numpy sampler. It reads the analysis and the released values only.
"""

from __future__ import annotations

import numpy as np

from pymc_private.analysis.core import PrivacyAnalysis, term_totals
from pymc_private.dp.noise import NoiseLaw
from pymc_private.families.kinds import (
    COUNTS,
    CROSS,
    GRAM,
    GROUP_CROSS,
    GROUP_GRAM,
    SUM,
    SUM_SQUARES,
    round_preserving_total,
    simplex_projection,
)
from pymc_private.families.statistics import StatisticSpec, complete_statistic

__all__ = ["projected_statistics"]


def projected_statistics(
    analysis: PrivacyAnalysis, noisy: dict[str, np.ndarray], noise: dict[str, NoiseLaw]
) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    ordered = sorted(analysis.statistics, key=lambda spec: spec.group_by is not None)
    for spec in ordered:
        value = noisy[spec.name]
        if spec.name in _group_sizes(analysis):
            out[spec.name] = _estimated_group_sizes(analysis, spec, noisy, noise)
        else:
            out[spec.name] = spec.kind.project(spec, value, _cell_totals(analysis, spec, out))
    _consistent_squares(analysis, out)
    _positive_semidefinite_gram(analysis, out)
    return {name: np.array(value) for name, value in out.items()}


def _cell_totals(analysis: PrivacyAnalysis, spec: StatisticSpec, out: dict) -> np.ndarray:
    """The record count N behind each cell of ``spec`` (n, a public group size, or the
    privatised group size), shaped to broadcast against its cells (a count's cells exclude
    the category axis)."""
    if spec.group_by is None:
        return np.asarray(float(analysis.n_records))
    term = next(term for term in analysis.terms if term.group_by == spec.group_by)
    totals = np.asarray(term_totals(term, out), dtype=np.float64)
    cell_ndim = len(spec.shape) - (1 if spec.kind.categories else 0)
    return totals.reshape((-1,) + (1,) * (cell_ndim - 1))


def _group_sizes(analysis: PrivacyAnalysis) -> dict[str, list[StatisticSpec]]:
    """The group-size statistics of the model, each with the grouped counts that release all
    their categories (every cell of a group sums to its size)."""
    sizes: dict[str, list[StatisticSpec]] = {}
    for term in analysis.terms:
        totals = term.totals_statistic()
        if totals is None:
            continue
        counts = [
            spec
            for spec in analysis.statistics
            if spec.kind is COUNTS and spec.group_by == term.group_by and not spec.derived_first
        ]
        sizes[totals.name] = counts
    return sizes


def _estimated_group_sizes(
    analysis: PrivacyAnalysis,
    spec: StatisticSpec,
    noisy: dict[str, np.ndarray],
    noise: dict[str, NoiseLaw],
) -> np.ndarray:
    """The group sizes N_g estimated from every released cell that measures them, in
    released form (Zhang et al. 2016 §4, consistency; Hay et al. 2010).

    A group's size is measured by its released count (noise variance σ_t²) and by the sum
    of the K categories of every element of a grouped count that releases them all
    (variance K·σ², one per element). The estimate is the weighted least-squares solution
    under Σ_g N_g = n: each group's inverse-variance mean m_g with weight w_g, moved by
    λ/w_g so that the sizes add up to n (a group no cell measures takes the remainder),
    then projected onto {N ≥ 0, Σ N = n} and rounded to integers. Post-processing only.
    """
    n = float(analysis.n_records)
    groups = spec.n_categories
    total = np.zeros(groups)
    weight = np.zeros(groups)
    direct = np.asarray(noisy[spec.name], dtype=np.float64)
    measured = slice(1, None) if spec.derived_first else slice(None)
    variance = _variance(noise, spec)
    total[measured] += direct / variance
    weight[measured] += 1.0 / variance
    for counts in _group_sizes(analysis)[spec.name]:
        sums = np.asarray(noisy[counts.name], dtype=np.float64).sum(axis=-1)
        sums = sums.reshape(groups, -1)
        cell_variance = counts.n_categories * _variance(noise, counts)
        total += sums.sum(axis=1) / cell_variance
        weight += sums.shape[1] / cell_variance
    observed = weight > 0
    estimate = np.zeros(groups)
    estimate[observed] = total[observed] / weight[observed]
    if observed.all():
        estimate += (n - estimate.sum()) / weight / np.sum(1.0 / weight)
    else:
        estimate[~observed] = (n - estimate[observed].sum()) / (~observed).sum()
    sizes = round_preserving_total(simplex_projection(estimate, np.asarray(n)), np.asarray(n))
    return (sizes[1:] if spec.derived_first else sizes).astype(np.int64)


def _variance(noise: dict[str, NoiseLaw], spec: StatisticSpec) -> float:
    """The noise variance of one released cell (a floor for a statistic released exactly)."""
    law = noise.get(spec.name)
    return max(law.variance if law is not None else 0.0, 1e-12)


def _consistent_squares(analysis: PrivacyAnalysis, out: dict) -> None:
    """Raise each privatised Σx² to at least (Σx)²/N, which every data set satisfies."""
    sums = {(s.data, s.group_by): s for s in analysis.statistics if s.kind is SUM}
    for spec in analysis.statistics:
        first = sums.get((spec.data, spec.group_by)) if spec.kind is SUM_SQUARES else None
        if first is None:
            continue
        totals = _cell_totals(analysis, spec, out)
        s1 = np.asarray(out[first.name], dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            floor = np.where(totals > 0, s1**2 / totals, 0.0)
        raised = np.maximum(np.asarray(out[spec.name], dtype=np.float64), floor)
        if out[spec.name].dtype.kind in "iu":
            raised = np.ceil(raised)
        out[spec.name] = raised.astype(out[spec.name].dtype)


def _positive_semidefinite_gram(analysis: PrivacyAnalysis, out: dict) -> None:
    """Project [[XᵀX, Xᵀy], [yᵀX, yᵀy]] (or XᵀX alone) onto the PSD cone, bordered by the
    public diag(n_g) and the per-group sums with varying intercepts (`_group_rows`). With public
    covariates XᵀX is exact and only yᵀy moves: it is raised to at least (Xᵀy)ᵀ(XᵀX)⁺(Xᵀy)
    (the Schur complement, min_w ‖y − Xw‖² ≥ 0, holds for every data set)."""
    for term in analysis.terms:
        if term.node in analysis.statistics_unavailable:
            continue
        specs = analysis.statistics_of(term.node)
        if term.covariate_gram is not None and SUM_SQUARES in specs:
            cross = np.asarray(out[specs[CROSS].name], dtype=np.float64)
            floor = cross @ np.linalg.pinv(term.covariate_gram) @ cross
            name = specs[SUM_SQUARES].name
            out[name] = np.asarray(max(float(out[name]), floor))
        if GRAM not in specs:
            continue
        gram = complete_statistic(specs[GRAM], out[specs[GRAM].name], None)
        p = gram.shape[0]
        joint = gram
        if SUM_SQUARES in specs:
            cross = out[specs[CROSS].name]
            yy = float(out[specs[SUM_SQUARES].name])
            joint = np.block([[gram, cross[:, None]], [cross[None, :], np.array([[yy]])]])
        rows, sizes = _group_rows(term, specs, out, joint.shape[0])
        # Varying intercepts: ZᵀZ = [[diag(n_g), rows], [rowsᵀ, joint]] is PSD iff its Schur
        # complement joint − Σ_g u_g u_gᵀ/n_g is (and u_g = 0 where n_g = 0): project that.
        between = rows.T @ (rows / np.where(sizes > 0, sizes, 1.0)[:, None])
        eigenvalues, eigenvectors = np.linalg.eigh(joint - between)
        joint = (eigenvectors * np.maximum(eigenvalues, 0.0)) @ eigenvectors.T + between
        joint = 0.5 * (joint + joint.T)
        out[specs[GRAM].name] = joint[:p, :p][np.triu_indices(p)]
        if SUM_SQUARES in specs:
            out[specs[CROSS].name] = joint[:p, p]
            out[specs[SUM_SQUARES].name] = np.asarray(joint[p, p])


def _group_rows(term, specs, out: dict, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The per-group rows u_g = (Σ_g x[, Σ_g y]) of varying intercepts that border the
    ``width``-wide joint Gram matrix, and the public n_g (none: an empty G = 0 block). The
    released sums of an empty group are set to their exact value, 0 (n_g is public)."""
    if GROUP_GRAM not in specs:
        return np.zeros((0, width)), np.zeros(0)
    sizes = np.asarray(term.public_totals(), dtype=np.float64)
    for kind in (GROUP_GRAM, GROUP_CROSS):
        name = specs[kind].name
        occupied = (sizes > 0).reshape((-1,) + (1,) * (np.ndim(out[name]) - 1))
        out[name] = np.where(occupied, np.asarray(out[name], dtype=np.float64), 0.0)
    names = [specs[GROUP_GRAM].name]
    if width > out[names[0]].shape[-1]:  # yᵀy joins: u_g carries Σ_g y too
        names.append(specs[GROUP_CROSS].name)
    return np.column_stack([out[name] for name in names]), sizes
