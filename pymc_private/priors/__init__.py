"""Priors whose support the analysis reads: truncated distributions, their normalising
mass, exact truncated draws, densities and conjugate families."""

from pymc_private.namespaces import face

_NAMES = {
    "ParameterSupport": "support",
    "TruncatedBeta": "distributions",
    "TruncatedDirichlet": "distributions",
    "TruncatedExponential": "distributions",
    "TruncatedGamma": "distributions",
    "TruncatedMvNormal": "distributions",
    "TruncatedNormal": "distributions",
    "parameter_support": "support",
}
__all__ = sorted(_NAMES)
__getattr__, __dir__ = face(__name__, _NAMES)
