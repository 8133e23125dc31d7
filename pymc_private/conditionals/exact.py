"""Exact private draws on raw data: the exponential mechanism over a public grid.

A pay-per-draw release on raw data (a raw-data `pmp.PrivateGibbs` block update, a
`pmp.sample_posterior` draw) is one draw from a tempered conjugate posterior truncated to the
prior's support Θ. Drawn in floating point by an inverse CDF, the set of floats that can come
out depends on the posterior's parameters, i.e. on the data: one output possible under D and
impossible under its neighbour D' makes ε infinite as implemented (the exponential-mechanism
form of Mironov 2012; Ilvento 2020). This module draws instead from a public grid, so that
every output is possible under every data set.

Mechanism (one entry of a block, e.g. one θ[c, j] of naive Bayes)
-----------------------------------------------------------------
Θ is cut into K public cells C_k with centres θ_k (equal width; geometric widths for a Gamma
on [c1, c2]; for a truncated Dirichlet, the K points of a lattice inside the truncated
simplex). A cell is chosen with probability

    P(k) ∝ exp(s_k),   s_k = log ξ(θ_k) + (1/T) Σ_i ℓ(x_i; θ_k) + log |C_k| + const,

the exponential mechanism with base measure the prior and utility the log-likelihood,
evaluated at the cell centres: s_k = Σ_c β_c φ_c(θ_k) + v_k with the public features φ
of the conjugate family (beta: log θ, log(1 − θ); gamma: log τ, −τ; normal: θ − m,
−(θ − m)²/2 about the centre m of the support; dirichlet: log p) and v_k = log |C_k|, and the
posterior's coefficients β (beta: α − 1, β − 1; gamma: α − 1, rate; normal: h − J·m, J;
dirichlet: a − 1), as the family objects of `pymc_private.priors.conjugate` compute them
(``grid_features``, ``grid_centre``, ``grid_coefficients``). Then the released value is
drawn uniformly inside the chosen cell (a Dirichlet releases the lattice point itself). The
selection is exact: OpenDP's Gumbel noisy max (`pymc_private.dp.mechanisms.exact_choice`)
returns k with probability exactly softmax(ŝ)_k for the float scores ŝ as computed; the
jitter uses only k and public numbers.

What the draw is: the tempered posterior with its density held constant on each cell, at
the value of its centre. A cell much narrower than the posterior's standard deviation makes
this indistinguishable from the posterior; the grid's width is public (``cells`` cells over
the support), the posterior's width is not, so choose ``cells`` from what you know of n/T.

Privacy, as implemented
-----------------------
*Support.* Every cell has positive probability under every data set and the jitter depends
on k and public numbers only, so the set of possible outputs does not depend on the data.

*Cost.* Let D, D' differ in record x → x'. The exact scores differ by
d_k = (ℓ(x; θ_k) − ℓ(x'; θ_k))/T + c(D, D') (a constant in k from the terms the features
drop), and |ℓ(x; θ) − ℓ(x'; θ)| ≤ L_j for every θ in the support (the block's record
Lipschitz constant, other parameters at any value of their supports), so range_k d_k ≤
2L_j/T; P_D(k)/P_D'(k) = exp(d_k)·Z_D'/Z_D ≤ exp(range_k d_k). Entries of a block are
conditionally independent, so the block's draw is the product of the entries' draws, whose
utility differences add: Σ_e range_k d_{e,k} = range over the product grid of the block's
utility difference ≤ 2L_j/T. So the block update is (2L_j/T)-DP over the reals.

*Floating point.* The coefficients β are computed exactly, in rational arithmetic from exact
statistics (`pymc_private.families.statistics.StatisticSpec` sums of integers; the prior's
parameters,
the temperature and the other blocks' current values are floats, hence exact rationals), and
rounded once to floats: |β̂_c − β_c| ≤ u|β_c|, u = 2⁻⁵³. The features φ and v are public and
computed identically for every data set, so their own rounding plays no part. The score is
then C products and C sums of IEEE-754 correctly rounded operations, so (Higham 2002, §3.1)

    |ŝ_k − s_k| ≤ γ_{C+2} (Σ_c B_c |φ_c(θ_k)| + |v_k|) =: e_k,   γ_m = m·u / (1 − m·u),

with B_c a public bound on |β_c| over every data set of n records within the declared
bounds and every state of the other blocks within their supports (interval arithmetic on
the same exact update). Hence range_k(ŝ_D − ŝ_D') ≤ 2L_j/T + 4 max_k e_k, and the block
update as implemented is ε_j-DP with

    ε_j = 2L_j/T + 4 Σ_e max_k e_{e,k},

the second term (the float allowance, ~1e-13 for ordinary models) computed once from public
quantities. No elementary function (exp, log, lgamma) is ever evaluated on a private value.

*Randomness and work.* With ``secure=True`` the selection draws from the operating system's
generator inside OpenDP and never reads the caller's generator; the jitter consumes exactly
one uniform per entry. With ``secure=False`` the selection is numpy's Gumbel-max on the
caller's generator (K draws per entry, reproducible, not exact): releases are then marked
not secure. Not covered: the running time of OpenDP's exact comparisons varies by
microseconds with the scores, a timing side channel outside ε.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from pymc_private.dp.measurements import ceil_float
from pymc_private.dp.mechanisms import exact_choice
from pymc_private.errors import UnsupportedModelError, with_article
from pymc_private.families.statistics import as_exact
from pymc_private.priors.conjugate import ConjugateFamily
from pymc_private.priors.support import ParameterSupport

__all__ = [
    "DEFAULT_CELLS",
    "GridBlock",
    "IntervalNumber",
    "check_family",
    "intervals",
    "statistic_bounds",
]

DEFAULT_CELLS = 1024
"""Cells per entry of a block by default (a Dirichlet's lattice has at most this many)."""
_UNIT_ROUNDOFF = Fraction(1, 2**53)
# A jittered value stays this fraction of its cell's width away from the cell's edges, so
# that no draw lands on the support's boundary (where transforms are infinite).
_EDGE_MARGIN = 2.0**-20


def check_family(family: ConjugateFamily) -> None:
    """Refuse a conjugate family without a grid sampler (regression weights)."""
    if not family.grid:
        raise UnsupportedModelError(
            f"no exact grid sampler for {with_article(family.name)} block on raw data (a grid "
            "over a vector of weights is not tractable): use pmp.PrivateMetropolis for it (one "
            "2L/T per step for the whole vector), or pmp.privatize the statistics first."
        )


def _gamma(m: int) -> Fraction:
    """Higham's γ_m = m·u/(1 − m·u), exactly."""
    return m * _UNIT_ROUNDOFF / (1 - m * _UNIT_ROUNDOFF)


class IntervalNumber:
    """A closed interval of exact rationals, with +, −, ×, / (for public bounds).

    Every result contains every value the operation can take on members of its operands;
    an operand may be a number, taken as a point.
    """

    __slots__ = ("lower", "upper")

    def __init__(self, lower, upper=None) -> None:
        self.lower = _rational(lower)
        self.upper = _rational(lower if upper is None else upper)

    @staticmethod
    def _of(value) -> IntervalNumber:
        return value if isinstance(value, IntervalNumber) else IntervalNumber(value)

    def __add__(self, other):
        if isinstance(other, np.ndarray):
            return NotImplemented
        other = self._of(other)
        return IntervalNumber(self.lower + other.lower, self.upper + other.upper)

    __radd__ = __add__

    def __neg__(self):
        return IntervalNumber(-self.upper, -self.lower)

    def __sub__(self, other):
        if isinstance(other, np.ndarray):
            return NotImplemented
        return self + (-self._of(other))

    def __rsub__(self, other):
        return self._of(other) - self

    def __mul__(self, other):
        if isinstance(other, np.ndarray):
            return NotImplemented
        other = self._of(other)
        products = [a * b for a in (self.lower, self.upper) for b in (other.lower, other.upper)]
        return IntervalNumber(min(products), max(products))

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, np.ndarray):
            return NotImplemented
        other = self._of(other)
        if other.lower <= 0 <= other.upper:
            raise ZeroDivisionError("interval division by an interval containing 0")
        return self * IntervalNumber(1 / other.upper, 1 / other.lower)

    def __rtruediv__(self, other):
        return self._of(other) / self

    @property
    def magnitude(self) -> Fraction:
        return max(abs(self.lower), abs(self.upper))

    def __repr__(self) -> str:
        return f"[{float(self.lower):g}, {float(self.upper):g}]"


def _rational(value) -> Fraction:
    """An exact rational with Python-int numerator and denominator: ``Fraction`` keeps a
    numpy integer as its numerator, whose products then wrap around silently at 2⁶³."""
    if isinstance(value, np.integer):
        value = int(value)
    elif isinstance(value, np.floating):
        value = float(value)
    return Fraction(value)


def intervals(lower, upper) -> np.ndarray:
    """An object array of `IntervalNumber` from elementwise bounds."""
    lower, upper = np.broadcast_arrays(np.asarray(lower), np.asarray(upper))
    cells = [IntervalNumber(lo, hi) for lo, hi in zip(lower.ravel(), upper.ravel(), strict=True)]
    return np.array(cells, dtype=object).reshape(lower.shape)


def statistic_bounds(analysis, node: str) -> tuple[dict[str, np.ndarray], object]:
    """Public interval bounds on a node's full statistics (natural units, by kind) and its
    totals, over every data set of n records within the declared bounds: what
    `pymc_private.analysis.core.term_statistics` returns for actual data, as intervals."""
    term = analysis.term(node)
    n = analysis.n_records
    public = term.public_totals()
    if public is None:  # a private index: a group holds between 0 and n records
        totals = intervals(np.zeros(term.n_groups), np.full(term.n_groups, n))
        records = n
    else:  # n, or a public index's group sizes
        totals = records = public
    full = {}
    for kind, spec in analysis.statistics_of(node).items():
        if spec.kind.categories:
            shape = (*spec.shape[:-1], spec.n_categories)
            most = np.broadcast_to(_leading(records, len(shape)), shape)
            full[kind] = intervals(np.zeros(shape), most)
            continue
        most = _leading(records, len(spec.shape))
        lower = most * spec.natural(spec.record_lower, exact=True)
        upper = most * spec.natural(spec.record_upper, exact=True)
        if public is None:
            lower = np.minimum(lower, 0)
            upper = np.maximum(upper, 0)
        full[kind] = intervals(
            np.broadcast_to(lower, spec.shape), np.broadcast_to(upper, spec.shape)
        )
    return full, totals


def _leading(records, ndim: int):
    """A record count (a scalar, or one per group as a column) shaped to broadcast against
    a statistic of ``ndim`` axes whose first axis is the group."""
    records = np.asarray(records, dtype=object)
    if records.ndim == 0:
        return records
    return records.reshape((-1,) + (1,) * (ndim - 1))


# ---------------------------------------------------------------------------------------
# Grids of the conjugate families
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Grid:
    """Public candidate values of one entry: points (K, D), features φ (K, C), log weights v
    (K,), and for scalar entries the cell edges (K + 1,) the jitter draws within."""

    points: np.ndarray
    features: np.ndarray
    log_weights: np.ndarray
    edges: np.ndarray | None


def _cell_edges(lower: float, upper: float, cells: int, geometric: bool) -> np.ndarray:
    if geometric:
        edges = np.geomspace(lower, upper, cells + 1)
    else:
        edges = np.linspace(lower, upper, cells + 1)
    edges[0], edges[-1] = lower, upper
    return edges


def _scalar_grid(family: ConjugateFamily, lower: float, upper: float, cells: int) -> _Grid:
    geometric = family.geometric_grid(lower)
    edges = _cell_edges(lower, upper, cells, geometric)
    if geometric:  # the geometric mean, without the product's overflow
        centres = np.exp(0.5 * (np.log(edges[:-1]) + np.log(edges[1:])))
    else:
        centres = 0.5 * (edges[:-1] + edges[1:])
    features = family.grid_features(centres, lower, upper)
    return _Grid(centres[:, None], features, np.log(np.diff(edges)), edges)


def _lattice(n_categories: int, cells: int) -> np.ndarray:
    """All compositions j of r into K parts, for the largest r with at most ``cells`` of
    them (stars and bars), as an int array (N, K)."""
    resolution = 0
    while math.comb(resolution + n_categories, n_categories - 1) <= cells:
        resolution += 1
    rows = []
    for bars in itertools.combinations(range(resolution + n_categories - 1), n_categories - 1):
        edges = (-1, *bars, resolution + n_categories - 1)
        rows.append([edges[i + 1] - edges[i] - 1 for i in range(n_categories)])
    return np.array(rows, dtype=np.int64)


def _simplex_grid(min_prob: float, n_categories: int, cells: int) -> _Grid:
    """Interior lattice points p = m + (1 − Km)(j + 1/K)/(r + 1) of the truncated simplex,
    equally weighted."""
    counts = _lattice(n_categories, cells)
    resolution = int(counts[0].sum())
    width = 1.0 - n_categories * min_prob
    points = min_prob + width * (counts + 1.0 / n_categories) / (resolution + 1)
    return _Grid(points, np.log(points), np.zeros(len(points)), None)


def _to_float(values) -> np.ndarray:
    """Exact rationals rounded once to the nearest float."""
    values = np.asarray(values)
    return np.array([float(v) for v in values.ravel()], dtype=np.float64).reshape(values.shape)


@dataclass(frozen=True, eq=False)
class GridBlock:
    """The grid exponential mechanism of one conjugate block (see the module docstring).

    Attributes
    ----------
    family
        A conjugate family with a grid (``family.grid``): beta, gamma, normal or dirichlet.
    batch_shape
        Shape of the block's entries (the variable's shape without a simplex's last axis).
    grids, grid_of
        The distinct grids, and which one each entry (flattened) uses.
    centres
        The normal features' centre m of each entry (flattened); 0 for other families.
    allowance
        4 Σ_e max_k e_{e,k}: the float allowance added to 2L_j/T (module docstring).
    """

    family: ConjugateFamily
    batch_shape: tuple[int, ...]
    grids: tuple[_Grid, ...]
    grid_of: np.ndarray
    centres: np.ndarray
    allowance: float

    @classmethod
    def build(
        cls,
        family: ConjugateFamily,
        support: ParameterSupport,
        cells: int,
        posterior_bounds: Mapping[str, np.ndarray],
    ) -> GridBlock:
        """The block's grids and float allowance.

        ``posterior_bounds`` holds the block's posterior in its family's additive coordinates
        evaluated in interval arithmetic (`IntervalNumber`) over every data set of n records
        within the declared bounds and every state of the other blocks: public bounds from
        which B_c ≥ |β_c| follow.
        """
        check_family(family)
        lower, upper = np.asarray(support.lower), np.asarray(support.upper)
        if family.vector:
            batch_shape = lower.shape[:-1]
            keys = [(float(support.simplex_min_prob), lower.shape[-1])] * math.prod(batch_shape)
        else:
            batch_shape = lower.shape
            keys = list(zip(lower.ravel().tolist(), upper.ravel().tolist(), strict=True))
        distinct = list(dict.fromkeys(keys))
        if family.vector:
            grids = tuple(_simplex_grid(m, k, cells) for m, k in distinct)
            centres = np.zeros(len(keys))
        else:
            grids = tuple(_scalar_grid(family, lo, hi, cells) for lo, hi in distinct)
            centres = np.array([family.grid_centre(*key) for key in keys])
        grid_of = np.array([distinct.index(key) for key in keys], dtype=np.int64)
        coefficients = family.grid_coefficients(
            posterior_bounds, as_exact(centres.reshape(batch_shape))
        )
        bounds = np.stack([_magnitudes(c, batch_shape).ravel() for c in coefficients], axis=-1)
        allowance = Fraction(0)
        for entry, grid_index in enumerate(grid_of.tolist()):
            grid = grids[grid_index]
            terms = np.abs(grid.features) @ bounds[entry] + np.abs(grid.log_weights)
            if not np.all(np.isfinite(terms)):
                raise UnsupportedModelError(
                    f"the grid scores of {with_article(family.name)} block overflow floating "
                    "point on the prior's support "
                    f"[{float(lower.min()):g}, {float(upper.max()):g}]: narrow the prior's "
                    "truncation bounds"
                )
            # Twice the float value: a margin far above the rounding of this public sum.
            largest = 2 * Fraction(float(np.max(terms)))
            allowance += 4 * _gamma(grid.features.shape[1] + 2) * largest
        return cls(family, tuple(batch_shape), grids, grid_of, centres, ceil_float(allowance))

    def scores(self, posterior: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """The float scores ŝ of every entry (flattened), from the exact (rational)
        posterior in the family's additive coordinates: the log-weights the selection
        samples, computed as the module docstring bounds them."""
        centres = as_exact(self.centres.reshape(self.batch_shape))
        coefficients = self.family.grid_coefficients(posterior, centres)
        beta = np.stack(
            [np.broadcast_to(_to_float(c), self.batch_shape).ravel() for c in coefficients],
            axis=-1,
        )
        return [
            self.grids[grid].features @ beta[entry] + self.grids[grid].log_weights
            for entry, grid in enumerate(self.grid_of.tolist())
        ]

    def values(self, cells: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The released values for chosen cells (an int array over the flattened entries,
        with any leading batch axes): the lattice point of a Dirichlet, a uniform draw
        inside the cell otherwise (one uniform per entry, whatever the cells)."""
        cells = np.asarray(cells)
        out = []
        for entry, grid_index in enumerate(self.grid_of.tolist()):
            grid = self.grids[grid_index]
            chosen = cells[..., entry]
            if grid.edges is None:
                out.append(grid.points[chosen])
                continue
            low, high = grid.edges[chosen], grid.edges[chosen + 1]
            share = _EDGE_MARGIN + (1.0 - 2 * _EDGE_MARGIN) * rng.random(chosen.shape)
            out.append(np.clip(low + share * (high - low), low, high)[..., None])
        values = np.stack(out, axis=-2)
        lead = cells.shape[:-1]
        if self.family.vector:
            return values.reshape((*lead, *self.batch_shape, values.shape[-1]))
        return values.reshape((*lead, *self.batch_shape))

    def points(self, cells: np.ndarray) -> np.ndarray:
        """The grid points of chosen cells (an int array over the flattened entries): the
        cell centres, or a Dirichlet's lattice points; no randomness."""
        out = [
            self.grids[grid_index].points[cells[entry]]
            for entry, grid_index in enumerate(self.grid_of.tolist())
        ]
        values = np.stack(out)
        if self.family.vector:
            return values.reshape((*self.batch_shape, values.shape[-1]))
        return values.reshape(self.batch_shape)

    def choose(
        self, scores: list[np.ndarray], *, secure: bool, rng: np.random.Generator
    ) -> np.ndarray:
        """The chosen cell of every entry (flattened), from its float `scores`: one exact
        selection per entry (`exact_choice`)."""
        chosen = [exact_choice(s, secure=secure, rng=rng) for s in scores]
        return np.array(chosen, dtype=np.int64)

    def draw(
        self,
        posterior: Mapping[str, np.ndarray],
        *,
        secure: bool,
        rng: np.random.Generator,
    ) -> np.ndarray:
        """One draw of every entry, from the exact (rational) posterior parameters."""
        return self.values(self.choose(self.scores(posterior), secure=secure, rng=rng), rng)


def _magnitudes(values, shape: tuple[int, ...]) -> np.ndarray:
    """max(|lower|, |upper|) of interval (or exact) entries, as floats rounded up."""
    values = np.broadcast_to(np.asarray(values, dtype=object), shape)
    out = [
        ceil_float(value.magnitude if isinstance(value, IntervalNumber) else abs(Fraction(value)))
        for value in values.ravel()
    ]
    return np.array(out, dtype=np.float64).reshape(shape)
