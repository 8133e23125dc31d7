"""The grid exponential mechanism of `pymc_private.conditionals.exact`: data-independent output
support,
the exact privacy loss of the selection against the claim, and the float allowance against
the actual rounding of the scores.

The neighbouring pairs are the audit's (scenario 1 of the security issue) and boundary
pairs: records at the declared bounds, priors whose supports put the grid's end cells at
the bounds, tempered and untempered posteriors.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pymc as pm
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from pymc_private.analysis.core import analyze
from pymc_private.conditionals.exact import IntervalNumber
from pymc_private.data.declaration import PrivateData
from pymc_private.dp.checks import checked_cells
from pymc_private.errors import InvalidPrivacyParameterError, UnsupportedModelError
from pymc_private.priors.distributions import (
    TruncatedBeta,
    TruncatedDirichlet,
    TruncatedGamma,
    TruncatedMvNormal,
    TruncatedNormal,
)
from pymc_private.steps.gibbs import PrivateGibbs

U = 2.0**-53


def bernoulli(ones: int, n: int = 20, a: float = 0.05):
    y = np.array([1] * ones + [0] * (n - ones))
    with pm.Model() as model:
        y_obs = PrivateData("y_obs", y, bounds=(0, 1))
        p = TruncatedBeta("p", 1, 1, lower=a, upper=1 - a)
        pm.Bernoulli("y", p, observed=y_obs)
    return model


def poisson(counts):
    with pm.Model() as model:
        k_obs = PrivateData("k_obs", np.asarray(counts), bounds=(0, 10))
        lam = TruncatedGamma("lam", 2.0, 1.0, lower=0.5, upper=8.0)
        pm.Poisson("k", lam, observed=k_obs)
    return model


def normal(values):
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", np.asarray(values, dtype=float), bounds=(-2.0, 2.0))
        mu = TruncatedNormal("mu", 0.0, 3.0, lower=-1.0, upper=1.0)
        pm.Normal("x", mu, 0.5, observed=x_obs)
    return model


def categorical(labels):
    with pm.Model() as model:
        c_obs = PrivateData("c_obs", np.asarray(labels), bounds=(0, 2))
        p = TruncatedDirichlet("p", a=np.ones(3), min_prob=0.1)
        pm.Categorical("c", p, observed=c_obs)
    return model


def one_block(model, temperature=1.0, cells=1024, secure=False):
    with model:
        step = PrivateGibbs(temperature=temperature, cells=cells, secure=secure)
    (block,) = step.blocks
    return step, block, step._grids[block.name]


def cell_law(step, block, grid):
    """The exact law of the selection: softmax of the step's own float scores, per entry."""
    posterior = block.posterior(step._statistics, {}, Fraction(step.temperature), exact=True)
    return [special.softmax(scores) for scores in grid.scores(posterior)]


# Scenario 1: D = 7 ones, D' = 8 ones of n = 20, TruncatedBeta(1, 1, 0.05, 0.95), T = 1000.
PAIRS = {
    "beta": (lambda: bernoulli(7), lambda: bernoulli(8), 1000.0),
    "beta at the bounds": (lambda: bernoulli(0), lambda: bernoulli(1), 1.0),
    "gamma": (lambda: poisson([0] * 12), lambda: poisson([0] * 11 + [10]), 1.0),
    "normal": (lambda: normal([-2.0] * 8), lambda: normal([-2.0] * 7 + [2.0]), 3.0),
    "dirichlet": (lambda: categorical([0] * 15), lambda: categorical([0] * 14 + [2]), 1.0),
}


def _old_inverse_cdf(a, b, lower, upper, uniforms):
    """Today's former sampler: θ = F⁻¹(F(lower) + U·mass) with U = k·2⁻⁵³."""
    low, high = special.betainc(a, b, lower), special.betainc(a, b, upper)
    return special.betaincinv(a, b, low + uniforms * (high - low)), low, high - low


def _possible_under(theta, a, b, lower, upper) -> bool:
    """Whether the former sampler could output ``theta`` under Beta(a, b): some k with
    F⁻¹(F(lower) + k·2⁻⁵³·mass) == theta (the k are searched around the inverse)."""
    low, high = special.betainc(a, b, lower), special.betainc(a, b, upper)
    centre = round((special.betainc(a, b, theta) - low) / (high - low) / U)
    ks = np.arange(centre - 64, centre + 65)
    return bool(np.any(special.betaincinv(a, b, low + ks * U * (high - low)) == theta))


def test_inverse_cdf_draws_had_outputs_impossible_under_the_neighbour():
    """The structural event of scenario 1 on the former sampler: outputs under D that the
    sampler can never produce under D' (ε = ∞ as implemented)."""
    rng = np.random.default_rng(2026)
    alpha, beta = 1 + 7 / 1000, 1 + 13 / 1000
    draws, _, _ = _old_inverse_cdf(alpha, beta, 0.05, 0.95, rng.random(400))
    neighbour = (1 + 8 / 1000, 1 + 12 / 1000)
    impossible = sum(not _possible_under(t, *neighbour, 0.05, 0.95) for t in draws)
    assert impossible > 40


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_every_grid_output_is_possible_under_both_data_sets(pair):
    """The new mechanism's structural event has probability 0: every cell has positive
    probability under D and under D', and the value released for a cell depends on the cell
    and the generator only (the same function for both data sets)."""
    build, neighbour, temperature = PAIRS[pair]
    laws = []
    for make in (build, neighbour):
        step, block, grid = one_block(make(), temperature)
        laws.append(cell_law(step, block, grid))
    for first, second in zip(*laws, strict=True):
        assert first.min() > 0 and second.min() > 0
    cells = np.array([law.argmax() for law in laws[0]])[None]
    first = grid.values(cells, np.random.default_rng(3))
    second = grid.values(cells, np.random.default_rng(3))
    np.testing.assert_array_equal(first, second)


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_exact_privacy_loss_of_the_selection_is_within_the_claim(pair):
    """max over cells of |log P_D(k) − log P_D'(k)|, computed from the exact softmax of the
    scores as implemented, never exceeds the step's per-draw ε (2L/T + allowance)."""
    build, neighbour, temperature = PAIRS[pair]
    (step, block, grid), (other, *_) = (
        one_block(build(), temperature),
        one_block(neighbour(), temperature),
    )
    first = cell_law(step, block, grid)
    second = cell_law(other, other.blocks[0], other._grids[block.name])
    loss = sum(np.abs(np.log(p) - np.log(q)).max() for p, q in zip(first, second, strict=True))
    assert loss <= step.privacy_epsilon_per_draw
    lipschitz = analyze(build()).block_lipschitz[block.name]
    assert step.privacy_epsilon_per_draw == pytest.approx(2 * lipschitz / temperature)


@pytest.mark.slow
@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_float_allowance_bounds_the_actual_rounding_of_the_scores(pair):
    """Each float score against the same score in exact rational arithmetic (features as the
    floats they are): the largest error is within the per-entry bound the allowance sums."""
    build, _, temperature = PAIRS[pair]
    step, block, grid = one_block(build(), temperature)
    posterior = block.posterior(step._statistics, {}, Fraction(step.temperature), exact=True)
    exact_coefficients = _exact_coefficients(grid, posterior)
    (scores,) = grid.scores(posterior)
    features = grid.grids[0].features
    weights = grid.grids[0].log_weights
    worst = Fraction(0)
    for k in range(0, len(scores), max(1, len(scores) // 64)):
        exact = sum(
            (c * Fraction(float(f)) for c, f in zip(exact_coefficients, features[k], strict=True)),
            Fraction(float(weights[k])),
        )
        worst = max(worst, abs(Fraction(float(scores[k])) - exact))
    entries = grid.grid_of.size
    assert 0 < 4 * worst * entries <= Fraction(grid.allowance)


def _exact_coefficients(grid, posterior):
    centre = Fraction(float(grid.centres[0]))
    return [
        Fraction(np.ravel(np.asarray(c, dtype=object))[0])
        for c in grid.family.grid_coefficients(posterior, centre)
    ]


def test_scenario_one_through_pmp_sample_uses_the_grid_mechanism():
    """PrivateGibbs(temperature=1000) on scenario 1 charges 2L/T + allowance and draws
    every value inside the support, off the cell edges."""
    import pymc_private as pmp

    model = bernoulli(7)
    with model:
        idata = pmp.sample(
            50,
            step=pmp.PrivateGibbs(temperature=1000.0, secure=False),
            chains=1,
            cores=1,
            progressbar=False,
        )
    draws = idata.posterior["p"].values.ravel()
    assert draws.min() > 0.05 and draws.max() < 0.95
    claimed = 2 * math.log(19) / 1000
    per_draw = idata.sample_stats["privacy_epsilon"].values
    assert np.all(per_draw > claimed) and np.all(per_draw < claimed * (1 + 1e-9))


def test_regression_weights_on_raw_data_are_refused_with_the_routes():
    rng = np.random.default_rng(0)
    with pm.Model():
        x_obs = PrivateData("x_obs", rng.uniform(-1, 1, (20, 2)), bounds=(-1.0, 1.0))
        y_obs = PrivateData("y_obs", rng.uniform(-1, 1, 20), bounds=(-1.0, 1.0))
        w = TruncatedMvNormal("w", np.zeros(2), np.eye(2), radius=1.0)
        pm.Normal("y", x_obs @ w, 1.0, observed=y_obs)
        with pytest.raises(UnsupportedModelError, match=r"`w`.*PrivateMetropolis"):
            PrivateGibbs()


@pytest.mark.parametrize("cells", [0, 1, 65_537, 2.5, True, "10", None])
def test_invalid_cells_are_refused_before_the_model_is_read(cells):
    with pytest.raises(InvalidPrivacyParameterError, match="cells must be an integer"):
        checked_cells(cells)
    with bernoulli(3), pytest.raises(InvalidPrivacyParameterError, match="cells must be"):
        PrivateGibbs(cells=cells)


@pytest.mark.parametrize("cells", [2, 16, 1024])
def test_dirichlet_lattice_has_at_most_cells_points_inside_the_truncated_simplex(cells):
    step, _, grid = one_block(categorical([0, 1, 2]), cells=cells)
    points = grid.grids[0].points
    assert 1 <= len(points) <= cells
    assert points.min() > 0.1
    np.testing.assert_allclose(points.sum(axis=1), 1.0)
    assert step.privacy_epsilon_per_draw > 0


@settings(max_examples=200, deadline=None)
@given(
    a=st.tuples(st.integers(-20, 20), st.integers(0, 20)),
    b=st.tuples(st.integers(-20, 20), st.integers(0, 20)),
    x=st.integers(-20, 20),
    y=st.integers(-20, 20),
    operation=st.sampled_from(["+", "-", "*", "/"]),
)
def test_interval_arithmetic_contains_every_result(a, b, x, y, operation):
    """IntervalNumber is a sound enclosure: the result of an operation on members of two
    intervals lies in the interval the operation returns."""
    first = IntervalNumber(a[0], a[0] + a[1])
    second = IntervalNumber(b[0], b[0] + b[1])
    member_x = Fraction(min(max(x, a[0]), a[0] + a[1]))
    member_y = Fraction(min(max(y, b[0]), b[0] + b[1]))
    if operation == "/" and second.lower <= 0 <= second.upper:
        with pytest.raises(ZeroDivisionError):
            first / second
        return
    result = {"+": first + second, "-": first - second, "*": first * second}.get(operation)
    value = {"+": member_x + member_y, "-": member_x - member_y, "*": member_x * member_y}.get(
        operation
    )
    if operation == "/":
        result, value = first / second, member_x / member_y
    assert result.lower <= value <= result.upper


def test_interval_numbers_of_numpy_integers_do_not_wrap():
    """Fraction keeps a numpy integer as its numerator, whose products wrap at 2⁶³:
    Fraction(np.int64(3001)) * Fraction(1.3) was −194.7."""
    product = IntervalNumber(np.int64(3001)) * Fraction(1.3)
    assert product.lower == product.upper == 3001 * Fraction(1.3)
