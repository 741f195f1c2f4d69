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

from collections.abc import Sequence

from affidavit.core.correction import RelevanceScore
from affidavit.core.questions import question_parts
from affidavit.correct.base import RelevanceEvaluator


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
