"""``affidavit store check`` and ``affidavit store rebuild`` (issue 26, items 4 and 9)."""

from __future__ import annotations

import json
import os
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
    r = run(["store", "rebuild", "--store", str(store)])
    assert r.exit_code == 2, r.output
    assert "database" in r.output and "Traceback" not in r.output


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
