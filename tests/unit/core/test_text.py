"""Escaping untrusted text for a terminal, a page and JSON lines (`affidavit.core.text`)."""

from __future__ import annotations

import json

import pytest

from affidavit.core.text import escape_json_text, safe_one_line, safe_terminal

# every Unicode bidi control: marks (LRM, RLM, ALM), embeddings and overrides (LRE, RLE, PDF,
# LRO, RLO) and isolates (LRI, RLI, FSI, PDI); each reorders what a reader sees (Trojan Source)
BIDI_CONTROLS = [
    "\u061c",
    "\u200e",
    "\u200f",
    *(chr(c) for c in range(0x202A, 0x202F)),
    *(chr(c) for c in range(0x2066, 0x206A)),
]


@pytest.mark.parametrize("char", BIDI_CONTROLS, ids=lambda c: f"U+{ord(c):04X}")
@pytest.mark.parametrize("keep_newlines", [False, True])
def test_safe_terminal_escapes_every_bidi_control(char: str, keep_newlines: bool) -> None:
    out = safe_terminal(f"verified{char}: no", keep_newlines=keep_newlines)
    assert char not in out
    assert out == f"verified\\u{ord(char):04x}: no"


@pytest.mark.parametrize("char", BIDI_CONTROLS, ids=lambda c: f"U+{ord(c):04X}")
def test_safe_one_line_and_json_lines_escape_every_bidi_control(char: str) -> None:
    assert char not in safe_one_line(f"a{char}\nb")
    line = escape_json_text(json.dumps({"text": f"a{char}b"}, ensure_ascii=False))
    assert char not in line
    assert json.loads(line) == {"text": f"a{char}b"}  # the same value, escaped


def test_arabic_letters_are_not_escaped() -> None:
    # U+061C sits among the Arabic letters: only the mark itself is a control
    assert (
        safe_terminal("\u0627\u0644\u0639\u0631\u0628\u064a\u0629")
        == "\u0627\u0644\u0639\u0631\u0628\u064a\u0629"
    )
