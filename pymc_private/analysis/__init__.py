"""What a model's graph says before any data: L per node and block, Δ₁, the ε of each
route, the leak guard and record separation."""

from pymc_private.namespaces import face

_NAMES = {
    "PrivacyAnalysis": "core",
    "RouteCost": "routes",
    "analyze": "core",
    "privatised_statistics": "privatisation",
    "reads_private_data": "leak_guard",
    "refuse_private_paths": "leak_guard",
    "runtime_graphs": "leak_guard",
}
__all__ = sorted(_NAMES)
__getattr__, __dir__ = face(__name__, _NAMES)
