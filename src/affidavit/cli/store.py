"""``affidavit store check`` and ``affidavit store rebuild``: the local store's health.

Commands:
    affidavit store check [--store DIR] [--json]
    affidavit store rebuild [--store DIR]

``check`` reads everything and writes nothing: SQLite's own page check, chunks without a
document, vectors of the wrong size, and the derived index files of the current generation
against their READY file (row counts, sizes, sha256) and the tables. ``rebuild`` rewrites the
derived index files from the tables; the documents, chunks and vectors stored stay as they are.
On a damaged database it first salvages what can be read (``affidavit.store.salvage``).

Exit codes:
    check: 0 no problems; 1 problems found (each listed, with what to do); 2 the store cannot be
    opened (no store, not a database, unreadable, another backend).
    rebuild: 0 rebuilt, nothing lost; 1 rebuilt, some documents lost (each listed with the file
    to ingest again); 2 the store cannot be opened or written, is locked by an ingest, or
    nothing of its database can be read.
    See ``docs/cli-exit-codes.md``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from affidavit.cli.common import (
    EXIT_FAIL,
    EXIT_OK,
    cli_settings,
    describe_os_error,
    dump_json,
    fail_usage,
    path_exists,
    safe,
)
from affidavit.core.text import safe_terminal

if TYPE_CHECKING:
    from affidavit.core.settings import Settings
    from affidavit.store.local import LocalStore
    from affidavit.store.salvage import SalvageReport

StoreOpt = Annotated[
    Path | None,
    typer.Option(
        "--store", help="Store folder (default: store.path, .affidavit).", envvar="AFFIDAVIT_STORE"
    ),
]
ConfigOpt = Annotated[Path | None, typer.Option("--config", help="affidavit.toml to use.")]

store_app = typer.Typer(
    help="Check the local store for damage, and rebuild its derived index.", no_args_is_help=True
)

DB_ADVICE = (
    "the database is damaged: run `affidavit store rebuild` (it keeps every row that can still "
    "be read, re-makes lost chunks and names the documents to ingest again), or restore the "
    "store folder from a backup"
)
INDEX_ADVICE = (
    "the derived index is damaged: run `affidavit store rebuild` "
    "(until then every search rebuilds it in memory)"
)


def _where(store: Path | None, config: Path | None) -> tuple[Settings, Path]:
    settings = cli_settings(config)
    if settings.store.backend != "local":
        backend = settings.store.backend
        raise fail_usage(f"`affidavit store` works on the local store, not on {backend}")
    where = store or settings.store.path
    if not path_exists(where / "store.sqlite", "file"):
        raise fail_usage(f"no store at {where} (run `affidavit ingest PATH` first)")
    return settings, where


def _open(store: Path | None, config: Path | None, *, read_only: bool) -> LocalStore:
    from affidavit.core.errors import AffidavitError
    from affidavit.store.local import LocalStore

    _, where = _where(store, config)
    try:
        return LocalStore(where, read_only=read_only)
    except AffidavitError as exc:
        raise fail_usage(f"cannot open the store: {exc.message}") from None
    except sqlite3.DatabaseError as exc:
        db = where / "store.sqlite"
        raise fail_usage(f"cannot open the store database {db}: {exc}") from None


def _counts(st: LocalStore) -> dict[str, Any]:
    try:
        docs, chunks = st.count()
        return {"documents": docs, "chunks": chunks, "generation": st.generation()}
    except sqlite3.DatabaseError:
        return {}


@store_app.command("check")
def store_check(
    store: StoreOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Look for damage in the store's database and derived index files (writes nothing).

    Exit codes: 0 no problems; 1 problems found (each listed with what to do); 2 the store
    cannot be opened.
    """
    st = _open(store, config, read_only=True)
    try:
        try:
            problems = st.check()
        except sqlite3.DatabaseError as exc:
            problems = [f"database: {exc}"]
        counts = _counts(st)
    finally:
        st.close()
    advice = []
    if any(p.startswith("database") for p in problems):
        advice.append(DB_ADVICE)
    if any(p.startswith("index") for p in problems):
        advice.append(INDEX_ADVICE)
    if json_out:
        out = {"store": str(st.path), **counts, "problems": problems, "advice": advice}
        typer.echo(dump_json(out))
    else:
        for p in problems:
            typer.echo(f"problem: {safe_terminal(p)}")
        for a in advice:
            typer.echo(f"to repair: {a}")
        if not problems:
            summary = (
                f"{counts.get('documents', '?')} documents, {counts.get('chunks', '?')} chunks, "
                f"generation {counts.get('generation', '?')}"
            )
            typer.echo(f"no problems in {safe_terminal(str(st.path))} ({summary})")
    raise typer.Exit(EXIT_FAIL if problems else EXIT_OK)


@store_app.command("rebuild")
def store_rebuild(
    store: StoreOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Rebuild the derived index files; salvage a damaged database first.

    A sound database is kept as it is. A damaged one is replaced by a new database holding every
    row that can still be read; chunks that were lost are made again from their document's
    stored text (the ingest chunk settings and the store's embedder), and the damaged file is
    kept beside it as store.sqlite.damaged-TIME. Documents whose own row is lost are listed with
    the file to ingest again. Stop readers of the store (`affidavit serve`) first.

    Exit codes: 0 rebuilt, nothing lost; 1 rebuilt, some documents lost (listed); 2 the store
    cannot be opened or written, an ingest holds it, or nothing of its database can be read.
    """
    from affidavit.core.errors import AffidavitError, StoreError
    from affidavit.store.local import LocalStore

    settings, where = _where(store, config)
    damage = ""
    try:
        st = LocalStore(where, read_only=False)
    except StoreError as exc:
        if not isinstance(exc.__cause__, sqlite3.DatabaseError):
            raise fail_usage(f"cannot open the store: {exc.message}") from None
        damage = str(exc.__cause__)  # the database opens no further: salvage what can be read
    else:
        try:
            st.lock_for_writing(check_pages=False)  # checked next, salvaged if damaged
            damaged = [p for p in st.check() if p.startswith("database")]
            if not damaged:
                chunks = st.rebuild_index()
                counts = _counts(st)
                _print_rebuilt(st.path, chunks, counts, None, json_out)
                raise typer.Exit(EXIT_OK)
            damage = "; ".join(damaged[:3])
        except AffidavitError as exc:
            raise fail_usage(exc.message) from None
        except sqlite3.DatabaseError as exc:
            damage = str(exc)
        finally:
            st.close()
    report = _salvage(where, settings)
    try:
        with LocalStore(where, read_only=False) as st:
            st.lock_for_writing()
            chunks = st.rebuild_index()
            counts = _counts(st)
    except AffidavitError as exc:
        raise fail_usage(f"salvaged the database, but {exc.message}") from None
    _print_rebuilt(where, chunks, counts, (damage, report), json_out)
    raise typer.Exit(EXIT_OK if report.complete else EXIT_FAIL)


def _salvage(where: Path, settings: Settings) -> SalvageReport:
    from affidavit.core.errors import AffidavitError
    from affidavit.ingest.chunking import SentenceChunker
    from affidavit.retrieve.embedders import make_embedder
    from affidavit.store.salvage import salvage

    chunker = SentenceChunker(settings.ingest.chunk_size, settings.ingest.chunk_overlap)
    try:
        embedder = make_embedder(settings.embed)
    except AffidavitError:  # then no chunk is re-made; the report's notes say so
        embedder = None
    try:
        return salvage(where, chunker.chunk, embedder)
    except AffidavitError as exc:
        raise fail_usage(exc.message) from None
    except OSError as exc:
        raise fail_usage(f"cannot write the salvaged database: {describe_os_error(exc)}") from None


def _print_rebuilt(
    where: Path,
    chunks: int,
    counts: dict[str, Any],
    salvaged: tuple[str, SalvageReport] | None,
    json_out: bool,
) -> None:
    damage, report = salvaged if salvaged is not None else ("", None)
    if json_out:
        out: dict[str, Any] = {"store": str(where), "indexed_chunks": chunks, **counts}
        if report is not None:
            out["salvage"] = {"damage": damage, **report.to_json()}
            out["lost_documents"] = out["salvage"]["lost_documents"]
            out["lost"] = out["salvage"]["lost"]
        typer.echo(dump_json(out))
        return
    if report is not None:
        typer.echo(f"damage found: {safe(damage)}")
        typer.echo(
            f"salvaged the damaged database of {safe(where)}: {report.documents} documents, "
            f"{report.chunks_kept} chunks kept as stored, {report.chunks_recreated} chunks "
            f"re-created from {len(report.documents_rechunked)} documents' text"
        )
        typer.echo(f"the damaged database is kept as {safe(report.damaged_copy)}")
        for note in report.notes:
            typer.echo(f"note: {safe(note)}")
        for d in report.lost:
            origin = f" (from {safe(d.origin)})" if d.origin else ""
            typer.echo(f"lost: {safe(d.doc_id)}{origin}: {safe(d.reason)}")
        if report.unknown_lost_rows:
            typer.echo(
                f"lost: up to {report.unknown_lost_rows} document rows whose ids cannot be read"
            )
        if report.complete:
            typer.echo("nothing lost")
        else:
            typer.echo(
                "to repair: ingest the files of the lost documents again "
                f"(`affidavit ingest PATH --store {safe(where)}`; unchanged files are skipped)"
            )
    typer.echo(
        f"rebuilt the index of {safe(where)}: {chunks} chunks of "
        f"{counts.get('documents', '?')} documents (generation {counts.get('generation', '?')})"
    )


def register(app: typer.Typer) -> None:
    """Add the ``store`` group to the app."""
    app.add_typer(store_app, name="store")
