"""The local store passes the store contract, plus crash/concurrency properties of its own."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

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


# -- one version of a document at a time ---------------------------------------------------------


def _edit(folder: Path, n: int, files: int = 4) -> None:
    """Write version ``n`` of ``files`` text files (each one chunk, a new content id)."""
    folder.mkdir(exist_ok=True)
    for i in range(files):
        (folder / f"f{i}.txt").write_text(f"Zebrafinch file{i} says version v{n} today.")


def _mixed(hits: list[Any]) -> list[str]:
    """The files of which a result list holds more than one version (chunks of two doc ids)."""
    by_file: dict[str, set[str]] = {}
    for h in hits:
        name = h.chunk.text.split()[1]
        by_file.setdefault(name, set()).add(str(h.chunk.doc_id))
    return sorted(f for f, ids in by_file.items() if len(ids) > 1)


def _search_all(store: LocalStore, q: str) -> list[list[Any]]:
    vec = StoreContract.embedder.embed([q])[0]
    return [store.search_lexical(q, 50), store.search_documents(q, vec, 50)]


def test_a_concurrent_reader_never_sees_two_versions_of_an_edited_file(tmp_path: Path) -> None:
    """A reader searching in a loop while ingest replaces edited files, run after run, never
    gets chunks of two versions of one file in one result (the new version was committed, and
    the old one removed, in two transactions: between them, and until the end of the run, a
    reader found both)."""
    import threading
    import time

    from affidavit.core.settings import IngestSettings
    from affidavit.ingest.pipeline import Ingestor
    from affidavit.testing.embedder import FakeEmbedder

    class Slow(FakeEmbedder):
        def embed(self, texts: Any) -> Any:
            time.sleep(0.002)  # a real model takes a while: the run is not instantaneous
            return super().embed(texts)

    docs, path = tmp_path / "docs", tmp_path / "store"
    _edit(docs, 0)
    settings = IngestSettings()
    ingestor = Ingestor(LocalStore(path), Slow(dim=32), settings, batch_chunks=1)
    ingestor.ingest([docs])
    reader = LocalStore(path, read_only=True)
    stop = threading.Event()
    bad: list[list[str]] = []
    reads = [0]

    def read() -> None:
        while not stop.is_set():
            for hits in _search_all(reader, "zebrafinch version"):
                if _mixed(hits):
                    bad.append(_mixed(hits))
            reads[0] += 1

    t = threading.Thread(target=read)
    t.start()
    runs, deadline = 0, time.monotonic() + 3.0
    try:
        while time.monotonic() < deadline and not bad:
            runs += 1
            _edit(docs, runs)
            report = ingestor.ingest([docs])
            assert report.counts()["replaced"] == 4
    finally:
        stop.set()
        t.join(10)
    reader.close()
    assert not bad, f"after {runs} runs and {reads[0]} reads, files seen twice: {bad[:3]}"
    assert runs >= 5 and reads[0] >= 5
    store = LocalStore(path)
    assert store.count() == (4, 4)
    assert store.check() == []
    store.close()


class _Crash(BaseException):
    """The process died here."""


def test_a_crash_at_any_store_call_of_an_ingest_leaves_one_version_of_each_file(
    tmp_path: Path,
) -> None:
    """An ingest of edited files dies at its n-th store call, for every n: the store opened
    again never returns two versions of one file, and the next ingest completes the run."""
    from affidavit.ingest.pipeline import Ingestor
    from affidavit.testing.embedder import FakeEmbedder

    writes = ("upsert", "delete", "add_name", "remove_names", "refresh")
    n = 0
    while True:
        n += 1
        docs, path = tmp_path / f"docs{n}", tmp_path / f"store{n}"
        _edit(docs, 0)
        store = LocalStore(path)
        Ingestor(store, FakeEmbedder(dim=32), batch_chunks=1).ingest([docs])
        _edit(docs, 1)
        calls = [0]

        def crashing(name: str, real: Any, calls: list[int] = calls, at: int = n) -> Any:
            def call(*args: Any, **kw: Any) -> Any:
                calls[0] += 1
                if calls[0] == at:
                    raise _Crash(name)
                return real(*args, **kw)

            return call

        for name in writes:
            setattr(store, name, crashing(name, getattr(store, name)))
        try:
            Ingestor(store, FakeEmbedder(dim=32), batch_chunks=1).ingest([docs])
            done = True
        except _Crash:
            done = False
        store.close()
        store = LocalStore(path, read_only=True)
        for hits in _search_all(store, "zebrafinch version"):
            assert not _mixed(hits), f"crash at store call {n}: two versions of {_mixed(hits)}"
        store.close()
        store = LocalStore(path)
        Ingestor(store, FakeEmbedder(dim=32), batch_chunks=1).ingest([docs])
        assert store.count() == (4, 4)
        assert store.check() == []
        store.close()
        if done:
            break
    assert n >= 5


@pytest.mark.parametrize("other", ["0-copy.txt", "z-copy.txt"])
@pytest.mark.parametrize("batch", [1, 256])
def test_an_edited_files_old_content_moved_to_another_file_stays_stored(
    tmp_path: Path, other: str, batch: int
) -> None:
    """a.txt is edited and its old text now lies in another file, read before or after it, its
    new version written at once or at the end: the old text stays stored, under the other
    file's name (replacing a.txt's old version in the write of its new one must not delete
    content the run records under another name)."""
    from affidavit.ingest.pipeline import Ingestor
    from affidavit.testing.embedder import FakeEmbedder

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Zebrafinch old text of a.")
    store = LocalStore(tmp_path / "store")
    Ingestor(store, FakeEmbedder(dim=32), batch_chunks=batch).ingest([docs])
    (old_id,) = store.records()
    (docs / "a.txt").write_text("Zebrafinch new text of a.")
    (docs / other).write_text("Zebrafinch old text of a.")
    Ingestor(store, FakeEmbedder(dim=32), batch_chunks=batch).ingest([docs])
    records = store.records()
    assert len(records) == 2
    assert Path(records[old_id].origin).name == other and records[old_id].aliases == ()
    assert store.check() == []
    store.close()
