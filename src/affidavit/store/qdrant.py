"""A Qdrant store for corpora that outgrow one machine: dense + sparse (BM25) vectors, RRF in the
engine. Local mode (a folder, or ``:memory:``) needs no server; a URL talks to a server/cluster.

Two collections: ``<name>_chunks`` (named vectors ``dense`` and sparse ``bm25`` with the engine's
IDF modifier; payload = the chunk) and ``<name>_docs`` (document records and a meta record).

BM25 on Qdrant: the client sends each chunk's BM25 term-frequency component
``tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))`` (``avgdl`` fixed, like fastembed's Bm25)
and the engine multiplies by IDF at query time; the query is its unique terms with weight 1.
Scores therefore differ slightly from the local store's bm25s index (whose avgdl is exact).

Consistency: Qdrant has no multi-point transactions. A document's chunks are written first and
its record (with the content hash) last, so a crash leaves either the old record or none, and the
next ingest rewrites the document (stale chunks are deleted by doc id first).

Example:
    >>> store = QdrantStore(path=None)  # in memory  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections import Counter
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

from affidavit.core.errors import MissingDependencyError, StoreError
from affidavit.core.retrieval import SearchFilters
from affidavit.core.types import Chunk, Document
from affidavit.retrieve.base import Vectors
from affidavit.retrieve.text import Analyzer
from affidavit.store.base import DocRecord, DocumentBatchItem, ScoredChunk
from affidavit.store.local import chunk_date

logger = logging.getLogger(__name__)

_NS = uuid.UUID("6f1c1a52-4d0e-4a8c-9a43-3b7f0e2f5a11")
_META_ID = str(uuid.uuid5(_NS, "__meta__"))


def _pid(key: str) -> str:
    return str(uuid.uuid5(_NS, key))


def term_id(term: str) -> int:
    """Stable 31-bit index of a term in the sparse vector space."""
    return int.from_bytes(hashlib.blake2b(term.encode(), digest_size=4).digest(), "little") >> 1


def domain_suffixes(domain: str | None) -> list[str]:
    """``a.b.example.org`` -> ``[a.b.example.org, b.example.org, example.org, org]``."""
    if not domain:
        return []
    parts = domain.lower().split(".")
    return [".".join(parts[i:]) for i in range(len(parts))]


class QdrantStore:
    """Store on Qdrant (local mode or server).

    Args:
        url: server URL; when None, local mode at ``path`` (None: in memory).
        path: local-mode folder.
        collection: collection name prefix.
        api_key: server API key.
        dim: dense dimension used when the collections are first created.
        avgdl: assumed average chunk length in terms, for the BM25 length normalisation.

    Raises:
        MissingDependencyError: qdrant-client is not installed.
        StoreError: the server or folder cannot be opened.
    """

    def __init__(
        self,
        url: str | None = None,
        path: Path | str | None = None,
        collection: str = "affidavit",
        api_key: str | None = None,
        dim: int = 384,
        analyzer: Analyzer | None = None,
        k1: float = 1.2,
        b: float = 0.75,
        avgdl: float = 60.0,
    ) -> None:
        try:
            from qdrant_client import QdrantClient, models
        except ImportError as exc:
            raise MissingDependencyError(
                "qdrant-client", "qdrant", purpose="the Qdrant store"
            ) from exc
        self._m = models
        try:
            if url is not None:
                self.client = QdrantClient(url=url, api_key=api_key)
            elif path is not None:
                Path(path).mkdir(parents=True, exist_ok=True)
                self.client = QdrantClient(path=str(path))
            else:
                self.client = QdrantClient(":memory:")
        except Exception as exc:  # qdrant-client raises many untyped errors
            raise StoreError(f"cannot open Qdrant: {exc}", source=str(url or path)) from exc
        self.path = Path(path) if path is not None else None
        self.url = url
        self.analyzer = analyzer or Analyzer()
        self.k1, self.b, self.avgdl = k1, b, avgdl
        self.chunks_col = f"{collection}_chunks"
        self.docs_col = f"{collection}_docs"
        self.dim = dim
        self._ensure_docs()

    # -- setup ----------------------------------------------------------------------------------

    def _ensure_docs(self) -> None:
        m = self._m
        if not self.client.collection_exists(self.docs_col):
            self.client.create_collection(
                self.docs_col,
                vectors_config={"none": m.VectorParams(size=1, distance=m.Distance.DOT)},
            )
        meta = self._meta()
        if meta.get("analyzer") not in (None, self.analyzer.name):
            raise StoreError(
                f"store was indexed with analyzer {meta['analyzer']!r}", source=self.docs_col
            )

    def _ensure_chunks(self, dim: int) -> None:
        m = self._m
        if self.client.collection_exists(self.chunks_col):
            return
        self.client.create_collection(
            self.chunks_col,
            vectors_config={"dense": m.VectorParams(size=dim, distance=m.Distance.COSINE)},
            sparse_vectors_config={"bm25": m.SparseVectorParams(modifier=m.Modifier.IDF)},
        )
        if self.url is None:
            return  # payload indexes have no effect in local mode
        for field, schema in (
            ("doc_id", m.PayloadSchemaType.KEYWORD),
            ("domains", m.PayloadSchemaType.KEYWORD),
            ("date_ord", m.PayloadSchemaType.INTEGER),
        ):
            try:
                self.client.create_payload_index(self.chunks_col, field, schema)
            except Exception as exc:  # local mode ignores payload indexes
                logger.debug("payload index %s: %s", field, exc)

    def _meta(self) -> dict[str, Any]:
        got = self.client.retrieve(self.docs_col, [_META_ID], with_payload=True)
        return dict(got[0].payload or {}) if got else {}

    def config(self) -> dict[str, Any]:
        """The effective configuration."""
        return {
            "kind": "qdrant",
            "url": self.url,
            "path": str(self.path) if self.path else None,
            "collection": self.chunks_col,
            "analyzer": self.analyzer.name,
            "bm25": {"k1": self.k1, "b": self.b, "avgdl": self.avgdl},
        }

    def embedder(self) -> str | None:
        """Name of the embedder whose vectors the store holds."""
        e = self._meta().get("embedder")
        return str(e) if e else None

    # -- vectors --------------------------------------------------------------------------------

    def _sparse_doc(self, text: str) -> Any:
        terms = self.analyzer.tokens(text)
        tf = Counter(term_id(t) for t in terms)
        norm = self.k1 * (1 - self.b + self.b * len(terms) / self.avgdl)
        idx = sorted(tf)
        vals = [tf[i] * (self.k1 + 1) / (tf[i] + norm) for i in idx]
        return self._m.SparseVector(indices=idx, values=vals)

    def _sparse_query(self, text: str) -> Any:
        idx = sorted({term_id(t) for t in self.analyzer.tokens(text)})
        return self._m.SparseVector(indices=idx, values=[1.0] * len(idx))

    # -- writes ---------------------------------------------------------------------------------

    def upsert(self, items: Sequence[DocumentBatchItem], *, embedder: str) -> None:
        """Add or replace documents (chunks first, the document record last)."""
        if not items:
            return
        m = self._m
        meta = self._meta()
        if meta.get("embedder") not in (None, embedder):
            raise StoreError(
                f"store holds vectors of {meta['embedder']!r}; refusing vectors of {embedder!r}",
                source=self.chunks_col,
            )
        for it in items:
            if len(it.chunks) != len(it.vectors):
                raise StoreError(
                    f"{len(it.chunks)} chunks but {len(it.vectors)} vectors",
                    source=it.document.source,
                )
        dims = {int(it.vectors.shape[1]) for it in items if len(it.chunks)}
        if len(dims) > 1:
            raise StoreError(f"vector dimension mismatch: {dims}", source=self.chunks_col)
        dim = dims.pop() if dims else self.dim
        try:
            self._ensure_chunks(dim)
            if not meta:
                self.client.upsert(
                    self.docs_col,
                    [
                        m.PointStruct(
                            id=_META_ID,
                            vector={"none": [0.0]},
                            payload={
                                "embedder": embedder,
                                "dim": dim,
                                "analyzer": self.analyzer.name,
                            },
                        )
                    ],
                )
            for it in items:
                self._write_one(it)
        except StoreError:
            raise
        except Exception as exc:  # network / local-mode errors
            raise StoreError(f"cannot write to Qdrant: {exc}", source=self.chunks_col) from exc

    def _write_one(self, it: DocumentBatchItem) -> None:
        m = self._m
        doc = it.document
        self.client.delete(
            self.chunks_col,
            points_selector=m.FilterSelector(
                filter=m.Filter(
                    must=[m.FieldCondition(key="doc_id", match=m.MatchValue(value=doc.id))]
                )
            ),
        )
        points = []
        for c, v in zip(it.chunks, it.vectors, strict=True):
            d = chunk_date(c.metadata)
            payload = {
                "chunk": c.model_dump(mode="json"),
                "doc_id": doc.id,
                "domains": domain_suffixes(c.metadata.get("domain")),
                "date_ord": date.fromisoformat(d).toordinal() if d else None,
            }
            text = f"{c.title}\n{c.text}" if c.title else c.text
            points.append(
                m.PointStruct(
                    id=_pid(c.id),
                    vector={"dense": [float(x) for x in v], "bm25": self._sparse_doc(text)},
                    payload=payload,
                )
            )
        if points:
            self.client.upsert(self.chunks_col, points)
        self.client.upsert(
            self.docs_col,
            [
                m.PointStruct(
                    id=_pid("doc:" + doc.id),
                    vector={"none": [0.0]},
                    payload={
                        "kind": "doc",
                        "doc_id": doc.id,
                        "content_hash": doc.content_hash,
                        "origin": it.origin,
                        "chunks": len(it.chunks),
                        "document": json.loads(doc.model_dump_json()),
                    },
                )
            ],
        )

    def delete(self, doc_ids: Sequence[str]) -> int:
        """Remove documents and their chunks."""
        m = self._m
        removed = 0
        existing = self.records()
        for d in doc_ids:
            if self.client.collection_exists(self.chunks_col):
                self.client.delete(
                    self.chunks_col,
                    points_selector=m.FilterSelector(
                        filter=m.Filter(
                            must=[m.FieldCondition(key="doc_id", match=m.MatchValue(value=d))]
                        )
                    ),
                )
            if d in existing:
                self.client.delete(
                    self.docs_col, points_selector=m.PointIdsList(points=[_pid("doc:" + d)])
                )
                removed += 1
        return removed

    def refresh(self) -> None:
        """Nothing to do: Qdrant indexes on write."""

    # -- reads ----------------------------------------------------------------------------------

    def _doc_points(self) -> list[Any]:
        m = self._m
        out: list[Any] = []
        offset = None
        flt = m.Filter(must=[m.FieldCondition(key="kind", match=m.MatchValue(value="doc"))])
        while True:
            pts, offset = self.client.scroll(
                self.docs_col, scroll_filter=flt, limit=1000, offset=offset, with_payload=True
            )
            out.extend(pts)
            if offset is None:
                return out

    def records(self) -> dict[str, DocRecord]:
        """Every stored document's record."""
        out = {}
        for p in self._doc_points():
            pl = p.payload or {}
            out[pl["doc_id"]] = DocRecord(
                doc_id=pl["doc_id"],
                content_hash=pl["content_hash"],
                origin=pl["origin"],
                chunks=pl.get("chunks", 0),
            )
        return out

    def get_document(self, doc_id: str) -> Document | None:
        """A stored document, or None."""
        got = self.client.retrieve(self.docs_col, [_pid("doc:" + doc_id)], with_payload=True)
        if not got:
            return None
        return Document.model_validate((got[0].payload or {})["document"])

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """Stored chunks by id, in the order given."""
        if not chunk_ids or not self.client.collection_exists(self.chunks_col):
            return []
        got = self.client.retrieve(self.chunks_col, [_pid(c) for c in chunk_ids], with_payload=True)
        by_id = {}
        for p in got:
            c = Chunk.model_validate((p.payload or {})["chunk"])
            by_id[c.id] = c
        return [by_id[c] for c in dict.fromkeys(chunk_ids) if c in by_id]

    def count(self) -> tuple[int, int]:
        """(documents, chunks) stored."""
        docs = len(self._doc_points())
        chunks = (
            self.client.count(self.chunks_col, exact=True).count
            if self.client.collection_exists(self.chunks_col)
            else 0
        )
        return docs, int(chunks)

    # -- search ---------------------------------------------------------------------------------

    def _filter(self, filters: SearchFilters | None) -> Any:
        if filters is None or filters.is_empty():
            return None
        m = self._m
        must: list[Any] = []
        if filters.domains:
            must.append(
                m.FieldCondition(
                    key="domains",
                    match=m.MatchAny(any=[d.lower().lstrip(".") for d in filters.domains]),
                )
            )
        if filters.date_from or filters.date_to:
            # a chunk without a date has no date_ord and fails the range (fail closed)
            must.append(
                m.FieldCondition(
                    key="date_ord",
                    range=m.Range(
                        gte=filters.date_from.toordinal() if filters.date_from else None,
                        lte=filters.date_to.toordinal() if filters.date_to else None,
                    ),
                )
            )
        if filters.doc_ids:
            must.append(m.FieldCondition(key="doc_id", match=m.MatchAny(any=list(filters.doc_ids))))
        return m.Filter(must=must)

    def _query(self, **kw: Any) -> list[ScoredChunk]:
        if not self.client.collection_exists(self.chunks_col) or kw.get("limit", 0) <= 0:
            return []
        try:
            res = self.client.query_points(self.chunks_col, with_payload=True, **kw)
        except Exception as exc:  # network / engine errors
            raise StoreError(f"Qdrant query failed: {exc}", source=self.chunks_col) from exc
        return [
            ScoredChunk(
                chunk=Chunk.model_validate((p.payload or {})["chunk"]), score=float(p.score)
            )
            for p in res.points
            if p.score is not None
        ]

    def search_lexical(
        self, query: str, k: int, filters: SearchFilters | None = None
    ) -> list[ScoredChunk]:
        """BM25 through the sparse vectors (IDF applied by the engine)."""
        sq = self._sparse_query(query)
        if not sq.indices:
            return []
        hits = self._query(query=sq, using="bm25", limit=k, query_filter=self._filter(filters))
        return [h for h in hits if h.score > 0]

    def search_dense(
        self, vector: Vectors, k: int, filters: SearchFilters | None = None
    ) -> list[ScoredChunk]:
        """Cosine ranking."""
        q = [float(x) for x in vector.reshape(-1)]
        return self._query(query=q, using="dense", limit=k, query_filter=self._filter(filters))

    def search_hybrid(
        self,
        query: str,
        vector: Vectors,
        k: int,
        filters: SearchFilters | None = None,
        candidates: int = 50,
        rrf_k: int = 60,
    ) -> list[ScoredChunk]:
        """Reciprocal rank fusion (k=60) of sparse BM25 and dense, computed by Qdrant."""
        m = self._m
        flt = self._filter(filters)
        prefetch = [
            m.Prefetch(
                query=[float(x) for x in vector.reshape(-1)],
                using="dense",
                limit=candidates,
                filter=flt,
            )
        ]
        sq = self._sparse_query(query)
        if sq.indices:
            prefetch.insert(0, m.Prefetch(query=sq, using="bm25", limit=candidates, filter=flt))
        # Qdrant counts ranks from 0 (score 1/(k + r0)); k + 1 gives the usual 1/(k + rank)
        fusion = m.RrfQuery(rrf=m.Rrf(k=rrf_k + 1))
        return self._query(prefetch=prefetch, query=fusion, limit=k)

    def close(self) -> None:
        """Close the client (releases the local-mode folder lock)."""
        try:
            self.client.close()
        except Exception as exc:  # closing twice or after a failure
            logger.debug("qdrant close: %s", exc)
