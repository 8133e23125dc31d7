"""Exact latent draws of released counts: every draw and marginal against brute force over the
whole support, including releases far outside it, tiny and huge noise, windows that start in
the wrong place; and the thinning laws the group-size moves rely on."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from scipy import special, stats

from pymc_private.dp.noise import GaussianNoise, LaplaceNoise
from pymc_private.families.likelihood import MultinomialCounts, PoissonCounts
from pymc_private.noise_aware.latent import (
    add_records,
    binary_split,
    gamma_poisson_split,
    poisson_split,
    remove_records,
    resample_pairs,
    window_draw,
)

DRAWS = 20_000


def _pair_pmf(total, q, first, second, noise):
    x = np.arange(total + 1)
    log_pmf = stats.binom.logpmf(x, total, q)
    if first is not None:
        log_pmf = log_pmf + noise.log_pmf(first - x)
    if second is not None:
        log_pmf = log_pmf + noise.log_pmf(second - (total - x))
    return x, log_pmf


def _agrees(draws: np.ndarray, support: np.ndarray, log_pmf: np.ndarray) -> None:
    """A chi-square test of the draws against the pmf, over cells of expected count ≥ 5
    (the rest pooled): p > 1e-4, a false alarm once in 10⁴ runs."""
    probabilities = np.exp(log_pmf - special.logsumexp(log_pmf))
    observed = np.bincount(np.searchsorted(support, draws), minlength=support.size)
    expected = probabilities * draws.size
    big = expected >= 5
    observed = np.append(observed[big], observed[~big].sum())
    expected = np.append(expected[big], expected[~big].sum())
    keep = expected > 0
    if keep.sum() < 2:
        assert observed[~keep].sum() == 0
        return
    _, p_value = stats.chisquare(
        observed[keep], expected[keep] * observed.sum() / expected[keep].sum()
    )
    assert p_value > 1e-4


LAPLACE, GAUSSIAN = LaplaceNoise(3.0), GaussianNoise(20.0)


@pytest.mark.slow
@pytest.mark.parametrize("noise", [LAPLACE, GAUSSIAN, LaplaceNoise(0.05)])
@pytest.mark.parametrize(
    ("total", "q", "first", "second"),
    [
        (50, 0.3, 10.0, 40.0),  # both categories released
        (500, 0.01, -30.0, None),  # a derived category 0, a release below the support
        (500, 0.99, None, 700.0),  # a release above the support
        (7, 0.5, -100.0, 200.0),  # releases that disagree with each other and with T
        (0, 0.4, 3.0, -2.0),  # an empty cell
        (2000, 0.5, 1000.0, 1000.0),
    ],
)
def test_binary_split_is_the_exact_conditional(noise, total, q, first, second):
    rng = np.random.default_rng(1)
    size = DRAWS
    arrays = [np.full(size, v) if v is not None else None for v in (first, second)]
    draws, marginal = binary_split(rng, np.full(size, total), np.full(size, q), *arrays, noise)
    support, log_pmf = _pair_pmf(total, q, first, second, noise)
    _agrees(draws, support, log_pmf)
    assert marginal[0] == pytest.approx(special.logsumexp(log_pmf), abs=1e-9)


def test_two_variants_share_a_window_and_each_is_exact():
    """The current and proposed q of a collapsed move, one window for both."""
    rng = np.random.default_rng(2)
    total, first, second = np.full(DRAWS, 180), np.full(DRAWS, 150.0), np.full(DRAWS, 40.0)
    q = np.stack([np.full(DRAWS, 0.7), np.full(DRAWS, 0.9)])
    draws, marginal = binary_split(rng, total, q, first, second, LaplaceNoise(61.0))
    for variant in range(2):
        support, log_pmf = _pair_pmf(180, q[variant, 0], 150.0, 40.0, LaplaceNoise(61.0))
        _agrees(draws[variant], support, log_pmf)
        assert marginal[variant, 0] == pytest.approx(special.logsumexp(log_pmf), abs=1e-9)


def test_huge_totals_and_noise_keep_the_marginal_exact():
    """T = 10⁶ with noise of scale 10⁵: a wide window, still closed by the tail bound."""
    noise = LaplaceNoise(1e5)
    total, q, released = 1_000_000, 0.3, 250_000.0
    _, marginal = binary_split(
        None, np.array([total]), np.array([q]), np.array([released]), None, noise
    )
    x = np.arange(total + 1)
    exact = special.logsumexp(stats.binom.logpmf(x, total, q) + noise.log_pmf(released - x))
    assert marginal[0] == pytest.approx(exact, abs=1e-8)


def test_a_window_started_far_from_the_mode_still_closes_exactly():
    """window_draw is handed a centre 400 steps off and a reach of 1: it widens until the
    tail bound holds, and the draws are the exact pmf's."""
    noise = GaussianNoise(15.0)

    def logpmf(x, rows):
        return stats.binom.logpmf(x, 600, 0.5) + noise.log_pmf(320.0 - x)

    rng = np.random.default_rng(3)
    draws, mass = window_draw(
        logpmf, np.full(DRAWS, 700.0), np.ones(DRAWS), 0, np.full(DRAWS, 600), rng
    )
    support = np.arange(601)
    log_pmf = stats.binom.logpmf(support, 600, 0.5) + noise.log_pmf(320.0 - support)
    _agrees(draws[0], support, log_pmf)
    assert mass[0, 0] == pytest.approx(special.logsumexp(log_pmf), abs=1e-9)


def test_variants_whose_modes_lie_far_apart_get_a_window_each():
    """A current and a proposed θ whose modes are 4·10⁸ apart (T = 10⁹ trials): each variant's
    window spans its own spread (~10⁵), not the distance between the modes, so memory stays
    bounded while the counts grow, and each marginal is exact: without a release, the
    binomial's mass, 1 (up to the rounding of log T! ≈ 2·10¹⁰ in float64)."""
    total, q = 10**9, np.array([[0.3], [0.7]])
    tracemalloc.start()
    try:
        _, marginal = binary_split(None, np.array([total]), q, None, None, None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert marginal[:, 0] == pytest.approx([0.0, 0.0], abs=1e-5)
    assert peak < 64 * 2**20  # one window over both modes: 4·10⁸ points, gigabytes


def test_many_wide_windows_are_taken_a_few_rows_at_a_time():
    """200 cells of T = 10⁷ trials whose proposed q puts the binomial bulk (spread ~1450) away
    from the release: each window is ~25,000 points, all of them 10⁷ points and ~80 MB an
    array (issue 38: naive Bayes grew as √n); taken a few rows at a time, the peak stays at a
    few MiB, and every marginal is still the exact sum."""
    cells, total = 200, 10**7
    released = np.full(cells, 0.3 * total)
    q = np.stack([np.full(cells, 0.3), np.full(cells, 0.4)])
    tracemalloc.start()
    try:
        draws, marginal = binary_split(
            np.random.default_rng(8), np.full(cells, total), q, released, None, LAPLACE
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20
    support = np.arange(2_900_000, 3_400_000)
    for variant in range(2):
        log_pmf = stats.binom.logpmf(support, total, q[variant, 0])
        log_pmf = log_pmf + LAPLACE.log_pmf(released[0] - support)
        assert marginal[variant, 0] == pytest.approx(special.logsumexp(log_pmf), abs=1e-6)
        assert np.all(marginal[variant] == marginal[variant, 0])
        mean = np.exp(log_pmf - special.logsumexp(log_pmf)) @ support
        assert abs(draws[variant].mean() - mean) < 5 * draws[variant].std() / np.sqrt(cells) + 1
    assert draws[1].mean() > 3_200_000  # the proposal's bulk, off the release


@pytest.mark.parametrize(
    ("mean", "released", "noise"),
    [(3.0, 10.0, LAPLACE), (1000.0, 900.0, GAUSSIAN), (0.01, -50.0, LAPLACE), (40.0, 1e4, LAPLACE)],
)
def test_poisson_split_is_the_exact_conditional(mean, released, noise):
    rng = np.random.default_rng(4)
    draws, marginal = poisson_split(rng, np.full(DRAWS, mean), np.full(DRAWS, released), noise)
    support = np.arange(0, 30_000)
    log_pmf = stats.poisson.logpmf(support, mean) + noise.log_pmf(released - support)
    _agrees(draws, support, log_pmf)
    assert marginal[0] == pytest.approx(special.logsumexp(log_pmf), abs=1e-9)


def test_pair_sweeps_leave_the_multinomial_posterior_invariant():
    """Gibbs sweeps over the category pairs of K = 3 counts (all released) from a draw of
    the exact joint law stay distributed as that law: compare the first count's marginal."""
    rng = np.random.default_rng(5)
    n, p, noise = 12, np.array([0.5, 0.3, 0.2]), LaplaceNoise(2.0)
    released = np.array([3.0, 6.0, 1.0])
    states = [(a, b, n - a - b) for a in range(n + 1) for b in range(n + 1 - a)]
    log_joint = np.array(
        [
            stats.multinomial.logpmf(s, n, p) + noise.log_pmf(released - np.array(s)).sum()
            for s in states
        ]
    )
    weights = np.exp(log_joint - special.logsumexp(log_joint))
    start = np.array(states)[rng.choice(len(states), size=DRAWS, p=weights)]
    counts = start.copy()
    for _ in range(3):
        resample_pairs(rng, counts, np.tile(p, (DRAWS, 1)), np.tile(released, (DRAWS, 1)), noise)
    first = np.zeros(n + 1)
    for state, weight in zip(states, weights, strict=True):
        first[state[0]] += weight
    _agrees(counts[:, 0], np.arange(n + 1), np.log(first))
    assert np.all(counts.sum(axis=1) == n)


def test_thinning_draws_the_records_a_cell_would_lose_or_gain():
    """remove_records: k of T records at random from a cell's counts is multivariate
    hypergeometric; add_records: k fresh records are Multinomial(k, p); a Poisson sum loses
    Binomial(s, k/T)."""
    rng = np.random.default_rng(6)
    latent = np.tile([5, 3, 2], (DRAWS, 1))
    law = MultinomialCounts(np.full(DRAWS, 10), np.tile([0.5, 0.3, 0.2], (DRAWS, 1)))
    gone = remove_records(rng, latent, np.full(DRAWS, 10), np.full(DRAWS, 4), law)
    assert np.all(gone.sum(axis=1) == 4) and np.all(gone <= latent)
    expected = stats.multivariate_hypergeom([5, 3, 2], 4)
    outcomes = [
        (a, b, 4 - a - b) for a in range(5) for b in range(4) if a + b <= 4 and 4 - a - b <= 2
    ]
    codes = {outcome: index for index, outcome in enumerate(outcomes)}
    _agrees(
        np.array([codes[tuple(row)] for row in gone]),
        np.arange(len(outcomes)),
        np.log([expected.pmf(outcome) for outcome in outcomes]),
    )
    fresh = add_records(rng, law, np.full(DRAWS, 4))
    assert np.all(fresh.sum(axis=1) == 4)
    np.testing.assert_allclose(fresh.mean(axis=0), 4 * np.array([0.5, 0.3, 0.2]), atol=0.03)
    sums = np.full(DRAWS, 30)
    poisson = PoissonCounts(np.full(DRAWS, 30.0), np.full(DRAWS, 3.0))
    part = remove_records(rng, sums, np.full(DRAWS, 10), np.full(DRAWS, 4), poisson)
    _agrees(part, np.arange(31), stats.binom.logpmf(np.arange(31), 30, 0.4))


def test_a_cell_of_no_exposure_has_no_records():
    """A public group without records (exposure 0): its count is 0 surely, whatever the noisy
    release (0·log 0 is 0 here, not NaN, so the window closes at once)."""
    draws = gamma_poisson_split(
        np.random.default_rng(0),
        np.array([0.0, 20.0]),
        np.array([2.0, 2.0]),
        np.array([1.0, 1.0]),
        np.array([-3.0, 57.0]),
        LaplaceNoise(10.0),
        200,
    )
    assert (draws[0] == 0).all() and draws[1].mean() > 10


def test_a_collapsed_poisson_sum_far_from_its_prior_mean_keeps_a_narrow_window():
    """λ summed out under its Gamma prior, a release 5·10⁸ from the prior mean (10⁹ records):
    the window spans the noise's spread, not that distance (456 MiB at 10⁷ records before),
    and the draws are the exact conditional's, near the release."""
    released = np.array([2.5e9])
    tracemalloc.start()
    try:
        draws = gamma_poisson_split(
            np.random.default_rng(1),
            np.array([1e9]),
            np.array([2.0]),
            np.array([1.0]),
            released,
            LaplaceNoise(8.0),
            DRAWS,
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20
    # The negative binomial is flat over the noise's reach: the draws follow the noise's law
    # around the release (discrete Laplace of scale 8: sd ≈ 11.3).
    assert abs(draws.mean() - released[0]) < 1.0 and 9.0 < draws.std() < 14.0
