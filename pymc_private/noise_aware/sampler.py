"""Noise-aware posteriors in numpy: exact data augmentation for released counts, elliptical
slice sampling on the closed-form likelihood of released sums. The default sampler of
`pmp.sample` on a model that `pmp.privatize` returned noise-aware: nothing compiled, every
chain at once (each array carries the chains on a leading axis).

The posterior of a privatised model conditions on the released statistics s̃ = s + Z
(`pymc_private.noise_aware.likelihood`). For the counts of Bernoulli, Binomial (integer sums) and
Categorical nodes (naive Bayes and Bayes-net tables) and for Poisson sums, the true statistic s
has an exact law given θ (multinomial, Poisson; `LikelihoodFamily.count_law`) and the release
its exact integer noise law (discrete Laplace or discrete Gaussian, the laws OpenDP samples):
those posteriors are drawn exactly, with no normal approximation (up to the 10⁻¹² of mass a
window may leave out, `pymc_private.noise_aware.latent.TAIL`).

**Independent exact draws.** When the posterior is a product of one-dimensional blocks, each
free variable the Beta or Gamma parameter of one count node's cells (one cell per entry,
public totals, a prior of shape ≥ 1: Beta–Bernoulli, Binomial, Poisson rates), every draw is
independent: each cell's statistic from p(s | s̃) with θ summed out (beta-binomial, negative
binomial), then θ | s (`AugmentedSampler._independent`). All chains and draws in one call.

**Otherwise a Markov chain** whose every move leaves the posterior invariant; a sweep

1. moves every parameter entry θ_e of the count nodes with their cells' s summed out (a
   collapsed Metropolis move on a transformed scale, whose likelihood Σ_s p(s | θ) p(s̃ | s) is
   a one-dimensional sum per cell, `pymc_private.noise_aware.latent.binary_split`, `poisson_split`;
   a
   Dirichlet entry one pair of categories at a time, holding their sum), then redraws those s
   given θ exactly. Proposals: a random walk tuned by Robbins–Monro, then half the sweeps an
   independence Student-t fitted to the tuning draws (`_LineProposal`). This is what keeps the
   chain fast where the noise dwarfs the sampling spread (small n·ε), where alternating
   s | θ and θ | s alone would crawl;
2. moves the latent group sizes N of a private group index (naive Bayes' class counts) by
   thinning: k records move from group h to group g, the grouped cells gain k fresh records of
   g and lose k records of h drawn at random, so that their own law cancels and the move is
   accepted on the group sizes' prior and the noise of every cell it changed. When a node
   observes the index (``y ~ Categorical(π)``), N moves along the ridge N ≈ n·π together with
   π (`_move_ridge`); otherwise its prior is flat (`_move_sizes`);
3. draws the count blocks the collapsed moves do not reach (π) from their exact conjugate
   conditionals given s and N (truncated Beta, Dirichlet, Gamma: `pymc_private.priors.conjugate`);
4. moves the parameters of released sums and any hyperparameters (below).

**Released sums (Normal, Exponential, linear regression).** Their likelihood p(s̃ | θ) is the
closed form the NUTS route (``step=pm.NUTS()``) samples: the sum's normal law (exact for Normal
data, the central limit theorem otherwise) convolved with the noise (exactly for one
Laplace-noised cell, as a Normal of the noise's variance for a vector), a regression's released
Gram matrix plugged in with its errors-in-variables covariance (`noise_aware.term_observations`,
`cell_log_likelihood`, numpy). With s summed out there is nothing to augment: the parameters
move by elliptical slice sampling (Murray, Adams & MacKay 2010) against a reference Gaussian
(`SliceBlock`): scalars of one node (a Normal's μ and τ) or hyperparameters of one child
jointly, entry by entry on the real line (logit or log of the support), a weight vector against
its prior first, with a regression's varying intercepts alpha[g] when their prior is fixed (all
entries at once, each on the line); under a hyperprior the intercepts move alone and the
hyperparameters also with them carried along (a non-centred update, `Carried`); the reference
is refitted to the tuning draws. The chain targets exactly what NUTS targets.

Tuning iterations adapt the proposals and references and are discarded. Every quantity read is
released or public: post-processing, free of privacy cost. Models with parts no move covers (a
Potential of the user's, a non-conjugate prior on counts, a hyperprior over count parameters, a
group index observed by a grouped node, a count parameter that also enters a sum) are left to
NUTS (`augmented_sampler` returns None and says why on PyMC's logger).
"""

from __future__ import annotations

import logging
import time
import warnings
from dataclasses import replace as _replace

import numpy as np
import pymc as pm
from scipy import special

from pymc_private.analysis.core import PrivacyAnalysis
from pymc_private.conditionals.blocks import conjugate_block
from pymc_private.errors import NUTSFallbackWarning, UnsupportedModelError, with_article
from pymc_private.families.kinds import COUNTS, SUM
from pymc_private.families.likelihood import LikelihoodTerm, PoissonCounts
from pymc_private.families.statistics import StatisticSpec, complete_statistic
from pymc_private.noise_aware.chain import AugmentedChain
from pymc_private.noise_aware.counts import CountBlock, CountNode, GroupSizes
from pymc_private.noise_aware.latent import (
    NoiseLaw,
    beta_binomial_split,
    gamma_poisson_split,
)
from pymc_private.noise_aware.likelihood import noise_laws, true_share_name
from pymc_private.noise_aware.slice_moves import SumsVariable, slice_blocks
from pymc_private.priors.conjugate import BETA, GAMMA
from pymc_private.priors.density import (
    SCALAR_PRIORS,
    support_centre,
)
from pymc_private.priors.support import ParameterSupport, parameter_support, prior_parameter_graphs

__all__ = ["AugmentedSampler", "augmented_posterior", "augmented_sampler"]

_log = logging.getLogger("pymc")

# Rounds of rejection (the prior's truncation) of independent exact draws before the Markov
# chain is used instead (each round keeps a draw with the probability that θ | x is inside).
_INDEPENDENT_ROUNDS = 64


class _Uncovered(Exception):
    """A model part none of the moves covers: the caller samples with NUTS instead."""


def augmented_sampler(model: pm.Model, privatisation) -> AugmentedSampler | None:
    """The numpy sampler of a noise-aware privatised ``model``, or None when it is plug-in or
    a part of it is not covered (`augmented_posterior` says which)."""
    built = _built(model, privatisation)
    return built if isinstance(built, AugmentedSampler) else None


def _built(model: pm.Model, privatisation) -> AugmentedSampler | str | None:
    """The sampler, or why the moves do not cover the model, or None for a plug-in model."""
    if not privatisation.noise_aware:
        return None
    try:
        return AugmentedSampler(model, privatisation)
    except _Uncovered as reason:
        return str(reason)


def augmented_posterior(
    model: pm.Model, privatisation, chains: int, tune: int, draws: int, rng: np.random.Generator
) -> tuple[dict[str, np.ndarray], str] | None:
    """``draws`` draws per chain (dims chain, draw, ...) of a noise-aware privatised model by
    the numpy sampler, and how they were drawn (`AugmentedSampler.method`), or None when it
    does not cover the model (a `NUTSFallbackWarning` says why; the caller runs NUTS).
    Post-processing of released statistics: free."""
    sampler = _built(model, privatisation)
    if sampler is None:
        return None
    if isinstance(sampler, str):
        warnings.warn(
            f"pmp.sample runs NUTS on this noise-aware model, compiled and often 10 to 300 "
            f"times slower than its numpy sampler, which does not cover it: {sampler}. Remove "
            "that part to sample in numpy, or pass step=pm.NUTS() to choose NUTS.",
            NUTSFallbackWarning,
            stacklevel=3,
        )
        return None
    start = time.perf_counter()
    posterior = sampler.sample(chains, tune, draws, rng)
    _log.info(
        "Drew %d chains of %d draws (%s; numpy, nothing compiled) in %.1f s.",
        chains,
        draws,
        sampler.method,
        time.perf_counter() - start,
    )
    return posterior, sampler.method


class AugmentedSampler:
    """The sampler of one noise-aware privatised model (module docstring); `sample` runs it.

    Parameters
    ----------
    model
        The model `pmp.privatize` returned (or a copy of it).
    privatisation
        What it released (`pymc_private.analysis.privatisation.Privatisation`).

    Raises
    ------
    _Uncovered
        A part of the model has no move here.
    """

    def __init__(self, model: pm.Model, privatisation) -> None:
        self.model = model
        self.analysis: PrivacyAnalysis = privatisation.analysis
        self.released = privatisation.statistics
        self.laws = noise_laws(privatisation)
        analysis = self.analysis
        free = {rv.name for rv in model.free_RVs}
        for term in analysis.terms:
            gone = [name for name in term.free_variables if name not in free]
            if gone:  # e.g. fixed by pm.do: the analysis' terms no longer describe the model
                raise _Uncovered(f"`{term.node}` reads `{gone[0]}`, no longer a free variable")
        self.sizes = self._group_sizes()
        size_nodes = {s.node.node for s in self.sizes.values() if s.node is not None}
        self.counts: dict[str, CountNode] = {}
        self.sums: dict[str, tuple[LikelihoodTerm, dict, dict]] = {}
        for term in analysis.terms:
            if term.node in size_nodes:
                continue
            if _counted(term):
                self.counts[term.node] = self._count_node(term)
                continue
            specs = analysis.statistics_of(term.node)
            full = {
                kind: complete_statistic(spec, self.released[spec.name], 0)
                for kind, spec in specs.items()
            }
            self.sums[term.node] = (term, specs, full)
        self.totals = {
            term.node: None if term.totals_statistic() is None else term.totals_statistic().name
            for term in analysis.terms
        }
        self.public_totals = {term.node: term.public_totals() for term in analysis.terms}
        self.count_blocks: dict[str, CountBlock] = {}
        self.variables: dict[str, SumsVariable] = {}
        self.shares = {true_share_name(s.spec.name): name for name, s in self.sizes.items()}
        for rv in model.free_RVs:
            if rv.name not in self.shares:
                self._add_block(rv)
        self._link_hyperparameters()
        self._check_potentials()

    # -- the plan -------------------------------------------------------------------------

    def _group_sizes(self) -> dict[str, GroupSizes]:
        analysis, found = self.analysis, {}
        for term in analysis.terms:
            spec = term.totals_statistic()
            if spec is None or spec.name in found:
                continue
            observers = [
                t for t in analysis.terms if spec.name in {s.name for s in _specs(analysis, t)}
            ]
            if any(t.group_by is not None for t in observers):
                raise _Uncovered(f"the index {term.group_by} is observed by a grouped node")
            node = observers[0] if observers else None
            grouped = [t for t in analysis.terms if t.group_by == term.group_by]
            counts = tuple(t.node for t in grouped if _counted(t))
            sums = tuple(t.node for t in grouped if t.node not in counts)
            released = np.asarray(self.released[spec.name], dtype=np.float64)
            if spec.derived_first:
                released = np.concatenate([[np.nan], released])
            found[spec.name] = GroupSizes(
                spec, released, self._integer_noise(spec), node, counts, sums
            )
        return found

    def _integer_noise(self, spec: StatisticSpec) -> NoiseLaw:
        law = self.laws[spec.name]
        if spec.unit != 1.0 or law.scale <= 0:
            raise _Uncovered(f"{spec.name} is not an integer statistic released with noise")
        return law

    def _count_node(self, term: LikelihoodTerm) -> CountNode:
        (spec,) = _specs(self.analysis, term)
        released = np.asarray(self.released[spec.name], dtype=np.float64)
        poisson = _count_law_type(term) is PoissonCounts
        if spec.kind is COUNTS and spec.derived_first:
            released = np.concatenate([np.full((*released.shape[:-1], 1), np.nan), released], -1)
        elif spec.kind is SUM and not poisson:  # a Binomial sum: the successes
            released = np.stack([np.full(released.shape, np.nan), released], axis=-1)
        totals = term.totals_statistic()
        return CountNode(
            term,
            spec,
            released,
            self._integer_noise(spec),
            None if totals is None else totals.name,
            poisson,
        )

    def _add_block(self, rv) -> None:
        name = rv.name
        nodes = tuple(t.node for t in self.analysis.terms if name in t.free_variables)
        counted = [node for node in nodes if node not in self.sums]
        if counted:
            if len(counted) != len(nodes):
                raise _Uncovered(f"{name} enters both counts and sums")
            try:
                block = conjugate_block(self.analysis, rv, self.model, augmented=True)
            except UnsupportedModelError as error:
                # Its first sentence: why (the rest is advice for PrivateGibbs users).
                raise _Uncovered(str(error).split(". ")[0]) from None
            if block.hyper:
                raise _Uncovered(f"{name} has a hyperprior over count parameters")
            collapsible = all(node in self.counts for node in nodes)
            self.count_blocks[name] = CountBlock(block, nodes, collapsible)
            return
        support = parameter_support(rv)
        if support is None:
            raise _Uncovered(f"{name} has an unreadable prior")
        vector = support.family == "mvnormal"
        if not vector and support.family not in SCALAR_PRIORS:
            raise _Uncovered(f"{name} has {with_article(support.family)} prior")
        hyper = {}
        if any(value is None for value in support.params.values()):
            if vector:
                raise _Uncovered(f"{name} has a hyperprior over a weight vector")
            graphs = prior_parameter_graphs(rv)
            hyper = {k: graphs[k] for k, v in support.params.items() if v is None}
        terms = tuple(
            (node, p.name)
            for node in nodes
            for p in self.analysis.term(node).parameters.values()
            if p.free_variable == name
        )
        intercepts = tuple(
            (node, p.name)
            for node in nodes
            for p in self.analysis.term(node).parameters.values()
            if p.intercept == name
        )
        if intercepts and not terms and len(intercepts) == len(nodes) and not vector:
            # Varying intercepts alpha[g] of a regression: their entries move jointly.
            self.variables[name] = SumsVariable(name, support, True, hyper, intercepts)
            return
        if len(terms) != len(nodes):
            raise _Uncovered(f"{name} enters a likelihood through an expression")
        weights = any(
            p.covariates is not None
            for node in nodes
            for p in self.analysis.term(node).parameters.values()
            if p.free_variable == name
        )
        # Regression weights with a scalar prior per entry (TruncatedNormal(shape=p)): the
        # likelihood does not factor over the entries, so they move as one vector, each entry
        # on its line, as varying intercepts do.
        self.variables[name] = SumsVariable(name, support, vector or weights, hyper, terms)

    def _link_hyperparameters(self) -> None:
        free = {rv.name for rv in self.model.free_RVs}
        children: dict[str, tuple[str, ...]] = {name: () for name in self.variables}
        for variable in self.variables.values():
            for graph in variable.hyper.values():
                for parent in {v.name for v in _ancestors(graph) if v.name in free}:
                    known = self.variables.get(parent)
                    if known is None or known.vector:
                        raise _Uncovered(f"{variable.name}'s prior depends on {parent}")
                    if known.support.lower.shape != ():
                        raise _Uncovered(f"the hyperparameter {parent} is not a scalar")
                    children[parent] += (variable.name,)
        self.variables = {
            name: _replace(variable, children=children[name])
            for name, variable in self.variables.items()
        }
        for variable in self.variables.values():
            if not variable.terms and not variable.children and not variable.hyper:
                raise _Uncovered(f"{variable.name} is in no likelihood")
        self.slices = slice_blocks(self.analysis, self.variables)

    def _check_potentials(self) -> None:
        expected = {term.node + "_privatised" for term in self.analysis.terms}
        expected |= {spec.spec.name + "_noise" for spec in self.sizes.values()}
        extra = [p.name for p in self.model.potentials if p.name not in expected]
        extra += [rv.name for rv in self.model.observed_RVs]
        if extra:
            raise _Uncovered(f"the model's own likelihood term `{extra[0]}`")

    # -- sampling -----------------------------------------------------------------------

    def sample(
        self, chains: int, tune: int, draws: int, rng: np.random.Generator
    ) -> dict[str, np.ndarray]:
        """``draws`` draws of every free variable per chain after ``tune`` adapting ones,
        with dims (chain, draw, ...) (the latent group shares as the model names them):
        independent exact draws when the posterior allows them (`_independent`), else the
        Markov chain (module docstring). ``method`` says which."""
        independent = self._independent(chains * draws, rng)
        if independent is not None:
            self.method = "independent exact draws"
            return {name: d.reshape(chains, draws, *d.shape[1:]) for name, d in independent.items()}
        moves = []
        if self.counts:
            moves.append("data augmentation of counts")
        if self.slices:
            moves.append("elliptical slice sampling")
        self.method = f"{' and '.join(moves) or 'conjugate Gibbs'}, {tune} tuning iterations"
        state = AugmentedChain(self, chains, rng)
        kept: dict[str, list] = {}
        for iteration in range(tune + draws):
            tuning = iteration < tune
            state.sweep(iteration if tuning else None, tune)
            if not tuning:
                for name, value in state.output().items():
                    kept.setdefault(name, []).append(value)
        return {name: np.stack(values, axis=1) for name, values in kept.items()}

    def _independent(self, count: int, rng: np.random.Generator) -> dict[str, np.ndarray] | None:
        """``count`` independent exact draws of every variable when the posterior is a
        product of one-dimensional blocks that a sum over one cell resolves: each free
        variable the Beta or Gamma parameter of one count node's cells, one cell per entry,
        public totals, no latent group sizes or sums, and a prior of shape ≥ 1 (so that the
        predictive of the cell is log-concave). Each cell's statistic x is drawn from
        p(x | s̃) ∝ p(s̃ | x)·∫p(x | θ)ξ(θ) dθ (`pymc_private.noise_aware.latent.beta_binomial_split`,
        `gamma_poisson_split`), kept with the probability that θ | x lies in the prior's
        support (rejection: the truncation), then θ | x from its truncated conjugate law.
        None when the model is not such a product (then the Markov chain samples it)."""
        if self.sizes or self.variables or not self.count_blocks:
            return None
        found = {}
        for name, block in self.count_blocks.items():
            drawn = self._independent_block(name, block, count, rng)
            if drawn is None:
                return None
            found[name] = drawn
        return found

    def _independent_block(self, name, block: CountBlock, count: int, rng):
        conjugate = block.block
        if conjugate.family not in (BETA, GAMMA) or len(block.nodes) != 1:
            return None
        node = self.counts[block.nodes[0]]
        term, support = node.term, conjugate.support
        prior = {
            k: np.broadcast_to(np.asarray(v, dtype=np.float64), support.lower.shape)
            for k, v in conjugate.prior.items()
        }
        if np.any(prior["alpha"] < 1) or (conjugate.family is BETA and np.any(prior["beta"] < 1)):
            return None
        values = {name: support_centre(support)}
        law = term.family.count_law(term, term.parameters_at(values), self.public_totals[term.node])
        cells = np.shape(node.released)[: np.ndim(node.released) - (0 if node.poisson else 1)]
        if cells != support.lower.shape:  # one cell per entry
            return None
        released = np.broadcast_to(node.released, cells + (() if node.poisson else (2,)))
        size = int(np.prod(cells))
        alpha = prior["alpha"].reshape(size)
        if node.poisson:
            exposure = np.broadcast_to(law.means / law.rates, cells).reshape(size)
        else:
            totals = np.broadcast_to(law.totals, cells).reshape(size).astype(np.int64)
            shown = ~np.isnan(released.reshape(size, 2)[0])
        kept = np.zeros((size, count))
        missing = np.ones((size, count), dtype=bool)
        for _ in range(_INDEPENDENT_ROUNDS):
            rows = np.flatnonzero(missing.any(axis=1))
            if not rows.size:
                break
            if node.poisson:
                x = gamma_poisson_split(
                    rng,
                    exposure[rows],
                    alpha[rows],
                    prior["beta"].reshape(size)[rows],
                    released.reshape(size)[rows],
                    node.noise,
                    count,
                )
                shape, rate = (
                    alpha[rows, None] + x,
                    prior["beta"].reshape(size)[rows, None] + exposure[rows, None],
                )
                inside = special.gammainc(shape, rate * support.upper.reshape(size)[rows, None])
                inside = inside - special.gammainc(
                    shape, rate * support.lower.reshape(size)[rows, None]
                )
                parameters = {"alpha": shape, "beta": rate}
            else:
                flat = released.reshape(size, 2)[rows]
                x = beta_binomial_split(
                    rng,
                    totals[rows],
                    alpha[rows],
                    prior["beta"].reshape(size)[rows],
                    flat[:, 1] if shown[1] else None,
                    flat[:, 0] if shown[0] else None,
                    node.noise,
                    count,
                )
                a, b = (
                    alpha[rows, None] + x,
                    prior["beta"].reshape(size)[rows, None] + totals[rows, None] - x,
                )
                inside = special.betainc(a, b, support.upper.reshape(size)[rows, None])
                inside = inside - special.betainc(a, b, support.lower.reshape(size)[rows, None])
                parameters = {"alpha": a, "beta": b}
            accept = missing[rows] & (rng.random(x.shape) < inside)
            flat_support = ParameterSupport(
                support.family,
                {},
                np.broadcast_to(support.lower.reshape(size)[rows, None], x.shape),
                np.broadcast_to(support.upper.reshape(size)[rows, None], x.shape),
            )
            theta = conjugate.family.draw(rng, parameters, flat_support, name=name)
            block_rows = kept[rows]
            block_rows[accept] = theta[accept]
            kept[rows] = block_rows
            missing[rows] &= ~accept
        if missing.any():
            return None
        return kept.T.reshape(count, *cells)


def _specs(analysis: PrivacyAnalysis, term: LikelihoodTerm) -> tuple[StatisticSpec, ...]:
    return tuple(analysis.statistics_of(term.node).values())


def _count_law_type(term: LikelihoodTerm) -> type | None:
    """The type of the exact law of the node's statistic as integer counts (None: its
    family has none), read from the law at placeholder parameters."""
    probe = {
        name: np.full(p.shape, 0.5) for name, p in term.parameters.items() if p.constant is None
    }
    totals = 1 if term.group_by is None else np.ones(term.n_groups)
    law = term.family.count_law(term, probe, totals)
    return None if law is None else type(law)


def _counted(term: LikelihoodTerm) -> bool:
    return _count_law_type(term) is not None


def _ancestors(graph):
    from pytensor.graph.traversal import ancestors

    return ancestors([graph])
