"""Pay once: the model transform that releases the sufficient statistics (`privatize`) and
its release plans."""

from pymc_private.namespaces import face

_NAMES = {
    "CellsPlan": "plans",
    "FourierPlan": "plans",
    "ReleasePlan": "plans",
    "UnitShiftPlan": "plans",
    "privatize": "privatize",
}
__all__ = sorted(_NAMES)
__getattr__, __dir__ = face(__name__, _NAMES)
