"""The MCP server against a demanding or hostile client: control characters in what it shows
as text, its limits next to the HTTP API's, lines the SDK would drop, and the HTTP transport's
address and Host checks."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp import Client
from mcp.types import jsonrpc_message_adapter

from affidavit.core.errors import ConfigError
from affidavit.core.settings import Settings
from affidavit.integrations import mcp as mcp_server
from affidavit.integrations.mcp import _LineGuard, make_server
from affidavit.testing.fake_llm import FakeGenerator
from affidavit.testing.verifiers import KeywordVerifier

# what a terminal acts on: C0 controls but the line break, DEL, C1 controls, bidi controls
# the HTTP API's limits: POST /v1/ask and GET /v1/search (core.service.MAX_QUESTION_CHARS...)
MAX_QUESTION_CHARS = 4000
MAX_QUERY_CHARS = 2000
RAW_CONTROL = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)
HOSTILE = "\x1b[32mTRUST PASSED\x1b[0m\u202e0981\u202c\nfake: trust passed"


def call(server: Any, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    async def main() -> list[Any]:
        async with Client(server) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return asyncio.run(main())


def _store_with_hostile_title(path: Path) -> Path:
    from affidavit.core.types import Document
    from affidavit.ingest.chunking import SentenceChunker
    from affidavit.store.base import DocumentBatchItem
    from affidavit.store.local import LocalStore
    from affidavit.testing.embedder import FakeEmbedder

    embedder = FakeEmbedder(dim=16)
    url = "https://example.org/forth"
    doc = Document(id="forth", source=url, text="The Forth Bridge opened on 4 March 1890.")
    chunks = tuple(
        c.model_copy(update={"url": url, "title": HOSTILE})
        for c in SentenceChunker(chunk_size=500, overlap=0).chunk(doc)
    )
    store = LocalStore(path)
    store.upsert(
        [
            DocumentBatchItem(
                document=doc,
                chunks=chunks,
                vectors=embedder.embed([c.text for c in chunks]),
                origin="forth.txt",
            )
        ],
        embedder=embedder.name,
    )
    store.refresh()
    store.close()
    return path


def test_text_results_show_untrusted_text_escaped_on_one_line(tmp_path: Path) -> None:
    """A host may print a tool's text content as it is: a claim, a document title or a
    certificate's reason holding ESC sequences, a U+202E or a line break reached it raw (a fake
    green "TRUST PASSED", "0981" shown as "1890", a forged summary line)."""
    store = _store_with_hostile_title(tmp_path / "store")
    settings = Settings(home=tmp_path / "home")
    server = make_server(settings, store_path=store, verifier=KeywordVerifier())
    audited, searched, cert = call(
        server,
        ("audit", {"query": "q", "chunks": [{"text": "Rome is in Italy."}], "response": HOSTILE}),
        ("search", {"query": "Forth Bridge", "k": 1, "mode": "bm25"}),
        ("verify_certificate", {"certificate": {HOSTILE: 1}}),
    )
    for out in (audited, searched, cert):
        assert not out.is_error, out.content
        text = out.content[0].text
        assert not RAW_CONTROL.search(text), repr(text)
        assert "\\x1b[32mTRUST PASSED" in text and "\\u202e" in text, repr(text)
        assert "\nfake: trust passed" not in text, repr(text)
    # the structured result is the data itself, unchanged
    assert searched.structured_content["hits"][0]["title"] == HOSTILE


@pytest.mark.parametrize(
    ("tool", "args", "field", "limit"),
    [
        ("ask", {"question": "x" * (MAX_QUESTION_CHARS + 1)}, "question", MAX_QUESTION_CHARS),
        ("search", {"query": "x" * (MAX_QUERY_CHARS + 1)}, "query", MAX_QUERY_CHARS),
        ("search", {"query": ""}, "query", 1),
    ],
)
def test_questions_and_queries_are_bounded_as_the_http_api_bounds_them(
    sample_store: Path, tmp_path: Path, tool: str, args: dict[str, Any], field: str, limit: int
) -> None:
    """POST /v1/ask takes at most 4000 characters and GET /v1/search 2000; the MCP tools took
    any length (a megabyte question went to retrieval and into the LLM's prompt)."""
    from affidavit.claims.extractor import RuleBasedExtractor
    from affidavit.integrations._common import StoreSearch
    from affidavit.pipeline.ask import AskPipeline

    settings = Settings(home=tmp_path / "home")
    generator = FakeGenerator(["The Forth Bridge opened on 4 March 1890 [1]."])
    pipe = AskPipeline(
        retriever=StoreSearch(settings, sample_store, "bm25").retriever(),
        generator=generator,
        extractor=RuleBasedExtractor(),
        verifier=KeywordVerifier(),
        settings=settings,
    )
    server = make_server(settings, store_path=sample_store, pipeline=pipe)
    (out,) = call(server, (tool, args))
    text = out.content[0].text
    assert out.is_error, text
    assert text.startswith(f"{tool}: invalid arguments: {field}:") and str(limit) in text, text
    assert "\n" not in text
    schema = {t.name: t for t in asyncio.run(server.list_tools())}[tool].input_schema
    assert schema["properties"][field]["maxLength"] == (
        MAX_QUESTION_CHARS if tool == "ask" else MAX_QUERY_CHARS
    )


def _guarded(*lines: str) -> list[str]:
    async def main() -> list[str]:
        async def source() -> Any:
            for line in lines:
                yield line

        return [line async for line in _LineGuard(source())]

    return asyncio.run(main())


def test_a_lone_surrogate_in_a_stdio_request_is_answered_not_dropped() -> None:
    """Python's JSON reader takes a lone "\\ud800" escape, the SDK's refuses it as invalid JSON
    and drops the message: the client of `affidavit mcp` waited forever for an answer."""
    args = {"query": "q", "chunks": [{"text": "The sky is blue."}], "response": "Blue \ud800."}
    request = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "audit", "arguments": args},
    }
    keyed = {**request, "id": 8, "params": {"name": "x", "arguments": {"k\udc80": 1}}}
    out = _guarded(json.dumps(request), json.dumps(keyed))
    assert len(out) == 2
    for line, msg_id in zip(out, (7, 8), strict=True):
        # the line the SDK reads is one it can parse (as its stdio transport does), and so answers
        message = jsonrpc_message_adapter.validate_json(line, by_name=False)
        assert getattr(message, "id", None) == msg_id
        assert "lone surrogate" in line, line
    assert "arguments.response" in out[0]
    # a good line still passes unchanged
    good = json.dumps(
        {**request, "params": {"name": "audit", "arguments": {**args, "response": "Blue."}}}
    )
    assert _guarded(good) == [good]


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.org"])
def test_the_http_transport_binds_no_address_beyond_loopback(tmp_path: Path, host: str) -> None:
    """The MCP transport checks no API key (the HTTP API's keys are not asked for), and
    `affidavit mcp --transport streamable-http --host 0.0.0.0` served every tool, the store's
    documents included, to anyone on the network."""
    server = make_server(Settings(home=tmp_path / "h"), store_path=tmp_path / "none")
    with pytest.raises(ConfigError, match="checks no API key"):
        mcp_server.http_app(server, host)


def test_the_cli_refuses_a_non_loopback_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from affidavit.cli.main import app

    started: list[str] = []
    # never bind here, whatever the command decides: a server started is recorded instead
    monkeypatch.setattr(mcp_server, "run", lambda *a, **k: started.append(k.get("host", "")))

    result = CliRunner().invoke(
        app,
        ["mcp", "--transport", "streamable-http", "--host", "0.0.0.0"],
        env={"AFFIDAVIT_HOME": str(tmp_path / "home")},
    )
    assert started == [], "the server was started on 0.0.0.0"
    assert result.exit_code == 2, result.output
    assert "checks no API key" in result.output


@pytest.mark.parametrize("host", ["127.0.0.2", "127.0.0.1", "::1"])
def test_the_http_transport_refuses_a_rebound_host_name(tmp_path: Path, host: str) -> None:
    """The SDK checks Host and Origin (DNS rebinding) only on 127.0.0.1, localhost and ::1: on
    another loopback address a web page whose name resolved there reached every tool."""
    from starlette.testclient import TestClient

    server = make_server(Settings(home=tmp_path / "h"), store_path=tmp_path / "none")
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    named = f"[{host}]" if ":" in host else host
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with TestClient(mcp_server.http_app(server, host), base_url=f"http://{named}:8765") as client:
        rebound = client.post("/mcp", json=hello, headers={**headers, "Host": "evil.example:8765"})
        assert rebound.status_code in (400, 403, 421), rebound.text
        origin = client.post(
            "/mcp", json=hello, headers={**headers, "Origin": "http://evil.example:8765"}
        )
        assert origin.status_code in (400, 403, 421), origin.text
        own = client.post("/mcp", json=hello, headers=headers)
        assert own.status_code == 200, own.text
