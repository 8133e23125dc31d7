"""The exception family of pymc-private.

Every error is raised at the boundary, before any noise is drawn or any privacy is spent, and
its message says what to change. Messages never quote a value computed from private data.
"""

from __future__ import annotations

__all__ = [
    "BudgetExceededError",
    "CalibrationWarning",
    "ConvergenceWarning",
    "DataBoundsError",
    "InvalidPrivacyParameterError",
    "LedgerError",
    "LedgerIntegrityError",
    "LedgerWriteError",
    "NUTSFallbackWarning",
    "NotReleasableError",
    "PrivacyError",
    "UnboundedSensitivityError",
    "UncoveredDataWarning",
    "UninformativeReleaseWarning",
    "UnsupportedEventError",
    "UnsupportedModelError",
]


def counted(count: int, noun: str) -> str:
    """``count`` and ``noun``, plural unless the count is one: "1 release", "3 releases"."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def with_article(word: str) -> str:
    """``word`` after its indefinite article: "a Normal", "an AutoRegressiveRV"."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


class PrivacyError(Exception):
    """Base class of every error pymc-private raises on purpose."""


class InvalidPrivacyParameterError(PrivacyError, ValueError):
    """A privacy parameter is invalid: ε or a sensitivity that is not finite and positive,
    δ outside [0, 1), a temperature below 1, a budget that cannot be met."""


class DataBoundsError(PrivacyError, ValueError):
    """Private data (or a value handed to a mechanism) is NaN, infinite, outside its declared
    bounds, of the wrong dtype or shape, or not an integer where counts are required."""


class UnboundedSensitivityError(PrivacyError):
    """The record Lipschitz constant or the sensitivity of a statistic is infinite: a prior
    or the data must be bounded (the message names which, and how)."""


class BudgetExceededError(PrivacyError):
    """The planned privacy spend exceeds the budget; nothing was sampled or released."""


class UnsupportedModelError(PrivacyError):
    """The privacy analysis cannot bound this model (unknown likelihood family, raw data
    observed outside `PrivateData`, a graph shape it does not recognise)."""


class NotReleasableError(PrivacyError, TypeError):
    """What was asked for is a function of single raw records (a pointwise log-likelihood for
    az.loo or az.compare), which no private route releases; the message says what to run
    instead. A `TypeError` too, as ArviZ's own "log likelihood not found"."""


class UnsupportedEventError(PrivacyError, TypeError):
    """A release's privacy event is of a type no accountant of the ledger reads, so its
    composition has no bound here; nothing is recorded."""


class LedgerError(PrivacyError):
    """A ledger's journal cannot be used as its guarantee needs (see its subclasses); nothing
    was released. Raised as such for a ledger file of an earlier format, with how to migrate
    it."""


class LedgerWriteError(LedgerError):
    """A release's lines did not land whole in a journal, or could not be committed (a full
    disk, a file size limit, an I/O error): the release was discarded, its output never
    returned. Lines that did not land are truncated back; lines whose commit failed stay and
    count against the budget (the safe side)."""


class LedgerIntegrityError(LedgerError):
    """A journal fails its checks: a line that is not valid and is not a line torn by a crash
    (a changed, removed or inserted line, an edited header), a file that holds fewer lines
    than its commit record committed (its end was cut off) or whose record is damaged or
    missing, an incomplete last line that no commit record can tell from a cut release, or a
    file that was truncated, replaced or removed while this process used it. Every release
    from its data is refused until the file is restored (or, for the incomplete line of a
    crash, acknowledged); the message names the file and the line."""


class UncoveredDataWarning(UserWarning):
    """A release reads a private data set that no ledger file attached in this session
    covers, while another data set is covered: if both come from the same people (a corrected
    record, a subset of rows or columns), declare the same ``source`` for both."""


class ConvergenceWarning(UserWarning):
    """The released chains have not mixed (R-hat or effective sample size), said once per
    `pmp.sample` call in place of PyMC's convergence warnings, with what a short private chain
    means for the route that drew it."""


class NUTSFallbackWarning(UserWarning):
    """`pmp.sample` runs PyMC (NUTS) on a noise-aware privatised model because the numpy
    sampler does not cover a part of it (a `pm.Potential`, a likelihood it has no move for):
    compiled and often 10 to 300 times slower. The message names the part; pass
    ``step=pm.NUTS()`` to choose NUTS and silence it."""


class UninformativeReleaseWarning(UserWarning):
    """`pmp.privatize` predicts, before anything is released, that the released statistics
    will barely inform a parameter (its posterior sd close to its prior's): the ε would be
    spent for little. The message gives the ε that would reach a stated accuracy."""


class CalibrationWarning(UserWarning):
    """A plug-in posterior (``pmp.privatize(..., noise_aware=False)``) whose released
    statistics carry noise that is not small next to their own sampling spread: its intervals
    are too narrow and can sit far from the truth."""
