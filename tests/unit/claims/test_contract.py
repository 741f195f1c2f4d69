"""One contract, run by every ClaimExtractor implementation."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from affidavit.claims import ClaimExtractor, LLMClaimCompiler, RuleBasedExtractor
from affidavit.core.types import Claim, Message

ANSWERS = [
    "",
    "Hello! How can I help?",
    "Marie Curie was born in Warsaw [1]. She won two Nobel Prizes and died in 1934.",
    "Key facts:\n- Oslo is the capital of Norway.\n- It has 700,000 people [2].\n\nHope it helps!",
    "Москва — столица России. 東京は日本の首都です。",
]


class EchoSentences:
    """A scripted generator that returns each numbered sentence as its own claim."""

    name = "echo"

    def generate(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> str:
        listing = messages[-1].content.split("Sentences:\n", 1)[1].split("\n\nReply as", 1)[0]
        claims = []
        for line in listing.splitlines():
            number, _, text = line.partition(". ")
            claims.append({"sentence": int(number), "claim": text})
        return json.dumps({"claims": claims})

    def stream(
        self, messages: Sequence[Message], *, max_tokens: int | None = None
    ) -> Iterator[str]:
        yield self.generate(messages)


@pytest.fixture(params=["rules", "llm"])
def extractor(request: pytest.FixtureRequest) -> ClaimExtractor:
    if request.param == "rules":
        return RuleBasedExtractor()
    return LLMClaimCompiler(EchoSentences())


@pytest.mark.parametrize("answer", ANSWERS)
def test_contract(extractor: ClaimExtractor, answer: str) -> None:
    assert isinstance(extractor, ClaimExtractor)
    claims = extractor.extract(answer)
    assert all(isinstance(c, Claim) for c in claims)
    assert [c.id for c in claims] == [f"c{i + 1}" for i in range(len(claims))]
    starts = [c.start for c in claims]
    assert starts == sorted(starts), "claims come in answer order"
    for c in claims:
        assert 0 <= c.start < c.end <= len(answer)
        assert answer[c.start : c.end].strip()
        assert c.sentence and c.sentence in answer
        assert c.text.strip()
        assert Claim.model_validate_json(c.model_dump_json()) == c
    assert len({c.text for c in claims}) == len(claims), "no duplicate claims"


def test_both_extractors_agree_on_what_is_checkworthy() -> None:
    answer = ANSWERS[3]
    rules = {c.sentence_index for c in RuleBasedExtractor().extract(answer)}
    llm = {c.sentence_index for c in LLMClaimCompiler(EchoSentences()).extract(answer)}
    assert rules == llm == {1, 2}
