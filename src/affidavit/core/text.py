"""Text that crosses a trust boundary: lone surrogates and terminal control characters.

Two hazards of untrusted strings (JSON inputs, file names, documents, model output):

* A *lone surrogate* (``"\\ud800"``, legal in JSON, and how Python spells a file-name byte that is
  not UTF-8) cannot be encoded as UTF-8: SQLite, tokenizers, JSON serialisers and the terminal
  all fail on it. `find_lone_surrogate` finds one so the input is refused with its location;
  `escape_surrogates` makes a name printable for a report.
* *Control characters* (``ESC[32m``, ``ESC[2J``, C1 ``CSI``, bidi overrides) let a document or an
  answer repaint the terminal: a fake green verdict, a cleared screen. `safe_terminal`
  escapes them for display.

Examples:
    >>> find_lone_surrogate({"chunks": [{"text": "ok"}, {"text": "bad \\ud800"}]})
    'chunks[1].text'
    >>> safe_terminal("\\x1b[32mTRUST PASSED")
    '\\\\x1b[32mTRUST PASSED'
"""

from __future__ import annotations

import json
import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")
# The Unicode bidi controls, which reorder what a reader sees (Trojan Source): the marks ALM,
# LRM and RLM, the embeddings and overrides LRE..RLO and the isolates LRI..PDI.
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
# C0 controls except newline and tab, DEL, C1 controls, and the bidi controls.
_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")
_CONTROL_ALL = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}]")
# Inside JSON strings only (structural characters are ASCII): what json.dumps(ensure_ascii=False)
# leaves raw but must not reach a terminal or a line-oriented reader: DEL, C1 controls (NEL
# included), the line / paragraph separators U+2028 / U+2029 (str.splitlines breaks a JSONL line
# there), bidi overrides and lone surrogates.
_JSON_UNSAFE = re.compile(f"[\x7f-\x9f\u2028\u2029{_BIDI}\ud800-\udfff]")


def escape_json_text(text: str) -> str:
    """``text`` (JSON from ``json.dumps(ensure_ascii=False)``) with `_JSON_UNSAFE` escaped.

    The result is the same JSON value, readable Unicode otherwise.

    Examples:
        >>> escape_json_text(json.dumps({"id": "a" + chr(0x2028) + "b"}, ensure_ascii=False))
        '{"id": "a\\\\u2028b"}'
    """
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def json_line(data: Any) -> str:
    """One line of JSON Lines: never split by any line reader, never repaints a terminal."""
    return escape_json_text(json.dumps(data, ensure_ascii=False, default=str))


def jsonl_lines(text: str) -> list[str]:
    """The lines of a JSON Lines text: split at ``\\n`` only (a trailing ``\\r`` dropped).

    ``str.splitlines`` also splits at U+2028, U+0085 and other separators that JSON allows raw
    inside a string, which would cut one record in two.

    Examples:
        >>> record = '{"id": "a' + chr(0x2028) + 'b"}'
        >>> jsonl_lines(record + chr(13) + chr(10) + "{}") == [record, "{}"]
        True
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def has_lone_surrogate(text: str) -> bool:
    """True when ``text`` holds a code point that cannot be encoded as UTF-8."""
    return _SURROGATE.search(text) is not None


def find_lone_surrogate(value: Any, where: str = "") -> str | None:
    """The location (``chunks[1].text``) of the first string holding a lone surrogate, or None.

    Dictionary keys are checked as well as values.
    """
    if isinstance(value, str):
        return (where or "value") if has_lone_surrogate(value) else None
    if isinstance(value, dict):
        for k, v in value.items():
            key = str(k)
            here = f"{where}.{key}" if where else key
            if has_lone_surrogate(key):
                return f"{here} (key)" if where else "a key"
            found = find_lone_surrogate(v, here)
            if found is not None:
                return found
        return None
    if isinstance(value, list | tuple):
        for i, v in enumerate(value):
            found = find_lone_surrogate(v, f"{where}[{i}]")
            if found is not None:
                return found
    return None


def require_unicode(value: Any) -> Any:
    """``value`` unchanged, or ValueError naming where it holds a lone surrogate (a validator for
    request bodies: legal JSON, but it can be neither encoded, hashed nor sent back).

    Examples:
        >>> require_unicode({"response": "ok"})
        {'response': 'ok'}
    """
    bad = find_lone_surrogate(value)
    if bad is not None:
        raise ValueError(
            f"{bad} holds a lone surrogate (an invalid \\uD800-\\uDFFF escape); "
            "not valid Unicode text"
        )
    return value


def escape_surrogates(text: str) -> str:
    """Replace lone surrogates by ``\\udcff``-style escapes (printable, UTF-8 encodable)."""
    if not has_lone_surrogate(text):
        return text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _escape_char(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def safe_terminal(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with control characters and lone surrogates escaped, safe to print.

    Args:
        text: an untrusted string.
        keep_newlines: keep ``\\n`` and ``\\t`` (multi-line text such as a guarded answer);
            otherwise they are escaped too, so one value stays on one line.
    """
    pattern = _CONTROL if keep_newlines else _CONTROL_ALL
    return pattern.sub(_escape_char, escape_surrogates(text))


def strip_controls(text: str) -> str:
    """``text`` kept as data (a web page made evidence) without what `safe_terminal` escapes:
    ``\\r\\n`` and ``\\r`` read as ``\\n``; other control characters and the bidi controls are
    removed, so that what a reader is shown is what was checked.

    Examples:
        >>> strip_controls("The tower\\r\\nis \\x1b[31m330\\u202e m.")
        'The tower\\nis [31m330 m.'
    """
    return _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


_LINE_BREAKS = re.compile(r"[ \t]*(?:\r\n|[\r\n\t])[ \t\r\n]*")


def safe_one_line(text: str) -> str:
    """``text`` on one line for a terminal: line breaks and tabs read as one space, and what a
    terminal would act on (other control characters, bidi overrides) stays escaped.

    Examples:
        >>> safe_one_line("The tower\\r\\nstands.\\tIt is \\x1b[31mtall.")
        'The tower stands. It is \\\\x1b[31mtall.'
    """
    return safe_terminal(_LINE_BREAKS.sub(" ", text))
