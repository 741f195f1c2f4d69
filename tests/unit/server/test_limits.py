"""Work queues and rate limits: refusal when full, deadlines, slots freed only when work ends."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from affidavit.server.limits import QueueFull, RateLimited, RateLimiter, Timeout, WorkQueue


def test_full_queue_refuses_at_once() -> None:
    async def main() -> None:
        q = WorkQueue("llm", concurrency=1, max_waiting=1)
        gate = threading.Event()
        first = asyncio.ensure_future(q.run(lambda: gate.wait(5), timeout=5))
        await asyncio.sleep(0.05)
        second = asyncio.ensure_future(q.run(lambda: 2, timeout=5))  # waits
        await asyncio.sleep(0.05)
        assert (q.running, q.waiting) == (1, 1)
        t0 = time.monotonic()
        with pytest.raises(QueueFull, match="llm slot"):
            q.enter()
        assert time.monotonic() - t0 < 0.01
        gate.set()
        assert await first is True
        assert await second == 2
        assert q.depth == 0
        q.close()

    asyncio.run(main())


def test_places_taken_at_the_same_instant_count() -> None:
    q = WorkQueue("llm", concurrency=1, max_waiting=2)
    tickets = [q.enter() for _ in range(3)]  # none has started yet
    with pytest.raises(QueueFull):
        q.enter()
    for t in tickets:
        t.leave()
    assert q.depth == 0
    q.enter().leave()
    q.close()


def test_timeout_keeps_the_slot_until_the_work_ends() -> None:
    async def main() -> None:
        q = WorkQueue("verify", concurrency=1, max_waiting=0)
        gate = threading.Event()
        ticket = q.enter()

        def work() -> str:
            gate.wait(5)
            return "late"

        with pytest.raises(Timeout, match="budget"):
            await ticket.run(work, timeout=0.1)
        assert ticket.cancel.is_set()  # the work is told to stop
        # the abandoned work still runs: its slot is not handed to anyone else yet
        assert q.running == 1
        with pytest.raises(QueueFull):
            q.enter()
        gate.set()
        for _ in range(100):
            if q.running == 0:
                break
            await asyncio.sleep(0.01)
        assert q.depth == 0
        assert await q.run(lambda: "next", timeout=1) == "next"
        q.close()

    asyncio.run(main())


def test_waiting_past_the_deadline_is_a_timeout() -> None:
    async def main() -> None:
        q = WorkQueue("llm", concurrency=1, max_waiting=1)
        gate = threading.Event()
        first = asyncio.ensure_future(q.run(lambda: gate.wait(5), timeout=5))
        await asyncio.sleep(0.05)
        with pytest.raises(Timeout, match="waited"):
            await q.run(lambda: 1, timeout=0.1)
        assert q.waiting == 0
        gate.set()
        await first
        q.close()

    asyncio.run(main())


def test_failures_propagate() -> None:
    async def main() -> None:
        q = WorkQueue("verify", concurrency=2, max_waiting=0)

        def boom() -> None:
            raise ValueError("bad")

        with pytest.raises(ValueError, match="bad"):
            await q.run(boom, timeout=1)
        assert q.depth == 0
        q.close()

    asyncio.run(main())


def test_rate_limiter_per_caller() -> None:
    r = RateLimiter(per_minute=60, burst=2)
    r.check("a")
    r.check("a")
    with pytest.raises(RateLimited) as exc:
        r.check("a")
    assert 0 < exc.value.retry_after <= 1.0
    r.check("b")  # another caller has its own bucket
    RateLimiter(per_minute=0, burst=1).check("a")  # 0: no limit


def test_bad_queue_config() -> None:
    with pytest.raises(ValueError):
        WorkQueue("x", concurrency=0, max_waiting=0)


def test_rate_limiter_blocked_peeks_without_taking() -> None:
    r = RateLimiter(per_minute=60, burst=2)
    assert r.blocked("a") is None
    r.check("a")
    assert r.blocked("a") is None  # one token left, none taken by looking
    r.check("a")
    wait = r.blocked("a")
    assert wait is not None and 0 < wait <= 1.0
    assert r.blocked("b") is None
    assert RateLimiter(per_minute=0, burst=1).blocked("a") is None


def test_rate_limiter_refund_gives_a_token_back_up_to_the_burst() -> None:
    r = RateLimiter(per_minute=60, burst=2)
    r.check("a")
    r.check("a")
    r.refund("a")  # a check that turned out not to count (a good key)
    assert r.blocked("a") is None
    r.check("a")
    with pytest.raises(RateLimited):
        r.check("a")
    fresh = RateLimiter(per_minute=60, burst=1)
    fresh.refund("z")  # never above the burst
    fresh.check("z")
    with pytest.raises(RateLimited):
        fresh.check("z")


def test_rate_limiter_forgets_callers_whose_bucket_is_full_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bucket was kept for every caller ever seen: the failed-check limiter is keyed by client
    address, so a client rotating addresses (an IPv6 prefix) grew the server's memory without
    end. A bucket refilled to its burst is the same as none, and is dropped."""
    import affidavit.server.limits as limits

    now = [1000.0]
    monkeypatch.setattr(limits.time, "monotonic", lambda: now[0])
    r = RateLimiter(per_minute=60, burst=2)
    for round_ in range(10):
        for i in range(5000):
            r.check(f"2001:db8:{round_}::{i}")
        now[0] += 5.0  # every bucket refills within 2 s
    assert len(r._buckets) <= 12_000, len(r._buckets)
    # what is kept still limits: a caller that used its burst is refused until it refills
    r.check("x")
    r.check("x")
    with pytest.raises(RateLimited):
        r.check("x")
    assert r.blocked("x") is not None
