"""``POST /v1/check`` and ``POST /v1/ask`` refuse a body with a duplicate key (400), as
``/v1/audit``, ``/v1/certificates/verify`` and the CLI refuse their input: the body model keeps a
key's last value, a client showing the request may keep its first, so the server would check a
claim, or answer a question, other than the one shown."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from affidavit.core.settings import Settings, StoreSettings
from affidavit.server.app import create_app
from affidavit.server.services import Services

JSON = {"content-type": "application/json"}


@pytest.fixture()
def client(tmp_path: Path) -> TestClient:
    settings = Settings(home=tmp_path / "home", store=StoreSettings(path=tmp_path / "store"))
    services = Services(settings)
    services.ready = True  # refused before any model is needed
    return TestClient(create_app(settings, services=services))


@pytest.mark.parametrize(
    ("route", "body", "key"),
    [
        (
            "/v1/check",
            '{"id": 1, "claim": "Paris is in Germany.", "claim": "Paris is in France.", '
            '"evidence": ["Paris is the capital of France."]}',
            "claim",
        ),
        (
            "/v1/check",
            '[{"id": 1, "claim": "Paris is in France.", "evidence": ["Paris is in Germany."], '
            '"evidence": ["Paris is the capital of France."]}]',
            "evidence",
        ),
        (
            "/v1/ask",
            '{"question": "Who walked on the Moon first?", "question": "When did Apollo 11 land?"}',
            "question",
        ),
    ],
)
def test_a_duplicate_key_is_refused(client: TestClient, route: str, body: str, key: str) -> None:
    r = client.post(route, content=body, headers=JSON)
    assert r.status_code == 400, r.text
    assert f"duplicate key '{key}'" in r.json()["message"]
