"""Issue 27.3: a multi-part question is graded part by part, each passage keeping its best grade."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from affidavit.core.correction import RelevanceScore
from affidavit.correct.fakes import KeywordEvaluator
from affidavit.correct.multipart import MultiPartEvaluator, question_parts

EIFFEL = "When was the Eiffel Tower built, how tall is it, and who designed it?"


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        (
            EIFFEL,
            [
                "When was the Eiffel Tower built",
                "how tall is it Eiffel Tower",
                "who designed it Eiffel Tower",
            ],
        ),
        (
            "Who discovered polonium? When did Marie Curie die?",
            ["Who discovered polonium", "When did Marie Curie die"],
        ),
        ("Who discovered polonium and radium?", []),
        ("Which magazine was started first, Arthur's Magazine or First for Women?", []),
        ("Who wrote it, and when?", []),  # "when" alone is no part: nothing follows it
        ("", []),
    ],
)
def test_question_parts(question: str, parts: list[str]) -> None:
    assert question_parts(question) == parts


def test_a_part_answering_passage_keeps_its_best_grade() -> None:
    inner = KeywordEvaluator()
    ev = MultiPartEvaluator(inner)
    height = "It now stands about 330 metres tall, the Eiffel Tower."
    unrelated = "The Saturn V was a rocket."
    whole = inner.score(EIFFEL, [height, unrelated])
    graded = ev.score(EIFFEL, [height, unrelated])
    assert graded[0].score > whole[0].score  # "how tall is it Eiffel Tower": 3 of 3 terms
    assert graded[0].score == 10.0 and "how tall" in graded[0].reason
    assert graded[1].score == whole[1].score == 0.0
    assert ev.name == "fake:keyword+parts"


def test_one_part_questions_go_straight_through() -> None:
    inner = KeywordEvaluator()
    ev = MultiPartEvaluator(inner)
    assert ev.score("Who discovered polonium?", ["Curie discovered polonium."]) == inner.score(
        "Who discovered polonium?", ["Curie discovered polonium."]
    )
    assert len(inner.calls) == 2  # once through the wrapper, once directly


class _FailsOnParts:
    name = "flaky"

    def score(self, question: str, passages: Sequence[str]) -> list[RelevanceScore]:
        if question == EIFFEL:
            return [RelevanceScore(score=4.0) for _ in passages]
        return [RelevanceScore(score=9.0, error="model failed") for _ in passages]


def test_a_failed_part_grade_never_wins() -> None:
    graded = MultiPartEvaluator(_FailsOnParts()).score(EIFFEL, ["x"])
    assert graded[0].score == 4.0 and graded[0].error is None


def test_settings_wrap_the_model_evaluator(monkeypatch: pytest.MonkeyPatch) -> None:
    from affidavit.core.settings import load_settings
    from affidavit.correct import evaluator as evaluator_module
    from affidavit.correct.pipeline import build_corrective_retrieval

    class _Model(KeywordEvaluator):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__()

    monkeypatch.setattr(evaluator_module, "ModelRelevanceEvaluator", _Model)
    crag = build_corrective_retrieval(load_settings())
    assert isinstance(crag.evaluator, MultiPartEvaluator)
    off = build_corrective_retrieval(load_settings(overrides={"correct": {"grade_parts": False}}))
    assert not isinstance(off.evaluator, MultiPartEvaluator)
