"""`pmp.sample`: `pm.sample` that plans its privacy cost, checks the budget, and releases
nothing derived from raw data but the accounted draws."""

from __future__ import annotations

import copy
import importlib.util
import inspect
import math
import multiprocessing
import numbers
import os
import warnings
from collections.abc import Sequence
from dataclasses import replace

import arviz as az
import numpy as np
import pymc as pm
import xarray as xr
from pymc.vartypes import discrete_types

from pymc_private.analysis.core import declared_analysis
from pymc_private.analysis.intervals import check_public_indices
from pymc_private.analysis.leak_guard import (
    check_initial_values,
    refuse_private_paths,
    refuse_side_effects,
)
from pymc_private.analysis.privatisation import Privatisation, privatised_route
from pymc_private.analysis.python_code import refuse_private_code
from pymc_private.compiling import CHECKED_MODE, checked_compile_kwargs, quiet_sampling
from pymc_private.data.declaration import check_private_data, datasets_of
from pymc_private.data.ledgers import PrivacyLedger, ledger_for
from pymc_private.dp.budget import Budget, checked_budget
from pymc_private.dp.checks import checked_rng
from pymc_private.dp.events import Release, SubsampledGaussianEvent
from pymc_private.dp.session import releasing
from pymc_private.errors import (
    BudgetExceededError,
    ConvergenceWarning,
    InvalidPrivacyParameterError,
    PrivacyError,
    UnsupportedModelError,
    counted,
)
from pymc_private.noise_aware.likelihood import latent_names
from pymc_private.noise_aware.sampler import augmented_posterior
from pymc_private.release.seal import (
    LATENT_GROUP,
    LEDGER_ATTR,
    NOISE_AWARE_ATTR,
    PUBLIC_ATTRS,
    seal,
    separate_latents,
)
from pymc_private.sampling.posterior import batched_posterior, inference_data
from pymc_private.steps.base import PrivateStep

__all__ = ["sample"]

# Tuning iterations of the numpy noise-aware sampler when ``tune`` is not given: it adapts
# proposal scales and reference Gaussians only, which settle within a few hundred sweeps.
AUGMENTED_TUNE = 500


def sample(
    draws: int = 1000,
    *,
    step=None,
    tune: int | None = None,
    chains: int | None = None,
    cores: int | None = None,
    budget: Budget | None = None,
    random_seed=None,
    progressbar: bool = True,
    model: pm.Model | None = None,
    **kwargs,
) -> xr.DataTree:
    """Sample a model privately and return a `DataTree` (as `pm.sample`) that is safe to release.

    Two routes (:ref:`costs`), decided by what the model's graph reads
    (`pymc_private.analysis.leak_guard.reads_private_data`), not by which Python object it is:

    - a model that reads only released statistics (returned by `pmp.privatize`, or a copy
      or `pm.do` of one) depends on privatised statistics only, so any step method is
      post-processing and every draw costs ε = 0. Without ``step``, a plug-in model
      (``noise_aware=False``) whose posterior is a product of conjugate blocks (naive Bayes,
      Beta–Bernoulli, Gamma–Poisson, a Normal mean, regression weights with σ known) gets
      ``chains × draws`` independent exact draws, each block drawn for all of them in one
      vectorised call (no tuning: ``tune`` is not used; the DataTree is the same as
      `pm.sample`'s, with chains of independent draws); a noise-aware model (the default of
      `pmp.privatize`) is sampled in numpy, every chain at once and nothing compiled
      (`pymc_private.noise_aware.sampler`: exact data augmentation for released counts, elliptical
      slice sampling on the closed-form likelihood of released sums; ``tune`` iterations
      adapt it and are discarded); any other privatised model, or a noise-aware one with
      parts those moves do not cover, is sampled by `pm.sample`, where PyMC assigns
      `pmp.PrivateGibbs` to the conjugate variables and NUTS to the others (nutpie when it is
      installed and NUTS samples every variable, as PyMC 6 does; pass ``step=pm.NUTS()`` or
      ``nuts_sampler=`` "nutpie", "numpyro" or "blackjax" to use NUTS on a noise-aware
      model);
    - a model that reads raw `pmp.PrivateData` (a privatised model extended with raw data
      included) must be sampled entirely by private step methods (`pmp.PrivateGibbs`,
      `pmp.PrivateMetropolis`), each draw charged its stated ε; ``nuts_sampler`` is refused
      there, before anything runs (an external sampler would compile the raw records into
      the log-density it samples).

    The planned spend, ``chains × (tune + draws)`` releases of the sweep's per-draw ε
    (tuning iterations touch the data and are charged), is composed by the ledger and
    checked against ``budget`` before anything is sampled: over budget, `BudgetExceededError`
    is raised, nothing is sampled and the ledger is unchanged. Within budget, it is recorded
    before sampling starts, so a run that fails part-way is still charged in full; every
    argument is checked before that, so a mistyped call charges nothing.

    The returned DataTree holds the posterior draws, the sample stats the private steps
    declare safe (``privacy_epsilon`` per draw, ...), the privatised statistics (as
    ``constant_data``) and the ledger as JSON in ``idata.attrs["privacy_ledger"]``. The
    posterior holds the variables of the user's model; the latent variables a noise-aware
    likelihood adds (the true group shares behind released group counts,
    ``counts(y)_true_share``) are released beside it, in the group ``latent_posterior``, so
    that az.summary and az.plot_trace show the user's model. It holds no ``observed_data``,
    raw ``constant_data``, ``log_likelihood`` or ``lp``. The console (PyMC's progress bar
    and "sampling took N seconds") is not a released artifact: running time is a side
    channel outside ε, dropped from the DataTree.

    Parameters
    ----------
    draws
        Draws kept per chain.
    step
        A private step method or a list of them covering every free variable.
    tune
        Tuning iterations per chain (charged like draws on the raw-data route). Defaults to
        0 on the raw-data route, to 500 for the numpy sampler of a noise-aware model and to
        PyMC's 1000 on any other privatised model.
    chains, cores
        As `pm.sample` (``chains`` defaults to ``max(2, cores)``, ``cores`` to
        ``min(4, cpu count)``): the number of chains must be known to plan the cost.
    budget
        A `pmp.Budget` the data sets' whole ledger (`pmp.ledger_for`: every earlier release
        from the same data, through any model) must fit.
    random_seed
        Passed to `pm.sample`. On raw data it seeds only what the private steps draw
        independently of the data (proposals, jitter) when they are secure (their default),
        so the run is not reproducible; steps built with ``secure=False`` draw everything
        from it, reproducibly, and their releases are recorded as not secure.
    progressbar, **kwargs
        Passed to `pm.sample` (except ``trace``, ``return_inferencedata`` and
        ``idata_kwargs``, which would bypass what `pmp.sample` guarantees).
        ``nuts_sampler`` ("pymc", "nutpie", "numpyro", "blackjax") runs on a model that reads
        only released values, without ``step``: NUTS by that implementation, free.
    """
    _check_keywords(kwargs)
    mode = CHECKED_MODE
    if "compile_kwargs" in kwargs:
        kwargs["compile_kwargs"] = checked_compile_kwargs(kwargs["compile_kwargs"], "pmp.sample")
        mode = kwargs["compile_kwargs"]["mode"]
    model = pm.modelcontext(model)
    privatisation = privatised_route(model)
    nuts_sampler = kwargs.get("nuts_sampler")
    if nuts_sampler is not None:
        _check_nuts_sampler(model, nuts_sampler, privatisation, step)
    if privatisation is None:
        check_private_data(model)
        # The steps checked the model when they were built; it may have gained a
        # Deterministic or Potential reading private data since.
        refuse_private_paths(model)  # with the side effects of what it compiles
    else:  # the sampler's and the trace's functions would carry them too
        refuse_side_effects(model)
    steps = _steps_for(model, step, privatisation)
    for each in steps:  # a step's own code, a proposal of the user's
        refuse_private_code(model, [each], type(each).__name__)
    private_steps = [s for s in steps if isinstance(s, PrivateStep)]
    augmented_tune = AUGMENTED_TUNE if tune is None else tune
    if tune is None:
        tune = 1000 if privatisation is not None else 0
    if cores is None:
        cores = min(4, os.cpu_count() or 1)
    if chains is None:
        chains = max(2, cores)
    _check_arguments(
        model,
        draws=draws,
        privatised=privatisation is not None,
        tune=tune,
        chains=chains,
        cores=cores,
        budget=budget,
        random_seed=random_seed,
        kwargs=kwargs,
    )
    ledger = ledger_for(model)
    stale = [
        type(s).__name__
        for s in private_steps
        if s.touches_raw_data and set(s.datasets) != set(datasets_of(model))
    ]
    if stale:
        raise UnsupportedModelError(
            f"{stale[0]} was built on other data than the model now holds (pm.set_data since?): "
            "build the step again from the model as it is, so that what it draws from and the "
            "ledger it is charged to are the model's."
        )

    planned = [
        s.planned_release(tune + draws, chain) for chain in range(chains) for s in private_steps
    ]
    with releasing():  # one lock across check → record (pymc_private.dp.session)
        for limit in ledger.limits(budget):  # the ledger's files' budgets (`attach`) too
            _check_budget(limit, ledger, planned, private_steps, chains=chains, tune=tune)
        # Charged before the data is touched: a run that fails part-way has still released
        # whatever it released (an error, draws kept by a callback), so it is never
        # undercounted.
        ledger.record_all(planned, budget=budget)
    if privatisation is not None and not steps and nuts_sampler is None:
        batched = batched_posterior(model, privatisation, chains, draws, random_seed)
        attrs = {"sampler": "independent exact draws given the privatised statistics"}
        chained = False  # a Markov chain, whose mixing is worth checking
        if batched is None:
            augmented = augmented_posterior(
                model, privatisation, chains, augmented_tune, draws, checked_rng(random_seed)
            )
            if augmented is not None:
                batched, method = augmented
                chained = not method.startswith("independent")
                attrs = {"sampler": f"noise-aware: {method} (numpy)"}
                if chained:
                    attrs["tuning_steps"] = augmented_tune
        if batched is not None:
            _warn_unused(kwargs)
            idata = inference_data(model, batched, 0.0, ledger, attrs)
            if kwargs.get("var_names") is not None:
                idata["posterior"] = idata["posterior"].to_dataset()[list(kwargs["var_names"])]
            idata["constant_data"] = _constant_data(privatisation)
            separate_latents(idata, latent_names(model, privatisation))
            if chained and kwargs.get("compute_convergence_checks", True):
                _warn_unmixed(idata, per_draw=False)
            return seal(idata)

    # The run samples with copies marked prepaid: the caller's step objects keep charging
    # whatever they draw outside this run (in a callback, another thread).
    run_steps = [_prepaid_copy(s) if isinstance(s, PrivateStep) else s for s in steps]
    if privatisation is not None:
        # PyMC's samplers run under the package's checked mode (`quiet_sampling`); nutpie,
        # numpyro and blackjax compile themselves (Numba, JAX), without index checks: they
        # run only where every advanced index is public and inside its axis.
        computed = check_public_indices(
            [model.logp(), *model.deterministics], "the privatised model", model=model
        )
        if computed and nuts_sampler not in (None, "pymc"):
            raise UnsupportedModelError(
                f"nuts_sampler={nuts_sampler!r} compiles the model itself, without checking "
                "indices, and the model indexes by values computed as it runs (from free "
                "variables or arithmetic), which could reach beyond their axis into the "
                "process's memory: use nuts_sampler='pymc', which checks them."
            )
        if computed:
            kwargs["nuts_sampler"] = "pymc"
        elif "compile_kwargs" not in kwargs:
            # Every advanced index is public and inside its axis: PyTensor's default mode
            # (Numba, with nutpie the default NUTS as in PyMC 6) reads nothing beyond them.
            mode = None
    convergence_checks = kwargs.pop("compute_convergence_checks", True)
    # Under a mode that checks indices, without PyMC's advice on short chains (and rich's on
    # ipywidgets).
    with quiet_sampling(mode):
        idata = pm.sample(
            draws,
            tune=tune,
            step=run_steps or None,
            chains=chains,
            cores=cores,
            random_seed=random_seed,
            progressbar=progressbar,
            model=model,
            compute_convergence_checks=False,
            **kwargs,
        )
    released = _released(idata, private_steps, privatisation)
    names = sorted({type(s).__name__ for s in steps})
    library = idata["posterior"].attrs.get("inference_library", "pymc")
    released.attrs["sampler"] = "pm.sample: " + (
        ", ".join(names)
        if names
        else f"{library}'s NUTS"
        if library != "pymc"
        else "PyMC's step methods (NUTS for continuous variables)"
    )
    if privatisation is not None:
        separate_latents(released, latent_names(model, privatisation))
    if convergence_checks:
        _warn_unmixed(
            released, per_draw=any(s.touches_raw_data for s in private_steps), model=model
        )
    released.attrs[LEDGER_ATTR] = ledger.to_json()
    return seal(released)


# pm.sample keywords the numpy routes of a privatised model have no use for.
_UNUSED_BY_NUMPY = (
    "initvals",
    "init",
    "n_init",
    "jitter_max_retries",
    "discard_tuned_samples",
    "nuts_sampler_kwargs",
    "compile_kwargs",
)


def _warn_unused(kwargs: dict) -> None:
    """Say which of the caller's `pm.sample` keywords the numpy sampler did not use."""
    unused = [name for name in _UNUSED_BY_NUMPY if name in kwargs]
    if unused:
        warnings.warn(
            f"pmp.sample drew this privatised model in numpy, without PyMC's samplers, and did "
            f"not use {', '.join(unused)}: pass step=pm.NUTS() to sample it with pm.sample.",
            UserWarning,
            stacklevel=3,
        )


def _pays_once(model: pm.Model | None) -> bool:
    """Whether `pmp.privatize` takes the model (its sufficient statistics are bounded), read
    from its declarations only."""
    if model is None:
        return False
    try:
        return declared_analysis(model).sensitivity_l1 is not None
    except PrivacyError:
        return False


def _shown(name: str) -> str:
    """A variable of the released draws in the user's words: a latent group share of the
    noise-aware likelihood (``counts(y)_true_share``) as the share of records in each group of
    the user's data ``y``."""
    inner = name.removeprefix("counts(").removesuffix(")_true_share")
    if inner != name and name.startswith("counts("):
        return f"the true share of each group of `{inner}`, a latent of the privatised likelihood"
    return f"`{name}`"


def _warn_unmixed(idata: xr.DataTree, *, per_draw: bool, model: pm.Model | None = None) -> None:
    """One `ConvergenceWarning` in place of PyMC's, computed from the released draws only
    (post-processing), with PyMC's thresholds: R-hat > 1.01, bulk ESS < 100 per chain. The
    latents of a noise-aware likelihood (``latent_posterior``) are checked too."""
    posterior = idata["posterior"].to_dataset()
    latent = idata[LATENT_GROUP].to_dataset() if LATENT_GROUP in idata.children else xr.Dataset()
    posterior = xr.merge([posterior, latent])
    chains, draws = posterior.sizes["chain"], posterior.sizes["draw"]
    if chains < 2 or draws < 4 or not posterior.data_vars:
        return
    with warnings.catch_warnings(), np.errstate(all="ignore"):  # a chain that never moved
        warnings.simplefilter("ignore", RuntimeWarning)
        rhats = {name: float(v.max()) for name, v in az.rhat(posterior).data_vars.items()}
        esses = {name: float(v.min()) for name, v in az.ess(posterior).data_vars.items()}
    # The worst variable of each (NaN, a chain that never moved, the worst of all).
    worst_rhat = max(rhats, key=lambda name: np.nan_to_num(rhats[name], nan=math.inf))
    worst_ess = min(esses, key=lambda name: np.nan_to_num(esses[name], nan=-math.inf))
    rhat, ess = rhats[worst_rhat], esses[worst_ess]
    if not (rhat > 1.01 or ess < 100 * chains or math.isnan(rhat)):
        return
    if per_draw:
        advice = (
            "On raw data every draw is a release that costs ε, so private chains are short "
            "and mix slowly by design; their intervals are rougher than the posterior's. For "
            "the same total ε, draw more at a higher temperature (ε per draw falls as 1/T, "
            "the target flattens)"
        )
        advice += (
            ", or pay once with pmp.privatize, after which draws are free."
            if _pays_once(model)
            else " (this model has no pay-once route: pmp.analyze(model) says why)."
        )
    else:
        advice = (
            "These draws come from a privatised model: they are free (post-processing), so "
            "sample more (larger draws= and tune=) until the chains agree."
        )
    summaries = ["az.summary(idata)"]
    named = ({worst_rhat} if not rhat <= 1.01 else set()) | (
        {worst_ess} if ess < 100 * chains else set()
    )
    if named & set(latent.data_vars):
        summaries.append(f"az.summary(idata.{LATENT_GROUP}) for the latent group sizes")
    found = []
    if not rhat <= 1.01:  # NaN too: a chain that never moved
        found.append(f"R-hat up to {rhat:.3f} ({_shown(worst_rhat)}), above PyMC's 1.01")
    if ess < 100 * chains:
        found.append(
            f"bulk effective sample size down to {ess:.0f} ({_shown(worst_ess)}), below "
            f"PyMC's {100 * chains}"
        )
    warnings.warn(
        f"The {chains} released chains of {draws} draws have not mixed: {' and '.join(found)}. "
        f"{advice} See {' and '.join(summaries)}.",
        ConvergenceWarning,
        stacklevel=3,
    )


def _prepaid_copy(step: PrivateStep) -> PrivateStep:
    copied = copy.copy(step)
    copied.prepaid = True
    return copied


_REFUSED_KWARGS = {
    "trace": "a custom trace backend may store the observed data; use the default.",
    "return_inferencedata": "the released DataTree is the only output pmp.sample gives.",
    "idata_kwargs": "pmp.sample builds the DataTree itself, without log_likelihood.",
}

# `pm.sample`'s NUTS implementations: the module each needs ("pymc" is PyMC's own).
NUTS_SAMPLERS = {"pymc": "pymc", "nutpie": "nutpie", "numpyro": "numpyro", "blackjax": "blackjax"}


def _check_nuts_sampler(
    model: pm.Model, nuts_sampler, privatisation: Privatisation | None, step
) -> None:
    """Refuse ``nuts_sampler`` before anything runs where it would read raw data or could not
    run. An external NUTS sampler (nutpie, numpyro, blackjax) compiles the model's whole
    log-density and samples every variable itself: on a model that reads only released
    values (`pymc_private.analysis.privatisation.privatised_route`: no `PrivateData` or observed
    value
    anywhere in its graph) that is post-processing, free; on one that reads raw data it
    would draw from the raw records with no step method to account for it."""
    if nuts_sampler not in NUTS_SAMPLERS:
        raise UnsupportedModelError(
            f"nuts_sampler must be one of {sorted(NUTS_SAMPLERS)}, got {nuts_sampler!r}."
        )
    if nuts_sampler == "pymc":
        return
    if privatisation is None:
        raise UnsupportedModelError(
            f"nuts_sampler={nuts_sampler!r} cannot sample this model: it reads raw private data "
            "(PrivateData or observed values), and an external NUTS sampler would compile its "
            "log-density, the raw records included, and release draws no step method accounts "
            "for. Sample it with pmp.PrivateGibbs or pmp.PrivateMetropolis, or privatise it "
            "first (pmp.privatize(model, epsilon)): a privatised model holds only released "
            "values, and any NUTS sampler draws from it for free."
        )
    if step is not None:
        raise UnsupportedModelError(
            f"nuts_sampler={nuts_sampler!r} samples every variable itself with NUTS; drop "
            "step=..., or keep it with nuts_sampler='pymc'."
        )
    discrete = [model.values_to_rvs[v].name for v in model.value_vars if v.dtype in discrete_types]
    if discrete:
        raise UnsupportedModelError(
            f"nuts_sampler={nuts_sampler!r} samples continuous variables only; {discrete} are "
            "discrete. Leave nuts_sampler unset, and PyMC assigns them a sampler of their own."
        )
    if importlib.util.find_spec(NUTS_SAMPLERS[nuts_sampler]) is None:
        raise UnsupportedModelError(
            f"nuts_sampler={nuts_sampler!r} is not installed: pip install {nuts_sampler}."
        )


def _check_keywords(kwargs: dict) -> None:
    """Refuse keywords that would bypass the release, or that `pm.sample` does not know."""
    refused = sorted(set(kwargs) & set(_REFUSED_KWARGS))
    if refused:
        raise UnsupportedModelError(
            f"pmp.sample does not take {refused[0]}=: {_REFUSED_KWARGS[refused[0]]}"
        )
    unknown = sorted(set(kwargs) - set(inspect.signature(pm.sample).parameters))
    if unknown:
        raise TypeError(
            f"pmp.sample got unexpected keyword arguments {unknown}; settings of a step method "
            "go to the step, e.g. step=pm.NUTS(target_accept=0.9)."
        )


def _count(name: str, value, minimum: int) -> None:
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise InvalidPrivacyParameterError(f"{name} must be an integer, got {value!r}.")
    if value < minimum:
        raise InvalidPrivacyParameterError(f"{name} must be >= {minimum}, got {value!r}.")


def _check_arguments(
    model: pm.Model, *, draws, privatised, tune, chains, cores, budget, random_seed, kwargs
) -> None:
    """Everything `pm.sample` would refuse, refused before anything is charged (and no draws
    from a privatised model: nothing to return)."""
    _count("draws", draws, 1 if privatised else 0)
    _count("tune", tune, 0)
    _count("chains", chains, 1)
    _count("cores", cores, 1)
    if draws + tune < 1:
        raise InvalidPrivacyParameterError("draws + tune must be at least 1: nothing to sample.")
    checked_budget(budget)
    seeds = random_seed if isinstance(random_seed, Sequence) else [random_seed]
    for seed in seeds:
        if isinstance(seed, np.random.Generator | np.random.RandomState) or seed is None:
            continue
        _count("random_seed", seed, 0)
    if isinstance(random_seed, Sequence) and len(random_seed) != chains:
        raise InvalidPrivacyParameterError(
            f"random_seed has {len(random_seed)} entries for {chains} chains: give one per chain."
        )
    initvals = kwargs.get("initvals")
    for chain_initvals in initvals if isinstance(initvals, Sequence) else [initvals]:
        if chain_initvals is not None:
            check_initial_values(model, chain_initvals)
    unknown = [n for n in kwargs.get("var_names") or [] if n not in model.named_vars]
    if unknown:
        raise UnsupportedModelError(f"var_names {unknown} are not variables of this model.")
    if kwargs.get("callback") is not None:
        raise UnsupportedModelError(
            "pmp.sample takes no callback: it runs in the sampler's process, between draws, "
            "where the model, its data and every module are in reach, so nothing can bound what "
            "it reads or changes (a callback copied the records into a pm.Data a Deterministic "
            "released). Work on the draws pmp.sample returns instead."
        )
    mp_ctx = kwargs.get("mp_ctx")
    if isinstance(mp_ctx, str) and mp_ctx not in multiprocessing.get_all_start_methods():
        raise ValueError(
            f"mp_ctx must be one of {multiprocessing.get_all_start_methods()}, got {mp_ctx!r}."
        )


def _steps_for(model: pm.Model, step, privatisation: Privatisation | None) -> list:
    """The step methods to sample with, refusing any that would leak raw data."""
    steps = list(step) if isinstance(step, Sequence) else ([] if step is None else [step])
    steps = [method for s in steps for method in getattr(s, "methods", [s])]
    if privatisation is not None:
        # Post-processing: any sampler is private. Without a step, PyMC assigns PrivateGibbs
        # to the conjugate variables (its competence) and NUTS to the others.
        return steps
    if not steps:
        raise UnsupportedModelError(
            "This model observes raw private data: choose a route. Pay once with "
            "`pmp.sample` on `pmp.privatize(model, epsilon)`, or pay per draw with "
            "`step=pmp.PrivateGibbs(temperature=...)` or `step=pmp.PrivateMetropolis(...)`."
        )
    leaking = [type(s).__name__ for s in steps if not isinstance(s, PrivateStep)]
    if leaking:
        raise UnsupportedModelError(
            f"{', '.join(leaking)} is not a private step method: on raw private data every "
            "variable must be sampled by pmp.PrivateGibbs or pmp.PrivateMetropolis."
        )
    foreign = [v.name for s in steps for v in s.vars if v not in model.value_vars]
    if foreign:
        raise UnsupportedModelError(
            f"A step samples {foreign}, which are not variables of this model: build the step "
            "inside the model you sample (`with model: pmp.PrivateGibbs(...)`)."
        )
    covered = {v for s in steps for v in s.vars}
    missing = [v.name for v in model.value_vars if v not in covered]
    if missing:
        raise UnsupportedModelError(
            f"No private step samples {missing}: PyMC would assign a non-private sampler to "
            "them. Add them to a pmp.PrivateGibbs or pmp.PrivateMetropolis step."
        )
    return steps


def _check_budget(
    budget: Budget,
    ledger: PrivacyLedger,
    planned: list[Release],
    private_steps: list[PrivateStep],
    *,
    chains: int,
    tune: int,
) -> None:
    """Refuse an over-budget run before sampling, saying what would fit."""
    try:
        budget.check(ledger, planned)
    except BudgetExceededError as refusal:
        if any(isinstance(r.event, SubsampledGaussianEvent) for r in planned):
            advice = _subsampled_advice(budget, ledger, planned, chains=chains, tune=tune)
            raise BudgetExceededError(f"{refusal} {advice}.") from None
        per_draw = sum(s.privacy_epsilon_per_draw for s in private_steps)
        if per_draw == 0:
            raise
        iterations = budget.affordable_count(ledger, per_draw, per_count=chains)
        advice = _length_advice(chains, tune, iterations)
        remaining = budget.remaining(ledger)
        if remaining > 0:
            # Dividing every step's per-draw ε by `factor` makes the planned spend fit by
            # the plain sum; each step says at which temperature (`temperature_for`).
            factor = math.fsum(r.epsilon * r.count for r in planned) / remaining
            temperatures = {
                s.temperature_for(factor) for s in private_steps if s.privacy_epsilon_per_draw
            }
            advice += (
                f"; or sample at temperature ≥ {temperatures.pop():.4g}"
                if len(temperatures) == 1
                else f"; or multiply every step's temperature by at least {factor:.4g}"
            )
        raise BudgetExceededError(f"{refusal} {advice}.") from None


def _subsampled_as(
    planned: list[Release], factor: float, rate: float | None = None
) -> list[Release]:
    """``planned`` with every subsampled step's noise multiplier z times ``factor`` (and its
    sampling rate ``rate``, when given); other releases as they are."""
    return [
        replace(
            r,
            event=SubsampledGaussianEvent(
                rate or r.event.sampling_rate, r.event.noise_multiplier * factor, r.delta
            ),
        )
        if isinstance(r.event, SubsampledGaussianEvent)
        else r
        for r in planned
    ]


def _length_advice(chains: int, tune: int, iterations: int) -> str:
    """How long the chains may be when ``iterations`` per chain (tuning included) fit."""
    if iterations < tune:
        return (
            f"With {chains} chains, tuning alone does not fit: at most "
            f"{counted(iterations, 'iteration')} per chain, tuning included (tune={tune})"
        )
    return (
        f"With {chains} chains and tune={tune}, at most {counted(iterations - tune, 'draw')} per "
        "chain fit"
    )


def _subsampled_advice(
    budget: Budget, ledger: PrivacyLedger, planned: list[Release], *, chains: int, tune: int
) -> str:
    """What fits when a run with subsampled steps does not: the iterations per chain, and the
    factor on every subsampled step's noise multiplier z = σ·q'T/c, i.e. on its noise_scale σ
    or its temperature T (searched with the ledger's own composition, before any data)."""

    def fits(releases: list[Release]) -> bool:
        try:
            budget.check(ledger, releases)
        except BudgetExceededError:
            return False
        return True

    def scaled(factor: float) -> list[Release]:
        return _subsampled_as(planned, factor)

    low, high = 0, planned[0].count
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (
            (middle, high) if fits([replace(r, count=middle) for r in planned]) else (low, middle)
        )
    advice = _length_advice(chains, tune, low) + _rate_advice(planned, fits)
    factor = 2.0
    while not fits(scaled(factor)) and factor < 2.0**20:
        factor *= 2
    if not fits(scaled(factor)):
        return advice
    low_factor, high_factor = factor / 2, factor
    for _ in range(8):  # to 0.4 % of the factor
        middle = (low_factor + high_factor) / 2
        low_factor, high_factor = (
            (low_factor, middle) if fits(scaled(middle)) else (middle, high_factor)
        )
    return (
        f"{advice}; or multiply noise_scale (σ) or the temperature of the subsampled steps by "
        f"at least {high_factor:.4g} (their noise multiplier z = σ·qT/c: a larger q raises z "
        "too, which helps most where z is below about 1)"
    )


def _rate_advice(planned: list[Release], fits) -> str:
    """Which sampling rate fits at the same σ, T and c, when every subsampled step has one q:
    z = σq'T/c grows with q' (`pymc_private.dp.subsampling`) and the total falls with it, so
    the smallest q in (q', 1] that fits is bisected on log q to 10 %."""
    rates = {r.event.sampling_rate for r in planned if isinstance(r.event, SubsampledGaussianEvent)}
    if len(rates) != 1 or rates == {1.0}:
        return ""
    (rate,) = rates

    def at(new_rate: float) -> list[Release]:
        return _subsampled_as(planned, new_rate / rate, new_rate)

    if not fits(at(1.0)):
        return f"; no sampling_rate in ({rate:.4g}, 1] fits at the same noise_scale, T and clip"
    low, high = rate, 1.0
    while high / low > 1.1:  # each try computes a Rényi curve (~0.5 s)
        middle = math.sqrt(low * high)
        low, high = (low, middle) if fits(at(middle)) else (middle, high)
    return f"; or sampling_rate ≥ {high:.4g} at the same noise_scale, T and clip"


def _released(
    idata: xr.DataTree,
    private_steps: list[PrivateStep],
    privatisation: Privatisation | None,
) -> xr.DataTree:
    """Keep what is public: draws, declared-safe stats, privatised statistics."""
    groups = {"posterior": idata["posterior"].to_dataset()}
    raw_route = any(s.touches_raw_data for s in private_steps) or privatisation is None
    if "sample_stats" in idata.children:
        stats = idata["sample_stats"].to_dataset()
        if raw_route:
            safe = {name for s in private_steps for name in s.released_stats}
            stats = stats[[name for name in stats.data_vars if name in safe]]
        # Python objects (nutpie's divergence_message, text or None) do not survive to_netcdf
        # (None comes back as NaN): dropped, as pm.sample drops its own warning stat.
        stats = stats.drop_vars([name for name, v in stats.data_vars.items() if v.dtype == object])
        if "privacy_epsilon" in stats:
            # Several private steps: PyMC stacks their stats on an extra dim; a draw costs
            # the sweep, the sum over the steps.
            eps = stats["privacy_epsilon"]
            extra = [d for d in eps.dims if d not in ("chain", "draw")]
            stats["privacy_epsilon"] = eps.sum(extra)
            unused = [d for d in extra if all(d not in v.dims for v in stats.data_vars.values())]
            stats = stats.drop_vars([d for d in unused if d in stats.coords])
        else:
            # No private step (NUTS on a privatised model): every draw is post-processing.
            draws = groups["posterior"].sizes
            stats["privacy_epsilon"] = (
                ("chain", "draw"),
                np.zeros((draws["chain"], draws["draw"])),
            )
        groups["sample_stats"] = stats
    if privatisation is not None:
        groups["constant_data"] = _constant_data(privatisation)
    # Copies: `seal` keeps only the public attributes of each group.
    released = xr.DataTree.from_dict({name: group.copy() for name, group in groups.items()})
    released.attrs = {key: idata.attrs[key] for key in PUBLIC_ATTRS if key in idata.attrs}
    return released


def _constant_data(privatisation: Privatisation) -> xr.Dataset:
    """The privatised statistics, as the DataTree's ``constant_data``, with whether the
    posterior models their noise (public: the user chose it)."""
    return xr.Dataset(
        {
            name: xr.DataArray(value, dims=[f"{name}_dim_{i}" for i in range(value.ndim)])
            for name, value in privatisation.statistics.items()
        },
        attrs={NOISE_AWARE_ATTR: int(privatisation.noise_aware)},
    )
