"""The API reference as a reader sees it: the built docs site in headless Chromium.

Builds the site with ``mkdocs build --strict`` into a temporary folder, opens each Python API
page in Debian's Chromium (driven by Playwright) and reads what is rendered: every docstring
example is a code block (not a run-on paragraph in nested quotes), no Sphinx role
(``:class:`...` ``) or doctest flag shows, and pydantic's hooks are not listed as API. Each page
is saved as a PNG under tests/output/docs/screens/. Skips (with the reason) when MkDocs,
Playwright or a Chromium binary is not available.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.browser]

ROOT = Path(__file__).resolve().parents[2]
SCREENS = ROOT / "tests" / "output" / "docs" / "screens"
# the pages under docs/reference/, each with how many docstring examples it shows at least
PAGES = {
    "affidavit": 5,
    "audit": 3,
    "core": 1,
    "integrations": 10,
    "pipeline": 2,
    "tlog": 5,
}
SPHINX_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|data|mod|attr|exc|obj|const):")

# for every rendered ">>>" prompt: is it inside a <pre>, and is any docstring text in a blockquote
READ_EXAMPLES = """
() => {
  const article = document.querySelector("article");
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  let inCode = 0, outside = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (!n.textContent.includes(">>>")) continue;
    if (n.parentElement.closest("pre")) inCode += 1;
    else outside.push(n.textContent.slice(0, 120));
  }
  const blocks = [...article.querySelectorAll(".doc-contents pre")]
    .filter(pre => pre.textContent.includes(">>> ")).length;
  const quotes = article.querySelectorAll(".doc-contents blockquote").length;
  return { inCode, outside, blocks, quotes };
}
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    for module in ("mkdocs", "mkdocstrings", "material"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} not installed (pip install -e '.[docs]')")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    return out


@pytest.mark.parametrize("name", sorted(PAGES))
def test_api_reference_page_reads_cleanly(browser: Any, site: Path, name: str) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.goto((site / "reference" / name / "index.html").as_uri())
        text = page.locator("article").inner_text()
        SCREENS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENS / f"{name}.png"))
        examples = page.evaluate(READ_EXAMPLES)
    finally:
        page.close()

    roles = sorted({m.group(0) for m in SPHINX_ROLE.finditer(text)})
    assert not roles, f"Sphinx roles shown literally on {name}: {roles}"
    assert "doctest:" not in text, f"a doctest flag is shown on {name}"
    assert "model_post_init" not in text, f"pydantic's model_post_init listed as API on {name}"
    assert examples["outside"] == [], f"example lines outside code blocks on {name}"
    assert examples["quotes"] == 0, f"docstring text rendered as nested quotes on {name}"
    assert examples["blocks"] >= PAGES[name], (name, examples)
