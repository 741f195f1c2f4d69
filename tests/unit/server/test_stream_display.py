"""The SSE stream decides strict from the pipeline that answers, not only from the app's settings:
services built from other settings (an embedder's) may render strict where the app would not."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from affidavit.core.errors import ConfigError
from affidavit.core.settings import PolicySettings, Settings, StoreSettings
from affidavit.server.app import create_app
from affidavit.server.services import Services

DRAFT = "Marie Curie was born on the Moon."


class _ScriptedServices(Services):
    """Streams a draft piece, then fails: what reached the stream before the decision shows."""

    def ask(self, request: Any, *, on_token: Any = None, on_event: Any = None) -> Any:
        if on_token is not None:
            on_token(DRAFT)
        raise ConfigError("stopped after the draft")


def _events(text: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for block in text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in lines:
            out.append((lines["event"], json.loads(lines["data"])))
    return out


def _client(tmp_path: Path, app_display: str, pipe_display: str) -> TestClient:
    base = Settings(home=tmp_path / "home", store=StoreSettings(path=tmp_path / "store"))
    app_settings = base.model_copy(update={"policy": PolicySettings(display=app_display)})
    pipe_settings = base.model_copy(update={"policy": PolicySettings(display=pipe_display)})
    services = _ScriptedServices(pipe_settings)
    services.ready = True
    pipe = SimpleNamespace(settings=pipe_settings)
    services.pipe, services.plain = pipe, pipe
    return TestClient(create_app(app_settings, services=services))


def _streamed(client: TestClient, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    r = client.post("/v1/ask", json=body, headers={"Accept": "text/event-stream"})
    assert r.status_code == 200, r.text
    return _events(r.text)


def test_a_strict_pipeline_streams_no_draft_though_the_app_settings_are_mixed(
    tmp_path: Path,
) -> None:
    got = _streamed(_client(tmp_path, "mixed", "strict"), {"question": "Where was Curie born?"})
    assert [k for k, _ in got] == ["error"]
    assert DRAFT not in json.dumps(got)


def test_a_strict_app_streams_no_draft_though_the_pipeline_is_mixed(tmp_path: Path) -> None:
    got = _streamed(_client(tmp_path, "strict", "mixed"), {"question": "Where was Curie born?"})
    assert DRAFT not in json.dumps(got)


def test_a_request_asking_for_debug_streams_the_draft(tmp_path: Path) -> None:
    got = _streamed(
        _client(tmp_path, "strict", "strict"),
        {"question": "Where was Curie born?", "mode": "debug"},
    )
    assert ("token", {"kind": "token", "text": DRAFT}) in got
