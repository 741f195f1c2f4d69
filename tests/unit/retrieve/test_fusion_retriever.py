"""RRF against a worked example; the retriever's modes, filters and guards."""

from __future__ import annotations

import itertools
from datetime import date
from pathlib import Path

import pytest

from affidavit.core.errors import ConfigError, RetrievalError
from affidavit.core.retrieval import SearchFilters
from affidavit.core.types import Chunk
from affidavit.retrieve.fusion import convex, rrf
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
    return StoreRetriever(store, c.embedder, granularity="chunk")


def test_modes_rank_and_label(retriever: StoreRetriever) -> None:
    for mode in ("bm25", "dense", "hybrid"):
        hits = retriever.search("Marie Curie polonium", k=2, mode=mode)  # type: ignore[arg-type]
        assert hits[0].chunk.doc_id == "curie"
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
        assert all(h.mode == mode for h in hits)
    top = retriever.search("Marie Curie polonium", k=1, mode="hybrid")[0]
    assert top.scores["bm25_rank"] == 1 and top.scores["dense_rank"] == 1
    # convex (default): the best of both lists scores 0.5 * 1 + 0.5 * 1
    assert top.score == pytest.approx(1.0) == top.scores["convex"]
    rrf_top = StoreRetriever(retriever.store, retriever.embedder, granularity="chunk", fusion="rrf")
    top = rrf_top.search("Marie Curie polonium", k=1, mode="hybrid")[0]
    assert top.score == pytest.approx(2 / 61) == top.scores["rrf"]


def test_hybrid_is_rrf_of_the_two_rankings(retriever: StoreRetriever) -> None:
    q = "Eiffel Tower Moon landing"
    lex = [h.chunk.id for h in retriever.search(q, k=50, mode="bm25")]
    den = [h.chunk.id for h in retriever.search(q, k=50, mode="dense")]
    expected = [cid for cid, _ in rrf([lex, den], k=60)][:5]
    r = StoreRetriever(retriever.store, retriever.embedder, granularity="chunk", fusion="rrf")
    assert [h.chunk.id for h in r.search(q, k=5, mode="hybrid")] == expected


def test_hybrid_is_the_convex_fusion_of_the_two_lists(retriever: StoreRetriever) -> None:
    q = "Eiffel Tower Moon landing"
    lex = {h.chunk.id: h.score for h in retriever.search(q, k=50, mode="bm25")}
    den = {h.chunk.id: h.score for h in retriever.search(q, k=50, mode="dense")}
    expected = convex([lex, den])[:5]
    hits = retriever.search(q, k=5, mode="hybrid")
    assert [h.chunk.id for h in hits] == [cid for cid, _ in expected]
    assert [h.score for h in hits] == pytest.approx([s for _, s in expected])
    # weights lean the fusion: all on BM25 is BM25's order
    bm25_only = StoreRetriever(
        retriever.store, retriever.embedder, granularity="chunk", weights=(1.0, 0.0)
    )
    assert [h.chunk.id for h in bm25_only.search(q, k=3)] == list(lex)[:3]


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


def test_document_hybrid_ranks_documents_then_chunks(tmp_path: Path) -> None:
    from affidavit.core.types import Document
    from affidavit.ingest.chunking import SentenceChunker
    from affidavit.store.base import DocumentBatchItem

    emb = FakeEmbedder()
    docs = [
        Document(
            id="long",
            source="l",
            text=(
                "Radium glows in the dark. Radium was found in 1898. "
                "Radium is radioactive. Polonium was found first."
            ),
        ),
        Document(id="short", source="s", text="Radium paint was used on watch dials."),
        Document(id="other", source="o", text="The Eiffel Tower is in Paris."),
    ]
    items = []
    for d in docs:
        chunks = SentenceChunker(chunk_size=30, overlap=0).chunk(d)
        items.append(
            DocumentBatchItem(
                document=d,
                chunks=tuple(chunks),
                vectors=emb.embed([c.text for c in chunks]),
                origin=d.source,
            )
        )
    store = LocalStore(tmp_path / "s")
    store.upsert(items, embedder=emb.name)
    r = StoreRetriever(store, emb, granularity="document")
    hits = r.search("radium", k=3, mode="hybrid")
    # one chunk per document first (diversity), then the leader's second chunk
    assert [h.chunk.doc_id for h in hits][:2] in (["long", "short"], ["short", "long"])
    assert hits[2].chunk.doc_id in {"long", "short"}
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))
    assert hits[2].score == pytest.approx(hits[0].score / 2) or hits[2].score < hits[1].score
    top = hits[0].scores
    assert {"doc_rrf", "doc_bm25", "doc_dense", "chunk_rrf", "bm25", "dense"} <= set(top)
    # a document ranked first by both document rankings: 1/61 + 1/61
    if top["doc_rrf"] > 0.0327:
        assert top["doc_rrf"] == pytest.approx(2 / 61)
    # document-level candidates respect filters
    only = SearchFilters(doc_ids=("other",))
    assert {h.chunk.doc_id for h in r.search("radium", k=5, mode="hybrid", filters=only)} == {
        "other"
    }
    # the chunk-level fusion is still available
    chunk_level = StoreRetriever(store, emb, granularity="chunk", fusion="rrf")
    assert "rrf" in chunk_level.search("radium", k=3)[0].scores
    chunk_level = StoreRetriever(store, emb, granularity="chunk")
    assert "convex" in chunk_level.search("radium", k=3)[0].scores
    with pytest.raises(ConfigError):
        StoreRetriever(store, emb, granularity="page")  # type: ignore[arg-type]


def _passage_store(tmp_path: Path, emb: FakeEmbedder) -> LocalStore:
    """One long document about radium in four chunks, and two short ones."""
    from affidavit.core.types import Document
    from affidavit.ingest.chunking import SentenceChunker
    from affidavit.store.base import DocumentBatchItem

    docs = [
        Document(
            id="long",
            source="l",
            text=(
                "Radium glows in the dark. Radium was found in 1898. "
                "Radium is radioactive. Radium paint glows."
            ),
        ),
        Document(id="short", source="s", text="Radium paint was used on watch dials."),
        Document(id="other", source="o", text="Radium is rare. The Eiffel Tower is in Paris."),
    ]
    items = []
    for d in docs:
        chunks = SentenceChunker(chunk_size=26, overlap=0).chunk(d)
        items.append(
            DocumentBatchItem(
                document=d,
                chunks=tuple(chunks),
                vectors=emb.embed([c.text for c in chunks]),
                origin=d.source,
            )
        )
    store = LocalStore(tmp_path / "s")
    store.upsert(items, embedder=emb.name)
    return store


def test_passage_granularity_is_chunk_fusion_capped_per_document(tmp_path: Path) -> None:
    emb = FakeEmbedder()
    store = _passage_store(tmp_path, emb)
    q = "radium glows radioactive 1898"
    fused = StoreRetriever(store, emb, granularity="chunk").search(q, k=50)
    for cap in (1, 2, 3):
        hits = StoreRetriever(store, emb, per_document=cap, document_prior=False).search(q, k=4)
        # the chunk fusion's order, skipping a document's chunks past the cap
        seen: dict[str | None, int] = {}
        expected = []
        for h in fused:
            if seen.get(h.chunk.doc_id, 0) < cap:
                seen[h.chunk.doc_id] = seen.get(h.chunk.doc_id, 0) + 1
                expected.append(h.chunk.id)
        assert [h.chunk.id for h in hits] == expected[:4]
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
        assert max(seen.values()) <= cap
    assert StoreRetriever(store, emb).config()["granularity"] == "passage"
    with pytest.raises(ConfigError):
        StoreRetriever(store, emb, per_document=0)


def test_passage_merges_neighbouring_hits_into_one_passage(tmp_path: Path) -> None:
    emb = FakeEmbedder()
    store = _passage_store(tmp_path, emb)
    doc = store.get_document("long")
    assert doc is not None
    q = "radium glows radioactive 1898"
    plain = StoreRetriever(store, emb, per_document=4).search(q, k=3)
    merged = StoreRetriever(store, emb, per_document=4, merge_neighbours=True).search(q, k=3)
    long_plain = [h for h in plain if h.chunk.doc_id == "long"]
    assert len(long_plain) >= 2  # neighbouring chunks of "long" are hits
    m = next(h for h in merged if "merged_from" in h.chunk.metadata)
    # the merged passage is the document's own text spanning its chunks, at its best chunk's rank
    assert m.chunk.text == doc.text[m.chunk.start : m.chunk.end]
    assert len(m.chunk.metadata["merged_from"]) >= 2
    assert m.scores["merged"] == len(m.chunk.metadata["merged_from"])
    stored = {c.id: c for c in store.get_chunks(m.chunk.metadata["merged_from"])}
    assert all(c.text in m.chunk.text for c in stored.values())
    assert m.chunk.id not in stored
    # a merged passage counts once: k hits still come back
    assert len(merged) == 3
    assert len({h.chunk.id for h in merged}) == 3


def test_settings_choose_the_granularity(tmp_path: Path) -> None:
    from affidavit.core.errors import ConfigError as SettingsError
    from affidavit.core.settings import load_settings

    emb = FakeEmbedder()
    store = _passage_store(tmp_path, emb)
    s = load_settings(overrides={"retrieve": {"granularity": "document", "per_document": 2}})
    r = StoreRetriever.from_settings(store, emb, s.retrieve)
    assert (r.granularity, r.per_document, r.merge_neighbours) == ("document", 2, False)
    assert r.document_prior is True
    with pytest.raises(SettingsError, match="passage"):
        load_settings(overrides={"retrieve": {"granularity": "page"}})
    with pytest.raises(SettingsError, match="unknown setting"):
        load_settings(overrides={"retrieve": {"per_doc": 2}})


def test_document_prior_adds_the_documents_fused_scores(tmp_path: Path) -> None:
    emb = FakeEmbedder()
    store = _passage_store(tmp_path, emb)
    q = "radium paint glows"
    plain = StoreRetriever(store, emb, per_document=50, document_prior=False).search(q, k=50)
    prior = StoreRetriever(store, emb, per_document=4).search(q, k=6)
    found = store.document_scores(q, emb.embed([q])[0], 50)
    assert found.lexical and found.dense
    doc_score = dict(convex([found.lexical, found.dense]))
    by_id = {h.chunk.id: h for h in plain}
    for h in prior:
        # the chunk's own convex score plus its document's (each in [0, 1])
        expected = by_id[h.chunk.id].score + doc_score.get(str(h.chunk.doc_id), 0.0)
        assert h.score == pytest.approx(expected)
        assert h.scores["doc_prior"] == pytest.approx(doc_score.get(str(h.chunk.doc_id), 0.0))
        assert 0.0 <= h.scores["doc_prior"] <= 1.0
    assert all(a.score >= b.score for a, b in itertools.pairwise(prior))
    only = SearchFilters(doc_ids=(str(prior[0].chunk.doc_id),))
    filtered = store.document_scores(q, emb.embed([q])[0], 50, only)
    assert set(filtered.lexical) | set(filtered.dense) == {str(prior[0].chunk.doc_id)}


def test_document_prior_adds_the_parent_document_ranking(tmp_path: Path) -> None:
    emb = FakeEmbedder()
    store = _passage_store(tmp_path, emb)
    q = "radium paint glows"
    plain = StoreRetriever(store, emb, per_document=4, document_prior=False, fusion="rrf").search(
        q, k=6
    )
    prior = StoreRetriever(store, emb, per_document=4, fusion="rrf").search(q, k=6)
    docs = StoreRetriever(store, emb, granularity="document").search(q, k=50)
    doc_rank: dict[str | None, int] = {}
    for h in docs:
        doc_rank.setdefault(h.chunk.doc_id, len(doc_rank) + 1)
    by_id = {h.chunk.id: h for h in plain}
    for h in prior:
        # the chunk's own RRF score plus 1 / (60 + its document's rank)
        expected = by_id[h.chunk.id].score + 1 / (60 + doc_rank[h.chunk.doc_id])
        assert h.score == pytest.approx(expected)
        assert h.scores["doc_rank"] == doc_rank[h.chunk.doc_id]
    assert all(a.score >= b.score for a, b in itertools.pairwise(prior))


def test_question_parts_bring_each_parts_passage_to_the_top(tmp_path: Path) -> None:
    """Issue 27: a two-part question ranked as one favours the part with more words; searched
    part by part (and fused), the passage of the other part reaches the top k too."""
    from affidavit.core.types import Document
    from affidavit.store.base import DocumentBatchItem

    emb = FakeEmbedder()
    texts = {
        "b1": "The old tower was built in 1889 and the tower was built of iron.",
        "b2": "Building the tower took two years; the tower was built by 300 workers.",
        "b3": "When the tower was built it was the tallest tower built in the world.",
        "b4": "The tower was built for a fair; when built, the tower was new.",
        "b5": "A tower built in 1889: when it was built the tower stood alone.",
        "d": "Its engineer Gustave Eiffel designed it.",
    }
    items = []
    for doc_id, text in texts.items():
        d = Document(id=doc_id, source=doc_id, text=text)
        chunk = Chunk(id=f"{doc_id}-0", doc_id=doc_id, text=text, start=0, end=len(text))
        items.append(
            DocumentBatchItem(document=d, chunks=(chunk,), vectors=emb.embed([text]), origin=doc_id)
        )
    store = LocalStore(tmp_path / "s")
    store.upsert(items, embedder=emb.name)
    q = "When was the tower built, and who designed it?"
    r = StoreRetriever(store, emb, question_parts=True, per_document=3)
    hits = r.search(q, k=4)
    # each part's ranking in turn: the first of each part, then the second of each
    first, second = (
        [h.chunk.id for h in StoreRetriever(store, emb).search(x, k=50)]
        for x in ("When was the tower built", "who designed it")
    )
    assert second[0] == "d-0" and first[0] != "d-0"
    expected: list[str] = []
    for a, b in zip(first, second, strict=False):
        for cid in (a, b):
            if cid not in expected:
                expected.append(cid)
    assert [h.chunk.id for h in hits] == expected[:4]
    assert hits[1].chunk.id == "d-0"  # the designer's passage, second of four
    assert "parts_rank" in hits[0].scores
    # a one-part question is searched exactly as before
    one = "When was the tower built?"
    split = StoreRetriever(store, emb, question_parts=True).search(one, k=3)
    plain = StoreRetriever(store, emb, question_parts=False).search(one, k=3)
    assert [h.chunk.id for h in split] == [h.chunk.id for h in plain]
