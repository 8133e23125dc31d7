"""The pay-once route: privatised sufficient statistics and the models built on them.

`privatize` is a model transform in the spirit of `pm.do` and `pm.observe`. It computes the
sufficient statistics s(D) of every observed node on `PrivateData` (grouped where a
parameter is indexed by private data), adds Laplace noise once (Zhang et al. 2016,
Algorithm 1; Foulds et al. 2016, eq. 16), projects the result onto the set of statistics
some data set could have produced (post-processing, free), and returns a new model whose
likelihood is written with those privatised statistics alone. From then on the statistics
are public: any number of draws, chains and step methods (NUTS included) cost nothing more.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pymc.model.fgraph import (
    ModelNamed,
    ModelObservedRV,
    ModelVar,
    fgraph_from_model,
    model_from_fgraph,
    model_named,
    model_potential,
)
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Variable
from pytensor.graph.traversal import ancestors

from pymc_private.analysis.core import PrivacyAnalysis, analyze, term_statistics
from pymc_private.analysis.privatisation import (
    POTENTIAL_SUFFIX,
    Privatisation,
    tag_conjugate,
    tag_released,
)
from pymc_private.analysis.routes import RouteCost, route_cost
from pymc_private.conditionals.blocks import has_conditional
from pymc_private.data.declaration import datasets_of
from pymc_private.data.ledgers import ledger_for
from pymc_private.data.records import SharedRecords
from pymc_private.dp.budget import Budget, checked_budget
from pymc_private.dp.checks import checked_delta, checked_epsilon, checked_secure
from pymc_private.dp.events import Release
from pymc_private.dp.noise import NoiseLaw
from pymc_private.dp.session import releasing
from pymc_private.errors import (
    CalibrationWarning,
    InvalidPrivacyParameterError,
    UninformativeReleaseWarning,
    UnsupportedModelError,
)
from pymc_private.noise_aware.likelihood import (
    add_noise_aware_likelihood,
    noise_to_spread,
)
from pymc_private.noise_aware.projection import projected_statistics
from pymc_private.pay_once.plans import ReleasePlan, checked_mechanism, chosen_plan
from pymc_private.planning.planner import forecast

__all__ = ["privatize", "release_statistics"]


def privatize(
    model: pm.Model,
    epsilon: float,
    *,
    delta: float = 0.0,
    mechanism: str = "auto",
    budget: Budget | None = None,
    noise_aware: bool = True,
    release: str = "cells",
    secure: bool = True,
    random_seed=None,
) -> pm.Model:
    """Release the model's sufficient statistics once under ε-DP and return a model on them.

    The release costs ``epsilon`` once (ε-DP, or (ε, δ)-DP with ``delta``), recorded in the
    data sets' ledger; every draw, chain and model fitted on the returned model afterwards is
    free. How the noise is drawn and why it is private: Notes below and :ref:`costs-privatize`.

    Parameters
    ----------
    model
        A model whose sensitive data enters through `pmp.PrivateData` and whose likelihood
        reduces to sufficient statistics (see `pmp.analyze`).
    epsilon
        The ε of the release: finite and > 0.
    delta
        The δ of the release, in [0, 1). 0 (default): pure ε-DP, discrete Laplace noise.
        δ > 0 allows the Gaussian mechanism (Notes).
    mechanism
        ``"auto"`` (default): the mechanism of lower noise variance per cell at (ε, δ)
        (`release_plan.chosen_plan`; Laplace when δ = 0); ``"laplace"``; or ``"gaussian"`` (needs
        δ > 0). The ledger shows which was used.
    budget
        A `pmp.Budget` the data sets' ledger plus this release must fit, checked before
        the data is read: over budget, `BudgetExceededError`, nothing is released or
        recorded.
    noise_aware
        True (default): the returned model's likelihood treats the released statistics as
        noisy observations of the true ones (`pymc_private.noise_aware.likelihood`,
        :ref:`costs-noise-aware`), so its intervals cover; False: the plug-in posterior,
        which treats them as exact (narrower, miscalibrated when the noise is not small).
    release
        ``"cells"`` (default): every statistic in its own cells (Notes). ``"fourier"``: for
        models of Boolean variables (Bernoulli naive Bayes), the parity counts of Zhang et
        al. 2016, Algorithm 2, noised once at Δ₁ = their number and reconstructed into
        consistent tables (`release_plan.FourierPlan`, which states its cost); plug-in
        posterior only (``noise_aware=False``).
    secure
        True (default): OpenDP's exact samplers from the operating system's generator, not
        seedable. False: numpy noise, reproducible from ``random_seed`` by whoever holds
        it, for simulations and benchmarks; the releases are marked not secure.
    random_seed
        Seed of the numpy noise when ``secure=False``; a secure release ignores it (a seeded
        release would be reproducible, hence not secure).

    Returns
    -------
    pm.Model
        The privatised model; `privatised_statistics` returns what was released.

    Raises
    ------
    InvalidPrivacyParameterError
        ``epsilon`` not a finite number > 0, ``delta`` not in [0, 1), ``mechanism`` unknown
        or ``"gaussian"`` with δ = 0, ``release`` unknown or ``"fourier"`` with
        ``noise_aware=True``, ``secure`` not a bool, or a share ε_j (ρ_j) that is
        not a finite number > 0 with a finite noise scale > 0 in floating point (e.g. a
        statistic whose Δ_j is ~1e-305 of Δ₁); all before any noise.
    BudgetExceededError
        The release does not fit ``budget``.
    UnsupportedModelError
        The analysis cannot reduce the model to sufficient statistics (its own message), the
        model cannot be rebuilt without the data, or ``release="fourier"`` on a model that
        is not one of Boolean variables (all before any noise).
    UnboundedSensitivityError, DataBoundsError
        From `pmp.analyze`.

    Notes
    -----
    **Mechanism (Zhang et al. 2016, Algorithm 1; Foulds et al. 2016, eq. 16).**
    ``s̃_j = Π(s_j(D) + Z_j)`` for every statistic s_j of `pmp.analyze(model).statistics`,
    with independent discrete Laplace noise ``Z_j`` of scale Δ₁/ε in natural units, where
    ``Δ₁ = sup ‖s(D) − s(D')‖₁`` over one replaced record is the analysis' record-level
    ``sensitivity_l1``.

    As implemented (:ref:`privacy-model-as-implemented`): every statistic is a sum of integers
    computed exactly in int64 (counts, or the grid integers of
    `pymc_private.families.statistics.DataGrid`:
    float data are represented on a public grid of step q inside their bounds before anything is
    summed), so s_j(D) is exact and its sensitivity Δ_j (in grid steps, an integer) is a true
    bound for the code as it runs (Casacuberta et al. 2022). Each s_j gets OpenDP's exact
    discrete Laplace noise (Canonne, Kamath & Steinke 2020; no floating-point attack, Mironov
    2012) with a share ε_j of ε (rounded down until Σ_j ε_j ≤ ε exactly), i.e. scale Δ_j/ε_j
    in grid steps. Release j is ε_j-DP and the releases compose sequentially to Σ_j ε_j ≤ ε.

    **The split.** By default ε_j = ε·Δ_j/Δ₁ (every cell the noise scale Δ₁/ε in natural
    units). For 2 to 4 sums released one by one, not a regression's moments (a Normal's Σx
    and Σx² with σ free), the shares are those that minimise the posterior variance
    `pmp.plan` predicts (`pymc_private.planning.planner.forecast`), from the declarations,
    the priors and n only: public, so the split costs nothing and any split of ε composes to
    ε. (With σ free, Σx's sensitivity is a thousandth of Σx²'s on a range of [0, 2600], and
    the proportional split left the mean to the prior.) The ledger states each ε_j, and
    `pmp.plan` the noise of each statistic.

    **A warning before spending.** When the same prediction says the release will barely
    inform a parameter (posterior sd at least half its prior's and twice the raw-data
    posterior's), an
    `UninformativeReleaseWarning` says so before anything is released, with the ε at which
    every posterior sd would be within 1.5× the raw-data posterior's.

    Each release records the ε its privacy map returns (≤ its share), so the ledger total is
    ≤ ε. A statistic whose sensitivity is 0 is a public function of n and the bounds: it is
    released as is, free. OpenDP adds in saturating int64 arithmetic, a post-processing of
    the exact sum.

    **The Gaussian mechanism (δ > 0; Canonne, Kamath & Steinke 2020).**
    With ``mechanism="gaussian"`` (or ``"auto"`` when it adds less noise) each s_j gets
    OpenDP's exact discrete Gaussian instead, at ρ_j = ρ·Δ₂_j²/Δ₂² where ρ = ``zcdp_rho(ε, δ)``
    is the largest ρ the ledger converts to at most ε at δ (`dp.events.zcdp_epsilon`), and
    Δ₂_j² = unit_j²·Δ_j·Δ∞_j bounds the squared L2 sensitivity (`StatisticSpec
    .sensitivity_l2_squared`; exact for counts: √(2d + 1) for naive Bayes against Δ₁ =
    2d + 1). Every cell gets σ = Δ₂/√(2ρ) in natural units. Release j is ρ_j-zCDP; the ρ_j
    add, and the ledger composes them as Rényi DP, so the release is (ε, δ)-DP. Each release
    records its own (ε_j, δ) and ρ_j as OpenDP's privacy map returns it (≤ its share).

    A regression's moments XᵀX, Xᵀy and yᵀy count in Δ₂² by their joint bound
    (`statistics.regression_l2_squared`), and are recorded as one release at the ρ of that
    bound (`release_plan.CellsPlan`).

    When every noised statistic is a count (cells move by at most 1; Δ₁ = K cells in all),
    the zCDP conversion is replaced by the exact privacy profile of K unit shifts
    (`dp.events.unit_shift_epsilon`, proved the worst case there; dp-accounting's PLD):
    every cell gets σ = ``unit_shift_scale(ε, δ, K)`` (`dp.events.unit_shift_scale`), about
    7 % below Δ₂/√(2ρ) at ε = 1, δ = 10⁻⁶, and the statistics are recorded as one vector
    release (`release_plan.UnitShiftPlan`) whose ε is that profile's at δ, ≤ ε.

    Projection Π (post-processing, free of privacy cost): counts (category 0 derived) are
    projected onto {v ≥ 0, Σ_k v_k = N} in Euclidean distance and rounded to integers with
    the same total (N = n, or the privatised group size), so each lies in [0, N] and agrees
    with its group total; sums Σt(x) are clipped to [N·min t, N·max t] over the declared
    bounds; a sum of squares is raised to at least (Σx)²/N (Cauchy–Schwarz) so that every
    Gamma posterior of a precision is proper; Gram matrices (joined with Xᵀy and yᵀy when
    released) are projected onto the positive semi-definite cone.

    The returned model has the same free variables, priors, coords and names; each observed
    node on `PrivateData` is replaced by a ``pm.Potential`` named ``<node>_privatised``
    holding its log-likelihood written with the privatised statistics
    (`LikelihoodFamily.logp_from_statistics`), which it reads from data variables named
    after the statistics and tagged as released (`Privatisation`); the `PrivateData` (and
    dims used only by them) are gone from its graph. Any sampler may be used on it
    (`pmp.PrivateGibbs` is chosen by `pmp.sample` and by PyMC's own step assignment for the
    conjugate variables). Should the model be extended with raw `PrivateData` again, the
    graph decides: `pmp.sample` then treats it as a raw-data model.

    The releases are recorded in the ledger of the data sets the model reads
    (`pmp.ledger_for`), which the returned model shares.
    """
    epsilon = checked_epsilon(epsilon)
    delta = checked_delta(delta)
    mechanism = checked_mechanism(mechanism, delta)
    _checked_release(release, noise_aware)
    secure = checked_secure(secure)
    checked_budget(budget)
    rng = np.random.default_rng(random_seed)
    analysis = analyze(model)
    analysis.epsilon_per_draw("privatize")
    ledger = ledger_for(model)

    def plan_at(share: float, split=None):
        return chosen_plan(
            analysis,
            share,
            delta=delta,
            mechanism=mechanism,
            release=release,
            secure=secure,
            split=split,
        )

    # Per person (data declared with max_records=k): the noise is calibrated per record so
    # that the releases charged per person compose to ε at δ.
    share = ledger.per_record_epsilon(epsilon, lambda e: plan_at(e).releases(), delta)
    # The budget split that minimises the predicted posterior variance, and whether the
    # release will inform the posterior at all: public quantities, before anything is spent.
    predicted = forecast(model, epsilon, delta, mechanism)
    plan = plan_at(share, None if predicted is None else predicted.split)
    message = None if predicted is None else predicted.warning()
    if message is not None:
        warnings.warn(message, UninformativeReleaseWarning, stacklevel=2)
    datasets = datasets_of(model)
    placeholders = {
        spec.name: spec.natural(np.zeros(spec.shape, dtype=np.int64))
        for spec in analysis.statistics
    }
    dry_run = ReleasedStatistics(placeholders, [], placeholders, {})
    _model_on_statistics(model, analysis, _released(analysis, dry_run, 0.0, datasets, noise_aware))
    planned = plan.releases()
    with releasing():  # one lock across check → release → record (pymc_private.dp.session)
        for limit in ledger.limits(budget):
            limit.check(ledger, planned)
        released = release_statistics(analysis, model, plan, rng=rng)
        # Checked again under the journals' locks; if it cannot be recorded whole, the noisy
        # statistics are discarded with the error.
        ledger.record_all(released.releases, budget=budget)
    privatisation = _released(analysis, released, epsilon, datasets, noise_aware)
    private_model = _model_on_statistics(model, analysis, privatisation)
    for rv in private_model.free_RVs:
        conjugate = not noise_aware and has_conditional(analysis, rv, private_model)
        tag_conjugate(rv, conjugate)
    if not noise_aware:
        _warn_plug_in(private_model, analysis, privatisation)
    return private_model


@route_cost
class PrivatizeCost(RouteCost):
    """The pay-once route: 0 per draw, every draw on the privatised model being
    post-processing of the one release `privatize` records (Laplace noise of scale Δ₁/ε, or
    Gaussian noise at δ > 0)."""

    name = "privatize"
    formula = "0 per draw"
    source = "the (ε, δ) of one release of s(D), paid once (Zhang et al. 2016, Alg. 1)"
    row = 3

    @classmethod
    def unavailable(cls, analysis):
        if analysis.sensitivity_l1 is None:
            return "; ".join(analysis.statistics_unavailable.values())
        return None

    @classmethod
    def epsilon(cls, analysis, temperature, blocks):
        return 0.0


# The noise-to-spread ratio above which the plug-in posterior is called miscalibrated: its
# 90% intervals then cover less than 86% (`noise_aware.noise_to_spread`).
PLUG_IN_RATIO = 0.5


def _warn_plug_in(model: pm.Model, analysis: PrivacyAnalysis, privatisation) -> None:
    """A `CalibrationWarning` when the plug-in posterior ignores noise that is not small next
    to a statistic's sampling spread (public quantities only)."""
    ratios = noise_to_spread(model, analysis, privatisation)
    if not ratios:
        return
    name, ratio = max(ratios.items(), key=lambda item: item[1])
    if ratio <= PLUG_IN_RATIO:
        return
    warnings.warn(
        f"The plug-in posterior (noise_aware=False) treats the released statistics as exact, "
        f"but the noise on `{name}` has {ratio:.3g} times the standard deviation of the "
        f"statistic itself (at the prior's typical parameters): its intervals will be about "
        f"{math.sqrt(1 + ratio * ratio):.3g} times too narrow and may sit far from the truth. "
        "Use the noise-aware default, pmp.privatize(model, epsilon), which models the noise "
        "and samples in seconds.",
        CalibrationWarning,
        stacklevel=3,
    )


def _released(analysis, released, epsilon, datasets, noise_aware) -> Privatisation:
    return Privatisation(
        statistics=dict(released.noisy if noise_aware else released.statistics),
        releases=tuple(released.releases),
        analysis=analysis,
        epsilon=epsilon,
        datasets=datasets,
        noise=dict(released.noise),
        noise_aware=noise_aware,
    )


class ReleasedStatistics(NamedTuple):
    """What `release_statistics` releases (read-only arrays by statistic name, natural
    units).

    Attributes
    ----------
    statistics
        Π(s(D) + noise): projected onto what some data set could produce (for the plug-in
        posterior and the conjugate Gibbs sampler).
    releases
        One `Release` per noised statistic, for the caller to record.
    noisy
        s(D) + noise before the projection: what the noise-aware posterior conditions on
        (its noise law is exact only before the projection).
    noise
        The noise law of each noised statistic (`pymc_private.dp.noise.NoiseLaw`).
    """

    statistics: dict[str, np.ndarray]
    releases: list[Release]
    noisy: dict[str, np.ndarray]
    noise: dict[str, NoiseLaw]


def release_statistics(
    analysis: PrivacyAnalysis,
    data: pm.Model | Mapping[str, np.ndarray],
    plan: ReleasePlan,
    *,
    rng: np.random.Generator | None = None,
) -> ReleasedStatistics:
    """The mechanism of `privatize` on raw arrays: s(D) + noise, projected, and its releases.

    ``analysis`` is the (public) analysis of the data's model; ``data`` is that model, its
    `PrivateData` checked (`pymc_private.data.declaration.check_private_data`), or its raw in-memory
    arrays by `PrivateData` name, checked by the caller (simulations). ``plan`` is the
    release plan of ``analysis`` (`pymc_private.pay_once.plans.chosen_plan`), which states its
    cost and the split of the budget between the statistics. The caller records the returned
    releases.
    """
    noisy, releases, noise = plan.run(plan.read(data), rng)
    statistics = projected_statistics(analysis, noisy, noise)
    noisy = {name: np.array(value) for name, value in noisy.items()}
    for value in (*statistics.values(), *noisy.values()):
        value.setflags(write=False)
    return ReleasedStatistics(statistics, releases, noisy, noise)


def _checked_release(release, noise_aware: bool) -> None:
    if release not in ("cells", "fourier"):
        raise InvalidPrivacyParameterError(
            f"release must be 'cells' or 'fourier', got {release!r}."
        )
    if release == "fourier" and noise_aware:
        raise InvalidPrivacyParameterError(
            "release='fourier' reconstructs every table from shared noisy coefficients, whose "
            "correlated noise the noise-aware posterior does not model: pass "
            "noise_aware=False (the plug-in posterior), or use release='cells'."
        )


# ---------------------------------------------------------------------------------------
# The model on statistics
# ---------------------------------------------------------------------------------------


def _model_on_statistics(
    model: pm.Model, analysis: PrivacyAnalysis, privatisation: Privatisation
) -> pm.Model:
    """A copy of ``model`` without its private data: observed nodes become Potentials that
    read the released statistics from data variables tagged with ``privatisation``."""
    if any(value is not None for value in model.rvs_to_initial_values.values()):
        raise UnsupportedModelError(
            "pmp.privatize copies the model without its data and cannot copy custom initial "
            "values: remove `initval=` from the priors (pymc-private's truncated priors start "
            "inside their support on their own)."
        )
    observed = {term.node for term in analysis.terms}
    names = {f"{node}{POTENTIAL_SUFFIX}" for node in observed}
    taken = sorted(names & set(model.named_vars))
    if taken:
        raise UnsupportedModelError(
            f"pmp.privatize names the likelihood of each observed node `<node>"
            f"{POTENTIAL_SUFFIX}`, but the model already has {taken}: rename them."
        )
    taken = sorted({spec.name for spec in analysis.statistics} & set(model.named_vars))
    if taken:
        raise UnsupportedModelError(
            f"pmp.privatize names the data holding each released statistic after it, but the "
            f"model already has {taken}: rename them."
        )
    with _records_not_copied(model, analysis.private_data):
        fgraph, memo = fgraph_from_model(model, inlined_views=True)
    free = {rv.name: memo[rv] for rv in model.free_RVs}
    released = {}
    for name, value in privatisation.statistics.items():
        data = pytensor.shared(np.array(value), name=name)
        tag_released(data, privatisation)
        fgraph.add_input(data)
        fgraph.add_output(model_named(data, name))
        released[name] = data
    for term in [] if privatisation.noise_aware else analysis.terms:
        full, totals = term_statistics(analysis, released, term.node)
        values = term.parameters_at(free)
        logp = term.family.logp_from_statistics(
            term,
            values,
            {kind: pt.cast(value, "float64") for kind, value in full.items()},
            pt.cast(totals, "float64"),
        )
        potential = model_potential(
            pt.as_tensor_variable(logp, dtype="float64"), f"{term.node}{POTENTIAL_SUFFIX}"
        )
        fgraph.add_output(potential)

    private = set(analysis.private_data)
    for node in list(fgraph.toposort()):
        if node not in fgraph.apply_nodes:
            continue
        is_observed = isinstance(node.op, ModelObservedRV) and node.outputs[0].name in observed
        is_private = isinstance(node.op, ModelNamed) and node.outputs[0].name in private
        if is_observed or is_private:
            fgraph.remove_node(node)

    _drop_private_dims(fgraph, model, private)
    private_model = model_from_fgraph(fgraph, mutate_fgraph=True)
    lost = sorted({rv.name for rv in model.free_RVs} - {rv.name for rv in private_model.free_RVs})
    if lost:
        raise UnsupportedModelError(
            f"The free variables {lost} depend on the private data (e.g. a size taken from "
            "its shape) and would be lost without it: give them a fixed shape or dims."
        )
    _refuse_dropped_outputs(model, private_model, private)
    order = {rv.name: position for position, rv in enumerate(model.free_RVs)}
    private_model.free_RVs.sort(key=lambda rv: order[rv.name])
    if privatisation.noise_aware:
        add_noise_aware_likelihood(private_model, analysis, privatisation)
    _check_no_private_inputs(private_model, private)
    return private_model


@contextlib.contextmanager
def _records_not_copied(model: pm.Model, names):
    """While open, the `PrivateData` ``names`` of ``model`` hold `SharedRecords` views of
    their values: the copy `fgraph_from_model` makes drops the private data anyway, so
    copying n records (or materialising a Dask placeholder) would cost time and memory for
    nothing."""
    variables = [v for v in model.data_vars if v.name in names]
    values = [v.container.storage[0] for v in variables]
    try:
        for variable, value in zip(variables, values, strict=True):
            variable.container.storage[0] = value.view(SharedRecords)
        yield
    finally:
        for variable, value in zip(variables, values, strict=True):
            variable.container.storage[0] = value


def _refuse_dropped_outputs(model: pm.Model, private_model: pm.Model, private: set[str]) -> None:
    """Refuse, by name, every Deterministic and Potential the rebuilt model lost.

    Removing the private data and the observed nodes from the graph removes everything that
    reads them. `pmp.analyze` refuses what reads their values (`refuse_private_paths`), but a
    Deterministic or Potential reading only a shape (``y_obs.shape[0] * p``) or an observed
    variable's shape would vanish without a word; it is refused here instead, before any
    noise is drawn.
    """
    kept = set(private_model.named_vars)
    dropped = [v for v in (*model.deterministics, *model.potentials) if v.name not in kept]
    if not dropped:
        return
    removed = {v for v in model.data_vars if v.name in private} | set(model.observed_RVs)
    described = []
    for variable in dropped:
        kind = "Deterministic" if variable in model.deterministics else "Potential"
        reads = sorted({v.name for v in ancestors([variable]) if v in removed})
        described.append(
            f"{kind} `{variable.name}` (reads " + ", ".join(f"`{name}`" for name in reads) + ")"
        )
    raise UnsupportedModelError(
        "pmp.privatize rebuilds the model without its private data and observed variables, "
        f"so it would drop {'; '.join(described)}. Remove each, or compute it from the "
        "parameters only (the record count n and the data's shapes are public: write them as "
        "constants)."
    )


def _drop_private_dims(fgraph, model: pm.Model, private: set[str]) -> None:
    """Dims used only by private data and observed nodes are removed (their coords may be
    record identifiers); a kept dim whose length was read from private data gets it as a
    constant (shapes are public)."""
    used = set()
    for node in fgraph.apply_nodes:
        if isinstance(node.op, ModelVar):
            used.update(node.op.dims)
    private_vars = [v for v in model.data_vars if v.name in private]
    for dim, length in list(fgraph._dim_lengths.items()):
        reads_private = isinstance(length, Variable) and any(
            v.name in private for v in ancestors([length]) if isinstance(v, SharedVariable)
        )
        if dim not in used:
            if reads_private or dim in _dims_of(model, private_vars):
                fgraph._dim_lengths.pop(dim)
                fgraph._coords.pop(dim, None)
        elif reads_private:
            fgraph._dim_lengths[dim] = pt.constant(int(length.eval()), dtype="int64")


def _dims_of(model: pm.Model, variables) -> set[str]:
    return {dim for v in variables for dim in (model.named_vars_to_dims.get(v.name) or ())}


def _check_no_private_inputs(model: pm.Model, private: set[str]) -> None:
    outputs = [
        *model.free_RVs,
        *model.potentials,
        *model.deterministics,
        *model.value_vars,
        *(v for v in model.dim_lengths.values() if isinstance(v, Variable)),
    ]
    for variable in ancestors(outputs):
        if isinstance(variable, SharedVariable) and variable.name in private:
            raise UnsupportedModelError(
                f"`{variable.name}` is private data but is still read by the model once its "
                "likelihood is written with statistics; only observed nodes may read it."
            )
