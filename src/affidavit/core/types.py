"""The contracts that cross stage boundaries: one definition for the whole project.

Every model is a frozen pydantic v2 model, JSON round-trippable
(``Model.model_validate_json(m.model_dump_json()) == m``). Variants carry a ``kind`` tag.
Stage-specific reports live beside this module (``core/report.py``, ``core/certificate.py``...)
but build on these types.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


def sha256_text(text: str) -> str:
    """Hex sha256 of a text's UTF-8 bytes (how evidence and documents are fingerprinted)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _schema_summary(schema: dict[str, Any]) -> None:
    """A contract's JSON Schema describes it by its docstring's first paragraph (the examples
    below it are for readers of the code, not for clients reading the schema)."""
    text = schema.get("description")
    if isinstance(text, str):
        schema["description"] = " ".join(text.split("\n\n", 1)[0].split())


class Frozen(BaseModel):
    """Base of every contract: immutable, no unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=_schema_summary)


class Chunk(Frozen):
    """A passage of a source document, as retrieved and as shown to the generator.

    Examples:
        >>> Chunk(text="Paris is the capital of France.", url="https://example.org/paris").id[:6]
        'chunk-'
    """

    text: str = Field(description="The passage text.")
    url: str | None = Field(default=None, description="Source URL or path, if known.")
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="Free metadata (dates such as published_at, title...)."
    )
    id: str = Field(
        default="", description="Stable chunk id; derived from the text and url when not given."
    )
    doc_id: str | None = Field(default=None, description="Id of the document the chunk is from.")
    title: str | None = Field(default=None, description="Title of the source document.")
    start: int | None = Field(
        default=None, description="Start offset of the chunk in its document text."
    )
    end: int | None = Field(
        default=None, description="End offset of the chunk in its document text."
    )

    @model_validator(mode="after")
    def _derive_id(self) -> Chunk:
        if not self.id:
            digest = sha256_text(f"{self.url or ''}\x00{self.text}")[:16]
            object.__setattr__(self, "id", f"chunk-{digest}")
        return self


class Document(Frozen):
    """A whole source document as stored."""

    id: str = Field(description="Document id (the JSONL id, or derived from the source path).")
    text: str = Field(description="The full extracted text.")
    source: str = Field(description="Path or URL the document came from.")
    title: str | None = Field(default=None, description="Title, if the format has one.")
    mime: str = Field(default="text/plain", description="Detected content type.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Dates, page map, etc.")
    content_hash: str = Field(default="", description="sha256 of the text; filled when empty.")

    @model_validator(mode="after")
    def _derive_hash(self) -> Document:
        if not self.content_hash:
            object.__setattr__(self, "content_hash", sha256_text(self.text))
        return self


class Hit(Frozen):
    """One retrieval result."""

    chunk: Chunk = Field(description="The retrieved chunk.")
    score: float = Field(description="Score under the mode that ranked it (higher is better).")
    rank: int = Field(description="1-based rank in the result list.")
    mode: Literal["bm25", "dense", "hybrid", "rerank", "web"] = Field(
        description="Which retriever produced this ranking."
    )
    scores: dict[str, float] = Field(
        default_factory=dict, description="Per-retriever scores kept for the trace."
    )


ClaimType = Literal[
    "factual", "numeric", "temporal", "causal", "comparative", "definition", "procedural"
]


class Claim(Frozen):
    """An atomic, checkable statement taken from an answer."""

    id: str = Field(description="Claim id, unique within one answer (c1, c2, ...).")
    text: str = Field(description="The claim as checked (may be decomposed from a sentence).")
    start: int = Field(description="Start offset in the answer of the text the claim came from.")
    end: int = Field(description="End offset in the answer of the text the claim came from.")
    sentence_index: int = Field(default=0, description="Index of the source sentence.")
    sentence: str = Field(default="", description="The full answer sentence it came from.")
    type: ClaimType = Field(default="factual", description="Claim type.")
    hedged: bool = Field(default=False, description="The sentence hedges (may, might, likely...).")
    citations: tuple[int, ...] = Field(
        default=(), description="Citation numbers [n] attached to the source sentence."
    )
    origin: Literal["extracted", "decomposed", "llm"] = Field(
        default="extracted", description="How the claim was produced."
    )


CheckName = Literal["number", "date", "entity", "polarity", "comparative", "unit"]


# checks whose failure without an evidence value means "the evidence never states it" (the claim's
# number, date or name is absent), not "the evidence states something else"
ABSENCE_CHECK_NAMES = frozenset({"number", "date", "entity"})


class CheckResult(Frozen):
    """Result of one typed consistency check between a claim and its evidence."""

    check: CheckName = Field(description="Which check ran.")
    status: Literal["pass", "fail", "not_applicable"] = Field(description="Outcome.")
    reason: str = Field(default="", description="Plain-words explanation, esp. for failures.")
    claim_value: str | None = Field(default=None, description="The value found in the claim.")
    evidence_value: str | None = Field(
        default=None, description="The conflicting or matching value found in the evidence."
    )

    @property
    def absent(self) -> bool:
        """A failure that found nothing to compare: the claim's number, date or name is not in
        the evidence at all. Absence is not a contradiction (nothing there says otherwise)."""
        return (
            self.status == "fail"
            and self.check in ABSENCE_CHECK_NAMES
            and self.evidence_value is None
        )


class EvidenceSpan(Frozen):
    """A span of a chunk used as evidence for a claim."""

    chunk_id: str = Field(description="Id of the chunk the span is in.")
    doc_id: str | None = Field(default=None, description="Id of the source document.")
    url: str | None = Field(default=None, description="Source URL, if known.")
    start: int = Field(description="Start offset in the chunk text.")
    end: int = Field(description="End offset in the chunk text.")
    text: str = Field(description="The span text (chunk.text[start:end]).")
    sha256: str = Field(default="", description="sha256 of the span text; filled when empty.")
    checked_whole: bool = Field(
        default=True, description="False if the span could not be checked whole by the model."
    )

    @model_validator(mode="after")
    def _derive_hash(self) -> EvidenceSpan:
        if not self.sha256:
            object.__setattr__(self, "sha256", sha256_text(self.text))
        return self


Label = Literal["supported", "contradicted", "unsupported"]


class StageScore(Frozen):
    """What one verifier stage said about a claim (kept for the trace)."""

    stage: str = Field(description="Stage name: checks, lexical, cross_encoder, llm_judge, ...")
    p_entail: float = Field(ge=0.0, le=1.0, description="Probability the evidence entails it.")
    p_neutral: float = Field(ge=0.0, le=1.0, description="Probability of not enough info.")
    p_contradict: float = Field(ge=0.0, le=1.0, description="Probability of contradiction.")
    label: Label = Field(description="The stage's own label.")
    decided: bool = Field(
        default=False, description="True if this stage was certain enough to end the cascade."
    )
    detail: str = Field(default="", description="Free text: model id, window count, etc.")
    error: str | None = Field(default=None, description="Set when the stage failed to run.")


class Verdict(Frozen):
    """The verifier's final word on one claim."""

    claim_id: str = Field(description="Id of the claim.")
    label: Label = Field(description="supported / contradicted / unsupported.")
    p_entail: float = Field(ge=0.0, le=1.0, description="Calibrated entailment probability.")
    p_neutral: float = Field(ge=0.0, le=1.0, description="Calibrated not-enough-info probability.")
    p_contradict: float = Field(ge=0.0, le=1.0, description="Calibrated contradiction probability.")
    evidence: tuple[EvidenceSpan, ...] = Field(
        default=(), description="Minimal sufficient evidence (or the contradicting span)."
    )
    checks: tuple[CheckResult, ...] = Field(default=(), description="Typed consistency checks.")
    stages: tuple[StageScore, ...] = Field(default=(), description="Every cascade stage's scores.")
    complete: bool = Field(
        default=True,
        description="False when any step could not run or evidence was not checked whole.",
    )
    errors: tuple[str, ...] = Field(default=(), description="What failed, in plain words.")
    reason: str = Field(default="", description="Why this label, in plain words.")


Decision = Literal["verified", "unverified", "blocked"]
DisplayMode = Literal["strict", "mixed", "debug"]
EnforcementMode = Literal["audit", "guardrail", "enforce"]


class Message(Frozen):
    """One chat message sent to a generator."""

    role: Literal["system", "user", "assistant"] = Field(description="Who speaks.")
    content: str = Field(description="The message text.")
