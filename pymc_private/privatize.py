"""The pay-once route: privatised sufficient statistics and the models built on them."""

from __future__ import annotations

from dataclasses import dataclass
from weakref import WeakKeyDictionary

import numpy as np
import pymc as pm

from pymc_private.accounting import PrivacyLedger, Release
from pymc_private.errors import UnsupportedModelError

__all__ = ["Privatisation", "privatisation_of", "privatised_statistics"]


@dataclass(frozen=True)
class Privatisation:
    """What `privatize` released for a model: public from then on.

    Attributes
    ----------
    statistics
        The privatised (noisy, projected) sufficient statistics, by name.
    release
        The single release that paid for them.
    ledger
        The ledger the release was recorded in; sampling the privatised model records its
        (free) draws there too.
    """

    statistics: dict[str, np.ndarray]
    release: Release
    ledger: PrivacyLedger


_PRIVATISATIONS: WeakKeyDictionary[pm.Model, Privatisation] = WeakKeyDictionary()


def privatisation_of(model: pm.Model) -> Privatisation | None:
    """The privatisation a model was built from by `privatize`, or None for other models."""
    return _PRIVATISATIONS.get(model)


def privatised_statistics(model: pm.Model) -> dict[str, np.ndarray]:
    """The privatised statistics of a model returned by `privatize` (copies; public)."""
    privatisation = privatisation_of(model)
    if privatisation is None:
        raise UnsupportedModelError(
            "This model was not returned by pmp.privatize: it has no privatised statistics. "
            "Call pmp.privatize(model, epsilon) first."
        )
    return {name: value.copy() for name, value in privatisation.statistics.items()}
