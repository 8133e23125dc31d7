"""The posterior of released statistics read as noisy: its likelihood, the projection of
releases, and the numpy sampler (data augmentation, slice moves)."""

from pymc_private.namespaces import face

_NAMES = {
    "AugmentedSampler": "sampler",
    "NoiseLaw": "likelihood",
    "add_noise_aware_likelihood": "likelihood",
    "projected_statistics": "projection",
}
__all__ = sorted(_NAMES)
__getattr__, __dir__ = face(__name__, _NAMES)
