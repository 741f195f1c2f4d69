"""RRF against a worked example; the retriever's modes, filters and guards."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from affidavit.core.errors import ConfigError, RetrievalError
from affidavit.core.retrieval import SearchFilters
from affidavit.retrieve.fusion import rrf
from affidavit.retrieve.retriever import StoreRetriever
from affidavit.retrieve.text import Analyzer
from affidavit.store.local import LocalStore
from affidavit.testing.embedder import FakeEmbedder
from affidavit.testing.store_contract import StoreContract


def test_rrf_worked_example() -> None:
    # BM25 ranks A, B, C; dense ranks B, C, D. With k = 60:
    #   A: 1/61                 = 0.016393
    #   B: 1/62 + 1/61          = 0.032522
    #   C: 1/63 + 1/62          = 0.032002
    #   D: 1/63                 = 0.015873
    fused = rrf([["A", "B", "C"], ["B", "C", "D"]], k=60)
    assert [d for d, _ in fused] == ["B", "C", "A", "D"]
    expected = {"A": 0.016393, "B": 0.032522, "C": 0.032002, "D": 0.015873}
    for d, s in fused:
        assert s == pytest.approx(expected[d], abs=1e-6)


def test_rrf_weights_and_ties() -> None:
    # equal scores: the item with the better single rank wins, then first appearance
    fused = rrf([["A", "B"], ["B", "A"]], k=1)
    assert [d for d, _ in fused] == ["A", "B"]
    fused = rrf([["A"], ["B"]], k=60, weights=[1.0, 2.0])
    assert fused[0][0] == "B"
    with pytest.raises(ValueError):
        rrf([["A"]], k=0)


def test_analyzer() -> None:
    assert Analyzer().tokens("The Studies were RUNNING, quickly!") == ["studi", "run", "quick"]
    assert Analyzer(stem=False, stopwords=False).tokens("The cats") == ["the", "cats"]


@pytest.fixture
def retriever(tmp_path: Path) -> StoreRetriever:
    store = LocalStore(tmp_path / "s")
    c = StoreContract()
    store.upsert(c.items(), embedder=c.embedder.name)
    return StoreRetriever(store, c.embedder)


def test_modes_rank_and_label(retriever: StoreRetriever) -> None:
    for mode in ("bm25", "dense", "hybrid"):
        hits = retriever.search("Marie Curie polonium", k=2, mode=mode)  # type: ignore[arg-type]
        assert hits[0].chunk.doc_id == "curie"
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
        assert all(h.mode == mode for h in hits)
    top = retriever.search("Marie Curie polonium", k=1, mode="hybrid")[0]
    assert top.scores["bm25_rank"] == 1 and top.scores["dense_rank"] == 1
    assert top.score == pytest.approx(2 / 61)


def test_hybrid_is_rrf_of_the_two_rankings(retriever: StoreRetriever) -> None:
    q = "Eiffel Tower Moon landing"
    lex = [h.chunk.id for h in retriever.search(q, k=50, mode="bm25")]
    den = [h.chunk.id for h in retriever.search(q, k=50, mode="dense")]
    expected = [cid for cid, _ in rrf([lex, den], k=60)][:5]
    assert [h.chunk.id for h in retriever.search(q, k=5, mode="hybrid")] == expected


def test_filters_pass_through(retriever: StoreRetriever) -> None:
    f = SearchFilters(domains=("travel.example.org",))
    hits = retriever.search("Curie Eiffel Moon", k=10, mode="hybrid", filters=f)
    assert {h.chunk.doc_id for h in hits} == {"eiffel"}
    f2 = SearchFilters(date_from=date(2030, 1, 1))
    assert retriever.search("Curie", k=10, mode="hybrid", filters=f2) == []


def test_guards(retriever: StoreRetriever, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="valid: bm25, dense, hybrid"):
        retriever.search("x", mode="fuzzy")  # type: ignore[arg-type]
    assert retriever.search("   ", k=3) == []
    with pytest.raises(ConfigError):
        StoreRetriever(retriever.store).search("x", mode="dense")
    assert StoreRetriever(retriever.store).search("polonium", mode="bm25")
    with pytest.raises(RetrievalError, match="query embedder"):
        StoreRetriever(retriever.store, FakeEmbedder(dim=16))


def test_search_many_matches_search(retriever: StoreRetriever) -> None:
    qs = ["Curie radium", "Apollo Moon", ""]
    many = retriever.search_many(qs, k=3, mode="hybrid")
    assert many[2] == []
    for q, hits in zip(qs[:2], many[:2], strict=True):
        assert [h.chunk.id for h in hits] == [h.chunk.id for h in retriever.search(q, k=3)]


def test_filters_validate() -> None:
    with pytest.raises(ValueError):
        SearchFilters(date_from=date(2022, 1, 1), date_to=date(2021, 1, 1))
