"""Corrective retrieval fails closed: a grade that could not be computed never counts, a
scorer that crashes or returns NaN is recorded, and web text is never cut mid-sentence."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Sequence

import numpy as np
import pytest

from affidavit.core.correction import RelevanceScore, WebResult
from affidavit.core.settings import CorrectSettings
from affidavit.core.types import Chunk
from affidavit.correct import CorrectiveRetrieval
from affidavit.correct.evaluator import LLMRelevanceEvaluator, ModelRelevanceEvaluator
from affidavit.correct.fakes import KeywordEvaluator, ScriptedGenerator
from affidavit.correct.refine import refine_chunk

CHUNK = Chunk(text="The tower is 330 metres tall. It opened in 1889.", url="https://a.example/1")
QUESTION = "How tall is the tower?"


class Crashing:
    name = "crash"

    def score(self, question: str, passages: Sequence[str]) -> list[RelevanceScore]:
        raise RuntimeError("evaluator timed out")


class FailedButHigh:
    """Reports a failure but leaves a high score on it (the contract says 0; not every
    evaluator someone plugs in keeps it)."""

    name = "failed-but-high"

    def score(self, question: str, passages: Sequence[str]) -> list[RelevanceScore]:
        return [RelevanceScore(score=9.0, error="timed out") for _ in passages]


def test_failed_grades_never_count_even_with_a_zero_lower_threshold() -> None:
    # lower_threshold 0 ("never Incorrect"): a failed grade (0) used to be >= 0, so a chunk
    # the evaluator could not grade was selected as Ambiguous context and kept whole
    settings = CorrectSettings(lower_threshold=0.0, keep_whole_threshold=None)
    crag = CorrectiveRetrieval(Crashing(), settings=settings, sentence_evaluator=KeywordEvaluator())
    r = crag.run(QUESTION, [CHUNK])
    assert r.classification.kind == "incorrect"
    assert r.context == ()
    assert r.trace.grades[0].error is not None
    assert r.classification.reason == "no chunk could be graded (1 failed)"
    # and with both thresholds at 0 it is not "correct" either
    both = CorrectSettings(lower_threshold=0.0, upper_threshold=0.0)
    r = CorrectiveRetrieval(Crashing(), settings=both, sentence_evaluator=KeywordEvaluator()).run(
        QUESTION, [CHUNK]
    )
    assert r.classification.kind == "incorrect" and r.context == ()


def test_a_grade_with_an_error_never_counts_whatever_its_score() -> None:
    r = CorrectiveRetrieval(FailedButHigh(), sentence_evaluator=KeywordEvaluator()).run(
        QUESTION, [CHUNK]
    )
    assert r.classification.kind == "incorrect"
    assert r.context == ()
    assert r.trace.grades[0].score == 0.0 and r.trace.grades[0].error == "timed out"


def test_a_sentence_whose_score_failed_is_never_kept() -> None:
    # strip_threshold 0: a failed sentence score (0) used to pass it
    out = refine_chunk(
        QUESTION,
        CHUNK,
        grade=6.0,
        evaluator=FailedButHigh(),
        strip_threshold=0.0,
        keep_whole_threshold=8.0,
    )
    assert out is None


def test_a_crashing_sentence_evaluator_fails_closed_and_is_recorded() -> None:
    # the chunk grader works, the sentence scorer crashes: the run used to raise
    grader = KeywordEvaluator(fixed={CHUNK.text: 6.0})
    settings = CorrectSettings(keep_whole_threshold=None, keep_best_when_empty=False)
    r = CorrectiveRetrieval(grader, settings=settings, sentence_evaluator=Crashing()).run(
        QUESTION, [CHUNK]
    )
    assert r.classification.kind == "ambiguous"
    assert r.context == ()
    assert any("evaluator timed out" in e for e in r.trace.errors)
    # a chunk graded >= upper is still kept whole; its sentences say why they were not scored
    r = CorrectiveRetrieval(
        KeywordEvaluator(fixed={CHUNK.text: 9.0}), settings=settings, sentence_evaluator=Crashing()
    ).run(QUESTION, [CHUNK])
    assert [c.kept_whole for c in r.context] == [True]
    assert all(s.error and "timed out" in s.error for s in r.context[0].strips)


def test_a_nan_from_the_model_evaluator_fails_that_passage_closed() -> None:
    def embed(texts: Sequence[str]) -> np.ndarray:
        vecs = np.array([[1.0, 0.0] for _ in texts])
        vecs[2] = np.nan  # e.g. a zero vector normalised
        return vecs

    ev = ModelRelevanceEvaluator(embed, calibration={"coef": [2.0, 1.0, 0.0], "intercept": -1.0})
    out = ev.score("tower height", ["tower height", "broken"])  # used to raise ValidationError
    assert out[0].error is None and out[0].score > 0
    assert out[1].score == 0.0 and out[1].error is not None and "not a number" in out[1].error


class _Web:
    name = "fakeweb"

    def __init__(self, results: list[WebResult]) -> None:
        self.results = results

    def search(self, query: str, *, max_results: int) -> list[WebResult]:
        return self.results[:max_results]


def test_web_text_is_cut_at_a_sentence_end_and_the_cut_is_recorded() -> None:
    # the page was cut at max_web_chars mid-number: "... is 1,000" stood as evidence for a
    # population of 1,000 and nothing in the trace said the page had been cut
    first = "Filler sentence about the town. " * 3
    page = first + "The population of the town is 1,000,000 people. More text follows here."
    cut_at = page.index("1,000,000") + len("1,000")
    ev = KeywordEvaluator()
    crag = CorrectiveRetrieval(
        ev,
        web=_Web([WebResult(url="https://w.example/p", content=page, provider="fakeweb", rank=1)]),
        settings=CorrectSettings(keep_whole_threshold=0.0),
        max_web_chars=cut_at,
    )
    r = crag.run("population of the town", [])
    web = [c for c in r.context if c.origin == "web"]
    assert len(web) == 1
    assert web[0].chunk.text == first.strip()
    assert "1,000" not in web[0].chunk.text
    assert any("https://w.example/p" in d and "cut" in d for d in r.trace.dropped)


def test_a_chunk_with_no_text_is_not_graded_on_its_title() -> None:
    # grade_with_title graded "Eiffel Tower\n" and an empty passage reached the prompt whole
    empty = Chunk(text="  ", title="Tower height", url="https://a.example/empty")
    r = CorrectiveRetrieval(KeywordEvaluator()).run("tower height", [empty])
    assert r.context == ()
    assert r.trace.grades[0].score == 0.0 and r.trace.grades[0].error is not None


def test_the_ask_trace_keeps_the_thresholds_and_the_rewrite() -> None:
    # the ask trace kept the query but not why it was the question itself (the rewrite failed),
    # nor the numeric thresholds the classification applied
    from affidavit.claims.extractor import RuleBasedExtractor
    from affidavit.core.errors import GenerationError
    from affidavit.core.settings import load_settings
    from affidavit.core.types import Hit
    from affidavit.correct.fakes import ScriptedGenerator
    from affidavit.correct.rewrite import LLMQueryRewriter
    from affidavit.pipeline import AskPipeline
    from affidavit.testing.fake_llm import FakeGenerator

    class OneHit:
        def search(self, query: str, k: int = 10, mode: str = "hybrid", filters: object = None):  # type: ignore[no-untyped-def]
            return [Hit(chunk=CHUNK, score=1.0, rank=1, mode="bm25")]

    class NoVerifier:
        def verify(self, claim: object, chunks: object) -> object:
            raise AssertionError("nothing to verify: no context")

    settings = CorrectSettings(upper_threshold=7.5, lower_threshold=2.5)
    crag = CorrectiveRetrieval(
        KeywordEvaluator(fixed={CHUNK.text: 1.0}),
        web=_Web([]),
        rewriter=LLMQueryRewriter(ScriptedGenerator([GenerationError("llm down")])),
        settings=settings,
    )
    llm = FakeGenerator(["never called [1]."])
    pipe = AskPipeline(
        retriever=OneHit(),
        generator=llm,
        extractor=RuleBasedExtractor(),
        verifier=NoVerifier(),  # type: ignore[arg-type]
        settings=load_settings(),
        corrector=crag,
    )
    result = pipe.ask(QUESTION)
    detail = result.trace.corrective_detail
    assert result.trace.classification == "incorrect"
    assert (detail["upper_threshold"], detail["lower_threshold"]) == (7.5, 2.5)
    assert detail["web_query"] == {
        "original": QUESTION,
        "query": QUESTION,
        "rewritten": False,
        "error": "rewrite failed: llm down",
    }


def test_a_web_page_whose_grade_failed_is_not_used_and_says_why() -> None:
    # a local chunk whose grade failed is never used; a web page's was refined all the same
    # (its sentences kept), and the failure appeared nowhere in the trace
    page = "The tower is 330 metres tall. It opened in 1889."
    crag = CorrectiveRetrieval(
        FailedButHigh(),
        web=_Web([WebResult(url="https://w.example/p", content=page, provider="fakeweb", rank=1)]),
        sentence_evaluator=KeywordEvaluator(),
    )
    r = crag.run(QUESTION, [])
    assert [c.origin for c in r.context] == []
    assert any(d.startswith("https://w.example/p") and "timed out" in d for d in r.trace.dropped)
    assert r.trace.web is not None and [x.used for x in r.trace.web.results] == [False]


# -- the LLM evaluator's time budget -------------------------------------------------------------


class _SlowGenerator(ScriptedGenerator):
    """Answers every grading call with ``score`` after ``pause_s`` (a slow local LLM)."""

    def __init__(self, pause_s: float, score: int = 10) -> None:
        super().__init__([])
        self.pause_s, self.score = pause_s, score

    def generate(self, messages, *, max_tokens=None, json_schema=None):  # type: ignore[no-untyped-def]
        import time

        self.calls.append({"messages": list(messages)})
        time.sleep(self.pause_s)
        return json.dumps({"score": self.score, "reason": "states it"})


TOWERS = [
    Chunk(text=f"Tower {i} is 330 metres tall. It opened in 1889.", url=f"https://a.example/{i}")
    for i in range(10)
]


def test_the_llm_evaluator_stops_grading_when_its_budget_runs_out() -> None:
    import time

    llm = _SlowGenerator(0.1)
    evaluator = LLMRelevanceEvaluator(llm, budget_s=0.25)
    started = time.perf_counter()
    scores = evaluator.score(QUESTION, [c.text for c in TOWERS])
    assert time.perf_counter() - started < 0.6  # ten calls would take a second
    graded = [s for s in scores if s.error is None]
    assert 1 <= len(graded) <= 4 and len(llm.calls) == len(graded)
    assert all(s.score == 10.0 for s in graded)
    # the rest are failed grades (0, with the reason), never left as relevant
    assert all(s.score == 0.0 and "budget" in (s.error or "") for s in scores[len(graded) :])


def test_chunks_left_ungraded_by_the_budget_never_count_and_the_trace_says_why() -> None:
    llm = _SlowGenerator(0.1)
    settings = CorrectSettings(top_k_documents=10, llm_budget_s=0.25)
    crag = CorrectiveRetrieval(
        LLMRelevanceEvaluator(llm), settings=settings, sentence_evaluator=KeywordEvaluator()
    )
    r = crag.run(QUESTION, TOWERS)
    ungraded = [g for g in r.trace.grades if g.error is not None]
    assert ungraded and all("budget" in (g.error or "") for g in ungraded)
    used = {c.source_chunk_id for c in r.context}
    assert not used & {g.chunk_id for g in ungraded}  # never used as evidence
    assert f"{len(ungraded)} chunk(s) could not be graded" in r.classification.reason
    assert any("budget" in e for e in r.trace.errors)
    assert any(d.startswith(ungraded[0].chunk_id) and "budget" in d for d in r.trace.dropped)


def test_a_question_whose_budget_ran_out_before_any_grade_is_incorrect() -> None:
    # the budget spans the question: web results graded after it ran out are not graded either
    page = "The tower is 330 metres tall. It opened in 1889."
    llm = _SlowGenerator(0.3, score=5)  # Ambiguous: the web is searched
    crag = CorrectiveRetrieval(
        LLMRelevanceEvaluator(llm),
        web=_Web([WebResult(url="https://w.example/p", content=page, provider="fakeweb", rank=1)]),
        settings=CorrectSettings(lower_threshold=0.0, llm_budget_s=0.2),
        sentence_evaluator=KeywordEvaluator(),
    )
    r = crag.run(QUESTION, [CHUNK])
    # the one chunk took the whole budget: its grade stands (a call is not interrupted)...
    assert r.trace.grades[0].error is None
    # ...and the web page found after it is not graded and not used
    assert r.trace.web is not None and [x.used for x in r.trace.web.results] == [False]
    assert any(d.startswith("https://w.example/p") and "budget" in d for d in r.trace.dropped)
    assert len(llm.calls) == 1


def test_sentences_left_unscored_by_the_budget_are_never_kept() -> None:
    # the LLM scores sentences too when the model evaluator cannot load
    llm = _SlowGenerator(0.15)
    settings = CorrectSettings(llm_budget_s=0.2, keep_whole_threshold=None, sentence_window=0)
    crag = CorrectiveRetrieval(LLMRelevanceEvaluator(llm), settings=settings)
    chunk = Chunk(text="Tower 1 is 330 metres tall. Tower 2 is 300 metres tall.", url="u")
    r = crag.run(QUESTION, [chunk])
    assert r.trace.grades[0].error is None  # graded within the budget
    kept = [c for c in r.context if not c.kept_whole]
    assert kept == [] or all(st.error is None for c in kept for st in c.strips if st.kept)
    assert any("sentence score" in e and "budget" in e for e in r.trace.errors)


class ReturnsNoScores:
    """A plugged-in evaluator that returns, for each passage, something that is no valid
    `RelevanceScore`: a NaN or infinite score built without validation, None, a dict."""

    name = "no-scores"

    def __init__(self, item: object) -> None:
        self.item = item

    def score(self, question: str, passages: Sequence[str]) -> list[RelevanceScore]:
        return [self.item for _ in passages]  # type: ignore[misc]


NOT_SCORES = [
    RelevanceScore.model_construct(score=float("nan"), reason="", error=None),
    RelevanceScore.model_construct(score=float("inf"), reason="", error=None),
    RelevanceScore.model_construct(score=42.0, reason="", error=None),
    None,
    {"score": 9.0, "reason": "a dict"},
]


@pytest.mark.parametrize("item", NOT_SCORES)
def test_an_evaluator_returning_no_valid_score_fails_closed_and_says_so(item: object) -> None:
    # each crashed the stage with an untyped error (pydantic's ValidationError, AttributeError:
    # not a CorrectionError, so `ask` stopped with "a bug in affidavit")
    crag = CorrectiveRetrieval(ReturnsNoScores(item), sentence_evaluator=KeywordEvaluator())
    r = crag.run(QUESTION, [CHUNK])
    assert r.classification.kind == "incorrect"
    assert r.context == ()
    assert r.trace.grades[0].score == 0.0 and r.trace.grades[0].error is not None
    assert any("no valid score" in e for e in r.trace.errors)


@pytest.mark.parametrize("item", NOT_SCORES)
def test_a_sentence_evaluator_returning_no_valid_score_keeps_no_sentence(item: object) -> None:
    out = refine_chunk(
        QUESTION,
        CHUNK,
        grade=6.0,
        evaluator=ReturnsNoScores(item),
        strip_threshold=0.0,
        keep_whole_threshold=8.0,
    )
    assert out is None


def test_an_evaluator_may_return_any_iterable_but_is_read_no_further_than_asked() -> None:
    class Endless:
        name = "endless"

        def score(self, question: str, passages: Sequence[str]) -> Iterator[RelevanceScore]:
            return itertools.repeat(RelevanceScore(score=9.0))

    r = CorrectiveRetrieval(Endless(), sentence_evaluator=KeywordEvaluator()).run(  # type: ignore[arg-type]
        QUESTION, [CHUNK]
    )
    # more scores than passages: a wrong count, every grade failed (never hangs)
    assert r.classification.kind == "incorrect" and r.context == ()
    assert any("wrong number" in (g.error or "") for g in r.trace.grades)


def test_chunks_past_top_k_documents_are_named_in_the_trace() -> None:
    # the retriever (or a caller of `run`) gave more chunks than top_k_documents: those past it
    # were never graded nor used, and nothing said so (the answer's chunk at rank 2 vanished)
    unrelated = Chunk(text="Cats sleep a lot.", url="https://c.example/2")
    for kind_settings in (CorrectSettings(top_k_documents=1), CorrectSettings(top_k_documents=2)):
        r = CorrectiveRetrieval(KeywordEvaluator(), settings=kind_settings).run(
            QUESTION, [unrelated, CHUNK, unrelated]
        )
        k = kind_settings.top_k_documents
        assert len(r.trace.grades) == k
        assert f"{3 - k} retrieved chunk(s) past correct.top_k_documents ({k})" in "".join(
            r.trace.dropped
        )
    # none past it: nothing said
    r = CorrectiveRetrieval(KeywordEvaluator()).run(QUESTION, [CHUNK])
    assert not any("top_k_documents" in d for d in r.trace.dropped)


def test_a_page_the_fetcher_cut_at_its_size_cap_loses_its_last_sentence_and_says_so() -> None:
    # the fetcher cut the body at max_bytes and said nothing: a page whose text ended inside
    # "1,000,000 people" gave "... is 1,000" as evidence, short of max_web_chars so never cut
    # again, and no trace said the page had been cut
    from affidavit.correct.base import FetchedPage

    url = "https://w.example/big"
    cut_text = "Filler sentence about the town. The population of the town is 1,000"

    class CutFetcher:
        def fetch(self, u: str) -> FetchedPage:
            return FetchedPage(url=u, final_url=u, status=200, text=cut_text, truncated=True)

    crag = CorrectiveRetrieval(
        KeywordEvaluator(),
        web=_Web([WebResult(url=url, provider="fakeweb", rank=1)]),
        settings=CorrectSettings(keep_whole_threshold=0.0),
        fetcher=CutFetcher(),
    )
    r = crag.run("population of the town", [])
    web = [c for c in r.context if c.origin == "web"]
    assert [c.chunk.text for c in web] == ["Filler sentence about the town."]
    assert any(url in d and "size cap" in d for d in r.trace.dropped)
