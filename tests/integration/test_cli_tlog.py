"""`affidavit audit --certify` as a user runs it: every certificate is logged, verifies with
--log, and the log verifies; with the log off, nothing is logged; a batch job issues no
certificate, so logs nothing (issue 30)."""

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


def _run(args: list[str], home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "AFFIDAVIT_HOME": str(home), "NO_COLOR": "1", **env}
    return subprocess.run(
        [*EXE, *args], capture_output=True, text=True, env=full, cwd=home.parent, timeout=120
    )


def test_audit_certificates_are_logged_and_verify_with_log(tmp_path: Path) -> None:
    home = tmp_path / "home"
    sample = str(ROOT / "examples" / "audit_failing.json")
    assert _run(["keys", "generate"], home).returncode == 0
    certs = [tmp_path / f"c{i}.json" for i in range(3)]
    for cert in certs:
        assert _run(["audit", sample, "--certify", str(cert)], home).returncode == 1
    entries = [json.loads(c.read_text())["log_entry"] for c in certs]
    assert [e["inclusion"]["leaf_index"] for e in entries] == [0, 1, 2]
    for cert in certs:
        r = _run(["certificate", "verify", str(cert), "--log"], home)
        assert r.returncode == 0 and "in the log" in r.stdout, r.stderr
    r = _run(["log", "verify"], home)
    assert r.returncode == 0 and "3 entries" in r.stdout, r.stderr
    shown = json.loads(_run(["log", "show", "--json"], home).stdout)
    assert shown["tree_size"] == 3 and shown["note"].startswith(shown["origin"] + "\n3\n")
    # a newer checkpoint extends the first certificate's, with the proof from the local log
    newer = tmp_path / "newer.checkpoint"
    newer.write_text(shown["note"])
    r = _run(["certificate", "verify", str(certs[0]), "--log", "--checkpoint", str(newer)], home)
    assert r.returncode == 0, r.stderr

    off = tmp_path / "off.json"
    r = _run(["audit", sample, "--certify", str(off)], home, AFFIDAVIT_TLOG__ENABLED="false")
    assert r.returncode == 1 and "log_entry" not in json.loads(off.read_text())
    assert json.loads(_run(["log", "show", "--json"], home).stdout)["tree_size"] == 3
    r = _run(["certificate", "verify", str(off), "--log"], home)
    assert r.returncode == 1 and "carries no log entry" in r.stderr
    assert _run(["certificate", "verify", str(off)], home).returncode == 0  # still a valid cert


def test_batch_jobs_issue_no_certificate_so_log_nothing(tmp_path: Path) -> None:
    # the issue lists batch jobs among the certificate paths: they issue none, and say so
    home = tmp_path / "home"
    assert _run(["keys", "generate"], home).returncode == 0
    rows = tmp_path / "rows.jsonl"
    rows.write_text((ROOT / "examples" / "audit_failing.json").read_text().replace("\n", " "))
    cert = tmp_path / "c.json"
    r = _run(
        ["audit", str(rows), "--batch", "-o", str(tmp_path / "out.jsonl"), "--certify", str(cert)],
        home,
    )
    assert r.returncode == 2 and "cannot be combined with --batch" in r.stderr
    assert not cert.exists() and not (home / "keys" / "tlog").exists()
