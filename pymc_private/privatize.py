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

import math
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any
from weakref import WeakKeyDictionary

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.model.fgraph import (
    ModelNamed,
    ModelObservedRV,
    ModelVar,
    fgraph_from_model,
    model_from_fgraph,
    model_potential,
)
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant, Variable
from pytensor.graph.traversal import ancestors

from pymc_private.accounting import PrivacyLedger, Release, ledger_for
from pymc_private.analysis import PrivacyAnalysis, analyze
from pymc_private.errors import InvalidPrivacyParameterError, UnsupportedModelError
from pymc_private.families import StatisticSpec, complete_statistic
from pymc_private.mechanisms import discrete_laplace, laplace

__all__ = [
    "Privatisation",
    "privatisation_of",
    "privatised_model_of",
    "privatised_statistics",
    "privatize",
    "release_statistics",
    "term_statistics",
]

POTENTIAL_SUFFIX = "_privatised"


@dataclass(frozen=True, eq=False)
class Privatisation:
    """What `privatize` released for a model: public from then on.

    Attributes
    ----------
    statistics
        The privatised (noisy, then projected) sufficient statistics in released form, by
        the names of ``analysis.statistics`` (category 0 of counts and the lower triangle of
        Gram matrices are derived, see `pymc_private.families.complete_statistic`).
    releases
        The releases that paid for them: one per kind of noise (discrete Laplace for the
        integer statistics, Laplace for the real ones), whose ε add up to the ε asked for.
    ledger
        The ledger the releases were recorded in; `pmp.sample` on the privatised model records
        there the draws of any private step it is given (at ε = 0), and checks budgets
        against it.
    analysis
        The public privacy analysis of the original model (terms, statistics, Δ₁), which the
        conjugate Gibbs sampler reads.
    epsilon
        The ε asked for.
    """

    statistics: dict[str, np.ndarray]
    releases: tuple[Release, ...]
    ledger: PrivacyLedger
    analysis: PrivacyAnalysis
    epsilon: float


_PRIVATISATIONS: WeakKeyDictionary[pm.Model, Privatisation] = WeakKeyDictionary()
_VARIABLE_MODELS: WeakKeyDictionary[Variable, weakref.ref] = WeakKeyDictionary()


def privatisation_of(model: pm.Model) -> Privatisation | None:
    """The privatisation a model was built from by `privatize`, or None for other models."""
    return _PRIVATISATIONS.get(model)


def privatised_model_of(variable: Variable) -> pm.Model | None:
    """The model returned by `privatize` that a free random variable belongs to, or None."""
    reference = _VARIABLE_MODELS.get(variable)
    return None if reference is None else reference()


def privatised_statistics(model: pm.Model) -> dict[str, np.ndarray]:
    """The privatised statistics of a model returned by `privatize` (copies; public)."""
    privatisation = privatisation_of(model)
    if privatisation is None:
        raise UnsupportedModelError(
            "This model was not returned by pmp.privatize: it has no privatised statistics. "
            "Call pmp.privatize(model, epsilon) first."
        )
    return {name: value.copy() for name, value in privatisation.statistics.items()}


def term_statistics(
    analysis: PrivacyAnalysis, statistics: dict[str, np.ndarray], node: str
) -> tuple[dict[str, np.ndarray], Any]:
    """The full statistics of one observed node, by kind, and its totals.

    ``statistics`` holds released-form statistics by name (privatised, or computed from raw
    data by a pay-per-draw sampler). Totals are n, or the group sizes n_g of a grouped node
    completed from the released group counts. Post-processing only.
    """
    term = analysis.term(node)
    totals_spec = term.totals_statistic()
    totals: Any = analysis.n_records
    if totals_spec is not None:
        totals = complete_statistic(totals_spec, statistics[totals_spec.name], totals)
    full = {
        kind: complete_statistic(spec, statistics[spec.name], totals)
        for kind, spec in analysis.statistics_of(node).items()
    }
    return full, totals


def privatize(
    model: pm.Model,
    epsilon: float,
    *,
    secure: bool = True,
    random_seed=None,
    ledger: PrivacyLedger | None = None,
) -> pm.Model:
    """Release the model's sufficient statistics once under ε-DP and return a model on them.

    Mechanism (Zhang et al. 2016, Algorithm 1; Foulds et al. 2016, eq. 16)
    ---------------------------------------------------------------------
    ``s̃ = Π(s(D) + noise)`` with ``noise_k ~ Laplace(Δ₁/ε)``, where s(D) stacks every
    statistic of `pmp.analyze(model).statistics` and ``Δ₁ = sup ‖s(D) − s(D')‖₁`` over one
    replaced record is the analysis' record-level ``sensitivity_l1``. Integer statistics get
    discrete Laplace noise and real ones Laplace noise (OpenDP's exact samplers unless
    ``secure=False``).

    Privacy: ε-DP in total. Let Δ_I and Δ_R be the sensitivities of the integer and the real
    statistics (sums of their per-statistic sensitivities, so Δ_I + Δ_R = Δ₁). The integer
    part is released with ε_I = ε·Δ_I/Δ₁ and the real part with ε_R = ε − ε_I (rounded down
    so that ε_I + ε_R ≤ ε exactly in floating point), both at noise scale
    Δ_I/ε_I = Δ_R/ε_R = Δ₁/ε: the part with L1 sensitivity Δ_I is ε_I-DP (the
    (discrete) Laplace mechanism), the other ε_R-DP, and the two releases from the same data
    compose sequentially to ε_I + ε_R ≤ ε. Each release records the ε its mechanism's privacy
    map returns (≤ its nominal share with OpenDP), so the ledger total is ≤ ε. A part whose
    sensitivity is 0 is a public function of n and the bounds: it is released as is, at no
    cost.

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
    (`LikelihoodFamily.logp_from_statistics`); the `PrivateData` (and dims used only by
    them) are gone from its graph. Any sampler may be used on it (`pmp.PrivateGibbs` is
    chosen by `pmp.sample` and by PyMC's own step assignment for the conjugate variables).

    Parameters
    ----------
    model
        A model whose sensitive data enters through `pmp.PrivateData` and whose likelihood
        reduces to sufficient statistics (see `pmp.analyze`).
    epsilon
        The ε of the release: finite and > 0.
    secure
        True: OpenDP's exact samplers (not seedable). False: numpy noise, reproducible from
        ``random_seed``, for simulations and benchmarks; the releases are marked not secure.
    random_seed
        Seed of the numpy noise when ``secure=False`` (ignored otherwise).
    ledger
        Where to record the releases. Default: the ledger of ``model``'s data
        (`pmp.ledger_for(model)`), so that releases from the same data compose; the returned
        model shares it, so budgets checked when sampling it see these releases.

    Returns
    -------
    pm.Model
        The privatised model; `privatised_statistics` returns what was released.

    Raises
    ------
    InvalidPrivacyParameterError
        ``epsilon`` not a finite number > 0, ``secure`` not a bool, or a share ε_I or ε_R
        that is not a finite number > 0 with a finite noise scale > 0 in floating point
        (e.g. a real part whose Δ_R is ~1e-17 of Δ₁); all before any noise.
    UnsupportedModelError
        The analysis cannot reduce the model to sufficient statistics (its own message), or
        the model cannot be rebuilt without the data (before any noise).
    UnboundedSensitivityError, DataBoundsError
        From `pmp.analyze`.
    """
    epsilon = _checked_epsilon(epsilon)
    if not isinstance(secure, bool):
        raise InvalidPrivacyParameterError(f"secure must be True or False, got {secure!r}.")
    if ledger is not None and not isinstance(ledger, PrivacyLedger):
        raise TypeError(f"ledger must be a pmp.PrivacyLedger or None, got {type(ledger)}.")
    rng = np.random.default_rng(random_seed)
    analysis = analyze(model)
    analysis.epsilon_per_draw("privatize")
    placeholders = {
        spec.name: np.zeros(spec.shape, dtype=np.int64 if spec.integer else np.float64)
        for spec in analysis.statistics
    }
    _model_on_statistics(model, analysis, placeholders)

    arrays = {
        variable.name: variable.get_value(borrow=True)
        for variable in model.data_vars
        if variable.name in analysis.private_data
    }
    statistics, releases = release_statistics(analysis, arrays, epsilon, secure=secure, rng=rng)
    private_model = _model_on_statistics(model, analysis, statistics)

    ledger = ledger_for(model) if ledger is None else ledger
    ledger.record_all(releases)
    _PRIVATISATIONS[private_model] = Privatisation(
        statistics=statistics,
        releases=tuple(releases),
        ledger=ledger,
        analysis=analysis,
        epsilon=epsilon,
    )
    for rv in private_model.free_RVs:
        _VARIABLE_MODELS[rv] = weakref.ref(private_model)
    # PyMC's own step assignment must find PrivateGibbs for the conjugate variables of the
    # returned model: importing the step registers it in pm.STEP_METHODS.
    import pymc_private.steps.gibbs  # noqa: F401

    return private_model


def release_statistics(
    analysis: PrivacyAnalysis,
    arrays: Mapping[str, np.ndarray],
    epsilon: float,
    *,
    secure: bool = True,
    rng: np.random.Generator | None = None,
) -> tuple[dict[str, np.ndarray], list[Release]]:
    """The mechanism of `privatize` on raw arrays: s̃ = Π(s(D) + noise), and its releases.

    ``analysis`` is the model's (public) analysis and ``arrays`` its raw `PrivateData` by
    name; ``epsilon`` is assumed validated. The cost, the split of ε between the integer and
    the real statistics and the projection are documented in `privatize`. The caller records
    the returned releases. Returns read-only arrays by statistic name.
    """
    noisy, releases = _noised(analysis, arrays, epsilon, secure=secure, rng=rng)
    statistics = _projected(analysis, noisy)
    for value in statistics.values():
        value.setflags(write=False)
    return statistics, releases


def _checked_epsilon(epsilon) -> float:
    if isinstance(epsilon, bool | np.bool_) or not isinstance(epsilon, int | float | np.number):
        raise InvalidPrivacyParameterError(
            f"epsilon must be a finite number > 0, got {epsilon!r}; e.g. epsilon=1.0."
        )
    value = float(epsilon)
    if not (math.isfinite(value) and value > 0.0):
        raise InvalidPrivacyParameterError(
            f"epsilon must be a finite number > 0, got {epsilon!r}; smaller ε adds more noise "
            "(scale Δ₁/ε), e.g. epsilon=1.0."
        )
    return value


# ---------------------------------------------------------------------------------------
# Noise: one discrete Laplace release for the integer statistics, one Laplace for the rest
# ---------------------------------------------------------------------------------------


def _noised(
    analysis: PrivacyAnalysis,
    arrays: dict[str, np.ndarray],
    epsilon: float,
    *,
    secure: bool,
    rng: np.random.Generator,
) -> tuple[dict[str, np.ndarray], list[Release]]:
    noisy: dict[str, np.ndarray] = {}
    releases: list[Release] = []
    # Every part is split and validated before the first mechanism draws any noise.
    for part, mechanism, sensitivity, part_epsilon in _noise_plan(analysis, epsilon):
        exact = [np.asarray(spec.compute(arrays)) for spec in part]
        if mechanism is None:
            noisy.update({spec.name: value for spec, value in zip(part, exact, strict=True)})
            continue
        flat, release = mechanism(
            np.concatenate([value.ravel() for value in exact]),
            sensitivity,
            part_epsilon,
            rng=rng,
            secure=secure,
            statistic="; ".join(spec.name for spec in part),
        )
        releases.append(release)
        offsets = np.cumsum([0] + [value.size for value in exact])
        for spec, start, stop in zip(part, offsets[:-1], offsets[1:], strict=True):
            noisy[spec.name] = flat[start:stop].reshape(spec.shape)
    return noisy, releases


def _noise_plan(analysis: PrivacyAnalysis, epsilon: float) -> list[tuple]:
    """The integer and the real part: ``(specs, mechanism, Δ, ε)`` each, validated.

    ε_I = ε·Δ_I/Δ₁ and ε_R = ε − ε_I rounded down until ε_I + ε_R ≤ ε exactly (see
    `privatize`). A part of sensitivity 0 gets mechanism None (released as is, free). A part
    with noise must have a finite ε > 0 and a finite noise scale Δ/ε > 0, which floating point
    can deny when Δ_R ≪ Δ_I (ε_R rounds to 0) or Δ/ε overflows.
    """
    total_sensitivity = float(analysis.sensitivity_l1)
    integer_part = [s for s in analysis.statistics if _is_integer(s)]
    real_part = [s for s in analysis.statistics if not _is_integer(s)]
    integer_sensitivity = float(sum(s.sensitivity_l1 for s in integer_part))
    epsilon_integer = epsilon * integer_sensitivity / total_sensitivity if total_sensitivity else 0
    epsilon_real = epsilon - epsilon_integer
    while Fraction(epsilon_integer) + Fraction(epsilon_real) > Fraction(epsilon):
        epsilon_real = math.nextafter(epsilon_real, 0.0)
    plan = []
    for kind, part, mechanism, part_epsilon in (
        ("integer", integer_part, discrete_laplace, epsilon_integer),
        ("real", real_part, laplace, epsilon_real),
    ):
        if not part:
            continue
        sensitivity = float(sum(spec.sensitivity_l1 for spec in part))
        if sensitivity == 0.0:
            plan.append((part, None, sensitivity, 0.0))
            continue
        scale = sensitivity / part_epsilon if part_epsilon > 0 else math.inf
        if not (part_epsilon > 0 and math.isfinite(part_epsilon) and 0 < scale < math.inf):
            data = sorted({name for spec in part for name in spec.data})
            raise InvalidPrivacyParameterError(
                f"The {kind} statistics ({'; '.join(spec.name for spec in part)}) have "
                f"sensitivity Δ = {sensitivity!r} of Δ₁ = {total_sensitivity!r}, so their "
                f"share ε·Δ/Δ₁ of epsilon={epsilon!r} is {part_epsilon!r} with noise scale "
                f"Δ/ε = {scale!r}, not a finite ε > 0 with a finite scale > 0 in floating "
                f"point. Rescale {data} (and their bounds) so that the sensitivities are "
                "within a few orders of magnitude of each other, or choose another epsilon."
            )
        plan.append((part, mechanism, sensitivity, part_epsilon))
    return plan


def _is_integer(spec: StatisticSpec) -> bool:
    return spec.integer and float(spec.sensitivity_l1).is_integer()


# ---------------------------------------------------------------------------------------
# Projection Π (post-processing)
# ---------------------------------------------------------------------------------------


def _projected(analysis: PrivacyAnalysis, noisy: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    ordered = sorted(analysis.statistics, key=lambda spec: spec.group_by is not None)
    for spec in ordered:
        value = noisy[spec.name]
        if spec.kind == "counts":
            out[spec.name] = _projected_counts(value, _cell_totals(analysis, spec, out))
        elif spec.kind in ("sum", "sum_squares"):
            out[spec.name] = _clipped_sum(analysis, spec, value, _cell_totals(analysis, spec, out))
        else:
            out[spec.name] = np.asarray(value, dtype=np.float64)
    _consistent_squares(analysis, out)
    _positive_semidefinite_gram(analysis, out)
    return {name: np.array(value) for name, value in out.items()}


def _cell_totals(analysis: PrivacyAnalysis, spec: StatisticSpec, out: dict) -> np.ndarray:
    """The record count N behind each cell of ``spec`` (n, or the privatised group size),
    shaped to broadcast against its cells (a count's cells exclude the category axis)."""
    n = analysis.n_records
    if spec.group_by is None:
        return np.asarray(float(n))
    (totals_spec,) = {
        term.totals_statistic().name: term.totals_statistic()
        for term in analysis.terms
        if term.group_by == spec.group_by
    }.values()
    totals = complete_statistic(totals_spec, out[totals_spec.name], n).astype(np.float64)
    cell_ndim = len(spec.shape) - (1 if spec.kind == "counts" else 0)
    return totals.reshape((-1,) + (1,) * (cell_ndim - 1))


def _projected_counts(released: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Counts onto {v ≥ 0, Σ v = N} per cell (category 0 included), then integers."""
    totals = np.broadcast_to(totals, released.shape[:-1])
    released = released.astype(np.float64)
    full = np.concatenate([(totals - released.sum(axis=-1))[..., None], released], axis=-1)
    projected = _simplex_projection(full, totals)
    return _round_preserving_total(projected, totals)[..., 1:].astype(np.int64)


def _simplex_projection(values: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Euclidean projection of each last-axis vector onto {x ≥ 0, Σ x = total}."""
    k = values.shape[-1]
    ordered = -np.sort(-values, axis=-1)
    excess = np.cumsum(ordered, axis=-1) - totals[..., None]
    positions = np.arange(1, k + 1)
    active = ordered - excess / positions > 0
    last = k - 1 - np.argmax(active[..., ::-1], axis=-1)
    shift = np.take_along_axis(excess, last[..., None], axis=-1) / (last[..., None] + 1)
    projected = np.maximum(values - shift, 0.0)
    return np.where(totals[..., None] > 0, projected, 0.0)


def _round_preserving_total(values: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Largest-remainder rounding: integers with the same (integer) totals."""
    floor = np.floor(values)
    missing = np.rint(totals - floor.sum(axis=-1)).astype(np.int64)
    order = np.argsort(-(values - floor), axis=-1, kind="stable")
    ranks = np.argsort(order, axis=-1, kind="stable")
    return floor + (ranks < missing[..., None])


def _clipped_sum(analysis: PrivacyAnalysis, spec: StatisticSpec, value, totals) -> np.ndarray:
    """Σ t(x) into [N·min t, N·max t] elementwise over the declared bounds."""
    data = analysis.private_data[spec.data[0]]
    lower, upper = data.lower, data.upper
    if spec.kind == "sum_squares":
        lower, upper = (
            np.where((lower <= 0) & (upper >= 0), 0.0, np.minimum(lower**2, upper**2)),
            np.maximum(lower**2, upper**2),
        )
    clipped = np.clip(value, totals * lower, totals * upper)
    return clipped.astype(np.int64 if _is_integer(spec) else np.float64)


def _consistent_squares(analysis: PrivacyAnalysis, out: dict) -> None:
    """Raise each privatised Σx² to at least (Σx)²/N, which every data set satisfies."""
    sums = {(s.data, s.group_by): s for s in analysis.statistics if s.kind == "sum"}
    for spec in analysis.statistics:
        first = sums.get((spec.data, spec.group_by)) if spec.kind == "sum_squares" else None
        if first is None:
            continue
        totals = _cell_totals(analysis, spec, out)
        s1 = np.asarray(out[first.name], dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            floor = np.where(totals > 0, s1**2 / totals, 0.0)
        raised = np.maximum(np.asarray(out[spec.name], dtype=np.float64), floor)
        if _is_integer(spec):
            raised = np.ceil(raised)
        out[spec.name] = raised.astype(out[spec.name].dtype)


def _positive_semidefinite_gram(analysis: PrivacyAnalysis, out: dict) -> None:
    """Project [[XᵀX, Xᵀy], [yᵀX, yᵀy]] (or XᵀX alone) onto the PSD cone."""
    for term in analysis.terms:
        if term.node in analysis.statistics_unavailable:
            continue
        specs = analysis.statistics_of(term.node)
        if "gram" not in specs:
            continue
        gram = complete_statistic(specs["gram"], out[specs["gram"].name], None)
        p = gram.shape[0]
        joint = gram
        if "sum_squares" in specs:
            cross = out[specs["cross"].name]
            yy = float(out[specs["sum_squares"].name])
            joint = np.block([[gram, cross[:, None]], [cross[None, :], np.array([[yy]])]])
        eigenvalues, eigenvectors = np.linalg.eigh(joint)
        joint = (eigenvectors * np.maximum(eigenvalues, 0.0)) @ eigenvectors.T
        joint = 0.5 * (joint + joint.T)
        out[specs["gram"].name] = joint[:p, :p][np.triu_indices(p)]
        if "sum_squares" in specs:
            out[specs["cross"].name] = joint[:p, p]
            out[specs["sum_squares"].name] = np.asarray(joint[p, p])


# ---------------------------------------------------------------------------------------
# The model on statistics
# ---------------------------------------------------------------------------------------


def _model_on_statistics(
    model: pm.Model, analysis: PrivacyAnalysis, statistics: dict[str, np.ndarray]
) -> pm.Model:
    """A copy of ``model`` without its private data: observed nodes become Potentials."""
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
    fgraph, memo = fgraph_from_model(model, inlined_views=True)
    free = {rv.name: memo[rv] for rv in model.free_RVs}
    for term in analysis.terms:
        full, totals = term_statistics(analysis, statistics, term.node)
        values = {
            name: free[parameter.free_variable]
            for name, parameter in term.parameters.items()
            if parameter.constant is None
        }
        logp = term.family.logp_from_statistics(
            term,
            values,
            {kind: np.asarray(value, dtype=np.float64) for kind, value in full.items()},
            np.asarray(totals, dtype=np.float64),
        )
        potential = model_potential(pt.as_tensor_variable(logp, dtype="float64"))
        potential.name = f"{term.node}{POTENTIAL_SUFFIX}"
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
    _check_no_private_inputs(private_model, private)
    return private_model


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
            used.update(str(dim.data) for dim in node.inputs[1:] if isinstance(dim, Constant))
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
