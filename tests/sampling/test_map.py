"""pmp.private_map (Zhang et al. 2016, Algorithm 3): cost, audits, the exact output law on
neighbours, Lemma 4's concentration, refusals before anything is read or recorded."""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from pymc_private.conditionals import blocks as conditionals
from pymc_private.data.declaration import PrivateData
from pymc_private.data.ledgers import ledger_for
from pymc_private.dp.audit import epsilon_lower_bound
from pymc_private.dp.budget import Budget
from pymc_private.errors import (
    BudgetExceededError,
    InvalidPrivacyParameterError,
    PrivacyError,
    UnsupportedModelError,
)
from pymc_private.pay_once.privatize import privatize
from pymc_private.priors.distributions import (
    TruncatedBeta,
    TruncatedDirichlet,
    TruncatedGamma,
    TruncatedNormal,
)
from pymc_private.sampling.map_estimate import MapMechanism, map_utility_bound, private_map


def bernoulli(x, lower: float, alpha: float, beta: float) -> pm.Model:
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", np.asarray(x, dtype=np.int64), bounds=(0, 1))
        theta = TruncatedBeta("theta", alpha, beta, lower=lower, upper=1 - lower)
        pm.Bernoulli("x", theta, observed=x_obs)
    return model


def normal(x, bound: float) -> pm.Model:
    """Normal mean on [−B, B] under a prior centred at −B, σ = B."""
    with pm.Model() as model:
        x_obs = PrivateData("x_obs", np.asarray(x, dtype=np.float64), bounds=(-bound, bound))
        mu = TruncatedNormal("mu", -bound, bound, lower=-bound, upper=bound)
        pm.Normal("x", mu, bound, observed=x_obs)
    return model


def law(model: pm.Model, epsilon: float, cells: int) -> np.ndarray:
    """The exact output law of the secure release: OpenDP's selection returns cell k with
    probability softmax(ŝ)_k of the float scores as computed (`exact_choice`)."""
    scores = MapMechanism(model, epsilon, cells).scores()
    (entry,) = next(iter(scores.values()))
    return np.exp(entry - logsumexp(entry))


def worst_tail(p: np.ndarray, q: np.ndarray) -> tuple[float, int, bool]:
    """The largest |log P_D(E)/P_D'(E)| over the events {cell ≥ c} and {cell < c} (and
    single cells), with the threshold and whether it is an upper tail."""
    best = (0.0, 0, True)
    for c in range(1, len(p)):
        for upper, (a, b) in (
            (True, (p[c:].sum(), q[c:].sum())),
            (False, (p[:c].sum(), q[:c].sum())),
        ):
            loss = abs(math.log(a / b))
            if loss > best[0]:
                best = (loss, c, upper)
    cells = float(np.max(np.abs(np.log(p) - np.log(q))))
    return max(best[0], cells), best[1], best[2]


def audited_tail(p: np.ndarray, q: np.ndarray, runs: int) -> tuple[int, bool]:
    """The tail event whose log-ratio (P_D'/P_D) is largest after subtracting about 2.5
    binomial standard errors at ``runs`` runs: the event an audit of that size resolves."""
    best, choice = -math.inf, (1, True)
    for c in range(1, len(p)):
        for upper, (a, b) in (
            (True, (p[c:].sum(), q[c:].sum())),
            (False, (p[:c].sum(), q[:c].sum())),
        ):
            resolved = math.log(b / a) - 2.5 * math.sqrt((1 / a + 1 / b) / runs)
            if resolved > best:
                best, choice = resolved, (c, upper)
    return choice


# Beta–Bernoulli: 100 records, 30 ones, prior Beta(2, 2) on [0.05, 0.95]; the posterior's
# mode, the MAP, is 31/102.
RECORDS = np.r_[np.ones(30), np.zeros(70)]
MAP = 31 / 102


@pytest.fixture(scope="module")
def model() -> pm.Model:
    return bernoulli(RECORDS, 0.05, 2.0, 2.0)


def test_ledger_records_the_cost_within_the_epsilon_asked_for(model):
    estimate = private_map(model, 1.0, secure=False, random_seed=1)
    assert set(estimate) == {"theta"} and 0.05 < float(estimate["theta"]) < 0.95
    (release,) = ledger_for(model).releases
    assert release.mechanism == "private_map" and release.count == 1
    assert 1.0 - 1e-9 < release.epsilon <= 1.0
    assert release.secure is False
    assert release.sensitivity == pytest.approx(math.log(0.95 / 0.05))


def test_budget_refusal_reads_and_records_nothing(model, monkeypatch):
    ledger = ledger_for(model)

    def no_data(*args, **kwargs):
        raise AssertionError("the data was read")

    monkeypatch.setattr("pymc_private.sampling.map_estimate.raw_statistics", no_data)
    with pytest.raises(BudgetExceededError):
        private_map(model, 2.0, budget=Budget(epsilon=1.0))
    assert ledger.releases == ()


@settings(max_examples=30, deadline=None)
@given(
    epsilon=st.one_of(
        st.floats(max_value=0.0),
        st.sampled_from([math.nan, math.inf, -math.inf, True, "1", None]),
    )
)
def test_invalid_epsilon_is_refused_before_anything(model, epsilon):
    with pytest.raises(InvalidPrivacyParameterError, match="epsilon"):
        private_map(model, epsilon)
    assert ledger_for(model).releases == ()


def test_secure_release_never_reads_the_callers_generator(model):
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    private_map(model, 1.0, random_seed=rng)
    assert rng.bit_generator.state == state


def test_seeded_release_reads_the_same_words_for_neighbours():
    """secure=False draws one Gumbel per cell whatever the data, so the generator's state
    after the release is a function of the seed and the public grid only."""
    states = []
    for x in ([0, 0], [1, 0]):
        rng = np.random.default_rng(5)
        private_map(bernoulli(x, 0.1, 1.0, 1.0), 1.0, cells=64, secure=False, random_seed=rng)
        states.append(rng.bit_generator.state)
    assert states[0] == states[1]


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 4.0])
def test_exact_law_on_neighbours_is_within_epsilon_and_beyond_half_when_under_noised(epsilon):
    """The structural check (DESIGN §5): every grid point has positive probability under
    both data sets (finite log-probabilities, one public grid), and the exact output law's
    largest log-ratio over cells and tails is at most ε and, under-noised by half (run at
    2ε), beyond ε. Worst pairs: a record at each bound, Bernoulli and a Normal whose
    records sit at ±10⁸ (float extremes)."""
    pairs = [
        (bernoulli([0], 0.1, 0.05, 1.0), bernoulli([1], 0.1, 0.05, 1.0)),
        (normal([-1e8, 1e8], 1e8), normal([1e8, 1e8], 1e8)),
    ]
    for d, d_prime in pairs:
        for run, bound in ((epsilon, epsilon), (2 * epsilon, None)):
            p, q = law(d, run, 64), law(d_prime, run, 64)
            assert np.all(p > 0) and np.all(q > 0)
            loss, _, _ = worst_tail(p, q)
            if bound is not None:
                assert loss <= MapMechanism(d, run, 64).epsilon
            else:
                assert loss > epsilon


@pytest.mark.slow
@pytest.mark.parametrize(("epsilon", "runs"), [(1.0, 60_000), (4.0, 20_000)])
def test_auditor_passes_the_release_and_catches_it_under_noised_by_half(epsilon, runs):
    """D = (0), D' = (1) under Beta(0.05, 1) on [0.1, 0.9], whose mass sits at the lower
    bound: the event (a tail, fixed in advance from the exact law) has a true loss of about
    0.6·ε. Under-noised by half, the same mechanism run at 2ε claims ε and is caught."""
    models = {"D": bernoulli([0], 0.1, 0.05, 1.0), "D'": bernoulli([1], 0.1, 0.05, 1.0)}
    for run, caught in ((epsilon, False), (2 * epsilon, True)):
        mechanisms = {name: MapMechanism(m, run, 64) for name, m in models.items()}
        scores = {name: mech.scores() for name, mech in mechanisms.items()}
        p, q = (law(models[name], run, 64) for name in ("D", "D'"))
        cut, upper = audited_tail(p, q, runs)
        edge = mechanisms["D"].grids["theta"].grids[0].edges[cut]

        def mechanism(data, rng, size, mechanisms=mechanisms, scores=scores):
            draws = [
                mechanisms[data].select(scores[data], secure=False, rng=rng)["theta"]
                for _ in range(size)
            ]
            return np.asarray(draws, dtype=np.float64)

        result = epsilon_lower_bound(
            mechanism,
            "D",
            "D'",
            n=runs,
            event=(lambda theta, e=edge: theta >= e)
            if upper
            else (lambda theta, e=edge: theta < e),
            random_seed=7,
            vectorized=True,
        )
        assert result.passes(epsilon) is not caught, result


def test_auditor_passes_at_epsilon_point_one():
    """At ε = 0.1 the true loss of the best event is about 0.06: the auditor's bound stays
    below the claim (catching the half-noised release at this ε would take ~5·10⁶ runs per
    data set; the exact-law test above checks it instead)."""
    models = {"D": bernoulli([0], 0.1, 0.05, 1.0), "D'": bernoulli([1], 0.1, 0.05, 1.0)}
    mechanisms = {name: MapMechanism(m, 0.1, 64) for name, m in models.items()}
    scores = {name: mech.scores() for name, mech in mechanisms.items()}

    def mechanism(data, rng, size):
        return np.asarray(
            [
                mechanisms[data].select(scores[data], secure=False, rng=rng)["theta"]
                for _ in range(size)
            ]
        )

    result = epsilon_lower_bound(
        mechanism, "D", "D'", n=20_000, n_pilot=4_000, random_seed=11, vectorized=True
    )
    assert result.passes(0.1), result


def test_concentrates_at_the_map_as_lemma_4_says(model):
    """Lemma 4 on the grid: P[u(θ̂) ≤ u* − 2t] ≤ exp(−εt/(2L))/ξ(S_t), checked with 400
    releases per ε (3 binomial standard deviations of slack), and the estimate's median
    distance to the MAP falls with ε, to below one 1/64-cell at ε = 256."""
    cells, repeats, lipschitz = 64, 400, math.log(0.95 / 0.05)
    rng = np.random.default_rng(17)
    medians = []
    for epsilon in (0.5, 4.0, 32.0, 256.0):
        mechanism = MapMechanism(model, epsilon, cells)
        scores = mechanism.scores()
        grid = mechanism.grids["theta"].grids[0]
        theta = grid.points[:, 0]
        utility = 31 * np.log(theta) + 71 * np.log1p(-theta)  # log prior + log-likelihood
        base = np.exp(np.log(theta) + np.log1p(-theta) + grid.log_weights)
        base /= base.sum()
        draws = np.array(
            [mechanism.select(scores, secure=False, rng=rng)["theta"] for _ in range(repeats)]
        )
        drawn_utility = 31 * np.log(draws) + 71 * np.log1p(-draws)
        for t in (1.0, 3.0):
            mass = float(base[utility > utility.max() - t].sum())
            bound = map_utility_bound(epsilon, t, lipschitz=lipschitz, prior_mass=mass)
            frequency = np.mean(drawn_utility <= utility.max() - 2 * t)
            assert frequency <= bound + 3 * math.sqrt(bound * (1 - bound) / repeats) + 1e-12
        medians.append(float(np.median(np.abs(draws - MAP))))
    assert medians == sorted(medians, reverse=True)
    assert medians[-1] < 0.9 / cells


def test_utility_bound_validates_and_decreases():
    assert map_utility_bound(1.0, 2.0, lipschitz=1.0, prior_mass=0.5) == pytest.approx(
        2 * math.exp(-1.0)
    )
    assert map_utility_bound(0.01, 0.0, lipschitz=1.0, prior_mass=0.5) == 1.0
    assert map_utility_bound(4.0, 2.0, lipschitz=1.0, prior_mass=0.5) < map_utility_bound(
        1.0, 2.0, lipschitz=1.0, prior_mass=0.5
    )
    for bad in ({"prior_mass": 0.0}, {"prior_mass": 1.5}, {"lipschitz": 0.0}):
        with pytest.raises(InvalidPrivacyParameterError):
            map_utility_bound(1.0, 1.0, **{"lipschitz": 1.0, "prior_mass": 0.5, **bad})


def test_gamma_normal_dirichlet_and_naive_bayes_blocks(make_naive_bayes, rng):
    with pm.Model() as model:
        counts = PrivateData("counts", rng.poisson(3.0, 40), bounds=(0, 10))
        waits = PrivateData("waits", rng.uniform(-2, 2, 40), bounds=(-2, 2))
        kinds = PrivateData("kinds", rng.integers(0, 3, 40), bounds=(0, 2))
        lam = TruncatedGamma("lam", 2.0, 1.0, lower=0.1, upper=20.0)
        mu = TruncatedNormal("mu", 0.0, 1.0, lower=-2.0, upper=2.0)
        p = TruncatedDirichlet("p", np.ones(3), min_prob=0.05)
        pm.Poisson("c", lam, observed=counts)
        pm.Normal("w", mu, 1.0, observed=waits)
        pm.Categorical("k", p, observed=kinds)
    estimate = private_map(model, 50.0, secure=False, random_seed=2)
    assert abs(estimate["lam"] - 3.0) < 1.5 and abs(estimate["mu"]) < 1.0
    assert estimate["p"].shape == (3,) and estimate["p"].sum() == pytest.approx(1.0)
    assert estimate["p"].min() >= 0.05
    labels = rng.integers(0, 2, 60)
    features = (rng.random((60, 4)) < np.where(labels[:, None] == 1, 0.8, 0.2)).astype(int)
    nb = make_naive_bayes(labels, features, 0.05)
    estimate = private_map(nb, 8.0)
    assert {name for name in estimate} == {rv.name for rv in nb.free_RVs}


def test_refusals_name_what_to_change(model):
    private = privatize(model, 1.0, noise_aware=False)
    with pytest.raises(UnsupportedModelError, match="find_MAP"):
        private_map(private, 1.0)
    with pm.Model() as free_sigma:
        x = PrivateData("x_obs", np.zeros(5), bounds=(-1, 1))
        mu = TruncatedNormal("mu", 0.0, 1.0, lower=-1.0, upper=1.0)
        sigma = TruncatedGamma("sigma", 2.0, 2.0, lower=0.5, upper=2.0)
        pm.Normal("x", mu, sigma, observed=x)
    with pytest.raises(UnsupportedModelError, match=r"pmp\.private_map"):
        private_map(free_sigma, 1.0)
    with pm.Model() as hyper:
        x = PrivateData("x_obs", np.zeros(5), bounds=(-1, 1))
        m0 = TruncatedNormal("m0", 0.0, 1.0, lower=-1.0, upper=1.0)
        mu = TruncatedNormal("mu", m0, 1.0, lower=-1.0, upper=1.0)
        pm.Normal("x", mu, 1.0, observed=x)
    with pytest.raises(UnsupportedModelError):
        private_map(hyper, 1.0)
    with pm.Model() as data_prior:  # a prior parameter that may change after the build
        x = PrivateData("x_obs", np.array([0, 1, 1]), bounds=(0, 1))
        theta = TruncatedBeta("theta", pm.Data("a", 0.5), 1.0, lower=0.1, upper=0.9)
        pm.Bernoulli("x", theta, observed=x)
    with pytest.raises(UnsupportedModelError, match="give them as numbers"):
        private_map(data_prior, 1.0)
    with pm.Model() as overflowing:  # finite L, but grid scores beyond floating point
        x = PrivateData("x_obs", np.array([0, 3, 10]), bounds=(0, 10))
        lam = TruncatedGamma("lam", 2.0, 1.0, lower=1e-300, upper=1e300)
        pm.Poisson("x", lam, observed=x)
    with pytest.raises(PrivacyError):
        private_map(overflowing, 1.0)
    for m in (private, free_sigma, hyper, data_prior, overflowing):
        assert all(r.epsilon == 0 for r in ledger_for(m).releases if r.mechanism == "private_map")


def test_grids_and_prior_power_are_public(monkeypatch):
    """The grid and the temperature are built before the data is read: the mechanism of two
    neighbours is the same object but for its statistics."""
    calls = []
    real = conditionals.raw_statistics
    monkeypatch.setattr(
        "pymc_private.sampling.map_estimate.raw_statistics",
        lambda *a, **k: calls.append(1) or real(*a, **k),
    )
    a = MapMechanism(bernoulli([0, 1], 0.1, 1.0, 1.0), 1.0, 64)
    b = MapMechanism(bernoulli([1, 1], 0.1, 1.0, 1.0), 1.0, 64)
    assert calls == []
    assert a.temperature == b.temperature and a.epsilon == b.epsilon
    np.testing.assert_array_equal(
        a.grids["theta"].grids[0].points, b.grids["theta"].grids[0].points
    )


def test_a_block_grouped_by_a_private_index_runs():
    """The public bound on a private index's group totals holds numpy integers; as exact
    rationals they wrapped around at 2⁶³ against private_map's rational temperature (an
    untyped OverflowError, found by the attacker)."""
    with pm.Model() as model:
        g = PrivateData("g", np.array([0, 1, 1, 0]), bounds=(0, 1))
        x = PrivateData("x_obs", np.array([1, 3, 0, 2]), bounds=(0, 10))
        lam = TruncatedGamma("lam", 2.0, 1.0, lower=0.1, upper=20.0, shape=2)
        pm.Poisson("x", lam[g], observed=x)
    estimate = private_map(model, 1.0, secure=False, random_seed=4)
    assert estimate["lam"].shape == (2,)
    assert [r.mechanism for r in ledger_for(model).releases] == ["private_map"]


def test_a_strongly_tempered_estimate_is_said_before_it_is_released():
    """At ε = 1 on a Bernoulli with L = log(0.9/0.1), T = 2L/ε ≈ 4.4: the records count as
    n/T, said before anything is released; at ε = 20 the estimate is not tempered enough to
    warn."""
    from pymc_private.errors import UninformativeReleaseWarning

    x = np.arange(100) % 2
    model = bernoulli(x, 0.1, 1.0, 1.0)
    with pytest.warns(UninformativeReleaseWarning, match=r"the 100 records count as 22\.\d"):
        private_map(model, 1.0, secure=False, random_seed=3)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", UninformativeReleaseWarning)
        private_map(bernoulli(1 - x, 0.1, 1.0, 1.0), 20.0, secure=False, random_seed=3)
