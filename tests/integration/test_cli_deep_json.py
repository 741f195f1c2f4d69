"""Deep JSON at every door ends in exit 2 "nested too deeply" or one failed record (issue 26.6).

``certificate verify``, ``certificate show`` and ``validate`` ended in exit 3 (RecursionError);
ingest of a JSONL record whose metadata nests 980 levels lost the whole run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from affidavit.cli.main import app

pytestmark = pytest.mark.integration

DEEP = '{"a": ' + "[" * 5000 + "]" * 5000 + "}"


def deep_metadata(levels: int) -> str:
    """A metadata object nesting ``levels`` deep, as JSON text (json.dumps itself would recurse)."""
    return '{"x": ' * levels + "{}" + "}" * levels


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.upper().startswith("AFFIDAVIT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AFFIDAVIT_EMBED__BACKEND", "fake")
    monkeypatch.setenv("AFFIDAVIT_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(args: list[str]) -> Result:
    return CliRunner().invoke(app, args)


@pytest.mark.parametrize(
    "args",
    [
        ["certificate", "verify", "deep.json"],
        ["certificate", "show", "deep.json"],
        ["validate", "deep.json", "--schema", "Certificate"],
        ["audit", "deep.json"],
    ],
)
def test_deep_json_is_exit_2_nested_too_deeply(env: Path, args: list[str]) -> None:
    (env / "deep.json").write_text(DEEP, encoding="utf-8")
    r = run(args)
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert r.exit_code == 2, r.output
    assert "nested too deeply" in r.output


def test_validate_from_stdin_too(env: Path) -> None:
    r = CliRunner().invoke(app, ["validate", "-", "--schema", "Certificate"], input=DEEP)
    assert r.exit_code == 2 and "nested too deeply" in r.output


def test_a_deep_jsonl_record_fails_alone(env: Path) -> None:
    docs = env / "docs"
    docs.mkdir()
    lines = [
        '{"id": "r1", "text": "The deep record is about lighthouses.", "metadata": '
        + deep_metadata(980)
        + "}",
        json.dumps({"id": "r2", "text": "The plain record is about bridges and their towers."}),
    ]
    (docs / "data.jsonl").write_text("\n".join(lines) + "\n")
    (docs / "other.txt").write_text("Another file about tunnels under rivers.")
    r = run(["ingest", str(docs), "--store", "st", "--json"])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert r.exit_code == 1, r.output
    out = {o.get("doc_id") or o["source"]: o for o in json.loads(r.stdout)["outcomes"]}
    failed = [o for o in out.values() if o["status"] == "failed"]
    assert len(failed) == 1 and "nested too deeply" in failed[0]["reason"]
    assert failed[0]["source"].endswith("#L1")
    assert out["r2"]["status"] == "added"
    assert any(o["status"] == "added" and o["source"].endswith("other.txt") for o in out.values())


@pytest.mark.parametrize(
    "args",
    [
        ["check", "deep.jsonl"],
        ["check", "deep.jsonl", "--engine", "local", "--output", "out.jsonl"],
        ["audit", "deep.jsonl", "--batch", "--output", "out.jsonl"],
        ["search", "--queries", "deep.jsonl", "--output", "out.jsonl", "--store", "st"],
    ],
)
@pytest.mark.parametrize("levels", [980, 5000])
def test_deep_json_lines_are_exit_2_at_the_batch_doors(
    env: Path, args: list[str], levels: int
) -> None:
    """The doors the issue found already answering exit 2 "nested too deeply", kept so: each
    reads its lines through the same bounded reader (980 levels parse in Python but recurse in
    what follows; 5,000 do not parse)."""
    deep = "[" * levels + "]" * levels
    (env / "deep.jsonl").write_text(
        f'{{"id": "1", "query": "q", "claim": "x", "response": "x", "evidence": {deep}}}\n',
        encoding="utf-8",
    )
    (env / "doc.txt").write_text("The bridge opened in 1890.", encoding="utf-8")
    assert run(["ingest", "doc.txt", "--store", "st"]).exit_code == 0
    r = run(args)
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert r.exit_code == 2, r.output
    out = env / "out.jsonl"
    told = r.output + (out.read_text(encoding="utf-8") if out.exists() else "")
    assert "nested too deeply" in told, told
