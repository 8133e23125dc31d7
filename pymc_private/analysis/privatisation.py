"""The record of a privatisation and where it lives: in the privatised model's graph.

`pymc_private.pay_once.privatize` releases a model's sufficient statistics once and rebuilds the
model
on them; the `Privatisation` says what was released and at what cost. Like `pm.do` and
`pm.observe`, the transform keeps its state in the graph it returns: the record is the tag of
the data variables that hold the released statistics, and each free variable carries whether it
has a closed-form conditional there (the competence of `pmp.PrivateGibbs`). Copies, `pm.do` and
pickles of the model carry both, so no decision rests on which Python object is sampled. This
module writes and reads those tags; every sampler asks it whether a model is privatised.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pymc as pm
from pytensor.graph.basic import Variable

from pymc_private.analysis.core import PrivacyAnalysis
from pymc_private.analysis.leak_guard import reads_private_data
from pymc_private.data.declaration import RELEASED_TAG
from pymc_private.dp.events import Release
from pymc_private.errors import UnsupportedModelError
from pymc_private.noise_aware.likelihood import NoiseLaw

__all__ = [
    "POTENTIAL_SUFFIX",
    "Privatisation",
    "has_closed_form_conditional",
    "privatisation_of",
    "privatised_route",
    "privatised_statistics",
    "tag_conjugate",
    "tag_released",
]

# A privatised model writes the likelihood of each observed node as a Potential named after
# the node with this suffix (`pymc_private.pay_once.privatize`); the conditionals read it as that
# node.
POTENTIAL_SUFFIX = "_privatised"


@dataclass(frozen=True, eq=False)
class Privatisation:
    """What `privatize` released for a model: public from then on.

    It travels in the privatised model's graph, as the tag of the data variables that hold
    the released statistics (`pymc_private.data.declaration.RELEASED_TAG`), so copies, `pm.do` and
    pickles of the model carry it and no decision rests on which Python object is sampled.

    Attributes
    ----------
    statistics
        The privatised sufficient statistics the model holds, in released form and natural
        units (noisy; projected too for the plug-in posterior), by the names of
        ``analysis.statistics`` (category 0 of counts and the
        lower triangle of Gram matrices are derived, see
        `pymc_private.families.statistics.complete_statistic`).
    releases
        The releases that paid for them: one discrete Laplace release per statistic, whose
        ε add up to at most the ε asked for.
    analysis
        The public privacy analysis of the original model (terms, statistics, Δ₁), which the
        conjugate Gibbs sampler reads.
    epsilon
        The ε asked for.
    datasets
        The ids of the private data sets the statistics were computed from: a model built on
        them charges their ledgers (`pmp.ledger_for`).
    noise
        The noise law of each noised statistic.
    noise_aware
        Whether the model is the noise-aware posterior (its statistics are then the noisy
        values before projection) or the plug-in one (the projected values).
    """

    statistics: dict[str, np.ndarray]
    releases: tuple[Release, ...]
    analysis: PrivacyAnalysis
    epsilon: float
    datasets: tuple[str, ...]
    noise: dict[str, NoiseLaw]
    noise_aware: bool


_CONJUGATE_TAG = "pymc_private_conjugate"


def privatisation_of(model: pm.Model) -> Privatisation | None:
    """The privatisation whose released statistics a model holds (a model returned by
    `privatize`, or a copy or `pm.do` of one), or None."""
    for variable in model.data_vars:
        privatisation = getattr(variable.tag, RELEASED_TAG, None)
        if privatisation is not None:
            return privatisation
    return None


def privatised_route(model: pm.Model) -> Privatisation | None:
    """The privatisation to sample a model on for free: the one whose released statistics it
    holds, provided it reads no raw private data
    (`pymc_private.analysis.leak_guard.reads_private_data`:
    a privatised model extended with raw `PrivateData` pays per draw again), with the
    statistics its data variables hold now (the graph decides: a `pm.set_data` since is what
    every sampler conditions on). None otherwise."""
    if reads_private_data(model):
        return None
    privatisation = privatisation_of(model)
    if privatisation is None:
        return None
    held = {name: np.asarray(model[name].get_value()) for name in privatisation.statistics}
    return dataclasses.replace(privatisation, statistics=held)


def has_closed_form_conditional(rv: Variable) -> bool:
    """Whether `privatize` found a closed-form conditional for this free variable of the
    model it returned (the competence of `pmp.PrivateGibbs`)."""
    return bool(getattr(rv.tag, _CONJUGATE_TAG, False))


def tag_released(variable: Variable, privatisation: Privatisation) -> None:
    """Make ``variable``, a data variable holding released statistics of a privatised model,
    carry ``privatisation`` (read back by `privatisation_of`)."""
    setattr(variable.tag, RELEASED_TAG, privatisation)


def tag_conjugate(rv: Variable, conjugate: bool) -> None:
    """Record on a free variable of a privatised model whether it has a closed-form
    conditional there (read back by `has_closed_form_conditional`)."""
    setattr(rv.tag, _CONJUGATE_TAG, conjugate)


def privatised_statistics(model: pm.Model) -> dict[str, np.ndarray]:
    """The privatised statistics a model holds (copies; public)."""
    privatisation = privatisation_of(model)
    if privatisation is None:
        raise UnsupportedModelError(
            "This model was not returned by pmp.privatize: it has no privatised statistics. "
            "Call pmp.privatize(model, epsilon) first."
        )
    return {name: value.copy() for name, value in privatisation.statistics.items()}
