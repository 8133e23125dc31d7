"""pmp.private_bounds (issue 42, part 1): clipping bounds released under their own ε, on the
ledger of the data's source, and accepted by PrivateData as its bounds."""

from __future__ import annotations

import uuid

import numpy as np
import pymc as pm
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pymc_private as pmp
from pymc_private.data.bounds import quantile_choice
from pymc_private.data.ledgers import PrivacyLedger
from pymc_private.data.records import source_dataset
from pymc_private.dp.audit import epsilon_lower_bound
from pymc_private.dp.mechanisms import ExponentialMechanism
from pymc_private.errors import BudgetExceededError, DataBoundsError, InvalidPrivacyParameterError


def _fresh_source() -> str:
    return f"test-{uuid.uuid4().hex}"


def _ledger(source: str) -> PrivacyLedger:
    return PrivacyLedger._session_view([source_dataset(source)])


# The worst pair found for the quantile's utility (q = 0.5, n = 2): under D = {0, 1} the 31
# candidates of [0, 1) sit at the median (u = 0) and the candidate 1 one rank above it; D'
# = {1, 1.5} moves the first record past 1, so those 31 drop to u = −1 and the candidate 1
# rises to u = 0 while it held little mass: P(1) moves by about e^{0.92 ε}.
GRID = np.concatenate([[-1.0], np.linspace(0.0, 0.3, 31), [1.0, 2.0]])
DATA, NEIGHBOUR = np.array([0.0, 1.0]), np.array([1.0, 1.5])


def _median(epsilon_inside: float):
    mechanism = ExponentialMechanism(1.0, epsilon_inside, secure=False)

    def run(values, rng):
        return quantile_choice(np.sort(values), GRID, 0.5, mechanism, rng, "x")[0]

    return run


def test_a_released_quantile_is_audited_at_its_claim_and_caught_at_half_the_noise():
    correct = epsilon_lower_bound(_median(1.0), DATA, NEIGHBOUR, n=20_000, random_seed=1)
    assert correct.passes(1.0)
    assert correct.epsilon_lower_bound > 0.5  # the pair is near the worst case
    halved = epsilon_lower_bound(_median(2.0), DATA, NEIGHBOUR, n=20_000, random_seed=1)
    assert halved.epsilon_lower_bound > 1.0


def test_every_candidate_stays_possible_under_both_neighbours():
    """No structural event: the exponential mechanism gives every candidate positive weight,
    whatever the data (the Gumbel-max draws of the numpy path reach all of them)."""
    run, rng = _median(1.0), np.random.default_rng(2)
    for values in (DATA, NEIGHBOUR):
        seen = {run(values, rng) for _ in range(6000)}
        assert seen == set(GRID)


def test_the_release_is_charged_to_the_source_and_composes_with_what_follows():
    source = _fresh_source()
    rng = np.random.default_rng(3)
    x = np.column_stack([np.clip(rng.normal(45, 12, 4000), 18, 95), rng.integers(0, 5, 4000)])
    grid = np.arange(-10.0, 131.0)
    bounds = pmp.private_bounds(x, 4.0, grid=grid, source=source, secure=False, random_seed=4)
    spent = _ledger(source).releases
    assert len(spent) == 4 and all(r.epsilon == pytest.approx(1.0) for r in spent)
    assert bounds.epsilon == pytest.approx(4.0) and _ledger(source).epsilon() == pytest.approx(4.0)
    lower, upper = bounds
    assert lower.shape == upper.shape == (2,) and np.all(lower <= upper)
    assert 10 <= lower[0] <= 22 and 68 <= upper[0] <= 80  # the 1% and 99% quantiles: 18, 73
    assert lower[1] <= 0 and upper[1] >= 4
    with pm.Model() as model:
        pmp.PrivateData("x_obs", x, bounds=bounds, source=source, out_of_bounds="clip")
    assert pmp.ledger_for(model).epsilon() == pytest.approx(4.0)  # the bounds' ledger


def test_private_data_takes_released_bounds_only_with_their_source_and_clipping():
    source = _fresh_source()
    ages = np.clip(np.random.default_rng(5).normal(45, 12, 500), 18, 95)
    bounds = pmp.private_bounds(ages, 1.0, grid=np.arange(131.0), source=source)
    with pm.Model():
        with pytest.raises(DataBoundsError, match=f"source='{source}'"):
            pmp.PrivateData("a", ages, bounds=bounds, out_of_bounds="clip")
        with pytest.raises(DataBoundsError, match="out_of_bounds='clip'"):
            pmp.PrivateData("b", ages, bounds=bounds, source=source)


def test_a_budget_is_checked_before_anything_is_released():
    source = _fresh_source()
    values = np.arange(100.0)
    with pytest.raises(BudgetExceededError):
        pmp.private_bounds(
            values, 2.0, grid=np.arange(101.0), source=source, budget=pmp.Budget(1.0)
        )
    assert len(_ledger(source).releases) == 0


def _refused(monkeypatch, error, values, **arguments):
    """The call raises ``error`` before any noise is drawn, and nothing is recorded."""
    source = arguments.pop("source", None) or _fresh_source()

    def no_noise(*_, **__):
        raise AssertionError("noise drawn")

    monkeypatch.setattr(ExponentialMechanism, "__call__", no_noise)
    keywords = {"grid": np.arange(11.0), "source": source, **arguments}
    epsilon = keywords.pop("epsilon", 1.0)
    with pytest.raises(error):
        pmp.private_bounds(values, epsilon, **keywords)
    if isinstance(source, str):
        assert len(_ledger(source).releases) == 0


@pytest.mark.parametrize("epsilon", [0.0, -1.0, float("nan"), float("inf")])
def test_epsilon_must_be_positive_and_finite(monkeypatch, epsilon):
    _refused(monkeypatch, InvalidPrivacyParameterError, np.ones(5), epsilon=epsilon)


@pytest.mark.parametrize(
    "grid",
    [[1.0], [2.0, 1.0], [0.0, np.nan], [[0.0, 1.0]], "ab", [0.0, 0.0, 1.0]],
)
def test_a_grid_that_is_not_sorted_finite_candidates_is_refused(monkeypatch, grid):
    _refused(monkeypatch, InvalidPrivacyParameterError, np.ones(5), grid=grid)


@pytest.mark.parametrize("grid", [[0.0, 0.5, 1.0], [0.0, 300.0], [-200.0, 0.0]])
def test_a_grid_the_integer_type_cannot_hold_is_refused(monkeypatch, grid):
    values = np.zeros(5, dtype=np.int8)
    _refused(monkeypatch, InvalidPrivacyParameterError, values, grid=grid)


@pytest.mark.parametrize("quantiles", [(0.0, 0.9), (0.5, 0.5), (0.9, 0.1), (0.1, 1.0), (0.1,)])
def test_quantiles_must_be_increasing_inside_the_unit_interval(monkeypatch, quantiles):
    _refused(monkeypatch, InvalidPrivacyParameterError, np.ones(5), quantiles=quantiles)


@pytest.mark.parametrize("source", [None, "", 3])
def test_a_source_is_required(monkeypatch, source):
    def no_noise(*_, **__):
        raise AssertionError("noise drawn")

    monkeypatch.setattr(ExponentialMechanism, "__call__", no_noise)
    with pytest.raises(InvalidPrivacyParameterError):
        pmp.private_bounds(np.ones(5), 1.0, grid=np.arange(3.0), source=source)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.just(float("nan"))),
        min_size=1,
        max_size=20,
    )
)
def test_values_that_are_not_finite_numbers_are_refused_before_any_noise(values):
    source = _fresh_source()
    array = np.array(values)
    if np.all(np.isfinite(array)):
        bounds = pmp.private_bounds(
            array, 1.0, grid=np.arange(11.0), source=source, secure=False, random_seed=0
        )
        assert bounds[0] <= bounds[1] and len(_ledger(source).releases) == 2
        return
    with pytest.raises(DataBoundsError, match="NaN or infinite"):
        pmp.private_bounds(array, 1.0, grid=np.arange(11.0), source=source)
    assert len(_ledger(source).releases) == 0


@pytest.mark.parametrize(
    "values", [np.array([]), np.array(["a", "b"]), np.ma.masked_array([1.0, 2.0], [0, 1])]
)
def test_empty_text_or_masked_values_are_refused(monkeypatch, values):
    _refused(monkeypatch, DataBoundsError, values)


# --- the attacker's review (issue 42): each finding, fixed ---------------------------------


def test_the_same_records_declared_without_the_source_are_charged_the_bounds():
    """Records whose bounds were released are linked to the source for the session: a model
    of the same records without source=, with public bounds or with the released ones as
    plain numbers, sees the bounds' ε and its budget counts it."""
    source = _fresh_source()
    x = np.round(np.random.default_rng(8).normal(50, 10, 300), 1)
    bounds = pmp.private_bounds(x, 1.0, grid=np.arange(101.0), source=source)
    with pm.Model() as raw:
        pmp.PrivateData("x", x, bounds=(-1000.0, 1000.0))
    with pm.Model() as clipped:
        pmp.PrivateData("x", x, bounds=tuple(bounds), out_of_bounds="clip")
    for model in (raw, clipped):
        assert pmp.ledger_for(model).epsilon() == pytest.approx(1.0)


def test_a_ledger_file_opened_for_the_source_is_charged_and_its_budget_checked(tmp_path):
    source = _fresh_source()
    x = np.arange(200.0)
    path = tmp_path / "survey.ledger"
    pmp.PrivacyLedger.open(path, pmp.Budget(1.0), source=source)
    pmp.private_bounds(x, 0.6, grid=np.arange(201.0), source=source)
    assert pmp.PrivacyLedger.open(path).epsilon() == pytest.approx(0.6)
    with pytest.raises(BudgetExceededError):
        pmp.private_bounds(x, 0.6, grid=np.arange(201.0), source=source)
    assert pmp.PrivacyLedger.open(path).epsilon() == pytest.approx(0.6)


def test_the_utility_moves_by_exactly_one_in_float64():
    """q·n is rounded to a dyadic target, so r − t is exact: at n = 999,983 and q = 0.3 the
    utility of q·n itself moved by 1 + 2⁻³⁴ when one record was replaced."""
    captured = []

    def capture(scores, rng=None, statistic=None):
        captured.append(np.asarray(scores))
        return 0, None

    n = 999_983
    data = np.arange(n, dtype=np.float64)
    neighbour = data.copy()
    neighbour[0] = n + 10.0  # the smallest record replaced by one above every candidate
    grid = np.linspace(-1.0, n + 1.0, 4001)
    for values in (data, neighbour):
        quantile_choice(np.sort(values), grid, 0.3, capture, None, "x")
    assert np.abs(captured[0] - captured[1]).max() == 1.0


def test_released_bounds_are_read_only():
    bounds = pmp.private_bounds(np.arange(50.0), 1.0, grid=np.arange(51.0), source=_fresh_source())
    with pytest.raises(AttributeError):
        bounds.source = "other"
    with pytest.raises(AttributeError):
        del bounds.epsilon


def test_the_grid_is_checked_before_any_value_is_read(monkeypatch):
    values = np.array([1.0, np.nan])
    _refused(monkeypatch, InvalidPrivacyParameterError, values, grid=[2.0, 1.0])
    _refused(monkeypatch, DataBoundsError, np.zeros((5, 0)))


def test_the_released_arrays_cannot_be_edited_in_place():
    """The second review: with records of two columns, the bound arrays were writable views."""
    values = np.column_stack([np.arange(100.0), np.arange(100.0)])
    bounds = pmp.private_bounds(values, 1.0, grid=np.arange(101.0), source=_fresh_source())
    with pytest.raises(ValueError, match="read-only"):
        bounds[0][1] = 12.3


def test_one_file_opened_through_a_link_is_charged_once(tmp_path):
    """The second review: the same file opened by its path and through a symbolic link was
    noted twice, and private_bounds locked it twice (a hang)."""
    source = _fresh_source()
    path = tmp_path / "c.ledger"
    pmp.PrivacyLedger.open(path, pmp.Budget(2.0), source=source)
    (tmp_path / "link.ledger").symlink_to(path)
    (tmp_path / "link.ledger.commit").symlink_to(tmp_path / "c.ledger.commit")
    pmp.PrivacyLedger.open(tmp_path / "link.ledger", source=source)
    pmp.private_bounds(np.arange(30.0), 0.5, grid=np.arange(31.0), source=source)
    assert pmp.PrivacyLedger.open(path).epsilon() == pytest.approx(0.5)


def test_a_uint64_grid_beyond_what_float64_holds_exactly_is_refused(monkeypatch):
    values = np.arange(10, dtype=np.uint64)
    _refused(monkeypatch, InvalidPrivacyParameterError, values, grid=[0.0, 2.0**62, 2.0**64])
