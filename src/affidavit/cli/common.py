"""Helpers shared by CLI commands: settings, bounded input, safe output, exit codes.

Exit codes (the one table, ``docs/cli-exit-codes.md``; every command follows it):

* 0: success (trust passed, certificate valid, everything ingested).
* 1: the input was judged and failed (trust or policy failed, certificate invalid, some claims
  could not be verified, some ingest inputs failed: each listed).
* 2: nothing could be judged: usage, input, configuration or environment error (malformed or
  oversized input, bad setting or environment variable, unreadable or unwritable file or store,
  a store built with another embedder, a certificate that cannot be written).
* 3: internal error (a bug): one line on stderr, the traceback only with ``-v``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer

from affidavit.core.errors import AffidavitError, ConfigError
from affidavit.core.limits import MAX_AUDIT_INPUT_BYTES, read_bounded, read_file_bounded
from affidavit.core.settings import Settings, load_settings
from affidavit.core.text import escape_json_text, safe_terminal

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3


def fail_usage(message: str) -> typer.Exit:
    """Print a one-line reason to stderr and return an Exit(2) to raise."""
    typer.echo(f"error: {safe_terminal(message)}", err=True)
    return typer.Exit(EXIT_USAGE)


@contextmanager
def usage_errors() -> Iterator[None]:
    """Turn affidavit's errors and file errors into exit code 2 with a one-line reason.

    Exit 1 is kept for a judged failure (trust failed, certificate invalid), which commands
    signal themselves; an error that stopped the work (bad input, unwritable file, missing
    model, unusable store) is exit 2, never a traceback.
    """
    try:
        yield
    except AffidavitError as exc:
        raise fail_usage(exc.message) from None
    except OSError as exc:
        raise fail_usage(describe_os_error(exc)) from None


def describe_os_error(exc: OSError) -> str:
    """One sentence for a file error (FileExistsError, PermissionError, IsADirectoryError...)."""
    where = exc.filename if exc.filename is not None else ""
    if isinstance(where, bytes):
        where = os.fsdecode(where)
    reason = exc.strerror or exc.__class__.__name__
    return f"{where}: {reason}" if where else str(reason)


def no_color_requested(flag: bool) -> bool:
    """``--no-color``, or ``NO_COLOR`` set to any non-empty value (https://no-color.org)."""
    return flag or bool(os.environ.get("NO_COLOR"))


def cli_settings(
    config: Path | None, beside: Path | None = None, overrides: dict[str, Any] | None = None
) -> Settings:
    """Load settings for a command; config errors exit 2."""
    try:
        return load_settings(config, beside=beside, overrides=overrides)
    except ConfigError as exc:
        raise fail_usage(exc.message) from None


def read_text_arg(path: str, limit: int = MAX_AUDIT_INPUT_BYTES) -> str:
    """Read a file argument (``-`` for stdin) of at most ``limit`` bytes as UTF-8.

    Raises:
        InputError: unreadable, larger than ``limit`` (read no further), or not UTF-8.
    """
    from affidavit.core.errors import InputError

    if path == "-":
        raw = read_bounded(sys.stdin.buffer, limit, "stdin")
    else:
        raw = read_file_bounded(path, limit)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path} is not valid UTF-8 (byte {exc.start}: {raw[exc.start : exc.start + 1]!r})",
            source=path,
        ) from exc


def dump_json(data: Any) -> str:
    """JSON for the terminal: readable Unicode, but every control character escaped.

    ``json.dumps`` escapes C0 controls (ESC) itself; C1 controls (a one-byte CSI), bidi
    overrides and lone surrogates are escaped here as ``\\uXXXX``, so the output is still the
    same JSON value and cannot repaint the terminal or fail to encode.
    """
    return escape_json_text(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def safe(text: object) -> str:
    """An untrusted value for rich output: control characters escaped, markup escaped."""
    from rich.markup import escape

    return escape(safe_terminal(str(text)))


def safe_line(text: object) -> str:
    """Like `safe`, with line breaks and tabs shown as spaces (a snippet on one line)."""
    from rich.markup import escape

    from affidavit.core.text import safe_one_line

    return escape(safe_one_line(str(text)))


def path_exists(path: Path, kind: str = "any") -> bool:
    """``exists`` / ``is_file`` / ``is_dir`` that answer False where the OS refuses the name.

    Python 3.11 raises for a name that is too long or not accessible; for a command-line
    argument that is simply a path that is not there (reported with the usual message).

    Examples:
        >>> path_exists(Path("x" * 300))
        False
    """
    try:
        if kind == "file":
            return path.is_file()
        if kind == "dir":
            return path.is_dir()
        return path.exists() or path.is_symlink()
    except OSError:
        return False
