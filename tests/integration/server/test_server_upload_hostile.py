"""Issue 26.5 and 26.6 through ``POST /v1/documents``: a hostile file fails alone.

A PDF past pypdf's page-tree limit and a JSONL record nested 980 levels used to fail the whole
job (no outcomes, the good file beside them not ingested).
"""

from __future__ import annotations

import json
import time

import httpx
import pytest

from affidavit.core.service import IngestJob
from affidavit.testing.server import ServedApi as Server

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _tree_pdf(fanout: int, per_node: int) -> bytes:
    content = b"BT /F1 12 Tf 72 720 Td (The same page again.) Tj ET"
    objs = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [%b] /Count %d >>" % (b"3 0 R " * fanout, fanout * per_node),
        3: b"<< /Type /Pages /Parent 2 0 R /Kids [%b] /Count %d >>"
        % (b"4 0 R " * per_node, per_node),
        4: b"<< /Type /Page /Parent 3 0 R /MediaBox [0 0 612 792] /Contents 5 0 R "
        b"/Resources << /Font << /F1 6 0 R >> >> >>",
        5: b"<< /Length %d >>\nstream\n%b\nendstream" % (len(content), content),
        6: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    }
    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for n, body in objs.items():
        offsets[n] = len(out)
        out += b"%d 0 obj\n%b\nendobj\n" % (n, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for n in sorted(objs):
        out += b"%010d 00000 n \n" % offsets[n]
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


def _wait_job(server: Server, job_id: str) -> IngestJob:
    deadline = time.monotonic() + 120
    while True:
        r = httpx.get(f"{server.url}/v1/jobs/{job_id}", headers=server.auth())
        job = IngestJob.model_validate(r.json())
        if job.state in ("done", "failed"):
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.2)


def test_hostile_uploads_fail_alone(served: Server) -> None:
    deep = '{"id": "deep-1", "text": "Deep.", "metadata": ' + '{"x": ' * 980 + "{}" + "}" * 981
    plain = json.dumps({"id": "plain-1", "text": "The heron Quillmark-9 nests on the roof."})
    files = [
        ("files", ("tree.pdf", _tree_pdf(330, 330), "application/pdf")),
        ("files", ("many.pdf", _tree_pdf(300, 300), "application/pdf")),
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
