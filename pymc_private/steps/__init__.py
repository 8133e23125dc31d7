"""Private step methods for `pm.sample`, one page each, every transition an accounted
release."""

from pymc_private.namespaces import face

_NAMES = {
    "PrivateGibbs": "gibbs",
    "PrivateMetropolis": "metropolis",
    "PrivateStep": "base",
}
__all__ = sorted(_NAMES)
__getattr__, __dir__ = face(__name__, _NAMES)
