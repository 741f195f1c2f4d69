"""kill -9 during appends to the transparency log: at least 100 kills at random moments of a
writer that appends one entry after another; after each, the log verifies, holds every entry
whose append returned, in order, with no gap and no duplicate, and the next append works.

The writer is a forked child (one import for all the runs, so 100 kills fit in well under two
minutes); SIGKILL gives it no chance to clean up, as a power cut would not.
"""

from __future__ import annotations

import hashlib
import os
import random
import select
import signal
import time
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from affidavit.tlog.monitor import verify_log
from affidavit.tlog.store import FileLog

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ORIGIN = "example.com/crash"
RUNS = 100


def entry(i: int) -> bytes:
    return hashlib.sha256(i.to_bytes(8, "big")).digest()


def _writer(path: Path, key: Ed25519PrivateKey, out: int) -> None:
    log = FileLog(path)
    i = log.size()
    while True:
        batch = [entry(j) for j in range(i, i + 1 + i % 3)]  # batches of 1 to 3
        log.append(batch, key, ORIGIN)
        i += len(batch)
        os.write(out, f"{i}\n".encode())  # only after the append returned (committed)


def test_kill_9_mid_append_never_loses_or_damages_the_tree(tmp_path: Path) -> None:
    key = Ed25519PrivateKey.generate()
    path = tmp_path / "log"
    rng = random.Random(30)
    committed = 0
    interrupted = 0  # kills that left an append half done (bytes past the checkpoint)
    started = time.monotonic()
    for _ in range(RUNS):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: append until killed
            os.close(read_end)
            try:
                _writer(path, key, write_end)
            finally:
                os._exit(1)
        os.close(write_end)
        time.sleep(rng.uniform(0.0, 0.05))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        reported = b""
        while select.select([read_end], [], [], 0)[0]:
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            reported += chunk
        os.close(read_end)
        lines = reported.decode().split()
        if lines:
            committed = int(lines[-1])
        log = FileLog(path)
        size = log.size()
        entries = path / "entries"
        if entries.exists() and entries.stat().st_size > size * 32:
            interrupted += 1
        # every append that returned is there; at most the one in flight was added beyond it
        assert committed <= size <= committed + 3
        assert [log.entry(i) for i in range(size)] == [entry(i) for i in range(size)]
        result = verify_log(log, [key.public_key()])
        assert result.valid, result.reasons
        log.close()
        committed = size
    assert committed > 0
    assert interrupted >= 10, f"only {interrupted} kills fell inside an append"
    log = FileLog(path)
    log.append([bytes(32)], key, ORIGIN)  # the log goes on after the last kill
    assert verify_log(log, [key.public_key()]).valid
    assert time.monotonic() - started < 120
