"""Contracts of the corrective-retrieval stage (CRAG): grades, classification, refined context.

These frozen models are what `affidavit.correct.CorrectiveRetrieval` returns and what the
``ask`` pipeline records in its trace. All are JSON round-trippable.

Examples:
    >>> g = RelevanceScore(score=9.0, reason="names the capital")
    >>> g.score
    9.0
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, model_validator

from affidavit.core.types import Chunk, Frozen

ClassificationKind = Literal["correct", "ambiguous", "incorrect"]


class RelevanceScore(Frozen):
    """One evaluator's relevance score for one passage (a chunk or a sentence)."""

    score: float = Field(ge=0.0, le=10.0, description="Relevance on the 0-10 CRAG scale.")
    reason: str = Field(default="", description="Why, in plain words (LLM) or the features used.")
    error: str | None = Field(
        default=None, description="Set when scoring failed; the score is then 0 (fail closed)."
    )

    @model_validator(mode="before")
    @classmethod
    def _failed_scores_zero(cls, data: Any) -> Any:
        # fail closed whoever made it: a score that reports a failure is 0, never what a
        # plugged-in evaluator left on it (a timed-out grade of 9 counted as relevant)
        if isinstance(data, dict) and data.get("error") is not None and data.get("score") != 0:
            return {**data, "score": 0.0}
        return data


class ChunkGrade(Frozen):
    """The relevance grade of one retrieved chunk."""

    chunk_id: str = Field(description="Id of the graded chunk.")
    rank: int = Field(description="1-based rank of the chunk in the retrieval result.")
    score: float = Field(ge=0.0, le=10.0, description="Relevance on the 0-10 scale.")
    reason: str = Field(default="", description="The evaluator's reason or feature summary.")
    error: str | None = Field(default=None, description="Set when grading failed (score 0).")
    evaluator: str = Field(description="Name of the evaluator that produced the score.")
    retrieval_score: float | None = Field(
        default=None, description="The retriever's own score, when the input was a Hit."
    )


class Classification(Frozen):
    """The CRAG decision for one question's retrieval."""

    kind: ClassificationKind = Field(
        description="correct: max >= upper; incorrect: all < lower; otherwise ambiguous."
    )
    max_score: float = Field(description="Highest chunk grade (0 when no chunk was graded).")
    upper_threshold: float = Field(description="The upper threshold that was applied.")
    lower_threshold: float = Field(description="The lower threshold that was applied.")
    reason: str = Field(description="Plain-words explanation of the decision.")


class SentenceStrip(Frozen):
    """A sentence of a source passage, scored during refinement."""

    start: int = Field(description="Start offset in the source passage text.")
    end: int = Field(description="End offset in the source passage text.")
    score: float = Field(
        ge=0.0, le=10.0, description="Relevance of the sentence (0-10), the one compared."
    )
    own_score: float | None = Field(
        default=None,
        description="The sentence's score alone, when it was also scored with the preceding "
        "sentence(s) (sentence_window > 0) and the higher score was used.",
    )
    kept: bool = Field(description="True if score >= strip_threshold (or the chunk is kept whole).")
    error: str | None = Field(default=None, description="Set when scoring the sentence failed.")


class WebResult(Frozen):
    """One result from a web search provider or the offline fallback corpus."""

    url: str = Field(description="Result URL (or store path for the fallback corpus).")
    title: str = Field(default="", description="Result title.")
    snippet: str = Field(default="", description="The provider's snippet / description.")
    content: str | None = Field(
        default=None, description="Main text of the page (fetched and extracted), when available."
    )
    provider: str = Field(description="tavily / brave / searxng / store / ...")
    rank: int = Field(description="1-based rank in the provider's list.")
    provider_score: float | None = Field(default=None, description="The provider's own score.")
    fetch_error: str | None = Field(
        default=None, description="Why the page could not be fetched (the snippet is used)."
    )
    blocked: str | None = Field(
        default=None, description="Why the result was refused (allowlist, SSRF guard), if it was."
    )
    used: bool = Field(
        default=False,
        description="True when its text was graded and refined (False: refused, empty, or "
        "beyond top_k_web_results).",
    )


class QueryRewrite(Frozen):
    """The search query, as rewritten by the LLM (or the original on failure)."""

    original: str = Field(description="The user's question.")
    query: str = Field(description="The query that was sent to the search provider.")
    rewritten: bool = Field(description="True if the LLM's rewrite was used.")
    error: str | None = Field(
        default=None, description="Why the rewrite failed and the original was used."
    )


class RefinedContext(Frozen):
    """A piece of refined context handed to the generator, with its provenance."""

    chunk: Chunk = Field(
        description="The refined passage as a chunk (kept sentences merged, or the whole chunk)."
    )
    origin: Literal["local", "web"] = Field(description="From the user's store or the web.")
    source_chunk_id: str = Field(description="Id of the retrieved chunk or web page it came from.")
    source_score: float = Field(description="Grade of the source passage (0-10).")
    kept_whole: bool = Field(
        description="True when no sentence passed the strip threshold and the whole highly "
        "relevant passage was kept."
    )
    strips: tuple[SentenceStrip, ...] = Field(
        default=(), description="Every sentence of the source and whether it was kept."
    )

    @property
    def kept_spans(self) -> tuple[tuple[int, int], ...] | None:
        """Offsets of the kept sentences in the source passage; None when it was kept whole."""
        if self.kept_whole:
            return None
        return tuple((s.start, s.end) for s in self.strips if s.kept)


def refined_chunk(
    source: Chunk,
    kept: Sequence[tuple[int, int]] | None,
    *,
    origin: Literal["local", "web"] = "local",
) -> Chunk:
    """The passage refinement hands on: ``source``'s kept sentences joined by one space.

    The one definition of a refined passage, used by refinement and by certificate replay,
    which rebuilds the passage a claim was checked against from the stored chunk and the
    recorded offsets (the id follows from the text and url, so a rebuilt passage has the
    original's id exactly when it has its text).

    Args:
        source: the retrieved (or web) passage.
        kept: ``(start, end)`` offsets of the kept sentences in ``source.text``, in order;
            None keeps the whole passage.
        origin: ``"local"`` or ``"web"`` (recorded in the metadata).

    Raises:
        ValueError: an offset pair is outside the text, reversed or out of order.

    Examples:
        >>> c = Chunk(text="Paris is big. It rains. It is in France.", url="u")
        >>> refined_chunk(c, [(0, 13), (24, 40)]).text
        'Paris is big. It is in France.'
    """
    if kept is not None:
        previous = 0
        for start, end in kept:
            if not previous <= start <= end <= len(source.text):
                raise ValueError(
                    f"kept span {start}-{end} is out of order or outside the passage "
                    f"({len(source.text)} characters)"
                )
            previous = end
    text = source.text if kept is None else " ".join(source.text[s:e] for s, e in kept)
    metadata = dict(source.metadata)
    metadata.update(
        {
            "refined_from": source.id,
            "origin": origin,
            "kept_spans": [[s, e] for s, e in kept] if kept is not None else "whole",
        }
    )
    return Chunk(
        text=text,
        url=source.url,
        metadata=metadata,
        doc_id=source.doc_id,
        title=source.title,
        # offsets in the document stay meaningful only when the chunk is kept whole
        start=source.start if kept is None else None,
        end=source.end if kept is None else None,
    )


class WebTrace(Frozen):
    """What the web fallback did."""

    provider: str = Field(description="Provider name, or 'none' when there is no web search.")
    query: QueryRewrite | None = Field(default=None, description="The query that was sent.")
    results: tuple[WebResult, ...] = Field(default=(), description="Every result, kept or not.")
    error: str | None = Field(default=None, description="Set when the search itself failed.")


class CorrectionTrace(Frozen):
    """The full trace of one corrective-retrieval run (for the ask trace and the UI)."""

    question: str = Field(description="The user's question.")
    evaluator: str = Field(description="Name of the relevance evaluator.")
    grades: tuple[ChunkGrade, ...] = Field(description="Grade of every evaluated chunk, by rank.")
    classification: Classification = Field(description="The Correct/Ambiguous/Incorrect decision.")
    strip_threshold: float = Field(description="The strip threshold that was applied.")
    web: WebTrace | None = Field(
        default=None, description="The web fallback, when the classification asked for it."
    )
    dropped: tuple[str, ...] = Field(
        default=(),
        description="Why each passage that contributed nothing was dropped (or not graded), and "
        "each web page's text that was cut (max_web_chars).",
    )
    errors: tuple[str, ...] = Field(default=(), description="Failures met along the way.")
    fallback: str | None = Field(
        default=None,
        description="Set when refinement kept nothing and the best-graded chunk was kept whole "
        "instead (``correct.keep_best_when_empty``): which chunk and why.",
    )
    timings_ms: dict[str, float] = Field(
        default_factory=dict, description="Milliseconds per step (evaluate, refine, web, total)."
    )


class CorrectionResult(Frozen):
    """The output of corrective retrieval: the context for the generator, and the trace."""

    context: tuple[RefinedContext, ...] = Field(
        description="Refined passages in order (local first, then web), for the prompt."
    )
    trace: CorrectionTrace = Field(description="Everything that was decided and why.")

    @property
    def classification(self) -> Classification:
        """Shortcut to the trace's classification."""
        return self.trace.classification

    @property
    def chunks(self) -> list[Chunk]:
        """The refined passages as chunks, ready for the numbered prompt."""
        return [c.chunk for c in self.context]
