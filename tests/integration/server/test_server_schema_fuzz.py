"""Schemathesis over the served OpenAPI schema: no 5xx and no response that breaks the schema.

Bounded (a few examples per operation, at most a minute of fuzzing) so it fits in CI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from affidavit.testing.server import ServedApi as Server

pytestmark = [pytest.mark.integration, pytest.mark.slow]

OUTPUT = Path(__file__).resolve().parents[3] / "tests" / "output" / "server"


def test_schemathesis_finds_no_server_error(served: Server) -> None:
    exe = shutil.which("schemathesis") or str(Path(sys.executable).parent / "schemathesis")
    if not Path(exe).exists():
        pytest.skip("schemathesis is not installed (it is in the dev extra)")
    cmd = [
        exe,
        "run",
        served.url + "/openapi.json",
        "--checks",
        "not_a_server_error,response_schema_conformance,content_type_conformance",
        "--phases",
        "examples,coverage,fuzzing",
        "--max-examples",
        "6",
        "--max-time",
        "60",
        "--workers",
        "1",
        "--seed",
        "14",
        "--header",
        f"Authorization: Bearer {served.keys['write']}",
        "--no-color",
    ]
    env = {**os.environ, "HYPOTHESIS_STORAGE_DIRECTORY": str(OUTPUT / ".hypothesis")}
    OUTPUT.mkdir(parents=True, exist_ok=True)
    # schemathesis keeps a cache in its working directory: keep it out of the repository
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=OUTPUT)
    (OUTPUT / "schemathesis.txt").write_text(run.stdout + run.stderr)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert "passed" in run.stdout
