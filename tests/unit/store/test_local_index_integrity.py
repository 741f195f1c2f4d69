"""Issue 26.4: derived index files are checked against READY and rebuilt when they disagree.

Every corruption below was found by a probe: a READY holding ``null`` (exit 3), ``vectors.npy``
re-saved with fewer rows (hybrid exit 3, ``--mode dense`` silently wrong hits), a shortened BM25
array (exit 3), and a broken generation that was never rebuilt.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from affidavit.core.types import Document
from affidavit.store.local import LocalStore
from affidavit.testing.store_contract import DOCS, StoreContract

C = StoreContract()
EXTRA = [
    Document(
        id=f"bridge-{i}",
        source=f"/notes/bridge-{i}.txt",
        title=f"Bridge {i}",
        text=f"Bridge number {i} crosses river {i}. It carries {i * 100} cars a day. "
        f"Its towers stand {i + 20} metres high.",
        metadata={},
    )
    for i in range(12)
]


def _filled(path: Path) -> LocalStore:
    s = LocalStore(path)
    s.upsert(C.items([*DOCS, *EXTRA]), embedder=C.embedder.name)
    s.refresh()
    return s


def _results(s: LocalStore) -> tuple[list[str], list[str], list[str]]:
    q = C.embedder.embed(["Marie Curie polonium"])[0]
    return (
        [h.chunk.id for h in s.search_lexical("polonium bridge river", 8)],
        [h.chunk.id for h in s.search_dense(q, 8)],
        [h.chunk.id for h in s.search_documents("polonium bridge", q, 8)],
    )


def _gen_dir(s: LocalStore) -> Path:
    return s.path / "index" / f"gen-{s.generation()}"


def _ready_null(d: Path) -> None:
    (d / "READY").write_text("null")


def _ready_list(d: Path) -> None:
    (d / "READY").write_text("[1, 2]")


def _vectors_ten_rows(d: Path) -> None:
    v = np.load(d / "vectors.npy")
    assert len(v) > 10
    np.save(d / "vectors.npy", v[:10])


def _vectors_same_shape_other_values(d: Path) -> None:
    # the shape agrees, the rows do not: only a checksum catches this one
    v = np.load(d / "vectors.npy")
    np.save(d / "vectors.npy", v[::-1].copy())


def _bm25_short_array(d: Path) -> None:
    p = d / "bm25" / "data.csc.index.npy"
    a = np.load(p)
    np.save(p, a[: len(a) // 2])


def _rowids_missing(d: Path) -> None:
    (d / "rowids.npy").unlink()


def _doc_ids_truncated(d: Path) -> None:
    p = d / "doc_ids.json"
    p.write_text(p.read_text()[:20])


CORRUPTIONS: dict[str, Callable[[Path], None]] = {
    "ready_null": _ready_null,
    "ready_list": _ready_list,
    "vectors_ten_rows": _vectors_ten_rows,
    "vectors_reordered": _vectors_same_shape_other_values,
    "bm25_short_array": _bm25_short_array,
    "rowids_missing": _rowids_missing,
    "doc_ids_truncated": _doc_ids_truncated,
}


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_a_corrupt_index_file_is_detected_and_never_answers(tmp_path: Path, name: str) -> None:
    s = _filled(tmp_path / "st")
    good = _results(s)
    d = _gen_dir(s)
    s.close()
    CORRUPTIONS[name](d)

    # a reader answers from a rebuilt index, never from the damaged files
    r = LocalStore(tmp_path / "st", read_only=True)
    assert r.check(), "store check must report the damaged index"
    assert _results(r) == good
    r.close()

    # a writer rebuilds the broken generation on disk (it used to return because gen-N existed)
    w = LocalStore(tmp_path / "st")
    assert _results(w) == good
    assert w.check() == []
    w.close()
    again = LocalStore(tmp_path / "st", read_only=True)
    assert again.check() == []
    assert _results(again) == good
    again.close()


def test_ready_records_counts_and_checksums(tmp_path: Path) -> None:
    s = _filled(tmp_path / "st")
    info = json.loads((_gen_dir(s) / "READY").read_text())
    docs, chunks = s.count()
    assert info["chunks"] == chunks and info["documents"] == docs
    files = info["files"]
    for name in ("rowids.npy", "vectors.npy", "chunk_doc.npy", "doc_vectors.npy", "doc_ids.json"):
        assert len(files[name]["sha256"]) == 64 and files[name]["bytes"] > 0
    assert any(k.startswith("bm25/") for k in files)
    s.close()


def test_rebuild_index_replaces_every_generation(tmp_path: Path) -> None:
    s = _filled(tmp_path / "st")
    good = _results(s)
    d = _gen_dir(s)
    _vectors_ten_rows(d)
    s.rebuild_index()
    assert s.check() == []
    assert _results(s) == good
    assert LocalStore(tmp_path / "st", read_only=True).check() == []
    s.close()


def test_a_generation_is_fsynced_before_it_is_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = LocalStore(tmp_path / "st")
    s.upsert(C.items([*DOCS, *EXTRA]), embedder=C.embedder.name)
    synced: set[str] = set()
    real_fsync, real_rename = os.fsync, os.rename
    published: list[str] = []

    def fsync(fd: int) -> None:
        synced.add(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    def rename(src: str | Path, dst: str | Path) -> None:
        src = Path(src)
        if Path(dst).name.startswith("gen-"):
            files = [p for p in src.rglob("*") if p.is_file()]
            assert files
            missing = [str(p) for p in files if str(p.resolve()) not in synced]
            assert not missing, f"published before fsync: {missing}"
            assert str(src.resolve()) in synced, "the folder itself was not fsynced"
            published.append(str(dst))
        real_rename(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "rename", rename)
    s.refresh()
    assert published
    assert str((tmp_path / "st" / "index").resolve()) in synced  # the rename itself is durable
    s.close()


def test_a_file_added_beside_the_index_or_an_absolute_entry_is_a_problem(tmp_path: Path) -> None:
    s = _filled(tmp_path / "st")
    d = _gen_dir(s)
    (d / "bm25" / "extra.npy").write_bytes(b"x")
    assert any("not listed" in p for p in s.index_problems())
    (d / "bm25" / "extra.npy").unlink()
    info = json.loads((d / "READY").read_text())
    info["files"]["/etc/hostname"] = {"bytes": 1, "sha256": "0" * 64}
    (d / "READY").write_text(json.dumps(info))
    assert any("malformed" in p for p in s.index_problems())
    s.close()
