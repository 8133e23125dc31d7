"""Exact draws of latent integer statistics given their noisy release (data augmentation).

A released count or integer sum is s̃ = s + Z, with Z the mechanism's noise on the integers:
discrete Laplace of scale b (P(z) ∝ e^{−|z|/b}) or discrete Gaussian of scale σ
(P(z) ∝ e^{−z²/2σ²}), the exact laws OpenDP samples. Given the parameters θ, the true
statistic has an exact law too: the counts of one cell are Multinomial(T, p) over K
categories (T the records behind the cell, or the m·T trials of a Binomial sum), an integer
sum of Poisson records is Poisson(T·λ). The data-augmentation sampler
(`pymc_private.noise_aware.sampler`) draws s from p(s | θ, s̃) ∝ p(s | θ) p(s̃ | s) with the functions
here, exactly:

- **One dimension at a time.** K = 2 counts (and a Binomial sum) are one integer x ∈ [0, T];
  K ≥ 3 counts are updated a pair of categories (i, j) at a time, holding m = c_i + c_j:
  c_i | m ~ Binomial(m, p_i/(p_i + p_j)) times the noise of both released cells, a Gibbs step
  on the multinomial (`resample_pairs`). A Poisson sum is one integer x ≥ 0
  (`poisson_split`).
- **Log-concave, so a window is enough.** Every factor (binomial and Poisson pmfs in x, the
  noise pmfs of s̃ − x or s̃ − (m − x)) is log-concave in x, hence so is their product f. It is
  evaluated exactly on a window around its approximate mode; for log-concave f the mass left
  of the window's first point x_L is at most f(x_L)·e^{−d}/(1 − e^{−d}) with
  d = log f(x_L) − log f(x_L − 1) > 0 (the increments of log f do not increase), and likewise
  on the right. A window is accepted when the two bounds add up to at most `TAIL` = 10⁻¹² of
  its mass (otherwise it is doubled and recentred), so every draw comes from f restricted to a
  set holding all but 10⁻¹² of its mass: within 10⁻¹² of f in total variation. The same sums
  give log Σ_x f(x), the marginal likelihood of θ (to 10⁻¹² relative) that the collapsed moves
  of the sampler use (`binary_split`, `poisson_split`).
- **Thinning moves of group sizes.** Moving k records from group h to group g adds k fresh
  records to every cell of g (`add_records`: Multinomial(k, p), Poisson(kλ)) and removes k
  records chosen at random from every cell of h (`remove_records`: multivariate
  hypergeometric, binomial thinning of a Poisson sum). These are the exact conditional laws of
  k of the records given the cell, so the counts' own law cancels from the Metropolis–Hastings
  ratio of the move, which keeps only the group sizes' prior and the noise.

Everything here reads released statistics, public scales and θ: post-processing, free of
privacy cost.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import special

from pymc_private.dp.noise import NoiseLaw
from pymc_private.families.likelihood import MultinomialCounts, PoissonCounts

__all__ = [
    "TAIL",
    "add_records",
    "beta_binomial_split",
    "binary_split",
    "category_pairs",
    "gamma_poisson_split",
    "log_factorial",
    "poisson_split",
    "remove_records",
    "resample_pairs",
    "window_draw",
    "window_sample",
]

TAIL = 1e-12
"""Bound on the mass a window leaves out, relative to the mass it holds."""

# A window that has not closed after this many doublings is a bug (the pmf is log-concave).
_MAX_WIDENINGS = 60
# The most points of the pmfs one array holds (V variants × rows × window): wider windows
# (a binomial spread of √n at large n) are taken a few rows at a time, so that memory is
# bounded by the number of cells, not by the counts.
_MAX_ELEMENTS = 1 << 16
# log(x!) comes from a table up to this x, from `scipy.special.gammaln` above it.
_TABLE_LIMIT = 1 << 17
_log_factorials = np.zeros(1)


def log_factorial(x) -> np.ndarray:
    """log(x!) of non-negative integers (a table grown on demand up to 2¹⁷: 1 MiB at most;
    gammaln above)."""
    global _log_factorials
    x = np.asarray(x, dtype=np.int64)
    largest = int(x.max(initial=0))
    if largest >= _TABLE_LIMIT:
        return special.gammaln(x + 1.0)
    if largest >= _log_factorials.size:
        size = min(_TABLE_LIMIT, max(2 * largest + 2, 1024))
        _log_factorials = special.gammaln(np.arange(size, dtype=np.float64) + 1.0)
    return _log_factorials.take(x)


def window_draw(
    logpmf: Callable[[np.ndarray, np.ndarray], np.ndarray],
    centre: np.ndarray,
    reach: np.ndarray,
    lower: np.ndarray,
    upper,
    rng: np.random.Generator | None,
    bracket: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Draws from, and the log mass of, B log-concave pmfs on the integers of [lower, upper],
    each in V variants (the laws under a current and a proposed θ).

    ``logpmf(x, rows)`` evaluates the unnormalised log pmfs of ``rows`` (indices into the B
    pmfs) at the integers ``x`` of [lower, upper], of shape (V, len(rows), W) (each variant at
    its own points) or (1, len(rows), W) (all at the same), as an array of shape
    (V, len(rows), W); ``centre`` and ``reach`` (shape (B,)) place a first window that the
    variants share, ``centre`` ± ``reach``. A window that misses a variant's bulk is moved to
    that variant's mode, found by bisection in ``bracket`` (default [lower, upper]); one that
    is too narrow for the tails is widened, until the mass it leaves out is at most `TAIL` of
    the mass it holds, for every variant (module docstring). A variant's window spans its own
    spread, never the distance between the variants' modes, and windows too wide for one array
    (`_MAX_ELEMENTS` points) are evaluated a few rows at a time: memory is bounded by the
    number of pmfs, not by the counts (the time of a pmf grows with its own spread: √T for a
    proposal whose binomial bulk lies away from the release).

    Returns draws (zeros without ``rng``) and log Σ_x f(x) over the window, each of shape
    (V, B).
    """
    draws = log_mass = None
    for rows, low, width, weights, log_total in _windows(
        logpmf, centre, reach, lower, upper, bracket
    ):
        if draws is None:
            draws = np.zeros((weights.shape[0], np.shape(centre)[-1]), dtype=np.int64)
            log_mass = np.zeros((weights.shape[0], np.shape(centre)[-1]))
        log_mass[:, rows] = log_total
        if rng is not None:
            variants = weights.reshape(-1, weights.shape[2])
            offset = _inverse_cdf(variants, rng.random(variants.shape[0]))
            draws[:, rows] = low + np.minimum(offset.reshape(-1, rows.size), width)
    return draws, log_mass


def window_sample(
    logpmf: Callable[[np.ndarray, np.ndarray], np.ndarray],
    centre: np.ndarray,
    reach: np.ndarray,
    lower: np.ndarray,
    upper,
    rng: np.random.Generator,
    count: int,
    bracket: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """``count`` independent draws from each of B log-concave pmfs (one variant), as
    `window_draw` places their windows; shape (B, count)."""
    draws = np.zeros((centre.shape[0], count), dtype=np.int64)
    for rows, low, width, weights, _ in _windows(logpmf, centre, reach, lower, upper, bracket):
        cumulative = np.cumsum(weights[0], axis=1)
        for row, start, last, sums in zip(rows, low[0], width[0], cumulative, strict=True):
            picked = np.searchsorted(sums, rng.random(count) * sums[-1], side="right")
            draws[row] = start + np.minimum(picked, last)
    return draws


def _windows(logpmf, centre, reach, lower, upper, bracket):
    """The windows of `window_draw`, batch by batch as they close: ``(rows, low, width,
    weights, log_total)``, each window [low, low + width] (``low`` and ``width`` of shape
    (1, R) while the variants share a window, (V, R) once each has its own), the weights
    relative to each row's peak (V, R, W; zero past the window's end) and the log of their
    sum. A window that misses a variant's bulk moves to that variant's mode: variants whose
    modes lie far apart (a proposal far from the current θ) get a window each, as narrow as
    their own spread, never one spanning both modes (which grows with the counts)."""
    size = np.shape(centre)[-1]
    lower = np.broadcast_to(lower, (size,))
    upper = np.broadcast_to(upper, (size,))
    # V from the centres when they come per variant (every sweep's call), else from the pmf.
    variants = np.shape(centre)[0] if np.ndim(centre) == 2 else _variants(logpmf, lower)
    centre, reach = _placed(
        np.broadcast_to(np.nan_to_num(centre), (variants, size)),
        np.broadcast_to(np.minimum(np.nan_to_num(reach, nan=10.0), 1e15), (variants, size)),
    )
    middle = np.clip(np.floor(centre), lower, upper).astype(np.int64)
    half = np.ceil(reach).astype(np.int64) + 2
    located = np.zeros(size, dtype=bool)  # windows already moved to the modes
    widened = np.zeros(size, dtype=np.int64)  # moves and doublings of each row's window
    queue = _buckets(
        np.arange(size),
        (np.minimum(upper, middle + half) - np.maximum(lower, middle - half)).max(axis=0),
    )
    while queue:
        rows = queue.pop()
        shared = bool(
            (middle[:, rows] == middle[:1, rows]).all() and (half[:, rows] == half[:1, rows]).all()
        )
        place = slice(0, 1) if shared else slice(None)
        low = np.maximum(lower[rows], middle[place, rows] - half[place, rows])
        high = np.minimum(upper[rows], middle[place, rows] + 1 + half[place, rows])
        elements = variants * rows.size * (int((high - low).max()) + 3)
        if elements > _MAX_ELEMENTS and rows.size > 1:  # memory bounded, whatever the counts
            queue.extend(np.array_split(rows, min(rows.size, -(-elements // _MAX_ELEMENTS))))
            continue
        # One point past each end, for the tail bounds (−inf when outside the support); the
        # pmf reads only points of the support.
        x = (low - 1)[..., None] + np.arange(int((high - low).max()) + 3)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
            values = logpmf(np.clip(x, lower[rows, None], upper[rows, None]), rows)
            shape = values.shape
            values[np.broadcast_to(x > (high + 1)[..., None], shape)] = -np.inf
            values[np.broadcast_to(low == lower[rows], shape[:2]), 0] = -np.inf
            past = np.broadcast_to((high - low + 2)[..., None], (*shape[:2], 1))
            edges = np.take_along_axis(values, np.concatenate([past - 1, past], axis=2), axis=2)
            edges[np.broadcast_to(high == upper[rows], shape[:2]), 1] = -np.inf
            np.put_along_axis(values, past, -np.inf, axis=2)
            window = values[:, :, 1:]
            peak = window.max(axis=2)
            weights = np.exp(window - peak[..., None])
            total = weights.sum(axis=2)
            tails = _tail(window[..., 0], values[..., 0], peak, total)
            tails = tails + _tail(edges[..., 0], edges[..., 1], peak, total)
        if np.isnan(peak).any():
            raise RuntimeError(
                "pymc-private: a latent statistic's pmf is NaN; please report this model."
            )
        done = (np.isfinite(peak) & (tails <= TAIL)).all(axis=0)
        if done.any():
            log_total = peak[:, done] + np.log(total[:, done])
            yield rows[done], low[:, done], (high - low)[:, done], weights[:, done], log_total
        missed = rows[~done]
        if not missed.size:
            continue
        widened[missed] += 1
        if widened[missed].max() > 2 * _MAX_WIDENINGS:
            raise RuntimeError(
                "pymc-private: a latent statistic's window did not close; please report this model."
            )
        # A window that missed the bulk moves to each variant's mode; one that was already
        # there is too narrow for the tails: double it.
        lost = missed[~located[missed]]
        if lost.size:
            low, high = (lower, upper) if bracket is None else bracket
            low, high = np.broadcast_to(low, (size,))[lost], np.broadcast_to(high, (size,))[lost]
            modes = _modes(logpmf, low, high, lost)
            apart = modes.max(axis=0) - modes.min(axis=0)
            together = apart <= 2 * half[:, lost].max(axis=0)  # as `_placed`
            middle[:, lost] = np.where(
                together, (modes.max(axis=0) + modes.min(axis=0)) // 2, modes
            )
            half[:, lost] += np.where(together, apart // 2, 0)
            located[lost] = True
        narrow = missed[~np.isin(missed, lost)]
        half[:, narrow] = np.minimum(2 * half[:, narrow] + 2, 1 << 50)
        queue.append(missed)


def _placed(centre: np.ndarray, reach: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Windows centre ± reach of V variants (each (V, B)): one window over the union of the
    variants' where that is at most twice the widest (their bulks overlap: the pmf's terms
    that do not depend on the variant are evaluated once), else each variant's own."""
    low, high = (centre - reach).min(axis=0), (centre + reach).max(axis=0)
    together = high - low <= 4.0 * reach.max(axis=0)
    return (
        np.where(together, np.floor(0.5 * (low + high)), centre),
        np.where(together, 0.5 * (high - low), reach),
    )


def _variants(logpmf, lower: np.ndarray) -> int:
    """V, the number of variants ``logpmf`` evaluates (at one point of its first row)."""
    if not lower.size:
        return 1
    return logpmf(lower[:1, None][None], np.arange(1)).shape[0]


# Rows whose windows are within this factor of each other's widths share an array.
_BUCKET_RATIO = 1.6
_BUCKET_ROWS = 64


def _buckets(rows: np.ndarray, widths: np.ndarray) -> list[np.ndarray]:
    """``rows`` split by window width, in classes whose widths are within `_BUCKET_RATIO` of
    each other (neighbouring classes merged up to `_BUCKET_ROWS` rows), so that a few wide
    windows do not widen every row's array."""
    if rows.size < 2 * _BUCKET_ROWS:
        return [rows]
    classes = np.floor(np.log(np.maximum(widths, 1.0)) / np.log(_BUCKET_RATIO)).astype(np.int64)
    values, counts = np.unique(classes, return_counts=True)
    buckets, members, size = [], [], 0
    for value, count in zip(values, counts, strict=True):
        members.append(value)
        size += count
        if size >= _BUCKET_ROWS:
            buckets.append(rows[np.isin(classes, members)])
            members, size = [], 0
    if members:
        buckets.append(rows[np.isin(classes, members)])
    return buckets


def _modes(logpmf, lower: np.ndarray, upper: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The mode of every variant of log-concave pmfs on [lower, upper], by bisection on the
    sign of the increments log f(x + 1) − log f(x), which do not increase; shape (V, R)."""
    start = np.broadcast_to(lower, rows.shape).astype(np.int64)
    variants = logpmf(start[None, :, None], rows).shape[0]
    low = np.tile(start, (variants, 1))
    high = np.tile(np.broadcast_to(upper, rows.shape).astype(np.int64), (variants, 1))
    with np.errstate(all="ignore"):
        while np.any(high > low):
            middle = (low + high) // 2
            values = logpmf(np.stack([middle, np.minimum(middle + 1, high)], axis=-1), rows)
            falling = ~(values[..., 1] > values[..., 0])
            high = np.where(falling, middle, high)
            low = np.where(falling, low, middle + 1)
    return low


# Columns per block of the two-level inverse CDF (`_inverse_cdf`).
_BLOCK = 16


def _inverse_cdf(weights: np.ndarray, uniform: np.ndarray) -> np.ndarray:
    """The column of each row at which the cumulative weights first reach ``uniform`` times
    the row's total: cumulative sums over blocks of columns, then within the chosen block."""
    rows, width = weights.shape
    blocks = -(-width // _BLOCK)
    padded = np.zeros((rows, blocks * _BLOCK))
    padded[:, :width] = weights
    padded = padded.reshape(rows, blocks, _BLOCK)
    sums = padded.sum(axis=2)
    cumulative = np.cumsum(sums, axis=1)
    target = uniform * cumulative[:, -1]
    block = np.minimum((cumulative < target[:, None]).sum(axis=1), blocks - 1)
    index = np.arange(rows)
    before = cumulative[index, block] - sums[index, block]
    inner = np.cumsum(padded[index, block], axis=1) + before[:, None]
    within = np.minimum((inner < target[:, None]).sum(axis=1), _BLOCK - 1)
    return block * _BLOCK + within


def _tail(edge: np.ndarray, beyond: np.ndarray, peak: np.ndarray, total: np.ndarray):
    """The mass past a window's edge relative to the window's, by log-concavity: at most
    f(edge)·e^{−d}/(1 − e^{−d}) with d = log f(edge) − log f(beyond); 0 when ``beyond`` is
    outside the support (f = 0 from there on), inf when d ≤ 0 (the window ends before the
    mode)."""
    step = edge - beyond
    bound = np.exp(edge - peak) / total * np.exp(-step) / -np.expm1(-step)
    return np.where(np.isneginf(beyond) | np.isneginf(edge), 0.0, np.where(step > 0, bound, np.inf))


def _pair(
    total: np.ndarray,
    probability: np.ndarray,
    first: np.ndarray | None,
    second: np.ndarray | None,
    noise: NoiseLaw | None,
):
    """f(x) ∝ C(T, x) q^x (1 − q)^{T−x}·P(Z = r₁ − x)·P(Z = r₂ − (T − x)) on [0, T]: the law
    of one of two categories' counts given their total T and releases r₁, r₂ (None: not
    released), in V variants of q (``probability`` of shape (V, B); the others (B,)), as a
    log pmf for `window_draw` with each variant's centre and reach (the precision-weighted
    normal approximation of the factors; `NoiseLaw.reach`)."""
    q = np.clip(probability, 1e-300, 1.0 - 1e-16)
    log_odds = np.log(q) - np.log1p(-q)

    def logpmf(x, rows):
        t = total[rows][:, None]
        value = -log_factorial(x) - log_factorial(t - x)
        if first is not None:
            value += noise.log_pmf(first[rows][:, None] - x)
        if second is not None:
            value += noise.log_pmf(second[rows][:, None] - (t - x))
        return value + x * log_odds[:, rows, None]

    variance = np.maximum(total * q * (1.0 - q), 0.25)
    precision, weighted = 1.0 / variance, total * q / variance
    if first is not None:  # the release of x
        precision, weighted = precision + 1.0 / noise.variance, weighted + first / noise.variance
    if second is not None:  # the release of T − x
        precision = precision + 1.0 / noise.variance
        weighted = weighted + (total - second) / noise.variance
    spread = np.sqrt(1.0 / precision)
    reach = 9.0 * spread if first is None and second is None else noise.reach(spread)
    return logpmf, weighted / precision, reach


def binary_split(
    rng: np.random.Generator | None,
    total: np.ndarray,
    probability: np.ndarray,
    first: np.ndarray | None,
    second: np.ndarray | None,
    noise: NoiseLaw | None,
) -> tuple[np.ndarray, np.ndarray]:
    """The split x of T trials between two categories given their releases, for every entry
    (shape (B,)) and every variant of q (``probability``, shape (V, B) or (B,)): draws
    x ~ Binomial(x; T, q)·P(Z = r₁ − x)·P(Z = r₂ − (T − x)) (zeros without ``rng``) and the
    log of its sum over x, the likelihood of q given the releases with the split summed out;
    each of the shape of ``probability``. Neither category released: x ~ Binomial(T, q),
    drawn by numpy's exact binomial sampler in O(1) per entry, and the sum is 1."""
    if first is None and second is None:
        shape = np.broadcast_shapes(np.shape(probability), np.shape(total))
        if rng is None:
            return np.zeros(shape, dtype=np.int64), np.zeros(shape)
        q = np.clip(np.broadcast_to(probability, shape), 0.0, 1.0)
        return rng.binomial(np.broadcast_to(total, shape), q), np.zeros(shape)
    variants = np.atleast_2d(probability)
    logpmf, centre, reach = _pair(total, variants, first, second, noise)
    draws, mass = window_draw(logpmf, centre, reach, 0, total, rng)
    q = np.clip(variants, 1e-300, 1.0 - 1e-16)
    mass = mass + log_factorial(total) + total * np.log1p(-q)
    shape = np.shape(probability)
    return draws.reshape(shape), mass.reshape(shape)


def resample_pairs(
    rng: np.random.Generator,
    counts: np.ndarray,
    probabilities: np.ndarray,
    released: np.ndarray,
    noise: NoiseLaw | None,
) -> None:
    """One Gibbs sweep over the category pairs of every cell, in place: ``counts`` (B, K) int,
    ``probabilities`` (B, K), ``released`` (B, K) noisy values in count units, NaN in the
    categories not released (a derived category 0)."""
    width = counts.shape[1]
    shown = ~np.isnan(released[0])
    for i, j in category_pairs(width):
        total = counts[:, i] + counts[:, j]
        q = probabilities[:, i] / (probabilities[:, i] + probabilities[:, j])
        first = released[:, i] if shown[i] else None
        second = released[:, j] if shown[j] else None
        x, _ = binary_split(rng, total, q, first, second, noise)
        counts[:, i], counts[:, j] = x, total - x


def category_pairs(width: int) -> list[tuple[int, int]]:
    """The pairs of categories one sweep updates: (0, 1), or each k with k + 1 cyclically."""
    return [(0, 1)] if width == 2 else [(k, (k + 1) % width) for k in range(width)]


def _poisson(means: np.ndarray, released: np.ndarray, noise: NoiseLaw):
    """f(x) ∝ μ^x/x!·P(Z = r − x) on x ≥ 0, in V variants of μ (``means`` of shape (V, B)),
    as a log pmf with each variant's centre and reach."""
    log_mean = np.log(np.maximum(means, 1e-300))

    def logpmf(x, rows):
        value = noise.log_pmf(released[rows][:, None] - x) - log_factorial(x)
        return value + x * log_mean[:, rows, None]

    variance = np.maximum(means, 0.25)
    precision = 1.0 / variance + 1.0 / noise.variance
    centre = (means / variance + released / noise.variance) / precision
    reach = noise.reach(np.sqrt(1.0 / precision))
    # The mode lies between the factors' modes (μ, about, and the release), each log-concave.
    modes = np.concatenate([means, released[None]])
    bracket = (
        np.maximum(np.floor(modes.min(axis=0)) - 1, 0).astype(np.int64),
        np.maximum(np.ceil(modes.max(axis=0)) + 1, 0).astype(np.int64),
    )
    return logpmf, centre, reach, bracket


def beta_binomial_split(
    rng: np.random.Generator,
    total: np.ndarray,
    alpha: np.ndarray,
    beta: np.ndarray,
    first: np.ndarray | None,
    second: np.ndarray | None,
    noise: NoiseLaw,
    count: int,
) -> np.ndarray:
    """``count`` independent draws per entry (shape (B, count)) of the split x of T trials
    with the probability summed out under a Beta(α, β) prior: x ∝ C(T, x) B(α + x, β + T − x)
    ·P(Z = r₁ − x)·P(Z = r₂ − (T − x)), log-concave for α, β ≥ 1 (the beta-binomial is)."""
    mean = total * alpha / (alpha + beta)
    variance = np.maximum(
        total * alpha * beta * (alpha + beta + total) / ((alpha + beta) ** 2 * (alpha + beta + 1)),
        0.25,
    )

    def logpmf(x, rows):
        t, a, b = total[rows][:, None], alpha[rows][:, None], beta[rows][:, None]
        value = special.gammaln(a + x) + special.gammaln(b + t - x)
        value += -log_factorial(x) - log_factorial(t - x)
        if first is not None:
            value += noise.log_pmf(first[rows][:, None] - x)
        if second is not None:
            value += noise.log_pmf(second[rows][:, None] - (t - x))
        return value

    precision, weighted = 1.0 / variance, mean / variance
    if first is not None:
        precision, weighted = precision + 1.0 / noise.variance, weighted + first / noise.variance
    if second is not None:
        precision = precision + 1.0 / noise.variance
        weighted = weighted + (total - second) / noise.variance
    reach = noise.reach(np.sqrt(1.0 / precision))
    return window_sample(logpmf, weighted / precision, reach, 0, total, rng, count)


def gamma_poisson_split(
    rng: np.random.Generator,
    exposure: np.ndarray,
    alpha: np.ndarray,
    rate: np.ndarray,
    released: np.ndarray,
    noise: NoiseLaw,
    count: int,
) -> np.ndarray:
    """``count`` independent draws per entry of a Poisson(T·λ) sum with λ summed out under a
    Gamma(α, rate β) prior (a negative binomial) times P(Z = r − x): log-concave for α ≥ 1."""
    mean = exposure * alpha / rate
    variance = np.maximum(mean * (1.0 + exposure / rate), 0.25)
    share = exposure / (rate + exposure)  # 0 for a cell of no records: x = 0 surely

    def logpmf(x, rows):
        value = special.gammaln(alpha[rows][:, None] + x) - log_factorial(x)
        value += special.xlogy(x, share[rows][:, None]) + noise.log_pmf(released[rows][:, None] - x)
        return value

    precision = 1.0 / variance + 1.0 / noise.variance
    centre = (mean / variance + released / noise.variance) / precision
    reach = noise.reach(np.sqrt(1.0 / precision))
    modes = np.stack([mean, released])  # the mode lies between the factors' modes
    bracket = (
        np.maximum(np.floor(modes.min(axis=0)) - 1, 0).astype(np.int64),
        np.maximum(np.ceil(modes.max(axis=0)) + 1, 0).astype(np.int64),
    )
    return window_sample(logpmf, centre, reach, 0, _LARGEST_SUM, rng, count, bracket)


# The largest integer sum a window may reach (far beyond any released statistic's range).
_LARGEST_SUM = np.iinfo(np.int64).max // 4


def poisson_split(
    rng: np.random.Generator | None,
    means: np.ndarray,
    released: np.ndarray,
    noise: NoiseLaw,
) -> tuple[np.ndarray, np.ndarray]:
    """Draws of Poisson sums given their releases (zeros without ``rng``) and
    log Σ_x Poisson(x; μ)·P(Z = r − x), for every entry (``released`` of shape (B,)) and
    every variant of μ (``means``, shape (V, B) or (B,)); each of the shape of ``means``."""
    variants = np.atleast_2d(means)
    logpmf, centre, reach, bracket = _poisson(variants, released, noise)
    draws, mass = window_draw(logpmf, centre, reach, 0, _LARGEST_SUM, rng, bracket)
    return draws.reshape(np.shape(means)), (mass - variants).reshape(np.shape(means))


def add_records(
    rng: np.random.Generator, law: MultinomialCounts | PoissonCounts, k: np.ndarray
) -> np.ndarray:
    """The statistic of k fresh records per cell (``k`` broadcast against the law's cells):
    Multinomial(trials·k, p) counts, or a Poisson(k·λ) sum."""
    if isinstance(law, PoissonCounts):
        return rng.poisson(k * law.rates)
    p = law.probabilities
    counts = np.zeros(p.shape, dtype=np.int64)
    left = np.broadcast_to(law.trials * k, p.shape[:-1]).astype(np.int64)
    mass = np.ones(p.shape[:-1])
    for c in range(p.shape[-1] - 1):  # sequential binomials: exact multinomial draws
        share = np.clip(p[..., c] / np.maximum(mass, 1e-300), 0.0, 1.0)
        counts[..., c] = rng.binomial(left, share)
        left = left - counts[..., c]
        mass = mass - p[..., c]
    counts[..., -1] = left
    return counts


def remove_records(
    rng: np.random.Generator,
    latent: np.ndarray,
    totals: np.ndarray,
    k: np.ndarray,
    law: MultinomialCounts | PoissonCounts,
) -> np.ndarray:
    """The statistic of k of a cell's ``totals`` records chosen uniformly at random, given the
    cell's statistic ``latent``: multivariate hypergeometric counts (of trials·k of trials·T
    trials), or a Binomial(s, k/T) part of a Poisson sum. Requires k ≤ T."""
    if isinstance(law, PoissonCounts):
        share = np.where(totals > 0, k / np.maximum(totals, 1), 0.0)
        return rng.binomial(latent, np.clip(share, 0.0, 1.0))
    drawn = np.zeros(latent.shape, dtype=np.int64)
    wanted = np.broadcast_to(law.trials * k, latent.shape[:-1]).astype(np.int64)
    rest = latent.sum(axis=-1)
    for c in range(latent.shape[-1] - 1):  # sequential hypergeometrics
        rest = rest - latent[..., c]
        drawn[..., c] = _hypergeometric(rng, latent[..., c], rest, wanted)
        wanted = wanted - drawn[..., c]
    drawn[..., -1] = wanted
    return drawn


def _hypergeometric(rng, good: np.ndarray, bad: np.ndarray, sample: np.ndarray) -> np.ndarray:
    """numpy's hypergeometric, which refuses empty urns: 0 drawn when nothing is asked."""
    empty = sample <= 0
    safe_good = np.where(empty, 1, good)
    draws = rng.hypergeometric(safe_good, np.where(empty, 1, bad), np.where(empty, 1, sample))
    return np.where(empty, 0, draws)
