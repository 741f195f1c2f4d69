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
    assert bad_k.is_error
    assert bad_k.content[0].text == (
        "search: invalid arguments: k: Input should be greater than or equal to 1"
    )


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


def _tools(server: Any) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        async with Client(server) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    return asyncio.run(main())


def test_tool_schemas_describe_every_parameter_and_stay_small(tmp_path: Path) -> None:
    """Issue 28: no parameter had a description, ``mode``'s values were not explained, ``k``
    had no bounds in the schema, Chunk's schema embedded a doctest and the output schemas were
    14-21 KB."""
    tools = _tools(make_server(Settings(home=tmp_path / "h"), store_path=tmp_path / "none"))
    for name, tool in tools.items():
        props = tool.input_schema["properties"]
        assert props, name
        for param, spec in props.items():
            assert spec.get("description"), f"{name}.{param} has no description"
        assert tool.output_schema is not None, f"{name} lost its structured output"
        size = len(json.dumps(tool.output_schema))
        assert size < 9000, f"{name}: output schema of {size} bytes"
        assert ">>>" not in json.dumps(tool.input_schema) + json.dumps(tool.output_schema)
    k = tools["search"].input_schema["properties"]["k"]
    assert (k["minimum"], k["maximum"]) == (1, 100)
    for tool, values in [
        ("search", ("bm25", "dense", "hybrid")),
        ("ask", ("strict", "mixed", "debug")),
        ("audit", ("audit", "guardrail", "enforce")),
    ]:
        text = tools[tool].input_schema["properties"]["mode"]["description"]
        assert all(f"{v}:" in text or f"{v} " in text for v in values), (tool, text)
    chunk = tools["audit"].input_schema["$defs"]["Chunk"]
    assert chunk["description"].startswith("A passage of a source document")


def test_validation_errors_are_one_line(tmp_path: Path) -> None:
    """Issue 28: invalid arguments came back as pydantic's multi-line text with a link."""
    server = make_server(Settings(home=tmp_path / "h"), store_path=tmp_path / "none")
    big_k, no_text, wrong_type = call(
        server,
        ("search", {"query": "x", "k": 500}),
        ("audit", {"query": "q", "chunks": [{"url": "https://a.org"}], "response": "x"}),
        ("check", {"claim": "x", "evidence": "not a list"}),
    )
    for out, field in [(big_k, "k"), (no_text, "chunks.0.text"), (wrong_type, "evidence")]:
        text = out.content[0].text
        assert out.is_error and "\n" not in text and "pydantic.dev" not in text, text
        assert field in text, text


def test_a_missing_document_is_not_found_without_a_traceback(
    sample_store: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 28: reading ``affidavit://documents/does-not-exist`` reached the client as "Error
    creating resource from template" and logged a traceback on the server."""
    from mcp.shared.exceptions import MCPError

    server = make_server(Settings(home=tmp_path / "h"), store_path=sample_store)

    async def main() -> str:
        async with Client(server) as client:
            with pytest.raises(MCPError) as info:
                await client.read_resource("affidavit://documents/does-not-exist")
            return str(info.value)

    with caplog.at_level("DEBUG"):
        message = asyncio.run(main())
    assert "not found" in message and "does-not-exist" in message, message
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records]


def test_structured_results_come_with_a_short_text_summary(tmp_path: Path) -> None:
    """Issue 28: the whole report was echoed as JSON text next to the structured content, so a
    large audit was sent twice (and over HTTP passed the client's 1 MiB event limit)."""
    server = make_server(Settings(home=tmp_path / "h"), store_path=tmp_path / "none")
    response = "The Forth Bridge opened on 4 March 1890. " * 2000
    (out,) = call(server, ("audit", {"query": "q", "chunks": [CHUNK], "response": response}))
    assert not out.is_error
    assert out.structured_content["trust_passed"] is True
    summary = out.content[0].text
    assert len(summary) < 2000 and "trust passed" in summary, summary


@pytest.mark.parametrize("mode", [None, "strict", "mixed"])
def test_strict_ask_sends_no_withheld_text_in_its_structured_result(
    sample_store: Path, tmp_path: Path, mode: str | None
) -> None:
    """An MCP host hands the structured result to its model: in strict mode (the default) it
    carried the draft, the raw text and the unverified claims the answer withheld."""
    from affidavit.integrations._common import StoreSearch

    settings = Settings(home=tmp_path / "home")
    search = StoreSearch(settings, sample_store, "bm25")
    false = "Napoleon painted the Forth Bridge blue"
    pipe = AskPipeline(
        retriever=search.retriever(),
        generator=FakeGenerator([f"The Forth Bridge opened on 4 March 1890 [1]. {false} [1]."]),
        extractor=RuleBasedExtractor(),
        verifier=KeywordVerifier(),
        settings=settings.model_copy(
            update={"retrieve": settings.retrieve.model_copy(update={"mode": "bm25"})}
        ),
    )
    server = make_server(
        settings, store_path=sample_store, pipeline=pipe, verifier=KeywordVerifier()
    )
    args: dict[str, Any] = {"question": "When did the Forth Bridge open?"}
    if mode is not None:
        args["mode"] = mode
    (ask,) = call(server, ("ask", args))
    assert not ask.is_error, ask.content
    got = ask.structured_content
    assert got["mode"] == (mode or "strict")
    assert "4 March 1890" in got["answer"]
    if got["mode"] == "strict":
        assert "Napoleon" not in json.dumps(got)
        assert "Napoleon" not in ask.content[0].text
        assert got["draft"] == got["answer"]
        assert {c["decision"] for c in got["claims"]} == {"verified"}
    else:  # mixed shows the unverified sentence, marked: the trace keeps it too
        assert "Napoleon" in got["answer"] and "Napoleon" in got["draft"]


def test_mixed_ask_cites_no_source_for_an_unverified_sentence(
    sample_store: Path, tmp_path: Path
) -> None:
    """The unverified sentence is shown, marked, but not with the model's "[1]": the host's
    model (and its user) would read that passage 1 supports it."""
    from affidavit.integrations._common import StoreSearch

    settings = Settings(home=tmp_path / "home")
    search = StoreSearch(settings, sample_store, "bm25")
    false = "Napoleon painted the Forth Bridge blue"
    pipe = AskPipeline(
        retriever=search.retriever(),
        generator=FakeGenerator([f"The Forth Bridge opened on 4 March 1890 [1]. {false} [1]."]),
        extractor=RuleBasedExtractor(),
        verifier=KeywordVerifier(),
        settings=settings.model_copy(
            update={"retrieve": settings.retrieve.model_copy(update={"mode": "bm25"})}
        ),
    )
    server = make_server(
        settings, store_path=sample_store, pipeline=pipe, verifier=KeywordVerifier()
    )
    (ask,) = call(server, ("ask", {"question": "When did the Forth Bridge open?", "mode": "mixed"}))
    assert not ask.is_error, ask.content
    got = ask.structured_content
    assert f"[unverified] {false}." in got["answer"]
    assert f"{false} [1]" not in got["answer"]
    assert f"{false} [1]" not in ask.content[0].text
    assert {c["sentence_index"] for c in got["citations"]} == {0}
    assert [s["citations"] for s in got["sentences"]] == [[1], []]
