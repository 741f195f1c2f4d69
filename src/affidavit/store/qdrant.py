"""A Qdrant store for corpora that outgrow one machine: dense + sparse (BM25) vectors, RRF in the
engine. Local mode (a folder, or ``:memory:``) needs no server; a URL talks to a server/cluster.

Three collections, each created with the settings in docs/store.md:

* ``<name>_chunks``: one point per chunk, named dense vector ``dense`` (cosine) and sparse vector
  ``bm25`` (the engine's IDF modifier); payload = the chunk, ``doc_id``, ``domains`` and
  ``date_ord`` (payload-indexed on a server, so filters are applied inside the HNSW search).
* ``<name>_docs``: one point per document, with the same two vectors at document level (the
  normalised mean of its chunk vectors; BM25 of title + whole text) and its record.
* ``<name>_meta``: the embedder, dimension, analyser and BM25 length constants.
* ``<name>_deleted``: one point per removed chunk (its document, name, when and why), created on
  the first delete, so a certificate citing a removed chunk can say why it is gone.

Searches run in the engine with the Query API: ``search_hybrid`` fuses the chunk-level sparse and
dense prefetches with RRF; ``search_documents`` (parent-document hybrid, the default of
`StoreRetriever`) fuses the document-level prefetches with
RRF, then takes each top document's best chunks with one grouped (``group_by="doc_id"``) RRF
query.

BM25 on Qdrant: the client sends each text's BM25 term-frequency component
``tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))`` and the engine multiplies by IDF at query
time; the query is its distinct terms with weight 1 (the local store, too, counts a repeated
query term once). ``avgdl`` (of chunks and of documents) is measured on the first batch written
and then kept (stored vectors cannot be re-weighted), so scores differ slightly from the local
store's bm25s index, whose avgdl is exact.

Consistency: Qdrant has no multi-point transactions. A batch's new chunks are written first (in
large batches), the document records (with the content hash) next, and the old versions' chunks
are removed last. A write that fails before the records are in is undone (its new chunks deleted,
the old records put back), so the old version stays whole and searchable and no part of the new
one is; a crash with no chance to undo leaves chunks without a record, which `check` reports and
the next ingest of the document replaces.

Examples:
    >>> store = QdrantStore(path=None)  # in memory  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import numpy as np

from affidavit.core.errors import (
    AffidavitError,
    MissingDependencyError,
    StoreError,
    StoreUnusableError,
)
from affidavit.core.retrieval import DeletedChunk, SearchFilters
from affidavit.core.types import Chunk, Document
from affidavit.retrieve.base import Vectors
from affidavit.retrieve.text import Analyzer
from affidavit.store.base import (
    DeletionReason,
    DocName,
    DocRecord,
    DocumentBatchItem,
    DocumentScores,
    ScoredChunk,
    refuses_every_write,
)
from affidavit.store.local import chunk_date

logger = logging.getLogger(__name__)

_NS = uuid.UUID("6f1c1a52-4d0e-4a8c-9a43-3b7f0e2f5a11")
_META_ID = str(uuid.uuid5(_NS, "__meta__"))
_UPSERT_BATCH = 512  # points per upsert request (Qdrant recommends batches of a few hundred)
_MAX_GROUP_CANDIDATES = 10_000


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
        analyzer: the BM25 analyser (index and queries must agree).
        k1: BM25 term-frequency saturation.
        b: BM25 length normalisation.
        avgdl: average length in terms assumed for chunks when nothing is stored yet and a batch
            has no text (normally measured on the first batch).
        on_disk: keep vectors and payloads on disk (memory-mapped) on a server: the setting for
            collections larger than RAM.
        hnsw_m: HNSW graph degree of the dense index on a server (Qdrant's default 16).

    Raises:
        MissingDependencyError: qdrant-client is not installed.
        StoreError: the server or folder cannot be opened, or holds a collection of an older
            layout.
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
        *,
        on_disk: bool = False,
        hnsw_m: int = 16,
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
                client = QdrantClient(url=url, api_key=api_key)
            elif path is not None:
                Path(path).mkdir(parents=True, exist_ok=True)
                client = QdrantClient(path=str(path))
            else:
                client = QdrantClient(":memory:")
        except Exception as exc:  # qdrant-client raises many untyped errors
            raise StoreError(f"cannot open Qdrant: {exc}", source=str(url or path)) from exc
        # every later call too: a server that is down or refuses is a StoreError, never an
        # untyped exception (an unreachable qdrant_url was exit 3, "a bug in affidavit")
        self.client: Any = _Typed(client, str(url or path or ":memory:"))
        self.path = Path(path) if path is not None else None
        self.url = url
        self.analyzer = analyzer or Analyzer()
        self.k1, self.b, self.avgdl = k1, b, avgdl
        self.on_disk, self.hnsw_m = on_disk, hnsw_m
        self.chunks_col = f"{collection}_chunks"
        self.docs_col = f"{collection}_docs"
        self.meta_col = f"{collection}_meta"
        self.deleted_col = f"{collection}_deleted"
        self.dim = dim
        self._meta_cache: dict[str, Any] | None = None
        self._ensure_meta()

    # -- setup ----------------------------------------------------------------------------------

    def _ensure_meta(self) -> None:
        m = self._m
        if self.client.collection_exists(self.docs_col):
            vectors = self.client.get_collection(self.docs_col).config.params.vectors
            if isinstance(vectors, dict) and "none" in vectors:
                raise StoreError(
                    "this Qdrant collection has the layout of affidavit < 0.2 (no document "
                    "vectors); delete it and ingest again",
                    source=self.docs_col,
                )
        if not self.client.collection_exists(self.meta_col):
            self.client.create_collection(
                self.meta_col,
                vectors_config={"none": m.VectorParams(size=1, distance=m.Distance.DOT)},
            )
        meta = self._meta()
        if meta.get("analyzer") not in (None, self.analyzer.name):
            raise StoreError(
                f"store was indexed with analyzer {meta['analyzer']!r}", source=self.meta_col
            )

    def _create(self, name: str, dim: int, indexes: tuple[tuple[str, Any], ...]) -> None:
        """A collection with named dense + sparse vectors, created the way the Qdrant docs
        recommend for hybrid search (see docs/store.md)."""
        m = self._m
        self.client.create_collection(
            name,
            vectors_config={
                "dense": m.VectorParams(size=dim, distance=m.Distance.COSINE, on_disk=self.on_disk)
            },
            sparse_vectors_config={
                "bm25": m.SparseVectorParams(
                    modifier=m.Modifier.IDF, index=m.SparseIndexParams(on_disk=self.on_disk)
                )
            },
            hnsw_config=m.HnswConfigDiff(m=self.hnsw_m, ef_construct=100),
            on_disk_payload=self.on_disk,
        )
        if self.url is None:
            return  # local mode scans; payload indexes have no effect there
        for field, schema in indexes:
            self.client.create_payload_index(name, field, schema)

    def _ensure_collections(self, dim: int) -> None:
        m = self._m
        filters = (
            ("domains", m.PayloadSchemaType.KEYWORD),
            ("date_ord", m.PayloadSchemaType.INTEGER),
        )
        doc_id = (("doc_id", m.PayloadSchemaType.KEYWORD),)
        if not self.client.collection_exists(self.chunks_col):
            self._create(self.chunks_col, dim, doc_id + filters)
        if not self.client.collection_exists(self.docs_col):
            self._create(self.docs_col, dim, doc_id + filters)

    def _meta(self) -> dict[str, Any]:
        if self._meta_cache is None:
            got = self.client.retrieve(self.meta_col, [_META_ID], with_payload=True)
            self._meta_cache = dict(got[0].payload or {}) if got else {}
        return self._meta_cache

    def _write_meta(self, meta: dict[str, Any]) -> None:
        m = self._m
        self.client.upsert(
            self.meta_col, [m.PointStruct(id=_META_ID, vector={"none": [0.0]}, payload=meta)]
        )
        self._meta_cache = dict(meta)

    def config(self) -> dict[str, Any]:
        """The effective configuration."""
        meta = self._meta()
        return {
            "kind": "qdrant",
            "url": self.url,
            "path": str(self.path) if self.path else None,
            "collection": self.chunks_col,
            "analyzer": self.analyzer.name,
            "bm25": {
                "k1": self.k1,
                "b": self.b,
                "avgdl_chunks": meta.get("avgdl_chunks", self.avgdl),
                "avgdl_docs": meta.get("avgdl_docs"),
            },
            "on_disk": self.on_disk,
            "hnsw_m": self.hnsw_m,
        }

    def embedder(self) -> str | None:
        """Name of the embedder whose vectors the store holds."""
        e = self._meta().get("embedder")
        return str(e) if e else None

    # -- vectors --------------------------------------------------------------------------------

    def _sparse(self, terms: list[str], avgdl: float) -> Any:
        tf = Counter(term_id(t) for t in terms)
        norm = self.k1 * (1 - self.b + self.b * len(terms) / avgdl)
        idx = sorted(tf)
        vals = [tf[i] * (self.k1 + 1) / (tf[i] + norm) for i in idx]
        return self._m.SparseVector(indices=idx, values=vals)

    def _sparse_query(self, text: str) -> Any:
        idx = sorted({term_id(t) for t in self.analyzer.query_terms(text)})
        return self._m.SparseVector(indices=idx, values=[1.0] * len(idx))

    # -- writes ---------------------------------------------------------------------------------

    def upsert(self, items: Sequence[DocumentBatchItem], *, embedder: str) -> None:
        """Add or replace documents: old chunks deleted, new chunks upserted in large batches,
        document records last."""
        if not items:
            return
        meta = dict(self._meta())
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
        if len(dims) > 1 or (dims and meta.get("dim") not in (None, *dims)):
            raise StoreError(
                f"vector dimension mismatch: {dims} (store: {meta.get('dim')})",
                source=self.chunks_col,
            )
        dim = dims.pop() if dims else int(meta.get("dim") or self.dim)
        chunk_terms = [
            [self.analyzer.tokens(f"{c.title}\n{c.text}" if c.title else c.text) for c in it.chunks]
            for it in items
        ]
        doc_terms = [
            self.analyzer.tokens(
                f"{it.document.title}\n{it.document.text}"
                if it.document.title
                else it.document.text
            )
            for it in items
        ]
        if not meta:
            # the BM25 length constants are measured once, on the first batch, and then kept
            lengths = [len(t) for ts in chunk_terms for t in ts]
            meta = {
                "embedder": embedder,
                "dim": dim,
                "analyzer": self.analyzer.name,
                "avgdl_chunks": (sum(lengths) / len(lengths)) if lengths else self.avgdl,
                "avgdl_docs": max(sum(len(t) for t in doc_terms) / len(doc_terms), 1.0),
            }
        try:
            self._ensure_collections(dim)
            if self._meta() != meta:
                self._write_meta(meta)
            self._write_batch(items, chunk_terms, doc_terms, meta)
        except StoreError:
            raise
        except Exception as exc:  # network / local-mode errors
            # local mode's full or failing disk refuses every later document too (issue 26.8)
            error = StoreUnusableError if refuses_every_write(exc) else StoreError
            raise error(f"cannot write to Qdrant: {exc}", source=self.chunks_col) from exc

    def _write_batch(
        self,
        items: Sequence[DocumentBatchItem],
        chunk_terms: list[list[list[str]]],
        doc_terms: list[list[str]],
        meta: dict[str, Any],
    ) -> None:
        m = self._m
        c_avg, d_avg = float(meta["avgdl_chunks"]), float(meta["avgdl_docs"])
        ids = [it.document.id for it in items]
        before = self._doc_payloads(ids)
        old_docs = self._doc_points_with_vectors(ids)
        old_chunks = self._chunk_ids_of(ids)
        chunk_points, doc_points = [], []
        for it, terms_per_chunk, d_terms in zip(items, chunk_terms, doc_terms, strict=True):
            doc = it.document
            old = before.get(doc.id, {})
            aliases = list(old.get("aliases") or [])
            origin, source = it.origin, doc.source
            if any(a.get("origin") == origin for a in aliases):
                # a new version from one of its other names: the name it is shown under stays
                origin, source = old["origin"], old.get("source", source)
            for c, v, terms in zip(it.chunks, it.vectors, terms_per_chunk, strict=True):
                chunk_points.append(
                    m.PointStruct(
                        id=_pid(c.id),
                        vector={"dense": v.tolist(), "bm25": self._sparse(terms, c_avg)},
                        payload={
                            "chunk": c.model_dump(mode="json"),
                            "doc_id": doc.id,
                            **_filter_payload(c.metadata),
                        },
                    )
                )
            mean = np.asarray(it.vectors, dtype=np.float32).sum(axis=0) if len(it.chunks) else None
            if mean is None or not np.any(mean):
                mean = np.zeros(int(meta["dim"]), dtype=np.float32)
                mean[0] = 1.0  # an empty document still needs a valid cosine vector
            mean = mean / np.linalg.norm(mean)
            doc_points.append(
                m.PointStruct(
                    id=_pid("doc:" + doc.id),
                    vector={"dense": mean.tolist(), "bm25": self._sparse(d_terms, d_avg)},
                    payload={
                        "doc_id": doc.id,
                        "content_hash": doc.content_hash,
                        "origin": origin,
                        "source": source,
                        "title": doc.title,
                        "mime": doc.mime,
                        "aliases": aliases,
                        "chunks": len(it.chunks),
                        "document": json.loads(
                            doc.model_copy(update={"source": source}).model_dump_json()
                        ),
                        **_filter_payload(it.chunks[0].metadata if it.chunks else doc.metadata),
                    },
                )
            )
        # new chunks first, document records next, the old version's chunks last: a write that
        # fails before the records are in is undone, and the old version stays whole
        old_pids = {_pid(cid) for cid, _ in old_chunks}
        new_pids = [p.id for p in chunk_points if p.id not in old_pids]
        try:
            for i in range(0, len(chunk_points), _UPSERT_BATCH):
                self.client.upsert(self.chunks_col, chunk_points[i : i + _UPSERT_BATCH], wait=True)
            for i in range(0, len(doc_points), _UPSERT_BATCH):
                self.client.upsert(self.docs_col, doc_points[i : i + _UPSERT_BATCH], wait=True)
        except Exception:
            self._undo_write(new_pids, [p.id for p in doc_points], old_docs)
            raise
        written = {p.id for p in chunk_points}
        stale = [(cid, d) for cid, d in old_chunks if _pid(cid) not in written]
        self._tombstone(stale, "replaced")
        for i in range(0, len(stale), _UPSERT_BATCH):
            self.client.delete(
                self.chunks_col,
                points_selector=m.PointIdsList(
                    points=[_pid(cid) for cid, _ in stale[i : i + _UPSERT_BATCH]]
                ),
            )
        if self.client.collection_exists(self.deleted_col):
            # a chunk stored again (the same content after a delete) is no longer removed
            again = [_pid("deleted:" + p.payload["chunk"]["id"]) for p in chunk_points]
            for i in range(0, len(again), _UPSERT_BATCH):
                self.client.delete(
                    self.deleted_col, points_selector=m.PointIdsList(points=again[i : i + 512])
                )

    def _doc_points_with_vectors(self, doc_ids: Sequence[str]) -> list[Any]:
        """The stored document points (payload and vectors), to put back if a write fails."""
        if not doc_ids or not self.client.collection_exists(self.docs_col):
            return []
        got = self.client.retrieve(
            self.docs_col,
            [_pid("doc:" + d) for d in doc_ids],
            with_payload=True,
            with_vectors=True,
        )
        return [self._m.PointStruct(id=p.id, vector=p.vector, payload=p.payload) for p in got]

    def _undo_write(
        self, chunk_pids: Sequence[Any], doc_pids: Sequence[Any], old_docs: Sequence[Any]
    ) -> None:
        """Take back a failed write: the chunks it added, the records it wrote (the old records
        put back). Best effort: the backend that failed may refuse this too (`check` reports
        what is left)."""
        m = self._m
        try:
            for i in range(0, len(chunk_pids), _UPSERT_BATCH):
                self.client.delete(
                    self.chunks_col,
                    points_selector=m.PointIdsList(points=list(chunk_pids[i : i + _UPSERT_BATCH])),
                )
            kept = {str(p.id) for p in old_docs}
            added = [p for p in doc_pids if str(p) not in kept]
            if added:
                self.client.delete(self.docs_col, points_selector=m.PointIdsList(points=added))
            for i in range(0, len(old_docs), _UPSERT_BATCH):
                self.client.upsert(self.docs_col, list(old_docs[i : i + _UPSERT_BATCH]), wait=True)
        except Exception as exc:  # the backend that failed the write
            logger.warning("could not undo a failed Qdrant write: %s", exc)

    def _doc_payloads(self, doc_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        if not doc_ids or not self.client.collection_exists(self.docs_col):
            return {}
        got = self.client.retrieve(
            self.docs_col,
            [_pid("doc:" + d) for d in doc_ids],
            with_payload=["doc_id", "origin", "source", "aliases"],
        )
        return {p.payload["doc_id"]: dict(p.payload) for p in got if p.payload}

    def _chunk_points(self, doc_ids: Sequence[str] | None = None) -> list[Any]:
        """Every chunk point's id and doc id (of these documents only, when given)."""
        m = self._m
        if not self.client.collection_exists(self.chunks_col):
            return []
        flt = (
            None
            if doc_ids is None
            else m.Filter(
                must=[m.FieldCondition(key="doc_id", match=m.MatchAny(any=list(doc_ids)))]
            )
        )
        out: list[Any] = []
        offset = None
        while True:
            pts, offset = self.client.scroll(
                self.chunks_col,
                scroll_filter=flt,
                limit=1000,
                offset=offset,
                with_payload=["doc_id", "chunk"],
            )
            out.extend(pts)
            if offset is None:
                return out

    def _chunk_ids_of(self, doc_ids: Sequence[str]) -> list[tuple[str, str]]:
        if not doc_ids:
            return []
        return [
            (p.payload["chunk"]["id"], p.payload["doc_id"])
            for p in self._chunk_points(doc_ids)
            if p.payload
        ]

    def _tombstone(self, chunks: Sequence[tuple[str, str]], reason: str) -> None:
        """Remember ``(chunk_id, doc_id)`` chunks as removed."""
        m = self._m
        if not chunks:
            return
        if not self.client.collection_exists(self.deleted_col):
            self.client.create_collection(
                self.deleted_col,
                vectors_config={"none": m.VectorParams(size=1, distance=m.Distance.DOT)},
            )
        sources = {
            d: pl.get("source", "")
            for d, pl in self._doc_payloads(list({d for _, d in chunks})).items()
        }
        now = time.time()
        points = [
            m.PointStruct(
                id=_pid("deleted:" + cid),
                vector={"none": [0.0]},
                payload={
                    "chunk_id": cid,
                    "doc_id": d,
                    "source": sources.get(d, ""),
                    "deleted_at": now,
                    "reason": reason,
                },
            )
            for cid, d in chunks
        ]
        for i in range(0, len(points), _UPSERT_BATCH):
            self.client.upsert(self.deleted_col, points[i : i + _UPSERT_BATCH], wait=True)

    def _delete_chunks(self, doc_ids: Sequence[str]) -> None:
        m = self._m
        if not doc_ids or not self.client.collection_exists(self.chunks_col):
            return
        self.client.delete(
            self.chunks_col,
            points_selector=m.FilterSelector(
                filter=m.Filter(
                    must=[m.FieldCondition(key="doc_id", match=m.MatchAny(any=list(doc_ids)))]
                )
            ),
        )

    def delete(self, doc_ids: Sequence[str], *, reason: DeletionReason = "deleted") -> int:
        """Remove documents, their chunks (dense and sparse vectors) and names; each removed
        chunk is remembered (`deleted_chunks`)."""
        m = self._m
        gone = list(self._doc_payloads(list(dict.fromkeys(doc_ids))))
        try:
            self._tombstone(self._chunk_ids_of(gone), reason)
            self._delete_chunks(list(doc_ids))
            if gone:
                self.client.delete(
                    self.docs_col,
                    points_selector=m.PointIdsList(points=[_pid("doc:" + d) for d in gone]),
                )
        except Exception as exc:  # network / local-mode errors
            raise StoreError(f"cannot delete from Qdrant: {exc}", source=self.docs_col) from exc
        return len(gone)

    def add_name(self, doc_id: str, origin: str, source: str) -> bool:
        """Record another file the document's content was ingested from."""
        pl = self._doc_payloads([doc_id]).get(doc_id)
        if pl is None or pl.get("origin") == origin:
            return False
        aliases = list(pl.get("aliases") or [])
        if any(a.get("origin") == origin for a in aliases):
            return False
        aliases.append({"origin": origin, "source": source})
        self.client.set_payload(
            self.docs_col, payload={"aliases": aliases}, points=[_pid("doc:" + doc_id)], wait=True
        )
        return True

    def remove_names(
        self, names: Sequence[tuple[str, str]], *, reason: DeletionReason = "replaced"
    ) -> list[str]:
        """Take names off documents; delete those left with none. Returns the deleted ids."""
        gone: list[str] = []
        for doc_id, origin in names:
            pl = self._doc_payloads([doc_id]).get(doc_id)
            if pl is None:
                continue
            aliases = [a for a in pl.get("aliases") or [] if a.get("origin") != origin]
            update: dict[str, Any] = {"aliases": aliases}
            if pl.get("origin") == origin:
                if not aliases:
                    self.delete([doc_id], reason=reason)
                    gone.append(doc_id)
                    continue
                first = aliases.pop(0)
                update = {"origin": first["origin"], "source": first["source"], "aliases": aliases}
            self.client.set_payload(
                self.docs_col, payload=update, points=[_pid("doc:" + doc_id)], wait=True
            )
        return gone

    def deleted_chunks(self, chunk_ids: Sequence[str]) -> dict[str, DeletedChunk]:
        """Removal records of those chunks that were removed (and not stored again)."""
        if not chunk_ids or not self.client.collection_exists(self.deleted_col):
            return {}
        got = self.client.retrieve(
            self.deleted_col,
            [_pid("deleted:" + c) for c in dict.fromkeys(chunk_ids)],
            with_payload=True,
        )
        out = {}
        for p in got:
            pl = p.payload or {}
            out[pl["chunk_id"]] = DeletedChunk(
                chunk_id=pl["chunk_id"],
                doc_id=pl["doc_id"],
                source=pl.get("source", ""),
                deleted_at=datetime.fromtimestamp(float(pl["deleted_at"]), UTC),
                reason=pl["reason"],
            )
        return out

    def check(self) -> list[str]:
        """Consistency of the collections: every chunk point has its document point, each
        document's chunk count is what is stored, no chunk recorded as removed is stored."""
        counted: Counter[str] = Counter()
        chunk_ids = []
        for p in self._chunk_points():
            pl = p.payload or {}
            counted[pl.get("doc_id", "")] += 1
            chunk_ids.append(pl.get("chunk", {}).get("id", ""))
        docs = {
            (p.payload or {}).get("doc_id", ""): int((p.payload or {}).get("chunks", 0))
            for p in self._doc_points()
        }
        problems = []
        orphans = sum(n for d, n in counted.items() if d not in docs)
        if orphans:
            problems.append(f"{self.chunks_col}: {orphans} chunk points without a document")
        for d, n in sorted(docs.items()):
            if counted.get(d, 0) != n:
                problems.append(
                    f"{self.docs_col}: document {d} records {n} chunks, {counted.get(d, 0)} stored"
                )
        removed = self.deleted_chunks(chunk_ids)
        if removed:
            problems.append(
                f"{self.chunks_col}: {len(removed)} chunks recorded as removed are still stored"
            )
        return problems

    def refresh(self) -> None:
        """Nothing to do: Qdrant indexes on write."""

    # -- reads ----------------------------------------------------------------------------------

    def _doc_points(self) -> list[Any]:
        out: list[Any] = []
        if not self.client.collection_exists(self.docs_col):
            return out
        offset = None
        fields = [
            "doc_id",
            "content_hash",
            "origin",
            "chunks",
            "source",
            "title",
            "mime",
            "aliases",
        ]
        while True:
            pts, offset = self.client.scroll(
                self.docs_col, limit=1000, offset=offset, with_payload=fields
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
                source=pl.get("source") or "",
                title=pl.get("title"),
                mime=pl.get("mime") or "",
                aliases=tuple(
                    DocName(origin=a["origin"], source=a["source"]) for a in pl.get("aliases") or []
                ),
            )
        return out

    def get_document(self, doc_id: str) -> Document | None:
        """A stored document, or None."""
        if not self.client.collection_exists(self.docs_col):
            return None
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
        out = []
        for col in (self.docs_col, self.chunks_col):
            exists = self.client.collection_exists(col)
            out.append(int(self.client.count(col, exact=True).count) if exists else 0)
        return out[0], out[1]

    # -- search ---------------------------------------------------------------------------------

    def _filter(self, filters: SearchFilters | None, doc_ids: Sequence[str] = ()) -> Any:
        m = self._m
        must: list[Any] = []
        if filters is not None and filters.domains:
            must.append(
                m.FieldCondition(
                    key="domains",
                    match=m.MatchAny(any=[d.lower().lstrip(".") for d in filters.domains]),
                )
            )
        if filters is not None and (filters.date_from or filters.date_to):
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
        ids: list[str] | None = list(filters.doc_ids) if filters and filters.doc_ids else None
        if doc_ids:
            ids = list(doc_ids) if ids is None else [d for d in doc_ids if d in set(ids)]
        if ids is not None:
            must.append(m.FieldCondition(key="doc_id", match=m.MatchAny(any=ids)))
        return m.Filter(must=must) if must else None

    def _call(self, fn: Any, **kw: Any) -> Any:
        try:
            return fn(with_payload=True, **kw)
        except Exception as exc:  # network / engine errors
            raise StoreError(f"Qdrant query failed: {exc}", source=self.chunks_col) from exc

    def _query(self, **kw: Any) -> list[ScoredChunk]:
        if not self.client.collection_exists(self.chunks_col) or kw.get("limit", 0) <= 0:
            return []
        res = self._call(self.client.query_points, collection_name=self.chunks_col, **kw)
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

    def _prefetch(self, query: str, vector: Vectors, limit: int) -> list[Any]:
        m = self._m
        prefetch = [
            m.Prefetch(query=[float(x) for x in vector.reshape(-1)], using="dense", limit=limit)
        ]
        sq = self._sparse_query(query)
        if sq.indices:
            prefetch.insert(0, m.Prefetch(query=sq, using="bm25", limit=limit))
        return prefetch

    def _rrf(self, rrf_k: int) -> Any:
        m = self._m
        # Qdrant counts ranks from 0 (score 1/(k + r0)); k + 1 gives the usual 1/(k + rank)
        return m.RrfQuery(rrf=m.Rrf(k=rrf_k + 1))

    def search_hybrid(
        self,
        query: str,
        vector: Vectors,
        k: int,
        filters: SearchFilters | None = None,
        candidates: int = 50,
        rrf_k: int = 60,
    ) -> list[ScoredChunk]:
        """Reciprocal rank fusion (k=60) of sparse BM25 and dense chunk rankings, by Qdrant."""
        # the query filter propagates into the prefetches, so each takes filtered candidates
        return self._query(
            prefetch=self._prefetch(query, vector, candidates),
            query=self._rrf(rrf_k),
            query_filter=self._filter(filters),
            limit=k,
        )

    def search_documents(
        self,
        query: str,
        vector: Vectors,
        k: int,
        filters: SearchFilters | None = None,
        candidates: int = 50,
        rrf_k: int = 60,
    ) -> list[ScoredChunk]:
        """Parent-document hybrid, computed by Qdrant in two queries.

        1. Documents: RRF of the document-level sparse BM25 and dense prefetches (``_docs``).
        2. Their chunks: one grouped query (``group_by="doc_id"``) on ``_chunks`` fusing the
           chunk-level prefetches with RRF, restricted to those documents.

        As in `affidavit.store.local.LocalStore.search_documents`, a document's n-th best
        chunk scores its document score halved n - 1 times. Chunk ranks inside a document come
        from prefetches restricted to the top documents (the local store ranks them among all
        chunks), which can order a document's chunks differently, never its documents.
        """
        if k <= 0 or not self.client.collection_exists(self.docs_col):
            return []
        docs = self._call(
            self.client.query_points,
            collection_name=self.docs_col,
            prefetch=self._prefetch(query, vector, candidates),
            query=self._rrf(rrf_k),
            query_filter=self._filter(filters),
            limit=k,
            with_vectors=False,
        ).points
        if not docs:
            return []
        doc_score = {str((p.payload or {})["doc_id"]): float(p.score) for p in docs}
        n_chunks = sum(int((p.payload or {}).get("chunks", 0)) for p in docs)
        # every chunk of the top documents fits the prefetches, so each one is ranked
        limit = min(max(n_chunks, candidates), _MAX_GROUP_CANDIDATES)
        groups = self._call(
            self.client.query_points_groups,
            collection_name=self.chunks_col,
            group_by="doc_id",
            prefetch=self._prefetch(query, vector, limit),
            query=self._rrf(rrf_k),
            query_filter=self._filter(filters, list(doc_score)),
            limit=len(doc_score),
            group_size=k,
        ).groups
        picked: list[tuple[float, int, str, ScoredChunk]] = []
        for g in groups:
            d = str(g.id)
            for r, p in enumerate(g.hits):
                score = doc_score[d] * 0.5**r
                chunk = Chunk.model_validate((p.payload or {})["chunk"])
                scores = {"doc_rrf": doc_score[d], "chunk_rrf": float(p.score)}
                picked.append((score, r, d, ScoredChunk(chunk=chunk, score=score, scores=scores)))
        # ties broken by doc id, as the local store does
        picked.sort(key=lambda t: (-t[0], t[1], t[2]))
        return [sc for *_, sc in picked[:k]]

    def document_scores(
        self,
        query: str,
        vector: Vectors,
        candidates: int = 50,
        filters: SearchFilters | None = None,
    ) -> DocumentScores:
        """Document-level sparse BM25 and dense cosine of the best ``candidates`` documents of
        each ranking, by Qdrant (two queries on the documents collection)."""
        if candidates <= 0 or not self.client.collection_exists(self.docs_col):
            return DocumentScores()

        def ranked(query_: Any, using: str) -> dict[str, float]:
            points = self._call(
                self.client.query_points,
                collection_name=self.docs_col,
                query=query_,
                using=using,
                query_filter=self._filter(filters),
                limit=candidates,
                with_vectors=False,
            ).points
            return {
                str((p.payload or {})["doc_id"]): float(p.score)
                for p in points
                if p.score is not None
            }

        sq = self._sparse_query(query)
        lexical = ranked(sq, "bm25") if sq.indices else {}
        dense = ranked([float(x) for x in vector.reshape(-1)], "dense")
        return DocumentScores(lexical={d: v for d, v in lexical.items() if v > 0}, dense=dense)

    def close(self) -> None:
        """Close the client (releases the local-mode folder lock)."""
        try:
            self.client.close()
        except Exception as exc:  # closing twice or after a failure
            logger.debug("qdrant close: %s", exc)


class _Typed:
    """A Qdrant client whose failures are `StoreError` (`StoreUnusableError` for a full or
    failing disk), whatever qdrant-client or its transport raised."""

    def __init__(self, client: Any, where: str) -> None:
        self._client = client
        self._where = where

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return attr(*args, **kwargs)
            except AffidavitError:
                raise
            except Exception as exc:  # qdrant-client raises many untyped errors
                error = StoreUnusableError if refuses_every_write(exc) else StoreError
                raise error(
                    f"Qdrant at {self._where} failed ({name}): {type(exc).__name__}: {exc}"[:500],
                    source=self._where,
                ) from exc

        return call


def _filter_payload(meta: dict[str, Any]) -> dict[str, Any]:
    """The payload fields that filters match: domain suffixes and the date as an ordinal."""
    d = chunk_date(meta)
    return {
        "domains": domain_suffixes(meta.get("domain")),
        "date_ord": date.fromisoformat(d).toordinal() if d else None,
    }
