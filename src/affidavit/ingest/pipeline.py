"""The ingest run: walk inputs, load, chunk, embed, write to the store, report every outcome.

A file's document is known by its content (its id is derived from the normalised text, see
`content_doc_id`): the same content under another name is
recognised and that name recorded (no new chunks); an edited file's new version replaces the old
one, whose chunks go once no other file holds that content. JSONL records keep their own ids.

Examples:
    >>> from affidavit.core.settings import IngestSettings
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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from affidavit.core.errors import AffidavitError, IngestError, StoreError, StoreUnusableError
from affidavit.core.retrieval import FileOutcome, IngestReport, OutcomeStatus
from affidavit.core.settings import IngestSettings
from affidavit.core.text import find_lone_surrogate
from affidavit.core.types import Chunk, Document
from affidavit.ingest.chunking import SentenceChunker
from affidavit.ingest.detect import MIME, UnsupportedType, detect
from affidavit.ingest.loaders import iter_jsonl, load_docx, load_html, load_pdf, load_text
from affidavit.ingest.walk import walk
from affidavit.retrieve.base import Embedder
from affidavit.store.base import DocRecord, DocumentBatchItem, DocumentOwnerStore, Store

logger = logging.getLogger(__name__)

ProgressFn = Callable[[int, int, str], None]
"""Called as ``progress(files_done, files_total, current_source)``."""

OriginFn = Callable[[Path, Path | None], str]
"""``origin(path, root)``: how the store knows the input file a document came from (its resolved
absolute path by default) - the key by which an edited or vanished file is recognised."""


@dataclass
class _Pending:
    doc: Document
    chunks: list[Chunk]
    origin: str
    outcome: FileOutcome
    # stored documents of the same file this one replaces, in the same write
    replaces: tuple[str, ...] = ()


@dataclass
class _Run:
    records: dict[str, DocRecord]
    outcomes: list[FileOutcome] = field(default_factory=list)
    pending: list[_Pending] = field(default_factory=list)
    pending_chunks: int = 0
    seen_ids: dict[str, str] = field(default_factory=dict)
    failed_origins: set[str] = field(default_factory=set)
    seen_origins: set[str] = field(default_factory=set)
    # (doc id, origin, shown source): more names of content already stored or pending
    names: list[tuple[str, str, str]] = field(default_factory=list)
    # (origin, ids of its documents now): other documents lose that name once these are written
    files: list[tuple[str, set[str]]] = field(default_factory=list)
    # (old doc id, origin): names taken off old versions in the write of their new one
    replaced: set[tuple[str, str]] = field(default_factory=set)
    origins: set[str] = field(init=False)

    def __post_init__(self) -> None:
        self.origins = {o for r in self.records.values() for o in r.origins}

    def stored_from(self, origin: str) -> bool:
        """A document was stored from this input file before the run."""
        return origin in self.origins


class Ingestor:
    """Loads files into a store, incrementally by content hash.

    Args:
        store: destination.
        embedder: embeds chunk texts (its name is recorded in the store).
        settings: the ``ingest`` settings section (chunk size, overlap, file size limit).
        batch_chunks: chunks embedded and committed together (one transaction).
        origin: how the store knows an input file (default: its resolved absolute path; the
            server uses the uploaded file name, so a new upload of an edited file replaces it).
    """

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        settings: IngestSettings | None = None,
        *,
        batch_chunks: int = 256,
        origin: OriginFn | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings or IngestSettings()
        self.chunker = SentenceChunker(self.settings.chunk_size, self.settings.chunk_overlap)
        self.batch_chunks = batch_chunks
        self.origin = origin or (lambda path, root: os.path.realpath(path))
        self.owner = store if isinstance(store, DocumentOwnerStore) else None

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
            StoreUnusableError: the store's disk or database refused a write (full, read-only,
                failing, damaged): the run stops there, nothing is pruned, and every batch
                committed before stays stored (issue 26.8).
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
            try:
                for done, f in enumerate(found, start=1):
                    if progress:
                        progress(done - 1, len(found), str(f.path))
                    if f.error is not None:
                        run.outcomes.append(
                            FileOutcome(source=str(f.path), status="failed", reason=f.error)
                        )
                        # a folder (or file) that could not be listed or opened this time:
                        # what is stored from under it is kept by --prune (issue 26.2)
                        run.failed_origins.add(os.path.realpath(f.path))
                        continue
                    self._file(f.path, run, f.root)
                self._flush(run)
                self._names(run)
                if progress:
                    progress(len(found), len(found), "")
                if prune:
                    self._prune(paths, run)
            except StoreUnusableError as exc:
                raise _stopped(exc, run) from exc
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
        origin = self.origin(path, root)
        run.seen_origins.add(origin)
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
        sole = len(docs) == 1
        for doc in docs:
            self._document(doc, origin, run, sole=sole)
            # flush inside the file too: a large JSONL commits in batches, not all at the end
            if run.pending_chunks >= self.batch_chunks:
                self._flush(run)
        if docs and not any(_is_record(d) for d in docs):
            run.files.append((origin, {d.id for d in docs}))

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
        limit = int(self.settings.max_file_mb * 1024 * 1024)
        too_large = f"above the {self.settings.max_file_mb:g} MB limit (ingest.max_file_mb)"
        if size > limit:
            raise IngestError(f"file is {size / 1048576:.1f} MB, {too_large}", source=str(path))
        if size == 0:
            raise IngestError("file is empty (0 bytes)", source=str(path))
        with path.open("rb") as fh:
            raw = fh.read(limit + 1)  # never more: the file may grow while it is read
        if len(raw) > limit:
            raise IngestError(f"file grew while it was read, {too_large}", source=str(path))
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

    def _document(self, doc: Document, origin: str, run: _Run, *, sole: bool = False) -> None:
        bad = _unencodable(doc)
        if bad is not None:
            # SQLite, the tokenizer and JSON cannot take it: this item fails, the batch goes on
            run.outcomes.append(_outcome(doc, "failed", bad))
            run.failed_origins.add(origin)
            return
        old = run.records.get(doc.id)
        if old is not None and not _is_record(doc):
            old = self._still_stored(old, run)
        first = run.seen_ids.get(doc.id)
        if not _is_record(doc) and (
            first is not None or (old is not None and origin not in old.origins)
        ):
            # the same content as a stored (or just read) document: its new name is recorded
            shown = first if first is not None else (old.source if old else "") or doc.id
            run.names.append((doc.id, origin, doc.source))
            run.seen_ids.setdefault(doc.id, doc.source)
            run.outcomes.append(
                _outcome(
                    doc,
                    "skipped",
                    f"same content as {shown} (this name recorded)",
                    chunks=old.chunks if old is not None else 0,
                )
            )
            return
        if doc.id in run.seen_ids:
            run.outcomes.append(
                _outcome(
                    doc,
                    "failed",
                    f"duplicate document id {doc.id!r} (first in {run.seen_ids[doc.id]})",
                )
            )
            return
        if _is_record(doc) and old is not None and origin not in old.origins:
            self._record_of_another_file(doc, old, origin, run)
            return
        run.seen_ids[doc.id] = doc.source
        if old is not None and old.content_hash == doc.content_hash:
            run.outcomes.append(_outcome(doc, "skipped", "unchanged", chunks=old.chunks))
            return
        try:
            chunks = self.chunker.chunk(doc)
        except AffidavitError as exc:
            run.outcomes.append(_outcome(doc, "failed", exc.message))
            return
        if not chunks:
            run.outcomes.append(_outcome(doc, "failed", "no text to index"))
            return
        replaces = old is not None or (not _is_record(doc) and run.stored_from(origin))
        status: OutcomeStatus = "replaced" if replaces else "added"
        outcome = _outcome(doc, status, _left_out(doc), chunks=len(chunks))
        # the one document of an edited file takes the file's name off its old version in the
        # same write, so no search finds both (they were two writes, the old one at the end of
        # the run; a crash between them left both searchable)
        # (not one this run records under another name: that name comes first, then this
        # one goes, as before)
        older: tuple[str, ...] = ()
        if sole and self.owner is not None and not _is_record(doc):
            named = {d for d, _, _ in run.names}
            older = tuple(
                sorted(
                    r.doc_id
                    for r in run.records.values()
                    if r.doc_id != doc.id and origin in r.origins and r.doc_id not in named
                )
            )
        run.pending.append(_Pending(doc, chunks, origin, outcome, older))
        run.pending_chunks += len(chunks)

    def _still_stored(self, old: DocRecord, run: _Run) -> DocRecord | None:
        """A stored document whose content another file now holds: one that an edited file's
        new version is about to replace keeps its name until that name is recorded (a pending
        write no longer replaces it); one already replaced earlier in this run and gone (None)
        is stored again."""
        for p in run.pending:
            if old.doc_id in p.replaces:
                p.replaces = tuple(d for d in p.replaces if d != old.doc_id)
        if any(d == old.doc_id for d, _ in run.replaced):
            return old if self.store.get_document(old.doc_id) is not None else None
        return old

    @staticmethod
    def _record_of_another_file(doc: Document, old: DocRecord, origin: str, run: _Run) -> None:
        """A record whose id is stored from another file: the same record (a renamed or copied
        JSONL file) gets this file's name, so --prune of the old name keeps it; other text under
        that id fails, and the stored document stays (it was replaced, and its file's text lost)."""
        if old.content_hash != doc.content_hash:
            run.outcomes.append(
                _outcome(
                    doc,
                    "failed",
                    f"id {doc.id!r} is already used by {old.source or old.origin} (another "
                    "file); a record replaces only a record of the same file: give it another "
                    "id, or delete that document first",
                )
            )
            run.failed_origins.add(origin)
            return
        run.seen_ids[doc.id] = doc.source
        run.names.append((doc.id, origin, doc.source))
        run.outcomes.append(
            _outcome(
                doc,
                "skipped",
                f"unchanged, also in {old.source or old.origin} (this name recorded)",
                chunks=old.chunks,
            )
        )

    # -- batches --------------------------------------------------------------------------------

    def _flush(self, run: _Run) -> None:
        if not run.pending:
            return
        batch, run.pending, run.pending_chunks = run.pending, [], 0
        error = self._write(batch)
        if error is None:
            run.outcomes.extend(p.outcome for p in batch)
            run.replaced.update((d, p.origin) for p in batch for d in p.replaces)
            return
        logger.error("batch of %d documents failed: %s", len(batch), error)
        # one bad document must not lose the batch: write the others one by one
        for p in batch:
            single = error if len(batch) == 1 else self._write([p])
            if single is None:
                run.outcomes.append(p.outcome)
                run.replaced.update((d, p.origin) for d in p.replaces)
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
                        replaces=p.replaces,
                    )
                )
                pos += n
            self.store.upsert(items, embedder=self.embedder.name)
        except StoreUnusableError:
            raise  # a full disk refuses every later document too: the run stops (issue 26.8)
        except AffidavitError as exc:
            return exc.message
        except (UnicodeError, TypeError, ValueError, OverflowError) as exc:
            # a tokenizer or driver rejecting a value (a string, an integer past SQLite's 64
            # bits in a record's metadata): that batch failed, the run goes on
            return f"cannot embed or store: {exc}"
        return None

    def _names(self, run: _Run) -> None:
        """Record the new names of content already stored, then take each file's name off the
        documents it no longer holds (an edited file's old version; deleted when nameless)."""
        if self.owner is None:
            return
        # each of these was read whole from its input (a record of a JSONL file, even when
        # another line of that file failed): its name is recorded
        for doc_id, origin, source in run.names:
            self.owner.add_name(doc_id, origin, source)
        moved = [
            (rec.doc_id, origin)
            for origin, ids in run.files
            if origin not in run.failed_origins
            for rec in run.records.values()
            if rec.doc_id not in ids
            and origin in rec.origins
            and (rec.doc_id, origin) not in run.replaced
        ]
        for doc_id in self.owner.remove_names(moved, reason="replaced"):
            rec = run.records[doc_id]
            logger.info("document %s replaced by a new version of %s", doc_id, rec.source)

    def _prune(self, paths: Sequence[Path | str], run: _Run) -> None:
        roots = [os.path.realpath(p) for p in paths]

        def under(origin: str, folders: Iterable[str]) -> bool:
            return any(origin == f or origin.startswith(f.rstrip(os.sep) + os.sep) for f in folders)

        vanished: list[tuple[DocRecord, str, str]] = []  # (record, origin, shown name)
        for rec in self.store.records().values():
            seen = rec.doc_id in run.seen_ids
            shown = {rec.origin: rec.source, **{a.origin: a.source for a in rec.aliases}}
            vanished += [
                (rec, o, shown[o] or o)
                for o in rec.origins
                # still there, or unreadable this time (or under such a folder): kept
                if under(o, roots)
                and not under(o, run.failed_origins)
                and not (seen and o in run.seen_origins)
            ]
        if self.owner is not None:
            deleted = set(
                self.owner.remove_names([(r.doc_id, o) for r, o, _ in vanished], reason="pruned")
            )
        else:  # a store that keeps one name per document: it goes with that name
            vanished = [v for v in vanished if v[1] == v[0].origin]
            deleted = {r.doc_id for r, _, _ in vanished}
            if deleted:
                self.store.delete(sorted(deleted))
        run.outcomes.extend(
            FileOutcome(
                source=name,
                status="pruned",
                doc_id=rec.doc_id,
                reason="no longer present in the input"
                if rec.doc_id in deleted
                else "no longer present in the input (the same content is still stored under "
                "another name)",
            )
            for rec, _, name in vanished
        )


def _stopped(exc: StoreUnusableError, run: _Run) -> StoreUnusableError:
    """The error a stopped run ends with: why, and what of the run was stored and kept."""
    stored = sum(o.status in ("added", "replaced") for o in run.outcomes)
    return StoreUnusableError(
        f"{exc.message}; ingest stopped: {stored} documents it stored before that are kept, "
        "nothing was pruned (run it again once the store can be written: what is stored is "
        "skipped)",
        source=exc.source,
        stored=stored,
    )


def _outcome(doc: Document, status: OutcomeStatus, reason: str, chunks: int = 0) -> FileOutcome:
    """What happened to one read document, in the report."""
    return FileOutcome(
        source=doc.source, status=status, doc_id=doc.id, chunks=chunks, mime=doc.mime, reason=reason
    )


def _left_out(doc: Document) -> str:
    """What of a stored file could not be read as text, or was left out on purpose (said in
    its outcome), or ""."""
    if _is_record(doc):  # a JSONL record's metadata is its writer's, not the loader's
        return ""
    said = []
    blank = doc.metadata.get("pages_without_text")
    if isinstance(blank, str) and blank:
        one = blank.isdigit()
        said.append(
            f"page{'' if one else 's'} {blank} {'has' if one else 'have'} no extractable text "
            "(scanned images? run OCR first): not searchable, not citable"
        )
    left_out = doc.metadata.get("left_out")
    if isinstance(left_out, str) and left_out:
        said.append(f"{left_out} left out (not searchable, not citable)")
    return "; ".join(said)


def _is_record(doc: Document) -> bool:
    """A JSONL record: known by its own id, not by its content."""
    return doc.mime == MIME["jsonl"]


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

    Examples:
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
