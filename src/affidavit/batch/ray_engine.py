"""The Ray engine: the one module that imports ``ray`` (the ``ray`` extra).

Each worker is a Ray actor that builds its job (loads its models) once and then takes shards. The
driver keeps every worker busy with one shard in hand and one queued, and writes each finished
shard itself, so workers need no shared filesystem and a cluster joined with ``--address``
works the same as the local Ray this module starts by default.

Examples:
    >>> for result in run_ray("check", settings, shards):  # doctest: +SKIP
    ...     print(result.index, result.counts)
"""

from __future__ import annotations

import logging
import os
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from affidavit.batch.jobs import Row, make_job
from affidavit.core.batch import JobKind, ShardResult
from affidavit.core.errors import AffidavitError, MissingDependencyError
from affidavit.core.settings import BatchSettings, Settings

logger = logging.getLogger(__name__)


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise MissingDependencyError("ray", "ray", purpose="--engine ray") from exc
    return ray


class BatchError(AffidavitError):
    """A Ray worker failed or Ray could not start."""

    stage = "batch"


@contextmanager
def ray_session(cfg: BatchSettings) -> Iterator[Any]:
    """Join ``cfg.address``, or start a local Ray sized for ``cfg.workers`` (and stop it after).

    Raises:
        MissingDependencyError: ray is not installed.
        BatchError: Ray cannot start or the cluster cannot be reached.
    """
    ray = _ray()
    started = False
    if not ray.is_initialized():
        kw: dict[str, Any] = {
            "include_dashboard": False,
            "log_to_driver": False,
            "logging_level": logging.WARNING,
        }
        if cfg.address:
            kw["address"] = cfg.address
        else:
            kw["num_cpus"] = cfg.workers * cfg.worker_threads
            kw["object_store_memory"] = cfg.object_store_mb * 1024 * 1024
            # Ray starts workers 15 nice levels below itself by default; here the workers are
            # the job, and on a busy machine they starved (1-2 % CPU while loading the models)
            os.environ.setdefault("RAY_worker_niceness", "0")
        # a local Ray waits 30 s for its raylet, which a busy machine can miss: one more try
        attempts = 1 if cfg.address else 2
        for attempt in range(1, attempts + 1):
            try:
                ray.init(**kw)
                break
            except Exception as exc:  # ray raises ConnectionError, RuntimeError, bare Exception
                ray.shutdown()
                if attempt == attempts:
                    where = cfg.address or "a local Ray"
                    raise BatchError(f"cannot start or join {where}: {exc}", source=where) from exc
                logger.warning("Ray did not start (%s); trying again", exc)
        started = True
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


def _worker_settings(settings: Settings) -> Settings:
    """Settings for one worker: each uses ``batch.worker_threads`` inference threads."""
    n = settings.batch.worker_threads
    return settings.model_copy(
        update={
            "verify": settings.verify.model_copy(update={"threads": n}),
            "embed": settings.embed.model_copy(update={"threads": n}),
        }
    )


class _JobWorker:
    """Body of a Ray actor: builds the job once, then runs shards."""

    def __init__(self, kind: JobKind, settings: Settings) -> None:
        self.job = make_job(kind, settings)

    def run(self, index: int, rows: Sequence[Row]) -> ShardResult:
        return self.job.run(index, rows)


def _actor_options(cfg: BatchSettings) -> dict[str, Any]:
    threads = str(cfg.worker_threads)
    env = {"OMP_NUM_THREADS": threads, "OPENBLAS_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
    return {"num_cpus": cfg.worker_threads, "runtime_env": {"env_vars": env}}


def run_ray(
    kind: JobKind, settings: Settings, shards: Sequence[tuple[int, Sequence[Row]]]
) -> Generator[ShardResult, None, None]:
    """Run shards on Ray actors; yields each shard's result as it finishes (any order).

    Raises:
        MissingDependencyError: ray is not installed.
        BatchError: Ray cannot start, or a worker failed.
    """
    if not shards:
        return
    cfg = settings.batch
    with ray_session(cfg) as ray:
        actor_cls = ray.remote(_JobWorker).options(**_actor_options(cfg))
        n = min(cfg.workers, len(shards))
        worker_settings = _worker_settings(settings)
        actors = [actor_cls.remote(kind, worker_settings) for _ in range(n)]
        queue = list(shards)
        queue.reverse()
        in_flight: dict[Any, Any] = {}

        def submit(actor: Any) -> None:
            if queue:
                index, rows = queue.pop()
                in_flight[actor.run.remote(index, list(rows))] = actor

        # one shard running and one queued per worker keeps them busy while the driver writes
        for actor in actors * 2:
            submit(actor)
        try:
            while in_flight:
                ready, _ = ray.wait(list(in_flight), num_returns=1)
                actor = in_flight.pop(ready[0])
                try:
                    result = ray.get(ready[0])
                except Exception as exc:  # RayTaskError / RayActorError wrap the worker's error
                    raise BatchError(f"a Ray worker failed: {exc}", stage="batch") from exc
                submit(actor)
                yield result
        finally:
            for actor in actors:
                ray.kill(actor)


class _EmbedWorker:
    """Body of a Ray actor that embeds texts with the configured embedder, loaded once."""

    def __init__(self, settings: Settings) -> None:
        from affidavit.retrieve.embedders import make_embedder

        self.embedder = make_embedder(settings.embed)

    def embed(self, texts: list[str]) -> Any:
        return self.embedder.embed(texts)


class RayEmbedder:
    """An `Embedder` that spreads each call over Ray actors.

    Each actor loads the configured embedder once; a call is split into one contiguous slice per
    actor and the vectors are joined in order, so the result is the same as one process's. Use
    it inside `ray_session`.

    Args:
        settings: the ``embed`` section decides the model; ``batch`` the workers.
        name: the wrapped embedder's name (what the store records).
        dim: its vector dimension.
    """

    def __init__(self, settings: Settings, name: str, dim: int) -> None:
        ray = _ray()
        self._ray = ray
        cfg = settings.batch
        actor_cls = ray.remote(_EmbedWorker).options(**_actor_options(cfg))
        ws = _worker_settings(settings)
        self._actors = [actor_cls.remote(ws) for _ in range(cfg.workers)]
        self.name = name
        self.dim = dim

    def config(self) -> dict[str, Any]:
        """The effective configuration."""
        return {"name": self.name, "engine": "ray", "workers": len(self._actors)}

    def embed(self, texts: list[str]) -> Any:
        """Embed ``texts`` across the actors; float32 (len(texts), dim)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        n = len(self._actors)
        step = -(-len(texts) // n)
        refs = [
            a.embed.remote(texts[i * step : (i + 1) * step])
            for i, a in enumerate(self._actors)
            if texts[i * step : (i + 1) * step]
        ]
        try:
            parts = self._ray.get(refs)
        except Exception as exc:  # RayTaskError wraps the worker's error
            raise BatchError(f"a Ray embedding worker failed: {exc}", stage="ingest") from exc
        out = np.concatenate(parts).astype(np.float32, copy=False)
        self.dim = int(out.shape[1])
        return out

    def close(self) -> None:
        """Stop the actors."""
        for a in self._actors:
            self._ray.kill(a)
