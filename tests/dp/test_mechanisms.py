"""Tests of the noise mechanisms: releases, distributions, audits, attacks and bad input."""

from __future__ import annotations

import math

import numpy as np
import opendp.prelude as dp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from pymc_private.dp.audit import epsilon_lower_bound
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
from pymc_private.dp.noise import (
    FLOAT_SAMPLER_SCALE_LIMIT,
    _binary_digit_plan,
    binary_digit_count,
    binary_digit_geometric,
    numpy_discrete_gaussian,
    numpy_discrete_laplace,
    saturating_add,
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


@pytest.mark.slow
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


@pytest.mark.slow
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


# --------------------------------------------------------------------------------------
# secure=False integer noise at huge scales (issue 35, item 3): numpy's geometric sampler
# saturates at 2⁶³ − 1 (noise 0 with constant probability from ~10¹⁸ grid steps) and skips
# integers well before; the counts are drawn by their binary digits above 2⁴⁰.
# --------------------------------------------------------------------------------------

HUGE_SCALES = [1e12, 2.0**46, 1e18, 1e20]
INT64_MAX = np.iinfo(np.int64).max


def _as_integers(draws: np.ndarray) -> np.ndarray:
    """Residues need exact integers: Python ints for object arrays, int64 otherwise."""
    return draws if draws.dtype == object else draws.astype(np.int64)


def _discrete_laplace_sd(scale: float) -> float:
    """The standard deviation of the discrete Laplace law ∝ e^{−|y|/b}: √(2r)/(1 − r)."""
    return math.sqrt(2.0 * math.exp(-1.0 / scale)) / -math.expm1(-1.0 / scale)


@pytest.mark.parametrize("scale", HUGE_SCALES)
@pytest.mark.parametrize("law", ["discrete_laplace", "discrete_gaussian"])
def test_numpy_integer_noise_has_exact_support_at_huge_scales(scale, law):
    generator = np.random.default_rng(35)
    if law == "discrete_laplace":
        draws = numpy_discrete_laplace(generator, scale, (100_000,))
        sd = _discrete_laplace_sd(scale)
    else:
        draws = numpy_discrete_gaussian(generator, scale, (100_000,))
        sd = scale  # N_ℤ(0, σ²) has variance σ² up to e^{−2π²σ²}
    integers = _as_integers(draws)
    # P(0) ≤ 1/scale ≤ 10⁻¹²: in 10⁵ draws a single 0 has probability ≤ 10⁻⁷. Today's
    # sampler returned 0 for 83% of discrete Laplace draws at 10²⁰.
    assert np.count_nonzero(integers == 0) == 0
    # Residues are uniform up to O(1/scale): Pearson chi-square, reject only at p < 0.001.
    # Today at 10¹⁸ 0.9% of the discrete Laplace draws were odd.
    for modulus in (2, 3):
        residues = np.bincount((integers % modulus).astype(np.int64), minlength=modulus)
        assert stats.chisquare(residues).pvalue > 1e-3, (modulus, residues)
    # The sample sd has relative sd ≈ 0.0035 (Laplace, kurtosis 6) or 0.0022 (Gaussian) at
    # n = 10⁵; 2% is over 5 of them. Today's discrete Laplace sd at 10²⁰ was 1.5% of the law's.
    assert np.std(draws.astype(np.float64)) == pytest.approx(sd, rel=0.02)


@pytest.mark.parametrize("scale", [2.0**46, 1e18])
def test_the_mechanisms_release_exact_support_noise_at_huge_scales(scale):
    # Δ₁ = 2⁵³ − 1 (the largest integer sensitivity accepted) and ε = Δ₁/b; the discrete
    # Gaussian at σ = b (today: rounded normals, which at 10¹⁸ are multiples of 128).
    sensitivity = 2**53 - 1
    laplace_noise, _ = DiscreteLaplaceMechanism(sensitivity, sensitivity / scale, secure=False)(
        np.zeros(60_000, dtype=np.int64), rng=36
    )
    gaussian = DiscreteGaussianMechanism(1.0, 1.0 / (2.0 * scale**2), 1e-6, secure=False)
    assert "discrete Gaussian" in gaussian.note
    gaussian_noise, _ = gaussian(np.zeros(60_000, dtype=np.int64), rng=36)
    for noise in (laplace_noise, gaussian_noise):
        assert noise.dtype == np.int64 and np.count_nonzero(noise == 0) == 0
        for modulus in (2, 3, 128):
            residues = np.bincount(noise % modulus, minlength=modulus)
            assert stats.chisquare(residues).pvalue > 1e-3, (modulus, residues)


def test_noisy_counts_saturate_at_the_int64_range_and_never_wrap():
    # x + Z is exact and then clipped, as OpenDP's integer samplers add (post-processing);
    # today numpy's int64 addition wrapped x = 2⁶³ − 1 plus positive noise to negative.
    top = np.full(20_000, INT64_MAX, dtype=np.int64)
    for mechanism in (
        DiscreteLaplaceMechanism(1, 1.0, secure=False),
        DiscreteGaussianMechanism(1.0, 0.5, 1e-6, secure=False),
    ):
        noisy, _ = mechanism(top, rng=37)
        assert noisy.dtype == np.int64 and np.all(noisy > 0), mechanism
        saturated = np.count_nonzero(noisy == INT64_MAX) / noisy.size
        # P(Z ≥ 0) = 1/2 + P(Z = 0)/2: 0.66 and 0.70 for these laws at scale 1.
        assert 0.6 < saturated < 0.75, (mechanism, saturated)
        bottom, _ = mechanism(-top - 1, rng=37)
        assert np.all(bottom < 0) and 0.6 < np.mean(bottom == -INT64_MAX - 1) < 0.75
    # At scale 10²⁰, from x = 2⁶³ − 1: y = 2⁶³ − 1 when Z ≥ 0 (probability ½ + O(10⁻²⁰)) and
    # y = −2⁶³ when Z ≤ −(2⁶⁴ − 1); binomial sd 0.0035 at n = 2·10⁴, tolerance 0.02.
    scale = 1e20
    for mechanism, below in (
        (DiscreteLaplaceMechanism(1, 1 / scale, secure=False), math.exp(-(2.0**64) / scale) / 2),
        (
            DiscreteGaussianMechanism(1.0, 0.5 / scale**2, 1e-6, secure=False),
            stats.norm.cdf(-(2.0**64) / scale),
        ),
    ):
        noisy, _ = mechanism(top, rng=37)
        assert np.mean(noisy == INT64_MAX) == pytest.approx(0.5, abs=0.02), mechanism
        assert np.mean(noisy == -INT64_MAX - 1) == pytest.approx(below, abs=0.02), mechanism
    exact = saturating_add(
        np.array([5, INT64_MAX - 3, -INT64_MAX], dtype=np.int64),
        np.array([-(2**70), 10, 2**64 + 1], dtype=object),
    )
    np.testing.assert_array_equal(exact, [-INT64_MAX - 1, INT64_MAX, 2**63 + 2])


def test_binary_digits_draw_the_geometric_law():
    # At b = 3.7 every digit is drawn, some through many words (2^11/b = 553): the counts
    # follow P(G = k) = (1 − r) r^k, Pearson chi-square over 25 cells, p > 0.001.
    scale = 3.7
    counts = binary_digit_geometric(np.random.default_rng(38), scale, 200_000)
    assert counts.dtype == np.int64 and counts.min() >= 0
    ratio = math.exp(-1.0 / scale)
    support = np.arange(24)
    pmf = (1.0 - ratio) * ratio**support
    observed = np.append(np.bincount(np.minimum(counts, 24), minlength=25)[:24], 0)
    observed[24] = np.count_nonzero(counts >= 24)
    expected = np.append(pmf, ratio**24) * counts.size
    assert stats.chisquare(observed, expected).pvalue > 1e-3


@pytest.mark.parametrize("scale", [2.0**40 * 1.5, 3.3e15, 1e18, 1e20, 7.7e45, 1e300])
def test_each_binary_digit_probability_is_within_two_to_the_minus_50(scale):
    """p̂_j and 1 − p̂_j against p_j = 1/(1 + e^{2^j/b}) in 60-digit arithmetic: the factor
    e^{±J·2⁻⁵⁰} of `binary_digit_geometric` and so the ε + J·2⁻⁴⁷ of `discrete_laplace`."""
    mpmath = pytest.importorskip("mpmath")
    uniform, thresholds = _binary_digit_plan(scale)
    assert len(thresholds) == binary_digit_count(scale)
    assert len(thresholds) == math.floor(math.log2(708 * scale)) + 1
    with mpmath.workdps(60):
        for digit, words in enumerate(thresholds):
            drawn = mpmath.mpf(
                sum(w << (64 * k) for k, w in enumerate(reversed(words)))
            ) / mpmath.mpf(2) ** (64 * len(words))
            exact = 1 / (1 + mpmath.exp(mpmath.mpf(2) ** digit / mpmath.mpf(scale)))
            assert abs(drawn / exact - 1) <= 2.0**-50, digit
            assert abs((1 - drawn) / (1 - exact) - 1) <= 2.0**-50, digit
            assert (drawn == mpmath.mpf(0.5)) == (digit < uniform)
        # The first digit not drawn has probability below e^{−708}.
        assert mpmath.mpf(2) ** len(thresholds) / mpmath.mpf(scale) > 708


def _huge_scale_discrete_laplace(sensitivity, epsilon):
    def run(value, rng, size):
        mechanism = DiscreteLaplaceMechanism(sensitivity, epsilon, secure=False)
        return mechanism(np.full(size, value), rng=rng)[0]

    return run


# Neighbouring counts Δ₁ = 2⁵³ − 1 apart: around 0, at the top of the int64 range (the noisy
# counts saturate there), and as floats at the largest integral float accepted, 2⁵³.
WORST_PAIRS = pytest.mark.parametrize(
    ("data", "neighbour"),
    [(0, 2**53 - 1), (INT64_MAX - (2**53 - 1), INT64_MAX), (1.0, 2.0**53)],
    ids=["centre", "int64-extreme", "float-extreme"],
)


@pytest.mark.slow
@WORST_PAIRS
def test_audit_numpy_discrete_laplace_at_a_huge_scale_stays_below_its_claim(data, neighbour):
    # Δ₁ = 2⁵³ − 1 (odd, the largest accepted) and ε = 10⁻⁴: b ≈ 9·10¹⁹, the scale of Σx² on
    # a grid of 2⁻⁵⁰. The auditor's own event and the structural events of the attack (the
    # noise is exactly 0; the parity and the residue mod 3 of y − x_data). Today: 83% zeros,
    # ε ≥ 4.2 against 10⁻⁴ (each audit sound with probability ≥ 0.95).
    sensitivity, epsilon = 2**53 - 1, 1e-4
    run = _huge_scale_discrete_laplace(sensitivity, epsilon)
    events = [
        None,
        lambda y: y == data,
        lambda y: (int(y) - int(data)) % 2 == 0,
        lambda y: (int(y) - int(data)) % 3 == 0,
    ]
    for seed, event in enumerate(events):
        result = epsilon_lower_bound(
            run, data, neighbour, n=20_000, event=event, random_seed=seed, vectorized=True
        )
        assert result.passes(epsilon), (seed, result)


@WORST_PAIRS
def test_audit_catches_the_huge_scale_discrete_laplace_under_noised_by_half(data, neighbour):
    # ε = 4 at Δ₁ = 2⁵³ − 1 is b ≈ 2.3·10¹⁵, above 2⁴⁰ (binary digits); the same mechanism at
    # half that scale is caught, the right one is not (n = 10⁴ as in the audits above).
    sensitivity, epsilon = 2**53 - 1, 4.0
    correct = epsilon_lower_bound(
        _huge_scale_discrete_laplace(sensitivity, epsilon),
        data,
        neighbour,
        n=10_000,
        random_seed=1,
        vectorized=True,
    )
    assert correct.passes(epsilon)
    under_noised = epsilon_lower_bound(
        _huge_scale_discrete_laplace(sensitivity, 2 * epsilon),
        data,
        neighbour,
        n=10_000,
        random_seed=1,
        vectorized=True,
    )
    assert under_noised.epsilon_lower_bound > epsilon


@pytest.mark.parametrize("scale", [2.0**46, 1e18, 1e20])
def test_huge_scale_noise_is_reproducible_and_its_randomness_ignores_the_data(scale):
    first = numpy_discrete_laplace(np.random.default_rng(39), scale, (3, 5))
    again = numpy_discrete_laplace(np.random.default_rng(39), scale, (3, 5))
    other = numpy_discrete_laplace(np.random.default_rng(40), scale, (3, 5))
    assert first.shape == (3, 5) and np.array_equal(first, again)
    assert not np.array_equal(first, other)
    sensitivity = 2**53 - 1
    for mechanism in (
        DiscreteLaplaceMechanism(sensitivity, sensitivity / scale, secure=False),
        DiscreteGaussianMechanism(1.0, 1.0 / (2.0 * scale**2), 1e-6, secure=False),
    ):
        states = []
        outputs = []
        for values in ([0, 0, 0], [2**62, -(2**62), 17]):
            generator = np.random.default_rng(41)
            outputs.append(mechanism(np.array(values), rng=generator)[0])
            states.append(generator.bit_generator.state)
        # The same noise whatever the values: the generator advances alike.
        assert states[0] == states[1]
        again, _ = mechanism(np.array([0, 0, 0]), rng=41)
        np.testing.assert_array_equal(outputs[0], again)


def test_seeded_draws_below_the_limit_are_numpys_samplers_unchanged():
    for scale in (0.4, 3.0, 1e6, FLOAT_SAMPLER_SCALE_LIMIT):
        success = -math.expm1(-1.0 / scale)
        reference = np.random.default_rng(42)
        expected = reference.geometric(success, size=7) - reference.geometric(success, size=7)
        np.testing.assert_array_equal(
            numpy_discrete_laplace(np.random.default_rng(42), scale, 7), expected
        )
        values = np.array([3, -4, 5], dtype=np.int64)
        noisy, _ = DiscreteGaussianMechanism(1.0, 1.0 / (2.0 * scale**2), 1e-6, secure=False)(
            values, rng=42
        )
        rounded = np.rint(np.random.default_rng(42).normal(0.0, scale, size=3)).astype(np.int64)
        np.testing.assert_array_equal(noisy, values + rounded)


def _discrete_gaussian_zero(sigma: float) -> float:
    """P(0) of N_ℤ(0, σ²) = 1/Σ_k e^{−k²/(2σ²)}."""
    if sigma > 10:
        return 1.0 / (math.sqrt(2 * math.pi) * sigma)
    k = np.arange(-200, 201)
    return 1.0 / np.exp(-(k**2) / (2 * sigma**2)).sum()


@settings(max_examples=40, deadline=None)
@given(
    exponent=st.floats(0.0, 30.0),
    shape=st.sampled_from([(2_000,), (40, 50), (2, 10, 100)]),
    law=st.sampled_from(["discrete_laplace", "discrete_gaussian"]),
)
def test_integer_noise_at_any_scale_has_its_dtype_shape_and_no_zero_saturation(
    exponent, shape, law
):
    scale = 10.0**exponent
    generator = np.random.default_rng(43)
    if law == "discrete_laplace":
        draws = numpy_discrete_laplace(generator, scale, shape)
        zero = math.tanh(0.5 / scale)  # (1 − r)/(1 + r)
        counted = scale
    else:
        draws = numpy_discrete_gaussian(generator, scale, shape)
        zero = _discrete_gaussian_zero(scale)
        counted = math.floor(scale) + 1
    big = counted > FLOAT_SAMPLER_SCALE_LIMIT and binary_digit_count(counted) > 63
    assert draws.shape == shape
    assert draws.dtype == (np.dtype(object) if big else np.dtype(np.int64))
    n = draws.size
    zeros = np.count_nonzero(_as_integers(draws) == 0)
    assert zeros <= n * zero + 6 * math.sqrt(n * zero) + 1, (scale, zeros)
    noisy, _ = (
        DiscreteLaplaceMechanism(1, 1.0 / scale, secure=False)
        if law == "discrete_laplace"
        else DiscreteGaussianMechanism(1.0, 1.0 / (2.0 * scale**2), 1e-6, secure=False)
    )(np.zeros(shape, dtype=np.int64), rng=43)
    assert noisy.shape == shape and noisy.dtype == np.int64
