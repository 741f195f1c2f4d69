"""Contracts of the policy stage: a claim's render decision and the rendered answer.

The policy turns each `Verdict` into a
`ClaimDecision` (verified / unverified / blocked, with a reason in plain words), then
renders the answer in a display mode. Both are frozen and JSON round-trippable, like every
contract in ``core/``.
"""

from __future__ import annotations

from pydantic import Field

from affidavit.core.types import Decision, DisplayMode, Frozen, Label


class ClaimDecision(Frozen):
    """The fail-closed render decision for one claim.

    Examples:
        >>> ClaimDecision(claim_id="c1", decision="unverified", reason="no verdict").decision
        'unverified'
    """

    claim_id: str = Field(description="Id of the claim decided.")
    decision: Decision = Field(description="verified / unverified / blocked.")
    reason: str = Field(description="Why, in plain words (quotes the evidence when it can).")
    label: Label | None = Field(
        default=None, description="The verifier's label, or None when there was no verdict."
    )
    p_entail: float | None = Field(
        default=None, ge=0.0, le=1.0, description="Entailment probability the decision used."
    )
    p_contradict: float | None = Field(
        default=None, ge=0.0, le=1.0, description="Contradiction probability the decision used."
    )


class RenderedSentence(Frozen):
    """One sentence of the answer and what the renderer did with it."""

    index: int = Field(description="0-based index of the sentence in the answer.")
    start: int = Field(description="Start offset of the sentence in the original answer.")
    end: int = Field(description="End offset (exclusive) of the sentence in the original answer.")
    text: str = Field(description="The sentence in its original wording (citations included).")
    decision: Decision = Field(
        description="The sentence's decision: the worst of its claims' (blocked > unverified "
        "> verified); a sentence with no checkable claim is unverified."
    )
    claim_ids: tuple[str, ...] = Field(default=(), description="Claims taken from the sentence.")
    shown: bool = Field(description="Whether the sentence appears in the rendered text.")
    reason: str = Field(default="", description="Why it was withheld or labelled so.")
    shown_text: str = Field(
        default="",
        description="The sentence as the rendered text shows it (its badge aside): a citation "
        "marker stays only when the sentence is verified and the passage it names holds its "
        "evidence. Empty when the sentence is withheld.",
    )
    lead: str = Field(
        default="",
        description="What the rendered text puts before the sentence: the space, line break or "
        "list marker that joins it to the sentence shown before it.",
    )
    citations: tuple[int, ...] = Field(
        default=(), description="The passage numbers the shown sentence cites."
    )
    withdrawn_citations: tuple[int, ...] = Field(
        default=(),
        description="Passage numbers the answer cited in this sentence that are not shown: the "
        "sentence is not verified, or its evidence is not in them.",
    )


class RenderedAnswer(Frozen):
    """What the user finally sees, and an account of what was withheld.

    Examples:
        >>> RenderedAnswer(text="", mode="strict", sentences=(), note="").withheld_sentences
        0
    """

    text: str = Field(description="The rendered text for the display mode.")
    mode: DisplayMode = Field(description="strict / mixed / debug.")
    sentences: tuple[RenderedSentence, ...] = Field(description="Every sentence, in order.")
    note: str = Field(description="How much was withheld, in plain words (empty when nothing).")
    total_claims: int = Field(default=0, ge=0, description="Claims in the answer.")
    verified_claims: int = Field(default=0, ge=0, description="Claims decided verified.")
    blocked_claims: int = Field(default=0, ge=0, description="Claims decided blocked.")
    unverified_claims: int = Field(default=0, ge=0, description="Claims decided unverified.")
    withheld_sentences: int = Field(
        default=0, ge=0, description="Sentences left out of the text (strict mode)."
    )
    withheld_claims: int = Field(
        default=0,
        ge=0,
        description="Claims whose sentence was left out, verified ones included (strict mode).",
    )
