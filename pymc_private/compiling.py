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
from collections.abc import Iterator, Mapping

import pytensor
from pytensor.compile.mode import get_mode
from pytensor.link.c.basic import CLinker
from pytensor.link.vm import VMLinker

from pymc_private.errors import UnsupportedModelError

__all__ = [
    "CHECKED_MODE",
    "checked_compile_kwargs",
    "compiling",
    "quiet_sampling",
]

# The PyTensor mode of everything the package compiles or runs PyMC's samplers under: the C
# backend (with Python for the ops it has no C code for), whose indexing raises IndexError
# beyond an axis. PyTensor 3's default, Numba (and JAX), do not check indices: an index
# beyond its axis reads whatever memory it points at, in a process that holds private data.
CHECKED_MODE = "CVM"

BLAS_WARNING = "PyTensor could not link to a BLAS installation"
IPYWIDGETS_WARNING = 'install "ipywidgets" for Jupyter support'
# PyMC's loggers and the advice on short chains they log, which pmp.sample replaces.
PYMC_ADVICE = {
    "pymc.sampling.mcmc": re.compile(r"Only \d+ samples per chain\."),
    "pymc.stats.convergence": re.compile(r"We recommend running at least 4 chains"),
}


def checked_compile_kwargs(compile_kwargs: Mapping | None, who: str) -> dict:
    """The ``compile_kwargs`` a route takes: a ``mode`` whose linker checks indices (C or
    Python: `VMLinker`, `CLinker`), or none (`CHECKED_MODE`); nothing else, since
    ``updates`` and ``givens`` are graphs over whatever they name, compiled where no check
    reads them for private data.

    Raises
    ------
    UnsupportedModelError
        Another key, or a mode that does not check indices (Numba, JAX).
    """
    kwargs = dict(compile_kwargs or {})
    others = sorted(set(kwargs) - {"mode"})
    if others:
        raise UnsupportedModelError(
            f"{who} takes compile_kwargs={{'mode': ...}} only, not {others}: updates and givens "
            "are graphs compiled beside the private ones, which nothing reads for private data."
        )
    mode = kwargs.get("mode", CHECKED_MODE)
    if not isinstance(get_mode(mode).linker, VMLinker | CLinker):
        raise UnsupportedModelError(
            f"{who} compiles with PyTensor's C or Python backend, which check every index "
            f"(Numba, PyTensor's default, and JAX do not): compile_kwargs may not choose the "
            f'mode {mode!r}; leave it out ("{CHECKED_MODE}").'
        )
    return {**kwargs, "mode": mode}


@contextlib.contextmanager
def compiling(mode=CHECKED_MODE) -> Iterator[None]:
    """Run a call of the package's that compiles PyTensor graphs (or runs PyMC's samplers,
    which compile theirs) with a mode whose indexing checks its bounds as PyTensor's default
    mode (`CHECKED_MODE`, or a checked one the caller chose: `checked_compile_kwargs`; None
    leaves PyTensor's, for graphs whose every advanced index is public and inside its axis),
    and PyTensor's BLAS warning silenced (the warnings filters and the mode restored after
    it)."""
    flags = contextlib.nullcontext() if mode is None else pytensor.config.change_flags(mode=mode)
    with flags, warnings.catch_warnings():
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
def quiet_sampling(mode=CHECKED_MODE) -> Iterator[None]:
    """Run a call of PyMC's samplers inside `compiling`, without rich's ipywidgets warning
    and PyMC's advice on short chains (module docstring); the filters are removed after
    it."""
    filters = [
        (logging.getLogger(name), _Without(pattern)) for name, pattern in PYMC_ADVICE.items()
    ]
    with compiling(mode), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=re.escape(IPYWIDGETS_WARNING))
        for logger, dropped in filters:
            logger.addFilter(dropped)
        try:
            yield
        finally:
            for logger, dropped in filters:
                logger.removeFilter(dropped)
