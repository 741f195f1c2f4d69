"""Run ``affidavit serve`` in a child process on loopback, for tests and benchmarks.

Examples:
    >>> with ServedProcess({"AFFIDAVIT_STORE__PATH": "store"}) as srv:  # doctest: +SKIP
    ...     httpx.get(srv.url + "/healthz").json()
    {'status': 'ok'}
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import httpx

__all__ = ["ServedApi", "ServedProcess", "create_api_key", "free_port", "serving_in_thread"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.contextmanager
def serving_in_thread(app: Any, start_timeout_s: float = 30.0) -> Iterator[str]:
    """Serve an ASGI ``app`` (e.g. `affidavit.server.app.create_app`'s) with uvicorn in a
    thread of this process on 127.0.0.1; yields its base URL once it accepts connections, and
    stops it on exit. For tests that hand the app their own services (no child process)."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + start_timeout_s
    while not server.started:
        if time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError("the server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


class ServedProcess:
    """``python -m affidavit.cli.main serve --host 127.0.0.1 --port N`` with ``env`` added.

    Waits until ``/readyz`` answers 200 (models loaded) or ``ready_timeout_s`` passes; the log
    goes to ``log_path`` (default: a file beside the store, or discarded).

    Args:
        env: environment variables to set (``AFFIDAVIT_*`` settings).
        ready_timeout_s: how long to wait for the models to load.
        log_path: where the server's output goes.
        args: extra ``affidavit serve`` arguments.
    """

    def __init__(
        self,
        env: Mapping[str, str],
        *,
        ready_timeout_s: float = 180.0,
        log_path: Path | None = None,
        args: tuple[str, ...] = (),
    ) -> None:
        self.env = dict(env)
        self.ready_timeout_s = ready_timeout_s
        self.log_path = log_path
        self.args = args
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def __enter__(self) -> ServedProcess:
        env = {**os.environ, **self.env}
        env.setdefault("OMP_NUM_THREADS", "1")
        out: Any = subprocess.DEVNULL
        if self.log_path is not None:
            self._log = self.log_path.open("wb")
            out = self._log
        cmd = [sys.executable, "-m", "affidavit.cli.main", "serve", "--host", "127.0.0.1"]
        self.proc = subprocess.Popen(
            [*cmd, "--port", str(self.port), *self.args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + self.ready_timeout_s
        last = "no answer"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._stop()
                raise RuntimeError(f"affidavit serve exited with {self.proc.returncode}")
            try:
                r = httpx.get(self.url + "/readyz", timeout=2.0)
                if r.status_code == 200:
                    return self
                last = r.text
            except httpx.HTTPError as exc:
                last = str(exc)
            time.sleep(0.25)
        self._stop()
        raise RuntimeError(f"affidavit serve not ready after {self.ready_timeout_s}s: {last}")

    def _stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def __exit__(self, *exc: object) -> None:
        self._stop()


class ServedApi:
    """A running server as tests see it: its URL and the API keys they may send.

    Args:
        url: base URL (``http://127.0.0.1:PORT``).
        keys: API tokens by role (``read``, ``write``...).
        home: the server's ``AFFIDAVIT_HOME``.
        store: the server's store folder.
    """

    def __init__(self, url: str, keys: Mapping[str, str], home: Path, store: Path) -> None:
        self.url = url
        self.keys = dict(keys)
        self.home = home
        self.store = store

    def auth(self, key: str = "read") -> dict[str, str]:
        """The Authorization header for the key named ``key``."""
        return {"Authorization": f"Bearer {self.keys[key]}"}


def create_api_key(home: Path, name: str, scope: str) -> str:
    """A new API key in ``home`` made through the real CLI (``keys api create``); the token."""
    from typer.testing import CliRunner

    from affidavit.cli.main import app

    result = CliRunner().invoke(
        app,
        ["keys", "api", "create", "--name", name, "--scope", scope],
        env={"AFFIDAVIT_HOME": str(home)},
    )
    if result.exit_code != 0:
        raise RuntimeError(f"keys api create failed: {result.output}")
    return str(result.stdout.strip().splitlines()[-1])
