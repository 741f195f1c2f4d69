"""The ingest run: walk inputs, load, chunk, embed, write to the store, report every outcome.

Example:
    >>> from affidavit.core.settings import IngestSettings
from affidavit.core.text import find_lone_surrogate
    >>> from affidavit.store.local import LocalStore
    >>> from affidavit.testing.embedder import FakeEmbedder
    >>> store = LocalStore(tmp_path / "store")  # doctest: +SKIP
    >>> ing = Ingestor(store, FakeEmbedder(), IngestSettings())  # doctest: +SKIP
    >>> ing.ingest(["docs/"]).counts()  # doctest: +SKIP
    {'added': 3, 'skipped': 0, 'replaced': 0, 'failed': 1, 'pruned': 0}
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from affidavit.core.errors import AffidavitError, IngestError, StoreError
from affidavit.core.retrieval import FileOutcome, IngestReport
from affidavit.core.settings import IngestSettings
from affidavit.core.text import find_lone_surrogate
from affidavit.core.types import Chunk, Document
from affidavit.ingest.chunking import SentenceChunker
from affidavit.ingest.detect import MIME, UnsupportedType, detect
from affidavit.ingest.loaders import iter_jsonl, load_docx, load_html, load_pdf, load_text
from affidavit.ingest.walk import walk
from affidavit.retrieve.base import Embedder
from affidavit.store.base import DocRecord, DocumentBatchItem, Store

logger = logging.getLogger(__name__)

ProgressFn = Callable[[int, int, str], None]
"""Called as ``progress(files_done, files_total, current_source)``."""


@dataclass
class _Pending:
    doc: Document
    chunks: list[Chunk]
    origin: str
    outcome: FileOutcome


@dataclass
class _Run:
    records: dict[str, DocRecord]
    outcomes: list[FileOutcome] = field(default_factory=list)
    pending: list[_Pending] = field(default_factory=list)
    pending_chunks: int = 0
    seen_ids: dict[str, str] = field(default_factory=dict)
    failed_origins: set[str] = field(default_factory=set)


class Ingestor:
    """Loads files into a store, incrementally by content hash.

    Args:
        store: destination.
        embedder: embeds chunk texts (its name is recorded in the store).
        settings: the ``ingest`` settings section (chunk size, overlap, file size limit).
        batch_chunks: chunks embedded and committed together (one transaction).
    """

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        settings: IngestSettings | None = None,
        *,
        batch_chunks: int = 256,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings or IngestSettings()
        self.chunker = SentenceChunker(self.settings.chunk_size, self.settings.chunk_overlap)
        self.batch_chunks = batch_chunks

    def ingest(
        self,
        paths: Sequence[Path | str],
        *,
        prune: bool = False,
        progress: ProgressFn | None = None,
    ) -> IngestReport:
        """Ingest files and folders; never raises for a bad input file (it is reported).

        Raises:
            StoreError: the store cannot be locked or opened for writing at all, or it holds
                vectors of another embedder (an unusable store, not a bad input file).
        """
        t0 = time.perf_counter()
        lock = getattr(self.store, "lock_for_writing", None)
        if callable(lock):
            lock()
        try:
            stored = self.store.embedder()
            if stored is not None and stored != self.embedder.name:
                raise StoreError(
                    f"store holds vectors of {stored!r}, not of the configured embedder "
                    f"{self.embedder.name!r} (use another --store, or the embedder it was built "
                    "with)",
                    source=str(getattr(self.store, "path", "")),
                )
            run = _Run(records=self.store.records())
            skip = [Path(p) for p in [getattr(self.store, "path", None)] if p is not None]
            found = list(walk(paths, skip=skip))
            for done, f in enumerate(found, start=1):
                if progress:
                    progress(done - 1, len(found), str(f.path))
                if f.error is not None:
                    run.outcomes.append(
                        FileOutcome(source=str(f.path), status="failed", reason=f.error)
                    )
                    # a folder (or file) that could not be listed or opened this time: what is
                    # stored from under it is kept by --prune (issue 26.2)
                    run.failed_origins.add(os.path.realpath(f.path))
                    continue
                self._file(f.path, run, f.root)
            self._flush(run)
            if progress:
                progress(len(found), len(found), "")
            if prune:
                self._prune(paths, run)
            self.store.refresh()
            _, total = self.store.count()
        finally:
            unlock = getattr(self.store, "unlock", None)
            if callable(unlock):
                unlock()
        return IngestReport(
            outcomes=tuple(run.outcomes),
            store=str(getattr(self.store, "path", "")),
            seconds=time.perf_counter() - t0,
            chunks_total=total,
        )

    # -- one file -------------------------------------------------------------------------------

    def _file(self, path: Path, run: _Run, root: Path | None = None) -> None:
        origin = os.path.realpath(path)
        try:
            docs = [self._shown_as(d, path, root) for d in self._load(path, run)]
        except (IngestError, UnsupportedType, OSError) as exc:
            reason = (
                exc.message
                if isinstance(exc, IngestError)
                else (
                    f"cannot read: {exc.strerror}"
                    if isinstance(exc, OSError) and exc.strerror
                    else str(exc)
                )
            )
            run.outcomes.append(FileOutcome(source=str(path), status="failed", reason=reason))
            run.failed_origins.add(origin)
            return
        except AffidavitError as exc:  # e.g. a missing optional dependency: recorded, not fatal
            run.outcomes.append(FileOutcome(source=str(path), status="failed", reason=exc.message))
            run.failed_origins.add(origin)
            return
        for doc in docs:
            self._document(doc, origin, run)
            # flush inside the file too: a large JSONL commits in batches, not all at the end
            if run.pending_chunks >= self.batch_chunks:
                self._flush(run)

    def _shown_as(self, doc: Document, path: Path, root: Path | None) -> Document:
        """The document with its file path as users see it: relative to the ingested root (or
        under ``ingest.url_prefix``), never this machine's absolute path (issue 27.5).

        A source that is not the file (a JSONL record's own URL) is kept; ids stay as they are.
        """
        where = str(path)
        rel = relative_path(path, root)
        shown = (
            f"{self.settings.url_prefix.rstrip('/')}/{quote(rel)}"
            if self.settings.url_prefix
            else rel
        )
        source = doc.source
        if source == where or source.startswith(where + "#"):
            source = shown + source[len(where) :]
        meta = dict(doc.metadata)
        if meta.get("path") == where:
            meta["path"] = rel
        if source == doc.source and meta == doc.metadata:
            return doc
        return doc.model_copy(update={"source": source, "metadata": meta})

    def _load(self, path: Path, run: _Run) -> list[Document]:
        size = path.stat().st_size
        limit = self.settings.max_file_mb * 1024 * 1024
        if size > limit:
            raise IngestError(
                f"file is {size / 1048576:.1f} MB, above the {self.settings.max_file_mb:g} MB "
                "limit (ingest.max_file_mb)",
                source=str(path),
            )
        if size == 0:
            raise IngestError("file is empty (0 bytes)", source=str(path))
        with path.open("rb") as fh:
            raw = fh.read()
        kind = detect(path, raw[:8192])
        if kind == "pdf":
            return load_pdf(path, raw)
        if kind == "docx":
            return load_docx(path, raw)
        if kind == "html":
            return load_html(path, raw)
        if kind in ("text", "markdown"):
            return load_text(path, raw, markdown=kind == "markdown")
        docs: list[Document] = []
        for lineno, item in iter_jsonl(path, raw):
            if isinstance(item, IngestError):
                run.outcomes.append(
                    FileOutcome(
                        source=f"{path}#L{lineno}",
                        status="failed",
                        reason=item.message,
                        mime=MIME["jsonl"],
                    )
                )
            else:
                docs.append(item)
        if any(o.source.startswith(f"{path}#") for o in run.outcomes):
            # a line that failed this run (a half-written edit) may be a record stored before:
            # which one cannot be told, so --prune keeps every record of this file (issue 26.1)
            run.failed_origins.add(os.path.realpath(path))
        if not docs and not any(o.source.startswith(f"{path}#") for o in run.outcomes):
            raise IngestError("JSONL file has no records", source=str(path))
        return docs

    def _document(self, doc: Document, origin: str, run: _Run) -> None:
        bad = _unencodable(doc)
        if bad is not None:
            # SQLite, the tokenizer and JSON cannot take it: this item fails, the batch goes on
            run.outcomes.append(
                FileOutcome(
                    source=doc.source,
                    status="failed",
                    doc_id=doc.id,
                    mime=doc.mime,
                    reason=bad,
                )
            )
            run.failed_origins.add(origin)
            return
        if doc.id in run.seen_ids:
            run.outcomes.append(
                FileOutcome(
                    source=doc.source,
                    status="failed",
                    doc_id=doc.id,
                    mime=doc.mime,
                    reason=f"duplicate document id {doc.id!r} (first in {run.seen_ids[doc.id]})",
                )
            )
            return
        run.seen_ids[doc.id] = doc.source
        old = run.records.get(doc.id)
        if old is not None and old.content_hash == doc.content_hash:
            run.outcomes.append(
                FileOutcome(
                    source=doc.source,
                    status="skipped",
                    doc_id=doc.id,
                    chunks=old.chunks,
                    mime=doc.mime,
                    reason="unchanged",
                )
            )
            return
        try:
            chunks = self.chunker.chunk(doc)
        except AffidavitError as exc:
            run.outcomes.append(
                FileOutcome(
                    source=doc.source,
                    status="failed",
                    doc_id=doc.id,
                    mime=doc.mime,
                    reason=exc.message,
                )
            )
            return
        if not chunks:
            run.outcomes.append(
                FileOutcome(
                    source=doc.source,
                    status="failed",
                    doc_id=doc.id,
                    mime=doc.mime,
                    reason="no text to index",
                )
            )
            return
        status = "added" if old is None else "replaced"
        outcome = FileOutcome(
            source=doc.source, status=status, doc_id=doc.id, chunks=len(chunks), mime=doc.mime
        )
        run.pending.append(_Pending(doc, chunks, origin, outcome))
        run.pending_chunks += len(chunks)

    # -- batches --------------------------------------------------------------------------------

    def _flush(self, run: _Run) -> None:
        if not run.pending:
            return
        batch, run.pending, run.pending_chunks = run.pending, [], 0
        error = self._write(batch)
        if error is None:
            run.outcomes.extend(p.outcome for p in batch)
            return
        logger.error("batch of %d documents failed: %s", len(batch), error)
        # one bad document must not lose the batch: write the others one by one
        for p in batch:
            single = error if len(batch) == 1 else self._write([p])
            if single is None:
                run.outcomes.append(p.outcome)
                continue
            run.outcomes.append(
                p.outcome.model_copy(update={"status": "failed", "chunks": 0, "reason": single})
            )
            run.failed_origins.add(p.origin)

    def _write(self, batch: list[_Pending]) -> str | None:
        """Embed and store a batch in one transaction; the reason it failed, or None."""
        texts = [f"{c.title}\n{c.text}" if c.title else c.text for p in batch for c in p.chunks]
        try:
            vectors = self.embedder.embed(texts)
            items, pos = [], 0
            for p in batch:
                n = len(p.chunks)
                items.append(
                    DocumentBatchItem(
                        document=p.doc,
                        chunks=tuple(p.chunks),
                        vectors=vectors[pos : pos + n],
                        origin=p.origin,
                    )
                )
                pos += n
            self.store.upsert(items, embedder=self.embedder.name)
        except AffidavitError as exc:
            return exc.message
        except (UnicodeError, TypeError, ValueError) as exc:
            # a tokenizer or driver rejecting a string: that batch failed, the run goes on
            return f"cannot embed or store: {exc}"
        return None

    def _prune(self, paths: Sequence[Path | str], run: _Run) -> None:
        roots = [os.path.realpath(p) for p in paths]
        gone: list[DocRecord] = []
        for rec in self.store.records().values():
            if rec.doc_id in run.seen_ids or any(
                rec.origin == f or rec.origin.startswith(f.rstrip(os.sep) + os.sep)
                for f in run.failed_origins
            ):
                continue  # still there, or unreadable this time (or under such a folder): kept
            if any(
                rec.origin == r or rec.origin.startswith(r.rstrip(os.sep) + os.sep) for r in roots
            ):
                gone.append(rec)
        if gone:
            self.store.delete([r.doc_id for r in gone])
        run.outcomes.extend(
            FileOutcome(
                source=r.origin,
                status="pruned",
                doc_id=r.doc_id,
                reason="no longer present in the input",
            )
            for r in gone
        )


def _unencodable(doc: Document) -> str | None:
    """Why a document cannot be stored as UTF-8 (a lone surrogate somewhere), or None."""
    if find_lone_surrogate(doc.metadata.get("path", "")) or find_lone_surrogate(doc.source):
        return "file name is not valid UTF-8 (rename the file)"
    for name, value in (
        ("id", doc.id),
        ("text", doc.text),
        ("title", doc.title or ""),
        ("metadata", doc.metadata),
    ):
        where = find_lone_surrogate(value, name)
        if where is not None:
            return f"{where} holds a lone surrogate (not valid Unicode text); record skipped"
    return None


def relative_path(path: Path, root: Path | None) -> str:
    """``path`` relative to the ingested ``root`` (a folder), in POSIX form; a file given as the
    root itself is its name.

    Example:
        >>> relative_path(Path("/srv/docs/a/b.pdf"), Path("/srv/docs"))
        'a/b.pdf'
        >>> relative_path(Path("/srv/docs/b.pdf"), Path("/srv/docs/b.pdf"))
        'b.pdf'
    """
    if root is not None and root != path:
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            pass
    return path.name
