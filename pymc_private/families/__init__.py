"""What a record can move: the likelihood-family contract, sufficient statistics and their
kinds, one object per likelihood family, and the registry the analysis tries."""

from pymc_private.namespaces import face

_NAMES = {
    "FAMILIES": "registry",
    "LikelihoodFamily": "likelihood",
    "LikelihoodTerm": "likelihood",
    "StatisticSpec": "statistics",
    "find_family": "registry",
}
__all__ = sorted(_NAMES)
__getattr__, __dir__ = face(__name__, _NAMES)
