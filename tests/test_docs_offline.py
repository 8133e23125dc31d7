"""The built documentation reads offline: MathJax is served from its own _static folder and no
page loads a script from elsewhere. Runs on the HTML that CI builds (docs/_build/html, before
the tests); skipped where the docs were not built."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

HTML = Path(__file__).resolve().parent.parent / "docs" / "_build" / "html"
REMOTE_SCRIPT = re.compile(r'<script[^>]*\bsrc="(?:https?:)?//[^"]*"')


@pytest.mark.skipif(not HTML.is_dir(), reason="the docs are not built (.ci/run builds them)")
def test_the_built_docs_load_no_script_from_a_cdn():
    pages = sorted(HTML.rglob("*.html"))
    assert pages
    remote = {
        str(page.relative_to(HTML)): REMOTE_SCRIPT.findall(page.read_text(encoding="utf-8"))
        for page in pages
    }
    assert not {page: found for page, found in remote.items() if found}
    assert (HTML / "_static" / "mathjax" / "tex-chtml.js").is_file()
    with_math = [p for p in pages if 'class="math' in p.read_text(encoding="utf-8")]
    assert with_math  # the costs page, at least
    for page in with_math:
        assert "_static/mathjax/tex-chtml.js" in page.read_text(encoding="utf-8"), page
