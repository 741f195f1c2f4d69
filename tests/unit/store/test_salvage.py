"""The salvage page reader against SQLite's own reading of the same file (issue 26.9)."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from affidavit.store.local import _SCHEMA
from affidavit.store.salvage import _raw_scan


def test_the_page_reader_reads_what_sqlite_reads(tmp_path: Path) -> None:
    rng = random.Random(7)
    db = tmp_path / "store.sqlite"
    con = sqlite3.connect(db)
    con.executescript(_SCHEMA)
    for i in range(60):
        # 10 to 20,000 characters, non-ASCII included: short rows, and rows on overflow chains
        text = "".join(rng.choice("abc déf ĝ\n") for _ in range(rng.choice([10, 900, 20_000])))
        con.execute(
            "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                f"d{i}",
                "h" * 64,
                f"/o/{i}",
                f"s{i}",
                None if i % 3 else "T",
                "text/plain",
                text,
                "{}",
                1.5 * i,
            ),
        )
        for j in range(3):
            con.execute(
                "INSERT INTO chunks (chunk_id, doc_id, idx, start, end, text, url, title, "
                "metadata, domain, date, terms, vector) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    f"chunk-{i}-{j}",
                    f"d{i}",
                    j,
                    0,
                    -5 if j == 2 else 7,
                    text[: 400 * j],
                    None,
                    None,
                    "{}",
                    None,
                    "2024-01-01",
                    "a b",
                    rng.randbytes(4 * 64),
                ),
            )
    con.execute("DELETE FROM documents WHERE doc_id IN ('d3', 'd40')")  # freed pages, freeblocks
    con.commit()
    docs = {r[0]: tuple(r[1:]) for r in con.execute("SELECT rowid, * FROM documents")}
    chunks = {r[0]: tuple(r[2:]) for r in con.execute("SELECT rowid, * FROM chunks")}
    con.close()
    got = _raw_scan(db)
    assert got is not None
    assert got[0] == docs
    assert got[1] == chunks
