"""`affidavit audit --certify`: a real key, a real signed file, checked by `certificate verify`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
EXE = [sys.executable, "-m", "affidavit.cli.main"]


def _run(args: list[str], home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AFFIDAVIT_HOME": str(home), "NO_COLOR": "1"}
    return subprocess.run(
        [*EXE, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )


def test_audit_certify_round_trip_and_tamper(tmp_path: Path) -> None:
    home = tmp_path / "home"
    sample = ROOT / "examples" / "audit_failing.json"
    cert = tmp_path / "cert.json"

    # no key configured: a clear usage error and no file, never an unsigned certificate
    r = _run(["audit", str(sample), "--certify", str(cert)], home, tmp_path)
    assert r.returncode == 2, r.stderr
    assert "key" in r.stderr.lower()
    assert not cert.exists()

    assert _run(["keys", "generate"], home, tmp_path).returncode == 0
    r = _run(["audit", str(sample), "--certify", str(cert), "--json"], home, tmp_path)
    assert r.returncode == 1  # the failing sample fails trust ...
    assert cert.exists()  # ... and its certificate is still written
    data = json.loads(cert.read_text())
    decisions = {c["decision"] for c in data["claims"]}
    assert "blocked" in decisions  # the failing sample has a typed-check failure
    # one story per claim: --certify runs the entailment verifier, and what is printed agrees
    # with what is signed (supported exactly when verified)
    report = json.loads(r.stdout)
    assert len(report["claims"]) == len(data["claims"])
    for printed, signed in zip(report["claims"], data["claims"], strict=True):
        assert printed["supported"] == (signed["decision"] == "verified"), (printed, signed)
        if printed["supported"]:
            assert printed["verdict"]["label"] == "supported"

    assert _run(["certificate", "verify", str(cert)], home, tmp_path).returncode == 0

    # flip a decision: verification must fail
    data["claims"][0]["decision"] = "verified"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    r = _run(["certificate", "verify", str(bad)], home, tmp_path)
    assert r.returncode == 1
