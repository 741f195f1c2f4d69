"""`make demo` certifies every answer and checks each certificate with its transparency-log entry
(issue 30: "a certificate from `make demo` verifies with `--log`"). A scripted LLM stands in for
the embedded one; retrieval, verification, signing and the log are the real ones."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from affidavit.certify.certificate import load_certificate
from affidavit.certify.keys import public_key_path
from affidavit.cli.main import app
from affidavit.demo import default_corpus, run
from affidavit.testing.fake_llm import FakeOpenAIServer, FakeReply

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_demo_certifies_each_answer_and_each_verifies_with_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AFFIDAVIT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AFFIDAVIT_GENERATE__BACKEND", "openai")
    monkeypatch.setenv("AFFIDAVIT_GENERATE__MAX_RETRIES", "0")
    monkeypatch.setenv("AFFIDAVIT_CORRECT__REWRITE_QUERY", "false")
    certs = tmp_path / "certs"
    questions = ["When was the Eiffel Tower completed?", "Who won the 1998 football World Cup?"]
    replies = [
        FakeReply(content="The Eiffel Tower was completed in March 1889 [1]."),
        FakeReply(content="The documents do not say who won the 1998 World Cup."),
    ]
    with FakeOpenAIServer(replies) as llm:
        monkeypatch.setenv("AFFIDAVIT_GENERATE__BASE_URL", llm.url)
        code = run(default_corpus(), questions, store_dir=tmp_path / "store", certify_dir=certs)
    out = capsys.readouterr().out
    assert code == 0, out
    key = certs / "keys" / "signing.pem"
    assert not (tmp_path / "home" / "keys").exists()  # the demo never touches the user's key
    for n in (1, 2):
        cert = certs / f"answer-{n}.cert.json"
        assert load_certificate(cert).log_entry is not None
        assert f"certificate {cert.name}: valid" in out
        # the printed command, run as a user would
        monkeypatch.setenv("AFFIDAVIT_CERTIFY__KEY_PATH", str(key))
        args = ["certificate", "verify", str(cert), "--log", "--public-key"]
        done = CliRunner().invoke(app, [*args, str(public_key_path(key))])
        assert done.exit_code == 0, done.output
        assert "in the log" in done.output
    # tampering with the log entry's leaf hash is caught by the same command
    cert = certs / "answer-1.cert.json"
    text = cert.read_text()
    at = text.index('"leaf_hash": "') + len('"leaf_hash": "')
    flipped = "0" if text[at] != "0" else "1"
    cert.write_text(text[:at] + flipped + text[at + 1 :])
    args = ["certificate", "verify", str(cert), "--log", "--public-key"]
    done = CliRunner().invoke(app, [*args, str(public_key_path(key))])
    assert done.exit_code == 1, done.output
    assert "leaf hash is not this certificate's" in done.output
