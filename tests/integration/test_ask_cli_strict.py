"""``affidavit ask`` in strict mode shows exactly the guarded answer, in a terminal too.

Issue 25.2 ("what a page, a stream or an integration shows in strict mode is exactly the guarded
answer"): in a terminal the command streamed the draft while it was written, the withheld
sentence included, and its claims table printed the withheld claim's text under the answer.
The real command runs in a pseudo-terminal, so the streaming path is the one a user gets.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from affidavit.cli.main import app
from affidavit.testing.fake_llm import FakeOpenAIServer, FakeReply

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs a pseudo-terminal"),
]

BRIDGE = (
    "The Forth Bridge is a cantilever railway bridge across the Firth of Forth in Scotland. "
    "The Forth Bridge opened on 4 March 1890. It was designed by John Fowler and Benjamin Baker."
)
# [7] cites nothing: the draft loses it, so the demo would say what the model wrote
ANSWER = "The Forth Bridge opened on 4 March 1890 [1]. It was painted green by aliens in 1999 [7]."


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    (root / "bridge.txt").write_text(BRIDGE, encoding="utf-8")
    where = root / ".store"
    result = CliRunner().invoke(app, ["ingest", str(root), "--store", str(where)])
    assert result.exit_code == 0, result.output
    return where


@pytest.fixture
def llm() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer([FakeReply(content=ANSWER, delay_s=0.02)]) as srv:
        yield srv


def _in_a_terminal(args: list[str], env: dict[str, str]) -> str:
    """Everything ``python -m <args>`` wrote to its terminal (transient text included)."""
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", *args],
        env={**os.environ, **env, "TERM": "xterm", "COLUMNS": "160"},
        stdin=follower,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    out = b""
    while True:
        try:
            piece = os.read(leader, 65536)
        except OSError:  # the command ended and closed its side
            break
        if not piece:
            break
        out += piece
    os.close(leader)
    assert proc.wait(timeout=120) == 0, out.decode("utf-8", "replace")[-3000:]
    return out.decode("utf-8", "replace")


QUESTION = "When did the Forth Bridge open?"


@pytest.mark.parametrize("command", ["ask", "demo"])
@pytest.mark.parametrize("mode", ["strict", "mixed"])
def test_strict_mode_never_shows_the_withheld_sentence(
    store: Path, llm: FakeOpenAIServer, mode: str, command: str, tmp_path: Path
) -> None:
    env = {
        "AFFIDAVIT_HOME": str(tmp_path / "home"),
        "AFFIDAVIT_GENERATE__BACKEND": "openai",
        "AFFIDAVIT_GENERATE__BASE_URL": llm.url,
        "AFFIDAVIT_GENERATE__MAX_RETRIES": "0",
        "OMP_NUM_THREADS": "1",
    }
    if command == "ask":
        args = ["affidavit.cli.main", "ask", QUESTION, "--store", str(store)]
    else:  # the demo prints the same rendering, and what the model wrote
        corpus = store.parent
        args = ["affidavit.demo", "--corpus", str(corpus), "--question", QUESTION]
        args += ["--store", str(tmp_path / "store")]
    shown = _in_a_terminal([*args, "--mode", mode], env)
    assert "answer (" in shown  # the verified rendering came
    if mode == "strict":
        assert "aliens" not in shown and "Withheld" in shown
    else:  # the same answer in mixed mode shows it: the check above is not vacuous
        assert "aliens" in shown
