"""Exact truncated draws against scipy.

Every distribution check is a one-sample KS test against the exact truncated CDF (scipy's
special functions, or, where the interval's probability underflows double precision, a
numerical integral of the log density on a fine grid) at α = 0.001 with fixed seeds, so
each check is deterministic and would fail for a sampler off by more than a few percent.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from pymc_private.errors import UnsupportedModelError
from pymc_private.priors.conjugate import DIRICHLET, MVNORMAL
from pymc_private.priors.support import ParameterSupport
from pymc_private.priors.truncated import (
    CENTRE_SWEEPS,
    mvnormal_in_ball,
    truncated_beta,
    truncated_dirichlet,
    truncated_gamma,
    truncated_normal,
)

ALPHA = 1e-3
N = 4000


def _interval_cdf(cdf, sf, lower, upper):
    """The truncated CDF from whichever tail keeps precision."""
    if cdf(upper) <= sf(lower):
        return lambda x: (cdf(x) - cdf(lower)) / (cdf(upper) - cdf(lower))
    return lambda x: (sf(lower) - sf(x)) / (sf(lower) - sf(upper))


def _grid_cdf(log_density, lower, upper, points=400_001):
    """The truncated CDF by trapezoidal integration of exp(log density − max) on a grid."""
    grid = np.linspace(lower, upper, points)
    log_f = log_density(grid)
    density = np.exp(log_f - log_f.max())
    cumulative = np.concatenate([[0.0], np.cumsum((density[1:] + density[:-1]) / 2)])
    cumulative /= cumulative[-1]
    return lambda x: np.interp(x, grid, cumulative)


def _ks(draws, cdf):
    return stats.kstest(draws, cdf).pvalue


def _support(family, lower, upper, **extra):
    return ParameterSupport(family=family, params={}, lower=lower, upper=upper, **extra)


BETA_CASES = [
    # (alpha, beta, lower, upper): bulk, upper-tail, lower-tail, small shapes, narrow
    (3.0, 5.0, 0.1, 0.6),
    (2.0, 50.0, 0.6, 0.9),
    (50.0, 2.0, 0.1, 0.4),
    (0.5, 0.5, 0.05, 0.95),
    (5.0, 5.0, 0.5, 0.5 + 1e-9),
]


@pytest.mark.parametrize(("a", "b", "lower", "upper"), BETA_CASES)
def test_truncated_beta_matches_scipy(a, b, lower, upper):
    draws = truncated_beta(np.random.default_rng(1), a, b, lower, upper, size=N)
    assert draws.min() >= lower and draws.max() <= upper
    if upper - lower < 1e-6:
        grid = _grid_cdf(stats.beta(a, b).logpdf, lower, upper)
        assert _ks(draws, grid) > ALPHA
        return
    cdf = _interval_cdf(
        lambda x: special.betainc(a, b, x), lambda x: special.betaincc(a, b, x), lower, upper
    )
    assert _ks(draws, cdf) > ALPHA


@pytest.mark.parametrize(
    ("a", "b", "lower", "upper", "window"),
    [
        # the whole untruncated mass is far outside [lower, upper]: P(support) underflows
        (1000.0, 99000.0, 0.05, 0.95, (0.05, 0.051)),
        (99000.0, 1000.0, 0.05, 0.95, (0.949, 0.95)),
        (0.5, 3e4, 0.05, 0.95, (0.05, 0.0505)),
    ],
)
def test_truncated_beta_far_tail_beyond_double_precision(a, b, lower, upper, window):
    assert special.betainc(a, b, lower) in (0.0, 1.0) or special.betaincc(a, b, lower) == 0.0
    draws = truncated_beta(np.random.default_rng(2), a, b, lower, upper, size=N)
    assert draws.min() >= lower and draws.max() <= upper
    assert window[0] <= draws.min() and draws.max() <= window[1]

    def log_density(x):
        return special.xlogy(a - 1.0, x) + special.xlog1py(b - 1.0, -x)

    assert _ks(draws, _grid_cdf(log_density, *window)) > ALPHA


@pytest.mark.parametrize(
    ("a", "rate", "lower", "upper", "window"),
    [
        (3.0, 2.0, 0.5, 4.0, None),
        (3.0, 2.0, 0.5, np.inf, (0.5, 60.0)),
        (3.0, 2.0, 30.0, 40.0, None),
        (0.3, 1.0, 0.01, 3.0, None),
        (5000.0, 5000.0, 2.0, 3.0, (2.0, 2.02)),
        (5000.0, 5000.0, 2.0, np.inf, (2.0, 2.02)),
        (5000.0, 5000.0, 0.1, 0.5, (0.48, 0.5)),
    ],
)
def test_truncated_gamma_matches_scipy(a, rate, lower, upper, window):
    draws = truncated_gamma(np.random.default_rng(3), a, rate, lower, upper, size=N)
    assert draws.min() >= lower and draws.max() <= upper
    if window is None:
        cdf = _interval_cdf(
            lambda x: special.gammainc(a, rate * x),
            lambda x: special.gammaincc(a, rate * x),
            lower,
            upper,
        )
    else:
        cdf = _grid_cdf(lambda x: special.xlogy(a - 1.0, x) - rate * x, *window)
    assert _ks(draws, cdf) > ALPHA


@pytest.mark.parametrize(
    ("mu", "sigma", "lower", "upper"),
    [(0.0, 1.0, -1.0, 2.0), (0.0, 1.0, 8.0, 9.0), (0.0, 1.0, -9.0, -8.0), (1.0, 2.0, 1.0, np.inf)],
)
def test_truncated_normal_matches_scipy(mu, sigma, lower, upper):
    draws = truncated_normal(np.random.default_rng(4), mu, sigma, lower, upper, size=N)
    assert draws.min() >= lower and draws.max() <= upper
    a, b = (lower - mu) / sigma, (upper - mu) / sigma
    assert _ks(draws, stats.truncnorm(a, b, loc=mu, scale=sigma).cdf) > ALPHA


@pytest.mark.parametrize(("lower", "upper"), [(50.0, np.inf), (-60.0, -50.0)])
def test_truncated_normal_beyond_double_precision(lower, upper):
    assert special.ndtr(-50.0) == 0.0
    draws = truncated_normal(np.random.default_rng(5), 0.0, 1.0, lower, upper, size=N)
    assert draws.min() >= lower and draws.max() <= upper
    window = (50.0, 51.0) if lower > 0 else (-51.0, -50.0)
    assert _ks(draws, _grid_cdf(lambda x: -0.5 * x * x, *window)) > ALPHA


def test_scalar_draws_broadcast_per_element():
    rng = np.random.default_rng(6)
    lower = np.array([[0.1], [0.6]])
    draws = truncated_beta(rng, np.array([2.0, 30.0, 0.7]), 3.0, lower, lower + 0.2)
    assert draws.shape == (2, 3)
    assert np.all(draws >= lower) and np.all(draws <= lower + 0.2)
    assert truncated_gamma(rng, 2.0, 1.0, 0.5, 1.0, size=(4, 2)).shape == (4, 2)
    assert truncated_normal(rng, 0.0, 1.0, size=5).shape == (5,)


def test_draws_come_only_from_the_generator_passed_in():
    np.random.seed(0)  # noqa: NPY002 (the legacy global state must stay untouched)
    global_state = np.random.get_state()[1].copy()  # noqa: NPY002
    first = truncated_beta(np.random.default_rng(7), 2.0, 3.0, 0.1, 0.9, size=10)
    second = truncated_beta(np.random.default_rng(7), 2.0, 3.0, 0.1, 0.9, size=10)
    third = truncated_dirichlet(np.random.default_rng(7), [2.0, 3.0, 4.0], 0.1, size=3)
    assert np.array_equal(first, second)
    assert np.array_equal(third, truncated_dirichlet(np.random.default_rng(7), [2, 3, 4], 0.1, 3))
    assert np.array_equal(np.random.get_state()[1], global_state)  # noqa: NPY002


def _rejection_reference(sample, accept, size, rng):
    out = []
    while len(out) < size:
        candidates = sample(rng, 4 * size)
        out.extend(candidates[accept(candidates)])
    return np.asarray(out[:size])


@pytest.mark.parametrize(
    ("a", "min_prob"),
    [
        ([30.0, 50.0, 20.0], 0.1),  # untruncated Dirichlet proposal
        ([1.0] * 6, 0.12),  # shifted proposal (plain acceptance (1 − 6·0.12)^5 ≈ 0.2 %)
        ([0.6, 2.0, 1.0], 0.15),  # shifted proposal with a_k < 1
    ],
)
def test_truncated_dirichlet_matches_rejection_from_numpy(a, min_prob):
    rng = np.random.default_rng(8)
    draws, rate = truncated_dirichlet(rng, a, min_prob, size=N, return_acceptance_rate=True)
    assert draws.shape == (N, len(a))
    assert draws.min() >= min_prob
    np.testing.assert_allclose(draws.sum(-1), 1.0)
    assert 0.0 < rate <= 1.0
    reference = _rejection_reference(
        lambda r, k: r.dirichlet(a, size=k),
        lambda p: (p >= min_prob).all(-1),
        N,
        np.random.default_rng(9),
    )
    for k in range(len(a)):
        assert stats.ks_2samp(draws[:, k], reference[:, k]).pvalue > ALPHA


def test_truncated_dirichlet_hopeless_acceptance_is_a_clear_error_with_public_parameters():
    # These samplers see public parameters only (raw data goes through
    # pymc_private.conditionals.exact).
    with pytest.raises(UnsupportedModelError, match=r"`theta`.*smaller `min_prob`") as error:
        truncated_dirichlet(
            np.random.default_rng(10), [1e4, 1.0, 1.0], 0.2, name="theta", max_proposals=1000
        )
    assert "accept" in str(error.value) and "%" not in str(error.value)
    support = _support("dirichlet", 0.2, 0.6, simplex_min_prob=0.2)
    with pytest.raises(UnsupportedModelError, match=r"`theta`.*smaller `min_prob`"):
        DIRICHLET.draw(
            np.random.default_rng(10),
            {"a": np.array([1e4, 1.0, 1.0])},
            support,
            name="theta",
        )


@pytest.mark.parametrize("max_proposals", [0, -5, 2.5, True, "100", None])
def test_invalid_max_proposals_is_refused(max_proposals):
    with pytest.raises(ValueError, match=r"`max_proposals` must be an integer >= 1"):
        truncated_dirichlet(np.random.default_rng(0), [1.0, 1.0], max_proposals=max_proposals)
    with pytest.raises(ValueError, match=r"`max_proposals` must be an integer >= 1"):
        mvnormal_in_ball(np.random.default_rng(0), [0.0], [[1.0]], max_proposals=max_proposals)


def test_mvnormal_in_ball_matches_rejection_from_numpy():
    mu, cov, radius = np.array([1.0, -0.5]), np.array([[1.0, 0.3], [0.3, 0.5]]), 1.2
    rng = np.random.default_rng(11)
    draws, rate = mvnormal_in_ball(rng, mu, cov, radius, size=N, return_acceptance_rate=True)
    assert draws.shape == (N, 2)
    assert np.linalg.norm(draws, axis=1).max() <= radius
    reference = _rejection_reference(
        lambda r, k: r.multivariate_normal(mu, cov, size=k),
        lambda w: np.linalg.norm(w, axis=1) <= radius,
        N,
        np.random.default_rng(12),
    )
    for k in range(2):
        assert stats.ks_2samp(draws[:, k], reference[:, k]).pvalue > ALPHA
    expected_rate = np.mean(np.linalg.norm(rng.multivariate_normal(mu, cov, 20000), axis=1) <= 1.2)
    assert abs(rate - expected_rate) < 0.03


def test_mvnormal_hopeless_acceptance_names_variable():
    with pytest.raises(UnsupportedModelError, match=r"`w`.*larger `radius`"):
        mvnormal_in_ball(
            np.random.default_rng(13), [10.0, 10.0], 0.01 * np.eye(2), 1.0, name="w", size=2
        )


# Markov moves for draws that give up: invariance (exact draws in, exact draws out) and
# convergence from the support's centre, against the exact rejection samplers above.
SCARCE = {
    # acceptance of the untruncated proposal ~1e-3: exact rejection is still feasible here
    "mvnormal": (
        lambda rng, **kw: mvnormal_in_ball(
            rng, [1.5, -1.0], [[0.3, 0.15], [0.15, 0.2]], 0.8, size=N, **kw
        ),
        {"mu": np.array([1.5, -1.0]), "cov": np.array([[0.3, 0.15], [0.15, 0.2]])},
        dict(lower=-0.8, upper=0.8, radius=0.8),
    ),
    "dirichlet": (
        lambda rng, **kw: truncated_dirichlet(rng, [40.0, 2.0, 2.0], 0.2, size=N, **kw),
        {"a": np.array([40.0, 2.0, 2.0])},
        dict(lower=0.2, upper=0.6, simplex_min_prob=0.2),
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(SCARCE))
def test_markov_moves_keep_exact_draws_exact(family):
    sampler = SCARCE[family][0]
    exact, rate = sampler(np.random.default_rng(30), return_acceptance_rate=True)
    assert rate < 0.01
    reference = sampler(np.random.default_rng(31))
    # max_proposals=1: ~99% of rows take one sweep of moves from an exact draw, which moves
    # every coordinate unless the pair drawn has no room (about 10% of Dirichlet rows here)
    moved = sampler(np.random.default_rng(32), current=exact, max_proposals=1)
    assert np.mean(np.all(moved != exact, axis=1)) > 0.85
    for k in range(moved.shape[1]):
        assert stats.ks_2samp(moved[:, k], reference[:, k]).pvalue > ALPHA


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(SCARCE))
def test_independent_draws_that_give_up_start_at_the_centre_and_reach_the_law(family):
    sampler, parameters, bounds = SCARCE[family]
    reference = sampler(np.random.default_rng(33))
    support = _support(family, **bounds)
    draws = {"mvnormal": MVNORMAL, "dirichlet": DIRICHLET}[family].draw(
        np.random.default_rng(34),
        parameters,
        support,
        name="theta",
        size=N,
        current="centre",
        sweeps=CENTRE_SWEEPS,
        max_proposals=1,
    )
    for k in range(draws.shape[1]):
        assert stats.ks_2samp(draws[:, k], reference[:, k]).pvalue > ALPHA


@pytest.mark.slow
def test_hopeless_draws_with_a_current_state_move_and_stay_in_the_support():
    current = np.array([0.6, 0.2, 0.2])
    draws = truncated_dirichlet(
        np.random.default_rng(35), [1e4, 1.0, 1.0], 0.2, size=50, current=current
    )
    assert draws.min() >= 0.2 and np.allclose(draws.sum(-1), 1.0)
    weights = mvnormal_in_ball(
        np.random.default_rng(36),
        [10.0, 10.0],
        0.01 * np.eye(2),
        1.0,
        size=50,
        current=[2.0, 0.0],  # outside (a transform's rounding): pulled in, then moved
        moves=200,  # from a far start a chain needs many moves to reach the mode
    )
    assert np.linalg.norm(weights, axis=1).max() <= 1.0
    np.testing.assert_allclose(weights.mean(axis=0), [0.707, 0.707], atol=0.05)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda r: truncated_beta(r, 0.0, 1.0, 0.1, 0.9), "`alpha` must be finite and > 0"),
        (lambda r: truncated_beta(r, 1.0, np.nan, 0.1, 0.9), "`beta` must be finite and > 0"),
        (lambda r: truncated_beta(r, 1.0, 1.0, 0.9, 0.1), "lower < upper"),
        (lambda r: truncated_beta(r, 1.0, 1.0, 0.1, 1.5), "lower < upper <= 1.0"),
        (lambda r: truncated_gamma(r, 1.0, -1.0, 0.1, 0.9), "`beta` must be finite and > 0"),
        (lambda r: truncated_normal(r, np.inf, 1.0), "`mu` must be finite"),
        (lambda r: truncated_dirichlet(r, [1.0, 1.0], 0.5), "min_prob"),
        (lambda r: truncated_dirichlet(r, [1.0, -1.0], 0.1), "`a` must be finite and > 0"),
        (lambda r: mvnormal_in_ball(r, [0.0, 0.0], -np.eye(2), 1.0), "positive definite"),
    ],
)
def test_invalid_parameters_raise_value_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call(np.random.default_rng(14))


def test_one_call_mixes_direct_inverse_and_envelope_draws():
    """Per entry, the sampler used depends on how much of the law lies in the interval;
    each entry of one broadcast call must still follow its own truncated law."""
    a = np.array([3.0, 2.0, 50.0])
    b = np.array([4.0, 30.0, 2.0])
    lower = np.array([0.05, 0.4, 0.05])  # most, little, almost none of the law inside
    upper = np.array([0.95, 0.9, 0.5])
    draws = truncated_beta(np.random.default_rng(40), a, b, lower, upper, size=(N, 3))
    for k in range(3):
        cdf_low, cdf_high = stats.beta.cdf([lower[k], upper[k]], a[k], b[k])

        def cdf(x, k=k, cdf_low=cdf_low, cdf_high=cdf_high):
            return (stats.beta.cdf(x, a[k], b[k]) - cdf_low) / (cdf_high - cdf_low)

        assert stats.kstest(draws[:, k], cdf).pvalue > ALPHA
        assert lower[k] <= draws[:, k].min() and draws[:, k].max() <= upper[k]
