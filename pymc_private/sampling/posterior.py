"""Exact posterior draws (OPS / BAPS) and answering queries from them (PSAQR).

`sample_posterior` is Dimitrakakis et al. (JMLR 2017) Algorithm 1, BAPS: compute the
posterior ξ(θ | x) and return N independent exact draws Θ̂ from it. It applies to models whose
(tempered) joint posterior is a product of closed-form conjugate blocks truncated to the prior
supports, so every draw is exact: an approximate sampler would void the guarantee.

`PosteriorSampleResponder` is their Algorithm 2, PSAQR: every later query is answered from
the fixed sample set Θ̂ alone, so any number of queries costs nothing beyond the draws
(post-processing), and `psaqr_utility_bound` is the utility bound of their Lemma 11.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from fractions import Fraction
from typing import Any

import arviz as az
import numpy as np
import pymc as pm
import xarray as xr

from pymc_private.analysis.core import PrivacyAnalysis, analyze, term_statistics
from pymc_private.analysis.privatisation import POTENTIAL_SUFFIX, Privatisation, privatised_route
from pymc_private.analysis.routes import RouteCost, route_cost, tempered_epsilon
from pymc_private.compiling import CHECKED_MODE
from pymc_private.conditionals.blocks import (
    NOISE_AWARE_GIBBS,
    ConjugateBlock,
    conjugate_block,
    grid_block,
    raw_statistics,
)
from pymc_private.conditionals.exact import DEFAULT_CELLS
from pymc_private.data.ledgers import PrivacyLedger, ledger_for
from pymc_private.dp.budget import Budget, checked_budget
from pymc_private.dp.checks import checked_cells, checked_rng, checked_secure, checked_temperature
from pymc_private.dp.events import PureEvent, Release
from pymc_private.dp.session import releasing
from pymc_private.errors import (
    BudgetExceededError,
    InvalidPrivacyParameterError,
    UnsupportedModelError,
)
from pymc_private.priors.truncated import CENTRE_SWEEPS
from pymc_private.release.seal import LEDGER_ATTR, seal

__all__ = ["PosteriorSampleResponder", "psaqr_utility_bound", "sample_posterior"]

MECHANISM = "posterior_sampling"
MECHANISM_ON_PRIVATISED = "posterior_sampling_on_privatised_statistics"


def sample_posterior(
    model: pm.Model | None = None,
    n: int = 1,
    *,
    temperature: float = 1.0,
    cells: int = DEFAULT_CELLS,
    budget: Budget | None = None,
    secure: bool = True,
    random_seed: int | np.random.Generator | None = None,
) -> xr.DataTree:
    r"""``n`` independent draws from the (tempered) posterior: BAPS.

    On raw data the draws cost ε = n · (2L/T + a) in all, checked against ``budget`` before
    the data is read; on a model returned by `pmp.privatize` they are free. Why, and what a
    is: Notes below and :ref:`costs-posterior-sampling`.

    Parameters
    ----------
    model
        The model (default: the context model), with raw `pmp.PrivateData`.
    n
        Number of draws N ≥ 1.
    temperature
        T ≥ 1, finite: the likelihood is raised to 1/T.
    cells
        Grid cells per entry on raw data (an integer in [2, 65536]; see
        `pmp.PrivateGibbs`); ignored on a privatised model.
    budget
        A `pmp.Budget` the data sets' ledger (`pmp.ledger_for`) plus these n releases must
        fit.
    secure
        True (default): every data-dependent choice is drawn by OpenDP's exact sampler from
        the operating system's generator, so ``random_seed`` seeds only the data-independent
        jitter and the draws are not reproducible. False: everything is drawn from
        ``random_seed`` in floating point, reproducible by whoever holds the seed and not
        exact; the release is marked not secure.
    random_seed
        An int seed or a `numpy.random.Generator` (used as is).

    Returns
    -------
    xarray.DataTree
        ``posterior`` with one chain of ``n`` draws of every free variable (and the model's
        Deterministics), ``sample_stats["privacy_epsilon"]`` (2L/T + a per draw), the ledger as
        JSON in ``attrs["privacy_ledger"]`` (`pmp.sampling.ledger_of`), and nothing else
        derived from the data.

    Raises
    ------
    InvalidPrivacyParameterError
        ``n`` not an integer ≥ 1; ``temperature`` below 1, NaN or infinite; ``cells`` out of
        range; ``secure`` not a bool.
    TypeError, ValueError
        ``budget`` or ``random_seed`` of the wrong type, or a negative seed. Every
        argument is checked before the model is read or anything is recorded.
    UnsupportedModelError
        A model whose posterior is not a product of exact conjugate blocks (use
        `pmp.PrivateGibbs` or `pmp.PrivateMetropolis` with `pmp.sample`).
    UnboundedSensitivityError, DataBoundsError
        From `pmp.analyze`: L is infinite, or the data does not fit its declaration.
    BudgetExceededError
        The draws do not fit ``budget``; the message gives the largest affordable n.

    Notes
    -----
    Dimitrakakis et al. (2017), Algorithm 1: each draw is

        θ ~ ξ(θ) · Π_i p(x_i | θ)^{1/T}   on the prior's support Θ,

    independently of the others. On raw data each block is drawn by the grid exponential
    mechanism of `pymc_private.conditionals.exact` (the posterior with its density held constant on
    ``cells`` public cells per entry, one cell chosen by an exact selection, then a uniform
    draw inside it), so that the set of possible outputs does not depend on the data; on a
    privatised model, exactly in floating point (`pymc_private.priors.conjugate`), except that a
    Dirichlet or regression-weight draw whose truncated posterior has almost no mass where
    rejection proposes (none of 100,000 proposals accepted) is the end of a chain of
    ``CENTRE_SWEEPS`` = 200 sweeps of invariant Markov moves started at the support's centre
    (approximate, and never an error after ε was spent).

    **Privacy cost.**
    ε = n · (2L/T + a), with L the record Lipschitz constant over the prior supports and the
    declared bounds (`pmp.analyze(model).record_lipschitz`), T the temperature and a the sum
    of the blocks' floating-point allowances (`pymc_private.conditionals.exact.GridBlock.allowance`,
    ~1e-13 for ordinary models). One draw from the posterior is 2L-DP (Dimitrakakis et al.
    2017, Theorem 8, part 1); a draw from the tempered posterior is the exponential mechanism
    with utility Σ_i ℓ(x_i; θ), whose sensitivity is L, scaled by 1/T, hence 2L/T-DP; the
    `pymc_private.conditionals.exact` module docstring proves that the grid draw as implemented is
    (2L/T + a)-DP; n independent draws compose to n times that (their Corollary 10, part 1:
    2NL at T = 1). The cost is a function of public quantities, so ``budget`` is checked
    before the data is read: over budget, `BudgetExceededError` says how many draws fit,
    nothing is drawn and the ledger is unchanged. The spend is recorded as one `Release`
    (mechanism ``"posterior_sampling"``, ``count = n``) once the budget check has passed,
    before the data is read, so an error while drawing still counts as a release. Every draw
    does the same work and consumes the same number of words from the generator whatever the
    data (no rejection on raw data).

    On a model returned by `pmp.privatize` the posterior is the one given the privatised
    statistics: the draws are post-processing and cost ε = 0 (recorded as a free release in
    the data sets' ledger).

    Supported models: every free variable is one conjugate block (Beta for Bernoulli or
    Binomial probabilities, Dirichlet for Categorical ones, Gamma for Poisson or Exponential
    rates, Normal for a Normal mean with σ a constant; on a privatised model also MvNormal
    for regression weights with σ a constant) with constant prior parameters, and every
    observed node depends on a single free variable, so the joint posterior is the product
    of the blocks' posteriors. Naive Bayes qualifies: the class prior and the
    class-conditional tables are separate blocks, given the data. No Potentials.
    """
    n = _checked_count(n)
    temperature = checked_temperature(temperature, "2L/T per draw")
    cells = checked_cells(cells)
    secure = checked_secure(secure)
    rng = checked_rng(random_seed)
    checked_budget(budget)
    model = pm.modelcontext(model)
    privatisation = privatised_route(model)
    if privatisation is not None and privatisation.noise_aware:
        raise UnsupportedModelError(NOISE_AWARE_GIBBS)
    privatised = privatisation is not None
    analysis = privatisation.analysis if privatised else analyze(model)
    blocks = product_of_blocks(model, analysis, privatised=privatised)
    grids = (
        {}
        if privatised
        else {
            block.name: grid_block(block, analysis, model, temperature, cells) for block in blocks
        }
    )
    epsilon = 0.0
    if not privatised:
        epsilon = tempered_epsilon(analysis.record_lipschitz, temperature) + sum(
            grid.allowance for grid in grids.values()
        )
    release = Release(
        mechanism=MECHANISM_ON_PRIVATISED if privatised else MECHANISM,
        event=PureEvent(epsilon),
        count=n,
        sensitivity=None if privatised else analysis.record_lipschitz,
        statistic=", ".join(block.name for block in blocks),
        secure=secure or privatised,
        chain=0,
        draw=0,
        note=(
            f"exact posterior draws given privatised statistics at T={temperature:g}; free"
            if privatised
            else f"posterior draws (BAPS) on a grid of {cells} cells at T={temperature:g}; "
            "ε per draw = 2L/T + float allowance"
        ),
    )
    ledger = ledger_for(model)
    with releasing():  # one lock across check → record (pymc_private.dp.session)
        for limit in ledger.limits(budget):  # the ledger's files' budgets (`attach`) too
            _check_budget(limit, ledger, release, n)
        ledger.record(release, budget=budget)
    nodes = sorted({term.node for block in blocks for term, _, _ in block.updates})
    if privatised:
        posterior = {
            name: draws[np.newaxis]
            for name, draws in _independent_draws(
                analysis, privatisation.statistics, blocks, temperature, rng, n
            ).items()
        }
    else:
        exact = raw_statistics(model, analysis, nodes, exact=True)
        statistics = {node: term_statistics(analysis, exact, node) for node in nodes}
        posterior = {}
        for block in blocks:
            parameters = block.posterior(statistics, {}, Fraction(temperature), exact=True)
            draws = [grids[block.name].draw(parameters, secure=secure, rng=rng) for _ in range(n)]
            posterior[block.name] = np.stack(draws)[np.newaxis]
    attrs = {"sampler": "sample_posterior (BAPS, exact draws)", "temperature": temperature}
    # ε per draw as the ledger charges it (per person for data declared per person).
    (charged,) = ledger.charged([replace(release, count=1)])
    return inference_data(model, posterior, charged.epsilon, ledger, attrs)


@route_cost
class PosteriorSamplingCost(RouteCost):
    """One exact draw from the tempered posterior: ε = 2L/T (`tempered_epsilon`), to which
    `sample_posterior` adds its grid's allowance a."""

    name = "posterior_sampling"
    formula = "2L/T"
    source = "Dimitrakakis et al. 2017, Theorem 8"
    row = 0


def _independent_draws(
    analysis: PrivacyAnalysis,
    released: Mapping[str, np.ndarray],
    blocks: list[ConjugateBlock],
    temperature: float,
    rng: np.random.Generator,
    n: int,
) -> dict[str, np.ndarray]:
    """n independent exact float draws of every block given privatised statistics
    (post-processing), each block's n draws in one vectorised call."""
    nodes = sorted({term.node for block in blocks for term, _, _ in block.updates})
    statistics = {node: term_statistics(analysis, released, node) for node in nodes}
    draws = {}
    for block in blocks:
        batch = block.support.lower.shape
        if block.family.vector:
            batch = batch[:-1]
        draws[block.name] = block.family.draw(
            rng,
            block.conditional(statistics, {}, temperature),
            block.support,
            name=block.name,
            size=(n, *batch),
            current="centre",
            sweeps=CENTRE_SWEEPS,
        )
    return draws


def batched_posterior(
    model: pm.Model, privatisation: Privatisation, chains: int, draws: int, random_seed
) -> dict[str, np.ndarray] | None:
    """``chains × draws`` independent exact draws of a privatised (plug-in) model whose
    posterior is a product of conjugate blocks, by variable with dims (chain, draw, ...), as
    `pmp.sample` returns them without ``step``; None for a model that is not one
    (noise-aware, or not a product of blocks), which `pm.sample` samples instead.

    Post-processing of the released statistics: free. Each block is drawn for every chain
    and draw at once (`pymc_private.priors.conjugate.ConjugateFamily.draw`), so the cost per draw
    does
    not depend on n, and the draws are independent (no burn-in, no autocorrelation).
    """
    if privatisation.noise_aware:
        return None
    try:
        blocks = product_of_blocks(model, privatisation.analysis, privatised=True)
    except UnsupportedModelError:
        return None
    rng = checked_rng(random_seed)
    independent = _independent_draws(
        privatisation.analysis, privatisation.statistics, blocks, 1.0, rng, chains * draws
    )
    return {name: d.reshape(chains, draws, *d.shape[1:]) for name, d in independent.items()}


def _checked_count(n: Any) -> int:
    if isinstance(n, bool | np.bool_) or not isinstance(n, numbers.Integral) or n < 1:
        raise InvalidPrivacyParameterError(
            f"n must be an integer >= 1 (the number of posterior draws), got {n!r}; every draw "
            "costs 2L/T."
        )
    return int(n)


def product_of_blocks(
    model: pm.Model,
    analysis: PrivacyAnalysis,
    *,
    privatised: bool,
    route: str = "pmp.sample_posterior",
) -> list[ConjugateBlock]:
    """One conjugate block per free variable, refusing models whose joint posterior is not
    the product of the blocks' posteriors (the Potentials `pmp.privatize` puts in place of
    the observed nodes are the likelihood the blocks already account for); ``route`` names
    the caller in the refusals."""
    exact_only = f"{route} draws exactly from posteriors that are products of conjugate blocks only"
    if not model.free_RVs:
        raise UnsupportedModelError(
            "The model has no free random variables: there is no posterior to draw from."
        )
    likelihoods = {term.node + POTENTIAL_SUFFIX for term in analysis.terms} if privatised else set()
    extra = [p.name for p in model.potentials if p.name not in likelihoods]
    if extra:
        names = ", ".join(f"`{name}`" for name in extra)
        raise UnsupportedModelError(
            f"Potential {names} reweights the posterior, so it has no closed form: "
            f"{exact_only}. Sample this model with pmp.sample(step=pmp.PrivateMetropolis(...))."
        )
    blocks = []
    for rv in model.free_RVs:
        try:
            block = conjugate_block(analysis, rv, model)
        except UnsupportedModelError as error:
            raise UnsupportedModelError(f"{exact_only}. {error}") from None
        for term, _, state in block.updates:
            if state:
                others = ", ".join(f"`{name}`" for name in state.values())
                raise UnsupportedModelError(
                    f"`{term.node}` depends on `{rv.name}` and on {others}, so their joint "
                    f"posterior is not a product of conjugate blocks: {exact_only}. Sample this "
                    "model with pmp.sample(step=pmp.PrivateGibbs(temperature=...)), which "
                    "draws each block from its conditional."
                )
        blocks.append(block)
    return blocks


def _check_budget(budget: Budget, ledger: PrivacyLedger, release: Release, n: int) -> None:
    """Refuse before the data is read, saying how many draws fit."""
    try:
        budget.check(ledger, [release])
    except BudgetExceededError as refusal:
        affordable = budget.affordable_count(ledger, release.epsilon) if release.epsilon > 0 else 0
        raise BudgetExceededError(
            f"{refusal} At ε = 2L/T = {release.epsilon:.6g} per draw, at most n = "
            f"{affordable} draws fit (asked for n = {n}); or raise the temperature."
        ) from None


def inference_data(
    model: pm.Model,
    posterior: dict[str, np.ndarray],
    epsilon: float,
    ledger: PrivacyLedger,
    attrs: Mapping[str, Any],
) -> xr.DataTree:
    """The DataTree of independent draws (dims chain, draw, ...) that cost ``epsilon``
    each: the model's coords, dims and Deterministics, ``sample_stats["privacy_epsilon"]``,
    the ledger as JSON and ``attrs``; sealed."""
    coords = {name: list(values) for name, values in model.coords.items() if values is not None}
    dims = {
        name: list(model.named_vars_to_dims[name])
        for name in posterior
        if name in model.named_vars_to_dims
    }
    chains, draws = next(iter(posterior.values())).shape[:2]
    idata = az.from_dict(
        {
            "posterior": posterior,
            "sample_stats": {"privacy_epsilon": np.full((chains, draws), epsilon)},
        },
        coords=coords,
        dims=dims,
        attrs={"/": {"inference_library": "pymc_private", **attrs, LEDGER_ATTR: ledger.to_json()}},
    )
    if model.deterministics:
        # Under a mode that checks indices: a Deterministic may index by values computed as
        # it runs, and Numba would read past the axis into the process's memory.
        idata["posterior"] = pm.compute_deterministics(
            idata["posterior"].to_dataset(),
            model=model,
            extend_dataset=True,
            progressbar=False,
            compile_kwargs={"mode": CHECKED_MODE},
        )
    return seal(idata)


def psaqr_utility_bound(n_samples: int, delta: float, *, n_responses: int | None = None) -> float:
    r"""The utility bound of Dimitrakakis et al. (2017), Lemma 11, for PSAQR on N samples.

    With utilities u_θ(q, r) ∈ [0, 1], û(q, r) = (1/N) Σ_{θ∈Θ̂} u_θ(q, r) estimates the
    posterior expected utility u(q, r) = ∫ u_θ(q, r) dξ(θ | x). The proof of Lemma 11 bounds
    |û(q, r) − u(q, r)| < ε₀ = sqrt(ln(2/δ) / (2N)) with probability ≥ 1 − δ (Hoeffding's
    inequality), and the response r̂ maximising û is then at most 2ε₀ from the optimum:

        max_r u(q, r) − u(q, r̂) ≤ 2 · sqrt(ln(2/δ) / (2N)) = O(sqrt(ln(1/δ)/N)).

    Hoeffding's inequality holds for one fixed (q, r); r̂ is chosen after seeing Θ̂, so the
    deviation is needed uniformly over the candidate responses. With ``n_responses`` = |R|
    a union bound gives that uniformity: ε₀ = sqrt(ln(2|R|/δ) / (2N)), a guarantee for
    `PosteriorSampleResponder.respond` over |R| candidates. Without it the expression of the
    paper's proof is returned as stated.

    Parameters
    ----------
    n_samples
        N, the size of the sample set Θ̂ (public: it is the n of `sample_posterior`).
    delta
        The failure probability δ ∈ (0, 1) (a confidence level, not a privacy δ).
    n_responses
        |R|, the number of candidate responses of a query (optional, see above).

    Returns
    -------
    float
        The bound on the utility lost to sampling: decreasing in N and in δ, increasing in
        |R|. It does not depend on the data or on Θ̂.
    """
    if isinstance(n_samples, bool) or not isinstance(n_samples, numbers.Integral) or n_samples < 1:
        raise ValueError(f"n_samples must be an integer >= 1, got {n_samples!r}.")
    if not (isinstance(delta, numbers.Real) and 0.0 < delta < 1.0):
        raise ValueError(f"delta must be a probability in (0, 1), got {delta!r}.")
    responses = 1
    if n_responses is not None:
        if (
            isinstance(n_responses, bool)
            or not isinstance(n_responses, numbers.Integral)
            or n_responses < 1
        ):
            raise ValueError(f"n_responses must be an integer >= 1, got {n_responses!r}.")
        responses = int(n_responses)
    return 2.0 * math.sqrt(math.log(2.0 * responses / float(delta)) / (2.0 * int(n_samples)))


class PosteriorSampleResponder:
    r"""PSAQR: answer queries from a fixed posterior sample set Θ̂ (Dimitrakakis et al. 2017,
    Algorithm 2).

    For each query q_t (which may depend on earlier queries and responses) the response is

        r_t ∈ argmax_r Σ_{θ ∈ Θ̂} u_θ(q_t, r),

    the candidate with the largest average utility over Θ̂ (ties: the first candidate).

    Privacy cost: none beyond the draws. Responses are a function of Θ̂, of the query and of
    the utility only, never of the data, so they are post-processing of the release that
    produced Θ̂ (N · 2L/T for `sample_posterior`) and record nothing. Any number of queries,
    even adaptive ones, cost nothing more; the most powerful query reveals Θ̂ itself, which
    has already been paid for.

    Parameters
    ----------
    samples
        Θ̂: a DataTree from `sample_posterior` (every chain and draw of its posterior),
        or a mapping from variable names to arrays whose axis 0 indexes the N samples.
    utility
        ``utility(theta, query, response) -> float`` in [0, 1]: u_θ(q, r), with ``theta`` a
        dict from variable names to one sample's values. Bounded utilities are what the
        paper assumes and what `psaqr_utility_bound` needs.
    """

    def __init__(
        self,
        samples: xr.DataTree | Mapping[str, Any],
        utility: Callable[[Mapping[str, np.ndarray], Any, Any], float],
    ) -> None:
        if not callable(utility):
            raise TypeError("utility must be a callable utility(theta, query, response).")
        self.samples = _sample_set(samples)
        self.utility = utility

    @property
    def n_samples(self) -> int:
        """N = |Θ̂|."""
        return len(self.samples)

    def expected_utility(self, query: Any, responses: Sequence) -> np.ndarray:
        """û(q, r) = (1/N) Σ_{θ∈Θ̂} u_θ(q, r) for each candidate r in ``responses``."""
        candidates = list(responses)
        if not candidates:
            raise ValueError("responses must hold at least one candidate response.")
        values = np.array(
            [[self.utility(theta, query, r) for r in candidates] for theta in self.samples],
            dtype=np.float64,
        )
        if not (np.isfinite(values).all() and (values >= 0.0).all() and (values <= 1.0).all()):
            raise ValueError(
                "utility must return numbers in [0, 1] (Dimitrakakis et al. 2017 assume "
                "u_θ: Q × R → [0, 1]); rescale it, e.g. 1 − loss / max_loss."
            )
        return values.mean(axis=0)

    def respond(self, query: Any, responses: Sequence) -> Any:
        """The response to ``query``: the candidate of ``responses`` maximising û(q, r)."""
        candidates = list(responses)
        return candidates[int(np.argmax(self.expected_utility(query, candidates)))]

    def utility_bound(self, delta: float, *, n_responses: int | None = None) -> float:
        """`psaqr_utility_bound` for this sample set's N."""
        return psaqr_utility_bound(self.n_samples, delta, n_responses=n_responses)


def _sample_set(samples: xr.DataTree | Mapping[str, Any]) -> tuple[dict, ...]:
    """Θ̂ as a tuple of {name: value} dicts, one per sample."""
    if isinstance(samples, xr.DataTree):
        if "posterior" not in samples.children:
            raise ValueError("samples has no posterior group; pass sample_posterior's output.")
        stacked = samples["posterior"].to_dataset().stack(__sample__=("chain", "draw"))
        arrays = {name: np.moveaxis(stacked[name].values, -1, 0) for name in stacked.data_vars}
    elif isinstance(samples, Mapping):
        arrays = {name: np.asarray(value) for name, value in samples.items()}
    else:
        raise TypeError(
            "samples must be a DataTree from sample_posterior or a mapping from names to "
            f"arrays with the samples on axis 0, got {type(samples).__name__}."
        )
    sizes = {value.shape[0] if value.ndim else 0 for value in arrays.values()}
    if not arrays or len(sizes) != 1 or 0 in sizes:
        raise ValueError("samples must hold N >= 1 samples of every variable on axis 0.")
    n_samples = sizes.pop()
    return tuple({name: value[k] for name, value in arrays.items()} for k in range(n_samples))
