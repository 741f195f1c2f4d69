"""The MCP server in process, through the SDK's own client (the stdio run is in
tests/integration/test_mcp_stdio.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp import Client

from affidavit.claims.extractor import RuleBasedExtractor
from affidavit.core.settings import Settings
from affidavit.integrations.mcp import make_server
from affidavit.pipeline.ask import AskPipeline
from affidavit.testing.fake_llm import FakeGenerator
from affidavit.testing.verifiers import KeywordVerifier

CHUNK = {"text": "The Forth Bridge opened on 4 March 1890.", "url": "https://en.wikipedia.org/f"}


def call(server: Any, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    async def main() -> list[Any]:
        async with Client(server) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return asyncio.run(main())


def test_ask_check_and_search_in_process(sample_store: Path, tmp_path: Path) -> None:
    from affidavit.integrations._common import StoreSearch

    settings = Settings(home=tmp_path / "home")
    search = StoreSearch(settings, sample_store, "bm25")
    pipe = AskPipeline(
        retriever=search.retriever(),
        generator=FakeGenerator(["The Forth Bridge opened on 4 March 1890 [1]."]),
        extractor=RuleBasedExtractor(),
        verifier=KeywordVerifier(),
        settings=settings.model_copy(
            update={"retrieve": settings.retrieve.model_copy(update={"mode": "bm25"})}
        ),
    )
    server = make_server(
        settings, store_path=sample_store, pipeline=pipe, verifier=KeywordVerifier()
    )
    ask, check, bad_check, search_out, bad_k = call(
        server,
        ("ask", {"question": "When did the Forth Bridge open?"}),
        ("check", {"claim": "Rome is in Italy.", "evidence": ["Rome is in Italy."]}),
        ("check", {"claim": "", "evidence": []}),
        ("search", {"query": "Eiffel Tower height", "k": 1, "mode": "bm25"}),
        ("search", {"query": "x", "k": 0}),
    )
    assert not ask.is_error
    answer = ask.structured_content
    assert answer["answer"] == "The Forth Bridge opened on 4 March 1890 [1]."
    assert check.structured_content["label"] == "supported"
    assert bad_check.is_error and "claim" in bad_check.content[0].text
    assert not search_out.is_error, search_out.content
    assert search_out.structured_content["hits"][0]["doc_id"] == "eiffel_tower"
    assert bad_k.is_error and "k must be" in bad_k.content[0].text


def test_no_store_is_a_tool_error(tmp_path: Path) -> None:
    server = make_server(Settings(home=tmp_path / "h"), store_path=tmp_path / "none")
    (out,) = call(server, ("search", {"query": "x"}))
    assert out.is_error and "no store" in out.content[0].text


def test_verify_certificate_of_a_signed_audit(tmp_path: Path) -> None:
    from affidavit.audit import audit
    from affidavit.audit.certify import certify_report
    from affidavit.certify.keys import generate_key

    settings = Settings(home=tmp_path / "home")
    from affidavit.certify.keys import default_key_path

    generate_key(default_key_path(settings))
    report = audit("When?", [CHUNK], "The Forth Bridge opened on 4 March 1890.")
    path = certify_report(report, settings, tmp_path / "cert.json")
    cert = json.loads(path.read_text())
    server = make_server(settings, store_path=tmp_path / "none")
    tampered = json.loads(json.dumps(cert).replace("4 March 1890", "4 March 1925"))
    ok, bad = call(
        server,
        ("verify_certificate", {"certificate": cert}),
        ("verify_certificate", {"certificate": tampered}),
    )
    assert ok.structured_content["valid"] is True, ok.structured_content
    assert bad.structured_content["valid"] is False and bad.structured_content["reasons"]


def test_enforce_mode_still_returns_the_report(tmp_path: Path) -> None:
    server = make_server(Settings(home=tmp_path / "h"), store_path=tmp_path / "none")
    (out,) = call(
        server,
        (
            "audit",
            {
                "query": "q",
                "chunks": [CHUNK],
                "response": "The Forth Bridge opened on 4 March 1925.",
                "mode": "enforce",
            },
        ),
    )
    assert not out.is_error
    assert out.structured_content["trust_passed"] is False
    assert out.structured_content["mode"] == "enforce"


def test_a_client_cannot_make_the_server_open_a_file(tmp_path: Path) -> None:
    """Issue 25.5: public_keys naming a path made the server read it (and say whether it held
    a key): a string that is not PEM text is refused before anything is opened."""
    secret = tmp_path / "server-side.pem"
    secret.write_text("not a key")
    server = make_server(Settings(home=tmp_path / "h"), store_path=tmp_path / "none")
    (out,) = call(
        server,
        ("verify_certificate", {"certificate": {"x": 1}, "public_keys": [str(secret)]}),
    )
    assert out.is_error and "PEM text" in out.content[0].text
    assert "not a PEM Ed25519" not in out.content[0].text
