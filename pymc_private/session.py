"""The process's private working directory: ledger journals and private payloads.

`directory` is created on first use with `tempfile.mkdtemp` (mode 0700, readable by this user
only) and removed when the process that created it exits. Worker processes that `pm.sample`
starts (fork or spawn) receive paths inside it and read or append there; nothing in it is a
release.

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
import uuid
from pathlib import Path
from typing import Any

from pymc_private.errors import UnsupportedModelError

__all__ = ["PrivatePayload", "directory"]

_DIRECTORY: Path | None = None
_OWNER: int | None = None


def directory() -> Path:
    """The session directory (created on first use, removed at the creating process's exit)."""
    global _DIRECTORY, _OWNER
    if _DIRECTORY is None or not _DIRECTORY.exists():
        _DIRECTORY = Path(tempfile.mkdtemp(prefix="pymc_private-"))
        _OWNER = os.getpid()
        atexit.register(_remove, _DIRECTORY, _OWNER)
    return _DIRECTORY


def _remove(path: Path, owner: int) -> None:
    if os.getpid() == owner:
        shutil.rmtree(path, ignore_errors=True)


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
