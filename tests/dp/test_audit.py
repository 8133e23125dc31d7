"""Unit tests of the empirical auditor: its bounds, soundness, power and argument checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest

from pymc_private.dp.audit import (
    AuditResult,
    clopper_pearson_lower,
    clopper_pearson_upper,
    epsilon_lower_bound,
)
from pymc_private.errors import InvalidPrivacyParameterError


def randomized_response(epsilon: float):
    """Report the bit truthfully with probability e^ε/(1 + e^ε): exactly ε-DP."""
    truth = math.exp(epsilon) / (1 + math.exp(epsilon))

    def run(bit, rng, size):
        keep = rng.random(size) < truth
        return np.where(keep, bit, 1 - bit)

    return run


@pytest.mark.parametrize("successes", [0, 1, 7, 50, 93, 99, 100])
@pytest.mark.parametrize("alpha", [0.05, 0.0125])
def test_clopper_pearson_matches_scipy_exact_intervals(successes, alpha):
    lower = binomtest(successes, 100, alternative="greater").proportion_ci(
        confidence_level=1 - alpha, method="exact"
    )
    upper = binomtest(successes, 100, alternative="less").proportion_ci(
        confidence_level=1 - alpha, method="exact"
    )
    assert float(clopper_pearson_lower(successes, 100, alpha)) == pytest.approx(
        lower.low, rel=1e-9, abs=1e-300
    )
    assert float(clopper_pearson_upper(successes, 100, alpha)) == pytest.approx(
        upper.high, rel=1e-9
    )
    # The one-sided bound at α is the two-sided exact interval's end at level 2α.
    two_sided = binomtest(successes, 100).proportion_ci(confidence_level=1 - 2 * alpha)
    assert float(clopper_pearson_lower(successes, 100, alpha)) == pytest.approx(
        two_sided.low, rel=1e-9, abs=1e-300
    )


def test_identical_deterministic_outputs_give_zero():
    result = epsilon_lower_bound(lambda data, rng: 3.0, "D", "D'", n=500, random_seed=0)
    assert result.epsilon_lower_bound == 0.0
    assert result.counts[0] == result.counts[1]


def test_data_independent_noise_gives_zero():
    result = epsilon_lower_bound(
        lambda data, rng: rng.normal(size=3), "D", "D'", n=2_000, random_seed=0
    )
    assert result.epsilon_lower_bound == 0.0


def test_randomized_response_bound_is_tight_and_sound():
    result = epsilon_lower_bound(
        randomized_response(1.0), 0, 1, n=20_000, random_seed=5, vectorized=True
    )
    # Any event on a bit has likelihood ratio at most e: the bound lands just below 1.
    assert 0.85 < result.epsilon_lower_bound <= 1.0
    assert result.passes(1.0) and not result.passes(0.8)


def test_given_event_bounds_both_directions():
    heads = epsilon_lower_bound(
        randomized_response(1.0),
        0,
        1,
        n=20_000,
        event=lambda bit: bit == 1,
        random_seed=6,
        vectorized=True,
    )
    tails = epsilon_lower_bound(
        randomized_response(1.0),
        0,
        1,
        n=20_000,
        event=lambda bit: bit == 0,
        random_seed=6,
        vectorized=True,
    )
    assert heads.event.endswith("P[E | neighbour]")
    assert tails.event.endswith("P[E | data]")
    for result in (heads, tails):
        assert 0.85 < result.epsilon_lower_bound <= 1.0


def test_soundness_frequency_on_randomized_response():
    # P[ε_lb > ε] ≤ α = 0.05 over 200 independent audits of an exactly 1-DP mechanism whose
    # best event attains the ratio e exactly; allow 3 binomial standard deviations.
    exceed = sum(
        epsilon_lower_bound(
            randomized_response(1.0), 0, 1, n=2_000, random_seed=seed, vectorized=True
        ).epsilon_lower_bound
        > 1.0
        for seed in range(200)
    )
    assert exceed <= 0.05 * 200 + 3 * math.sqrt(0.05 * 0.95 * 200)


def test_reproducible_given_seed_and_the_same_per_call_or_vectorized():
    def once(bit, rng):
        return float(rng.random() < 0.7) if bit else float(rng.random() < 0.3)

    def batch(bit, rng, size):
        return np.array([once(bit, rng) for _ in range(size)])

    first = epsilon_lower_bound(once, 0, 1, n=1_000, random_seed=9)
    again = epsilon_lower_bound(once, 0, 1, n=1_000, random_seed=np.random.default_rng(9))
    vectorized = epsilon_lower_bound(batch, 0, 1, n=1_000, random_seed=9, vectorized=True)
    assert first == again == vectorized
    assert isinstance(first, AuditResult)


def test_array_outputs_are_projected_on_the_coordinate_that_moves():
    def mechanism(shift, rng, size):
        out = rng.laplace(size=(size, 4))
        out[:, 2] += shift
        return out

    result = epsilon_lower_bound(mechanism, 0.0, 2.0, n=4_000, random_seed=1, vectorized=True)
    assert result.event.startswith("output[2]")
    assert 1.5 < result.epsilon_lower_bound <= 2.0


def test_passes_is_the_comparison_with_the_claim():
    result = AuditResult(epsilon_lower_bound=0.7, event="e", counts=(1, 2), n=10, alpha=0.05)
    assert result.passes(0.7) and result.passes(1) and not result.passes(0.69)
    with pytest.raises(InvalidPrivacyParameterError, match="claimed_epsilon"):
        result.passes(-1.0)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n": 0}, ValueError, "n must be a positive integer"),
        ({"n": 10.0}, ValueError, "n must be a positive integer"),
        ({"n": 10, "alpha": 1.0}, ValueError, "alpha must be in"),
        ({"n": 10, "alpha": 0}, ValueError, "alpha must be in"),
        ({"n": 10, "n_pilot": 0}, ValueError, "n_pilot must be a positive integer"),
        ({"n": 10, "n_pilot": 5, "event": bool}, ValueError, "n_pilot has no effect"),
        ({"n": 10, "event": 3}, TypeError, "event must be a callable"),
    ],
)
def test_bad_arguments_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        epsilon_lower_bound(lambda data, rng: 0.0, 0, 1, **kwargs)


def test_vectorized_mechanism_must_honour_size():
    with pytest.raises(ValueError, match="stacked on axis 0"):
        epsilon_lower_bound(lambda data, rng, size: np.zeros(size + 1), 0, 1, n=10, vectorized=True)
