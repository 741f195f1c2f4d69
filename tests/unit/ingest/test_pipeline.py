"""The ingest run: incremental by hash, replace, prune, failures recorded, batch continues."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from affidavit.core.errors import RetrievalError
from affidavit.core.settings import IngestSettings
from affidavit.ingest.pipeline import Ingestor
from affidavit.store.local import LocalStore
from affidavit.testing.embedder import FakeEmbedder


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    d = tmp_path / "docs"
    d.mkdir()
    (d / "a.txt").write_text("The Eiffel Tower is in Paris. It opened in 1889.", encoding="utf-8")
    (d / "b.md").write_text("# Curie\n\nMarie Curie discovered radium.", encoding="utf-8")
    (d / "bad.txt").write_bytes("caf\xe9".encode("latin-1"))
    return d


def _ingest(store: LocalStore, *paths: Path, prune: bool = False, **kw: object) -> dict[str, int]:
    emb = FakeEmbedder()
    return Ingestor(store, emb, IngestSettings(**kw)).ingest(list(paths), prune=prune).counts()  # type: ignore[arg-type]


def test_first_run_adds_and_records_failures(tmp_path: Path, docs: Path) -> None:
    store = LocalStore(tmp_path / "s")
    report = Ingestor(store, FakeEmbedder()).ingest([docs])
    assert report.counts()["added"] == 2
    [failed] = report.failed
    assert failed.source.endswith("bad.txt") and "UTF-8" in failed.reason
    assert report.chunks_total == store.count()[1] == 2


def test_rerun_does_no_work(tmp_path: Path, docs: Path) -> None:
    store = LocalStore(tmp_path / "s")
    emb = FakeEmbedder()
    Ingestor(store, emb).ingest([docs])
    calls = emb.calls
    gen = store.generation()
    report = Ingestor(store, emb).ingest([docs])
    assert report.counts()["skipped"] == 2
    assert emb.calls == calls  # nothing embedded
    assert store.generation() == gen  # nothing written


def test_changed_file_replaced(tmp_path: Path, docs: Path) -> None:
    store = LocalStore(tmp_path / "s")
    _ingest(store, docs)
    (docs / "a.txt").write_text("The Eiffel Tower is 330 metres tall.", encoding="utf-8")
    counts = _ingest(store, docs)
    assert counts["replaced"] == 1 and counts["skipped"] == 1
    texts = [h.chunk.text for h in store.search_lexical("Eiffel", 5)]
    assert texts == ["The Eiffel Tower is 330 metres tall."]


def test_prune_removes_vanished_but_keeps_failed(tmp_path: Path, docs: Path) -> None:
    store = LocalStore(tmp_path / "s")
    _ingest(store, docs)
    (docs / "b.md").unlink()
    assert _ingest(store, docs)["pruned"] == 0  # without --prune nothing is removed
    assert store.count()[0] == 2
    # a file that is unreadable this time keeps its stored version
    (docs / "a.txt").write_bytes(b"\xff\xfe broken now")
    counts = _ingest(store, docs, prune=True)
    assert counts["pruned"] == 1 and counts["failed"] >= 1
    assert store.count()[0] == 1
    assert store.search_lexical("Eiffel", 1)


def test_size_limit(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / "big.txt").write_text("word " * 300_000, encoding="utf-8")  # 1.5 MB
    store = LocalStore(tmp_path / "s")
    report = Ingestor(store, FakeEmbedder(), IngestSettings(max_file_mb=1)).ingest([d])
    [f] = report.failed
    assert "limit" in f.reason and "max_file_mb" in f.reason


def test_size_limit_holds_for_a_file_that_grows_while_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The size was taken before the file was read, then read whole: a file still being
    written (a download, a copy) was read past ingest.max_file_mb, however large it had grown."""
    import os

    d = tmp_path / "d"
    d.mkdir()
    big = d / "growing.txt"
    big.write_text("word " * 300_000, encoding="utf-8")  # 1.5 MB by the time it is read
    real_stat = Path.stat

    def stat_when_small(self: Path, **kw: object) -> os.stat_result:
        st = real_stat(self, **kw)  # type: ignore[arg-type]
        if self.name != "growing.txt":
            return st
        fields = list(st)
        fields[6] = 1000  # st_size when it was looked at
        return os.stat_result(fields)

    monkeypatch.setattr(Path, "stat", stat_when_small)
    store = LocalStore(tmp_path / "s")
    report = Ingestor(store, FakeEmbedder(), IngestSettings(max_file_mb=1)).ingest([d])
    [f] = report.failed
    assert "max_file_mb" in f.reason and store.count() == (0, 0)


def test_jsonl_keeps_ids_and_reports_bad_lines(tmp_path: Path) -> None:
    p = tmp_path / "c.jsonl"
    rows = [
        {"id": 7, "text": "Seven is a number.", "url": "https://a.example.org/7"},
        {"id": "x", "text": "Ex marks the spot.", "metadata": {"date": "2020-02-02"}},
        {"id": "x", "text": "Duplicate id."},
        {"text": "no id"},
    ]
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n{oops\n", encoding="utf-8")
    store = LocalStore(tmp_path / "s")
    report = Ingestor(store, FakeEmbedder()).ingest([p])
    assert set(store.records()) == {"7", "x"}
    reasons = sorted(o.reason for o in report.failed)
    assert len(reasons) == 3
    assert any("duplicate" in r for r in reasons)
    assert any("invalid JSON" in r for r in reasons)
    hit = store.search_lexical("seven", 1)[0].chunk
    assert hit.doc_id == "7" and hit.url == "https://a.example.org/7"
    assert hit.metadata["domain"] == "a.example.org"


class _BrokenEmbedder(FakeEmbedder):
    def embed(self, texts):  # type: ignore[no-untyped-def]
        if any("explode" in t for t in texts):
            raise RetrievalError("embedding backend down")
        return super().embed(texts)


def test_embedding_failure_fails_batch_not_run(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / "a.txt").write_text("fine text here.", encoding="utf-8")
    (d / "b.txt").write_text("this will explode.", encoding="utf-8")
    (d / "c.txt").write_text("more fine text.", encoding="utf-8")
    store = LocalStore(tmp_path / "s")
    report = Ingestor(store, _BrokenEmbedder(), batch_chunks=1).ingest([d])
    c = report.counts()
    assert c["added"] == 2 and c["failed"] == 1
    assert "backend down" in report.failed[0].reason
    assert store.check() == []


def test_empty_file_fails(tmp_path: Path) -> None:
    (tmp_path / "e.txt").write_bytes(b"")
    (tmp_path / "w.txt").write_text("   \n\n  ")
    report = Ingestor(LocalStore(tmp_path / "s"), FakeEmbedder()).ingest(
        [tmp_path / "e.txt", tmp_path / "w.txt"]
    )
    assert [o.status for o in report.outcomes] == ["failed", "failed"]
    assert all("empty" in o.reason for o in report.outcomes)


def test_progress_callback(tmp_path: Path, docs: Path) -> None:
    seen: list[tuple[int, int]] = []
    Ingestor(LocalStore(tmp_path / "s"), FakeEmbedder()).ingest(
        [docs], progress=lambda d, t, s: seen.append((d, t))
    )
    assert seen[-1] == (3, 3)


# -- issue 13 defect 2: one bad string fails one item, never the batch ------------------------


def test_lone_surrogates_fail_their_record_and_the_rest_is_stored(tmp_path: Path) -> None:
    d = tmp_path / "docs"
    d.mkdir()
    lines = [
        {"id": "a", "text": "Good record one. It is fine."},
        {"id": "b", "text": "Bad \ud800 record. Here."},
        {"id": "c\udc00", "text": "Bad id record. Here."},
        {"id": "d", "text": "Fine text.", "title": "T\ud83d"},
        {"id": "e", "text": "Fine text again.", "metadata": {"k": "\udfff"}},
    ]
    (d / "r.jsonl").write_text(
        "\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8"
    )  # json.dumps writes \ud800 escapes: valid JSON, invalid Unicode
    (d / "good.txt").write_text("Another good file.", encoding="utf-8")
    store = LocalStore(tmp_path / "s")
    report = Ingestor(store, FakeEmbedder()).ingest([d])
    assert report.counts()["added"] == 2
    failed = {o.source.rsplit("#", 1)[-1]: o.reason for o in report.failed}
    assert set(failed) == {"L2", "L3", "L4", "L5"}
    assert "lone surrogate" in failed["L2"] and failed["L3"].startswith("id ")
    assert store.count() == (2, 2)
    json.dumps(report.model_dump(mode="json"), ensure_ascii=False).encode("utf-8")  # printable
    # and a re-run neither crashes nor loses what is stored
    again = Ingestor(store, FakeEmbedder()).ingest([d])
    assert again.counts()["skipped"] == 2 and store.count() == (2, 2)


def test_file_name_that_is_not_utf8_is_reported_not_fatal(tmp_path: Path) -> None:
    import os

    d = tmp_path / "docs"
    d.mkdir()
    bad = os.fsdecode(bytes(d) + b"/bad\xff.txt")
    Path(bad).write_text("Plain text. Second sentence.", encoding="utf-8")
    (d / "good.txt").write_text("Another good file.", encoding="utf-8")
    store = LocalStore(tmp_path / "s")
    report = Ingestor(store, FakeEmbedder()).ingest([d])
    assert report.counts()["added"] == 1
    [failed] = report.failed
    assert "not valid UTF-8" in failed.reason and "\\udcff" in failed.source
    failed.source.encode("utf-8")
    assert store.count() == (1, 1)


class _PickyStore(LocalStore):
    """Refuses to write document 'bad' (a driver error the pre-check cannot foresee)."""

    def upsert(self, items, *, embedder):  # type: ignore[no-untyped-def]
        if any(it.document.id == "bad" for it in items):
            raise UnicodeEncodeError("utf-8", "x", 0, 1, "surrogates not allowed")
        super().upsert(items, embedder=embedder)


def test_a_failing_write_fails_only_its_document(tmp_path: Path) -> None:
    d = tmp_path / "docs"
    d.mkdir()
    recs = [{"id": i, "text": f"Record {i} text."} for i in ("a", "bad", "c")]
    (d / "r.jsonl").write_text("\n".join(json.dumps(r) for r in recs), encoding="utf-8")
    store = _PickyStore(tmp_path / "s")
    report = Ingestor(store, FakeEmbedder()).ingest([d])
    assert report.counts() == {"added": 2, "skipped": 0, "replaced": 0, "failed": 1, "pruned": 0}
    assert report.failed[0].doc_id == "bad" and "surrogates" in report.failed[0].reason
    assert store.count() == (2, 2)


def test_embedder_mismatch_is_a_store_error_before_any_work(tmp_path: Path, docs: Path) -> None:
    from affidavit.core.errors import StoreError

    store = LocalStore(tmp_path / "s")
    Ingestor(store, FakeEmbedder()).ingest([docs])

    other = FakeEmbedder()
    other.name = "other-embedder"
    (docs / "new.txt").write_text("Something new.", encoding="utf-8")
    with pytest.raises(StoreError, match="other-embedder"):
        Ingestor(store, other).ingest([docs])
    assert store.count() == (2, 2)


def test_prune_keeps_records_of_a_jsonl_whose_line_fails_this_run(tmp_path: Path) -> None:
    """Issue 26.1: a half-written edit to one line deleted that stored record."""
    d = tmp_path / "d"
    d.mkdir()
    rows = [
        {"id": f"r{i}", "text": f"Record {i} says the bridge opened in 189{i}."} for i in (1, 2, 3)
    ]
    data = d / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    store = LocalStore(tmp_path / "s")
    assert _ingest(store, d)["added"] == 3
    lines = data.read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1][: len(lines[1]) // 2]  # the second line cut mid-way
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    counts = _ingest(store, d, prune=True)
    assert counts["pruned"] == 0 and counts["failed"] >= 1
    assert set(store.records()) >= {"r1", "r2", "r3"}


def test_prune_keeps_everything_under_a_folder_it_cannot_list(
    tmp_path: Path, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 26.2: a folder that could not be listed (permission denied, EIO, a symlink loop)
    had every document under it deleted by --prune."""
    import os

    sub = docs / "sub"
    sub.mkdir()
    (sub / "c.txt").write_text("Radium glows in the dark.", encoding="utf-8")
    store = LocalStore(tmp_path / "s")
    assert _ingest(store, docs)["added"] == 3
    real_scandir = os.scandir

    def failing(path: object = ".") -> object:
        if os.path.realpath(str(path)) == os.path.realpath(sub):
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", failing)
    counts = _ingest(store, docs, prune=True)
    assert counts["pruned"] == 0 and counts["failed"] >= 1
    assert store.search_lexical("Radium", 1)


def test_a_full_store_stops_the_run_and_keeps_what_was_stored(tmp_path: Path) -> None:
    """Issue 26.8: on a full disk ('database or disk is full') every remaining document was
    embedded and retried one by one, each a failure line; the run now stops at the first full
    write with a store error, and what was stored before stays whole."""
    from affidavit.core.errors import StoreError, StoreUnusableError

    old, new = tmp_path / "docs" / "old", tmp_path / "docs" / "new"
    for folder, n in ((old, 3), (new, 30)):
        folder.mkdir(parents=True)
        for i in range(n):
            (folder / f"{folder.name}{i:02d}.txt").write_text(
                f"Bridge {folder.name} {i} crosses river {i % 5}. " * 40, encoding="utf-8"
            )
    store = LocalStore(tmp_path / "s")
    assert _ingest(store, old)["added"] == 3
    before = store.records()
    # SQLite's own page limit on this connection: its writes end in SQLITE_FULL, as on a full disk
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    store._db.execute(f"PRAGMA max_page_count = {pages + 2}")
    emb = FakeEmbedder()
    with pytest.raises(StoreUnusableError, match="database or disk is full") as info:
        Ingestor(store, emb, batch_chunks=8).ingest([tmp_path / "docs"], prune=True)
    assert isinstance(info.value, StoreError)  # the CLI's exit 2, the server's failed job
    assert emb.calls <= 2  # stopped at the first full write: nothing more embedded or retried
    assert store.check() == []
    assert set(store.records()) >= set(before)
    store.close()

    store = LocalStore(tmp_path / "s")  # room again: the rerun stores the rest
    counts = _ingest(store, tmp_path / "docs")
    assert counts["failed"] == 0 and store.count()[0] == 33
    assert store.check() == []


def test_prune_keeps_a_folder_whose_entries_cannot_be_read_and_the_run_goes_on(
    tmp_path: Path, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 26.2, a folder of mode r-- (listed, but its entries cannot be looked at: EACCES on
    each stat): the walker's stat raised, and the whole run ended with exit 2 'cannot write to
    store: ...: Permission denied' (found in the audit of issue 26)."""
    import os

    sub = docs / "sub"
    sub.mkdir()
    (sub / "c.txt").write_text("Radium glows in the dark.", encoding="utf-8")
    store = LocalStore(tmp_path / "s")
    assert _ingest(store, docs)["added"] == 3
    (docs / "new.txt").write_text("Polonium was found in 1898.", encoding="utf-8")
    real_stat, real_lstat = os.stat, os.lstat

    def refuse(real):  # type: ignore[no-untyped-def]
        def stat(path, *args, **kw):  # type: ignore[no-untyped-def]
            if os.fspath(path).startswith(str(sub) + os.sep):
                raise PermissionError(13, "Permission denied", os.fspath(path))
            return real(path, *args, **kw)

        return stat

    monkeypatch.setattr(os, "stat", refuse(real_stat))
    monkeypatch.setattr(os, "lstat", refuse(real_lstat))
    report = Ingestor(store, FakeEmbedder()).ingest([docs], prune=True)
    monkeypatch.undo()
    counts = report.counts()
    assert counts["added"] == 1 and counts["pruned"] == 0  # the run went on, nothing pruned
    [failed] = [o for o in report.failed if "c.txt" in o.source]
    assert "Permission denied" in failed.reason
    assert store.search_lexical("Radium", 1) and store.search_lexical("Polonium", 1)


def test_a_jsonl_record_with_its_own_pages_field_is_ingested(tmp_path: Path) -> None:
    # "pages" is the PDF loader's page map in a document's metadata; a record's bibliographic
    # "pages" took the whole run down with an internal error, losing the other files' outcomes
    docs = tmp_path / "docs"
    docs.mkdir()
    records = [
        {"id": "r1", "text": "Paris is the capital of France.", "metadata": {"pages": 12}},
        {"id": "r2", "text": "Rome is the capital of Italy.", "metadata": {"pages": "123-145"}},
    ]
    (docs / "refs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (docs / "a.txt").write_text("The Eiffel Tower is in Paris.", encoding="utf-8")
    store = LocalStore(tmp_path / "s")
    try:
        report = Ingestor(store, FakeEmbedder()).ingest([docs])
        assert report.counts()["added"] == 3 and not report.failed
        assert store.get_document("r2").metadata["pages"] == "123-145"  # type: ignore[union-attr]
    finally:
        store.close()


@pytest.mark.parametrize(
    "meta", [{"url": 5}, {"url": ["https://a.org", "https://b.org"]}, {"domain": 10**30}]
)
def test_a_record_metadata_value_the_store_cannot_take_fails_only_that_record(
    tmp_path: Path, meta: dict[str, object]
) -> None:
    # a non-string "url" in a record's metadata raised pydantic's ValidationError in the chunker,
    # a domain past SQLite's integers OverflowError in the store: either ended the whole run
    docs = tmp_path / "docs"
    docs.mkdir()
    record = {"id": "r1", "text": "Paris is the capital of France.", "metadata": meta}
    (docs / "refs.jsonl").write_text(json.dumps(record) + "\n")
    (docs / "a.txt").write_text("The Eiffel Tower is in Paris.", encoding="utf-8")
    store = LocalStore(tmp_path / "s")
    try:
        report = Ingestor(store, FakeEmbedder()).ingest([docs])
        by = {o.doc_id or o.source: o for o in report.outcomes}
        assert [o.status for o in report.outcomes if o.source.endswith("a.txt")] == ["added"]
        assert by["r1"].status == "added" or (by["r1"].status == "failed" and by["r1"].reason)
        assert store.check() == []
    finally:
        store.close()


def test_a_damaged_database_is_refused_before_any_write(tmp_path: Path) -> None:
    """A page of the chunks table damaged where opening the store and reading its records
    never looks: the ingest wrote the new file into the damaged database, then ended in a raw
    sqlite3.DatabaseError (exit 3 from CliRunner, the file changed); it now refuses before any
    write, says so, and leaves the file as it was."""
    import sqlite3

    from affidavit.core.errors import StoreError

    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(40):
        (docs / f"d{i:02d}.txt").write_text(f"Bridge {i} crosses river {i}. " * 60, "utf-8")
    store = LocalStore(tmp_path / "s")
    assert _ingest(store, docs)["added"] == 40
    store.close()
    db = tmp_path / "s" / "store.sqlite"
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.execute("CREATE VIRTUAL TABLE temp.pages USING dbstat")
    size = con.execute("PRAGMA page_size").fetchone()[0]
    (page,) = con.execute(
        "SELECT MIN(pageno) FROM temp.pages WHERE name = 'chunks' AND pagetype = 'leaf'"
    ).fetchone()
    con.close()
    data = bytearray(db.read_bytes())
    data[(page - 1) * size : page * size] = b"\xa5" * size
    db.write_bytes(bytes(data))

    (docs / "new.txt").write_text("The Forth Bridge opened in 1890.", encoding="utf-8")
    store = LocalStore(tmp_path / "s")  # opens, and its records read: the damage is elsewhere
    with pytest.raises(StoreError, match="damaged"):
        Ingestor(store, FakeEmbedder()).ingest([docs])
    store.close()
    assert db.read_bytes() == bytes(data)
