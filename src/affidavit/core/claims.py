"""Contracts of the claims stage: the result of extracting claims from one answer.

`Claim` itself lives in ``core/types.py``; this module adds the
record of what the extractor did with every sentence, so a skipped sentence is visible in the
result and not only in a log.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from affidavit.core.types import Claim, Frozen

SkipReason = Literal[
    "question",
    "greeting",
    "meta",
    "opinion",
    "instruction",
    "hedged_filler",
    "heading",
    "too_short",
    "no_content",
    "duplicate",
    "limit",
]


class SkippedSentence(Frozen):
    """A sentence of the answer that produced no claim, and why (``limit``: the claim limit
    stopped it, possibly after its first claims, so it was not checked whole)."""

    sentence_index: int = Field(description="Index of the sentence among the answer's segments.")
    start: int = Field(description="Start offset of the sentence in the answer.")
    end: int = Field(description="End offset of the sentence in the answer.")
    text: str = Field(description="The sentence text (answer[start:end]).")
    reason: SkipReason = Field(description="Why it was not turned into a claim.")


class ClaimExtraction(Frozen):
    """Everything one extraction run produced for one answer.

    Examples:
        >>> from affidavit.claims import RuleBasedExtractor
        >>> r = RuleBasedExtractor().run("Hello! Paris is the capital of France.")
        >>> [c.text for c in r.claims], [s.reason for s in r.skipped]
        (['Paris is the capital of France.'], ['greeting'])
    """

    kind: Literal["claim_extraction"] = Field(
        default="claim_extraction", description="Type tag of this record."
    )
    claims: tuple[Claim, ...] = Field(default=(), description="The claims, in answer order.")
    skipped: tuple[SkippedSentence, ...] = Field(
        default=(), description="Sentences that produced no claim, with the reason."
    )
    sentence_count: int = Field(default=0, description="How many segments the answer split into.")
    method: Literal["rules", "llm"] = Field(
        default="rules", description="Which extractor produced the claims."
    )
    fallback_reason: str | None = Field(
        default=None,
        description="Set when the LLM compiler failed and the rule-based extractor was used.",
    )
    notes: tuple[str, ...] = Field(
        default=(),
        description="What the compiler changed or rejected (e.g. an LLM claim not grounded in "
        "its sentence, replaced by the rule-based claims).",
    )
    config: dict[str, Any] = Field(
        default_factory=dict, description="The effective extractor settings (for the trace)."
    )
