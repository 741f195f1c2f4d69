"""The Qdrant backend (local mode) passes the same store contract, plus engine-side fusion."""

from __future__ import annotations

from pathlib import Path

import pytest

from affidavit.store.base import HybridStore, Store
from affidavit.testing.store_contract import StoreContract

pytest.importorskip("qdrant_client")

from affidavit.store.qdrant import QdrantStore, domain_suffixes


class TestQdrantLocalContract(StoreContract):
    def make_store(self, path: Path) -> Store:
        return QdrantStore(path=path)


class TestQdrantMemoryContract(StoreContract):
    def make_store(self, path: Path) -> Store:
        return QdrantStore(path=None)

    def reopen(self, store: Store, path: Path) -> Store | None:
        return None


def test_engine_hybrid(tmp_path: Path) -> None:
    c = StoreContract()
    s = QdrantStore(path=None)
    assert isinstance(s, HybridStore)
    s.upsert(c.items(), embedder=c.embedder.name)
    q = "Marie Curie polonium"
    hits = s.search_hybrid(q, c.embedder.embed([q])[0], 3)
    assert hits[0].chunk.doc_id == "curie"
    # top of both rankings: 1/(60+1) + 1/(60+1)
    assert hits[0].score == pytest.approx(2 / 61, rel=1e-3)
    s.close()


def test_domain_suffixes() -> None:
    assert domain_suffixes("a.Example.org") == ["a.example.org", "example.org", "org"]
    assert domain_suffixes(None) == []


def test_retriever_over_qdrant_matches_local_fusion(tmp_path: Path) -> None:
    from affidavit.retrieve.fusion import rrf
    from affidavit.retrieve.retriever import StoreRetriever

    c = StoreContract()
    s = QdrantStore(path=tmp_path / "q")
    s.upsert(c.items(), embedder=c.embedder.name)
    r = StoreRetriever(s, c.embedder)
    q = "Eiffel Tower Moon landing Curie"
    native = [h.chunk.id for h in r.search(q, k=4, mode="hybrid")]
    lex = [h.chunk.id for h in r.search(q, k=50, mode="bm25")]
    den = [h.chunk.id for h in r.search(q, k=50, mode="dense")]
    assert native == [cid for cid, _ in rrf([lex, den], k=60)][:4]
    s.close()
