"""The corrective-retrieval Protocols: relevance evaluation, web search and page fetching.

Implementations are plain classes configured in ``__init__``; `CorrectiveRetrieval`
(in `affidavit.correct.pipeline`) depends only on these Protocols.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

from pydantic import Field, ValidationError

from affidavit.core.correction import RelevanceScore, WebResult
from affidavit.core.types import Frozen

#: how a passage the LLM evaluator had no time left for is marked (its `RelevanceScore.error`
#: starts with this): a failed grade, never counted as relevant
NOT_GRADED_BUDGET = "not graded: the relevance evaluator's time budget ran out"
#: how an item an evaluator returned that is no valid score is marked (`checked_scores`)
NOT_A_SCORE = "the evaluator returned"


def checked_scores(raw: Iterable[object], expected: int) -> list[RelevanceScore]:
    """What an evaluator returned, as the stage takes it from any `RelevanceEvaluator`.

    At most ``expected + 1`` items are read (an endless iterable is not read further; the caller
    refuses a wrong count); an item that is not a `RelevanceScore`, or one built without
    validation whose score is not a number in 0-10, is a failed grade (score 0, ``error`` says
    what came): never counted as relevant, never a crash of the stage.

    Raises:
        TypeError: ``raw`` is not iterable (the caller treats it as the evaluator failing).
    """
    out: list[RelevanceScore] = []
    for item in itertools.islice(iter(raw), expected + 1):
        if isinstance(item, RelevanceScore):
            try:
                # validated again: `model_construct` (or a subclass) skips the 0-10 bounds
                out.append(RelevanceScore.model_validate(item.model_dump()))
                continue
            except ValidationError:
                error = f"{NOT_A_SCORE} a score out of range 0-10 ({item.score!r})"
        else:
            error = f"{NOT_A_SCORE} {type(item).__name__}, not a RelevanceScore"
        out.append(RelevanceScore(score=0.0, error=error))
    return out


@runtime_checkable
class RelevanceEvaluator(Protocol):
    """Scores passages 0-10 for relevance to a question.

    Implementations never raise for a passage that merely cannot be scored: they return a
    `RelevanceScore` with ``score=0`` and ``error`` set (fail closed), one per passage,
    in input order.
    """

    name: str

    def score(self, question: str, passages: Sequence[str]) -> list[RelevanceScore]:
        """Score each passage against the question."""
        ...


@runtime_checkable
class WebSearch(Protocol):
    """A web search provider (or an offline corpus standing in for one)."""

    name: str

    def search(self, query: str, *, max_results: int) -> list[WebResult]:
        """Return up to ``max_results`` results, best first; raise ``WebSearchError`` on failure."""
        ...


class FetchedPage(Frozen):
    """A fetched web page reduced to its main text."""

    url: str = Field(description="The URL that was asked for.")
    final_url: str = Field(description="The URL after redirects.")
    status: int = Field(description="HTTP status of the final response.")
    content_type: str = Field(default="", description="Content-Type of the final response.")
    title: str = Field(default="", description="Page title, when the extractor found one.")
    text: str = Field(description="Main text of the page (boilerplate removed).")
    truncated: bool = Field(
        default=False,
        description="True when the body was cut at the fetcher's size cap: the text may end "
        "inside a sentence.",
    )


@runtime_checkable
class Fetcher(Protocol):
    """Fetches a URL and reduces it to main text; raises ``WebSearchError`` when refused/failed."""

    def fetch(self, url: str) -> FetchedPage:
        """Fetch one page."""
        ...


@runtime_checkable
class QueryRewriter(Protocol):
    """Turns a question into a web search query; never raises (falls back to the question)."""

    def rewrite(self, question: str) -> tuple[str, str | None]:
        """Return ``(query, error)``; ``error`` is set when the original question was kept."""
        ...
