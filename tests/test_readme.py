"""The README's example runs as written (it is the first thing a user copies)."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_python_example_runs_and_spends_what_it_says():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "the README has no python example"
    namespace: dict = {}
    exec(compile(blocks[0], str(README), "exec"), namespace)
    ledger = namespace["pmp"].ledger_for(namespace["model"])
    # privatize (ε = 1); 2 chains × 30 Gibbs draws at 2·ln(19)/50; 5 exact draws at 2·ln(19);
    # the private MAP at ε = 1 (recorded within 1e-12 below it).
    expected = 1.0 + 60 * 2 * np.log(19) / 50 + 5 * 2 * np.log(19) + 1.0
    assert ledger.epsilon() == pytest.approx(expected, rel=1e-12)
