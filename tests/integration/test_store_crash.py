"""kill -9 in the middle of an ingest leaves a consistent store that the next run completes."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from affidavit.ingest.pipeline import Ingestor
from affidavit.store.local import LocalStore
from affidavit.testing.embedder import FakeEmbedder

pytestmark = pytest.mark.integration

CHILD = """
import sys, time
from affidavit.ingest.pipeline import Ingestor
from affidavit.store.local import LocalStore
from affidavit.testing.embedder import FakeEmbedder

class Slow(FakeEmbedder):
    def embed(self, texts):
        time.sleep(0.05)
        return super().embed(texts)

Ingestor(LocalStore(sys.argv[1]), Slow(), batch_chunks=1).ingest([sys.argv[2]])
"""


def _docs(tmp_path: Path, n: int) -> Path:
    d = tmp_path / "docs"
    d.mkdir()
    for i in range(n):
        (d / f"f{i:03d}.txt").write_text(f"Document number {i} mentions topic{i}. It is fine.")
    return d


def _stored(db: Path) -> int:
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return int(con.execute("SELECT COUNT(*) FROM documents").fetchone()[0])
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def test_kill_9_mid_ingest(tmp_path: Path) -> None:
    n = 80
    docs = _docs(tmp_path, n)
    store_dir = tmp_path / "store"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(store_dir), str(docs)])
    deadline = time.time() + 60
    while _stored(store_dir / "store.sqlite") < 10 and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL

    store = LocalStore(store_dir)
    assert store.check() == []
    done, chunks = store.count()
    assert 10 <= done < n and chunks == done  # one chunk per document: none half-written
    # the index of the last generation was never written: searching rebuilds it
    assert store.search_lexical("topic3", 1)[0].chunk.text.startswith("Document number 3 ")

    report = Ingestor(store, FakeEmbedder()).ingest([docs])
    c = report.counts()
    assert c["skipped"] == done and c["added"] == n - done and c["failed"] == 0
    assert store.count() == (n, n)
    store.close()


def test_concurrent_reader_during_ingest(tmp_path: Path) -> None:
    docs = _docs(tmp_path, 60)
    store_dir = tmp_path / "store"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(store_dir), str(docs)])
    try:
        deadline = time.time() + 60
        while _stored(store_dir / "store.sqlite") < 3 and time.time() < deadline:
            time.sleep(0.05)
        reader = LocalStore(store_dir, read_only=True)
        seen = []
        for _ in range(5):
            hits = reader.search_lexical("document number", 100)
            seen.append(len(hits))
            time.sleep(0.1)
        reader.close()
        assert seen[0] >= 3 and seen == sorted(seen)  # reads succeed and only grow
    finally:
        proc.kill()
        proc.wait()
