"""examples/evaluate_dataset.py scores its small dataset offline with every framework."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")
pytest.importorskip("haystack")


def test_the_dataset_example_runs_offline_in_every_framework(
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = Path(__file__).resolve().parents[3]
    sys.path.insert(0, str(root / "examples"))
    try:
        import evaluate_dataset

        assert evaluate_dataset.main([]) == 0
    finally:
        sys.path.remove(str(root / "examples"))
    out = capsys.readouterr().out
    for name in ("langchain", "llamaindex", "haystack"):
        assert f"{name}: 6/6 verdicts match the labels" in out
    assert "haystack mean score: 0.50" in out
    assert "the date 4 March 1925 disagrees with 4 March 1890" in out
