"""The packaged model evaluator on real text, and the offline fallback store end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from affidavit.core.settings import CorrectSettings, load_settings
from affidavit.core.types import Chunk
from affidavit.correct import CorrectiveRetrieval
from affidavit.correct.evaluator import ModelRelevanceEvaluator
from affidavit.correct.web import StoreFallbackSearch

pytestmark = pytest.mark.integration

QUESTION = "Which magazine was started first Arthur's Magazine or First for Women?"
# HaluEval qa dev row 0 (its own knowledge) and an unrelated passage from the same file
RELEVANT = (
    "Arthur's Magazine (1844–1846) was an American literary periodical published in "
    "Philadelphia in the 19th century.First for Women is a woman's magazine published by Bauer "
    "Media Group in the USA."
)
UNRELATED = (
    "The Oberoi family is an Indian family that is famous for its involvement in hotels, namely "
    "through The Oberoi Group.The Oberoi Group is a hotel company with its head office in Delhi."
)


@pytest.fixture(scope="module")
def evaluator() -> ModelRelevanceEvaluator:
    return ModelRelevanceEvaluator(threads=1)


def test_model_evaluator_separates_relevant_from_unrelated(
    evaluator: ModelRelevanceEvaluator,
) -> None:
    rel, unrel = evaluator.score(QUESTION, [RELEVANT, UNRELATED])
    assert rel.error is None and unrel.error is None
    assert rel.score >= 8.0  # Correct on its own
    assert unrel.score < 3.0  # Incorrect on its own


def test_model_evaluator_end_to_end_refinement(evaluator: ModelRelevanceEvaluator) -> None:
    r = CorrectiveRetrieval(evaluator).run(QUESTION, [Chunk(text=UNRELATED), Chunk(text=RELEVANT)])
    assert r.classification.kind == "correct"
    assert len(r.context) == 1
    assert "Arthur's Magazine" in r.chunks[0].text
    assert "Oberoi" not in r.chunks[0].text


def test_store_fallback_as_web_provider(tmp_path: Path, evaluator: ModelRelevanceEvaluator) -> None:
    from affidavit.ingest.pipeline import Ingestor
    from affidavit.retrieve.embedders import MiniLMEmbedder
    from affidavit.store.local import LocalStore

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "magazines.txt").write_text(RELEVANT, encoding="utf-8")
    (docs / "hotels.txt").write_text(UNRELATED, encoding="utf-8")
    store_dir = tmp_path / "fallback"
    report = Ingestor(LocalStore(store_dir), MiniLMEmbedder(threads=1)).ingest([docs])
    assert report.counts()["added"] == 2

    settings = load_settings(
        overrides={
            "correct": {"web_provider": "store", "fallback_store": str(store_dir)},
            "embed": {"threads": 1},
        }
    )
    web = StoreFallbackSearch.from_settings(settings)
    results = web.search(QUESTION, max_results=2)
    assert results and results[0].content is not None
    assert "Arthur's Magazine" in results[0].content

    # the user's own store had nothing useful: Incorrect -> answer from the fallback corpus
    crag = CorrectiveRetrieval(evaluator, web=web, settings=CorrectSettings(top_k_web_results=1))
    r = crag.run(QUESTION, [Chunk(text="Bananas are yellow.")])
    assert r.classification.kind == "incorrect"
    assert [c.origin for c in r.context] == ["web"]
    assert "Arthur's Magazine" in r.chunks[0].text
