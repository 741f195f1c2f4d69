"""The store Protocol: documents, chunks, vectors and the lexical index, persistent.

Two implementations pass the same contract tests (``affidavit.testing.store_contract``):
:class:`affidavit.store.local.LocalStore` (SQLite + numpy + bm25s in one folder, the default) and
:class:`affidavit.store.qdrant.QdrantStore` (Qdrant local mode or a server).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import Field

from affidavit.core.retrieval import SearchFilters
from affidavit.core.types import Chunk, Document, Frozen
from affidavit.retrieve.base import Vectors


class DocRecord(Frozen):
    """What the store knows about a stored document without loading its text."""

    doc_id: str = Field(description="Document id.")
    content_hash: str = Field(description="sha256 of the document text when it was stored.")
    origin: str = Field(description="The input file it came from (for --prune).")
    chunks: int = Field(default=0, ge=0, description="Number of chunks stored for it.")


class ScoredChunk(Frozen):
    """A chunk with the raw score of one ranking."""

    chunk: Chunk = Field(description="The chunk.")
    score: float = Field(description="Score (BM25, cosine, or fused), higher is better.")
    scores: dict[str, float] = Field(
        default_factory=dict, description="Component scores kept for the trace."
    )


class DocumentBatchItem(Frozen):
    """A document with its chunks and their vectors, written together."""

    model_config = Frozen.model_config | {"arbitrary_types_allowed": True}

    document: Document = Field(description="The document.")
    chunks: tuple[Chunk, ...] = Field(description="Its chunks, in order.")
    vectors: Any = Field(description="float32 array (len(chunks), dim), L2-normalised.")
    origin: str = Field(description="The input file it came from.")


@runtime_checkable
class Store(Protocol):
    """A persistent store of documents, chunks and vectors with lexical and dense search."""

    def records(self) -> dict[str, DocRecord]:
        """Every stored document's record, by doc id."""
        ...

    def upsert(self, items: Sequence[DocumentBatchItem], *, embedder: str) -> None:
        """Atomically add or replace these documents (all or nothing).

        Raises:
            StoreError: the store holds vectors of another embedder, or cannot be written.
        """
        ...

    def delete(self, doc_ids: Sequence[str]) -> int:
        """Remove documents and their chunks; returns how many documents were removed."""
        ...

    def get_document(self, doc_id: str) -> Document | None:
        """A stored document, or None."""
        ...

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """The stored chunks with these ids (unknown ids are left out), in the order given."""
        ...

    def count(self) -> tuple[int, int]:
        """(documents, chunks) stored."""
        ...

    def embedder(self) -> str | None:
        """Name of the embedder whose vectors the store holds (None when empty)."""
        ...

    def refresh(self) -> None:
        """Bring derived indexes (lexical index, vector matrix) up to date after writes."""
        ...

    def search_lexical(
        self, query: str, k: int, filters: SearchFilters | None = None
    ) -> list[ScoredChunk]:
        """BM25 ranking, best first; chunks without a matching term are left out."""
        ...

    def search_dense(
        self, vector: Vectors, k: int, filters: SearchFilters | None = None
    ) -> list[ScoredChunk]:
        """Cosine ranking of the query vector, best first."""
        ...

    def close(self) -> None:
        """Release files and connections."""
        ...


@runtime_checkable
class HybridStore(Store, Protocol):
    """A store that fuses lexical and dense rankings itself (e.g. Qdrant's query API)."""

    def search_hybrid(
        self,
        query: str,
        vector: Vectors,
        k: int,
        filters: SearchFilters | None = None,
        candidates: int = 50,
        rrf_k: int = 60,
    ) -> list[ScoredChunk]:
        """Reciprocal-rank-fused ranking (``sum 1/(rrf_k + rank)``) computed by the engine."""
        ...


@runtime_checkable
class DocumentHybridStore(Store, Protocol):
    """A store that can rank whole documents (parent-document hybrid retrieval)."""

    def search_documents(
        self,
        query: str,
        vector: Vectors,
        k: int,
        filters: SearchFilters | None = None,
        candidates: int = 50,
        rrf_k: int = 60,
    ) -> list[ScoredChunk]:
        """Documents ranked by RRF of document-level BM25 and dense; their best chunks first."""
        ...
