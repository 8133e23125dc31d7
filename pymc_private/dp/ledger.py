"""The privacy ledger: every release made from one data set, kept in memory or in journal files.

`PrivacyLedger` is the only place where releases are composed (by
`pymc_private.dp.composition`) and checked against budgets (`pymc_private.dp.budget`). A
ledger may live in journal files (`pymc_private.dp.journal`): the session's journal of each
data set (`pymc_private.dp.session`), and ledger files made by `PrivacyLedger.open` that
outlive the session. The ledger knows data sets by their ids only; which data sets a model
reads, and so which ledger charges it, is the data layer's business (`pymc_private.data.ledgers`).
"""

from __future__ import annotations

import fcntl
import html
import json
import logging
import math
import os
import uuid
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

import numpy as np

from pymc_private.dp import session
from pymc_private.dp.budget import Budget
from pymc_private.dp.checks import checked_delta
from pymc_private.dp.composition import (
    Composition,
    Groups,
    add_releases,
    compose,
    counts_of,
    gaussian_mu,
    groups_of,
    has_rdp_only,
    leaked_delta,
    rounded,
    six_digits,
    unavoidable_delta,
    validated_releases,
)
from pymc_private.dp.events import PrivacyEvent, PureEvent, Release
from pymc_private.dp.journal import LEGACY_FORMAT, SESSION_KIND, Journal, locked, replace
from pymc_private.dp.risk import (
    FALSE_POSITIVE_RATES,
    AttackerRisk,
    checked_false_positive_rates,
    true_positive_bound,
)
from pymc_private.errors import (
    BudgetExceededError,
    InvalidPrivacyParameterError,
    LedgerIntegrityError,
    UncoveredDataWarning,
    UnsupportedModelError,
)

__all__ = [
    "PrivacyLedger",
    "checked_source",
    "dataset_records_per_person",
    "per_person_dataset",
    "per_record_epsilon",
]

_LEDGER_FORMAT = "pymc_private.PrivacyLedger"
_LEDGER_VERSION = 1

# The header fields of a journal made for a ledger that is not a ledger file (`open`), and of
# the journals of the session directory (not fsync'ed: see `pymc_private.dp.journal`).
_JOURNAL_HEADER = {"kind": "journal", "budget": None, "source": None}
_SESSION_HEADER = {**_JOURNAL_HEADER, "kind": SESSION_KIND}
_ODOMETER = "odometer"
# The suffix of the copy `PrivacyLedger.migrate` keeps of a format-1 ledger file.
_FORMAT_1_BACKUP = ".format1"
_LOG = logging.getLogger("pymc_private")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class _Book:
    """A journal as a ledger reads it: the releases it holds (each uid once, also as an
    in-memory ledger for its budget check), its budget (the header's, or the last logged
    `PrivacyLedger.reset_budget`) and the source its header names."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        header = journal.header
        self.kind = header.get("kind")
        self.source = header.get("source")
        self.budget = self._budget(header.get("budget"), 1)
        self.ledger = PrivacyLedger()
        self._uids: set[str] = set()

    @property
    def path(self) -> str:
        return self.journal.path

    def _budget(self, fields: Any, line: int) -> Budget | None:
        try:
            return None if fields is None else Budget(**fields)
        except (TypeError, InvalidPrivacyParameterError):
            raise LedgerIntegrityError(
                f"The ledger journal {self.path}, line {line}, holds no valid budget; it was "
                "not written by pymc-private. Restore the file from a backup."
            ) from None

    def read_new(self) -> list[tuple[str, Release]]:
        """The releases appended since the last call (budget resets are applied)."""
        out = []
        for line, entry in self.journal.refresh():
            if set(entry) == {"uid", "release"}:
                try:
                    release = Release.from_dict(dict(entry["release"]))
                    uid = entry["uid"]
                    if not isinstance(uid, str):
                        raise TypeError(uid)
                except (TypeError, ValueError, InvalidPrivacyParameterError):
                    raise LedgerIntegrityError(
                        f"The ledger journal {self.path}, line {line}, holds no valid release: "
                        "it was not written by this version of pymc-private. Restore the file "
                        "from a backup."
                    ) from None
                if uid not in self._uids:
                    self._uids.add(uid)
                    self.ledger.record(release)
                out.append((uid, release))
            elif set(entry) == {"budget", "previous", "reason", "time"}:
                self.budget = self._budget(entry["budget"], line)
            elif set(entry) == {"torn", "reason", "time"}:
                pass  # an incomplete line cut off by `PrivacyLedger.acknowledge_torn_line`
            else:
                raise LedgerIntegrityError(
                    f"The ledger journal {self.path}, line {line}, is of a kind this version of "
                    "pymc-private does not know (a newer version wrote it?): use that version."
                )
        return out

    def check(self, planned: list[Release]) -> None:
        """Refuse ``planned`` if it does not fit the journal's budget with everything the
        file holds (call under the file's lock, after reading it, for an atomic
        check-and-append)."""
        if self.budget is None:
            return
        try:
            self.budget.check(self.ledger, planned)
        except BudgetExceededError as error:
            raise BudgetExceededError(f"The ledger {self.path}: {error}") from None


class PrivacyLedger:
    """Every release made from one data set, and their composition.

    Parameters
    ----------
    releases
        Releases to record at once (as `record_all`).
    journals
        Paths of append-only journal files to keep the ledger in (created if missing, in the
        checked format of `pymc_private.dp.journal`, each with its commit record beside it).
        Every release recorded is written whole to each of them, ``fsync``'ed and committed
        before `record_all` returns, and every read
        (`releases`, `composition`, a `Budget` check, ...) first picks up and checks what any
        process appended since, so a ledger shared by the worker processes of ``pm.sample``
        sees their charges. A ledger over several journals is the union of their releases
        (each recorded release appears once). Without journals the ledger lives in memory.

    Notes
    -----
    The ledger is append-only. A `Release` with ``count=k`` stands for k identical releases
    composed in sequence; releases of ε = 0 cost nothing but are kept as documentation.
    Compositions are cached on the ledger's contents, so asking twice is free.
    """

    def __init__(self, releases: Iterable[Release] = (), *, journals: Iterable = ()) -> None:
        books = [_Book(Journal.open(path, create=_JOURNAL_HEADER)) for path in journals]
        self._start(books)
        self.record_all(releases)

    def _start(self, books: list[_Book]) -> None:
        self._releases: list[Release] = []
        self._counts: dict[PrivacyEvent, int] = {}
        self._books = books
        self._seen: set[str] = set()
        # The data sets of a session's ledger view (`dataset_ledger`), for its coverage check.
        self._datasets: tuple[str, ...] = ()
        # The records one person contributes at most to the data sets of a session's view
        # when they were declared per person (`charged`), else None.
        self._unit: int | None = None
        self._warned = False
        self._sync()

    @property
    def records_per_person(self) -> int | None:
        """k when this ledger charges its releases per person (its data sets were declared
        with ``PrivateData(..., unit=..., max_records=k)``), else None (per record)."""
        return self._unit

    def charged(self, releases: Iterable[Release]) -> tuple[Release, ...]:
        """The releases as this ledger charges them: per person (`Release.per_person`, group
        privacy for k records) when its data sets bound the records per person, else as
        they are. Every recording and budget check reads them so.

        Raises
        ------
        UnsupportedModelError
            A release with no per-person cost (a subsampled step) on per-person data.
        """
        return tuple(release.per_person(self._unit) for release in releases)

    def per_record_epsilon(
        self, epsilon: float, releases_at: Callable[[float], list[Release]], delta: float = 0.0
    ) -> float:
        """The ε at which a route calibrates its noise per record so that what this ledger
        charges for it (`charged`) composes to at most ``epsilon`` at ``delta``
        (`per_record_epsilon` at this ledger's k)."""
        return per_record_epsilon(epsilon, self._unit, releases_at, delta)

    @property
    def journals(self) -> tuple[str, ...]:
        """The journal files of the ledger (empty for an in-memory ledger)."""
        return tuple(book.path for book in self._books)

    @classmethod
    def open(
        cls, path, budget: Budget | None = None, *, source: str | None = None
    ) -> PrivacyLedger:
        """A ledger kept in the file ``path``, across sessions and processes: an odometer.

        The file is created on first use, whole, with ``budget`` and ``source`` in its header
        (mode 0600); later opens, from any process, read them back (pass the same ones or
        none). A different budget is refused: change it with `reset_budget`, which keeps every
        release and logs the change in the file. `attach` a model to charge the file with every
        release from the private data the model reads.

        Every release recorded in the file is checked against its budget and appended in one
        step under an exclusive file lock, so processes sharing the file can never together
        spend past the budget (`BudgetExceededError`, nothing written). Its line is written
        whole and on disk (``fsync``) before the release is returned; if it cannot be
        (`LedgerWriteError`: a full disk, a file size limit), the file is cut back and the
        release is discarded. So a run that crashes has recorded every release it returned
        (`pmp.sample` records a run's whole planned spend before it draws). Every line carries
        a checksum chained to the lines before it: a file with a changed, removed or inserted
        line, or an edited header, is refused (`LedgerIntegrityError`, naming the line), as
        is an empty file. Beside it, the commit record ``path + ".commit"`` counts the lines
        committed (rewritten whole after each release's line is on disk, before the release
        is returned): a file whose committed lines were cut off, at a line's end or in its
        middle, is refused; only an incomplete last line that no commit covers (an append a
        crash interrupted) is skipped, with a warning (see :ref:`accounting-files` for what the
        files protect against and what they cannot). Keep and move the two files together.
        The file holds releases (mechanism, ε, δ, counts), never data.

        Parameters
        ----------
        path
            The ledger file.
        budget
            What every release recorded in the file may cost together (None: no limit).
        source
            The data source the file is the ledger of (as declared by
            ``pmp.PrivateData(..., source=...)``): `attach` then charges every data set of
            that source, whichever records it holds. None: the file charges the data sets of
            the models it is attached to.

        Raises
        ------
        InvalidPrivacyParameterError
            ``budget`` not a `Budget` or different from the file's, ``source`` invalid or
            different from the file's, or ``path`` an existing file that is not a ledger file.
        LedgerIntegrityError
            The file fails its checks (see above).
        LedgerError
            A ledger file of format 1, written by an earlier pymc-private: `migrate` it.
        """
        if budget is not None and not isinstance(budget, Budget):
            raise InvalidPrivacyParameterError(
                f"budget must be a pmp.Budget or None, got {type(budget).__name__}."
            )
        source = checked_source(source)
        header = {"kind": _ODOMETER, "budget": None if budget is None else asdict(budget)}
        journal = Journal.open(path, create={**header, "source": source})
        book = _Book(journal)
        if book.kind != _ODOMETER:
            raise InvalidPrivacyParameterError(
                f"{journal.path} is a ledger journal, not a ledger file made by "
                "PrivacyLedger.open: pass the path of a file made by PrivacyLedger.open, or a "
                "new path."
            )
        ledger = cls.__new__(cls)
        ledger._start([book])
        if budget is not None and budget != book.budget:
            raise InvalidPrivacyParameterError(
                f"The ledger {journal.path} has budget {book.budget}, not {budget}: a budget "
                "is fixed when the ledger is created. Open it without budget= to use its own; "
                "to change it, keeping every release it holds, call "
                "PrivacyLedger.open(path).reset_budget(budget, reason=...), which logs the "
                "change in the file."
            )
        if source is not None and source != book.source:
            raise InvalidPrivacyParameterError(
                f"The ledger {journal.path} is the ledger of source {book.source!r}, not "
                f"{source!r}: a source is fixed when the file is created. Open it without "
                "source=, or create a ledger file for this source."
            )
        if book.source is not None:
            session.note_opened(book.source, ledger)
        return ledger

    @classmethod
    def migrate(cls, path) -> PrivacyLedger:
        """Rewrite a ledger file of format 1 (written by an earlier pymc-private, without
        checksums) in the current format, with its budget and every release it holds, and
        open it; the original is kept beside it as ``path + ".format1"``.

        Run it once, while no process uses the file (a process of the earlier version would
        go on writing to the original). A complete line of the old file that does not parse
        (a line torn by a crash, which format 1 kept, or damage) cannot be told apart and is
        not carried over: its line numbers are logged and kept in the new header
        (``migrated``).

        Raises
        ------
        InvalidPrivacyParameterError
            ``path`` is not a ledger file of format 1.
        """
        path = os.path.abspath(os.fspath(path))
        with session.releasing():
            descriptor = os.open(path, os.O_RDWR | os.O_CLOEXEC)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX)
                with os.fdopen(os.dup(descriptor), "rb") as handle:
                    lines = handle.read().split(b"\n")
                header = _legacy(lines[0])
                if header is None or header.get("format") != LEGACY_FORMAT:
                    raise InvalidPrivacyParameterError(
                        f"{path} is not a ledger file of format 1; PrivacyLedger.open reads "
                        "the current format."
                    )
                entries, skipped = [], []
                for number, line in enumerate(lines[1:-1], start=2):
                    entry = _legacy(line)
                    try:
                        release = Release.from_dict(dict(entry["release"]))
                        entries.append({"uid": str(entry["uid"]), "release": release.to_dict()})
                    except (TypeError, KeyError, ValueError, InvalidPrivacyParameterError):
                        skipped.append(number)
                fields = {"kind": _ODOMETER, "budget": header.get("budget"), "source": None}
                fields["migrated"] = {"from_format": 1, "skipped_lines": skipped}
                replace(path, fields, entries, path + _FORMAT_1_BACKUP)
            finally:
                os.close(descriptor)
        if skipped:
            _LOG.warning(
                "Migrating %s: lines %s of the format-1 file did not parse (torn by a crash, or "
                "damaged) and were not carried over.",
                path,
                skipped,
            )
        return cls.open(path)

    @classmethod
    def acknowledge_torn_line(cls, path, *, reason: str) -> None:
        """Cut off the incomplete last line of a ledger file that has no commit record (one
        written by a pymc-private that kept none), after its custodian has established that a
        process crashed while recording it, so that its release was never returned. Then open
        the file as before.

        Without a commit record such a line cannot be told from a release that was returned
        and then cut short, so the file refuses every release until this is called. The cut
        (the line's size and SHA-256, the reason, the time) is appended to the file as a
        checked line and logged on the ``pymc_private`` logger; the file then has a commit
        record.

        Raises
        ------
        InvalidPrivacyParameterError
            ``reason`` is not a non-empty string, or the file does not end in an incomplete
            line.
        LedgerIntegrityError
            The file fails another check (see `open`).
        """
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidPrivacyParameterError(
                "reason must say how the incomplete line came about (e.g. the crash it is the "
                "tear of); it is kept in the ledger file."
            )
        journal = Journal.open(path)
        with locked([journal]) as held:
            size, digest = journal.cut_torn_line()
            entry = {"torn": {"bytes": size, "sha256": digest}, "reason": reason, "time": _now()}
            held.append([(journal, [entry])])
        _LOG.warning(
            "The incomplete last line of the ledger file %s (%d bytes, SHA-256 %s) was cut off "
            "as the tear of a crash: %s",
            journal.path,
            size,
            digest,
            reason,
        )

    @property
    def budget(self) -> Budget | None:
        """The budget of a ledger made by `open` (None if it was created without one, and
        for other ledgers)."""
        budgets = self.budgets
        return budgets[0] if len(self._books) == 1 and budgets else None

    @property
    def budgets(self) -> tuple[Budget, ...]:
        """The budgets of the ledger files this ledger writes to (`open`, `attach`), as they
        are now (a `reset_budget` from any process included): every release recorded here must
        fit each of them."""
        self._sync()
        return tuple(book.budget for book in self._books if book.budget is not None)

    def limits(self, budget: Budget | None = None) -> tuple[Budget, ...]:
        """What a release from this ledger's data must fit: ``budget`` (a call's own, when
        given) and the budgets of the ledger's files (`budgets`)."""
        return tuple(limit for limit in (budget, *self.budgets) if limit is not None)

    def _odometer(self, action: str) -> _Book:
        if len(self._books) != 1 or self._books[0].kind != _ODOMETER:
            raise UnsupportedModelError(
                f"Only a ledger made by pmp.PrivacyLedger.open(path) can {action}."
            )
        return self._books[0]

    def reset_budget(self, budget: Budget, *, reason: str) -> None:
        """Give the ledger file (made by `open`) a new budget, keeping every release it holds.

        The change is appended to the file as a checked line (new and previous budget, the
        reason, the time) and logged on the ``pymc_private`` logger; every process using the
        file checks against the new budget from its next release on.

        Raises
        ------
        InvalidPrivacyParameterError
            ``budget`` not a `Budget`, or ``reason`` not a non-empty string.
        UnsupportedModelError
            The ledger is not a file made by `open`.
        """
        book = self._odometer("have its budget reset")
        if not isinstance(budget, Budget):
            raise InvalidPrivacyParameterError(
                f"budget must be a pmp.Budget, got {type(budget).__name__}."
            )
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidPrivacyParameterError(
                "reason must say why the budget changes (e.g. who approved it); it is kept "
                "in the ledger file."
            )
        with locked([book.journal]) as held:
            self._sync()
            previous = book.budget
            entry = {"budget": asdict(budget), "previous": previous and asdict(previous)}
            held.append([(book.journal, [{**entry, "reason": reason, "time": _now()}])])
            self._sync()
        _LOG.warning(
            "The budget of the ledger file %s was reset from %s to %s: %s",
            book.path,
            previous,
            budget,
            reason,
        )

    def _attach_datasets(self, datasets: Iterable[str]) -> None:
        """Charge this ledger (made by `open`) with every release from the data sets of ids
        ``datasets``, in this process, from now on, and with what this session released from
        them earlier: the session's side of `pymc_private.data.ledgers.PrivacyLedger.attach`, which
        finds the data sets a model reads.

        A process forked from one whose session it shares (see `pymc_private.dp.session`)
        can attach only the files its parent attached: attach in the parent before forking.

        Raises
        ------
        UnsupportedModelError
            The ledger is not a file made by `open`, or a forked child attaches a file of its
            own.
        """
        book = self._odometer("be attached to a model")
        with session.releasing():
            attached = session.attached()
            for dataset in datasets:
                if book.path in attached.get(dataset, {}):
                    continue
                if session.forked():
                    raise UnsupportedModelError(
                        f"This process was forked from a process whose session it shares, and "
                        f"{book.path} is not attached there: a forked child records where its "
                        "parent does. Attach the file in the parent before forking, or start "
                        "this process with the 'spawn' method (a session of its own)."
                    )
                self._copy_session(book, dataset)
                attached.setdefault(dataset, {})[book.path] = book.journal.header_line
                for key, view in session.views().items():
                    if dataset in key and book.path not in view.journals:
                        view._books.append(_attached_book(book.path, book.journal.header_line))
        self._sync()

    @staticmethod
    def _copy_session(book: _Book, dataset: str) -> None:
        """Append to the file what this session released from ``dataset`` and the file does
        not hold yet, with the same uids (so each release appears once), without a budget
        check: it was made."""
        session_book = _Book(Journal.open(session.journal(dataset), create=_SESSION_HEADER))
        file_book = _attached_book(book.path, book.journal.header_line)
        with locked([session_book.journal, file_book.journal]) as held:
            in_file = {uid for uid, _ in file_book.read_new()}
            entries = [
                {"uid": uid, "release": release.to_dict()}
                for uid, release in session_book.read_new()
                if uid not in in_file
            ]
            if entries:
                held.append([(file_book.journal, entries)])

    @classmethod
    def _session_view(cls, datasets: Iterable[str]) -> PrivacyLedger:
        """The ledger of everything released from the given private data sets (by the ids
        `pymc_private.data.declaration` gives them): the union of their journals in the session
        directory
        and of the ledger files attached to them, one per set of data sets in the session. A
        release recorded in it is recorded for each of them, charged per person (`charged`)
        for the largest k among the ids of per-person data sets (`per_person_dataset`)."""
        key = tuple(sorted(set(datasets)))
        with session.releasing():
            views = session.views()
            ledger = views.get(key)
            if ledger is None:
                books = [
                    _Book(Journal.open(session.journal(d), create=_SESSION_HEADER)) for d in key
                ]
                files = {p: h for d in key for p, h in session.attached().get(d, {}).items()}
                books.extend(_attached_book(p, h) for p, h in files.items())
                ledger = views[key] = cls.__new__(cls)
                ledger._start(books)
                ledger._datasets = key
                ledger._unit = max(
                    (k for k in map(dataset_records_per_person, key) if k is not None), default=None
                )
        return ledger

    def _sync(self) -> None:
        """Add what the journals gained since the last read (from any process), checked."""
        with session.releasing():
            for book in self._books:
                for uid, release in book.read_new():
                    if uid not in self._seen:
                        self._seen.add(uid)
                        self._releases.append(release)
                        add_releases(self._counts, [release])

    def __getstate__(self) -> dict[str, Any]:
        if self._books:
            return {"journals": self.journals, "unit": self._unit}
        return {"releases": list(self._releases)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state.get("releases", ()), journals=state.get("journals", ()))
        self._unit = state.get("unit")

    def record(self, release: Release, *, budget: Budget | None = None) -> None:
        """Append one release (see `record_all`)."""
        self.record_all([release], budget=budget)

    def record_all(self, releases: Iterable[Release], *, budget: Budget | None = None) -> None:
        """Append every release, or none of them.

        With journals, under the process's release lock and an exclusive lock on every
        journal: everything the journals hold is read (and checked) first, then the releases
        are checked against ``budget`` (a call's own, against the whole ledger) and the budget
        of every ledger file among the journals (against what that file holds), and written
        whole to every journal and ``fsync``'ed, before this returns. Nothing is written when
        any of this fails.

        Raises
        ------
        TypeError
            An item is not a `Release`.
        BudgetExceededError
            The releases do not fit ``budget`` or a ledger file's budget.
        LedgerWriteError
            A journal could not take the lines whole (every journal is cut back).
        LedgerIntegrityError
            A journal fails its checks.
        """
        items = self.charged(validated_releases(releases, "releases"))
        if not items:
            return
        with session.releasing():
            if not self._books:
                if budget is not None:
                    budget.check(self, items)
                self._releases.extend(items)
                add_releases(self._counts, items)
                return
            entries = [{"uid": uuid.uuid4().hex, "release": item.to_dict()} for item in items]
            with locked([book.journal for book in self._books]) as held:
                self._sync()
                if budget is not None:
                    budget.check(self, items)
                for book in self._books:
                    book.check(items)
                held.append([(book.journal, entries) for book in self._books])
                self._sync()
        self._warn_uncovered()

    def _warn_uncovered(self) -> None:
        """Warn once if this session's view reads a data set no attached file covers while
        the session has attached files (`UncoveredDataWarning`)."""
        attached = session.attached()

        def covered(dataset: str) -> bool:
            # Attached to the data set, or to a source its records were declared with here.
            by_source = session.sources(dataset).intersection(self._datasets)
            return bool(attached.get(dataset)) or any(attached.get(s) for s in by_source)

        if self._warned or not attached or all(covered(d) for d in self._datasets):
            return
        self._warned = True
        warnings.warn(
            "This release reads a private data set that no ledger file attached in this "
            "session covers (the attached files cover other data sets): it is charged to this "
            "session's ledger only, not to a file's budget. If it comes from the same people "
            "as an attached file's data (a corrected record, a subset of rows or columns, "
            "another container), declare the same source for both, pmp.PrivateData(..., "
            "source=...), and attach the file to it; otherwise attach its own ledger file.",
            UncoveredDataWarning,
            stacklevel=3,
        )

    @property
    def releases(self) -> tuple[Release, ...]:
        """The recorded releases, in order."""
        self._sync()
        return tuple(self._releases)

    def __len__(self) -> int:
        return len(self.releases)

    def spent(self) -> dict[PrivacyEvent, int]:
        """The releases recorded so far, counted by event (a copy, synced with the journals
        first): what a `Budget` judges (`pymc_private.dp.budget.Spending`)."""
        self._sync()
        return dict(self._counts)

    def _groups(self, planned: Iterable[Release] = ()) -> Groups:
        counts = self.spent()
        add_releases(counts, planned)
        return groups_of(counts)

    def composition(self, delta: float = 0.0) -> Composition:
        """The tightest (ε, δ) guarantee of everything recorded, at the given δ.

        Parameters
        ----------
        delta
            Target δ. With 0 the answer is the plain sum Σ ε_i, exact for pure ε-DP. With
            δ > 0 it is the smallest of the plain sum, dp-accounting's PLD accountant (when
            its grid is small enough), the RDP bound and, for unit-shift discrete Gaussian
            releases of one σ alone, their exact privacy profile; ``method`` says which.

        Raises
        ------
        InvalidPrivacyParameterError
            If ``delta`` is outside [0, 1) or below the unavoidable δ = 1 − Π(1 − δ_i) of
            releases that are not pure.
        """
        return compose(self._groups(), checked_delta(delta))

    def epsilon(self, delta: float = 0.0) -> float:
        """The composed ε at ``delta`` (see `composition`)."""
        return self.composition(delta).epsilon

    def risk(self, false_positive_rates=FALSE_POSITIVE_RATES) -> AttackerRisk:
        """What everything recorded means for one person's record: the largest true-positive
        rate a membership attacker reaches at each of ``false_positive_rates``, and the
        Gaussian-DP μ when every release is pure ε-DP (`pymc_private.dp.risk` has the
        proofs). The bound is the smallest over the ledger's privacy profile, its composition
        at δ = 0 (pure releases alone) and at 25 values of δ from the unavoidable one (or
        10⁻¹²) to 0.5, each a valid (ε, δ) guarantee, and over μ.

        Raises
        ------
        InvalidPrivacyParameterError
            A false-positive rate outside (0, 1).
        """
        rates = checked_false_positive_rates(false_positive_rates)
        groups = self._groups()
        if not groups:  # nothing released: no attacker beats guessing
            return AttackerRisk(0.0, rates, rates, self.protects)
        floor = max(unavoidable_delta(groups), 1e-12)
        deltas = np.geomspace(floor, max(floor, 0.5), 25)
        profile = [(compose(groups, float(delta)).epsilon, float(delta)) for delta in deltas]
        if unavoidable_delta(groups) == 0.0 and not has_rdp_only(groups):
            profile.append((compose(groups, 0.0).epsilon, 0.0))
        mu = gaussian_mu(groups)
        bounds = tuple(true_positive_bound(profile, mu, rate) for rate in rates)
        return AttackerRisk(mu, rates, bounds, self.protects)

    def would_compose(self, planned: Iterable[Release], delta: float = 0.0) -> Composition:
        """What `composition` would report if ``planned`` were recorded; records nothing."""
        items = self.charged(validated_releases(planned, "planned"))
        return compose(self._groups(items), checked_delta(delta))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict; `PrivacyLedger.from_dict` inverts it exactly."""
        return {
            "format": _LEDGER_FORMAT,
            "version": _LEDGER_VERSION,
            "releases": [release.to_dict() for release in self.releases],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PrivacyLedger:
        """Rebuild a ledger from `to_dict` output, validating every release."""
        if not isinstance(data, Mapping) or data.get("format") != _LEDGER_FORMAT:
            raise ValueError(
                f"Not a serialised PrivacyLedger: expected a dict with format={_LEDGER_FORMAT!r}."
            )
        if data.get("version") != _LEDGER_VERSION:
            raise ValueError(
                f"Unsupported PrivacyLedger version {data.get('version')!r}; this version of "
                f"pymc-private reads version {_LEDGER_VERSION}."
            )
        return cls(Release.from_dict(dict(item)) for item in data["releases"])

    def to_json(self) -> str:
        """The ledger as a JSON string (`to_dict`)."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, text: str) -> PrivacyLedger:
        """Rebuild a ledger from `to_json` output."""
        return cls.from_dict(json.loads(text))

    def summary(self, delta: float | None = None) -> list[dict[str, Any]]:
        """The ledger as table rows: one per kind of release, then the totals.

        Release rows group releases by (mechanism, statistic, ε, δ, secure) and give the
        per-release ε and δ, the total ``count`` and the ``subtotal`` Σ ε of the group. Total
        rows (``kind="total"``) give the composed ε in ``subtotal`` with its ``delta`` and
        ``method``: the plain sum (at δ = 0, or at the unavoidable δ when some release has
        δ_i > 0), and the composition at ``delta`` when it is given and gives a smaller ε;
        with Gaussian or subsampled releases and ``delta`` given, the composition at
        ``delta`` alone.
        """
        rows: dict[tuple[Any, ...], dict[str, Any]] = {}
        for release in self.releases:
            key = (release.mechanism, release.statistic, release.epsilon, release.delta)
            key += (release.secure,)
            row = rows.setdefault(
                key,
                {
                    "kind": "release",
                    "mechanism": release.mechanism,
                    "statistic": release.statistic,
                    "epsilon": release.epsilon,
                    "delta": release.delta,
                    "count": 0,
                    "subtotal": Fraction(0),
                    "secure": release.secure,
                    "method": None,
                },
            )
            row["count"] += release.count
            row["subtotal"] += Fraction(release.epsilon) * release.count
        table = [{**row, "subtotal": rounded(row["subtotal"])} for row in rows.values()]
        groups = self._groups()
        if delta is not None and has_rdp_only(groups):
            # No plain (ε, 0) form: the figure at the releases' own δ would only stand beside
            # the one asked for, a different ε at a different δ.
            totals = [self.composition(delta)]
        else:
            totals = [compose(groups, leaked_delta(groups))]
            if delta is not None:
                composed = self.composition(delta)
                if composed.epsilon < totals[0].epsilon:
                    totals.append(composed)
        for total in totals:
            table.append(
                {
                    "kind": "total",
                    "mechanism": None,
                    "statistic": None,
                    "epsilon": None,
                    "delta": total.delta,
                    "count": sum(release.count for release in self._releases),
                    "subtotal": total.epsilon,
                    "secure": all(release.secure for release in self._releases),
                    "method": total.method,
                }
            )
        return table

    def _table(self, delta: float | None = None) -> tuple[str, list[str], list[list[str]]]:
        """Title, header and body of the displays, from one `summary`."""
        header = ["mechanism", "statistic", "ε each", "δ each", "count", "ε subtotal", "secure"]
        body = []
        rows = self.summary(delta)
        for row in rows:
            if row["kind"] == "release":
                cells = [row["mechanism"], row["statistic"] or "", six_digits(row["epsilon"])]
                cells += [six_digits(row["delta"]), str(row["count"]), six_digits(row["subtotal"])]
                cells.append("yes" if row["secure"] else "NO")
            else:
                cells = [f"total ({row['method']})", "", "", f"δ = {six_digits(row['delta'])}"]
                cells += [str(row["count"]), six_digits(row["subtotal"]), ""]
            body.append(cells)
        kinds = sum(row["kind"] == "release" for row in rows)
        count = sum(release.count for release in self._releases)
        title = (
            f"PrivacyLedger: {count} release{'s' if count != 1 else ''} in {kinds} "
            f"row{'s' if kinds != 1 else ''}; ε protects {self.protects}"
        )
        return title, header, body

    @property
    def protects(self) -> str:
        """Whom the composed ε protects, in words: "one person (at most k records each)"
        when every release is charged per person (`Release.per_person`; k the largest bound
        among them), else "one record" (a release charged per record says nothing of a
        person with several records)."""
        bounds = [release.records_per_person for release in self.releases]
        if bounds and all(k is not None for k in bounds):
            k = max(bounds)
            return f"one person (at most {k} record{'s' if k != 1 else ''} each)"
        per_person = sum(k is not None for k in bounds)
        if per_person:
            return (
                f"one record ({per_person} of {len(bounds)} entries are charged per person, "
                "the others per record)"
            )
        return "one record"

    def render(self, delta: float | None = None, risk: AttackerRisk | None = None) -> str:
        """The ledger as a text table (totals composed at ``delta`` too, when given), then
        what it means for a membership attacker (``risk``, `risk` at its default rates when
        not given)."""
        if not self.releases:
            return "PrivacyLedger: no releases"
        title, header, body = self._table(delta)
        widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
        lines = [
            "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
            for line in [header, *body]
        ]
        return title + "\n" + "\n".join(lines) + "\n" + (risk or self.risk()).line

    def render_html(self, delta: float | None = None, risk: AttackerRisk | None = None) -> str:
        """The ledger as an HTML table, as `render`."""
        if not self.releases:
            return "<p>PrivacyLedger: no releases</p>"
        title, header, body = self._table(delta)
        head = "".join(f"<th>{html.escape(cell)}</th>" for cell in header)
        rows = "".join(
            "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in line) + "</tr>"
            for line in body
        )
        return (
            f"<p>{html.escape(title)}</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
            f"<p>{html.escape((risk or self.risk()).line)}</p>"
        )

    def __repr__(self) -> str:
        return self.render()

    def _repr_html_(self) -> str:
        return self.render_html()


def _attached_book(path: str, header_line: bytes) -> _Book:
    """A reader of an attached ledger file, which must still be the file attached."""
    return _Book(Journal.open(path, header_line=header_line))


def _legacy(line: bytes) -> dict | None:
    """A line of a format-1 ledger file as a dict (None if it does not parse as one)."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def per_record_epsilon(
    epsilon: float,
    k: int | None,
    releases_at: Callable[[float], list[Release]],
    delta: float = 0.0,
) -> float:
    """The ε at which a route calibrates its noise per record so that its releases charged
    per person (k records each, `Release.per_person`) compose to at most ``epsilon`` at
    ``delta``: ``epsilon`` itself per record (k None or 1); else the largest ε' ≤ ε whose
    planned releases ``releases_at(ε')`` (public: a plan, no data) so charged compose to at
    most ε. For pure releases that is ε/k rounded down (k·(ε/k) rounded up is then at most
    ε); otherwise bisection to a relative 1e-9.

    Raises
    ------
    UnsupportedModelError
        A release with no per-person cost, or no ε' > 0 fits.
    """
    if k is None or k == 1:
        return epsilon

    def fits(planned: list[Release]) -> bool:
        charged = [release.per_person(k) for release in planned]
        return compose(groups_of(counts_of(charged)), delta).epsilon <= epsilon

    guess = float(Fraction(epsilon) / k)
    if Fraction(guess) * k > Fraction(epsilon):
        guess = math.nextafter(guess, 0.0)
    planned = releases_at(guess)
    if all(isinstance(r.event, PureEvent) and r.delta == 0 for r in planned) and fits(planned):
        return guess
    low, high = 0.0, epsilon
    while high - low > 1e-9 * high:
        middle = (low + high) / 2
        low, high = (middle, high) if fits(releases_at(middle)) else (low, middle)
    if low <= 0:
        raise UnsupportedModelError(
            f"No per-record epsilon fits epsilon={epsilon!r} per person at {k} records "
            "each: raise epsilon or lower max_records."
        )
    return low


_PER_PERSON = "~per-person-"


def per_person_dataset(dataset: str, k: int) -> str:
    """The id of data set ``dataset`` declared per person, each with at most ``k`` records
    (``PrivateData(..., unit=..., max_records=k)``): a ledger over it charges every release
    per person (`PrivacyLedger.charged`), in every process, whatever else reads the id."""
    return f"{dataset}{_PER_PERSON}{int(k)}"


def dataset_records_per_person(dataset: str) -> int | None:
    """The k of a `per_person_dataset` id, None for any other id."""
    _, found, k = dataset.rpartition(_PER_PERSON)
    return int(k) if found and k.isdigit() else None


def checked_source(source) -> str | None:
    """Validate an optional data ``source`` name at the boundary: None, or a non-empty
    string of at most 200 printable characters without leading or trailing spaces."""
    if source is None:
        return None
    if (
        not isinstance(source, str)
        or not source
        or len(source) > 200
        or not source.isprintable()
        or source != source.strip()
    ):
        raise InvalidPrivacyParameterError(
            f"source must be None or the name of a data source, a non-empty string of at most "
            f"200 printable characters without leading or trailing spaces, got {source!r}; "
            "e.g. source='survey-2026'."
        )
    return source
