"""The headers the page and its data are served with: the page's protections hold at every address
that serves it, no answer is sniffed as another type, and no API answer is kept in a cache."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from affidavit.core.retrieval import DocumentInfo, DocumentList
from affidavit.core.settings import Settings, StoreSettings
from affidavit.server.app import create_app
from affidavit.server.services import Services


class _Listed(Services):
    """A store of one document, nothing loaded."""

    def documents(self) -> DocumentList:
        doc = DocumentInfo(id="d1", source="notes.txt", names=("notes.txt",), chunks=1)
        return DocumentList(documents=(doc,), chunks_total=1)


@pytest.fixture()
def client(tmp_path: Path) -> TestClient:
    settings = Settings(home=tmp_path / "home", store=StoreSettings(path=tmp_path / "store"))
    services = _Listed(settings)
    services.ready = True
    return TestClient(create_app(settings, services=services))  # no lifespan: nothing loads


def test_the_page_is_protected_at_every_address_that_serves_it(client: TestClient) -> None:
    # the page is also a static file (/static/index.html): served there without its CSP, it
    # could be framed (clickjacking its Delete buttons) and would run under no policy at all
    for path in ("/", "/static/index.html"):
        r = client.get(path)
        assert r.status_code == 200, path
        assert r.headers["content-type"].startswith("text/html"), path
        csp = r.headers.get("content-security-policy", "")
        for rule in ("script-src 'self'", "object-src 'none'", "frame-ancestors 'none'"):
            assert rule in csp, (path, rule)
        assert r.headers.get("x-content-type-options") == "nosniff", path


def test_static_files_and_json_answers_are_never_sniffed(client: TestClient) -> None:
    paths = (
        "/static/app.js",
        "/static/style.css",
        "/static/api-docs.js",
        "/api-docs/swagger-ui-bundle.js",
        "/healthz",
        "/openapi.json",
        "/v1/documents",
        "/v1/jobs/nope",
    )
    for path in paths:
        r = client.get(path)
        assert r.headers.get("x-content-type-options") == "nosniff", (path, r.status_code)


def test_api_answers_are_never_stored_in_a_cache(client: TestClient) -> None:
    # the names and texts of a private store, read with a key the page keeps "in this tab
    # only", must not stay behind in the browser's (or a proxy's) cache; errors neither
    listed = client.get("/v1/documents")
    assert listed.status_code == 200
    missing = client.get("/v1/jobs/nope")
    assert missing.status_code == 404
    for r in (listed, missing):
        assert "no-store" in r.headers.get("cache-control", ""), r.request.url
