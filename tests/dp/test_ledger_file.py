"""Ledgers that outlive a session: `PrivacyLedger.open(path)` and `attach`.

A file made by `open` holds its budget; every release recorded in it is checked and appended
under one exclusive lock (processes sharing it never spend past the budget together) and is
on disk before it returns; a line torn by a crash never hides the releases around it.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import textwrap
import warnings
from fractions import Fraction

import hypothesis.strategies as st
import numpy as np
import pandas as pd
import pymc as pm
import pytest
from hypothesis import HealthCheck, given, settings

import pymc_private as pmp
from pymc_private.dp.events import PureEvent, Release
from pymc_private.errors import BudgetExceededError, InvalidPrivacyParameterError

SPEND = Release("laplace", PureEvent(0.1), statistic="s")


def _releases_in(path) -> list[dict]:
    with open(path) as handle:
        entries = [json.loads(line)["entry"] for line in handle if line.strip()]
    return [entry["release"] for entry in entries if "uid" in entry]


def test_open_creates_the_file_with_its_budget_and_reopening_reads_it(tmp_path):
    path = tmp_path / "census.ledger"
    ledger = pmp.PrivacyLedger.open(path, budget=pmp.Budget(1.0, delta=1e-6))
    assert ledger.budget == pmp.Budget(1.0, delta=1e-6) and len(ledger) == 0
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    ledger.record(SPEND)
    again = pmp.PrivacyLedger.open(path)
    assert again.budget == pmp.Budget(1.0, delta=1e-6) and again.releases == (SPEND,)
    assert pmp.PrivacyLedger.open(path, budget=pmp.Budget(1.0, delta=1e-6)).releases == (SPEND,)


def test_a_different_budget_or_a_foreign_file_is_refused(tmp_path):
    path = tmp_path / "census.ledger"
    pmp.PrivacyLedger.open(path, budget=pmp.Budget(1.0))
    with pytest.raises(InvalidPrivacyParameterError, match="fixed when the ledger is created"):
        pmp.PrivacyLedger.open(path, budget=pmp.Budget(2.0))
    foreign = tmp_path / "notes.txt"
    foreign.write_text("not a ledger\n")
    with pytest.raises(InvalidPrivacyParameterError, match="not a pymc-private ledger"):
        pmp.PrivacyLedger.open(foreign)
    assert foreign.read_text() == "not a ledger\n"
    with pytest.raises(InvalidPrivacyParameterError, match=r"pmp\.Budget"):
        pmp.PrivacyLedger.open(tmp_path / "other.ledger", budget=1.0)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(spends=st.lists(st.sampled_from([0.05, 0.1, 0.25, 0.5, 1.0]), max_size=12))
def test_the_file_never_holds_more_than_its_budget_and_refusals_write_nothing(tmp_path, spends):
    path = tmp_path / f"ledger-{os.urandom(6).hex()}"
    ledger = pmp.PrivacyLedger.open(path, budget=pmp.Budget(1.0))
    total = Fraction(0)  # the exact sum of the ε's binary values, rounded once to compare
    for epsilon in spends:
        before = path.read_bytes()
        try:
            ledger.record(Release("laplace", PureEvent(epsilon), statistic="s"))
        except BudgetExceededError:
            assert path.read_bytes() == before
            assert float(total + Fraction(epsilon)) > 1
        else:
            total += Fraction(epsilon)
    assert sum(Fraction(r["epsilon"]) for r in _releases_in(path)) == total
    assert float(total) <= 1


def _spend_until_refused(path: str, queue) -> None:
    ledger = pmp.PrivacyLedger.open(path)
    accepted = 0
    while True:
        try:
            ledger.record(SPEND)
        except BudgetExceededError:
            break
        accepted += 1
    queue.put(accepted)


def test_processes_sharing_the_file_never_spend_past_its_budget_together(tmp_path):
    path = str(tmp_path / "shared.ledger")
    pmp.PrivacyLedger.open(path, budget=pmp.Budget(3.0))
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    workers = [context.Process(target=_spend_until_refused, args=(path, queue)) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    accepted = [queue.get(timeout=5) for _ in workers]
    # Thirty spends of 0.1 fit 3.0 exactly (exact sums); not one more, whoever records it.
    assert sum(accepted) == 30 == len(_releases_in(path))


@pytest.mark.slow
def test_a_crash_loses_no_recorded_release_and_a_torn_line_hides_nothing(tmp_path):
    path = tmp_path / "odometer.ledger"
    script = textwrap.dedent(
        f"""
        import os
        import pymc_private as pmp
        from pymc_private.dp.events import PureEvent, Release
        ledger = pmp.PrivacyLedger.open({str(path)!r}, budget=pmp.Budget(1.0))
        ledger.record(Release("laplace", PureEvent(0.25), statistic="s"))
        os._exit(3)  # dies at once: no cleanup, no flush of Python buffers
        """
    )
    run = subprocess.run([sys.executable, "-c", script], timeout=120)
    assert run.returncode == 3
    with open(path, "ab") as handle:  # a second crash in the middle of writing a line
        handle.write(b'{"uid": "torn", "release": {"mechanism": "lap')
    ledger = pmp.PrivacyLedger.open(path)
    assert [r.epsilon for r in ledger.releases] == [0.25]
    ledger.record(Release("laplace", PureEvent(0.5), statistic="s"))
    reopened = pmp.PrivacyLedger.open(path)
    assert [r.epsilon for r in reopened.releases] == [0.25, 0.5]
    with pytest.raises(BudgetExceededError, match=r"odometer\.ledger"):
        reopened.record(Release("laplace", PureEvent(0.5), statistic="s"))


def test_attach_charges_the_file_with_this_and_earlier_releases_and_its_budget_holds(
    tmp_path, coin_model, monkeypatch
):
    path = tmp_path / "coin.ledger"
    earlier = pmp.privatize(coin_model, 0.25)  # before attach: copied into the file
    odometer = pmp.PrivacyLedger.open(path, budget=pmp.Budget(1.0))
    odometer.attach(coin_model)
    assert [r["epsilon"] for r in _releases_in(path)] == [0.25]
    pmp.privatize(coin_model, 0.5)
    assert [r["epsilon"] for r in _releases_in(path)] == [0.25, 0.5]
    # The file's budget is checked before any noise, with no budget= passed.
    drawn = []
    monkeypatch.setattr(
        sys.modules["pymc_private.dp.mechanisms"],
        "discrete_laplace",
        lambda *a, **k: drawn.append(1),
    )
    before = path.read_bytes()
    with pytest.raises(BudgetExceededError):
        pmp.privatize(coin_model, 0.5)
    assert drawn == [] and path.read_bytes() == before
    assert pmp.ledger_for(earlier).epsilon() == pytest.approx(0.75)


@pytest.mark.slow
def test_a_later_session_sees_the_file_and_is_refused_past_its_budget(tmp_path):
    path = tmp_path / "days.ledger"
    pmp.PrivacyLedger.open(path, budget=pmp.Budget(1.0)).record(Release("laplace", PureEvent(0.75)))
    script = textwrap.dedent(
        f"""
        import numpy as np, pymc as pm
        import pymc_private as pmp
        with pm.Model() as model:
            y = pmp.PrivateData("y", np.array([0, 1, 1]), bounds=(0, 1))
            p = pmp.TruncatedBeta("p", 1.0, 1.0, lower=0.01, upper=0.99)
            pm.Bernoulli("obs", p, observed=y)
        pmp.PrivacyLedger.open({str(path)!r}).attach(model)
        assert pmp.ledger_for(model).epsilon() == 0.75
        try:
            pmp.privatize(model, 0.5)
        except pmp.BudgetExceededError:
            print("refused")
        pmp.privatize(model, 0.25)
        print("released")
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["refused", "released"]
    assert [r["epsilon"] for r in _releases_in(path)] == [0.75, 0.25]


def test_attach_needs_a_ledger_file_and_private_data(tmp_path, coin_model):
    with pytest.raises(pmp.UnsupportedModelError, match=r"PrivacyLedger\.open"):
        pmp.PrivacyLedger().attach(coin_model)
    with pm.Model() as public:
        pm.Normal("x", 0.0, 1.0)
    with pytest.raises(pmp.UnsupportedModelError, match="no private data set"):
        pmp.PrivacyLedger.open(tmp_path / "x.ledger").attach(public)


def _survey(values, source="survey-2026") -> pm.Model:
    declared = {} if source is None else {"source": source}
    with pm.Model() as model:
        y = pmp.PrivateData("y", values, bounds=(0, 1), **declared)
        p = pmp.TruncatedBeta("p", 1.0, 1.0, lower=0.01, upper=0.99)
        pm.Bernoulli("obs", p, observed=y)
    return model


SURVEY = np.array([0, 1, 1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0, 1, 0, 0, 1, 1, 0])


def test_scenario_5_data_from_the_same_source_is_charged_to_its_ledger_file(tmp_path):
    path = tmp_path / "survey.ledger"
    odometer = pmp.PrivacyLedger.open(path, budget=pmp.Budget(1.0), source="survey-2026")
    original = _survey(SURVEY)
    odometer.attach(original)
    pmp.privatize(original, 0.6)
    corrected = SURVEY.copy()
    corrected[3] = 1
    # Today a corrected record was another data set: 1.2 released against the file's 1.0.
    with pytest.raises(BudgetExceededError, match="over the budget ε = 1"):
        pmp.privatize(_survey(corrected), 0.6)
    pmp.privatize(_survey(SURVEY[:12]), 0.3)  # a subset of the rows
    with pytest.raises(BudgetExceededError):
        pmp.privatize(_survey(pd.Series(SURVEY).astype("Int64")), 0.2)  # another container
    with original:
        pm.set_data({"y": corrected.astype(np.int32)})
    pmp.data.check_private_data(original)
    with pytest.raises(BudgetExceededError):
        pmp.privatize(original, 0.2)
    assert [r["epsilon"] for r in _releases_in(path)] == [0.6, 0.3]
    assert pmp.ledger_for(_survey(SURVEY[5:])).epsilon() == pytest.approx(0.9)


def test_scenario_5_without_a_source_a_release_on_uncovered_data_warns(tmp_path):
    odometer = pmp.PrivacyLedger.open(tmp_path / "survey.ledger", budget=pmp.Budget(1.0))
    odometer.attach(_survey(SURVEY, source=None))
    corrected = SURVEY.copy()
    corrected[3] = 1
    with pytest.warns(pmp.errors.UncoveredDataWarning, match="source="):
        pmp.privatize(_survey(corrected, source=None), 0.6)


def test_the_same_records_with_and_without_their_source_share_one_budget():
    """A helper that forgot source= declares the same records: they are charged together."""
    pmp.privatize(_survey(SURVEY), 0.6, budget=pmp.Budget(1.0), secure=False)
    with pytest.raises(BudgetExceededError, match="over the budget ε = 1"):
        pmp.privatize(_survey(SURVEY, source=None), 0.6, budget=pmp.Budget(1.0), secure=False)
    assert pmp.ledger_for(_survey(SURVEY, source=None)).epsilon() == pytest.approx(0.6)


def test_a_file_of_a_source_is_charged_silently_for_its_records_declared_either_way(tmp_path):
    """The README's workflow warns of nothing; the records declared later without their source
    (a helper that forgot source=) are charged to the file too, and so are records declared
    with the source earlier in the session (a correction) when declared again without it;
    records never declared with the source warn."""
    path = tmp_path / "survey.ledger"
    odometer = pmp.PrivacyLedger.open(path, budget=pmp.Budget(5.0), source="survey-2026")
    original = _survey(SURVEY)
    odometer.attach(original)
    corrected = SURVEY.copy()
    corrected[3] = 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", pmp.errors.UncoveredDataWarning)
        pmp.privatize(original, 0.6, secure=False)
        pmp.privatize(_survey(corrected), 0.6, secure=False)
        pmp.privatize(_survey(SURVEY, source=None), 0.6, secure=False)
        pmp.privatize(_survey(corrected, source=None), 0.6, secure=False)
    assert [r["epsilon"] for r in _releases_in(path)] == [0.6, 0.6, 0.6, 0.6]
    unlinked = SURVEY.copy()
    unlinked[1] = 0  # the digest is of the multiset of records: one 1 fewer
    with pytest.warns(pmp.errors.UncoveredDataWarning, match="source="):
        pmp.privatize(_survey(unlinked, source=None), 0.6, secure=False)


def test_a_ledger_file_of_a_source_charges_only_that_source(tmp_path):
    path = tmp_path / "survey.ledger"
    odometer = pmp.PrivacyLedger.open(path, budget=pmp.Budget(1.0), source="survey-2026")
    with pytest.raises(pmp.UnsupportedModelError, match="source='survey-2026'"):
        odometer.attach(_survey(SURVEY, source="census-2020"))
    with pytest.raises(InvalidPrivacyParameterError, match="source"):
        pmp.PrivacyLedger.open(path, source="census-2020")
    assert pmp.PrivacyLedger.open(path, source="survey-2026").budget == pmp.Budget(1.0)


@settings(max_examples=40, deadline=None)
@given(
    source=st.one_of(
        st.just(""),
        st.text(min_size=201, max_size=210),
        st.text(min_size=1).map(lambda s: f" {s}"),
        st.text(alphabet="\n\t\x00", min_size=1),
        st.integers(),
        st.binary(min_size=1),
    )
)
def test_an_invalid_source_is_refused_before_anything_is_registered(source):
    with pm.Model() as model:
        with pytest.raises(InvalidPrivacyParameterError, match="source"):
            pmp.PrivateData("y", SURVEY, bounds=(0, 1), source=source)
    assert not model.data_vars
