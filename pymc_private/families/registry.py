"""Every supported likelihood family, in the order `find_family` tries them."""

from __future__ import annotations

from collections.abc import Mapping

from pymc_private.families.likelihood import LikelihoodFamily
from pymc_private.families.regression import (
    LogisticRegression,
    NormalLinearRegression,
    PoissonRegression,
)
from pymc_private.families.statistics import ParameterTerm
from pymc_private.families.univariate import (
    Bernoulli,
    Binomial,
    Categorical,
    Exponential,
    NormalFreeSigma,
    NormalKnownSigma,
    Poisson,
)

__all__ = ["FAMILIES", "find_family"]

FAMILIES: tuple[LikelihoodFamily, ...] = (
    LogisticRegression(),
    PoissonRegression(),
    Bernoulli(),
    Binomial(),
    Categorical(),
    Poisson(),
    Exponential(),
    NormalLinearRegression(),
    NormalKnownSigma(),
    NormalFreeSigma(),
)
"""Every supported family, in the order they are tried."""


def find_family(op, parameters: Mapping[str, ParameterTerm]) -> LikelihoodFamily | None:
    """The first family of `FAMILIES` whose op matches and that accepts the parameters."""
    for family in FAMILIES:
        if isinstance(op, family.rv_op) and family.accepts(parameters):
            return family
    return None
