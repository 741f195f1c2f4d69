"""``affidavit serve`` and ``affidavit keys api``: the HTTP API, the web page and their keys.

Commands:
    affidavit serve [--host 127.0.0.1] [--port 8000] [--workers 1] [--config FILE]
    affidavit keys api create --name NAME [--scope read|write]
    affidavit keys api list [--json]
    affidavit keys api revoke KEY_ID

Exit codes: 0 done; 2 usage error (a non-loopback ``--host`` with no API key configured, the
``server`` extra missing, an unknown key id, a bad option or config).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from affidavit.cli.common import cli_settings, dump_json, fail_usage, usage_errors
from affidavit.core.text import safe_terminal

api_keys_app = typer.Typer(
    help="Manage the API keys `affidavit serve` accepts (stored as keyed HMACs).",
    no_args_is_help=True,
)

ConfigOpt = Annotated[Path | None, typer.Option("--config", help="affidavit.toml to use.")]


def serve(
    host: Annotated[
        str | None,
        typer.Option("--host", help="Address to bind (default serve.host, 127.0.0.1)."),
    ] = None,
    port: Annotated[
        int | None, typer.Option("--port", help="TCP port (default serve.port, 8000).")
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option("--workers", help="Worker processes; each loads its own models."),
    ] = None,
    store: Annotated[
        Path | None,
        typer.Option(
            "--store", help="Store folder (default store.path).", envvar="AFFIDAVIT_STORE"
        ),
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Serve the HTTP API and the web page (binds 127.0.0.1 unless API keys are configured)."""
    from affidavit.server import serve as run

    over: dict[str, dict[str, object]] = {}
    serve_over = {
        k: v for k, v in (("host", host), ("port", port), ("workers", workers)) if v is not None
    }
    if serve_over:
        over["serve"] = dict(serve_over)
    if store is not None:
        over["store"] = {"path": str(store.resolve())}
    settings = cli_settings(config, overrides=over or None)
    with usage_errors():
        s = settings.serve
        typer.echo(
            f"affidavit serving on http://{s.host}:{s.port}/ (models load in the background)"
        )
        run(settings, config=str(config) if config else None)


@api_keys_app.command("create")
def api_create(
    name: Annotated[str, typer.Option("--name", help="Who or what the key is for.")],
    scope: Annotated[
        str, typer.Option("--scope", help="read (ask, audit, check, search) or write (+ upload).")
    ] = "read",
    config: ConfigOpt = None,
) -> None:
    """Create an API key; the token is printed once and never stored."""
    from affidavit.server.apikeys import ApiKeyStore, default_keys_path

    if scope not in ("read", "write"):
        raise fail_usage(f"--scope must be read or write, got {scope!r}")
    settings = cli_settings(config)
    keys = ApiKeyStore(default_keys_path(settings))
    with usage_errors():
        token, info = keys.create(name, scope)  # type: ignore[arg-type]
    typer.echo(
        f"key id: {info.id}  name: {safe_terminal(info.name)}  scope: {info.scope}", err=True
    )
    typer.echo("the token below is shown once; store it now:", err=True)
    typer.echo(token)


@api_keys_app.command("list")
def api_list(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    config: ConfigOpt = None,
) -> None:
    """List API keys (ids, names, scopes; never the secrets)."""
    from affidavit.server.apikeys import ApiKeyStore, default_keys_path

    settings = cli_settings(config)
    with usage_errors():
        keys = ApiKeyStore(default_keys_path(settings)).list()
    if as_json:
        typer.echo(dump_json([k.model_dump(mode="json") for k in keys]))
        return
    if not keys:
        typer.echo("no API keys (the server then binds only to loopback)")
    for k in keys:
        state = f"revoked {k.revoked_at:%Y-%m-%d %H:%M}" if k.revoked_at else "active"
        typer.echo(f"{k.id}  {k.scope:<5}  {state:<24}  {safe_terminal(k.name)}")


@api_keys_app.command("revoke")
def api_revoke(
    key_id: Annotated[str, typer.Argument(help="The key id (as `list` shows it).")],
    config: ConfigOpt = None,
) -> None:
    """Revoke an API key; a running server refuses it from its next request."""
    from affidavit.server.apikeys import ApiKeyStore, default_keys_path

    settings = cli_settings(config)
    with usage_errors():
        store = ApiKeyStore(default_keys_path(settings))
        info = store.revoke(key_id)
        last = not store.active()
    typer.echo(f"revoked {info.id} ({safe_terminal(info.name)})")
    if last:
        typer.echo(
            "warning: that was the last active API key: a server that has had keys now refuses "
            "every request until you create one (`affidavit keys api create --name NAME`)",
            err=True,
        )


def register(app: typer.Typer) -> None:
    """Add ``serve`` and ``keys api`` to the app."""
    from affidavit.cli.certify import keys_app

    app.command("serve")(serve)
    keys_app.add_typer(api_keys_app, name="api")
