"""``POST /v1/audit`` reads its body as ``affidavit audit`` reads a file: a duplicate key is
refused (400), never resolved to the last value by the server while a client that shows the
input resolves it to the first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from affidavit.core.settings import AuditSettings, Settings, StoreSettings
from affidavit.server.app import create_app
from affidavit.server.services import Services

ROUTE = "/v1/audit"
JSON = {"content-type": "application/json"}
CHUNK = {"text": "Paris is the capital of France.", "url": "https://good.org/p"}


@pytest.fixture()
def client(tmp_path: Path) -> TestClient:
    settings = Settings(
        home=tmp_path / "home",
        store=StoreSettings(path=tmp_path / "store"),
        audit=AuditSettings(allowlist=["good.org"]),
    )
    services = Services(settings)
    services.ready = True  # the lexical audit needs no model
    return TestClient(create_app(settings, services=services))


def test_an_audit_input_passes(client: TestClient) -> None:
    body = {"chunks": [CHUNK], "response": "Paris is the capital of France."}
    r = client.post(ROUTE, content=json.dumps(body), headers=JSON)
    assert r.status_code == 200 and r.json()["trust_passed"] is True, r.json()


@pytest.mark.parametrize(
    ("body", "key"),
    [
        # the answer a first-wins reader shows, then the one the audit passed
        (
            '{"chunks": [' + json.dumps(CHUNK) + '], "response": "Paris is the capital of '
            'Germany.", "response": "Paris is the capital of France."}',
            "response",
        ),
        # a source off the allowlist, then one on it: the audit kept the chunk
        (
            '{"chunks": [{"text": "Paris is the capital of France.", '
            '"url": "https://evil.com/p", "url": "https://good.org/p"}], '
            '"response": "Paris is the capital of France."}',
            "url",
        ),
    ],
)
def test_a_duplicate_key_is_refused_as_the_cli_refuses_it(
    client: TestClient, body: str, key: str
) -> None:
    r = client.post(ROUTE, content=body, headers=JSON)
    assert r.status_code == 400, r.json()
    assert f"duplicate key '{key}'" in r.json()["message"]
