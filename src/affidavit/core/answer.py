"""Contracts of the ``ask`` job: the answer, its citations, sources, trace and timings.

Everything `AskPipeline` returns is a frozen pydantic model here,
JSON round-trippable, so ``affidavit ask --json`` prints exactly the library's result.

Examples:
    >>> t = StageTiming(stage="retrieve", seconds=0.01)
    >>> StageTiming.model_validate_json(t.model_dump_json()) == t
    True
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from affidavit.core.types import Chunk, Claim, Decision, DisplayMode, Frozen, Hit, Verdict

StageName = Literal[
    "load",
    "retrieve",
    "correct",
    "prompt",
    "generate",
    "citations",
    "claims",
    "verify",
    "policy",
    "requote",
    "certify",
    "total",
]
Classification = Literal["correct", "ambiguous", "incorrect"]


class StageTiming(Frozen):
    """Wall-clock time of one pipeline stage."""

    stage: StageName = Field(description="Which stage.")
    seconds: float = Field(ge=0.0, description="Wall-clock seconds the stage took.")
    skipped: bool = Field(default=False, description="True when the stage did not run.")
    note: str = Field(default="", description="Why it was skipped, or what ran.")


class Source(Frozen):
    """A passage shown to the generator as ``[number]``."""

    number: int = Field(ge=1, description="The passage number used in the prompt and citations.")
    chunk_id: str = Field(description="Id of the chunk (its text is in the trace's context).")
    origin: Literal["store", "web"] = Field(
        default="store", description="Whether the passage came from the store or a web search."
    )
    url: str | None = Field(default=None, description="Source URL or path, if known.")
    title: str | None = Field(default=None, description="Title of the source document.")
    doc_id: str | None = Field(default=None, description="Id of the source document.")


class Citation(Frozen):
    """A citation ``[n]`` as finally attached to an answer sentence."""

    sentence_index: int = Field(ge=0, description="Index of the answer sentence (0-based).")
    number: int = Field(ge=1, description="The passage number cited.")
    chunk_id: str = Field(description="Id of the cited chunk.")
    corrected_from: int | None = Field(
        default=None,
        description="The number the model wrote when the verifier's evidence pointed elsewhere.",
    )


class RemovedCitation(Frozen):
    """A citation the model wrote that names no provided passage (removed from the answer)."""

    sentence_index: int = Field(ge=0, description="Index of the sentence it was in.")
    number: int = Field(description="The passage number the model wrote.")
    marker: str = Field(description="The exact marker text removed, e.g. ``[7]``.")
    reason: str = Field(description="Why it was removed, in plain words.")


class CitationCorrection(Frozen):
    """A sentence's citation replaced by the passage the verifier's evidence came from."""

    sentence_index: int = Field(ge=0, description="Index of the sentence.")
    claim_id: str = Field(description="The verified claim whose evidence decided it.")
    from_numbers: tuple[int, ...] = Field(description="The numbers the model cited.")
    to_numbers: tuple[int, ...] = Field(description="The numbers the evidence came from.")
    reason: str = Field(description="Why, in plain words.")


class AnswerSentence(Frozen):
    """A sentence of the answer as shown.

    A citation marker is in ``text`` only where the verifier found the cited passage supports
    the sentence; a sentence that is not verified shows none (``withdrawn_citations`` lists
    what the model had cited).
    """

    index: int = Field(ge=0, description="Sentence index.")
    start: int = Field(ge=0, description="Start offset in draft.")
    end: int = Field(ge=0, description="End offset in draft.")
    decision: Decision = Field(description="Worst decision of its claims.")
    claim_ids: tuple[str, ...] = Field(default=(), description="Its claims.")
    shown: bool = Field(description="False when withheld (strict).")
    lead: str = Field(default="", description="Separator shown before it.")
    text: str = Field(default="", description="As shown (no badge); empty when withheld.")
    citations: tuple[int, ...] = Field(default=(), description="Passage numbers it cites.")
    withdrawn_citations: tuple[int, ...] = Field(
        default=(), description="Model-cited numbers not shown (unsupported)."
    )


class ClaimOutcome(Frozen):
    """One claim with the verifier's verdict and the policy's decision."""

    claim: Claim = Field(description="The claim as extracted from the answer.")
    verdict: Verdict = Field(description="The verifier's verdict.")
    decision: Decision = Field(description="verified / unverified / blocked (fail closed).")
    evidence_numbers: tuple[int, ...] = Field(
        default=(), description="Passage numbers the verdict's evidence spans came from."
    )


class ScoredChunk(Frozen):
    """A retrieved chunk with the relevance evaluator's 0-10 score."""

    chunk_id: str = Field(description="Id of the chunk.")
    score: float = Field(description="Relevance score, 0-10.")
    detail: str = Field(default="", description="Evaluator name or note.")


class WebResultTrace(Frozen):
    """One web search result as used (or refused)."""

    url: str | None = Field(default=None, description="Result URL.")
    title: str | None = Field(default=None, description="Result title.")
    used: bool = Field(default=True, description="False if refused (allowlist, SSRF guard...).")
    note: str = Field(default="", description="Why it was refused, or any note.")


class VerificationTrace(Frozen):
    """Verification of one claim, for the trace."""

    claim_id: str = Field(description="Id of the claim.")
    label: str = Field(description="The verdict label.")
    p_entail: float = Field(description="Entailment probability.")
    p_contradict: float = Field(description="Contradiction probability.")
    seconds: float = Field(ge=0.0, description="Time spent verifying this claim.")
    error: str | None = Field(default=None, description="Set when the verifier failed.")


class QuoteRetry(Frozen):
    """The second draft asked for in strict mode when none of the first draft's claims passed.

    The model is asked to copy the passages' sentences word for word (``generate.quote_retry``).
    The answer shows the quoting draft only when at least one of its claims is verified; the
    draft not shown is kept here with its claims, so the trace holds both.
    """

    adopted: bool = Field(
        description="True: the answer is the quoting draft (the first draft is the one kept "
        "here); False: the first draft stands and the quoting draft is kept here."
    )
    other_raw: str = Field(description="The draft not shown, exactly as the model wrote it.")
    other_claims: tuple[ClaimOutcome, ...] = Field(
        default=(), description="The claims of the draft not shown, none of them verified."
    )
    seconds: float = Field(ge=0.0, description="Time the retry took (generation and checks).")
    error: str | None = Field(
        default=None, description="Set when the retry could not run (the first draft stands)."
    )


class Trace(Frozen):
    """Everything that happened while answering, for the UI, ``--json`` and certificates."""

    retrieval_hits: tuple[Hit, ...] = Field(default=(), description="What the retriever returned.")
    evaluator_scores: tuple[ScoredChunk, ...] = Field(
        default=(), description="Relevance score of each retrieved chunk (corrective stage)."
    )
    classification: Classification | None = Field(
        default=None, description="CRAG classification; None when the corrective stage is off."
    )
    corrective_detail: dict[str, Any] = Field(
        default_factory=dict, description="Anything else the corrective stage reported."
    )
    context: tuple[Chunk, ...] = Field(
        default=(), description="The (refined) passages shown to the generator, in number order."
    )
    web_queries: tuple[str, ...] = Field(default=(), description="Web search queries issued.")
    web_results: tuple[WebResultTrace, ...] = Field(default=(), description="Web results seen.")
    prompt_chars: int = Field(default=0, ge=0, description="Characters in the prompt messages.")
    prompt_tokens_estimate: int = Field(
        default=0, ge=0, description="Rough token count of the prompt (characters / 4)."
    )
    generator: str = Field(default="", description="Name of the generator backend.")
    raw_answer: str = Field(
        default="",
        description="UNVERIFIED: the text exactly as the model produced it.",
    )
    generated_pieces: int = Field(default=0, ge=0, description="Streamed pieces received.")
    generation_seconds: float = Field(default=0.0, ge=0.0, description="Generation wall time.")
    time_to_first_token_s: float | None = Field(
        default=None, description="Seconds from the start of the request to the first piece."
    )
    removed_citations: tuple[RemovedCitation, ...] = Field(
        default=(), description="Citations naming no provided passage, removed."
    )
    citation_corrections: tuple[CitationCorrection, ...] = Field(
        default=(), description="Citations replaced by the verifier's evidence passage."
    )
    verification: tuple[VerificationTrace, ...] = Field(
        default=(), description="Per-claim verification summary."
    )
    timings: tuple[StageTiming, ...] = Field(default=(), description="Per-stage latency.")
    skipped_stages: tuple[str, ...] = Field(
        default=(), description="Stages that did not run, with the reason."
    )
    quote_retry: QuoteRetry | None = Field(
        default=None,
        description="The quoting retry, when it ran (strict mode, no claim of the first draft "
        "verified): which draft is shown and the other one.",
    )


class AskResult(Frozen):
    """The result of one question: the shown answer, its proof and how it was produced."""

    question: str = Field(description="The question asked.")
    mode: DisplayMode = Field(description="Display mode the answer was rendered in.")
    answer: str = Field(description="The rendered answer as shown (policy applied).")
    note: str = Field(
        default="", description="What the policy withheld, in plain words (empty when nothing)."
    )
    draft: str = Field(
        default="",
        description="UNVERIFIED model draft (claims' offsets point into it): unverified "
        "sentences keep the model's citations; show answer or sentences instead.",
    )
    insufficient: bool = Field(
        default=False, description="The model said the context does not answer the question."
    )
    claims: tuple[ClaimOutcome, ...] = Field(
        default=(), description="Every claim with its verdict and decision."
    )
    citations: tuple[Citation, ...] = Field(
        default=(), description="Citations shown: of verified sentences, to their evidence."
    )
    sentences: tuple[AnswerSentence, ...] = Field(
        default=(), description="The sentences as the answer shows them."
    )
    sources: tuple[Source, ...] = Field(default=(), description="The numbered passages.")
    trace: Trace = Field(default_factory=Trace, description="The full trace.")
    certificate_path: str | None = Field(
        default=None, description="Where the signed certificate was written, if requested."
    )

    @property
    def decisions(self) -> dict[str, Decision]:
        """Claim id -> decision."""
        return {c.claim.id: c.decision for c in self.claims}

    @property
    def timings(self) -> dict[str, float]:
        """Stage -> seconds."""
        return {t.stage: t.seconds for t in self.trace.timings}

    def shown_only(self) -> AskResult:
        """The result as strict mode lets any reader see it: what the policy withheld is gone
        from every field, not only from ``answer``. A result in another mode comes back as is.

        Kept: the answer, note, sources, citations (numbers only), the retrieval and
        corrective trace, timings, and the verified claims with their verdicts and trace rows.
        Gone: the draft and the raw model text (``draft`` becomes the answer), the withheld
        sentences, the claims that were not verified, their verification rows and citation
        corrections, removed citation markers and the quote-retry's other draft. For readers
        that pass everything on (an MCP host hands the structured result to its model), where
        the HTTP and JSON results keep the whole trace for an auditor.
        """
        if self.mode != "strict":
            return self
        keep = {c.claim.id for c in self.claims if c.decision == "verified"}
        trace = self.trace.model_copy(
            update={
                "raw_answer": "",
                "removed_citations": (),
                "citation_corrections": tuple(
                    x for x in self.trace.citation_corrections if x.claim_id in keep
                ),
                "verification": tuple(v for v in self.trace.verification if v.claim_id in keep),
                "quote_retry": None,
            }
        )
        return self.model_copy(
            update={
                "draft": self.answer,
                "claims": tuple(c for c in self.claims if c.claim.id in keep),
                "sentences": tuple(s for s in self.sentences if s.shown),
                "trace": trace,
            }
        )
