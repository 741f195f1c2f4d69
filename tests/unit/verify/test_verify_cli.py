"""``affidavit check``: JSONL in/out, error lines, exit codes (tiny ONNX model, no training)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from affidavit.cli.main import app
from affidavit.verify.fakes import build_tiny_model

runner = CliRunner()


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("m"), max_len=64)


@pytest.fixture
def env(model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AFFIDAVIT_VERIFY__MODEL_PATH", str(model))
    monkeypatch.setenv("AFFIDAVIT_VERIFY__THREADS", "1")


GOOD = [
    {"id": "a", "claim": "Paris is the capital of France.", "evidence": ["Paris is in France."]},
    {"id": 7, "claim": "He was born in 1990.", "evidence": ["He was born in 1991.", "Other."]},
]


def test_check_writes_exactly_the_documented_keys(env: None, tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(x) for x in GOOD) + "\n")
    out = tmp_path / "out.jsonl"
    res = runner.invoke(app, ["check", str(src), "--output", str(out)])
    assert res.exit_code == 0, res.output
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["a", 7]
    for r in rows:
        assert set(r) == {"id", "label", "p_entail", "p_contradict", "evidence_used"}
        assert r["label"] in ("supported", "contradicted", "unsupported")
        assert 0 <= r["p_entail"] <= 1 and 0 <= r["p_contradict"] <= 1
    # the date check catches 1990 vs 1991 whatever the random model says
    assert rows[1]["label"] == "contradicted"
    assert rows[1]["evidence_used"] == ["He was born in 1991."]


def test_stdin_stdout_and_malformed_lines(env: None) -> None:
    text = "\n".join([json.dumps(GOOD[0]), "{not json", json.dumps({"id": 3, "claim": "x"}), ""])
    res = runner.invoke(app, ["check", "-"], input=text)
    assert res.exit_code == 2
    lines = [json.loads(x) for x in res.stdout.splitlines() if x.startswith("{")]
    assert len(lines) == 3
    assert "error" not in lines[0]
    assert lines[1]["error"].startswith("line 2: not JSON")
    assert lines[2]["id"] == 3 and "evidence" in lines[2]["error"]
    assert lines[2]["label"] == "unsupported"
    assert "Traceback" not in res.output


def test_missing_model_exits_1_and_never_supports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AFFIDAVIT_VERIFY__MODEL_PATH", str(tmp_path / "absent"))
    res = runner.invoke(app, ["check", "-"], input=json.dumps(GOOD[0]) + "\n")
    assert res.exit_code == 1
    (row,) = [json.loads(x) for x in res.stdout.splitlines() if x.startswith("{")]
    assert row["label"] == "unsupported" and row["p_entail"] == 0.0
    assert "unavailable" in row["error"]


def test_unreadable_input_is_a_usage_error(env: None, tmp_path: Path) -> None:
    res = runner.invoke(app, ["check", str(tmp_path / "nope.jsonl")])
    assert res.exit_code == 2 and "cannot read" in res.output


def test_thresholds_default_to_the_models_dev_tuned_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from affidavit.core.settings import load_settings
    from affidavit.verify.calibration import effective_policy

    d = build_tiny_model(tmp_path / "m")
    cfg = json.loads((d / "config.json").read_text())
    cfg["thresholds"] = {"tau_entail": 0.41, "tau_contradict": 0.9}
    (d / "config.json").write_text(json.dumps(cfg))
    monkeypatch.delenv("AFFIDAVIT_POLICY__TAU_ENTAIL", raising=False)
    s = load_settings(overrides={"verify": {"model_path": str(d)}})
    pol = effective_policy(s)
    assert (pol.tau_entail, pol.tau_contradict) == (0.41, 0.9)
    explicit = load_settings(
        overrides={"verify": {"model_path": str(d)}, "policy": {"tau_entail": 0.7}}
    )
    assert effective_policy(explicit).tau_entail == 0.7


def test_a_line_separator_inside_a_json_string_does_not_split_the_record(
    env: None, tmp_path: Path
) -> None:
    # U+2028 / U+0085 are legal raw inside a JSON string; str.splitlines would cut the record
    ev = ["Paris is in France."]
    row = {"id": "a\u2028b\x85c", "claim": "Paris is in France.", "evidence": ev}
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(row, ensure_ascii=False) + "\r\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    res = runner.invoke(app, ["check", str(src), "--output", str(out), "--cascade", "checks"])
    assert res.exit_code == 0, res.output
    text = out.read_text(encoding="utf-8")
    # written escaped, so any line reader sees one record
    assert "\u2028" not in text and "\x85" not in text
    (line,) = text.splitlines()
    assert json.loads(line)["id"] == row["id"]


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["--threads", "0"], "verify.threads"),
        (["--threads", "99999999999999999999"], "verify.threads"),
        (["--cascade", ","], "verify.cascade"),
        (["--cascade", ""], "verify.cascade"),
    ],
)
def test_an_option_out_of_range_is_a_usage_error_never_ignored(
    env: None, args: list[str], names: str
) -> None:
    # "--threads 0" and "--cascade ''" were dropped (the defaults ran); "--cascade ," ran no
    # stage, and a claim restated word for word came out supported; a thread count past what
    # onnxruntime takes was an internal error (exit 3)
    row = {"id": "a", "claim": "Paris is in France.", "evidence": ["Paris is in France."]}
    res = runner.invoke(app, ["check", "-", *args], input=json.dumps(row) + "\n")
    assert res.exit_code == 2, res.output
    assert names in res.output and "Traceback" not in res.output
    assert "supported" not in res.stdout


def test_a_line_with_a_duplicate_key_is_malformed(env: None) -> None:
    # the last "claim" was checked while another reader of the same line sees the first
    line = '{"id": "a", "claim": "Paris is in France.", "evidence": ["x"], "claim": "Other."}'
    res = runner.invoke(app, ["check", "-", "--cascade", "checks"], input=line + "\n")
    assert res.exit_code == 2, res.output
    (row,) = [json.loads(x) for x in res.stdout.splitlines() if x.startswith("{")]
    assert row["label"] == "unsupported" and "duplicate key 'claim'" in row["error"]


def test_a_blank_claim_is_never_supported(env: None) -> None:
    # "   " passed the claim's length check and the packaged model scored it as entailed
    row = {"id": "a", "claim": " \t ", "evidence": ["y"]}
    res = runner.invoke(app, ["check", "-"], input=json.dumps(row) + "\n")
    assert res.exit_code == 1, res.output
    (out,) = [json.loads(x) for x in res.stdout.splitlines() if x.startswith("{")]
    assert out["label"] == "unsupported" and out["p_entail"] == 0.0
    assert out["error"] == "the claim states nothing to check"
