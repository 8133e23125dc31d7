"""pymc-private: differentially private posterior sampling for PyMC models."""

from pymc_private.errors import (
    BudgetExceededError,
    DataBoundsError,
    InvalidPrivacyParameterError,
    PrivacyError,
    UnboundedSensitivityError,
    UnsupportedModelError,
)

__version__ = "0.1.0"

__all__ = [
    "BudgetExceededError",
    "DataBoundsError",
    "InvalidPrivacyParameterError",
    "PrivacyError",
    "UnboundedSensitivityError",
    "UnsupportedModelError",
]
