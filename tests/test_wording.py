"""What a user reads: messages in plain sentences (no Sphinx roles, counts and articles that
agree), the API's docstrings leading with what to pass, inline spans that render, and a
`ReleaseCheck` whose text form is its list of findings."""

from __future__ import annotations

import ast
import inspect
import itertools
import re
from pathlib import Path

import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pymc_private as pmp
from pymc_private.dp.events import PureEvent, Release
from pymc_private.errors import counted, with_article

PACKAGE = Path(pmp.__file__).resolve().parent
ROLES = re.compile(r":(ref|func|class|meth|mod|obj|attr|doc|data|exc):`")
# numpydoc's sections; any other underlined title in a docstring renders as a page heading.
SECTIONS = {
    "Parameters",
    "Returns",
    "Yields",
    "Raises",
    "Warns",
    "Attributes",
    "Methods",
    "Notes",
    "References",
    "Examples",
    "See Also",
    "Other Parameters",
}


def _docstring_ids(tree: ast.AST) -> set[int]:
    """The string constants of ``tree`` that are docstrings (of the module, a class, a
    function, or an attribute: a string right after an assignment)."""
    ids = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for index, statement in enumerate(body):
            if not (
                isinstance(statement, ast.Expr)
                and isinstance(statement.value, ast.Constant)
                and isinstance(statement.value.value, str)
            ):
                continue
            after_assignment = index > 0 and isinstance(body[index - 1], ast.Assign | ast.AnnAssign)
            if index == 0 or after_assignment:
                ids.add(id(statement.value))
    return ids


def test_no_sphinx_role_reaches_a_runtime_message():
    """Roles belong in docstrings, which Sphinx renders; an error, a warning or a report
    prints its string as it is, so ":ref:`costs-metropolis`" would reach the user raw."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = _docstring_ids(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docstrings
                and ROLES.search(node.value)
            ):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not found


def _public_docstrings():
    for name in pmp.__all__:
        value = getattr(pmp, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            yield name, inspect.getdoc(value) or ""


def test_api_docstrings_lead_with_what_to_pass():
    """On an API page the parameters come before any theory: no underlined title but
    numpydoc's sections (the proofs are in Notes, and in docs/costs.md)."""
    headed = []
    for name, doc in _public_docstrings():
        lines = doc.splitlines()
        for title, underline in itertools.pairwise(lines):
            if re.fullmatch(r"-{3,}", underline.strip()) and title.strip() not in SECTIONS:
                headed.append(f"{name}: {title.strip()}")
    assert not headed


def test_inline_spans_render():
    """A default-role span must end before whitespace or punctuation: `zcdp_rho`(ε, δ) is
    not a span in reStructuredText and renders as stray backticks."""
    glued = [
        f"{name}: {match.group(0)}"
        for name, doc in _public_docstrings()
        for match in re.finditer(
            r"(?<![`\w])`[^`\s][^`\n]*`[(\w]", re.sub(r"``.*?``", "``", doc, flags=re.S)
        )
    ]
    assert not glued


def test_counts_and_articles_agree():
    assert counted(1, "release") == "1 release"
    assert counted(0, "draw") == "0 draws"
    assert counted(3, "finding") == "3 findings"
    assert with_article("AutoRegressiveRV") == "an AutoRegressiveRV"
    assert with_article("Normal") == "a Normal"


def test_an_over_budget_release_is_counted_in_the_singular():
    release = Release("laplace", PureEvent(2.0))
    with pytest.raises(pmp.BudgetExceededError, match=r"\(1 release\)"):
        pmp.Budget(1.0).check(pmp.PrivacyLedger(), [release])


def test_an_unsupported_likelihood_takes_its_article():
    with pm.Model() as model:
        y = pmp.PrivateData("y", np.zeros(20), bounds=(-1, 1))
        rho = pmp.TruncatedNormal("rho", 0, 1, lower=-0.9, upper=0.9)
        pm.AR("obs", rho=[rho], sigma=1.0, observed=y, init_dist=pm.Normal.dist(0, 1))
    with pytest.raises(pmp.UnsupportedModelError, match="is an AutoRegressiveRV likelihood"):
        pmp.analyze(model)


def test_a_release_check_reads_as_its_findings():
    posterior = xr.Dataset({"p": (("chain", "draw"), np.zeros((1, 2)))})
    check = pmp.check_release(xr.DataTree.from_dict({"posterior": posterior}))
    assert not check.releasable
    assert repr(check) == str(check)
    assert repr(check).startswith("Not releasable (1 finding):\n- posterior: not sealed")
    assert "findings=" not in repr(check)
    assert "(1 finding)" in check._repr_html_()
