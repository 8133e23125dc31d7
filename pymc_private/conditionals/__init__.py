"""Exact draws of conditionals: conjugate blocks and the exact grid mechanism."""

from pymc_private.namespaces import face

_NAMES = {
    "ConjugateBlock": "blocks",
    "GridBlock": "exact",
}
__all__ = sorted(_NAMES)
__getattr__, __dir__ = face(__name__, _NAMES)
