"""Ingest jobs: ``POST /v1/documents`` saves the upload and queues a job; one thread runs them.

Jobs run one at a time (the store takes one writer) through the library's own
:class:`~affidavit.ingest.pipeline.Ingestor`, so a file that fails to parse is recorded on its job
with the reason and everything already stored stays as it was. Job records live in the memory of
the server process (a restart forgets finished jobs, never stored documents).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import re
import shutil
import threading
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from affidavit.core.errors import AffidavitError, InputError
from affidavit.core.retrieval import FileOutcome, IngestReport
from affidavit.core.service import IngestJob
from affidavit.server.limits import QueueFull

log = logging.getLogger(__name__)

__all__ = ["IngestJobs", "safe_filename"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._ -]+")


def safe_filename(name: str) -> str:
    """The base name of an uploaded file, reduced to safe characters.

    Example:
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
    """

    def __init__(
        self,
        ingest: Callable[[Path], IngestReport],
        upload_dir: Path,
        *,
        max_queued: int,
    ) -> None:
        self._ingest = ingest
        self.upload_dir = upload_dir
        self._jobs: dict[str, IngestJob] = {}
        self._lock = threading.Lock()
        self._queue: queue.Queue[str | None] = queue.Queue(maxsize=max_queued)
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

    def _work(self) -> None:
        while True:
            job_id = self._queue.get()
            if job_id is None:
                return
            self._set(job_id, state="running")
            folder = self.upload_dir / job_id
            try:
                report = self._ingest(folder)
            except AffidavitError as exc:
                log.warning("ingest job %s failed: %s", job_id, exc.message)
                self._set(job_id, state="failed", error=exc.message, finished_at=datetime.now(UTC))
                continue
            except Exception as exc:  # the job thread must survive any one job
                log.exception("ingest job %s crashed", job_id)
                self._set(
                    job_id,
                    state="failed",
                    error=f"{type(exc).__name__}: {exc}",
                    finished_at=datetime.now(UTC),
                )
                continue
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
