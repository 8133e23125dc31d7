"""The faces of the subpackages: the names a user calls through a namespace (``pmp.dp.laplace``,
``pmp.data.datasets_of``), each imported from the module that defines it when first read.

A face imports nothing when its package is imported: the library's modules import each other
by their full paths, and a face that imported its modules eagerly would make any module that
reads one of its package's modules import the whole package, and the packages above it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

__all__ = ["face"]


def face(package: str, names: Mapping[str, str]) -> tuple[Callable, Callable]:
    """``__getattr__`` and ``__dir__`` for the package ``package`` whose public ``names`` are
    defined in its modules (name → module name within the package)."""

    def __getattr__(name: str):
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{names[name]}"), name)

    def __dir__() -> list[str]:
        return sorted(names)

    return __getattr__, __dir__
