"""``affidavit serve`` takes the client address from the connection, never from a header the
client writes, unless the operator names the proxies to trust (``FORWARDED_ALLOW_IPS``).

uvicorn trusts ``X-Forwarded-For`` from 127.0.0.1 by default: any client on the machine (the
default bind is loopback) could name a new address with every request, and so escape the
per-address limits of failed key checks (the tarpit), the per-address rate limit of a server
without keys, and write what it liked into the access log's client field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn")
pytest.importorskip("fastapi")

from affidavit.core.settings import Settings, StoreSettings
from affidavit.server import serve


def _run_args(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    import uvicorn

    seen: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda *a, **kw: seen.update(kw))
    for key in ("HOST", "PORT", "WORKERS"):
        monkeypatch.delenv(f"AFFIDAVIT_SERVE__{key}", raising=False)
    monkeypatch.delenv("AFFIDAVIT_STORE__PATH", raising=False)
    settings = Settings(home=tmp_path / "home", store=StoreSettings(path=tmp_path / "store"))
    serve(settings)
    for key in ("AFFIDAVIT_SERVE__HOST", "AFFIDAVIT_SERVE__PORT", "AFFIDAVIT_SERVE__WORKERS"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.delenv("AFFIDAVIT_STORE__PATH", raising=False)
    return seen


def test_forwarded_headers_are_ignored_unless_proxies_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FORWARDED_ALLOW_IPS", raising=False)
    seen = _run_args(tmp_path, monkeypatch)
    assert seen["proxy_headers"] is False


def test_named_proxies_are_trusted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "10.0.0.5")
    seen = _run_args(tmp_path, monkeypatch)
    assert seen["proxy_headers"] is True
    assert seen.get("forwarded_allow_ips") in (None, "10.0.0.5")
