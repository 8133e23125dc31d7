"""Exact draws of conditionals: conjugate blocks and the exact grid mechanism."""
