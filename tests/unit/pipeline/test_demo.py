"""The demo's argument handling (the full demo runs the embedded LLM: `make demo`)."""

from __future__ import annotations

from pathlib import Path

from affidavit import demo


def test_missing_corpus_folder_is_a_usage_error(tmp_path: Path) -> None:
    assert demo.main(["--corpus", str(tmp_path / "nope")]) == 2


def test_questions_include_one_the_corpus_cannot_answer() -> None:
    assert len(demo.SAMPLE_QUESTIONS) >= 3
    corpus = " ".join(demo._FALLBACK_DOCS.values())
    assert "World Cup" not in corpus and "World Cup" in demo.SAMPLE_QUESTIONS[-1]
