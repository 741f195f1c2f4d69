"""``POST /v1/documents`` checks the key before it reads the body.

FastAPI reads and parses a route's body before its dependencies run: an upload without a key,
or with a read key, was received whole (up to ``serve.max_upload_mb``), parsed and spooled to
temporary files before its 401 or 403, and a request with no ``Authorization`` header counts
against no limit. Its malformed body was even judged first (400 "too many files" to a client
without a key).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from affidavit.core.retrieval import IngestReport
from affidavit.core.settings import Settings, StoreSettings
from affidavit.server.apikeys import ApiKeyStore
from affidavit.server.app import create_app
from affidavit.server.services import Services


class _Counting:
    """The app, counting the body bytes it reads."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.read = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def counted() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                self.read += len(message.get("body", b""))
            return message

        await self.app(scope, counted, send)


class _Ingests(Services):
    def ingest(self, folder: Path) -> IngestReport:
        return IngestReport(outcomes=())


@pytest.fixture()
def served(tmp_path: Path) -> tuple[TestClient, _Counting, dict[str, str]]:
    home = tmp_path / "home"
    keys = ApiKeyStore(home / "api_keys.json")
    read, _ = keys.create("reader", "read")
    write, _ = keys.create("writer", "write")
    settings = Settings(home=home, store=StoreSettings(path=tmp_path / "store"))
    settings = settings.model_copy(
        update={"serve": settings.serve.model_copy(update={"rate_limit_burst": 2})}
    )
    services = _Ingests(settings)
    services.ready = True
    counting = _Counting(create_app(settings, services=services))
    return TestClient(counting), counting, {"read": read, "write": write}


def test_an_upload_without_a_write_key_is_refused_before_its_body_is_read(
    served: tuple[TestClient, _Counting, dict[str, str]],
) -> None:
    client, counting, tokens = served
    files = {"files": ("a.txt", b"x" * 200_000, "text/plain")}
    cases = [
        ({}, 401),
        ({"Authorization": "Bearer afd_0a0b0c0d_" + "x" * 43}, 401),
        ({"Authorization": f"Bearer {tokens['read']}"}, 403),
    ]
    for headers, status in cases:
        counting.read = 0
        r = client.post("/v1/documents", files=files, headers=headers)
        assert r.status_code == status, r.text
        assert counting.read == 0, (headers, counting.read)
    # a body that cannot be parsed is not judged for a client without a key
    many = [("files", (f"f{i}.txt", b"x")) for i in range(1001)]
    assert client.post("/v1/documents", files=many).status_code == 401


def test_a_write_key_uploads_and_counts_once_against_its_rate(
    served: tuple[TestClient, _Counting, dict[str, str]],
) -> None:
    client, counting, tokens = served
    auth = {"Authorization": f"Bearer {tokens['write']}"}
    for name in ("a.txt", "b.txt"):  # a burst of 2: the key is checked once per upload
        r = client.post("/v1/documents", files={"files": (name, b"Geese.")}, headers=auth)
        assert r.status_code == 202, r.text
    assert counting.read > 0
    r = client.post("/v1/documents", files={"files": ("c.txt", b"Geese.")}, headers=auth)
    assert r.status_code == 429
    # the schema still shows the upload's body and its key
    op = client.get("/openapi.json").json()["paths"]["/v1/documents"]["post"]
    assert op["security"] == [{"bearer": []}]
    assert "multipart/form-data" in op["requestBody"]["content"]
