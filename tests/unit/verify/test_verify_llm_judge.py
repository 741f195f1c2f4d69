"""The LLM judge: strict JSON verdicts, fail closed on anything else."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from affidavit.core.errors import GenerationError
from affidavit.core.types import Message
from affidavit.generate.base import Generator
from affidavit.verify.llm_judge import VERDICT_SCHEMA, LLMJudge, parse_verdict


class Scripted:
    name = "scripted"

    def __init__(self, reply: str | Exception) -> None:
        self.reply = reply
        self.seen: list[dict[str, Any]] = []

    def generate(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> str:
        self.seen.append({"messages": list(messages), "schema": json_schema})
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply

    def stream(
        self, messages: Sequence[Message], *, max_tokens: int | None = None
    ) -> Iterator[str]:
        yield ""


def test_valid_verdict_maps_to_probabilities_and_sends_the_schema() -> None:
    gen = Scripted('{"label": "contradicted", "confidence": 0.8, "reason": "1991, not 1990"}')
    assert isinstance(gen, Generator)
    (s,) = LLMJudge(gen).score([("Born in 1990.", "He was born in 1991.")])
    assert s.label == "contradicted" and s.error is None
    assert (s.p_entail, s.p_neutral, s.p_contradict) == pytest.approx((0.1, 0.1, 0.8))
    assert gen.seen[0]["schema"] == VERDICT_SCHEMA
    user = gen.seen[0]["messages"][-1].content
    assert "He was born in 1991." in user and "Born in 1990." in user


@pytest.mark.parametrize(
    "reply",
    [
        "Sure! The claim is supported.",
        '```json\n{"label": "supported", "confidence": 0.9, "reason": "x"}\n```',
        '{"label": "supported", "confidence": 0.9}',
        '{"label": "yes", "confidence": 0.9, "reason": "x"}',
        '{"label": "supported", "confidence": 1.5, "reason": "x"}',
        '{"label": "supported", "confidence": true, "reason": "x"}',
        '{"label": "supported", "confidence": 0.9, "reason": "x", "extra": 1}',
        "[]",
    ],
)
def test_bad_replies_fail_closed(reply: str) -> None:
    (s,) = LLMJudge(Scripted(reply)).score([("c", "e")])
    assert s.error is not None and s.label == "unsupported" and s.p_entail == 0.0
    with pytest.raises(ValueError):
        parse_verdict(reply)


def test_generator_error_and_over_long_evidence_fail_closed() -> None:
    (s,) = LLMJudge(Scripted(GenerationError("server down"))).score([("c", "e")])
    assert s.error and "server down" in s.error
    judge = LLMJudge(
        Scripted('{"label": "supported", "confidence": 1, "reason": ""}'), max_evidence_chars=10
    )
    (s,) = judge.score([("c", "e" * 11)])
    assert s.error and "longer" in s.error
