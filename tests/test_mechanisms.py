"""Tests of the noise mechanisms: releases, distributions, audits, attacks and bad input."""

from __future__ import annotations

import math

import numpy as np
import opendp.prelude as dp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from pymc_private.audit import epsilon_lower_bound
from pymc_private.dp.mechanisms import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    ExponentialMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    UnitShiftGaussianMechanism,
    discrete_laplace,
    exponential_mechanism,
    laplace,
)
from pymc_private.errors import DataBoundsError, InvalidPrivacyParameterError

DATA = np.array([4.0, 7.0, 1.0])
NEIGHBOUR = np.array([4.0, 9.0, 1.0])  # one coordinate moves by the whole Δ₁ = 2
SENSITIVITY = 2


# --- releases -------------------------------------------------------------------------------


def test_laplace_secure_records_opendp_mapped_epsilon_and_keeps_shape():
    values = np.arange(6.0).reshape(2, 3)
    noisy, release = laplace(values, 1.0, 3.0, statistic="sums")
    assert noisy.shape == (2, 3)
    assert noisy.dtype == np.float64
    # 1/3 maps to 3.0000000000000004 under OpenDP's rounded-up map; the scale is nudged up one
    # ulp so that the recorded (mapped) ε does not exceed the request.
    assert release.epsilon == 3.0
    assert "scale=0.33333333333333337" in release.note
    measurement = dp.m.make_laplace(
        dp.vector_domain(dp.atom_domain(T=float, nan=False)),
        dp.l1_distance(T=float),
        scale=0.33333333333333337,
    )
    assert measurement.map(1.0) == release.epsilon
    assert (release.mechanism, release.sensitivity, release.statistic, release.secure) == (
        "laplace",
        1.0,
        "sums",
        True,
    )


@pytest.mark.parametrize("epsilon", [0.1, 0.3, 0.7, 1 / 3, 1.0, 10 / 3])
@pytest.mark.parametrize("sensitivity", [1, 2, 3])
def test_secure_releases_never_record_more_than_requested(epsilon, sensitivity):
    _, release_float = laplace([0.0], float(sensitivity), epsilon)
    _, release_int = discrete_laplace([0], sensitivity, epsilon)
    _, release_choice = exponential_mechanism([0.0, 1.0], float(sensitivity), epsilon)
    for release in (release_float, release_int, release_choice):
        assert epsilon * (1 - 1e-12) <= release.epsilon <= epsilon


def test_exponential_mechanism_secure_epsilon_matches_opendp_zcdp_map():
    _, release = exponential_mechanism([0.0, 1.0, 2.0], 1.5, 0.7)
    scale = 2 * 1.5 / 0.7
    measurement = dp.m.make_noisy_max(
        dp.vector_domain(dp.atom_domain(T=float, nan=False)),
        dp.linf_distance(T=float, monotonic=False),
        dp.zero_concentrated_divergence(),
        scale=scale,
    )
    # ρ = ε²/8 for the exponential mechanism (Cesar & Rogers 2021).
    assert math.sqrt(8 * measurement.map(1.5)) == pytest.approx(release.epsilon, rel=1e-12)


def test_insecure_noise_is_reproducible_and_marked():
    first, release = laplace(DATA, 2.0, 1.0, rng=7, secure=False)
    second, _ = laplace(DATA, 2.0, 1.0, rng=np.random.default_rng(7), secure=False)
    np.testing.assert_array_equal(first, second)
    assert release.secure is False and release.epsilon == 1.0
    counts_a, release_int = discrete_laplace([3, 4], 1, 0.5, rng=3, secure=False)
    counts_b, _ = discrete_laplace([3, 4], 1, 0.5, rng=3, secure=False)
    np.testing.assert_array_equal(counts_a, counts_b)
    assert counts_a.dtype == np.int64 and release_int.secure is False
    choice_a, _ = exponential_mechanism(np.zeros(50), 1.0, 1.0, rng=5, secure=False)
    choice_b, _ = exponential_mechanism(np.zeros(50), 1.0, 1.0, rng=5, secure=False)
    assert choice_a == choice_b


def test_secure_noise_ignores_the_seed():
    first, _ = laplace(np.zeros(20), 1.0, 1.0, rng=7)
    second, _ = laplace(np.zeros(20), 1.0, 1.0, rng=7)
    assert not np.array_equal(first, second)


def test_discrete_laplace_accepts_integral_floats_and_keeps_shape():
    noisy, release = discrete_laplace(np.array([[2.0, 5.0]]), 2.0, 1.0)
    assert noisy.shape == (1, 2) and noisy.dtype == np.int64
    assert release.mechanism == "discrete_laplace" and release.sensitivity == 2.0


# --- distributions --------------------------------------------------------------------------


@pytest.mark.parametrize("secure", [True, False])
def test_laplace_noise_is_laplace_with_scale_sensitivity_over_epsilon(secure):
    noisy, _ = laplace(np.full(20_000, 5.0), 2.0, 0.5, rng=11, secure=secure)
    # Kolmogorov–Smirnov against Laplace(5, Δ₁/ε = 4); reject only at p < 0.001.
    assert stats.kstest(noisy, stats.laplace(loc=5.0, scale=4.0).cdf).pvalue > 1e-3


@pytest.mark.parametrize("secure", [True, False])
def test_discrete_laplace_noise_is_two_sided_geometric(secure):
    noisy, _ = discrete_laplace(np.full(20_000, 10), 2, 1.0, rng=12, secure=secure)
    noise = noisy - 10
    ratio = math.exp(-1.0 / 2.0)  # exp(-ε/Δ₁)
    support = np.arange(-8, 9)
    pmf = (1 - ratio) / (1 + ratio) * ratio ** np.abs(support)
    observed = np.array([np.sum(noise == z) for z in support] + [np.sum(np.abs(noise) > 8)])
    expected = np.append(pmf, 1 - pmf.sum()) * noise.size
    # Pearson chi-square over 18 cells; reject only at p < 0.001.
    assert stats.chisquare(observed, expected).pvalue > 1e-3


@pytest.mark.parametrize(
    ("secure", "monotone", "draws"),
    [(False, False, 20_000), (False, True, 20_000), (True, False, 3_000), (True, True, 3_000)],
)
def test_exponential_mechanism_distribution(secure, monotone, draws):
    scores = np.array([0.0, 1.0, 2.0, 0.5, -1.0])
    epsilon, sensitivity = 1.0, 0.5
    rng = np.random.default_rng(13)
    choices = [
        exponential_mechanism(
            scores, sensitivity, epsilon, rng=rng, monotone=monotone, secure=secure
        )[0]
        for _ in range(draws)
    ]
    factor = 1 if monotone else 2
    weights = np.exp(epsilon * scores / (factor * sensitivity))
    expected = weights / weights.sum() * draws
    observed = np.bincount(choices, minlength=scores.size)
    # Pearson chi-square, 4 degrees of freedom; reject only at p < 0.001.
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_exponential_mechanism_is_stable_for_huge_scores():
    scores = np.array([1e300, -1e300, 0.0])
    choice, _ = exponential_mechanism(scores, 1.0, 1.0, rng=1, secure=False)
    assert choice == 0
    assert exponential_mechanism(scores, 1.0, 1.0)[0] == 0


# --- audits ---------------------------------------------------------------------------------


def _vectorized(mechanism, epsilon, *, secure=False):
    def run(data, rng, size):
        return mechanism(np.tile(data, (size, 1)), SENSITIVITY, epsilon, rng=rng, secure=secure)[0]

    return run


@pytest.mark.parametrize("mechanism", [laplace, discrete_laplace])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 4.0])
def test_audit_numpy_noise_is_sound_and_half_scale_noise_is_caught(mechanism, epsilon):
    # n = 10 000 runs per data set (pilot 5 000): over 400 seeds at each ε the half-scale
    # mechanism was caught every time and the correct one exceeded ε in at most 2.
    counts = DATA.astype(int) if mechanism is discrete_laplace else DATA
    neighbour = NEIGHBOUR.astype(int) if mechanism is discrete_laplace else NEIGHBOUR
    correct = epsilon_lower_bound(
        _vectorized(mechanism, epsilon),
        counts,
        neighbour,
        n=10_000,
        random_seed=1,
        vectorized=True,
    )
    assert correct.passes(epsilon)
    under_noised = epsilon_lower_bound(
        _vectorized(mechanism, 2 * epsilon),
        counts,
        neighbour,
        n=10_000,
        random_seed=1,
        vectorized=True,
    )
    assert under_noised.epsilon_lower_bound > epsilon
    assert under_noised.event.startswith("output[1]")


@pytest.mark.parametrize("mechanism", [laplace, discrete_laplace])
def test_audit_secure_noise_at_epsilon_one(mechanism):
    counts = DATA.astype(int) if mechanism is discrete_laplace else DATA
    neighbour = NEIGHBOUR.astype(int) if mechanism is discrete_laplace else NEIGHBOUR
    correct = epsilon_lower_bound(
        _vectorized(mechanism, 1.0, secure=True),
        counts,
        neighbour,
        n=4_000,
        random_seed=2,
        vectorized=True,
    )
    assert correct.passes(1.0)
    under_noised = epsilon_lower_bound(
        _vectorized(mechanism, 2.0, secure=True),
        counts,
        neighbour,
        n=4_000,
        random_seed=2,
        vectorized=True,
    )
    assert under_noised.epsilon_lower_bound > 1.0


def _exponential_mechanism_audit(epsilon_inside, *, secure, n):
    # Scores of 20 candidates; the neighbour moves candidate 0 up by Δ and the rest down by
    # Δ, the change that makes P(0) move by the factor closest to e^ε.
    data = np.zeros(20)
    neighbour = np.full(20, -1.0)
    neighbour[0] = 1.0

    def run(scores, rng):
        return exponential_mechanism(scores, 1.0, epsilon_inside, rng=rng, secure=secure)[0]

    return epsilon_lower_bound(run, data, neighbour, n=n, random_seed=3)


def test_audit_exponential_mechanism_sound_and_doubled_epsilon_caught():
    assert _exponential_mechanism_audit(1.0, secure=False, n=5_000).passes(1.0)
    assert not _exponential_mechanism_audit(2.0, secure=False, n=5_000).passes(1.0)


def test_audit_exponential_mechanism_secure_path_is_sound():
    assert _exponential_mechanism_audit(1.0, secure=True, n=2_000).passes(1.0)


# --- the floating-point attack (Mironov 2012) ------------------------------------------------


def _numpy_laplace_can_output_at_zero(y: float) -> bool:
    """Whether numpy's Generator.laplace(loc=0, scale=1) can return ``y > 0``.

    numpy computes ``loc - scale * log(2.0 - U - U)`` for ``U = k·2⁻⁵³ ≥ 1/2``
    (numpy/random/src/distributions/distributions.c). Its image is a sparse set of floats:
    enumerating the k around the exact inverse decides membership.
    """
    center = round((1.0 - math.exp(-y) / 2.0) * 2.0**53)
    for k in range(center - 8, center + 9):
        u = k * 2.0**-53
        if 0.5 <= u < 1.0 and 0.0 - 1.0 * math.log(2.0 - u - u) == y:
            return True
    return False


def _impossible_at_zero(y) -> bool:
    return 1.0 <= y < 2.0 and not _numpy_laplace_can_output_at_zero(float(y))


def _mironov_audit(secure: bool):
    def run(loc, rng, size):
        return laplace(np.full(size, loc), 1.0, 1.0, rng=rng, secure=secure)[0]

    return epsilon_lower_bound(
        run, 0.0, 1.0, n=20_000, event=_impossible_at_zero, random_seed=4, vectorized=True
    )


def test_floating_point_attack_breaks_numpy_laplace():
    result = _mironov_audit(secure=False)
    data_hits, neighbour_hits = result.counts
    # No output at loc = 0 is flagged (the inversion is exact), yet most loc = 1 outputs in
    # [1, 2) are floats the loc = 0 sampler can never produce: the likelihood ratio is
    # infinite, and the auditor certifies far more than the claimed ε = 1.
    assert data_hits == 0
    assert neighbour_hits > 0.2 * result.n
    assert result.epsilon_lower_bound > 5.0
    assert not result.passes(1.0)


def test_floating_point_attack_finds_nothing_on_the_secure_path():
    result = _mironov_audit(secure=True)
    data_hits = result.counts[0]
    # OpenDP's outputs are roundings of loc + exact grid noise, so every float is possible
    # from both locations: the "impossible" event happens at loc = 0 as well.
    assert data_hits > 0.05 * result.n
    assert result.passes(1.0)


# --- bad input: typed errors, raised before any noise ----------------------------------------

BAD_POSITIVE = st.one_of(
    st.floats(max_value=0.0, allow_nan=False),
    st.sampled_from([math.inf, -math.inf, math.nan]),
)
MECHANISMS = [laplace, discrete_laplace, exponential_mechanism]


def _call(mechanism, *, values=None, sensitivity=1, epsilon=1.0, rng=None, secure=False):
    if values is None:
        values = [1, 2, 3]
    return mechanism(values, sensitivity, epsilon, rng=rng, secure=secure)


def _assert_raises_without_noise(error, match, **kwargs):
    for mechanism in MECHANISMS:
        rng = np.random.default_rng(0)
        state = rng.bit_generator.state
        with pytest.raises(error, match=match):
            _call(mechanism, rng=rng, **kwargs)
        assert rng.bit_generator.state == state
        with pytest.raises(error, match=match):
            _call(mechanism, secure=True, **kwargs)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(epsilon=BAD_POSITIVE)
def test_invalid_epsilon_is_refused_before_noise(epsilon):
    _assert_raises_without_noise(InvalidPrivacyParameterError, "epsilon", epsilon=epsilon)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(sensitivity=BAD_POSITIVE)
def test_invalid_sensitivity_is_refused_before_noise(sensitivity):
    _assert_raises_without_noise(
        InvalidPrivacyParameterError, "sensitivity", sensitivity=sensitivity
    )


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    values=st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=8),
    bad=st.sampled_from([math.nan, math.inf, -math.inf]),
    position=st.integers(0, 7),
)
def test_non_finite_values_are_refused_before_noise(values, bad, position):
    values.insert(position % (len(values) + 1), bad)
    _assert_raises_without_noise(DataBoundsError, "NaN or infinite", values=values)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    counts=st.lists(st.integers(-1000, 1000), min_size=1, max_size=8),
    fraction=st.floats(0.001, 0.999),
)
def test_non_integer_counts_are_refused_before_noise(counts, fraction):
    values = np.array(counts, dtype=float)
    values[0] += fraction
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(DataBoundsError, match="counts must hold integer counts"):
        discrete_laplace(values, 1, 1.0, rng=rng, secure=False)
    assert rng.bit_generator.state == state
    with pytest.raises(DataBoundsError, match="counts must hold integer counts"):
        discrete_laplace(values, 1, 1.0)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(sensitivity=st.floats(0.01, 100).filter(lambda s: s != math.floor(s)))
def test_non_integer_sensitivity_is_refused_by_discrete_laplace(sensitivity):
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(InvalidPrivacyParameterError, match="positive integer"):
        discrete_laplace([1, 2], sensitivity, 1.0, rng=rng, secure=False)
    assert rng.bit_generator.state == state


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ([], "is empty"),
        (np.array([], dtype=np.int64).reshape(0, 3), "is empty"),
        (["a", "b"], "integer or float dtype"),
        ([1 + 2j], "integer or float dtype"),
        ([True, False], "integer or float dtype"),
        ([[1.0, 2.0], [3.0]], "regular shape"),
    ],
)
def test_malformed_values_raise_data_bounds_error(values, match):
    for mechanism in MECHANISMS:
        with pytest.raises(DataBoundsError, match=match):
            _call(mechanism, values=values)


@pytest.mark.parametrize("bad", ["1.0", None, True, np.array([1.0])])
def test_non_numeric_privacy_parameters_raise(bad):
    for mechanism in MECHANISMS:
        with pytest.raises(InvalidPrivacyParameterError, match="epsilon must be a real number"):
            _call(mechanism, epsilon=bad)
        with pytest.raises(InvalidPrivacyParameterError, match="sensitivity must be a real"):
            _call(mechanism, sensitivity=bad)


def test_bad_rng_and_flags_raise_type_errors():
    with pytest.raises(TypeError, match="rng must be"):
        laplace([1.0], 1.0, 1.0, rng="seed", secure=False)
    with pytest.raises(TypeError, match="secure must be"):
        laplace([1.0], 1.0, 1.0, secure="yes")
    with pytest.raises(TypeError, match="monotone must be"):
        exponential_mechanism([1.0], 1.0, 1.0, monotone=1)


def test_error_messages_never_quote_data_values():
    with pytest.raises(DataBoundsError) as nonfinite:
        laplace([123.456, math.nan], 1.0, 1.0)
    with pytest.raises(DataBoundsError) as fractional:
        discrete_laplace([98765.25, 3.0], 1, 1.0)
    assert "123.456" not in str(nonfinite.value)
    assert "98765" not in str(fractional.value)


def test_scores_must_be_one_dimensional():
    with pytest.raises(DataBoundsError, match="one-dimensional"):
        exponential_mechanism(np.zeros((2, 2)), 1.0, 1.0)


def test_noise_scale_must_be_representable():
    with pytest.raises(InvalidPrivacyParameterError, match="finite positive noise scale"):
        laplace([1.0], 1e300, 1e-300)


# --------------------------------------------------------------------------------------
# Mechanism objects: the event is the cost before any data, and the call records it
# --------------------------------------------------------------------------------------

MECHANISM_OBJECTS = [
    (lambda secure: LaplaceMechanism(2.0, 0.7, secure=secure), np.array([1.0, 2.5, -3.0])),
    (lambda secure: DiscreteLaplaceMechanism(2, 0.3, secure=secure), np.array([3, 0, 10])),
    (
        lambda secure: DiscreteGaussianMechanism(1.5, 0.2, 1e-6, secure=secure),
        np.array([3, 0, 10]),
    ),
    (lambda secure: GaussianMechanism(1.5, 0.2, 1e-6, secure=secure), np.array([3.0, 0.5])),
    (
        lambda secure: ExponentialMechanism(1.0, 0.9, monotone=True, secure=secure),
        np.array([1.0, 3.0, 2.0]),
    ),
    (
        lambda secure: UnitShiftGaussianMechanism(4.2, 2, 1e-6, secure=secure),
        {"a": np.array([3, 0]), "b": np.array([[1, 2]])},
    ),
]


@pytest.mark.parametrize("secure", [False, True])
@pytest.mark.parametrize(("build", "data"), MECHANISM_OBJECTS)
def test_a_mechanism_records_the_release_it_states_before_any_data(build, data, secure):
    mechanism = build(secure)
    planned = mechanism.release("s" if not isinstance(data, dict) else "a, b")
    assert planned.event == mechanism.event and planned.secure == secure
    if isinstance(data, dict):
        noisy, release = mechanism(data, rng=1)
        assert {name: value.shape for name, value in noisy.items()} == {"a": (2,), "b": (1, 2)}
    else:
        noisy, release = mechanism(data, rng=1, statistic="s")
    assert release == planned


def test_the_functions_are_calls_of_the_mechanism_objects():
    values = np.array([1.0, 2.5, -3.0])
    assert_same = np.testing.assert_array_equal
    noisy, release = laplace(values, 2.0, 0.7, rng=5, secure=False, statistic="s")
    again, recorded = LaplaceMechanism(2.0, 0.7, secure=False)(values, rng=5, statistic="s")
    assert_same(noisy, again) and release == recorded
    counts, release = discrete_laplace([3, 0], 2, 0.3, rng=5, secure=False)
    again, recorded = DiscreteLaplaceMechanism(2, 0.3, secure=False)([3, 0], rng=5)
    assert_same(counts, again) and release == recorded
    index, release = exponential_mechanism([1.0, 3.0], 1.0, 0.9, rng=5, secure=False)
    assert (index, release) == ExponentialMechanism(1.0, 0.9, secure=False)([1.0, 3.0], rng=5)


@settings(max_examples=20, deadline=None)
@given(bad=st.sampled_from([0.0, -1.0, math.nan, math.inf, True, "1"]))
def test_a_mechanism_refuses_bad_public_parameters_when_built(bad):
    for build in (
        lambda: LaplaceMechanism(1.0, bad),
        lambda: DiscreteLaplaceMechanism(bad, 1.0),
        lambda: GaussianMechanism(1.0, bad, 1e-6),
        lambda: DiscreteGaussianMechanism(bad, 0.1, 1e-6),
        lambda: ExponentialMechanism(1.0, bad),
        lambda: UnitShiftGaussianMechanism(bad, 2, 1e-6),
        lambda: UnitShiftGaussianMechanism(1.0, 2, bad),
    ):
        with pytest.raises(InvalidPrivacyParameterError):
            build()
    with pytest.raises(InvalidPrivacyParameterError, match="positive integer"):
        DiscreteLaplaceMechanism(1.5, 1.0)
    with pytest.raises(InvalidPrivacyParameterError, match="positive integer"):
        UnitShiftGaussianMechanism(1.0, True, 1e-6)
    with pytest.raises(InvalidPrivacyParameterError, match="noise scale"):
        LaplaceMechanism(1e-300, 1e300).event  # noqa: B018 (the cost is asked before any data)
