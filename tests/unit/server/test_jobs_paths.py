"""Issue 27.5: an ingest job's record (its report included) shows no absolute server path."""

from __future__ import annotations

import time
from pathlib import Path

from affidavit.ingest.pipeline import Ingestor
from affidavit.server.jobs import IngestJobs
from affidavit.store.local import LocalStore
from affidavit.testing.embedder import FakeEmbedder


def test_a_job_report_names_files_as_uploaded(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "store")
    uploads = tmp_path / "uploads"
    jobs = IngestJobs(
        lambda folder: Ingestor(store, FakeEmbedder()).ingest([folder]), uploads, max_queued=2
    )
    try:
        job = jobs.submit(
            [
                ("tower.txt", b"The Eiffel Tower was completed in March 1889."),
                ("bad.txt", "caf\xe9".encode("latin-1")),
            ]
        )
        deadline = time.monotonic() + 30
        while (done := jobs.get(job.id)) is not None and done.state in ("queued", "running"):
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        jobs.close()
    assert done is not None and done.report is not None
    shown = done.model_dump_json()
    assert str(uploads) not in shown, shown
    assert {o.source for o in done.report.outcomes} == {"tower.txt", "bad.txt"}
    ids = [r[0] for r in store._db.execute("SELECT chunk_id FROM chunks")]
    assert [c.url for c in store.get_chunks(ids)] == ["tower.txt"]
    store.close()
