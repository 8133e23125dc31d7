"""The conjugate prior families as objects, one per family: `BETA`, `GAMMA`, `NORMAL`,
`DIRICHLET`, `MVNORMAL` (`ConjugateFamily`), in `CONJUGATE_FAMILIES`, found from a prior
distribution's name by `conjugate_family`.

Each family holds the additive coordinates in which conjugate updates add up, the prior
distributions conjugate in it, its exact sampler of the family's law truncated to a prior's
support (the functions of `pymc_private.priors.truncated`, with their proofs) and its grid features
for `pymc_private.conditionals.exact`.

Functions
---------
ConjugateFamily.draw(rng, parameters, support, *, name, size=None, current=None)
    The family's sampler in `pymc_private.priors.truncated`, with the support read by
    `pymc_private.priors.support.parameter_support`.
conjugate_family(prior)
    The family of a prior distribution, or None.

"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from pymc_private.priors.truncated import (
    MAX_PROPOSALS,
    mvnormal_in_ball,
    truncated_beta,
    truncated_dirichlet,
    truncated_gamma,
    truncated_normal,
)

__all__ = [
    "BETA",
    "CONJUGATE_FAMILIES",
    "DIRICHLET",
    "GAMMA",
    "MVNORMAL",
    "NORMAL",
    "ConjugateFamily",
    "conjugate_family",
]


class ConjugateFamily(ABC):
    """A conjugate prior family: its additive coordinates, its exact truncated sampler and
    the features of its grid on raw data. One instance per family (`BETA`, `GAMMA`,
    `NORMAL`, `DIRICHLET`, `MVNORMAL`); ``name`` is for messages and displays only.

    A conjugate update adds each observed node's contribution
    (`LikelihoodFamily.conjugate_contribution`) to the prior's additive coordinates:
    pseudo-counts for beta (alpha, beta), gamma (alpha, beta = rate) and dirichlet (a);
    precision ``J`` and precision-weighted mean ``h = J·mean`` for normal and mvnormal.
    ``additive`` maps the family's usual parameters to those coordinates, ``usual`` back.
    Both use +, −, ×, / (and a square root, an inverse for mvnormal, only in ``usual``), so
    ``additive`` is exact on rational arrays. ``flat`` holds the additive coordinates of the
    density 1 (beta: α = β = 1; gamma: α = 1, rate 0; dirichlet: a = 1; normal: h = J = 0).
    ``vector`` families (dirichlet, mvnormal) hold one vector per entry, along the last
    axis. A family with ``grid`` has an exact grid sampler on raw data
    (`pymc_private.conditionals.exact.GridBlock`), from its ``grid_features`` and
    ``grid_coefficients``.
    ``priors`` names the prior distributions conjugate in the family (as
    `pymc_private.priors.support.ParameterSupport.family` names them), each with the map from its
    parameters (``ParameterSupport.params``) and support to the family's usual parameters
    (`prior_parameters`).
    """

    name: str
    flat: Mapping[str, int]
    priors: Mapping[str, Callable[[Mapping[str, Any], Any], dict[str, Any]]]
    vector = False
    grid = False

    def __repr__(self) -> str:
        return f"ConjugateFamily({self.name!r})"

    def __reduce__(self) -> str:
        # One instance per family, compared by identity: pickles and copies (a step sent
        # to a worker process) refer to the module's instance, `BETA` for "beta", ...
        return self.name.upper()

    def prior_parameters(self, params: Mapping[str, Any], support: Any) -> dict[str, Any]:
        """The prior's parameters in the family's usual parameterisation, from its own
        ``params`` (named as in ``support.params``) on ``support`` (an exponential prior is
        Gamma(1, λ), a uniform one on [a, b] ⊂ [0, 1] is Beta(1, 1) on [a, b])."""
        return self.priors[support.family](params, support)

    def refusal(self, support: Any) -> str | None:
        """Why a prior of ``priors`` on ``support`` is not conjugate after all (None when it
        is)."""
        return None

    def additive(self, parameters: Mapping[str, Any]) -> dict[str, Any]:
        """The additive coordinates of the usual parameters."""
        return dict(parameters)

    def usual(self, parameters: Mapping[str, Any]) -> dict[str, Any]:
        """The usual parameters of the additive coordinates."""
        return dict(parameters)

    def power(self, additive: Mapping[str, Any], exponent) -> dict[str, Any]:
        """The additive coordinates of a density raised to ``exponent``: the log-density is
        linear in the coordinates' offsets from ``flat``, so they scale by it (exact on
        rational arrays and a rational exponent)."""
        return {
            key: self.flat[key] + exponent * (value - self.flat[key])
            for key, value in additive.items()
        }

    @abstractmethod
    def draw(
        self,
        rng: np.random.Generator,
        parameters: Mapping[str, Any],
        support: Any,
        *,
        name: str,
        size: int | tuple[int, ...] | None = None,
        current: Any = None,
        sweeps: int = 1,
        max_proposals: int = MAX_PROPOSALS,
    ) -> np.ndarray:
        """One exact draw per element from the family's law truncated to a prior's support.

        With ``current`` (a Dirichlet or MvNormal state in the support, or ``"centre"``),
        never fails: a draw whose rejection gave up after ``max_proposals`` proposals is
        ``sweeps`` sweeps of Markov moves from ``current`` (`pymc_private.priors.truncated`); scalar
        families never give up and ignore it.

        Parameters
        ----------
        rng : numpy.random.Generator
            The only source of randomness.
        parameters : Mapping
            The usual parameters, as returned by ``ConjugateBlock.conditional``: beta
            (alpha, beta), gamma (alpha, beta = rate), normal (mu, sigma), dirichlet (a),
            mvnormal (mu, cov).
        support : ParameterSupport
            From `pymc_private.priors.support.parameter_support`: ``lower``/``upper`` for the
            scalar families, ``simplex_min_prob`` for the Dirichlet, ``radius`` for the
            MvNormal.
        name : str
            The variable's name, for error messages.
        size : optional
            As in the functions of `pymc_private.priors.truncated`.
        current : array_like or "centre", optional
            The chain's current state, or the support's centre (origin, uniform point) for
            independent draws.
        sweeps : int
            Sweeps of d (MvNormal) or K (Dirichlet) moves per draw that gave up.
        max_proposals : int
            Rejection proposals per draw before giving up.
        """

    def grid_features(self, centres: np.ndarray, lower: float, upper: float) -> np.ndarray:
        """The features (one row per cell) whose inner product with `grid_coefficients`
        is the log-density at the cells' ``centres`` of a scalar grid on [lower, upper]."""
        raise NotImplementedError

    def grid_coefficients(self, posterior: Mapping[str, np.ndarray], centre) -> list:
        """The posterior's coefficients β of the family's grid features, per entry (exact
        in the arithmetic of ``posterior``)."""
        raise NotImplementedError

    def grid_centre(self, lower: float, upper: float) -> float:
        """The public point m a scalar grid's features on [lower, upper] are centred on."""
        return 0.0

    def geometric_grid(self, lower: float) -> bool:
        """Whether a scalar grid on [lower, upper] has geometrically spaced edges."""
        return False


class _ScalarFamily(ConjugateFamily):
    """A scalar family drawn by its truncated sampler from two usual parameters."""

    sampler: Callable
    first: str
    second: str
    grid = True

    def draw(
        self,
        rng,
        parameters,
        support,
        *,
        name,
        size=None,
        current=None,
        sweeps=1,
        max_proposals=MAX_PROPOSALS,
    ):
        return self.sampler(
            rng,
            parameters[self.first],
            parameters[self.second],
            support.lower,
            support.upper,
            size,
            name=name,
        )


class _Beta(_ScalarFamily):
    name = "beta"
    flat = MappingProxyType({"alpha": 1, "beta": 1})
    priors = MappingProxyType(
        {
            "beta": lambda p, s: {"alpha": p["alpha"], "beta": p["beta"]},
            "uniform": lambda p, s: {
                "alpha": np.ones_like(s.lower),
                "beta": np.ones_like(s.lower),
            },
        }
    )
    first, second = "alpha", "beta"

    sampler = staticmethod(truncated_beta)

    def refusal(self, support):
        if support.family == "uniform" and not (
            np.all(support.lower >= 0.0) and np.all(support.upper <= 1.0)
        ):
            return "a uniform prior is conjugate only as a probability"
        return None

    def grid_features(self, centres, lower, upper):
        return np.column_stack([np.log(centres), np.log1p(-centres)])

    def grid_coefficients(self, posterior, centre):
        return [posterior["alpha"] - 1, posterior["beta"] - 1]

    def log_kernel(self, prior: Mapping[str, Any], theta: np.ndarray) -> np.ndarray:
        """The prior's log density at ``theta`` up to a constant."""
        return (prior["alpha"] - 1) * np.log(theta) + (prior["beta"] - 1) * np.log1p(-theta)


class _Gamma(_ScalarFamily):
    name = "gamma"
    flat = MappingProxyType({"alpha": 1, "beta": 0})
    priors = MappingProxyType(
        {
            "gamma": lambda p, s: {"alpha": p["alpha"], "beta": p["beta"]},
            "exponential": lambda p, s: {"alpha": np.ones_like(p["lam"]), "beta": p["lam"]},
        }
    )
    first, second = "alpha", "beta"

    sampler = staticmethod(truncated_gamma)

    def grid_features(self, centres, lower, upper):
        return np.column_stack([np.log(centres), -centres])

    def grid_coefficients(self, posterior, centre):
        return [posterior["alpha"] - 1, posterior["beta"]]

    def geometric_grid(self, lower):
        return lower > 0.0

    def log_kernel(self, prior: Mapping[str, Any], theta: np.ndarray) -> np.ndarray:
        """The prior's log density at ``theta`` up to a constant."""
        return (prior["alpha"] - 1) * np.log(theta) - prior["beta"] * theta


class _Normal(_ScalarFamily):
    name = "normal"
    flat = MappingProxyType({"h": 0, "J": 0})
    priors = MappingProxyType({"normal": lambda p, s: {"mu": p["mu"], "sigma": p["sigma"]}})
    first, second = "mu", "sigma"

    sampler = staticmethod(truncated_normal)

    def additive(self, parameters):
        sigma = np.asarray(parameters["sigma"])
        precision = 1 / (sigma * sigma)
        return {"h": np.asarray(parameters["mu"]) * precision, "J": precision}

    def usual(self, parameters):
        precision = np.asarray(parameters["J"], dtype=np.float64)
        return {
            "mu": np.asarray(parameters["h"], dtype=np.float64) / precision,
            "sigma": precision**-0.5,
        }

    def grid_centre(self, lower, upper):
        """The public point m the normal features are centred on (keeps them small)."""
        return 0.5 * lower + 0.5 * upper

    def grid_features(self, centres, lower, upper):
        offset = centres - self.grid_centre(lower, upper)
        return np.column_stack([offset, -0.5 * offset * offset])

    def grid_coefficients(self, posterior, centre):
        return [posterior["h"] - posterior["J"] * centre, posterior["J"]]


class _Dirichlet(ConjugateFamily):
    name = "dirichlet"
    flat = MappingProxyType({"a": 1})
    priors = MappingProxyType({"dirichlet": lambda p, s: {"a": p["a"]}})
    vector = True
    grid = True

    def draw(
        self,
        rng,
        parameters,
        support,
        *,
        name,
        size=None,
        current=None,
        sweeps=1,
        max_proposals=MAX_PROPOSALS,
    ):
        a = np.asarray(parameters["a"], dtype=float)
        width = a.shape[-1]
        return truncated_dirichlet(
            rng,
            a,
            support.simplex_min_prob or 0.0,
            size,
            name=name,
            max_proposals=max_proposals,
            current=np.full(width, 1.0 / width) if _is_centre(current) else current,
            moves=sweeps * width,
        )

    def grid_coefficients(self, posterior, centre):
        a = np.asarray(posterior["a"])
        return [a[..., k] - 1 for k in range(a.shape[-1])]


class _MvNormal(ConjugateFamily):
    name = "mvnormal"
    flat = MappingProxyType({"h": 0, "J": 0})
    priors = MappingProxyType({"mvnormal": lambda p, s: {"mu": p["mu"], "cov": p["cov"]}})
    vector = True

    def additive(self, parameters):
        precision = np.linalg.inv(np.asarray(parameters["cov"], dtype=np.float64))
        return {"h": precision @ np.asarray(parameters["mu"], dtype=np.float64), "J": precision}

    def usual(self, parameters):
        cov = np.linalg.inv(np.asarray(parameters["J"], dtype=np.float64))
        cov = 0.5 * (cov + cov.T)
        return {"mu": cov @ np.asarray(parameters["h"], dtype=np.float64), "cov": cov}

    def draw(
        self,
        rng,
        parameters,
        support,
        *,
        name,
        size=None,
        current=None,
        sweeps=1,
        max_proposals=MAX_PROPOSALS,
    ):
        radius = support.radius if support.radius is not None else np.inf
        mu = np.asarray(parameters["mu"], dtype=float)
        return mvnormal_in_ball(
            rng,
            mu,
            parameters["cov"],
            radius,
            size,
            name=name,
            max_proposals=max_proposals,
            current=np.zeros(mu.shape[-1]) if _is_centre(current) else current,
            moves=sweeps * mu.shape[-1],
        )


def _is_centre(current: Any) -> bool:
    return isinstance(current, str) and current == "centre"


BETA: ConjugateFamily = _Beta()
"""Beta(α, β) on [lower, upper] ⊂ [0, 1]: `truncated_beta`."""
GAMMA: ConjugateFamily = _Gamma()
"""Gamma(α, rate β) on [lower, upper] ⊂ [0, ∞): `truncated_gamma`."""
NORMAL: ConjugateFamily = _Normal()
"""Normal(μ, σ) on [lower, upper]: `truncated_normal`."""
DIRICHLET: ConjugateFamily = _Dirichlet()
"""Dirichlet(a) on {p : every p_k ≥ min_prob}: `truncated_dirichlet`."""
MVNORMAL: ConjugateFamily = _MvNormal()
"""MvNormal(μ, Σ) on {w : ‖w‖₂ ≤ radius}: `mvnormal_in_ball`."""

CONJUGATE_FAMILIES: tuple[ConjugateFamily, ...] = (BETA, GAMMA, NORMAL, DIRICHLET, MVNORMAL)
"""Every conjugate family; a new conjugate prior is one object appended here."""


def conjugate_family(prior: str) -> ConjugateFamily | None:
    """The conjugate family of a prior distribution (named as
    `pymc_private.priors.support.ParameterSupport.family` names it), or None when it has none."""
    return next((family for family in CONJUGATE_FAMILIES if prior in family.priors), None)
