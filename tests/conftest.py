"""Fixtures shared across the test tree."""

from __future__ import annotations

import gc
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# tests make no network calls: Haystack's usage telemetry is read once, when haystack is imported
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

# two small documents; the integrations' tests ask about them and audit answers against them
DOCS = {
    "forth_bridge": (
        "https://en.wikipedia.org/wiki/Forth_Bridge",
        "The Forth Bridge is a railway bridge across the Firth of Forth in Scotland. "
        "It opened on 4 March 1890. It was designed by John Fowler and Benjamin Baker.",
    ),
    "eiffel_tower": (
        "https://en.wikipedia.org/wiki/Eiffel_Tower",
        "The Eiffel Tower is a wrought-iron lattice tower in Paris. It was completed in 1889. "
        "It is 330 metres tall.",
    ),
}


def build_store(path: Path) -> Path:
    """A local store at ``path`` with :data:`DOCS`, embedded by the fake embedder (BM25 search
    needs no model)."""
    from affidavit.core.types import Document
    from affidavit.ingest.chunking import SentenceChunker
    from affidavit.store.base import DocumentBatchItem
    from affidavit.store.local import LocalStore
    from affidavit.testing.embedder import FakeEmbedder

    embedder = FakeEmbedder(dim=16)
    store = LocalStore(path)
    items = []
    for doc_id, (url, text) in DOCS.items():
        doc = Document(id=doc_id, source=url, text=text, metadata={"url": url})
        chunks = tuple(
            c.model_copy(update={"url": url})
            for c in SentenceChunker(chunk_size=500, overlap=0).chunk(doc)
        )
        items.append(
            DocumentBatchItem(
                document=doc,
                chunks=chunks,
                vectors=embedder.embed([c.text for c in chunks]),
                origin=f"{doc_id}.txt",
            )
        )
    store.upsert(items, embedder=embedder.name)
    store.refresh()
    store.close()
    return path


@pytest.fixture()
def frozen_heap() -> Iterator[None]:
    """For timing tests: the objects alive at the start are out of the collector's reach.

    By the middle of the session the test process holds hundreds of thousands of objects, and a
    full collection of them pauses any Python code for up to a second (1.1 s for 10 million
    objects here): a pause that is not the code under test's and that once failed CI.
    """
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@pytest.fixture()
def sample_store(tmp_path: Path) -> Path:
    """A store folder holding the Forth Bridge and Eiffel Tower documents."""
    return build_store(tmp_path / "store")


def make_page_tree_pdf(fanout: int, per_node: int, text: bytes = b"The same page again.") -> bytes:
    """A PDF whose page tree holds one page object ``fanout * per_node`` times."""
    content = b"BT /F1 12 Tf 72 720 Td (" + text + b") Tj ET"
    objs = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [%b] /Count %d >>" % (b"3 0 R " * fanout, fanout * per_node),
        3: b"<< /Type /Pages /Parent 2 0 R /Kids [%b] /Count %d >>"
        % (b"4 0 R " * per_node, per_node),
        4: b"<< /Type /Page /Parent 3 0 R /MediaBox [0 0 612 792] /Contents 5 0 R "
        b"/Resources << /Font << /F1 6 0 R >> >> >>",
        5: b"<< /Length %d >>\nstream\n%b\nendstream" % (len(content), content),
        6: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    }
    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for n, body in objs.items():
        offsets[n] = len(out)
        out += b"%d 0 obj\n%b\nendobj\n" % (n, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for n in sorted(objs):
        out += b"%010d 00000 n \n" % offsets[n]
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


@pytest.fixture
def page_tree_pdf() -> Callable[..., bytes]:
    """:func:`make_page_tree_pdf`, for the hostile-input tests of ingest and of the upload API."""
    return make_page_tree_pdf


# headless Chromium for the browser tests (Debian's, driven by Playwright: its own browser
# download is not used); runs as root, hence --no-sandbox
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium for one test module; skips (with the reason) without Playwright or a
    Chromium binary (``AFFIDAVIT_CHROMIUM``, else ``chromium`` on the path). Module scope, not
    session: Playwright's sync API holds an event loop on the main thread while it runs, and
    every later ``asyncio.run`` in the same process would fail."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed")
    exe = os.environ.get("AFFIDAVIT_CHROMIUM") or shutil.which("chromium")
    exe = exe or shutil.which("chromium-browser")
    if not exe:
        pytest.skip("no Chromium binary (apt-get install chromium; .ci/run does it)")
    with sync_api.sync_playwright() as pw:
        try:
            b = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        except Exception as exc:  # a broken browser install is an environment problem
            pytest.skip(f"Chromium at {exe} does not start: {exc}")
        yield b
        b.close()
