"""Draws: `pmp.sample`, exact posterior draws and PSAQR, the private MAP, and posterior
predictive draws that read no raw data."""

from pymc_private.namespaces import face

_NAMES = {
    "PosteriorSampleResponder": "posterior",
    "map_utility_bound": "map_estimate",
    "private_map": "map_estimate",
    "psaqr_utility_bound": "posterior",
    "sample": "sample",
    "sample_posterior": "posterior",
    "sample_posterior_predictive": "predictive",
}
__all__ = sorted(_NAMES)
__getattr__, __dir__ = face(__name__, _NAMES)
