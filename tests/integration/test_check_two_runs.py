"""Two real ``affidavit check --engine local`` processes on one ``--output`` (issue 26.3).

They raced: a plain concurrent start failed one with exit 3 about 1 time in 5 (both used the
same temporary names), and two resumes once left 500 of 12,000 lines with exit 0. Now the second
run is refused with exit 2 naming the holder, and the output is always the whole run's.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROWS = 120
CHILD = "import sys; from affidavit.cli.main import main; sys.argv[0] = 'affidavit'; main()"


def _src(tmp_path: Path) -> Path:
    src = tmp_path / "in.jsonl"
    src.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"c{i:03d}",
                    "claim": f"Bridge {i} opened in {1800 + i}.",
                    "evidence": [f"Bridge {i} crosses the river. It opened in {1800 + i % 150}."],
                }
            )
            + "\n"
            for i in range(ROWS)
        )
    )
    return src


def _start(src: Path, out: Path) -> subprocess.Popen[bytes]:
    args = ["check", str(src), "--output", str(out), "--engine", "local"]
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, *args, "--shard-size", "5", "--cascade", "checks"],
        cwd=src.parent,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )


def _reference(tmp_path: Path, src: Path) -> bytes:
    ref = tmp_path / "reference" / "out.jsonl"
    ref.parent.mkdir()
    proc = _start(src, ref)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err.decode()
    return ref.read_bytes()


def test_a_second_run_is_refused_with_exit_2_naming_the_holder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    src = _src(tmp_path)
    expected = _reference(tmp_path, src)
    out = tmp_path / "run" / "out.jsonl"
    out.parent.mkdir()
    first = _start(src, out)
    lock = out.with_name(f".{out.name}.lock")
    deadline = time.monotonic() + 120
    while first.poll() is None and time.monotonic() < deadline:
        if lock.exists() and lock.read_text().strip() == str(first.pid):
            break
        time.sleep(0.002)
    # the first run holds the output: stopped there, it cannot finish before the second starts
    first.send_signal(signal.SIGSTOP)
    try:
        second = _start(src, out)
        _, err = second.communicate(timeout=300)
    finally:
        first.send_signal(signal.SIGCONT)
    message = err.decode()
    assert second.returncode == 2, message
    assert f"another run (pid {first.pid})" in message and "internal error" not in message
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err.decode()
    assert out.read_bytes() == expected


def test_two_runs_started_together_never_fail_or_cut_the_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    src = _src(tmp_path)
    expected = _reference(tmp_path, src)
    for attempt in range(5):
        out = tmp_path / f"run{attempt}" / "out.jsonl"
        out.parent.mkdir()
        pair = [_start(src, out), _start(src, out)]
        results = [(p.communicate(timeout=300)[1].decode(), p.returncode) for p in pair]
        codes = sorted(code for _, code in results)
        # both ran one after the other (0, 0), or one was refused while the other held it
        assert codes in ([0, 0], [0, 2]), (attempt, results)
        for err, code in results:
            assert code == 0 or "another run (pid" in err, (attempt, err)
        assert out.read_bytes() == expected, attempt
