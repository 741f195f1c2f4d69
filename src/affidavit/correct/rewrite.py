"""Query rewriting for web search: the LLM turns a question into a short keyword query.

Never raises: on any failure (generator error, empty or overlong output) the original question is
used and the reason is returned, so the trace records it.

Examples:
    >>> from affidavit.correct.fakes import ScriptedGenerator
    >>> LLMQueryRewriter(ScriptedGenerator(["eiffel tower height"])).rewrite("How tall is it?")
    ('eiffel tower height', None)
"""

from __future__ import annotations

import logging

from affidavit.core.errors import GenerationError
from affidavit.core.types import Message
from affidavit.generate.base import Generator

log = logging.getLogger(__name__)

PROMPT = (
    "Rewrite the user's question as a short web search query (3 to 12 words: the key names, "
    "terms and dates). Reply with the query only, on one line, without quotes or explanation."
)


class LLMQueryRewriter:
    """Rewrites questions into search queries with a `Generator`.

    Args:
        generator: the LLM.
        max_chars: longer outputs are refused (the original question is used).
        max_tokens: generation budget.
    """

    def __init__(self, generator: Generator, *, max_chars: int = 200, max_tokens: int = 48) -> None:
        self.generator = generator
        self.max_chars = max_chars
        self.max_tokens = max_tokens

    def rewrite(self, question: str) -> tuple[str, str | None]:
        """Return ``(query, error)``; ``error`` is set when the original question is kept."""
        messages = [
            Message(role="system", content=PROMPT),
            Message(role="user", content=question),
        ]
        try:
            out = self.generator.generate(messages, max_tokens=self.max_tokens)
        except GenerationError as exc:
            log.warning("query rewrite failed", extra={"error": exc.message})
            return question, f"rewrite failed: {exc.message}"
        lines = [ln.strip() for ln in out.strip().splitlines() if ln.strip()]
        query = lines[0].strip().strip("\"'`").strip() if lines else ""
        if query.lower().startswith("query:"):
            query = query[6:].strip()
        if not query:
            return question, "rewrite was empty"
        if len(query) > self.max_chars:
            return question, f"rewrite longer than {self.max_chars} characters"
        return query, None
