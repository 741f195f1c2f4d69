"""What a user of the HTTP API sees before any model loads (issue 28, "The page and the HTTP
API"): the schema's security and error answers, the interactive /docs page, a JSON syntax
error's message, the request id and access log, metrics route labels, the 503 message."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from affidavit.core.settings import Settings, StoreSettings
from affidavit.server.app import create_app
from affidavit.server.limits import QueueFull, WorkQueue


@pytest.fixture()
def client(tmp_path: Path) -> TestClient:
    settings = Settings(home=tmp_path / "home", store=StoreSettings(path=tmp_path / "store"))
    return TestClient(create_app(settings))  # no lifespan: nothing loads


def test_the_schema_has_a_bearer_scheme_and_honest_error_answers(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    assert schema["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    ask = schema["paths"]["/v1/ask"]["post"]
    assert ask["security"] == [{"bearer": []}]
    assert {"400", "401", "403", "413", "422", "429", "503"} <= set(ask["responses"])
    err = ask["responses"]["401"]["content"]["application/json"]["schema"]["$ref"]
    assert err.endswith("/ApiError")
    upload = schema["paths"]["/v1/documents"]["post"]
    assert upload["security"] == [{"bearer": []}]
    for path in ("/healthz", "/readyz", "/metrics"):
        op = schema["paths"][path]["get"]
        assert "security" not in op, path
        assert not {"401", "403", "413", "429"} & set(op["responses"]), path
    search = schema["paths"]["/v1/search"]["get"]
    assert "413" not in search["responses"] and "401" in search["responses"]
    # FastAPI's own validation error shape is never what the API answers
    assert "HTTPValidationError" not in schema["components"]["schemas"]


def test_the_interactive_api_page_is_served_from_here(client: TestClient) -> None:
    page = client.get("/docs")
    assert page.status_code == 200
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert "<script>" not in page.text  # no inline script: the CSP holds
    assert "http" not in page.text  # nothing from another host
    assets = ("/api-docs/swagger-ui-bundle.js", "/api-docs/swagger-ui.css", "/static/api-docs.js")
    for asset in assets:
        assert asset in page.text
        assert client.get(asset).status_code == 200, asset
    assert "SwaggerUIBundle" in client.get("/static/api-docs.js").text


def test_a_json_syntax_error_says_what_and_where(client: TestClient) -> None:
    r = client.post(
        "/v1/check",
        content=b'{"claim": "x",\n "evidence": ["y"]\n "oops": 1}',
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 400
    body = r.json()
    assert body["error"] == "bad_request"
    assert body["message"].startswith("the body is not valid JSON: ")
    assert "delimiter" in body["message"] and "line 3, column 2" in body["message"]


def test_every_answer_carries_a_request_id_and_is_logged(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="affidavit.access"):
        mine = client.get("/healthz", headers={"X-Request-ID": "abc-123"})
        made = client.get("/healthz", headers={"X-Request-ID": "bad id\nInjected: 1"})
    assert mine.headers["x-request-id"] == "abc-123"
    assert made.headers["x-request-id"] != "bad id\nInjected: 1"
    assert len(made.headers["x-request-id"]) == 32
    lines = [r.getMessage() for r in caplog.records if r.name == "affidavit.access"]
    assert any('"GET /healthz" 200' in x and "request_id=abc-123" in x for x in lines), lines
    assert all("\n" not in x for x in lines)


def test_metrics_label_routes_answered_before_routing(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", store=StoreSettings(path=tmp_path / "store"))
    settings = settings.model_copy(
        update={"serve": settings.serve.model_copy(update={"max_body_mb": 0.001})}
    )
    client = TestClient(create_app(settings))
    client.get("/openapi.json")
    r = client.post("/v1/check", content=b"x" * 5000, headers={"content-type": "application/json"})
    assert r.status_code == 413
    text = client.get("/metrics").text
    assert 'route="/openapi.json",status="200"' in text
    assert 'route="/v1/check",status="413"' in text
    assert 'route="unmatched"' not in text


def test_a_full_queue_says_what_is_full_and_what_to_do() -> None:
    q = WorkQueue("verify", concurrency=2, max_waiting=3)
    for _ in range(5):
        q.enter()
    with pytest.raises(QueueFull) as info:
        q.enter()
    msg = info.value.message
    assert "all 2 verify slot(s) and 3 waiting place(s) are taken" in msg
    assert "serve.verify_queue" in msg and "Retry-After" in msg
    q.close()


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/audit", b'{"chunks": [], "response": "Paris \\ud800 is nice."}'),
        ("/v1/audit", b'{"query": "\\udc80", "chunks": [], "response": "Paris is nice."}'),
        (
            "/v1/audit",
            b'{"chunks": [{"text": "a \\ud800 b"}], "response": "Paris is nice."}',
        ),
        ("/v1/check", b'{"id": 1, "claim": "Paris is nice.", "evidence": ["\\ud800"]}'),
        ("/v1/check", b'[{"id": "\\ud800", "claim": "Paris is nice.", "evidence": ["x"]}]'),
    ],
)
def test_a_lone_surrogate_in_a_body_is_refused_not_a_crash(
    tmp_path: Path, path: str, body: bytes
) -> None:
    # legal JSON, not Unicode text: the audit report could not be encoded (500,
    # PydanticSerializationError) and the verifier's tokenizer raised TypeError (500); the
    # CLI refuses the same input with exit 2 (docs/cli-exit-codes.md)
    from affidavit.server.services import Services

    settings = Settings(home=tmp_path / "home", store=StoreSettings(path=tmp_path / "store"))
    services = Services(settings)
    services.ready = True  # the audit needs no model; the check fails before reaching one
    client = TestClient(create_app(settings, services=services), raise_server_exceptions=False)
    r = client.post(path, content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    assert r.json()["error"] == "invalid"
    assert "lone surrogate" in r.json()["message"]


def test_made_up_methods_add_no_metrics_series(client: TestClient) -> None:
    """The request counter was labelled with the method as sent: any token is a valid HTTP
    method, so an unauthenticated client could add a time series per request (memory, and a
    /metrics answer that grows without bound)."""
    for i in range(20):
        client.request(f"XMETHOD{i}", "/healthz")
        client.request(f"XMETHOD{i}", "/v1/search")
    assert client.get("/healthz").status_code == 200
    text = client.get("/metrics").text
    assert "XMETHOD" not in text
    assert 'method="other"' in text and 'method="GET"' in text


@pytest.mark.parametrize("failure", ["crash", "upstream"])
def test_error_log_lines_escape_the_path_and_the_reason(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, failure: str
) -> None:
    """The error and crash log lines held the request path (percent-decoded: control
    characters, bidi overrides, line breaks) and the error's text as they came: a client could
    write escape sequences to the operator's terminal or forge a line of the log."""
    from affidavit.core.errors import GenerationError
    from affidavit.core.retrieval import DocumentInfo
    from affidavit.server.services import Services

    class Failing(Services):
        def document(self, doc_id: str) -> DocumentInfo:
            if failure == "crash":
                raise RuntimeError(f"no {doc_id}")
            raise GenerationError(f"the upstream said {doc_id}")

    settings = Settings(home=tmp_path / "home", store=StoreSettings(path=tmp_path / "store"))
    services = Failing(settings)
    services.ready = True
    client = TestClient(create_app(settings, services=services), raise_server_exceptions=False)
    with caplog.at_level(logging.INFO, logger="affidavit.server.app"):
        r = client.get("/v1/documents/a%1b%5B2J%E2%80%AEb")
    assert r.status_code in (500, 502), r.text
    lines = [rec.getMessage() for rec in caplog.records if rec.name == "affidavit.server.app"]
    assert lines and any("/v1/documents/a" in x for x in lines), lines
    for line in lines:
        assert not any(c in line for c in "\x1b\u202e\n\r"), line
