"""``affidavit store check`` and ``affidavit store rebuild`` (issue 26, items 4 and 9)."""

from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner, Result

from affidavit.cli.main import app

pytestmark = pytest.mark.integration


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.upper().startswith("AFFIDAVIT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AFFIDAVIT_EMBED__BACKEND", "fake")
    monkeypatch.setenv("AFFIDAVIT_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(30):
        (docs / f"d{i}.txt").write_text(f"Document {i} is about bridges and towers. " * 30)
    st = tmp_path / "st"
    r = run(["ingest", str(docs), "--store", str(st)])
    assert r.exit_code == 0, r.output
    return st


def run(args: list[str]) -> Result:
    return CliRunner().invoke(app, args)


def _gen(st: Path) -> Path:
    (d,) = (st / "index").glob("gen-*")
    return d


def _search(st: Path, mode: str) -> list[str]:
    r = run(["search", "bridges towers 7", "--store", str(st), "--mode", mode, "--json"])
    assert r.exit_code == 0, r.output
    return [h["chunk_id"] for h in json.loads(r.stdout)]


def test_a_sound_store_checks_clean(store: Path) -> None:
    r = run(["store", "check", "--store", str(store)])
    assert r.exit_code == 0, r.output
    assert "no problems" in r.output
    r = run(["store", "check", "--store", str(store), "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["problems"] == []


@pytest.mark.parametrize("damage", ["ready_null", "vectors_ten_rows", "bm25_short"])
def test_check_finds_a_damaged_index_and_rebuild_repairs_it(store: Path, damage: str) -> None:
    good = {m: _search(store, m) for m in ("dense", "hybrid", "bm25")}
    d = _gen(store)
    if damage == "ready_null":
        (d / "READY").write_text("null")
    elif damage == "vectors_ten_rows":
        np.save(d / "vectors.npy", np.load(d / "vectors.npy")[:10])
    else:
        p = d / "bm25" / "data.csc.index.npy"
        np.save(p, np.load(p)[:5])
    r = run(["store", "check", "--store", str(store)])
    assert r.exit_code == 1, r.output
    assert "index" in r.output and "store rebuild" in r.output
    # searching a damaged store answers from a rebuilt index (it used to exit 3 or return
    # wrong hits with exit 0)
    assert {m: _search(store, m) for m in good} == good
    r = run(["store", "rebuild", "--store", str(store)])
    assert r.exit_code == 0, r.output
    assert run(["store", "check", "--store", str(store)]).exit_code == 0
    assert {m: _search(store, m) for m in good} == good


def test_check_finds_a_corrupt_database_page(store: Path) -> None:
    db = store / "store.sqlite"
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    data = bytearray(db.read_bytes())
    for off in range(4096 * 3, len(data), 4096 * 2):
        data[off + 8 : off + 200] = b"\xa5" * 192
    db.write_bytes(bytes(data))
    r = run(["store", "check", "--store", str(store)])
    assert r.exit_code == 1, r.output
    assert "database" in r.output and "restore" in r.output
    # every other page is overwritten: rebuild salvages what can be read, names what is lost
    r = run(["store", "rebuild", "--store", str(store)])
    assert r.exit_code == 1, r.output
    assert "lost" in r.output and "ingest" in r.output and "Traceback" not in r.output
    assert run(["store", "check", "--store", str(store)]).exit_code == 0


def test_check_cannot_open_is_exit_2(tmp_path: Path, store: Path) -> None:
    r = run(["store", "check", "--store", str(tmp_path / "nothing")])
    assert r.exit_code == 2 and "no store" in r.output
    (store / "store.sqlite").write_bytes(b"this is not a database" * 100)
    for p in store.glob("store.sqlite-*"):
        p.unlink()
    r = run(["store", "check", "--store", str(store)])
    assert r.exit_code == 2, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)


def test_check_writes_nothing(store: Path) -> None:
    # SQLite may add its own -wal/-shm beside the database; nothing that was there changes
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    assert run(["store", "check", "--store", str(store)]).exit_code == 0
    after = {p: p.read_bytes() for p in before}
    assert after == before
    assert {p for p in store.rglob("*") if p.is_file()} - set(before) <= {
        store / "store.sqlite-wal",
        store / "store.sqlite-shm",
    }


# -- salvage of a damaged database (issue 26.9) ------------------------------------------------

WORDS = [
    "river",
    "tower",
    "cable",
    "arch",
    "steel",
    "stone",
    "deck",
    "pier",
    "span",
    "truss",
    "girder",
    "anchor",
]


@pytest.fixture
def varied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A store of 40 documents of different sentences (3 to 4 chunks each), and its sources."""
    for name in list(os.environ):
        if name.upper().startswith("AFFIDAVIT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AFFIDAVIT_EMBED__BACKEND", "fake")
    monkeypatch.setenv("AFFIDAVIT_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(40):
        sentences = [
            f"Bridge {i} has a {WORDS[(i + j) % len(WORDS)]} of {i * 7 + j} metres "
            f"near the {WORDS[(i * 3 + j) % len(WORDS)]} number {j}."
            for j in range(24)
        ]
        (docs / f"b{i:02d}.txt").write_text(" ".join(sentences))
    st = tmp_path / "st"
    r = run(["ingest", str(docs), "--store", str(st)])
    assert r.exit_code == 0, r.output
    return st, docs


QUERIES = ["steel truss 7 metres", "bridge 12 anchor", "stone pier number 3", "cable deck 30"]


def _hits(st: Path) -> dict[tuple[str, str], list[str]]:
    out = {}
    for q in QUERIES:
        for mode in ("dense", "hybrid", "bm25"):
            r = run(["search", q, "--store", str(st), "--mode", mode, "--json", "-k", "8"])
            assert r.exit_code == 0, r.output
            out[q, mode] = [h["chunk_id"] for h in json.loads(r.stdout)]
    return out


def _damage_leaf(st: Path, table: str, which: int) -> None:
    """Overwrite the cell area of one b-tree leaf page of ``table`` (found with dbstat)."""
    db = st / "store.sqlite"
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = con.execute("PRAGMA page_size").fetchone()[0]
    pages = [
        p
        for (p,) in con.execute(
            "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY pageno",
            (table,),
        )
    ]
    con.close()
    assert len(pages) > which + 1, pages
    off = (pages[which] - 1) * page_size
    with db.open("r+b") as fh:
        fh.seek(off)
        fh.write(b"\xa5" * 64)  # the page header and cell pointers: every row on it is gone


def _rows(st: Path, sql: str) -> list[tuple[str, str]]:
    con = sqlite3.connect(f"file:{st / 'store.sqlite'}?mode=ro", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _ids(st: Path, table: str = "documents") -> set[str]:
    col = "doc_id" if table == "documents" else "chunk_id"
    con = sqlite3.connect(f"file:{st / 'store.sqlite'}?mode=ro", uri=True)
    try:
        return {d for (d,) in con.execute(f"SELECT {col} FROM {table}")}
    finally:
        con.close()


def test_rebuild_salvages_a_damaged_chunks_page(varied: tuple[Path, Path]) -> None:
    st, _ = varied
    good = _hits(st)
    _damage_leaf(st, "chunks", 3)
    before = (st / "store.sqlite").read_bytes()
    r = run(["store", "check", "--store", str(st)])
    assert r.exit_code == 1 and "database" in r.output, r.output
    r = run(["store", "rebuild", "--store", str(st)])
    assert r.exit_code == 0, r.output
    assert "nothing lost" in r.output and "lost:" not in r.output
    made = re.search(r"(\d+) chunks re-created", r.output)
    assert made and int(made.group(1)) > 0  # the chunks on that page were made again
    # the damaged original is kept aside, byte for byte, beside the rebuilt database
    (aside,) = st.glob("store.sqlite.damaged-*")
    assert aside.read_bytes() == before
    assert run(["store", "check", "--store", str(st)]).exit_code == 0
    assert _hits(st) == good


def test_rebuild_reports_documents_lost_with_a_documents_page(
    varied: tuple[Path, Path],
) -> None:
    st, docs = varied
    every, chunks = _ids(st), _ids(st, "chunks")
    origins = dict(_rows(st, "SELECT doc_id, origin FROM documents"))
    _damage_leaf(st, "documents", 2)
    r = run(["store", "rebuild", "--store", str(st), "--json"])
    assert r.exit_code == 1, r.output
    report = json.loads(r.stdout)
    lost = every - _ids(st)
    assert lost and set(report["lost_documents"]) == lost
    # each lost document is named with the file to ingest again (read from the table's index)
    assert {d["doc_id"]: d["origin"] for d in report["lost"]} == {d: origins[d] for d in lost}
    assert run(["store", "check", "--store", str(st)]).exit_code == 0
    r = run(["store", "rebuild", "--store", str(st)])
    assert r.exit_code == 0, r.output
    # ingesting the sources again brings the lost documents back, chunk for chunk
    r = run(["ingest", str(docs), "--store", str(st)])
    assert r.exit_code == 0, r.output
    assert _ids(st) == every and _ids(st, "chunks") == chunks


def test_rebuild_text_report_names_lost_documents(varied: tuple[Path, Path]) -> None:
    st, _ = varied
    every = _ids(st)
    _damage_leaf(st, "documents", 1)
    r = run(["store", "rebuild", "--store", str(st)])
    assert r.exit_code == 1, r.output
    lost = every - _ids(st)
    assert lost and all(d in r.output for d in lost)
    assert "ingest" in r.output and "Traceback" not in r.output


def test_rebuild_refuses_while_an_ingest_holds_the_store(varied: tuple[Path, Path]) -> None:
    from affidavit.store.local import release_writer_lock, take_writer_lock

    st, _ = varied
    _damage_leaf(st, "chunks", 2)
    before = (st / "store.sqlite").read_bytes()
    fd = take_writer_lock(st)
    try:
        r = run(["store", "rebuild", "--store", str(st)])
    finally:
        release_writer_lock(fd)
    assert r.exit_code == 2 and "another process" in r.output, r.output
    assert (st / "store.sqlite").read_bytes() == before
    assert not list(st.glob("store.sqlite.*"))


class Killed(BaseException):
    """Stands for a kill -9: nothing catches it, no cleanup code that matters runs after it."""


@pytest.mark.parametrize("where", ["while re-embedding", "between keeping the copy and the swap"])
def test_a_rebuild_killed_midway_leaves_the_original(
    varied: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    import affidavit.store.salvage as salvage
    from affidavit.retrieve.embedders import HashEmbedder

    st, _ = varied
    _damage_leaf(st, "chunks", 2)
    before = (st / "store.sqlite").read_bytes()

    def kill(*args: object) -> None:
        raise Killed

    if where == "while re-embedding":
        monkeypatch.setattr(HashEmbedder, "embed", kill)
    else:
        monkeypatch.setattr(salvage, "_fsync_dir", kill)
    with pytest.raises(Killed):
        CliRunner().invoke(app, ["store", "rebuild", "--store", str(st)], catch_exceptions=False)
    assert (st / "store.sqlite").read_bytes() == before
    monkeypatch.undo()
    monkeypatch.setenv("AFFIDAVIT_EMBED__BACKEND", "fake")
    # the next run starts over and succeeds
    r = run(["store", "rebuild", "--store", str(st)])
    assert r.exit_code == 0, r.output
    assert run(["store", "check", "--store", str(st)]).exit_code == 0
    assert not list(st.glob("*salvage*"))


def test_rebuild_of_a_file_that_is_no_database_is_exit_2(varied: tuple[Path, Path]) -> None:
    st, _ = varied
    (st / "store.sqlite").write_bytes(b"this is not a database" * 100)
    for p in st.glob("store.sqlite-*"):
        p.unlink()
    r = run(["store", "rebuild", "--store", str(st)])
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output


def test_rebuild_remakes_no_chunk_with_other_chunk_settings(
    varied: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    st, _ = varied
    every = _ids(st)
    _damage_leaf(st, "chunks", 3)
    monkeypatch.setenv("AFFIDAVIT_INGEST__CHUNK_SIZE", "300")
    r = run(["store", "rebuild", "--store", str(st), "--json"])
    assert r.exit_code == 1, r.output
    report = json.loads(r.stdout)
    assert report["salvage"]["chunks_recreated"] == 0
    assert "chunk size" in " ".join(report["salvage"]["notes"])
    # the documents that lost chunks are dropped whole, so that ingesting them again re-adds them
    assert set(report["lost_documents"]) == every - _ids(st) != set()
    assert run(["store", "check", "--store", str(st)]).exit_code == 0


def test_rebuild_reads_the_leaves_under_a_damaged_interior_page(
    varied: tuple[Path, Path],
) -> None:
    st, _ = varied
    every, chunks = _ids(st), _ids(st, "chunks")
    good = _hits(st)
    db = st / "store.sqlite"
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = con.execute("PRAGMA page_size").fetchone()[0]
    (root,) = con.execute(
        "SELECT pageno FROM dbstat "
        "WHERE name = 'documents' AND path = '/' AND pagetype = 'internal'"
    ).fetchone()
    con.close()
    with db.open("r+b") as fh:  # no row of the table can be reached through the b-tree
        fh.seek((root - 1) * page_size)
        fh.write(b"\xa5" * page_size)
    r = run(["store", "rebuild", "--store", str(st)])
    assert r.exit_code == 0, r.output
    assert "nothing lost" in r.output
    assert _ids(st) == every and _ids(st, "chunks") == chunks
    assert run(["store", "check", "--store", str(st)]).exit_code == 0
    assert _hits(st) == good


@pytest.mark.parametrize("inputs", ["files", "records"])
def test_ingest_into_a_store_with_a_damaged_page_stops_with_exit_2_and_what_to_do(
    varied: tuple[Path, Path], inputs: str
) -> None:
    """Issue 26.9 for ingest: a damaged page met while writing is the store's state, not a bad
    input file. The run stops at once with exit 2 and says how to recover; it had retried every
    document of the batch alone (each embedded again) and then ended on an untyped
    DatabaseError (records), or let that error out of the library (files)."""
    st, docs = varied
    if inputs == "files":
        _damage_leaf(st, "chunks", 3)
        # new versions: taking the old ones' names off deletes chunks on the damaged page
        for i in range(40):
            (docs / f"b{i:02d}.txt").write_text(f"Bridge {i} was rebuilt in {1900 + i}.")
        r = run(["ingest", str(docs), "--store", str(st)])
    else:
        # records keep their ids: replacing one deletes its old chunks inside the write
        st, data = st.with_name("records"), docs.parent / "data.jsonl"
        rows = [
            {"id": f"r{i:02d}", "text": p.read_text()} for i, p in enumerate(sorted(docs.iterdir()))
        ]
        data.write_text("".join(json.dumps(row) + "\n" for row in rows))
        assert run(["ingest", str(data), "--store", str(st)]).exit_code == 0
        _damage_leaf(st, "chunks", 3)
        for i, row in enumerate(rows):
            row["text"] = f"Record {i} was rebuilt in {1900 + i}."
        data.write_text("".join(json.dumps(row) + "\n" for row in rows))
        r = run(["ingest", str(data), "--store", str(st)])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert r.exit_code == 2, r.output
    lines = [line for line in r.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "damaged" in r.output and "store rebuild" in r.output, r.output


def test_an_emptied_database_is_no_new_store(store: Path) -> None:
    """A 0-byte store.sqlite (a failed copy or restore) under an index written at generation 1:
    ingest made new tables there and filled an empty store as if nothing had been lost, `store
    rebuild` reported "0 chunks of 0 documents" with exit 0, and search said only "no such
    table: chunks". Each now stops with exit 2 and says the documents are lost and what to do."""
    docs = store.parent / "docs"
    (store / "store.sqlite").write_bytes(b"")
    for p in store.glob("store.sqlite-*"):
        p.unlink()
    for args in (
        ["search", "bridges", "--store", str(store)],
        ["store", "check", "--store", str(store)],
        ["store", "rebuild", "--store", str(store)],
        ["ingest", str(docs), "--store", str(store)],
    ):
        r = run(args)
        assert r.exit_code == 2, (args, r.output)
        assert "Traceback" not in r.output
        assert "backup" in r.output and "ingest the documents again" in r.output, (args, r.output)
    assert (store / "store.sqlite").stat().st_size == 0  # nothing made over it


def test_a_database_file_never_written_is_a_new_store(tmp_path: Path, store: Path) -> None:
    # an ingest stopped before its first write leaves a 0-byte file and no index: not a loss
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "store.sqlite").write_bytes(b"")
    r = run(["search", "bridges", "--store", str(fresh)])
    assert r.exit_code == 2 and "affidavit ingest" in r.output, r.output
    r = run(["ingest", str(store.parent / "docs"), "--store", str(fresh)])
    assert r.exit_code == 0, r.output
