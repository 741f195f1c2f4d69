"""``affidavit store check`` and ``affidavit store rebuild``: the local store's health.

Commands:
    affidavit store check [--store DIR] [--json]
    affidavit store rebuild [--store DIR]

``check`` reads everything and writes nothing: SQLite's own page check, chunks without a
document, vectors of the wrong size, and the derived index files of the current generation
against their READY file (row counts, sizes, sha256) and the tables. ``rebuild`` rewrites the
derived index files from the tables; the documents, chunks and vectors stored stay as they are.

Exit codes:
    check: 0 no problems; 1 problems found (each listed, with what to do); 2 the store cannot be
    opened (no store, not a database, unreadable, another backend).
    rebuild: 0 rebuilt; 2 the store cannot be opened or written, is locked by an ingest, or its
    database is damaged (rebuilding the index cannot repair that).
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
    dump_json,
    fail_usage,
    path_exists,
    safe,
)
from affidavit.core.text import safe_terminal

if TYPE_CHECKING:
    from affidavit.store.local import LocalStore

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
    "the database is damaged: restore the store folder from a backup, or ingest the documents "
    "again into a new store (--store NEW_FOLDER)"
)
INDEX_ADVICE = (
    "the derived index is damaged: run `affidavit store rebuild` "
    "(until then every search rebuilds it in memory)"
)


def _open(store: Path | None, config: Path | None, *, read_only: bool) -> LocalStore:
    from affidavit.core.errors import AffidavitError
    from affidavit.store.local import LocalStore

    settings = cli_settings(config)
    if settings.store.backend != "local":
        backend = settings.store.backend
        raise fail_usage(f"`affidavit store` works on the local store, not on {backend}")
    where = store or settings.store.path
    if not path_exists(where / "store.sqlite", "file"):
        raise fail_usage(f"no store at {where} (run `affidavit ingest PATH` first)")
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
def store_rebuild(store: StoreOpt = None, config: ConfigOpt = None) -> None:
    """Rebuild the derived index files from the documents and chunks tables.

    Everything stored is kept. A damaged database cannot be repaired this way (exit 2: restore
    a backup, or ingest again into a new store).

    Exit codes: 0 rebuilt; 2 the store cannot be opened or written, an ingest holds it, or its
    database is damaged.
    """
    from affidavit.core.errors import AffidavitError

    st = _open(store, config, read_only=False)
    try:
        try:
            st.lock_for_writing()
            damaged = [p for p in st.check() if p.startswith("database")]
            if damaged:
                raise fail_usage(f"{DB_ADVICE} ({'; '.join(damaged[:3])})")
            chunks = st.rebuild_index()
            counts = _counts(st)
        except AffidavitError as exc:
            raise fail_usage(exc.message) from None
        except sqlite3.DatabaseError as exc:
            raise fail_usage(f"{DB_ADVICE} ({exc})") from None
    finally:
        st.close()
    typer.echo(
        f"rebuilt the index of {safe(st.path)}: {chunks} chunks of "
        f"{counts.get('documents', '?')} documents (generation {counts.get('generation', '?')})"
    )
    raise typer.Exit(EXIT_OK)


def register(app: typer.Typer) -> None:
    """Add the ``store`` group to the app."""
    app.add_typer(store_app, name="store")
