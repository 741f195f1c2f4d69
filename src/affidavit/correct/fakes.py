"""Deterministic stand-ins for users' tests and ours: a keyword evaluator and a scripted LLM.

Examples:
    >>> KeywordEvaluator().score("capital of France", ["France's capital is Paris.", "Cats."])
    [RelevanceScore(score=10.0, reason='2/2 terms', error=None), RelevanceScore(score=0.0, reason='0/2 terms', error=None)]
"""  # noqa: E501

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from affidavit.core.correction import RelevanceScore
from affidavit.core.errors import GenerationError
from affidavit.core.types import Message
from affidavit.correct.evaluator import content_terms


class KeywordEvaluator:
    """Scores ``10 * (share of the question's content terms found in the passage)``.

    ``fixed`` maps an exact passage text to a score, to script boundary cases.
    """

    name = "fake:keyword"

    def __init__(self, fixed: dict[str, float] | None = None) -> None:
        self.fixed = dict(fixed or {})
        self.calls: list[tuple[str, list[str]]] = []

    def score(self, question: str, passages: Sequence[str]) -> list[RelevanceScore]:
        """Score each passage."""
        self.calls.append((question, list(passages)))
        q = set(content_terms(question))
        out = []
        for p in passages:
            if p in self.fixed:
                out.append(RelevanceScore(score=self.fixed[p], reason="fixed"))
                continue
            found = q & set(content_terms(p))
            score = 10.0 * len(found) / len(q) if q else 0.0
            out.append(RelevanceScore(score=round(score, 4), reason=f"{len(found)}/{len(q)} terms"))
        return out


class ScriptedGenerator:
    """A Generator that replays scripted replies in order (an ``Exception`` item is raised).

    Records every call's messages and json_schema in ``calls``.
    """

    name = "fake:scripted"

    def __init__(self, replies: Sequence[str | Exception]) -> None:
        self.replies = list(replies)
        self.calls: list[dict[str, Any]] = []

    def generate(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> str:
        """Return the next scripted reply."""
        self.calls.append(
            {"messages": list(messages), "max_tokens": max_tokens, "json_schema": json_schema}
        )
        if not self.replies:
            raise GenerationError("scripted generator has no replies left")
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply

    def stream(
        self, messages: Sequence[Message], *, max_tokens: int | None = None
    ) -> Iterator[str]:
        """Yield the next scripted reply word by word."""
        text = self.generate(messages, max_tokens=max_tokens)
        yield from text.split(" ")
