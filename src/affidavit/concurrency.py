"""Running blocking model work off the event loop, with bounded concurrency.

Every ``a*`` entry point (:func:`affidavit.aaudit`, :func:`affidavit.acheck`,
:func:`affidavit.aask` and the framework integrations' async paths) goes through
:func:`offload`: the call runs in one shared worker pool of at most :func:`max_workers` threads,
so twenty concurrent audits on a 2-core machine queue up instead of oversubscribing the CPU, and
the event loop only ever awaits a future.

Cancellation: a call still waiting for a worker is dropped before it starts; a call already
running finishes in its thread and its result is discarded. Every job is either pure (audit,
check) or writes its only file atomically (a certificate is written to a temporary file and
renamed), so a cancelled call leaves no half-written state.

Example:
    >>> import asyncio
    >>> asyncio.run(offload(sum, [1, 2, 3]))
    6
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

from affidavit.core.errors import ConfigError

P = ParamSpec("P")
T = TypeVar("T")

# model work is CPU bound and its libraries use 1-2 threads each: more workers than cores only
# adds contention, so the default is the core count (at least 2, so one slow call never blocks
# all others)
_DEFAULT_WORKERS = max(2, os.cpu_count() or 2)

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_workers = int(os.environ.get("AFFIDAVIT_MAX_WORKERS", "0") or 0) or _DEFAULT_WORKERS


def max_workers() -> int:
    """How many blocking calls may run at once (``AFFIDAVIT_MAX_WORKERS``, else the core count).

    Example:
        >>> max_workers() >= 1
        True
    """
    return _workers


def set_max_workers(n: int) -> None:
    """Resize the shared worker pool; calls already running finish in the old pool.

    Raises:
        ConfigError: ``n`` is below 1.

    Example:
        >>> old = max_workers(); set_max_workers(3); max_workers()
        3
        >>> set_max_workers(old)
    """
    global _pool, _workers
    if n < 1:
        raise ConfigError(f"max_workers must be >= 1, got {n}")
    with _lock:
        old, _pool, _workers = _pool, None, n
    if old is not None:
        old.shutdown(wait=False, cancel_futures=False)


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=_workers, thread_name_prefix="affidavit")
        return _pool


async def offload(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run ``fn(*args, **kwargs)`` in the shared worker pool and await its result.

    Raises:
        asyncio.CancelledError: the awaiting task was cancelled (any error ``fn`` raises is
            raised here too).
    """
    loop = asyncio.get_running_loop()
    call: Callable[[], Any] = functools.partial(fn, *args, **kwargs)
    # run_in_executor cancels a job that has not started yet when the awaiting task is cancelled
    result: T = await loop.run_in_executor(_executor(), call)
    return result


__all__ = ["max_workers", "offload", "set_max_workers"]
