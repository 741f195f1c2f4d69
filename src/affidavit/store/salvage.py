"""Salvage a damaged local store database: copy out every readable row, re-create lost chunks.

SQLite is the local store's source of truth, so a corrupt page in ``store.sqlite`` cannot be
repaired from the derived index. What can be done without a backup, in named steps:

1. **read** every row that can still be read, table by table, by rowid ranges (a range that
   raises is read again row by row, so one bad page costs only its own rows); where a damaged
   interior page hides intact leaves, the leaf pages are read directly (never the freelist,
   whose pages may hold deleted rows); the ids of documents whose row is lost are learnt from
   the chunks and from the tables' own indexes;
2. **check** each surviving chunk against its document (its text is the document's slice and
   its id is the one the chunker gives that slice) and re-chunk every document with the ingest
   chunker: the chunk ids must be the ones that survived, else the chunker settings differ from
   the ingest's and nothing is re-created from them;
3. **re-create** the chunks a document lost, embedded with the store's own embedder, at the rowids
   they had when the document's surviving chunks show them (so ties rank as before);
4. **write** it all into a new file beside the database, fsynced, then keep the damaged file
   under ``store.sqlite.damaged-<time>`` (a hard link: never deleted) and rename the new one over
   ``store.sqlite`` (atomic: a crash before leaves the original in place, untouched).

A document whose own row is unreadable, or whose chunks cannot be re-created, is lost: it is
named (with the file it came from, where known) for ``affidavit ingest`` to add again.

Examples:
    >>> report = salvage(Path(".affidavit"), chunker, embedder)  # doctest: +SKIP
    >>> report.complete, report.lost  # doctest: +SKIP
    (True, ())
"""

from __future__ import annotations

import contextlib
import json
import logging
import mmap
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from affidavit.core.errors import StoreError
from affidavit.core.types import Chunk, Document
from affidavit.ingest.chunking import chunk_id
from affidavit.retrieve.base import Embedder
from affidavit.retrieve.text import Analyzer
from affidavit.store.local import (
    _SCHEMA,
    CHUNK_ROW_COLS,
    _fsync_dir,
    chunk_row,
    release_writer_lock,
    take_writer_lock,
)

logger = logging.getLogger(__name__)

Chunker = Callable[[Document], list[Chunk]]
"""Chunks a document exactly as ingest does (``SentenceChunker(...).chunk``)."""

_BLOCK = 256  # rowids read in one query; a block that raises is read again row by row
_DOC_COLS = "doc_id, content_hash, origin, source, title, mime, text, metadata, updated_at"
_CHUNK_COLS = (
    "chunk_id, doc_id, idx, start, end, text, url, title, metadata, domain, date, terms, vector"
)
TMP_NAME = "store.sqlite.salvage-tmp"


@dataclass(frozen=True)
class LostDocument:
    """A document that is not in the salvaged store."""

    doc_id: str
    origin: str | None
    """The file (or ``file#record``) it was ingested from, when still readable."""
    reason: str


@dataclass(frozen=True)
class SalvageReport:
    """What a salvage recovered and what it lost."""

    documents: int
    """Documents in the salvaged database."""
    chunks_kept: int
    """Chunks copied as they were stored."""
    chunks_recreated: int
    """Chunks re-made by re-chunking their document's stored text and embedding them again."""
    documents_rechunked: tuple[str, ...]
    lost: tuple[LostDocument, ...]
    unknown_lost_rows: int
    """Document rows that could not be read and whose id nothing else names (0 when none)."""
    damaged_copy: Path
    """The damaged database, kept aside."""
    notes: tuple[str, ...] = field(default=())

    @property
    def complete(self) -> bool:
        """True when nothing was lost."""
        return not self.lost and not self.unknown_lost_rows

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {
            "complete": self.complete,
            "documents": self.documents,
            "chunks_kept": self.chunks_kept,
            "chunks_recreated": self.chunks_recreated,
            "documents_rechunked": list(self.documents_rechunked),
            "lost_documents": [d.doc_id for d in self.lost],
            "lost": [
                {"doc_id": d.doc_id, "origin": d.origin, "reason": d.reason} for d in self.lost
            ],
            "unknown_lost_rows": self.unknown_lost_rows,
            "damaged_copy": str(self.damaged_copy),
            "notes": list(self.notes),
        }


# -- 1. read ------------------------------------------------------------------------------------


def _try(con: sqlite3.Connection, sql: str, args: Sequence[Any] = ()) -> list[Any] | None:
    """All rows of a query, or None when the pages it reads are damaged."""
    try:
        return con.execute(sql, args).fetchall()
    except sqlite3.DatabaseError:
        return None


def _partial(con: sqlite3.Connection, sql: str) -> list[Any]:
    """The rows a scan yields before it reaches a damaged page."""
    out: list[Any] = []
    with contextlib.suppress(sqlite3.DatabaseError):
        for row in con.execute(sql):
            out.append(row)
    return out


@dataclass
class _Table:
    rows: dict[int, tuple[Any, ...]]
    bad_rowids: list[int]  # point reads that raised (a lost row, or no row on a damaged page)


def _read_table(con: sqlite3.Connection, table: str, cols: str, hints: Sequence[int]) -> _Table:
    """Every readable row of ``table`` by rowid; ``hints``: rowids known to exist (max used)."""
    hi = max([0, *hints])
    for sql in (f"SELECT max(rowid) FROM {table}",):
        got = _try(con, sql)
        if got and got[0][0] is not None:
            hi = max(hi, int(got[0][0]))
    rows: dict[int, tuple[Any, ...]] = {}
    bad: list[int] = []
    start, extra = 1, 0
    while True:
        if start > hi:
            # past the last rowid known: a damaged right edge may hide more; look a little further
            after = _try(con, f"SELECT rowid FROM {table} WHERE rowid > ? LIMIT 1", (hi,))
            if after:
                hi = int(after[0][0]) + _BLOCK
            elif after is None and extra < 16:
                hi, extra = hi + _BLOCK, extra + 1
            else:
                break
        end = start + _BLOCK - 1
        sql = f"SELECT rowid, {cols} FROM {table} WHERE rowid BETWEEN ? AND ?"
        block = _try(con, sql, (start, end))
        if block is None:
            block = []
            for rid in range(start, end + 1):
                one = _try(con, f"SELECT rowid, {cols} FROM {table} WHERE rowid = ?", (rid,))
                if one is None:
                    bad.append(rid)
                else:
                    block += one
        for row in block:
            rows[int(row[0])] = tuple(row[1:])
        start = end + 1
    return _Table(rows, bad)


@dataclass
class _Read:
    meta: dict[str, str]
    docs: dict[int, tuple[Any, ...]]
    chunks: dict[int, tuple[Any, ...]]
    known_ids: dict[str, str | None]  # every doc id named anywhere -> its origin when known
    unnamed_doc_rows: list[int]  # unreadable document rowids no index names (an upper bound)
    chunk_seq: int
    raw_docs: int = 0  # rows found only by reading the leaf pages directly
    raw_chunks: int = 0


def _read(con: sqlite3.Connection, db: Path) -> _Read:
    meta = {str(k): str(v) for k, v in _partial(con, "SELECT key, value FROM meta")}
    seq_rows = _try(con, "SELECT seq FROM sqlite_sequence WHERE name = 'chunks'") or []
    chunk_seq = int(seq_rows[0][0]) if seq_rows and seq_rows[0][0] is not None else 0
    # the indexes hold (key, rowid): ids (and origins) of rows whose table page is lost
    sql = "SELECT doc_id, rowid FROM documents INDEXED BY sqlite_autoindex_documents_1"
    whole = _try(con, sql)
    by_index = whole if whole is not None else _partial(con, sql)
    origins = dict(_partial(con, "SELECT rowid, origin FROM documents INDEXED BY documents_origin"))
    chunk_index = _partial(con, "SELECT doc_id, rowid FROM chunks INDEXED BY chunks_doc")
    docs = _read_table(con, "documents", _DOC_COLS, [r for _, r in by_index])
    chunks = _read_table(con, "chunks", _CHUNK_COLS, [chunk_seq, *(r for _, r in chunk_index)])
    raw_docs = raw_chunks = 0
    if docs.bad_rowids or chunks.bad_rowids:
        raw = _raw_scan(db)
        if raw is not None:
            # the rows read through the b-tree win; the page scan only adds rowids they lack
            for rid, row in raw[0].items():
                if rid not in docs.rows:
                    docs.rows[rid], raw_docs = row, raw_docs + 1
            for rid, row in raw[1].items():
                if rid not in chunks.rows:
                    chunks.rows[rid], raw_chunks = row, raw_chunks + 1
    known: dict[str, str | None] = {}
    for doc_id, rid in by_index:
        known[str(doc_id)] = origins.get(rid)
    for doc_id, _ in chunk_index:
        known.setdefault(str(doc_id), None)
    for row in chunks.rows.values():
        known.setdefault(str(row[1]), None)
    for rid in chunks.bad_rowids:  # the key columns of a row whose text or vector is unreadable
        got = _try(con, "SELECT doc_id FROM chunks WHERE rowid = ?", (rid,))
        if got:
            known.setdefault(str(got[0][0]), None)
    for row in docs.rows.values():
        known[str(row[0])] = str(row[2])
    # with the whole doc_id index read, every lost document is named; without it, a document
    # row that is unreadable may be one nothing else names
    unnamed = [] if whole is not None else sorted(set(docs.bad_rowids) - set(docs.rows))
    return _Read(meta, docs.rows, chunks.rows, known, unnamed, chunk_seq, raw_docs, raw_chunks)


# -- 1b. read the pages themselves, where a damaged interior page hides intact leaves ----------


def _varint(buf: bytes | mmap.mmap, i: int) -> tuple[int, int]:
    v = 0
    for n in range(8):
        b = buf[i + n]
        v = (v << 7) | (b & 0x7F)
        if b < 0x80:
            return v, i + n + 1
    return (v << 8) | buf[i + 8], i + 9


def _record(payload: bytes) -> tuple[Any, ...]:
    size, i = _varint(payload, 0)
    types = []
    while i < size:
        t, i = _varint(payload, i)
        types.append(t)
    out: list[Any] = []
    pos = size
    for t in types:
        if t == 0:
            out.append(None)
        elif 1 <= t <= 6:
            n = (1, 2, 3, 4, 6, 8)[t - 1]
            out.append(int.from_bytes(payload[pos : pos + n], "big", signed=True))
            pos += n
        elif t == 7:
            out.append(float(np.frombuffer(payload[pos : pos + 8], dtype=">f8")[0]))
            pos += 8
        elif t in (8, 9):
            out.append(t - 8)
        elif t >= 12:
            n = (t - 12) // 2
            raw = payload[pos : pos + n]
            if len(raw) != n:
                raise ValueError("record runs past its payload")
            out.append(raw.decode("utf-8") if t % 2 else bytes(raw))
            pos += n
        else:
            raise ValueError(f"reserved serial type {t}")
    return tuple(out)


def _freelist(data: mmap.mmap, page_size: int, pages: int) -> set[int] | None:
    """Pages on the freelist (they may hold deleted rows), or None when it cannot be read."""
    free: set[int] = set()
    trunk = int.from_bytes(data[32:36], "big")
    while trunk:
        if not 1 <= trunk <= pages or trunk in free:
            return None
        free.add(trunk)
        off = (trunk - 1) * page_size
        count = int.from_bytes(data[off + 4 : off + 8], "big")
        if count > page_size // 4:
            return None
        for k in range(count):
            free.add(int.from_bytes(data[off + 8 + 4 * k : off + 12 + 4 * k], "big"))
        trunk = int.from_bytes(data[off : off + 4], "big")
    return free if len(free) == int.from_bytes(data[36:40], "big") else None


def _leaf_rows(
    data: mmap.mmap, page: int, page_size: int, usable: int
) -> Iterator[tuple[int, bytes]]:
    """(rowid, payload) of each cell of a table leaf page; a cell that does not parse is skipped."""
    off = (page - 1) * page_size
    hdr = off + (100 if page == 1 else 0)
    if data[hdr] != 0x0D:
        return
    cells = int.from_bytes(data[hdr + 3 : hdr + 5], "big")
    pages = len(data) // page_size
    x = usable - 35
    m = (usable - 12) * 32 // 255 - 23
    for c in range(min(cells, page_size // 2)):
        with contextlib.suppress(IndexError, ValueError):
            at = off + int.from_bytes(data[hdr + 8 + 2 * c : hdr + 10 + 2 * c], "big")
            size, at = _varint(data, at)
            rowid, at = _varint(data, at)
            if size <= x:
                yield rowid, data[at : at + size]
                continue
            k = m + (size - m) % (usable - 4)
            local = k if k <= x else m
            parts, seen = [data[at : at + local]], set()
            nxt = int.from_bytes(data[at + local : at + local + 4], "big")
            got = local
            while nxt and got < size:
                if not 1 <= nxt <= pages or nxt in seen:
                    raise ValueError("broken overflow chain")
                seen.add(nxt)
                o = (nxt - 1) * page_size
                take = min(usable - 4, size - got)
                parts.append(data[o + 4 : o + 4 + take])
                got += take
                nxt = int.from_bytes(data[o : o + 4], "big")
            if got == size:
                yield rowid, b"".join(parts)


def _looks_like(row: tuple[Any, ...], table: str) -> bool:
    if table == "documents":
        return (
            len(row) == 9
            and all(isinstance(row[i], str) for i in (0, 1, 2, 3, 5, 6, 7))
            and isinstance(row[8], (int, float))
        )
    return (
        len(row) == 14
        and row[0] is None  # the rowid alias column is stored as NULL
        and isinstance(row[1], str)
        and row[1].startswith("chunk-")
        and isinstance(row[13], bytes)
    )


def _raw_scan(db: Path) -> tuple[dict[int, tuple[Any, ...]], dict[int, tuple[Any, ...]]] | None:
    """Rows of documents and chunks read from the table leaf pages directly, or None.

    For when a damaged interior page hides leaves that are intact. Only pages that are not on
    the freelist are read (a freed page may hold rows deleted long ago); None when the freelist
    or the header cannot be read, or the text encoding is not UTF-8.
    """
    with db.open("rb") as fh:
        if os.fstat(fh.fileno()).st_size < 100:
            return None
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return _scan_pages(data)


def _scan_pages(
    data: mmap.mmap,
) -> tuple[dict[int, tuple[Any, ...]], dict[int, tuple[Any, ...]]] | None:
    if len(data) < 100 or data[:16] != b"SQLite format 3\x00":
        return None
    page_size = int.from_bytes(data[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or int.from_bytes(data[56:60], "big") not in (0, 1):
        return None
    usable = page_size - data[20]
    pages = len(data) // page_size
    free = _freelist(data, page_size, pages)
    if free is None:
        return None
    docs: dict[int, tuple[Any, ...]] = {}
    chunks: dict[int, tuple[Any, ...]] = {}
    for page in range(1, pages + 1):
        if page in free:
            continue
        for rowid, payload in _leaf_rows(data, page, page_size, usable):
            try:
                row = _record(payload)
            except (IndexError, ValueError):  # UnicodeDecodeError is a ValueError
                continue
            if _looks_like(row, "documents"):
                docs.setdefault(rowid, row)
            elif _looks_like(row, "chunks"):
                chunks.setdefault(rowid, row[1:])
    return docs, chunks


# -- 2. check and 3. re-create ------------------------------------------------------------------


def _document(row: tuple[Any, ...]) -> Document:
    doc_id, content_hash, _, source, title, mime, text, metadata, _ = row
    return Document(
        id=doc_id,
        text=text,
        source=source,
        title=title,
        mime=mime,
        metadata=json.loads(metadata),
        content_hash=content_hash,
    )


def _sound_chunk(row: tuple[Any, ...], doc: Document, dim: int) -> bool:
    cid, _, _, start, end, text, *_, vector = row
    return (
        isinstance(start, int)
        and isinstance(end, int)
        and doc.text[start:end] == text
        and cid == chunk_id(doc.id, start, end, text)
        and isinstance(vector, bytes)
        and (dim == 0 or len(vector) == 4 * dim)
    )


@dataclass
class _Plan:
    docs: dict[int, tuple[Any, ...]] = field(default_factory=dict)  # rowid -> document row
    keep: dict[int, tuple[Any, ...]] = field(default_factory=dict)  # rowid -> chunk row
    make: list[tuple[int | None, str, int, Chunk]] = field(default_factory=list)  # rowid, doc, idx
    rechunked: list[str] = field(default_factory=list)
    lost: list[LostDocument] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _plan(read: _Read, chunker: Chunker, embedder: Embedder | None) -> _Plan:
    plan = _Plan()
    dim = int(read.meta.get("dim") or 0)
    stored_embedder = read.meta.get("embedder")
    by_doc: dict[str, dict[int, tuple[Any, ...]]] = {}
    for rid, row in read.chunks.items():
        by_doc.setdefault(str(row[1]), {})[rid] = row
    docs: dict[str, tuple[int, Document, tuple[Any, ...]]] = {}
    for rid, row in read.docs.items():
        try:
            docs[str(row[0])] = (rid, _document(row), row)
        except (TypeError, ValueError) as exc:  # a row that reads but does not parse
            plan.lost.append(LostDocument(str(row[0]), str(row[2]), f"unreadable row: {exc}"))
    expected: dict[str, list[Chunk]] = {}
    mismatch = False
    for doc_id, (_, doc, _) in docs.items():
        expected[doc_id] = chunker(doc)
        made = {c.id for c in expected[doc_id]}
        sound = [r for r in by_doc.get(doc_id, {}).values() if _sound_chunk(r, doc, dim)]
        mismatch = mismatch or any(r[0] not in made for r in sound)
    if mismatch:
        plan.notes.append(
            "the configured chunk size and overlap do not give the chunk ids stored: no chunk "
            "was re-created (use the ingest settings the store was built with)"
        )
    can_embed = embedder is not None and embedder.name == stored_embedder
    if not can_embed:
        why = "no embedder" if embedder is None else f"embedder {embedder.name!r}"
        plan.notes.append(
            f"the store's vectors are from {stored_embedder!r}, {why} is configured: "
            "no chunk was re-created"
        )
    taken = set(read.chunks)
    spans: dict[int, list[int]] = {}  # document rowid -> the chunk rowids it ends up with
    unplaced: list[tuple[int, str, list[Chunk]]] = []
    for doc_id, (drid, doc, row) in sorted(docs.items()):
        kept = {rid: r for rid, r in by_doc.get(doc_id, {}).items() if _sound_chunk(r, doc, dim)}
        want = expected[doc_id]
        spans[drid] = sorted(kept)
        if not mismatch and {r[0] for r in kept.values()} == {c.id for c in want}:
            plan.docs[drid] = row
            plan.keep.update(kept)
            continue
        if mismatch or not can_embed:
            del spans[drid]
            plan.lost.append(
                LostDocument(doc_id, str(row[2]), "its chunks were damaged and cannot be re-made")
            )
            continue
        plan.docs[drid] = row
        plan.keep.update(kept)
        plan.rechunked.append(doc_id)
        if not kept:
            unplaced.append((drid, doc_id, want))
            continue
        # chunks of one document are written together, so their rowids run by index: the lost
        # ones go back where they were when every survivor agrees on where that was (ties in a
        # ranking are broken by rowid, so this keeps search results as they were)
        position = {c.id: i for i, c in enumerate(want)}
        bases = {rid - position[r[0]] for rid, r in kept.items()}
        base = bases.pop() if len(bases) == 1 else None
        for i, c in enumerate(want):
            if c.id in {r[0] for r in kept.values()}:
                continue
            slot = None if base is None or base + i in taken else base + i
            if slot is not None:
                taken.add(slot)
                spans[drid].append(slot)
            plan.make.append((slot, doc_id, i, c))
    # a document that lost every chunk: ingest wrote documents in rowid order, each with its
    # chunks, so they go right after the chunks of the document before it, if those slots are free
    for drid, doc_id, want in unplaced:
        before = [max(v) for d, v in spans.items() if d < drid and v]
        after = [min(v) for d, v in spans.items() if d > drid and v]
        first = max(before, default=0) + 1
        slots = list(range(first, first + len(want)))
        fits = not taken.intersection(slots) and slots[-1] < min(after, default=slots[-1] + 1)
        for i, c in enumerate(want):
            plan.make.append((slots[i] if fits else None, doc_id, i, c))
        if fits:
            taken.update(slots)
            spans[drid] = slots
    for doc_id, origin in sorted(read.known_ids.items()):
        if doc_id not in docs:
            plan.lost.append(LostDocument(doc_id, origin, "its document row is unreadable"))
    return plan


# -- 4. write -----------------------------------------------------------------------------------


def _write(
    tmp: Path, read: _Read, plan: _Plan, analyzer: Analyzer, vectors: np.ndarray, generation: int
) -> None:
    con = sqlite3.connect(tmp, isolation_level=None)
    try:
        con.executescript(_SCHEMA)
        con.execute("BEGIN")
        meta = dict(read.meta)
        meta.update(generation=str(generation), analyzer=meta.get("analyzer", analyzer.name))
        if "dim" not in meta and vectors.size:
            meta["dim"] = str(vectors.shape[1])
        con.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", sorted(meta.items()))
        con.executemany(
            f"INSERT INTO documents (rowid, {_DOC_COLS}) VALUES (?, {', '.join('?' * 9)})",
            [(rid, *row) for rid, row in sorted(plan.docs.items())],
        )
        marks = ", ".join("?" * 14)
        con.executemany(
            f"INSERT INTO chunks (rowid, {CHUNK_ROW_COLS}) VALUES ({marks})",
            [(rid, *row) for rid, row in sorted(plan.keep.items())],
        )
        placed = [
            (rid, chunk_row(analyzer, doc_id, i, c, v))
            for (rid, doc_id, i, c), v in zip(plan.make, vectors, strict=True)
        ]
        con.executemany(
            f"INSERT INTO chunks (rowid, {CHUNK_ROW_COLS}) VALUES ({marks})",
            [(rid, *row) for rid, row in placed if rid is not None],
        )
        con.executemany(
            f"INSERT INTO chunks ({CHUNK_ROW_COLS}) VALUES ({', '.join('?' * 13)})",
            [row for rid, row in placed if rid is None],
        )
        # never hand out a rowid the damaged database had used
        con.execute(
            "UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'chunks'", (read.chunk_seq,)
        )
        con.execute("COMMIT")
        bad = [r for (r,) in con.execute("PRAGMA integrity_check") if r != "ok"]
        if bad:
            raise StoreError(f"the salvaged database does not check: {bad[0]}", source=str(tmp))
    finally:
        con.close()
    with tmp.open("rb") as fh:
        os.fsync(fh.fileno())


def _checkpoint(db: Path) -> None:
    """Merge the WAL into the database file, so the file alone is the whole database.

    What SQLite itself does when the last connection closes; it copies pages and parses none, so
    it works on a damaged database. A WAL left beside the new file would be replayed into it.
    """
    wal = db.with_name(db.name + "-wal")
    if not wal.exists() or wal.stat().st_size == 0:
        return
    try:
        con = sqlite3.connect(db, timeout=30.0)
        try:
            busy = con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"cannot merge the WAL of {db}: {exc}", source=str(db)) from exc
    if busy or (wal.exists() and wal.stat().st_size > 0):
        raise StoreError(
            "the store is being read (its WAL cannot be merged): stop `affidavit serve` and other "
            "readers of this store, then run `affidavit store rebuild` again",
            source=str(db),
        )


def _next_generation(folder: Path, meta: dict[str, str]) -> int:
    gens = [int(meta.get("generation", "0") or 0)] if meta.get("generation", "").isdigit() else []
    index = folder / "index"
    if index.is_dir():
        gens += [int(p.name[4:]) for p in index.iterdir() if p.name[4:].isdigit()]
    return max([0, *gens]) + 1  # newer than any index built from the damaged database


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    fd = take_writer_lock(folder)
    try:
        yield
    finally:
        release_writer_lock(fd)


def salvage(
    folder: Path,
    chunker: Chunker,
    embedder: Embedder | None,
    analyzer: Analyzer | None = None,
) -> SalvageReport:
    """Replace a damaged ``folder/store.sqlite`` with everything that can be recovered from it.

    Takes the store's writer lock for the whole run. The derived index is not rebuilt here
    (open the store and call ``rebuild_index``).

    Args:
        folder: the store folder.
        chunker: the ingest chunker with the ingest settings (checks the stored chunk ids and
            re-makes lost chunks).
        embedder: the embedder the store was built with; None (or another one) re-makes none.
        analyzer: the store's lexical analyser.

    Raises:
        StoreError: another process writes to the store, the database cannot be opened at all
            (not a database, no schema), or the new database cannot be written.
    """
    analyzer = analyzer or Analyzer()
    db = folder / "store.sqlite"
    tmp = folder / TMP_NAME
    with _locked(folder):
        _checkpoint(db)
        try:
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30.0)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open {db}: {exc}", source=str(db)) from exc
        try:
            tables = _try(con, "SELECT name FROM sqlite_master WHERE type = 'table'")
            if tables is None or not {"documents", "chunks"} <= {t for (t,) in tables}:
                raise StoreError(
                    f"nothing can be read from {db}: its schema is unreadable or missing; "
                    "restore the store folder from a backup, or move it aside and ingest the "
                    "documents again",
                    source=str(db),
                )
            read = _read(con, db)
        finally:
            con.close()
        plan = _plan(read, chunker, embedder)
        vectors = np.zeros((0, int(read.meta.get("dim") or 0)), dtype=np.float32)
        if plan.make:
            assert embedder is not None  # _plan re-makes chunks only with the store's embedder
            texts = [f"{c.title}\n{c.text}" if c.title else c.text for *_, c in plan.make]
            vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
        tmp.unlink(missing_ok=True)  # left by a run that was killed
        try:
            _write(tmp, read, plan, analyzer, vectors, _next_generation(folder, read.meta))
            stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
            aside = folder / f"store.sqlite.damaged-{stamp}"
            n = 1
            while aside.exists():
                aside, n = folder / f"store.sqlite.damaged-{stamp}-{n}", n + 1
            try:
                os.link(db, aside)
            except OSError:  # a file system without hard links: a copy
                import shutil

                shutil.copy2(db, aside)
            _fsync_dir(folder)
            os.replace(tmp, db)  # the one step that switches databases: atomic
            _fsync_dir(folder)
        finally:
            tmp.unlink(missing_ok=True)
    kept = len(plan.keep)
    logger.info(
        "salvaged %s: %d documents, %d chunks kept, %d re-made, %d documents lost",
        db,
        len(plan.docs),
        kept,
        len(plan.make),
        len(plan.lost),
    )
    if read.raw_docs or read.raw_chunks:
        plan.notes.append(
            f"{read.raw_docs} documents and {read.raw_chunks} chunks were read from table pages "
            "that the damaged b-tree no longer reaches"
        )
    return SalvageReport(
        documents=len(plan.docs),
        chunks_kept=kept,
        chunks_recreated=len(plan.make),
        documents_rechunked=tuple(plan.rechunked),
        lost=tuple(plan.lost),
        unknown_lost_rows=len(read.unnamed_doc_rows),
        damaged_copy=aside,
        notes=tuple(plan.notes),
    )
