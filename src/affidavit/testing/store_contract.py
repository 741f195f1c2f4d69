"""Contract tests every `Store` implementation must pass.

Subclass `StoreContract` in a test module and implement ``make_store`` (and ``reopen``
for persistent backends); pytest then runs every ``test_*`` method against your store.

Examples:
    >>> class TestMyStore(StoreContract):  # doctest: +SKIP
    ...     def make_store(self, path):
    ...         return MyStore(path)
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from affidavit.core.errors import StoreError
from affidavit.core.retrieval import SearchFilters
from affidavit.core.types import Chunk, Document
from affidavit.ingest.chunking import SentenceChunker
from affidavit.store.base import (
    DocumentBatchItem,
    DocumentHybridStore,
    DocumentOwnerStore,
    HybridStore,
    Store,
)
from affidavit.testing.embedder import FakeEmbedder

DOCS = [
    Document(
        id="eiffel",
        source="https://travel.example.org/eiffel",
        title="Eiffel Tower",
        text="The Eiffel Tower is in Paris. It was completed in 1889 for the World's Fair.",
        metadata={
            "url": "https://travel.example.org/eiffel",
            "domain": "travel.example.org",
            "date": "2019-05-01",
        },
    ),
    Document(
        id="curie",
        source="https://science.example.com/curie",
        title="Marie Curie",
        text="Marie Curie discovered polonium and radium. She won the Nobel Prize twice.",
        metadata={
            "url": "https://science.example.com/curie",
            "domain": "science.example.com",
            "date": "2021-03-10",
        },
    ),
    Document(
        id="local-notes",
        source="/notes/moon.txt",
        title=None,
        text="Apollo 11 landed on the Moon in July 1969. Neil Armstrong walked first.",
        metadata={},
    ),
]


class StoreContract:
    """Behaviour shared by every store backend."""

    embedder = FakeEmbedder(dim=32)

    def make_store(self, path: Path) -> Store:
        """Create an empty store under ``path``."""
        raise NotImplementedError

    def reopen(self, store: Store, path: Path) -> Store | None:
        """Close and reopen a persistent store (None: the backend is not persistent)."""
        store.close()
        return self.make_store(path)

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[Store]:
        s = self.make_store(tmp_path / "store")
        yield s
        s.close()

    # -- helpers --------------------------------------------------------------------------------

    def items(self, docs: list[Document] | None = None) -> list[DocumentBatchItem]:
        chunker = SentenceChunker(chunk_size=60, overlap=0)
        out = []
        for d in docs or DOCS:
            chunks = chunker.chunk(d)
            vecs = self.embedder.embed([c.text for c in chunks])
            out.append(
                DocumentBatchItem(document=d, chunks=tuple(chunks), vectors=vecs, origin=d.source)
            )
        return out

    def filled(self, store: Store, docs: list[Document] | None = None) -> Store:
        store.upsert(self.items(docs), embedder=self.embedder.name)
        store.refresh()
        return store

    # -- the contract ---------------------------------------------------------------------------

    def test_empty_store(self, store: Store) -> None:
        assert store.count() == (0, 0)
        assert store.records() == {}
        assert store.search_lexical("paris", 5) == []
        assert store.search_dense(self.embedder.embed(["paris"])[0], 5) == []
        assert store.embedder() is None

    def test_round_trip(self, store: Store) -> None:
        self.filled(store)
        docs, chunks = store.count()
        assert docs == 3
        assert chunks == sum(len(i.chunks) for i in self.items())
        got = store.get_document("eiffel")
        assert got is not None and got.text == DOCS[0].text and got.title == "Eiffel Tower"
        assert got.content_hash == DOCS[0].content_hash
        first = self.items()[0].chunks
        back = store.get_chunks([*[c.id for c in first][::-1], "missing"])
        assert [c.id for c in back] == [c.id for c in first][::-1]
        for c in back:
            assert c.doc_id == "eiffel"
            assert c.start is not None and c.end is not None
            assert DOCS[0].text[c.start : c.end] == c.text
        assert store.embedder() == self.embedder.name

    def test_records_hash_and_origin(self, store: Store) -> None:
        self.filled(store)
        rec = store.records()["curie"]
        assert rec.content_hash == DOCS[1].content_hash
        assert rec.origin == DOCS[1].source
        assert rec.chunks >= 1

    def test_lexical_search(self, store: Store) -> None:
        self.filled(store)
        hits = store.search_lexical("who discovered polonium", 3)
        assert hits and hits[0].chunk.doc_id == "curie"
        assert all(a.score >= b.score for a, b in itertools.pairwise(hits))
        assert store.search_lexical("zzzyx qqqv", 3) == []

    def test_dense_search(self, store: Store) -> None:
        self.filled(store)
        q = self.embedder.embed(["Apollo 11 landed on the Moon"])[0]
        hits = store.search_dense(q, 2)
        assert len(hits) == 2
        assert hits[0].chunk.doc_id == "local-notes"
        assert hits[0].score >= hits[1].score

    def test_replace_removes_old_chunks(self, store: Store) -> None:
        self.filled(store)
        new = DOCS[0].model_copy(
            update={"text": "The Eiffel Tower is 330 metres tall.", "content_hash": ""}
        )
        new = Document.model_validate(new.model_dump())
        store.upsert(self.items([new]), embedder=self.embedder.name)
        store.refresh()
        assert store.records()["eiffel"].content_hash == new.content_hash
        hits = store.search_lexical("World's Fair 1889", 5)
        assert all(h.chunk.doc_id != "eiffel" for h in hits)
        hits = store.search_lexical("330 metres", 5)
        assert hits[0].chunk.doc_id == "eiffel"

    def test_delete(self, store: Store) -> None:
        self.filled(store)
        assert store.delete(["curie", "nope"]) == 1
        store.refresh()
        assert "curie" not in store.records()
        assert store.get_document("curie") is None
        assert store.search_lexical("polonium", 5) == []

    def test_domain_filter(self, store: Store) -> None:
        self.filled(store)
        f = SearchFilters(domains=("example.com",))
        hits = store.search_lexical("Eiffel Paris polonium Moon", 10, f)
        assert {h.chunk.doc_id for h in hits} == {"curie"}
        q = self.embedder.embed(["Eiffel Tower Paris"])[0]
        assert {h.chunk.doc_id for h in store.search_dense(q, 10, f)} == {"curie"}

    def test_date_filter_fails_closed(self, store: Store) -> None:
        self.filled(store)
        f = SearchFilters(date_from=date(2020, 1, 1))
        hits = store.search_lexical("Eiffel Paris polonium Moon Apollo", 10, f)
        # only curie (2021) is on or after 2020; the undated notes are excluded
        assert {h.chunk.doc_id for h in hits} == {"curie"}
        f = SearchFilters(date_to=date(2020, 1, 1))
        q = self.embedder.embed(["Eiffel Paris polonium Moon"])[0]
        assert {h.chunk.doc_id for h in store.search_dense(q, 10, f)} == {"eiffel"}

    def test_refuses_other_embedder(self, store: Store) -> None:
        self.filled(store)
        with pytest.raises(StoreError):
            store.upsert(self.items(), embedder="another-model")

    def test_persists(self, store: Store, tmp_path: Path) -> None:
        self.filled(store)
        again = self.reopen(store, tmp_path / "store")
        if again is None:
            pytest.skip("backend is not persistent")
        try:
            assert again.count()[0] == 3
            assert again.search_lexical("polonium", 1)[0].chunk.doc_id == "curie"
        finally:
            again.close()

    def test_chunk_round_trip_types(self, store: Store) -> None:
        self.filled(store)
        c: Chunk = store.search_lexical("Armstrong", 1)[0].chunk
        assert isinstance(c.metadata, dict)
        assert c.metadata.get("sentences")
        restored: Any = Chunk.model_validate_json(c.model_dump_json())
        assert restored == c
        assert np.isfinite(store.search_lexical("Armstrong", 1)[0].score)

    def test_document_hybrid(self, store: Store) -> None:
        if not isinstance(store, DocumentHybridStore):
            pytest.skip("backend has no parent-document hybrid search")
        self.filled(store)
        q = "Marie Curie discovered polonium"
        vec = self.embedder.embed([q])[0]
        hits = store.search_documents(q, vec, 6)
        assert hits and hits[0].chunk.doc_id == "curie"
        assert all(a.score >= b.score for a, b in itertools.pairwise(hits))
        # documents appear in order of their fused score; a document's n-th chunk scores its
        # document score halved n - 1 times
        docs = list(dict.fromkeys(h.chunk.doc_id for h in hits))
        doc_scores = [next(h.scores["doc_rrf"] for h in hits if h.chunk.doc_id == d) for d in docs]
        assert doc_scores == sorted(doc_scores, reverse=True)
        nth: dict[str, int] = {}
        for h in hits:
            key = str(h.chunk.doc_id)
            r = nth[key] = nth.get(key, -1) + 1
            assert h.score == pytest.approx(h.scores["doc_rrf"] * 0.5**r)
        assert {"doc_rrf", "chunk_rrf"} <= set(hits[0].scores)
        f = SearchFilters(domains=("example.com",))
        assert {h.chunk.doc_id for h in store.search_documents(q, vec, 6, f)} == {"curie"}
        f = SearchFilters(date_to=date(2020, 1, 1))
        assert {h.chunk.doc_id for h in store.search_documents(q, vec, 6, f)} == {"eiffel"}

    def test_document_scores(self, store: Store) -> None:
        if not isinstance(store, DocumentHybridStore):
            pytest.skip("backend has no parent-document hybrid search")
        self.filled(store)
        q = "Marie Curie discovered polonium"
        vec = self.embedder.embed([q])[0]
        found = store.document_scores(q, vec, 10)
        assert max(found.lexical, key=found.lexical.__getitem__) == "curie"
        assert all(s > 0 for s in found.lexical.values())
        assert set(found.dense) == {"curie", "eiffel", "local-notes"}
        assert all(np.isfinite(s) for s in found.dense.values())
        assert len(store.document_scores(q, vec, 1).dense) == 1
        f = SearchFilters(domains=("example.com",))
        filtered = store.document_scores(q, vec, 10, f)
        assert set(filtered.lexical) | set(filtered.dense) == {"curie"}

    def test_engine_hybrid(self, store: Store) -> None:
        if not isinstance(store, HybridStore):
            pytest.skip("backend does not fuse chunk rankings itself")
        self.filled(store)
        q = "Marie Curie polonium"
        hits = store.search_hybrid(q, self.embedder.embed([q])[0], 3)
        assert hits[0].chunk.doc_id == "curie"
        # the top of both rankings: 1/(60 + 1) + 1/(60 + 1)
        assert hits[0].score == pytest.approx(2 / 61, rel=1e-3)
        f = SearchFilters(domains=("example.org",))
        assert {
            h.chunk.doc_id for h in store.search_hybrid(q, self.embedder.embed([q])[0], 5, f)
        } == {"eiffel"}

    # -- documents a user owns (names, delete, removal records, consistency) --------------------

    def owner(self, store: Store) -> DocumentOwnerStore:
        if not isinstance(store, DocumentOwnerStore):
            pytest.skip("backend keeps no document names or removal records")
        return store

    def test_delete_leaves_a_consistent_store(self, store: Store) -> None:
        owner = self.owner(store)
        self.filled(store)
        assert owner.check() == []
        chunk_ids = [c.id for c in self.items()[1].chunks]
        q = self.embedder.embed(["Marie Curie discovered polonium"])[0]
        assert any(h.chunk.doc_id == "curie" for h in store.search_dense(q, 10))
        assert store.delete(["curie"]) == 1
        store.refresh()
        assert owner.check() == []
        # gone from the lexical index and from the vectors alike
        assert store.search_lexical("polonium radium Nobel", 10) == []
        assert all(h.chunk.doc_id != "curie" for h in store.search_dense(q, 10))
        assert store.get_chunks(chunk_ids) == []
        removed = owner.deleted_chunks([*chunk_ids, self.items()[0].chunks[0].id])
        assert set(removed) == set(chunk_ids)
        assert {r.reason for r in removed.values()} == {"deleted"}
        assert {r.doc_id for r in removed.values()} == {"curie"}
        # stored again: no longer recorded as removed
        store.upsert(self.items([DOCS[1]]), embedder=self.embedder.name)
        store.refresh()
        assert owner.deleted_chunks(chunk_ids) == {}
        assert owner.check() == []

    def test_names(self, store: Store) -> None:
        owner = self.owner(store)
        self.filled(store)
        assert owner.add_name("curie", "/in/copy.txt", "copy.txt") is True
        assert owner.add_name("curie", "/in/copy.txt", "copy.txt") is False
        assert owner.add_name("curie", DOCS[1].source, "again") is False  # its own name
        assert owner.add_name("nope", "/in/x.txt", "x.txt") is False
        rec = store.records()["curie"]
        assert rec.origins == (DOCS[1].source, "/in/copy.txt")
        assert [a.source for a in rec.aliases] == ["copy.txt"]
        # its own name goes: the other becomes its own, nothing is deleted
        assert owner.remove_names([("curie", DOCS[1].source)]) == []
        rec = store.records()["curie"]
        assert (rec.origin, rec.source, rec.aliases) == ("/in/copy.txt", "copy.txt", ())
        assert store.count()[0] == 3
        # the last name goes: so does the document, with its chunks
        assert owner.remove_names([("curie", "/in/copy.txt")], reason="pruned") == ["curie"]
        store.refresh()
        assert "curie" not in store.records()
        assert store.search_lexical("polonium", 5) == []
        removed = owner.deleted_chunks([c.id for c in self.items()[1].chunks])
        assert {r.reason for r in removed.values()} == {"pruned"}
        assert owner.check() == []

    def test_replace_keeps_names_and_records_replaced_chunks(self, store: Store) -> None:
        owner = self.owner(store)
        self.filled(store)
        owner.add_name("eiffel", "/in/tower.txt", "tower.txt")
        old = [c.id for c in self.items()[0].chunks]
        new = Document.model_validate(
            {
                **DOCS[0].model_dump(),
                "text": "The Eiffel Tower is 330 metres tall.",
                "content_hash": "",
            }
        )
        items = self.items([new])
        store.upsert(
            [items[0].model_copy(update={"origin": "/in/tower.txt"})], embedder=self.embedder.name
        )
        store.refresh()
        rec = store.records()["eiffel"]
        # a new version read from its other name: the name it is shown under stays
        assert rec.origin == DOCS[0].source and rec.origins == (DOCS[0].source, "/in/tower.txt")
        assert {r.reason for r in owner.deleted_chunks(old).values()} == {"replaced"}
        assert owner.check() == []

    # -- one version of a document at a time ----------------------------------------------------

    def test_a_new_version_under_another_id_replaces_the_old_in_the_same_write(
        self, store: Store
    ) -> None:
        """An edited file's new version (new content, so a new id) takes the file's name off the
        old version in the same write (``replaces``): a search never finds both, the old one
        goes with its last name (its chunks remembered as replaced), and one that keeps another
        name stays under it."""
        owner = self.owner(store)
        self.filled(store)
        old = [c.id for c in self.items()[1].chunks]
        new = DOCS[1].model_copy(
            update={
                "id": "curie-v2",
                "text": "Marie Curie discovered polonium and radium in 1898 with Pierre.",
                "content_hash": "",
            }
        )
        (item,) = self.items([Document.model_validate(new.model_dump())])
        item = DocumentBatchItem(
            **{**dict(item), "replaces": ("curie", "curie-v2", "no-such-document")}
        )
        store.upsert([item], embedder=self.embedder.name)
        store.refresh()
        records = store.records()
        assert "curie" not in records
        assert records["curie-v2"].origin == DOCS[1].source
        q = "Marie Curie discovered polonium radium Nobel"
        vec = self.embedder.embed([q])[0]
        found = [*store.search_lexical(q, 20), *store.search_dense(vec, 20)]
        if isinstance(store, DocumentHybridStore):
            found += store.search_documents(q, vec, 20)
        assert {h.chunk.doc_id for h in found} >= {"curie-v2"}
        assert "curie" not in {h.chunk.doc_id for h in found}
        assert store.get_chunks(old) == []
        assert {r.reason for r in owner.deleted_chunks(old).values()} == {"replaced"}
        assert owner.check() == []
        # a version still held by another file keeps that file's name, and stays
        owner.add_name("eiffel", "/in/tower.txt", "tower.txt")
        tower = DOCS[0].model_copy(
            update={"id": "eiffel-v2", "text": "The Eiffel Tower is 330 metres tall."}
        )
        (item,) = self.items([Document.model_validate(tower.model_dump())])
        store.upsert(
            [DocumentBatchItem(**{**dict(item), "replaces": ("eiffel",)})],
            embedder=self.embedder.name,
        )
        store.refresh()
        records = store.records()
        assert (records["eiffel"].origin, records["eiffel"].aliases) == ("/in/tower.txt", ())
        assert records["eiffel-v2"].origin == DOCS[0].source
        assert owner.check() == []
