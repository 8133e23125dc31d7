"""pymc-private: differentially private posterior sampling for PyMC models."""

from pymc_private.accounting import Budget, Composition, PrivacyLedger, Release
from pymc_private.analysis import PrivacyAnalysis, analyze
from pymc_private.audit import AuditResult, epsilon_lower_bound
from pymc_private.data import PrivateData, private_data
from pymc_private.errors import (
    BudgetExceededError,
    DataBoundsError,
    InvalidPrivacyParameterError,
    PrivacyError,
    UnboundedSensitivityError,
    UnsupportedModelError,
)
from pymc_private.mechanisms import discrete_laplace, exponential_mechanism, laplace
from pymc_private.priors import (
    ParameterSupport,
    TruncatedBeta,
    TruncatedDirichlet,
    TruncatedExponential,
    TruncatedGamma,
    TruncatedMvNormal,
    TruncatedNormal,
    parameter_support,
)
from pymc_private.report import plot_privacy, privacy_report
from pymc_private.sampling import ledger_of, sample
from pymc_private.steps.metropolis import PrivateMetropolis

__version__ = "0.1.0"

__all__ = [
    "AuditResult",
    "Budget",
    "BudgetExceededError",
    "Composition",
    "DataBoundsError",
    "InvalidPrivacyParameterError",
    "ParameterSupport",
    "PrivacyAnalysis",
    "PrivacyError",
    "PrivacyLedger",
    "PrivateData",
    "PrivateMetropolis",
    "Release",
    "TruncatedBeta",
    "TruncatedDirichlet",
    "TruncatedExponential",
    "TruncatedGamma",
    "TruncatedMvNormal",
    "TruncatedNormal",
    "UnboundedSensitivityError",
    "UnsupportedModelError",
    "analyze",
    "discrete_laplace",
    "epsilon_lower_bound",
    "exponential_mechanism",
    "laplace",
    "ledger_of",
    "parameter_support",
    "plot_privacy",
    "privacy_report",
    "private_data",
    "sample",
]
