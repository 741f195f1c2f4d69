"""``POST /v1/certificates/verify`` reads the certificate as strictly as ``certificate verify``
reads a file: a duplicate key or a NaN is refused (400), never resolved one way by the server
while a client that shows the certificate resolves it the other."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from affidavit.certify import build_certificate, sign_certificate
from affidavit.certify.keys import generate_key
from affidavit.core.settings import Settings, StoreSettings
from affidavit.server.app import create_app
from affidavit.server.services import Services

ROUTE = "/v1/certificates/verify"
JSON = {"content-type": "application/json"}


@pytest.fixture()
def served(tmp_path: Path) -> tuple[TestClient, str]:
    settings = Settings(home=tmp_path / "home", store=StoreSettings(path=tmp_path / "store"))
    key = generate_key(tmp_path / "home" / "keys" / "signing.pem")  # the server's own key
    cert = build_certificate(
        "Q?", "The answer.", [], [], None, settings, [], created_at=datetime(2026, 1, 1, tzinfo=UTC)
    )
    services = Services(settings)
    services.ready = True  # nothing to load: verifying a certificate needs no model
    client = TestClient(create_app(settings, services=services))
    return client, json.dumps(sign_certificate(cert, key).model_dump(mode="json"))


def test_a_signed_certificate_verifies(served: tuple[TestClient, str]) -> None:
    client, text = served
    r = client.post(ROUTE, content=text, headers=JSON)
    assert r.status_code == 200 and r.json()["valid"] is True, r.json()


def test_a_duplicate_key_is_refused_not_resolved(served: tuple[TestClient, str]) -> None:
    client, text = served
    # a forged answer first, the signed one after it: the last one wins in Python's parser,
    # the first in others, so the server would call valid what a client shows forged
    forged = text.replace('"answer":', '"answer": "FORGED", "answer":', 1)
    assert forged.count('"answer":') == 2
    r = client.post(ROUTE, content=forged, headers=JSON)
    assert r.status_code == 400, r.json()
    assert "duplicate key 'answer'" in r.json()["message"]


def test_a_nan_is_refused(served: tuple[TestClient, str]) -> None:
    client, text = served
    body = text.replace('"config": {', '"config": {"x": NaN, ', 1)
    r = client.post(ROUTE, content=body, headers=JSON)
    assert r.status_code == 400, r.json()
    assert "NaN" in r.json()["message"]


def test_a_tampered_log_entry_is_checked_as_certificate_verify_checks_it(tmp_path: Path) -> None:
    """The log entry is outside the certificate's signature: ``certificate verify`` checks the
    one a file carries (its checkpoint's signature by the certificate's key, the inclusion
    proof), but the route answered "valid" for an edited one."""
    from affidavit.tlog.certificates import log_certificate

    settings = Settings(home=tmp_path / "home", store=StoreSettings(path=tmp_path / "store"))
    key = generate_key(tmp_path / "home" / "keys" / "signing.pem")
    cert = build_certificate("Q?", "The answer.", [], [], None, settings, [])
    logged = log_certificate(sign_certificate(cert, key), settings, key)
    logged = log_certificate(sign_certificate(cert, key), settings, key)  # size 2: a real path
    services = Services(settings)
    services.ready = True
    client = TestClient(create_app(settings, services=services))
    tree = logged.model_dump(mode="json")
    r = client.post(ROUTE, content=json.dumps(tree), headers=JSON)
    assert r.status_code == 200 and r.json()["valid"] is True, r.json()
    tree["log_entry"]["inclusion"]["hashes"][0] = "00" * 32
    r = client.post(ROUTE, content=json.dumps(tree), headers=JSON)
    assert r.status_code == 200 and r.json()["valid"] is False, r.json()
    assert any(m.startswith("log: inclusion proof") for m in r.json()["reasons"]), r.json()
    tree = logged.model_dump(mode="json")
    tree["log_entry"]["checkpoint"]["note"] = tree["log_entry"]["checkpoint"]["note"].replace(
        "\n", "\n ", 1
    )
    r = client.post(ROUTE, content=json.dumps(tree), headers=JSON)
    assert r.json()["valid"] is False and any("log: checkpoint" in m for m in r.json()["reasons"])
