"""The LLM rubric evaluator (strict JSON, fail closed) and the model evaluator's arithmetic."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from affidavit.core.errors import GenerationError, ModelError
from affidavit.core.types import StageScore
from affidavit.correct.evaluator import (
    SCORE_SCHEMA,
    LLMRelevanceEvaluator,
    ModelRelevanceEvaluator,
    PairScorerRelevanceEvaluator,
    bm25_saturation,
    content_terms,
    fit_logistic,
    parse_llm_score,
)
from affidavit.correct.fakes import ScriptedGenerator


@pytest.mark.parametrize(
    ("reply", "score", "has_error"),
    [
        ('{"score": 7, "reason": "mostly"}', 7.0, False),
        ('  {"score": 0, "reason": "unrelated"}\n', 0.0, False),
        ('{"score": 10, "reason": "direct"}', 10.0, False),
        ('{"score": 11, "reason": "x"}', 0.0, True),  # out of range
        ('{"score": -1, "reason": "x"}', 0.0, True),
        ('{"score": 7.5, "reason": "x"}', 0.0, True),  # not an integer
        ('{"score": "9", "reason": "x"}', 0.0, True),
        ('{"score": true, "reason": "x"}', 0.0, True),  # bool is not a score
        ('{"reason": "no score"}', 0.0, True),
        ("[9]", 0.0, True),
        ("Score: 9", 0.0, True),
        ('```json\n{"score": 9, "reason": "x"}\n```', 0.0, True),  # strict: no fences
        ("", 0.0, True),
    ],
)
def test_parse_llm_score(reply: str, score: float, has_error: bool) -> None:
    r = parse_llm_score(reply)
    assert r.score == score
    assert (r.error is not None) == has_error


def test_llm_evaluator_sends_rubric_schema_and_passage() -> None:
    gen = ScriptedGenerator(['{"score": 9, "reason": "states it"}', "garbage"])
    ev = LLMRelevanceEvaluator(gen)
    out = ev.score("How tall is the tower?", ["The tower is 330 m tall.", "Cats."])
    assert [r.score for r in out] == [9.0, 0.0]
    assert out[0].reason == "states it" and out[0].error is None
    assert out[1].error is not None and "unparsable" in out[1].error
    call = gen.calls[0]
    assert call["json_schema"] == SCORE_SCHEMA
    assert "Rubric" in call["messages"][0].content
    assert "How tall is the tower?" in call["messages"][1].content
    assert "The tower is 330 m tall." in call["messages"][1].content


def test_llm_evaluator_generator_failure_scores_zero() -> None:
    ev = LLMRelevanceEvaluator(ScriptedGenerator([GenerationError("timeout")]))
    (r,) = ev.score("q", ["p"])
    assert r.score == 0.0 and r.error is not None and "timeout" in r.error


def test_llm_evaluator_cuts_long_passages_and_says_so() -> None:
    gen = ScriptedGenerator(['{"score": 5, "reason": "partial"}'])
    ev = LLMRelevanceEvaluator(gen, max_passage_chars=100)
    (r,) = ev.score("q", ["x" * 500])
    assert "cut at 100" in r.reason
    assert "x" * 101 not in gen.calls[0]["messages"][1].content


def _one_hot_embed(vocab: dict[str, np.ndarray]):  # type: ignore[no-untyped-def]
    def embed(texts: Sequence[str]) -> np.ndarray:
        return np.stack([vocab[t] for t in texts])

    return embed


def test_model_evaluator_applies_the_calibration() -> None:
    q, p1, p2 = "tower height", "tower height is 330", "cats"
    vocab = {
        q: np.array([1.0, 0.0]),
        p1: np.array([0.6, 0.8]),  # cosine 0.6
        p2: np.array([0.0, 1.0]),  # cosine 0.0
    }
    cal = {"coef": [2.0, 1.0, 0.0], "intercept": -1.0, "avgdl": 40.0}
    ev = ModelRelevanceEvaluator(_one_hot_embed(vocab), calibration=cal)
    out = ev.score(q, [p1, p2])
    lex1 = bm25_saturation(q, p1)
    expected1 = 10 / (1 + np.exp(-(2.0 * 0.6 + 1.0 * lex1 - 1.0)))
    assert out[0].score == pytest.approx(expected1, abs=1e-3)
    assert out[1].score == pytest.approx(10 / (1 + np.exp(1.0)), abs=1e-3)
    assert "cos=0.600" in out[0].reason


def test_model_evaluator_embedder_failure_fails_closed() -> None:
    def broken(texts: Sequence[str]) -> np.ndarray:
        raise RuntimeError("onnx exploded")

    ev = ModelRelevanceEvaluator(broken, calibration={"coef": [1.0, 1.0, 1.0], "intercept": 5.0})
    out = ev.score("q", ["a", "b"])
    assert [r.score for r in out] == [0.0, 0.0]
    assert all(r.error and "onnx exploded" in r.error for r in out)


def test_model_evaluator_rejects_bad_calibration() -> None:
    with pytest.raises(ModelError):
        ModelRelevanceEvaluator(lambda t: np.zeros((len(t), 2)), calibration={"coef": [1.0]})
    with pytest.raises(ModelError):
        ModelRelevanceEvaluator(lambda t: np.zeros((len(t), 2)), calibration={"intercept": 0})


@pytest.mark.parametrize(
    "calibration",
    [
        {"coef": [0.0, 0.0, 0.0], "intercept": float("inf")},
        {"coef": [float("inf"), 0.0, 0.0], "intercept": 0.0},
        {"coef": [1.0, float("nan"), 1.0], "intercept": 0.0},
        {"coef": [1.0, 1.0, 1.0], "intercept": float("nan")},
        {"coef": [1.0, 1.0, 1.0], "intercept": 0.0, "avgdl": 0},
        {"coef": [1.0, 1.0, 1.0], "intercept": 0.0, "avgdl": -5},
        {"coef": [1.0, 1.0, 1.0], "intercept": 0.0, "avgdl": float("nan")},
    ],
)
def test_a_calibration_that_is_not_finite_is_refused_never_used(
    calibration: dict[str, object],
) -> None:
    # an infinite intercept or weight graded every passage 10 ("cats" Correct for any
    # question); json.loads reads `Infinity` and `NaN` in the file as such numbers
    with pytest.raises(ModelError, match="calibration"):
        ModelRelevanceEvaluator(
            lambda t: np.ones((len(t), 2)) / np.sqrt(2), calibration=calibration
        )


def test_packaged_calibration_is_sane() -> None:
    from affidavit.correct.evaluator import load_calibration

    cal = load_calibration()
    assert len(cal["coef"]) == 3
    # more similarity and more term overlap must never lower the score
    assert all(c > 0 for c in cal["coef"])
    assert cal["fitted_on"]["file"] == "halueval/qa_dev.jsonl"


def test_bm25_saturation_hand_computed() -> None:
    # question terms {tower, height}; passage "tower tower" (dl=2): tf(tower)=2, height absent
    k1, b, avgdl = 1.2, 0.75, 40.0
    norm = k1 * (1 - b + b * 2 / avgdl)
    expected = (2 * (k1 + 1) / (2 + norm)) / (2 * (k1 + 1))
    assert bm25_saturation("the tower height?", "tower tower") == pytest.approx(expected)
    assert bm25_saturation("the of", "anything") == 0.0  # no content terms
    assert bm25_saturation("tower", "") == 0.0


def test_content_terms_drop_stopwords_and_stem() -> None:
    assert content_terms("Which of the towers is it?") == ["tower"]
    # plural and possessive forms meet the same term
    assert content_terms("Paris's tower") == content_terms("paris towers")


def test_fit_logistic_recovers_a_separable_direction() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 2))
    y = (x[:, 0] - 0.5 * x[:, 1] + 0.3 + rng.normal(scale=0.3, size=400) > 0).astype(float)
    w, b = fit_logistic(x, y)
    assert w[0] > 0 > w[1]
    acc = ((x @ w + b > 0) == (y == 1)).mean()
    assert acc > 0.9


class FakePairScorer:
    name = "fake-nli"

    def __init__(self, probs: list[tuple[float, float, float]], error: str | None = None) -> None:
        self.probs = probs
        self.error = error
        self.pairs: list[tuple[str, str]] = []

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[StageScore]:
        self.pairs.extend(pairs)
        return [
            StageScore(
                stage="cross_encoder",
                p_entail=e,
                p_neutral=n,
                p_contradict=c,
                label="supported",
                error=self.error,
            )
            for e, n, c in self.probs
        ]


def test_pair_scorer_relevance_signals() -> None:
    scorer = FakePairScorer([(0.7, 0.2, 0.1), (0.05, 0.9, 0.05)])
    ev = PairScorerRelevanceEvaluator(scorer)
    out = ev.score("q?", ["a", "b"])
    assert [r.score for r in out] == [pytest.approx(8.0), pytest.approx(1.0)]
    assert scorer.pairs == [("q?", "a"), ("q?", "b")]  # question as claim, passage as evidence
    ent = PairScorerRelevanceEvaluator(scorer, signal="entail").score("q?", ["a", "b"])
    assert [r.score for r in ent] == [pytest.approx(7.0), pytest.approx(0.5)]


def test_pair_scorer_errors_fail_closed() -> None:
    out = PairScorerRelevanceEvaluator(FakePairScorer([(0.9, 0.05, 0.05)], error="too long")).score(
        "q", ["a"]
    )
    assert out[0].score == 0.0 and out[0].error == "too long"
    wrong = PairScorerRelevanceEvaluator(FakePairScorer([])).score("q", ["a"])
    assert wrong[0].score == 0.0 and wrong[0].error
    with pytest.raises(ValueError):
        PairScorerRelevanceEvaluator(FakePairScorer([]), signal="bogus")
