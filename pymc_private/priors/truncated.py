"""Draws from conjugate posteriors truncated to a prior's support, given public parameters.

The closed-form conditionals of the supported families are truncated Beta, Gamma, Normal,
Dirichlet and MvNormal distributions; this module draws from them, vectorised over batches
of parameters, using only the numpy ``Generator`` it is handed, exactly up to floating point.
It serves parameters that are public: privatised statistics (every draw is post-processing),
prior draws, released states. It is **not** a private mechanism: an inverse CDF maps the
2⁵³ uniforms to a set of floats that depends on the parameters, so on raw data the set of
possible outputs would depend on the data (ε = ∞ as implemented; Mironov 2012). Raw-data
draws go through `pymc_private.conditionals.exact`. The conjugate families
(`pymc_private.priors.conjugate`)
draw through these functions.

Functions
---------
truncated_beta(rng, alpha, beta, lower=0, upper=1, size=None)
    Beta(α, β) on [lower, upper].
truncated_gamma(rng, alpha, beta, lower=0, upper=inf, size=None)
    Gamma(α, rate β) on [lower, upper].
truncated_normal(rng, mu, sigma, lower=-inf, upper=inf, size=None)
    Normal(μ, σ) on [lower, upper].
truncated_dirichlet(rng, a, min_prob=0, size=None, *, name=..., max_proposals=100_000,
                    return_acceptance_rate=False, current=None, moves=None)
    Dirichlet(a) on {p : every p_k ≥ min_prob}.
mvnormal_in_ball(rng, mu, cov, radius=inf, size=None, *, name=..., max_proposals=100_000,
                 return_acceptance_rate=False, current=None, moves=None)
    MvNormal(μ, Σ) on {w : ‖w‖₂ ≤ radius}.

Methods
-------
Scalar families first draw every entry from numpy's own (untruncated) sampler and keep the
draws inside the interval (the usual case of a posterior inside its prior's support: no
special function is evaluated). An entry whose first draw fell outside is redrawn: by
further rejection when at least half its law lies inside the interval (at most two more
proposals on average), otherwise by the inverse CDF on the truncated interval, in whichever
tail (lower, through the CDF, or upper, through the survival function) keeps the interval's
probabilities small, so that far-tail truncations keep their precision. When the interval's
probability underflows or is too small relative to its endpoints' for the inverse CDF to
resolve it (a far tail beyond double precision, or a very narrow interval), they fall back
to rejection from an exponential envelope: the log density is split into concave terms,
bounded above by their tangent at the endpoint of larger density, and monotone terms,
bounded by their larger endpoint value; the envelope is then a truncated exponential drawn
by its own inverse CDF, and the accepted draw is exact.

Dirichlet and MvNormal use rejection: a proposal is accepted when it lies in the support,
and the first accepted proposal of a sequence of independent proposals is an exact draw.
For the Dirichlet the better of two proposals is used per draw: the untruncated
Dirichlet(a), or p = m + (1 − Km)·q with q ~ Dirichlet(min(a, 1)) and an acceptance
probability ≤ 1 (exact for a = 1, where the untruncated proposal is hopeless for large K).

Giving up, or moving on
-----------------------
A draw that saw ``max_proposals`` proposals without acceptance raises
`UnsupportedModelError` (whether that happens depends on the acceptance rate, a function of
the parameters; the parameters are public here, so the error reveals nothing private),
unless a ``current`` state in the support is given. Then that draw is instead ``moves``
Markov moves from ``current``, each leaving the truncated law invariant and each always
possible, so the call never fails:

- MvNormal in the ball: hit-and-run in the whitening coordinates u = L⁻¹(w − μ), where the
  law is a standard Normal restricted to an ellipsoid. Along a random unit direction e the
  line u + t·e meets the ellipsoid in an interval [t₋, t₊] (the roots of a quadratic in t)
  and t given the rest is Normal(−u·e, 1) on it, drawn exactly by `truncated_normal`.
- Dirichlet with every p_k ≥ m: Gibbs on a random pair (i, j) holding s = p_i + p_j: p_i/s
  is Beta(a_i, a_j) restricted to [m/s, 1 − m/s], drawn exactly by `truncated_beta`.

A mixture of an exact independent draw (taken with a probability that depends on the
parameters only, never on ``current``) and a π-invariant kernel is π-invariant, so a Gibbs
sampler that hands its current state stays exact in law. `pmp.PrivateGibbs` on a privatised
model hands it; `pmp.sample_posterior` on a privatised model, whose draws are independent,
starts each draw that gives up at the support's centre (the origin, the uniform point) and
moves it ``CENTRE_SWEEPS`` sweeps of d (or K) moves: a draw from a long chain, not exact
(stated in `pmp.sample_posterior`). Rejection succeeds whenever more than about
1/``max_proposals`` of the untruncated law lies in the support.

"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from pymc_private.errors import UnsupportedModelError

__all__ = [
    "CENTRE_SWEEPS",
    "MAX_PROPOSALS",
    "log_multivariate_beta",
    "mvnormal_in_ball",
    "truncated_beta",
    "truncated_dirichlet",
    "truncated_gamma",
    "truncated_normal",
]

# The inverse CDF is used when the interval's probability Δ is at least this fraction of the
# larger endpoint probability (so the uniform resolves the interval to ~1e-10 of its mass)
# and above the smallest probability that keeps full precision.
_RELATIVE_MASS = 1e-6
_SMALLEST_MASS = 1e-280
# With at least half the law inside the interval, a draw survives this many rounds of
# untruncated proposals with probability below 2⁻³²; the few that do use the inverse CDF.
_DIRECT_ROUNDS = 32
# Rejection gives up after this many proposals per draw (acceptance below ~1e-5).
MAX_PROPOSALS = 100_000
# Sweeps (of d or K moves) from the support's centre for an independent draw that gave up.
CENTRE_SWEEPS = 200
# Memory cap on the floats proposed in one round of rejection.
_MAX_ROUND_FLOATS = 2_000_000


# ---------------------------------------------------------------------------------------
# Rejection rounds (shared by every rejection sampler of this module)
# ---------------------------------------------------------------------------------------


def _rejection(
    propose: Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]],
    n_draws: int,
    core_shape: tuple[int, ...],
    *,
    name: str,
    hint: str,
    max_proposals: int,
    fallback: Callable[[np.ndarray], np.ndarray] | None = None,
) -> tuple[np.ndarray, float]:
    """Collect one accepted proposal per draw; return the draws and the acceptance rate.

    ``propose(rows, k)`` returns candidates of shape (len(rows), k, *core_shape) for the
    draws indexed by ``rows`` and their acceptance mask of shape (len(rows), k). Rounds grow
    with the observed acceptance rate; a draw that saw ``max_proposals`` proposals without
    acceptance is ``fallback(rows)`` (Markov moves, module docstring) or, without one, raises
    `UnsupportedModelError`.
    """
    out = np.empty((n_draws, *core_shape))
    pending = np.arange(n_draws)
    proposed = accepted = tried = 0
    per_draw = 1
    floats = max(1, math.prod(core_shape))
    while pending.size:
        if tried >= max_proposals and fallback is not None:
            out[pending] = fallback(pending)
            break
        if tried >= max_proposals:
            raise UnsupportedModelError(
                f"Exact sampling of `{name}`: no proposal was accepted after {max_proposals} "
                f"proposals per draw, so almost none of the untruncated posterior lies in the "
                f"prior's support. {hint}"
            )
        left = max_proposals - tried
        per_draw = max(1, min(per_draw, left, _MAX_ROUND_FLOATS // (pending.size * floats)))
        candidates, ok = propose(pending, per_draw)
        proposed += ok.size
        accepted += int(ok.sum())
        hit = ok.any(axis=1)
        first = ok.argmax(axis=1)
        out[pending[hit]] = candidates[hit, first[hit]]
        pending = pending[~hit]
        tried += per_draw
        per_draw = 8 * per_draw if accepted == 0 else math.ceil(2.0 * proposed / accepted)
    return out, accepted / proposed if proposed else 1.0


def _batch_shape(size, batch: tuple[int, ...]) -> tuple[int, ...]:
    if size is None:
        return batch
    return (int(size),) if isinstance(size, int | np.integer) else tuple(size)


# ---------------------------------------------------------------------------------------
# Scalar families: inverse CDF in the better tail, exponential-envelope rejection fallback
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Scalar:
    """A scalar family, vectorised over its parameters: CDF, survival function and their
    inverses, and ``terms(*params)``, its unnormalised log density as a list of
    (value(x), derivative(x), concave) with ``concave`` a boolean array; a term that is not
    concave is monotone on the interval."""

    cdf: Callable
    sf: Callable
    ppf: Callable
    isf: Callable
    terms: Callable
    sample: Callable


def _beta_terms(alpha, beta):
    def first(x):
        return special.xlogy(alpha - 1.0, x)

    def second(x):
        return special.xlog1py(beta - 1.0, -x)

    return [
        (first, lambda x: (alpha - 1.0) / x, alpha >= 1.0),
        (second, lambda x: -(beta - 1.0) / (1.0 - x), beta >= 1.0),
    ]


def _gamma_terms(alpha, beta):
    return [
        (lambda x: special.xlogy(alpha - 1.0, x), lambda x: (alpha - 1.0) / x, alpha >= 1.0),
        (lambda x: -beta * x, lambda x: -beta + 0.0 * x, np.ones_like(beta, dtype=bool)),
    ]


def _normal_terms(mu, sigma):
    return [
        (
            lambda x: -0.5 * ((x - mu) / sigma) ** 2,
            lambda x: -(x - mu) / sigma**2,
            np.ones_like(mu, dtype=bool),
        )
    ]


_BETA = _Scalar(
    cdf=lambda x, a, b: special.betainc(a, b, x),
    sf=lambda x, a, b: special.betaincc(a, b, x),
    ppf=lambda p, a, b: special.betaincinv(a, b, p),
    isf=lambda q, a, b: special.betainccinv(a, b, q),
    terms=_beta_terms,
    sample=lambda rng, a, b, size=None: rng.beta(a, b, size),
)
_GAMMA = _Scalar(
    cdf=lambda x, a, b: special.gammainc(a, b * x),
    sf=lambda x, a, b: special.gammaincc(a, b * x),
    ppf=lambda p, a, b: special.gammaincinv(a, p) / b,
    isf=lambda q, a, b: special.gammainccinv(a, q) / b,
    terms=_gamma_terms,
    sample=lambda rng, a, b, size=None: rng.gamma(a, 1.0 / b, size),
)
_NORMAL = _Scalar(
    cdf=lambda x, m, s: special.ndtr((x - m) / s),
    sf=lambda x, m, s: special.ndtr((m - x) / s),
    ppf=lambda p, m, s: m + s * special.ndtri(p),
    isf=lambda q, m, s: m - s * special.ndtri(q),
    terms=_normal_terms,
    sample=lambda rng, m, s, size=None: rng.normal(m, s, size),
)


def _envelope_draws(rng, family: _Scalar, params, lower, upper, name: str) -> np.ndarray:
    """Exact draws by rejection from a truncated-exponential envelope (see module docstring)."""
    terms = family.terms(*params)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):

        def log_density(x):
            return sum(value(x) for value, _, _ in terms)

        f_lower, f_upper = log_density(lower), log_density(upper)
        at_lower = ~(f_upper > f_lower)
        anchor = np.where(at_lower, lower, upper)
        slope = sum(np.where(concave, derivative(anchor), 0.0) for _, derivative, concave in terms)
        offset = sum(
            np.where(concave, value(anchor), np.maximum(value(lower), value(upper)))
            for value, _, concave in terms
        )
    slope = np.asarray(np.broadcast_to(slope, lower.shape), dtype=float)
    offset = np.asarray(np.broadcast_to(offset, lower.shape), dtype=float)
    width = upper - lower
    params = [np.asarray(p) for p in params]

    def propose(rows, k):
        s = slope[rows][:, None]
        lo, hi, w = lower[rows][:, None], upper[rows][:, None], width[rows][:, None]
        u = rng.uniform(size=(rows.size, k))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            from_lower = lo + np.log1p(u * np.expm1(s * w)) / s
            from_upper = hi + np.log1p(u * np.expm1(-s * w)) / s
            x = np.where(s == 0.0, lo + u * w, np.where(s < 0.0, from_lower, from_upper))
            x = np.clip(x, lo, hi)
            row_terms = family.terms(*(p[rows][:, None] for p in params))
            log_target = sum(value(x) for value, _, _ in row_terms)
            envelope = offset[rows][:, None] + s * (x - anchor[rows][:, None])
            accept = np.log(rng.uniform(size=(rows.size, k))) <= log_target - envelope
        return x, accept

    draws, _ = _rejection(
        propose,
        lower.size,
        (),
        name=name,
        hint="Check that the posterior parameters are finite and positive.",
        max_proposals=MAX_PROPOSALS,
    )
    return draws


def _truncated_scalar(
    rng: np.random.Generator,
    family: _Scalar,
    params: tuple[np.ndarray, ...],
    lower: np.ndarray,
    upper: np.ndarray,
    size,
    name: str,
) -> np.ndarray:
    base = np.broadcast_arrays(*params, lower, upper)
    shape = base[0].shape if size is None else _batch_shape(size, ())
    *params_base, low_base, high_base = base
    # One untruncated draw of every entry at once (numpy broadcasts the parameters), kept
    # where it is inside: a first rejection proposal. Keeping it is exact whatever the
    # interval's probability m: P(A) = m·P_I(A) + (1 − m)·P_I(A) when the entries it missed
    # are drawn from the truncated law below. Those are redrawn entry by entry, each reading
    # its parameters at ``base[i]``.
    first = family.sample(rng, *params_base, size=shape)
    with np.errstate(invalid="ignore"):
        kept = (first >= low_base) & (first <= high_base)
    out = np.array(first, dtype=np.float64).reshape(-1)
    pending = np.flatnonzero(~kept.reshape(-1))
    if not pending.size:
        return out.reshape(shape)
    base = np.broadcast_to(np.arange(low_base.size).reshape(low_base.shape), shape)
    at = base.reshape(-1)[pending]
    params_flat = [p.reshape(-1)[at] for p in params_base]
    low, high = low_base.reshape(-1)[at], high_base.reshape(-1)[at]
    # The interval's probability, in the better tail.
    with np.errstate(all="ignore"):
        cdf_low, cdf_high = family.cdf(low, *params_flat), family.cdf(high, *params_flat)
        sf_low, sf_high = family.sf(low, *params_flat), family.sf(high, *params_flat)
        tail = cdf_high <= sf_low
        p_low = np.where(tail, cdf_low, sf_high)
        p_high = np.where(tail, cdf_high, sf_low)
        mass = p_high - p_low
        usable = (mass >= _RELATIVE_MASS * p_high) & (mass > _SMALLEST_MASS)
        direct = usable & (mass >= 0.5)
    retry = np.flatnonzero(direct)  # positions in ``pending``
    for _ in range(_DIRECT_ROUNDS):
        if not retry.size:
            break
        x = family.sample(rng, *(p[retry] for p in params_flat))
        inside = (x >= low[retry]) & (x <= high[retry])
        out[pending[retry[inside]]] = x[inside]
        retry = retry[~inside]
    inverse = np.concatenate([np.flatnonzero(usable & ~direct), retry])
    with np.errstate(all="ignore"):
        for in_tail, quantile in ((tail[inverse], family.ppf), (~tail[inverse], family.isf)):
            rows = inverse[in_tail]
            v = p_low[rows] + rng.uniform(size=rows.size) * mass[rows]
            out[pending[rows]] = np.clip(
                quantile(v, *(p[rows] for p in params_flat)), low[rows], high[rows]
            )
    rest = np.flatnonzero(~usable)
    if rest.size:
        out[pending[rest]] = _envelope_draws(
            rng, family, [p[rest] for p in params_flat], low[rest], high[rest], name
        )
    return out.reshape(shape)


def _checked(function: str, positive: dict, finite: dict, lower, upper, limits) -> tuple:
    """The arguments as float arrays, checked: ``positive`` finite and > 0, ``finite``
    finite, limits[0] ≤ lower < upper ≤ limits[1] (bounds are public and may be quoted)."""
    out = []
    for argument, value in (*positive.items(), *finite.items()):
        array = np.asarray(value, dtype=np.float64)
        if not np.isfinite(array).all() or (argument in positive and not (array > 0.0).all()):
            condition = "finite and > 0" if argument in positive else "finite"
            raise ValueError(f"{function}: `{argument}` must be {condition}.")
        out.append(array)
    lower, upper = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
    if not (lower < upper).all() or (lower < limits[0]).any() or (upper > limits[1]).any():
        raise ValueError(
            f"{function}: need {limits[0]} <= lower < upper <= {limits[1]}; got lower={lower}, "
            f"upper={upper}."
        )
    return (*out, lower, upper)


def truncated_beta(
    rng: np.random.Generator,
    alpha: Any,
    beta: Any,
    lower: Any = 0.0,
    upper: Any = 1.0,
    size: int | tuple[int, ...] | None = None,
    *,
    name: str = "the variable",
) -> np.ndarray:
    """Exact draws from Beta(α, β) restricted to [lower, upper] ⊂ [0, 1].

    Parameters
    ----------
    rng : numpy.random.Generator
        The only source of randomness.
    alpha, beta : array_like
        Positive shape parameters (broadcast with the bounds).
    lower, upper : array_like
        The truncation interval, 0 ≤ lower < upper ≤ 1.
    size : int or tuple of int, optional
        Output shape; the parameters broadcast to it. Default: their broadcast shape.
    name : str
        The variable's name, for error messages.

    Returns
    -------
    numpy.ndarray
        Draws in [lower, upper].
    """
    alpha, beta, lower, upper = _checked(
        "truncated_beta", {"alpha": alpha, "beta": beta}, {}, lower, upper, (0.0, 1.0)
    )
    return _truncated_scalar(rng, _BETA, (alpha, beta), lower, upper, size, name)


def truncated_gamma(
    rng: np.random.Generator,
    alpha: Any,
    beta: Any,
    lower: Any = 0.0,
    upper: Any = np.inf,
    size: int | tuple[int, ...] | None = None,
    *,
    name: str = "the variable",
) -> np.ndarray:
    """Exact draws from Gamma(α, rate β) restricted to [lower, upper] ⊂ [0, ∞].

    Parameters as `truncated_beta`; ``beta`` is the rate (mean α/β).
    """
    alpha, beta, lower, upper = _checked(
        "truncated_gamma", {"alpha": alpha, "beta": beta}, {}, lower, upper, (0.0, np.inf)
    )
    return _truncated_scalar(rng, _GAMMA, (alpha, beta), lower, upper, size, name)


def truncated_normal(
    rng: np.random.Generator,
    mu: Any,
    sigma: Any,
    lower: Any = -np.inf,
    upper: Any = np.inf,
    size: int | tuple[int, ...] | None = None,
    *,
    name: str = "the variable",
) -> np.ndarray:
    """Exact draws from Normal(μ, σ) restricted to [lower, upper].

    Parameters as `truncated_beta`; ``mu`` finite, ``sigma`` > 0.
    """
    sigma, mu, lower, upper = _checked(
        "truncated_normal", {"sigma": sigma}, {"mu": mu}, lower, upper, (-np.inf, np.inf)
    )
    return _truncated_scalar(rng, _NORMAL, (mu, sigma), lower, upper, size, name)


# ---------------------------------------------------------------------------------------
# Dirichlet with every entry ≥ min_prob, MvNormal in a ball: rejection
# ---------------------------------------------------------------------------------------


def _checked_max_proposals(function: str, max_proposals: Any) -> None:
    if (
        isinstance(max_proposals, bool | np.bool_)
        or not isinstance(max_proposals, int | np.integer)
        or max_proposals < 1
    ):
        raise ValueError(
            f"{function}: `max_proposals` must be an integer >= 1, got {max_proposals!r}."
        )


def log_multivariate_beta(a: np.ndarray) -> np.ndarray:
    """log B(a) = Σ log Γ(a_k) − log Γ(Σ a_k) over the last axis."""
    return special.gammaln(a).sum(-1) - special.gammaln(a.sum(-1))


def truncated_dirichlet(
    rng: np.random.Generator,
    a: Any,
    min_prob: float = 0.0,
    size: int | tuple[int, ...] | None = None,
    *,
    name: str = "the variable",
    max_proposals: int = MAX_PROPOSALS,
    return_acceptance_rate: bool = False,
    current: Any = None,
    moves: int | None = None,
) -> np.ndarray | tuple[np.ndarray, float]:
    """Exact draws from Dirichlet(a) restricted to {p : every p_k ≥ min_prob}.

    Rejection, per draw from the better of two proposals (module docstring): the
    untruncated Dirichlet(a), accepted when min_k p_k ≥ m; or p = m + c·q, c = 1 − Km,
    q ~ Dirichlet(b), b = min(a, 1), accepted with probability
    Π_k ((m + c q_k)/(m + c))^{a_k − 1} q_k^{1 − b_k} ≤ 1. Their acceptance ratio (second over
    first) is B(a) / (c^{K−1} B(b) (m + c)^{Σ(a_k − 1)}), B the multivariate Beta function.

    Parameters
    ----------
    rng : numpy.random.Generator
        The only source of randomness.
    a : array_like, shape (..., K)
        Positive concentrations.
    min_prob : float
        The smallest allowed probability m, 0 ≤ m < 1/K.
    size : int or tuple of int, optional
        Batch shape of the output (the batch shape of ``a`` broadcasts to it).
    name : str
        The variable's name, for the error message.
    max_proposals : int
        Proposals per draw before giving up.
    return_acceptance_rate : bool
        Also return the fraction of proposals accepted.
    current : array_like, shape (*size, K), optional
        A state in the support (moved onto it if rounding left it outside). A draw that gave
        up is then ``moves`` pair-Gibbs moves from it (module docstring) instead of an error.
    moves : int, optional
        Moves per draw that gave up (default K, one sweep).

    Returns
    -------
    numpy.ndarray, shape (*size, K)
        Draws (and the acceptance rate when asked).

    Raises
    ------
    UnsupportedModelError
        No proposal accepted after ``max_proposals`` per draw (an integer) and no
        ``current`` state given.
    """
    _checked_max_proposals("truncated_dirichlet", max_proposals)
    a = np.asarray(a, dtype=float)
    if a.ndim == 0 or a.shape[-1] < 2:
        raise ValueError("truncated_dirichlet: `a` needs a last axis of ≥ 2 categories.")
    if not (np.isfinite(a).all() and (a > 0.0).all()):
        raise ValueError("truncated_dirichlet: `a` must be finite and > 0.")
    n_categories = a.shape[-1]
    if not (0.0 <= min_prob < 1.0 / n_categories):
        raise ValueError(
            f"truncated_dirichlet: `min_prob` must be in [0, 1/K) = [0, {1.0 / n_categories:g})."
        )
    shape = _batch_shape(size, a.shape[:-1])
    rows = np.broadcast_to(a, (*shape, n_categories)).reshape(-1, n_categories)
    m = float(min_prob)
    width = 1.0 - n_categories * m
    b = np.minimum(rows, 1.0)
    if m > 0.0:
        log_ratio = (
            log_multivariate_beta(rows)
            - (n_categories - 1) * math.log(width)
            - log_multivariate_beta(b)
            - (rows - 1.0).sum(-1) * math.log(m + width)
        )
        shifted = log_ratio > 0.0
    else:
        shifted = np.zeros(rows.shape[0], dtype=bool)

    def propose(index, k):
        use_shift = shifted[index][:, None]
        concentration = np.where(
            use_shift[..., None], b[index][:, None, :], rows[index][:, None, :]
        )
        gammas = rng.standard_gamma(np.broadcast_to(concentration, (index.size, k, n_categories)))
        q = gammas / gammas.sum(-1, keepdims=True)
        a_rows, b_rows = rows[index][:, None, :], b[index][:, None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            log_accept = ((a_rows - 1.0) * np.log((m + width * q) / (m + width))).sum(-1)
            log_accept += np.where(b_rows < 1.0, (1.0 - b_rows) * np.log(q), 0.0).sum(-1)
        accept_shift = np.log(rng.uniform(size=(index.size, k))) <= log_accept
        accept_plain = (q >= m).all(-1)
        accepted = np.where(use_shift, accept_shift, accept_plain)
        return np.where(use_shift[..., None], m + width * q, q), accepted

    fallback = None
    if current is not None:
        start = _on_simplex(np.broadcast_to(current, (*shape, n_categories)), m)
        start = start.reshape(-1, n_categories)
        count = _checked_moves(moves, n_categories)

        def fallback(index):
            return _pair_moves(rng, rows[index], m, start[index], count)

    draws, rate = _rejection(
        propose,
        rows.shape[0],
        (n_categories,),
        name=name,
        hint=f"Use a smaller `min_prob` than {m:g} for `{name}`, or a prior closer to the data.",
        max_proposals=max_proposals,
        fallback=fallback,
    )
    draws = draws.reshape((*shape, n_categories))
    return (draws, rate) if return_acceptance_rate else draws


def mvnormal_in_ball(
    rng: np.random.Generator,
    mu: Any,
    cov: Any,
    radius: float = np.inf,
    size: int | tuple[int, ...] | None = None,
    *,
    name: str = "the variable",
    max_proposals: int = MAX_PROPOSALS,
    return_acceptance_rate: bool = False,
    current: Any = None,
    moves: int | None = None,
) -> np.ndarray | tuple[np.ndarray, float]:
    """Exact draws from MvNormal(μ, Σ) restricted to the ball ‖w‖₂ ≤ radius (centred at 0).

    Rejection from the untruncated MvNormal (accepted when inside the ball); with a
    ``current`` state, hit-and-run moves from it for a draw that gave up (module docstring).

    Parameters
    ----------
    rng : numpy.random.Generator
        The only source of randomness.
    mu : array_like, shape (..., d)
        Mean.
    cov : array_like, shape (..., d, d)
        Positive-definite covariance.
    radius : float
        The ball's radius R > 0 (inf: no truncation).
    size, name, max_proposals, return_acceptance_rate, current, moves
        As in `truncated_dirichlet` (``moves`` defaults to d).

    Returns
    -------
    numpy.ndarray, shape (*size, d)
        Draws (and the acceptance rate when asked).

    Raises
    ------
    UnsupportedModelError
        No proposal accepted after ``max_proposals`` per draw (an integer) and no
        ``current`` state given.
    """
    _checked_max_proposals("mvnormal_in_ball", max_proposals)
    mu = np.asarray(mu, dtype=float)
    cov = np.asarray(cov, dtype=float)
    if mu.ndim == 0 or cov.shape[-2:] != (mu.shape[-1], mu.shape[-1]):
        raise ValueError("mvnormal_in_ball: `mu` must be (..., d) and `cov` (..., d, d).")
    if not np.all(np.isfinite(mu)) or not np.all(np.isfinite(cov)):
        raise ValueError("mvnormal_in_ball: `mu` and `cov` must be finite.")
    if not radius > 0.0:
        raise ValueError("mvnormal_in_ball: `radius` must be > 0.")
    try:
        chol = np.linalg.cholesky(cov)
    except np.linalg.LinAlgError as error:
        raise ValueError("mvnormal_in_ball: `cov` must be positive definite.") from error
    d = mu.shape[-1]
    shape = _batch_shape(size, np.broadcast_shapes(mu.shape[:-1], cov.shape[:-2]))
    means = np.broadcast_to(mu, (*shape, d)).reshape(-1, d)
    factors = np.broadcast_to(chol, (*shape, d, d)).reshape(-1, d, d)

    def propose(index, k):
        z = rng.standard_normal((index.size, k, d))
        w = means[index][:, None, :] + np.einsum("rij,rkj->rki", factors[index], z)
        return w, np.linalg.norm(w, axis=-1) <= radius

    fallback = None
    if current is not None:
        start = _in_ball(np.broadcast_to(current, (*shape, d)).reshape(-1, d), radius)
        count = _checked_moves(moves, d)

        def fallback(index):
            return _hit_and_run(rng, means[index], factors[index], radius, start[index], count)

    draws, rate = _rejection(
        propose,
        means.shape[0],
        (d,),
        name=name,
        hint=f"Use a larger `radius` than {radius:g} for `{name}`, or a prior closer to the data.",
        max_proposals=max_proposals,
        fallback=fallback,
    )
    draws = draws.reshape((*shape, d))
    return (draws, rate) if return_acceptance_rate else draws


# ---------------------------------------------------------------------------------------
# Markov moves for draws that gave up (module docstring): always possible, π-invariant
# ---------------------------------------------------------------------------------------


def _checked_moves(moves: Any, default: int) -> int:
    if moves is None:
        return default
    if isinstance(moves, bool | np.bool_) or not isinstance(moves, int | np.integer) or moves < 1:
        raise ValueError(f"`moves` must be an integer >= 1, got {moves!r}.")
    return int(moves)


def _on_simplex(p: np.ndarray, m: float) -> np.ndarray:
    """``p`` moved onto {p_k ≥ m, Σ p_k = 1} (a state a transform's rounding left just off)."""
    excess = np.maximum(np.asarray(p, dtype=float) - m, 0.0)
    total = excess.sum(-1, keepdims=True)
    if not (np.isfinite(total).all() and (total > 0.0).all()):
        raise ValueError("`current` must be a finite point of the simplex.")
    return m + (1.0 - p.shape[-1] * m) * excess / total


def _pair_moves(rng, a: np.ndarray, m: float, p: np.ndarray, moves: int) -> np.ndarray:
    """``moves`` Gibbs moves on random pairs (i, j) of rows of a truncated Dirichlet(a):
    p_i/(p_i + p_j) ~ Beta(a_i, a_j) on [m/s, 1 − m/s], s = p_i + p_j."""
    p = p.copy()
    rows, n_categories = p.shape
    everyone = np.arange(rows)
    for _ in range(moves):
        i = rng.integers(n_categories, size=rows)
        j = (i + rng.integers(1, n_categories, size=rows)) % n_categories
        s = p[everyone, i] + p[everyone, j]
        lower, upper = m / s, 1.0 - m / s
        free = upper > lower
        r, i, j, s = everyone[free], i[free], j[free], s[free]
        share = truncated_beta(rng, a[r, i], a[r, j], lower[free], upper[free])
        p[r, i] = np.maximum(share * s, m)
        p[r, j] = np.maximum(s - p[r, i], m)
    return p


def _in_ball(w: np.ndarray, radius: float) -> np.ndarray:
    """``w`` pulled radially to norm ≤ radius·(1 − 1e-12) where it lies at or beyond it."""
    w = np.array(w, dtype=float)
    if not np.isfinite(w).all():
        raise ValueError("`current` must be finite.")
    norm = np.linalg.norm(w, axis=-1, keepdims=True)
    limit = radius * (1.0 - 1e-12)
    return np.where(norm > limit, w * (limit / np.maximum(norm, 1e-300)), w)


def _hit_and_run(rng, means, factors, radius: float, w: np.ndarray, moves: int) -> np.ndarray:
    """``moves`` hit-and-run moves of rows of MvNormal(μ, LLᵀ) on the ball ‖w‖ ≤ radius, in
    the whitening coordinates u = L⁻¹(w − μ): along a random unit direction e, with
    v = L·e, ‖w + t·v‖ ≤ radius for t in [t₋, t₊] and t ~ Normal(−u·e, 1) there."""
    w = w.copy()
    inverse = np.linalg.inv(factors)
    for _ in range(moves):
        e = rng.standard_normal(w.shape)
        e /= np.linalg.norm(e, axis=-1, keepdims=True)
        v = np.einsum("rij,rj->ri", factors, e)
        centre = -np.einsum("rj,rj->r", np.einsum("rij,rj->ri", inverse, w - means), e)
        a, b = np.einsum("rj,rj->r", v, v), np.einsum("rj,rj->r", w, v)
        c = np.einsum("rj,rj->r", w, w) - radius * radius
        root = np.sqrt(np.maximum(b * b - a * c, 0.0))
        lower = np.minimum((-b - root) / a, 0.0)
        upper = np.maximum((-b + root) / a, 0.0)
        free = upper > lower
        t = truncated_normal(rng, centre[free], 1.0, lower[free], upper[free])
        w[free] += t[:, None] * v[free]
        w = _in_ball(w, radius)
    return w
