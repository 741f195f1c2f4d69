"""The page's own files: no third-party code, no HTML parsing of data."""

from __future__ import annotations

import re
from importlib import resources

WEB = resources.files("affidavit.server") / "web"


def test_only_our_own_files_are_loaded() -> None:
    html = (WEB / "index.html").read_text("utf-8")
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert sources, "the page loads its script and stylesheet"
    for s in sources:
        assert s.startswith("/static/") or s.startswith("data:"), s
    assert "<script>" not in html  # no inline script (the CSP forbids it too)


def test_data_is_never_parsed_as_html() -> None:
    js = (WEB / "app.js").read_text("utf-8")
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in js, sink
    assert "textContent" in js
    assert not re.search(r"https?://", js)
