"""The normalising constants of the truncated priors whose mass has no closed form.

A truncated prior's logp is the base density minus the log of the mass the truncation keeps,
log P(support). `pymc_private.priors.distributions` computes that constant once, from public
parameters, and
carries it in the graph; it does not affect sampling, only the value of the normalised logp.

- `dirichlet_log_masses`: log P_{Dirichlet(a)}(every p_k ≥ m), exact for m = 0, for K = 2
  and for a = 1, through a Bonferroni bound when the excluded mass is below 1e-12, and
  otherwise by iterated convolution on a grid with Richardson extrapolation (relative
  accuracy about 1e-9).
- `ball_log_masses`: log P(‖w‖₂ ≤ R) for w ~ N(μ, Σ), exact for Σ = s²·I (chi-square or
  noncentral chi-square CDF), otherwise Ruben's (1962) series of chi-square CDFs, or Imhof's
  (1961) inversion integral when the series would not converge.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate, signal, special, stats

from pymc_private.priors import truncated

__all__ = ["ball_log_masses", "dirichlet_log_masses"]


def _dirichlet_log_mass(a: np.ndarray, min_prob: float) -> float:
    """log P_{Dirichlet(a)}(p_k ≥ min_prob for every k), for one concentration vector a.

    Exact for min_prob = 0, for K = 2 (regularised incomplete beta) and for a = 1
    ((1 − K·min_prob)^{K−1}). Otherwise: if the Bonferroni bound
    s = Σ_k P(p_k < min_prob) (marginals Beta(a_k, A − a_k)) is below 1e-12, log(1 − s)
    (error below 1e-12); else numerical convolution (`_dirichlet_log_mass_by_convolution`).
    """
    n_categories = a.shape[-1]
    if min_prob == 0.0:
        return 0.0
    if n_categories == 2:
        below = special.betainc(a[0], a[1], min_prob) + special.betainc(a[1], a[0], min_prob)
        if below < 0.5:
            return math.log1p(-below)
        mass = special.betainc(a[0], a[1], 1.0 - min_prob) - special.betainc(a[0], a[1], min_prob)
        return math.log(mass)
    if np.all(a == 1.0):
        return (n_categories - 1) * math.log1p(-n_categories * min_prob)
    below = float(special.betainc(a, a.sum() - a, min_prob).sum())
    if below < 1e-12:
        return math.log1p(-below)
    return _dirichlet_log_mass_by_convolution(a, min_prob)


def _dirichlet_log_mass_by_convolution(
    a: np.ndarray, min_prob: float, rtol: float = 1e-9, max_log2_grid: int = 20
) -> float:
    r"""log P_{Dirichlet(a)}(every p_k ≥ m) by iterated convolution on a grid.

    With p = m + c·q, c = 1 − K·m and q on the simplex,

    .. math:: P = \frac{c^{K−1}}{B(a)}\, e^{−λ} (g_1 * \dots * g_K)(1),
              \quad g_k(t) = (m + c t)^{a_k − 1} e^{λ t},

    the convolutions taken on [0, 1] (the simplex integral of a product is the convolution
    of its factors evaluated at 1, and the tilt e^{λ t} multiplies it by e^{λ} since
    Σ t_k = 1). λ = −Σ_k max(a_k − 1, 0)/(1 + K·m/c) puts every factor's peak near the
    Dirichlet mode and each g_k is scaled by its maximum, so that large concentrations neither
    overflow nor drown in rounding. Each g_k is smooth and bounded on [0, 1] because m > 0;
    every convolution is the trapezoid rule on a grid of N intervals (by FFT), and Richardson
    extrapolation in h² = 1/N² is refined by doubling N until two estimates agree to
    ``rtol`` (or N = 2^max_log2_grid).
    """
    n_categories = a.shape[-1]
    width = 1.0 - n_categories * min_prob
    tilt = -np.maximum(a - 1.0, 0.0).sum() / (1.0 + n_categories * min_prob / width)

    def log_factor(a_k: float, t: np.ndarray) -> np.ndarray:
        return (a_k - 1.0) * np.log(min_prob + width * t) + tilt * t

    # Exact maximum of each log-concave (a_k ≥ 1) or decreasing (a_k < 1) log-factor.
    stationary = np.clip(((a - 1.0) / -tilt if tilt < 0 else 0.0) - min_prob / width, 0.0, 1.0)
    log_peak = np.array(
        [
            max(log_factor(a_k, np.array([0.0, 1.0, t_k])))
            for a_k, t_k in zip(a, np.broadcast_to(stationary, a.shape), strict=True)
        ]
    )

    def trapezoid_convolution(n_intervals: int) -> float:
        step = 1.0 / n_intervals
        grid = np.linspace(0.0, 1.0, n_intervals + 1)
        running = np.exp(log_factor(a[0], grid) - log_peak[0])
        for a_k, peak_k in zip(a[1:], log_peak[1:], strict=True):
            factor = np.exp(log_factor(a_k, grid) - peak_k)
            full = signal.fftconvolve(running, factor)[: n_intervals + 1]
            running = step * (full - 0.5 * running[0] * factor - 0.5 * running * factor[0])
        return float(running[-1])

    log2_grid = 10
    coarse = trapezoid_convolution(2**log2_grid)
    previous = None
    while True:
        log2_grid += 1
        fine = trapezoid_convolution(2**log2_grid)
        extrapolated = (4.0 * fine - coarse) / 3.0
        converged = previous is not None and abs(extrapolated - previous) <= rtol * abs(
            extrapolated
        )
        if converged or log2_grid >= max_log2_grid:
            break
        coarse, previous = fine, extrapolated
    return float(
        (n_categories - 1) * math.log(width)
        + log_peak.sum()
        - tilt
        + math.log(extrapolated)
        - truncated.log_multivariate_beta(a)
    )


def dirichlet_log_masses(a: np.ndarray, min_prob: float) -> np.ndarray:
    """`_dirichlet_log_mass` for every row of a batch of concentration vectors."""
    rows = a.reshape(-1, a.shape[-1])
    unique_rows, inverse = np.unique(rows, axis=0, return_inverse=True)
    masses = np.array([_dirichlet_log_mass(row, min_prob) for row in unique_rows])
    return masses[inverse.reshape(-1)].reshape(a.shape[:-1])


def _ball_log_mass(mu: np.ndarray, cov: np.ndarray, radius: float) -> float:
    """log P(‖w‖₂ ≤ radius) for w ~ N(mu, cov), one vector and one matrix.

    ‖w‖² = Σ_j λ_j (z_j + b_j)², λ the eigenvalues of cov and b = Λ^{−1/2} Uᵀ mu.
    Isotropic cov = s²·I: exact (chi-square CDF for mu = 0, noncentral chi-square
    otherwise). General: Ruben's (1962) series of central chi-square CDFs with positive
    weights, truncated once the omitted weight bounds the error below 1e-12 relative;
    when the series is impractical (noncentrality Σ b_j² in the hundreds or more), Imhof's
    (1961) inversion integral by adaptive quadrature (absolute error about 1e-10).
    """
    eigenvalues, eigenvectors = np.linalg.eigh(cov)
    noncentrality = (eigenvectors.T @ mu) ** 2 / eigenvalues
    threshold = radius**2
    dimension = mu.shape[-1]
    if np.allclose(eigenvalues, eigenvalues[0], rtol=1e-12, atol=0.0):
        scaled = threshold / eigenvalues[0]
        total_noncentrality = float(noncentrality.sum())
        if total_noncentrality == 0.0:
            return float(stats.chi2.logcdf(scaled, dimension))
        return float(stats.ncx2.logcdf(scaled, dimension, total_noncentrality))
    log_mass = _ruben_log_cdf(eigenvalues, noncentrality, threshold)
    if log_mass is None:
        log_mass = math.log(_imhof_cdf(eigenvalues, noncentrality, threshold))
    return log_mass


def _ruben_log_cdf(
    eigenvalues: np.ndarray, noncentrality: np.ndarray, threshold: float, max_terms: int = 4000
) -> float | None:
    r"""log P(Σ_j λ_j χ²_1(δ_j²) ≤ x) by Ruben's series, or None if it would not converge.

    .. math:: P = \sum_{k ≥ 0} c_k\, F_{χ²_{d+2k}}(x/β), \quad β = \min_j λ_j,

    c_0 = exp(−Σδ²/2) Π (β/λ_j)^{1/2}, c_k = (1/2k) Σ_{r<k} g_{k−r} c_r,
    g_k = Σ_j (1 − β/λ_j)^k + kβ Σ_j (δ_j²/λ_j)(1 − β/λ_j)^{k−1}. All c_k ≥ 0 and Σ c_k = 1,
    so after K terms the error is at most (1 − Σ_{k<K} c_k)·F_{χ²_{d+2K}}(x/β).
    """
    beta = eigenvalues.min()
    log_c0 = -0.5 * noncentrality.sum() + 0.5 * np.log(beta / eigenvalues).sum()
    if log_c0 < -600.0:
        return None
    dimension = eigenvalues.size
    ratio = 1.0 - beta / eigenvalues
    orders = np.arange(1, max_terms + 1)[:, None]
    with np.errstate(under="ignore"):
        g = (ratio**orders).sum(-1) + orders[:, 0] * beta * (
            noncentrality / eigenvalues * ratio ** (orders - 1)
        ).sum(-1)
    weights = np.zeros(max_terms + 1)
    weights[0] = math.exp(log_c0)
    scaled = threshold / beta
    total = weights[0] * stats.chi2.cdf(scaled, dimension)
    weight_sum = weights[0]
    for k in range(1, max_terms + 1):
        weights[k] = np.dot(g[:k][::-1], weights[:k]) / (2 * k)
        weight_sum += weights[k]
        term_cdf = stats.chi2.cdf(scaled, dimension + 2 * k)
        total += weights[k] * term_cdf
        if max(0.0, 1.0 - weight_sum) * term_cdf <= 1e-12 * total:
            return math.log(total)
    return None


def _imhof_cdf(eigenvalues: np.ndarray, noncentrality: np.ndarray, threshold: float) -> float:
    r"""P(Σ_j λ_j χ²_1(δ_j²) ≤ x) by Imhof's (1961) inversion formula.

    .. math:: P = \frac12 − \frac1π \int_0^∞ \frac{\sin(φ(u) − xu/2)}{u\,ρ(u)}\,du,

    φ(u) = ½ Σ_j [arctan(λ_j u) + δ_j² λ_j u/(1 + λ_j² u²)],
    ρ(u) = Π_j (1 + λ_j² u²)^{1/4} exp(½ Σ_j δ_j² λ_j² u²/(1 + λ_j² u²)).
    The first period is integrated directly; the tail, sin φ·cos(xu/2) − cos φ·sin(xu/2)
    over a slowly varying amplitude, by QUADPACK's Fourier-integral routine (QAWF).
    """
    frequency = 0.5 * threshold

    def phase(u: float) -> float:
        scaled = eigenvalues * u
        return 0.5 * float(np.sum(np.arctan(scaled) + noncentrality * scaled / (1.0 + scaled**2)))

    def amplitude(u: float) -> float:
        squared = (eigenvalues * u) ** 2
        log_rho = 0.25 * np.sum(np.log1p(squared)) + 0.5 * np.sum(
            noncentrality * squared / (1.0 + squared)
        )
        return math.exp(-log_rho) / u

    split = 2.0 * math.pi / frequency
    head, _ = integrate.quad(
        lambda u: math.sin(phase(u) - frequency * u) * amplitude(u),
        0.0,
        split,
        limit=500,
        epsabs=1e-13,
    )
    tail_cos, _ = integrate.quad(
        lambda u: math.sin(phase(u)) * amplitude(u), split, np.inf, weight="cos", wvar=frequency
    )
    tail_sin, _ = integrate.quad(
        lambda u: math.cos(phase(u)) * amplitude(u), split, np.inf, weight="sin", wvar=frequency
    )
    return 0.5 - (head + tail_cos - tail_sin) / math.pi


def ball_log_masses(mu: np.ndarray, cov: np.ndarray, radius: float) -> np.ndarray:
    batch_shape = np.broadcast_shapes(mu.shape[:-1], cov.shape[:-2])
    mu = np.broadcast_to(mu, (*batch_shape, mu.shape[-1]))
    cov = np.broadcast_to(cov, (*batch_shape, *cov.shape[-2:]))
    masses = np.empty(batch_shape)
    for index in np.ndindex(batch_shape):
        masses[index] = _ball_log_mass(mu[index], cov[index], radius)
    return masses
