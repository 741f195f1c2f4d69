"""The store-backed retriever: BM25, dense, or hybrid by reciprocal rank fusion.

Example:
    >>> from affidavit.store.local import LocalStore
    >>> from affidavit.testing.embedder import FakeEmbedder
    >>> r = StoreRetriever(LocalStore(tmp_path), FakeEmbedder())  # doctest: +SKIP
    >>> r.search("eiffel tower height", k=3, mode="hybrid")  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal

from affidavit.core.errors import ConfigError, RetrievalError
from affidavit.core.retrieval import SearchFilters
from affidavit.core.settings import RetrieveSettings
from affidavit.core.types import Chunk, Hit
from affidavit.retrieve.base import SEARCH_MODES, Embedder, Reranker, SearchMode
from affidavit.retrieve.fusion import rrf
from affidavit.retrieve.rerank import IdentityReranker
from affidavit.store.base import DocumentHybridStore, HybridStore, ScoredChunk, Store

logger = logging.getLogger(__name__)


class StoreRetriever:
    """Searches a :class:`Store` lexically, densely, or both fused.

    Args:
        store: where the chunks live.
        embedder: embeds queries for dense search (must be the store's embedder); None limits
            the retriever to BM25.
        rrf_k: reciprocal rank fusion constant (60 in the literature and by default).
        candidates: chunks taken from each ranking before fusion.
        weights: (bm25, dense) weights in the fusion.
        reranker: applied after retrieval (identity by default).
        native_hybrid: let a store that fuses itself (Qdrant) do the hybrid ranking.
        granularity: ``"document"`` (default) fuses at the document level where the store
            supports it (parent-document hybrid: documents ranked by RRF of whole-document BM25
            and document vectors, each represented by its best chunks); ``"chunk"`` fuses the
            chunk rankings directly. Stores without document support use chunk fusion.
    """

    def __init__(
        self,
        store: Store,
        embedder: Embedder | None = None,
        *,
        rrf_k: int = 60,
        candidates: int = 50,
        weights: tuple[float, float] = (1.0, 1.0),
        reranker: Reranker | None = None,
        native_hybrid: bool = True,
        granularity: Literal["document", "chunk"] = "document",
    ) -> None:
        if rrf_k < 1 or candidates < 1:
            raise ConfigError(f"rrf_k and candidates must be >= 1 (got {rrf_k}, {candidates})")
        self.store = store
        self.embedder = embedder
        self.rrf_k = rrf_k
        self.candidates = candidates
        self.weights = weights
        self.reranker = reranker or IdentityReranker()
        self.native_hybrid = native_hybrid
        if granularity not in ("document", "chunk"):
            raise ConfigError(f"granularity must be 'document' or 'chunk', got {granularity!r}")
        self.granularity = granularity
        stored = store.embedder()
        if embedder is not None and stored is not None and stored != embedder.name:
            raise RetrievalError(
                f"store vectors come from {stored!r} but the query embedder is {embedder.name!r}"
            )

    @classmethod
    def from_settings(
        cls, store: Store, embedder: Embedder | None, settings: RetrieveSettings
    ) -> StoreRetriever:
        """Build from the ``retrieve`` settings section."""
        return cls(store, embedder, rrf_k=settings.rrf_k, candidates=settings.candidates)

    def config(self) -> dict[str, Any]:
        """The effective configuration."""
        return {
            "rrf_k": self.rrf_k,
            "candidates": self.candidates,
            "weights": list(self.weights),
            "reranker": self.reranker.name,
            "embedder": self.embedder.name if self.embedder else None,
            "granularity": self.granularity,
        }

    def search(
        self,
        query: str,
        k: int = 10,
        mode: SearchMode = "hybrid",
        filters: SearchFilters | None = None,
    ) -> list[Hit]:
        """Rank stored chunks for ``query``.

        Raises:
            ConfigError: unknown mode, or a dense mode without an embedder.
            RetrievalError: the store or embedder failed.
        """
        if mode not in SEARCH_MODES:
            raise ConfigError(f"unknown search mode {mode!r}; valid: {', '.join(SEARCH_MODES)}")
        if k < 1:
            return []
        if mode != "bm25" and self.embedder is None:
            raise ConfigError(f"mode {mode!r} needs an embedder")
        if not query.strip():
            return []
        vector = self._embed([query])[0] if mode != "bm25" else None
        return self._search(query, vector, k, mode, filters)

    def search_many(
        self,
        queries: Sequence[str],
        k: int = 10,
        mode: SearchMode = "hybrid",
        filters: SearchFilters | None = None,
    ) -> list[list[Hit]]:
        """Search several queries, embedding them in one batch (for evaluation runs)."""
        if mode not in SEARCH_MODES:
            raise ConfigError(f"unknown search mode {mode!r}; valid: {', '.join(SEARCH_MODES)}")
        vectors = self._embed(list(queries)) if mode != "bm25" and queries else None
        return [
            self._search(q, None if vectors is None else vectors[i], k, mode, filters)
            if q.strip() and k >= 1
            else []
            for i, q in enumerate(queries)
        ]

    def _search(
        self, query: str, vector: Any, k: int, mode: SearchMode, filters: SearchFilters | None
    ) -> list[Hit]:
        n = max(k, self.candidates)
        if mode == "bm25":
            hits = self._hits(self.store.search_lexical(query, k, filters), "bm25", "bm25")
        elif mode == "dense":
            hits = self._hits(self.store.search_dense(vector, k, filters), "dense", "dense")
        else:
            hits = self._hybrid(query, vector, k, n, filters)
        return self.reranker.rerank(query, hits, k)

    def _embed(self, queries: list[str]) -> Any:
        if self.embedder is None:
            raise ConfigError("dense search needs an embedder")
        return self.embedder.embed(queries)

    @staticmethod
    def _hits(scored: list[ScoredChunk], mode: SearchMode, key: str) -> list[Hit]:
        return [
            Hit(chunk=s.chunk, score=s.score, rank=i, mode=mode, scores={**s.scores, key: s.score})
            for i, s in enumerate(scored, start=1)
        ]

    def _hybrid(
        self, query: str, vector: Any, k: int, n: int, filters: SearchFilters | None
    ) -> list[Hit]:
        if (
            self.granularity == "document"
            and self.weights == (1.0, 1.0)
            and isinstance(self.store, DocumentHybridStore)
        ):
            fused = self.store.search_documents(
                query, vector, k, filters, candidates=n, rrf_k=self.rrf_k
            )
            return self._hits(fused, "hybrid", "hybrid")
        if (
            self.native_hybrid
            and self.weights == (1.0, 1.0)
            and isinstance(self.store, HybridStore)
        ):
            fused = self.store.search_hybrid(
                query, vector, k, filters, candidates=n, rrf_k=self.rrf_k
            )
            return self._hits(fused, "hybrid", "rrf")
        lexical = self.store.search_lexical(query, n, filters)
        dense = self.store.search_dense(vector, n, filters)
        chunks: dict[str, Chunk] = {}
        per: dict[str, dict[str, float]] = {}
        for name, ranking in (("bm25", lexical), ("dense", dense)):
            for rank, s in enumerate(ranking, start=1):
                chunks[s.chunk.id] = s.chunk
                per.setdefault(s.chunk.id, {})[name] = s.score
                per[s.chunk.id][f"{name}_rank"] = float(rank)
        fused_ids = rrf(
            [[s.chunk.id for s in lexical], [s.chunk.id for s in dense]],
            k=self.rrf_k,
            weights=self.weights,
        )
        return [
            Hit(
                chunk=chunks[cid],
                score=score,
                rank=i,
                mode="hybrid",
                scores={**per[cid], "rrf": score},
            )
            for i, (cid, score) in enumerate(fused_ids[:k], start=1)
        ]
