"""``affidavit documents list | show ID | delete ID``: the documents in the store.

A document's id comes from its content, so the same file ingested again under another name is
one document with two names. ``delete`` removes its chunks from the lexical index and the
vectors (the local store or Qdrant, whichever ``store.backend`` names); a certificate citing one
of them says on replay that it was deleted.

Exit codes:
    0 done; 2 usage or input error (no store, unknown id, the store locked by an ingest or
    unusable), one line on stderr. See ``docs/cli-exit-codes.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from affidavit.cli.common import EXIT_OK, cli_settings, dump_json, fail_usage, safe
from affidavit.cli.ingest import ConfigOpt, JsonOpt, StoreOpt, _open

if TYPE_CHECKING:
    from affidavit.core.retrieval import DocumentInfo

documents_app = typer.Typer(
    help="List, show and delete the documents in the store.", no_args_is_help=True
)

IdArg = Annotated[str, typer.Argument(help="Document id (from `affidavit documents list`).")]


def _print_info(d: DocumentInfo) -> None:
    typer.echo(f"{safe(d.id)}  {safe(d.source)}")
    typer.echo(f"  title: {safe(d.title or '-')}")
    typer.echo(f"  type: {safe(d.mime or '-')}, {d.chunks} chunks, sha256 {d.content_hash}")
    for name in d.names[1:]:
        typer.echo(f"  also ingested as: {safe(name)}")


def _run(store: Any, work: Any) -> Any:
    from affidavit.core.errors import AffidavitError

    try:
        return work(store)
    except AffidavitError as exc:
        raise fail_usage(exc.message) from None
    finally:
        store.close()


@documents_app.command("list")
def documents_list(
    store: StoreOpt = None, json_out: JsonOpt = False, config: ConfigOpt = None
) -> None:
    """Every stored document: id, name, chunks (and every other name it was ingested under).

    Exit codes: 0 listed (also when the store is empty); 2 no store or it cannot be read.
    """
    from affidavit.store.documents import list_documents

    settings = cli_settings(config)
    found = _run(_open(settings, store, must_exist=True, read_only=True), list_documents)
    if json_out:
        typer.echo(dump_json(found.model_dump(mode="json")))
        raise typer.Exit(EXIT_OK)
    for d in found.documents:
        more = f" (also {', '.join(safe(n) for n in d.names[1:])})" if len(d.names) > 1 else ""
        typer.echo(f"{safe(d.id)}  {d.chunks:>5} chunks  {safe(d.source)}{more}")
    typer.echo(f"{len(found.documents)} documents, {found.chunks_total} chunks")


@documents_app.command("show")
def documents_show(
    doc_id: IdArg, store: StoreOpt = None, json_out: JsonOpt = False, config: ConfigOpt = None
) -> None:
    """One document: its names, title, type, chunks and content hash.

    Exit codes: 0 shown; 2 no such document, or no store.
    """
    from affidavit.store.documents import show_document

    settings = cli_settings(config)
    info = _run(
        _open(settings, store, must_exist=True, read_only=True),
        lambda s: show_document(s, doc_id),
    )
    if json_out:
        typer.echo(dump_json(info.model_dump(mode="json")))
    else:
        _print_info(info)
    raise typer.Exit(EXIT_OK)


@documents_app.command("delete")
def documents_delete(
    doc_id: IdArg, store: StoreOpt = None, json_out: JsonOpt = False, config: ConfigOpt = None
) -> None:
    """Delete a document: its chunks leave the lexical index and the vectors.

    Exit codes: 0 deleted; 2 no such document, no store, or an ingest holds the store.
    """
    from affidavit.store.documents import delete_document

    settings = cli_settings(config)

    def work(s: Any) -> Any:
        lock = getattr(s, "lock_for_writing", None)
        if callable(lock):
            lock()  # one writer: an ingest running now makes this exit 2, not race it
        return delete_document(s, doc_id)

    done = _run(_open(settings, store, must_exist=True), work)
    if json_out:
        typer.echo(dump_json(done.model_dump(mode="json")))
    else:
        typer.echo(
            f"deleted {safe(done.id)} ({safe(done.source)}): {done.chunks_removed} chunks removed"
        )
    raise typer.Exit(EXIT_OK)


def register(app: typer.Typer) -> None:
    """Add ``documents`` to the app."""
    app.add_typer(documents_app, name="documents")
