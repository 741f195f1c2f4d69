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

Consistency: Qdrant has no multi-point transactions. A write records its intent (the chunks and
documents it will remove) in ``_meta``, marks the documents it replaces under another id as
superseded by it, writes the new chunks (tagged with a new version id), then the document records
(one point each, naming the version), and removes the old versions' chunks and documents last.
Searches and `get_chunks` return only chunks of their document's current version, and hide a
superseded document once its successor's record is in, so a reader sees the old version or the
new one, never both. A write that fails before the records are in is undone; one that stops
after leaves its intent, which `check` reports and `refresh` finishes.

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
# a query whose top holds points of a replaced version is asked again without them, so often
_MAX_REQUERIES = 8


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
        # a chunk's versions: what `search_documents` filters on to keep current chunks only
        versions = (("versions", m.PayloadSchemaType.KEYWORD),)
        if not self.client.collection_exists(self.chunks_col):
            self._create(self.chunks_col, dim, doc_id + versions + filters)
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
        old_chunks = self._chunk_ids_of(ids)
        old_of: dict[str, set[str]] = {}
        for cid, d in old_chunks:
            old_of.setdefault(d, set()).add(cid)
        # documents an item replaces that go with the name it takes off them: hidden from the
        # moment its record is written (`superseded_by`), deleted after
        replaced = self._doc_payloads([d for it in items for d in it.replaces if d not in ids])
        hidden = {
            d: it
            for it in items
            for d in it.replaces
            if d in replaced
            and replaced[d].get("origin") == it.origin
            and not replaced[d].get("aliases")
        }
        old_docs = self._doc_points_with_vectors([*ids, *hidden])
        version = {d: uuid.uuid4().hex for d in ids}
        chunk_points, doc_points, pending = [], [], []
        for it, terms_per_chunk, d_terms in zip(items, chunk_terms, doc_terms, strict=True):
            doc = it.document
            old = before.get(doc.id, {})
            aliases = list(old.get("aliases") or [])
            origin, source = it.origin, doc.source
            if any(a.get("origin") == origin for a in aliases):
                # a new version from one of its other names: the name it is shown under stays
                origin, source = old["origin"], old.get("source", source)
            was = old.get("version")
            for c, v, terms in zip(it.chunks, it.vectors, terms_per_chunk, strict=True):
                # a chunk both versions hold stays visible under either record
                shared = bool(was) and c.id in old_of.get(doc.id, ())
                chunk_points.append(
                    m.PointStruct(
                        id=_pid(c.id),
                        vector={"dense": v.tolist(), "bm25": self._sparse(terms, c_avg)},
                        payload={
                            "chunk": c.model_dump(mode="json"),
                            "doc_id": doc.id,
                            "versions": [version[doc.id], *([was] if shared else [])],
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
                        "version": version[doc.id],
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
            pending.append(
                {
                    "kind": "pending",
                    "doc_id": doc.id,
                    "version": version[doc.id],
                    "old": sorted(old_of.get(doc.id, ())),
                    "new": [c.id for c in it.chunks],
                    "replaces": [[d, it.origin] for d in it.replaces if d in replaced],
                }
            )
        # 1. what is left to finish, should the write stop anywhere after this (`refresh`);
        # 2. the documents replaced under another id marked superseded by the new record;
        # 3. new chunks (invisible: their version is not the record's); 4. the records, each
        # one point, so a search switches from the old version to the new one at once;
        # 5. the old versions' chunks and documents removed (`_finish`). A write that fails
        # before the records are in is undone, and the old version stays whole.
        intents = [
            m.PointStruct(
                id=_pid(f"pending:{p['doc_id']}:{p['version']}"), vector={"none": [0.0]}, payload=p
            )
            for p in pending
        ]
        new_pids = [p.id for p in chunk_points if p.id not in {_pid(c) for c, _ in old_chunks}]
        try:
            self.client.upsert(self.meta_col, intents, wait=True)
            for d, it in hidden.items():
                mark = {"doc_id": it.document.id, "version": version[it.document.id]}
                self.client.set_payload(
                    self.docs_col,
                    payload={"superseded_by": mark},
                    points=[_pid("doc:" + d)],
                    wait=True,
                )
            for i in range(0, len(chunk_points), _UPSERT_BATCH):
                self.client.upsert(self.chunks_col, chunk_points[i : i + _UPSERT_BATCH], wait=True)
            for i in range(0, len(doc_points), _UPSERT_BATCH):
                self.client.upsert(self.docs_col, doc_points[i : i + _UPSERT_BATCH], wait=True)
        except Exception:
            self._undo_write(new_pids, [p.id for p in doc_points], old_docs, pending)
            raise
        self._finish(pending)

    def _finish(self, intents: Sequence[dict[str, Any]]) -> None:
        """Finish the writes recorded by ``intents`` (idempotent): delete the chunks of their
        documents that no search may return (of a replaced version, or of a write that never
        got its record in; the old versions' recorded as replaced), take the name off the
        documents each replaced (deleted with their last name) once its record is in, and drop
        the intents."""
        m = self._m
        if not intents:
            return
        current = self._current_versions([str(i["doc_id"]) for i in intents])
        olds = {c for i in intents for c in i.get("old") or []}
        ids = list(
            dict.fromkeys(
                c for i in intents for c in (*(i.get("old") or []), *(i.get("new") or []))
            )
        )
        pts = (
            self.client.retrieve(
                self.chunks_col,
                [_pid(c) for c in ids],
                with_payload=["doc_id", "versions", "chunk"],
            )
            if ids and self.client.collection_exists(self.chunks_col)
            else []
        )
        dead: list[dict[str, Any]] = []
        alive: list[dict[str, Any]] = []
        for p in pts:
            pl = p.payload or {}
            (alive if _chunk_visible(pl, current) else dead).append(pl)
        self._tombstone(
            [(pl["chunk"]["id"], pl["doc_id"]) for pl in dead if pl["chunk"]["id"] in olds],
            "replaced",
        )
        for i in range(0, len(dead), _UPSERT_BATCH):
            self.client.delete(
                self.chunks_col,
                points_selector=m.PointIdsList(
                    points=[_pid(pl["chunk"]["id"]) for pl in dead[i : i + _UPSERT_BATCH]]
                ),
            )
        if alive and self.client.collection_exists(self.deleted_col):
            # a chunk stored again (the same content after a delete) is no longer removed
            again = [_pid("deleted:" + pl["chunk"]["id"]) for pl in alive]
            for i in range(0, len(again), _UPSERT_BATCH):
                self.client.delete(
                    self.deleted_col,
                    points_selector=m.PointIdsList(points=again[i : i + _UPSERT_BATCH]),
                )
        for intent in intents:
            # the new record is in: the documents it replaces lose the name it took
            written = current.get(str(intent["doc_id"]), "") == intent["version"]
            for old_id, origin in intent.get("replaces") or []:
                if written:
                    self.remove_names([(old_id, origin)], reason="replaced")
                elif (self._doc_payloads([old_id]).get(old_id) or {}).get("superseded_by"):
                    # the new record never got in: the old document stays as it was
                    self.client.delete_payload(
                        self.docs_col,
                        keys=["superseded_by"],
                        points=[_pid("doc:" + old_id)],
                        wait=True,
                    )
        done = [_pid(f"pending:{i['doc_id']}:{i['version']}") for i in intents]
        for i in range(0, len(done), _UPSERT_BATCH):
            self.client.delete(
                self.meta_col, points_selector=m.PointIdsList(points=done[i : i + _UPSERT_BATCH])
            )

    def _pending(self) -> list[dict[str, Any]]:
        """The intents of writes not finished (a crash or a failed last step)."""
        m = self._m
        flt = m.Filter(must=[m.FieldCondition(key="kind", match=m.MatchValue(value="pending"))])
        out: list[dict[str, Any]] = []
        offset = None
        while True:
            pts, offset = self.client.scroll(
                self.meta_col, scroll_filter=flt, limit=1000, offset=offset, with_payload=True
            )
            out.extend(dict(p.payload or {}) for p in pts)
            if offset is None:
                return out

    def _current_versions(self, doc_ids: Sequence[str]) -> dict[str, str | None]:
        """The current version of each of these documents that a search may show (None: a
        record written before versions were kept); a document missing, or superseded by a
        record that is in, is left out."""
        if not doc_ids or not self.client.collection_exists(self.docs_col):
            return {}
        fields = ["doc_id", "version", "superseded_by"]
        got = self.client.retrieve(
            self.docs_col, [_pid("doc:" + d) for d in dict.fromkeys(doc_ids)], with_payload=fields
        )
        recs = {str(p.payload["doc_id"]): dict(p.payload) for p in got if p.payload}
        marks = {d: pl["superseded_by"] for d, pl in recs.items() if pl.get("superseded_by")}
        by: dict[str, Any] = {}
        if marks:
            succ = self.client.retrieve(
                self.docs_col,
                [_pid("doc:" + str(mk["doc_id"])) for mk in marks.values()],
                with_payload=["doc_id", "version"],
            )
            by = {str(p.payload["doc_id"]): p.payload.get("version") for p in succ if p.payload}
        return {
            d: pl.get("version")
            for d, pl in recs.items()
            if not (d in marks and by.get(str(marks[d]["doc_id"]), "") == marks[d]["version"])
        }

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
        self,
        chunk_pids: Sequence[Any],
        doc_pids: Sequence[Any],
        old_docs: Sequence[Any],
        pending: Sequence[dict[str, Any]] = (),
    ) -> None:
        """Take back a failed write: the chunks it added, the records it wrote (the old records
        put back, replaced documents unmarked), then its intents. Best effort: the backend that
        failed may refuse this too (the intents stay: `refresh` finishes, `check` reports)."""
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
            self._finish(pending)
        except Exception as exc:  # the backend that failed the write
            logger.warning("could not undo a failed Qdrant write: %s", exc)

    def _doc_payloads(self, doc_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        if not doc_ids or not self.client.collection_exists(self.docs_col):
            return {}
        got = self.client.retrieve(
            self.docs_col,
            [_pid("doc:" + d) for d in doc_ids],
            with_payload=["doc_id", "origin", "source", "aliases", "version", "superseded_by"],
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
                with_payload=["doc_id", "chunk", "versions"],
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
        document's chunk count is what is stored, no chunk recorded as removed is stored, and no
        write was left unfinished (chunks of a replaced version, a replaced document still
        stored: hidden from every search, removed by `refresh` or the next ingest)."""
        docs: dict[str, int] = {}
        marks: dict[str, Any] = {}
        versions: dict[str, str | None] = {}
        for p in self._doc_points():
            pl = p.payload or {}
            d = str(pl.get("doc_id", ""))
            docs[d] = int(pl.get("chunks", 0))
            versions[d] = pl.get("version")
            if pl.get("superseded_by"):
                marks[d] = pl["superseded_by"]
        counted: Counter[str] = Counter()
        chunk_ids, orphans, stale = [], 0, 0
        for p in self._chunk_points():
            pl = p.payload or {}
            d = str(pl.get("doc_id", ""))
            chunk_ids.append(pl.get("chunk", {}).get("id", ""))
            if d not in docs:
                orphans += 1
            elif _chunk_visible(pl, versions):
                counted[d] += 1
            else:
                stale += 1
        problems = []
        if orphans:
            problems.append(f"{self.chunks_col}: {orphans} chunk points without a document")
        if stale:
            problems.append(
                f"{self.chunks_col}: {stale} chunk points of a replaced version are still stored "
                "(never searched; the next ingest removes them)"
            )
        for d, mark in sorted(marks.items()):
            if versions.get(str(mark.get("doc_id")), "") == mark.get("version"):
                problems.append(
                    f"{self.docs_col}: document {d}, replaced by {mark.get('doc_id')}, is still "
                    "stored (never searched; the next ingest removes it)"
                )
        for d, n in sorted(docs.items()):
            if counted.get(d, 0) != n and d not in marks:
                problems.append(
                    f"{self.docs_col}: document {d} records {n} chunks, {counted.get(d, 0)} stored"
                )
        removed = self.deleted_chunks(chunk_ids)
        if removed:
            problems.append(
                f"{self.chunks_col}: {len(removed)} chunks recorded as removed are still stored"
            )
        if self.client.collection_exists(self.meta_col):
            pending = self._pending()
            if pending:
                problems.append(
                    f"{self.meta_col}: {len(pending)} document writes were not finished (the next "
                    "ingest finishes them)"
                )
        return problems

    def refresh(self) -> None:
        """Finish writes that stopped after their records were in (a crash, a failed last
        step): the chunks no search may return are deleted, replaced documents removed.
        Qdrant indexes on write; nothing else to do.

        Raises:
            StoreError: the backend refuses the clean-up (searches still show one version).
        """
        if self.client.collection_exists(self.meta_col):
            self._finish(self._pending())

    # -- reads ----------------------------------------------------------------------------------

    def _doc_points(self) -> list[Any]:
        out: list[Any] = []
        if not self.client.collection_exists(self.docs_col):
            return out
        offset = None
        fields = [
            "doc_id",
            "version",
            "superseded_by",
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
        current = self._current_versions([str((p.payload or {}).get("doc_id")) for p in got])
        by_id = {}
        for p in got:
            if not _chunk_visible(p.payload or {}, current):
                continue  # of a replaced version whose removal is not finished
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

    def _filter(
        self,
        filters: SearchFilters | None,
        doc_ids: Sequence[str] = (),
        exclude: Sequence[Any] = (),
        versions: dict[str, str | None] | None = None,
    ) -> Any:
        """The Qdrant filter of ``filters``, restricted to ``doc_ids``, without the points
        ``exclude``, and (``versions``) to those documents' chunks of their current version."""
        m = self._m
        must: list[Any] = []
        must_not: list[Any] = [m.HasIdCondition(has_id=list(exclude))] if exclude else []
        if versions is not None:
            # version ids are unique per document write, so one match on any current version
            # keeps each document's current chunks (a document recorded before versions were
            # kept: all of its chunks); one condition, not one sub-filter per document, which
            # made the grouped query of `search_documents` 13 times slower
            current = sorted({v for v in versions.values() if v is not None})
            legacy = sorted(d for d, v in versions.items() if v is None)
            should = (
                [m.FieldCondition(key="versions", match=m.MatchAny(any=current))] if current else []
            )
            if legacy:
                should.append(m.FieldCondition(key="doc_id", match=m.MatchAny(any=legacy)))
            must.append(m.Filter(should=should) if should else m.HasIdCondition(has_id=[]))
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
        return m.Filter(must=must or None, must_not=must_not or None) if must or must_not else None

    def _call(self, fn: Any, **kw: Any) -> Any:
        try:
            return fn(with_payload=True, **kw)
        except Exception as exc:  # network / engine errors
            raise StoreError(f"Qdrant query failed: {exc}", source=self.chunks_col) from exc

    def _visible(
        self, collection: str, filters: SearchFilters | None, **kw: Any
    ) -> tuple[list[Any], dict[str, str | None]]:
        """The points of a query whose documents a search may show (chunk points: of their
        document's current version), and those documents' versions. Points of a replaced
        version whose removal is not finished (or of a write that never got its record in) are
        excluded and the query asked again, so they cost no place in the ranking."""
        chunks = collection == self.chunks_col
        exclude: list[Any] = []
        for _ in range(_MAX_REQUERIES):
            res = self._call(
                self.client.query_points,
                collection_name=collection,
                query_filter=self._filter(filters, exclude=exclude),
                **kw,
            )
            points = res.points
            current = self._current_versions([str((p.payload or {}).get("doc_id")) for p in points])
            bad = [
                p.id
                for p in points
                if not (
                    _chunk_visible(p.payload or {}, current)
                    if chunks
                    else str((p.payload or {}).get("doc_id")) in current
                )
            ]
            if not bad:
                return points, current
            exclude += bad
        return [p for p in points if p.id not in set(exclude)], current

    def _query(self, filters: SearchFilters | None = None, **kw: Any) -> list[ScoredChunk]:
        if not self.client.collection_exists(self.chunks_col) or kw.get("limit", 0) <= 0:
            return []
        points, _ = self._visible(self.chunks_col, filters, **kw)
        return [
            ScoredChunk(
                chunk=Chunk.model_validate((p.payload or {})["chunk"]), score=float(p.score)
            )
            for p in points
            if p.score is not None
        ]

    def search_lexical(
        self, query: str, k: int, filters: SearchFilters | None = None
    ) -> list[ScoredChunk]:
        """BM25 through the sparse vectors (IDF applied by the engine)."""
        sq = self._sparse_query(query)
        if not sq.indices:
            return []
        hits = self._query(filters, query=sq, using="bm25", limit=k)
        return [h for h in hits if h.score > 0]

    def search_dense(
        self, vector: Vectors, k: int, filters: SearchFilters | None = None
    ) -> list[ScoredChunk]:
        """Cosine ranking."""
        q = [float(x) for x in vector.reshape(-1)]
        return self._query(filters, query=q, using="dense", limit=k)

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
            filters,
            prefetch=self._prefetch(query, vector, candidates),
            query=self._rrf(rrf_k),
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
        docs, current = self._visible(
            self.docs_col,
            filters,
            prefetch=self._prefetch(query, vector, candidates),
            query=self._rrf(rrf_k),
            limit=k,
            with_vectors=False,
        )
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
            # each document's chunks of its current version only
            query_filter=self._filter(
                filters, list(doc_score), versions={d: current.get(d) for d in doc_score}
            ),
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
            points, _ = self._visible(
                self.docs_col,
                filters,
                query=query_,
                using=using,
                limit=candidates,
                with_vectors=False,
            )
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


def _chunk_visible(payload: dict[str, Any], current: dict[str, str | None]) -> bool:
    """Whether a chunk point belongs to its document's current version (``current``: from
    `QdrantStore._current_versions`); a record without a version (written before versions were
    kept) holds every chunk of its document."""
    doc_id = str(payload.get("doc_id", ""))
    if doc_id not in current:
        return False
    version = current[doc_id]
    return version is None or version in (payload.get("versions") or ())


def _filter_payload(meta: dict[str, Any]) -> dict[str, Any]:
    """The payload fields that filters match: domain suffixes and the date as an ordinal."""
    d = chunk_date(meta)
    return {
        "domains": domain_suffixes(meta.get("domain")),
        "date_ord": date.fromisoformat(d).toordinal() if d else None,
    }
