"""Privacy per person (issue 42, part 2): PrivateData(..., unit=ids, max_records=k) keeps each
person's first k records, and every release from it is charged per person (group privacy),
stated by the ledger; ε arguments are per person."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pymc as pm
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pymc_private as pmp
from pymc_private.analysis.core import analyze
from pymc_private.data.persons import first_records, person_codes
from pymc_private.dp.audit import epsilon_lower_bound
from pymc_private.dp.events import (
    PureEvent,
    Release,
    SubsampledGaussianEvent,
    UnitShiftGaussianEvent,
    ZcdpEvent,
)
from pymc_private.dp.ledger import PrivacyLedger, per_person_dataset
from pymc_private.errors import (
    BudgetExceededError,
    DataBoundsError,
    InvalidPrivacyParameterError,
    UnsupportedModelError,
)
from pymc_private.pay_once.plans import chosen_plan
from pymc_private.pay_once.privatize import release_statistics

A = 0.05


def _beta_bernoulli(y, ids=None, k=None, name="y_obs"):
    with pm.Model() as model:
        data = pmp.PrivateData(name, y, bounds=(0, 1), unit=ids, max_records=k)
        theta = pmp.TruncatedBeta("theta", 2.0, 2.0, lower=A, upper=1 - A)
        pm.Bernoulli("y", p=theta, observed=data)
    return model


# ---------------------------------------------------------------------------------------
# The rule: each person's first k records, in the order of the data
# ---------------------------------------------------------------------------------------


def test_each_person_keeps_the_first_k_records_in_data_order():
    ids = np.array(["b", "a", "b", "c", "b", "a", "b"])
    keep = first_records(person_codes("x", ids, 7), 2)
    assert keep.tolist() == [True, True, True, True, False, True, False]
    values = np.arange(7)
    with pm.Model():
        x = pmp.PrivateData("x", values, bounds=(0, 10), unit=ids, max_records=2)
    assert x.get_value().tolist() == [0, 1, 2, 3, 5]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 5), min_size=1, max_size=40),
    st.integers(1, 4),
    st.integers(0, 5),
    st.data(),
)
def test_the_rule_is_stable_replacing_one_persons_records_changes_no_one_elses(
    people, k, person, data
):
    """Replacing the values of one person's records keeps every other person's kept rows, and
    changes at most k kept records: the neighbouring relation the per-person cost assumes."""
    ids = np.array(people)
    values = np.arange(len(people), dtype=float)
    other = values.copy()
    rows = np.flatnonzero(ids == person)
    other[rows] = data.draw(st.lists(st.floats(-1e3, 1e3), min_size=rows.size, max_size=rows.size))
    keep = first_records(person_codes("x", ids, ids.size), k)
    assert np.array_equal(keep, first_records(person_codes("x", ids, ids.size), k))
    changed = keep & (values != other)
    assert changed.sum() <= k and set(ids[changed]) <= {person}
    for someone in set(people):
        assert (keep & (ids == someone)).sum() == min(k, (ids == someone).sum())


def test_records_beyond_k_do_not_reach_any_release():
    """Structural check: a record past its person's k-th changes nothing released, the same
    seed giving the same output (it is dropped before anything reads the data)."""
    ids = np.r_[np.zeros(5, dtype=int), np.arange(1, 60)]
    y = np.r_[np.zeros(5, dtype=int), np.arange(59) % 2]
    other = y.copy()
    other[4] = 1  # person 0's fifth record, beyond max_records=3
    outputs = []
    for values in (y, other):
        model = _beta_bernoulli(values, ids, 3)
        released = pmp.privatize(model, epsilon=1.0, secure=False, random_seed=5)
        outputs.append(np.asarray(released["counts(y_obs)"].get_value()).tolist())
    assert outputs[0] == outputs[1]


# ---------------------------------------------------------------------------------------
# Group privacy of every event type
# ---------------------------------------------------------------------------------------


def test_group_costs_of_every_event_type():
    assert PureEvent(0.5).for_group(4) == PureEvent(2.0)
    assert PureEvent(0.5).for_group(1) == PureEvent(0.5)
    grouped = PureEvent(0.5, 1e-8).for_group(3)
    assert grouped.epsilon == 1.5 and grouped.delta >= 3 * math.exp(1.0) * 1e-8
    assert grouped.delta == pytest.approx(3 * math.exp(1.0) * 1e-8, rel=1e-12)
    assert ZcdpEvent(0.1, 1e-6).for_group(3).rho >= 0.9
    assert ZcdpEvent(0.1, 1e-6).for_group(3).rho == pytest.approx(0.9, rel=1e-15)
    shift = UnitShiftGaussianEvent(sigma=3.0, shifts=2, rho=2 / 18, delta=1e-6)
    grouped_shift = shift.for_group(2)
    assert isinstance(grouped_shift, ZcdpEvent) and grouped_shift.delta == 1e-6
    assert grouped_shift.rho >= 4 * shift.rho
    assert grouped_shift.rho == pytest.approx(4 * shift.rho, rel=1e-15)
    with pytest.raises(UnsupportedModelError, match="samples records, not persons"):
        SubsampledGaussianEvent(0.01, 1.0).for_group(2)
    with pytest.raises(InvalidPrivacyParameterError, match="no guarantee"):
        PureEvent(2.0, 1e-3).for_group(10)
    for bad in (0, -1, 1.5, True, None):
        with pytest.raises(InvalidPrivacyParameterError):
            PureEvent(1.0).for_group(bad)


@given(st.floats(1e-6, 50.0), st.integers(1, 50))
def test_a_group_epsilon_is_never_rounded_down(epsilon, k):
    from fractions import Fraction

    assert Fraction(PureEvent(epsilon).for_group(k).epsilon) >= Fraction(epsilon) * k


def test_a_per_person_release_survives_journals_and_is_charged_once():
    release = Release("laplace", PureEvent(0.25), count=2).per_person(3)
    assert release.records_per_person == 3 and release.epsilon == 0.75
    assert release.per_person(3) is release and release.per_person(5) is release
    assert Release.from_dict(release.to_dict()) == release
    assert "records_per_person" not in Release("laplace", PureEvent(0.25)).to_dict()


def test_a_per_person_ledger_charges_plans_budgets_and_pickles_per_person(tmp_path):
    view = PrivacyLedger._session_view([per_person_dataset("test-persons-view", 4)])
    assert view.records_per_person == 4
    planned = [Release("laplace", PureEvent(0.25))]
    assert view.would_compose(planned).epsilon == 1.0
    with pytest.raises(BudgetExceededError):
        pmp.Budget(0.9).check(view, planned)
    assert pmp.Budget(1.0).affordable_count(view, 0.25) == 1
    view.record_all(planned)
    assert view.releases[-1].records_per_person == 4 and view.epsilon() == 1.0
    again = pickle.loads(pickle.dumps(view))
    assert again.records_per_person == 4
    assert again.charged(planned)[0].epsilon == 1.0
    assert "ε protects one person (at most 4 records each)" in view.render()
    with pytest.raises(UnsupportedModelError):
        view.record_all([Release("subsampled", SubsampledGaussianEvent(0.01, 1.0))])
    assert len(view.releases) == 1


# ---------------------------------------------------------------------------------------
# Routes: ε per person, calibrated per record; the ledger says whom it protects
# ---------------------------------------------------------------------------------------


def test_privatize_spends_epsilon_per_person_with_k_times_the_noise():
    rng = np.random.default_rng(1)
    ids = np.repeat(np.arange(300), 4)
    y = (rng.random(1200) < 0.3).astype(int)
    model = _beta_bernoulli(y, ids, 3)
    assert pmp.data.private_data(model)["y_obs"].n == 900
    pmp.privatize(model, epsilon=1.0, secure=False, random_seed=2)
    ledger = pmp.ledger_for(model)
    (release,) = ledger.releases
    assert release.records_per_person == 3 and release.epsilon <= 1.0
    assert release.epsilon == pytest.approx(1.0)
    assert ledger.protects == "one person (at most 3 records each)"
    with pytest.raises(BudgetExceededError):  # per person, the next ε = 1 does not fit 1.5
        pmp.privatize(model, epsilon=1.0, budget=pmp.Budget(1.5), secure=False)
    assert len(ledger.releases) == 1


def test_sample_posterior_states_the_per_person_epsilon_of_each_draw():
    rng = np.random.default_rng(3)
    ids = np.repeat(np.arange(100), 2)
    y = (rng.random(200) < 0.4).astype(int)
    model = _beta_bernoulli(y, ids, 2)
    idata = pmp.sample_posterior(model, n=3, temperature=50.0, random_seed=4)
    per_record = pmp.sample_posterior(_beta_bernoulli(1 - y), n=3, temperature=50.0)
    each = per_record.sample_stats["privacy_epsilon"].values
    assert np.allclose(idata.sample_stats["privacy_epsilon"].values, 2 * each)
    ledger = pmp.ledger_for(model)
    assert ledger.epsilon() == pytest.approx(2 * each.sum())
    assert ledger.protects == "one person (at most 2 records each)"
    # The same records declared per record are charged on their own ledger and on this one,
    # which then no longer speaks for persons.
    pmp.sample_posterior(_beta_bernoulli(y), n=3, temperature=50.0)
    assert ledger.epsilon() == pytest.approx(3 * each.sum())
    assert ledger.protects.startswith("one record (1 of 2 entries are charged per person")


def test_a_per_person_declaration_is_shared_by_every_private_data_of_the_model():
    ids = np.repeat(np.arange(10), 2)
    with pm.Model():
        pmp.PrivateData("x", np.zeros(20), bounds=(0, 1), unit=ids, max_records=2)
        with pytest.raises(DataBoundsError, match="same unit= and max_records="):
            pmp.PrivateData("y", np.zeros(20), bounds=(0, 1))
        with pytest.raises(DataBoundsError, match="same unit= and max_records="):
            pmp.PrivateData("z", np.zeros(20), bounds=(0, 1), unit=ids, max_records=1)
        with pytest.raises(DataBoundsError, match="same unit= and max_records="):
            pmp.PrivateData(
                "w", np.zeros(20), bounds=(0, 1), unit=np.tile(np.arange(10), 2), max_records=2
            )
        pmp.PrivateData("v", np.ones(20), bounds=(0, 1), unit=ids + 7, max_records=2)


def test_replaced_per_person_records_are_refused():
    ids = np.repeat(np.arange(10), 2)
    model = _beta_bernoulli(np.zeros(20, dtype=int), ids, 2)
    with model:
        pm.set_data({"y_obs": np.ones(20, dtype=np.int32)})
    with pytest.raises(DataBoundsError, match="declared per person"):
        pmp.data.check_private_data(model)


def test_private_bounds_per_person_compose_with_the_model_per_person():
    source = "test-persons-bounds"
    rng = np.random.default_rng(6)
    ids = np.repeat(np.arange(400), 3)
    x = np.clip(rng.normal(50, 10, 1200), 0, 100)
    bounds = pmp.private_bounds(
        x,
        1.0,
        grid=np.arange(-10.0, 121.0),
        source=source,
        unit=ids,
        max_records=2,
        secure=False,
        random_seed=7,
    )
    assert bounds.epsilon == pytest.approx(1.0) and bounds.epsilon <= 1.0
    with pm.Model() as model:
        pmp.PrivateData(
            "x", x, bounds=bounds, source=source, out_of_bounds="clip", unit=ids, max_records=2
        )
    ledger = pmp.ledger_for(model)
    assert ledger.epsilon() == pytest.approx(1.0) and ledger.records_per_person == 2
    assert all(r.records_per_person == 2 for r in ledger.releases)


# ---------------------------------------------------------------------------------------
# Bad input: a typed error before anything is read or released
# ---------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    st.one_of(
        st.integers(-5, 0),
        st.floats(allow_nan=True),
        st.booleans(),
        st.none(),
        st.text(max_size=3),
    )
)
def test_a_bad_max_records_is_refused(k):
    with pm.Model() as model:
        with pytest.raises(InvalidPrivacyParameterError, match="max_records"):
            pmp.PrivateData("x", np.zeros(4), bounds=(0, 1), unit=[1, 1, 2, 2], max_records=k)
    assert not model.data_vars


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 9), st.sampled_from([np.nan, np.inf, -np.inf, None]))
def test_a_missing_person_identifier_is_refused(position, missing):
    ids = np.arange(10, dtype=float if missing is not None else object)
    ids[position] = missing
    with pm.Model() as model:
        with pytest.raises(DataBoundsError, match="person"):
            pmp.PrivateData("x", np.zeros(10), bounds=(0, 1), unit=ids, max_records=2)
    assert not model.data_vars


@pytest.mark.parametrize(
    "unit",
    [np.arange(9), np.arange(11), np.zeros((10, 1)), np.array(["a", 1] * 5, dtype=object)],
    ids=["short", "long", "2-d", "mixed types"],
)
def test_person_identifiers_of_the_wrong_shape_or_type_are_refused(unit):
    with pm.Model() as model:
        with pytest.raises(DataBoundsError):
            pmp.PrivateData("x", np.zeros(10), bounds=(0, 1), unit=unit, max_records=2)
    assert not model.data_vars


def test_unit_and_max_records_come_together():
    with pm.Model():
        with pytest.raises(InvalidPrivacyParameterError, match="both unit="):
            pmp.PrivateData("x", np.zeros(4), bounds=(0, 1), unit=[1, 1, 2, 2])
        with pytest.raises(InvalidPrivacyParameterError, match="both unit="):
            pmp.PrivateData("y", np.zeros(4), bounds=(0, 1), max_records=2)


# ---------------------------------------------------------------------------------------
# Audit: one person's k records against another's, at the per-person claim
# ---------------------------------------------------------------------------------------

K = 3


@pytest.fixture(scope="module")
def person_release():
    """The count release of a Beta-Bernoulli model per person (k = 3), calibrated as
    privatize calibrates it (`PrivacyLedger.per_record_epsilon`) to ε per person, and the
    worst neighbours: person 0's kept records all 0 against all 1 (one more record of
    theirs, beyond k, dropped in both)."""
    ids = np.r_[np.zeros(K + 1, dtype=int), np.arange(1, 97)]
    y = np.r_[np.zeros(K + 1, dtype=int), np.arange(96) % 2]
    other = y.copy()
    other[: K + 1] = 1
    model = _beta_bernoulli(y, ids, K)
    analysis = analyze(model)
    ledger = pmp.ledger_for(model)
    keep = first_records(person_codes("y", ids, ids.size), K)

    def mechanism(epsilon_per_person, factor=1.0):
        share = ledger.per_record_epsilon(
            epsilon_per_person, lambda e: chosen_plan(analysis, e).releases()
        )
        plan = chosen_plan(analysis, share * factor, secure=False)

        def run(values, rng):
            arrays = {"y_obs": values[keep]}
            return release_statistics(analysis, arrays, plan, rng=rng).statistics["counts(y_obs)"][
                0
            ]

        return run

    return mechanism, y, other


def test_audit_per_person_release_at_its_claim_and_caught_at_half_the_noise(person_release):
    mechanism, data, neighbour = person_release
    honest = epsilon_lower_bound(mechanism(1.0), data, neighbour, n=3000, random_seed=8)
    assert honest.passes(1.0)
    assert honest.epsilon_lower_bound > 0.5
    halved = epsilon_lower_bound(mechanism(1.0, 2.0), data, neighbour, n=3000, random_seed=9)
    assert not halved.passes(1.0)


def test_the_lagged_series_recipe_states_epsilon_per_person():
    """A series of T values per person makes T − 1 (previous, next) records: with the person
    of each pair and max_records = T − 1 the ledger charges and states ε per person."""
    series = np.clip(np.cumsum(np.random.default_rng(9).normal(0, 0.5, (40, 6)), axis=1), -3, 3)
    with pm.Model() as lagged:
        x_obs = pmp.PrivateData("x_obs", series[0], bounds=(-3.0, 3.0))
        rho = pmp.TruncatedNormal("rho", 0.0, 1.0, lower=-0.99, upper=0.99)
        pm.Normal("s", rho * x_obs[:-1], 0.5, observed=x_obs[1:])
    with pytest.raises(UnsupportedModelError, match=r"max_records=T − 1"):
        analyze(lagged)
    person = np.repeat(np.arange(40), 5)
    with pm.Model() as pairs:
        previous = pmp.PrivateData(
            "previous",
            series[:, :-1].reshape(-1, 1),
            bounds=(-3.0, 3.0),
            unit=person,
            max_records=5,
        )
        following = pmp.PrivateData(
            "following",
            series[:, 1:].reshape(-1),
            bounds=(-3.0, 3.0),
            unit=person,
            max_records=5,
        )
        rho = pmp.TruncatedNormal("rho", 0.0, 1.0, lower=-0.99, upper=0.99, shape=1)
        pm.Normal("s", previous @ rho, 0.5, observed=following)
    pmp.privatize(pairs, epsilon=2.0, secure=False, random_seed=10)
    ledger = pmp.ledger_for(pairs)
    assert ledger.epsilon() <= 2.0 and ledger.epsilon() == pytest.approx(2.0)
    assert ledger.protects == "one person (at most 5 records each)"


def test_the_plan_predicts_the_per_person_noise_privatize_adds():
    """pmp.plan at ε per person predicts what privatize will add: the noise of ε/k per
    record, the same as a per-record plan at ε/k."""
    rng = np.random.default_rng(11)
    ids = np.repeat(np.arange(200), 3)
    y = (rng.random(600) < 0.3).astype(int)
    per_person = pmp.plan(_beta_bernoulli(y, ids, 3), epsilon=1.5)
    per_record = pmp.plan(_beta_bernoulli(y), epsilon=0.5)
    assert per_person.parameters[0].sd_private == pytest.approx(per_record.parameters[0].sd_private)


def test_reordered_per_person_rows_are_refused():
    """The person of each row was read at the declaration: the same records in another
    order (pm.set_data) would pair one person's rows of one array with another's of the next,
    and are refused, at the check and at every release."""
    ids = np.repeat(np.arange(40), 2)
    x = np.arange(80) % 2
    with pm.Model() as model:
        x_obs = pmp.PrivateData("x", x, bounds=(0, 1), unit=ids, max_records=2)
        pmp.PrivateData("y", x, bounds=(0, 1), unit=ids, max_records=2)
    with model:
        pm.set_data({"x": x[::-1].astype(np.int32)})
    with pytest.raises(DataBoundsError, match="reordered"):
        pmp.data.check_private_data(model)
    assert x_obs is not None


def test_per_record_data_beside_per_person_statistics_is_refused():
    ids = np.repeat(np.arange(50), 2)
    y = np.arange(100) % 2
    released = pmp.privatize(_beta_bernoulli(y, ids, 2), epsilon=1.0, secure=False)
    with released:
        extra = pmp.PrivateData("z_obs", y, bounds=(0, 1))
        phi = pmp.TruncatedBeta("phi", 2.0, 2.0, lower=A, upper=1 - A)
        pm.Bernoulli("z", p=phi, observed=extra)
    with pytest.raises(UnsupportedModelError, match="declared per record"):
        pmp.ledger_for(released)


def test_pyarrow_person_identifiers_are_read_or_refused_with_a_typed_error():
    pa = pytest.importorskip("pyarrow")
    with pm.Model():
        x = pmp.PrivateData(
            "x", np.arange(4), bounds=(0, 9), unit=pa.array(["a", "a", "b", "a"]), max_records=2
        )
        assert x.get_value().tolist() == [0, 1, 2]
        with pytest.raises(DataBoundsError, match="person"):
            pmp.PrivateData(
                "y",
                np.arange(4),
                bounds=(0, 9),
                unit=pa.array(["a", None, "b", "a"]),
                max_records=2,
            )
