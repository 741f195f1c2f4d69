"""A file's document is known by its content: copies and renames record a name, edits replace."""

from __future__ import annotations

from pathlib import Path

import pytest

from affidavit.core.retrieval import IngestReport, content_doc_id
from affidavit.ingest.pipeline import Ingestor
from affidavit.store.base import Store
from affidavit.store.local import LocalStore
from affidavit.testing.embedder import FakeEmbedder

EIFFEL = "The Eiffel Tower is in Paris. It was completed in March 1889."
CURIE = "Marie Curie discovered polonium. She won the Nobel Prize twice."


@pytest.fixture(params=["local", "qdrant"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "qdrant":
        pytest.importorskip("qdrant_client")
        from affidavit.store.qdrant import QdrantStore

        return QdrantStore(path=None, dim=FakeEmbedder().dim)
    return LocalStore(tmp_path / "store")


def _ingest(store: Store, *paths: Path, prune: bool = False) -> IngestReport:
    return Ingestor(store, FakeEmbedder()).ingest(list(paths), prune=prune)


def _by_source(report: IngestReport) -> dict[str, tuple[str, str]]:
    return {Path(o.source).name: (o.status, o.reason) for o in report.outcomes}


def test_the_same_content_under_another_name_adds_no_chunk(store: Store, tmp_path: Path) -> None:
    first, second = tmp_path / "in1", tmp_path / "in2"
    first.mkdir(), second.mkdir()
    (first / "eiffel.txt").write_text(EIFFEL, encoding="utf-8")
    # the same text, white space aside, under another name and folder
    (second / "tower copy.txt").write_text(EIFFEL.replace(" ", "  ") + "\n", encoding="utf-8")
    _ingest(store, first)
    counts = store.count()
    report = _ingest(store, second)
    assert store.count() == counts
    status, reason = _by_source(report)["tower copy.txt"]
    assert status == "skipped" and "same content as eiffel.txt" in reason
    rec = store.records()[content_doc_id(EIFFEL)]
    assert rec.source == "eiffel.txt" and [a.source for a in rec.aliases] == ["tower copy.txt"]
    assert store.check() == []  # type: ignore[attr-defined]


def test_two_copies_in_one_run_are_one_document(store: Store, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text(EIFFEL, encoding="utf-8")
    (docs / "b.txt").write_text(EIFFEL, encoding="utf-8")
    report = _ingest(store, docs)
    assert report.counts()["added"] == 1 and report.counts()["skipped"] == 1
    assert report.counts()["failed"] == 0  # no longer "duplicate document id"
    assert store.count()[0] == 1
    [rec] = store.records().values()
    assert {rec.source, *(a.source for a in rec.aliases)} == {"a.txt", "b.txt"}
    assert _ingest(store, docs).counts()["skipped"] == 2  # and nothing new the next time


def test_an_edited_file_replaces_its_old_chunks(store: Store, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text(EIFFEL, encoding="utf-8")
    (docs / "b.txt").write_text(CURIE, encoding="utf-8")
    _ingest(store, docs)
    old = store.records()[content_doc_id(EIFFEL)]
    old_chunks = [c.id for h in store.search_lexical("Eiffel", 10) for c in [h.chunk]]
    (docs / "a.txt").write_text("The Eiffel Tower is 330 metres tall.", encoding="utf-8")
    report = _ingest(store, docs)
    assert _by_source(report)["a.txt"][0] == "replaced"
    store.refresh()
    assert old.doc_id not in store.records()
    assert store.count()[0] == 2
    assert store.search_lexical("1889 March", 10) == []
    removed = store.deleted_chunks(old_chunks)  # type: ignore[attr-defined]
    assert set(removed) == set(old_chunks) and {r.reason for r in removed.values()} == {"replaced"}
    assert store.check() == []  # type: ignore[attr-defined]


def test_editing_one_copy_keeps_the_content_of_the_other(store: Store, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text(EIFFEL, encoding="utf-8")
    (docs / "b.txt").write_text(EIFFEL, encoding="utf-8")
    _ingest(store, docs)
    (docs / "a.txt").write_text(CURIE, encoding="utf-8")
    _ingest(store, docs)
    records = store.records()
    assert set(records) == {content_doc_id(EIFFEL), content_doc_id(CURIE)}
    kept = records[content_doc_id(EIFFEL)]
    assert (kept.source, kept.aliases) == ("b.txt", ())
    assert records[content_doc_id(CURIE)].source == "a.txt"


def test_prune_moves_the_name_of_a_renamed_file(store: Store, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "old name.txt").write_text(EIFFEL, encoding="utf-8")
    _ingest(store, docs)
    chunks = store.count()[1]
    (docs / "old name.txt").rename(docs / "new name.txt")
    report = _ingest(store, docs, prune=True)
    assert report.counts()["added"] == 0
    [rec] = store.records().values()
    assert (rec.source, rec.aliases) == ("new name.txt", ())
    assert store.count()[1] == chunks
    (docs / "new name.txt").unlink()
    report = _ingest(store, docs, prune=True)
    assert report.counts()["pruned"] == 1 and store.count() == (0, 0)
    assert store.check() == []  # type: ignore[attr-defined]


def _records(path: Path, rows: list[tuple[str, str]]) -> Path:
    import json

    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in rows), "utf-8")
    return path


@pytest.mark.parametrize("bad_line", [False, True])
def test_prune_keeps_the_records_of_a_renamed_jsonl(
    store: Store, tmp_path: Path, bad_line: bool
) -> None:
    """A renamed JSONL file's records were reported 'unchanged', then pruned: the store lost
    every one of them."""
    docs = tmp_path / "docs"
    docs.mkdir()
    _records(docs / "old.jsonl", [("r1", EIFFEL), ("r2", CURIE)])
    _ingest(store, docs, prune=True)
    counts = store.count()
    (docs / "old.jsonl").rename(docs / "new.jsonl")
    if bad_line:  # another line of the renamed file fails this time: its records are kept too
        with (docs / "new.jsonl").open("a", encoding="utf-8") as fh:
            fh.write('{"id": "r3", "text": \n')
    report = _ingest(store, docs, prune=True)
    assert report.counts()["added"] == 0 and report.counts()["failed"] == int(bad_line)
    assert store.count() == counts
    assert {r.source for r in store.records().values()} == {"new.jsonl#L1", "new.jsonl#L2"}
    assert store.check() == []  # type: ignore[attr-defined]


def test_a_record_never_replaces_a_document_of_another_file(store: Store, tmp_path: Path) -> None:
    """The same id in a second JSONL file, or a record named by a file's content id, replaced
    the stored document (reported 'replaced'): the first file's text was lost."""
    docs = tmp_path / "docs"
    docs.mkdir()
    _records(docs / "a.jsonl", [("r1", EIFFEL)])
    (docs / "tower.txt").write_text(CURIE, encoding="utf-8")
    _ingest(store, docs)
    before = {d: store.get_document(d).text for d in store.records()}  # type: ignore[union-attr]
    other = tmp_path / "other"
    other.mkdir()
    # the second record's text differs from the file's only in white space: the same content id
    taken = [("r1", "Another data set's record one."), (content_doc_id(CURIE), CURIE + "  ")]
    report = _ingest(store, _records(other / "b.jsonl", taken))
    assert report.counts()["failed"] == 2 and report.counts()["replaced"] == 0
    reasons = {Path(o.source).name: o.reason for o in report.failed}
    assert "already used by a.jsonl#L1" in reasons["b.jsonl#L1"]
    assert "already used by tower.txt" in reasons["b.jsonl#L2"]
    assert {d: store.get_document(d).text for d in store.records()} == before  # type: ignore[union-attr]


def test_a_record_cannot_take_the_content_id_of_a_file_ingested_later(
    store: Store, tmp_path: Path
) -> None:
    """A record named 'doc-<hash of a file's text>' made that file 'same content' when it came:
    the file's text was never stored."""
    first = tmp_path / "first"
    first.mkdir()
    _records(first / "a.jsonl", [(content_doc_id(EIFFEL), "Something else entirely.")])
    report = _ingest(store, first)
    assert report.counts()["failed"] == 1 and "content id" in report.failed[0].reason
    second = tmp_path / "second"
    second.mkdir()
    (second / "tower.txt").write_text(EIFFEL, encoding="utf-8")
    assert _ingest(store, second).counts()["added"] == 1
    assert store.get_document(content_doc_id(EIFFEL)).text == EIFFEL  # type: ignore[union-attr]
    # a record whose id is the content id of its own text is that content: kept
    _records(first / "a.jsonl", [(content_doc_id(CURIE), CURIE)])
    assert _ingest(store, first).counts()["added"] == 1
