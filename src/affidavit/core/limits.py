"""Size caps on every input affidavit reads whole, and a reader that enforces them.

An input is read at most ``cap + 1`` bytes: ``affidavit audit - < /dev/zero`` fails at once with
a clear `InputError` instead of growing memory until a ``MemoryError``. The caps are
documented in ``docs/cli-exit-codes.md``.

Examples:
    >>> import io
    >>> read_bounded(io.BytesIO(b"x" * 10), 4, "stdin")
    Traceback (most recent call last):
    ...
    affidavit.core.errors.InputError: stdin is larger than the 4 B limit for this input (stage=input, source=stdin)
"""  # noqa: E501

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, BinaryIO

from affidavit.core.errors import InputError

MIB = 1024 * 1024

MAX_AUDIT_INPUT_BYTES = 64 * MIB
"""``affidavit audit``: the JSON of query, chunks and answer."""
MAX_CHECK_INPUT_BYTES = 64 * MIB
"""``affidavit check``: the JSONL of claims and evidence."""
MAX_CERTIFICATE_BYTES = 16 * MIB
"""A certificate file (``certificate verify``/``show``, ``validate``)."""
MAX_KEY_BYTES = 64 * 1024
"""A PEM key file (private or public)."""
MAX_QUERIES_BYTES = 64 * MIB
"""``affidavit search --queries``: the JSONL of queries."""
MAX_JSON_DEPTH = 100
"""Deepest nesting of arrays and objects in any JSON input (every affidavit format needs < 10)."""

_CHUNK = 1024 * 1024


def _human(n: int) -> str:
    if n >= MIB:
        return f"{n / MIB:g} MiB"
    if n >= 1024:
        return f"{n / 1024:g} KiB"
    return f"{n} B"


def read_bounded(fh: BinaryIO, limit: int, source: str) -> bytes:
    """Read ``fh`` to its end, or raise once more than ``limit`` bytes arrive.

    Raises:
        InputError: the input is larger than ``limit`` (nothing past ``limit + 1`` is read).
    """
    parts: list[bytes] = []
    total = 0
    while True:
        block = fh.read(min(_CHUNK, limit + 1 - total))
        if not block:
            break
        parts.append(block)
        total += len(block)
        if total > limit:
            raise InputError(
                f"{source} is larger than the {_human(limit)} limit for this input",
                source=source,
            )
    return b"".join(parts)


def read_file_bounded(path: Path | str, limit: int, what: str = "") -> bytes:
    """Read a file of at most ``limit`` bytes; unreadable or too large is an ``InputError``.

    Args:
        path: the file (a device or a pipe is read the same way, and stopped at the cap).
        limit: the most bytes accepted.
        what: what the file is, for the message ("certificate", "key").
    """
    name = f"{what} {path}" if what else str(path)
    try:
        with Path(path).open("rb") as fh:
            return read_bounded(fh, limit, name)
    except OSError as exc:
        raise InputError(f"cannot read {name}: {exc.strerror or exc}", source=str(path)) from exc


# a string (unrolled, so a long one costs no backtracking) or one bracket; found by the regex
# engine, so the scan is linear and recursion-free whatever the nesting
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
_JSON_TOKEN_BYTES = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
_OPEN = frozenset("[{") | frozenset(b"[{")


def json_depth(text: str | bytes) -> int:
    """The deepest nesting of arrays and objects in a JSON text, found without parsing it.

    Examples:
        >>> json_depth('{"a": [1, {"b": "[[["}]}')
        3
    """
    pattern = _JSON_TOKEN_BYTES if isinstance(text, bytes) else _JSON_TOKEN
    depth = deepest = 0
    for m in pattern.finditer(text):  # type: ignore[arg-type]
        first = m.group()[0]
        if first in _OPEN:
            depth += 1
            deepest = max(deepest, depth)
        elif first not in ('"', 34):
            depth -= 1
    return deepest


def check_json_depth(text: str | bytes, source: str, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Refuse a JSON text nested deeper than ``max_depth`` (InputError naming the limit)."""
    depth = json_depth(text)
    if depth > max_depth:
        raise InputError(
            f"{source}: JSON nested too deeply ({depth} levels; at most {max_depth})",
            source=source,
        )


def no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` refusing a duplicate key (``ValueError``): which of its values a
    reader takes is up to the reader, so another tool could see a value that was never checked.

    Examples:
        >>> json.loads('{"a": 1, "a": 2}', object_pairs_hook=no_duplicate_keys)
        Traceback (most recent call last):
        ...
        ValueError: duplicate key 'a'
    """
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key[:80]!r}")
        out[key] = value
    return out


def loads_json(
    text: str | bytes, source: str, *, max_depth: int = MAX_JSON_DEPTH, **kwargs: Any
) -> Any:
    """``json.loads`` for untrusted input: the one bounded JSON reader of every door.

    The depth is measured first, so a hostile nesting never reaches the parser, the validators
    or the encoders (each of which recurses). ``kwargs`` go to ``json.loads``; its
    ``ValueError`` for malformed JSON is left to the caller, which knows how to report it.

    Raises:
        InputError: nested deeper than ``max_depth``.
        ValueError: not JSON (``json.JSONDecodeError``, or whatever a hook raises).

    Examples:
        >>> loads_json("[" * 101 + "]" * 101, "x.json")
        Traceback (most recent call last):
        ...
        affidavit.core.errors.InputError: x.json: JSON nested too deeply (101 levels; at most 100) (stage=input, source=x.json)
    """  # noqa: E501
    check_json_depth(text, source, max_depth)
    try:
        return json.loads(text, **kwargs)
    except RecursionError:  # a caller's own stack was already deep: the same answer
        raise InputError(f"{source}: JSON nested too deeply", source=source) from None
