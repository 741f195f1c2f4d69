"""Options and the progress display shared by the batch forms of ``check``, ``audit`` and
``ingest`` (``--engine local|ray``). Ray is imported only when ``--engine ray`` runs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from affidavit.cli.common import describe_os_error, fail_usage
from affidavit.core.text import safe_terminal

if TYPE_CHECKING:
    from affidavit.core.batch import BatchReport, JobKind
    from affidavit.core.settings import Settings

EngineOpt = Annotated[
    str | None,
    typer.Option(
        "--engine",
        help="local: sharded and resumable in this process; ray: on Ray workers (the ray "
        "extra). Omitted: today's single-process streaming run.",
    ),
]
AddressOpt = Annotated[
    str | None,
    typer.Option(
        "--address", help="Ray cluster to join (default: start Ray locally).", envvar="RAY_ADDRESS"
    ),
]
WorkersOpt = Annotated[
    int | None, typer.Option("--workers", help="Ray workers, each loading its models once.")
]
ShardOpt = Annotated[
    int | None, typer.Option("--shard-size", help="Input lines per shard (the unit of resume).")
]


def batch_overrides(
    engine: str | None, address: str | None, workers: int | None, shard_size: int | None
) -> dict[str, Any]:
    """Settings overrides for the batch options that were given."""
    batch: dict[str, Any] = {}
    for key, value in (
        ("engine", engine),
        ("address", address),
        ("workers", workers),
        ("shard_size", shard_size),
    ):
        if value is not None:
            batch[key] = value
    return {"batch": batch} if batch else {}


def run_with_progress(
    kind: JobKind, text: str, output: Path, settings: Settings, *, quiet: bool = False
) -> BatchReport:
    """Run a batch job with a progress bar on stderr (rows done, rate, time left)."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from affidavit.batch.runner import run_batch
    from affidavit.core.errors import AffidavitError, InputError, MissingDependencyError

    t0 = time.perf_counter()
    first: list[int] = []
    with Progress(
        TextColumn(f"{kind} [{settings.batch.engine}]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
        disable=quiet,
    ) as bar:
        task = bar.add_task(kind, total=None, rate="")

        def progress(done: int, total: int) -> None:
            if not first:
                first.append(done)  # rows resumed from an earlier run do not count in the rate
            secs = time.perf_counter() - t0
            rate = (done - first[0]) / secs if secs > 0 else 0.0
            bar.update(task, completed=done, total=total, rate=f"{rate:.1f} rows/s")

        try:
            return run_batch(kind, text, output, settings, progress=progress)
        except (InputError, MissingDependencyError) as exc:
            raise fail_usage(exc.message) from None
        except OSError as exc:  # e.g. the output, its lock or its shards cannot be written
            raise fail_usage(describe_os_error(exc)) from None
        except AffidavitError as exc:
            typer.echo(f"error: {safe_terminal(exc.message)}", err=True)
            raise typer.Exit(1) from None
