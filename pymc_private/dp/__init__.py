"""The privacy core: releases and their events, composition, ledgers, budgets, journals, the
session's state and the noise mechanisms.

Built on numpy, scipy, OpenDP and dp-accounting only: nothing here imports PyMC, PyTensor or a
module of `pymc_private` outside this package except `pymc_private.errors`
(``tests/test_layers.py`` checks it). The data layer stands above it: which data sets a model
reads, and so which ledger charges it, is `pymc_private.data.ledgers`."""

from pymc_private.namespaces import face

_NAMES = {
    "AttackerRisk": "risk",
    "AuditResult": "audit",
    "Budget": "budget",
    "Composition": "composition",
    "DiscreteGaussianMechanism": "mechanisms",
    "DiscreteLaplaceMechanism": "mechanisms",
    "ExponentialMechanism": "mechanisms",
    "GaussianMechanism": "mechanisms",
    "LaplaceMechanism": "mechanisms",
    "PrivacyEvent": "events",
    "PureEvent": "events",
    "Release": "events",
    "SubsampledGaussianEvent": "events",
    "UnitShiftGaussianEvent": "events",
    "UnitShiftGaussianMechanism": "mechanisms",
    "ZcdpEvent": "events",
    "discrete_gaussian": "mechanisms",
    "discrete_laplace": "mechanisms",
    "epsilon_lower_bound": "audit",
    "exponential_mechanism": "mechanisms",
    "gaussian": "mechanisms",
    "laplace": "mechanisms",
}
__all__ = sorted(_NAMES)
__getattr__, __dir__ = face(__name__, _NAMES)
