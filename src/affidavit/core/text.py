"""Text that crosses a trust boundary: lone surrogates and terminal control characters.

Two hazards of untrusted strings (JSON inputs, file names, documents, model output):

* A *lone surrogate* (``"\\ud800"``, legal in JSON, and how Python spells a file-name byte that is
  not UTF-8) cannot be encoded as UTF-8: SQLite, tokenizers, JSON serialisers and the terminal
  all fail on it. :func:`find_lone_surrogate` finds one so the input is refused with its location;
  :func:`escape_surrogates` makes a name printable for a report.
* *Control characters* (``ESC[32m``, ``ESC[2J``, C1 ``CSI``, bidi overrides) let a document or an
  answer repaint the terminal: a fake green verdict, a cleared screen. :func:`safe_terminal`
  escapes them for display.

Example:
    >>> find_lone_surrogate({"chunks": [{"text": "ok"}, {"text": "bad \\ud800"}]})
    'chunks[1].text'
    >>> safe_terminal("\\x1b[32mTRUST PASSED")
    '\\\\x1b[32mTRUST PASSED'
"""

from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 controls except newline and tab, DEL, C1 controls, and the Unicode bidi/format overrides
# that reorder what a reader sees (Trojan Source).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_CONTROL_ALL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


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
