"""Sphinx configuration of the pymc-private documentation.

Build from the repository root with ``python -m sphinx -W --keep-going -b html docs
docs/_build/html`` after ``pip install -e ".[docs]"``. The notebooks in ``notebooks/`` are
executed during the build (myst-nb); a cell that raises fails the build.
"""

import filecmp
import shutil
from pathlib import Path

import pymc_private

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent

project = "pymc-private"
author = "the pymc-private developers"
copyright = "the pymc-private developers"
version = release = pymc_private.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    # MathJax 3 served from the built docs (_static/mathjax), not from a CDN: a reader
    # offline (a data custodian's machine) still sees the formulas. CI fails the build if a
    # page loads a script from a CDN.
    "sphinx-mathjax-offline",
    "myst_nb",
]

exclude_patterns = ["_build", "jupyter_execute", "**.ipynb_checkpoints"]

# Single backticks in the docstrings name Python objects: link them when Sphinx knows them.
default_role = "py:obj"

# Primes stay primes: x' is a neighbouring record, not a closing quote.
smartquotes = False

# MyST markdown pages and notebooks.
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# The notebooks live in notebooks/ at the repository root, where the tests run them. Sphinx
# reads only files under docs/, so each one is copied to docs/notebooks/ (ignored by git) at
# the start of every build; a copy that is already up to date is left alone, so the
# execution cache below stays valid.
EXAMPLES = DOCS / "notebooks"
EXAMPLES.mkdir(exist_ok=True)
for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
    target = EXAMPLES / notebook.name
    if not (target.exists() and filecmp.cmp(notebook, target, shallow=False)):
        shutil.copyfile(notebook, target)
for stale in EXAMPLES.glob("*.ipynb"):
    if not (ROOT / "notebooks" / stale.name).exists():
        stale.unlink()

# Execute every notebook during the build (they are committed without outputs). "cache"
# re-executes a notebook only when its code changed; a fresh clone executes all of them.
# The papers' experiments, the notebooks with a full run behind ``PMP_FULL=1`` (minutes to
# tens of minutes each), are the exception: they are committed with the outputs of that run,
# which the build shows as they are; the tests re-execute their short runs.
STUDIES = sorted(
    notebook.name
    for notebook in (ROOT / "notebooks").glob("*.ipynb")
    if "PMP_FULL" in notebook.read_text(encoding="utf-8")
)
nb_execution_excludepatterns = [f"notebooks/{name}" for name in STUDIES]
nb_execution_mode = "cache"
nb_execution_timeout = 900
nb_execution_raise_on_error = True
nb_execution_show_tb = True

# API reference.
autosummary_generate = True
autodoc_default_options = {"members": True, "show-inheritance": False}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False

html_theme = "pydata_sphinx_theme"
html_title = "pymc-private"
html_theme_options = {"show_toc_level": 2, "navigation_with_keys": False}
html_static_path = []


def _literal_bars(app, what, name, obj, options, lines):
    """Docstrings write absolute values as |x|, which reStructuredText would read as a
    substitution reference: escape every | outside ``literals``."""
    for index, line in enumerate(lines):
        parts = line.split("``")
        parts[::2] = [part.replace("|", "\\|") for part in parts[::2]]
        lines[index] = "``".join(parts)


def setup(app):
    app.connect("autodoc-process-docstring", _literal_bars, priority=400)
