"""kill -9 at random points of the index publish: the store always checks clean (issue 26.4).

A child process republishes the index of the current generation in a loop (write, fsync, set the
old folder aside, rename); it is killed at a random moment, 50 times. After each kill the
persisted index is either whole or absent (then rebuilt), ``store check`` passes and searches
answer exactly as before.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from affidavit.store.local import LocalStore
from affidavit.testing.store_contract import StoreContract

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RUNS = 50
CHILD = """
import sys
from affidavit.store.local import LocalStore

store = LocalStore(sys.argv[1])
store.refresh()
print("ready", flush=True)
while True:
    store.rebuild_index()
"""


def _answers(store: LocalStore) -> tuple[list[str], list[str]]:
    q = StoreContract.embedder.embed(["bridge river towers"])[0]
    return (
        [h.chunk.id for h in store.search_lexical("bridge river 17", 10)],
        [h.chunk.id for h in store.search_documents("bridge river 17", q, 10)],
    )


def test_kill_9_during_index_publish(tmp_path: Path) -> None:
    from affidavit.core.types import Document

    c = StoreContract()
    docs = [
        Document(
            id=f"b{i}",
            source=f"/b/{i}.txt",
            text=f"Bridge {i} crosses river {i % 7}. Its towers stand {i} metres high. " * 3,
        )
        for i in range(300)
    ]
    path = tmp_path / "st"
    store = LocalStore(path)
    store.upsert(c.items(docs), embedder=c.embedder.name)
    store.refresh()
    expected = _answers(store)
    store.close()
    rng = random.Random(26)
    kinds = {"whole": 0, "absent": 0}
    for _ in range(RUNS):
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.4))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        reader = LocalStore(path, read_only=True)
        assert reader.check() == []
        gen_dir = path / "index" / f"gen-{reader.generation()}"
        kinds["whole" if (gen_dir / "READY").is_file() else "absent"] += 1
        assert _answers(reader) == expected
        reader.close()
    assert kinds["whole"] > 0, kinds
    # a later publish clears what the killed ones left behind (tmp-* folders)
    writer = LocalStore(path)
    writer.rebuild_index()
    assert writer.check() == []
    assert [p.name for p in (path / "index").iterdir()] == [f"gen-{writer.generation()}"]
    writer.close()
