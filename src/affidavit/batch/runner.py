"""Run a batch job over a JSONL input on one process or on Ray, resumably.

Examples:
    >>> from affidavit.core.settings import Settings
    >>> report = run_batch("check", text, Path("out.jsonl"), Settings())  # doctest: +SKIP
    >>> report.counts  # doctest: +SKIP
    {'malformed': 0, 'incomplete': 0}
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator, Sequence
from pathlib import Path

from affidavit.batch.jobs import Row, job_fingerprint, make_job
from affidavit.batch.shards import ShardFolder, exclusive_output, manifest_for, plan, sweep
from affidavit.core.batch import BatchReport, JobKind, ShardResult
from affidavit.core.certificate import ModelIdentity
from affidavit.core.errors import InputError
from affidavit.core.settings import Settings

logger = logging.getLogger(__name__)

ProgressFn = Callable[[int, int], None]
"""Called as ``progress(rows_done, rows_total)`` after each shard."""


def run_local(
    kind: JobKind, settings: Settings, shards: Sequence[tuple[int, Sequence[Row]]]
) -> Generator[ShardResult, None, None]:
    """Run shards one after another in this process (the job is built once)."""
    if not shards:
        return
    job = make_job(kind, settings)
    for index, rows in shards:
        yield job.run(index, rows)


def _names(models: Sequence[ModelIdentity]) -> str:
    return ", ".join(f"{m.name} {m.sha256[:12]}" for m in models) or "none recorded"


def _other_models(
    folder: ShardFolder, recorded: Sequence[ModelIdentity], now: Sequence[ModelIdentity]
) -> InputError:
    return InputError(
        f"{folder.folder} holds shards made by other models ({_names(recorded)}) than this "
        f"run's ({_names(now)}): one output never mixes two models' verdicts; restore the "
        "model, or remove the folder (or choose another --output) to start again",
        source=str(folder.folder),
    )


def _recorded_models(folder: ShardFolder, done: Sequence[int]) -> tuple[ModelIdentity, ...] | None:
    """The models the finished shards record (None when none is finished).

    Raises:
        InputError: a counts file is damaged, or two shards were made by other models.
    """
    models: tuple[ModelIdentity, ...] | None = None
    for i in done:
        stats = folder.read_stats(i)
        if models is None:
            models = stats.models
        elif stats.models != models:
            raise _other_models(folder, models, stats.models)
    return models


def run_batch(
    kind: JobKind,
    text: str,
    output: Path,
    settings: Settings,
    *,
    progress: ProgressFn | None = None,
) -> BatchReport:
    """Run ``kind`` over the JSONL ``text``, writing shards beside ``output`` and joining them.

    The engine is ``settings.batch.engine``. Finished shards of an interrupted earlier run with
    the same input and settings are skipped.

    Raises:
        InputError: the shard folder belongs to another input or other settings, or was made by
            other models (a model file replaced at the same path), or its manifest or a shard's
            counts file is damaged; another process is running a job with the same output; or
            the shards do not add up.
        MissingDependencyError: the ray engine without ray installed.
    """
    with exclusive_output(output):
        return _run_batch(kind, text, output, settings, progress=progress)


def _run_batch(
    kind: JobKind,
    text: str,
    output: Path,
    settings: Settings,
    *,
    progress: ProgressFn | None = None,
) -> BatchReport:
    t0 = time.perf_counter()
    cfg = settings.batch
    for path in sweep(output):
        logger.info("removed %s, left by a killed run", path)
    shards = plan(text, cfg.shard_size)
    folder = ShardFolder(
        output, manifest_for(text, cfg.shard_size, job_fingerprint(kind, settings))
    )
    todo = [(i, rows) for i, rows in enumerate(shards) if not folder.done(i)]
    resumed = len(shards) - len(todo)
    # read now, not after the run: a damaged counts file stops the run before any work
    models = _recorded_models(folder, [i for i in range(len(shards)) if folder.done(i)])
    total = sum(len(s) for s in shards)
    done_rows = sum(len(shards[i]) for i in range(len(shards)) if folder.done(i))
    if resumed:
        logger.info("resuming %s: %d of %d shards already done", output, resumed, len(shards))
    if progress:
        progress(done_rows, total)
    results: Generator[ShardResult, None, None]
    if cfg.engine == "ray":
        from affidavit.batch.ray_engine import run_ray

        results = run_ray(kind, settings, todo)
    else:
        results = run_local(kind, settings, todo)
    try:
        for result in results:
            if models is None:
                models = result.models
            elif result.models != models:
                raise _other_models(folder, models, result.models)
            folder.write(result)
            done_rows += len(result.lines)
            if progress:
                progress(done_rows, total)
    finally:
        results.close()  # stops the workers (and a Ray this run started) even when interrupted
    counts: dict[str, int] = {}
    warnings: dict[str, None] = {}
    for i in range(len(shards)):
        stats = folder.read_stats(i)
        for key, n in stats.counts.items():
            counts[key] = counts.get(key, 0) + n
        warnings.update(dict.fromkeys(stats.warnings))
    folder.join(len(shards), expected_rows=total)
    return BatchReport(
        kind=kind,
        engine=cfg.engine,
        output=str(output),
        rows=total,
        shards=len(shards),
        resumed_shards=resumed,
        counts=counts,
        warnings=tuple(warnings),
        seconds=time.perf_counter() - t0,
        workers=cfg.workers if cfg.engine == "ray" else 1,
    )
