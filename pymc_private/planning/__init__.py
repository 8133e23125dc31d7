"""Before any data: the posterior accuracy a release at ε gives, and the ε an accuracy
needs."""

from pymc_private.namespaces import face

_NAMES = {
    "PrivacyPlan": "plan",
    "plan": "planner",
}
__all__ = sorted(_NAMES)
__getattr__, __dir__ = face(__name__, _NAMES)
