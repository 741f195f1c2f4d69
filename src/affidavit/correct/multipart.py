"""Grading passages for a question with several parts: each part graded, the best grade kept.

"When was the Eiffel Tower built, how tall is it, and who designed it?" asks three things; a
passage that answers one of them well shares only a third of the question's terms and meaning,
so a relevance evaluator grades it like a half-relevant passage (the Eiffel height chunk: 3.8 of
10 against the whole question, 5.5 against "how tall is it Eiffel Tower"). The question is split
into its parts (clauses that start with a question word, and separate questions); a part that
names nothing itself ("how tall is it") gets the names of the first part appended. A passage's
grade is the maximum over the whole question and its parts, so a question with one part is graded
exactly as before and a grade is never lowered.

Examples:
    >>> question_parts("When was the Eiffel Tower built, how tall is it, and who designed it?")
    ['When was the Eiffel Tower built', 'how tall is it Eiffel Tower', 'who designed it Eiffel Tower']
    >>> question_parts("Which magazine was started first, Arthur's Magazine or First for Women?")
    []
"""  # noqa: E501

from __future__ import annotations

import re
from collections.abc import Sequence

from affidavit.core.correction import RelevanceScore
from affidavit.correct.base import RelevanceEvaluator

_WH = r"(?:who|whom|whose|what|when|where|which|why|how|in what|in which|on what|at what)"
# a clause boundary: ", and how", "; who", " and when", "? What" (case-insensitive question word)
_SPLIT = re.compile(rf"(?:\s*[,;]\s*(?:and\s+|or\s+)?|\s+and\s+|\?\s+)(?={_WH}\b)", re.IGNORECASE)
_NAME = re.compile(r"\b[A-Z][\w'’-]*(?:\s+(?:of|the|de|von|van|da|and)?\s*[A-Z][\w'’-]*)*")
_PRONOUN = re.compile(r"\b(?:it|its|they|them|their|he|him|his|she|her|this|that)\b", re.I)
# most parts one question is split into; past this the split is not a question's parts
_MAX_PARTS = 6


def _names(text: str) -> list[str]:
    """Capitalised word sequences, leaving out the text's first word (capitalised anyway)."""
    body = text.strip()
    first = re.match(r"\S+\s*", body)
    offset = first.end() if first else 0
    return [m.group(0) for m in _NAME.finditer(body, offset)]


def question_parts(question: str) -> list[str]:
    """The parts of a multi-part question (empty when it has one part).

    Examples:
        >>> question_parts("Who discovered polonium?")
        []
    """
    pieces = [p.strip(" ?,;.") for p in _SPLIT.split(question.strip())]
    pieces = [p for p in pieces if p]
    # "who wrote it, and when?": a bare question word is no part on its own
    if len(pieces) < 2 or len(pieces) > _MAX_PARTS or any(len(p.split()) < 2 for p in pieces):
        return []
    topic = " ".join(_names(pieces[0]))
    out = [pieces[0]]
    for p in pieces[1:]:
        if topic and not _names(p) and _PRONOUN.search(p):
            p = f"{p} {topic}"
        out.append(p)
    return out


class MultiPartEvaluator:
    """Wraps a `RelevanceEvaluator`: the best of its grades for the whole question and
    for each part (`question_parts`); a one-part question goes straight through.

    A part's grade that failed (``error`` set) never wins over the whole question's grade, so a
    failure stays visible where it decided.

    Examples:
        >>> from affidavit.correct.fakes import KeywordEvaluator
        >>> ev = MultiPartEvaluator(KeywordEvaluator())
        >>> q = "When was the tower built, and how tall is the tower?"
        >>> ev.score(q, ["The tower is 330 metres tall."])[0].score > (
        ...     KeywordEvaluator().score(q, ["The tower is 330 metres tall."])[0].score)
        True
    """

    def __init__(self, inner: RelevanceEvaluator) -> None:
        self.inner = inner
        self.name = f"{inner.name}+parts"

    def score(self, question: str, passages: Sequence[str]) -> list[RelevanceScore]:
        """Score each passage: the maximum over the whole question and its parts."""
        best = self.inner.score(question, passages)
        parts = question_parts(question)
        if not parts or not passages:
            return best
        for part in parts:
            graded = self.inner.score(part, passages)
            for i, g in enumerate(graded):
                if g.error is None and best[i].error is None and g.score > best[i].score:
                    reason = f"part {part!r}: {g.reason}" if g.reason else f"part {part!r}"
                    best[i] = g.model_copy(update={"reason": reason})
        return best
