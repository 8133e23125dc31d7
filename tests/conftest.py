"""Shared fixtures: seeded generators and the naive Bayes model of DESIGN.md §3."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

from pymc_private.demo import naive_bayes_model


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20240601)


@pytest.fixture
def make_naive_bayes():
    """Builds the naive Bayes model of DESIGN.md §3: ``(labels, features, a, **kwargs)``."""

    def make(labels, features, a: float, **kwargs) -> pm.Model:
        return naive_bayes_model(labels, features, a=a, **kwargs)

    return make
