"""Every snippet of the docs site and the README runs (issue 28).

Each fenced block of README.md and docs/**/*.md is executed as a reader would use it, in a
temporary folder holding links to ``examples/`` and ``sample_corpus/``, with its own
``AFFIDAVIT_HOME``:

* ``python``: a block with ``>>>`` prompts runs as a doctest; any other block is executed.
* ``bash``: every command runs through the real CLI (typer's ``CliRunner``, in process), in
  order, so a file's blocks build on each other (ingest, then search; keys, then certify); a
  command must exit 0, or the code its comment names (``# exit 1: ...``). ``cat FILE |`` and
  ``echo ... |`` feed stdin, ``A && B`` runs B after A succeeds, ``NAME=value`` sets the
  environment.
* ``console`` and unlabelled blocks are usage synopses (``affidavit search "query" [--store
  DIR]``): each command path must exist (its ``--help`` exits 0).
* ``toml`` loads as settings (unknown keys and invalid values fail); ``json`` parses.

A block that needs what a test run has not (an LLM, a server, the network, docker, a training
venv) carries ``<!-- skip: the reason -->`` on the line before it (or at the end of that line)
and is reported as skipped with that reason; a block with a command this test cannot run and no
such marker fails.
"""

from __future__ import annotations

import doctest
import json
import os
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(
    r"^(?P<indent>[ ]*)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ ]*$", re.S | re.M
)
SKIP = re.compile(r"<!--\s*skip:\s*(?P<reason>.+?)\s*-->\s*$")
EXIT = re.compile(r"#.*\bexit (?P<code>\d)\b")
ENV_ASSIGN = re.compile(r"^[A-Z][A-Z0-9_]*=")
# what a bash line may start with for this test to run it
RUNNABLE = ("affidavit", "cat", "echo", "export")


@dataclass(frozen=True)
class Block:
    page: Path
    index: int
    line: int
    lang: str
    body: str
    skip: str | None

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _blocks(page: Path) -> Iterator[Block]:
    text = page.read_text(encoding="utf-8")
    for i, m in enumerate(FENCE.finditer(text)):
        before = [ln for ln in text[: m.start()].splitlines() if ln.strip()]
        marker = SKIP.search(before[-1]) if before else None
        body = "\n".join(ln[len(m.group("indent")) :] for ln in m.group("body").splitlines())
        yield Block(
            page=page,
            index=i,
            line=text.count("\n", 0, m.start()) + 1,
            lang=m.group("lang").lower(),
            body=body,
            skip=marker.group("reason") if marker else None,
        )


BLOCKS = [b for page in PAGES for b in _blocks(page)]


def _logical_lines(body: str) -> list[str]:
    """Lines with backslash continuations joined; blank and comment-only lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", body)
    return [ln.strip() for ln in joined.splitlines() if ln.strip() and ln.lstrip()[:1] != "#"]


def _split(line: str) -> list[str]:
    lex = shlex.shlex(line, posix=True, punctuation_chars="|&")
    lex.whitespace_split = True
    lex.commenters = "#"
    return list(lex)


def _segments(tokens: list[str], sep: str) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for t in tokens:
        if t == sep:
            out.append([])
        else:
            out[-1].append(t)
    return out


def _unrunnable(block: Block) -> list[str]:
    """The lines of a block this test does not know how to run."""
    lines = _logical_lines(block.body)
    if block.lang in ("bash", "sh", "shell"):
        bad = []
        for ln in lines:
            for step in _segments(_split(ln), "&&"):
                for part in _segments(step, "|"):
                    words = [w for w in part if not ENV_ASSIGN.match(w)]
                    if not words or words[0] not in RUNNABLE:
                        bad.append(ln)
        return bad
    if block.lang in ("console", ""):
        # a synopsis continues on lines that start with an option in brackets
        return [ln for ln in lines if not re.match(r"^(\$ affidavit|affidavit|\[)", ln)]
    return []


def _cli(args: list[str], env: dict[str, str], stdin: str | None) -> tuple[int, str]:
    from typer.testing import CliRunner

    from affidavit.cli.main import app

    result = CliRunner().invoke(app, args, input=stdin, env=env)
    out = result.output
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        out += f"\n{type(result.exception).__name__}: {result.exception}"
    return result.exit_code, out


def _run_bash(block: Block, cwd: Path) -> None:
    for ln in _logical_lines(block.body):
        expected = int(m.group("code")) if (m := EXIT.search(ln)) else 0
        steps = _segments(_split(ln), "&&")
        for n, step in enumerate(steps):
            stdin: str | None = None
            parts = _segments(step, "|")
            for feeder in parts[:-1]:
                if feeder[0] == "cat":
                    stdin = "".join((cwd / f).read_text(encoding="utf-8") for f in feeder[1:])
                else:  # echo
                    stdin = " ".join(feeder[1:]) + "\n"
            words = parts[-1]
            if words[0] == "export":  # for the rest of the page, and it must load as settings
                from affidavit.core.settings import load_settings

                name, value = words[1].split("=", 1)
                os.environ[name] = value
                load_settings()
                continue
            env = {w.split("=", 1)[0]: w.split("=", 1)[1] for w in words if ENV_ASSIGN.match(w)}
            words = [w for w in words if not ENV_ASSIGN.match(w)]
            assert words[0] == "affidavit", ln
            code, out = _cli(words[1:], env, stdin)
            want = expected if n == len(steps) - 1 else 0
            assert code == want, f"{block.id}: `{ln}` exited {code}, not {want}:\n{out[-2000:]}"


def _run_synopsis(block: Block) -> None:
    for ln in _logical_lines(block.body):
        if ln.startswith("["):
            continue
        words = []
        for w in _split(ln.removeprefix("$ "))[1:]:
            if not re.fullmatch(r"[a-z][a-z-]*", w):
                break
            words.append(w)
        code, out = _cli([*words, "--help"], {}, None)
        assert code == 0, f"{block.id}: `affidavit {' '.join(words)}` does not exist:\n{out}"


def _run_python(block: Block) -> None:
    if ">>> " in block.body:
        parser = doctest.DocTestParser()
        test = parser.get_doctest(block.body, {}, block.id, str(block.page), block.line)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        runner.run(test)
        assert runner.failures == 0, f"{block.id}: the doctest fails (output above)"
        return
    code = compile(block.body, block.id, "exec")
    exec(code, {"__name__": "__docs__"})


def _run_toml(block: Block, cwd: Path) -> None:
    from affidavit.core.settings import load_settings

    path = cwd / "snippet.toml"
    path.write_text(block.body, encoding="utf-8")
    load_settings(path)


def _workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    for name in ("examples", "sample_corpus"):
        (work / name).symlink_to(ROOT / name)
    monkeypatch.chdir(work)
    monkeypatch.setenv("AFFIDAVIT_HOME", str(tmp_path / "home"))
    # a reader's own environment must not change what the docs show
    for key in [k for k in os.environ if k.startswith("AFFIDAVIT_") and k != "AFFIDAVIT_HOME"]:
        monkeypatch.delenv(key)
    return work


def test_every_block_runs_or_says_why_not() -> None:
    """A block this test cannot run carries a skip marker with the reason."""
    missing = [f"{b.id}: {bad[0]!r}" for b in BLOCKS if b.skip is None and (bad := _unrunnable(b))]
    assert not missing, "mark these blocks <!-- skip: why -->:\n" + "\n".join(missing)
    assert len(BLOCKS) > 50


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_page_snippets_run(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    blocks = [b for b in BLOCKS if b.page == page]
    runnable = [b for b in blocks if b.skip is None and not _unrunnable(b)]
    cwd = _workdir(tmp_path, monkeypatch)
    saved = dict(os.environ)  # a page's `export` lines hold for that page only
    try:
        ran = _run_page(runnable, cwd)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    skipped = [f"{b.id} ({b.skip})" for b in blocks if b.skip is not None]
    if not ran and skipped:
        pytest.skip("every block is marked: " + "; ".join(skipped))
    if skipped:
        # the run passes; the marked blocks are listed in the report with their reasons
        request.node.user_properties.append(("skipped_blocks", skipped))


def _run_page(runnable: list[Block], cwd: Path) -> int:
    ran = 0
    for block in runnable:
        if block.lang == "python":
            _run_python(block)
        elif block.lang in ("bash", "sh", "shell"):
            _run_bash(block, cwd)
        elif block.lang in ("console", ""):
            _run_synopsis(block)
        elif block.lang == "toml":
            _run_toml(block, cwd)
        elif block.lang == "json":
            json.loads(block.body)
        else:  # text: sample output, nothing to run
            continue
        ran += 1
    return ran


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.skip is not None], ids=lambda b: b.id)
def test_marked_block(block: Block) -> None:
    pytest.skip(block.skip or "")
