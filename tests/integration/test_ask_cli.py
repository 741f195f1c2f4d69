"""``affidavit ask`` end to end: a real store, the real corrective stage, verifier, policy and
certificates, with the LLM served by a scripted OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from affidavit.certify.keys import generate_key, public_key_path
from affidavit.certify.verify import verify_certificate
from affidavit.cli.main import app
from affidavit.testing.fake_llm import FakeOpenAIServer, FakeReply

pytestmark = pytest.mark.integration

BRIDGE = (
    "The Forth Bridge is a cantilever railway bridge across the Firth of Forth in Scotland. "
    "The Forth Bridge opened on 4 March 1890. It was designed by John Fowler and Benjamin Baker."
)
LIGHT = (
    "The Bell Rock Lighthouse stands off the coast of Angus, Scotland. It was built between "
    "1807 and 1810 by Robert Stevenson."
)
ANSWER = "The Forth Bridge opened on 4 March 1890 [1]. It was painted green by aliens [7]."


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    (root / "bridge.txt").write_text(BRIDGE, encoding="utf-8")
    (root / "lighthouse.txt").write_text(LIGHT, encoding="utf-8")
    where = root / ".store"
    result = CliRunner().invoke(app, ["ingest", str(root), "--store", str(where)])
    assert result.exit_code == 0, result.output
    return where


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer([FakeReply(content=ANSWER)]) as srv:
        monkeypatch.setenv("AFFIDAVIT_GENERATE__BACKEND", "openai")
        monkeypatch.setenv("AFFIDAVIT_GENERATE__BASE_URL", srv.url)
        monkeypatch.setenv("AFFIDAVIT_GENERATE__MAX_RETRIES", "0")
        yield srv


def test_ask_json(store: Path, llm: FakeOpenAIServer) -> None:
    result = CliRunner().invoke(
        app, ["ask", "When did the Forth Bridge open?", "--store", str(store), "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # the model saw numbered passages from the real store, including the bridge text
    prompt = llm.requests[0]["messages"][1]["content"]
    assert "[1]" in prompt and "Forth Bridge" in prompt
    assert llm.requests[0]["stream"] is True
    trace = data["trace"]
    assert trace["raw_answer"] == ANSWER
    assert [r["number"] for r in trace["removed_citations"]] == [7]
    assert "[7]" not in data["draft"]
    assert trace["classification"] in ("correct", "ambiguous", "incorrect")
    assert trace["retrieval_hits"] and trace["evaluator_scores"]
    assert set(data["timings"]) >= {"retrieve", "correct", "generate", "verify", "total"}
    assert set(data["decisions"]) == {c["claim"]["id"] for c in data["claims"]}
    # fail closed: a sentence is only shown when its claims are verified
    for outcome in data["claims"]:
        if outcome["decision"] != "verified":
            assert outcome["claim"]["text"].rstrip(".") not in data["answer"]
    assert "aliens" not in data["answer"]


def test_ask_human_output(store: Path, llm: FakeOpenAIServer) -> None:
    result = CliRunner().invoke(
        app, ["ask", "When did the Forth Bridge open?", "--store", str(store), "--mode", "mixed"]
    )
    assert result.exit_code == 0, result.output
    assert "answer (mixed)" in result.stdout
    assert "sources" in result.stdout
    assert "removed citation [7]" in result.stdout


def test_ask_certify(
    store: Path, llm: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = tmp_path / "keys" / "signing.pem"
    generate_key(key)
    monkeypatch.setenv("AFFIDAVIT_CERTIFY__KEY_PATH", str(key))
    out = tmp_path / "answer.cert.json"
    result = CliRunner().invoke(
        app,
        ["ask", "When did the Forth Bridge open?", "--store", str(store), "--certify", str(out)],
    )
    assert result.exit_code == 0, result.output
    assert f"certificate: {out}" in result.stdout.replace("\n", "")
    check = verify_certificate(out, [public_key_path(key)])
    assert check.valid, check.reasons
    cert = json.loads(out.read_text(encoding="utf-8"))
    assert cert["question"] == "When did the Forth Bridge open?"
    assert "[7]" not in cert["answer"]
    # issue 30: the certificate was appended to the key's transparency log and proves it
    assert cert["log_entry"]["inclusion"]["leaf_index"] == 0
    logged = CliRunner().invoke(
        app, ["certificate", "verify", str(out), "--log", "--public-key", str(public_key_path(key))]
    )
    assert logged.exit_code == 0 and "in the log" in logged.output, logged.output
    whole = CliRunner().invoke(app, ["log", "verify"])
    assert whole.exit_code == 0 and "valid: 1 entries" in whole.output, whole.output


def test_certify_without_key_is_a_usage_error(
    store: Path, llm: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AFFIDAVIT_CERTIFY__KEY_PATH", str(tmp_path / "missing.pem"))
    result = CliRunner().invoke(
        app, ["ask", "q?", "--store", str(store), "--certify", str(tmp_path / "c.json")]
    )
    assert result.exit_code == 2
    assert llm.requests == []  # failed before generating anything


def test_bad_mode_and_missing_store(store: Path, llm: FakeOpenAIServer, tmp_path: Path) -> None:
    bad = CliRunner().invoke(app, ["ask", "q?", "--store", str(store), "--mode", "loud"])
    assert bad.exit_code == 2
    assert "strict, mixed, debug" in bad.output
    missing = CliRunner().invoke(app, ["ask", "q?", "--store", str(tmp_path / "nope")])
    assert missing.exit_code == 2
    assert "no store" in missing.output


def test_llm_failure_exits_2(store: Path, llm: FakeOpenAIServer) -> None:
    # nothing was judged: exit 2 (docs/cli-exit-codes.md); 1 is kept for a judged failure
    llm.replies = [FakeReply(status=500, body='{"error": "down"}')]
    result = CliRunner().invoke(
        app, ["ask", "When did the Forth Bridge open?", "--store", str(store)]
    )
    assert result.exit_code == 2
    assert "error:" in result.output
