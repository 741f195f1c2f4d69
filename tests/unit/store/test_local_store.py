"""The local store passes the store contract, plus crash/concurrency properties of its own."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from affidavit.core.errors import StoreError
from affidavit.store.base import Store
from affidavit.store.local import LocalStore
from affidavit.testing.store_contract import StoreContract


class TestLocalStoreContract(StoreContract):
    def make_store(self, path: Path) -> Store:
        return LocalStore(path)


def _fill(path: Path) -> LocalStore:
    s = LocalStore(path)
    c = StoreContract()
    s.upsert(c.items(), embedder=c.embedder.name)
    return s


def test_index_is_persisted_and_stamped(tmp_path: Path) -> None:
    s = _fill(tmp_path)
    s.refresh()
    gen = s.generation()
    assert (tmp_path / "index" / f"gen-{gen}" / "READY").is_file()
    s.delete(["curie"])
    s.refresh()
    assert (tmp_path / "index" / f"gen-{gen + 1}" / "READY").is_file()
    assert not (tmp_path / "index" / f"gen-{gen}").exists()
    s.close()


def test_stale_index_is_rebuilt_by_reader(tmp_path: Path) -> None:
    # a writer that died after committing but before refreshing leaves no index for its
    # generation: a read-only reader rebuilds it in memory and sees the new data
    s = _fill(tmp_path)
    s.refresh()
    s.delete(["curie"])
    s.close()
    r = LocalStore(tmp_path, read_only=True)
    assert r.search_lexical("polonium", 5) == []
    assert r.search_lexical("Armstrong", 5)
    r.close()


def test_reader_sees_snapshot_while_writer_holds_lock(tmp_path: Path) -> None:
    w = _fill(tmp_path)
    w.refresh()
    w.lock_for_writing()
    with pytest.raises(StoreError, match="another process"):
        LocalStore(tmp_path).lock_for_writing()
    # an open write transaction in another connection does not block a reader
    other = sqlite3.connect(tmp_path / "store.sqlite", timeout=1)
    other.execute("BEGIN IMMEDIATE")
    other.execute("DELETE FROM chunks")
    r = LocalStore(tmp_path, read_only=True)
    assert r.search_lexical("polonium", 1)[0].chunk.doc_id == "curie"
    other.rollback()
    other.close()
    r.close()
    w.close()


def test_failed_batch_is_rolled_back(tmp_path: Path) -> None:
    s = _fill(tmp_path)
    before = s.count()
    c = StoreContract()
    bad = c.items()[0]
    bad = bad.model_copy(update={"vectors": bad.vectors[:0]})  # vectors missing
    with pytest.raises(StoreError):
        s.upsert([c.items()[1], bad], embedder=c.embedder.name)
    assert s.count() == before
    assert s.check() == []
    s.close()


def test_read_only_missing_store(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no store"):
        LocalStore(tmp_path / "nothing", read_only=True)


def test_analyzer_mismatch_refused(tmp_path: Path) -> None:
    from affidavit.retrieve.text import Analyzer

    _fill(tmp_path).close()
    with pytest.raises(StoreError, match="analyzer"):
        LocalStore(tmp_path, analyzer=Analyzer(stem=False))


def test_threads_share_one_store(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    s = _fill(tmp_path)
    c = StoreContract()
    q = c.embedder.embed(["Marie Curie"])[0]

    def work(i: int) -> str:
        if i % 2:
            return s.search_lexical("polonium", 1)[0].chunk.doc_id or ""
        return s.search_dense(q, 1)[0].chunk.doc_id or ""

    with ThreadPoolExecutor(4) as pool:
        assert set(pool.map(work, range(40))) == {"curie"}
    s.close()
