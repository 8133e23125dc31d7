"""The privacy core stands below the model layer: no module of `pymc_private.dp` imports PyMC,
PyTensor, ArviZ or a module of `pymc_private` outside `pymc_private.dp`, `pymc_private.errors`
and `pymc_private.namespaces` (the faces' lazy names, which import only `importlib`),
at the top of the file or inside a function (read from the source, so an import that a code
path rarely runs counts as much as one that always runs)."""

import ast
from pathlib import Path

import pytest

import pymc_private.dp

CORE = Path(pymc_private.dp.__file__).parent
FORBIDDEN_PACKAGES = ("pymc", "pytensor", "arviz")
ALLOWED_OWN = ("pymc_private.dp", "pymc_private.errors", "pymc_private.namespaces")


def _imported_modules(source: str, package: str) -> list[tuple[int, str]]:
    """Every module the import statements of ``source`` (a module of ``package``) name, with
    their lines, at any depth: ``import a.b`` and ``from a.b import c`` give ``a.b``;
    ``from pymc_private import c`` gives ``pymc_private.c``; relative imports are resolved
    against ``package``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                parts = package.split(".")
                module = ".".join([*parts[: len(parts) - node.level + 1], *filter(None, [module])])
            if module == "pymc_private":
                found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, module))
    return found


def _violations(source: str, package: str = "pymc_private.dp") -> list[str]:
    out = []
    for line, module in _imported_modules(source, package):
        top = module.split(".")[0]
        own = any(module == name or module.startswith(name + ".") for name in ALLOWED_OWN)
        if top in FORBIDDEN_PACKAGES or (top == "pymc_private" and not own):
            out.append(f"line {line} imports {module}")
    return out


CORE_MODULES = sorted(CORE.rglob("*.py"))


def test_the_core_has_modules():
    names = {path.stem for path in CORE_MODULES}
    assert {"events", "composition", "ledger", "budget", "journal", "session"} <= names


@pytest.mark.parametrize("path", CORE_MODULES, ids=lambda path: path.name)
def test_a_core_module_imports_nothing_above_the_core(path):
    package = ".".join(["pymc_private", *path.relative_to(CORE.parent).parent.parts])
    assert _violations(path.read_text(), package) == []


@pytest.mark.parametrize(
    "source, expected",
    [
        ("import pymc as pm\n", ["pymc"]),
        ("def f():\n    import pytensor.tensor as pt\n", ["pytensor.tensor"]),
        ("from arviz import InferenceData\n", ["arviz"]),
        (
            "def f():\n    from pymc_private.data.declaration import datasets_of\n",
            ["pymc_private.data.declaration"],
        ),
        ("from pymc_private import errors, session\n", ["pymc_private.session"]),
        ("import pymc_private\n", ["pymc_private"]),
        ("from .. import records\n", ["pymc_private.records"]),
        ("from ..ledgers import ledger_for\n", ["pymc_private.ledgers"]),
        ("from pymc_private.dp import session\nfrom . import events\n", []),
        ("from pymc_private.errors import LedgerError\nimport numpy\n", []),
    ],
)
def test_the_check_sees_a_forbidden_import(source, expected):
    assert _violations(source) == [f"line {source.count(chr(10))} imports {m}" for m in expected]
