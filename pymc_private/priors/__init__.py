"""Priors whose support the analysis reads: truncated distributions, their mass, draws, densities
and conjugate families."""
