"""Issue 25.9: no worker process outlives the process that started it (SIGTERM included)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

CHILD = r"""
import asyncio, os, sys
from affidavit.concurrency import offload_process

async def main():
    pids = await asyncio.gather(*(offload_process(os.getpid) for _ in range(4)))
    print(" ".join(str(p) for p in sorted(set(pids))), flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purpose
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_pool_workers_end_with_their_parent(sig: signal.Signals) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        workers = [int(x) for x in line.split()]
        assert workers and proc.pid not in workers
        assert all(_alive(p) for p in workers)
        os.kill(proc.pid, sig)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 15
        while any(_alive(p) for p in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [p for p in workers if _alive(p)], "workers outlived their parent"
    finally:
        if proc.poll() is None:
            proc.kill()
