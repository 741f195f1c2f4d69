"""A tiny store for the framework examples: three inline documents, BM25 search.

The examples must run offline from a fresh environment with only their framework's extra, so
they do not need the embedding model: BM25 search needs none, and the deterministic fake
embedder only fills the store's vector column. For your own documents run
``affidavit ingest PATH`` and pass ``--store .affidavit``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

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
    "marie_curie": (
        "https://en.wikipedia.org/wiki/Marie_Curie",
        "Marie Curie was a physicist and chemist. She discovered polonium and radium in 1898. "
        "She won the Nobel Prize in Physics in 1903.",
    ),
}

QUESTION = "When did the Forth Bridge open?"
FAITHFUL = "The Forth Bridge opened on 4 March 1890."
HALLUCINATED = "The Forth Bridge opened on 4 March 1925. It was designed by Gustave Eiffel."


def build_store(path: Path | None = None) -> Path:
    """Write the three documents into a new store folder and return it."""
    from affidavit.core.types import Document
    from affidavit.ingest.chunking import SentenceChunker
    from affidavit.store.base import DocumentBatchItem
    from affidavit.store.local import LocalStore
    from affidavit.testing.embedder import FakeEmbedder

    path = path or Path(tempfile.mkdtemp(prefix="affidavit-example-")) / "store"
    embedder = FakeEmbedder(dim=16)
    store = LocalStore(path)
    items = []
    for doc_id, (url, text) in DOCS.items():
        doc = Document(id=doc_id, source=url, text=text, metadata={"url": url})
        chunks = tuple(
            c.model_copy(update={"url": url})
            for c in SentenceChunker(chunk_size=500, overlap=0).chunk(doc)
        )
        vectors = embedder.embed([c.text for c in chunks])
        items.append(DocumentBatchItem(document=doc, chunks=chunks, vectors=vectors, origin=url))
    store.upsert(items, embedder=embedder.name)
    store.refresh()
    store.close()
    return path
