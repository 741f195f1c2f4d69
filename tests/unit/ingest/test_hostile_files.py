"""Issue 26.5 and 26.7: one hostile file fails with a reason; the rest of the run is stored.

The PDFs are written byte by byte here: a page tree that references one page object
``fanout * per_node`` times (4.3 KB for 90,000 pages, the probe's file).
"""

from __future__ import annotations

import io
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from affidavit.core.errors import IngestError
from affidavit.core.settings import IngestSettings
from affidavit.ingest.loaders import load_docx, load_pdf
from affidavit.ingest.pipeline import Ingestor
from affidavit.store.local import LocalStore
from affidavit.testing.embedder import FakeEmbedder

PdfBuilder = Callable[..., bytes]  # the page_tree_pdf fixture (tests/conftest.py)


def _run(folder: Path, tmp_path: Path) -> dict[str, tuple[str, str | None]]:
    store = LocalStore(tmp_path / "store")
    try:
        report = Ingestor(store, FakeEmbedder(dim=16), IngestSettings()).ingest([folder])
        assert store.check() == []
    finally:
        store.close()
    return {Path(o.source).name: (o.status, o.reason) for o in report.outcomes}


def test_a_small_honest_pdf_still_loads(tmp_path: Path, page_tree_pdf: PdfBuilder) -> None:
    docs = load_pdf(tmp_path / "ok.pdf", page_tree_pdf(2, 3))
    assert docs[0].metadata["page_count"] == 6
    assert docs[0].text.count("The same page again.") == 6


# -- 26.5: the whole error family of each loader's library -------------------------------------


def test_pypdf_limit_error_fails_only_that_file(tmp_path: Path, page_tree_pdf: PdfBuilder) -> None:
    raw = page_tree_pdf(330, 330)  # 108,900 entries: pypdf raises LimitReachedError
    assert len(raw) < 5000
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "tree.pdf").write_bytes(raw)
    (folder / "good.txt").write_text("The good file is about lighthouses and their keepers.")
    out = _run(folder, tmp_path)
    assert out["good.txt"][0] == "added"
    status, reason = out["tree.pdf"]
    assert status == "failed" and reason


def test_any_pypdf_error_is_one_failed_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, page_tree_pdf: PdfBuilder
) -> None:
    from pypdf import PageObject
    from pypdf.errors import PyPdfError

    class OddPdfError(PyPdfError):
        pass

    def boom(*a: object, **k: object) -> str:
        raise OddPdfError("some future pypdf failure")

    monkeypatch.setattr(PageObject, "extract_text", boom)
    with pytest.raises(IngestError, match="some future pypdf failure"):
        load_pdf(tmp_path / "x.pdf", page_tree_pdf(1, 1))


def _docx_with(document_xml: bytes) -> bytes:
    from docx import Document as DocxDocument

    buf = io.BytesIO()
    d = DocxDocument()
    d.add_paragraph("hello")
    d.save(buf)
    src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "word/document.xml":
                data = document_xml
            dst.writestr(item.filename, data)
    return out.getvalue()


@pytest.mark.parametrize(
    "xml",
    [b"<w:document", b"<?xml version='1.0'?><nope/>", b"\xff\xfe garbage"],
)
def test_a_broken_docx_fails_with_a_reason(tmp_path: Path, xml: bytes) -> None:
    with pytest.raises(IngestError):
        load_docx(tmp_path / "x.docx", _docx_with(xml))


# -- 26.7: pages and text capped relative to the file's size ----------------------------------


def test_ninety_thousand_references_to_one_page_are_refused_quickly(
    tmp_path: Path, page_tree_pdf: PdfBuilder
) -> None:
    raw = page_tree_pdf(300, 300)
    assert len(raw) < 4400  # the probe's 4.3 KB file
    t0 = time.perf_counter()
    with pytest.raises(IngestError, match="pages") as err:
        load_pdf(tmp_path / "tree.pdf", raw)
    assert time.perf_counter() - t0 < 5
    assert "90000" in err.value.message or "90,000" in err.value.message


def test_text_past_the_cap_for_the_file_size_is_refused(
    tmp_path: Path, page_tree_pdf: PdfBuilder
) -> None:
    # few enough pages to pass the page cap, but far more text than 5 KB of PDF can hold
    raw = page_tree_pdf(10, 20, text=b"Lorem ipsum dolor sit amet. " * 40)
    with pytest.raises(IngestError, match="text"):
        load_pdf(tmp_path / "wordy.pdf", raw)


def test_the_run_goes_on_past_a_refused_pdf(tmp_path: Path, page_tree_pdf: PdfBuilder) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "tree.pdf").write_bytes(page_tree_pdf(300, 300))
    (folder / "good.txt").write_text("The good file is about lighthouses and their keepers.")
    t0 = time.perf_counter()
    out = _run(folder, tmp_path)
    assert time.perf_counter() - t0 < 5
    assert out["good.txt"][0] == "added"
    assert out["tree.pdf"][0] == "failed" and "pages" in (out["tree.pdf"][1] or "")


def test_a_docx_with_an_unreadable_zip_directory_fails_only_that_file(tmp_path: Path) -> None:
    raw = bytearray(_docx_with(b"<w:document/>"))
    at = raw.index(b"PK\x01\x02") + 6  # "version needed to extract" 25.5: NotImplementedError
    raw[at : at + 2] = b"\xff\x00"
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "odd.docx").write_bytes(bytes(raw))
    (folder / "good.txt").write_text("The good file is about lighthouses and their keepers.")
    out = _run(folder, tmp_path)
    assert out["good.txt"][0] == "added"
    status, reason = out["odd.docx"]
    assert status == "failed" and "zip" in (reason or "")


# -- a page without text is said, not silently left out ----------------------------------------


def test_pdf_pages_without_text_are_reported(tmp_path: Path) -> None:
    """A scanned page between text pages was dropped without a word: the report said 'added'
    and nothing told the user that page 2 cannot be searched or cited."""
    from pypdf import PdfReader, PdfWriter

    sample = PdfReader(Path(__file__).resolve().parents[2] / "data" / "ingest" / "sample.pdf")
    writer = PdfWriter()
    writer.add_page(sample.pages[0])
    writer.add_blank_page(width=612, height=792)  # a page of images only reads as this
    writer.add_page(sample.pages[1])
    docs = tmp_path / "docs"
    docs.mkdir()
    with (docs / "mixed.pdf").open("wb") as fh:
        writer.write(fh)
    [doc] = load_pdf(docs / "mixed.pdf", (docs / "mixed.pdf").read_bytes())
    assert doc.metadata["page_count"] == 3 and doc.metadata["pages_without_text"] == "2"
    status, reason = _run(docs, tmp_path)["mixed.pdf"]
    assert status == "added" and "page 2 has no extractable text" in (reason or "")
