"""The rerank stage: `retrieve.rerank` builds the cross-encoder reranker, which reads the
retriever's best ``depth`` hits (more than the caller asked for) and puts the most relevant first.

A scripted scorer stands in for the model here; the packaged model is tested in
tests/integration/test_reranker_model.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from affidavit.core.errors import RetrievalError
from affidavit.core.settings import RetrieveSettings
from affidavit.core.types import Chunk, Document, Hit
from affidavit.retrieve.rerank import CrossEncoderReranker, IdentityReranker
from affidavit.retrieve.retriever import StoreRetriever
from affidavit.store.local import LocalStore
from affidavit.testing.store_contract import StoreContract


class WordScorer:
    """Logits (relevant, not): +1 per occurrence of ``word`` in the chunk."""

    name = "word-scorer"
    batch_size = 2

    def __init__(self, word: str) -> None:
        self.word = word
        self.seen: list[tuple[str, str]] = []

    def logits(self, pairs: Sequence[tuple[str, str]]) -> tuple[np.ndarray, list[int]]:
        self.seen += pairs
        rows = [[float(t.lower().count(self.word)), 0.0] for _, t in pairs]
        return np.array(rows), [0] * len(pairs)


def _hit(i: int, text: str) -> Hit:
    return Hit(chunk=Chunk(id=f"c{i}", doc_id="d", text=text), score=1.0 / i, rank=i, mode="bm25")


def test_the_most_relevant_of_depth_hits_comes_first_and_the_rest_keep_their_order() -> None:
    hits = [_hit(i, t) for i, t in enumerate(["a", "b", "tower tower", "c", "tower"], start=1)]
    rr = CrossEncoderReranker(depth=4, scorer=WordScorer("tower"), fusion="replace")
    out = rr.rerank("how tall is the tower", hits, k=5)
    assert [h.chunk.id for h in out] == ["c3", "c1", "c2", "c4", "c5"]  # c5 is below the depth
    assert [h.rank for h in out] == [1, 2, 3, 4, 5]
    assert out[0].mode == "rerank" and out[0].scores["bm25_rank"] == 3.0
    assert out[0].score > out[1].score
    assert out[4].mode == "bm25"  # not read: kept as the retriever ranked it


def test_k_cuts_after_reordering() -> None:
    hits = [_hit(i, "tower" if i == 3 else "x") for i in range(1, 6)]
    rr = CrossEncoderReranker(depth=5, scorer=WordScorer("tower"), fusion="replace")
    out = rr.rerank("q", hits, k=1)
    assert [h.chunk.id for h in out] == ["c3"]


def test_rank_fusion_puts_first_what_both_rank_high() -> None:
    # retriever order c1..c5; the model ranks c5 first, c2 second, c3 third, c1 fourth
    texts = ["x", "tower tower tower", "tower", "x", "tower tower tower tower"]
    hits = [_hit(i, t) for i, t in enumerate(texts, start=1)]
    out = CrossEncoderReranker(depth=5, scorer=WordScorer("tower")).rerank("q", hits, k=5)
    # c2: ranks 2 and 2; c1: 1 and 4; c5: 5 and 1; c3: 3 and 3
    assert [h.chunk.id for h in out] == ["c2", "c1", "c5", "c3", "c4"]
    assert out[0].scores["rerank_rank"] == 2.0 and out[0].scores["bm25_rank"] == 2.0
    assert out[0].score == pytest.approx(2 / 62)
    replaced = CrossEncoderReranker(depth=5, scorer=WordScorer("tower"), fusion="replace")
    assert [h.chunk.id for h in replaced.rerank("q", hits, k=2)] == ["c5", "c2"]


def test_unknown_fusion_is_refused() -> None:
    with pytest.raises(ValueError, match="fusion"):
        CrossEncoderReranker(fusion="max", scorer=WordScorer("x"))


def test_a_failing_model_fails_the_search_with_the_reason() -> None:
    class Broken(WordScorer):
        def logits(self, pairs: Sequence[tuple[str, str]]) -> tuple[np.ndarray, list[int]]:
            raise RuntimeError("onnx went away")

    with pytest.raises(RetrievalError, match="onnx went away"):
        CrossEncoderReranker(scorer=Broken("x")).rerank("q", [_hit(1, "a")], k=1)


def test_a_missing_model_folder_is_a_retrieval_error(tmp_path: Path) -> None:
    with pytest.raises(RetrievalError, match="reranker model"):
        CrossEncoderReranker(tmp_path / "nothing-here").rerank("q", [_hit(1, "a")], k=1)


def test_the_setting_builds_the_reranker_and_it_sees_more_than_k_hits(tmp_path: Path) -> None:
    contract = StoreContract()
    emb = contract.embedder
    texts = [f"Filler text number {i} about bridges." for i in range(12)]
    texts.append("The Eiffel Tower is 330 metres tall, and bridges are not.")
    docs = [Document(id=f"d{i}", text=t, source=f"d{i}.txt") for i, t in enumerate(texts)]
    store = contract.filled(LocalStore(tmp_path / "s"), docs)

    plain = StoreRetriever.from_settings(store, emb, RetrieveSettings())
    assert isinstance(plain.reranker, IdentityReranker)

    fused = StoreRetriever.from_settings(store, emb, RetrieveSettings(rerank=True, rrf_k=30))
    assert isinstance(fused.reranker, CrossEncoderReranker)
    assert (fused.reranker.fusion, fused.reranker.rrf_k) == ("rrf", 30)

    cfg = RetrieveSettings(rerank=True, rerank_depth=13, rerank_fusion="replace")
    r = StoreRetriever.from_settings(store, emb, cfg)
    assert isinstance(r.reranker, CrossEncoderReranker) and r.reranker.depth == 13
    scorer = WordScorer("eiffel")
    r.reranker._scorer = scorer  # the packaged model is the integration test's business
    hits = r.search("bridges", k=1, mode="bm25")
    assert len(scorer.seen) == 13  # read 13 candidates for one requested hit
    assert hits[0].chunk.doc_id == "d12" and hits[0].rank == 1
