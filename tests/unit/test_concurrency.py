"""The async entry points keep the event loop responsive and bound their concurrency."""

from __future__ import annotations

import asyncio
import doctest
import importlib
import threading
import time
from pathlib import Path

import pytest

import affidavit
from affidavit import concurrency
from affidavit.core.types import Chunk, Hit

# enough text that 20 audits take about a second on a 2-core machine
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


async def _max_lag(work: asyncio.Future[object], tick: float = 0.005) -> float:
    """Largest delay of a periodic timer beyond its period while ``work`` runs."""
    worst = 0.0
    while not work.done():
        t0 = time.perf_counter()
        await asyncio.sleep(tick)
        worst = max(worst, time.perf_counter() - t0 - tick)
    return worst


@pytest.mark.usefixtures("frozen_heap")
def test_twenty_concurrent_audits_do_not_block_the_event_loop() -> None:
    async def main() -> tuple[float, float, list[affidavit.AuditReport]]:
        affidavit.audit("q", CHUNKS, ANSWER)  # warm the imports outside the measurement
        await affidavit.aaudit("q", CHUNKS, ANSWER)  # and start the worker processes
        t0 = time.perf_counter()
        work = asyncio.gather(*(affidavit.aaudit("q", CHUNKS, ANSWER) for _ in range(20)))
        lag = await _max_lag(work)
        return lag, time.perf_counter() - t0, list(await work)

    # frozen_heap: a full collection of the test session's heap, which stalls any loop, is the
    # likely cause of CI's one failure here (lag 0.82 s of 1.32 s); the next test shows the
    # measurement still discriminates
    lag, wall, reports = asyncio.run(main())
    assert len(reports) == 20 and all(not r.trust_passed for r in reports)
    # run on the loop, the audits would stall its timer for the whole wall time (lag ~ wall,
    # next test); in worker processes the timer keeps firing and the worst delay is a small
    # share of the work (a loaded machine's scheduler): 0.02-0.05 of wall measured on 2 shared
    # cores at load average 15 (benchmarks/async_lag.py)
    assert lag < wall / 2, (lag, wall)


@pytest.mark.usefixtures("frozen_heap")
def test_the_same_audits_on_the_loop_would_block_it() -> None:
    """The measurement discriminates: a blocking audit stalls the timer for its whole run."""

    async def main() -> tuple[float, float]:
        async def blocking() -> None:
            for _ in range(5):
                affidavit.audit("q", CHUNKS, ANSWER)

        t0 = time.perf_counter()
        lag = await _max_lag(asyncio.ensure_future(blocking()))
        return lag, time.perf_counter() - t0

    lag, wall = asyncio.run(main())
    assert lag > wall / 2


def test_concurrency_is_bounded_by_the_pool() -> None:
    running = 0
    peak = 0
    lock = threading.Lock()

    def job() -> None:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.02)
        with lock:
            running -= 1

    old = concurrency.max_workers()
    concurrency.set_max_workers(2)
    try:

        async def main() -> None:
            await asyncio.gather(*(concurrency.offload(job) for _ in range(10)))

        asyncio.run(main())
    finally:
        concurrency.set_max_workers(old)
    assert peak == 2


def test_a_cancelled_call_that_never_started_does_not_run() -> None:
    started: list[int] = []
    release = threading.Event()

    def blocker() -> None:
        release.wait(5)

    def job(i: int) -> None:
        started.append(i)

    old = concurrency.max_workers()
    concurrency.set_max_workers(1)
    try:

        async def main() -> None:
            first = asyncio.ensure_future(concurrency.offload(blocker))
            queued = asyncio.ensure_future(concurrency.offload(job, 1))
            await asyncio.sleep(0.05)
            queued.cancel()
            await asyncio.sleep(0.01)  # the task hands the cancellation to the pool's future
            release.set()
            await first
            with pytest.raises(asyncio.CancelledError):
                await queued
            await asyncio.sleep(0.05)

        asyncio.run(main())
    finally:
        concurrency.set_max_workers(old)
    assert started == []


class _SlowGenerator:
    """Yields pieces slowly so a test can cancel mid-generation."""

    name = "slow"

    def __init__(self) -> None:
        self.pieces = 0

    def stream(self, messages: object, **_: object) -> object:
        for piece in ["Rome ", "is ", "in ", "Italy ", "[1]", "."]:
            time.sleep(0.05)
            self.pieces += 1
            yield piece

    def generate(self, messages: object, **_: object) -> str:
        return "".join(self.stream(messages))


class _OneHit:
    def search(self, query: str, k: int = 10, mode: str = "hybrid", filters: object = None):
        return [Hit(chunk=Chunk(text="Rome is in Italy."), score=1.0, rank=1, mode="bm25")]


def test_cancelling_aask_stops_generation_and_writes_no_certificate(tmp_path: Path) -> None:
    from affidavit.claims.extractor import RuleBasedExtractor
    from affidavit.core.settings import load_settings
    from affidavit.pipeline.ask import AskPipeline
    from affidavit.testing.verifiers import KeywordVerifier

    written: list[Path] = []

    def writer(*args: object, **kwargs: object) -> None:
        written.append(Path(str(args[-1])))

    gen = _SlowGenerator()
    pipe = AskPipeline(
        retriever=_OneHit(),
        generator=gen,  # type: ignore[arg-type]
        extractor=RuleBasedExtractor(),
        verifier=KeywordVerifier(),
        settings=load_settings(),
        certificate_writer=writer,
    )

    async def main() -> None:
        task = asyncio.ensure_future(pipe.aask("Where is Rome?", certify=tmp_path / "c.json"))
        await asyncio.sleep(0.12)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.4)  # long enough for an unstopped worker to finish

    asyncio.run(main())
    assert gen.pieces < 6
    assert written == []

    async def full() -> str:
        tokens: list[str] = []
        result = await pipe.aask("Where is Rome?", on_token=tokens.append)
        await asyncio.sleep(0)  # relayed pieces are scheduled on the loop
        assert "".join(tokens) == "Rome is in Italy [1]."
        return result.answer

    assert asyncio.run(full()) == "Rome is in Italy [1]."


@pytest.mark.parametrize(
    "name", ["affidavit.concurrency", "affidavit.pipeline.check", "affidavit.testing.verifiers"]
)
def test_docstring_examples_run(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0 and result.attempted > 0


def test_aaudit_in_a_worker_process_keeps_enforce_and_input_errors() -> None:
    from affidavit.core.errors import EnforcementError, InputError

    with pytest.raises(EnforcementError) as err:
        asyncio.run(affidavit.aaudit("q", CHUNKS[:3], ANSWER, {"mode": "enforce"}))
    assert err.value.report.trust_passed is False
    assert err.value.report.claims[0].failed_checks[0].check == "date"
    with pytest.raises(InputError, match=r"chunks\[0\]"):
        asyncio.run(affidavit.aaudit("q", [{"url": "https://x.org"}], ANSWER))


def test_aaudit_falls_back_to_a_thread_for_inputs_a_process_cannot_take() -> None:
    from affidavit.claims.extractor import RuleBasedExtractor

    gen = (c for c in CHUNKS[:3])  # a generator cannot be pickled
    report = asyncio.run(affidavit.aaudit("q", list(gen), ANSWER, extractor=RuleBasedExtractor()))
    assert report.trust_passed is False
    lazy = asyncio.run(affidavit.aaudit("q", (c for c in CHUNKS[:3]), ANSWER))  # type: ignore[arg-type]
    assert lazy.claims == report.claims
