"""Fixtures shared across the test tree."""

from __future__ import annotations

import os
from pathlib import Path

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
def sample_store(tmp_path: Path) -> Path:
    """A store folder holding the Forth Bridge and Eiffel Tower documents."""
    return build_store(tmp_path / "store")
