"""``affidavit audit`` end to end: CliRunner and a real subprocess of the installed script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from affidavit.cli.main import app
from affidavit.core.report import AuditReport

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "audit_sample.json"
FAILING = ROOT / "examples" / "audit_failing.json"
SCRIPT = Path(sys.executable).parent / "affidavit"
runner = CliRunner()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in list(os.environ):
        if key.startswith("AFFIDAVIT_"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)  # no stray affidavit.toml from the working directory


def run_cli(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    r = runner.invoke(app, ["audit", *args], input=stdin)
    return r.exit_code, r.stdout, r.stderr


def test_sample_passes_with_exit_0() -> None:
    code, out, _ = run_cli(str(SAMPLE), "--no-color")
    assert code == 0
    assert "TRUST PASSED" in out
    assert "\x1b[" not in out


def test_failing_sample_exits_1_and_says_why() -> None:
    code, out, _ = run_cli(str(FAILING), "--no-color")
    assert code == 1
    assert "TRUST FAILED" in out
    assert "the date 4 March 1925 disagrees with 4 March 1890 in the evidence" in out
    assert "'not'" in out
    assert "'Gustave', 'Eiffel'" in out
    assert "malformed_url" in out


def test_json_output_is_the_full_report() -> None:
    code, out, _ = run_cli(str(FAILING), "--json")
    assert code == 1
    report = AuditReport.model_validate_json(out)
    assert report.compliance_rate == pytest.approx(1 / 5)
    assert [b.reason for b in report.blocked_sources] == ["malformed_url"]
    assert not report.trust_passed


def test_stdin_and_modes() -> None:
    text = FAILING.read_text(encoding="utf-8")
    code, out, _ = run_cli("-", "--mode", "guardrail", "--json", stdin=text)
    assert code == 1
    guarded = json.loads(out)["guarded_response"]
    assert "1925" not in guarded and "UNESCO" in guarded
    code, out, _ = run_cli("-", "--mode", "enforce", "--json", stdin=text)
    assert code == 1 and json.loads(out)["mode"] == "enforce"


def test_config_beside_the_file(tmp_path: Path) -> None:
    data = json.loads(FAILING.read_text(encoding="utf-8"))
    f = tmp_path / "in.json"
    f.write_text(json.dumps(data), encoding="utf-8")
    (tmp_path / "affidavit.toml").write_text("[audit]\nmin_compliance = 0.2\n", encoding="utf-8")
    code, _, _ = run_cli(str(f), "--json")
    assert code == 0  # 1 of 5 claims supported meets min_compliance 0.2


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        ('{"chunks": [], \n "response": }', "malformed JSON at line 2 column"),
        ('{"chunks": []}', "missing field 'response'"),
        ('{"chunks": {}, "response": "x"}', "field 'chunks' must be a list, not an object"),
        ('{"chunks": [], "response": 5}', "field 'response' must be a string, not a number"),
        ('{"chunks": [], "response": "x", "extra": 1}', "unknown field(s) extra"),
        ('{"chunks": [{"url": "https://a.org"}], "response": "x"}', "chunks[0].text: missing"),
        ('{"chunks": [3], "response": "x"}', "chunks[0] must be an object"),
        ("[1, 2]", "expected a JSON object"),
    ],
)
def test_input_errors_exit_2_with_one_line(stdin: str, message: str) -> None:
    code, out, err = run_cli("-", stdin=stdin)
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err + out


def test_unknown_config_key_and_bad_mode_exit_2(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("[audit]\nmin_compliance = 0.5\nfoo = 1\n", encoding="utf-8")
    code, _, err = run_cli(str(SAMPLE), "--config", str(cfg))
    assert code == 2 and "audit.foo: unknown setting" in err
    code, _, err = run_cli(str(SAMPLE), "--mode", "block")
    assert code == 2 and "'audit', 'guardrail' or 'enforce'" in err


def _subprocess(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AFFIDAVIT_")}
    return subprocess.run(
        [str(SCRIPT), "audit", *args], input=stdin, capture_output=True, env=env, timeout=60
    )


@pytest.mark.skipif(not SCRIPT.exists(), reason="console script not installed in this venv")
def test_real_subprocess_exit_codes() -> None:
    ok = _subprocess(str(SAMPLE), "--no-color")
    assert ok.returncode == 0, ok.stderr
    assert b"TRUST PASSED" in ok.stdout
    bad = _subprocess(str(FAILING), "--json")
    assert bad.returncode == 1
    assert json.loads(bad.stdout)["trust_passed"] is False
    binary = _subprocess("-", stdin=b'\xff\xfe{"chunks": []}')
    assert binary.returncode == 2
    assert b"not valid UTF-8" in binary.stderr
    assert len(binary.stderr.strip().splitlines()) == 1
    missing = _subprocess("no-such-file.json")
    assert missing.returncode == 2 and b"Traceback" not in missing.stderr


@pytest.mark.skipif(not SCRIPT.exists(), reason="console script not installed in this venv")
def test_real_subprocess_large_answer(tmp_path: Path) -> None:
    sentence = "The Forth Bridge opened on 4 March 1890. "
    data = json.loads(SAMPLE.read_text(encoding="utf-8"))
    data["response"] = sentence * (5_000_000 // len(sentence))
    f = tmp_path / "big.json"
    f.write_text(json.dumps(data), encoding="utf-8")
    r = _subprocess(str(f), "--json")
    assert r.returncode == 1  # the unchecked rest is never silently passed
    kinds = {i["kind"] for i in json.loads(r.stdout)["policy_issues"]}
    assert "response_truncated" in kinds
