"""Strict display shows verified text only: draft text that no claim checked never reaches it.

Each test scripts a draft (`FakeGenerator`) and checks it with the word-containment fake
(`KeywordVerifier`: a claim is supported when one passage holds every content word of it), so a
piece of the draft that the claims stage dropped from every claim would verify its sentence
without being checked.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from affidavit.claims.extractor import RuleBasedExtractor
from affidavit.claims.llm import LLMClaimCompiler
from affidavit.core.answer import AskResult
from affidavit.core.settings import load_settings
from affidavit.core.types import Chunk, Claim, Hit, Message, Verdict
from affidavit.pipeline import AskPipeline
from affidavit.testing.fake_llm import FakeGenerator
from affidavit.testing.verifiers import KeywordVerifier

BRIDGE = Chunk(
    text="The Harbour Bridge opened in 1932. Adam Smith won the prize. "
    "The Harbour Bridge carries eight lanes."
)
PARIS = Chunk(text="Paris is the capital of France.")


class _Retriever:
    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self.chunks = list(chunks)

    def search(self, query: str, k: int = 10, mode: str = "hybrid", filters: object = None):  # type: ignore[no-untyped-def]
        return [Hit(chunk=c, score=1.0, rank=i + 1, mode="bm25") for i, c in enumerate(self.chunks)]


def _ask(
    draft: str,
    question: str = "Tell me about the bridge.",
    *,
    chunks: Sequence[Chunk] = (BRIDGE, PARIS),
    extractor: Any = None,
    verifier: Any = None,
    **claims: object,
) -> AskResult:
    settings = load_settings()
    settings = settings.model_copy(
        update={
            "generate": settings.generate.model_copy(update={"quote_retry": False}),
            "claims": settings.claims.model_copy(update=claims),
        }
    )
    pipe = AskPipeline(
        retriever=_Retriever(chunks),
        generator=FakeGenerator([draft]),
        extractor=extractor or RuleBasedExtractor(settings.claims),
        verifier=verifier or KeywordVerifier(),
        settings=settings,
    )
    return pipe.ask(question, mode="strict")


def _shown(result: AskResult) -> str:
    """The strict answer without its withheld-note."""
    text: str = result.answer
    note = f"({result.note})"
    if result.note and text.endswith(note):
        text = text[: -len(note)].rstrip()
    return text


# -- a clause repeating an earlier claim ------------------------------------------------------


@pytest.mark.parametrize(
    ("draft", "unchecked"),
    [
        # the repeat of a withheld sentence, inside a sentence whose other clause verifies
        (
            "The bridge closed in 1990. The bridge closed in 1990, and Paris is the capital of "
            "France [2].",
            "1990",
        ),
        (
            "The bridge closed in 1990.\n\nParis is the capital of France [2], and the bridge "
            "closed in 1990.",
            "1990",
        ),
        # "1.932" and "1,932" are one claim to the deduplication (punctuation dropped)
        (
            "The span is 1.932 km long [1]. The span is 1,932 km long, and Paris is the capital "
            "of France [2].",
            "1,932",
        ),
    ],
)
def test_a_clause_repeating_an_unverified_claim_is_not_shown(draft: str, unchecked: str) -> None:
    result = _ask(draft)
    assert unchecked not in result.answer
    # the sentence was checked whole (the clause about Paris alone verified)
    assert _shown(result) == ""


class _ExactVerifier(KeywordVerifier):
    """Supported when a passage holds the claim word for word (punctuation too)."""

    def verify(self, claim: Claim, chunks: Sequence[Chunk]) -> Verdict:
        said = claim.text.rstrip(".")
        for c in chunks:
            if said in c.text:
                return super().verify(claim, [c])
        return super().verify(claim, [])


def test_a_clause_repeating_another_of_its_sentence_in_other_figures_is_checked() -> None:
    span = Chunk(text="The span is 1.932 km long.")
    draft = "The span is 1.932 km long, and the span is 1,932 km long [1]."
    result = _ask(draft, chunks=[span], verifier=_ExactVerifier())
    assert "1,932" not in result.answer


def test_a_sentence_repeating_a_verified_claim_and_adding_one_is_checked_whole() -> None:
    draft = (
        "The Harbour Bridge opened in 1932 [1]. The Harbour Bridge opened in 1932, and it "
        "carries eight lanes [1]."
    )
    result = _ask(draft)
    # the second sentence is checked (as one claim): shown when that verifies
    assert result.answer == (
        "The Harbour Bridge opened in 1932 [1]. The Harbour Bridge opened in 1932, and it "
        "carries eight lanes [1]."
    )
    assert all(o.decision == "verified" for o in result.claims)


# -- line markers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("draft", "unchecked"),
    [
        ("(1925) The Harbour Bridge opened [1].", "1925"),
        ("(1925) The Harbour Bridge opened [1].\n(1926) Paris is the capital of France.", "1925"),
        ("(NASA) The Harbour Bridge opened in 1932 [1].", "NASA"),
        ("J. Smith won the prize [1].", "J."),
        ("E. Smith won the prize [1].\nThe Harbour Bridge opened in 1932 [1].", "E."),
        ("(555) The Harbour Bridge opened in 1932 [1].", "555"),
        # a lone "(12)" or "12." is a number of its sentence, not a list marker: checked with it
        ("(12) the Harbour Bridge opened in 1932 [1].", "12"),
        ("Paris is the capital of France [2].\n(12) Adam Smith won the prize [1].", "12"),
        ("7. The Harbour Bridge opened in 1932 [1].", "7"),
    ],
)
def test_a_line_opening_that_is_not_a_list_marker_is_checked(draft: str, unchecked: str) -> None:
    result = _ask(draft)
    assert unchecked not in result.answer
    assert "withheld" in result.note.lower()


def test_list_markers_still_frame_verified_items() -> None:
    draft = (
        "a. The Harbour Bridge opened in 1932 [1].\n"
        "b. Paris is the capital of France [2].\n"
        "(ii) Adam Smith won the prize [1].\n"
        "(3) The Harbour Bridge was opened in 1932 [1].\n"
        "(4) The prize was won by Adam Smith [1].\n"
        "12. Paris is in France [2].\n"
        "13) Paris is the capital [2]."
    )
    result = _ask(draft)
    assert result.answer == draft


# -- bracketed numbers that are no passage number ---------------------------------------------


@pytest.mark.parametrize(
    "draft",
    [
        "The Harbour Bridge opened in [1925].",
        "The Harbour Bridge opened in [1925] [1].",
        "The Harbour Bridge opened in 1932 [1, 1925].",
    ],
)
def test_a_bracketed_number_that_names_no_passage_is_checked(draft: str) -> None:
    result = _ask(draft)
    assert "1925" not in result.answer


# -- "Yes, ..." to a yes-no question -----------------------------------------------------------


def test_yes_to_a_yes_no_question_is_checked_as_its_answer() -> None:
    # the statement after "Yes," is true, but the "Yes" answers another question
    result = _ask(
        "Yes, the Harbour Bridge carries eight lanes [1].",
        "Was the Harbour Bridge designed by John Bradfield?",
    )
    assert "Yes" not in result.answer
    assert "eight lanes" not in result.answer


def test_yes_that_verifies_as_the_answer_is_shown() -> None:
    chunk = Chunk(
        text="Did the Harbour Bridge open in 1932? Yes: the Harbour Bridge opened in 1932."
    )
    result = _ask(
        "Yes, the Harbour Bridge opened in 1932 [1].",
        "Did the Harbour Bridge open in 1932?",
        chunks=[chunk],
    )
    assert result.answer == "Yes, the Harbour Bridge opened in 1932 [1]."


def test_a_statement_opening_with_yes_is_not_an_answer_to_an_open_question() -> None:
    result = _ask("Yes, the Harbour Bridge opened in 1932 [1].", "Tell me about the bridge.")
    assert result.answer == "Yes, the Harbour Bridge opened in 1932 [1]."


# -- claims.answer_form ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "draft",
    [
        "The Harbour Bridge did not open in 1932 [1].",
        "The Harbour Bridge never opened in 1932 [1].",
    ],
)
def test_the_answer_form_keeps_the_negation(draft: str) -> None:
    chunk = Chunk(text="When did the Harbour Bridge open? It opened in 1932.")
    result = _ask(draft, "When did the Harbour Bridge open?", chunks=[chunk], answer_form=True)
    assert "open" not in _shown(result)
    assert [o.decision for o in result.claims] != ["verified"]


# -- claims.extractor = "llm" -------------------------------------------------------------------


class _ScriptedClaims:
    """A claim compiler's generator that writes the given claims (for sentence 1, or for the
    sentences numbered ``(n, claim)``)."""

    name = "scripted-claims"

    def __init__(self, claims: Sequence[str | tuple[int, str]]) -> None:
        self.claims = [c if isinstance(c, tuple) else (1, c) for c in claims]

    def generate(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> str:
        return json.dumps({"claims": [{"sentence": n, "claim": c} for n, c in self.claims]})

    def stream(self, messages: Sequence[Message], *, max_tokens: int | None = None):  # type: ignore[no-untyped-def]
        yield ""


def test_llm_claims_that_leave_out_a_fact_of_the_sentence_are_not_used() -> None:
    draft = "The Harbour Bridge opened in 1932 and the bridge closed in 1990 [1]."
    extractor = LLMClaimCompiler(_ScriptedClaims(["The Harbour Bridge opened in 1932."]))
    result = _ask(draft, extractor=extractor)
    assert "1990" not in result.answer


def test_llm_claims_that_cover_the_sentence_are_used() -> None:
    draft = "The Harbour Bridge opened in 1932 and carries eight lanes [1]."
    extractor = LLMClaimCompiler(
        _ScriptedClaims(
            ["The Harbour Bridge opened in 1932.", "The Harbour Bridge carries eight lanes."]
        )
    )
    result = _ask(draft, extractor=extractor)
    assert [o.claim.origin for o in result.claims] == ["llm", "llm"]
    assert result.answer == draft


def test_llm_claims_repeating_a_withheld_sentence_do_not_show_it() -> None:
    draft = (
        "The bridge closed in 1990. The bridge closed in 1990, and Paris is the capital of "
        "France [2]."
    )
    extractor = LLMClaimCompiler(
        _ScriptedClaims(
            [
                (1, "The bridge closed in 1990."),
                (2, "The bridge closed in 1990."),
                (2, "Paris is the capital of France."),
            ]
        )
    )
    result = _ask(draft, extractor=extractor)
    assert "1990" not in result.answer


@pytest.mark.parametrize(
    ("passage", "draft", "claim"),
    [
        ("The drug is unsafe for children.", "The drug is safe for children [1].",
         "The drug is unsafe for children."),
        ("Adam Smith lost the prize.", "Adam Smith won the prize [1].",
         "Adam Smith never won, Adam Smith lost the prize."),
    ],
)  # fmt: skip
def test_llm_claims_that_reword_their_sentence_into_another_fact_do_not_show_it(
    passage: str, draft: str, claim: str
) -> None:
    # the LLM's claim verifies against the passage; the sentence shown says the opposite
    extractor = LLMClaimCompiler(_ScriptedClaims([claim]))
    result = _ask(draft, chunks=[Chunk(text=passage)], extractor=extractor)
    assert _shown(result) == ""
    assert [o.claim.origin for o in result.claims] == ["extracted"]


# -- control characters -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("control", "shown"),
    [
        ("\u202e", "1932"),  # right-to-left override: read as 2391 wherever bidi is rendered
        ("\u2067", "1932"),  # right-to-left isolate
        ("\u200f", "1932"),  # right-to-left mark
    ],
)
def test_a_control_character_does_not_reorder_or_hide_a_verified_sentence(
    control: str, shown: str
) -> None:
    result = _ask(f"The Harbour Bridge opened in {control}1932\u202c [1].")
    assert result.answer == f"The Harbour Bridge opened in {shown} [1]."
