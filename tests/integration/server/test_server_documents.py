"""``/v1/documents`` against a real server process: the same content uploaded again adds no chunk,
documents are listed, shown and deleted (write scope), and uploads are not kept."""

from __future__ import annotations

import time

import httpx
import pytest

from affidavit.core.retrieval import DocumentDeletion, DocumentInfo, DocumentList
from affidavit.core.service import IngestJob
from affidavit.testing.server import ServedApi as Server

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TEXT = b"The pangolin Quorvex-12 crossed the Atacama salt flat on 3 May 2029."


def _upload(server: Server, *files: tuple[str, bytes]) -> IngestJob:
    r = httpx.post(
        server.url + "/v1/documents",
        files=[("files", (name, data, "text/plain")) for name, data in files],
        headers=server.auth("write"),
    )
    assert r.status_code == 202, r.text
    deadline = time.monotonic() + 60
    while True:
        job = IngestJob.model_validate(
            httpx.get(f"{server.url}/v1/jobs/{r.json()['id']}", headers=server.auth()).json()
        )
        if job.state in ("done", "failed"):
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.2)


def _listed(server: Server) -> DocumentList:
    r = httpx.get(server.url + "/v1/documents", headers=server.auth())
    assert r.status_code == 200, r.text
    return DocumentList.model_validate(r.json())


def test_uploading_the_same_content_again_adds_no_chunk(served: Server) -> None:
    first = _upload(served, ("quorvex.txt", TEXT))
    assert [o.status for o in first.outcomes] == ["added"]
    doc_id = first.outcomes[0].doc_id
    before = _listed(served)
    again = _upload(served, ("quorvex.txt", TEXT), ("copy of quorvex.txt", TEXT))
    assert [o.status for o in again.outcomes] == ["skipped", "skipped"]
    assert {o.doc_id for o in again.outcomes} == {doc_id}
    after = _listed(served)
    assert after.chunks_total == before.chunks_total
    assert len(after.documents) == len(before.documents)
    [doc] = [d for d in after.documents if d.id == doc_id]
    assert doc.names == ("quorvex.txt", "copy of quorvex.txt")
    # no path on the server, of the store or of the uploads, in what the API shows
    body = httpx.get(served.url + "/v1/documents", headers=served.auth()).text
    assert str(served.home) not in body and str(served.store) not in body
    # an edited file uploaded under its name replaces the old version
    edited = _upload(served, ("quorvex.txt", TEXT.replace(b"3 May", b"9 June")))
    assert [o.status for o in edited.outcomes] == ["replaced"]
    names = {d.id: d.names for d in _listed(served).documents}
    assert names[doc_id] == ("copy of quorvex.txt",) and edited.outcomes[0].doc_id in names


def test_show_and_delete_a_document(served: Server) -> None:
    job = _upload(served, ("okapi.txt", b"The okapi Vendrel-5 swam across Lake Tanganyika."))
    doc_id = job.outcomes[0].doc_id
    url = f"{served.url}/v1/documents/{doc_id}"
    shown = httpx.get(url, headers=served.auth())
    assert shown.status_code == 200
    info = DocumentInfo.model_validate(shown.json())
    assert (info.source, info.chunks) == ("okapi.txt", job.outcomes[0].chunks)
    refused = httpx.delete(url, headers=served.auth("read"))
    assert refused.status_code == 403
    assert httpx.get(url, headers=served.auth()).status_code == 200
    gone = httpx.delete(url, headers=served.auth("write"))
    assert gone.status_code == 200, gone.text
    assert DocumentDeletion.model_validate(gone.json()) == DocumentDeletion(
        id=doc_id, source="okapi.txt", chunks_removed=info.chunks
    )
    for r in (
        httpx.get(url, headers=served.auth()),
        httpx.delete(url, headers=served.auth("write")),
    ):
        assert r.status_code == 404 and r.json()["error"] == "not_found"
        assert "no document" in r.json()["message"]
    assert doc_id not in {d.id for d in _listed(served).documents}
    for mode in ("bm25", "dense"):
        hits = httpx.get(
            served.url + "/v1/search",
            params={"q": "okapi Vendrel-5 Lake Tanganyika", "mode": mode},
            headers=served.auth(),
        ).json()["hits"]
        assert all(h["chunk"]["doc_id"] != doc_id for h in hits)


def test_uploads_are_removed_once_ingested_or_failed(served: Server) -> None:
    ok = _upload(served, ("tapir.txt", b"The tapir Oskelin-3 slept in the Pantanal."))
    bad = _upload(served, ("x.exe", b"MZ\x90\x00 not a document"))
    assert ok.state == "done" and bad.state == "failed"
    uploads = served.home / "uploads"
    assert not (uploads / ok.id).exists() and not (uploads / bad.id).exists()
    # the failed job's record is kept, with the reason
    kept = httpx.get(f"{served.url}/v1/jobs/{bad.id}", headers=served.auth()).json()
    assert kept["state"] == "failed" and kept["outcomes"][0]["reason"]
