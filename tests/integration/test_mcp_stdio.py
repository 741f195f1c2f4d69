"""``affidavit mcp`` over stdio, driven by the official MCP SDK's own client."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp import Client
from mcp.client.stdio import StdioServerParameters

pytestmark = pytest.mark.integration

TOOLS = {"ask", "search", "audit", "check", "verify_certificate"}
FORTH = "The Forth Bridge opened on 4 March 1890."
CHUNKS = [
    {
        "text": FORTH + " It crosses the Firth of Forth in Scotland.",
        "url": "https://en.wikipedia.org/wiki/Forth_Bridge",
        "metadata": {"published_at": "2025-09-14"},
    }
]


def _params(store: Path, home: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "affidavit.cli.main", "mcp", "--store", str(store)],
        env={
            "AFFIDAVIT_HOME": str(home),
            "AFFIDAVIT_RETRIEVE__MODE": "bm25",
            # no LLM in the test environment: ask must fail as a tool error, not a crash
            "AFFIDAVIT_GENERATE__BACKEND": "openai",
            "AFFIDAVIT_GENERATE__BASE_URL": "http://127.0.0.1:9/v1",
            "OMP_NUM_THREADS": "1",
        },
    )


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def test_stdio_client_lists_tools_and_audits(sample_store: Path, tmp_path: Path) -> None:
    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with Client(_params(sample_store, tmp_path / "home")) as client:
            tools = (await client.list_tools()).tools
            out["tools"] = {t.name: t for t in tools}
            out["bad"] = await client.call_tool(
                "audit", {"query": "q", "chunks": CHUNKS, "response": FORTH.replace("1890", "1925")}
            )
            out["good"] = await client.call_tool(
                "audit", {"query": "q", "chunks": CHUNKS, "response": FORTH}
            )
            out["guard"] = await client.call_tool(
                "audit",
                {
                    "query": "q",
                    "chunks": CHUNKS,
                    "response": FORTH.replace("1890", "1925")
                    + " It crosses the Firth of Forth in Scotland.",
                    "mode": "guardrail",
                },
            )
            out["malformed"] = await client.call_tool(
                "audit", {"query": "q", "chunks": [{"url": "https://x.org"}], "response": "Hi."}
            )
            out["search"] = await client.call_tool(
                "search", {"query": "When did the Forth Bridge open?", "k": 2}
            )
            out["ask"] = await client.call_tool("ask", {"question": "When did it open?"})
            out["cert"] = await client.call_tool("verify_certificate", {"certificate": {"a": 1}})
            out["check"] = await client.call_tool(
                "check",
                {"claim": "The bridge opened in 1925.", "evidence": ["The bridge opened in 1890."]},
            )
            out["resources"] = (await client.list_resources()).resources
            out["doc"] = await client.read_resource("affidavit://documents/forth_bridge")
            # still alive after the errors
            out["again"] = await client.call_tool(
                "audit", {"query": "q", "chunks": CHUNKS, "response": FORTH}
            )
        return out

    out = asyncio.run(asyncio.wait_for(main(), timeout=120))
    assert set(out["tools"]) == TOOLS
    schema = out["tools"]["audit"].input_schema
    assert {"query", "chunks", "response"} <= set(schema["required"])
    assert schema["properties"]["chunks"]["type"] == "array"

    bad = out["bad"]
    assert not bad.is_error
    report = bad.structured_content
    assert report["trust_passed"] is False
    failing = [c for c in report["claims"] if not c["supported"]]
    assert failing and failing[0]["failed_checks"][0]["check"] == "date"
    assert "1925" in failing[0]["reason"] and "1890" in failing[0]["reason"]

    # the same report as `affidavit audit --json` for the same input (timing aside)
    cli = json.loads(_cli_report(FORTH.replace("1890", "1925"), tmp_path))
    assert {k: v for k, v in report.items() if k != "elapsed_ms"} == {
        k: v for k, v in cli.items() if k != "elapsed_ms"
    }

    assert out["good"].structured_content["trust_passed"] is True
    guarded = out["guard"].structured_content["guarded_response"]
    assert "1925" not in guarded and "[withheld" in guarded and "Firth of Forth" in guarded

    assert out["malformed"].is_error and "chunks" in _text(out["malformed"]).lower()
    hits = out["search"].structured_content["hits"]
    assert hits[0]["doc_id"] == "forth_bridge"
    # no LLM is reachable here: ask either answers without one (nothing relevant retrieved) or
    # fails as a tool error with a message; the server keeps serving either way
    assert _text(out["ask"])
    if not out["ask"].is_error:
        assert "answer" in out["ask"].structured_content
    assert not out["cert"].is_error
    assert out["cert"].structured_content["valid"] is False
    # the shipped verifier cascade ran in the server (or, without the models extra, said why)
    verdict = out["check"].structured_content
    assert verdict["label"] != "supported"
    assert verdict["stages"] or verdict["errors"]
    uris = {str(r.uri) for r in out["resources"]}
    assert {"affidavit://documents/forth_bridge", "affidavit://documents/eiffel_tower"} <= uris
    assert "4 March 1890" in out["doc"].contents[0].text
    assert out["again"].structured_content["trust_passed"] is True


def _cli_report(response: str, tmp_path: Path) -> str:
    from typer.testing import CliRunner

    from affidavit.cli.main import app

    f = tmp_path / "in.json"
    f.write_text(json.dumps({"query": "q", "chunks": CHUNKS, "response": response}))
    return CliRunner().invoke(app, ["audit", str(f), "--json"]).stdout


def test_a_deeply_nested_request_is_answered_not_dropped(tmp_path: Path) -> None:
    """Issue 25.13: a tool call nesting 200+ levels deep was never answered (the client waited
    forever); now every request gets an answer, a too-deep one an error naming the limit."""
    import os
    import select
    import subprocess

    env = {**os.environ, "AFFIDAVIT_HOME": str(tmp_path / "home"), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "affidavit.cli.main", "mcp", "--store", str(tmp_path / "none")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(obj: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(obj) + "\n")
        proc.stdin.flush()

    def answer(timeout: float) -> dict[str, Any] | None:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        return json.loads(proc.stdout.readline()) if ready else None

    try:
        send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        )
        assert answer(60) is not None
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        nested: Any = "x"
        for _ in range(250):
            nested = {"a": nested}
        send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {
                    "name": "check",
                    "arguments": {"claim": "x", "evidence": [], "n": nested},
                },
            }
        )
        got = answer(30)
        assert got is not None, "no answer to a deeply nested request"
        assert got["id"] == 2
        text = json.dumps(got)
        assert "levels deep" in text
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_a_malformed_or_batched_request_is_answered_not_dropped(tmp_path: Path) -> None:
    """Issue 25.13, "every request gets an answer or an error": a line that is not valid JSON
    but names its id, and a batch (MCP accepts none since 2025-06-18), were dropped without a
    reply, so their client waited forever too; each now gets an error saying why."""
    import os
    import queue
    import subprocess
    import threading

    env = {**os.environ, "AFFIDAVIT_HOME": str(tmp_path / "home"), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "affidavit.cli.main", "mcp", "--store", str(tmp_path / "none")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(line: str) -> None:
        assert proc.stdin is not None
        proc.stdin.write(line + "\n")
        proc.stdin.flush()

    # answers come in a reader thread: two answers written at once reach one buffered read, so
    # select() on the pipe would not see the second
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in proc.stdout or ():
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()

    def answer(timeout: float) -> dict[str, Any] | None:
        try:
            got: dict[str, Any] = json.loads(lines.get(timeout=timeout))
        except queue.Empty:
            return None
        return got

    def call(i: int) -> dict[str, Any]:
        args = {"claim": "x", "evidence": ["x"]}
        return {
            "jsonrpc": "2.0",
            "id": i,
            "method": "tools/call",
            "params": {"name": "check", "arguments": args},
        }

    try:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}}
        hello["clientInfo"] = {"name": "t", "version": "1"}
        send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}))
        assert answer(60) is not None
        send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        send(json.dumps(call(2))[:-2])  # cut short: not valid JSON, but its id is there
        got = answer(30)
        assert got is not None, "no answer to a request that is not valid JSON"
        assert got["id"] == 2 and "not valid JSON" in json.dumps(got)
        send(json.dumps([call(3), call(4)]))
        got_batch = [answer(30), answer(30)]
        assert all(g is not None for g in got_batch), "no answer to a batch"
        assert sorted(g["id"] for g in got_batch if g) == [3, 4]
        assert all("batch" in json.dumps(g) for g in got_batch)
        deep: Any = "x"
        for _ in range(250):
            deep = {"a": deep}
        send(json.dumps([call(6), {**call(7), "params": {"name": "check", "arguments": deep}}]))
        got_deep = [answer(30), answer(30)]
        assert sorted(g["id"] for g in got_deep if g) == [6, 7]
        assert all("levels deep" in json.dumps(g) for g in got_deep)
        # a lone surrogate escape: valid JSON to Python, not to the SDK, which dropped it unanswered
        odd = {"name": "check", "arguments": {"claim": "x\ud800", "evidence": ["x"]}}
        send(json.dumps({**call(8), "params": odd}))
        got_odd = answer(30)
        assert got_odd is not None, "no answer to a request holding a lone surrogate"
        assert got_odd["id"] == 8 and "lone surrogate" in json.dumps(got_odd)
        send(json.dumps(call(5)))  # and the server still works
        last = answer(60)
        assert last is not None and last["id"] == 5 and "result" in last
    finally:
        proc.kill()
        proc.wait(timeout=30)
