"""Text a reader of the document never sees is no evidence: hidden HTML elements and hidden
DOCX runs are left out at ingest (they were kept, so an answer could be "proved" by a sentence
nobody reading the page or the document can find there)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from affidavit.ingest.loaders import load_docx, load_html

SHOWN = (
    "<p>The Forth Bridge is a railway bridge across the Firth of Forth in Scotland, east of "
    "Edinburgh.</p><p>It opened on 4 March 1890 and was the longest cantilever bridge then.</p>"
)


@pytest.mark.parametrize(
    "hidden",
    [
        "<p style='display:none'>SECRET the bridge opened in 1925.</p>",
        "<div style='color: red; DISPLAY : None !important'><p>SECRET opened 1925.</p></div>",
        "<p style='visibility:hidden'>SECRET the bridge opened in 1925.</p>",
        "<p hidden>SECRET the bridge opened in 1925.</p>",
        "<template><p>SECRET the bridge opened in 1925.</p></template>",
    ],
)
def test_hidden_html_is_no_evidence(tmp_path: Path, hidden: str) -> None:
    html = f"<html><body><article>{SHOWN}{hidden}{SHOWN}</article></body></html>"
    [doc] = load_html(tmp_path / "page.html", html.encode())
    assert "SECRET" not in doc.text
    assert "4 March 1890" in doc.text


def test_shown_html_is_kept(tmp_path: Path) -> None:
    """Styles that show the element, and a collapsed <details>, are kept."""
    shown = (
        "<p style='display:block'>Shown one: it is 2.5 km long.</p>"
        "<details><summary>More</summary><p>Shown two: a UNESCO site since 2015.</p></details>"
    )
    html = f"<html><body><article>{SHOWN}{shown}</article></body></html>"
    [doc] = load_html(tmp_path / "page.html", html.encode())
    assert "Shown one" in doc.text and "Shown two" in doc.text


def test_hidden_docx_runs_are_no_evidence(tmp_path: Path) -> None:
    docx = pytest.importorskip("docx")
    d = docx.Document()
    d.add_paragraph("The Forth Bridge opened on 4 March 1890.")
    p = d.add_paragraph("It is in Scotland. ")
    p.add_run("SECRET It opened in 1925.").font.hidden = True
    whole = d.add_paragraph("SECRET a whole hidden paragraph.")
    whole.runs[0].font.hidden = True
    shown = d.add_paragraph("")
    shown.add_run("Hidden turned off: it is 2.5 km long.").font.hidden = False
    row = d.add_table(rows=1, cols=2).rows[0]
    row.cells[0].text = "Opened"
    row.cells[1].paragraphs[0].add_run("SECRET 1925").font.hidden = True
    buf = io.BytesIO()
    d.save(buf)
    [doc] = load_docx(tmp_path / "x.docx", buf.getvalue())
    assert "SECRET" not in doc.text
    assert "It is in Scotland." in doc.text and "2.5 km long" in doc.text and "Opened" in doc.text
