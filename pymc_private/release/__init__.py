"""What leaves: sealed results and what `check_release` says of them, synthetic data, and
the privacy report."""

from pymc_private.namespaces import face

_NAMES = {
    "PrivacyReport": "report",
    "ReleaseCheck": "seal",
    "SyntheticEstimate": "synthetic",
    "check_release": "seal",
    "combine_synthetic": "synthetic",
    "ledger_of": "seal",
    "loo": "seal",
    "plot_ppc": "report",
    "plot_privacy": "report",
    "privacy_report": "report",
    "synthesize": "synthetic",
}
__all__ = sorted(_NAMES)
__getattr__, __dir__ = face(__name__, _NAMES)
