"""The default store: one folder; SQLite (WAL) for documents, chunks, vectors; indexes on disk.

Layout of the folder (default ``.affidavit``)::

    store.sqlite        documents, chunks (text, offsets, metadata, terms, float32 vector blob),
                        names (more files a document's content came from), deleted_chunks
    index/gen-<G>/      derived from generation G: rowids.npy, vectors.npy, bm25/ (bm25s), READY
                        (READY: row counts and the size and sha256 of every file beside it)
    writer.lock         held (flock) by the one process that writes

SQLite is the source of truth. Every write is one transaction that also bumps ``generation``;
derived indexes are stamped with the generation they were built from and rebuilt when stale, and
checked against READY (counts, sizes, checksums) when opened: a damaged file is never searched, the
index is rebuilt from the tables instead. A generation is fsynced before it is published. So a
``kill -9`` mid-ingest leaves the documents committed so far, whole; the next reader rebuilds the
index and the next ingest skips what is already there. Readers take a WAL snapshot per search and
never block the writer.

Examples:
    >>> store = LocalStore(tmp_path / ".affidavit")  # doctest: +SKIP
    >>> store.count()  # doctest: +SKIP
    (0, 0)
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from affidavit.core.errors import StoreError, StoreUnusableError
from affidavit.core.retrieval import DeletedChunk, SearchFilters
from affidavit.core.types import Chunk, Document
from affidavit.retrieve.base import Vectors
from affidavit.retrieve.text import Analyzer
from affidavit.store.base import (
    DeletionReason,
    DocName,
    DocRecord,
    DocumentBatchItem,
    DocumentScores,
    ScoredChunk,
    refuses_every_write,
)

logger = logging.getLogger(__name__)


def _bm25s() -> Any:
    import bm25s

    # bm25s sets its own logger to DEBUG on import, which floods any application's log
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    return bm25s


SCHEMA_VERSION = "1"
INDEX_LAYOUT = 3  # bump when the files under index/gen-<G>/ change (3: READY holds checksums)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    origin TEXT NOT NULL,
    source TEXT NOT NULL,
    title TEXT,
    mime TEXT NOT NULL,
    text TEXT NOT NULL,
    metadata TEXT NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    rowid INTEGER PRIMARY KEY AUTOINCREMENT,
    chunk_id TEXT NOT NULL UNIQUE,
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    start INTEGER,
    end INTEGER,
    text TEXT NOT NULL,
    url TEXT,
    title TEXT,
    metadata TEXT NOT NULL,
    domain TEXT,
    date TEXT,
    terms TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_id);
CREATE INDEX IF NOT EXISTS documents_origin ON documents(origin);
CREATE TABLE IF NOT EXISTS names (
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    origin TEXT NOT NULL,
    source TEXT NOT NULL,
    added_at REAL NOT NULL,
    PRIMARY KEY (doc_id, origin)
);
CREATE TABLE IF NOT EXISTS deleted_chunks (
    chunk_id TEXT PRIMARY KEY,
    doc_id TEXT NOT NULL,
    source TEXT NOT NULL,
    deleted_at REAL NOT NULL,
    reason TEXT NOT NULL
);
"""

_CHUNK_COLS = "rowid, chunk_id, doc_id, start, end, text, url, title, metadata"
#: The columns of a chunk row as `chunk_row` builds it (everything but the rowid).
CHUNK_ROW_COLS = (
    "chunk_id, doc_id, idx, start, end, text, url, title, metadata, domain, date, terms, vector"
)


def chunk_date(meta: dict[str, Any]) -> str | None:
    """The ISO date a chunk is filtered by (published_at, date or year; year = 1 January)."""
    from affidavit.ingest.loaders import iso_date

    for key in ("published_at", "date", "year"):
        if key in meta:
            d = iso_date(meta[key])
            if d:
                return d
    return None


def chunk_row(
    analyzer: Analyzer, doc_id: str, idx: int, c: Chunk, vector: np.ndarray
) -> tuple[Any, ...]:
    """The values of one chunk row, in the order of `CHUNK_ROW_COLS`."""
    return (
        c.id,
        doc_id,
        idx,
        c.start,
        c.end,
        c.text,
        c.url,
        c.title,
        json.dumps(c.metadata, ensure_ascii=False, default=str),
        c.metadata.get("domain"),
        chunk_date(c.metadata),
        " ".join(analyzer.tokens(c.text if not c.title else f"{c.title}\n{c.text}")),
        np.ascontiguousarray(vector, dtype=np.float32).tobytes(),
    )


def take_writer_lock(folder: Path) -> int:
    """Take ``folder/writer.lock`` (flock, not blocking); the file descriptor that holds it.

    Raises:
        StoreError: another process holds it, or the folder cannot be written.
    """
    try:
        fd = os.open(folder / "writer.lock", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StoreError(
            f"cannot write to store folder {folder}: {exc.strerror or exc}", source=str(folder)
        ) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        os.close(fd)
        raise StoreError("another process is writing to this store", source=str(folder)) from exc
    return fd


def release_writer_lock(fd: int) -> None:
    """Release a lock taken by `take_writer_lock`."""
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)


def _rrf_scores(rankings: list[tuple[np.ndarray, bool]], n: int, k: int) -> np.ndarray:
    """RRF over the top ``n`` of each score array (positive=True keeps only scores > 0)."""
    out = np.zeros(len(rankings[0][0]), dtype=np.float64)
    for scores, positive in rankings:
        valid = np.flatnonzero(scores > 0 if positive else np.isfinite(scores))
        if valid.size > n:
            valid = valid[np.argpartition(-scores[valid], n - 1)[:n]]
        top = valid[np.argsort(-scores[valid], kind="stable")]
        out[top] += 1.0 / (k + np.arange(1, top.size + 1))
    return out


def _sha256(fh: Any) -> str:
    h = hashlib.sha256()
    for block in iter(lambda: fh.read(1 << 20), b""):
        h.update(block)
    return h.hexdigest()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _seal(folder: Path) -> dict[str, dict[str, Any]]:
    """fsync every file and folder under ``folder``; the size and sha256 of each file.

    Reading the files back after writing them means READY describes exactly what is on disk.
    """
    files: dict[str, dict[str, Any]] = {}
    for p in sorted(folder.rglob("*")):
        if p.is_dir():
            _fsync_dir(p)
            continue
        with p.open("rb") as fh:
            digest = _sha256(fh)
            os.fsync(fh.fileno())
        files[p.relative_to(folder).as_posix()] = {"bytes": p.stat().st_size, "sha256": digest}
    _fsync_dir(folder)
    return files


def _file_problems(folder: Path, files: Any, need_bm25: bool) -> list[str]:
    """What disagrees between the files under ``folder`` and READY's list of them."""
    if not isinstance(files, dict):
        return ["READY lists no files"]
    need = ["rowids.npy", "vectors.npy", "chunk_doc.npy", "doc_vectors.npy", "doc_ids.json"]
    problems = [f"{name} is not listed in READY" for name in need if name not in files]
    for prefix in ("bm25/", "doc_bm25/") if need_bm25 else ():
        if not any(isinstance(k, str) and k.startswith(prefix) for k in files):
            problems.append(f"{prefix} is not listed in READY")
    on_disk = {
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and p != folder / "READY"
    }
    problems += [f"{name}: not listed in READY" for name in sorted(on_disk - set(files))]
    for name, want in sorted(files.items()):
        p = folder / str(name)
        rel = Path(str(name))
        if not isinstance(want, dict) or rel.is_absolute() or ".." in rel.parts:
            problems.append(f"READY entry {name!r} is malformed")
            continue
        try:
            size = p.stat().st_size
            if size != want.get("bytes"):
                problems.append(f"{name}: {size} bytes, READY says {want.get('bytes')}")
                continue
            with p.open("rb") as fh:
                digest = _sha256(fh)
        except OSError as exc:
            problems.append(f"{name}: {exc.strerror or exc}")
            continue
        if digest != want.get("sha256"):
            problems.append(f"{name}: checksum differs from READY")
    return problems


@dataclass
class _Index:
    generation: int
    rowids: np.ndarray  # int64, sorted
    vectors: np.ndarray  # float32 (n, dim)
    bm25: Any  # bm25s.BM25 or None when empty
    chunk_doc: np.ndarray  # int32 (n,): index into doc_ids of each chunk's document
    doc_ids: list[str]
    doc_vectors: np.ndarray  # float32 (docs, dim): normalised mean of the document's chunks
    doc_bm25: Any  # bm25s.BM25 over whole-document terms, or None when empty


class LocalStore:
    """SQLite + numpy + bm25s store in one folder.

    Args:
        path: the store folder (created when missing, unless ``read_only``).
        analyzer: lexical analyser; must match the one the store was built with.
        read_only: open without creating or writing anything (derived indexes are built in
            memory when stale). The database is opened ``mode=ro``; in a folder this process
            cannot write (where SQLite cannot add its ``-shm`` file), ``immutable=1``.

    Raises:
        StoreError: the folder cannot be created or the database is unreadable/corrupt.
    """

    def __init__(
        self,
        path: Path | str,
        analyzer: Analyzer | None = None,
        *,
        read_only: bool = False,
        bm25_method: str = "lucene",
        k1: float = 1.2,
        b: float = 0.75,
    ) -> None:
        self.path = Path(path)
        self.analyzer = analyzer or Analyzer()
        self.read_only = read_only
        # one connection shared by threads (check_same_thread=False): serialise its use
        self._mutex = threading.RLock()
        self.bm25_params = {"method": bm25_method, "k1": k1, "b": b}
        db = self.path / "store.sqlite"
        if read_only and not db.exists():
            raise StoreError(
                f"no store at {self.path} (run `affidavit ingest` first)", source=str(self.path)
            )
        try:
            if not read_only:
                self.path.mkdir(parents=True, exist_ok=True)
            self._db = self._connect(db)
            self._refuse_emptied(db)
            if not read_only:
                self._db.execute("PRAGMA journal_mode = WAL")
                self._db.execute("PRAGMA synchronous = NORMAL")
                self._db.executescript(_SCHEMA)
                self._init_meta()
            self._db.execute("PRAGMA foreign_keys = ON")
        except sqlite3.DatabaseError as exc:
            damaged = any(k in str(exc) for k in ("malformed", "not a database", "corrupt"))
            hint = " (the database is damaged: see `affidavit store check`)" if damaged else ""
            raise StoreError(f"cannot open store database: {exc}{hint}", source=str(db)) from exc
        except OSError as exc:  # a file where the folder should be, no permission
            raise StoreError(
                f"cannot open store folder {self.path}: {exc.strerror or exc}",
                source=str(self.path),
            ) from exc
        stored = self._meta("analyzer")
        if stored is not None and stored != self.analyzer.name:
            raise StoreError(
                f"store was indexed with analyzer {stored!r}, not {self.analyzer.name!r}",
                source=str(self.path),
            )
        self._index: _Index | None = None
        self._lock_fd: int | None = None

    def _refuse_emptied(self, db: Path) -> None:
        """A database without the store's tables is a new store only where nothing was ever
        written: with an index generation on disk it was emptied or replaced (a 0-byte file
        after a failed copy or restore), and making new tables there would hide that every
        document was lost behind an empty store that ingest fills again."""
        tables = {
            str(name)
            for (name,) in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        if {"meta", "documents", "chunks"} <= tables:
            return
        written = [
            g
            for g in (self.path / "index").glob("gen-*")
            if g.name[4:].isdigit() and g.name != "gen-0"
        ]
        if written:
            newest = max(int(g.name[4:]) for g in written)
            raise sqlite3.DatabaseError(
                f"the database holds no store tables ({db.stat().st_size} bytes), yet the store's "
                f"index was written up to generation {newest}: the database was emptied or "
                "replaced and its documents are lost; restore the store folder from a backup, or "
                "move it aside and ingest the documents again"
            )
        if self.read_only:
            raise StoreError(
                f"no store at {self.path}: its database holds no store tables (run "
                "`affidavit ingest` first)",
                source=str(self.path),
            )

    def _connect(self, db: Path) -> sqlite3.Connection:
        if not self.read_only:
            return self._open_uri(f"file:{db}")
        try:
            con = self._open_uri(f"file:{db}?mode=ro")
            con.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return con
        except sqlite3.OperationalError:
            wal = db.with_name(db.name + "-wal")
            if os.access(self.path, os.W_OK) or (wal.exists() and wal.stat().st_size > 0):
                raise  # not the read-only folder case (or unmerged writes only SQLite can read)
        # a read-only folder: SQLite cannot create the -shm file a WAL reader needs. With no
        # unmerged WAL the file alone is the whole database and no writer can be at work here
        # (it could not have created its own -wal), so reading it as immutable is safe.
        logger.debug("store folder %s is read-only: opening the database immutable", self.path)
        return self._open_uri(f"file:{db}?mode=ro&immutable=1")

    @staticmethod
    def _open_uri(uri: str) -> sqlite3.Connection:
        con = sqlite3.connect(
            uri, uri=True, isolation_level=None, timeout=30.0, check_same_thread=False
        )
        con.execute("PRAGMA busy_timeout = 30000")
        return con

    # -- metadata ---------------------------------------------------------------------------

    def _init_meta(self) -> None:
        with self._write():
            for key, value in (
                ("schema", SCHEMA_VERSION),
                ("generation", "0"),
                ("analyzer", self.analyzer.name),
            ):
                self._db.execute("INSERT OR IGNORE INTO meta VALUES (?, ?)", (key, value))

    def _meta(self, key: str) -> str | None:
        try:
            with self._mutex:
                row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        except sqlite3.OperationalError:
            return None
        return None if row is None else str(row[0])

    def generation(self) -> int:
        """The write generation (bumped by every committed write)."""
        return int(self._meta("generation") or 0)

    def embedder(self) -> str | None:
        """Name of the embedder whose vectors the store holds."""
        return self._meta("embedder")

    def config(self) -> dict[str, Any]:
        """The effective configuration."""
        return {
            "kind": "local",
            "path": str(self.path),
            "analyzer": self.analyzer.name,
            "bm25": self.bm25_params,
        }

    # -- transactions -----------------------------------------------------------------------

    @contextlib.contextmanager
    def _write(self) -> Iterator[None]:
        if self.read_only:
            raise StoreError("store is open read-only", source=str(self.path))
        with self._mutex:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.DatabaseError as exc:
                raise self._write_error(exc) from exc
            try:
                yield
                self._db.execute("COMMIT")
            except BaseException as exc:
                # a full disk or an I/O error has SQLite roll back on its own (also at COMMIT):
                # a second ROLLBACK would fail and hide why the write failed
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.DatabaseError):
                    raise self._write_error(exc) from exc
                raise

    def _write_error(self, exc: sqlite3.DatabaseError) -> StoreError:
        """A failed write as a typed error: `StoreUnusableError` when the disk or the database
        file refuses every write (full, read-only, failing, damaged; issue 26.8, 26.9)."""
        if not refuses_every_write(exc):
            return StoreError(f"cannot write to store: {exc}", source=str(self.path))
        code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
        damaged = code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)
        hint = (
            " (the database is damaged: `affidavit store check` lists what is, `affidavit store "
            "rebuild` salvages it)"
            if damaged
            else ""
        )
        return StoreUnusableError(
            f"cannot write to store {self.path}: {exc}{hint}", source=str(self.path)
        )

    @contextlib.contextmanager
    def _snapshot(self) -> Iterator[None]:
        with self._mutex:
            if self._db.in_transaction:
                yield
                return
            self._db.execute("BEGIN")
            try:
                yield
            finally:
                self._db.execute("COMMIT")

    def lock_for_writing(self, *, check_pages: bool = True) -> None:
        """Take the store's writer lock (one ingest at a time; readers are never blocked).

        With ``check_pages``, SQLite's quick check of every page runs first: a write into a
        damaged database may damage it further, so none is made (``store rebuild``, which
        salvages such a database, passes False).

        Raises:
            StoreError: another process is writing to this store, or its database is damaged.
        """
        if self._lock_fd is not None:
            return
        fd = take_writer_lock(self.path)
        try:
            damage = self._page_damage() if check_pages else ""
        except BaseException:
            release_writer_lock(fd)
            raise
        if damage:
            release_writer_lock(fd)
            raise StoreError(
                f"the store database is damaged ({damage}); nothing was written: `affidavit "
                "store check` lists what is, `affidavit store rebuild` salvages it",
                source=str(self.path / "store.sqlite"),
            )
        self._lock_fd = fd

    def _page_damage(self) -> str:
        """What SQLite's quick check finds wrong with the database's pages, or ""."""
        with self._mutex:
            try:
                rows = self._db.execute("PRAGMA quick_check(3)").fetchall()
            except sqlite3.DatabaseError as exc:  # a page too damaged to even be checked
                return str(exc)
        return "; ".join(str(r[0]) for r in rows if r[0] != "ok")

    def unlock(self) -> None:
        """Release the writer lock."""
        if self._lock_fd is not None:
            release_writer_lock(self._lock_fd)
            self._lock_fd = None

    # -- reads --------------------------------------------------------------------------------

    def _has_table(self, name: str) -> bool:
        """A store written before a table existed, opened read-only, lacks it."""
        row = self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        ).fetchone()
        return row is not None

    def records(self) -> dict[str, DocRecord]:
        """Every stored document's record, by doc id."""
        with self._snapshot():
            rows = self._db.execute(
                "SELECT d.doc_id, d.content_hash, d.origin, "
                "(SELECT COUNT(*) FROM chunks c WHERE c.doc_id = d.doc_id), d.source, d.title, "
                "d.mime FROM documents d"
            ).fetchall()
            aliases: dict[str, list[DocName]] = {}
            if self._has_table("names"):
                for doc_id, origin, source in self._db.execute(
                    "SELECT doc_id, origin, source FROM names ORDER BY added_at, rowid"
                ):
                    aliases.setdefault(doc_id, []).append(DocName(origin=origin, source=source))
        return {
            r[0]: DocRecord(
                doc_id=r[0],
                content_hash=r[1],
                origin=r[2],
                chunks=r[3],
                source=r[4],
                title=r[5],
                mime=r[6],
                aliases=tuple(aliases.get(r[0], ())),
            )
            for r in rows
        }

    def get_document(self, doc_id: str) -> Document | None:
        """A stored document, or None."""
        with self._snapshot():
            row = self._db.execute(
                "SELECT doc_id, text, source, title, mime, metadata, content_hash "
                "FROM documents WHERE doc_id = ?",
                (doc_id,),
            ).fetchone()
        if row is None:
            return None
        return Document(
            id=row[0],
            text=row[1],
            source=row[2],
            title=row[3],
            mime=row[4],
            metadata=json.loads(row[5]),
            content_hash=row[6],
        )

    def count(self) -> tuple[int, int]:
        """(documents, chunks) stored."""
        with self._snapshot():
            docs = self._db.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
            chunks = self._db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        return int(docs), int(chunks)

    @staticmethod
    def _row_chunk(row: Sequence[Any]) -> Chunk:
        return Chunk(
            id=row[1],
            doc_id=row[2],
            start=row[3],
            end=row[4],
            text=row[5],
            url=row[6],
            title=row[7],
            metadata=json.loads(row[8]),
        )

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """Stored chunks by id, in the order given (unknown ids left out)."""
        found: dict[str, Chunk] = {}
        ids = list(dict.fromkeys(chunk_ids))
        with self._snapshot():
            for b in range(0, len(ids), 500):
                part = ids[b : b + 500]
                marks = ",".join("?" * len(part))
                q = f"SELECT {_CHUNK_COLS} FROM chunks WHERE chunk_id IN ({marks})"
                for row in self._db.execute(q, part):
                    found[row[1]] = self._row_chunk(row)
        return [found[i] for i in ids if i in found]

    def _chunks_by_rowid(self, rowids: Sequence[int]) -> dict[int, Chunk]:
        if not rowids:
            return {}
        q = f"SELECT {_CHUNK_COLS} FROM chunks WHERE rowid IN ({','.join('?' * len(rowids))})"
        return {int(r[0]): self._row_chunk(r) for r in self._db.execute(q, list(rowids))}

    # -- writes -------------------------------------------------------------------------------

    def upsert(self, items: Sequence[DocumentBatchItem], *, embedder: str) -> None:
        """Atomically add or replace these documents, their chunks and vectors."""
        if not items:
            return
        dims = {int(np.asarray(it.vectors).shape[1]) for it in items if len(it.chunks)}
        try:
            with self._write():
                stored = self._meta("embedder")
                stored_dim = self._meta("dim")
                if stored is not None and stored != embedder:
                    raise StoreError(
                        f"store holds vectors of {stored!r}; refusing vectors of {embedder!r} "
                        "(use another --store or re-ingest into an empty one)",
                        source=str(self.path),
                    )
                if len(dims) > 1 or (stored_dim and dims and int(stored_dim) not in dims):
                    raise StoreError(
                        f"vector dimension mismatch: {dims} vs {stored_dim}", source=str(self.path)
                    )
                if stored is None:
                    self._db.execute(
                        "INSERT OR REPLACE INTO meta VALUES ('embedder', ?)", (embedder,)
                    )
                if not stored_dim and dims:
                    self._db.execute(
                        "INSERT OR REPLACE INTO meta VALUES ('dim', ?)", (str(dims.pop()),)
                    )
                now = time.time()
                for it in items:
                    self._write_one(it, now)
                # the old versions go in the same transaction: a reader's snapshot holds the
                # old documents or the new ones, never both
                written = {it.document.id for it in items}
                self._remove_name_rows(
                    [(d, it.origin) for it in items for d in it.replaces if d not in written],
                    "replaced",
                    now,
                )
                self._bump()
        except UnicodeEncodeError as exc:  # a lone surrogate: the transaction was rolled back
            raise StoreError(
                f"cannot store text that is not valid Unicode: {exc.reason}", source=str(self.path)
            ) from exc

    def _write_one(self, it: DocumentBatchItem, now: float) -> None:
        doc = it.document
        vecs = np.ascontiguousarray(np.asarray(it.vectors, dtype=np.float32))
        if vecs.shape[0] != len(it.chunks):
            raise StoreError(
                f"{len(it.chunks)} chunks but {vecs.shape[0]} vectors", source=doc.source
            )
        self._tombstone("doc_id = ?", (doc.id,), "replaced", now)
        self._db.execute("DELETE FROM chunks WHERE doc_id = ?", (doc.id,))
        origin, source = it.origin, doc.source
        if self._db.execute(
            "SELECT 1 FROM names WHERE doc_id = ? AND origin = ?", (doc.id, origin)
        ).fetchone():
            # a new version from one of its other names: the name it is shown under stays
            origin, source = self._db.execute(
                "SELECT origin, source FROM documents WHERE doc_id = ?", (doc.id,)
            ).fetchone()
        # an upsert, not INSERT OR REPLACE: a replaced row would take its names with it
        self._db.execute(
            "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(doc_id) DO "
            "UPDATE SET content_hash = excluded.content_hash, origin = excluded.origin, "
            "source = excluded.source, title = excluded.title, mime = excluded.mime, "
            "text = excluded.text, metadata = excluded.metadata, updated_at = excluded.updated_at",
            (
                doc.id,
                doc.content_hash,
                origin,
                source,
                doc.title,
                doc.mime,
                doc.text,
                json.dumps(doc.metadata, ensure_ascii=False, default=str),
                now,
            ),
        )
        rows = [
            chunk_row(self.analyzer, doc.id, i, c, v)
            for i, (c, v) in enumerate(zip(it.chunks, vecs, strict=True))
        ]
        self._db.executemany(
            f"INSERT INTO chunks ({CHUNK_ROW_COLS}) VALUES ({', '.join('?' * 13)})", rows
        )
        # a chunk stored again (the same content ingested after a delete) is no longer removed
        self._db.execute(
            "DELETE FROM deleted_chunks WHERE chunk_id IN "
            "(SELECT chunk_id FROM chunks WHERE doc_id = ?)",
            (doc.id,),
        )

    def _tombstone(self, where: str, args: tuple[Any, ...], reason: str, now: float) -> None:
        """Remember the chunks matching ``where`` as removed (inside the caller's transaction)."""
        self._db.execute(
            "INSERT OR REPLACE INTO deleted_chunks "
            "SELECT c.chunk_id, c.doc_id, d.source, ?, ? FROM chunks c "
            f"JOIN documents d ON d.doc_id = c.doc_id WHERE c.{where}",
            (now, reason, *args),
        )

    def _bump(self) -> None:
        self._db.execute(
            "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'"
        )

    def delete(self, doc_ids: Sequence[str], *, reason: DeletionReason = "deleted") -> int:
        """Remove documents, their names and chunks (so their rows of the lexical index and the
        vector matrix, rebuilt from the tables); returns how many were removed. Each removed
        chunk is remembered (`deleted_chunks`)."""
        if not doc_ids:
            return 0
        with self._write():
            removed = self._delete_rows(doc_ids, reason, time.time())
            self._bump()
        return removed

    def _delete_rows(self, doc_ids: Sequence[str], reason: str, now: float) -> int:
        removed = 0
        for d in doc_ids:
            self._tombstone("doc_id = ?", (d,), reason, now)
            self._db.execute("DELETE FROM chunks WHERE doc_id = ?", (d,))
            self._db.execute("DELETE FROM names WHERE doc_id = ?", (d,))
            removed += self._db.execute("DELETE FROM documents WHERE doc_id = ?", (d,)).rowcount
        return removed

    def add_name(self, doc_id: str, origin: str, source: str) -> bool:
        """Record another file the document's content was ingested from; False when the
        document is unknown or already has that name."""
        with self._write():
            row = self._db.execute(
                "SELECT origin FROM documents WHERE doc_id = ?", (doc_id,)
            ).fetchone()
            if row is None or row[0] == origin:
                return False
            cur = self._db.execute(
                "INSERT OR IGNORE INTO names VALUES (?, ?, ?, ?)",
                (doc_id, origin, source, time.time()),
            )
            return cur.rowcount > 0

    def remove_names(
        self, names: Sequence[tuple[str, str]], *, reason: DeletionReason = "replaced"
    ) -> list[str]:
        """Take names off documents; delete those left with none. Returns the deleted ids."""
        if not names:
            return []
        with self._write():
            gone = self._remove_name_rows(names, reason, time.time())
            if gone:
                self._bump()
        return gone

    def _remove_name_rows(
        self, names: Sequence[tuple[str, str]], reason: str, now: float
    ) -> list[str]:
        """`remove_names` inside the caller's transaction (which bumps the generation)."""
        gone: list[str] = []
        for doc_id, origin in names:
            self._db.execute("DELETE FROM names WHERE doc_id = ? AND origin = ?", (doc_id, origin))
            row = self._db.execute(
                "SELECT origin FROM documents WHERE doc_id = ?", (doc_id,)
            ).fetchone()
            if row is None or row[0] != origin:
                continue
            other = self._db.execute(
                "SELECT origin, source FROM names WHERE doc_id = ? "
                "ORDER BY added_at, rowid LIMIT 1",
                (doc_id,),
            ).fetchone()
            if other is None:
                self._delete_rows([doc_id], reason, now)
                gone.append(doc_id)
                continue
            self._db.execute(
                "UPDATE documents SET origin = ?, source = ? WHERE doc_id = ?",
                (other[0], other[1], doc_id),
            )
            self._db.execute(
                "DELETE FROM names WHERE doc_id = ? AND origin = ?", (doc_id, other[0])
            )
        return gone

    def deleted_chunks(self, chunk_ids: Sequence[str]) -> dict[str, DeletedChunk]:
        """Removal records of those chunks that were removed (and not stored again)."""
        out: dict[str, DeletedChunk] = {}
        ids = list(dict.fromkeys(chunk_ids))
        with self._snapshot():
            if not ids or not self._has_table("deleted_chunks"):
                return out
            for b in range(0, len(ids), 500):
                part = ids[b : b + 500]
                q = (
                    "SELECT chunk_id, doc_id, source, deleted_at, reason FROM deleted_chunks "
                    f"WHERE chunk_id IN ({','.join('?' * len(part))})"
                )
                for cid, doc_id, source, at, why in self._db.execute(q, part):
                    out[cid] = DeletedChunk(
                        chunk_id=cid,
                        doc_id=doc_id,
                        source=source,
                        deleted_at=datetime.fromtimestamp(at, UTC),
                        reason=why,
                    )
        return out

    # -- derived indexes ----------------------------------------------------------------------

    def _gen_dir(self, generation: int) -> Path:
        return self.path / "index" / f"gen-{generation}"

    def refresh(self) -> None:
        """Build (and persist, when writable) the indexes of the current generation."""
        self._current_index()

    def rebuild_index(self) -> int:
        """Rebuild the derived index files of the current generation from the tables.

        Every persisted generation is replaced; nothing in the database changes. Returns the
        number of chunks indexed.

        Raises:
            StoreError: the store is open read-only, or the index cannot be written.
        """
        if self.read_only:
            raise StoreError("store is open read-only", source=str(self.path))
        with self._snapshot():
            index = self._build_index(self.generation())
        if not self._persist_index(index):
            raise StoreError(
                f"cannot write the index under {self.path / 'index'}", source=str(self.path)
            )
        self._index = index
        return len(index.rowids)

    def _current_index(self) -> _Index:
        # one snapshot: the generation, the counts READY is checked against and the rows built
        with self._snapshot():
            gen = self.generation()
            if self._index is not None and self._index.generation == gen:
                return self._index
            loaded, problems = self._open_index(gen)
            if problems:
                logger.warning(
                    "index %s is damaged, rebuilding it from the tables%s: %s",
                    self._gen_dir(gen),
                    " in memory (`affidavit store rebuild` repairs it on disk)"
                    if self.read_only
                    else "",
                    "; ".join(problems[:5]),
                )
            if loaded is None:
                loaded = self._build_index(gen)
                if not self.read_only:
                    self._persist_index(loaded)
            self._index = loaded
            return loaded

    def _stored_counts(self) -> tuple[int, int, int]:
        docs, chunks = self.count()
        return docs, chunks, int(self._meta("dim") or 0)

    def _open_index(self, gen: int) -> tuple[_Index | None, list[str]]:
        """The persisted index of ``gen``, checked against READY and the tables.

        Returns ``(None, [])`` when it is absent or was built by another configuration (stale:
        rebuilt quietly), ``(None, problems)`` when any file disagrees with READY or READY with
        the tables (damaged: rebuilt, never searched).
        """
        d = self._gen_dir(gen)
        ready = d / "READY"
        if not ready.is_file():
            return None, []
        try:
            info = json.loads(ready.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            return None, [f"READY is unreadable: {exc}"]
        if not isinstance(info, dict):
            return None, ["READY is not a JSON object"]
        if (
            info.get("analyzer") != self.analyzer.name
            or info.get("bm25") != self.bm25_params
            or info.get("layout") != INDEX_LAYOUT
        ):
            return None, []  # built by another configuration or release: stale, not damaged
        docs, chunks, dim = self._stored_counts()
        problems = []
        if info.get("generation") != gen:
            problems.append(f"READY says generation {info.get('generation')}, folder says {gen}")
        if info.get("chunks") != chunks or info.get("documents") != docs:
            problems.append(
                f"READY counts {info.get('documents')} documents / {info.get('chunks')} chunks, "
                f"the database {docs} / {chunks}"
            )
        problems += _file_problems(d, info.get("files"), need_bm25=chunks > 0)
        if problems:
            return None, problems
        try:
            rowids = np.load(d / "rowids.npy")
            vectors = np.load(d / "vectors.npy", mmap_mode="r")
            chunk_doc = np.load(d / "chunk_doc.npy")
            doc_vectors = np.load(d / "doc_vectors.npy")
            doc_ids = json.loads((d / "doc_ids.json").read_text(encoding="utf-8"))
            bm25 = doc_bm25 = None
            if chunks:
                bm25 = _bm25s().BM25.load(str(d / "bm25"), show_progress=False)
                doc_bm25 = _bm25s().BM25.load(str(d / "doc_bm25"), show_progress=False)
        except (OSError, ValueError, KeyError, TypeError, EOFError) as exc:
            # the checksums matched: READY itself was written over consistently
            return None, [f"index files unreadable: {exc}"]
        shapes = {
            "rowids.npy": (rowids.shape, (chunks,)),
            "vectors.npy": (vectors.shape, (chunks, dim)),
            "chunk_doc.npy": (chunk_doc.shape, (chunks,)),
            "doc_vectors.npy": (doc_vectors.shape, (docs, dim)),
            "doc_ids.json": ((len(doc_ids),) if isinstance(doc_ids, list) else None, (docs,)),
        }
        if bm25 is not None and doc_bm25 is not None:
            shapes["bm25/"] = ((bm25.scores.get("num_docs"),), (chunks,))
            shapes["doc_bm25/"] = ((doc_bm25.scores.get("num_docs"),), (docs,))
        problems = [
            f"{name}: shape {got}, the database holds {want}"
            for name, (got, want) in shapes.items()
            if got != want
        ]
        if problems:
            return None, problems
        return _Index(gen, rowids, vectors, bm25, chunk_doc, doc_ids, doc_vectors, doc_bm25), []

    def index_problems(self) -> list[str]:
        """How the persisted index of the current generation disagrees with READY or the tables.

        Empty when it is sound, or absent or stale (then it is built on the next search).
        """
        with self._snapshot():
            _, problems = self._open_index(self.generation())
        return problems

    def _build_index(self, gen: int) -> _Index:
        bm25s = _bm25s()
        t0 = time.perf_counter()
        rowids: list[int] = []
        vecs: list[bytes] = []
        terms: list[list[str]] = []
        chunk_doc_ids: list[str] = []
        doc_ids: list[str] = []
        doc_terms: list[list[str]] = []
        with self._snapshot():
            # the generation may have moved on since we read it: stamp what we actually read
            gen = int(self._meta("generation") or 0)
            for rid, doc_id, t, v in self._db.execute(
                "SELECT rowid, doc_id, terms, vector FROM chunks ORDER BY rowid"
            ):
                rowids.append(int(rid))
                chunk_doc_ids.append(doc_id)
                terms.append(t.split())
                vecs.append(v)
            for doc_id, title, text in self._db.execute(
                "SELECT doc_id, title, text FROM documents ORDER BY doc_id"
            ):
                doc_ids.append(doc_id)
                doc_terms.append(self.analyzer.tokens(f"{title}\n{text}" if title else text))
        dim = int(self._meta("dim") or 0)
        vectors = (
            np.frombuffer(b"".join(vecs), dtype=np.float32).reshape(len(vecs), dim)
            if vecs
            else np.zeros((0, dim), dtype=np.float32)
        )
        position = {d: i for i, d in enumerate(doc_ids)}
        chunk_doc = np.asarray([position[d] for d in chunk_doc_ids], dtype=np.int32)
        doc_vectors = np.zeros((len(doc_ids), dim), dtype=np.float32)
        np.add.at(doc_vectors, chunk_doc, vectors)
        doc_vectors /= np.maximum(np.linalg.norm(doc_vectors, axis=1, keepdims=True), 1e-12)
        bm25 = doc_bm25 = None
        if rowids:
            bm25 = bm25s.BM25(**self.bm25_params)
            # an empty doc would break bm25s; the "" token keeps every row present
            bm25.index([t or [""] for t in terms], show_progress=False)
            doc_bm25 = bm25s.BM25(**self.bm25_params)
            doc_bm25.index([t or [""] for t in doc_terms], show_progress=False)
        logger.info(
            "built index gen %d: %d chunks in %.2fs", gen, len(rowids), time.perf_counter() - t0
        )
        return _Index(
            gen,
            np.asarray(rowids, dtype=np.int64),
            vectors,
            bm25,
            chunk_doc,
            doc_ids,
            doc_vectors,
            doc_bm25,
        )

    def _persist_index(self, index: _Index) -> bool:
        """Publish ``index`` as ``gen-<G>`` (replacing a damaged one); False when it cannot."""
        root = self.path / "index"
        final = self._gen_dir(index.generation)
        try:
            root.mkdir(exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix="tmp-", dir=root))
        except OSError as exc:
            logger.debug("index persist skipped: %s", exc)
            return False
        try:
            np.save(tmp / "rowids.npy", index.rowids)
            np.save(tmp / "vectors.npy", np.asarray(index.vectors))
            np.save(tmp / "chunk_doc.npy", index.chunk_doc)
            np.save(tmp / "doc_vectors.npy", index.doc_vectors)
            (tmp / "doc_ids.json").write_text(json.dumps(index.doc_ids), encoding="utf-8")
            if index.bm25 is not None:
                index.bm25.save(str(tmp / "bm25"), show_progress=False)
            if index.doc_bm25 is not None:
                index.doc_bm25.save(str(tmp / "doc_bm25"), show_progress=False)
            # every file reaches the disk before READY names it, and READY before the rename
            files = _seal(tmp)
            with (tmp / "READY").open("w", encoding="utf-8") as fh:
                json.dump(
                    {
                        "layout": INDEX_LAYOUT,
                        "generation": index.generation,
                        "analyzer": self.analyzer.name,
                        "bm25": self.bm25_params,
                        "chunks": len(index.rowids),
                        "documents": len(index.doc_ids),
                        "files": files,
                    },
                    fh,
                )
                fh.flush()
                os.fsync(fh.fileno())
            _fsync_dir(tmp)
            if final.exists():
                # we are here because it could not be used (damaged or stale): set it aside
                os.rename(final, Path(tempfile.mkdtemp(prefix="tmp-old-", dir=root)) / "x")
            os.rename(tmp, final)  # atomic; fails if another process got there first
            _fsync_dir(root)
        except OSError as exc:
            logger.debug("index persist skipped: %s", exc)
            shutil.rmtree(tmp, ignore_errors=True)
            return False
        for old in root.iterdir():
            if old != final and old.name.startswith(("gen-", "tmp-")):
                stamp = old.name.split("-", 1)[1]
                if old.name.startswith("tmp-") or (
                    stamp.isdigit() and int(stamp) < index.generation
                ):
                    shutil.rmtree(old, ignore_errors=True)
        return True

    # -- search -------------------------------------------------------------------------------

    def _mask(self, index: _Index, filters: SearchFilters | None) -> np.ndarray | None:
        if filters is None or filters.is_empty():
            return None
        conds: list[str] = []
        args: list[Any] = []
        if filters.domains:
            parts = []
            for dom in filters.domains:
                dom = dom.lower().lstrip(".")
                parts.append("(domain = ? OR domain LIKE ?)")
                args += [dom, f"%.{dom}"]
            conds.append("(" + " OR ".join(parts) + ")")
        if filters.date_from:
            conds.append("date >= ?")  # chunks without a date fail a date filter (fail closed)
            args.append(filters.date_from.isoformat())
        if filters.date_to:
            conds.append("date <= ?")
            args.append(filters.date_to.isoformat())
        if filters.doc_ids:
            conds.append(f"doc_id IN ({','.join('?' * len(filters.doc_ids))})")
            args += list(filters.doc_ids)
        allowed = np.fromiter(
            (
                r[0]
                for r in self._db.execute(
                    f"SELECT rowid FROM chunks WHERE {' AND '.join(conds)}", args
                )
            ),
            dtype=np.int64,
        )
        return np.isin(index.rowids, allowed)

    def _top(self, index: _Index, scores: np.ndarray, k: int, positive: bool) -> list[ScoredChunk]:
        valid = scores > 0 if positive else np.isfinite(scores)
        cand = np.flatnonzero(valid)
        if cand.size == 0:
            return []
        if cand.size > k:
            part = np.argpartition(-scores[cand], k - 1)[:k]
            cand = cand[part]
        cand = cand[np.argsort(-scores[cand], kind="stable")]
        rows = [int(index.rowids[i]) for i in cand]
        chunks = self._chunks_by_rowid(rows)
        return [
            ScoredChunk(chunk=chunks[r], score=float(scores[i]))
            for r, i in zip(rows, cand, strict=True)
            if r in chunks  # deleted by a writer since the index was built
        ]

    def search_lexical(
        self, query: str, k: int, filters: SearchFilters | None = None
    ) -> list[ScoredChunk]:
        """BM25 (Lucene variant, k1=1.2, b=0.75 by default) over title + text, best first.

        Each distinct query term counts once, as in the Qdrant backend's sparse query.
        """
        with self._snapshot():
            index = self._current_index()
            if index.bm25 is None or k <= 0:
                return []
            terms = [t for t in self.analyzer.query_terms(query) if t]
            if not terms:
                return []
            scores = np.asarray(index.bm25.get_scores(terms), dtype=np.float32)
            mask = self._mask(index, filters)
            if mask is not None:
                scores = np.where(mask, scores, 0.0)
            return self._top(index, scores, k, positive=True)

    def search_dense(
        self, vector: Vectors, k: int, filters: SearchFilters | None = None
    ) -> list[ScoredChunk]:
        """Cosine similarity (vectors are normalised), best first."""
        with self._snapshot():
            index = self._current_index()
            if len(index.rowids) == 0 or k <= 0:
                return []
            q = np.asarray(vector, dtype=np.float32).reshape(-1)
            if q.shape[0] != index.vectors.shape[1]:
                raise StoreError(
                    f"query vector has dimension {q.shape[0]}, store has {index.vectors.shape[1]}",
                    source=str(self.path),
                )
            scores = np.asarray(index.vectors @ q, dtype=np.float32)
            mask = self._mask(index, filters)
            if mask is not None:
                scores = np.where(mask, scores, -np.inf)
            return self._top(index, scores, k, positive=False)

    def _terms_and_vector(
        self, index: Any, query: str, vector: Vectors
    ) -> tuple[list[str], np.ndarray]:
        """The query's BM25 terms and its vector (checked against the store's dimension)."""
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        if q.shape[0] != index.vectors.shape[1]:
            raise StoreError(
                f"query vector has dimension {q.shape[0]}, store has {index.vectors.shape[1]}",
                source=str(self.path),
            )
        return [t for t in self.analyzer.query_terms(query) if t], q

    @staticmethod
    def _doc_scores(
        index: Any, terms: list[str], q: np.ndarray, mask: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Whole-document BM25 and document cosine of every document; a document without an
        allowed chunk scores 0 and -inf."""
        n_docs = len(index.doc_ids)
        d_lex = (
            np.asarray(index.doc_bm25.get_scores(terms), dtype=np.float32)
            if terms
            else np.zeros(n_docs, dtype=np.float32)
        )
        d_den = np.asarray(index.doc_vectors @ q, dtype=np.float32)
        if mask is not None:
            allowed = np.bincount(index.chunk_doc[mask], minlength=n_docs) > 0
            d_lex = np.where(allowed, d_lex, 0.0)
            d_den = np.where(allowed, d_den, -np.inf)
        return d_lex, d_den

    @staticmethod
    def _chunk_scores(
        index: Any, terms: list[str], q: np.ndarray, mask: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Chunk BM25 and chunk cosine of every row; a filtered row scores 0 and -inf."""
        c_lex = (
            np.asarray(index.bm25.get_scores(terms), dtype=np.float32)
            if terms
            else np.zeros(len(index.rowids), dtype=np.float32)
        )
        c_den = np.asarray(index.vectors @ q, dtype=np.float32)
        if mask is not None:
            c_lex = np.where(mask, c_lex, 0.0)
            c_den = np.where(mask, c_den, -np.inf)
        return c_lex, c_den

    def document_scores(
        self,
        query: str,
        vector: Vectors,
        candidates: int = 50,
        filters: SearchFilters | None = None,
    ) -> DocumentScores:
        """Whole-document BM25 and document-vector cosine of the best ``candidates`` documents
        of each ranking (documents with no allowed chunk left out)."""
        with self._snapshot():
            index = self._current_index()
            if len(index.rowids) == 0 or candidates <= 0:
                return DocumentScores()
            mask = self._mask(index, filters)
            # the document level only: the chunk lists were ranked by the searches before
            d_lex, d_den = self._doc_scores(
                index, *self._terms_and_vector(index, query, vector), mask
            )

            def best(scores: np.ndarray, positive: bool) -> dict[str, float]:
                valid = np.flatnonzero(scores > 0 if positive else np.isfinite(scores))
                if valid.size > candidates:
                    valid = valid[np.argpartition(-scores[valid], candidates - 1)[:candidates]]
                top = valid[np.argsort(-scores[valid], kind="stable")]
                return {str(index.doc_ids[d]): float(scores[d]) for d in top}

            return DocumentScores(lexical=best(d_lex, True), dense=best(d_den, False))

    def search_documents(
        self,
        query: str,
        vector: Vectors,
        k: int,
        filters: SearchFilters | None = None,
        candidates: int = 50,
        rrf_k: int = 60,
    ) -> list[ScoredChunk]:
        """Parent-document hybrid: rank documents, then return their best chunks.

        Documents are ranked by reciprocal rank fusion of whole-document BM25 and the cosine of
        the document vector (normalised mean of its chunk vectors); chunks within a document by
        RRF of chunk BM25 and chunk cosine. A document's n-th best chunk scores its fused
        document score halved n - 1 times, so the list shows each top document's best chunk
        before second chunks of the leaders.
        """
        with self._snapshot():
            index = self._current_index()
            if len(index.rowids) == 0 or k <= 0:
                return []
            mask = self._mask(index, filters)
            terms, q = self._terms_and_vector(index, query, vector)
            c_lex, c_den = self._chunk_scores(index, terms, q, mask)
            d_lex, d_den = self._doc_scores(index, terms, q, mask)
            doc_rrf = _rrf_scores([(d_lex, True), (d_den, False)], candidates, rrf_k)
            chunk_rrf = _rrf_scores([(c_lex, True), (c_den, False)], candidates, rrf_k)
            order = [int(i) for i in np.argsort(-doc_rrf, kind="stable") if doc_rrf[i] > 0][:k]
            picked: list[tuple[float, int, int, int]] = []  # (score, doc, round, row)
            for d in order:
                rows = np.flatnonzero(index.chunk_doc == d)
                if mask is not None:
                    rows = rows[mask[rows]]
                rows = rows[np.lexsort((-c_den[rows], -chunk_rrf[rows]))][:k]
                for r, pos in enumerate(rows.tolist()):
                    picked.append((float(doc_rrf[d]) * 0.5**r, d, r, pos))
            picked.sort(key=lambda p: (-p[0], p[2]))
            picked = picked[:k]
            chunks = self._chunks_by_rowid([int(index.rowids[p[3]]) for p in picked])
            out = []
            for score, d, _, pos in picked:
                row = pos
                rid = int(index.rowids[row])
                if rid not in chunks:
                    continue  # deleted by a writer since the index was built
                out.append(
                    ScoredChunk(
                        chunk=chunks[rid],
                        score=score,
                        scores={
                            "doc_rrf": float(doc_rrf[d]),
                            "doc_bm25": float(d_lex[d]),
                            "doc_dense": float(d_den[d]),
                            "chunk_rrf": float(chunk_rrf[row]),
                            "bm25": float(c_lex[row]),
                            "dense": float(c_den[row]),
                        },
                    )
                )
            return out

    def check(self) -> list[str]:
        """Integrity problems found (empty when the store is consistent).

        The database (SQLite's own page check, chunks without a document, vectors of the wrong
        size) and the persisted index of the current generation (READY against its files and
        the tables). Writes nothing.
        """
        problems: list[str] = []
        with self._snapshot():
            try:
                for (row,) in self._db.execute("PRAGMA integrity_check(100)"):
                    if row != "ok":
                        problems.append(f"database: {row}")
                orphans = self._db.execute(
                    "SELECT COUNT(*) FROM chunks WHERE doc_id NOT IN (SELECT doc_id FROM documents)"
                ).fetchone()[0]
                if orphans:
                    problems.append(f"database: {orphans} chunks without a document")
                dim = int(self._meta("dim") or 0)
                bad = self._db.execute(
                    "SELECT COUNT(*) FROM chunks WHERE length(vector) != ?", (4 * dim,)
                ).fetchone()[0]
                if dim and bad:
                    problems.append(f"database: {bad} chunks with a vector of the wrong size")
                problems += self._lifecycle_problems()
            except sqlite3.DatabaseError as exc:  # a page too damaged to even be checked
                problems.append(f"database: {exc}")
            if problems:
                return problems  # the index is derived from a damaged database: not checked
            index = self.index_problems()
            if not index:
                index = self._index_rows_problems()
            return [f"index: {p}" for p in index]

    def _lifecycle_problems(self) -> list[str]:
        """Rows left behind by a delete: names of no document, chunks recorded as removed."""
        problems = []
        if self._has_table("names"):
            n = self._db.execute(
                "SELECT COUNT(*) FROM names WHERE doc_id NOT IN (SELECT doc_id FROM documents)"
            ).fetchone()[0]
            if n:
                problems.append(f"database: {n} document names without a document")
        if self._has_table("deleted_chunks"):
            n = self._db.execute(
                "SELECT COUNT(*) FROM chunks "
                "WHERE chunk_id IN (SELECT chunk_id FROM deleted_chunks)"
            ).fetchone()[0]
            if n:
                problems.append(f"database: {n} chunks recorded as removed are still stored")
        return problems

    def _index_rows_problems(self) -> list[str]:
        """The persisted index of this generation indexes exactly the stored chunks (no lexical
        entry or vector of a removed chunk, none missing)."""
        d = self._gen_dir(self.generation())
        if not (d / "READY").is_file():
            return []  # not built yet: built from the tables on the next search
        try:
            indexed = set(np.load(d / "rowids.npy").tolist())
        except (OSError, ValueError) as exc:
            return [f"rowids.npy unreadable: {exc}"]
        stored = {int(r) for (r,) in self._db.execute("SELECT rowid FROM chunks")}
        problems = []
        if indexed - stored:
            problems.append(f"{len(indexed - stored)} indexed chunks are no longer stored")
        if stored - indexed:
            problems.append(f"{len(stored - indexed)} stored chunks are not indexed")
        return problems

    def close(self) -> None:
        """Release the database and the writer lock."""
        self.unlock()
        with contextlib.suppress(sqlite3.Error):
            self._db.close()

    def __enter__(self) -> LocalStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
