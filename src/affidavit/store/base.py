"""The store Protocol: documents, chunks, vectors and the lexical index, persistent.

Two implementations pass the same contract tests (``affidavit.testing.store_contract``):
`affidavit.store.local.LocalStore` (SQLite + numpy + bm25s in one folder, the default) and
`affidavit.store.qdrant.QdrantStore` (Qdrant local mode or a server).
"""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import Field

from affidavit.core.retrieval import DeletedChunk, SearchFilters
from affidavit.core.types import Chunk, Document, Frozen
from affidavit.retrieve.base import Vectors

DeletionReason = Literal["deleted", "replaced", "pruned"]

# a disk or device that refuses one write refuses the next too: full, over quota, read-only,
# failing (EFBIG: a file-size limit)
_UNUSABLE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG})
# SQLite's primary result codes for the same, and for a damaged database file
_UNUSABLE_SQLITE = frozenset(
    {
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_CORRUPT,
        sqlite3.SQLITE_NOTADB,
        sqlite3.SQLITE_CANTOPEN,
    }
)


def refuses_every_write(exc: BaseException) -> bool:
    """Whether a failed write says the store's disk or database cannot take any write now (so
    writing the next document would fail the same way), not that one document was refused.

    Examples:
        >>> refuses_every_write(OSError(errno.ENOSPC, "No space left on device"))
        True
        >>> refuses_every_write(sqlite3.IntegrityError("UNIQUE constraint failed"))
        False
    """
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        # extended codes (SQLITE_IOERR_WRITE) carry the primary code in their low byte
        return code is not None and (code & 0xFF) in _UNUSABLE_SQLITE
    return isinstance(exc, OSError) and exc.errno in _UNUSABLE_ERRNOS


class DocName(Frozen):
    """One more name a stored document's content was ingested under."""

    origin: str = Field(description="The input file (as --prune and edits know it).")
    source: str = Field(description="The name shown to users (never an absolute server path).")


class DocRecord(Frozen):
    """What the store knows about a stored document without loading its text."""

    doc_id: str = Field(description="Document id.")
    content_hash: str = Field(description="sha256 of the document text when it was stored.")
    origin: str = Field(description="The input file it came from (for --prune).")
    chunks: int = Field(default=0, ge=0, description="Number of chunks stored for it.")
    source: str = Field(default="", description="The name it is shown under.")
    title: str | None = Field(default=None, description="Title, if any.")
    mime: str = Field(default="", description="Detected content type.")
    aliases: tuple[DocName, ...] = Field(
        default=(), description="Other files the same content was ingested from, oldest first."
    )

    @property
    def origins(self) -> tuple[str, ...]:
        """Every input file the document is stored for: its own, then its aliases'."""
        return (self.origin, *(a.origin for a in self.aliases))


class ScoredChunk(Frozen):
    """A chunk with the raw score of one ranking."""

    chunk: Chunk = Field(description="The chunk.")
    score: float = Field(description="Score (BM25, cosine, or fused), higher is better.")
    scores: dict[str, float] = Field(
        default_factory=dict, description="Component scores kept for the trace."
    )


class DocumentScores(Frozen):
    """Document-level raw scores of the best documents of each ranking, by doc id."""

    lexical: dict[str, float] = Field(
        default_factory=dict, description="Whole-document BM25 (positive scores only)."
    )
    dense: dict[str, float] = Field(
        default_factory=dict, description="Cosine of the query and the document vector."
    )


class DocumentBatchItem(Frozen):
    """A document with its chunks and their vectors, written together."""

    model_config = Frozen.model_config | {"arbitrary_types_allowed": True}

    document: Document = Field(description="The document.")
    chunks: tuple[Chunk, ...] = Field(description="Its chunks, in order.")
    vectors: Any = Field(description="float32 array (len(chunks), dim), L2-normalised.")
    origin: str = Field(description="The input file it came from.")
    replaces: tuple[str, ...] = Field(
        default=(),
        description=(
            "Ids of stored documents this one replaces under ``origin`` (an edited file's old "
            "version): in the same write they lose that name, and go (their chunks remembered "
            "as replaced) when left with none, so no search finds both versions. Set only "
            "for a `DocumentOwnerStore`."
        ),
    )


@runtime_checkable
class Store(Protocol):
    """A persistent store of documents, chunks and vectors with lexical and dense search."""

    def records(self) -> dict[str, DocRecord]:
        """Every stored document's record, by doc id."""
        ...

    def upsert(self, items: Sequence[DocumentBatchItem], *, embedder: str) -> None:
        """Atomically add or replace these documents (all or nothing): a search sees each
        document's old version or its new one, never chunks of both (nor, for an item that
        ``replaces`` others, the old documents next to the new one).

        Raises:
            StoreError: the store holds vectors of another embedder, or cannot be written.
        """
        ...

    def delete(self, doc_ids: Sequence[str]) -> int:
        """Remove documents, their chunks and vectors from every index; returns how many
        documents were removed (a `DocumentOwnerStore` remembers each removed chunk)."""
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
class DocumentOwnerStore(Protocol):
    """A store that keeps the documents a user owns: every name a document's content was
    ingested under, the removal record of every chunk, and a consistency check.

    Both stores of the library implement it (and pass ``affidavit.testing.store_contract``); the
    ingest pipeline works without it, recording no second name for the same content.
    """

    def add_name(self, doc_id: str, origin: str, source: str) -> bool:
        """Record that a stored document's content was also ingested from ``origin`` (shown as
        ``source``); False when the document is unknown or already has that name."""
        ...

    def remove_names(
        self, names: Sequence[tuple[str, str]], *, reason: DeletionReason = "replaced"
    ) -> list[str]:
        """Take ``(doc_id, origin)`` names off their documents; a document left with no name is
        deleted (as ``delete``, its chunks remembered with ``reason``). When a document's own
        name goes and another remains, the oldest other name becomes its own. Returns the ids of
        the documents deleted."""
        ...

    def deleted_chunks(self, chunk_ids: Sequence[str]) -> dict[str, DeletedChunk]:
        """The removal records of those of ``chunk_ids`` that were removed (and not stored
        again since), by chunk id."""
        ...

    def check(self) -> list[str]:
        """Consistency problems found, in plain words (empty when consistent): chunks without a
        document, chunk counts that disagree, indexed entries of removed chunks."""
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

    def document_scores(
        self,
        query: str,
        vector: Vectors,
        candidates: int = 50,
        filters: SearchFilters | None = None,
    ) -> DocumentScores:
        """The raw document-level scores of the best ``candidates`` documents of each ranking
        (whole-document BM25, cosine of the document vector), for score fusion."""
        ...
