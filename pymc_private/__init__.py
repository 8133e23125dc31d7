"""pymc-private: differentially private posterior sampling for PyMC models."""

from pymc_private.accounting import Budget, Composition, PrivacyLedger, Release
from pymc_private.audit import AuditResult, epsilon_lower_bound
from pymc_private.errors import (
    BudgetExceededError,
    DataBoundsError,
    InvalidPrivacyParameterError,
    PrivacyError,
    UnboundedSensitivityError,
    UnsupportedModelError,
)
from pymc_private.mechanisms import discrete_laplace, exponential_mechanism, laplace

__version__ = "0.1.0"

__all__ = [
    "AuditResult",
    "Budget",
    "BudgetExceededError",
    "Composition",
    "DataBoundsError",
    "InvalidPrivacyParameterError",
    "PrivacyError",
    "PrivacyLedger",
    "Release",
    "UnboundedSensitivityError",
    "UnsupportedModelError",
    "discrete_laplace",
    "epsilon_lower_bound",
    "exponential_mechanism",
    "laplace",
]
