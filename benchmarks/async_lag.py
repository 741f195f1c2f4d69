"""Event-loop lag while many audits run concurrently through ``affidavit.aaudit``.

A timer coroutine ticks every 5 ms on the loop while N audits (200 chunks each, an answer of four
claims, one with a changed date and one with a swapped name) run through ``aaudit``; its worst
delay beyond the tick is the loop's lag. The control runs the same audits directly on the loop,
which stalls the timer for the whole run. Worker pool sizes 1 and 2 (``AFFIDAVIT_MAX_WORKERS``).

Usage:
    .venv/bin/python benchmarks/async_lag.py [--concurrent 20] [--repeats 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

import affidavit  # noqa: E402
from affidavit import concurrency  # noqa: E402

CHUNKS = [
    {
        "text": f"The Forth Bridge opened on 4 March 1890 and carries trains number {i}. "
        "It spans the Firth of Forth near Edinburgh in Scotland. Its engineers were John Fowler "
        f"and Benjamin Baker, and it is {i} metres from the shore.",
        "url": f"https://example.org/forth/{i}",
    }
    for i in range(200)
]
ANSWER = (
    "The Forth Bridge opened on 4 March 1925. It spans the Firth of Forth near Edinburgh. "
    "Its engineers were John Fowler and Gustave Eiffel. It carries trains."
)


async def _lag(work: asyncio.Future[object], tick: float = 0.005) -> float:
    worst = 0.0
    while not work.done():
        t0 = time.perf_counter()
        await asyncio.sleep(tick)
        worst = max(worst, time.perf_counter() - t0 - tick)
    return worst


async def _offloaded(n: int) -> tuple[float, float]:
    t0 = time.perf_counter()
    work = asyncio.gather(*(affidavit.aaudit("q", CHUNKS, ANSWER) for _ in range(n)))
    lag = await _lag(work)
    await work
    return lag, time.perf_counter() - t0


async def _blocking(n: int) -> tuple[float, float]:
    async def run() -> None:
        for _ in range(n):
            affidavit.audit("q", CHUNKS, ANSWER)

    t0 = time.perf_counter()
    lag = await _lag(asyncio.ensure_future(run()))
    return lag, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--concurrent", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--output", type=Path, default=ROOT / "benchmarks/results/async_lag.json")
    args = ap.parse_args()
    affidavit.audit("q", CHUNKS, ANSWER)  # warm-up: imports, first call
    rows = []
    for label, workers in (("aaudit, 1 worker", 1), ("aaudit, 2 workers", 2), ("on the loop", 0)):
        if workers:
            concurrency.set_max_workers(workers)
        runs = [
            asyncio.run(_offloaded(args.concurrent) if workers else _blocking(args.concurrent))
            for _ in range(args.repeats)
        ]
        lags = [lag * 1000 for lag, _ in runs]
        walls = [wall * 1000 for _, wall in runs]
        rows.append(
            {
                "setting": label,
                "lag_ms_median": round(statistics.median(lags), 1),
                "lag_ms_max": round(max(lags), 1),
                "wall_ms_median": round(statistics.median(walls), 1),
                "lag_share_of_wall_median": round(
                    statistics.median(lag / wall for lag, wall in zip(lags, walls, strict=True)), 3
                ),
            }
        )
    print(f"{args.concurrent} concurrent audits of 200 chunks, {args.repeats} runs each")
    print(
        f"{'setting':<20} {'lag p50 ms':>10} {'lag max ms':>10} {'wall p50 ms':>11} {'lag/wall':>9}"
    )
    for r in rows:
        print(
            f"{r['setting']:<20} {r['lag_ms_median']:>10} {r['lag_ms_max']:>10} "
            f"{r['wall_ms_median']:>11} {r['lag_share_of_wall_median']:>9}"
        )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    args.output.write_text(
        json.dumps(
            {
                "concurrent": args.concurrent,
                "repeats": args.repeats,
                "rows": rows,
                "machine": {
                    "cpus": os.cpu_count(),
                    "load_average_1m": load,
                    "python": platform.python_version(),
                },
            },
            indent=1,
        )
        + "\n"
    )
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
