"""Likelihood families: L against brute force, Δ₁ by enumeration, tempered conjugate updates
and the log-likelihood from statistics against scipy.

The terms are built by hand (no model, no compilation): each test states the box, the domain
and the hand-derived value.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from pymc_private.errors import DataBoundsError, UnsupportedModelError
from pymc_private.families.likelihood import LikelihoodTerm
from pymc_private.families.registry import FAMILIES, find_family
from pymc_private.families.regression import NormalLinearRegression
from pymc_private.families.statistics import (
    ElementDomain,
    Interval,
    ParameterTerm,
    complete_statistic,
    data_grid,
)
from pymc_private.families.univariate import (
    Bernoulli,
    Binomial,
    Categorical,
    Exponential,
    NormalFreeSigma,
    NormalKnownSigma,
    Poisson,
)


def free(name, lower, upper, *, shape=(), variable=None, link="identity", group_by=None):
    variable = variable or name
    return ParameterTerm(
        name=name,
        interval=Interval(lower, upper),
        shape=shape,
        free_variables=(variable,),
        varies_with_record=group_by is not None,
        free_variable=variable,
        link=link,
        group_by=group_by,
    )


def constant(name, value):
    value = np.asarray(value, dtype=float)
    return ParameterTerm(
        name=name,
        interval=Interval(float(value.min()), float(value.max())),
        shape=value.shape,
        constant=value,
    )


def grid(domain, record_shape=(), n=10):
    """The data grid of a record of ``record_shape`` elements, all on ``domain``."""
    lower = np.full(record_shape, domain.lower)
    upper = np.full(record_shape, domain.upper)
    return data_grid(lower, upper, n, integer=domain.integer)


def term(family, parameters, domain, *, n=10, record_shape=(), group=None, **kwargs):
    count = int(np.prod(record_shape))
    kwargs.setdefault("grid", grid(domain, record_shape, n))
    extra = {}
    if group is not None:
        index, n_groups = group
        extra = dict(
            group_by=index,
            n_groups=n_groups,
            group_domain=ElementDomain(0.0, n_groups - 1.0, True),
        )
    return LikelihoodTerm(
        node="obs",
        family=family,
        data="x_obs",
        record_shape=record_shape,
        domains=((domain, count),),
        parameters=parameters,
        n=n,
        **extra,
        **kwargs,
    )


def brute_range(log_likelihood, xs, thetas, varying):
    """sup over a grid of θ of the range over xs (fixed), or the joint range (varying)."""
    table = log_likelihood(xs[:, None], thetas[None, :])
    if varying:
        return table.max() - table.min()
    return float(np.max(table.max(axis=0) - table.min(axis=0)))


# -- L of one element ---------------------------------------------------------------------


@pytest.mark.parametrize("a", [0.01, 0.05, 0.2])
@pytest.mark.parametrize("varying", [False, True])
def test_bernoulli_range_is_log_odds_of_the_truncation(a, varying):
    p = free("p", a, 1 - a, group_by="g" if varying else None)
    value = Bernoulli().log_likelihood_range({"p": p}, ElementDomain(0, 1, True))
    assert value == pytest.approx(math.log((1 - a) / a), rel=1e-12)


def test_bernoulli_range_on_an_untruncated_prior_is_infinite():
    p = free("p", 0.0, 1.0)
    assert Bernoulli().log_likelihood_range({"p": p}, ElementDomain(0, 1, True)) == math.inf


@pytest.mark.parametrize(("k", "a"), [(2, 0.1), (3, 0.05), (5, 0.02)])
def test_categorical_range_with_min_prob(k, a):
    """Every p_k ∈ [a, 1 − (K−1)a]: L = ln((1 − (K−1)a)/a)."""
    p = free("p", a, 1 - (k - 1) * a, shape=(k,))
    family = Categorical()
    domain = family.support({"p": p})
    assert (domain.lower, domain.upper) == (0.0, k - 1.0)
    expected = math.log((1 - (k - 1) * a) / a)
    assert family.log_likelihood_range({"p": p}, domain) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(("c1", "c2", "k"), [(0.5, 4.0, 5), (1.0, 2.0, 10), (3.0, 9.0, 2)])
def test_poisson_range_by_enumeration(c1, c2, k):
    """Fixed λ: enumerate x ∈ {0..K} at λ ∈ {c1, c2} (a dense λ grid agrees exactly, as the
    range is convex in log λ); varying λ: the joint range, maximal at λ = x clipped."""
    lam_fixed = free("mu", c1, c2)
    lam_varying = free("mu", c1, c2, group_by="g")
    domain = ElementDomain(0, k, True)
    xs = np.arange(k + 1.0)

    def ell(x, lam):
        return stats.poisson.logpmf(x, lam)

    by_hand = max(ell(xs, lam).max() - ell(xs, lam).min() for lam in (c1, c2))
    grid = np.linspace(c1, c2, 20001)
    fixed = Poisson().log_likelihood_range({"mu": lam_fixed}, domain)
    assert fixed == pytest.approx(by_hand, rel=1e-12)
    assert fixed == pytest.approx(brute_range(ell, xs, grid, False), rel=1e-12)
    varying = Poisson().log_likelihood_range({"mu": lam_varying}, domain)
    brute = brute_range(ell, xs, grid, True)
    assert brute <= varying + 1e-12
    assert varying == pytest.approx(brute, abs=1e-6)


@pytest.mark.parametrize(("m", "a", "b"), [(1, 0.1, 0.9), (5, 0.2, 0.6), (12, 0.05, 0.5)])
def test_binomial_range_by_enumeration(m, a, b):
    trials = constant("n", m)
    xs = np.arange(m + 1.0)
    grid = np.linspace(a, b, 20001)

    def ell(x, p):
        return stats.binom.logpmf(x, m, p)

    family = Binomial()
    domain = family.support({"n": trials, "p": free("p", a, b)})
    assert (domain.lower, domain.upper) == (0.0, float(m))
    fixed = family.log_likelihood_range({"n": trials, "p": free("p", a, b)}, domain)
    assert fixed == pytest.approx(brute_range(ell, xs, grid, False), rel=1e-12)
    varying = family.log_likelihood_range({"n": trials, "p": free("p", a, b, group_by="g")}, domain)
    assert varying == pytest.approx(brute_range(ell, xs, grid, True), abs=1e-6)


@pytest.mark.parametrize(("c1", "c2", "big_b"), [(0.5, 4.0, 3.0), (0.1, 1.0, 10.0)])
def test_exponential_range_is_c2_times_b(c1, c2, big_b):
    """x ∈ [0, B], λ ∈ [c1, c2]: L = c2·B (Dimitrakakis et al. 2017, Lemma 19)."""
    scale = free("scale", 1 / c2, 1 / c1, variable="lam", link="reciprocal")
    value = Exponential().log_likelihood_range({"scale": scale}, ElementDomain(0, big_b, False))
    assert value == pytest.approx(c2 * big_b, rel=1e-12)


@pytest.mark.slow
def test_normal_known_sigma_range_by_hand():
    """μ ∈ [−0.5, 3], σ = 2, x ∈ [−1, 2]: at μ = 3 the squared distances span [1, 16], at
    μ = −0.5 [0, 6.25]; L = 15/(2·4) = 1.875."""
    parameters = {"mu": free("mu", -0.5, 3.0), "sigma": constant("sigma", 2.0)}
    value = NormalKnownSigma().log_likelihood_range(parameters, ElementDomain(-1, 2, False))
    assert value == pytest.approx(15 / 8, rel=1e-12)
    xs = np.linspace(-1, 2, 3001)
    grid = np.linspace(-0.5, 3.0, 3501)
    brute = brute_range(lambda x, m: stats.norm.logpdf(x, m, 2.0), xs, grid, False)
    assert value == pytest.approx(brute, rel=1e-9)


def test_normal_free_sigma_varying_range_against_a_grid():
    """μ and σ indexed by a private group: the joint range over (x, μ, σ)."""
    parameters = {
        "mu": free("mu", -1.0, 1.0, group_by="g"),
        "sigma": free("sigma", 0.5, 2.0, variable="tau", link="inverse_sqrt", group_by="g"),
    }
    value = NormalFreeSigma().log_likelihood_range(parameters, ElementDomain(0, 3, False))
    x, m, s = np.meshgrid(
        np.linspace(0, 3, 121), np.linspace(-1, 1, 81), np.linspace(0.5, 2, 121), indexing="ij"
    )
    table = stats.norm.logpdf(x, m, s)
    brute = table.max() - table.min()
    assert brute <= value + 1e-12
    assert value == pytest.approx(brute, rel=1e-3)


def test_normal_sigma_near_zero_is_unbounded():
    parameters = {"mu": free("mu", 0.0, 1.0), "sigma": free("sigma", 0.0, math.inf)}
    family = NormalFreeSigma()
    assert family.log_likelihood_range(parameters, ElementDomain(0, 1, False)) == math.inf


# -- Δ₁ by enumeration ----------------------------------------------------------------------


def on_grid(t, x):
    """The data as the statistics see it: each value at its point of the term's grid."""
    return t.grid.quantize(x) * t.grid.quantum


def natural(specs, arrays):
    """The statistics of ``arrays`` by kind, in natural units."""
    return {s.kind: s.natural(s.compute(arrays)) for s in specs}


def released_vector(specs, arrays):
    """The released statistics in natural units (grid steps times the grid's unit)."""
    return np.concatenate([np.ravel(spec.natural(spec.compute(arrays))) for spec in specs])


def enumerated_sensitivity(specs, records):
    """max over pairs of one-record data sets of ‖s(D) − s(D')‖₁ (= sup over neighbours)."""
    vectors = [released_vector(specs, arrays) for arrays in records]
    return max(np.abs(u - v).sum() for u, v in itertools.combinations(vectors, 2))


@pytest.mark.parametrize("k", [2, 3, 4])
def test_categorical_counts_sensitivity_by_enumeration(k):
    """Ungrouped counts with category 0 derived: Δ₁ = 1 for K = 2, 2 for K ≥ 3."""
    parameters = {"p": free("p", 0.05, 0.5, shape=(k,))}
    specs = Categorical().statistics(term(Categorical(), parameters, ElementDomain(0, k - 1, True)))
    claimed = sum(s.sensitivity_l1 for s in specs)
    records = [{"x_obs": np.array([x])} for x in range(k)]
    assert claimed == enumerated_sensitivity(specs, records) == (1.0 if k == 2 else 2.0)
    assert all(s.unit == 1.0 and s.compute(records[0]).dtype == np.int64 for s in specs)


def test_grouped_poisson_sums_sensitivity_by_enumeration():
    """Σ x per group plus the group sizes: a record (g, x) → (g', x') with x ∈ {0..3} and
    three groups changes the sums by ≤ 2·3 and the released group sizes by ≤ 2."""
    parameters = {"mu": free("mu", 0.5, 4.0, shape=(3,), group_by="g")}
    t = term(Poisson(), parameters, ElementDomain(0, 3, True), group=("g", 3))
    specs = (t.totals_statistic(), *Poisson().statistics(t))
    assert [s.name for s in specs] == ["counts(g)", "sum(x_obs | g)"]
    records = [{"g": np.array([g]), "x_obs": np.array([x])} for g in range(3) for x in range(4)]
    claimed = sum(s.sensitivity_l1 for s in specs)
    assert claimed == enumerated_sensitivity(specs, records) == 8.0


def test_normal_free_sigma_sensitivity_bounds_the_enumerated_one():
    """Σx and Σx² on x ∈ [−1, 2]: 3 + 4 = 7 claimed (sum of the two), ≥ the joint sup; both
    exact integers on the grid of step 2⁻²⁴ (the largest bound, 2, over 2²⁵ steps)."""
    parameters = {
        "mu": free("mu", -1.0, 1.0),
        "sigma": free("sigma", 0.5, 2.0, variable="tau", link="inverse_sqrt"),
    }
    specs = NormalFreeSigma().statistics(
        term(NormalFreeSigma(), parameters, ElementDomain(-1, 2, False))
    )
    claimed = sum(s.sensitivity_l1 for s in specs)
    records = [{"x_obs": np.array([x])} for x in np.linspace(-1, 2, 61)]
    assert claimed == 7.0
    assert enumerated_sensitivity(specs, records) <= claimed
    q = 2.0**-24
    assert [(s.unit, s.sensitivity) for s in specs] == [(q, 3 * 2**24), (q * q, 4 * 2**48)]
    assert all(s.compute(records[5]).dtype == np.int64 for s in specs)


def _normal_statistics(lower, upper, n, *, grouped=False):
    parameters = {
        "mu": free(
            "mu", -1.0, 1.0, shape=(2,) if grouped else (), group_by="g" if grouped else None
        ),
        "sigma": free("sigma", 0.5, 2.0, variable="tau", link="inverse_sqrt"),
    }
    domain = ElementDomain(lower, upper, False)
    t = term(NormalFreeSigma(), parameters, domain, n=n, group=("g", 2) if grouped else None)
    return NormalFreeSigma().statistics(t)


def _edge_values(lower, upper):
    """Floats a record can take inside [lower, upper], extremes first."""
    inside = [
        lower,
        upper,
        math.nextafter(lower, math.inf),
        math.nextafter(upper, -math.inf),
        0.5 * (lower + upper),
    ]
    if lower <= 0.0 <= upper:
        inside += [0.0, -0.0, 5e-324, -5e-324]
    return [v for v in inside if lower <= v <= upper]


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    centre=st.sampled_from([0.0, 1.0, -3.5, 1e3, -2e6, 1e9]),
    width=st.sampled_from([1e-3, 1.0, 7.0, 1e4]),
    n=st.integers(2, 400),
    grouped=st.booleans(),
    data=st.data(),
)
def test_float_statistics_move_by_at_most_their_sensitivity_as_computed(
    centre, width, n, grouped, data
):
    """docs: privacy-model-floats, and the float-sum attack (Casacuberta et al. 2022): for any
    data set of n records inside the bounds and any neighbour, the statistics *as computed*
    move by at most their stated sensitivity, in exact integer steps."""
    lower, upper = centre - width / 2, centre + width / 2
    try:
        specs = _normal_statistics(lower, upper, n, grouped=grouped)
    except DataBoundsError:
        # Only when the grid (≤ 2²⁵ steps up to the largest bound) cannot resolve the range.
        assert width / max(abs(lower), abs(upper)) < 2.0**-13
        return
    edges = _edge_values(lower, upper)
    values = st.one_of(st.sampled_from(edges), st.floats(lower, upper))
    rows = data.draw(st.lists(values, min_size=n, max_size=n))
    x = np.array(rows)
    changed = x.copy()
    row = data.draw(st.integers(0, n - 1))
    changed[row] = data.draw(values)
    arrays, neighbour = {"x_obs": x}, {"x_obs": changed}
    if grouped:
        groups = np.array(data.draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
        moved = groups.copy()
        moved[row] = data.draw(st.integers(0, 1))
        arrays["g"], neighbour["g"] = groups, moved
    for spec in specs:
        first, second = spec.compute(arrays), spec.compute(neighbour)
        assert first.dtype == second.dtype == np.int64
        moved_by = int(np.abs(first.astype(object) - second.astype(object)).sum())
        assert moved_by <= spec.sensitivity


def test_bounds_too_narrow_for_their_magnitude_are_refused_up_front():
    """The attack of the audit: bounds (1e15, 1e15 + 1), n = 1000, moved a float Σx by 128
    with Δ₁ = 1. A grid that resolves the range cannot hold n such values exactly in int64,
    so the statistics are refused from the declaration alone, whatever the data."""
    with pytest.raises(DataBoundsError, match=r"too coarse for its declared range.*Recentre"):
        _normal_statistics(1e15, 1e15 + 1, 1000)


# -- statistics, conjugate updates, log-likelihood from statistics ------------------------


def bernoulli_term(n, d=None, groups=None):
    shape = (groups, d) if groups else ((d,) if d else ())
    record_shape = (d,) if d else ()
    p = free("p", 0.05, 0.95, shape=shape, variable="theta", group_by="y_obs" if groups else None)
    return term(
        Bernoulli(),
        {"p": p},
        ElementDomain(0, 1, True),
        n=n,
        record_shape=record_shape,
        group=("y_obs", groups) if groups else None,
    )


def test_counts_are_completed_with_category_zero_from_the_totals(rng):
    x = rng.integers(0, 2, size=(40, 3))
    y = rng.integers(0, 2, size=40)
    t = bernoulli_term(40, d=3, groups=2)
    group_spec = t.totals_statistic()
    (counts_spec,) = Bernoulli().statistics(t)
    arrays = {"x_obs": x, "y_obs": y}
    group_sizes = complete_statistic(group_spec, group_spec.compute(arrays), 40)
    np.testing.assert_array_equal(group_sizes, [np.sum(y == 0), np.sum(y == 1)])
    full = complete_statistic(counts_spec, counts_spec.compute(arrays), group_sizes)
    for c in (0, 1):
        np.testing.assert_array_equal(full[c, :, 1], x[y == c].sum(axis=0))
        np.testing.assert_array_equal(full[c, :, 0], (1 - x[y == c]).sum(axis=0))


@pytest.mark.parametrize("temperature", [1.0, 4.0])
def test_grouped_bernoulli_tempered_beta_update(rng, temperature):
    x = rng.integers(0, 2, size=(30, 2))
    y = rng.integers(0, 2, size=30)
    t = bernoulli_term(30, d=2, groups=2)
    group_spec = t.totals_statistic()
    (counts_spec,) = Bernoulli().statistics(t)
    arrays = {"x_obs": x, "y_obs": y}
    sizes = complete_statistic(group_spec, group_spec.compute(arrays), 30)
    full = complete_statistic(counts_spec, counts_spec.compute(arrays), sizes)
    post = Bernoulli().conjugate_update(
        t, "p", {"alpha": 2.0, "beta": 3.0}, {"counts": full}, sizes, temperature, {}
    )
    for c in (0, 1):
        ones = x[y == c].sum(axis=0)
        np.testing.assert_allclose(post["alpha"][c], 2.0 + ones / temperature)
        np.testing.assert_allclose(post["beta"][c], 3.0 + (np.sum(y == c) - ones) / temperature)


def test_scalar_parameter_pools_the_elements(rng):
    """One p shared by d columns: the Beta update sums the column counts."""
    x = rng.integers(0, 2, size=(25, 4))
    t = bernoulli_term(25, d=4)
    t = replace(t, parameters={"p": free("p", 0.05, 0.95)})
    (spec,) = Bernoulli().statistics(t)
    full = complete_statistic(spec, spec.compute({"x_obs": x}), 25)
    post = Bernoulli().conjugate_update(
        t, "p", {"alpha": 1.0, "beta": 1.0}, {"counts": full}, 25, 1.0, {}
    )
    assert float(post["alpha"]) == 1.0 + x.sum()
    assert float(post["beta"]) == 1.0 + (1 - x).sum()


def posterior_matches_tempered_likelihood(log_posterior, log_prior, log_lik, grid, temperature):
    """log posterior − (log prior + log-likelihood/T) is constant over the grid."""
    diff = [log_posterior(v) - log_prior(v) - log_lik(v) / temperature for v in grid]
    assert np.ptp(diff) < 1e-8


@pytest.mark.parametrize("temperature", [1.0, 3.0])
def test_bernoulli_logp_and_update_agree_with_scipy(rng, temperature):
    x = rng.integers(0, 2, size=50)
    t = bernoulli_term(50)
    (spec,) = Bernoulli().statistics(t)
    full = complete_statistic(spec, spec.compute({"x_obs": x}), 50)
    family = Bernoulli()
    for p in (0.1, 0.4, 0.8):
        exact = stats.bernoulli.logpmf(x, p).sum()
        assert family.logp_from_statistics(t, {"p": p}, {"counts": full}, 50) == pytest.approx(
            exact, rel=1e-12
        )
    post = family.conjugate_update(
        t, "p", {"alpha": 2.0, "beta": 2.0}, {"counts": full}, 50, temperature, {}
    )
    posterior_matches_tempered_likelihood(
        lambda p: stats.beta.logpdf(p, post["alpha"], post["beta"]),
        lambda p: stats.beta.logpdf(p, 2.0, 2.0),
        lambda p: family.logp_from_statistics(t, {"p": p}, {"counts": full}, 50),
        np.linspace(0.05, 0.95, 7),
        temperature,
    )


def test_categorical_logp_and_dirichlet_update(rng):
    x = rng.integers(0, 3, size=40)
    t = term(Categorical(), {"p": free("p", 0.05, 0.9, shape=(3,))}, ElementDomain(0, 2, True))
    (spec,) = Categorical().statistics(t)
    full = complete_statistic(spec, spec.compute({"x_obs": x}), 40)
    np.testing.assert_array_equal(full, np.bincount(x, minlength=3))
    p = np.array([0.2, 0.3, 0.5])
    value = Categorical().logp_from_statistics(t, {"p": p}, {"counts": full}, 40)
    assert value == pytest.approx(np.log(p[x]).sum(), rel=1e-12)
    post = Categorical().conjugate_update(t, "p", {"a": np.ones(3)}, {"counts": full}, 40, 2.0, {})
    np.testing.assert_allclose(post["a"], 1.0 + np.bincount(x, minlength=3) / 2.0)


@pytest.mark.parametrize("temperature", [1.0, 5.0])
def test_poisson_logp_and_gamma_update(rng, temperature):
    x = rng.poisson(2.0, size=30).clip(0, 6)
    t = term(Poisson(), {"mu": free("mu", 0.5, 4.0)}, ElementDomain(0, 6, True), n=30)
    (spec,) = Poisson().statistics(t)
    stat = {"sum": spec.compute({"x_obs": x})}
    family = Poisson()
    post = family.conjugate_update(t, "mu", {"alpha": 2.0, "beta": 1.0}, stat, 30, temperature, {})
    assert post["alpha"] == pytest.approx(2.0 + x.sum() / temperature)
    assert post["beta"] == pytest.approx(1.0 + 30 / temperature)
    posterior_matches_tempered_likelihood(
        lambda lam: stats.gamma.logpdf(lam, post["alpha"], scale=1 / post["beta"]),
        lambda lam: stats.gamma.logpdf(lam, 2.0, scale=1.0),
        lambda lam: stats.poisson.logpmf(x, lam).sum(),
        np.linspace(0.5, 4.0, 7),
        temperature,
    )
    drops_log_factorials = [
        family.logp_from_statistics(t, {"mu": lam}, stat, 30) - stats.poisson.logpmf(x, lam).sum()
        for lam in (0.5, 1.0, 3.0)
    ]
    assert np.ptp(drops_log_factorials) < 1e-9


def test_exponential_rate_update_through_the_reciprocal_link(rng):
    x = rng.exponential(0.5, size=20).clip(0, 3)
    scale = free("scale", 0.25, 2.0, variable="lam", link="reciprocal")
    t = term(Exponential(), {"scale": scale}, ElementDomain(0, 3, False), n=20)
    x = on_grid(t, x)
    stat = natural(Exponential().statistics(t), {"x_obs": x})
    for lam in (0.5, 2.0):
        exact = stats.expon.logpdf(x, scale=1 / lam).sum()
        assert Exponential().logp_from_statistics(t, {"scale": lam}, stat, 20) == pytest.approx(
            exact, rel=1e-12
        )
    post = Exponential().conjugate_update(
        t, "scale", {"alpha": 1.0, "beta": 2.0}, stat, 20, 2.0, {}
    )
    assert post["alpha"] == pytest.approx(1.0 + 20 / 2.0)
    assert post["beta"] == pytest.approx(2.0 + x.sum() / 2.0)


@pytest.mark.parametrize("temperature", [1.0, 10.0])
def test_normal_known_sigma_update_is_the_tempered_posterior(rng, temperature):
    x = rng.normal(0.3, 1.0, size=25).clip(-2, 2)
    parameters = {"mu": free("mu", -1.0, 1.0), "sigma": constant("sigma", 1.5)}
    t = term(NormalKnownSigma(), parameters, ElementDomain(-2, 2, False), n=25)
    x = on_grid(t, x)
    stat = natural(NormalKnownSigma().statistics(t), {"x_obs": x})
    family = NormalKnownSigma()
    post = family.conjugate_update(t, "mu", {"mu": 0.2, "sigma": 0.7}, stat, 25, temperature, {})
    precision = 1 / 0.7**2 + 25 / (temperature * 1.5**2)
    assert post["sigma"] == pytest.approx(precision**-0.5)
    assert post["mu"] == pytest.approx(
        (0.2 / 0.7**2 + x.sum() / (temperature * 1.5**2)) / precision
    )
    posterior_matches_tempered_likelihood(
        lambda m: stats.norm.logpdf(m, post["mu"], post["sigma"]),
        lambda m: stats.norm.logpdf(m, 0.2, 0.7),
        lambda m: family.logp_from_statistics(t, {"mu": m}, stat, 25),
        np.linspace(-1, 1, 7),
        temperature,
    )


def test_normal_free_sigma_logp_is_exact_and_precision_update(rng):
    x = rng.normal(0.0, 1.0, size=30).clip(-3, 3)
    parameters = {
        "mu": free("mu", -1.0, 1.0),
        "sigma": free("sigma", 0.5, 2.0, variable="tau", link="inverse_sqrt"),
    }
    t = term(NormalFreeSigma(), parameters, ElementDomain(-3, 3, False), n=30)
    x = on_grid(t, x)
    stat = natural(NormalFreeSigma().statistics(t), {"x_obs": x})
    family = NormalFreeSigma()
    for mu, tau in ((0.0, 1.0), (0.5, 3.0)):
        exact = stats.norm.logpdf(x, mu, tau**-0.5).sum()
        value = family.logp_from_statistics(t, {"mu": mu, "sigma": tau}, stat, 30)
        assert value == pytest.approx(exact, rel=1e-12)
    post = family.conjugate_update(
        t, "sigma", {"alpha": 2.0, "beta": 1.0}, stat, 30, 2.0, {"mu": 0.5}
    )
    assert post["alpha"] == pytest.approx(2.0 + 30 / 4.0)
    assert post["beta"] == pytest.approx(1.0 + ((x - 0.5) ** 2).sum() / 4.0)
    with pytest.raises(UnsupportedModelError, match="inverse_sqrt"):
        identity = dict(parameters, sigma=free("sigma", 0.5, 2.0))
        family.conjugate_update(
            term(family, identity, ElementDomain(-3, 3, False)),
            "sigma",
            {"alpha": 2.0, "beta": 1.0},
            stat,
            30,
            1.0,
            {"mu": 0.5},
        )


def regression_term(n, sigma):
    mu = ParameterTerm(
        name="mu",
        interval=Interval(-2.0, 2.0),
        shape=(2,),
        free_variables=("w",),
        varies_with_record=True,
        free_variable="w",
        link="linear",
        covariates="X",
        radius=1.0,
    )
    return term(
        NormalLinearRegression(),
        {"mu": mu, "sigma": sigma},
        ElementDomain(-3, 3, False),
        n=n,
        covariate_grid=data_grid(np.array([-1.0, 0.0]), np.array([1.0, 2.0]), n, integer=False),
    )


def test_regression_statistics_logp_and_weight_update(rng):
    x = np.column_stack([rng.uniform(-1, 1, 40), rng.uniform(0, 2, 40)])
    y = (x @ np.array([0.5, -0.3]) + rng.normal(0, 0.5, 40)).clip(-3, 3)
    tau = free("sigma", 0.5, 2.0, variable="tau", link="inverse_sqrt")
    t = regression_term(40, tau)
    family = NormalLinearRegression()
    specs = family.statistics(t)
    assert [s.kind for s in specs] == ["gram", "cross", "sum_squares"]
    # x1 ∈ [−1, 1], x2 ∈ [0, 2], y ∈ [−3, 3]: widths x1² 1, x1·x2 4, x2² 4; x1·y 6, x2·y 12; y² 9.
    assert [s.sensitivity_l1 for s in specs] == [9.0, 18.0, 9.0]
    # The statistics are exact on the data grids: compare with the data on those grids.
    x = t.covariate_grid.quantize(x) * t.covariate_grid.quantum
    y = on_grid(t, y)
    arrays = {"X": x, "x_obs": y}
    stat = {s.kind: complete_statistic(s, s.natural(s.compute(arrays)), 40) for s in specs}
    np.testing.assert_allclose(stat["gram"], x.T @ x, rtol=1e-13)
    w, tau_value = np.array([0.2, -0.1]), 1.7
    exact = stats.norm.logpdf(y, x @ w, tau_value**-0.5).sum()
    value = family.logp_from_statistics(t, {"mu": w, "sigma": tau_value}, stat, 40)
    assert value == pytest.approx(exact, rel=1e-10)
    post = family.conjugate_update(
        t, "mu", {"mu": np.zeros(2), "cov": np.eye(2)}, stat, 40, 2.0, {"sigma": tau_value}
    )
    precision = np.eye(2) + tau_value * x.T @ x / 2.0
    np.testing.assert_allclose(post["cov"], np.linalg.inv(precision), rtol=1e-10)
    np.testing.assert_allclose(
        post["mu"], np.linalg.solve(precision, tau_value * x.T @ y / 2.0), rtol=1e-10
    )


def test_regression_with_known_sigma_releases_no_sum_of_squares():
    specs = NormalLinearRegression().statistics(regression_term(10, constant("sigma", 1.0)))
    assert [s.kind for s in specs] == ["gram", "cross"]


def test_symbolic_logp_matches_numpy(rng):
    x = rng.integers(0, 2, size=(20, 2))
    y = rng.integers(0, 2, size=20)
    t = bernoulli_term(20, d=2, groups=2)
    group_spec = t.totals_statistic()
    (counts_spec,) = Bernoulli().statistics(t)
    arrays = {"x_obs": x, "y_obs": y}
    sizes = complete_statistic(group_spec, group_spec.compute(arrays), 20)
    full = complete_statistic(counts_spec, counts_spec.compute(arrays), sizes)
    theta = np.array([[0.2, 0.7], [0.6, 0.4]])
    symbol = pt.matrix("theta")
    graph = Bernoulli().logp_from_statistics(t, {"p": symbol}, {"counts": pt.as_tensor(full)}, 20)
    value = pytensor.function([symbol], graph, mode="FAST_COMPILE")(theta)
    assert float(value) == pytest.approx(stats.bernoulli.logpmf(x, theta[y]).sum(), rel=1e-12)


def test_unstructured_parameters_have_no_statistics():
    expression = ParameterTerm(
        name="p", interval=Interval(0.1, 0.9), free_variables=("w",), varies_with_record=True
    )
    with pytest.raises(UnsupportedModelError, match="pay-per-draw"):
        Bernoulli().statistics(term(Bernoulli(), {"p": expression}, ElementDomain(0, 1, True)))


def test_family_selection_distinguishes_the_normal_forms():
    normal_op = NormalKnownSigma.rv_op.__new__(NormalKnownSigma.rv_op)
    known = {"mu": free("mu", 0, 1), "sigma": constant("sigma", 1.0)}
    unknown = {"mu": free("mu", 0, 1), "sigma": free("sigma", 0.5, 2.0)}
    regression = {**known, "mu": regression_term(5, constant("sigma", 1.0)).parameters["mu"]}
    assert isinstance(find_family(normal_op, known), NormalKnownSigma)
    assert isinstance(find_family(normal_op, unknown), NormalFreeSigma)
    assert isinstance(find_family(normal_op, regression), NormalLinearRegression)
    assert len({family.name for family in FAMILIES}) == len(FAMILIES)
