"""Fixtures shared by the integration tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from affidavit.cli.main import app

SAMPLE = Path(__file__).resolve().parents[2] / "sample_corpus" / "docs"


@pytest.fixture(scope="module")
def corpus_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of the bundled sample corpus, ingested with ``affidavit ingest`` as a user would
    (one per test module)."""
    pytest.importorskip("onnxruntime")
    where = tmp_path_factory.mktemp("sample") / "store"
    result = CliRunner().invoke(app, ["ingest", str(SAMPLE), "--store", str(where)])
    assert result.exit_code == 0, result.output
    return where
