"""Issue 27.5: a local file's chunks show its path relative to the ingested folder (or under a
configured URL prefix), never this machine's absolute path."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from affidavit.cli.main import app
from affidavit.core.settings import IngestSettings
from affidavit.ingest.pipeline import Ingestor
from affidavit.store.local import LocalStore
from affidavit.testing.embedder import FakeEmbedder


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "srv" / "docs"
    (root / "towers").mkdir(parents=True)
    (root / "towers" / "eiffel tower.txt").write_text(
        "The Eiffel Tower is in Paris. It was completed in March 1889.", encoding="utf-8"
    )
    (root / "records.jsonl").write_text(
        json.dumps({"id": "r1", "text": "Radium glows in the dark."})
        + "\n"
        + json.dumps({"id": "r2", "text": "The Moon landing.", "url": "https://x.example/moon"})
        + "\n",
        encoding="utf-8",
    )
    return root


def _everything_shown(store: LocalStore) -> str:
    ids = [r[0] for r in store._db.execute("SELECT chunk_id FROM chunks")]
    chunks = store.get_chunks(ids)
    docs = [store.get_document(c.doc_id or "") for c in chunks]
    return json.dumps(
        [c.model_dump() for c in chunks] + [d.model_dump() for d in docs if d is not None]
    )


def test_chunk_urls_are_relative_to_the_ingested_folder(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    store = LocalStore(tmp_path / "store")
    report = Ingestor(store, FakeEmbedder()).ingest([root.resolve()])
    assert report.counts()["added"] == 3
    ids = [r[0] for r in store._db.execute("SELECT chunk_id FROM chunks")]
    urls = sorted(c.url or "" for c in store.get_chunks(ids))
    assert urls == [
        "https://x.example/moon",  # a record's own URL is kept
        "records.jsonl#L1",
        "towers/eiffel tower.txt",
    ]
    shown = _everything_shown(store) + json.dumps([o.model_dump() for o in report.outcomes])
    assert str(tmp_path) not in shown
    # a file given on its own shows its name; ids (and so incremental ingest) do not change
    again = Ingestor(store, FakeEmbedder()).ingest([root / "towers" / "eiffel tower.txt"])
    assert again.counts()["skipped"] == 1


def test_a_configured_url_prefix(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    store = LocalStore(tmp_path / "store")
    settings = IngestSettings(url_prefix="file:///srv/docs/")
    Ingestor(store, FakeEmbedder(), settings).ingest([root])
    ids = [r[0] for r in store._db.execute("SELECT chunk_id FROM chunks")]
    urls = {c.url for c in store.get_chunks(ids)}
    assert "file:///srv/docs/towers/eiffel%20tower.txt" in urls
    assert str(tmp_path) not in _everything_shown(store)


def test_search_json_shows_no_absolute_path(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    env = {"AFFIDAVIT_EMBED__BACKEND": "fake"}
    runner = CliRunner()
    store = tmp_path / "store"
    done = runner.invoke(app, ["ingest", str(root.resolve()), "--store", str(store)], env=env)
    assert done.exit_code == 0, done.output
    found = runner.invoke(
        app, ["search", "Eiffel Tower 1889", "--store", str(store), "--json"], env=env
    )
    assert found.exit_code == 0, found.output
    assert "towers/eiffel tower.txt" in found.output
    assert str(tmp_path) not in found.output
