"""A citation is shown only where the verifier found the cited passage supports the sentence.

In mixed and debug modes an unverified (or contradicted, or undecided) sentence is shown, marked,
but without the model's citation markers: "[2]" says to a reader that passage 2 supports it, and
the verifier found it does not (or could not tell). A verified sentence cites the passages its
evidence came from, never the model's guess. The same holds for every field a surface renders
(``answer``, ``sentences``, ``citations``) and for the CLI's panel; the model's own draft stays in
``draft`` and ``trace.raw_answer``, labelled unverified.

Every test runs the real pipeline on the shipped fakes (`FakeGenerator`, `KeywordVerifier`).
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import Any

import pytest

from affidavit.claims.extractor import RuleBasedExtractor
from affidavit.core.answer import AskResult
from affidavit.core.settings import load_settings
from affidavit.core.types import Chunk, Claim, EvidenceSpan, Hit, Verdict
from affidavit.pipeline import AskPipeline
from affidavit.testing.fake_llm import FakeGenerator
from affidavit.testing.verifiers import KeywordVerifier

ARMSTRONG = Chunk(text="Neil Armstrong was the first person on the Moon.")
ALDRIN = Chunk(text="Buzz Aldrin flew on Apollo 11.")
TRUE = "Neil Armstrong was the first person on the Moon"
FALSE = "Buzz Aldrin was the first person on the Moon"
QUESTION = "Who was first on the Moon?"


class _Retriever:
    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self.chunks = list(chunks)

    def search(self, query: str, k: int = 10, mode: str = "hybrid", filters: object = None):  # type: ignore[no-untyped-def]
        return [Hit(chunk=c, score=1.0, rank=i + 1, mode="bm25") for i, c in enumerate(self.chunks)]


class _Raises:
    """The keyword fake, except that it raises (a crash, a timeout) on claims naming ``word``."""

    def __init__(self, word: str, exc: Exception) -> None:
        self.word, self.exc, self.inner = word, exc, KeywordVerifier()

    def verify(self, claim: Claim, chunks: Sequence[Chunk]) -> Verdict:
        if self.word in claim.text:
            raise self.exc
        return self.inner.verify(claim, chunks)


class _EvidenceElsewhere:
    """Supported, with evidence from a chunk that is not among the passages the model saw."""

    def verify(self, claim: Claim, chunks: Sequence[Chunk]) -> Verdict:
        span = EvidenceSpan(chunk_id="not-a-passage", start=0, end=4, text="Neil")
        return Verdict(
            claim_id=claim.id,
            label="supported",
            p_entail=0.95,
            p_neutral=0.03,
            p_contradict=0.02,
            evidence=(span,),
        )


def _ask(draft: str, mode: str, *, verifier: Any = None, question: str = QUESTION) -> AskResult:
    settings = load_settings()
    settings = settings.model_copy(
        update={"generate": settings.generate.model_copy(update={"quote_retry": False})}
    )
    pipe = AskPipeline(
        retriever=_Retriever([ARMSTRONG, ALDRIN]),
        generator=FakeGenerator([draft]),
        extractor=RuleBasedExtractor(settings.claims),
        verifier=verifier or KeywordVerifier(),
        settings=settings,
    )
    return pipe.ask(question, mode=mode)  # type: ignore[arg-type]


def _sentence(result: AskResult, words: str) -> str:
    """The shown sentence holding ``words``, as the rendered answer has it."""
    for part in re.split(r" (?=\[(?:verified|unverified|blocked)\] )", result.answer):
        if words in part:
            return part.split("\n")[0]
    raise AssertionError(f"{words!r} not shown in {result.answer!r}")


@pytest.mark.parametrize("mode", ["mixed", "debug"])
def test_an_unverified_sentence_is_shown_without_the_model_citation(mode: str) -> None:
    result = _ask(f"{TRUE} [1]. {FALSE} [2].", mode)
    assert result.decisions == {"c1": "verified", "c2": "unverified"}
    body = result.answer.split("\n--- debug ---")[0]
    assert f"[verified] {TRUE} [1]." in body
    assert f"[unverified] {FALSE}." in body
    assert "[2]" not in body
    # the structured citations list only what is shown as cited: sentence 0's [1]
    assert [(c.sentence_index, c.number) for c in result.citations] == [(0, 1)]
    # the per-sentence rendering every surface draws from agrees
    texts = [(s.decision, s.text, s.citations, s.withdrawn_citations) for s in result.sentences]
    assert texts == [
        ("verified", f"{TRUE} [1].", (1,), ()),
        ("unverified", f"{FALSE}.", (), (2,)),
    ]
    # the model's own draft stays in the fields labelled as such
    assert f"{FALSE} [2]." in result.draft and f"{FALSE} [2]." in result.trace.raw_answer


def test_a_contradicted_sentence_is_shown_without_the_model_citation() -> None:
    class Contradicts(KeywordVerifier):
        def verify(self, claim: Claim, chunks: Sequence[Chunk]) -> Verdict:
            if "Aldrin" not in claim.text:
                return super().verify(claim, chunks)
            span = EvidenceSpan(chunk_id=chunks[0].id, start=0, end=48, text=chunks[0].text)
            return Verdict(
                claim_id=claim.id,
                label="contradicted",
                p_entail=0.01,
                p_neutral=0.01,
                p_contradict=0.98,
                evidence=(span,),
            )

    result = _ask(f"{TRUE} [1]. {FALSE} [1][2].", "mixed", verifier=Contradicts())
    assert result.decisions["c2"] == "blocked"
    assert _sentence(result, "Aldrin") == f"[blocked] {FALSE}."
    assert {c.sentence_index for c in result.citations} == {0}


@pytest.mark.parametrize(
    "exc", [RuntimeError("model crashed"), TimeoutError("verification timed out")]
)
def test_a_sentence_whose_verification_raised_is_never_shown_as_verified_or_cited(
    exc: Exception,
) -> None:
    result = _ask(f"{TRUE} [1]. {FALSE} [2].", "mixed", verifier=_Raises("Aldrin", exc))
    assert result.decisions["c2"] == "unverified"
    assert _sentence(result, "Aldrin") == f"[unverified] {FALSE}."
    assert result.sentences[1].decision == "unverified"
    assert result.trace.verification[1].error


def test_a_verified_sentence_cites_the_passage_its_evidence_came_from() -> None:
    # the model cited [2]; the verifier found the support in passage 1
    result = _ask(f"{TRUE} [2].", "mixed")
    assert _sentence(result, "Armstrong") == f"[verified] {TRUE} [1]."
    assert [(c.number, c.corrected_from) for c in result.citations] == [(1, 2)]


def test_a_verified_sentence_whose_evidence_names_no_passage_cites_nothing() -> None:
    # evidence from a chunk the model never saw: no passage number supports it, so the model's
    # [2] must not stand as if passage 2 did
    for mode in ("mixed", "strict"):
        result = _ask(f"{TRUE} [2].", mode, verifier=_EvidenceElsewhere())
        assert result.decisions == {"c1": "verified"}
        assert "[2]" not in result.answer
        assert result.citations == ()
        assert result.sentences[0].withdrawn_citations == (2,)


@pytest.mark.parametrize(
    "marker", ["[^7]", "[^7^]", "[^2]", "[Source 7]", "[7](https://evil.example/)"]
)
def test_an_invented_or_linked_marker_never_reaches_the_answer(marker: str) -> None:
    # two passages: [7] names none; a footnote "[^2]" or a markdown link "[7](...)" would
    # render as a link in a markdown view, whatever the sentence's verdict
    for mode in ("strict", "mixed"):
        result = _ask(f"{TRUE} {marker}.", mode)
        assert "^" not in result.answer and "7" not in result.answer
        assert "evil" not in result.answer and "](" not in result.answer
        assert all(1 <= c.number <= 2 for c in result.citations)


def test_an_abstaining_draft_shown_in_mixed_mode_keeps_no_citation() -> None:
    draft = "Napoleon [1]. I don't have enough information about the rest [2]."
    result = _ask(draft, "mixed", question="Who signed the treaty?")
    assert result.insufficient and result.claims == ()
    assert "[1]" not in result.answer and "[2]" not in result.answer
    assert "Napoleon" in result.answer  # mixed still shows it (marked by the result's claims)


def test_strict_mode_is_unchanged() -> None:
    result = _ask(f"{TRUE} [1]. {FALSE} [2].", "strict")
    assert result.answer.startswith(f"{TRUE} [1].\n\n(Withheld 1 of 2 sentences")
    assert [(c.sentence_index, c.number) for c in result.citations] == [(0, 1)]
    assert [s.shown for s in result.sentences] == [True, False]
    assert result.sentences[1].text == ""  # nothing of a withheld sentence
    shown = result.shown_only()
    assert FALSE not in shown.model_dump_json()


def test_the_cli_panel_shows_no_citation_on_an_unverified_sentence() -> None:
    from rich.console import Console

    from affidavit.cli.ask import print_result

    result = _ask(f"{TRUE} [1]. {FALSE} [2].", "mixed")
    out = io.StringIO()
    print_result(Console(file=out, width=200, color_system=None), result)
    panel = out.getvalue().split("claim")[0]
    assert "Aldrin" in panel and "[2]" not in panel


def test_sentence_text_reaches_the_terminal_escaped() -> None:
    from rich.console import Console

    from affidavit.cli.ask import print_result

    result = _ask(f"{TRUE} [1]. \x1b]8;;https://evil.example/\x07Aldrin\x1b[31m [2].", "mixed")
    out = io.StringIO()
    print_result(Console(file=out, width=200, color_system=None), result)
    assert "\x1b" not in out.getvalue() and "\x07" not in out.getvalue()


def test_a_footnote_quoted_back_from_a_passage_is_not_a_citation_of_another_passage() -> None:
    # the passage carries its own footnote "[2]"; the model copies it with the sentence. It
    # names passage 2 (Aldrin's), which does not support the sentence: it must not be shown
    quoted = Chunk(text="Neil Armstrong [2] was the first person on the Moon.")
    settings = load_settings()
    settings = settings.model_copy(
        update={"generate": settings.generate.model_copy(update={"quote_retry": False})}
    )
    for mode in ("strict", "mixed"):
        pipe = AskPipeline(
            retriever=_Retriever([quoted, ALDRIN]),
            generator=FakeGenerator(["Neil Armstrong [2] was the first person on the Moon [1]."]),
            extractor=RuleBasedExtractor(settings.claims),
            verifier=KeywordVerifier(),
            settings=settings,
        )
        result = pipe.ask(QUESTION, mode=mode)  # type: ignore[arg-type]
        assert result.decisions == {"c1": "verified"}
        assert "[2]" not in result.answer and "[1]" in result.answer
        assert [c.number for c in result.citations] == [1]
