"""The Qdrant backend (local mode) passes the same store contract, plus engine-side fusion."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from affidavit.store.base import DocumentBatchItem, Store
from affidavit.testing.store_contract import StoreContract

pytest.importorskip("qdrant_client")

from affidavit.store.qdrant import QdrantStore, domain_suffixes


class TestQdrantLocalContract(StoreContract):
    def make_store(self, path: Path) -> Store:
        return QdrantStore(path=path)


class TestQdrantMemoryContract(StoreContract):
    def make_store(self, path: Path) -> Store:
        return QdrantStore(path=None)

    def reopen(self, store: Store, path: Path) -> Store | None:
        return None


def test_domain_suffixes() -> None:
    assert domain_suffixes("a.Example.org") == ["a.example.org", "example.org", "org"]
    assert domain_suffixes(None) == []


def test_retriever_over_qdrant_matches_local_fusion(tmp_path: Path) -> None:
    from affidavit.retrieve.fusion import convex, rrf
    from affidavit.retrieve.retriever import StoreRetriever

    c = StoreContract()
    s = QdrantStore(path=tmp_path / "q")
    s.upsert(c.items(), embedder=c.embedder.name)
    r = StoreRetriever(s, c.embedder, granularity="chunk", fusion="rrf")
    q = "Eiffel Tower Moon landing Curie"
    native = [h.chunk.id for h in r.search(q, k=4, mode="hybrid")]
    lex = [h.chunk.id for h in r.search(q, k=50, mode="bm25")]
    den = [h.chunk.id for h in r.search(q, k=50, mode="dense")]
    assert native == [cid for cid, _ in rrf([lex, den], k=60)][:4]
    # convex fusion (the default) is computed over Qdrant's own two lists
    r = StoreRetriever(s, c.embedder, granularity="chunk")
    lex_s = {h.chunk.id: h.score for h in r.search(q, k=50, mode="bm25")}
    den_s = {h.chunk.id: h.score for h in r.search(q, k=50, mode="dense")}
    fused = [h.chunk.id for h in r.search(q, k=4, mode="hybrid")]
    assert fused == [cid for cid, _ in convex([lex_s, den_s])][:4]
    s.close()


@pytest.mark.parametrize(
    "query",
    ["Eiffel Tower Moon landing Curie", "Nobel Prize", "who walked on the Moon first", "Paris"],
)
def test_document_ranking_matches_the_local_store(tmp_path: Path, query: str) -> None:
    """Qdrant's in-engine parent-document fusion ranks documents as the local store does."""
    from affidavit.store.local import LocalStore

    c = StoreContract()
    local = LocalStore(tmp_path / "local")
    qdrant = QdrantStore(path=None)
    for s in (local, qdrant):
        s.upsert(c.items(), embedder=c.embedder.name)
        s.refresh()
    vec = c.embedder.embed([query])[0]

    def docs(store: Store) -> list[str]:
        hits = store.search_documents(query, vec, 10)  # type: ignore[attr-defined]
        return list(dict.fromkeys(h.chunk.doc_id for h in hits))

    assert docs(qdrant) == docs(local)
    local.close()
    qdrant.close()


# "tower" is in two documents, "paris" in one: counted once each, the rarer "paris" decides;
# counted once per occurrence, "tower tower" outweighs it (2 x idf 0.88 > idf 1.39)
_REPEAT_DOCS = {
    "tower": "The tower stands tall over the city square.",
    "paris": "Paris stands tall over the city square.",
    "bridge": "The old tower bridge crosses the river.",
    "harbour": "The harbour is busy in summer.",
    "market": "The market opens early on Sunday.",
}


def test_a_repeated_query_term_counts_once_in_both_backends(tmp_path: Path) -> None:
    """Qdrant's sparse query holds each term once; the local BM25 must score the same way, or
    the two backends rank a query that repeats a word differently (docs/store.md)."""
    from affidavit.core.types import Document
    from affidavit.store.local import LocalStore

    c = StoreContract()
    docs = [Document(id=k, text=v, source=k) for k, v in _REPEAT_DOCS.items()]
    local = LocalStore(tmp_path / "local")
    qdrant = QdrantStore(path=None)
    for s in (local, qdrant):
        s.upsert(c.items(docs), embedder=c.embedder.name)
        s.refresh()
    query = "tower tower Paris"
    vec = c.embedder.embed([query])[0]

    def lexical(store: Store, q: str) -> list[tuple[str, float]]:
        return [(h.chunk.doc_id, h.score) for h in store.search_lexical(q, 10)]

    once = lexical(local, "tower Paris")
    assert lexical(local, query) == once
    assert [d for d, _ in once][:1] == ["paris"]
    assert [d for d, _ in lexical(qdrant, query)] == [d for d, _ in once]

    def docs_of(store: Store) -> list[str]:
        hits = store.search_documents(query, vec, 10)  # type: ignore[attr-defined]
        return list(dict.fromkeys(h.chunk.doc_id for h in hits))

    assert docs_of(qdrant) == docs_of(local)
    local.close()
    qdrant.close()


def test_old_layout_is_refused(tmp_path: Path) -> None:
    from qdrant_client import QdrantClient, models

    from affidavit.core.errors import StoreError

    client = QdrantClient(path=str(tmp_path / "q"))
    client.create_collection(
        "affidavit_docs",
        vectors_config={"none": models.VectorParams(size=1, distance=models.Distance.DOT)},
    )
    client.close()
    with pytest.raises(StoreError, match="layout"):
        QdrantStore(path=tmp_path / "q")


def test_passage_granularity_over_qdrant_caps_its_native_fusion(tmp_path: Path) -> None:
    from affidavit.retrieve.retriever import StoreRetriever

    c = StoreContract()
    s = QdrantStore(path=tmp_path / "q")
    s.upsert(c.items(), embedder=c.embedder.name)
    q = "Eiffel Tower Moon landing Curie"
    fused = StoreRetriever(s, c.embedder, granularity="chunk").search(q, k=50, mode="hybrid")
    capped = StoreRetriever(s, c.embedder, per_document=1, document_prior=False).search(
        q, k=4, mode="hybrid"
    )
    first_of_each: list[str] = []
    for h in fused:
        if h.chunk.doc_id not in {f.chunk.doc_id for f in fused if f.chunk.id in first_of_each}:
            first_of_each.append(h.chunk.id)
    assert [h.chunk.id for h in capped] == first_of_each[:4]
    s.close()


class _FailingUpserts:
    """The real local client, except that the ``fail_at``-th upsert into ``collection`` raises."""

    def __init__(self, client: object, collection: str, fail_at: int) -> None:
        self._client, self._collection, self._left = client, collection, fail_at

    def upsert(self, collection_name: str, *args: object, **kw: object) -> object:
        if collection_name == self._collection:
            self._left -= 1
            if self._left == 0:
                raise RuntimeError("connection reset by peer")
        return self._client.upsert(collection_name, *args, **kw)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self._client, name)


def _searchable(store: QdrantStore, c: StoreContract, doc_id: str) -> set[str]:
    """Chunk ids of ``doc_id`` that any chunk-level search returns."""
    q = "Eiffel Tower 330 metres tall Paris 1889"
    hits = [
        *store.search_lexical(q, 100),
        *store.search_dense(c.embedder.embed([q])[0], 100),
        *store.search_hybrid(q, c.embedder.embed([q])[0], 100),
    ]
    return {h.chunk.id for h in hits if h.chunk.doc_id == doc_id}


@pytest.mark.parametrize(("collection", "fail_at"), [("chunks", 1), ("chunks", 2), ("docs", 1)])
def test_a_failed_replace_keeps_the_stored_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, collection: str, fail_at: int
) -> None:
    """A replace that fails midway (the connection drops) leaves the old version whole: its
    record, its chunks (searchable, citable, not recorded as removed) and none of the new ones."""
    import affidavit.store.qdrant as qdrant_module
    from affidavit.core.errors import StoreError
    from affidavit.core.types import Document

    monkeypatch.setattr(qdrant_module, "_UPSERT_BATCH", 1)
    c = StoreContract()
    s = QdrantStore(path=tmp_path / "q")
    s.upsert(c.items(), embedder=c.embedder.name)
    old = c.items()[0]
    old_ids = {ch.id for ch in old.chunks}
    assert len(old_ids) >= 2
    before = s.records()["eiffel"]
    searchable = _searchable(s, c, "eiffel")
    new = Document.model_validate(
        old.document.model_copy(
            update={
                "text": "The Eiffel Tower is 330 metres tall. It stands in Paris. It is iron.",
                "content_hash": "",
            }
        ).model_dump()
    )
    (item,) = c.items([new])
    assert not {ch.id for ch in item.chunks} & old_ids
    s.client = _FailingUpserts(s.client, f"affidavit_{collection}", fail_at)  # type: ignore[assignment]
    with pytest.raises(StoreError):
        s.upsert([item], embedder=c.embedder.name)
    assert s.records()["eiffel"] == before
    assert {ch.id for ch in s.get_chunks(sorted(old_ids))} == old_ids
    assert s.deleted_chunks(sorted(old_ids)) == {}
    assert _searchable(s, c, "eiffel") == searchable
    assert s.check() == []
    s.close()


def test_a_failed_first_write_leaves_no_chunk_searchable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new document whose write fails after some chunk batches went in is not searchable by
    those chunks (they would be evidence of a document the store has no record of)."""
    import affidavit.store.qdrant as qdrant_module
    from affidavit.core.errors import StoreError

    monkeypatch.setattr(qdrant_module, "_UPSERT_BATCH", 1)
    c = StoreContract()
    s = QdrantStore(path=tmp_path / "q")
    s.upsert(c.items()[1:], embedder=c.embedder.name)
    s.client = _FailingUpserts(s.client, "affidavit_chunks", 2)  # type: ignore[assignment]
    with pytest.raises(StoreError):
        s.upsert(c.items()[:1], embedder=c.embedder.name)
    assert "eiffel" not in s.records()
    assert _searchable(s, c, "eiffel") == set()
    assert s.get_chunks([ch.id for ch in c.items()[0].chunks]) == []
    assert s.check() == []
    s.close()


def test_an_unreachable_server_is_a_store_error_not_an_untyped_one() -> None:
    """``qdrant_url`` pointing at nothing raised qdrant-client's ResponseHandlingException past
    the constructor (the CLI's exit 3, "a bug in affidavit"); it is an environment error."""
    from affidavit.core.errors import StoreError

    with pytest.raises(StoreError, match=r"Qdrant at http://127\.0\.0\.1:9 failed"):
        QdrantStore(url="http://127.0.0.1:9")


class _Gone:
    """A client whose server went away after the store was opened."""

    def __getattr__(self, name: str) -> object:
        def fail(*args: object, **kwargs: object) -> object:
            raise ConnectionResetError("connection reset by peer")

        return fail


@pytest.mark.parametrize("call", ["get_document", "records", "count", "search_lexical"])
def test_a_server_that_goes_away_is_a_store_error_on_every_call(call: str) -> None:
    from affidavit.core.errors import StoreError

    s = QdrantStore(path=None)
    s.client._client = _Gone()
    args = {"get_document": ("d",), "records": (), "count": (), "search_lexical": ("x", 3)}[call]
    with pytest.raises(StoreError, match="connection reset"):
        getattr(s, call)(*args)


# -- one version of a document at a time ---------------------------------------------------------

_Q = "Eiffel Tower 330 metres tall Paris 1889 iron World's Fair"


def _found(store: QdrantStore, c: StoreContract) -> list[str]:
    """Chunk ids every kind of search returns (chunk-level, fused, parent-document) and
    `get_chunks` of every chunk id either version has."""
    vec = c.embedder.embed([_Q])[0]
    hits = [
        *store.search_lexical(_Q, 100),
        *store.search_dense(vec, 100),
        *store.search_hybrid(_Q, vec, 100),
        *store.search_documents(_Q, vec, 100),
    ]
    return [h.chunk.id for h in hits]


def _versions(c: StoreContract, new_id: str) -> tuple[set[str], set[str], list[Any]]:
    """The old eiffel's chunk ids, the new version's (sharing none), and its batch items."""
    from affidavit.core.types import Document

    old = {ch.id for ch in c.items()[0].chunks}
    new = Document.model_validate(
        c.items()[0]
        .document.model_copy(
            update={
                "id": new_id,
                "text": "The Eiffel Tower is 330 metres tall. It stands in Paris. It is iron.",
                "content_hash": "",
            }
        )
        .model_dump()
    )
    items = c.items([new])
    if new_id != "eiffel":
        items = [DocumentBatchItem(**{**dict(items[0]), "replaces": ("eiffel",)})]
    fresh = {ch.id for ch in items[0].chunks}
    assert len(old) >= 2 and len(fresh) >= 2 and not old & fresh
    return old, fresh, items


def _one_version(found: Iterable[str], old: set[str], new: set[str]) -> None:
    assert not (set(found) & old and set(found) & new), "a search returned both versions"


class _Probed:
    """The real client; before each write call (and once more at the end) every kind of search
    runs through the store, as a concurrent reader would; ``crash_at`` makes the n-th write
    call raise an exception no ``except Exception`` catches (the process died there)."""

    WRITES = frozenset({"upsert", "delete", "set_payload", "overwrite_payload", "delete_payload"})

    def __init__(self, store: QdrantStore, c: StoreContract, old: set[str], new: set[str]) -> None:
        self._client, self._store, self._c = store.client, store, c
        self._old, self._new = old, new
        self.crash_at: int | None = None
        self.writes = self.probes = 0
        self._probing = False

    def probe(self) -> None:
        self._probing = True
        try:
            _one_version(_found(self._store, self._c), self._old, self._new)
            self.probes += 1
        finally:
            self._probing = False

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if name not in self.WRITES or self._probing:
            return attr

        def call(*args: Any, **kw: Any) -> Any:
            self.writes += 1
            self.probe()
            if self.writes == self.crash_at:
                raise _Crash(name)
            return attr(*args, **kw)

        return call


class _Crash(BaseException):
    """The process died here."""


@pytest.mark.parametrize("new_id", ["eiffel", "eiffel-2"], ids=["same-id", "new-id-replaces"])
def test_a_reader_never_sees_two_versions_at_any_step_of_a_replace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, new_id: str
) -> None:
    """Between any two calls of a replace (a JSONL record edited in place, or an edited file's
    new version replacing the old one), every search returns one version or the other."""
    import affidavit.store.qdrant as qdrant_module

    monkeypatch.setattr(qdrant_module, "_UPSERT_BATCH", 1)
    c = StoreContract()
    s = QdrantStore(path=None)
    s.upsert(c.items(), embedder=c.embedder.name)
    old, new, items = _versions(c, new_id)
    probed = _Probed(s, c, old, new)
    s.client = probed
    s.upsert(items, embedder=c.embedder.name)
    probed.probe()
    assert probed.writes >= 4
    assert set(_found(s, c)) & new and not set(_found(s, c)) & old
    assert s.check() == []
    s.close()


def test_a_failed_cleanup_of_a_replace_leaves_only_the_new_version_searchable(
    tmp_path: Path,
) -> None:
    """The last step of a replace, deleting the old version's chunks, fails: the old chunks are
    never found by a search or `get_chunks`, `check` reports them, and `refresh` (run at the end
    of every ingest) finishes the delete."""
    from affidavit.core.errors import StoreError

    c = StoreContract()
    s = QdrantStore(path=tmp_path / "q")
    s.upsert(c.items(), embedder=c.embedder.name)
    old, new, items = _versions(c, "eiffel")
    real = s.client

    class _FailingDeletes:
        def delete(self, collection_name: str, *args: Any, **kw: Any) -> Any:
            if collection_name == "affidavit_chunks":
                raise StoreError("Qdrant at q failed (delete): connection reset by peer")
            return real.delete(collection_name, *args, **kw)

        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

    s.client = _FailingDeletes()
    with pytest.raises(StoreError):
        s.upsert(items, embedder=c.embedder.name)
    found = _found(s, c)
    assert set(found) & new and not set(found) & old
    assert s.get_chunks(sorted(old)) == []
    problems = s.check()
    assert any("chunk points of a replaced version are still stored" in p for p in problems)
    assert any("writes were not finished" in p for p in problems)
    s.client = real
    # reopened, the store still shows one version; refresh finishes the replace
    s.close()
    s = QdrantStore(path=tmp_path / "q")
    assert not set(_found(s, c)) & old
    s.refresh()
    assert s.check() == []
    assert s.count()[1] == sum(len(i.chunks) for i in c.items()[1:]) + len(new)
    s.close()


@pytest.mark.parametrize("new_id", ["eiffel", "eiffel-2"], ids=["same-id", "new-id-replaces"])
def test_a_crash_at_any_step_of_a_replace_leaves_one_version_searchable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, new_id: str
) -> None:
    """The process dies before the n-th write call of a replace, for every n: the store opened
    again shows one version or the other, and `refresh` leaves it consistent."""
    import affidavit.store.qdrant as qdrant_module

    monkeypatch.setattr(qdrant_module, "_UPSERT_BATCH", 1)
    c = StoreContract()
    n = 0
    while True:
        n += 1
        path = tmp_path / f"q{n}"
        s = QdrantStore(path=path)
        s.upsert(c.items(), embedder=c.embedder.name)
        old, new, items = _versions(c, new_id)
        probed = _Probed(s, c, old, new)
        probed.crash_at = n
        s.client = probed
        try:
            s.upsert(items, embedder=c.embedder.name)
            done = True
        except _Crash:
            done = False
        s.client = probed._client
        s.close()
        s = QdrantStore(path=path)
        found = set(_found(s, c))
        _one_version(found, old, new)
        assert found & (old | new)
        s.refresh()
        _one_version(_found(s, c), old, new)
        assert s.check() == []
        s.close()
        if done:
            break
    assert n >= 4
