"""The notebooks run once: those the documentation build executes (every notebook without a
``PMP_FULL`` study, docs/conf.py) are not executed again by ``pytest --nbmake`` when the build
has executed them since they last changed (their page in docs/_build is newer than them, as
after ``.ci/run``'s build, which fails on a cell that raises). The papers' studies, which the
build shows with their committed outputs, run here (their short runs), as does every notebook
when the documentation was not built."""

from pathlib import Path

HERE = Path(__file__).resolve().parent
BUILT = HERE.parent / "docs" / "_build" / "html" / "notebooks"


def _executed_by_the_build(notebook: Path) -> bool:
    page = BUILT / f"{notebook.stem}.html"
    return (
        "PMP_FULL" not in notebook.read_text(encoding="utf-8")
        and page.exists()
        and page.stat().st_mtime >= notebook.stat().st_mtime
    )


collect_ignore = [p.name for p in sorted(HERE.glob("*.ipynb")) if _executed_by_the_build(p)]
