"""The LLM claim compiler, driven by a tiny scripted generator defined here."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from affidavit.claims import (
    ClaimExtractor,
    LLMClaimCompiler,
    RuleBasedExtractor,
    build_extractor,
)
from affidavit.claims.llm import CLAIMS_SCHEMA, LLMOutputError, parse_llm_claims
from affidavit.core.errors import ClaimError, GenerationError
from affidavit.core.settings import ClaimsSettings
from affidavit.core.types import Message


class Scripted:
    """Returns queued replies (or raises queued exceptions) and records each request."""

    name = "scripted"

    def __init__(self, *replies: str | BaseException) -> None:
        self.replies = list(replies)
        self.requests: list[tuple[list[Message], dict[str, Any] | None]] = []

    def generate(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> str:
        self.requests.append((list(messages), json_schema))
        item = self.replies.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item

    def stream(
        self, messages: Sequence[Message], *, max_tokens: int | None = None
    ) -> Iterator[str]:
        yield self.generate(messages, max_tokens=max_tokens)


ANSWER = "Hello! Marie Curie was a chemist [1]. She was born in Warsaw and won two Nobel Prizes."


def reply(*pairs: tuple[int, str]) -> str:
    return json.dumps({"claims": [{"sentence": n, "claim": t} for n, t in pairs]})


def test_llm_claims_mapped_to_source_sentences() -> None:
    gen = Scripted(
        reply(
            (1, "Marie Curie was a chemist."),
            (2, "Marie Curie was born in Warsaw."),
            (2, "Marie Curie won two Nobel Prizes."),
        )
    )
    compiler = LLMClaimCompiler(gen)
    assert isinstance(compiler, ClaimExtractor)
    result = compiler.run(ANSWER)
    assert result.method == "llm" and result.fallback_reason is None
    assert [c.text for c in result.claims] == [
        "Marie Curie was a chemist.",
        "Marie Curie was born in Warsaw.",
        "Marie Curie won two Nobel Prizes.",
    ]
    assert all(c.origin == "llm" for c in result.claims)
    assert [ANSWER[c.start : c.end] for c in result.claims] == [
        "Marie Curie was a chemist [1].",
        "She was born in Warsaw and won two Nobel Prizes.",
        "She was born in Warsaw and won two Nobel Prizes.",
    ]
    assert result.claims[0].citations == (1,)
    assert [c.id for c in result.claims] == ["c1", "c2", "c3"]
    # the greeting never reached the model and is recorded as skipped
    messages, schema = gen.requests[0]
    assert schema == CLAIMS_SCHEMA
    assert "1. Marie Curie was a chemist." in messages[-1].content
    assert "Hello" not in messages[-1].content.split("Sentences:")[1]
    assert [s.reason for s in result.skipped] == ["greeting"]


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ("not json at all", "not JSON"),
        ('{"claims": [{"sentence": 1}]}', "schema"),
        ('{"claims": [{"sentence": "1", "claim": "Marie Curie was a chemist."}]}', "schema"),
        ('{"claims": [], "extra": 1}', "schema"),
        (reply((7, "Marie Curie was a chemist.")), "sentence 7"),
        (GenerationError("server down"), "server down"),
        (RuntimeError("boom"), "boom"),
    ],
)
def test_any_failure_falls_back_to_rules_and_says_why(bad: str | Exception, why: str) -> None:
    result = LLMClaimCompiler(Scripted(bad)).run(ANSWER)
    expected = RuleBasedExtractor().run(ANSWER)
    assert result.fallback_reason is not None and why in result.fallback_reason
    assert result.method == "rules"
    assert result.claims == expected.claims


def test_ungrounded_claim_rejected_sentence_keeps_rule_claims() -> None:
    gen = Scripted(
        reply(
            (1, "Marie Curie was a chemist."),
            (2, "Marie Curie was born in 1867 in Warsaw."),  # 1867 is not in the answer
        )
    )
    result = LLMClaimCompiler(gen).run(ANSWER)
    assert [c.text for c in result.claims] == [
        "Marie Curie was a chemist.",
        "Marie Curie was born in Warsaw.",
        "Marie Curie won two Nobel Prizes.",
    ]
    assert [c.origin for c in result.claims] == ["llm", "decomposed", "decomposed"]
    assert any("1867" in n for n in result.notes)


def test_sentence_the_llm_ignored_keeps_rule_claims() -> None:
    result = LLMClaimCompiler(Scripted(reply((1, "Marie Curie was a chemist.")))).run(ANSWER)
    assert len(result.claims) == 3
    assert result.claims[1].origin == "decomposed"


def test_batches_sentences() -> None:
    answer = " ".join(f"City {i} has {i}00 parks." for i in range(1, 6))
    gen = Scripted(
        reply((1, "City 1 has 100 parks."), (2, "City 2 has 200 parks.")),
        reply((1, "City 3 has 300 parks."), (2, "City 4 has 400 parks.")),
        reply((1, "City 5 has 500 parks.")),
    )
    result = LLMClaimCompiler(gen, batch_sentences=2).run(answer)
    assert len(gen.requests) == 3
    assert [c.text for c in result.claims] == [f"City {i} has {i}00 parks." for i in range(1, 6)]
    assert [answer[c.start : c.end] for c in result.claims] == [
        f"City {i} has {i}00 parks." for i in range(1, 6)
    ]


def test_code_fenced_json_accepted() -> None:
    fenced = "```json\n" + reply((1, "Oslo is in Norway.")) + "\n```"
    assert parse_llm_claims(fenced, 1) == [(1, "Oslo is in Norway.")]
    with pytest.raises(LLMOutputError):
        parse_llm_claims(reply((0, "Oslo is in Norway.")), 1)


def test_empty_answer_does_not_call_the_model() -> None:
    gen = Scripted()
    assert LLMClaimCompiler(gen).extract("  ") == []
    assert gen.requests == []


def test_build_extractor_from_settings() -> None:
    assert isinstance(build_extractor(ClaimsSettings()), RuleBasedExtractor)
    llm = build_extractor(ClaimsSettings(extractor="llm"), Scripted())
    assert isinstance(llm, LLMClaimCompiler)
    with pytest.raises(ClaimError, match="generator"):
        build_extractor(ClaimsSettings(extractor="llm"))


def test_invalid_limits_rejected() -> None:
    with pytest.raises(ClaimError):
        LLMClaimCompiler(Scripted(), batch_sentences=0)
    with pytest.raises(ClaimError):
        LLMClaimCompiler(object())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("answer", "claim"),
    [
        # a negation the sentence does not hold
        ("Adam Smith won the prize [1].", "Adam Smith never won the prize."),
        ("Adam Smith won the prize [1].", "Adam Smith did not win the prize."),
        # a word of the sentence inside another word of the claim ("safe" in "unsafe")
        ("The drug is safe for children [1].", "The drug is unsafe for children."),
        ("The treaty was legal under French law [1].", "The treaty was illegal under French law."),
        # a word the answer never says
        ("The bridge opened in 1932 [1].", "The bridge opened in 1932 in Sydney."),
        # a number of the sentence inside another number of the answer
        (
            "Phelps swam 125 races [1]. Phelps won 12 medals [1].",
            "Phelps won 125 medals.",
        ),
    ],
)
def test_an_llm_claim_saying_more_or_other_than_its_sentence_is_not_used(
    answer: str, claim: str
) -> None:
    # the sentence is shown whole when its claims verify: a claim that negates or rewords it
    # would verify against a passage that says the opposite of what is shown
    n = len(RuleBasedExtractor().run(answer).claims)
    result = LLMClaimCompiler(Scripted(reply((n, claim)))).run(answer)
    assert claim not in [c.text for c in result.claims]
    assert result.claims == RuleBasedExtractor().run(answer).claims
    assert any("sentence" in note for note in result.notes)


def test_llm_claims_naming_what_a_pronoun_stood_for_are_still_used() -> None:
    answer = "Marie Curie was a chemist [1]. She won two Nobel Prizes [1]."
    gen = Scripted(
        reply((1, "Marie Curie was a chemist."), (2, "Marie Curie won two Nobel Prizes."))
    )
    result = LLMClaimCompiler(gen).run(answer)
    assert [(c.text, c.origin) for c in result.claims] == [
        ("Marie Curie was a chemist.", "llm"),
        ("Marie Curie won two Nobel Prizes.", "llm"),
    ]
