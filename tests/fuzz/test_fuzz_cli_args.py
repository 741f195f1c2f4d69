"""Fuzz command-line arguments: any argv for the model-free commands ends with a table exit code."""

from __future__ import annotations

import json
from pathlib import Path

from fuzzkit import FUZZ, assert_clean_exit, assert_terminal_safe, invoke
from hypothesis import given
from hypothesis import strategies as st

# argument text as a shell would pass it: no NUL; lone surrogates stand for non-UTF-8 argv bytes
arg_text = st.one_of(
    st.text(st.characters(blacklist_categories=(), blacklist_characters="\x00"), max_size=20),
    st.sampled_from(
        ["-", "--", "-v", "--json", "nope", "a.json", "store", "docs", "1", "-1", "0", "x" * 300]
    ),
)
options = st.sampled_from(
    [
        "--json",
        "--store",
        "--mode",
        "-k",
        "--top-k",
        "--since",
        "--until",
        "--domain",
        "--queries",
        "--output",
        "--config",
        "--no-color",
        "--certify",
        "--verify",
        "--schema",
        "--public-key",
        "--replay",
        "--prune",
        "--help",
    ]
)
commands = st.sampled_from(
    [
        ["audit"],
        ["search"],
        ["ingest"],
        ["certificate", "verify"],
        ["certificate", "show"],
        ["validate"],
        ["keys", "show"],
        ["export-schemas"],
        [],
    ]
)


def _setup(root: Path) -> None:
    (root / "docs").mkdir(exist_ok=True)
    (root / "docs" / "a.txt").write_text("The tower is in Paris.", encoding="utf-8")
    (root / "a.json").write_text(
        json.dumps({"chunks": [{"text": "The tower is in Paris."}], "response": "Hi."}),
        encoding="utf-8",
    )


@FUZZ
@given(command=commands, rest=st.lists(options | arg_text, max_size=6))
def test_any_arguments(fuzz_env: Path, command: list[str], rest: list[str]) -> None:
    _setup(fuzz_env)
    r = invoke([*command, *rest], input=b"")
    assert_clean_exit(r)
    assert_terminal_safe(r.output)
