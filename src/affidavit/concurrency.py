"""Running blocking model work off the event loop, with bounded concurrency.

Every ``a*`` entry point (`affidavit.aaudit`, `affidavit.acheck`,
`affidavit.aask` and the framework integrations' async paths) goes through
`offload` or `offload_process`, so the event loop only ever awaits a future:

- `offload` runs the call in one shared pool of at most `max_workers` threads. Model
  inference (onnxruntime, llama.cpp) releases the GIL, so threads run it in parallel while the
  loop keeps going.
- `offload_process` runs a picklable call in one shared pool of at most
  `max_workers` worker processes. The lexical audit is pure Python: in a thread it would
  hold the GIL and delay the loop's own callbacks; in a process it cannot.

Either way twenty concurrent calls on a 2-core machine queue up instead of oversubscribing it.

Cancellation: a call still waiting for a worker is dropped before it starts; a call already
running finishes in its thread and its result is discarded. Every job is either pure (audit,
check) or writes its only file atomically (a certificate is written to a temporary file and
renamed), so a cancelled call leaves no half-written state.

Examples:
    >>> import asyncio
    >>> asyncio.run(offload(sum, [1, 2, 3]))
    6
"""

from __future__ import annotations

import asyncio
import functools
import multiprocessing
import os
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
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
_processes: ProcessPoolExecutor | None = None
_workers = int(os.environ.get("AFFIDAVIT_MAX_WORKERS", "0") or 0) or _DEFAULT_WORKERS


def max_workers() -> int:
    """How many blocking calls may run at once (``AFFIDAVIT_MAX_WORKERS``, else the core count).

    Examples:
        >>> max_workers() >= 1
        True
    """
    return _workers


def set_max_workers(n: int) -> None:
    """Resize the shared worker pool; calls already running finish in the old pool.

    Raises:
        ConfigError: ``n`` is below 1.

    Examples:
        >>> old = max_workers(); set_max_workers(3); max_workers()
        3
        >>> set_max_workers(old)
    """
    global _pool, _processes, _workers
    if n < 1:
        raise ConfigError(f"max_workers must be >= 1, got {n}")
    with _lock:
        old, _pool, _workers = _pool, None, n
        old_processes, _processes = _processes, None
    if old is not None:
        old.shutdown(wait=False, cancel_futures=False)
    if old_processes is not None:
        old_processes.shutdown(wait=False, cancel_futures=False)


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=_workers, thread_name_prefix="affidavit")
        return _pool


def _process_executor() -> ProcessPoolExecutor:
    global _processes
    with _lock:
        if _processes is None:
            # spawn, not fork: the parent may hold threads (model runtimes, the thread pool)
            # whose locks a forked child would inherit held
            ctx = multiprocessing.get_context("spawn")
            _processes = ProcessPoolExecutor(
                max_workers=_workers, mp_context=ctx, initializer=_die_with_parent
            )
        return _processes


def _die_with_parent() -> None:
    """In each pool worker: end when the parent ends, however it ends (issue 25.9: after a
    SIGTERM to ``affidavit mcp``, its workers and their resource tracker lived on with parent
    1). Linux's ``PR_SET_PDEATHSIG``; elsewhere the pool's own shutdown is all there is."""
    import ctypes
    import signal
    import sys

    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, int(signal.SIGTERM), 0, 0, 0)
    except OSError:
        return
    # the parent may already be gone (it died while this worker started)
    if os.getppid() == 1:
        os._exit(0)


def _reset_processes(broken: ProcessPoolExecutor) -> None:
    global _processes
    with _lock:
        if _processes is broken:
            _processes = None
    broken.shutdown(wait=False, cancel_futures=True)


async def offload_process(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run ``fn(*args, **kwargs)`` in the shared worker-process pool and await its result.

    ``fn`` must be a module-level function and its arguments and result picklable. The first
    call starts the workers (each imports affidavit once). A worker that dies breaks only the
    calls it held: the pool is replaced for the next call.

    Raises:
        asyncio.CancelledError: the awaiting task was cancelled (any error ``fn`` raises is
            raised here too; pickling errors as ``TypeError`` or ``pickle.PicklingError``).
        ConfigError: called while a spawned worker imports the caller's script (top-level code
            not under ``if __name__ == "__main__":``); the message says so.
    """
    from concurrent.futures.process import BrokenProcessPool

    if getattr(multiprocessing.current_process(), "_inheriting", False):
        # this is a worker process importing the caller's script again (spawn does that), and
        # the script called us from its top level: starting workers here would recurse
        raise ConfigError(
            "affidavit started a worker process, which imported your script again and reached "
            'code that is not under `if __name__ == "__main__":`; put the script\'s top-level '
            "calls (asyncio.run(...)) under that guard. The call in your main process goes on "
            "in a thread."
        )
    loop = asyncio.get_running_loop()
    pool = _process_executor()
    call: Callable[[], Any] = functools.partial(fn, *args, **kwargs)
    try:
        result: T = await loop.run_in_executor(pool, call)
    except BrokenProcessPool:
        _reset_processes(pool)
        raise
    return result


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


__all__ = ["max_workers", "offload", "offload_process", "set_max_workers"]
