"""`PrivateMetropolis`: random-walk Metropolis with Barker acceptance, paying ε per step.

Every transition reads the raw data once, through the accept/reject decision, and is one
differentially private release (DESIGN.md §2.4). The proposal is data-independent, the
acceptance probability is Barker's logistic σ(Λ) instead of min(1, e^Λ), and the tempered
log-likelihood enters Λ with a bounded record sensitivity, so the ε of one step is a formula
of public quantities fixed when the step is built.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.blocking import RaveledVars
from pymc.initial_point import PointType
from pymc.pytensorf import CallableTensor, compile, floatX, join_nonshared_inputs
from pymc.step_methods.arraystep import ArrayStepShared, StatsType
from pymc.step_methods.compound import StepMethodState
from pymc.step_methods.state import dataclass_state
from pytensor.graph.basic import Variable
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.elemwise import CAReduce, DimShuffle, Elemwise
from pytensor.tensor.math import Dot
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.shape import Shape, Shape_i
from pytensor.tensor.subtensor import AdvancedSubtensor, AdvancedSubtensor1, Subtensor

from pymc_private.analysis import analyze, refuse_private_paths
from pymc_private.data import check_private_data, private_data
from pymc_private.errors import InvalidPrivacyParameterError, UnsupportedModelError
from pymc_private.steps.base import PrivateStep, checked_temperature

__all__ = [
    "GaussianRandomWalk",
    "PrivateMetropolis",
    "PrivateMetropolisState",
    "barker_select",
]


class GaussianRandomWalk:
    """The data-independent proposal θ' = θ + s ⊙ z, z ~ N(0, I), in the sampling space.

    Symmetric, so its log proposal ratio log q(θ | θ') − log q(θ' | θ) is 0.
    """

    log_proposal_ratio = 0.0

    def __init__(self, s: np.ndarray):
        self.s = s

    def __call__(self, rng: np.random.Generator) -> np.ndarray:
        return rng.normal(scale=self.s)


def barker_select(
    log_ratio: float, q: np.ndarray, q0: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, bool]:
    """Barker's acceptance: return ``q`` with probability σ(Λ), else ``q0``.

    The drop-in counterpart of PyMC's ``metrop_select`` (which accepts with min(1, e^Λ)).
    The test u < σ(Λ), u ~ U(0, 1), is made on the log scale, log u < log σ(Λ) =
    −log(1 + e^−Λ), evaluated as ``-logaddexp(0, -Λ)`` so that no exponential overflows:
    Λ = −∞ never accepts, Λ = +∞ always does, and Λ = NaN rejects.
    """
    if np.log(rng.uniform()) < -np.logaddexp(0.0, -log_ratio):
        return q, True
    return q0, False


@dataclass_state
class PrivateMetropolisState(StepMethodState):
    scaling: float
    tune: bool
    tuning_steps: int


class PrivateMetropolis(ArrayStepShared, PrivateStep):
    r"""Random-walk Metropolis with Barker acceptance: a differentially private MCMC step.

    One step proposes θ' = θ + s·z with z ~ N(0, I) in the sampling (transformed) space and
    accepts it with Barker's probability σ(Λ) = 1 / (1 + e^−Λ), where

        Λ = [log ξ(θ') − log ξ(θ)] + (1/T) Σ_i [ℓ(x_i; θ') − ℓ(x_i; θ)] + log q-ratio,

    ξ the prior density in the sampling space (log-Jacobians of the transforms included),
    ℓ(x; θ) the log-likelihood of record x (its observed nodes that depend on the step's
    variables), T ≥ 1 the temperature, and the log proposal ratio 0 for the symmetric
    Gaussian walk. Barker's rule is reversible with respect to the tempered posterior
    ξ(θ) Π_i p(x_i | θ)^{1/T}, so the chain targets it (at T = 1, the posterior).

    Privacy cost of one step (pure ε-DP, replace-one neighbours, n public)
    --------------------------------------------------------------------
    ``ε = 2 L / T``, with L the record Lipschitz constant of the likelihood terms that
    depend on the step's variables over the prior support Θ (DESIGN.md §1–2; the
    Lipschitz condition is Assumption 1 of Dimitrakakis et al., "Differential privacy for
    Bayesian inference through posterior sampling", JMLR 18, 2017):

        L = sup_{θ ∈ Θ} sup_{x, x'} |ℓ(x; θ) − ℓ(x'; θ)|.

    *Why 2L and not L.* Let D and D' differ in one record, x in D and x' in D'. The data
    reach Λ only through the observed likelihoods: `pmp.refuse_private_paths` refuses a
    prior, Potential or Deterministic that reads `PrivateData` or an observed variable
    (which PyMC evaluates at its observed data). Every other term of Λ is the same for
    both, so

        T·(Λ_D − Λ_D') = [ℓ(x; θ') − ℓ(x'; θ')] − [ℓ(x; θ) − ℓ(x'; θ)],

    a difference of two quantities each in [−L, L]; hence |Λ_D − Λ_D'| ≤ 2L/T. The bound is
    attained: for Bernoulli data with θ ∈ [a, 1−a], x = 1, x' = 0, θ' = 1−a and θ = a, the
    brackets are +L and −L with L = ln((1−a)/a). Charging L/T would be unsound, and the
    auditor catches it (tests/test_metropolis.py). This is the exponential-mechanism view
    of the JMLR paper: the utility Σ_i ℓ(x_i; θ) has sensitivity L, so its difference
    between two points θ, θ' has sensitivity 2L, the factor 2 of the exponential mechanism
    and of their Theorem 8.

    *Why accepting and rejecting both cost 2L/T.* d/dΛ log σ(Λ) = 1 − σ(Λ) ∈ (0, 1) and
    d/dΛ log(1 − σ(Λ)) = −σ(Λ) ∈ (−1, 0): both are 1-Lipschitz in Λ, so for either outcome
    P[outcome | D] ≤ e^{2L/T} P[outcome | D']. The proposal is data-independent, so the law
    of the next state, a mixture over θ' of these two outcomes, obeys the same bound, given
    the current (already released) state. The chain composes sequentially: N steps cost
    N·2L/T, tuning steps included, converged or not.

    *Why Λ is always defined where the data matter.* If θ or θ' lies outside the prior
    support (log prior ratio ±∞ or undefined), Λ is the log prior ratio alone: θ' outside
    is rejected and a θ outside left for a θ' inside, whatever the data. Inside the support,
    ℓ(x; θ) is finite for every x of the declared record domain X: a finite L excludes a
    log-likelihood finite at one x ∈ X and ±∞ at another, and the analysis bounds only
    families whose density is positive and finite on the whole declared domain (a support
    that depends on θ, as for Uniform(0, θ), is refused without ``clip``). The step reads a
    copy of the data checked against the declared bounds when it is built
    (`pmp.check_private_data`), so later ``pm.set_data`` calls cannot put a record outside
    X. Hence Λ is finite there.

    A block on which no likelihood depends (a hyperprior) has a Λ made of prior terms only:
    it reads no data and costs ``ε = 0``.

    The usual min(1, e^Λ) rule is *not* ε-DP for any finite ε: where Λ_D ≥ 0 > Λ_D' a
    rejection has probability 0 under D and a positive one under D'. It is never offered.

    Clipped variant (``clip=c``, for models whose L is infinite)
    -----------------------------------------------------------
    Each record's log-likelihood ratio is clipped before tempering:

        Λ_c = [log ξ(θ') − log ξ(θ)] + (1/T) Σ_i clip(ℓ(x_i; θ') − ℓ(x_i; θ), −c, c),

    so replacing one record moves Λ_c by at most 2c/T and one step costs ``ε = 2c/T``,
    whatever the likelihood. A ratio that is undefined, as when ℓ(x_i; θ) = ℓ(x_i; θ') = −∞
    for a likelihood whose support depends on θ, counts as 0 and ±∞ clips to ±c, so every
    record contributes a number in [−c, c]. A record is row i of every `PrivateData` of the
    model (axis 0); ℓ(x_i; ·) sums the elementwise log-likelihood of the observed nodes over
    their other axes, and the step checks that each observed node depends on row i of the
    data only.
    The price is the target. Where no record's ratio reaches ±c for the moves proposed,
    Λ_c = Λ and the chain is the exact Barker chain of the tempered posterior. Where a clip
    binds, Λ_c(θ, θ') is no longer log π(θ') − log π(θ) for any density π, so the kernel is
    reversible with respect to no distribution: the chain then targets the *clipped
    posterior*, meaning its own stationary distribution, which differs from the tempered
    posterior where records would pull the chain by more than c per move, is in general
    the posterior of no model, and depends on the proposal scale (smaller moves clip less:
    for a likelihood Lipschitz in θ, such as logistic regression with bounded features, the
    per-record ratio is at most B‖θ' − θ‖). Choose c from public knowledge, large enough
    for typical moves, and read the draws as draws from that distribution.

    Tuning
    ------
    With ``tune=True`` the proposal scale s is adapted during ``pm.sample``'s tuning phase by
    the Robbins–Monro recursion on log s of adaptive scaling (Andrieu & Thoms, "A tutorial
    on adaptive MCMC", Statistics and Computing 18:343–373, 2008), with the accept
    indicator a_k ∈ {0, 1} in place of the acceptance probability:

        log s_k = log s_{k−1} + 5·k^(−3/4) · (a_k − α*(d)),   α*(d) = 0.158 + 0.11/d,

    for a block of d sampled elements. The gains γ_k = 5·k^(−3/4) satisfy Σγ_k = ∞,
    Σγ_k² < ∞; the factor 5 brings a starting scale wrong by a factor 10³ to within a factor
    2 of the target in a few hundred steps. The target is Barker's, not Metropolis's:
    Barker's acceptance σ(Λ) is at most about 1/2 for small moves, so PyMC's thresholds for
    min(1, e^Λ) barely grow the scale. α*(d) is the acceptance rate at which the Barker
    random walk has its largest expected squared jump on a standard Gaussian target (0.27,
    0.22, 0.20, 0.17 at d = 1, 2, 3, 10, computed for this step), tending to the 0.158 of
    Agrawal, Vats, Łatuszyński & Roberts, "Optimal scaling of MCMC beyond Metropolis",
    Advances in Applied Probability 55, 2023, as d grows. The recursion reads only the
    accept decisions, which are released with the chain, never σ(Λ), which is computed from
    raw data. The decisions depend on the data, which is why tuning steps are charged
    exactly like draws: `pmp.sample` plans ``chains × (tune + draws)`` releases of ε each.
    Every chain starts from the public starting scale ``proposal_scale``.

    Released sample stats: ``privacy_epsilon`` (the ε of the step) and ``accepted`` (the
    private decision itself, a function of the released chain). Never the acceptance
    probability, Λ or the model log-density: those are computed from raw data.

    This step is not registered in ``pm.STEP_METHODS``: a private step is chosen explicitly
    on raw data (``pmp.sample`` refuses non-private steps, and PyMC must never assign this
    one to variables of a public model, nor a public one to a private model).

    Parameters
    ----------
    vars
        Free random variables (or their value variables) sampled jointly as one block.
        Defaults to every free variable of the model.
    temperature
        T ≥ 1, finite. The likelihood is tempered by 1/T; ε per step is 2L/T (or 2c/T).
    proposal_scale
        s > 0: the standard deviation of the Gaussian walk in the sampling space, a scalar
        or one value per element of the raveled ``vars``. Public; with ``tune=True`` it is
        the starting scale.
    clip
        c > 0, finite: clip each record's log-likelihood ratio to [−c, c] and charge 2c/T
        per step instead of 2L/T. The privacy analysis of L is then not consulted.
    tune
        Whether to adapt the proposal scale while tuning (``pm.sample`` tunes for its
        ``tune`` iterations and then calls ``stop_tuning``; a standalone step adapts until
        ``stop_tuning`` is called). ``False`` keeps the scale fixed.
    model
        The model (defaults to the context model). It must observe its data through
        `pmp.PrivateData`. The step keeps the checked values the data hold when it is built:
        to sample other data, change them with ``pm.set_data`` and build a new step.
    rng
        Seed or generator of the step's randomness (``pm.sample`` replaces it per chain).
    initial_point, compile_kwargs
        As in PyMC's step methods.
    blocked
        As in PyMC. ``True`` (default) moves ``vars`` as one block charged one ε per step;
        ``False`` makes PyMC build a ``CompoundStep`` of one PrivateMetropolis per variable,
        each charged its own ε.

    Raises
    ------
    InvalidPrivacyParameterError
        A temperature below 1 or not finite, a proposal scale that is not positive and
        finite, or a ``clip`` that is not positive and finite, checked before the model is
        read.
    UnsupportedModelError
        ``vars`` that are not continuous free random variables of the model, a model without
        `PrivateData`, private data read by a prior, a `Potential` or a `Deterministic`
        (directly or through an observed variable), a likelihood the privacy analysis cannot
        bound (without ``clip``), or one whose records cannot be separated (with ``clip``).
    DataBoundsError
        `PrivateData` whose current value fails its declaration's checks (shape, dtype,
        finite, within bounds), as after a ``pm.set_data`` that broke them.
    UnboundedSensitivityError
        Without ``clip``, when L is infinite (from `pmp.analyze`, naming what to bound).
    """

    name = "private_metropolis"
    mechanism = "barker_metropolis"
    default_blocked = True
    stats_dtypes_shapes: ClassVar = {
        "privacy_epsilon": (np.float64, []),
        "accepted": (bool, []),
    }
    released_stats = ("privacy_epsilon", "accepted")

    _state_class = PrivateMetropolisState

    def __init__(
        self,
        vars=None,
        *,
        temperature: float = 1.0,
        proposal_scale: float | np.ndarray = 1.0,
        clip: float | None = None,
        tune: bool = True,
        model: pm.Model | None = None,
        rng=None,
        initial_point: PointType | None = None,
        compile_kwargs: dict | None = None,
        blocked: bool = True,
    ):
        self.temperature = checked_temperature(temperature, "2L/T per step")
        proposal_scale = _checked_proposal_scale(proposal_scale)
        self.clip = None if clip is None else _checked_clip(clip)

        model = pm.modelcontext(model)
        vars = _checked_vars(model, model.value_vars if vars is None else vars)
        names = [model.values_to_rvs[v].name for v in vars]
        private = _private_data_vars(model)
        refuse_private_paths(model)
        check_private_data(model)
        log_prior, observed = _split_logp(model, vars)
        if not observed:
            self.sensitivity = 0.0
            self.touches_raw_data = False
            log_likelihood = None
        elif self.clip is None:
            analysis = analyze(model)
            charged = {t.node for t in analysis.terms if set(t.free_variables) & set(names)}
            if {rv.name for rv in observed} - charged:
                raise UnsupportedModelError(
                    f"The privacy analysis does not see every likelihood that depends on "
                    f"{names}, so it cannot bound their sensitivity; pass clip=c instead."
                )
            self.sensitivity = analysis.lipschitz_for(names)
            log_likelihood = model.logp(observed)
        else:
            self.sensitivity = self.clip
            log_likelihood = _record_log_likelihood(model, observed, private)
        if self.clip is not None:
            self.mechanism = "clipped_barker_metropolis"
        self.privacy_epsilon_per_draw = 2.0 * self.sensitivity / self.temperature

        if initial_point is None:
            initial_point = model.initial_point()
        size = sum(int(np.prod(initial_point[v.name].shape)) for v in vars)
        if proposal_scale.size not in (1, size):
            raise InvalidPrivacyParameterError(
                f"proposal_scale has {proposal_scale.size} values but the raveled vars have "
                f"{size} elements: pass a scalar or one scale per element."
            )
        self.proposal_dist = GaussianRandomWalk(np.broadcast_to(proposal_scale, (size,)))
        self.target_accept = 0.158 + 0.11 / size
        self.scaling = 1.0
        self.tune = bool(tune)
        self.adaptive = bool(tune)
        self.tuning_steps = 0

        shared = pm.make_shared_replacements(initial_point, vars, model)
        self.log_acceptance_ratio = _tempered_log_ratio(
            initial_point,
            log_prior,
            log_likelihood,
            vars,
            shared,
            frozen_data=_frozen(private),
            temperature=self.temperature,
            clip=self.clip,
            compile_kwargs=compile_kwargs,
        )
        super().__init__(vars, shared, blocked=blocked, rng=rng)

    def set_rng(self, rng) -> None:
        """Seed the step for a new chain, which starts from the public starting scale.

        PyMC seeds every chain through ``set_rng`` (``cores=1`` or not), so a step reused
        across ``pm.sample`` calls gives the same chains for the same seed.
        """
        super().set_rng(rng)
        self.scaling = 1.0
        self.tuning_steps = 0
        self.tune = self.adaptive

    def astep(self, q0: RaveledVars) -> tuple[RaveledVars, StatsType]:
        q = floatX(q0.data + self.proposal_dist(self.rng) * self.scaling)
        log_ratio = self.log_acceptance_ratio(q, q0.data) + self.proposal_dist.log_proposal_ratio
        q_new, accepted = barker_select(log_ratio, q, q0.data, self.rng)
        if self.adaptive and self.tune:
            self.tuning_steps += 1
            gain = 5.0 * self.tuning_steps**-0.75
            self.scaling *= math.exp(gain * (accepted - self.target_accept))

        stats = {**self.privacy_stats(), "accepted": accepted}
        return RaveledVars(q_new, q0.point_map_info), [stats]

    def release_note(self) -> str:
        if not self.touches_raw_data:
            return "Barker acceptance on prior terms only (no likelihood depends on vars); ε = 0."
        if self.clip is None:
            return f"Barker acceptance at T={self.temperature:g}; ε per step = 2L/T."
        return (
            f"Barker acceptance at T={self.temperature:g}, per-record log-likelihood ratios "
            f"clipped to ±{self.clip:g}; ε per step = 2c/T; targets the clipped posterior."
        )


def _checked_clip(clip) -> float:
    value = _real(clip)
    if value is None or not (math.isfinite(value) and value > 0.0):
        raise InvalidPrivacyParameterError(
            f"clip must be a finite number > 0 (or None to use the record Lipschitz "
            f"constant), got {clip!r}; ε per step is 2·clip/T."
        )
    return value


def _checked_proposal_scale(proposal_scale) -> np.ndarray:
    try:
        scale = np.asarray(proposal_scale)
    except ValueError:
        scale = np.array([])
    if scale.dtype.kind not in "iuf" or scale.size == 0 or not np.all(np.isfinite(scale)):
        scale = np.array([0.0])
    if not np.all(scale > 0):
        raise InvalidPrivacyParameterError(
            f"proposal_scale must be finite numbers > 0 (a scalar or one value per element "
            f"of vars), got {proposal_scale!r}."
        )
    return scale.astype(np.float64).ravel()


def _real(value) -> float | None:
    """``value`` as a float if it is a real number (not a bool), else None."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.number):
        return None
    return float(value)


def _checked_vars(model: pm.Model, vars) -> list[Variable]:
    """The value variables of ``vars``, refusing anything but continuous free variables."""
    if not isinstance(vars, list | tuple):
        vars = [vars]
    value_vars = []
    for var in vars:
        if var in model.rvs_to_values and var in model.free_RVs:
            var = model.rvs_to_values[var]
        if var not in model.value_vars:
            name = getattr(var, "name", None) or repr(var)
            raise UnsupportedModelError(
                f"PrivateMetropolis samples free random variables only; `{name}` is not one "
                "of this model (observed variables, data and Deterministics are not sampled)."
            )
        if var.dtype in pm.discrete_types:
            raise UnsupportedModelError(
                f"PrivateMetropolis proposes a Gaussian random walk and cannot sample the "
                f"discrete variable `{model.values_to_rvs[var].name}`; use pmp.PrivateGibbs."
            )
        value_vars.append(var)
    return value_vars


def _private_data_vars(model: pm.Model) -> set[Variable]:
    specs = private_data(model)
    if not specs:
        raise UnsupportedModelError(
            "PrivateMetropolis needs the sensitive data declared with "
            "pmp.PrivateData(name, value, bounds=(lower, upper)) and observed through it; "
            "this model has no PrivateData."
        )
    return {v for v in model.data_vars if v.name in specs}


def _split_logp(model: pm.Model, vars: list[Variable]) -> tuple[Variable, list[Variable]]:
    """The log prior (Jacobians and public Potentials included) and the observed variables of
    Λ that involve ``vars``; terms that do not involve them cancel in Λ and are left out."""

    def involves(term: Variable) -> bool:
        return any(a in vars for a in ancestors([term]))

    terms = model.logp([*model.free_RVs, *model.potentials], sum=False)
    priors = [
        var
        for var, term in zip([*model.free_RVs, *model.potentials], terms, strict=True)
        if involves(term)
    ]
    observed = [
        rv
        for rv, term in zip(
            model.observed_RVs, model.logp(model.observed_RVs, sum=False), strict=True
        )
        if involves(term)
    ]
    return model.logp(priors, jacobian=True), observed


def _frozen(private: set[Variable]) -> dict[Variable, Variable]:
    """A constant copy of each private shared variable's current (checked) value."""
    return {v: pt.constant(v.get_value(), name=v.name, dtype=v.dtype) for v in private}


def _record_log_likelihood(
    model: pm.Model, observed: list[Variable], private: set[Variable]
) -> Variable:
    """The vector (ℓ(x_i; θ))_i: elementwise log-likelihood summed over non-record axes.

    Each observed node must be a batch of independent draws along axis 0 whose value and
    parameters take row i from row i of the `PrivateData` only (or are public); otherwise
    the records could not be separated and the 2c/T bound would not hold.
    """
    aligned: dict[Variable, bool | None] = {}
    for rv in observed:
        op = rv.owner.op
        if not isinstance(op, RandomVariable):
            raise UnsupportedModelError(
                f"clip needs each record's log-likelihood on its own and can separate plain "
                f"PyMC distributions only; the observed `{rv.name}` is a {type(op).__name__}."
            )
        batch_ndim = rv.ndim - op.ndim_supp
        separable = (
            batch_ndim >= 1
            and _record_aligned(model.rvs_to_values[rv], private, aligned) is True
            and all(
                (status := _record_aligned(param, private, aligned)) is False
                or (status is True and param.ndim == batch_ndim + core_ndim)
                for param, core_ndim in zip(op.dist_params(rv.owner), op.ndims_params, strict=True)
            )
        )
        if not separable:
            raise UnsupportedModelError(
                f"clip needs each record's log-likelihood on its own, but the observed "
                f"`{rv.name}` does not observe PrivateData row by row (records on axis 0; "
                "parameters public or built from the same row of the data by elementwise "
                "operations, indexing of public tensors and x @ w)."
            )
    per_record = [
        term.sum(axis=tuple(range(1, term.ndim))) if term.ndim > 1 else term
        for term in model.logp(observed, sum=False)
    ]
    return pt.add(*per_record)


def _record_aligned(
    var: Variable, private: set[Variable], memo: dict[Variable, bool | None]
) -> bool | None:
    """Whether row i of ``var`` (axis 0) comes from row i of the private data only.

    True: axis 0 is the record axis and row i depends on data row i (and public values).
    False: ``var`` involves no private data. None: it mixes records, or its structure is not
    one this check recognises.
    """
    if var in memo:
        return memo[var]
    if var in private:
        return True
    if var.owner is None or isinstance(var.owner.op, Shape | Shape_i):
        return False
    inputs = [_record_aligned(i, private, memo) for i in var.owner.inputs]
    if all(status is False for status in inputs):
        memo[var] = False
    elif any(status is None for status in inputs):
        memo[var] = None
    else:
        memo[var] = _keeps_records(var, inputs) or None
    return memo[var]


def _keeps_records(var: Variable, inputs: list[bool]) -> bool:
    """Whether ``var``'s op maps record-aligned inputs (``inputs[k]`` True) row by row."""
    op = var.owner.op
    first = inputs[0]
    if isinstance(op, Elemwise):
        return True
    if isinstance(op, DimShuffle):
        return op.new_order[:1] == (0,)
    if isinstance(op, CAReduce):
        return op.axis is not None and 0 not in op.axis
    if isinstance(op, Subtensor):
        leading = op.idx_list[0] if op.idx_list else slice(None)
        return first and leading == slice(None) and not any(inputs[1:])
    if isinstance(op, AdvancedSubtensor1 | AdvancedSubtensor):
        # public[index, ...] with a record-aligned first index: the indices broadcast
        # together, so none may have more axes than it, nor an aligned one fewer.
        leading, *others = var.owner.inputs[1:]
        return (
            not first
            and inputs[1]
            and all(
                getattr(index, "ndim", 0) <= leading.ndim
                and (not aligned or index.ndim == leading.ndim)
                for index, aligned in zip(others, inputs[2:], strict=True)
            )
        )
    if isinstance(op, Dot) or (isinstance(op, Blockwise) and isinstance(op.core_op, Dot)):
        # private @ public: row i of the product is row i of the private factor times it.
        x, w = var.owner.inputs
        return first and not inputs[1] and x.ndim >= 2 and w.ndim <= x.ndim
    return False


def _tempered_log_ratio(
    point: PointType,
    log_prior: Variable,
    log_likelihood: Variable | None,
    vars: list[Variable],
    shared: dict,
    *,
    frozen_data: dict[Variable, Variable],
    temperature: float,
    clip: float | None,
    compile_kwargs: dict | None,
):
    """Compile Λ(q', q) on raveled sampling-space vectors, the other variables shared.

    ``log_likelihood`` is the summed log-likelihood, with ``clip`` the per-record vector, or
    None when no likelihood depends on ``vars``. The private data are replaced by the
    constants ``frozen_data``. Where the log prior ratio is not finite it alone is Λ; with
    ``clip`` an undefined record ratio counts as 0 and ±∞ clips to ±c.
    """
    outputs = [log_prior] if log_likelihood is None else [log_prior, log_likelihood]
    outputs, q0 = join_nonshared_inputs(
        point=point,
        outputs=graph_replace(outputs, frozen_data, strict=False),
        inputs=vars,
        shared_inputs=shared,
    )
    q1 = q0.type("q1")
    prior0, *likelihood0 = outputs
    prior_ratio = CallableTensor(prior0)(q1) - prior0
    log_ratio = prior_ratio
    if likelihood0:
        ratio = CallableTensor(likelihood0[0])(q1) - likelihood0[0]
        if clip is not None:
            ratio = pt.clip(pt.switch(pt.isnan(ratio), 0.0, ratio), -clip, clip)
        log_ratio = pt.switch(
            pt.isinf(prior_ratio), prior_ratio, prior_ratio + pt.sum(ratio) / temperature
        )
    function = compile([q1, q0], log_ratio, **(compile_kwargs or {}))
    function.trust_input = True
    return function
