"""The audit input document: ``{"query", "chunks", "response"}`` as JSON text, shape-checked.

Shared by ``affidavit audit``, ``affidavit audit --batch`` (one document per line) and anything
else that reads audit inputs from text; every problem is a one-line `InputError`.
"""

from __future__ import annotations

import json
from typing import Any

_FIELDS = {"query": str, "chunks": list, "response": str}
_REQUIRED = ("chunks", "response")


def parse_input(text: str, source: str = "input") -> dict[str, Any]:
    """Parse and shape-check the audit input JSON; one-line InputError on any problem.

    Examples:
        >>> parse_input('{"chunks": [], "response": "Hi."}')["query"]
        ''
    """
    from affidavit.core.errors import InputError
    from affidavit.core.limits import loads_json, no_duplicate_keys
    from affidavit.core.text import find_lone_surrogate

    try:
        # InputError when nested too deeply; a duplicate key is refused: which of its values a
        # reader takes is up to the reader, so another tool could see one the audit never checked
        data = loads_json(text, source, object_pairs_hook=no_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{source}: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
            source=source,
        ) from None
    except ValueError as exc:  # a duplicate key, or an integer past Python's digit limit
        raise InputError(f"{source}: not usable JSON: {str(exc)[:200]}", source=source) from None
    if not isinstance(data, dict):
        raise InputError(
            f"{source}: expected a JSON object with query, chunks, response; got "
            f"{type(data).__name__}",
            source=source,
        )
    unknown = sorted(set(data) - set(_FIELDS))
    if unknown:
        raise InputError(
            f"{source}: unknown field(s) {', '.join(unknown)} (expected query, chunks, response)",
            source=source,
        )
    for name in _REQUIRED:
        if name not in data:
            raise InputError(f"{source}: missing field '{name}'", source=source)
    bad = find_lone_surrogate(data)
    if bad is not None:
        # legal JSON ("\\ud800" escape) but not Unicode text: it cannot be printed, hashed or signed
        raise InputError(
            f"{source}: {bad} holds a lone surrogate (an invalid \\uD800-\\uDFFF escape); "
            "not valid Unicode text",
            source=source,
        )
    data.setdefault("query", "")
    if data["query"] is None:
        data["query"] = ""
    for name, kind in _FIELDS.items():
        if not isinstance(data[name], kind):
            raise InputError(
                f"{source}: field '{name}' must be {'a string' if kind is str else 'a list'}, "
                f"not {_json_type(data[name])}",
                source=source,
            )
    return data


def _json_type(value: Any) -> str:
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }.get(type(value), type(value).__name__)


__all__ = ["parse_input"]
