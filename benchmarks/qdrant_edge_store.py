"""The Qdrant engine in-process, for the scale benchmark only: Qdrant Edge (`qdrant-edge-py`).

No Qdrant server binary installs from PyPI, Debian or npm on the benchmark machine, and
qdrant-client's local mode is a pure-Python re-implementation that scans every point, so it says
nothing about the engine's costs. Qdrant Edge runs Qdrant's own segment, HNSW, sparse-index and
query code in this process (one shard). This adapter stores and queries exactly what
:class:`affidavit.store.qdrant.QdrantStore` does on a server - the same two collections (here two
shards), the same BM25 sparse weights and term ids, the same prefetch + RRF queries - so its costs
stand for the engine's. It is not part of the library (it would be a third backend to maintain).

    pip install qdrant-edge-py==0.9.0
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as qe

from affidavit.core.types import Chunk
from affidavit.retrieve.text import Analyzer
from affidavit.store.base import DocRecord, DocumentBatchItem, ScoredChunk
from affidavit.store.qdrant import _pid, term_id

BATCH = 512


class EdgeStore:
    """Chunks and documents in two Qdrant Edge shards, searched with the Query API."""

    def __init__(self, path: Path, dim: int = 384, k1: float = 1.2, b: float = 0.75) -> None:
        self.path = Path(path)
        shutil.rmtree(self.path, ignore_errors=True)
        self.path.mkdir(parents=True)
        self.analyzer = Analyzer()
        self.k1, self.b = k1, b
        self.avgdl: tuple[float, float] | None = None
        self._embedder: str | None = None
        self.shards = {name: self._create(self.path / name, dim) for name in ("chunks", "docs")}

    @staticmethod
    def _create(path: Path, dim: int) -> Any:
        path.mkdir()
        cfg = qe.EdgeConfig(
            vectors={"dense": qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine)},
            sparse_vectors={"bm25": qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
            hnsw_config=qe.HnswIndexConfig(m=16, ef_construct=100, full_scan_threshold=10_000),
        )
        shard = qe.EdgeShard.create(str(path), cfg)
        shard.update(qe.UpdateOperation.create_field_index("doc_id", qe.PayloadSchemaType.Keyword))
        return shard

    # -- the parts of the Store protocol the ingest pipeline uses -----------------------------

    def records(self) -> dict[str, DocRecord]:
        return {}

    def embedder(self) -> str | None:
        return self._embedder

    def count(self) -> tuple[int, int]:
        d = self.shards["docs"].count(qe.CountRequest(exact=True))
        c = self.shards["chunks"].count(qe.CountRequest(exact=True))
        return int(d), int(c)

    def _sparse(self, terms: list[str], avgdl: float) -> Any:
        tf = Counter(term_id(t) for t in terms)
        norm = self.k1 * (1 - self.b + self.b * len(terms) / avgdl)
        idx = sorted(tf)
        return qe.SparseVector(
            indices=idx, values=[tf[i] * (self.k1 + 1) / (tf[i] + norm) for i in idx]
        )

    def upsert(self, items: Sequence[DocumentBatchItem], *, embedder: str) -> None:
        self._embedder = embedder
        c_terms = [
            [self.analyzer.tokens(f"{c.title}\n{c.text}" if c.title else c.text) for c in it.chunks]
            for it in items
        ]
        d_terms = [
            self.analyzer.tokens(
                f"{it.document.title}\n{it.document.text}"
                if it.document.title
                else it.document.text
            )
            for it in items
        ]
        if self.avgdl is None:
            lengths = [len(t) for ts in c_terms for t in ts]
            self.avgdl = (sum(lengths) / len(lengths), sum(map(len, d_terms)) / len(d_terms))
        c_avg, d_avg = self.avgdl
        chunks, docs = [], []
        for it, cts, dts in zip(items, c_terms, d_terms, strict=True):
            for c, v, terms in zip(it.chunks, it.vectors, cts, strict=True):
                vec = {"dense": v.tolist(), "bm25": self._sparse(terms, c_avg)}
                payload = {"chunk": c.model_dump(mode="json"), "doc_id": it.document.id}
                chunks.append(qe.Point(_pid(c.id), vec, payload))
            mean = np.asarray(it.vectors, dtype=np.float32).sum(axis=0)
            mean /= max(float(np.linalg.norm(mean)), 1e-12)
            vec = {"dense": mean.tolist(), "bm25": self._sparse(dts, d_avg)}
            payload = {"doc_id": it.document.id, "chunks": len(it.chunks)}
            docs.append(qe.Point(_pid("doc:" + it.document.id), vec, payload))
        for name, points in (("chunks", chunks), ("docs", docs)):
            for i in range(0, len(points), BATCH):
                self.shards[name].update(qe.UpdateOperation.upsert_points(points[i : i + BATCH]))

    def refresh(self) -> None:
        """Build the HNSW and sparse indexes now (a server's optimiser does it in the
        background), so ingest time includes them."""
        for shard in self.shards.values():
            shard.optimize()

    def close(self) -> None:
        for shard in self.shards.values():
            shard.flush()
            shard.close()

    # -- search ---------------------------------------------------------------------------------

    def _prefetch(self, query: str, vector: Any, limit: int) -> list[Any]:
        dense = [float(x) for x in np.asarray(vector).reshape(-1)]
        out = [qe.Prefetch(limit=limit, query=qe.Query.Nearest(dense, using="dense"))]
        idx = sorted({term_id(t) for t in self.analyzer.query_terms(query)})
        if idx:
            sparse = qe.SparseVector(indices=idx, values=[1.0] * len(idx))
            out.insert(0, qe.Prefetch(limit=limit, query=qe.Query.Nearest(sparse, using="bm25")))
        return out

    @staticmethod
    def _chunks(points: list[Any]) -> list[ScoredChunk]:
        return [
            ScoredChunk(chunk=Chunk.model_validate(p.payload["chunk"]), score=float(p.score))
            for p in points
        ]

    def search_lexical(self, query: str, k: int) -> list[ScoredChunk]:
        idx = sorted({term_id(t) for t in self.analyzer.query_terms(query)})
        if not idx:
            return []
        q = qe.Query.Nearest(qe.SparseVector(indices=idx, values=[1.0] * len(idx)), using="bm25")
        got = self.shards["chunks"].query(qe.QueryRequest(limit=k, query=q, with_payload=True))
        return self._chunks(got)

    def search_dense(self, vector: Any, k: int) -> list[ScoredChunk]:
        q = qe.Query.Nearest([float(x) for x in np.asarray(vector).reshape(-1)], using="dense")
        got = self.shards["chunks"].query(qe.QueryRequest(limit=k, query=q, with_payload=True))
        return self._chunks(got)

    def search_documents(
        self, query: str, vector: Any, k: int, candidates: int = 50, rrf_k: int = 60
    ) -> list[ScoredChunk]:
        """Parent-document hybrid, as QdrantStore.search_documents does it on a server."""
        fusion = qe.Fusion.Rrf(k=rrf_k + 1)
        docs = self.shards["docs"].query(
            qe.QueryRequest(
                limit=k,
                query=fusion,
                prefetches=self._prefetch(query, vector, candidates),
                with_payload=True,
            )
        )
        if not docs:
            return []
        score = {p.payload["doc_id"]: float(p.score) for p in docs}
        n = max(sum(int(p.payload["chunks"]) for p in docs), candidates)
        flt = qe.Filter(must=[qe.FieldCondition("doc_id", match=qe.MatchAny(list(score)))])
        hits = self.shards["chunks"].query(
            qe.QueryRequest(
                limit=n,
                query=fusion,
                prefetches=self._prefetch(query, vector, n),
                filter=flt,
                with_payload=True,
            )
        )
        # group by document in fused order (Edge has no grouped query; a server does it)
        nth: dict[str, int] = {}
        picked = []
        for p in hits:
            d = p.payload["doc_id"]
            r = nth[d] = nth.get(d, -1) + 1
            if r < k:
                picked.append((score[d] * 0.5**r, r, d, p))
        picked.sort(key=lambda t: (-t[0], t[1], t[2]))
        return [
            ScoredChunk(chunk=Chunk.model_validate(p.payload["chunk"]), score=s)
            for s, _, _, p in picked[:k]
        ]
