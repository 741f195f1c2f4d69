"""Hostile input and faults at the CLI (issue 13): each case once failed with a traceback, a
wrong exit code, runaway memory or a forged terminal display.

Exit codes follow docs/cli-exit-codes.md: 0 ok, 1 judged and failed, 2 usage/input/environment
error, 3 internal error.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from affidavit.cli.main import app

pytestmark = pytest.mark.integration

ESC = "\x1b"
CHUNKS = [{"text": "Paris is the capital of France.", "url": "https://example.org/paris"}]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.upper().startswith("AFFIDAVIT_") or name in ("NO_COLOR", "FORCE_COLOR"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AFFIDAVIT_EMBED__BACKEND", "fake")
    monkeypatch.setenv("AFFIDAVIT_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(args: Sequence[str], input: str | bytes | None = None) -> Result:
    return CliRunner().invoke(app, list(args), input=input)


def no_traceback(r: Result) -> None:
    """The command ended through its exit code, not an exception."""
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "Traceback" not in r.output


def audit_file(path: Path, response: str, chunks: list[dict[str, str]] | None = None) -> Path:
    path.write_text(
        json.dumps({"chunks": CHUNKS if chunks is None else chunks, "response": response}),
        encoding="utf-8",
    )
    return path


def cli(
    args: Sequence[str],
    *,
    stdin: int | None = None,
    env_extra: dict[str, str] | None = None,
    mem_mb: int = 1536,
    timeout: float = 120,
) -> subprocess.CompletedProcess[bytes]:
    """The real console entry point in a child process with an address-space cap."""

    def cap() -> None:
        limit = mem_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    env = {**os.environ, "OMP_NUM_THREADS": "1", **(env_extra or {})}
    return subprocess.run(
        [sys.executable, "-m", "affidavit.cli.main", *args],
        stdin=stdin,
        capture_output=True,
        env=env,
        preexec_fn=cap,
        timeout=timeout,
        check=False,
    )


# -- defect 4: environment variables ---------------------------------------------------------


@pytest.mark.parametrize(
    "var",
    [
        'AFFIDAVIT_AUDIT__ALLOWLIST=["a",',
        "AFFIDAVIT_NOPE__X=1",
        "AFFIDAVIT_AUDIT__NOPE=1",
        "AFFIDAVIT_POLICY__TAU_ENTAIL=high",
    ],
)
@pytest.mark.parametrize("command", ["search", "ingest", "audit", "certificate", "keys"])
def test_bad_environment_is_exit_2_in_every_command(
    env: Path, monkeypatch: pytest.MonkeyPatch, var: str, command: str
) -> None:
    name, value = var.split("=", 1)
    monkeypatch.setenv(name, value)
    args = {
        "search": ["search", "q"],
        "ingest": ["ingest", str(audit_file(env / "a.json", "x"))],
        "audit": ["audit", str(audit_file(env / "a.json", "Paris is the capital of France."))],
        "certificate": ["certificate", "verify", str(env / "a.json")],
        "keys": ["keys", "show"],
    }[command]
    r = run(args)
    no_traceback(r)
    assert r.exit_code == 2, r.output
    assert name in r.output


@pytest.mark.parametrize("command", ["search", "audit", "certificate", "keys"])
def test_store_variable_never_crashes(
    env: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    monkeypatch.setenv("AFFIDAVIT_STORE", str(env / "x"))
    monkeypatch.setenv("AFFIDAVIT_AUDIT__ALLOWLIST", "wikipedia.org,example.org")
    args = {
        "search": ["search", "q"],
        "audit": ["audit", str(audit_file(env / "a.json", "Paris is the capital of France."))],
        "certificate": ["certificate", "verify", str(env / "a.json")],
        "keys": ["keys", "show"],
    }[command]
    r = run(args)
    no_traceback(r)
    expected = {"search": 2, "audit": 0, "certificate": 1, "keys": 2}[command]
    assert r.exit_code == expected, r.output


def test_store_variable_is_the_ingest_store(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AFFIDAVIT_STORE", str(env / "st"))
    doc = env / "a.txt"
    doc.write_text("The Eiffel Tower is in Paris.", encoding="utf-8")
    assert run(["ingest", str(doc)]).exit_code == 0
    r = run(["search", "Eiffel", "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)[0]["text"].startswith("The Eiffel")


# -- defect 5: terminal escapes ---------------------------------------------------------------


def test_audit_prints_untrusted_text_escaped(env: Path) -> None:
    chunks = [
        {"text": f"Paris is the capital of France.{ESC}[2J", "url": f"https://e.org/{ESC}]0;x"}
    ]
    answer = f"{ESC}[32mTRUST PASSED{ESC}[0m Paris is the capital of France. \x9b31m"
    for extra in ([], ["--no-color"]):
        r = run(["audit", str(audit_file(env / "a.json", answer, chunks)), *extra])
        no_traceback(r)
        assert ESC not in r.output and "\x9b" not in r.output, r.output
        assert "\\x1b[32mTRUST PASSED" in r.output
    r = run(["audit", str(env / "a.json"), "--json"])
    assert ESC not in r.stdout and "\x9b" not in r.stdout
    assert json.loads(r.stdout)["response"] == answer  # the same JSON value, escaped


def test_certificate_show_prints_untrusted_text_escaped(env: Path) -> None:
    assert run(["keys", "generate"]).exit_code == 0
    answer = f"Paris is the capital of France.{ESC}[2J"
    cert = env / "c.json"
    r = run(["audit", str(audit_file(env / "a.json", answer)), "--certify", str(cert)])
    assert cert.exists(), r.output
    tree = json.loads(cert.read_text(encoding="utf-8"))
    tree["question"] = f"{ESC}[32mTRUST PASSED{ESC}[0m\u202e"
    cert.write_text(json.dumps(tree), encoding="utf-8")
    r = run(["certificate", "show", str(cert)])
    no_traceback(r)
    assert r.exit_code == 0, r.output
    assert ESC not in r.output and "\u202e" not in r.output
    assert "\\x1b[32mTRUST PASSED" in r.output
    r = run(["certificate", "verify", str(cert)])  # tampered: invalid, reasons escaped
    assert r.exit_code == 1 and ESC not in r.output


def test_search_and_ingest_print_untrusted_text_escaped(env: Path) -> None:
    docs = env / "docs"
    docs.mkdir()
    (docs / "evil.jsonl").write_text(
        json.dumps({"id": f"e{ESC}[2J", "text": f"The tower {ESC}[31mis tall.", "title": "T\x07"})
        + "\n{bad json\n",
        encoding="utf-8",
    )
    (docs / f"name{ESC}[2J.txt").write_text("The tower stands.", encoding="utf-8")
    r = run(["ingest", str(docs), "--store", "st"])
    no_traceback(r)
    assert r.exit_code == 1 and ESC not in r.output  # the bad JSON line failed, reported
    r = run(["search", "tower", "--store", "st"])
    assert r.exit_code == 0 and ESC not in r.output and "\x07" not in r.output, r.output
    r = run(["search", "tower", "--store", "st", "--json"])
    assert ESC not in r.stdout and json.loads(r.stdout)


def test_search_shows_line_breaks_as_spaces(env: Path) -> None:
    """Issue 28: a snippet's newlines were printed as a literal ``\x0a``; they read as spaces
    now, and only what a terminal would act on stays escaped."""
    docs = env / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text(
        f"The tower\nstands\r\nin Paris.\tIt is {ESC}[31mtall.", encoding="utf-8"
    )
    assert run(["ingest", str(docs), "--store", "st"]).exit_code == 0
    r = run(["search", "tower", "--store", "st"])
    assert r.exit_code == 0, r.output
    assert "The tower stands in Paris. It is \\x1b[31mtall." in r.output, r.output
    assert "\\x0a" not in r.output and "\\x0d" not in r.output and ESC not in r.output


# -- defect 6: unbounded input ----------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["audit", "-"],
        ["check", "-"],
        ["validate", "-", "--schema", "Certificate"],
        ["certificate", "verify", "/dev/zero"],
        ["certificate", "show", "/dev/zero"],
        ["audit", "/dev/zero"],
    ],
)
def test_endless_input_is_refused_at_the_cap(env: Path, args: list[str]) -> None:
    with open("/dev/zero", "rb") as zero:
        p = cli(args, stdin=zero.fileno(), mem_mb=1536)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode == 2, err[-2000:]
    assert "limit" in err and "Traceback" not in err


# -- defect 7: a lone surrogate in an audit input ----------------------------------------------


@pytest.mark.parametrize("extra", [["--json"], ["--certify", "c.json"], []])
def test_lone_surrogate_in_audit_input_is_exit_2(env: Path, extra: list[str]) -> None:
    run(["keys", "generate"])
    path = env / "s.json"
    path.write_text(
        '{"chunks": [{"text": "Paris is in France.", "url": "https://e.org/p"}], '
        '"response": "Paris is in France.\\ud800"}',
        encoding="utf-8",
    )
    r = run(["audit", str(path), *extra])
    no_traceback(r)
    assert r.exit_code == 2 and "lone surrogate" in r.output, r.output
    assert not (env / "c.json").exists()


def test_lone_surrogate_in_a_check_line_is_a_malformed_line(env: Path) -> None:
    from io import StringIO

    from affidavit.cli.verify import check_lines

    out = StringIO()
    text = '{"id": 1, "claim": "x\\udc00", "evidence": ["y"]}\n'
    _, malformed, _ = check_lines(text, verifier=None, out=out)
    assert malformed == 1 and "lone surrogate" in out.getvalue()
    out.getvalue().encode("utf-8")


# -- defect 8: file errors ---------------------------------------------------------------------


def test_store_that_is_a_file_is_exit_2(env: Path) -> None:
    (env / "afile").write_text("x", encoding="utf-8")
    doc = env / "a.txt"
    doc.write_text("The tower stands.", encoding="utf-8")
    for args in (["ingest", str(doc), "--store", "afile"], ["search", "q", "--store", "afile"]):
        r = run(args)
        no_traceback(r)
        assert r.exit_code == 2 and "afile" in r.output, r.output


def test_unwritable_store_folder_is_exit_2(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = env / "a.txt"
    doc.write_text("The tower stands.", encoding="utf-8")
    assert run(["ingest", str(doc), "--store", "st"]).exit_code == 0
    real_open = os.open

    def denied(path: object, *a: object, **k: object) -> int:
        if str(path).endswith("writer.lock"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", denied)
    doc.write_text("The tower stands tall.", encoding="utf-8")
    r = run(["ingest", str(doc), "--store", "st"])
    no_traceback(r)
    assert r.exit_code == 2 and "Permission denied" in r.output, r.output


def test_search_output_errors_are_exit_2(env: Path) -> None:
    doc = env / "a.txt"
    doc.write_text("The tower stands.", encoding="utf-8")
    run(["ingest", str(doc), "--store", "st"])
    q = env / "q.jsonl"
    q.write_text('{"id": 1, "query": "tower"}\n', encoding="utf-8")
    (env / "folder").mkdir()
    for out in ("missing/out.jsonl", "folder"):
        r = run(["search", "--queries", str(q), "--output", out, "--store", "st"])
        no_traceback(r)
        assert r.exit_code == 2 and "--output" in r.output, r.output


def test_certificate_that_cannot_be_written_is_exit_2(env: Path) -> None:
    run(["keys", "generate"])
    (env / "folder").mkdir()
    path = audit_file(env / "a.json", "Paris is the capital of France.")
    r = run(["audit", str(path), "--certify", "folder"])
    no_traceback(r)
    assert r.exit_code == 2 and "folder" in r.output, r.output


# -- defect 9: exit codes ----------------------------------------------------------------------


def test_embedder_mismatch_at_ingest_is_exit_2(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = env / "a.txt"
    doc.write_text("The tower stands.", encoding="utf-8")
    assert run(["ingest", str(doc), "--store", "st"]).exit_code == 0
    monkeypatch.setenv("AFFIDAVIT_EMBED__BACKEND", "minilm")
    pytest.importorskip("onnxruntime")
    doc.write_text("The tower stands tall.", encoding="utf-8")
    r = run(["ingest", str(doc), "--store", "st"])
    no_traceback(r)
    assert r.exit_code == 2 and "store holds vectors of" in r.output, r.output


def test_internal_error_is_exit_3_with_one_line(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import affidavit.cli.audit as audit_cli
    from affidavit.cli.main import main

    def boom(*a: object, **k: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(audit_cli, "parse_input", boom)
    monkeypatch.setattr(sys, "argv", ["affidavit", "audit", str(audit_file(env / "a.json", "x"))])
    with pytest.raises(SystemExit) as info:
        main()
    assert info.value.code == 3
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: boom" in err and "Traceback" not in err


# -- defect 10: NO_COLOR and stray log lines ---------------------------------------------------


def test_no_color_with_any_value_disables_colour(env: Path) -> None:
    path = str(audit_file(env / "a.json", "Paris is the capital of France."))
    coloured = cli(["audit", path], env_extra={"FORCE_COLOR": "1"})
    assert coloured.returncode == 0 and ESC.encode() in coloured.stdout  # the probe can see it
    for value in ("1", "yes-please", "false"):
        p = cli(["audit", path], env_extra={"FORCE_COLOR": "1", "NO_COLOR": value})
        assert p.returncode == 0, p.stderr.decode()
        assert ESC.encode() not in p.stdout


def test_no_debug_log_without_verbose(env: Path) -> None:
    # 2500 chunks take the bm25s path, whose logger is DEBUG on import
    chunks = [{"text": f"Fact {i}: the tower is {i} metres tall.", "url": ""} for i in range(2500)]
    path = str(audit_file(env / "a.json", "Fact 7: the tower is 7 metres tall.", chunks))
    p = cli(["audit", path])
    assert p.returncode in (0, 1)
    assert b"DEBUG" not in p.stderr, p.stderr.decode()


def _wait_until_blocked(pid: int, timeout: float = 90.0) -> None:
    """Until the process is blocked reading its stdin.

    On x86-64 Linux, ``/proc/<pid>/syscall`` names the system call a sleeping process is in:
    ``0 0x0`` is read(0, ...). Elsewhere: asleep with its CPU time unchanged for a second, which
    a cold start (imports waiting on the disk) can also look like.
    """
    import platform
    import time

    syscall = Path(f"/proc/{pid}/syscall")
    exact = platform.machine() == "x86_64" and syscall.exists()

    def reading_stdin() -> bool:
        try:
            return syscall.read_text().startswith("0 0x0 ")
        except OSError:
            return False

    def sample() -> tuple[str, str]:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return fields[0], fields[11]  # state, utime

    deadline = time.monotonic() + timeout
    last = sample()
    while time.monotonic() < deadline:
        if exact:
            if reading_stdin():
                return
            time.sleep(0.1)
            continue
        time.sleep(1.0)
        now = sample()
        if now[0] == "S" and now == last:
            return
        last = now
    raise AssertionError("the child never blocked on stdin")


def test_interrupt_is_exit_130_not_1(env: Path) -> None:
    # conformance with the table (typer already did this before issue 13; kept so it stays so)
    import signal

    p = subprocess.Popen(
        [sys.executable, "-m", "affidavit.cli.main", "audit", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # a child inherits an *ignored* SIGINT, and Python then installs no KeyboardInterrupt
        # handler: a test run started in the background by a non-interactive shell has SIGINT
        # ignored (a terminal's foreground job never has). This failed a fresh-clone `make test`.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert p.stdin is not None
    p.stdin.write(b'{"chunks": [], ')  # then wait for more input, as a slow pipe would
    p.stdin.flush()
    _wait_until_blocked(p.pid)  # started, handler installed, waiting on stdin
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err.decode()
    assert b"Traceback" not in err


def test_a_corrupt_store_is_exit_2_with_advice(tmp_path: Path) -> None:
    """Issue 26.9: a SQLite store with a damaged page ended in exit 3 (DatabaseError)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(40):
        (docs / f"d{i}.txt").write_text(f"Document {i} is about bridges and towers. " * 40)
    store = tmp_path / "store"
    r = cli(
        ["ingest", str(docs), "--store", str(store)], env_extra={"AFFIDAVIT_HOME": str(tmp_path)}
    )
    assert r.returncode == 0, r.stderr
    db = store / "store.sqlite"
    # let the WAL be checkpointed into the file, then overwrite pages past the header
    import sqlite3

    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    data = bytearray(db.read_bytes())
    for off in range(4096, len(data), 4096):
        data[off + 8 : off + 200] = b"\xa5" * 192
    db.write_bytes(bytes(data))
    r = cli(
        ["search", "bridges", "--store", str(store)], env_extra={"AFFIDAVIT_HOME": str(tmp_path)}
    )
    err = r.stderr.decode()
    assert r.returncode == 2, err
    assert "internal error" not in err and "damaged" in err


def test_a_full_disk_during_check_is_exit_2_not_a_bug(tmp_path: Path) -> None:
    """Issue 26.8: a full disk while writing check's output ended in exit 3 (OSError)."""
    import signal

    pairs = tmp_path / "pairs.jsonl"
    row = {"id": 1, "claim": "The tower is 330 m tall.", "evidence": ["The tower is 330 m tall."]}
    pairs.write_text("".join(json.dumps({**row, "id": i}) + "\n" for i in range(50)))

    def small_disk() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))  # files past 2 KB: EFBIG
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "affidavit.cli.main",
            "check",
            str(pairs),
            "--engine",
            "local",
            "--output",
            str(tmp_path / "out.jsonl"),
        ],
        capture_output=True,
        env={**os.environ, "OMP_NUM_THREADS": "1", "AFFIDAVIT_HOME": str(tmp_path)},
        preexec_fn=small_disk,
        timeout=300,
        check=False,
    )
    err = r.stderr.decode()
    assert r.returncode == 2, err
    assert "internal error" not in err and "File too large" in err
