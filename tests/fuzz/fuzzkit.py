"""Shared strategies, helpers and the Hypothesis profile of the fuzzing suite (issue 13).

Properties checked at every input boundary: no traceback reaches the user, exit codes follow
docs/cli-exit-codes.md, memory stays under a stated cap, nothing already stored is lost.

Runtime is bounded for CI (2 shared cores): the ``fuzz`` profile caps ``max_examples`` per test;
``FUZZ_EXAMPLES=500 pytest tests/fuzz`` digs deeper locally. Hypothesis keeps failing examples
in ``.hypothesis/`` and replays them first.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from affidavit.cli.main import app

settings.register_profile(
    "fuzz",
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "40")),
    deadline=None,  # a shared 2-core machine: wall time per example is noise
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    print_blob=True,
)
# a decorator per test, so loading this module never changes other tests' Hypothesis settings
FUZZ = settings.get_profile("fuzz")

EXIT_CODES = {0, 1, 2}  # 3 is an internal error: never expected
MEMORY_CAP = 256 * 1024 * 1024  # tracemalloc peak allowed per example (inputs here are small)

# strings that once broke something, mixed into generated text
NASTY = [
    "\x1b[32mTRUST PASSED\x1b[0m",
    "\x1b[2J",
    "\x9b31m",
    "\u202e",
    "\ud800",
    "\udcff",
    "\x00",
    "\x07",
    "[bold red]markup[/]",
    "[/]",
    "%s %d {0}",
    "\\",
    "1961",
    "3.5 m",
    "e.g.",
    "Dr.",
    "\n\n",
    "x" * 300,
    "https://evil.example/\x1b[2J",
    "é ü 中文 🙂",
]

hostile_text = st.one_of(
    st.text(st.characters(blacklist_categories=()), max_size=40),  # surrogates included
    st.sampled_from(NASTY),
    st.lists(st.sampled_from(NASTY) | st.text(max_size=8), max_size=6).map("".join),
)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    hostile_text,
)

json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(hostile_text, inner, max_size=4),
    max_leaves=16,
)


def chunk_dicts() -> st.SearchStrategy[Any]:
    return st.fixed_dictionaries(
        {"text": hostile_text},
        optional={
            "url": hostile_text | st.sampled_from(["https://example.org/a", "", None]),
            "metadata": st.dictionaries(hostile_text, json_scalars, max_size=3) | json_values,
            "id": hostile_text,
        },
    )


def encode(value: Any) -> bytes:
    """JSON as a client would send it (lone surrogates as \\ud800 escapes)."""
    return json.dumps(value, ensure_ascii=True).encode("ascii")


def invoke(args: list[str], input: bytes | str | None = None) -> Result:
    return CliRunner().invoke(app, args, input=input)


def assert_clean_exit(r: Result, allowed: set[int] = EXIT_CODES) -> None:
    """No traceback: the command ended through its exit code, and that code is in the table."""
    assert r.exception is None or isinstance(r.exception, SystemExit), (
        f"{type(r.exception).__name__}: {r.exception}\n{r.output[-2000:]}"
    )
    assert r.exit_code in allowed, r.output[-2000:]
    assert "Traceback" not in r.output


def assert_terminal_safe(text: str) -> None:
    """Nothing in the output can drive the terminal."""
    bad = [c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F]
    bidi = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
    bad += [c for c in text if c in bidi]
    assert not bad, f"control characters reach the terminal: {bad[:5]!r}"
    text.encode("utf-8")  # no lone surrogate either


def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clean environment: no AFFIDAVIT_* from the caller, fake embedder, private home."""
    for name in list(os.environ):
        if name.upper().startswith("AFFIDAVIT_") or name in ("NO_COLOR", "FORCE_COLOR"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AFFIDAVIT_EMBED__BACKEND", "fake")
    monkeypatch.setenv("AFFIDAVIT_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path
