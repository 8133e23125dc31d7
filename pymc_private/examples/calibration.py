"""Calibration of privatised posteriors: how often their credible intervals cover the truth.

A posterior is calibrated when, with the parameter drawn from its prior and the data from
the model, its central 90% credible interval covers the true value 90% of the time. This
module measures that for a model with one scalar parameter by simulation: draw θ from the
prior, data given θ, privatise, and read the interval off the privatised posterior's
density on a fine grid of θ (exact up to the grid, and fast: the models are built and
compiled once and each repetition only swaps the data and the released statistics in, with
``pm.set_data``). The
reference is the *exact* noise-aware posterior, computed by the caller from the exact law of
the statistic and of the noise.

Used by ``benchmarks/calibration.py`` (the full study of the noise-aware issue) and by the
tests (a small version). It draws private data, so it is for simulations only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.replace import vectorize_graph

from pymc_private.analysis.core import analyze
from pymc_private.analysis.privatisation import privatisation_of
from pymc_private.compiling import compiling
from pymc_private.data.declaration import check_private_data
from pymc_private.noise_aware.sampler import AugmentedSampler
from pymc_private.pay_once.plans import chosen_plan
from pymc_private.pay_once.privatize import privatize, release_statistics
from pymc_private.planning.plan import PrivacyPlan
from pymc_private.planning.planner import plan

__all__ = ["CoverageResult", "SpreadResult", "coverage_study", "grid_interval", "spread_study"]


@dataclass(frozen=True)
class CoverageResult:
    """Coverage of central credible intervals over repetitions.

    Attributes
    ----------
    coverage
        The fraction of repetitions whose interval covered the true value.
    width
        The mean interval width.
    reference_width
        The mean width of the reference posterior's intervals (same releases), if given.
    repetitions
        How many repetitions.
    """

    coverage: float
    width: float
    reference_width: float | None
    repetitions: int


def grid_interval(grid: np.ndarray, log_density: np.ndarray, level: float) -> tuple[float, float]:
    """The central ``level`` interval of a density known on a fine grid (up to a constant)."""
    weights = np.exp(log_density - np.max(log_density))
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    tail = (1.0 - level) / 2.0
    return float(np.interp(tail, cdf, grid)), float(np.interp(1.0 - tail, cdf, grid))


def coverage_study(
    build: Callable[[np.ndarray], pm.Model],
    simulate: Callable[[np.random.Generator], tuple[float, np.ndarray]],
    variable: str,
    epsilon: float,
    *,
    repetitions: int,
    grid: np.ndarray,
    noise_aware: bool = True,
    level: float = 0.9,
    reference: Callable[[dict, np.ndarray], np.ndarray] | None = None,
    seed: int = 0,
    sampled: int | None = None,
) -> CoverageResult:
    """Coverage of the privatised posterior of one scalar parameter.

    Parameters
    ----------
    build
        ``build(data) -> model`` with ``data`` one simulated data set, its only `PrivateData`;
        built once, later data sets (of the same size) are swapped in by ``pm.set_data``
        and validated again.
    simulate
        ``simulate(rng) -> (true value, data)``: θ from the prior, data given θ.
    variable
        The name of the scalar free variable.
    epsilon
        The ε of each privatisation (numpy noise: simulations only).
    repetitions
        Repetitions (each a new θ, data set and release).
    grid
        Values of θ inside its support at which the posterior density is evaluated.
    noise_aware
        Which posterior of `pmp.privatize` to measure.
    level
        The credible level of the central intervals.
    reference
        ``reference(released, grid) -> log density`` of the exact posterior given the noisy
        released statistics, for the width comparison.
    seed
        Seed of the simulations and of the noise.
    sampled
        Read the intervals off ``sampled`` draws per chain (two chains, as many tuning
        iterations) of the sampler `pmp.sample` uses on the noise-aware model
        (`pymc_private.noise_aware.sampler`) instead of the posterior density on ``grid``: the
        calibration of what a user gets by default.
    """
    rng = np.random.default_rng(seed)
    truth, data = simulate(rng)
    template = build(data)
    private = privatize(template, epsilon, noise_aware=noise_aware, secure=False, random_seed=rng)
    rv = private[variable]
    value_var = private.rvs_to_values[rv]
    transform = private.rvs_to_transforms.get(rv)
    # The log density (no Jacobian: a density in θ) evaluated at every grid point at once.
    points = pt.vector("points")
    logp = vectorize_graph(private.logp(jacobian=False), {value_var: points})
    with compiling():
        log_density = pm.pytensorf.compile([points], logp)
        forward = None
        if transform is not None:
            forward = pm.pytensorf.compile([rv], transform.forward(rv, *rv.owner.inputs))
    if forward is not None:
        grid_values = np.array([forward(value) for value in grid])
    else:
        grid_values = np.asarray(grid, dtype=np.float64)
    analysis = analyze(template)  # public: the same for every data set of this size
    (name,) = analysis.private_data
    plan = chosen_plan(analysis, epsilon, secure=False)
    hits, widths, reference_widths = 0, [], []
    for repetition in range(repetitions):
        if repetition:
            truth, data = simulate(rng)
            pm.set_data({name: data}, model=template)
            check_private_data(template)
        released = release_statistics(analysis, template, plan, rng=rng)
        values = released.noisy if noise_aware else released.statistics
        if sampled:
            fitted = replace(privatisation_of(private), statistics=dict(values))
            draws = AugmentedSampler(private, fitted).sample(2, sampled, sampled, rng)
            low, high = np.quantile(draws[variable], [(1 - level) / 2, (1 + level) / 2])
        else:
            pm.set_data(dict(values), model=private)
            low, high = grid_interval(grid, np.asarray(log_density(grid_values)), level)
        hits += low <= truth <= high
        widths.append(high - low)
        if reference is not None:
            exact_low, exact_high = grid_interval(grid, reference(released.noisy, grid), level)
            reference_widths.append(exact_high - exact_low)
    return CoverageResult(
        coverage=hits / repetitions,
        width=float(np.mean(widths)),
        reference_width=float(np.mean(reference_widths)) if reference_widths else None,
        repetitions=repetitions,
    )


@dataclass(frozen=True)
class SpreadResult:
    """The posterior sd realised over repeated releases, against the planner's prediction.

    Attributes
    ----------
    predicted
        `pmp.plan`'s private posterior sd of every entry, by free variable.
    realised
        The mean over repetitions of the noise-aware posterior's sd of every entry.
    repetitions
        How many repetitions.
    planned
        The `pmp.plan` the prediction came from.
    """

    predicted: dict[str, np.ndarray]
    realised: dict[str, np.ndarray]
    repetitions: int
    planned: PrivacyPlan

    @property
    def largest_error(self) -> float:
        """The largest relative error |predicted / realised − 1| over every entry."""
        return max(
            float(np.max(np.abs(self.predicted[name] / self.realised[name] - 1.0)))
            for name in self.predicted
        )


def spread_study(
    build: Callable[[dict[str, np.ndarray]], pm.Model],
    simulate: Callable[[np.random.Generator], dict[str, np.ndarray]],
    epsilon: float,
    *,
    repetitions: int,
    draws: int,
    at: dict[str, object] | None = None,
    covariate_moment: dict[str, object] | None = None,
    seed: int = 0,
) -> SpreadResult:
    """The planner's predicted posterior sd (`pmp.plan`) against the sd of the noise-aware
    posterior realised over repeated releases at ε, with the data simulated at the planner's
    point θ₀ in every repetition.

    ``build(data)`` builds the model on one simulated data set (a `PrivateData` value by
    name), built and privatised once; later data sets are swapped in by ``pm.set_data``.
    Each repetition releases the statistics with numpy noise (`release_statistics`, the plan
    `pmp.privatize` runs) and draws ``draws`` per chain (two chains, as many tuning
    iterations) from the sampler `pmp.sample` uses on the noise-aware model
    (`pymc_private.noise_aware.sampler`). It draws private data, so it is for simulations only.
    """
    rng = np.random.default_rng(seed)
    template = build(simulate(rng))
    planned = plan(template, epsilon, at=at, covariate_moment=covariate_moment)
    names = planned.planner.names
    predicted = {name: planned.sd(name) for name in names}
    private = privatize(template, epsilon, secure=False, random_seed=rng)
    analysis = analyze(template)
    release_plan = chosen_plan(analysis, epsilon, secure=False)
    spreads: dict[str, list[np.ndarray]] = {name: [] for name in names}
    for repetition in range(repetitions):
        if repetition:
            pm.set_data(simulate(rng), model=template)
            check_private_data(template)
        released = release_statistics(analysis, template, release_plan, rng=rng)
        fitted = replace(privatisation_of(private), statistics=dict(released.noisy))
        drawn = AugmentedSampler(private, fitted).sample(2, draws, draws, rng)
        for name in names:
            values = np.asarray(drawn[name])
            spreads[name].append(values.reshape(-1, *values.shape[2:]).std(axis=0))
    realised = {name: np.mean(values, axis=0) for name, values in spreads.items()}
    return SpreadResult(predicted, realised, repetitions, planned)
