"""``affidavit mcp --transport streamable-http`` on loopback, driven by the SDK's client."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

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

        # issue 28: a large report was sent as indented JSON text and again as structured
        # content (the client refuses a server-sent event over 1 MiB)
        many = " ".join(
            f"The Forth Bridge carried train number {i} across the firth on day {i}."
            for i in range(550)
        )

        async def main() -> tuple[set[str], dict, Any]:
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
                big = await client.call_tool(
                    "audit",
                    {
                        "query": "q",
                        "chunks": [{"text": "The Forth Bridge opened."}],
                        "response": many,
                    },
                )
                return tools, out.structured_content, big

        tools, report, big = asyncio.run(asyncio.wait_for(main(), timeout=120))
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert tools == {"ask", "search", "audit", "check", "verify_certificate"}
    assert report["trust_passed"] is False
    assert report["claims"][0]["failed_checks"][0]["check"] == "date"
    assert not big.is_error and len(big.structured_content["claims"]) == 550
    assert len(json.dumps(big.structured_content)) > 600_000
    assert len(big.content[0].text) < 2000 and "trust failed" in big.content[0].text
    # the start-up line says where the server listens
    err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
    assert f"http://127.0.0.1:{port}/mcp" in err.splitlines()[0], err


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (Linux /proc), children first."""
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended; only its parent's wait is missing


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_no_worker_outlives_the_server(sample_store: Path, tmp_path: Path, sig: int) -> None:
    """Issue 25.9: after an audit large enough for a worker process, SIGTERM to ``affidavit mcp
    --transport streamable-http`` left the worker and the resource tracker running under init
    (this module's test leaked them the same way)."""
    port = _free_port()
    env = {**os.environ, "AFFIDAVIT_HOME": str(tmp_path / "home"), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "affidavit.cli.main", "mcp"),
            *("--transport", "streamable-http", "--port", str(port), "--store", str(sample_store)),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    children: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert proc.poll() is None
            time.sleep(0.2)
        many = " ".join(f"The Forth Bridge opened on day {i} of 1890." for i in range(800))

        async def main() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                chunks = [{"text": "The Forth Bridge opened on 4 March 1890."}]
                args = {"query": "q", "chunks": chunks, "response": many}
                assert not (await client.call_tool("audit", args)).is_error

        asyncio.run(asyncio.wait_for(main(), timeout=120))
        children = _descendants(proc.pid)
        commands = [Path(f"/proc/{c}/cmdline").read_bytes() for c in children]
        assert any(b"spawn_main" in c for c in commands), commands  # a worker was started
        proc.send_signal(sig)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 10
        while any(_running(c) for c in children) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [c for c in children if _running(c)], "a child outlived affidavit mcp"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for c in children:
            if _running(c):
                os.kill(c, signal.SIGKILL)
