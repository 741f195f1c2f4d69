"""AskPipeline end to end on fakes, and once with the real verifier cascade."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from affidavit.claims.extractor import RuleBasedExtractor
from affidavit.core.correction import (
    ChunkGrade,
    Classification,
    CorrectionResult,
    CorrectionTrace,
    QueryRewrite,
    RefinedContext,
    WebResult,
    WebTrace,
)
from affidavit.core.errors import ConfigError, CorrectionError, GenerationError, VerificationError
from affidavit.core.policy import ClaimDecision
from affidavit.core.settings import PolicySettings, Settings, VerifySettings, load_settings
from affidavit.core.types import Chunk, Claim, EvidenceSpan, Hit, Verdict
from affidavit.pipeline import AskPipeline, Corrector
from affidavit.testing.fake_llm import FakeGenerator
from affidavit.verify.cascade import ClaimCascade
from affidavit.verify.fakes import ScriptedScorer, word_overlap_probs

PARIS = Chunk(text="Paris is the capital of France.", url="file:///geo.txt", title="Geo")
TOWER = Chunk(text="The Eiffel Tower is 330 metres tall.", url="file:///tower.txt")
WEB = Chunk(text="The Louvre is the most visited museum.", url="https://example.org/louvre")


class ListRetriever:
    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self.chunks = list(chunks)
        self.calls: list[tuple[str, int, str]] = []

    def search(self, query: str, k: int = 10, mode: str = "hybrid", filters: object = None):  # type: ignore[no-untyped-def]
        self.calls.append((query, k, mode))
        return [
            Hit(chunk=c, score=1.0 / (i + 1), rank=i + 1, mode="bm25")
            for i, c in enumerate(self.chunks[:k])
        ]


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower())) - {"the", "is", "of", "a"}


class WordVerifier:
    """Supported iff every content word of the claim is in one chunk; evidence = that chunk."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.fail_on = fail_on
        self.seen: list[tuple[str, list[str]]] = []

    def verify(self, claim: Claim, chunks: Sequence[Chunk]) -> Verdict:
        self.seen.append((claim.text, [c.id for c in chunks]))
        if self.fail_on and self.fail_on in claim.text:
            raise VerificationError("model crashed", claim_id=claim.id)
        for c in chunks:
            if _words(claim.text) <= _words(c.text):
                span = EvidenceSpan(chunk_id=c.id, start=0, end=len(c.text), text=c.text)
                return Verdict(
                    claim_id=claim.id,
                    label="supported",
                    p_entail=0.97,
                    p_neutral=0.02,
                    p_contradict=0.01,
                    evidence=(span,),
                )
        return Verdict(
            claim_id=claim.id, label="unsupported", p_entail=0.1, p_neutral=0.85, p_contradict=0.05
        )


def _pipe(
    answer: str | list[str],
    chunks: Sequence[Chunk] = (PARIS, TOWER),
    **kw: object,
) -> tuple[AskPipeline, FakeGenerator]:
    llm = FakeGenerator([answer] if isinstance(answer, str) else answer)
    pipe = AskPipeline(
        retriever=kw.pop("retriever", ListRetriever(chunks)),  # type: ignore[arg-type]
        generator=llm,
        extractor=RuleBasedExtractor(),
        verifier=kw.pop("verifier", WordVerifier()),  # type: ignore[arg-type]
        settings=kw.pop("settings", load_settings()),  # type: ignore[arg-type]
        **kw,  # type: ignore[arg-type]
    )
    return pipe, llm


def test_strict_answer_shows_only_verified_sentences_with_corrected_citations() -> None:
    raw = (
        "Paris is the capital of France [2]. The Eiffel Tower is 330 metres tall [1]. "
        "Berlin is the capital of Germany [9]."
    )
    pipe, _llm = _pipe(raw)
    streamed: list[str] = []
    result = pipe.ask("Tell me about Paris.", on_token=streamed.append)

    assert "".join(streamed) == raw  # every piece reached the terminal as generated
    assert len(streamed) > 5
    # the hallucinated citation [9] was removed and recorded
    assert [r.number for r in result.trace.removed_citations] == [9]
    # both true sentences are shown, each citing the passage its evidence came from
    assert "Paris is the capital of France [1]." in result.answer
    assert "The Eiffel Tower is 330 metres tall [2]." in result.answer
    assert "Berlin" not in result.answer
    assert result.decisions == {"c1": "verified", "c2": "verified", "c3": "unverified"}
    fixes = {(c.from_numbers, c.to_numbers) for c in result.trace.citation_corrections}
    assert fixes == {((2,), (1,)), ((1,), (2,))}
    assert [(s.number, s.chunk_id) for s in result.sources] == [(1, PARIS.id), (2, TOWER.id)]
    cited = {(c.number, c.chunk_id, c.corrected_from) for c in result.citations}
    assert (1, PARIS.id, 2) in cited


def test_prompt_numbers_passages_and_demands_citations() -> None:
    pipe, llm = _pipe("Paris is the capital of France [1].")
    pipe.ask("What is the capital of France?")
    system, user = llm.calls[0].messages
    assert "[n]" in system.content or "square brackets" in system.content
    assert "don't have enough information" in system.content
    assert "[1] (Geo) Paris is the capital of France." in user.content
    assert "[2] The Eiffel Tower is 330 metres tall." in user.content
    assert user.content.rstrip().endswith("after every sentence.")
    assert "Question: What is the capital of France?" in user.content


def test_retrieval_uses_top_k_documents_and_mode() -> None:
    settings = load_settings(
        overrides={"correct": {"top_k_documents": 1}, "retrieve": {"mode": "bm25"}}
    )
    retriever = ListRetriever([PARIS, TOWER])
    pipe, _ = _pipe("Paris is the capital of France [1].", retriever=retriever, settings=settings)
    result = pipe.ask("q?")
    assert retriever.calls == [("q?", 1, "bm25")]
    assert len(result.sources) == 1


def test_trace_has_timings_ttft_and_verification() -> None:
    pipe, _ = _pipe("Paris is the capital of France [1].")
    result = pipe.ask("What is the capital of France?")
    stages = [t.stage for t in result.trace.timings]
    for stage in ("retrieve", "correct", "prompt", "generate", "claims", "verify", "policy"):
        assert stage in stages
    assert stages[-1] == "total"
    assert result.trace.time_to_first_token_s is not None
    assert result.trace.prompt_chars > 0
    assert result.trace.generator == "fake"
    assert [v.claim_id for v in result.trace.verification] == ["c1"]
    assert any("no corrective stage" in s for s in result.trace.skipped_stages)
    # JSON round trip of the whole result
    assert type(result).model_validate_json(result.model_dump_json()) == result


def test_no_hits_answers_insufficient_without_calling_the_model() -> None:
    pipe, llm = _pipe("should not be used", chunks=[])
    result = pipe.ask("What is the capital of Mars?")
    assert llm.calls == []
    assert result.insufficient
    assert "enough information" in result.answer
    assert result.claims == ()


def test_model_saying_insufficient_is_shown_as_such() -> None:
    pipe, _ = _pipe("I don't have enough information to answer this question.")
    result = pipe.ask("Who won the 1903 Tour de France?")
    assert result.insufficient
    assert result.answer == "I don't have enough information to answer this question."


def test_strict_shows_only_the_abstention_when_no_claim_of_the_draft_was_checked() -> None:
    # the model abstained, yet wrote more: "Napoleon [1]." states an answer no claim checked
    # (too short for a claim, and an abstaining draft gets no fragment claim)
    for raw in (
        "Napoleon [1]. I don't have enough information about the rest.",
        "I don't have enough information to answer this question. Maybe it was Napoleon?",
    ):
        pipe, _ = _pipe(raw)
        result = pipe.ask("Who signed the treaty?", mode="strict")
        assert result.insufficient and result.claims == ()
        assert "Napoleon" not in result.answer
        assert result.answer == "I don't have enough information to answer this question."
        assert result.draft == raw  # the trace keeps what the model wrote


def test_verifier_error_fails_closed() -> None:
    pipe, _ = _pipe("Paris is the capital of France [1].", verifier=WordVerifier(fail_on="Paris"))
    result = pipe.ask("What is the capital of France?")
    assert result.decisions == {"c1": "unverified"}
    assert "Paris" not in result.answer
    assert result.trace.verification[0].error == "model crashed"


def test_mixed_mode_shows_unverified_sentences() -> None:
    raw = "Paris is the capital of France [1]. Berlin is the capital of Germany [2]."
    pipe, _ = _pipe(raw)
    result = pipe.ask("q?", mode="mixed")
    assert result.mode == "mixed"
    assert "Paris" in result.answer and "Berlin" in result.answer


def test_generation_error_propagates() -> None:
    pipe, _ = _pipe([GenerationError("server down")])  # type: ignore[list-item]
    with pytest.raises(GenerationError, match="server down"):
        pipe.ask("q?")


def _correction(question: str, hits: Sequence[Hit]) -> CorrectionResult:
    grades = tuple(
        ChunkGrade(chunk_id=h.chunk.id, rank=h.rank, score=4.0, evaluator="fake") for h in hits
    )
    refined = RefinedContext(
        chunk=Chunk(text="Paris is the capital of France.", url=PARIS.url),
        origin="local",
        source_chunk_id=PARIS.id,
        source_score=4.0,
        kept_whole=False,
    )
    web = RefinedContext(
        chunk=WEB, origin="web", source_chunk_id=WEB.id, source_score=7.0, kept_whole=True
    )
    trace = CorrectionTrace(
        question=question,
        evaluator="fake",
        grades=grades,
        classification=Classification(
            kind="ambiguous",
            max_score=4.0,
            upper_threshold=8.0,
            lower_threshold=3.0,
            reason="between thresholds",
        ),
        strip_threshold=5.0,
        web=WebTrace(
            provider="store",
            query=QueryRewrite(original=question, query="louvre museum", rewritten=True),
            results=(
                WebResult(url=WEB.url or "", title="Louvre", provider="store", rank=1, used=True),
                WebResult(
                    url="http://10.0.0.1/x", provider="store", rank=2, blocked="private address"
                ),
            ),
        ),
    )
    return CorrectionResult(context=(refined, web), trace=trace)


class FakeCorrector:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    def run(self, question: str, hits: Sequence[Hit]) -> CorrectionResult:
        if self.fail:
            raise CorrectionError("evaluator model missing")
        return _correction(question, hits)


def test_corrective_stage_context_and_trace() -> None:
    corrector = FakeCorrector()
    assert isinstance(corrector, Corrector)
    pipe, llm = _pipe("The Louvre is the most visited museum [2].", corrector=corrector)
    result = pipe.ask("Which museum is most visited?")
    assert result.trace.classification == "ambiguous"
    assert result.trace.web_queries == ("louvre museum",)
    assert [(w.used, w.note) for w in result.trace.web_results] == [
        (True, ""),
        (False, "private address"),
    ]
    assert [s.origin for s in result.sources] == ["store", "web"]
    assert [round(s.score) for s in result.trace.evaluator_scores] == [4, 4]
    assert "[2] The Louvre" in llm.calls[0].messages[1].content
    assert result.decisions == {"c1": "verified"}
    assert "Louvre" in result.answer


def test_corrective_failure_falls_back_to_retrieved_chunks() -> None:
    pipe, _ = _pipe("Paris is the capital of France [1].", corrector=FakeCorrector(fail=True))
    result = pipe.ask("q?")
    assert result.trace.classification is None
    assert any("evaluator model missing" in s for s in result.trace.skipped_stages)
    assert result.decisions == {"c1": "verified"}


def test_certify_calls_the_writer_with_the_final_answer(tmp_path: Path) -> None:
    seen: list[tuple[str, str, int, Path]] = []

    def writer(
        question: str,
        answer: str,
        claims: Sequence[Claim],
        verdicts: Sequence[Verdict],
        decisions: Sequence[ClaimDecision],
        path: Path,
        *,
        context: Sequence[RefinedContext] = (),
    ) -> None:
        seen.append((question, answer, len(claims), path))

    pipe, _ = _pipe("Paris is the capital of France [2].", certificate_writer=writer)
    out = tmp_path / "cert.json"
    result = pipe.ask("q?", certify=out)
    assert seen == [("q?", "Paris is the capital of France [1].", 1, out)]
    assert result.certificate_path == str(out)


def test_certify_without_writer_is_a_config_error(tmp_path: Path) -> None:
    pipe, llm = _pipe("x")
    with pytest.raises(ConfigError):
        pipe.ask("q?", certify=tmp_path / "c.json")
    assert llm.calls == []


def test_with_the_real_verifier_cascade() -> None:
    verifier = ClaimCascade(
        VerifySettings(cascade=["checks", "cross_encoder"]),
        PolicySettings(),
        scorers={"cross_encoder": ScriptedScorer(fn=word_overlap_probs)},
    )
    raw = "The Eiffel Tower is 330 metres tall [1]. The Eiffel Tower is 500 metres tall [2]."
    pipe, _ = _pipe(raw, verifier=verifier, settings=Settings())
    result = pipe.ask("How tall is the Eiffel Tower?")
    assert result.decisions["c1"] == "verified"
    assert result.decisions["c2"] != "verified"  # the wrong figure is never shown
    assert result.answer.startswith("The Eiffel Tower is 330 metres tall [2].")
    assert "500" not in result.answer


class LastWordVerifier(WordVerifier):
    """Supported iff the claim's last word is in a chunk (the answer part of question + answer)."""

    def verify(self, claim: Claim, chunks: Sequence[Chunk]) -> Verdict:
        last = claim.text.split()[-1]
        return super().verify(claim.model_copy(update={"text": last}), chunks)


def test_a_bare_answer_is_checked_together_with_the_question() -> None:
    # "Paris [1]." states nothing alone; the claim checked is question + fragment
    verifier = LastWordVerifier()
    pipe, _ = _pipe("Paris [1].", verifier=verifier)
    result = pipe.ask("What is the capital of France?")
    assert [c.claim.text for c in result.claims] == ["What is the capital of France? Paris"]
    assert result.decisions == {"c1": "verified"}
    assert result.answer.startswith("Paris [1].")
    # a wrong bare answer is withheld in strict mode
    pipe2, _ = _pipe("Berlin [1].", verifier=LastWordVerifier())
    wrong = pipe2.ask("What is the capital of France?")
    assert wrong.decisions == {"c1": "unverified"}
    assert "Berlin" not in wrong.answer


def test_filler_gets_no_fragment_claim() -> None:
    from affidavit.pipeline.citations import fragment_claims

    assert fragment_claims("Is it?", "Sure.", []) == []
    assert [c.text for c in fragment_claims("When?", "In 1889 [1].", [])] == ["When? In 1889"]


def test_on_event_reports_the_stages_in_order() -> None:
    from affidavit.core.service import GradingEvent, RefinementEvent, RetrievalEvent

    seen: list[object] = []
    order: list[str] = []
    pipe = AskPipeline(
        retriever=ListRetriever([PARIS, TOWER]),
        generator=FakeGenerator(["Paris is the capital of France [1]."]),
        extractor=RuleBasedExtractor(),
        verifier=WordVerifier(),
        settings=load_settings(),
    )
    result = pipe.ask(
        "What is the capital of France?",
        on_event=lambda e: (seen.append(e), order.append(e.kind)),
        on_token=lambda piece: order.append("token"),
    )
    assert order[:3] == ["retrieval", "grading", "refinement"]
    # the tokens as they are written, then one claim event as each claim is decided
    n_claims = len(result.claims)
    assert n_claims >= 1
    assert set(order[3:-n_claims]) == {"token"} and order[-n_claims:] == ["claim"] * n_claims
    retrieval, grading, refinement, *claims = seen
    assert [c.outcome.decision for c in claims] == [o.decision for o in result.claims]  # type: ignore[attr-defined]
    assert [c.outcome.claim.text for c in claims] == [o.claim.text for o in result.claims]  # type: ignore[attr-defined]
    assert isinstance(retrieval, RetrievalEvent) and len(retrieval.hits) == 2
    assert isinstance(grading, GradingEvent) and grading.classification is None
    assert "no corrective stage" in grading.note
    assert isinstance(refinement, RefinementEvent)
    assert refinement.context == result.trace.context
    assert refinement.origins == ("store", "store") and not refinement.web_ran


def test_an_event_callback_that_raises_aborts_the_answer() -> None:
    class Stop(Exception):
        pass

    def stop(event: object) -> None:
        raise Stop

    pipe = AskPipeline(
        retriever=ListRetriever([PARIS]),
        generator=FakeGenerator(["Paris is the capital of France [1]."]),
        extractor=RuleBasedExtractor(),
        verifier=WordVerifier(),
        settings=load_settings(),
    )
    with pytest.raises(Stop):
        pipe.ask("What is the capital of France?", on_event=stop)


def test_short_plain_answers_get_a_fragment_claim_refusals_do_not() -> None:
    from affidavit.pipeline.citations import fragment_claims

    def texts(question: str, answer: str) -> list[str]:
        return [c.text for c in fragment_claims(question, answer, [])]

    assert texts("What type of media?", "magazine [1].") == ["What type of media? magazine"]
    assert texts("Were both producers?", "No [1].") == ["Were both producers? No"]
    # yes / no answer only a yes-no question
    assert texts("Who won?", "Yes.") == []
    assert texts("Who won?", "I don't know.") == []
    assert texts("Who won?", "not sure") == []
    # a plain phrase longer than four words states something the extractor should have found
    assert texts("Who won?", "the team that played well in the end") == []


def test_each_claim_event_goes_out_before_the_next_claim_is_verified() -> None:
    """Issue 28: the trace shows claims as they are decided, not all at the end."""
    order: list[str] = []

    class Recording(WordVerifier):
        def verify(self, claim, chunks):  # type: ignore[no-untyped-def]
            order.append("verify:" + claim.text[:5])
            return super().verify(claim, chunks)

    pipe = AskPipeline(
        retriever=ListRetriever([PARIS, TOWER]),
        generator=FakeGenerator(["Paris is the capital of France [1]. The tower is tall [2]."]),
        extractor=RuleBasedExtractor(),
        verifier=Recording(),
        settings=load_settings(),
    )
    pipe.ask(
        "Tell me about Paris.",
        on_event=lambda e: (
            order.append("claim:" + e.outcome.claim.text[:5])  # type: ignore[union-attr]
            if e.kind == "claim"
            else None
        ),
    )
    assert order == ["verify:Paris", "claim:Paris", "verify:The t", "claim:The t"]


# ---------------------------------------------------------------------- answer form
TOWN = Chunk(
    text="McClellan Park's population was 743. McClellan Air Force Base is 7 mi northeast of "
    "Sacramento.",
    url="file:///town.txt",
)
QUESTION = "What is the population of the town with an Air Force Base northeast of Sacramento?"
RESTATED = "The population of the town with an Air Force Base northeast of Sacramento is 743 [1]."


class AnswerFormVerifier:
    """Reads a question-and-answer claim ('...? 743') well and a restatement poorly, as the
    shipped model does; 'contradicts' when the claim says 744."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def verify(self, claim: Claim, chunks: Sequence[Chunk]) -> Verdict:
        self.seen.append(claim.text)
        if "744" in claim.text:
            return Verdict(
                claim_id=claim.id,
                label="contradicted",
                p_entail=0.02,
                p_neutral=0.08,
                p_contradict=0.9,
            )
        if "?" in claim.text and claim.text.endswith("743"):
            c = chunks[0]
            span = EvidenceSpan(chunk_id=c.id, start=0, end=36, text=c.text[:36])
            return Verdict(
                claim_id=claim.id,
                label="supported",
                p_entail=0.9,
                p_neutral=0.08,
                p_contradict=0.02,
                evidence=(span,),
            )
        return Verdict(
            claim_id=claim.id, label="unsupported", p_entail=0.2, p_neutral=0.5, p_contradict=0.3
        )


def _answer_pipe(answer: str, verifier: AnswerFormVerifier, **claims: object) -> AskPipeline:
    settings = load_settings()
    claims = {"answer_form": True, **claims}
    if claims:
        settings = settings.model_copy(update={"claims": settings.claims.model_copy(update=claims)})
    return AskPipeline(
        retriever=ListRetriever([TOWN]),
        generator=FakeGenerator([answer]),
        extractor=RuleBasedExtractor(),
        verifier=verifier,
        settings=settings,
    )


def test_a_restated_question_is_checked_as_the_question_and_its_answer() -> None:
    """Issue 24: ask withheld right answers written as restatements of the question ('The
    population of ... is 743.'), which the verifier reads poorly; as '<question> 743' (the
    question-and-answer form it was trained on) it is verified, and recorded with that text."""
    v = AnswerFormVerifier()
    r = _answer_pipe(RESTATED, v).ask(QUESTION, mode="strict")
    assert [o.decision for o in r.claims] == ["verified"]
    assert r.claims[0].claim.text == f"{QUESTION} is 743"
    assert "checked as the answer to the question" in r.claims[0].verdict.reason
    assert "743" in r.answer
    # the restatement was tried first, as written
    assert v.seen[0].startswith("The population")
    # switched off: withheld as before
    off = _answer_pipe(RESTATED, AnswerFormVerifier(), answer_form=False).ask(
        QUESTION, mode="strict"
    )
    assert [o.decision for o in off.claims] != ["verified"]


def test_a_contradicted_restatement_is_not_checked_again() -> None:
    v = AnswerFormVerifier()
    r = _answer_pipe(RESTATED.replace("743", "744"), v).ask(QUESTION, mode="strict")
    assert [o.decision for o in r.claims] == ["blocked"]
    assert len(v.seen) == 1


def test_answer_form() -> None:
    from affidavit.pipeline.citations import answer_form

    assert answer_form(QUESTION, RESTATED) == f"{QUESTION} is 743"
    # the claim adds a second fact: it is checked too; what it writes for the question word is
    # kept whole
    assert answer_form(
        "Which show did the series replace?", "The series replaced My Love from the Star."
    ) == ("Which show did the series replace? My Love from the Star")
    assert answer_form(QUESTION, RESTATED.replace(" [1].", ", founded in 1935.")) == (
        f"{QUESTION} is 743 founded in 1935"
    )
    assert answer_form(QUESTION, "Paris is the capital of France.") is None  # no restatement
    assert answer_form("Is the town near Sacramento?", "The town is near Sacramento.") is None
    assert answer_form(QUESTION, QUESTION.rstrip("?")) is None  # adds nothing


# -- generate.quote_retry: strict mode, nothing verified -> the passages' own sentences --------


def test_quote_retry_shows_the_copied_sentence_when_no_claim_of_the_draft_verifies() -> None:
    pipe, llm = _pipe(
        ["Paris is the seat of the French state [1].", "Paris is the capital of France [1]."]
    )
    result = pipe.ask("What is the capital of France?", mode="strict")

    assert len(llm.calls) == 2
    assert "word for word" in llm.calls[1].messages[0].content
    # the same numbered passages, the same question
    assert llm.calls[1].messages[1].content == llm.calls[0].messages[1].content
    assert result.answer == "Paris is the capital of France [1]."
    assert result.trace.raw_answer == "Paris is the capital of France [1]."
    retry = result.trace.quote_retry
    assert retry is not None and retry.adopted and retry.error is None
    assert retry.other_raw == "Paris is the seat of the French state [1]."
    assert [o.decision for o in retry.other_claims] == ["unverified"]
    stages = [t.stage for t in result.trace.timings]
    assert stages.count("requote") == 1 and stages.count("generate") == 1


def test_quote_retry_keeps_the_first_draft_when_the_copy_does_not_verify_either() -> None:
    pipe, llm = _pipe(
        ["Berlin is the capital of France [1].", "Rome is the capital of France [1]."]
    )
    result = pipe.ask("What is the capital of France?", mode="strict")

    assert len(llm.calls) == 2
    assert "Berlin" not in result.answer and "Rome" not in result.answer
    assert result.draft.startswith("Berlin")
    assert [o.decision for o in result.claims] == ["unverified"]
    retry = result.trace.quote_retry
    assert retry is not None and not retry.adopted
    assert retry.other_raw == "Rome is the capital of France [1]."
    assert [o.decision for o in retry.other_claims] == ["unverified"]


def test_quote_retry_that_fails_leaves_the_first_draft_withheld() -> None:
    # the script holds one answer: the retry's generation raises
    pipe, _llm = _pipe("Berlin is the capital of France [1].")
    result = pipe.ask("What is the capital of France?", mode="strict")

    assert "Berlin" not in result.answer
    retry = result.trace.quote_retry
    assert retry is not None and not retry.adopted and retry.error
    assert result.draft.startswith("Berlin")


@pytest.mark.parametrize("mode", ["mixed", "debug"])
def test_quote_retry_runs_only_in_strict_mode(mode: str) -> None:
    pipe, llm = _pipe(
        ["Berlin is the capital of France [1].", "Paris is the capital of France [1]."]
    )
    result = pipe.ask("What is the capital of France?", mode=mode)  # type: ignore[arg-type]
    assert len(llm.calls) == 1 and result.trace.quote_retry is None


def test_quote_retry_not_asked_when_a_claim_verified_or_the_model_abstained_or_switched_off() -> (
    None
):
    pipe, llm = _pipe(["Paris is the capital of France [1]. Berlin is in France [1].", "unused"])
    pipe.ask("What is the capital of France?", mode="strict")
    assert len(llm.calls) == 1

    pipe, llm = _pipe(["I don't have enough information to answer this question.", "unused"])
    assert pipe.ask("What is the capital of France?", mode="strict").trace.quote_retry is None
    assert len(llm.calls) == 1

    off = load_settings(overrides={"generate": {"quote_retry": False}})
    pipe, llm = _pipe(["Berlin is the capital of France [1].", "unused"], settings=off)
    assert pipe.ask("What is the capital of France?", mode="strict").trace.quote_retry is None
    assert len(llm.calls) == 1


# -------------------------------------------------- claims.max_claims: what the limit stopped
LIMITED = (
    "Paris is the capital of France and Berlin is the capital of Italy [1]. "
    "The Eiffel Tower is 330 metres tall [2]."
)


def _limited_pipe(max_claims: int = 1) -> tuple[AskPipeline, WordVerifier]:
    settings = load_settings(overrides={"claims": {"max_claims": max_claims}})
    verifier = WordVerifier()
    pipe = AskPipeline(
        retriever=ListRetriever([PARIS, TOWER]),
        generator=FakeGenerator([LIMITED]),
        extractor=RuleBasedExtractor(settings.claims),
        verifier=verifier,
        settings=settings,
    )
    return pipe, verifier


def test_strict_withholds_sentences_the_claim_limit_cut_short_or_never_reached() -> None:
    # the limit stops after "Paris is the capital of France" (verified): the rest of that sentence
    # ("Berlin is the capital of Italy", false) and the next sentence were never checked
    pipe, verifier = _limited_pipe(max_claims=1)
    events: list[object] = []
    result = pipe.ask("The Eiffel Tower?", mode="strict", on_event=events.append)
    assert "Berlin" not in result.answer
    assert "Paris" not in result.answer
    # a short sentence past the limit is not checked by the back door of a fragment claim either
    assert "Eiffel" not in result.answer
    assert [text for text, _ in verifier.seen] == ["Paris is the capital of France."]
    assert result.decisions["c1"] == "verified"
    unchecked = [o for o in result.claims if o.claim.id != "c1"]
    assert [o.claim.start for o in unchecked] == [0, LIMITED.index("The Eiffel")]
    assert all(o.decision == "unverified" for o in unchecked)
    assert all("claim limit" in (o.verdict.errors[0]) for o in unchecked)
    assert "Withheld 2 of 2 sentences" in result.note
    assert any("claim limit" in note for note in result.trace.skipped_stages)
    # the stream's claim events say the same as the result
    streamed = {e.outcome.claim.id: e.outcome.decision for e in events if e.kind == "claim"}  # type: ignore[attr-defined]
    assert streamed == result.decisions


def test_other_modes_mark_sentences_past_the_claim_limit_unverified() -> None:
    pipe, _ = _limited_pipe(max_claims=1)
    result = pipe.ask("The Eiffel Tower?", mode="mixed")
    assert "[verified]" not in result.answer
    assert result.answer.count("[unverified]") == 2
    # only part of the cut sentence was checked: shown unverified, so without the model's
    # citation (a "[1]" would say passage 1 supports it)
    assert "Italy." in result.answer and "[1]" not in result.answer


def test_a_claim_limit_that_stops_nothing_changes_nothing() -> None:
    pipe, _ = _limited_pipe(max_claims=3)
    result = pipe.ask("The Eiffel Tower?", mode="strict")
    assert result.decisions == {"c1": "verified", "c2": "unverified", "c3": "verified"}
    assert "The Eiffel Tower is 330 metres tall [2]." in result.answer


class _CutGenerator:
    """Streams its answer, then says the server cut it short (its token budget ran out)."""

    name = "cut"

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)

    def generate(self, messages, *, max_tokens=None, json_schema=None):  # type: ignore[no-untyped-def]
        raise GenerationError("not used")

    def stream(self, messages, *, max_tokens=None):  # type: ignore[no-untyped-def]
        from affidavit.core.errors import GenerationTruncatedError

        answer = self.answers.pop(0)
        yield from (m.group(0) for m in re.finditer(r"\s*\S+", answer))
        raise GenerationTruncatedError("cut short (finish_reason=length)", reason="length")


# "... the capital of France" would verify: the model was stopped before "... in 1900"
CUT_DRAFT = "The Eiffel Tower is 330 metres tall [2]. Paris is the capital of France"


@pytest.mark.parametrize("mode", ["strict", "mixed"])
def test_an_answer_cut_at_the_token_budget_never_counts_its_last_sentence_as_checked(
    mode: str,
) -> None:
    pipe = AskPipeline(
        retriever=ListRetriever([PARIS, TOWER]),
        generator=_CutGenerator(CUT_DRAFT),
        extractor=RuleBasedExtractor(),
        verifier=WordVerifier(),
        settings=load_settings(),
    )
    result = pipe.ask("Tell me about Paris.", mode=mode)  # type: ignore[arg-type]
    assert result.trace.raw_answer == CUT_DRAFT  # the pieces are kept, not thrown away
    # its claim verifies, but the sentence holds a stand-in for what the model did not finish
    last = [o for o in result.claims if o.claim.start >= CUT_DRAFT.index("Paris")]
    assert any(o.decision == "unverified" and "cut short" in o.verdict.reason for o in last)
    if mode == "strict":
        assert result.answer.startswith("The Eiffel Tower is 330 metres tall [2].")
        assert "Paris" not in result.answer
    else:
        assert "[verified] The Eiffel" in result.answer
        assert "[verified] Paris" not in result.answer
    assert any("cut short" in note for note in result.trace.skipped_stages)
