"""Helpers shared by CLI commands: settings loading and error-to-exit-code mapping."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer

from affidavit.core.errors import AffidavitError, ConfigError, InputError, SigningKeyError
from affidavit.core.settings import Settings, load_settings

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2


def fail_usage(message: str) -> typer.Exit:
    """Print a one-line reason to stderr and return an Exit(2) to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(EXIT_USAGE)


@contextmanager
def usage_errors() -> Iterator[None]:
    """Turn config and input errors into exit code 2 with a one-line reason, never a traceback."""
    try:
        yield
    except (ConfigError, InputError, SigningKeyError) as exc:
        raise fail_usage(exc.message) from None
    except AffidavitError as exc:
        typer.echo(f"error: {exc.message}", err=True)
        raise typer.Exit(EXIT_FAIL) from None


def cli_settings(
    config: Path | None, beside: Path | None = None, overrides: dict[str, Any] | None = None
) -> Settings:
    """Load settings for a command; config errors exit 2."""
    try:
        return load_settings(config, beside=beside, overrides=overrides)
    except ConfigError as exc:
        raise fail_usage(exc.message) from None


def read_text_arg(path: str) -> str:
    """Read a file argument (``-`` for stdin) as UTF-8; bad bytes are an input error."""
    try:
        raw = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}", source=path) from exc
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path} is not valid UTF-8 (byte {exc.start}: {raw[exc.start : exc.start + 1]!r})",
            source=path,
        ) from exc


def dump_json(data: Any) -> str:
    """JSON for the terminal."""
    return json.dumps(data, indent=2, ensure_ascii=False, default=str)
