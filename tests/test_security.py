"""The security audit's scenarios, each reproduced as it was found and checked closed.

Scenario 1 (inverse-CDF draws) is in tests/conditionals/test_exact.py, 4 (float sums) in
tests/families/test_families.py, 7 (rejection and the caller's generator) in
tests/sampling/test_posterior.py and tests/steps/test_gibbs.py, 8 (Barker acceptance in
floats) in tests/steps/test_metropolis.py, and the input checks of 5 and 10 in
tests/data/test_data.py and tests/analysis/test_analysis.py. This file holds the route, shape,
seed, budget and pickle scenarios.
"""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path

import cloudpickle
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pytensor.tensor.special import xlogy

import pymc_private as pmp
from pymc_private.analysis.privatisation import privatisation_of

A = 0.05


def bernoulli(y, *, extra=None):
    with pm.Model() as model:
        y_obs = pmp.PrivateData("y_obs", np.asarray(y), bounds=(0, 1))
        theta = pmp.TruncatedBeta("theta", 1, 1, lower=A, upper=1 - A)
        pm.Bernoulli("y", theta, observed=y_obs)
        if extra is not None:
            extra(y_obs, theta)
    return model


@pytest.fixture(scope="module")
def labels():
    return np.random.default_rng(8).binomial(1, 0.3, 60)


# -- 2. A privatised model extended with raw data ----------------------------------------


@pytest.mark.slow
def test_privatised_model_extended_with_raw_data_pays_per_draw(labels):
    """The audit: inside privatize(m, 0.1), a new PrivateData and a Bernoulli on it were
    sampled by NUTS for free (the ledger stayed at 0.1) and the released ``lp`` gave the
    exact count. Now the graph decides: the model reads raw data, so it needs private steps,
    they are charged, and the data sets' ledgers compose."""
    private = pmp.privatize(bernoulli(labels), 0.1)
    other = np.random.default_rng(9).binomial(1, 0.6, 60)
    with private:
        z_obs = pmp.PrivateData("z_obs", other, bounds=(0, 1))
        phi = pmp.TruncatedBeta("phi", 1, 1, lower=A, upper=1 - A)
        pm.Bernoulli("z", phi, observed=z_obs)
    ledger = pmp.ledger_for(private)
    assert ledger.epsilon() == pytest.approx(0.1)
    with private, pytest.raises(pmp.UnsupportedModelError, match="choose a route"):
        pmp.sample(20, budget=pmp.Budget(0.1), chains=1, progressbar=False)
    with private, pytest.raises(pmp.UnsupportedModelError, match="not a private step"):
        pmp.sample(20, step=pm.NUTS(), chains=1, progressbar=False)
    with private, pytest.raises(pmp.BudgetExceededError):
        step = pmp.PrivateMetropolis(temperature=10.0)
        pmp.sample(20, step=step, chains=1, budget=pmp.Budget(0.1), progressbar=False)
    with private:
        idata = pmp.sample(20, step=step, chains=1, cores=1, progressbar=False)
    assert "lp" not in idata.sample_stats and "observed_data" not in idata.children
    per_draw = step.privacy_epsilon_per_draw
    assert per_draw == pytest.approx(2 * np.log((1 - A) / A) / 10.0, rel=1e-8)
    assert ledger.epsilon() == pytest.approx(0.1 + 20 * per_draw)
    # The new data set's own ledger holds the draws too; the first data set's the release.
    assert pmp.ledger_for(bernoulli(other)).epsilon() == pytest.approx(20 * per_draw)
    assert pmp.ledger_for(bernoulli(labels)).epsilon() == pytest.approx(0.1 + 20 * per_draw)


def test_a_copy_or_pm_do_of_a_privatised_model_keeps_its_route_and_ledger(labels):
    private = pmp.privatize(bernoulli(labels), 0.5, noise_aware=False)
    for copy in (pm.do(private, {}), cloudpickle.loads(cloudpickle.dumps(private))):
        assert privatisation_of(copy) is not None
        with copy:
            idata = pmp.sample(20, tune=20, chains=1, progressbar=False)
        assert np.all(idata.sample_stats["privacy_epsilon"].values == 0.0)
        assert pmp.ledger_for(copy).epsilon() == pytest.approx(0.5)
        assert pmp.PrivateGibbs.competence(copy["theta"], False).name == "IDEAL"


# -- 3. Data-dependent shapes ------------------------------------------------------------


def _count_deterministic(y_obs, theta):
    pm.Deterministic("leak", pt.nonzero(y_obs)[0].shape[0] + 0 * theta)


def _count_sized_prior(y_obs, theta):
    pmp.TruncatedNormal("nu", 0.0, 1.0, lower=-1.0, upper=1.0, shape=(pt.sum(y_obs > 0),))


def _count_in_likelihood(y_obs, theta):
    ones = pt.cast(pt.nonzero(y_obs)[0].shape[0], "float64")
    pm.Bernoulli("again", theta * ones / (ones + 1.0), observed=y_obs)


@pytest.mark.parametrize(
    "extra",
    [_count_deterministic, _count_sized_prior, _count_in_likelihood],
    ids=lambda f: f.__name__,
)
def test_shapes_computed_from_private_values_are_private(labels, extra):
    """The audit: a Deterministic ``pt.nonzero(x_obs)[0].shape[0] + 0 * theta`` released the
    exact count in every draw of every route (ledger: 1e-5). Only the shapes of declared
    arrays are public."""
    model = bernoulli(labels, extra=extra)
    routes = [
        lambda: pmp.PrivateGibbs(model=model),
        lambda: pmp.PrivateMetropolis(model=model),
        lambda: pmp.PrivateMetropolis(model=model, clip=1.0),
        lambda: pmp.sample_posterior(model, 2),
        lambda: pmp.privatize(model, 1.0),
    ]
    for route in routes:
        with pytest.raises(pmp.PrivacyError):
            route()
    assert len(pmp.ledger_for(model)) == 0


def test_shapes_of_declared_arrays_stay_public(labels):
    """n is public: a prior sized by the record count, a dim read from the data's shape."""
    with pm.Model() as model:
        y_obs = pmp.PrivateData("y_obs", labels, bounds=(0, 1))
        theta = pmp.TruncatedBeta("theta", 1, 1, lower=A, upper=1 - A)
        pmp.TruncatedNormal("nu", 0.0, 1.0, lower=-1.0, upper=1.0, shape=(y_obs.shape[0] // 30,))
        pm.Bernoulli("y", theta, observed=y_obs)
    with model:
        pmp.PrivateMetropolis()


# -- 6. Seeds ----------------------------------------------------------------------------


def test_seeds_drive_only_data_independent_randomness_unless_secure_is_false(labels):
    """The audit: seeded pay-per-draw releases were deterministic in (seed, statistics), so
    a published seed let anyone replay candidate counts, and they were marked secure. A
    secure step (the default) draws its data-dependent choices from the system's generator:
    the same seed gives different chains. ``secure=False`` is reproducible and recorded (and
    reported) as not secure."""
    model = bernoulli(labels)

    def run(secure):
        with model:
            step = pmp.PrivateGibbs(temperature=20.0, secure=secure)
            return pmp.sample(40, step=step, chains=1, cores=1, random_seed=5, progressbar=False)

    secure = [run(True).posterior["theta"].values for _ in range(2)]
    assert not np.array_equal(*secure)
    seeded = [run(False) for _ in range(2)]
    np.testing.assert_array_equal(seeded[0].posterior["theta"], seeded[1].posterior["theta"])
    releases = pmp.ledger_for(model).releases
    assert [r.secure for r in releases] == [True, True, False, False]
    table = pmp.privacy_report(seeded[0]).table
    assert list(table[table["kind"] == "release"]["secure"]) == [True, False]
    for draw in (
        pmp.sample_posterior(model, 3, secure=False, random_seed=1),
        pmp.privatize(model, 1.0, secure=False, random_seed=1),
    ):
        del draw
    assert [r.secure for r in pmp.ledger_for(model).releases[4:]] == [False, False]


# -- 9. Budgets that hold ----------------------------------------------------------------


def test_privatize_checks_its_budget_before_any_noise(labels, monkeypatch):
    """The audit: privatize took no budget (50 calls at ε = 1 all released)."""
    model = bernoulli(labels)
    budget = pmp.Budget(1.5)
    pmp.privatize(model, 1.0, budget=budget)
    import sys

    def no_noise(*args, **kwargs):
        raise AssertionError("noise drawn")

    monkeypatch.setattr(sys.modules["pymc_private.dp.mechanisms"], "discrete_laplace", no_noise)
    with pytest.raises(pmp.BudgetExceededError, match="Nothing was recorded"):
        pmp.privatize(model, 1.0, budget=budget)
    assert pmp.ledger_for(model).epsilon() == pytest.approx(1.0)


def test_one_ledger_per_data_set_whichever_model_reaches_it(labels):
    """The audit: the ledger was keyed on the pm.Model object, so pm.do, a rebuilt model or
    a second PrivateData on the same array started at 0 (three models spent 1.77 against
    Budget(1.0)), and ``ledger=PrivacyLedger()`` restarted the count."""
    first = bernoulli(labels)
    rebuilt = bernoulli(labels.copy())
    done = pm.do(first, {})
    with pm.Model() as twice:
        y_obs = pmp.PrivateData("y_obs", labels, bounds=(0, 1))
        again = pmp.PrivateData("again", labels, bounds=(0, 1))
        theta = pmp.TruncatedBeta("theta", 1, 1, lower=A, upper=1 - A)
        pm.Bernoulli("y", theta, observed=y_obs)
        pm.Bernoulli("z", theta, observed=again)
    budget = pmp.Budget(1.0)
    pmp.privatize(first, 0.6, budget=budget)
    for model in (rebuilt, done, twice):
        with pytest.raises(pmp.BudgetExceededError):
            pmp.privatize(model, 0.6, budget=budget)
        assert pmp.ledger_for(model).epsilon() == pytest.approx(0.6)
    with pytest.raises(TypeError, match="ledger"):
        pmp.privatize(first, 0.6, budget=budget, ledger=pmp.PrivacyLedger())
    with first, pytest.raises(TypeError, match="ledger"):
        pmp.sample(5, step=pmp.PrivateGibbs(), ledger=pmp.PrivacyLedger())


@pytest.mark.slow
@pytest.mark.parametrize("mp_ctx", ["fork", "spawn"])
def test_private_steps_charge_as_they_run_inside_plain_pm_sample(labels, mp_ctx):
    """The audit: ``pm.sample(step=pmp.PrivateGibbs(...))``, which the README advertised,
    charged nothing. Now every transition is charged to the data set's ledger by whichever
    process runs it (the journal is shared), with a warning that the result is not
    releasable."""
    model = bernoulli(labels)
    with model:
        step = pmp.PrivateGibbs(temperature=20.0)
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            pm.sample(
                7,
                tune=3,
                step=step,
                chains=2,
                cores=2,
                mp_ctx=mp_ctx,
                progressbar=False,
                compute_convergence_checks=False,
            )
    releases = pmp.ledger_for(model).releases
    assert len(releases) == 2 * 10 and {r.count for r in releases} == {1}
    assert pmp.ledger_for(model).epsilon() == pytest.approx(20 * step.privacy_epsilon_per_draw)


def test_plain_pm_sample_warns_that_its_result_is_not_releasable(labels):
    model = bernoulli(labels)
    with model:
        step = pmp.PrivateMetropolis(temperature=20.0)
        with pytest.warns(UserWarning, match="not releasable"):
            pm.sample(3, tune=0, step=step, chains=1, cores=1, progressbar=False)
    assert len(pmp.ledger_for(model)) == 3
    with model:  # pmp.sample plans and records the run itself: no double charge
        pmp.sample(3, step=step, chains=1, cores=1, progressbar=False)
    assert [r.count for r in pmp.ledger_for(model).releases] == [1, 1, 1, 3]


# -- 10. A pickled step held the raw data -------------------------------------------------


@pytest.fixture(scope="module")
def normal_records():
    """Float records whose 8-byte patterns cannot turn up in a pickle by chance."""
    x = np.random.default_rng(10).uniform(-2.0, 2.0, 40)
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", x, bounds=(-2.0, 2.0))
        mu = pmp.TruncatedNormal("mu", 0.0, 10.0, lower=-1.0, upper=1.0)
        pm.Normal("x", mu, 1.0, observed=x_obs)
    return model, model["x_obs"].get_value()


@pytest.mark.parametrize("kind", ["gibbs", "metropolis", "metropolis_used"])
def test_a_pickled_raw_data_step_holds_no_raw_data(normal_records, kind):
    """PyMC's steps keep their construction arguments, the model included, for unpickling,
    and PrivateMetropolis compiled the data into its function as constants: a pickled step
    (what `cores > 1` sends to each worker) carried all 40 records. Now neither the step,
    its compiled function nor its graph holds one; the data travel as a session file."""
    model, x = normal_records
    with model:
        if kind == "gibbs":
            step = pmp.PrivateGibbs(temperature=5.0, secure=False)
        else:
            step = pmp.PrivateMetropolis(temperature=5.0, secure=False)
    if kind == "metropolis_used":
        step.setup_chain(np.random.default_rng(0), tune=0, draws=0)
        step.step(model.initial_point())
    payload = cloudpickle.dumps(step)
    assert sum(value.tobytes() in payload for value in x) == 0
    copy = pickle.loads(payload)
    step.setup_chain(np.random.default_rng(1), tune=0, draws=0)
    copy.setup_chain(np.random.default_rng(1), tune=0, draws=0)
    point = model.initial_point()
    assert step.step(point)[0]["mu_interval__"] == copy.step(point)[0]["mu_interval__"]


def test_a_pickled_step_works_only_in_the_session_that_built_it(labels):
    model = bernoulli(labels)
    with model:
        step = pmp.PrivateGibbs(temperature=5.0)
    payload = cloudpickle.dumps(step)
    copy = pickle.loads(payload)
    assert copy._statistics.keys() == step._statistics.keys()
    path = Path(copy._payload._path)
    assert path.stat().st_mode & 0o077 == 0  # readable by this user only
    path.unlink()
    orphan = pickle.loads(payload)
    with pytest.raises(pmp.UnsupportedModelError, match="session"):
        orphan._statistics  # noqa: B018


# -- The second audit, of the rewritten code ---------------------------------------------


def _linear_probability(x):
    """p = x·w, which leaves [0, 1] for some records when w > 1: L is infinite, so clip."""
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", x, bounds=(0.0, 1.0))
        y_obs = pmp.PrivateData("y_obs", np.ones(20, dtype=np.int64), bounds=(0, 1))
        w = pmp.TruncatedNormal("w", 0.0, 1.0, lower=0.0, upper=2.0)
        pm.Bernoulli("obs", p=x_obs * w, observed=y_obs)
        step = pmp.PrivateMetropolis([w], clip=1.0, proposal_scale=1.0, tune=False)
    return model, step


def test_clipped_barker_terms_stay_separable_when_a_parameter_leaves_its_domain():
    """PyMC's parameter check sets every record's log-likelihood to −∞ when one record's
    p = x·w leaves [0, 1]: Λ moved by n·c (33.9 against a claimed 2.0, ε_lb 5.8). Each
    record's term is now its own; Λ moves by at most the charged 2c/T."""
    x = np.full(20, 0.5)
    neighbour = x.copy()
    neighbour[0] = 1.0
    (model, step), (_, other) = _linear_probability(x), _linear_probability(neighbour)
    rv = model["w"]
    forward = model.compile_fn(
        model.rvs_to_transforms[rv].forward(rv, *rv.owner.inputs), inputs=[rv]
    )
    for start, end in ((0.6, 1.2), (0.5, 1.9), (1.5, 0.3)):
        q0, q1 = (np.atleast_1d(forward({"w": value})) for value in (start, end))
        moved = abs(step.log_acceptance_ratio(q1, q0) - other.log_acceptance_ratio(q1, q0))
        assert moved <= step.privacy_epsilon_per_draw


def test_a_deterministic_added_after_the_step_is_refused_at_sampling(labels):
    """The step checked the model when it was built; a Deterministic added later that reads
    the data (bit-packed labels, decoded exactly from the posterior) is refused by pmp.sample
    before anything is charged."""
    model = bernoulli(labels)
    with model:
        step = pmp.PrivateGibbs(temperature=10.0)
        y_obs = model["y_obs"]
        weights = 2 ** np.arange(10)
        pm.Deterministic("leak", (y_obs[:10] * weights).sum() + 0 * model["theta"])
        with pytest.raises(pmp.UnsupportedModelError, match="Deterministic `leak`"):
            pmp.sample(5, step=step, chains=1, progressbar=False)
    assert len(pmp.ledger_for(model)) == 0


def test_set_data_makes_another_data_set_with_its_own_ledger(labels):
    """Releases after pm.set_data were charged to the data the model was declared with."""
    other = 1 - labels
    model = bernoulli(labels)
    with model:
        step = pmp.PrivateGibbs(temperature=10.0)
        pm.set_data({"y_obs": other})
    pmp.privatize(model, 1.0)
    assert pmp.ledger_for(bernoulli(other)).epsilon() == pytest.approx(1.0)
    assert pmp.ledger_for(bernoulli(labels)).epsilon() == 0.0
    with model, pytest.raises(pmp.UnsupportedModelError, match="built on other data"):
        pmp.sample(5, step=step, chains=1, progressbar=False)


def test_a_privatised_model_with_a_raw_observed_array_pays_per_draw(labels):
    """An observed array added to a privatised model was sampled for free and its ``lp``
    released; observed values are private, so the model reads raw data."""
    private = pmp.privatize(bernoulli(labels), 0.5)
    with private:
        pm.Bernoulli("obs_raw", private["theta"], observed=labels)
        with pytest.raises(pmp.UnsupportedModelError, match="choose a route"):
            pmp.sample(5, chains=1, progressbar=False)
    assert pmp.ledger_for(private).epsilon() == pytest.approx(0.5)


def test_the_same_records_in_another_encoding_are_the_same_data_set(labels):
    """Another dtype, another record order or a trailing unit axis held the same people in a
    fresh ledger."""
    budget = pmp.Budget(1.0)
    pmp.privatize(bernoulli(labels), 1.0, budget=budget)
    order = np.random.default_rng(0).permutation(labels.size)
    for encoded in (labels.astype(np.int16), labels[order], labels.astype(np.uint8)):
        with pytest.raises(pmp.BudgetExceededError):
            pmp.privatize(bernoulli(encoded), 1.0, budget=budget)


def test_a_callback_is_refused_and_a_step_used_outside_pmp_sample_is_charged(labels):
    """pmp.sample marked the caller's steps prepaid for the whole run, so draws made with
    them in a callback went unrecorded (510 drawn, 10 charged); a callback is refused now (it
    runs where everything in the process is in reach: one copied the records into a pm.Data
    a Deterministic released), and a step drawn outside the run is charged per draw."""
    model = bernoulli(labels)
    with model:
        step = pmp.PrivateGibbs(temperature=10.0)
        point = model.initial_point()

        def callback(trace, draw):
            step.step(point)

        with pytest.raises(pmp.errors.UnsupportedModelError, match="takes no callback"):
            pmp.sample(4, step=step, chains=1, cores=1, callback=callback, progressbar=False)
        assert not pmp.ledger_for(model).releases
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pmp.sample(4, step=step, chains=1, cores=1, progressbar=False)
        step.step(point)
    counts = [r.count for r in pmp.ledger_for(model).releases]
    assert counts == [4, 1]


def test_private_data_of_another_model_is_refused_not_read_as_public():
    """Review of the public-inputs change: a shared variable outside the model's own data is
    read as a public value, so a `PrivateData` of another model used in this one had its raw
    values read as public, and L (hence the claimed ε) followed them: 3.5 for records
    (1, 2, 3), 9.5 for the neighbour (1, 2, 9). It is refused on every route."""

    def model_reading(values):
        with pm.Model():
            foreign = pmp.PrivateData("foreign", values, bounds=(-10.0, 10.0))
        with pm.Model() as model:
            y_obs = pmp.PrivateData("y_obs", np.zeros(3), bounds=(0.0, 1.0))
            w = pmp.TruncatedNormal("w", 0.0, 1.0, lower=-1.0, upper=1.0)
            pm.Normal("y", w * foreign, 1.0, observed=y_obs)
        return model

    for values in (np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 9.0])):
        model = model_reading(values)
        for route in (
            pmp.analyze,
            lambda m: pmp.PrivateMetropolis(model=m),
            lambda m: pmp.privatize(m, epsilon=1.0),
        ):
            with pytest.raises(pmp.UnsupportedModelError, match="`foreign` of another model"):
                route(model)


# -- The PyMC 6 port: PyTensor 3's graphs and Numba backend --------------------------------


def _clipped(build):
    """PrivateMetropolis(clip=1) on a Normal likelihood of 20 records whose mean is
    ``build(x_obs, g_obs, mu)`` (``g_obs`` a private group index in {0, 1, 2})."""
    rng = np.random.default_rng(3)
    with pm.Model():
        x_obs = pmp.PrivateData("x_obs", rng.uniform(0, 1, 20), bounds=(0, 1))
        g_obs = pmp.PrivateData("g_obs", rng.integers(0, 3, 20), bounds=(0, 2))
        mu = pmp.TruncatedNormal("mu", 0, 1, lower=-1, upper=1)
        pm.Normal("y", build(x_obs, g_obs, mu), 1.0, observed=x_obs)
        return pmp.PrivateMetropolis(clip=1.0, secure=False)


TABLE = pt.as_tensor(np.arange(60.0).reshape(20, 3) / 60)


@pytest.mark.parametrize(
    "build",
    [
        # Row i sums table[i, g_j] over every record j: once the slices of an advanced index
        # left its inputs (PyTensor 3), g took the place of the leading index and passed.
        lambda x, g, mu: mu + TABLE[:, g].sum(axis=1),
        # A mask computed from the records selects a data-dependent number of rows.
        lambda x, g, mu: mu + TABLE[:, 0][x > 0.5],
        # An index derived from the records, whose range no declaration states.
        lambda x, g, mu: mu + TABLE[:, 0][g + 1],
    ],
    ids=["other-records-columns", "boolean-mask", "derived-index"],
)
def test_indices_that_mix_records_or_escape_their_axis_are_not_record_aligned(build):
    with pytest.raises(pmp.UnsupportedModelError, match="row by row"):
        _clipped(build)


def test_the_private_data_are_never_compiled_by_numba():
    """PyTensor 3 compiles with Numba by default, which does not check indices: a public
    index beyond its axis read whatever memory it pointed at (the private records' included)
    into every record's log-likelihood. The function that reads the records is compiled with
    the C backend, which raises, and no other mode may be asked for."""
    step = _clipped(
        lambda x, g, mu: (
            mu + pt.as_tensor(np.array([0.1, 0.2, 0.3]))[pm.Data("beyond", np.full(20, 10**6))]
        )
    )
    with pytest.raises(IndexError, match="out of bounds"):
        step.log_acceptance_ratio(np.array([0.1]), np.array([0.0]))
    with (
        bernoulli([0, 1, 1]),
        pytest.raises(pmp.UnsupportedModelError, match="may not choose the mode 'NUMBA'"),
    ):
        pmp.PrivateMetropolis(compile_kwargs={"mode": "NUMBA"})


@pytest.mark.slow
@pytest.mark.parametrize(
    ("logp", "refused"),
    [
        (lambda v, mu: pt.logsumexp(pt.stack([v * mu, -v * mu], axis=1), axis=1), False),
        (lambda v, mu: v * mu - pt.logsumexp(v * mu, axis=0, keepdims=True), True),
        (lambda v, mu: pt.logaddexp(v * mu, -v * mu) + xlogy(v, mu + 2.0), False),
    ],
    ids=["logsumexp-per-record", "logsumexp-over-records", "logaddexp-xlogy"],
)
def test_pytensor_symbolic_operations_are_read_on_their_graph(logp, refused):
    """PyTensor 3 writes logsumexp, logaddexp and xlogy as operations that hold their graph
    (they were elementwise operations and reductions): row i of one is read on that graph, so
    a reduction over the records inside it is refused like any other."""
    rng = np.random.default_rng(4)
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x_obs", rng.uniform(0, 1, 20), bounds=(0, 1))
        mu = pmp.TruncatedNormal("mu", 0, 1, lower=-1, upper=1)
        pm.CustomDist("y", mu, logp=logp, observed=x_obs)
    if refused:
        with pytest.raises(pmp.UnsupportedModelError, match=r"row i from row i"):
            pmp.PrivateMetropolis(model=model, clip=0.5, secure=False)
    else:
        step = pmp.PrivateMetropolis(model=model, clip=0.5, secure=False)
        assert np.isfinite(step.log_acceptance_ratio(np.array([0.1]), np.array([0.0])))


def test_public_indices_beyond_their_axis_are_refused_before_numba_reads_memory():
    """A public index (a constant or pm.Data) past its axis raised IndexError on PyTensor 2;
    Numba, PyTensor 3's default backend, reads the memory it points at. The analysis refuses
    one in a likelihood's parameters, pmp.sample one in a privatised model, and
    pmp.sample_posterior_predictive one among the public inputs it predicts at."""
    rng = np.random.default_rng(5)
    beyond = r"reaches beyond axis 0 \(length 3\)"
    with pm.Model() as model:
        g = pmp.PrivateData("g", rng.integers(0, 3, 40), bounds=(0, 2))
        y = pmp.PrivateData("y", rng.binomial(1, 0.4, 40), bounds=(0, 1))
        theta = pmp.TruncatedBeta("theta", 1, 1, lower=A, upper=1 - A, shape=3)
        pm.Bernoulli("obs", theta[g], observed=y)
    with pm.Model() as public_index:
        y = pmp.PrivateData("y", rng.binomial(1, 0.4, 40), bounds=(0, 1))
        theta = pmp.TruncatedBeta("theta", 1, 1, lower=A, upper=1 - A, shape=3)
        pm.Bernoulli("obs", theta[pm.Data("g", np.full(40, 3))], observed=y)
    with pytest.raises(pmp.DataBoundsError, match=beyond):
        pmp.analyze(public_index)
    private = pmp.privatize(model, 1.0, secure=False, random_seed=6)
    with private:
        pm.Potential("past_the_end", private["theta"][np.array([0, 5])].sum())
    with pytest.raises(pmp.DataBoundsError, match=r"in the privatised model reaches beyond"):
        pmp.sample(10, model=private, progressbar=False)
    fit = pmp.sample_posterior(model, n=2, budget=pmp.Budget(100.0), secure=False, random_seed=7)
    with pytest.raises(pmp.DataBoundsError, match=r"in the predicted nodes reaches beyond"):
        pmp.sample_posterior_predictive(fit, model, inputs={"g": np.array([0, 3])})
    assert pmp.sample_posterior_predictive(fit, model, inputs={"g": np.array([0, 2])})
