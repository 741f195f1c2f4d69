"""Ingest jobs: ``POST /v1/documents`` saves the upload and queues a job; one thread runs them.

Jobs run one at a time (the store takes one writer) through the library's own
`Ingestor`, so a file that fails to parse is recorded on its job
with the reason and everything already stored stays as it was. Job records live in the memory of
the server process (a restart forgets finished jobs, never stored documents).

Uploaded files are kept only ``serve.keep_uploads_s`` seconds after their job ends (default 0:
removed at once, whether ingested or failed; the job record stays). Folders a previous server
process left behind are removed at start-up once that long has passed.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import re
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from affidavit.core.errors import AffidavitError, InputError
from affidavit.core.retrieval import FileOutcome, IngestReport
from affidavit.core.service import IngestJob
from affidavit.core.text import safe_one_line
from affidavit.server.limits import QueueFull

log = logging.getLogger(__name__)

__all__ = ["IngestJobs", "safe_filename"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._ -]+")


def safe_filename(name: str) -> str:
    """The base name of an uploaded file, reduced to safe characters.

    Examples:
        >>> safe_filename("../../etc/pass wd.txt")
        'pass wd.txt'

    Raises:
        InputError: nothing usable is left.
    """
    base = _UNSAFE.sub("_", name.replace("\\", "/").rsplit("/", 1)[-1]).strip(" .")
    if not base:
        raise InputError(f"unusable file name {name!r}")
    return base[:200]


class IngestJobs:
    """Queued ingest jobs over one ingest function.

    Args:
        ingest: runs the library's ingest on a folder and returns its report.
        upload_dir: where each job's files are kept (``<upload_dir>/<job id>/``).
        max_queued: jobs allowed to wait; one more is refused (503).
        keep_uploads_s: seconds a job's files are kept after it ends (0: removed at once).
    """

    def __init__(
        self,
        ingest: Callable[[Path], IngestReport],
        upload_dir: Path,
        *,
        max_queued: int,
        keep_uploads_s: float = 0.0,
    ) -> None:
        self._ingest = ingest
        self.upload_dir = upload_dir
        self.keep_uploads_s = keep_uploads_s
        self._jobs: dict[str, IngestJob] = {}
        self._ended: dict[str, float] = {}  # job id -> when it ended, until its files go
        self._lock = threading.Lock()
        self._queue: queue.Queue[str | None] = queue.Queue(maxsize=max_queued)
        self._leftovers()
        self._thread = threading.Thread(target=self._work, name="affidavit-ingest", daemon=True)
        self._thread.start()

    @property
    def depth(self) -> int:
        """Jobs waiting or running."""
        with self._lock:
            return sum(j.state in ("queued", "running") for j in self._jobs.values())

    def get(self, job_id: str) -> IngestJob | None:
        """A job by id."""
        with self._lock:
            return self._jobs.get(job_id)

    def submit(self, files: Sequence[tuple[str, bytes]]) -> IngestJob:
        """Save the files and queue their job.

        Raises:
            InputError: no file, or a name that cannot be used.
            QueueFull: too many jobs waiting.
        """
        if not files:
            raise InputError("no file uploaded (send multipart form field 'files')")
        names = [safe_filename(n) for n, _ in files]
        if len(set(names)) != len(names):
            raise InputError("two uploaded files have the same name")
        job_id = uuid.uuid4().hex
        folder = self.upload_dir / job_id
        folder.mkdir(parents=True)
        for name, (_, data) in zip(names, files, strict=True):
            (folder / name).write_bytes(data)
        job = IngestJob(id=job_id, state="queued", files=tuple(names), created_at=datetime.now(UTC))
        with self._lock:
            self._jobs[job_id] = job
        try:
            self._queue.put_nowait(job_id)
        except queue.Full:
            with self._lock:
                del self._jobs[job_id]
            shutil.rmtree(folder, ignore_errors=True)
            raise QueueFull(
                "too many ingest jobs waiting; retry after the Retry-After seconds"
            ) from None
        return job

    def _set(self, job_id: str, **update: object) -> None:
        with self._lock:
            self._jobs[job_id] = self._jobs[job_id].model_copy(update=update)

    def _leftovers(self) -> None:
        """Upload folders of an earlier server process: their jobs are gone with it."""
        try:
            folders = [p for p in self.upload_dir.iterdir() if p.is_dir()]
        except OSError:
            return  # no upload folder yet
        for p in folders:
            try:
                ended = p.stat().st_mtime
            except OSError:
                continue
            self._ended[p.name] = ended

    def _expire(self) -> None:
        """Remove the files of jobs that ended more than ``keep_uploads_s`` ago."""
        now = time.time()
        for job_id, ended in list(self._ended.items()):
            if now - ended >= self.keep_uploads_s:
                shutil.rmtree(self.upload_dir / job_id, ignore_errors=True)
                del self._ended[job_id]

    def _work(self) -> None:
        while True:
            self._expire()
            try:
                # wake at least once a minute (and when the next upload is due) to remove files
                wait = min([60.0] + [max(0.1, self.keep_uploads_s)] * bool(self._ended))
                job_id = self._queue.get(timeout=wait)
            except queue.Empty:
                continue
            if job_id is None:
                self._expire()
                return
            self._set(job_id, state="running")
            try:
                self._run(job_id)
            finally:
                self._ended[job_id] = time.time()
                self._expire()

    def _run(self, job_id: str) -> None:
        folder = self.upload_dir / job_id
        try:
            report = self._ingest(folder)
        except AffidavitError as exc:
            # the reason can quote an upload (a record's id, a file's text): one escaped line
            log.warning("ingest job %s failed: %s", job_id, safe_one_line(exc.message))
            self._set(job_id, state="failed", error=exc.message, finished_at=datetime.now(UTC))
            return
        except Exception as exc:  # the job thread must survive any one job
            log.exception("ingest job %s crashed", job_id)
            self._set(
                job_id,
                state="failed",
                error=f"{type(exc).__name__}: {exc}",
                finished_at=datetime.now(UTC),
            )
            return
        outcomes = tuple(
            o.model_copy(update={"source": _relative(o, folder)}) for o in report.outcomes
        )
        failed = [o for o in outcomes if o.status == "failed"]
        self._set(
            job_id,
            state="failed" if failed and len(failed) == len(outcomes) else "done",
            outcomes=outcomes,
            # the report names files as uploaded too, never by their path on this server
            report=report.model_copy(update={"outcomes": outcomes}),
            error="; ".join(f"{o.source}: {o.reason}" for o in failed) or None,
            finished_at=datetime.now(UTC),
        )

    def close(self) -> None:
        """Stop the job thread after the running job."""
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(None)


def _relative(outcome: FileOutcome, folder: Path) -> str:
    prefix = str(folder) + "/"
    return outcome.source[len(prefix) :] if outcome.source.startswith(prefix) else outcome.source
