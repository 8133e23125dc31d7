"""Private data: its declaration (`PrivateData`, the one door in for raw data), the one pass
over the records, and the ledger of each data set."""

from pymc_private.namespaces import face

_NAMES = {
    "PrivacyLedger": "ledgers",
    "PrivateData": "declaration",
    "PrivateDataSpec": "declaration",
    "ReleasedBounds": "declaration",
    "check_private_data": "declaration",
    "datasets_of": "declaration",
    "ledger_for": "ledgers",
    "private_bounds": "bounds",
    "private_data": "declaration",
}
__all__ = sorted(_NAMES)
__getattr__, __dir__ = face(__name__, _NAMES)
