"""``affidavit mcp``: serve affidavit's tools to an MCP client (stdio, or streamable HTTP).

Exit codes: 0 the client disconnected or the server was stopped; 1 the ``mcp`` extra is missing
(the message names the ``pip install``); 2 usage error (a ``--host`` that is not loopback: the
MCP transport checks no API key).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from affidavit.cli.common import cli_settings, usage_errors


def mcp(
    transport: Annotated[
        Literal["stdio", "streamable-http"],
        typer.Option("--transport", help="stdio (default) or streamable-http."),
    ] = "stdio",
    host: Annotated[
        str,
        typer.Option("--host", help="HTTP only: loopback address to bind (it checks no API key)."),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="HTTP only: port to bind.")] = 8765,
    store: Annotated[
        Path | None,
        typer.Option(
            "--store", help="Store folder (default: store.path).", envvar="AFFIDAVIT_STORE"
        ),
    ] = None,
    config: Annotated[Path | None, typer.Option("--config", help="affidavit.toml to use.")] = None,
) -> None:
    """Serve the tools ask, search, audit, check and verify_certificate over MCP."""
    settings = cli_settings(config)
    with usage_errors():
        from affidavit.integrations.mcp import check_http_host, run

        if transport == "streamable-http":
            check_http_host(host)
    if transport == "streamable-http":
        shown = f"[{host}]" if ":" in host else host
        typer.echo(f"affidavit MCP server on http://{shown}:{port}/mcp (Ctrl+C stops it)", err=True)
    run(settings, store_path=store, transport=transport, host=host, port=port)


def register(app: typer.Typer) -> None:
    """Add ``affidavit mcp`` to the app."""
    app.command("mcp")(mcp)


__all__ = ["mcp", "register"]
