"""The package's imports: no module imports itself back through others (lazy imports inside
functions, imports for annotations only and the names a subpackage's face reads included),
and importing the package leaves the user's warnings filters and loggers as they were."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import pymc_private

PACKAGE = Path(pymc_private.__file__).resolve().parent


def _module_names() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its ``__init__``)."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _imported(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``module`` imports anywhere in its body (module level,
    inside functions, under ``if TYPE_CHECKING:`` (a coupling all the same),
    ``importlib.import_module("...")`` of a constant name, and the modules a subpackage's
    face names in its ``_NAMES``). ``from pymc_private import session`` is the module
    ``pymc_private.session`` when it exists; an import does not count as one of the packages
    above the module it names (their ``__init__`` runs first, but imports the submodules, not
    the other way round)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    pending: list[ast.AST] = [ast.parse(path.read_text(encoding="utf-8"))]
    while pending:
        node = pending.pop()
        pending.extend(ast.iter_child_nodes(node))
        if (
            isinstance(node, ast.Assign)
            and [getattr(target, "id", None) for target in node.targets] == ["_NAMES"]
            and isinstance(node.value, ast.Dict)
        ):
            found.update(f"{package}.{value.value}" for value in node.value.values)
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                found.add(submodule if submodule in modules else source)
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            found.add(node.args[0].value)
    return {name for name in found if name in modules and name != module}


def _import_graph() -> dict[str, set[str]]:
    modules = _module_names()
    return {module: _imported(module, path, modules) for module, path in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (its modules in import order, the first repeated last), or
    None."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = "open"
        stack.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                return [*stack[stack.index(target) :], target]
            if target not in state and (found := visit(target)) is not None:
                return found
        stack.pop()
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state and (found := visit(module)) is not None:
            return found
    return None


def test_the_graph_reads_every_kind_of_import():
    graph = _import_graph()
    assert (
        "pymc_private.dp.session" in graph["pymc_private.data.declaration"]
    )  # from pymc_private import x
    assert "pymc_private.dp.mechanisms" in graph["pymc_private.dp"]  # a face's names
    assert "pymc_private.examples.demo" in graph["pymc_private.__main__"]  # inside a function
    assert "pymc_private.steps.gibbs" in graph["pymc_private"]
    assert not any("pymc_private" in targets for targets in graph.values())


def test_the_package_has_no_import_cycle():
    cycle = _cycle(_import_graph())
    assert cycle is None, "import cycle: " + " → ".join(cycle)


def test_the_cycle_finder_reports_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycle(graph) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


_STATE = """
import json, logging, warnings

def state():
    loggers = {
        name: [
            logging.getLogger(name).level,
            logging.getLogger(name).propagate,
            logging.getLogger(name).disabled,
            [repr(h) for h in logging.getLogger(name).handlers],
            [repr(f) for f in logging.getLogger(name).filters],
        ]
        for name in ("pytensor", "pytensor.tensor.blas", "pymc")
    }
    return {"warnings": [repr(f) for f in warnings.filters], "loggers": loggers}
"""


@pytest.mark.slow
def test_import_leaves_warnings_filters_and_loggers_as_they_were():
    """PyMC, PyTensor and SciPy's special functions and statistics are imported first, so
    that only what pymc_private itself does can differ (importing them adds warnings filters
    of their own; PyMC 6 no longer imports them when it is imported)."""
    code = _STATE + textwrap.dedent(
        """
        import pymc, pytensor, scipy.special, scipy.stats
        before = state()
        import pymc_private
        print(json.dumps([before, state()]))
        """
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    before, after = json.loads(run.stdout)
    assert after == before
