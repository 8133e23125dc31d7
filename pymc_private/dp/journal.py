"""Journals: the append-only files a ledger is kept in, written whole or not at all and read
only when every line checks.

**Format 2.** Every line is one JSON object in canonical form (keys sorted, no spaces, ASCII
only) followed by ``\\n``::

    {"chain":"<64 hex digits>","entry":{...}}

``entry`` is what the line records; ``chain`` is c_i = SHA-256(c_{i−1} ‖ canonical(entry)),
c_0 empty: a hash chain, so the checksum of a line also covers every line before it, and a
line removed, inserted or moved breaks the chain at the next one. Line 1 holds the header:
``format``, ``version``, ``kind`` (``"odometer"`` for a file made by
`pymc_private.PrivacyLedger.open`, ``"session"`` in the session directory, ``"journal"``
otherwise), a random ``file`` id, the ``created`` time, ``commit_record`` (true for a
journal created with one, below), and what the ledger adds (its ``budget`` and ``source``), so
that the chain of every later line depends on the file's identity and budget.

**Commit records.** A line at the end of a file can be cut off, in its middle or at its end,
and what is left looks like a file whose last append a crash interrupted: a reader of the file
alone cannot tell a release that was returned from one that never was. So every journal but
the session's has a commit record beside it, the file ``path + ".commit"``: two slots of 160
bytes, each the canonical line ``{"check":…,"file":…,"lines":N,"sequence":k}`` padded with
spaces, ``file`` the header's id and ``check`` the first 16 hex digits of the SHA-256 of the
other three fields: as of commit number k, the first N lines of the journal are committed.
The slot with the larger k that checks holds. An append writes and ``fsync``'s its lines
first, then overwrites the older slot in place with commit k + 1 and ``fsync``'s the record,
and only then is its release returned. A crash therefore leaves a record whose newer slot is
the new commit, or the old one (a slot whose write the crash tore fails its check, and the
other holds), and the journal in one of three states, each read soundly: an incomplete last
line beyond the committed lines (an append interrupted while writing: its release was never
returned, the line is skipped and a warning names the file and its byte count; the next
append cuts it off); whole lines beyond them (interrupted before its commit: they are
counted, the safe side); or committed. A journal holding fewer whole lines than its record
committed was cut, and is refused, whether the cut fell in a line or at its end.

**Writing.** A journal is created whole: its header is written and ``fsync``'ed in a
temporary file beside it, which is then hard-linked into place (`os.link` fails when the name
exists), and its commit record (N = 1) is then made whole beside it (a temporary file renamed
into place). So a journal never exists without its header, and an empty or headerless file at
a journal's path is refused, never silently created again. An append holds an exclusive
``flock`` on every journal it writes, under the process's release lock; it first reads what
other processes appended (checking it), cuts off an incomplete line no commit covers, writes
its lines in a loop until every byte is written, and ``fsync``'s; when every journal has its
lines, it commits each (its record). If a write
fails (a full disk, a file size limit, an I/O error), every journal the append wrote is
truncated back to its length before the append and `LedgerWriteError` is raised, so the
caller's release is discarded before its output is returned; if a commit fails, the lines
stay and count (the record may hold the new commit or the old one) and `LedgerWriteError` is
raised too. A truncation that fails itself leaves lines that over-count, never lines that
under-count. The journals of the session directory are written the same way but not
``fsync``'ed and without a record: they live and end with the session, in its private
directory, so no crash can make their readers miss a line (a private step charges one line
per transition, and an ``fsync`` took 0.1 to 3 ms on the test machine); a write that fails is
still cut back and raised, a page that a failed write-back corrupted later fails the chain,
and an incomplete last line (a process killed while appending) is skipped with a warning.

**Reading.** A reader holds a shared lock, so it never sees an append in progress. It reads on
from where it stopped and checks every complete line byte for byte against the canonical
form of its entry and against the chain; the first that fails is refused
(`LedgerIntegrityError`, naming the file and the line), and so is every later read. It then
reads the commit record, under the same lock, and refuses a journal with fewer whole lines
than it committed, and a record that is damaged, of another journal, or missing from a journal
created with one (unless the journal holds only its header: a crash between creating it and
its record). After the last ``\\n`` there may be an incomplete line: skipped when the record
shows it uncommitted (above). A journal written before commit records were kept (its header
has no ``commit_record``) reads as before, with identical totals, and gains a record at its
first append here; until then an incomplete last line in it may be a returned release cut
short, so it is refused, never skipped, until the custodian acknowledges it as a crash's
(`pymc_private.PrivacyLedger.acknowledge_torn_line`, which logs it in the file and cuts it
off). A final line that is whole except that its last byte is not ``\\n`` was damaged, not
torn, and is refused; one that lacks only its ``\\n`` is counted. A reader remembers the
header and the last line it read: a file that became shorter, whose header changed
(re-created) or whose last line read changed, is refused.

**What this protects against, and what not.** Accidents: a crash, a power loss or a full disk
in the middle of an append, a changed, removed or inserted line (a stray edit, a bad merge, a
damaged disk), an edited budget or header, a file truncated, replaced or removed while a
process uses it, and a file cut at its end while no process has it open, mid-line or at a
line's end (the record tells). Not someone with write access who rewrites the two files
consistently (neither the chain nor the record needs a secret to recompute), nor a journal
deleted, cut back to its header with its record removed, or cut back to an older copy of its
record, nor lines appended by an earlier pymc-private, which writes no record (they count, but
a cut of them is not told): keep ledger files and their records where only the data custodian
can write, and back them up together.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import logging
import os
import uuid
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from typing import Any

from pymc_private.dp import session
from pymc_private.errors import (
    InvalidPrivacyParameterError,
    LedgerError,
    LedgerIntegrityError,
    LedgerWriteError,
)

__all__ = [
    "COMMIT_SUFFIX",
    "FORMAT",
    "LEGACY_FORMAT",
    "SESSION_KIND",
    "VERSION",
    "Journal",
    "locked",
    "replace",
]

FORMAT = "pymc_private.journal"
VERSION = 2
# The header format of ledger files of format 1 (no checksums), refused until
# `pymc_private.PrivacyLedger.migrate` rewrites them (with `replace`).
LEGACY_FORMAT = "pymc_private.odometer"
# The ``kind`` of the journals of a session directory: appended whole, but not ``fsync``'ed.
SESSION_KIND = "session"
# The commit record of a journal ``path`` is the file ``path + COMMIT_SUFFIX``.
COMMIT_SUFFIX = ".commit"
# The size of each of the two slots of a commit record.
_SLOT = 160
# The header is read in one piece of at most this many bytes.
_HEADER_LIMIT = 1 << 16
_READ_CHUNK = 1 << 24
# Descriptors of the journals this process holds exclusively (`locked`), by path: while held,
# the holding thread (the only one inside the release lock) reads through them.
_HELD: dict[str, int] = {}
_LOG = logging.getLogger("pymc_private")


def _canonical(value: Any) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    ).encode()


def _line(entry: dict, previous: bytes) -> tuple[bytes, bytes]:
    """The line recording ``entry`` after the line whose chain is ``previous``, and its chain."""
    chain = hashlib.sha256(previous + _canonical(entry)).digest()
    return _canonical({"chain": chain.hex(), "entry": entry}) + b"\n", chain


def _checked(line: bytes, previous: bytes) -> tuple[dict, bytes] | None:
    """The entry of ``line`` (without its ``\\n``) and its chain, if the line is exactly the
    canonical line of its entry after ``previous``; else None."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not (
        isinstance(value, dict)
        and set(value) == {"chain", "entry"}
        and isinstance(value["entry"], dict)
        and isinstance(value["chain"], str)
    ):
        return None
    try:
        expected, chain = _line(value["entry"], previous)
    except ValueError:  # a NaN or an infinity
        return None
    if expected != line + b"\n":
        return None
    return value["entry"], chain


def _write_whole(descriptor: int, data: bytes, durable: bool = True) -> None:
    """Write every byte of ``data`` (write(2) may write fewer than asked), then ``fsync``
    when ``durable``."""
    view = memoryview(data)
    while view:
        written = os.write(descriptor, view)
        if written <= 0:
            raise OSError(errno.EIO, "write(2) wrote nothing")
        view = view[written:]
    if durable:
        os.fsync(descriptor)


def _truncate(descriptor: int, length: int) -> None:
    """Cut the file back to ``length`` bytes (lines that stay would over-count, never
    under-count, so a failure here is not raised over the error that called for it)."""
    with suppress(OSError):
        os.ftruncate(descriptor, length)
        os.fsync(descriptor)


def _read_from(descriptor: int, offset: int, size: int) -> bytes:
    chunks = []
    while offset < size:
        chunk = os.pread(descriptor, min(size - offset, _READ_CHUNK), offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _opened(path: str, flags: int) -> int:
    try:
        return os.open(path, flags | os.O_CLOEXEC)
    except FileNotFoundError:
        raise LedgerIntegrityError(
            f"The ledger journal {path} does not exist: it was removed, with the releases it "
            "held. Restore it from a backup. Nothing was released."
        ) from None


@contextmanager
def _reading(path: str):
    """A descriptor of ``path`` under a shared lock (or the one this process holds)."""
    held = _HELD.get(path)
    if held is not None:
        yield held
        return
    descriptor = _opened(path, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH)
        yield descriptor
    finally:
        os.close(descriptor)


def _sync_directory(folder: str) -> None:
    descriptor = os.open(folder, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _slot(file: str, lines: int, sequence: int) -> bytes:
    """A slot of a commit record: the first ``lines`` lines of the journal ``file`` (its
    header's id) are committed, as of commit number ``sequence``; canonical JSON with the first
    16 hex digits of its SHA-256, padded with spaces to `_SLOT` bytes ending in ``\\n``."""
    fields = {"file": file, "lines": lines, "sequence": sequence}
    text = _canonical({**fields, "check": hashlib.sha256(_canonical(fields)).hexdigest()[:16]})
    return text.ljust(_SLOT - 1) + b"\n"


def _read_slot(text: bytes, file: str) -> tuple[int, int] | None:
    """(sequence, lines) of a slot of the journal ``file`` whose every byte checks; else None
    (a slot whose write a crash tore, or damage)."""
    try:
        value = json.loads(text)
        slot = (value["sequence"], value["lines"])
    except (ValueError, RecursionError, TypeError, KeyError):
        return None
    if not all(type(number) is int for number in slot) or text != _slot(file, *slot[::-1]):
        return None
    return slot


def _create_record(path: str, file: str, lines: int) -> None:
    """Create the commit record of the journal ``path`` whole (a temporary file, ``fsync``,
    rename, ``fsync`` of the directory), both slots saying ``lines`` as of commit 0."""
    folder, name = os.path.split(path)
    temporary = os.path.join(folder, f".{name}.{uuid.uuid4().hex}.commit.new")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        _write_whole(descriptor, 2 * _slot(file, lines, 0))
        os.replace(temporary, path + COMMIT_SUFFIX)
        _sync_directory(folder)
    finally:
        os.close(descriptor)
        with suppress(OSError):
            os.unlink(temporary)


def _created(path: str, header: dict) -> None:
    """Create the journal ``path`` with ``header`` as line 1, whole or not at all.

    Raises
    ------
    FileExistsError
        ``path`` exists (made by another process first, or not a journal).
    LedgerWriteError
        The header could not be written and linked into place.
    """
    folder, name = os.path.split(path)
    temporary = os.path.join(folder, f".{name}.{uuid.uuid4().hex}.new")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except OSError as error:
        raise LedgerWriteError(
            f"Could not create the ledger journal {path}: {error.strerror}. Choose a path in a "
            "directory you can write to."
        ) from None
    try:
        _write_whole(descriptor, _line(header, b"")[0])
        os.link(temporary, path)
        _sync_directory(folder)
        if header.get("commit_record"):
            _create_record(path, header["file"], 1)
    except FileExistsError:
        raise
    except OSError as error:
        raise LedgerWriteError(
            f"Could not create the ledger journal {path}: {error.strerror}. Nothing was "
            "recorded; free space or choose another directory."
        ) from None
    finally:
        os.close(descriptor)
        with suppress(OSError):
            os.unlink(temporary)


class Journal:
    """One journal file as this process reads it: its header, and every entry it has read.

    Use `Journal.open`; read with `refresh`; append inside `locked`.
    """

    def __init__(self, path: str, header_line: bytes, header: dict, chain: bytes) -> None:
        self.path = path
        self.header_line = header_line
        self.header = header
        self.durable = header.get("kind") != SESSION_KIND
        self._offset = len(header_line)
        self._chain = chain
        self._lines = 1
        self._last = header_line
        self._pending: list[tuple[int, dict]] = []
        # The incomplete last line last logged as skipped: (its line number, its size).
        self._skipped: tuple[int, int] | None = None
        # The number of the last commit the record holds (None: no record yet).
        self._sequence: int | None = None

    @classmethod
    def open(cls, path, *, create: dict | None = None, header_line: bytes | None = None) -> Journal:
        """The journal at ``path``, its header checked.

        Parameters
        ----------
        path
            The file.
        create
            Header fields to create the file with if it does not exist (``format``,
            ``version``, ``file`` and ``created`` are added); None: it must exist.
        header_line
            The header line the file must still have (a file this session already uses).

        Raises
        ------
        InvalidPrivacyParameterError
            The file is not a pymc-private journal.
        LedgerError
            A ledger file of an earlier format (the message says how to migrate it).
        LedgerIntegrityError
            The file is missing, empty, has a damaged header, or another header than
            ``header_line``.
        """
        # One file is one journal whatever path reaches it (a symbolic link): its locks and
        # every registry keyed by path see it once (locking it twice would hang).
        path = os.path.realpath(os.fspath(path))
        if create is not None and not os.path.exists(path):
            fields = {"format": FORMAT, "version": VERSION, "file": uuid.uuid4().hex}
            fields["created"] = datetime.now(UTC).isoformat(timespec="seconds")
            if create.get("kind") != SESSION_KIND:
                fields["commit_record"] = True
            with suppress(FileExistsError):
                _created(path, {**create, **fields})
        with session.releasing(), _reading(path) as descriptor:
            head = os.pread(descriptor, _HEADER_LIMIT, 0)
        end = head.find(b"\n") + 1
        line = head[:end] if end else head
        checked = _checked(line[:-1], b"") if end else None
        if checked is None or checked[0].get("format") != FORMAT:
            _refuse_header(path, line)
        header, chain = checked
        if header.get("version") != VERSION:
            raise LedgerError(
                f"{path} is a ledger journal of version {header.get('version')!r}; this version "
                f"of pymc-private reads version {VERSION}. Use the pymc-private that wrote it."
            )
        if header_line is not None and line != header_line:
            raise LedgerIntegrityError(
                f"The ledger file {path} was replaced since this session attached it (its "
                "header changed): the releases recorded in the file it replaced are not in it. "
                "Restore the file this session attached."
            )
        return cls(path, line, header, chain)

    def refresh(self) -> list[tuple[int, dict]]:
        """The entries appended since the last call, each with its line number, all checked.

        Raises
        ------
        LedgerIntegrityError
            A line that fails its checks, or a file truncated, replaced or removed since this
            process read it; nothing is returned and every later call raises again.
        """
        with session.releasing(), _reading(self.path) as descriptor:
            self._read(descriptor)
        out, self._pending = self._pending, []
        return out

    def _read(self, descriptor: int, *, torn: bool = False) -> bytes:
        """Read on through ``descriptor`` (locked), queueing the new entries; the state moves
        only when every new complete line checks. Returns the incomplete last line (empty if
        none), which ``torn=False`` refuses unless the commit record shows it uncommitted."""
        size = os.fstat(descriptor).st_size
        self._check_unchanged(descriptor, size)
        data = _read_from(descriptor, self._offset, size)
        chain, number, offset, last, entries = self._chain, self._lines, self._offset, None, []
        if data[:1] == b"\n" and not self._last.endswith(b"\n"):
            # The end of a counted line that lacked it (written by the next append).
            data, offset, last = data[1:], offset + 1, self._last + b"\n"
        end = data.rfind(b"\n") + 1
        for line in data[:end].split(b"\n")[:-1]:
            number += 1
            checked = _checked(line, chain)
            if checked is None:
                raise LedgerIntegrityError(self._damaged(number, "fails its checksum"))
            entry, chain = checked
            entries.append((number, entry))
            offset += len(line) + 1
            last = line + b"\n"
        tail = data[end:]
        if tail and _checked(tail[:-1], chain) is not None:
            raise LedgerIntegrityError(
                self._damaged(number + 1, "is whole but its last byte is not the end of a line")
            )
        whole = _checked(tail, chain) if tail else None
        if whole is not None:
            # A whole, chained line that lacks only its "\n" (a crash just before it, or a
            # lost last byte) is counted: over-counting is the safe side. The next append
            # ends it first.
            number += 1
            entry, chain = whole
            entries.append((number, entry))
            offset += len(tail)
            last = tail
        fragment = tail if whole is None else b""
        committed = self._committed(number) if self.durable else None
        if fragment and not torn:
            self._skip(number, len(fragment), committed)
        if last is not None:
            self._chain, self._lines, self._offset, self._last = chain, number, offset, last
            self._pending.extend(entries)
        return fragment

    def _committed(self, lines: int) -> int | None:
        """How many lines the commit record says are committed, checked against the ``lines``
        the file holds; None for a journal without a record (written before records were kept,
        and not appended to since)."""
        try:
            with open(self.path + COMMIT_SUFFIX, "rb") as handle:
                text = handle.read(2 * _SLOT + 1)
        except FileNotFoundError:
            self._sequence = None
            if not self.header.get("commit_record"):
                return None
            if lines > 1:
                raise LedgerIntegrityError(
                    f"The commit record {self.path}{COMMIT_SUFFIX} of the ledger journal "
                    f"{self.path} is missing: it says how many lines were committed, so without "
                    "it lines cut off the end could not be told. Restore it, with the journal, "
                    "from a backup (move or copy the two files together). Nothing was released."
                ) from None
            return 1  # created, and its record not yet written: it holds its header only
        slots = [_read_slot(text[k : k + _SLOT], self.header["file"]) for k in (0, _SLOT)]
        if len(text) != 2 * _SLOT or slots == [None, None]:
            raise LedgerIntegrityError(
                f"The commit record {self.path}{COMMIT_SUFFIX} of the ledger journal "
                f"{self.path} is damaged or belongs to another journal. Restore the two files "
                "together from a backup. Nothing was released."
            )
        # A slot whose write a crash tore fails its check: the other, older, holds.
        self._sequence, lines_committed = max(slot for slot in slots if slot is not None)
        if lines_committed > lines:
            raise LedgerIntegrityError(
                f"The ledger journal {self.path} holds {lines} whole lines, but its commit "
                f"record says {lines_committed} were committed: committed lines were cut off "
                "its end (the file was truncated, or restored without its record), with the "
                "releases they recorded. Every release from its data is refused. Restore the "
                "two files together from a backup; or, if you can account for what it "
                "recorded, move them aside and start a new ledger file whose budget is "
                "reduced by what was spent."
            )
        return lines_committed

    def _skip(self, number: int, size: int, committed: int | None) -> None:
        """Skip the incomplete line after line ``number`` when no commit covers it (it is
        then an append a crash interrupted: its release was never returned), logging it once;
        refuse it when the journal has no commit record to tell."""
        if self.durable and committed is None:
            raise LedgerIntegrityError(
                f"The ledger journal {self.path} ends in an incomplete line of {size} bytes and "
                "has no commit record (it was written by a pymc-private that kept none): the "
                "line may be a release that was returned and then cut short, so it is not "
                "skipped, and every release from its data is refused. If a process crashed "
                "while recording it (its release was never returned), acknowledge it: "
                "pmp.PrivacyLedger.acknowledge_torn_line(path, reason=...) logs it in the file "
                "and cuts it off. Otherwise restore the file from a backup."
            )
        if self._skipped != (number, size):
            self._skipped = (number, size)
            _LOG.warning(
                "The ledger journal %s ends in an incomplete line of %d bytes after its %d "
                "committed lines: an append interrupted by a crash before it committed, whose "
                "release was never returned. It is skipped and the next append cuts it off.",
                self.path,
                size,
                number if committed is None else committed,
            )

    def _damaged(self, number: int, what: str) -> str:
        return (
            f"The ledger journal {self.path}, line {number}, {what}: the line was changed, "
            "removed or inserted after it was written (a line torn by a crash is only ever "
            "the last, unfinished one). The file no longer proves what was released, so every "
            "release from its data is refused. Restore the file from a backup; or, if you can "
            "account for what it recorded, move it aside and start a new ledger file whose "
            "budget is reduced by what was spent."
        )

    def _check_unchanged(self, descriptor: int, size: int) -> None:
        if size < self._offset:
            raise LedgerIntegrityError(
                f"The ledger journal {self.path} is shorter ({size} bytes) than when this "
                f"process read it ({self._offset} bytes): it was truncated or replaced, with "
                "releases it recorded. Restore it from a backup. Nothing was released."
            )
        if os.pread(descriptor, len(self.header_line), 0) != self.header_line:
            raise LedgerIntegrityError(
                f"The ledger journal {self.path} was replaced while this process used it (its "
                "header changed), with the releases it recorded. Restore it from a backup. "
                "Nothing was released."
            )
        if os.pread(descriptor, len(self._last), self._offset - len(self._last)) != self._last:
            raise LedgerIntegrityError(
                self._damaged(self._lines, "changed since this process read it")
            )

    def _append(self, descriptor: int, entries: list[dict]) -> int:
        """Append ``entries`` through ``descriptor`` (held exclusively) after reading what
        others appended; a line torn by a crash is cut off first. Returns the length to
        truncate back to; on failure the file is already truncated back to it."""
        self._read(descriptor)
        start = self._offset
        chain = self._chain
        # A counted last line without its "\n" is ended before anything follows it.
        lines = [] if self._last.endswith(b"\n") else [b"\n"]
        for entry in entries:
            line, chain = _line(entry, chain)
            lines.append(line)
        try:
            if os.fstat(descriptor).st_size > start:
                os.ftruncate(descriptor, start)
            _write_whole(descriptor, b"".join(lines), self.durable)
        except BaseException:
            _truncate(descriptor, start)
            raise
        return start

    def _commit(self, appended: int) -> None:
        """Record that the lines read and the ``appended`` lines just written are committed
        (a durable journal, after its lines are on disk): the next commit number overwrites
        the record's older slot in place and is ``fsync``'ed, or the record is created."""
        lines = self._lines + appended
        if self._sequence is None:
            _create_record(self.path, self.header["file"], lines)
            return
        sequence = self._sequence + 1
        descriptor = os.open(self.path + COMMIT_SUFFIX, os.O_WRONLY | os.O_CLOEXEC)
        try:
            slot = _slot(self.header["file"], lines, sequence)
            if os.pwrite(descriptor, slot, _SLOT * (sequence % 2)) != len(slot):
                raise OSError(errno.EIO, "pwrite(2) wrote part of a commit record slot")
            os.fsync(descriptor)
        finally:
            os.close(descriptor)

    def cut_torn_line(self) -> tuple[int, str]:
        """Cut off the incomplete last line of a journal held in `locked`: the size and the
        SHA-256 of what was cut.

        Raises
        ------
        InvalidPrivacyParameterError
            The journal does not end in an incomplete line.
        """
        descriptor = _HELD[self.path]
        fragment = self._read(descriptor, torn=True)
        if not fragment:
            raise InvalidPrivacyParameterError(
                f"The ledger journal {self.path} does not end in an incomplete line: there is "
                "nothing to acknowledge."
            )
        os.ftruncate(descriptor, self._offset)
        os.fsync(descriptor)
        return len(fragment), hashlib.sha256(fragment).hexdigest()


def _refuse_header(path: str, line: bytes):
    """Raise the error that says why ``line`` is not a journal header."""
    if not line:
        raise LedgerIntegrityError(
            f"The ledger file {path} is empty. pymc-private creates a ledger file whole, with "
            "its header, so this one was truncated or made by something else: restore it from "
            "a backup, or remove it if you know nothing was released against it."
        )
    try:
        legacy = json.loads(line)
    except (ValueError, RecursionError):
        legacy = None
    if isinstance(legacy, dict) and legacy.get("format") == LEGACY_FORMAT:
        raise LedgerError(
            f"{path} is a ledger file of format 1 (an earlier pymc-private, without "
            "checksums). Migrate it once, while no process uses it: "
            "pmp.PrivacyLedger.migrate(path) rewrites it in format 2 with every release "
            "it holds, and keeps the original beside it."
        )
    if b"pymc_private" in line:
        raise LedgerIntegrityError(
            f"The ledger file {path}, line 1 (its header), fails its checksum: the header "
            "(its budget, source or identity) was changed after the file was created. Restore "
            "it from a backup; a budget is changed only by PrivacyLedger.reset_budget, which "
            "logs the change in the file."
        )
    raise InvalidPrivacyParameterError(
        f"{path} is not a pymc-private ledger file (its first line is not a ledger header): "
        "pass the path of a file made by PrivacyLedger.open, or a new path."
    )


class locked:
    """Exclusive locks on several journals, under the process's release lock, taken in path
    order (no deadlock between processes that lock overlapping sets). While held, this
    process reads them through the locked descriptors, and `append` writes to them."""

    def __init__(self, journals: list[Journal]) -> None:
        self._paths = sorted({journal.path for journal in journals})
        self._opened: dict[str, int] = {}
        self._lock = None

    def __enter__(self) -> locked:
        self._lock = session.releasing()
        self._lock.acquire()
        try:
            for path in self._paths:
                if path not in _HELD:
                    descriptor = self._opened[path] = _opened(path, os.O_RDWR | os.O_APPEND)
                    fcntl.flock(descriptor, fcntl.LOCK_EX)
                    _HELD[path] = descriptor
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        for path, descriptor in self._opened.items():
            if _HELD.get(path) == descriptor:
                del _HELD[path]
            os.close(descriptor)
        self._opened = {}
        self._lock.release()

    def append(self, writes: list[tuple[Journal, list[dict]]]) -> None:
        """Append each journal's entries, all or none: on any failure every journal written is
        truncated back to its length before, and `LedgerWriteError` is raised (the original
        exception, for an interrupt).

        Raises
        ------
        LedgerWriteError
            A write or ``fsync`` failed (a full disk, a file size limit, an I/O error).
        """
        done: list[tuple[int, int]] = []
        try:
            for journal, entries in writes:
                descriptor = _HELD[journal.path]
                done.append((descriptor, journal._append(descriptor, entries)))
        except OSError as error:
            for descriptor, start in done:
                _truncate(descriptor, start)
            raise _write_error(
                journal.path, error, "Every journal was cut back to where it was"
            ) from error
        except BaseException:
            for descriptor, start in done:
                _truncate(descriptor, start)
            raise
        failed = None
        for journal, entries in writes:
            if journal.durable:
                try:
                    journal._commit(len(entries))
                except OSError as error:
                    failed = failed or (journal.path, error)
        if failed is not None:
            # A record that failed may hold the new commit or the old one: the lines stay
            # either way, and count (the safe side).
            raise _write_error(
                *failed, "Its lines stay in the journals and count against their budgets"
            )


def _write_error(path: str, error: OSError, what: str) -> LedgerWriteError:
    return LedgerWriteError(
        f"A release could not be recorded in the ledger journal {path}: "
        f"{error.strerror or error}. {what}, and the release was discarded (its output is not "
        "returned). Free space on the file system (or raise the file size limit) and try again."
    )


def replace(path: str, header: dict, entries: list[dict], backup: str) -> None:
    """Write a journal of ``header`` and ``entries`` in place of the file ``path`` (held by the
    caller), keeping the original as ``backup`` (which must not exist); the name points at
    the old file or the whole new one, never at a part. The new journal has a commit record,
    written before it takes the name.

    Raises
    ------
    LedgerWriteError
        The new file could not be written; ``path`` is unchanged.
    FileExistsError
        ``backup`` exists.
    """
    folder, name = os.path.split(path)
    temporary = os.path.join(folder, f".{name}.{uuid.uuid4().hex}.new")
    fields = {"format": FORMAT, "version": VERSION, "file": uuid.uuid4().hex}
    fields["created"] = datetime.now(UTC).isoformat(timespec="seconds")
    fields["commit_record"] = True
    chain, lines = b"", []
    for entry in [{**header, **fields}, *entries]:
        line, chain = _line(entry, chain)
        lines.append(line)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        _write_whole(descriptor, b"".join(lines))
        os.link(path, backup)
        _create_record(path, fields["file"], len(lines))
        os.replace(temporary, path)
        _sync_directory(folder)
    except FileExistsError:
        raise
    except OSError as error:
        raise LedgerWriteError(
            f"Could not rewrite {path}: {error.strerror}. The file is unchanged."
        ) from None
    finally:
        os.close(descriptor)
        with suppress(OSError):
            os.unlink(temporary)
