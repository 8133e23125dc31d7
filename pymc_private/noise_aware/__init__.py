"""The posterior of released statistics read as noisy: its likelihood, projection and numpy
sampler."""
