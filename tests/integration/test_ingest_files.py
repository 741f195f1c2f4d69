"""Real sample files: each format loads with exact offsets; each broken file fails with a reason."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from affidavit.core.settings import IngestSettings
from affidavit.ingest.pipeline import Ingestor
from affidavit.store.local import LocalStore
from affidavit.testing.embedder import FakeEmbedder

DATA = Path(__file__).resolve().parents[1] / "data" / "ingest"
pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> tuple[LocalStore, dict[str, object]]:
    tmp = tmp_path_factory.mktemp("files")
    docs = tmp / "docs"
    shutil.copytree(DATA, docs)
    os.symlink(docs, docs / "loop")  # a symlink loop inside the tree
    store = LocalStore(tmp / "store")
    report = Ingestor(store, FakeEmbedder(), IngestSettings(chunk_size=200)).ingest([docs])
    by_name = {}
    for o in report.outcomes:
        path, _, line = o.source.partition("#")
        key = o.source if o.source.startswith("http") else Path(path).name
        by_name[key + (f"#{line}" if line else "")] = o
    return store, by_name


def _reason(ingested: tuple[LocalStore, dict[str, object]], name: str) -> str:
    o = ingested[1][name]
    assert o.status == "failed", o  # type: ignore[attr-defined]
    return str(o.reason)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("corrupt.pdf", "corrupt"),
        ("encrypted.pdf", "password"),
        ("empty.pdf", "no extractable text"),
        ("bomb.docx", "zip bomb"),
        ("binary.bin", "binary"),
        ("latin1.txt", "UTF-8"),
        ("sample.jsonl#L3", "invalid JSON"),
        ("sample.jsonl#L4", "text"),
        ("loop", "loop"),
    ],
)
def test_broken_inputs_fail_with_reason(ingested, name: str, needle: str) -> None:  # type: ignore[no-untyped-def]
    assert needle in _reason(ingested, name)


@pytest.mark.parametrize(
    ("name", "mime", "phrase"),
    [
        ("sample.pdf", "application/pdf", "330 metres"),
        (
            "sample.docx",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            "Nobel Prize",
        ),
        ("sample.html", "text/html", "Four score and seven years ago"),
        ("sample.txt", "text/plain", "We the People"),
        ("sample.md", "text/markdown", "Ingenhousz"),
        ("mislabelled.pdf", "text/plain", "Moon landing"),
        ("https://en.example.org/everest", "application/jsonl", "8,849 metres"),
    ],
)
def test_good_files_load_with_exact_offsets(ingested, name: str, mime: str, phrase: str) -> None:  # type: ignore[no-untyped-def]
    store, by_name = ingested
    o = by_name[name]
    assert o.status == "added" and o.mime == mime
    doc = store.get_document(o.doc_id)
    assert doc is not None and phrase in doc.text
    chunks = [h.chunk for h in store.search_lexical(phrase, 50) if h.chunk.doc_id == doc.id]
    assert chunks
    for c in chunks:
        assert doc.text[c.start : c.end] == c.text
        for a, b in c.metadata["sentences"]:
            assert c.text[a:b].strip() == c.text[a:b]


def test_pdf_pages_and_metadata(ingested) -> None:  # type: ignore[no-untyped-def]
    store, by_name = ingested
    doc = store.get_document(by_name["sample.pdf"].doc_id)
    assert doc.title == "The Eiffel Tower" and doc.metadata["date"] == "2024-01-15"
    hit = store.search_lexical("tallest man-made structure 1930", 1)[0].chunk
    assert hit.metadata["page_end"] == 2


def test_html_drops_boilerplate(ingested) -> None:  # type: ignore[no-untyped-def]
    store, by_name = ingested
    doc = store.get_document(by_name["sample.html"].doc_id)
    assert doc.title == "Gettysburg Address" and doc.metadata["date"] == "2021-11-19"
    assert "newsletter" not in doc.text and "Shop our store" not in doc.text


def test_docx_title_and_table(ingested) -> None:  # type: ignore[no-untyped-def]
    store, by_name = ingested
    doc = store.get_document(by_name["sample.docx"].doc_id)
    assert doc.title == "Marie Curie" and "Polonium | 1898" in doc.text


def test_fifty_megabyte_file_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    with big.open("wb") as fh:
        fh.truncate(51 * 1024 * 1024)  # sparse: no disk cost
    store = LocalStore(tmp_path / "s")
    report = Ingestor(store, FakeEmbedder()).ingest([big])
    assert "50 MB limit" in report.failed[0].reason


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "secret.txt"
    p.write_text("hidden")
    ok = tmp_path / "ok.txt"
    ok.write_text("Readable text.")
    p.chmod(0)
    if os.geteuid() == 0:  # root reads anything: make the open fail as it would for a user
        real_open = Path.open

        def deny(self: Path, *a: object, **kw: object):  # type: ignore[no-untyped-def]
            if self == p:
                raise PermissionError(13, "Permission denied", str(self))
            return real_open(self, *a, **kw)  # type: ignore[arg-type]

        monkeypatch.setattr(Path, "open", deny)
    report = Ingestor(LocalStore(tmp_path / "s"), FakeEmbedder()).ingest([p, ok])
    assert "Permission denied" in report.failed[0].reason
    assert report.counts()["added"] == 1
