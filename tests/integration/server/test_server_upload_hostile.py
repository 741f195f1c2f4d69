"""Issue 26.5 and 26.6 through ``POST /v1/documents``: a hostile file fails alone.

A PDF past pypdf's page-tree limit and a JSONL record nested 980 levels used to fail the whole
job (no outcomes, the good file beside them not ingested).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import httpx
import pytest

from affidavit.core.service import IngestJob
from affidavit.testing.server import ServedApi as Server

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _wait_job(server: Server, job_id: str) -> IngestJob:
    deadline = time.monotonic() + 120
    while True:
        r = httpx.get(f"{server.url}/v1/jobs/{job_id}", headers=server.auth())
        job = IngestJob.model_validate(r.json())
        if job.state in ("done", "failed"):
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.2)


def test_hostile_uploads_fail_alone(served: Server, page_tree_pdf: Callable[..., bytes]) -> None:
    deep = '{"id": "deep-1", "text": "Deep.", "metadata": ' + '{"x": ' * 980 + "{}" + "}" * 981
    plain = json.dumps({"id": "plain-1", "text": "The heron Quillmark-9 nests on the roof."})
    files = [
        ("files", ("tree.pdf", page_tree_pdf(330, 330), "application/pdf")),
        ("files", ("many.pdf", page_tree_pdf(300, 300), "application/pdf")),
        ("files", ("records.jsonl", (deep + "\n" + plain + "\n").encode(), "application/jsonl")),
        ("files", ("good.txt", b"The lighthouse Vexwold-3 shines over the bay.", "text/plain")),
    ]
    r = httpx.post(served.url + "/v1/documents", files=files, headers=served.auth("write"))
    assert r.status_code == 202, r.text
    job = _wait_job(served, r.json()["id"])
    assert job.state == "done", job
    by = {o.source: o for o in job.outcomes}
    assert by["good.txt"].status == "added"
    assert by["tree.pdf"].status == "failed" and by["tree.pdf"].reason
    assert by["many.pdf"].status == "failed" and "pages" in (by["many.pdf"].reason or "")
    deep_out = [o for o in job.outcomes if o.source.endswith("#L1")]
    assert len(deep_out) == 1 and "nested too deeply" in (deep_out[0].reason or "")
    assert any(o.doc_id == "plain-1" and o.status == "added" for o in job.outcomes)
    for q, word in (("Vexwold-3 lighthouse", "Vexwold-3"), ("Quillmark-9 heron", "Quillmark-9")):
        hits = httpx.get(
            served.url + "/v1/search", params={"q": q, "mode": "bm25"}, headers=served.auth()
        ).json()["hits"]
        assert word in hits[0]["chunk"]["text"]
