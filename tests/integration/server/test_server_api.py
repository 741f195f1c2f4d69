"""The HTTP API against real uvicorn processes on loopback: every endpoint, keys, limits, SSE."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from affidavit.certify.certificate import write_certificate
from affidavit.cli.main import app
from affidavit.core.report import AuditReport
from affidavit.core.service import AskResponse, IngestJob
from affidavit.demo import SAMPLE_QUESTIONS
from affidavit.testing.server import ServedApi as Server

pytestmark = [pytest.mark.integration, pytest.mark.slow]

AUDIT_INPUT = {
    "query": "When did the Forth Bridge open?",
    "chunks": [
        {
            "text": "The Forth Bridge opened on 4 March 1890. It is in Scotland.",
            "url": "https://example.org/forth",
            "metadata": {"published_at": "2020-01-01"},
        },
        {"text": "Unrelated text about lighthouses.", "url": "https://blocked.example.com/x"},
    ],
    "response": "The Forth Bridge opened on 4 March 1890. It opened in 1990.",
}


PARIS = "Paris is the capital of France."


def store_chunks(server: Server) -> int:
    ready = httpx.get(server.url + "/readyz").json()
    return int(next(c for c in ready["checks"] if c["name"] == "store")["detail"].split()[0])


def events(text: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for block in text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in lines:
            out.append((lines["event"], json.loads(lines["data"])))
    return out


def queue_depth(server: Server, queue: str) -> float:
    text = httpx.get(server.url + "/metrics").text
    for line in text.splitlines():
        if line.startswith(f'affidavit_queue_depth{{queue="{queue}"}}'):
            return float(line.split()[-1])
    raise AssertionError(f"no queue depth for {queue}")


def wait_idle(server: Server, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while queue_depth(server, "llm") > 0:
        assert time.monotonic() < deadline, "the LLM slot was never freed"
        time.sleep(0.1)


# -- health, metrics, schema ------------------------------------------------------------------


def test_health_ready_and_schema(served: Server) -> None:
    assert httpx.get(served.url + "/healthz").json() == {"status": "ok"}
    ready = httpx.get(served.url + "/readyz").json()
    assert ready["ready"] is True
    assert {c["name"] for c in ready["checks"]} >= {"models", "store", "verifier"}
    schema = httpx.get(served.url + "/openapi.json").json()
    for path in (
        "/v1/ask",
        "/v1/audit",
        "/v1/check",
        "/v1/search",
        "/v1/documents",
        "/v1/jobs/{job_id}",
        "/v1/certificates/verify",
        "/v1/keys/public",
        "/healthz",
        "/readyz",
        "/metrics",
    ):
        assert path in schema["paths"], path
    assert "AskResponse" in schema["components"]["schemas"]


def test_export_schemas_writes_the_served_openapi(served: Server, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["export-schemas", str(tmp_path)])
    assert result.exit_code == 0, result.output
    exported = json.loads((tmp_path / "openapi.json").read_text())
    served_schema = httpx.get(served.url + "/openapi.json").json()
    assert exported["paths"].keys() == served_schema["paths"].keys()
    assert exported["components"] == served_schema["components"]


def test_metrics_count_requests_and_verdicts(served: Server) -> None:
    httpx.post(
        served.url + "/v1/ask",
        json={"question": "Who discovered polonium?"},
        headers=served.auth(),
        timeout=60,
    ).raise_for_status()
    text = httpx.get(served.url + "/metrics").text
    assert 'affidavit_requests_total{method="POST",route="/v1/ask",status="200"}' in text
    assert 'affidavit_queue_depth{queue="llm"}' in text
    assert 'affidavit_verdicts_total{endpoint="ask",outcome="verified"}' in text
    assert "affidavit_request_seconds_bucket" in text


# -- keys -------------------------------------------------------------------------------------


def test_401_and_403_are_distinct_and_explained(served: Server) -> None:
    url = served.url + "/v1/search?q=polonium"
    r = httpx.get(url)
    assert r.status_code == 401
    assert r.headers["WWW-Authenticate"].startswith("Bearer")
    assert "requires an API key" in r.json()["message"]
    r = httpx.get(url, headers={"Authorization": "Basic abc"})
    assert r.status_code == 401 and "Bearer" in r.json()["message"]
    r = httpx.get(url, headers={"Authorization": "Bearer afd_deadbeef_nope"})
    assert r.status_code == 401 and r.json()["message"] == "unknown API key"
    r = httpx.get(url, headers=served.auth("revoked"))
    assert r.status_code == 401 and "revoked" in r.json()["message"]
    files = {"files": ("a.txt", b"Some text about ducks and geese.", "text/plain")}
    r = httpx.post(served.url + "/v1/documents", files=files, headers=served.auth("read"))
    assert r.status_code == 403
    assert "write" in r.json()["message"] and r.json()["error"] == "forbidden"
    assert httpx.get(url, headers=served.auth("read")).status_code == 200
    # the health endpoints and the page stay open
    assert httpx.get(served.url + "/healthz").status_code == 200
    assert httpx.get(served.url + "/").status_code == 200


def test_keys_list_shows_no_secret(served: Server) -> None:
    result = CliRunner().invoke(
        app, ["keys", "api", "list", "--json"], env={"AFFIDAVIT_HOME": str(served.home)}
    )
    assert result.exit_code == 0, result.output
    listed = json.loads(result.stdout)
    assert {k["name"] for k in listed} >= {"reader", "writer", "gone"}
    assert [k["revoked_at"] is not None for k in listed if k["name"] == "gone"] == [True]
    stored = (served.home / "api_keys.json").read_text()
    for token in served.keys.values():
        assert token not in stored and token not in result.stdout
        assert token.split("_", 2)[2] not in stored  # the secret may itself hold "_"
    assert '"hmac"' in stored and "$argon2id$" not in stored


def test_serve_refuses_other_addresses_without_keys(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["serve", "--host", "0.0.0.0"], env={"AFFIDAVIT_HOME": str(tmp_path)}
    )
    assert result.exit_code == 2
    assert "refusing to bind 0.0.0.0" in result.output


# -- ask --------------------------------------------------------------------------------------


def test_ask_json_is_the_library_result_with_a_certificate(served: Server) -> None:
    r = httpx.post(
        served.url + "/v1/ask",
        json={"question": "Who discovered polonium?", "mode": "mixed"},
        headers=served.auth(),
        timeout=60,
    )
    assert r.status_code == 200, r.text
    body = AskResponse.model_validate(r.json())
    result = body.result
    assert result.mode == "mixed"
    assert result.trace.retrieval_hits and result.trace.context
    decisions = {c.claim.text: c.decision for c in result.claims}
    assert any("Moon" in t and d != "verified" for t, d in decisions.items())
    assert body.certificate is not None
    check = httpx.post(
        served.url + "/v1/certificates/verify",
        json=body.certificate.model_dump(mode="json"),
        headers=served.auth(),
    ).json()
    assert check["valid"] is True, check
    public = httpx.get(served.url + "/v1/keys/public", headers=served.auth()).json()
    assert public["key_id"] == body.certificate.key_id
    assert "BEGIN PUBLIC KEY" in public["public_key_pem"]
    tampered = body.certificate.model_dump(mode="json")
    tampered["question"] = "Who discovered radium?"
    check = httpx.post(
        served.url + "/v1/certificates/verify", json=tampered, headers=served.auth()
    ).json()
    assert check["valid"] is False and any("signature" in x for x in check["reasons"])
    garbage = httpx.post(
        served.url + "/v1/certificates/verify", json={"not": "a certificate"}, headers=served.auth()
    )
    assert garbage.status_code == 200 and garbage.json()["valid"] is False


@pytest.mark.parametrize("question", SAMPLE_QUESTIONS)
def test_ask_certificate_verifies_without_warnings_and_replays_on_the_store(
    served: Server, question: str, tmp_path: Path
) -> None:
    """Issue 25 item 4: the certificate names the stored chunks its trimmed evidence came from."""
    r = httpx.post(
        served.url + "/v1/ask", json={"question": question}, headers=served.auth(), timeout=60
    )
    assert r.status_code == 200, r.text
    cert = AskResponse.model_validate(r.json()).certificate
    assert cert is not None
    check = httpx.post(
        served.url + "/v1/certificates/verify",
        json=cert.model_dump(mode="json"),
        headers=served.auth(),
    ).json()
    assert check["valid"] is True, check
    assert check["warnings"] == []
    path = tmp_path / "answer.cert.json"
    write_certificate(cert, path)
    result = CliRunner().invoke(
        app,
        ["certificate", "verify", str(path), "--store", str(served.store), "--replay", "--json"],
        env={"AFFIDAVIT_HOME": str(served.home)},
    )
    out = json.loads(result.stdout)
    assert result.exit_code == 0, out
    assert out["warnings"] == [] and out["replay"]["mismatches"] == []
    assert out["replay"]["decisions"] == {c.claim.id: c.decision for c in cert.claims}


def test_ask_streams_events_in_order(served: Server) -> None:
    # debug mode: the draft's pieces stream as the model writes them (strict: the test below)
    with httpx.stream(
        "POST",
        served.url + "/v1/ask",
        json={"question": "Who discovered polonium?", "mode": "debug"},
        headers={**served.auth(), "Accept": "text/event-stream"},
        timeout=60,
    ) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        text = r.read().decode()
    got = events(text)
    kinds = [k for k, _ in got]
    assert kinds[:3] == ["retrieval", "grading", "refinement"]
    n_tokens = kinds.count("token")
    assert n_tokens > 3
    assert kinds[3 : 3 + n_tokens] == ["token"] * n_tokens
    n_claims = kinds.count("claim")
    assert n_claims >= 2
    assert kinds[3 + n_tokens :] == ["claim"] * n_claims + ["certificate", "result"]
    result = got[-1][1]["response"]["result"]
    assert "".join(d["text"] for k, d in got if k == "token") == result["trace"]["raw_answer"]
    grading = got[1][1]
    assert grading["classification"]["kind"] in ("correct", "ambiguous", "incorrect")
    assert len(grading["grades"]) == len(got[0][1]["hits"])


def test_a_strict_stream_sends_only_the_guarded_answer(served: Server) -> None:
    # strict is the default display: the stream must not carry a withheld sentence as it is
    # written (it did: every draft piece went out as a token event before verification)
    with httpx.stream(
        "POST",
        served.url + "/v1/ask",
        json={"question": "Who discovered polonium?"},
        headers={**served.auth(), "Accept": "text/event-stream"},
        timeout=60,
    ) as r:
        assert r.status_code == 200
        text = r.read().decode()
    got = events(text)
    kinds = [k for k, _ in got]
    result = got[-1][1]["response"]["result"]
    assert result["mode"] == "strict"
    assert "born on the Moon" not in result["answer"]  # the scripted false sentence: withheld
    tokens = [d["text"] for k, d in got if k == "token"]
    assert tokens == [result["answer"]]  # one event, the guarded answer, after the decisions
    assert kinds.index("token") > max(i for i, k in enumerate(kinds) if k == "claim")
    streamed = "".join(d.get("text", "") for k, d in got if k == "token")
    assert "born on the Moon" not in streamed


# -- audit, check, search ---------------------------------------------------------------------


def test_audit_returns_what_the_cli_prints(served: Server, tmp_path: Path) -> None:
    r = httpx.post(
        served.url + "/v1/audit",
        json=AUDIT_INPUT,
        params={"mode": "guardrail"},
        headers=served.auth(),
    )
    assert r.status_code == 200, r.text
    api = AuditReport.model_validate(r.json())
    path = tmp_path / "in.json"
    path.write_text(json.dumps(AUDIT_INPUT))
    cli = CliRunner().invoke(app, ["audit", str(path), "--json", "--mode", "guardrail"])
    assert cli.exit_code in (0, 1), cli.output
    cli_report = AuditReport.model_validate_json(cli.stdout)
    assert api.model_copy(update={"elapsed_ms": 0.0}) == cli_report.model_copy(
        update={"elapsed_ms": 0.0}
    )
    assert api.guarded_response is not None
    # a bad body is a 4xx with a message, never a 500
    bad = httpx.post(served.url + "/v1/audit", json={"chunks": "x"}, headers=served.auth())
    assert bad.status_code == 422 and "response" in bad.json()["message"]
    bad = httpx.post(
        served.url + "/v1/audit",
        content=b'{"chunks": [',
        headers={**served.auth(), "Content-Type": "application/json"},
    )
    # not JSON at all: 400 with the parser's reason and where (issue 28), not a field error
    assert bad.status_code == 400
    assert bad.json()["message"].startswith("the body is not valid JSON: ")
    assert "line 1, column" in bad.json()["message"]


def test_check_one_and_many_like_the_cli(served: Server, tmp_path: Path) -> None:
    pairs = [
        {
            "id": "a",
            "claim": "Paris is in France.",
            "evidence": ["Paris is the capital of France."],
        },
        {"id": 2, "claim": "Paris is in Spain.", "evidence": ["Paris is the capital of France."]},
    ]
    many = httpx.post(served.url + "/v1/check", json=pairs, headers=served.auth(), timeout=60)
    assert many.status_code == 200, many.text
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(json.dumps(p) for p in pairs))
    cli = CliRunner().invoke(app, ["check", str(path)])
    assert cli.exit_code == 0, cli.output
    cli_rows = [json.loads(line) for line in cli.stdout.splitlines()]
    api_rows = [{k: v for k, v in row.items() if v is not None} for row in many.json()]
    assert api_rows == cli_rows
    one = httpx.post(served.url + "/v1/check", json=pairs[0], headers=served.auth(), timeout=60)
    assert one.json()["id"] == "a" and one.json()["label"] == many.json()[0]["label"]
    too_many = httpx.post(served.url + "/v1/check", json=[pairs[0]] * 65, headers=served.auth())
    assert too_many.status_code == 400 and "at most 64" in too_many.json()["message"]


def test_search(served: Server) -> None:
    r = httpx.get(
        served.url + "/v1/search",
        params={"q": "Who discovered polonium?", "k": 3, "mode": "bm25"},
        headers=served.auth(),
    )
    assert r.status_code == 200
    hits = r.json()["hits"]
    assert 0 < len(hits) <= 3 and "polonium" in hits[0]["chunk"]["text"]
    bad = httpx.get(
        served.url + "/v1/search", params={"q": "x", "mode": "magic"}, headers=served.auth()
    )
    assert bad.status_code == 422 and "mode" in bad.json()["message"]


# -- documents and jobs -----------------------------------------------------------------------


def _wait_job(server: Server, job_id: str) -> IngestJob:
    deadline = time.monotonic() + 60
    while True:
        r = httpx.get(f"{server.url}/v1/jobs/{job_id}", headers=server.auth())
        job = IngestJob.model_validate(r.json())
        if job.state in ("done", "failed"):
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.2)


def test_upload_ingests_and_a_bad_file_loses_nothing(served: Server) -> None:
    before = httpx.get(served.url + "/readyz").json()
    chunks_before = int(
        next(c for c in before["checks"] if c["name"] == "store")["detail"].split()[0]
    )
    files = [
        (
            "files",
            (
                "ostrich.txt",
                b"The ostrich Zanzibar-7 laid forty golden eggs in 2031.",
                "text/plain",
            ),
        ),
        ("files", ("broken.pdf", b"%PDF-1.7 this is not really a pdf", "application/pdf")),
    ]
    r = httpx.post(served.url + "/v1/documents", files=files, headers=served.auth("write"))
    assert r.status_code == 202, r.text
    job = _wait_job(served, r.json()["id"])
    assert job.state == "done"
    by_file = {o.source: o for o in job.outcomes}
    assert by_file["ostrich.txt"].status == "added"
    assert by_file["broken.pdf"].status == "failed" and by_file["broken.pdf"].reason
    assert job.error and "broken.pdf" in job.error
    after = httpx.get(served.url + "/readyz").json()
    chunks_after = int(
        next(c for c in after["checks"] if c["name"] == "store")["detail"].split()[0]
    )
    assert chunks_after == chunks_before + by_file["ostrich.txt"].chunks
    hits = httpx.get(
        served.url + "/v1/search",
        params={"q": "Zanzibar-7 ostrich", "mode": "bm25"},
        headers=served.auth(),
    ).json()["hits"]
    assert "Zanzibar-7" in hits[0]["chunk"]["text"]
    missing = httpx.get(served.url + "/v1/jobs/nope", headers=served.auth())
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"
    empty = httpx.post(served.url + "/v1/documents", headers=served.auth("write"))
    assert empty.status_code == 422


# -- limits: 413, 429, 503, 504, disconnect ---------------------------------------------------


def test_413_body_too_large(tight: Server) -> None:
    big = {"query": "", "chunks": [{"text": "x" * 20000}], "response": "x"}
    r = httpx.post(tight.url + "/v1/audit", json=big, headers=tight.auth())
    assert r.status_code == 413 and "larger than" in r.json()["message"]

    def chunked() -> Any:
        yield b'{"query": "", "chunks": [{"text": "'
        for _ in range(40):
            yield b"y" * 1000
        yield b'"}], "response": "y"}'

    r = httpx.post(
        tight.url + "/v1/audit",
        content=chunked(),
        headers={**tight.auth(), "Content-Type": "application/json"},
    )
    assert r.status_code == 413


def test_429_rate_limit_per_key(tight: Server) -> None:
    codes = []
    for _ in range(12):
        r = httpx.get(tight.url + "/healthz")  # open endpoints are not limited
        r = httpx.get(tight.url + "/v1/keys/public", headers=tight.auth("limited"))
        codes.append(r.status_code)
        if r.status_code == 429:
            assert int(r.headers["Retry-After"]) >= 1
            assert "rate limit" in r.json()["message"]
            break
    assert 429 in codes and codes[0] == 200
    # another key is not affected
    assert httpx.get(tight.url + "/v1/keys/public", headers=tight.auth("read")).status_code == 200


def _stream_until_first_token(
    server: Server, holding: threading.Event, done: threading.Event
) -> None:
    # mixed display: the draft streams as it is written (strict sends the answer only at the end)
    with httpx.stream(
        "POST",
        server.url + "/v1/ask",
        json={"question": "Who discovered polonium?", "mode": "mixed"},
        headers={**server.auth("write"), "Accept": "text/event-stream"},
        timeout=30,
    ) as r:
        for line in r.iter_lines():
            if line == "event: token":
                holding.set()
                done.wait(10)
                return  # closes the connection mid-stream


def test_503_with_retry_after_when_the_llm_queue_is_full(tight: Server) -> None:
    wait_idle(tight)
    holding, done = threading.Event(), threading.Event()
    t = threading.Thread(target=_stream_until_first_token, args=(tight, holding, done))
    t.start()
    try:
        assert holding.wait(20), "the first answer never streamed"
        r = httpx.post(
            tight.url + "/v1/ask", json={"question": "Who discovered radium?"}, headers=tight.auth()
        )
        assert r.status_code == 503
        assert r.headers["Retry-After"] == "7"
        assert r.json()["error"] == "queue_full"
    finally:
        done.set()
        t.join()


def test_disconnect_mid_stream_frees_the_slot(tight: Server) -> None:
    wait_idle(tight)
    holding, done = threading.Event(), threading.Event()
    done.set()  # leave as soon as the first token arrives
    _stream_until_first_token(tight, holding, done)
    assert holding.is_set()
    # the scripted answer would take 50 pieces * 0.15 s = 7.5 s more; the slot is back far sooner
    wait_idle(tight, timeout=2.0)
    r = httpx.post(
        tight.url + "/v1/audit", json=AUDIT_INPUT, headers=tight.auth()
    )  # the server still works
    assert r.status_code == 200


def test_504_past_the_request_budget(tight: Server) -> None:
    wait_idle(tight)
    slow = {"question": "Who discovered polonium? " + "Tell me everything. " * 3}
    start = time.monotonic()
    r = httpx.post(tight.url + "/v1/ask", json=slow, headers=tight.auth(), timeout=30)
    assert r.status_code == 504, r.text
    assert "budget" in r.json()["message"]
    assert time.monotonic() - start < 8
    # the abandoned answer was told to stop and gave its slot back at once: the scripted answer
    # would take 7.5 s in all, 4.5 s past the budget (issue 25.8: the JSON path ran it to the end)
    wait_idle(tight, timeout=1.5)


def rejections(server: Server, reason: str) -> float:
    text = httpx.get(server.url + "/metrics").text
    prefix = f'affidavit_rejections_total{{reason="{reason}"}}'
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(prefix))


def test_a_json_ask_whose_client_leaves_frees_its_slot(tight: Server) -> None:
    """Issue 25.8: a JSON ask whose client went away kept generating until its budget ran out
    (15.7 s for a 60 s budget, measured by hand): it now stops at the next piece, well before
    this server's 3 s budget would have stopped it."""
    wait_idle(tight)
    timeouts = rejections(tight, "timeout")
    start = time.monotonic()
    with pytest.raises(httpx.ReadTimeout):  # the client gives up and closes the connection
        httpx.post(
            tight.url + "/v1/ask",
            json={"question": "Who discovered polonium?"},
            headers=tight.auth(),
            timeout=httpx.Timeout(30, read=0.5),
        )
    wait_idle(tight, timeout=1.5)
    assert time.monotonic() - start < 2.5  # the scripted answer takes 7.5 s, the budget 3 s
    assert rejections(tight, "timeout") == timeouts  # stopped because it left, not by the budget


def test_a_stream_past_its_budget_ends_with_an_error_event(tight: Server) -> None:
    wait_idle(tight)
    start = time.monotonic()
    with httpx.stream(
        "POST",
        tight.url + "/v1/ask",
        json={"question": "Who discovered polonium?", "mode": "mixed"},  # the draft streams
        headers={**tight.auth("write"), "Accept": "text/event-stream"},
        timeout=30,
    ) as r:
        assert r.status_code == 200
        got = events(r.read().decode())
    kinds = [k for k, _ in got]
    assert kinds[:3] == ["retrieval", "grading", "refinement"] and "token" in kinds
    assert kinds[-1] == "error" and "result" not in kinds
    assert got[-1][1]["error"]["status"] == 504
    assert time.monotonic() - start < 8
    wait_idle(tight)


def test_strict_quote_retry_over_http_shows_only_the_verified_copy(
    serve_answer: Any,
) -> None:
    """generate.quote_retry through a real server: the first draft (a wrong year) is withheld,
    the model is asked again and its copy of the passage is shown; the stream carries only the
    shown answer, and the trace keeps the withheld draft."""
    wrong = "The Eiffel Tower was completed in 1930 [1]."
    copy = "The Eiffel Tower was completed in March 1889 [1]."
    server = serve_answer([wrong, copy], "quote-retry")
    with httpx.stream(
        "POST",
        server.url + "/v1/ask",
        json={"question": "When was the Eiffel Tower completed?"},
        headers={**server.auth(), "Accept": "text/event-stream"},
        timeout=120,
    ) as r:
        assert r.status_code == 200
        text = r.read().decode()
    got = events(text)
    result = got[-1][1]["response"]["result"]
    assert result["mode"] == "strict"
    assert "March 1889" in result["answer"] and "1930" not in result["answer"]
    retry = result["trace"]["quote_retry"]
    assert retry["adopted"] is True
    assert "1930" in retry["other_raw"]
    assert [o["decision"] for o in retry["other_claims"]] == ["unverified"]
    assert "requote" in [t["stage"] for t in result["trace"]["timings"]]
    tokens = [d["text"] for k, d in got if k == "token"]
    assert tokens == [result["answer"]]
    assert "1930" not in "".join(tokens)
