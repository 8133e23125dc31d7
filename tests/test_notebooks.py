"""The notebooks as committed: the papers' experiments (a full run behind ``PMP_FULL=1``)
carry the outputs of that run, which the documentation shows without executing them; the
others carry none, and the documentation executes them (docs/conf.py). The tests execute
every notebook's default run separately (``pytest --nbmake notebooks``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_outputs_are_committed_exactly_for_the_papers_experiments(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    code = [cell for cell in cells if cell["cell_type"] == "code"]
    source = "".join("".join(cell["source"]) for cell in code)
    if "PMP_FULL" not in source:
        assert all(not cell["outputs"] for cell in code), f"{path.name}: commit it cleared"
        return
    assert 'os.environ.get("PMP_FULL") == "1"' in source
    printed = "".join(
        "".join(output.get("text", ""))
        for cell in code
        for output in cell["outputs"]
        if output["output_type"] == "stream"
    )
    assert "reproduced" in printed, f"{path.name}: commit the outputs of its PMP_FULL=1 run"
    assert all(cell["outputs"] for cell in code[-1:]), f"{path.name}: its verdict is missing"
