"""Uploaded files are kept only ``serve.keep_uploads_s`` after their job ends; records stay."""

from __future__ import annotations

import os
import time
from pathlib import Path

from affidavit.core.errors import IngestError
from affidavit.core.retrieval import FileOutcome, IngestReport
from affidavit.server.jobs import IngestJobs


def _ok(folder: Path) -> IngestReport:
    return IngestReport(
        outcomes=tuple(FileOutcome(source=str(p), status="added") for p in folder.iterdir())
    )


def _fails(folder: Path) -> IngestReport:
    raise IngestError("the store is unusable")


def _finish(jobs: IngestJobs, job_id: str) -> None:
    deadline = time.monotonic() + 30
    while (job := jobs.get(job_id)) is not None and job.state in ("queued", "running"):
        assert time.monotonic() < deadline
        time.sleep(0.02)


def _gone(path: Path, within: float) -> bool:
    deadline = time.monotonic() + within
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return not path.exists()


def test_uploads_are_removed_when_their_job_ends_by_default(tmp_path: Path) -> None:
    for ingest, state in ((_ok, "done"), (_fails, "failed")):
        jobs = IngestJobs(ingest, tmp_path / "uploads", max_queued=2)
        try:
            job = jobs.submit([("a.txt", b"text")])
            _finish(jobs, job.id)
            assert _gone(tmp_path / "uploads" / job.id, within=5)
            kept = jobs.get(job.id)
            assert kept is not None and kept.state == state  # the record stays
        finally:
            jobs.close()


def test_uploads_are_kept_as_long_as_the_setting_says(tmp_path: Path) -> None:
    jobs = IngestJobs(_ok, tmp_path / "uploads", max_queued=2, keep_uploads_s=0.5)
    try:
        job = jobs.submit([("a.txt", b"text")])
        _finish(jobs, job.id)
        folder = tmp_path / "uploads" / job.id
        assert (folder / "a.txt").exists()  # still there just after the job
        assert _gone(folder, within=10)
    finally:
        jobs.close()


def test_an_earlier_process_s_uploads_are_removed(tmp_path: Path) -> None:
    old = tmp_path / "uploads" / "0123abcd"
    old.mkdir(parents=True)
    (old / "left.txt").write_text("from a server that stopped", encoding="utf-8")
    recent = tmp_path / "uploads" / "4567ef01"
    recent.mkdir()
    hour_ago = time.time() - 3600
    os.utime(old, (hour_ago, hour_ago))
    jobs = IngestJobs(_ok, tmp_path / "uploads", max_queued=2, keep_uploads_s=600)
    try:
        assert _gone(old, within=5)
        assert recent.exists()  # ended less than keep_uploads_s ago
    finally:
        jobs.close()
