"""The local store's check finds what a delete must never leave behind."""

from __future__ import annotations

from pathlib import Path

from affidavit.store.local import CHUNK_ROW_COLS, LocalStore
from affidavit.testing.store_contract import StoreContract


def _filled(tmp_path: Path) -> LocalStore:
    store = LocalStore(tmp_path / "store")
    StoreContract().filled(store)
    return store


def test_check_finds_a_removed_chunk_that_is_still_stored(tmp_path: Path) -> None:
    store = _filled(tmp_path)
    [kept] = store._db.execute(  # a chunk of a document that stays
        "SELECT chunk_id FROM chunks WHERE doc_id = 'eiffel' LIMIT 1"
    ).fetchone()
    store.delete(["curie"])
    store.refresh()
    assert store.check() == []
    # a delete that recorded the chunk as removed but left its row
    store._db.execute("INSERT INTO deleted_chunks VALUES (?, 'eiffel', 'x', 0, 'deleted')", (kept,))
    assert store.check() == ["database: 1 chunks recorded as removed are still stored"]
    store.close()


def test_check_finds_index_entries_of_chunks_no_longer_stored(tmp_path: Path) -> None:
    store = _filled(tmp_path)
    assert store.check() == []
    # the same number of rows, but one under a rowid the index does not hold (a write that
    # slipped past the generation: the index still lists the old row)
    cols = CHUNK_ROW_COLS
    store._db.execute(
        f"INSERT INTO chunks ({cols}) SELECT {cols.replace('chunk_id', 'chunk_id || ?')} "
        "FROM chunks WHERE rowid = (SELECT MAX(rowid) FROM chunks)",
        ("-moved",),
    )
    store._db.execute("DELETE FROM chunks WHERE rowid = (SELECT MAX(rowid) - 1 FROM chunks)")
    problems = store.check()
    assert "index: 1 indexed chunks are no longer stored" in problems
    assert "index: 1 stored chunks are not indexed" in problems
    store.close()
