"""Backpressure and limits: bounded work queues in front of the models, and per-key rate limits.

A `WorkQueue` runs blocking work (the LLM, the verifier) in its own thread pool with a
fixed number of slots and a fixed number of places to wait. A request that finds every slot busy
and every waiting place taken is refused at once (`QueueFull`, HTTP 503 with
``Retry-After``); a request that gets a waiting place waits at most until its deadline
(`Timeout`, HTTP 504). A slot is given back when the work *ends*, not when the caller
stops waiting, so a timed-out or abandoned request never lets more work run than there are slots;
work that can be stopped (a streamed answer) is told to stop through its cancel event.

Examples:
    >>> import asyncio
    >>> q = WorkQueue("verify", concurrency=1, max_waiting=0)
    >>> asyncio.run(q.run(lambda: 2 + 2, timeout=5.0))
    4
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from affidavit.core.errors import AffidavitError

T = TypeVar("T")

__all__ = ["Cancelled", "QueueFull", "RateLimited", "RateLimiter", "Ticket", "Timeout", "WorkQueue"]


class QueueFull(AffidavitError):
    """Every slot is busy and every waiting place taken (HTTP 503 with Retry-After)."""

    stage = "serve"


class Timeout(AffidavitError):
    """The request ran past its deadline (HTTP 504)."""

    stage = "serve"


class RateLimited(AffidavitError):
    """The key sent more requests than its rate allows (HTTP 429 with Retry-After)."""

    stage = "serve"

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Cancelled(AffidavitError):
    """Raised inside work whose caller went away (a client that disconnected mid-stream)."""

    stage = "serve"


class Ticket:
    """A place in a `WorkQueue`: taken by `WorkQueue.enter`, then run once."""

    def __init__(self, queue: WorkQueue) -> None:
        self.queue = queue
        self.cancel = threading.Event()
        self._waiting = True

    def leave(self) -> None:
        """Give the waiting place back without running (the caller went away first)."""
        if self._waiting:
            self._waiting = False
            self.queue.waiting -= 1

    async def run(self, fn: Callable[[], T], *, timeout: float) -> T:
        """Wait for a slot, then run ``fn`` in the queue's threads; at most ``timeout`` seconds.

        Raises:
            Timeout: no slot came free in time, or the work ran past the deadline (it is told
                to stop through ``cancel``; its slot is freed when it actually ends).
            asyncio.CancelledError: the caller was cancelled (``cancel`` is set likewise).
        """
        q = self.queue
        deadline = time.monotonic() + timeout
        try:
            await asyncio.wait_for(q._sem.acquire(), timeout)
        except TimeoutError:
            raise Timeout(
                f"waited {timeout:.0f}s for a free {q.name} slot; try again later"
            ) from None
        finally:
            self.leave()
        q.running += 1
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(q._executor, fn)

        def release(done: asyncio.Future[T]) -> None:
            q.running -= 1
            q._sem.release()
            if not done.cancelled():
                done.exception()  # retrieved: an abandoned failure is not an unhandled one

        future.add_done_callback(release)
        try:
            return await asyncio.wait_for(asyncio.shield(future), deadline - time.monotonic())
        except TimeoutError:
            self.cancel.set()
            raise Timeout(
                f"the request ran past its {timeout:.0f}s budget (serve.request_timeout_s)"
            ) from None
        except asyncio.CancelledError:
            self.cancel.set()
            raise


class WorkQueue:
    """``concurrency`` slots, ``max_waiting`` places to wait; see the module docstring.

    Args:
        name: what the slots are for (``llm``, ``verify``), for messages and metrics.
        concurrency: work items run at once (threads).
        max_waiting: requests allowed to wait for a slot; one more is refused.
    """

    def __init__(self, name: str, *, concurrency: int, max_waiting: int) -> None:
        if concurrency < 1 or max_waiting < 0:
            raise ValueError("concurrency must be >= 1 and max_waiting >= 0")
        self.name = name
        self.concurrency = concurrency
        self.max_waiting = max_waiting
        self.waiting = 0
        self.running = 0
        self._sem = asyncio.Semaphore(concurrency)
        self._executor = ThreadPoolExecutor(concurrency, thread_name_prefix=f"affidavit-{name}")

    @property
    def depth(self) -> int:
        """Requests running or waiting."""
        return self.waiting + self.running

    def enter(self) -> Ticket:
        """Take a waiting place now, or refuse.

        Raises:
            QueueFull: every slot busy and every waiting place taken.
        """
        # count places taken, not slots held: tickets taken in the same instant have not yet
        # acquired their slots, and each must still find a place
        if self.running + self.waiting >= self.concurrency + self.max_waiting:
            raise QueueFull(
                f"the server is busy: all {self.concurrency} {self.name} slot(s) and "
                f"{self.max_waiting} waiting place(s) are taken (serve.{self.name}_concurrency, "
                f"serve.{self.name}_queue); retry after the Retry-After header's seconds"
            )
        self.waiting += 1
        return Ticket(self)

    async def run(self, fn: Callable[[], T], *, timeout: float) -> T:
        """``enter()`` and run ``fn``: the whole round trip for work that needs no cancel event."""
        return await self.enter().run(fn, timeout=timeout)

    def close(self) -> None:
        """Stop the threads (running work finishes first)."""
        self._executor.shutdown(wait=False, cancel_futures=True)


class RateLimiter:
    """A token bucket per caller: ``burst`` requests at once, refilled at ``per_minute``.

    Examples:
        >>> r = RateLimiter(per_minute=60, burst=1)
        >>> r.check("k1")
        >>> try:
        ...     r.check("k1")
        ... except RateLimited as exc:
        ...     round(exc.retry_after)
        1
    """

    def __init__(self, *, per_minute: float, burst: int) -> None:
        self.rate = per_minute / 60.0
        self.burst = float(burst)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()
        self._prune_at = 1024  # buckets held before the full ones are dropped

    def check(self, caller: str) -> None:
        """Take one token for ``caller``.

        Raises:
            RateLimited: no token left; ``retry_after`` says when the next one comes.
        """
        if self.rate <= 0:
            return
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(caller, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            if tokens < 1.0:
                self._buckets[caller] = (tokens, now)
                wait = (1.0 - tokens) / self.rate
                raise RateLimited(
                    f"rate limit reached ({self.rate * 60:.0f} requests a minute, bursts of "
                    f"{self.burst:.0f}); retry in {wait:.1f}s",
                    retry_after=wait,
                )
            self._buckets[caller] = (tokens - 1.0, now)
            if len(self._buckets) > self._prune_at:
                self._prune(now)

    def _prune(self, now: float) -> None:
        """Drop the buckets that have refilled to ``burst``: the same as no bucket, so nothing
        is forgotten, and a caller rotating names (client addresses) cannot grow memory beyond
        what it sent within one refill time. Amortised: runs when the count has doubled."""
        self._buckets = {
            caller: (tokens, last)
            for caller, (tokens, last) in self._buckets.items()
            if tokens + (now - last) * self.rate < self.burst
        }
        self._prune_at = max(1024, 2 * len(self._buckets))

    def blocked(self, caller: str) -> float | None:
        """Seconds until ``caller`` has a token again, or None when it has one now.

        Only looks: takes nothing, so a caller can be sorted out before any work is spent on it.
        """
        if self.rate <= 0:
            return None
        bucket = self._buckets.get(caller)
        if bucket is None:
            return None
        tokens, last = bucket
        tokens = min(self.burst, tokens + (time.monotonic() - last) * self.rate)
        return None if tokens >= 1.0 else (1.0 - tokens) / self.rate

    def refund(self, caller: str) -> None:
        """Give back the token of a `check` that turned out not to count (never above
        ``burst``): a limiter of failures takes a token before the work and refunds a success."""
        if self.rate <= 0:
            return
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(caller, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate + 1.0)
            self._buckets[caller] = (tokens, now)
