"""The conjugate families as objects: one instance each, found from a prior's name, each
drawing from its law truncated to a prior's support."""

from __future__ import annotations

import copy
import pickle

import cloudpickle
import numpy as np

from pymc_private.priors.conjugate import (
    BETA,
    CONJUGATE_FAMILIES,
    DIRICHLET,
    GAMMA,
    MVNORMAL,
    NORMAL,
    conjugate_family,
)
from pymc_private.priors.support import ParameterSupport


def _support(family, lower, upper, **extra):
    return ParameterSupport(family=family, params={}, lower=lower, upper=upper, **extra)


def test_conjugate_families_are_one_object_each_across_pickles_and_copies():
    assert [family.name for family in CONJUGATE_FAMILIES] == [
        "beta",
        "gamma",
        "normal",
        "dirichlet",
        "mvnormal",
    ]
    for family in CONJUGATE_FAMILIES:
        assert pickle.loads(pickle.dumps(family)) is family
        assert cloudpickle.loads(cloudpickle.dumps(family)) is family
        assert copy.deepcopy(family) is family


def test_a_prior_distribution_finds_its_conjugate_family():
    expected = {"beta": BETA, "uniform": BETA, "gamma": GAMMA, "exponential": GAMMA}
    expected |= {"normal": NORMAL, "dirichlet": DIRICHLET, "mvnormal": MVNORMAL}
    for prior, family in expected.items():
        assert conjugate_family(prior) is family
    assert conjugate_family("cauchy") is None and conjugate_family("halfnormal") is None
    lam = np.array([2.0, 3.0])
    support = _support("exponential", np.zeros(2), np.full(2, 5.0))
    prior = GAMMA.prior_parameters({"lam": lam}, support)
    assert np.array_equal(prior["alpha"], [1.0, 1.0]) and prior["beta"] is lam
    wide = _support("uniform", -1.0, 1.0)
    assert BETA.refusal(wide) == "a uniform prior is conjugate only as a probability"
    assert BETA.refusal(_support("uniform", 0.2, 0.9)) is None


def test_each_conjugate_family_draws_from_its_truncated_law():
    rng = np.random.default_rng(15)
    beta = BETA.draw(rng, {"alpha": 2.0, "beta": 2.0}, _support("beta", 0.2, 0.3), name="p")
    assert 0.2 <= beta <= 0.3
    gamma = GAMMA.draw(rng, {"alpha": 2.0, "beta": 2.0}, _support("gamma", 1.0, 2.0), name="lam")
    assert 1.0 <= gamma <= 2.0
    normal = NORMAL.draw(rng, {"mu": 0.0, "sigma": 1.0}, _support("normal", 3.0, 4.0), name="mu")
    assert 3.0 <= normal <= 4.0
    simplex = DIRICHLET.draw(
        rng,
        {"a": np.ones((2, 3))},
        _support("dirichlet", 0.2, 0.6, simplex_min_prob=0.2),
        name="p",
    )
    assert simplex.shape == (2, 3) and simplex.min() >= 0.2
    weights = MVNORMAL.draw(
        rng,
        {"mu": np.zeros(3), "cov": np.eye(3)},
        _support("mvnormal", -0.5, 0.5, radius=0.5),
        name="w",
    )
    assert weights.shape == (3,) and np.linalg.norm(weights) <= 0.5
