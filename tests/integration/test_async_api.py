"""The async and Python API as a user's script meets it (issue 28)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

UNGUARDED = """
import asyncio
import affidavit

chunks = [{{"text": "Rome is in Italy. " * {repeat}}}]
r = asyncio.run(affidavit.aaudit("q", chunks, "Rome is in Italy."))
print("RESULT", r.compliance_rate)
"""


def _run_script(tmp_path: Path, repeat: int) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "unguarded.py"
    script.write_text(UNGUARDED.format(repeat=repeat), encoding="utf-8")
    env = {**os.environ, "AFFIDAVIT_HOME": str(tmp_path / "home"), "AFFIDAVIT_MAX_WORKERS": "2"}
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_script_without_a_main_guard_audits_small_inputs(tmp_path: Path) -> None:
    """A spawned worker re-imported the unguarded script and failed ("An attempt has been made
    to start a new process before the current process has finished its bootstrapping phase");
    a small audit needs no worker process at all."""
    p = _run_script(tmp_path, repeat=1)
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("RESULT 1.0") == 1, p.stdout
    assert "bootstrapping" not in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_a_script_without_a_main_guard_is_told_what_to_do(tmp_path: Path) -> None:
    """A large audit uses worker processes; when they find the script unguarded the message
    names the fix, and the audit still completes in the main process."""
    p = _run_script(tmp_path, repeat=2000)
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("RESULT 1.0") == 1, p.stdout
    assert 'if __name__ == "__main__":' in p.stderr, p.stderr
    assert "bootstrapping phase" not in p.stderr, p.stderr
