"""The process's session: its private working directory, its one release lock, and the
registries of the data sets' ledgers.

`directory` is created on first use with `tempfile.mkdtemp` (mode 0700, readable by this user
only), under the release lock, so threads racing to their first release share one directory;
it is removed when the process that created it exits. A directory removed while the session
runs is not made again (the journals in it held the session's releases): every release then
fails with `LedgerIntegrityError`. Worker processes that `pm.sample` starts (fork or spawn)
receive paths inside it and read or append there; nothing in it is a release.

`releasing` is the one lock of the process around check → release → record: every route holds
it from the budget check, through drawing the noise, to the release's lines being on disk, so
two threads can never both pass a check that only one of them fits. It is reentrant (a route
may record through a step that records). Ledger journals are also locked between processes
(``flock``), and every recording checks the budgets again under those locks.

Forked children. A process forked from this one shares its session: the same directory (made
before the fork if it was not yet), the same ledgers and the same attached ledger files, so what
a child releases is recorded where its parent's releases are, checked against the same
budgets, and seen by the parent. The child gets a fresh release lock (the parent's threads do
not exist in it), and the fork waits until no thread of the parent holds the lock, so no child
starts in the middle of a release. A forked child cannot attach a ledger file that its parent
has not attached to the same data set (`forked`): attach in the parent before forking, or start
the process with ``spawn``, which begins a session of its own. A spawned process starts afresh.

`PrivatePayload` wraps private values a step method needs in its worker processes (the
exact statistics of raw data). Pickling it writes the values to a file in this directory
(once) and pickles only the file's path, so a pickled step holds no raw data: it can be
unpickled by this user on this machine while the session lasts, and nowhere else.
"""

from __future__ import annotations

import atexit
import os
import pickle
import shutil
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any

from pymc_private.errors import LedgerIntegrityError, LedgerWriteError, UnsupportedModelError

__all__ = [
    "PrivatePayload",
    "attached",
    "declare_source",
    "directory",
    "forked",
    "journal",
    "note_opened",
    "opened_for",
    "releasing",
    "reset",
    "sources",
    "views",
]


class _Session:
    """Everything the process remembers about its releases (one instance, `_STATE`)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.directory = folder
        self.owner = None if folder is None else os.getpid()
        # Ledger views by the sorted tuple of data-set ids they cover (`dataset_ledger`).
        self.views: dict[tuple[str, ...], Any] = {}
        # Ledger files attached to each data set: path → the file's header line.
        self.attached: dict[str, dict[str, bytes]] = {}
        # The session journals this session used (`journal`).
        self.journals: set[Path] = set()
        # The sources each data set's records were declared with (`declare_source`).
        self.sources: dict[str, set[str]] = {}
        # The ledger files opened in this session for each source (`opened_for`).
        self.opened: dict[str, list[Any]] = {}


_STATE = _Session()
_LOCK = threading.RLock()


def releasing() -> threading.RLock:
    """The process's release lock, to hold (``with session.releasing():``) from a budget
    check through the release to its record."""
    return _LOCK


def directory() -> Path:
    """The session directory (created on first use, removed at the creating process's exit).

    Raises
    ------
    LedgerWriteError
        The directory could not be created (a full or read-only temporary file system).
    LedgerIntegrityError
        The directory was removed while the session ran: its journals, which held what the
        session released, are gone.
    """
    with _LOCK:
        if _STATE.directory is None:
            try:
                _STATE.directory = Path(tempfile.mkdtemp(prefix="pymc_private-"))
            except OSError as error:
                raise LedgerWriteError(
                    f"Could not create the session directory in {tempfile.gettempdir()}: "
                    f"{error.strerror}. Nothing was released; free space there, or point "
                    "TMPDIR at a writable directory."
                ) from None
            _STATE.owner = os.getpid()
            atexit.register(_remove, _STATE.directory, _STATE.owner)
        elif not _STATE.directory.is_dir():
            raise LedgerIntegrityError(
                f"The session directory {_STATE.directory} was removed while this session ran; "
                "the ledgers it held are gone, so no release can be counted. Start a new "
                "Python process (ledger files, PrivacyLedger.open, are not affected)."
            )
        return _STATE.directory


def journal(dataset: str) -> Path:
    """The path of a data set's session journal.

    Raises
    ------
    LedgerIntegrityError
        The journal was used in this session and has since been removed (a temporary-file
        cleaner, say): the releases it held are gone, and a new empty one would admit a
        budget again.
    """
    path = directory() / f"{dataset}.jsonl"
    with _LOCK:
        if path in _STATE.journals and not path.exists():
            raise LedgerIntegrityError(
                f"The session journal {path} was removed while this session ran; the releases "
                "it held are gone, so no release from its data can be counted. Start a new "
                "Python process (ledger files, PrivacyLedger.open, are not affected)."
            )
        _STATE.journals.add(path)
    return path


def views() -> dict[tuple[str, ...], Any]:
    """The session's ledger views by data-set key (`PrivacyLedger._session_view`)."""
    return _STATE.views


def attached() -> dict[str, dict[str, bytes]]:
    """The ledger files attached to each data set in this session: path → header line."""
    return _STATE.attached


def declare_source(records: str, source: str) -> None:
    """Note that the records ``records`` were declared with the source of id ``source``
    (`sources`)."""
    with _LOCK:
        _STATE.sources.setdefault(records, set()).add(source)


def sources(records: str) -> frozenset[str]:
    """The ids of the sources the records ``records`` were declared with in this session."""
    with _LOCK:
        return frozenset(_STATE.sources.get(records, ()))


def note_opened(source: str, ledger: Any) -> None:
    """Note a ledger file opened in this session as the ledger of ``source`` (`opened_for`)."""
    with _LOCK:
        files = _STATE.opened.setdefault(source, [])
        if all(ledger.journals != other.journals for other in files):
            files.append(ledger)


def opened_for(source: str) -> tuple[Any, ...]:
    """The ledger files opened in this session for ``source``: a release from that source
    made before any model exists (`pmp.private_bounds`) is charged to them."""
    with _LOCK:
        return tuple(_STATE.opened.get(source, ()))


def forked() -> bool:
    """Whether this process is a forked child of the process whose session it shares."""
    return _STATE.owner is not None and _STATE.owner != os.getpid()


def reset(folder: Path | None = None) -> None:
    """Forget the session: its views and attachments, and its directory (``folder``, if
    given, becomes the new one, owned by this process; it is not removed at exit). For tests:
    a session that forgets its ledgers forgets what it released, so its budgets start over."""
    global _STATE
    with _LOCK:
        _STATE = _Session(folder)


def _remove(path: Path, owner: int) -> None:
    if os.getpid() == owner:
        shutil.rmtree(path, ignore_errors=True)


def _before_fork() -> None:
    _LOCK.acquire()
    try:
        directory()
    except (LedgerWriteError, LedgerIntegrityError):
        pass  # the child finds the same failure at its first release


def _after_fork_in_parent() -> None:
    _LOCK.release()


def _after_fork_in_child() -> None:
    global _LOCK
    _LOCK = threading.RLock()


os.register_at_fork(
    before=_before_fork,
    after_in_parent=_after_fork_in_parent,
    after_in_child=_after_fork_in_child,
)


class PrivatePayload:
    """Private values that pickle as a reference to a file of the session directory."""

    __slots__ = ("_path", "_value")

    def __init__(self, value: Any) -> None:
        self._value = value
        self._path: str | None = None

    @property
    def value(self) -> Any:
        if self._value is None:
            try:
                with open(self._path, "rb") as handle:
                    self._value = pickle.load(handle)
            except OSError:
                raise UnsupportedModelError(
                    "This step method's private statistics lived in the session that built "
                    "it and are gone: a pickled private step works only on the machine and in "
                    "the session where it was built. Build the step again."
                ) from None
        return self._value

    def __getstate__(self) -> dict[str, str]:
        if self._path is None:
            path = directory() / f"payload-{uuid.uuid4().hex}.pkl"
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "wb") as handle:
                pickle.dump(self._value, handle)
            self._path = str(path)
        return {"path": self._path}

    def __setstate__(self, state: dict[str, str]) -> None:
        self._path = state["path"]
        self._value = None
