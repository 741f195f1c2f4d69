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

A python block may ``await`` at top level: it runs as ``python -m asyncio`` runs it. A server
command (``affidavit mcp``, ``affidavit serve``) runs in a child process on loopback until it is
ready (``/readyz`` answers 200; an MCP client lists the tools), then it is stopped; a fixed port
in use is waited for, not taken.

A block that leaves something to the reader (``prompt and llm are your chain's``, a certificate
in a log) carries ``<!-- setup: NAME -->`` on the line before it (or at the end of that line):
``NAME`` is a setup of ``docs_setups.py``, run around the block, that provides those names and
files with declared stand-ins and checks what the block left. A block that needs what a test run
cannot have (docker, the network, hours of training, a Qdrant server) carries ``<!-- skip: the
reason -->`` instead and is reported as skipped with that reason; a block with a command this
test cannot run and neither marker fails.
"""

from __future__ import annotations

import ast
import asyncio
import doctest
import inspect
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import httpx
import pytest
from docs_setups import SETUPS, run_cli

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(
    r"^(?P<indent>[ ]*)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ ]*$", re.S | re.M
)
MARKER = re.compile(r"<!--\s*(?P<kind>skip|setup):\s*(?P<value>.+?)\s*-->\s*$")
EXIT = re.compile(r"#.*\bexit (?P<code>\d)\b")
ENV_ASSIGN = re.compile(r"^[A-Z][A-Z0-9_]*=")
# what a bash line may start with for this test to run it
RUNNABLE = ("affidavit", "cat", "echo", "export", "python")
# commands that serve until stopped, and the port each listens on unless told
SERVERS = {"mcp": 8765, "serve": 8000}
MCP_TOOLS = {"ask", "search", "audit", "check", "verify_certificate"}
READY_S = 120.0


@dataclass(frozen=True)
class Block:
    page: Path
    index: int
    line: int
    lang: str
    body: str
    skip: str | None
    setup: str | None

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _blocks(page: Path) -> Iterator[Block]:
    text = page.read_text(encoding="utf-8")
    for i, m in enumerate(FENCE.finditer(text)):
        before = [ln for ln in text[: m.start()].splitlines() if ln.strip()]
        marker = MARKER.search(before[-1]) if before else None
        kind, value = (marker.group("kind"), marker.group("value")) if marker else (None, None)
        body = "\n".join(ln[len(m.group("indent")) :] for ln in m.group("body").splitlines())
        yield Block(
            page=page,
            index=i,
            line=text.count("\n", 0, m.start()) + 1,
            lang=m.group("lang").lower(),
            body=body,
            skip=value if kind == "skip" else None,
            setup=value if kind == "setup" else None,
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
            want = expected if n == len(steps) - 1 else 0
            if words[0] == "python":  # this environment's interpreter, in a child process
                code, out = _python(words[1:], env, cwd)
            elif words[0] == "affidavit" and words[1:2] and words[1] in SERVERS:
                assert want == 0, f"{block.id}: a server's exit code is not checked: {ln}"
                _serve(words[1:], env, cwd)
                continue
            else:
                assert words[0] == "affidavit", ln
                code, out = run_cli(words[1:], env, stdin)
            assert code == want, f"{block.id}: `{ln}` exited {code}, not {want}:\n{out[-2000:]}"


def _python(args: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=600,
    )
    return proc.returncode, proc.stdout + proc.stderr


def _options(args: list[str]) -> dict[str, str]:
    """``--name value`` pairs of a command line (every option of mcp and serve takes one)."""
    return {a: b for a, b in pairwise(args) if a.startswith("--")}


def _serve(args: list[str], env: dict[str, str], cwd: Path) -> None:
    """Run a server command in the background until it is ready, then stop it (bounded)."""
    opts = _options(args)
    host = opts.get("--host", "127.0.0.1")
    assert host in ("127.0.0.1", "localhost"), f"the docs test serves on loopback only: {args}"
    cmd = [sys.executable, "-m", "affidavit.cli.main", *args]
    full_env = {**os.environ, **env, "OMP_NUM_THREADS": "1", "NO_COLOR": "1"}
    if args[0] == "mcp" and opts.get("--transport", "stdio") == "stdio":
        from mcp.client.stdio import StdioServerParameters

        params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=full_env, cwd=cwd)
        assert _mcp_tools(params) >= MCP_TOOLS
        return
    port = int(opts.get("--port", SERVERS[args[0]]))
    _wait_until_free(port)
    log_path = cwd.parent / f"{args[0]}-{port}.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, cwd=cwd, env=full_env, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_ready(args[0], port, proc, log_path)
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _mcp_tools(server: Any) -> set[str]:
    """The tool names an MCP server lists to the official client (stdio parameters or a URL)."""
    from mcp import Client

    async def main() -> set[str]:
        async with Client(server) as client:
            return {t.name for t in (await client.list_tools()).tools}

    return asyncio.run(asyncio.wait_for(main(), READY_S))


def _wait_until_free(port: int) -> None:
    """A documented fixed port may be held for a moment by another run of these tests."""
    deadline = time.monotonic() + 60
    while True:
        with socket.socket() as s:
            # as the servers bind: a closed connection's TIME_WAIT does not hold the port
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError(f"port {port} stayed in use for 60 s") from None
        time.sleep(0.5)


def _wait_ready(command: str, port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + READY_S
    last = "no answer"
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"`affidavit {command}` exited:\n{log.read_text()[-2000:]}"
        if command == "serve":
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2.0)
                if r.status_code == 200:
                    return
                last = r.text
            except httpx.HTTPError as exc:
                last = str(exc)
        else:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    assert _mcp_tools(f"http://127.0.0.1:{port}/mcp") >= MCP_TOOLS
                    return
        time.sleep(0.25)
    raise AssertionError(f"`affidavit {command}` not ready after {READY_S}s: {last}")


def _run_synopsis(block: Block) -> None:
    for ln in _logical_lines(block.body):
        if ln.startswith("["):
            continue
        words = []
        for w in _split(ln.removeprefix("$ "))[1:]:
            if not re.fullmatch(r"[a-z][a-z-]*", w):
                break
            words.append(w)
        code, out = run_cli([*words, "--help"], {}, None)
        assert code == 0, f"{block.id}: `affidavit {' '.join(words)}` does not exist:\n{out}"


def _run_python(block: Block, ns: dict[str, Any]) -> None:
    ns.setdefault("__name__", "__docs__")
    if ">>> " in block.body:
        parser = doctest.DocTestParser()
        test = parser.get_doctest(block.body, ns, block.id, str(block.page), block.line)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        runner.run(test, clear_globs=False)
        assert runner.failures == 0, f"{block.id}: the doctest fails (output above)"
        return
    code = compile(block.body, block.id, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    if code.co_flags & inspect.CO_COROUTINE:  # top-level await, as `python -m asyncio` runs it
        asyncio.run(eval(code, ns))
    else:
        exec(code, ns)


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
    """A block this test cannot run carries a skip marker with the reason; a setup exists."""
    missing = [f"{b.id}: {bad[0]!r}" for b in BLOCKS if b.skip is None and (bad := _unrunnable(b))]
    assert not missing, "mark these blocks <!-- skip: why -->:\n" + "\n".join(missing)
    unknown = [f"{b.id}: {b.setup}" for b in BLOCKS if b.setup and b.setup not in SETUPS]
    assert not unknown, f"no such setup in docs_setups.py: {unknown}"
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
        if block.lang not in ("python", "bash", "sh", "shell", "console", "", "toml", "json"):
            continue  # text: sample output, nothing to run
        with SETUPS[block.setup](cwd) if block.setup else nullcontext({}) as ns:
            if block.lang == "python":
                _run_python(block, ns)
            elif block.lang in ("bash", "sh", "shell"):
                _run_bash(block, cwd)
            elif block.lang in ("console", ""):
                _run_synopsis(block)
            elif block.lang == "toml":
                _run_toml(block, cwd)
            else:
                json.loads(block.body)
        ran += 1
    return ran


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.skip is not None], ids=lambda b: b.id)
def test_marked_block(block: Block) -> None:
    """A skipped block is not run; what it names is checked without running it."""
    problems = _static_problems(block)
    assert not problems, f"{block.id} names what does not exist:\n" + "\n".join(problems)
    pytest.skip(block.skip or "")


def _static_problems(block: Block) -> list[str]:
    """Extras, make targets, scripts and options a block names that do not exist here."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    makefile = (ROOT / "Makefile").read_text()
    problems = []
    variables: dict[str, str] = {}
    for ln in _logical_lines(block.body):
        if m := re.fullmatch(r'([A-Z_]+)="([^"]*)"', ln):  # FIT="--per-source 150 ..."
            variables[m.group(1)] = m.group(2)
            continue
        ln = re.sub(r"\$([A-Z_]+)\b", lambda v: variables.get(v.group(1), v.group(0)), ln)
        if "pip install" in ln:
            for group in re.findall(r"affidavit\[([\w,-]+)\]", ln):
                problems += [f"no extra {e!r}: {ln}" for e in group.split(",") if e not in extras]
        if (m := re.match(r"make ([\w-]+)", ln)) and not re.search(f"^{m[1]}:", makefile, re.M):
            problems.append(f"no make target {m[1]!r}: {ln}")
        tokens = shlex.split(ln.replace(";", " ; ").replace("&", " & ").replace(">", " > "))
        for i, tok in enumerate(tokens):
            if not re.fullmatch(r"(training|benchmarks)/\w+\.py", tok):
                continue
            script = ROOT / tok
            if not script.exists():
                problems.append(f"no script {tok}: {ln}")
                continue
            known = _script_options(script)
            for opt in _options_until_shell(tokens[i + 1 :]):
                if opt not in known:
                    problems.append(f"{tok} has no option {opt}: {ln}")
        if tokens[:1] == ["affidavit"]:
            words = [w for w in tokens[1:3] if re.fullmatch(r"[a-z][a-z-]*", w)]
            code, out = run_cli([*words, "--help"], {}, None)
            problems += [f"no `affidavit {' '.join(words)}`: {ln}"] if code else []
            for opt in _options_until_shell(tokens[1:]):
                if not re.search(rf"{re.escape(opt)}\b", out):
                    problems.append(f"`affidavit {' '.join(words)}` has no option {opt}: {ln}")
    return problems


def _options_until_shell(tokens: list[str]) -> list[str]:
    opts = []
    for tok in tokens:
        if tok in (";", "&", ">", "|"):
            break
        if tok.startswith("--"):
            opts.append(tok.split("=", 1)[0])
    return opts


def _script_options(script: Path) -> set[str]:
    """The option strings a script's argparse parser declares (read from its source)."""
    tree = ast.parse(script.read_text(encoding="utf-8"))
    return {
        arg.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "add_argument"
        for arg in node.args
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
    }
