"""The parts of a multi-part question (shared by retrieval and grading).

"When was the Eiffel Tower built, how tall is it, and who designed it?" asks three things. The
question is split into its parts (clauses that start with a question word, and separate
questions); a part that names nothing itself ("how tall is it") gets the names of the first part
appended.

Examples:
    >>> question_parts("When was the Eiffel Tower built, how tall is it, and who designed it?")
    ['When was the Eiffel Tower built', 'how tall is it Eiffel Tower', 'who designed it Eiffel Tower']
    >>> question_parts("Which magazine was started first, Arthur's Magazine or First for Women?")
    []
"""  # noqa: E501

from __future__ import annotations

import re

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


__all__ = ["question_parts"]
