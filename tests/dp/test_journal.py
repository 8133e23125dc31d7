"""Journals that land whole or fail, and that fail closed (`pymc_private.dp.journal`).

After every scenario the ledger holds at least what was released, and no release is returned
whose line is not on disk: a full disk (``RLIMIT_FSIZE`` with ``SIGXFSZ`` ignored, which makes
write(2) fail as on a full disk) makes the release raise, its noise discarded; a changed,
removed or inserted line, an emptied file or an edited header is refused, naming the line;
only the line a crash tore, the last one, is skipped.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import multiprocessing
import os
import resource
import signal
import sys

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

import pymc_private as pmp
from pymc_private.dp import journal
from pymc_private.dp.events import PureEvent, Release

SPEND = Release("laplace", PureEvent(0.3), statistic="s")


def _entries(path) -> list[dict]:
    with open(path, "rb") as handle:
        return [json.loads(line)["entry"] for line in handle.read().splitlines()]


def _spent(path) -> float:
    return sum(
        e["release"]["epsilon"] * e["release"]["count"] for e in _entries(path) if "uid" in e
    )


def _in_child(target, *args) -> dict:
    """Run ``target(*args)`` in a forked child (whose file size limit it may lower) and
    return what it sends back."""
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_report, args=(send, target, *args))
    child.start()
    send.close()
    result = receive.recv()
    child.join(60)
    return result


def _report(send, target, *args) -> None:
    try:
        send.send(target(*args))
    except BaseException as error:  # the test shows it
        send.send({"error": repr(error)})


def _limit_file_size(limit: int) -> None:
    """Files may not grow past ``limit`` bytes; write(2) then fails with EFBIG (SIGXFSZ
    ignored), exactly as it fails with ENOSPC on a full disk."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))


def _privatize_on_a_full_disk(model, path) -> dict:
    size = os.path.getsize(path)
    line = size - len(open(path, "rb").readline())  # one release line (the warm-up's)
    _limit_file_size(size + line + line // 2)  # room for one more line and a half
    outcomes = []
    for _ in range(3):
        try:
            pmp.privatize(model, 0.4)
        except Exception as error:
            outcomes.append(type(error).__name__)
        else:
            outcomes.append("returned")
    _limit_file_size(resource.RLIM_INFINITY)
    return {
        "outcomes": outcomes,
        "file": pmp.PrivacyLedger.open(path).epsilon(),
        "session": pmp.ledger_for(model).epsilon(),
    }


def test_scenario_1_a_full_disk_refuses_the_release_and_the_file_holds_what_was_returned(
    tmp_path, coin_model
):
    path = tmp_path / "survey.ledger"
    odometer = pmp.PrivacyLedger.open(path, budget=pmp.Budget(1.0))
    odometer.attach(coin_model)
    pmp.privatize(coin_model, 0.1)  # warm-up: compiled, one release line in the file
    result = _in_child(_privatize_on_a_full_disk, coin_model, str(path))
    assert "error" not in result, result
    # Today: the second release was returned with a torn line (0.9 released, the file said
    # 0.5), the third raised a bare OSError after its noise was drawn.
    assert result["outcomes"] == ["returned", "LedgerWriteError", "LedgerWriteError"]
    assert result["file"] == pytest.approx(0.5) == result["session"] == _spent(path)


def _privatize_with_the_temp_directory_full(model, journal) -> dict:
    _limit_file_size(os.path.getsize(journal) + 10)
    outcomes = []
    for space in (False, True, True):
        if space:
            _limit_file_size(resource.RLIM_INFINITY)
        try:
            pmp.privatize(model, 0.9, budget=pmp.Budget(1.0))
        except Exception as error:
            outcomes.append(type(error).__name__)
        else:
            outcomes.append("returned")
    return {"outcomes": outcomes, "session": pmp.ledger_for(model).epsilon()}


def test_scenario_2_the_session_ledger_refuses_a_release_it_cannot_record(coin_model):
    pmp.privatize(coin_model, 0.05)  # warm-up: the session journal exists
    journal = pmp.ledger_for(coin_model).journals[0]
    result = _in_child(_privatize_with_the_temp_directory_full, coin_model, journal)
    assert "error" not in result, result
    # Today: returned with the journal full (the ledger said 0.05), and again with space back.
    assert result["outcomes"] == ["LedgerWriteError", "returned", "BudgetExceededError"]
    assert result["session"] == pytest.approx(0.95)


def _written(path, count: int = 3) -> bytes:
    ledger = pmp.PrivacyLedger.open(path, budget=pmp.Budget(1.0))
    for _ in range(count):
        ledger.record(SPEND)
    return path.read_bytes()


def test_scenario_3_a_changed_byte_refuses_open_and_every_release_before_any_noise(
    tmp_path, coin_model, monkeypatch
):
    path = tmp_path / "survey.ledger"
    _written(path)
    odometer = pmp.PrivacyLedger.open(path)
    odometer.attach(coin_model)
    lines = path.read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b'"epsilon":0.3', b'"epsilon":0.1')  # the second release
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(pmp.errors.LedgerIntegrityError, match=r"survey\.ledger, line 3"):
        pmp.PrivacyLedger.open(path)
    drawn = []
    monkeypatch.setattr(
        sys.modules["pymc_private.dp.mechanisms"],
        "discrete_laplace",
        lambda *a, **k: drawn.append(1),
    )
    # Today: the file said 0.6 and a fourth 0.3 was accepted against Budget(1.0).
    with pytest.raises(pmp.errors.LedgerIntegrityError, match="line 3"):
        pmp.privatize(coin_model, 0.3)
    assert drawn == []


def test_scenario_3_an_unparseable_or_removed_line_is_refused_not_skipped(tmp_path):
    path = tmp_path / "survey.ledger"
    lines = _written(path).split(b"\n")
    path.write_bytes(b"\n".join([*lines[:2], lines[2][:-5] + b"#" + lines[2][-4:], *lines[3:]]))
    with pytest.raises(pmp.errors.LedgerIntegrityError, match="line 3"):
        pmp.PrivacyLedger.open(path)
    path.write_bytes(b"\n".join([lines[0], *lines[2:]]))  # the first release removed
    with pytest.raises(pmp.errors.LedgerIntegrityError, match="line 2"):
        pmp.PrivacyLedger.open(path)


def test_scenario_3_an_emptied_file_or_an_edited_budget_is_refused(tmp_path):
    path = tmp_path / "survey.ledger"
    text = _written(path)
    path.write_bytes(b"")  # today: silently re-created with the budget passed next
    with pytest.raises(pmp.errors.LedgerIntegrityError, match="empty"):
        pmp.PrivacyLedger.open(path, budget=pmp.Budget(5.0))
    assert path.read_bytes() == b""
    path.write_bytes(text.replace(b'"epsilon":1.0', b'"epsilon":9.0', 1))
    with pytest.raises(pmp.errors.LedgerIntegrityError, match="line 1"):
        pmp.PrivacyLedger.open(path)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(where=st.floats(0, 1, exclude_max=True), byte=st.integers(0, 255))
def test_any_changed_byte_of_a_ledger_file_is_refused(tmp_path, where, byte):
    path = tmp_path / f"ledger-{os.urandom(6).hex()}"
    text = bytearray(_written(path))
    position = int(where * len(text))
    if text[position] == byte:
        return
    text[position] = byte
    path.write_bytes(bytes(text))
    with pytest.raises((pmp.errors.LedgerIntegrityError, pmp.InvalidPrivacyParameterError)):
        pmp.PrivacyLedger.open(path)


def test_a_line_torn_by_a_crash_is_skipped_and_cut_off_by_the_next_append(tmp_path):
    path = tmp_path / "survey.ledger"
    text = _written(path, count=2)
    torn = b'{"chain":"' + b"0" * 30
    path.write_bytes(text + torn)  # a third append that never completed
    ledger = pmp.PrivacyLedger.open(path)
    assert [r.epsilon for r in ledger.releases] == [0.3, 0.3]
    ledger.record(Release("laplace", PureEvent(0.2), statistic="s"))
    assert torn not in path.read_bytes()
    assert [r.epsilon for r in pmp.PrivacyLedger.open(path).releases] == [0.3, 0.3, 0.2]
    # A last line that is whole but whose newline was changed was damaged, not torn.
    path.write_bytes(path.read_bytes()[:-1] + b" ")
    with pytest.raises(pmp.errors.LedgerIntegrityError, match="last byte"):
        pmp.PrivacyLedger.open(path)


def test_a_whole_last_line_without_its_newline_is_counted_and_ended(tmp_path):
    """A crash just before the final newline, or a lost last byte: the whole, chained release
    is counted (the safe side), a release over the budget is refused, and the next append ends
    the line before its own (attack review: it was skipped, 1.5 released against 1.0)."""
    path = tmp_path / "survey.ledger"
    ledger = pmp.PrivacyLedger.open(path, budget=pmp.Budget(1.0))
    for _ in range(2):
        ledger.record(Release("laplace", PureEvent(0.5), statistic="s"))
    path.write_bytes(path.read_bytes()[:-1])
    reopened = pmp.PrivacyLedger.open(path)
    assert reopened.epsilon() == pytest.approx(1.0)
    with pytest.raises(pmp.BudgetExceededError):
        reopened.record(Release("laplace", PureEvent(0.5), statistic="s"))
    roomy = tmp_path / "roomy.ledger"
    ledger = pmp.PrivacyLedger.open(roomy, budget=pmp.Budget(2.0))
    ledger.record(Release("laplace", PureEvent(0.5), statistic="s"))
    roomy.write_bytes(roomy.read_bytes()[:-1])
    again = pmp.PrivacyLedger.open(roomy)
    again.record(Release("laplace", PureEvent(0.25), statistic="s"))
    assert roomy.read_bytes().endswith(b"\n")
    assert [r.epsilon for r in pmp.PrivacyLedger.open(roomy).releases] == [0.5, 0.25]
    assert [r.epsilon for r in ledger.releases] == [0.5, 0.25]  # the first view reads on


def test_a_file_truncated_or_replaced_while_attached_is_refused(tmp_path, coin_model):
    path = tmp_path / "survey.ledger"
    text = _written(path, count=2)
    odometer = pmp.PrivacyLedger.open(path)
    odometer.attach(coin_model)
    assert pmp.ledger_for(coin_model).epsilon() == pytest.approx(0.6)
    path.write_bytes(text[: text.rfind(b"\n", 0, len(text) - 1) + 1])  # the last line cut off
    with pytest.raises(pmp.errors.LedgerIntegrityError, match="shorter"):
        pmp.ledger_for(coin_model).epsilon()
    path.unlink()
    pmp.PrivacyLedger.open(path, budget=pmp.Budget(1.0))  # a new file at the same path
    with pytest.raises(pmp.errors.LedgerIntegrityError, match="replaced"):
        pmp.privatize(coin_model, 0.1)


def _record_until_killed(path: str, send) -> None:
    ledger = pmp.PrivacyLedger.open(path)
    while True:
        ledger.record(Release("laplace", PureEvent(0.001), statistic="s"))
        send.send(1)  # only after the line is on disk


def test_a_process_killed_mid_append_leaves_a_file_the_next_process_reads(tmp_path):
    path = tmp_path / "survey.ledger"
    pmp.PrivacyLedger.open(path, budget=pmp.Budget(100.0))
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_record_until_killed, args=(str(path), send))
    child.start()
    returned = 0
    while returned < 200:
        returned += receive.recv()
    os.kill(child.pid, signal.SIGKILL)
    child.join(30)
    while receive.poll():
        returned += receive.recv()
    ledger = pmp.PrivacyLedger.open(path)
    assert len(ledger.releases) >= returned
    ledger.record(SPEND)
    assert len(pmp.PrivacyLedger.open(path).releases) == len(ledger.releases)


def test_a_budget_changes_only_by_a_logged_reset_that_keeps_every_release(tmp_path, caplog):
    path = tmp_path / "survey.ledger"
    _written(path, count=3)
    ledger = pmp.PrivacyLedger.open(path)
    with pytest.raises(pmp.InvalidPrivacyParameterError, match="reset_budget"):
        pmp.PrivacyLedger.open(path, budget=pmp.Budget(2.0))
    with pytest.raises(pmp.InvalidPrivacyParameterError, match="reason"):
        ledger.reset_budget(pmp.Budget(2.0), reason=" ")
    with caplog.at_level(logging.WARNING, logger="pymc_private"):
        ledger.reset_budget(pmp.Budget(2.0), reason="approved by the board, 2026-05-04")
    assert "approved by the board" in caplog.text
    reopened = pmp.PrivacyLedger.open(path, budget=pmp.Budget(2.0))
    assert reopened.epsilon() == pytest.approx(0.9)
    assert _entries(path)[-1]["previous"] == {"epsilon": 1.0, "delta": 0.0}
    reopened.record(Release("laplace", PureEvent(1.1), statistic="s"))
    with pytest.raises(pmp.BudgetExceededError):
        ledger.record(SPEND)  # the other handle sees the reset and the spend


def test_a_ledger_file_of_format_1_is_refused_until_migrated(tmp_path, caplog):
    path = tmp_path / "old.ledger"
    header = {"format": "pymc_private.odometer", "version": 1, "budget": {"epsilon": 1.0}}
    header["budget"]["delta"] = 0.0
    lines = [json.dumps(header)]
    lines += [json.dumps({"uid": f"u{i}", "release": SPEND.to_dict()}) for i in range(2)]
    lines.insert(2, '{"uid": "torn", "release": {"mech')  # closed off by format 1
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(pmp.errors.LedgerError, match=r"PrivacyLedger\.migrate"):
        pmp.PrivacyLedger.open(path)
    with caplog.at_level(logging.WARNING, logger="pymc_private"):
        migrated = pmp.PrivacyLedger.migrate(path)
    assert "lines [3]" in caplog.text
    assert migrated.budget == pmp.Budget(1.0) and migrated.epsilon() == pytest.approx(0.6)
    assert (tmp_path / "old.ledger.format1").read_text() == "\n".join(lines) + "\n"
    assert pmp.PrivacyLedger.open(path).releases == (SPEND, SPEND)


# --------------------------------------------------------------------------------------
# A torn tail never refunds silently (issue 35, item 4): the commit record counts the
# committed lines, so a cut (mid-line or at a line's end) is refused, while the incomplete
# line of an append a crash interrupted, which no commit covers, is skipped and logged.
# --------------------------------------------------------------------------------------


def _chain_verifies(path) -> bool:
    """Every line is the canonical line of its entry, chained by SHA-256 to the one before."""
    previous = b""
    for line in path.read_bytes().splitlines():
        value = json.loads(line)
        entry = json.dumps(value["entry"], sort_keys=True, separators=(",", ":")).encode()
        chain = hashlib.sha256(previous + entry).digest()
        if value["chain"] != chain.hex():
            return False
        previous = chain
    return True


def _committed_lines(path) -> int:
    """The lines the newer slot of the commit record of ``path`` commits."""
    text = (path.parent / (path.name + ".commit")).read_bytes()
    slots = [json.loads(text[:160]), json.loads(text[160:])]
    return max(slots, key=lambda slot: slot["sequence"])["lines"]


@pytest.mark.parametrize("cut", [40, "line"], ids=["40 bytes", "the whole last line"])
def test_a_cut_tail_is_refused_not_refunded(tmp_path, cut):
    """The attack of issue 35: three releases of 0.3 against Budget(1.0), the end of the file
    cut while no process held it (today: the last line read as torn by a crash, its 0.3
    refunded, and a fourth 0.3 accepted, 1.2 spent against 1.0)."""
    path = tmp_path / "survey.ledger"
    text = _written(path, count=3)
    assert _committed_lines(path) == 4  # the header and three releases
    before = pmp.PrivacyLedger.open(path)
    end = len(text) - 40 if cut == 40 else text.rfind(b"\n", 0, len(text) - 1) + 1
    path.write_bytes(text[:end])
    with pytest.raises(
        pmp.errors.LedgerIntegrityError, match="holds 3 whole lines, but its commit"
    ):
        pmp.PrivacyLedger.open(path)
    with pytest.raises(pmp.errors.LedgerIntegrityError, match="shorter"):
        before.record(SPEND)
    with pytest.raises(pmp.errors.LedgerIntegrityError):
        pmp.PrivacyLedger.open(path).record(SPEND)
    assert path.read_bytes() == text[:end]


def _crash_in_the_middle_of_an_append(path: str) -> None:
    """Record a release whose line write stops half-way, then die at once, holding the lock:
    a power loss in the middle of the append."""
    ledger = pmp.PrivacyLedger.open(path)

    def half_then_crash(descriptor, data, durable=True):
        os.write(descriptor, data[: len(data) // 2])
        os._exit(3)

    journal.__dict__["_write_whole"] = half_then_crash
    ledger.record(Release("laplace", PureEvent(0.25), statistic="s"))


def test_an_append_a_crash_interrupted_is_skipped_logged_and_cut_off(tmp_path, caplog):
    path = tmp_path / "survey.ledger"
    text = _written(path, count=2)
    context = multiprocessing.get_context("fork")
    child = context.Process(target=_crash_in_the_middle_of_an_append, args=(str(path),))
    child.start()
    child.join(60)
    assert child.exitcode == 3
    torn = path.read_bytes()[len(text) :]
    assert torn and not torn.endswith(b"\n") and _committed_lines(path) == 3
    with caplog.at_level(logging.WARNING, logger="pymc_private"):
        ledger = pmp.PrivacyLedger.open(path)
    # Its release was never returned: skipped, and said so (the file, the bytes).
    assert [r.epsilon for r in ledger.releases] == [0.3, 0.3]
    assert f"{path} ends in an incomplete line of {len(torn)} bytes" in caplog.text
    ledger.record(Release("laplace", PureEvent(0.4), statistic="s"))
    assert torn not in path.read_bytes()
    assert [r.epsilon for r in pmp.PrivacyLedger.open(path).releases] == [0.3, 0.3, 0.4]
    assert _committed_lines(path) == 4 and _chain_verifies(path)
    with pytest.raises(pmp.BudgetExceededError):
        ledger.record(SPEND)


def test_a_crash_between_a_line_and_its_commit_counts_the_line(tmp_path):
    # The line is on disk, its commit record not yet rewritten: the release was not returned,
    # but the whole line counts (the safe side), and the next commit covers it.
    path = tmp_path / "survey.ledger"
    _written(path, count=2)
    record = path.parent / (path.name + ".commit")
    stale = record.read_bytes()
    pmp.PrivacyLedger.open(path).record(SPEND)
    committed = record.read_bytes()
    # The crash before the commit; then one tearing the commit's slot half-way: the older
    # slot holds (a torn slot fails its checksum), and the whole line counts.
    newer = 0 if committed[:160] != stale[:160] else 160
    torn = committed[: newer + 80] + stale[newer + 80 :]
    for record_text in (stale, torn):
        record.write_bytes(record_text)
        ledger = pmp.PrivacyLedger.open(path)
        assert ledger.epsilon() == pytest.approx(0.9)
        with pytest.raises(pmp.BudgetExceededError):
            ledger.record(SPEND)
    ledger.record(Release("laplace", PureEvent(0.1), statistic="s"))
    assert _committed_lines(path) == 5 and pmp.PrivacyLedger.open(path).epsilon() == 1.0


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    spends=st.lists(st.sampled_from([0.05, 0.1, 0.3]), min_size=1, max_size=4),
    where=st.floats(0, 1, exclude_max=True),
    record=st.booleans(),
)
def test_no_cut_of_a_ledger_file_or_its_record_counts_less_than_was_committed(
    tmp_path, spends, where, record
):
    path = tmp_path / f"ledger-{os.urandom(6).hex()}"
    ledger = pmp.PrivacyLedger.open(path, budget=pmp.Budget(2.0))
    for epsilon in spends:
        ledger.record(Release("laplace", PureEvent(epsilon), statistic="s"))
    committed = ledger.epsilon()
    target = path.parent / (path.name + ".commit") if record else path
    text = target.read_bytes()
    target.write_bytes(text[: int(where * len(text))])
    try:
        reopened = pmp.PrivacyLedger.open(path)
    except (pmp.errors.LedgerIntegrityError, pmp.InvalidPrivacyParameterError):
        return
    # Only the newline of the last line can go unnoticed: its line is whole and counted.
    assert reopened.epsilon() >= committed
    assert _chain_verifies(path) or not path.read_bytes().endswith(b"\n")


def _legacy_file(path, spends) -> bytes:
    """A ledger file as pymc-private wrote it before commit records (format 2, no
    ``commit_record`` in the header, no record beside it)."""
    header = {
        "kind": "odometer",
        "budget": {"epsilon": 1.0, "delta": 0.0},
        "source": None,
        "format": "pymc_private.journal",
        "version": 2,
        "file": "0" * 32,
        "created": "2026-01-01T00:00:00+00:00",
    }
    lines, chain = [], b""
    entries = [
        {"uid": f"{i:032x}", "release": Release("laplace", PureEvent(e), statistic="s").to_dict()}
        for i, e in enumerate(spends)
    ]
    for entry in [header, *entries]:
        line, chain = journal._line(entry, chain)
        lines.append(line)
    path.write_bytes(b"".join(lines))
    return b"".join(lines)


def test_a_file_written_before_commit_records_reads_as_before_but_never_skips_a_torn_line(
    tmp_path, caplog
):
    path = tmp_path / "old.ledger"
    text = _legacy_file(path, [0.3, 0.3, 0.3])
    assert pmp.PrivacyLedger.open(path).epsilon() == pytest.approx(0.9)  # the same total
    assert not (tmp_path / "old.ledger.commit").exists()
    path.write_bytes(text[:-40])  # no record to tell a crash from a cut: refused
    with pytest.raises(pmp.errors.LedgerIntegrityError, match=r"incomplete line of [0-9]+ bytes"):
        pmp.PrivacyLedger.open(path)
    with pytest.raises(pmp.InvalidPrivacyParameterError, match="reason"):
        pmp.PrivacyLedger.acknowledge_torn_line(path, reason="")
    assert path.read_bytes() == text[:-40]
    torn = len(text[:-40]) - (text[:-40].rfind(b"\n") + 1)
    with caplog.at_level(logging.WARNING, logger="pymc_private"):
        pmp.PrivacyLedger.acknowledge_torn_line(path, reason="the power cut of 2026-05-04")
    assert f"({torn} bytes" in caplog.text and "power cut" in caplog.text
    ledger = pmp.PrivacyLedger.open(path)
    assert ledger.epsilon() == pytest.approx(0.6)
    assert _entries(path)[-1]["torn"]["bytes"] == torn and _chain_verifies(path)
    assert _committed_lines(path) == 4  # the header, two releases, the acknowledgement
    with pytest.raises(pmp.InvalidPrivacyParameterError, match="nothing to acknowledge"):
        pmp.PrivacyLedger.acknowledge_torn_line(path, reason="again")
    ledger.record(SPEND)
    cut = path.read_bytes()
    path.write_bytes(cut[: cut.rfind(b"\n", 0, len(cut) - 1) + 1])  # now a cut is refused
    with pytest.raises(pmp.errors.LedgerIntegrityError, match="commit record says 5"):
        pmp.PrivacyLedger.open(path)


def test_a_missing_or_foreign_commit_record_is_refused(tmp_path):
    path = tmp_path / "survey.ledger"
    _written(path, count=2)
    record = tmp_path / "survey.ledger.commit"
    other = tmp_path / "other.ledger"
    _written(other, count=2)
    kept = record.read_bytes()
    record.unlink()
    with pytest.raises(pmp.errors.LedgerIntegrityError, match="is missing"):
        pmp.PrivacyLedger.open(path)
    record.write_bytes((tmp_path / "other.ledger.commit").read_bytes())
    with pytest.raises(pmp.errors.LedgerIntegrityError, match="another journal"):
        pmp.PrivacyLedger.open(path)
    record.write_bytes(kept)
    assert pmp.PrivacyLedger.open(path).epsilon() == pytest.approx(0.6)
    fresh = tmp_path / "fresh.ledger"
    pmp.PrivacyLedger.open(fresh, budget=pmp.Budget(1.0))
    (tmp_path / "fresh.ledger.commit").unlink()  # a crash right after creating the file
    assert pmp.PrivacyLedger.open(fresh).epsilon() == 0.0


def test_a_commit_that_fails_discards_the_release_and_its_line_counts(tmp_path, monkeypatch):
    # The line is on disk, its commit could not be written (a full disk): the release is
    # discarded, and its line stays and counts, the safe side (the record may hold either).
    path = tmp_path / "survey.ledger"
    _written(path, count=1)
    ledger = pmp.PrivacyLedger.open(path)

    def no_space(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(journal.os, "pwrite", no_space)
    with pytest.raises(pmp.errors.LedgerWriteError, match="lines stay in the journals and count"):
        ledger.record(SPEND)
    monkeypatch.undo()
    assert _committed_lines(path) == 2
    assert pmp.PrivacyLedger.open(path).epsilon() == pytest.approx(0.6)
    ledger.record(SPEND)
    assert _committed_lines(path) == 4 and _chain_verifies(path)
