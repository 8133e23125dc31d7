"""The session: one release lock per process, one session directory, and forked children.

Threads started together on one budget release exactly what fits, on every route; threads
racing to the first release share one session directory; a forked child records where its
parent does (and cannot attach a file of its own), and processes sharing a ledger file spend
exactly up to its budget together.
"""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pymc as pm
import pytest

import pymc_private as pmp
from pymc_private.dp import ledger
from pymc_private.dp.events import PureEvent, Release

# 2L/T = 0.6 on the coin model (L = ln 99): two such releases do not fit Budget(1.0).
_TEMPERATURE = 2 * np.log(99) / 0.6


def _coin(records) -> pm.Model:
    with pm.Model() as model:
        y = pmp.PrivateData("y", np.asarray(records), bounds=(0, 1))
        p = pmp.TruncatedBeta("p", 1.0, 1.0, lower=0.01, upper=0.99)
        pm.Bernoulli("obs", p, observed=y)
    return model


ROUTES = {
    "privatize": lambda model, budget: pmp.privatize(model, 0.6, budget=budget),
    "sample_posterior": lambda model, budget: pmp.sample_posterior(
        model, n=1, temperature=_TEMPERATURE, budget=budget
    ),
    "private_map": lambda model, budget: pmp.private_map(model, 0.6, budget=budget),
}


@pytest.mark.slow
@pytest.mark.parametrize("route", ROUTES)
def test_scenario_4a_threads_started_together_release_only_what_fits(route, monkeypatch):
    """Recording is slowed down (0.1 s) to widen the window between check and record that
    today's code leaves open (the issue saw both threads release in 3 of 40 trials)."""
    record_all = ledger.PrivacyLedger.record_all

    def slow_record_all(self, *args, **kwargs):
        time.sleep(0.1)
        return record_all(self, *args, **kwargs)

    monkeypatch.setattr(ledger.PrivacyLedger, "record_all", slow_record_all)
    for trial in range(3):
        model = _coin([1] * (trial + 1) + [0] * 6)  # another data set each trial
        barrier, outcomes = threading.Barrier(2), []

        def release(model=model, barrier=barrier, outcomes=outcomes):
            barrier.wait()
            try:
                ROUTES[route](model, pmp.Budget(1.0))
            except pmp.BudgetExceededError:
                outcomes.append("refused")
            else:
                outcomes.append("released")

        threads = [threading.Thread(target=release) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert sorted(outcomes) == ["refused", "released"], trial
        assert pmp.ledger_for(model).epsilon() == pytest.approx(0.6, rel=1e-3)


def test_scenario_4a_the_second_thread_is_refused_before_any_noise(monkeypatch):
    module = sys.modules["pymc_private.pay_once.privatize"]
    release_statistics, drawn = module.release_statistics, []

    def slow_release(*args, **kwargs):
        drawn.append(1)
        time.sleep(0.1)
        return release_statistics(*args, **kwargs)

    monkeypatch.setattr(module, "release_statistics", slow_release)
    model, barrier = _coin([1, 1, 0, 0, 1, 1, 1]), threading.Barrier(2)

    def release():
        barrier.wait()
        try:
            pmp.privatize(model, 0.6, budget=pmp.Budget(1.0))
        except pmp.BudgetExceededError:
            pass

    threads = [threading.Thread(target=release) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert drawn == [1]
    assert pmp.ledger_for(model).epsilon() == pytest.approx(0.6)


_FRESH = """
import json, multiprocessing, tempfile, threading, time
import numpy as np, pymc as pm
import pymc_private as pmp
from pymc_private.dp.events import PureEvent, Release

def coin():
    with pm.Model() as model:
        y = pmp.PrivateData("y", np.array([0, 1, 1, 0, 1, 1]), bounds=(0, 1))
        p = pmp.TruncatedBeta("p", 1.0, 1.0, lower=0.01, upper=0.99)
        pm.Bernoulli("obs", p, observed=y)
    return model
"""


def _fresh_process(script: str) -> dict:
    """Run ``script`` in a new interpreter (a session of its own) and return its JSON."""
    run = subprocess.run(
        [sys.executable, "-c", _FRESH + textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


@pytest.mark.slow
def test_scenario_4b_threads_racing_to_the_first_release_share_one_session_directory():
    result = _fresh_process(
        """
        made = tempfile.mkdtemp
        def slow_mkdtemp(*args, **kwargs):  # widens the race (the issue: 3 of 4 processes)
            time.sleep(0.2)
            return made(*args, **kwargs)
        tempfile.mkdtemp = slow_mkdtemp
        model, barrier = coin(), threading.Barrier(2)
        def first_release():
            barrier.wait()
            pmp.ledger_for(model).record(Release("laplace", PureEvent(0.1), statistic="s"))
        threads = [threading.Thread(target=first_release) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        print(json.dumps({"releases": len(pmp.ledger_for(model).releases)}))
        """
    )
    assert result == {"releases": 2}


@pytest.mark.slow
def test_scenario_6_a_child_forked_before_any_release_shares_its_parents_ledger():
    result = _fresh_process(
        """
        def child(model):
            pmp.privatize(model, 0.6, budget=pmp.Budget(1.0))
        model = coin()
        process = multiprocessing.get_context("fork").Process(target=child, args=(model,))
        process.start()
        process.join()
        try:
            pmp.privatize(model, 0.6, budget=pmp.Budget(1.0))
            outcome = "released"
        except pmp.BudgetExceededError:
            outcome = "refused"
        eps = pmp.ledger_for(model).epsilon()
        print(json.dumps({"child": process.exitcode, "parent": outcome, "ledger": eps}))
        """
    )
    # Today the child made a session directory of its own: 1.2 released against Budget(1.0).
    assert result == {"child": 0, "parent": "refused", "ledger": 0.6}


@pytest.mark.slow
def test_children_forked_before_the_records_are_declared_share_their_ledger():
    """Workers that load the data themselves, after the fork, name it as their parent does."""
    result = _fresh_process(
        """
        def child():
            try:
                pmp.privatize(coin(), 0.6, budget=pmp.Budget(1.0))
            except pmp.BudgetExceededError:
                raise SystemExit(3)
        codes = []
        for _ in range(2):
            process = multiprocessing.get_context("fork").Process(target=child)
            process.start()
            process.join()
            codes.append(process.exitcode)
        print(json.dumps({"children": codes, "parent": pmp.ledger_for(coin()).epsilon()}))
        """
    )
    # Before: each child named the records by a random id of its own; 1.8 against 1.0.
    assert result == {"children": [0, 3], "parent": 0.6}


def test_a_session_journal_removed_while_the_session_runs_is_refused():
    """A temporary-file cleaner removes a journal: a new view must not start it afresh."""
    from pymc_private.dp import session

    model = _coin([0, 1, 1, 0, 1, 1])
    pmp.privatize(model, 0.6, budget=pmp.Budget(1.0))
    (dataset,) = {spec.dataset for spec in pmp.data.private_data(model).values()}
    (session.directory() / f"{dataset}.jsonl").unlink()
    with pm.Model() as wider:  # the same records with another column: a new ledger view
        y = pmp.PrivateData("y", np.array([0, 1, 1, 0, 1, 1]), bounds=(0, 1))
        z = pmp.PrivateData("z", np.array([1, 1, 0, 0, 1, 0]), bounds=(0, 1))
        p = pmp.TruncatedBeta("p", 1.0, 1.0, lower=0.01, upper=0.99, shape=2)
        pm.Bernoulli("obs", p[z], observed=y)
    with pytest.raises(pmp.errors.LedgerIntegrityError, match="was removed while this session ran"):
        pmp.privatize(wider, 0.6, budget=pmp.Budget(1.0))


def _attach_and_release(path: str, model, send) -> None:
    outcomes = []
    try:
        pmp.PrivacyLedger.open(path, budget=pmp.Budget(5.0)).attach(model)
        outcomes.append("attached")
    except pmp.UnsupportedModelError as error:
        outcomes.append("forked" if "forked" in str(error) else repr(error))
    pmp.privatize(model, 0.2)
    send.send(outcomes)


def test_scenario_6_a_forked_child_records_where_its_parent_does_and_attaches_nothing_else(
    tmp_path,
):
    model = _coin([0, 1, 1, 0, 1, 1])
    parent_file, child_file = tmp_path / "parent.ledger", tmp_path / "child.ledger"
    pmp.PrivacyLedger.open(parent_file, budget=pmp.Budget(5.0)).attach(model)
    pmp.privatize(model, 0.3)
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_attach_and_release, args=(str(child_file), model, send))
    child.start()
    outcomes = receive.recv()
    child.join(60)
    # Today the child copied the parent's 0.3 into its own file.
    assert outcomes == ["forked"]
    assert pmp.PrivacyLedger.open(child_file).epsilon() == 0.0
    assert pmp.PrivacyLedger.open(parent_file).epsilon() == pytest.approx(0.5)
    assert pmp.ledger_for(model).epsilon() == pytest.approx(0.5)


def _record_once(model, send) -> None:
    pmp.ledger_for(model).record(Release("laplace", PureEvent(0.1), statistic="s"))
    send.send("recorded")


def test_a_fork_waits_for_a_release_in_progress_and_the_child_can_release():
    from pymc_private.dp import session

    model, holding, forked = _coin([1, 0, 1]), threading.Event(), threading.Event()

    def release_in_progress():
        with session.releasing():
            holding.set()
            forked.wait(0.3)  # the fork below cannot happen while the lock is held

    thread = threading.Thread(target=release_in_progress)
    thread.start()
    assert holding.wait(30)
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_record_once, args=(model, send))
    child.start()
    forked.set()
    assert receive.recv() == "recorded"
    child.join(60)
    thread.join()
    assert pmp.ledger_for(model).epsilon() == pytest.approx(0.1)


def _privatize_until_refused(model, barrier, queue) -> None:
    barrier.wait()
    released = 0
    while True:
        try:
            pmp.privatize(model, 0.1)
        except pmp.BudgetExceededError:
            break
        released += 1
    queue.put(released)


def test_six_processes_sharing_a_ledger_file_spend_exactly_its_budget(tmp_path):
    model = _coin([1, 1, 1, 0, 0, 1])
    path = tmp_path / "shared.ledger"
    pmp.PrivacyLedger.open(path, budget=pmp.Budget(3.0)).attach(model)
    pmp.privatize(model, 0.1)  # compiled before the fork
    context = multiprocessing.get_context("fork")
    barrier, queue = context.Barrier(6), context.Queue()
    workers = [
        context.Process(target=_privatize_until_refused, args=(model, barrier, queue))
        for _ in range(6)
    ]
    for worker in workers:
        worker.start()
    released = sum(queue.get(timeout=120) for _ in workers)
    for worker in workers:
        worker.join(60)
    # Thirty releases of 0.1 fit 3.0 exactly (exact sums): the warm-up and 29 more.
    assert released == 29
    assert len(pmp.PrivacyLedger.open(path).releases) == 30
    assert pmp.ledger_for(model).epsilon() == 3.0
