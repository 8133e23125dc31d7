"""pymc-private: differentially private posterior sampling for PyMC models.

The names a PyMC author calls are here: declare the private data and the truncated priors,
analyse and plan, pay once (`privatize`) or per draw (`PrivateGibbs`, `PrivateMetropolis`),
sample within a `Budget`, and report and check what is released. Everything else is in the
subpackages, as namespaces: ``pmp.dp`` (events, mechanisms, composition, the auditor),
``pmp.data``, ``pmp.priors``, ``pmp.families``, ``pmp.analysis``, ``pmp.conditionals``,
``pmp.noise_aware``, ``pmp.pay_once``, ``pmp.steps``, ``pmp.sampling``, ``pmp.planning``,
``pmp.release`` and ``pmp.errors`` (every exception and warning).
"""

from pymc_private import (
    analysis,
    conditionals,
    data,
    dp,
    errors,
    families,
    noise_aware,
    pay_once,
    planning,
    priors,
    release,
    sampling,
    steps,
)
from pymc_private.analysis.core import analyze
from pymc_private.analysis.privatisation import privatised_statistics
from pymc_private.data.bounds import private_bounds
from pymc_private.data.declaration import PrivateData
from pymc_private.data.ledgers import PrivacyLedger, ledger_for
from pymc_private.dp.budget import Budget
from pymc_private.errors import (
    BudgetExceededError,
    DataBoundsError,
    InvalidPrivacyParameterError,
    PrivacyError,
    UnboundedSensitivityError,
    UnsupportedModelError,
)
from pymc_private.pay_once.privatize import privatize
from pymc_private.planning.planner import plan
from pymc_private.priors.distributions import (
    TruncatedBeta,
    TruncatedDirichlet,
    TruncatedExponential,
    TruncatedGamma,
    TruncatedMvNormal,
    TruncatedNormal,
)
from pymc_private.release.report import plot_ppc, plot_privacy, privacy_report
from pymc_private.release.seal import check_release, ledger_of
from pymc_private.release.synthetic import combine_synthetic, synthesize
from pymc_private.sampling.map_estimate import private_map
from pymc_private.sampling.posterior import sample_posterior
from pymc_private.sampling.predictive import sample_posterior_predictive
from pymc_private.sampling.sample import sample
from pymc_private.steps.gibbs import PrivateGibbs
from pymc_private.steps.metropolis import PrivateMetropolis

__version__ = "0.2.0"

__all__ = [
    "Budget",
    "BudgetExceededError",
    "DataBoundsError",
    "InvalidPrivacyParameterError",
    "PrivacyError",
    "PrivacyLedger",
    "PrivateData",
    "PrivateGibbs",
    "PrivateMetropolis",
    "TruncatedBeta",
    "TruncatedDirichlet",
    "TruncatedExponential",
    "TruncatedGamma",
    "TruncatedMvNormal",
    "TruncatedNormal",
    "UnboundedSensitivityError",
    "UnsupportedModelError",
    "analysis",
    "analyze",
    "check_release",
    "combine_synthetic",
    "conditionals",
    "data",
    "dp",
    "errors",
    "families",
    "ledger_for",
    "ledger_of",
    "noise_aware",
    "pay_once",
    "plan",
    "planning",
    "plot_ppc",
    "plot_privacy",
    "priors",
    "privacy_report",
    "private_bounds",
    "private_map",
    "privatised_statistics",
    "privatize",
    "release",
    "sample",
    "sample_posterior",
    "sample_posterior_predictive",
    "sampling",
    "steps",
    "synthesize",
]
