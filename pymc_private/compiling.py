"""Where the package compiles PyTensor graphs, and PyTensor's BLAS warning there.

The first graph with a matrix product that PyTensor compiles with its C backend in a process
(modes ``CVM`` and ``C``; its default backend, Numba, does not probe) makes it probe for a
BLAS library; on pip installs, which link none, it warns (a `UserWarning`) that operations
"will be severely degraded". For the package's graphs that is a matter of speed only (numpy's
BLAS serves the compiled products), which the small graphs of private models barely feel, and
a user who asked for draws has nothing to act on. The package's own calls that compile
(`pmp.sample`'s run of `pm.sample`, the private steps, posterior predictive draws, coverage
studies) run inside `compiling`, which silences that one warning while they run; importing the
package changes no warnings filter and no logger of the user's (a user's own compile outside
them warns as PyTensor would). PyTensor's ``pytensor.tensor.blas`` logger needs nothing: with
this PyTensor it logs the probe at DEBUG and INFO only, below the WARNING a logger shows by
default.

The package's runs of PyMC's samplers (`pm.sample` in `pmp.sample`,
`pm.sample_posterior_predictive` in `pmp.sample_posterior_predictive`) are quieter still
(`quiet_sampling`): in Jupyter without ipywidgets, rich's progress bar warns 'install
"ipywidgets" for Jupyter support' on every refresh, and short private chains make PyMC log
"Only N samples per chain" (and, were its convergence checks run, "We recommend running at
least 4 chains"): advice `pmp.sample` gives once, in its own words and with what to change on
a private fit (`pymc_private.sampling.sample`'s `ConvergenceWarning`). Those lines alone are held
back while the call runs, by a warnings filter restored after it and a filter on PyMC's two
loggers removed after it; every other line of PyMC's, and every filter of the user's, is
left as it was.
"""

from __future__ import annotations

import contextlib
import logging
import re
import warnings
from collections.abc import Iterator

__all__ = ["compiling", "quiet_sampling"]

BLAS_WARNING = "PyTensor could not link to a BLAS installation"
IPYWIDGETS_WARNING = 'install "ipywidgets" for Jupyter support'
# PyMC's loggers and the advice on short chains they log, which pmp.sample replaces.
PYMC_ADVICE = {
    "pymc.sampling.mcmc": re.compile(r"Only \d+ samples per chain\."),
    "pymc.stats.convergence": re.compile(r"We recommend running at least 4 chains"),
}


@contextlib.contextmanager
def compiling() -> Iterator[None]:
    """Run a call of the package's that compiles PyTensor graphs with PyTensor's BLAS warning
    silenced (and the warnings filters restored after it, as `warnings.catch_warnings`
    does)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=BLAS_WARNING, category=UserWarning)
        yield


class _Without(logging.Filter):
    """Drops the records whose message matches ``pattern``."""

    def __init__(self, pattern: re.Pattern) -> None:
        super().__init__()
        self.pattern = pattern

    def filter(self, record: logging.LogRecord) -> bool:
        return not self.pattern.match(record.getMessage())


@contextlib.contextmanager
def quiet_sampling() -> Iterator[None]:
    """Run a call of PyMC's samplers inside `compiling`, without rich's ipywidgets warning
    and PyMC's advice on short chains (module docstring); the filters are removed after
    it."""
    filters = [
        (logging.getLogger(name), _Without(pattern)) for name, pattern in PYMC_ADVICE.items()
    ]
    with compiling(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=re.escape(IPYWIDGETS_WARNING))
        for logger, dropped in filters:
            logger.addFilter(dropped)
        try:
            yield
        finally:
            for logger, dropped in filters:
                logger.removeFilter(dropped)
