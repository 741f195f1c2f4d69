"""``affidavit.acheck`` with the shipped verifier cascade, concurrently, off the event loop."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import affidavit
from affidavit.core.types import Verdict

pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.integration


def test_acheck_runs_the_cascade_concurrently() -> None:
    evidence = ["The Eiffel Tower is 330 metres tall. It was completed in 1889."]

    async def main() -> list[Verdict]:
        return list(
            await asyncio.gather(
                affidavit.acheck("The Eiffel Tower was completed in 1925.", evidence),
                affidavit.acheck("The Eiffel Tower was completed in 1889.", evidence),
            )
        )

    wrong, right = asyncio.run(main())
    assert wrong.label != "supported"
    assert any(c.status == "fail" for c in wrong.checks)  # the date check caught it
    assert right.stages  # the model stage ran (or its absence is recorded below)
    assert right.label == "supported" or right.errors


LAG_SCRIPT = """
import asyncio, json, sys, time

import affidavit


async def main():
    lags = []
    done = False

    async def ticker():
        last = time.perf_counter()
        while not done:
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            lags.append(now - last - 0.005)
            last = now

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.05)
    verdict = await affidavit.acheck("The tower is 330 m tall.", ["The tower is 330 metres tall."])
    done = True
    await task
    return verdict.label, max(lags)


label, lag = asyncio.run(main())
print(json.dumps({"label": label, "lag": lag, "onnx_imported": "onnx" in sys.modules}))
"""


def test_the_first_acheck_does_not_block_the_event_loop(tmp_path: Path) -> None:
    """Issue 28: the first ``acheck`` stalled the loop 0.5-0.65 s (measured here: over 1 s)
    while the verifier loaded: importing ``onnx`` to join the model's two parts holds the GIL
    (its ml_dtypes extension) even in a worker thread. Loaded off the loop's thread, the join
    now runs in a child interpreter, so onnx never enters the caller's process."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "AFFIDAVIT_HOME": str(tmp_path / "home"), "OMP_NUM_THREADS": "1"}
    p = subprocess.run(
        [sys.executable, "-c", LAG_SCRIPT],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["label"] == "supported"
    assert out["onnx_imported"] is False
    assert out["lag"] < 0.35, out
