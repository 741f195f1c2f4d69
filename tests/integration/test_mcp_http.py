"""``affidavit mcp --transport streamable-http`` on loopback, driven by the SDK's client."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from mcp import Client

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_streamable_http_serves_the_tools(sample_store: Path, tmp_path: Path) -> None:
    port = _free_port()
    env = {**os.environ, "AFFIDAVIT_HOME": str(tmp_path / "home"), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "affidavit.cli.main", "mcp"),
            *("--transport", "streamable-http", "--port", str(port), "--store", str(sample_store)),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.2)

        async def main() -> tuple[set[str], dict]:
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                tools = {t.name for t in (await client.list_tools()).tools}
                out = await client.call_tool(
                    "audit",
                    {
                        "query": "q",
                        "chunks": [{"text": "The Forth Bridge opened on 4 March 1890."}],
                        "response": "The Forth Bridge opened on 4 March 1925.",
                    },
                )
                return tools, out.structured_content

        tools, report = asyncio.run(asyncio.wait_for(main(), timeout=60))
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert tools == {"ask", "search", "audit", "check", "verify_certificate"}
    assert report["trust_passed"] is False
    assert report["claims"][0]["failed_checks"][0]["check"] == "date"
