"""``affidavit ingest`` and ``affidavit search``.

Exit codes:
    ingest: 0 every input ingested or unchanged; 1 at least one input failed (the report lists
    each with its reason; everything else was still ingested); 2 usage error (no such path,
    bad option or config, store unusable), or the store's disk refused a write during the run
    (full, read-only, failing: the run stops there; what it stored stays).
    search: 0 success (also with no hits); 2 usage or input error (no store, bad queries file,
    an --output that cannot be written).
    See ``docs/cli-exit-codes.md``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from affidavit.cli.batch import AddressOpt, EngineOpt, WorkersOpt, batch_overrides
from affidavit.cli.common import (
    EXIT_FAIL,
    EXIT_OK,
    cli_settings,
    describe_os_error,
    dump_json,
    fail_usage,
    path_exists,
    safe,
    safe_line,
)
from affidavit.core.text import safe_terminal

if TYPE_CHECKING:
    from affidavit.core.retrieval import IngestReport
    from affidavit.core.settings import Settings
    from affidavit.core.types import Hit

StoreOpt = Annotated[
    Path | None,
    typer.Option(
        "--store", help="Store folder (default: store.path, .affidavit).", envvar="AFFIDAVIT_STORE"
    ),
]
ConfigOpt = Annotated[Path | None, typer.Option("--config", help="affidavit.toml to use.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _open(
    settings: Settings, store: Path | None, *, must_exist: bool, read_only: bool = False
) -> Any:
    from affidavit.core.errors import AffidavitError
    from affidavit.store.factory import make_store

    where = store or settings.store.path
    if (
        must_exist
        and settings.store.backend == "local"
        and not path_exists(where / "store.sqlite", "file")
    ):
        raise fail_usage(f"no store at {where} (run `affidavit ingest PATH` first)")
    try:
        return make_store(settings.store, path=where, read_only=read_only)
    except AffidavitError as exc:
        raise fail_usage(exc.message) from None
    except OSError as exc:  # a file where the folder should be, no permission
        raise fail_usage(f"cannot open store: {describe_os_error(exc)}") from None


def _embedder(settings: Settings) -> Any:
    from affidavit.core.errors import AffidavitError
    from affidavit.retrieve.embedders import make_embedder

    try:
        return make_embedder(settings.embed)
    except AffidavitError as exc:
        raise fail_usage(exc.message) from None


def _print_report(report: IngestReport) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(stderr=False, highlight=False)
    counts = report.counts()
    table = Table(title=f"ingest into {safe(report.store)} ({report.seconds:.1f}s)")
    for name in counts:
        table.add_column(name, justify="right")
    table.add_row(*(str(v) for v in counts.values()))
    console.print(table)
    console.print(f"chunks in store: {report.chunks_total}")
    for o in report.outcomes:
        # file names and reasons quote the input: escaped, never interpreted
        if o.status == "failed":
            console.print(f"[red]failed[/red] {safe(o.source)}: {safe(o.reason)}")
        elif o.status in ("added", "replaced") and o.reason:  # stored, but not all of it
            console.print(f"[yellow]note[/yellow] {safe(o.source)}: {safe(o.reason)}")


def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files and folders (walked recursively).")],
    store: StoreOpt = None,
    prune: Annotated[
        bool, typer.Option("--prune", help="Remove stored documents that vanished from PATHs.")
    ] = False,
    json_out: JsonOpt = False,
    config: ConfigOpt = None,
    engine: EngineOpt = None,
    address: AddressOpt = None,
    workers: WorkersOpt = None,
) -> None:
    """Load documents into the store (incremental: unchanged files are skipped).

    With ``--engine ray`` the chunks are embedded by Ray workers (each loads the embedder once)
    while this process reads, chunks and writes the store; a killed ingest run again resumes
    (finished batches are committed and unchanged documents skipped).

    Exit codes: 0 everything ingested or unchanged; 1 some inputs failed (each is listed with
    its reason, the rest was ingested); 2 usage error, or a full or failing disk stopped the
    run (what it stored stays; run it again once there is room).
    """
    from contextlib import ExitStack

    settings = cli_settings(config, overrides=batch_overrides(engine, address, workers, None))
    for p in paths:
        if not path_exists(p):
            raise fail_usage(f"no such file or folder: {p}")
    embedder = _embedder(settings)
    with ExitStack() as stack:
        batch_chunks = 256
        if settings.batch.engine == "ray":
            embedder = stack.enter_context(_ray_embedder(settings, embedder))
            batch_chunks = 256 * settings.batch.workers
        report = _run_ingest(settings, store, embedder, paths, prune, json_out, batch_chunks)
    if json_out:
        typer.echo(dump_json({"counts": report.counts(), **report.model_dump(mode="json")}))
    else:
        _print_report(report)
    raise typer.Exit(EXIT_FAIL if report.failed else EXIT_OK)


@contextmanager
def _ray_embedder(settings: Settings, local: Any) -> Iterator[Any]:
    from affidavit.batch.ray_engine import RayEmbedder, ray_session
    from affidavit.core.errors import AffidavitError

    try:
        with ray_session(settings.batch):
            ray_embedder = RayEmbedder(settings, local.name, local.dim)
            try:
                yield ray_embedder
            finally:
                ray_embedder.close()
    except AffidavitError as exc:
        raise fail_usage(exc.message) from None


def _run_ingest(
    settings: Settings,
    store: Path | None,
    embedder: Any,
    paths: list[Path],
    prune: bool,
    json_out: bool,
    batch_chunks: int,
) -> IngestReport:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from affidavit.core.errors import AffidavitError, StoreError
    from affidavit.ingest.pipeline import Ingestor

    st = _open(settings, store, must_exist=False)
    try:
        ingestor = Ingestor(st, embedder, settings.ingest, batch_chunks=batch_chunks)
        with Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[current]}"),
            transient=True,
            disable=json_out,
        ) as bar:
            task = bar.add_task("ingest", total=None, current="")

            def progress(done: int, total: int, current: str) -> None:
                bar.update(task, completed=done, total=total, current=safe(Path(current).name))

            try:
                return ingestor.ingest(paths, prune=prune, progress=progress)
            except StoreError as exc:
                raise fail_usage(exc.message) from None
            except OSError as exc:  # the store folder itself is not writable
                raise fail_usage(f"cannot write to store: {describe_os_error(exc)}") from None
    except AffidavitError as exc:
        raise fail_usage(exc.message) from None
    finally:
        st.close()


def _hit_json(hit: Hit, full: bool) -> dict[str, Any]:
    c = hit.chunk
    out: dict[str, Any] = {"doc_id": c.doc_id, "chunk_id": c.id, "score": hit.score}
    if full:
        out.update(
            {
                "rank": hit.rank,
                "mode": hit.mode,
                "text": c.text,
                "title": c.title,
                "url": c.url,
                "start": c.start,
                "end": c.end,
                "metadata": c.metadata,
                "scores": hit.scores,
            }
        )
    return out


def _read_queries(path: Path) -> list[tuple[Any, str]]:
    from affidavit.core.errors import InputError
    from affidavit.core.limits import MAX_QUERIES_BYTES, loads_json, read_file_bounded
    from affidavit.core.text import jsonl_lines

    out: list[tuple[Any, str]] = []
    try:
        lines = jsonl_lines(read_file_bounded(path, MAX_QUERIES_BYTES).decode("utf-8"))
    except InputError as exc:
        raise fail_usage(exc.message) from None
    except UnicodeDecodeError as exc:
        raise fail_usage(f"cannot read {path}: {exc}") from None
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = loads_json(line, f"{path}:{n}")
        except InputError as exc:
            raise fail_usage(exc.message) from None
        except ValueError as exc:
            raise fail_usage(f"{path}:{n}: invalid JSON ({exc})") from None
        if not isinstance(obj, dict) or "id" not in obj or not isinstance(obj.get("query"), str):
            raise fail_usage(f'{path}:{n}: each line needs "id" and a string "query"')
        out.append((obj["id"], obj["query"]))
    return out


def search(
    query: Annotated[str | None, typer.Argument(help="The query (omit with --queries).")] = None,
    store: StoreOpt = None,
    k: Annotated[int, typer.Option("-k", "--top-k", min=1, help="Hits to return.")] = 10,
    mode: Annotated[
        str | None, typer.Option("--mode", help="bm25 | dense | hybrid (default: retrieve.mode).")
    ] = None,
    domain: Annotated[
        list[str] | None, typer.Option("--domain", help="Only sources in this domain (repeat).")
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Only documents dated >= YYYY-MM-DD.")
    ] = None,
    until: Annotated[
        str | None, typer.Option("--until", help="Only documents dated <= YYYY-MM-DD.")
    ] = None,
    queries: Annotated[
        Path | None, typer.Option("--queries", help='Batch: JSONL of {"id", "query"} lines.')
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", help="Batch: write JSONL results here.")
    ] = None,
    rerank: Annotated[
        bool | None,
        typer.Option(
            "--rerank/--no-rerank",
            help="Reorder the best hits with the packaged cross-encoder reranker "
            "(default: retrieve.rerank).",
        ),
    ] = None,
    json_out: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Search the store (one query, or a batch with --queries/--output).

    Exit codes: 0 success (also with no hits); 2 usage or input error.
    """
    from pydantic import ValidationError

    from affidavit.core.errors import AffidavitError
    from affidavit.core.retrieval import SearchFilters
    from affidavit.retrieve.base import SEARCH_MODES
    from affidavit.retrieve.retriever import StoreRetriever

    settings = cli_settings(config)
    if rerank is not None:
        settings = settings.model_copy(
            update={"retrieve": settings.retrieve.model_copy(update={"rerank": rerank})}
        )
    mode = mode or settings.retrieve.mode
    if mode not in SEARCH_MODES:
        raise fail_usage(f"unknown --mode {mode!r}; valid: {', '.join(SEARCH_MODES)}")
    if (query is None) == (queries is None):
        raise fail_usage("give either a QUERY or --queries FILE")
    if queries is not None and output is None:
        raise fail_usage("--queries needs --output")
    if output is not None and (path_exists(output, "dir") or not path_exists(output.parent, "dir")):
        # checked before the search runs, so no work is lost to a typo in the path
        what = "is a folder" if path_exists(output, "dir") else "is in a folder that does not exist"
        raise fail_usage(f"--output {output} {what}")
    try:
        filters = SearchFilters(
            domains=tuple(domain or ()),
            date_from=date.fromisoformat(since) if since else None,
            date_to=date.fromisoformat(until) if until else None,
        )
    except ValidationError as exc:  # the reason alone, not pydantic's multi-line report
        reasons = (e["msg"].removeprefix("Value error, ") for e in exc.errors(include_url=False))
        raise fail_usage(f"bad filter: {'; '.join(reasons)}") from None
    except ValueError as exc:  # a date that is not YYYY-MM-DD
        raise fail_usage(f"bad filter: {exc}") from None
    batch = _read_queries(queries) if queries is not None else [(None, query or "")]
    from affidavit.core.text import has_lone_surrogate

    for qid, q in batch:
        if has_lone_surrogate(q):  # argv bytes that are not UTF-8, or a "\ud800" escape
            which = "the query" if qid is None else f"query {safe(qid)}"
            raise fail_usage(f"{which} is not valid UTF-8 / Unicode text")
    st = _open(settings, store, must_exist=True, read_only=True)  # reading needs no write access
    try:
        embedder = _embedder(settings) if mode != "bm25" else None
        try:
            retriever = StoreRetriever.from_settings(st, embedder, settings.retrieve)
            results = retriever.search_many(
                [q for _, q in batch],
                k=k,
                mode=mode,
                filters=filters,
            )
        except AffidavitError as exc:
            raise fail_usage(exc.message) from None
    finally:
        st.close()
    if queries is not None and output is not None:
        try:
            with output.open("w", encoding="utf-8") as fh:
                for (qid, _), hits in zip(batch, results, strict=True):
                    line = {"id": qid, "hits": [_hit_json(h, full=False) for h in hits]}
                    fh.write(json.dumps(line, ensure_ascii=False) + "\n")
        except OSError as exc:
            raise fail_usage(f"cannot write --output: {describe_os_error(exc)}") from None
        typer.echo(f"wrote {len(batch)} results to {safe_terminal(str(output))}", err=True)
        raise typer.Exit(EXIT_OK)
    hits = results[0]
    if json_out:
        typer.echo(dump_json([_hit_json(h, full=True) for h in hits]))
        raise typer.Exit(EXIT_OK)
    from rich.console import Console

    console = Console(highlight=False)
    if not hits:
        console.print("no hits")
    for h in hits:
        c = h.chunk
        # titles, URLs and chunk text come from the documents: escaped, never interpreted
        where = safe_line(c.title or c.url or c.doc_id)
        page = f" p.{safe(c.metadata['page'])}" if "page" in c.metadata else ""
        console.print(f"[bold]{h.rank}.[/bold] {h.score:.4f}  {where}{page}")
        console.print(f"   {safe_line(c.text[:300])}")


def register(app: typer.Typer) -> None:
    """Add ``ingest`` and ``search`` to the app."""
    app.command("ingest")(ingest)
    app.command("search")(search)
