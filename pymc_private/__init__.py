"""pymc-private: differentially private posterior sampling for PyMC models."""

from pymc_private.analysis.core import PrivacyAnalysis, analyze
from pymc_private.analysis.leak_guard import refuse_private_paths
from pymc_private.analysis.privatisation import privatised_statistics
from pymc_private.data.declaration import PrivateData, check_private_data, private_data
from pymc_private.data.ledgers import PrivacyLedger, ledger_for
from pymc_private.dp.audit import AuditResult, epsilon_lower_bound
from pymc_private.dp.budget import Budget
from pymc_private.dp.composition import Composition
from pymc_private.dp.events import (
    PrivacyEvent,
    PureEvent,
    Release,
    SubsampledGaussianEvent,
    UnitShiftGaussianEvent,
    ZcdpEvent,
)
from pymc_private.dp.mechanisms import discrete_laplace, exponential_mechanism, laplace
from pymc_private.errors import (
    BudgetExceededError,
    CalibrationWarning,
    ConvergenceWarning,
    DataBoundsError,
    InvalidPrivacyParameterError,
    LedgerError,
    LedgerIntegrityError,
    LedgerWriteError,
    NotReleasableError,
    NUTSFallbackWarning,
    PrivacyError,
    UnboundedSensitivityError,
    UncoveredDataWarning,
    UnsupportedEventError,
    UnsupportedModelError,
)
from pymc_private.pay_once.privatize import privatize
from pymc_private.planning.plan import PrivacyPlan
from pymc_private.planning.planner import plan
from pymc_private.priors.distributions import (
    TruncatedBeta,
    TruncatedDirichlet,
    TruncatedExponential,
    TruncatedGamma,
    TruncatedMvNormal,
    TruncatedNormal,
)
from pymc_private.priors.support import ParameterSupport, parameter_support
from pymc_private.release.report import PrivacyReport, plot_ppc, plot_privacy, privacy_report
from pymc_private.release.seal import (
    ReleaseCheck,
    check_release,
    ledger_of,
    loo,
    sample_posterior_predictive,
)
from pymc_private.release.synthetic import SyntheticEstimate, combine_synthetic, synthesize
from pymc_private.sampling.map_estimate import map_utility_bound, private_map
from pymc_private.sampling.posterior import (
    PosteriorSampleResponder,
    psaqr_utility_bound,
    sample_posterior,
)
from pymc_private.sampling.sample import sample
from pymc_private.steps.gibbs import PrivateGibbs
from pymc_private.steps.metropolis import PrivateMetropolis

__version__ = "0.1.0"

__all__ = [
    "AuditResult",
    "Budget",
    "BudgetExceededError",
    "CalibrationWarning",
    "Composition",
    "ConvergenceWarning",
    "DataBoundsError",
    "InvalidPrivacyParameterError",
    "LedgerError",
    "LedgerIntegrityError",
    "LedgerWriteError",
    "NUTSFallbackWarning",
    "NotReleasableError",
    "ParameterSupport",
    "PosteriorSampleResponder",
    "PrivacyAnalysis",
    "PrivacyError",
    "PrivacyEvent",
    "PrivacyLedger",
    "PrivacyPlan",
    "PrivacyReport",
    "PrivateData",
    "PrivateGibbs",
    "PrivateMetropolis",
    "PureEvent",
    "Release",
    "ReleaseCheck",
    "SubsampledGaussianEvent",
    "SyntheticEstimate",
    "TruncatedBeta",
    "TruncatedDirichlet",
    "TruncatedExponential",
    "TruncatedGamma",
    "TruncatedMvNormal",
    "TruncatedNormal",
    "UnboundedSensitivityError",
    "UncoveredDataWarning",
    "UnitShiftGaussianEvent",
    "UnsupportedEventError",
    "UnsupportedModelError",
    "ZcdpEvent",
    "analyze",
    "check_private_data",
    "check_release",
    "combine_synthetic",
    "discrete_laplace",
    "epsilon_lower_bound",
    "exponential_mechanism",
    "laplace",
    "ledger_for",
    "ledger_of",
    "loo",
    "map_utility_bound",
    "parameter_support",
    "plan",
    "plot_ppc",
    "plot_privacy",
    "privacy_report",
    "private_data",
    "private_map",
    "privatised_statistics",
    "privatize",
    "psaqr_utility_bound",
    "refuse_private_paths",
    "sample",
    "sample_posterior",
    "sample_posterior_predictive",
    "synthesize",
]


def __getattr__(name: str):
    """`pmp.demo` without importing it (and its data set) with the package."""
    if name == "demo":
        import importlib

        return importlib.import_module("pymc_private.examples.demo")
    raise AttributeError(f"module 'pymc_private' has no attribute {name!r}")
