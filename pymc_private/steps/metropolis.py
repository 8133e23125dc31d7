"""`PrivateMetropolis`: random-walk Metropolis with Barker acceptance, paying ε per step.

Every transition reads the raw data once, through the accept/reject decision, and is one
differentially private release (:ref:`costs-metropolis`). The proposal is data-independent, the
acceptance probability is Barker's logistic σ(Λ) instead of min(1, e^Λ), the log-odds Λ is
summed exactly on a public grid with its rounding error bounded, and the decision is an exact
choice between the log-weights (Λ, 0), so the ε of one step is a formula of public quantities
fixed when the step is built, and it holds for the floating-point program that runs.
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction
from typing import ClassVar

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.blocking import RaveledVars
from pymc.initial_point import PointType
from pymc.pytensorf import floatX, make_shared_replacements
from pymc.step_methods.arraystep import ArrayStepShared, StatsType
from pymc.step_methods.compound import StepMethodState
from pymc.step_methods.state import dataclass_state
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import graph_inputs
from pytensor.tensor.random.type import RandomType

from pymc_private.analysis.core import analyze
from pymc_private.analysis.leak_guard import refuse_private_paths
from pymc_private.analysis.python_code import private_step_class
from pymc_private.analysis.record_likelihood import (
    checked_vars,
    private_data_vars,
    record_log_likelihood,
    split_logp,
)
from pymc_private.analysis.routes import RouteCost, route_cost
from pymc_private.compiling import checked_compile_kwargs, compiling
from pymc_private.data.declaration import (
    check_private_data,
    datasets_of,
    declaration,
    in_memory_values,
)
from pymc_private.data.ledgers import ledger_for
from pymc_private.dp.barker import LOG_ODDS_BOUND, barker_epsilon, barker_log_odds
from pymc_private.dp.checks import checked_secure, checked_temperature
from pymc_private.dp.events import PureEvent, Release
from pymc_private.dp.ledger import PrivacyLedger
from pymc_private.dp.measurements import ceil_float
from pymc_private.dp.mechanisms import exact_choice
from pymc_private.dp.session import PrivatePayload
from pymc_private.dp.subsampling import SubsampledGaussianTest, exact_sampling_rate
from pymc_private.errors import (
    InvalidPrivacyParameterError,
    UnboundedSensitivityError,
    UnsupportedModelError,
)
from pymc_private.families.likelihood import LikelihoodTerm
from pymc_private.steps.base import PrivateStep
from pymc_private.steps.log_ratios import (
    compile_log_ratio_terms,
    reads_rows,
    row_subset_graph,
)

__all__ = [
    "LOG_LIKELIHOOD_ERROR",
    "LOG_ODDS_BOUND",
    "GaussianRandomWalk",
    "PrivateMetropolis",
    "PrivateMetropolisState",
    "barker_log_odds",
]

LOG_LIKELIHOOD_ERROR = Fraction(1, 2**30)
"""η / max(1, C): the absolute error assumed of a computed log-likelihood (assumption (A))."""

_MIN_RECORD_BOUND = 2.0**-970  # K·2⁻⁵² is then a normal float, so K = 2⁵²·(K·2⁻⁵²) exactly


class GaussianRandomWalk:
    """The data-independent proposal θ' = θ + s ⊙ z, z ~ N(0, I), in the sampling space.

    Symmetric, so its log proposal ratio log q(θ | θ') − log q(θ' | θ) is 0.
    """

    log_proposal_ratio = 0.0

    def __init__(self, s: np.ndarray):
        self.s = s

    def __call__(self, rng: np.random.Generator) -> np.ndarray:
        return rng.normal(scale=self.s)


@dataclass_state
class PrivateMetropolisState(StepMethodState):
    scaling: float
    tune: bool
    tuning_steps: int


@private_step_class
class PrivateMetropolis(ArrayStepShared, PrivateStep):
    r"""Random-walk Metropolis with Barker acceptance: a differentially private MCMC step.

    One step on raw data costs ε = (2L + 8η)/T + 2⁻⁴³ (2c/T + 2⁻⁴³ with ``clip=c``), charged
    per iteration (tuning included) by `pmp.sample`. Why, and what η is: Notes below and
    :ref:`costs-metropolis`.

    Parameters
    ----------
    vars
        Free random variables (or their value variables) sampled jointly as one block.
        Defaults to every free variable of the model.
    temperature
        T ≥ 1, finite. The likelihood is tempered by 1/T; ε per step is (2L + 8η)/T + 2⁻⁴³
        (or 2c/T + 2⁻⁴³).
    proposal_scale
        s > 0: the standard deviation of the Gaussian walk in the sampling space, a scalar
        or one value per element of the raveled ``vars``. Public; with ``tune=True`` it is
        the starting scale.
    clip
        c in [2⁻⁹⁷⁰, 2⁹⁷⁰]: clip each record's log-likelihood ratio to [−c, c] and charge
        2c/T + 2⁻⁴³ per step, with no assumption on the floating-point error of ℓ. The
        privacy analysis of L is then not consulted.
    sampling_rate
        q in (0, 1], or None (default: every record, the exact Barker test). With q, each
        step reads a Poisson subsample and is charged as the subsampled Gaussian
        (:ref:`costs-subsampled-metropolis`); needs ``clip``.
    noise_scale
        σ > 0, the Gaussian noise on the subsampled log-odds (only with ``sampling_rate``).
        The cost falls with σT/c; the acceptance rate falls with σ (about e^(−σ²/2) at best).
    secure
        True (default): the accept/reject decision is OpenDP's exact sampler fed by the
        operating system's cryptographic generator; ``self.rng`` (and hence a seed) drives
        only the data-independent proposals, so a seeded chain is not reproducible, and its
        releases are recorded as secure. False: the decision is a numpy Gumbel-max from
        ``self.rng``, which realises σ(Λ) only up to floating-point rounding and makes the
        chain reproducible by whoever holds the seed: for simulations, tests and benchmarks
        on public data; its releases are recorded as not secure. Use ``secure=False`` for a
        seeded run that must be reproducible. With ``sampling_rate``, ``self.rng`` also gives
        the penalty decision's uniform in both cases (post-processing of the noisy log-odds).
    tune
        Whether to adapt the proposal scale while tuning (``pm.sample`` tunes for its
        ``tune`` iterations and then calls ``stop_tuning``; a standalone step adapts until
        ``stop_tuning`` is called). ``False`` keeps the scale fixed.
    max_step_size
        m > 0, or None (default: no limit). Public upper limit on the proposal's
        ‖s·scaling‖₂ that tuning may reach (a starting scale above it is shrunk to it): for a
        likelihood with |ℓ(x; θ') − ℓ(x; θ)| ≤ B‖θ' − θ‖₂, a record's ratio is then about
        B·m or less for typical moves, so m = c/(3B) keeps a ``clip=c`` from binding while
        the scale adapts ("Tuning" below).
    model
        The model (defaults to the context model). It must observe its data through
        `pmp.PrivateData`. The step keeps the checked values the data hold when it is built:
        to sample other data, change them with ``pm.set_data`` and build a new step.
    rng
        Seed or generator of the step's randomness (``pm.sample`` replaces it per chain):
        the proposals, and with ``secure=False`` (or ``sampling_rate``) the decisions.
    initial_point, compile_kwargs
        As in PyMC's step methods, except the mode: the function that reads the private data
        is compiled with PyTensor's C backend (mode ``"CVM"``, or ``"C"`` or
        ``"FAST_COMPILE"`` if asked), which checks every index, never with its default,
        Numba, nor JAX, which do not (an index beyond its axis would read whatever memory it
        points at).
    blocked
        As in PyMC. ``True`` (default) moves ``vars`` as one block charged one ε per step;
        ``False`` makes PyMC build a ``CompoundStep`` of one PrivateMetropolis per variable,
        each charged its own ε.

    Attributes
    ----------
    sensitivity
        L (or c; 0 for a block no likelihood depends on).
    log_likelihood_error
        η of assumption (A) (0 with ``clip`` or without likelihood).
    record_bound
        K, the clip of each record's ratio: c, or C + 4η rounded up (0 without likelihood).

    Raises
    ------
    InvalidPrivacyParameterError
        A temperature below 1 or not finite, a proposal scale that is not positive and
        finite, a ``clip`` outside [2⁻⁹⁷⁰, 2⁹⁷⁰], a ``sampling_rate`` outside (0, 1] or
        without ``clip``, a ``noise_scale`` or ``max_step_size`` that is not positive and
        finite, or a ``secure`` that is not a bool, checked before the model is read.
    UnsupportedModelError
        ``vars`` that are not continuous free random variables of the model, a model without
        `PrivateData`, private data read by a prior, a `Potential` or a `Deterministic`
        (directly or through an observed variable), a likelihood the privacy analysis cannot
        bound (without ``clip``), or one whose records cannot be separated.
    DataBoundsError
        `PrivateData` whose current value fails its declaration's checks (shape, dtype,
        finite, within bounds), as after a ``pm.set_data`` that broke them.
    UnboundedSensitivityError
        Without ``clip``, when L is infinite (from `pmp.analyze`, naming what to bound), or
        when C or ε is not finite in floating point.

    Notes
    -----
    One step proposes θ' = θ + s·z with z ~ N(0, I) in the sampling (transformed) space and
    accepts it with Barker's probability σ(Λ) = 1 / (1 + e^−Λ), where

        Λ = [log ξ(θ') − log ξ(θ)] + (1/T) Σ_i [ℓ(x_i; θ') − ℓ(x_i; θ)] + log q-ratio,

    ξ the prior density in the sampling space (log-Jacobians of the transforms included),
    ℓ(x; θ) the log-likelihood of record x (its observed nodes that depend on the step's
    variables), T ≥ 1 the temperature, and the log proposal ratio 0 for the symmetric
    Gaussian walk. Barker's rule is reversible with respect to the tempered posterior
    ξ(θ) Π_i p(x_i | θ)^{1/T}, so the chain targets it (at T = 1, the posterior), up to the
    grid and the clamp of "As computed" below.

    **Privacy cost of one step (pure ε-DP, replace-one neighbours, n public).**
    With u = 2⁻⁵³ and B = 512 (`LOG_ODDS_BOUND`), one step costs

        ε = 2c/T + 2⁻⁴³                          with ``clip=c``,
        ε = (2L + 8η)/T + 2⁻⁴³,  η = 2⁻³⁰·max(1, C),   without (under assumption (A)),

    evaluated exactly and rounded up to a float: that float is ``privacy_epsilon_per_draw``,
    the ``privacy_epsilon`` sample stat of every draw and the ε of every ledger release.
    L is the record Lipschitz constant of the likelihood terms that depend on the step's
    variables over the prior support Θ (:ref:`costs-lipschitz`; Assumption 1 of Dimitrakakis et
    al., "Differential privacy for Bayesian inference through posterior sampling", JMLR 18,
    2017), and C a public bound on a record's log-likelihood ratio:

        L = sup_{θ ∈ Θ} sup_{x, x' ∈ X} |ℓ(x; θ) − ℓ(x'; θ)|,
        C ≥ sup_{θ, θ' ∈ Θ} sup_{x ∈ X} |ℓ(x; θ') − ℓ(x; θ)|,

    C being the sum over the block's observed nodes and a record's elements of each
    family's `log_likelihood_range` with the parameters that depend on the block free to
    vary with the record (the range of ℓ over the declared domain and those parameters
    jointly, the sup over the others' box). 2L/T (2c/T) is the cost in exact arithmetic;
    2⁻⁴³ and 8η/T pay for the floating-point arithmetic.

    *In exact arithmetic: why 2L, and why both outcomes.* Let D and D' differ in one record,
    x in D and x' in D'. The data reach Λ only through the observed likelihoods:
    `pmp.analysis.refuse_private_paths` refuses a prior, Potential or Deterministic that reads
    `PrivateData` or an observed variable (which PyMC evaluates at its observed data).
    Every other term of Λ is the same for both, so

        T·(Λ_D − Λ_D') = [ℓ(x; θ') − ℓ(x'; θ')] − [ℓ(x; θ) − ℓ(x'; θ)],

    a difference of two quantities each in [−L, L]; hence |Λ_D − Λ_D'| ≤ 2L/T. The bound is
    attained: for Bernoulli data with θ ∈ [a, 1−a], x = 1, x' = 0, θ' = 1−a and θ = a, the
    brackets are +L and −L with L = ln((1−a)/a). Charging L/T would be unsound, and the
    auditor catches it (tests/steps/test_metropolis.py). This is the exponential-mechanism view
    of the JMLR paper: the utility Σ_i ℓ(x_i; θ) has sensitivity L, so its difference
    between two points θ, θ' has sensitivity 2L, the factor 2 of their Theorem 8.
    d/dΛ log σ(Λ) = 1 − σ(Λ) ∈ (0, 1) and d/dΛ log(1 − σ(Λ)) = −σ(Λ) ∈ (−1, 0): both are
    1-Lipschitz in Λ, so for either outcome P[outcome | D] ≤ e^{|Λ_D − Λ_D'|} P[outcome | D'].
    The proposal is data-independent, so the law of the next state, a mixture over θ' of
    these two outcomes, obeys the same bound, given the current (already released) state.
    The chain composes sequentially: N steps cost N·ε, tuning steps included, converged or
    not.

    *As computed.* The compiled graph returns p, the log prior ratio (plus the log proposal
    ratio), and for each record i a float d̂_i ≈ ℓ(x_i; θ') − ℓ(x_i; θ). Then
    (`barker_log_odds`):

        r_i = clip(d̂_i, −K, K)  (NaN → 0),   m_i = rint(r_i / g) ∈ [−2⁵², 2⁵²],  g = K·2⁻⁵²,
        Λ = RN(clamp(p + (g/T)·Σ_i m_i, −B, B)),

    with K = c (clipped) or K = C + 4η rounded up (unclipped). The m_i are summed exactly in
    integers, and the last line is a fraction of integers (every float is one) rounded once,
    correctly, by integer true division.
    The decision is `pymc_private.dp.mechanisms.exact_choice` on the log-weights (Λ, 0), index
    0 = accept: with ``secure=True``, OpenDP's exact Gumbel noisy max, whose output is
    exactly the softmax of the two floats, so P(accept) = σ(Λ) exactly for the float Λ. (The
    former test log u < −log(1 + e^−Λ) with a float uniform u = k·2⁻⁵³ made the rejection
    probability 2⁻⁵³ at Λ = 36.731 and exactly 0 at Λ = 36.737, an event possible under one
    data set and impossible under its neighbour: ε = ∞ as implemented.) When p is not
    finite (θ or θ' outside the prior support) the decision is p = +∞, without randomness
    and without the data. Proof of the bound on |Λ_D − Λ_D'|, D and D' differing in record j:

    1. p is computed without the data, and the compiled code computes d̂_i from x_i, θ and
       θ' alone (the same float for the same record wherever it stands and whatever the
       other records: elementwise code, checked by the tests), so m_i is the same in D and
       D' for i ≠ j, and the exact values before the clamp differ by g·(m_j − m'_j)/T.
    2. clamp is 1-Lipschitz and RN moves a number of [−B, B] by at most u·B (also below the
       normal range, where it moves it by at most 2⁻¹⁰⁷⁵), so
       |Λ_D − Λ_D'| ≤ g·|m_j − m'_j|/T + 2uB, and 2uB = 2⁻⁴³.
    3. Clipped: m_j, m'_j ∈ [−2⁵², 2⁵²], so g·|m_j − m'_j| ≤ 2⁵³·g = 2c. No assumption on how
       ℓ is computed is needed: the bound holds for whatever floats the graph returns.
    4. Unclipped: r/g is at most 2⁵² in magnitude, so its float quotient is within ½ of it
       and rint moves it by at most ½: |g·m − r| ≤ g. clip is 1-Lipschitz, so
       g·|m_j − m'_j| ≤ |d̂_j − d̂'_j| + 2g. The d̂ come from libm-based compiled code whose
       error cannot be proved here, so the step assumes

       (A) every computed d̂ is within 2η of the exact ℓ(x; θ') − ℓ(x; θ) for x ∈ X and
           θ, θ' ∈ Θ, and the analysis's floats L and C are at most η below the suprema
           they bound,

       i.e. each log-likelihood evaluated with an absolute error of at most
       η = 2⁻³⁰·max(1, C), about 2²³ times the rounding error of a float of the size of C.
       Then |d̂_j − d̂'_j| ≤ 2L + 6η, and 2g ≤ 2η (K ≤ (2³⁰ + 5)·η), so the step moves Λ by
       at most (2L + 8η)/T + 2⁻⁴³. Under (A) also |d̂| ≤ C + 3η < K: the clip never binds.
       Should (A) fail, the clip still bounds the step by 2K/T + 2⁻⁴³.

    The grid and the clamp cost accuracy, not privacy: each record's ratio is represented to
    within g = K·2⁻⁵² (the spacing of floats of magnitude K), and where |Λ| > B the clamp
    changes the acceptance probability by less than e^{−B} = e^{−512}.

    *Errors, randomness and work.* Nothing raises on a value: a NaN or infinite d̂ maps into
    [−K, K] and the integer sum cannot overflow. With ``secure=True`` the step reads
    ``self.rng`` only for the proposal, a data-independent number of words; the decision's
    randomness comes from the operating system. With ``secure=False`` it also draws two
    Gumbel variates from ``self.rng`` whenever p is finite. Left out of this accounting: the
    running time of the arithmetic and of the exact sampler depends on the values (neither
    is constant-time).

    *Why Λ is defined where the data matter.* If θ or θ' lies outside the prior support
    (log prior ratio ±∞ or undefined), the decision follows p alone. Inside the support,
    ℓ(x; θ) is finite for every x of the declared record domain X: a finite L excludes a
    log-likelihood finite at one x ∈ X and ±∞ at another, and the analysis bounds only
    families whose density is positive and finite on the whole declared domain (a support
    that depends on θ, as for Uniform(0, θ), is refused without ``clip``). The step reads a
    copy of the data checked against the declared bounds when it is built
    (`pmp.data.check_private_data`), so later ``pm.set_data`` calls cannot put a record outside
    X.

    A block on which no likelihood depends (a hyperprior) has a Λ made of prior terms only:
    it reads no data and costs ``ε = 0``.

    The usual min(1, e^Λ) rule is *not* ε-DP for any finite ε: where Λ_D ≥ 0 > Λ_D' a
    rejection has probability 0 under D and a positive one under D'. It is never offered.

    **Clipped variant (``clip=c``, for models whose L is infinite).**
    Each record's log-likelihood ratio is clipped to [−c, c] before tempering (above), so
    replacing one record moves Λ by at most 2c/T + 2⁻⁴³, whatever the likelihood. A ratio
    that is undefined, as when ℓ(x_i; θ) = ℓ(x_i; θ') = −∞ for a likelihood whose support
    depends on θ, counts as 0 and ±∞ clips to ±c. A record is row i of every `PrivateData`
    of the model (axis 0); ℓ(x_i; ·) sums the elementwise log-likelihood of the observed
    nodes over their other axes, and the step checks that each observed node depends on
    row i of the data only (without ``clip`` as well: the records are summed one by one).
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

    **Poisson-subsampled variant (``clip=c, sampling_rate=q``).**
    Each step reads a fresh Poisson subsample (each record with probability q', q rounded up
    to a multiple of 2⁻⁵³), forms the clipped log-odds with the subsample's sum scaled by
    1/q', adds Gaussian noise N(0, σ²) (σ = ``noise_scale``), and accepts with the penalty
    method's probability min(1, exp(Λ̃ − σ²/2)), post-processing of the noisy log-odds Λ̃.
    A step is the Gaussian mechanism on a Poisson subsample with noise multiplier
    z = σ/Δ, Δ = c/(q'T) + 2⁻⁴³, recorded as the typed event
    `pymc_private.dp.events.SubsampledGaussianEvent` (q', z) and composed by the ledger with
    its replace-one Rényi curve; ``privacy_epsilon_per_draw`` is one step's ε at δ = 10⁻¹⁰.
    The chain targets an approximation of the clipped tempered posterior: the penalty
    corrects the noise σ² but not the subsample's own variance. The step reads ``self.rng``
    for one uniform per step besides the proposal (the decision, post-processing of Λ̃), and
    with ``secure=False`` also for the subsample and the noise. The subsample is drawn before
    any record is read, and only its rows are read where the log-likelihood is computed row
    by row on any number of rows (decided on public stand-ins, `reads_rows`): a step's cost
    follows q·n. The mechanism, its proof and
    what it assumes of OpenDP's Gaussian are in `pymc_private.dp.subsampling`
    (:ref:`costs-subsampled-metropolis`).

    **Tuning.**
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
    Every chain starts from the public starting scale ``proposal_scale``. With
    ``max_step_size=m`` the recursion is capped, scaling ≤ m/‖s‖₂: a clipped step whose scale
    grows unchecked makes the clip bind, and the clipped chain then drifts to a distribution
    far from the posterior (measured in ``benchmarks/subsampled_mcmc.py``). The cap is public,
    so the tuning still reads only released decisions and public values.

    Released sample stats: ``privacy_epsilon`` (the ε of the step) and ``accepted`` (the
    private decision itself, a function of the released chain). Never the acceptance
    probability, Λ or the model log-density: those are computed from raw data.

    This step is not registered in ``pymc.step_methods.STEP_METHODS``: a private step is
    chosen explicitly on raw data (``pmp.sample`` refuses non-private steps, and PyMC must
    never assign this one to variables of a public model, nor a public one to a private
    model).
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
        sampling_rate: float | None = None,
        noise_scale: float = 1.0,
        secure: bool = True,
        tune: bool = True,
        max_step_size: float | None = None,
        model: pm.Model | None = None,
        rng=None,
        initial_point: PointType | None = None,
        compile_kwargs: dict | None = None,
        blocked: bool = True,
    ):
        self.temperature = checked_temperature(temperature, "(2L + 8η)/T + 2⁻⁴³ per step")
        proposal_scale = _checked_proposal_scale(proposal_scale)
        self.clip = None if clip is None else _checked_clip(clip)
        self.sampling_rate = _checked_sampling_rate(sampling_rate, noise_scale, self.clip)
        self.noise_scale = float(noise_scale)
        self.subsampled_test = None
        self.secure = checked_secure(secure)
        self.max_step_size = _checked_max_step_size(max_step_size)
        compile_kwargs = checked_compile_kwargs(compile_kwargs, "PrivateMetropolis")

        model = pm.modelcontext(model)
        vars = checked_vars(model, model.value_vars if vars is None else vars)
        names = [model.values_to_rvs[v].name for v in vars]
        private = private_data_vars(model)
        refuse_private_paths(model)
        check_private_data(model)
        log_prior, observed = split_logp(model, vars)
        self.log_likelihood_error = 0.0
        if not observed:
            self.sensitivity = 0.0
            self.record_bound = 0.0
            self.touches_raw_data = False
            self.privacy_epsilon_per_draw = 0.0
            per_record = None
        else:
            if self.clip is None:
                analysis = analyze(model)
                charged = [t for t in analysis.terms if set(t.free_variables) & set(names)]
                if {rv.name for rv in observed} - {t.node for t in charged}:
                    raise UnsupportedModelError(
                        f"The privacy analysis does not see every likelihood that depends on "
                        f"{names}, so it cannot bound their sensitivity; pass clip=c instead."
                    )
                self.sensitivity = analysis.lipschitz_for(names)
                self.log_likelihood_error, self.record_bound = _float_error_bounds(charged, names)
            else:
                self.mechanism = "clipped_barker_metropolis"
                self.sensitivity = self.record_bound = self.clip
            self.privacy_epsilon_per_draw = self.cost(
                self.sensitivity, self.temperature, self.log_likelihood_error
            )
            if not math.isfinite(self.privacy_epsilon_per_draw):
                raise UnboundedSensitivityError(
                    f"ε per step = (2L + 8η)/T + 2⁻⁴³ overflows floating point (L = "
                    f"{self.sensitivity:g}); declare tighter bounds or priors, or raise T."
                )
            if self.sampling_rate is not None:  # z ≥ 2⁻¹⁰ (checked): a finite ε per step
                self.mechanism = "subsampled_gaussian_metropolis"
                self.subsampled_test = SubsampledGaussianTest(
                    self.sampling_rate, self.clip, self.temperature, self.noise_scale, self.secure
                )
                self.privacy_epsilon_per_draw = self.subsampled_test.epsilon_per_step
            per_record = record_log_likelihood(model, observed, private)
            self.ledger = ledger_for(model)
            self.datasets = datasets_of(model)

        if initial_point is None:
            with compiling(compile_kwargs["mode"]):
                initial_point = model.initial_point()
        size = sum(int(np.prod(initial_point[v.name].shape)) for v in vars)
        if proposal_scale.size not in (1, size):
            raise InvalidPrivacyParameterError(
                f"proposal_scale has {proposal_scale.size} values but the raveled vars have "
                f"{size} elements: pass a scalar or one scale per element."
            )
        self.proposal_dist = GaussianRandomWalk(np.broadcast_to(proposal_scale, (size,)))
        self.target_accept = 0.158 + 0.11 / size
        self.max_scaling = math.inf
        if self.max_step_size is not None:
            self.max_scaling = self.max_step_size / float(np.linalg.norm(self.proposal_dist.s))
        self.scaling = min(1.0, self.max_scaling)
        self.tune = bool(tune)
        self.adaptive = bool(tune)
        self.tuning_steps = 0

        shared = make_shared_replacements(initial_point, vars, model)
        # The private data are inputs of the graph, not constants in it or shared variables:
        # their values (checked above) travel as a `PrivatePayload`, so neither the graph
        # nor the compiled function holds raw data when the step is pickled.
        data_inputs = {v: v.type(name=v.name) for v in sorted(private, key=lambda v: v.name)}
        # Public stand-ins of each array's rows (its declared lower bounds), for `reads_rows`.
        self._placeholders = [(declaration(v).lower, v.dtype) for v in data_inputs]
        outputs = [log_prior] if per_record is None else [log_prior, per_record]
        # Every other shared variable (pm.Data, or a bare pytensor.shared the model reads) is
        # public and enters as the value the analysis read: a later pm.set_data or set_value
        # cannot move the log-likelihood outside the range L was computed for.
        shared_inputs = [
            v for v in graph_inputs(outputs) if isinstance(v, SharedVariable) and v not in private
        ]
        if any(isinstance(v.type, RandomType) for v in shared_inputs):
            raise UnsupportedModelError(
                "PrivateMetropolis compares Λ between two points on the same data, and this "
                "model's log-density draws random numbers as it runs (a pm.Simulator): Λ "
                "would be noise of unknown law. Write the likelihood as a log-density."
            )
        frozen = {v: pt.constant(v.get_value(), name=v.name) for v in shared_inputs}
        outputs = graph_replace(outputs, frozen, strict=False)
        values = in_memory_values(model, [v.name for v in data_inputs], "pmp.PrivateMetropolis")
        self._data = PrivatePayload([np.array(value) for value in values])
        # Compiled on first use or before the step is pickled to a worker process (once,
        # here), so a run `pmp.sample` refuses for its budget never waits for the compiler.
        self._log_ratio_graph = (
            initial_point,
            graph_replace(outputs, data_inputs, strict=False),
            vars,
            shared,
            list(data_inputs.values()),
        )
        self._compile_kwargs = compile_kwargs
        self._log_ratio_function = None
        # With a subsample, the rows it keeps are the data's: terms of a variable number of
        # rows, checked on placeholders within the declared bounds (`reads_rows`).
        self._subset_graph = None
        self._subset_function = None
        if self.subsampled_test is not None and per_record is not None:
            self._subset_graph = row_subset_graph(*self._log_ratio_graph)
        super().__init__(vars, shared, blocked=blocked, rng=rng)

    @staticmethod
    def cost(sensitivity: float, temperature: float, log_likelihood_error: float = 0.0) -> float:
        """The ε of one step, from public quantities only: (2L + 8η)/T + 2⁻⁴³, or 2c/T + 2⁻⁴³
        with ``clip=c`` (c in place of L, η = 0), evaluated exactly and rounded up to a float
        ("Privacy cost of one step" above; 2L/T is `pymc_private.analysis.routes.tempered_epsilon`
        in exact arithmetic). Infinite when it overflows floating point.

        Parameters
        ----------
        sensitivity
            L of the likelihood terms that depend on the block (``analysis.lipschitz_for``),
            or c.
        temperature
            T ≥ 1, already checked.
        log_likelihood_error
            η of assumption (A) (0 with ``clip``).
        """
        return barker_epsilon(sensitivity, temperature, log_likelihood_error)

    @staticmethod
    def chain_epsilon(
        steps: int,
        *,
        clip: float,
        sampling_rate: float | None = None,
        noise_scale: float = 1.0,
        temperature: float = 1.0,
        delta: float = 1e-6,
        secure: bool = True,
    ) -> float:
        """The ε at ``delta`` of ``steps`` steps of ``PrivateMetropolis(clip=c, ...)`` (every
        chain's tuning and draws together), from public quantities only, before any model or
        data: the ledger's composition of what `pmp.sample` would record. With
        ``sampling_rate=q`` that is ``steps`` subsampled Gaussian events (q', z = σq'T/c,
        :ref:`costs-subsampled-metropolis`), whose total depends on σT/c and the length far
        more than on q (a larger q raises z, which helps most where z is below about 1);
        without it, ``steps`` pure releases of 2c/T + 2⁻⁴³. ``secure`` as in the step (the
        secure noise's z comes from OpenDP's map). Invalid arguments raise the step's
        `InvalidPrivacyParameterError`."""
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise InvalidPrivacyParameterError(
                f"steps must be a positive integer (chains × (tune + draws)), got {steps!r}."
            )
        temperature = checked_temperature(temperature, "(2L + 8η)/T + 2⁻⁴³ per step")
        clip = _checked_clip(clip)
        secure = checked_secure(secure)
        rate = _checked_sampling_rate(sampling_rate, noise_scale, clip)
        if rate is None:
            release = Release(
                "clipped_barker_metropolis",
                PureEvent(barker_epsilon(clip, temperature)),
                count=steps,
            )
        else:
            test = SubsampledGaussianTest(rate, clip, temperature, float(noise_scale), secure)
            release = test.release("subsampled_gaussian_metropolis", steps)
        return PrivacyLedger([release]).composition(delta).epsilon

    def _log_ratio_terms(self, q1: np.ndarray, q0: np.ndarray) -> list[np.ndarray]:
        """[prior ratio, record ratios] of the move from ``q0`` to ``q1`` on the private data
        (`compile_log_ratio_terms`). Computed from raw data: never release them."""
        # Floating-point errors give NaN or ±∞, which the clip and the grid map; never an
        # exception whose raising would depend on a record (`record_log_likelihood` admits
        # no operation that raises on a value in compiled code).
        with np.errstate(all="ignore"):
            return self._compiled_log_ratio_terms()(q1, q0, *self._data.value)

    def _noisy_log_odds(self, q1: np.ndarray, q0: np.ndarray) -> float:
        """Λ̃ of the subsampled test. Where the terms are computed row by row on any number
        of rows (`_subset_function`), the subsample is drawn before any record is read and
        only its rows are read: the same words of ``self.rng`` in the same order, the same
        Λ̃, at a cost that scales with the subsample's size (public), not with n."""
        test, log_proposal_ratio = self.subsampled_test, self.proposal_dist.log_proposal_ratio
        subset = self._compiled_subset_terms()
        if subset is None:
            prior_ratio, record_ratios = self._log_ratio_terms(q1, q0)
            return test.noisy_log_odds(
                float(prior_ratio) + log_proposal_ratio, record_ratios, self.rng
            )
        data = self._data.value
        with np.errstate(all="ignore"):
            prior_ratio = float(subset(q1, q0, *(v[:0] for v in data))[0]) + log_proposal_ratio
            if not math.isfinite(prior_ratio):
                return prior_ratio
            rows = np.flatnonzero(test.subsample(len(data[0]), self.rng))
            _, record_ratios = subset(q1, q0, *(v[rows] for v in data))
        if np.shape(record_ratios) != rows.shape:  # a function of the subsample's size alone
            raise RuntimeError(
                "pymc-private: the subsample's terms are not one per row; please report this model."
            )
        return test.noisy_log_odds_of_subsample(prior_ratio, record_ratios, self.rng)

    def _compiled_subset_terms(self):
        """(q1, q0, *rows) ↦ [prior ratio, ratios of those rows], or None where the step
        reads every record (the terms are not row by row on a variable number of rows)."""
        if self._subset_graph is not None and self._subset_function is None:
            self._subset_function = reads_rows(
                compile_log_ratio_terms(*self._subset_graph, compile_kwargs=self._compile_kwargs),
                self._log_ratio_graph[0],
                self._subset_graph,
                self._placeholders,
            )
            self._subset_graph = None
        return None if self._subset_function is False else self._subset_function

    def _compiled_log_ratio_terms(self):
        if self._log_ratio_function is None:
            self._log_ratio_function = compile_log_ratio_terms(
                *self._log_ratio_graph, compile_kwargs=self._compile_kwargs
            )
        return self._log_ratio_function

    def __getstate__(self) -> dict:
        """Compiled here, once, not once in each worker process it is pickled to; the graph
        stays behind, and the private data travel as a session file (`PrivatePayload`)."""
        subset = self._compiled_subset_terms()
        return {
            **self.__dict__,
            "_log_ratio_function": self._compiled_log_ratio_terms() if subset is None else None,
            "_log_ratio_graph": None,
            "_subset_function": subset,
            "_subset_graph": None,
        }

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        """Seed the step for a new chain, which starts from the public starting scale.

        PyMC sets up every chain through ``setup_chain`` (``cores=1`` or not), so a step
        reused across ``pm.sample`` calls gives the same proposals for the same seed (and,
        with ``secure=False``, the same chains). Tuning stops when PyMC calls
        ``stop_tuning``, after ``tune`` iterations.
        """
        super().setup_chain(rng, tune, draws)
        self.scaling = min(1.0, self.max_scaling)
        self.tuning_steps = 0
        self.tune = self.adaptive

    def log_acceptance_ratio(
        self, q1: np.ndarray, q0: np.ndarray, log_proposal_ratio: float = 0.0
    ) -> float:
        """Λ of the move from the raveled sampling-space point ``q0`` to ``q1``, as the
        decision uses it (`barker_log_odds`): in [−B, B], or the log prior ratio when that
        is not finite. Computed from raw data: never release it."""
        prior_ratio, *record_ratios = self._log_ratio_terms(q1, q0)
        return barker_log_odds(
            float(prior_ratio) + log_proposal_ratio,
            record_ratios[0] if record_ratios else np.empty(0),
            record_bound=self.record_bound,
            temperature=self.temperature,
        )

    def planned_release(self, draws: int, chain: int | None) -> Release:
        """As `PrivateStep.planned_release`; with ``sampling_rate`` the record carries the
        subsampled Gaussian event (q', z) the ledger composes by its Rényi curve."""
        release = super().planned_release(draws, chain)
        if self.subsampled_test is None:
            return release
        return self.subsampled_test.release(
            release.mechanism,
            release.count,
            statistic=release.statistic,
            chain=release.chain,
            draw=release.draw,
            note=release.note,
        )

    def astep(self, q0: RaveledVars) -> tuple[RaveledVars, StatsType]:
        self.charge()
        q = floatX(q0.data + self.proposal_dist(self.rng) * self.scaling)
        if self.subsampled_test is not None:
            noisy = self._noisy_log_odds(q, q0.data)
            accepted = self.subsampled_test.accepts(noisy, self.rng)
        else:
            log_odds = self.log_acceptance_ratio(q, q0.data, self.proposal_dist.log_proposal_ratio)
            if math.isfinite(log_odds):
                accepted = exact_choice([log_odds, 0.0], secure=self.secure, rng=self.rng) == 0
            else:
                accepted = log_odds == math.inf
        if self.adaptive and self.tune:
            self.tuning_steps += 1
            gain = 5.0 * self.tuning_steps**-0.75
            self.scaling = min(
                self.scaling * math.exp(gain * (accepted - self.target_accept)), self.max_scaling
            )

        stats = {**self.privacy_stats(), "accepted": accepted}
        return RaveledVars(q if accepted else q0.data, q0.point_map_info), [stats]

    def release_note(self) -> str:
        if not self.touches_raw_data:
            return "Barker acceptance on prior terms only (no likelihood depends on vars); ε = 0."
        if self.subsampled_test is not None:
            test = self.subsampled_test
            noise = (
                "OpenDP Gaussian (its Rényi curve assumed to be the sampled Gaussian's)"
                if self.secure
                else "numpy Gaussian (not exact)"
            )
            return (
                f"Poisson subsample q={test.sampling_rate:.6g}, log-likelihood ratios clipped "
                f"to ±{self.clip:g}, T={self.temperature:g}, {noise} σ={test.noise_scale:g} "
                f"on the log-odds (z={test.noise_multiplier:.6g}), penalty-method decision; "
                "replace-one RDP of the subsampled Gaussian; targets an approximation of the "
                "clipped tempered posterior."
            )
        sampler = "OpenDP exact" if self.secure else "numpy Gumbel-max (not exact)"
        if self.clip is None:
            return (
                f"Barker acceptance at T={self.temperature:g}, {sampler} choice; ε per step = "
                f"(2L + 8η)/T + 2^-43 with η = {self.log_likelihood_error:.3g}, assuming "
                "log-likelihoods computed to within η."
            )
        return (
            f"Barker acceptance at T={self.temperature:g}, {sampler} choice, per-record "
            f"log-likelihood ratios clipped to ±{self.clip:g}; ε per step = 2c/T + 2^-43; "
            "targets the clipped posterior."
        )


def _float_error_bounds(terms: list[LikelihoodTerm], names: list[str]) -> tuple[float, float]:
    """(η, K) of the unclipped step on the block ``names`` (class docstring).

    C is the sum over the terms and a record's elements of the log-likelihood range with
    every parameter that depends on the block marked as varying with the record: the range
    of ℓ over the declared domain and those parameters jointly, the sup over the other
    parameters' box, which bounds |ℓ(x; θ') − ℓ(x; θ)| for moves of the block.
    """
    spread = sum(
        count
        * term.family.log_likelihood_range(
            {
                name: replace(
                    parameter,
                    varies_with_record=parameter.varies_with_record
                    or bool(set(parameter.free_variables) & set(names)),
                )
                for name, parameter in term.parameters.items()
            },
            domain,
        )
        for term in terms
        for domain, count in term.domains
    )
    if not math.isfinite(spread):
        raise UnboundedSensitivityError(
            f"PrivateMetropolis bounds each record's log-likelihood ratio |ℓ(x; θ') − ℓ(x; θ)| "
            f"for moves of {names} over the prior support, and it is infinite for "
            f"{', '.join(f'`{t.node}`' for t in terms)}: bound the likelihood's parameters on "
            "both sides with truncated priors, or pass clip=c."
        )
    error = LOG_LIKELIHOOD_ERROR * max(1, Fraction(spread))
    return float(error), ceil_float(Fraction(spread) + 4 * error)


def _checked_clip(clip) -> float:
    value = _real(clip)
    if value is None or not (_MIN_RECORD_BOUND <= value <= 2.0**970):
        raise InvalidPrivacyParameterError(
            f"clip must be a number in [2**-970, 2**970] (or None to use the record "
            f"Lipschitz constant), got {clip!r}; ε per step is 2·clip/T + 2**-43."
        )
    return value


def _checked_sampling_rate(sampling_rate, noise_scale, clip: float | None) -> float | None:
    """q' (`exact_sampling_rate`) for a rate q in (0, 1], or None; checked before the model."""
    if sampling_rate is None:
        return None
    rate, scale = _real(sampling_rate), _real(noise_scale)
    if rate is None or not (0.0 < rate <= 1.0):
        raise InvalidPrivacyParameterError(
            f"sampling_rate must be a number in (0, 1] (the probability that a record enters "
            f"each step's Poisson subsample), or None to read every record; got "
            f"{sampling_rate!r}."
        )
    if scale is None or not (0.0 < scale < math.inf):
        raise InvalidPrivacyParameterError(
            f"noise_scale must be a finite number > 0 (σ of the Gaussian noise on the "
            f"subsampled log-odds), got {noise_scale!r}."
        )
    if clip is None:
        raise InvalidPrivacyParameterError(
            "sampling_rate needs clip=c: the subsampled log-odds scale each sampled record's "
            "ratio by 1/q, and only a clip bounds a record's term (c/(qT)) whatever the "
            "subsample. Pass clip=c, e.g. a bound on the ratio for the moves proposed."
        )
    return exact_sampling_rate(rate)


def _checked_max_step_size(max_step_size) -> float | None:
    if max_step_size is None:
        return None
    value = _real(max_step_size)
    if value is None or not (0.0 < value < math.inf):
        raise InvalidPrivacyParameterError(
            f"max_step_size must be a finite number > 0 (the largest ‖proposal scale‖₂ tuning "
            f"may reach), or None for no limit; got {max_step_size!r}."
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


@route_cost
class MetropolisCost(RouteCost):
    """One Barker step of `PrivateMetropolis`: ε = 2L/T in exact arithmetic
    (`tempered_epsilon`), to which `PrivateMetropolis.cost` adds 8η/T and 2⁻⁴³."""

    name = "metropolis"
    formula = "2L/T"
    source = "Barker acceptance; docs: Mechanisms and their costs"
    row = 2
