"""The store-backed retriever: BM25, dense, or hybrid (the two fused).

Hybrid search fuses (``retrieve.fusion``) by a convex combination of the two lists' min-max
normalised scores (default) or by reciprocal rank fusion, at one of three granularities
(``retrieve.granularity``):

* ``passage`` (default): chunk-level fusion of the BM25 and dense chunk rankings, at most
  ``per_document`` chunks of any one document, so a question that needs two passages of one
  document gets both while the list still reaches other documents; optionally neighbouring hits
  of a document merged into one passage (``merge_neighbours``).
* ``document``: parent-document fusion (documents ranked by whole-document BM25 and document
  vectors, each shown by its best chunk before any document's second chunk).
* ``chunk``: chunk-level fusion with no cap.

``benchmarks/passage_retrieval.py`` measures the three side by side with bm25s.

Examples:
    >>> from affidavit.store.local import LocalStore
    >>> from affidavit.testing.embedder import FakeEmbedder
    >>> r = StoreRetriever(LocalStore(tmp_path), FakeEmbedder())  # doctest: +SKIP
    >>> r.search("eiffel tower height", k=3, mode="hybrid")  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, get_args

from affidavit.core.errors import ConfigError, RetrievalError
from affidavit.core.questions import question_parts
from affidavit.core.retrieval import SearchFilters
from affidavit.core.settings import Fusion, Granularity, RetrieveSettings
from affidavit.core.types import Chunk, Hit
from affidavit.retrieve.base import SEARCH_MODES, Embedder, Reranker, SearchMode
from affidavit.retrieve.fusion import convex, rrf
from affidavit.retrieve.rerank import IdentityReranker
from affidavit.store.base import DocumentHybridStore, HybridStore, ScoredChunk, Store

logger = logging.getLogger(__name__)


class StoreRetriever:
    """Searches a `Store` lexically, densely, or both fused.

    Args:
        store: where the chunks live.
        embedder: embeds queries for dense search (must be the store's embedder); None limits
            the retriever to BM25.
        rrf_k: reciprocal rank fusion constant (60 in the literature and by default).
        candidates: chunks taken from each ranking before fusion.
        weights: (bm25, dense) weights in the fusion (``convex``: divided by their sum).
        fusion: ``"convex"`` (default): each chunk scores the weighted sum of its min-max
            normalised BM25 and cosine among the ``candidates`` of each list (0 in a list that
            does not hold it), so a passage far ahead in one list keeps its lead; ``"rrf"``:
            reciprocal rank fusion, ranks only. ``document`` granularity always uses the
            store's RRF.
        reranker: applied after retrieval (identity by default).
        native_hybrid: let a store that fuses itself (Qdrant) do the hybrid ranking.
        granularity: ``"passage"`` (default) fuses the chunk rankings and keeps at most
            ``per_document`` chunks of a document; ``"document"`` fuses at the document level
            where the store supports it (parent-document hybrid: documents ranked by RRF of
            whole-document BM25 and document vectors, each represented by its best chunks;
            stores without document support use chunk fusion); ``"chunk"`` fuses the chunk
            rankings directly, uncapped.
        per_document: ``passage`` granularity: most chunks of one document in a result.
        merge_neighbours: ``passage`` granularity: two hits that are neighbouring chunks of one
            document (overlapping or separated only by whitespace) become one hit whose chunk is
            the document text spanning both (a chunk the store does not hold: its id is derived
            from that text, and ``metadata["merged_from"]`` names the stored chunks).
        document_prior: ``passage`` granularity: the parent-document ranking joins the fusion,
            shared by each document's chunks (stores with document support): with ``convex``
            each chunk adds its document's fused whole-document BM25 and document-vector
            cosine, with ``rrf`` ``1 / (rrf_k + rank of its document)``.
        question_parts: hybrid search of a question with several parts ("When was it built,
            and who designed it?") also searches each part on its own and fuses the rankings
            (each part's ranking in turn), so that each part's passage can reach the top; a
            one-part query is searched as before.
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
        granularity: Granularity = "passage",
        per_document: int = 3,
        merge_neighbours: bool = False,
        document_prior: bool = True,
        question_parts: bool = False,
        fusion: Fusion = "convex",
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
        if granularity not in get_args(Granularity):
            valid = ", ".join(get_args(Granularity))
            raise ConfigError(f"granularity must be one of {valid}; got {granularity!r}")
        if per_document < 1:
            raise ConfigError(f"per_document must be >= 1 (got {per_document})")
        if fusion not in get_args(Fusion):
            raise ConfigError(
                f"fusion must be one of {', '.join(get_args(Fusion))}; got {fusion!r}"
            )
        if len(weights) != 2 or any(not w >= 0 for w in weights) or sum(weights) <= 0:
            raise ConfigError(f"weights must be two numbers >= 0, not both 0 (got {weights})")
        self.fusion = fusion
        self.granularity = granularity
        self.per_document = per_document
        self.merge_neighbours = merge_neighbours
        self.document_prior = document_prior
        self.question_parts = question_parts
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
        reranker = None
        if settings.rerank:
            from affidavit.retrieve.rerank import CrossEncoderReranker

            reranker = CrossEncoderReranker(
                settings.rerank_model_path,
                depth=settings.rerank_depth,
                threads=settings.threads,
                fusion=settings.rerank_fusion,
                rrf_k=settings.rrf_k,
            )
        return cls(
            store,
            embedder,
            reranker=reranker,
            rrf_k=settings.rrf_k,
            candidates=settings.candidates,
            granularity=settings.granularity,
            per_document=settings.per_document,
            merge_neighbours=settings.merge_neighbours,
            document_prior=settings.document_prior,
            question_parts=settings.question_parts,
            fusion=settings.fusion,
        )

    def config(self) -> dict[str, Any]:
        """The effective configuration."""
        return {
            "rrf_k": self.rrf_k,
            "candidates": self.candidates,
            "weights": list(self.weights),
            "fusion": self.fusion,
            "reranker": self.reranker.name,
            "embedder": self.embedder.name if self.embedder else None,
            "granularity": self.granularity,
            "per_document": self.per_document,
            "merge_neighbours": self.merge_neighbours,
            "document_prior": self.document_prior,
            "question_parts": self.question_parts,
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
        # a reranker reads the retriever's best `depth` hits, however few the caller wants
        want = max(k, int(getattr(self.reranker, "depth", 0) or 0))
        n = max(want, self.candidates)
        if mode == "bm25":
            hits = self._hits(self.store.search_lexical(query, want, filters), "bm25", "bm25")
        elif mode == "dense":
            hits = self._hits(self.store.search_dense(vector, want, filters), "dense", "dense")
        elif self.question_parts and (parts := question_parts(query)):
            hits = self._by_parts(query, vector, parts, want, n, filters)
        else:
            hits = self._hybrid(query, vector, want, n, filters)
        return self.reranker.rerank(query, hits, k)

    def _by_parts(
        self,
        query: str,
        vector: Any,
        parts: list[str],
        k: int,
        n: int,
        filters: SearchFilters | None,
    ) -> list[Hit]:
        """Each part's hybrid ranking in turn (the first of each part, then the second of
        each...), then the whole question's, under the passage cap: every part's best passage
        reaches the top. An RRF of the whole question's and the parts' rankings did worse on
        the passage benchmark: passages of the part the whole question leans to appear in two
        of the rankings and push the other part's out."""
        vectors = self._embed(parts)
        rankings = [self._hybrid(p, vectors[i], n, n, filters) for i, p in enumerate(parts)]
        whole = self._hybrid(query, vector, n, n, filters)
        seen: set[str] = set()
        order: list[Hit] = []
        for depth in range(max(len(r) for r in rankings)):
            for ranking in rankings:
                if depth < len(ranking) and ranking[depth].chunk.id not in seen:
                    seen.add(ranking[depth].chunk.id)
                    order.append(ranking[depth])
        order += [h for h in whole if h.chunk.id not in seen]
        fused = [
            h.model_copy(
                update={
                    "score": 1.0 / (self.rrf_k + i),
                    "mode": "hybrid",
                    "scores": {**h.scores, "parts_rank": float(i)},
                }
            )
            for i, h in enumerate(order, start=1)
        ]
        return self._passages(fused, k) if self.granularity == "passage" else fused[:k]

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
        if self.granularity != "passage":
            return self._chunk_fusion(query, vector, k, n, filters)
        # every fused candidate, so that the cap still leaves k hits where the store has them
        ranked = self._chunk_fusion(query, vector, n, n, filters)
        if self.document_prior and isinstance(self.store, DocumentHybridStore):
            ranked = self._with_document_prior(self.store, query, vector, n, filters, ranked)
        return self._passages(ranked, k)

    def _with_document_prior(
        self,
        store: DocumentHybridStore,
        query: str,
        vector: Any,
        n: int,
        filters: SearchFilters | None,
        ranked: list[Hit],
    ) -> list[Hit]:
        """The parent-document ranking joins the chunk fusion, shared by a document's chunks.

        ``convex``: each chunk's score plus its document's convex fusion of whole-document BM25
        and document-vector cosine (the documents' own lists, same weights), in [0, 1] like the
        chunk's. ``rrf``: each chunk's RRF score plus ``1 / (rrf_k + rank of its document)``.
        """
        prior: dict[str | None, float] = {}  # doc id -> what its chunks add
        doc_rank: dict[str | None, int] = {}
        if self.fusion == "convex":
            found = store.document_scores(query, vector, n, filters)
            prior.update(convex([found.lexical, found.dense], self.weights))
        else:
            docs = store.search_documents(query, vector, n, filters, candidates=n, rrf_k=self.rrf_k)
            for s in docs:
                doc_rank.setdefault(s.chunk.doc_id, len(doc_rank) + 1)
            prior = {d: 1.0 / (self.rrf_k + r) for d, r in doc_rank.items()}
        rescored = []
        for h in ranked:
            add = prior.get(h.chunk.doc_id, 0.0)
            rank = (
                {"doc_rank": float(doc_rank.get(h.chunk.doc_id, 0))} if self.fusion == "rrf" else {}
            )
            scores = {**h.scores, **rank, "doc_prior": add}
            rescored.append(h.model_copy(update={"score": h.score + add, "scores": scores}))
        order = sorted(range(len(rescored)), key=lambda i: (-rescored[i].score, i))
        return [rescored[i] for i in order]

    def _chunk_fusion(
        self, query: str, vector: Any, k: int, n: int, filters: SearchFilters | None
    ) -> list[Hit]:
        """The top ``k`` of the fusion of the chunk-level BM25 and dense rankings (each ``n``
        long)."""
        if (
            self.fusion == "rrf"
            and self.native_hybrid
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
        lists: list[dict[str, float]] = []  # each list's first score of a chunk
        for name, ranking in (("bm25", lexical), ("dense", dense)):
            scored: dict[str, float] = {}
            for rank, s in enumerate(ranking, start=1):
                chunks[s.chunk.id] = s.chunk
                per.setdefault(s.chunk.id, {})[name] = s.score
                per[s.chunk.id][f"{name}_rank"] = float(rank)
                scored.setdefault(s.chunk.id, s.score)
            lists.append(scored)
        if self.fusion == "convex":
            order = convex(lists, self.weights)
        else:
            rankings = [[s.chunk.id for s in lexical], [s.chunk.id for s in dense]]
            order = rrf(rankings, k=self.rrf_k, weights=self.weights)
        return [
            Hit(
                chunk=chunks[cid],
                score=score,
                rank=i,
                mode="hybrid",
                scores={**per[cid], self.fusion: score},
            )
            for i, (cid, score) in enumerate(order[:k], start=1)
        ]

    def _passages(self, ranked: list[Hit], k: int) -> list[Hit]:
        """At most ``per_document`` chunks of a document, best first; neighbours merged if set.

        A merged passage takes the rank of its better chunk and counts once towards ``k`` and
        the cap, so merging frees a slot for the next candidate.
        """
        groups: list[list[Hit]] = []
        per_doc: dict[str | None, int] = {}
        for hit in ranked:
            if len(groups) >= k and not self.merge_neighbours:
                break
            doc = hit.chunk.doc_id
            if self.merge_neighbours and doc is not None:
                home = next(
                    (g for g in groups if g[0].chunk.doc_id == doc and _touches(g, hit)), None
                )
                if home is not None:
                    home.append(hit)
                    continue
            if len(groups) >= k:
                continue  # only a neighbour of a kept passage can still join
            if doc is not None and per_doc.get(doc, 0) >= self.per_document:
                continue
            per_doc[doc] = per_doc.get(doc, 0) + 1
            groups.append([hit])
        out = [self._merge(g) if len(g) > 1 else g[0] for g in groups]
        return [h.model_copy(update={"rank": i}) for i, h in enumerate(out, start=1)]

    def _merge(self, group: list[Hit]) -> Hit:
        """One hit whose chunk is the document text spanning the group's chunks."""
        best = group[0]
        doc_id = best.chunk.doc_id
        document = self.store.get_document(doc_id) if doc_id is not None else None
        spans = sorted((h.chunk.start or 0, h.chunk.end or 0) for h in group)
        start, end = spans[0][0], max(e for _, e in spans)
        if document is None or end > len(document.text):
            return best  # the document changed under us: the best chunk alone, as stored
        ordered = sorted(group, key=lambda h: h.chunk.start or 0)
        chunk = Chunk(
            text=document.text[start:end],
            url=best.chunk.url,
            metadata={**best.chunk.metadata, "merged_from": [h.chunk.id for h in ordered]},
            doc_id=doc_id,
            title=best.chunk.title,
            start=start,
            end=end,
        )
        return best.model_copy(
            update={"chunk": chunk, "scores": {**best.scores, "merged": float(len(group))}}
        )


def _touches(group: list[Hit], hit: Hit) -> bool:
    """Whether ``hit`` overlaps or directly follows/precedes a chunk of ``group`` (offsets known).

    Chunks of one document separated by more than a line break are not neighbours; a gap made of
    whitespace is at most a few characters in the chunker's output.
    """
    a, b = hit.chunk.start, hit.chunk.end
    if a is None or b is None:
        return False
    for g in group:
        s, e = g.chunk.start, g.chunk.end
        if s is None or e is None:
            continue
        if a <= e + _GAP and s <= b + _GAP:
            return True
    return False


# characters of whitespace between two consecutive chunks that still make them neighbours
_GAP = 4
