"""``affidavit documents list | show | delete`` and re-ingesting the same content, through the real
CLI (CliRunner, fake embedder, real files, the local store and Qdrant local mode)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from affidavit.cli.main import app

DATA = Path(__file__).resolve().parents[1] / "data" / "ingest"
pytestmark = pytest.mark.integration


@pytest.fixture(params=["local", "qdrant"])
def env(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    if request.param == "qdrant":
        pytest.importorskip("qdrant_client")
        monkeypatch.setenv("AFFIDAVIT_STORE__BACKEND", "qdrant")
    monkeypatch.setenv("AFFIDAVIT_EMBED__BACKEND", "fake")
    monkeypatch.chdir(tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("sample.txt", "sample.md", "sample.pdf"):
        shutil.copy(DATA / name, docs / name)
    return docs


def _run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, list(args))
    return r.exit_code, r.stdout, r.stderr


def _listed(store: Path) -> dict[str, object]:
    code, out, err = _run("documents", "list", "--store", str(store), "--json")
    assert code == 0, err
    listed: dict[str, object] = json.loads(out)
    return listed


def test_reingesting_a_renamed_copy_adds_no_chunk(env: Path, tmp_path: Path) -> None:
    store = tmp_path / "st"
    assert _run("ingest", str(env), "--store", str(store))[0] == 0
    before = _listed(store)
    copy = tmp_path / "elsewhere"
    copy.mkdir()
    shutil.copy(env / "sample.pdf", copy / "renamed.pdf")
    code, out, _ = _run("ingest", str(copy), "--store", str(store), "--json")
    assert code == 0
    report = json.loads(out)
    assert report["counts"] == {
        "added": 0,
        "skipped": 1,
        "replaced": 0,
        "failed": 0,
        "pruned": 0,
    }
    after = _listed(store)
    assert after["chunks_total"] == before["chunks_total"]
    assert len(after["documents"]) == len(before["documents"])  # type: ignore[arg-type]
    [pdf] = [d for d in after["documents"] if d["mime"] == "application/pdf"]  # type: ignore[attr-defined]
    assert pdf["names"] == ["sample.pdf", "renamed.pdf"]
    code, out, _ = _run("documents", "list", "--store", str(store))
    assert code == 0 and "renamed.pdf" in out and str(tmp_path) not in out


def test_show_and_delete(env: Path, tmp_path: Path) -> None:
    store = tmp_path / "st"
    _run("ingest", str(env), "--store", str(store))
    docs = _listed(store)["documents"]
    [pdf] = [d for d in docs if d["source"] == "sample.pdf"]  # type: ignore[attr-defined]
    code, out, _ = _run("documents", "show", pdf["id"], "--store", str(store), "--json")
    assert code == 0 and json.loads(out) == pdf
    code, out, _ = _run("documents", "show", pdf["id"], "--store", str(store))
    assert code == 0 and "sample.pdf" in out and f"{pdf['chunks']} chunks" in out
    code, out, _ = _run("documents", "delete", pdf["id"], "--store", str(store), "--json")
    assert code == 0
    assert json.loads(out) == {
        "id": pdf["id"],
        "source": "sample.pdf",
        "chunks_removed": pdf["chunks"],
    }
    left = _listed(store)
    assert [d["source"] for d in left["documents"]] == ["sample.md", "sample.txt"]  # type: ignore[attr-defined]
    # its words are gone from the lexical index and its vectors from the dense one
    for mode in ("bm25", "dense"):
        code, out, _ = _run(
            "search", "wrought-iron lattice tower", "--store", str(store), "--mode", mode, "--json"
        )
        assert code == 0 and all(h["doc_id"] != pdf["id"] for h in json.loads(out))
    # the store is consistent after the delete (the local store's own check command)
    if not (store / "qdrant").exists():
        code, out, _ = _run("store", "check", "--store", str(store), "--json")
        assert code == 0 and json.loads(out)["problems"] == []
    # ingesting the file again brings it back
    assert _run("ingest", str(env), "--store", str(store))[0] == 0
    assert len(_listed(store)["documents"]) == 3  # type: ignore[arg-type]


def test_unknown_id_and_missing_store_exit_2_in_one_line(env: Path, tmp_path: Path) -> None:
    store = tmp_path / "st"
    _run("ingest", str(env), "--store", str(store))
    for cmd in ("show", "delete"):
        code, out, err = _run("documents", cmd, "doc-\x1b[31mnope", "--store", str(store))
        assert code == 2 and out == ""
        assert err.startswith("error: no document ") and err.count("\n") == 1
        assert "\x1b" not in err  # the id is untrusted text: printed escaped
    if (store / "qdrant").exists():
        return  # Qdrant's local mode creates its folder: "no store" is the local store's case
    code, _, err = _run("documents", "list", "--store", str(tmp_path / "none"))
    assert code == 2 and "no store" in err and "Traceback" not in err
