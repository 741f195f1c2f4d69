"""Issue 27.5: an ingest job's record (its report included) shows no absolute server path."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

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


def test_a_failed_jobs_log_line_escapes_what_the_upload_put_in_the_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An ingest error can quote what an upload holds (a record's id, a file's text): the job's
    log line printed it as it came, escape sequences and line breaks included."""
    import logging

    from affidavit.core.errors import IngestError

    def fails(folder: Path) -> object:
        raise IngestError("record 'x\x1b]0;owned\x07\nFORGED ingest job 1 done' is bad")

    def crashes(folder: Path) -> object:
        raise ValueError("record 'y\x1b[2J\u202e'")

    for ingest in (fails, crashes):
        jobs = IngestJobs(ingest, tmp_path / "uploads", max_queued=2)  # type: ignore[arg-type]
        try:
            with caplog.at_level(logging.WARNING, logger="affidavit.server.jobs"):
                job = jobs.submit([("a.txt", b"text")])
                deadline = time.monotonic() + 30
                while (done := jobs.get(job.id)) is not None and done.state != "failed":
                    assert time.monotonic() < deadline
                    time.sleep(0.02)
        finally:
            jobs.close()
    lines = [r.getMessage() for r in caplog.records if r.name == "affidavit.server.jobs"]
    assert len(lines) == 2, lines
    for line in lines:
        assert not any(c in line for c in "\x1b\x07\u202e\n"), line
