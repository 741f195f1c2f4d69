"""Knowledge refinement: split a passage into sentences, score each, keep the relevant ones.

A sentence is kept when its score is ``>= strip_threshold``. The kept sentences are merged (in
their original order, joined by a space) into one refined passage whose provenance (source chunk,
every sentence's offsets and score) is recorded. When no sentence passes but the passage itself
is highly relevant (grade ``>= keep_whole_threshold``, the upper threshold by default), the whole
passage is kept: relevance can live in the combination of sentences.

Examples:
    >>> split_sentences("Paris is big. It is in France.")
    [(0, 13), (14, 30)]
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from affidavit.core.correction import (
    RefinedContext,
    RelevanceScore,
    SentenceStrip,
    refined_chunk,
)
from affidavit.core.types import Chunk
from affidavit.correct.base import NOT_GRADED_BUDGET, RelevanceEvaluator, checked_scores

log = logging.getLogger(__name__)

# Abbreviations after which a period does not end a sentence.
_ABBREV_WORDS = (
    "mr mrs ms dr prof sr jr st vs etc e.g i.e inc ltd co corp no fig al approx dept est "
    "jan feb mar apr jun jul aug sep sept oct nov dec u.s u.k gen col lt sgt rev mt ft"
)
_ABBREV = frozenset(_ABBREV_WORDS.split())
# End of sentence: . ! ? (plus closing quotes/brackets), then whitespace, or directly a capital
# letter when the period follows a lowercase word ("century.First": concatenated paragraphs).
_BOUNDARY = re.compile(r"([.!?][\"'”’)\]]*)(\s+|(?<=[a-z0-9][.!?])(?=[A-Z][a-z]))")
_MIN_SENTENCE = 3


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Split text into sentences, returning ``(start, end)`` offsets into ``text``.

    Offsets exclude surrounding whitespace, so ``text[start:end]`` is the sentence itself.
    Abbreviations (``Dr.``, ``e.g.``), initials (``J. R. R.``) and decimals do not split.
    """
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        end = m.end(1)
        word = re.search(r"([\w.]+)[.!?][\"'”’)\]]*$", text[start:end])
        if word is not None and m.group(1).startswith("."):
            token = word.group(1).lower()
            if token in _ABBREV or (len(token) == 1 and token.isalpha()):
                continue
        spans.append((start, end))
        start = m.end()
    spans.append((start, len(text)))
    out: list[tuple[int, int]] = []
    for s, e in spans:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e - s >= 1:
            out.append((s, e))
    # glue fragments too short to be a sentence onto their predecessor
    merged: list[tuple[int, int]] = []
    for s, e in out:
        if merged and (e - s) < _MIN_SENTENCE:
            merged[-1] = (merged[-1][0], e)
        else:
            merged.append((s, e))
    return merged


def refine_chunk(
    question: str,
    chunk: Chunk,
    *,
    grade: float,
    evaluator: RelevanceEvaluator,
    strip_threshold: float,
    keep_whole_threshold: float,
    origin: str = "local",
    window: int = 0,
    whole_threshold: float | None = None,
    errors: list[str] | None = None,
) -> RefinedContext | None:
    """Refine one passage; ``None`` when nothing in it is relevant enough to keep.

    Args:
        question: the user's question.
        chunk: the retrieved (or web) passage.
        grade: the passage's own grade (0-10).
        evaluator: scores the sentences.
        strip_threshold: a sentence is kept when its score is ``>=`` this.
        keep_whole_threshold: when no sentence passes, the whole passage is kept if its grade is
            ``>=`` this.
        origin: ``"local"`` or ``"web"``.
        window: also score each sentence joined with up to this many preceding sentences and
            count the higher score (0: each sentence alone, as in CRAG). This keeps the second
            hop of a multi-hop passage ("It was built in 1684."), whose own words rarely
            match the question.
        whole_threshold: a passage graded ``>=`` this is kept whole (its sentences are still
            scored, for the trace); None: every passage is refined to its passing sentences.
        errors: a failure of the evaluator is appended here (for the trace) as well as
            recorded on each sentence; a sentence whose score failed is never kept.
    """
    if window < 0:
        raise ValueError(f"window must be >= 0, got {window}")
    spans = split_sentences(chunk.text)
    sentences = [chunk.text[s:e] for s, e in spans]
    joined = [
        chunk.text[spans[max(0, i - window)][0] : spans[i][1]]
        for i in range(1, len(spans))
        if window > 0
    ]
    texts = sentences + joined
    try:
        raw = checked_scores(evaluator.score(question, texts), len(texts)) if texts else []
    except Exception as exc:  # fail closed: no sentence is kept on a score that was not computed
        log.warning("sentence evaluator failed", extra={"error": repr(exc), "chunk": chunk.id})
        err = f"sentence evaluator failed: {exc!r}"
        if errors is not None:
            errors.append(f"{chunk.id}: {err}")
        raw = [RelevanceScore(score=0.0, error=err) for _ in texts]
    late = sum(1 for sc in raw if (sc.error or "").startswith(NOT_GRADED_BUDGET))
    if late and errors is not None:
        errors.append(f"{chunk.id}: {NOT_GRADED_BUDGET}: {late} sentence score(s) not computed")
    own: list[RelevanceScore] | None = None
    if len(raw) == len(texts):
        own = raw[: len(sentences)]
        scores = list(own)
        for i, jsc in enumerate(raw[len(sentences) :], start=1):
            if jsc.error is None and jsc.score > scores[i].score:
                scores[i] = RelevanceScore(
                    score=jsc.score, reason=f"with previous: {jsc.reason}", error=jsc.error
                )
    else:
        scores = raw
    if len(scores) != len(sentences):
        # a misbehaving evaluator: fail closed (nothing kept by score)
        log.warning(
            "evaluator returned wrong number of scores",
            extra={"expected": len(sentences), "got": len(scores), "chunk": chunk.id},
        )
        if errors is not None:
            errors.append(
                f"{chunk.id}: sentence evaluator returned {len(scores)} scores for "
                f"{len(sentences)} sentences"
            )
        scores = [
            RelevanceScore(score=0.0, error="evaluator returned wrong number of scores")
            for _ in sentences
        ]
    kept_spans = [
        (s, e)
        for (s, e), sc in zip(spans, scores, strict=True)
        if sc.error is None and sc.score >= strip_threshold
    ]
    kept_whole = (not kept_spans and grade >= keep_whole_threshold) or (
        whole_threshold is not None and grade >= whole_threshold
    )
    if not kept_spans and not kept_whole:
        return None
    strips = tuple(
        SentenceStrip(
            start=s,
            end=e,
            score=sc.score,
            own_score=own[i].score if own is not None else None,
            kept=kept_whole or (sc.error is None and sc.score >= strip_threshold),
            error=sc.error,
        )
        for i, ((s, e), sc) in enumerate(zip(spans, scores, strict=True))
    )
    refined = refined_chunk(
        chunk, None if kept_whole else kept_spans, origin="web" if origin == "web" else "local"
    )
    return RefinedContext(
        chunk=refined,
        origin="web" if origin == "web" else "local",
        source_chunk_id=chunk.id,
        source_score=grade,
        kept_whole=kept_whole,
        strips=strips,
    )


def refine_many(
    question: str,
    items: Sequence[tuple[Chunk, float]],
    *,
    evaluator: RelevanceEvaluator,
    strip_threshold: float,
    keep_whole_threshold: float,
    origin: str = "local",
    window: int = 0,
    whole_threshold: float | None = None,
    errors: list[str] | None = None,
) -> tuple[list[RefinedContext], list[str]]:
    """Refine several passages; returns the refined contexts and why others were dropped
    (evaluator failures go to ``errors``, see `refine_chunk`)."""
    out: list[RefinedContext] = []
    dropped: list[str] = []
    for chunk, grade in items:
        r = refine_chunk(
            question,
            chunk,
            grade=grade,
            evaluator=evaluator,
            strip_threshold=strip_threshold,
            keep_whole_threshold=keep_whole_threshold,
            origin=origin,
            window=window,
            whole_threshold=whole_threshold,
            errors=errors,
        )
        if r is None:
            dropped.append(
                f"{chunk.id}: no sentence >= strip threshold {strip_threshold:g} and grade "
                f"{grade:.2f} < {keep_whole_threshold:g}"
            )
        else:
            out.append(r)
    return out, dropped
