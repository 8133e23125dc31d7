"""Where the package compiles PyTensor graphs, and PyTensor's BLAS warning there.

The first graph with a matrix product that PyTensor compiles in a process makes it probe for
a BLAS library; on pip installs, which link none, it warns (a `UserWarning`) that operations
"will be severely degraded". For the package's graphs that is a matter of speed only (numpy's
BLAS serves the compiled products), which the small graphs of private models barely feel, and
a user who asked for draws has nothing to act on. The package's own calls that compile
(`pmp.sample`'s run of `pm.sample`, the private steps, posterior predictive draws, coverage
studies) run inside `compiling`, which silences that one warning while they run; importing the
package changes no warnings filter and no logger of the user's (a user's own compile outside
them warns as PyTensor would). PyTensor's ``pytensor.tensor.blas`` logger needs nothing: with
this PyTensor it logs the probe at DEBUG and INFO only, below the WARNING a logger shows by
default.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

__all__ = ["compiling"]

BLAS_WARNING = "PyTensor could not link to a BLAS installation"


@contextlib.contextmanager
def compiling() -> Iterator[None]:
    """Run a call of the package's that compiles PyTensor graphs with PyTensor's BLAS warning
    silenced (and the warnings filters restored after it, as `warnings.catch_warnings`
    does)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=BLAS_WARNING, category=UserWarning)
        yield
