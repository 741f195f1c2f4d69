"""The README's examples run, it stays short, and the CLI reference matches the app."""

from __future__ import annotations

import doctest
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_readme_examples_run() -> None:
    result = doctest.testfile(str(ROOT / "README.md"), module_relative=False)
    assert result.attempted >= 3 and result.failed == 0


def test_readme_is_a_newcomers_page() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) < 150


def test_cli_reference_is_current(tmp_path: Path) -> None:
    out = tmp_path / "cli.md"
    typer = Path(sys.executable).parent / "typer"
    subprocess.run(
        [
            str(typer),
            "affidavit.cli.main",
            "utils",
            "docs",
            "--name",
            "affidavit",
            "--output",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    assert out.read_text(encoding="utf-8") == (ROOT / "docs" / "cli.md").read_text(
        encoding="utf-8"
    ), "docs/cli.md is stale: run `make docs-cli`"


def test_make_docs_creates_what_it_needs(tmp_path: Path) -> None:
    """Issue 28: on a fresh clone `make docs` ran `.venv/bin/mkdocs` before anything installed
    it. A dry run against an empty venv folder shows the venv made and the docs extra installed
    before the build."""
    import shutil

    if shutil.which("make") is None:
        import pytest

        pytest.skip("make is not installed")
    venv = tmp_path / "fresh-venv"
    for target in ("docs", "docs-cli"):
        out = subprocess.run(
            ["make", "-n", target, f"VENV={venv}"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        steps = out.splitlines()
        made = next(i for i, s in enumerate(steps) if "-m venv" in s)
        installed = next(i for i, s in enumerate(steps) if "pip install" in s and "docs" in s)
        used = next(
            i
            for i, s in enumerate(steps)
            if f"{venv}/bin/{'mkdocs' if target == 'docs' else 'typer'}" in s
        )
        assert made < installed < used, out


def test_docstrings_are_google_style_markdown() -> None:
    """Issue 28: the API reference showed Sphinx roles literally (``:class:`...` ``) and every
    ``Example:`` section as one paragraph in nested quotes. The docstrings are Google style with
    Markdown code spans; griffe renders an ``Examples:`` section's ``>>>`` lines as code and
    trims their doctest flags (tests/integration/test_docs_site.py reads the rendered pages)."""
    import re

    role = re.compile(r":(?:py:)?(?:class|func|meth|data|mod|attr|exc|obj|const):`")
    singular = re.compile(r"^\s*Example:\s*$", re.M)
    found = []
    for path in sorted((ROOT / "src" / "affidavit").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(ROOT)
        found += [f"{rel}: Sphinx role {m.group(0)}" for m in role.finditer(text)]
        found += [f"{rel}: 'Example:' (griffe knows 'Examples:')" for _ in singular.finditer(text)]
    assert not found, "\n".join(found)
