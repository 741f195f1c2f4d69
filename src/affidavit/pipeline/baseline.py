"""Plain RAG, the baseline ``ask`` is measured against: same retriever, prompt and LLM only.

No corrective retrieval, no citation clean-up, no verification: the model's text is shown as is.

Examples:
    >>> from affidavit.core.settings import load_settings
    >>> from affidavit.core.types import Chunk, Hit
    >>> from affidavit.testing.fake_llm import FakeGenerator
    >>> class OneHit:
    ...     def search(self, query, k=10, mode="hybrid", filters=None):
    ...         return [Hit(chunk=Chunk(text="Paris is in France."), score=1, rank=1, mode="bm25")]
    >>> plain_rag("Where is Paris?", OneHit(), FakeGenerator(["In France [1]."]),
    ...           load_settings()).answer
    'In France [1].'
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from affidavit.core.errors import GenerationTruncatedError
from affidavit.core.settings import Settings
from affidavit.core.types import Chunk, Hit
from affidavit.generate.base import Generator
from affidavit.pipeline.prompt import build_prompt
from affidavit.retrieve.base import Retriever


@dataclass(frozen=True)
class PlainAnswer:
    """What plain RAG shows, with its timings."""

    question: str
    answer: str
    hits: list[Hit]
    context: list[Chunk]
    timings: dict[str, float] = field(default_factory=dict)
    time_to_first_token_s: float | None = None
    cut: str | None = None  # why the model stopped before its answer was complete, if it did


def plain_rag(
    question: str,
    retriever: Retriever,
    generator: Generator,
    settings: Settings,
    *,
    max_prompt_chars: int | None = None,
) -> PlainAnswer:
    """Retrieve ``correct.top_k_documents`` chunks, prompt, generate; show the text unchecked."""
    t0 = time.perf_counter()
    hits = retriever.search(
        question, k=settings.correct.top_k_documents, mode=settings.retrieve.mode
    )
    t1 = time.perf_counter()
    gen = settings.generate
    budget = max_prompt_chars or max(2000, (gen.context_size - gen.max_tokens - 64) * 3)
    prompt = build_prompt(question, [h.chunk for h in hits], max_chars=budget)
    context = [h.chunk for h in hits][: prompt.used]
    parts: list[str] = []
    ttft: float | None = None
    cut: str | None = None
    t2 = time.perf_counter()
    try:
        for piece in generator.stream(prompt.messages):
            if ttft is None:
                ttft = time.perf_counter() - t2
            parts.append(piece)
    except GenerationTruncatedError as exc:
        cut = exc.message  # plain RAG shows what the model wrote, cut or not: recorded
    t3 = time.perf_counter()
    return PlainAnswer(
        question=question,
        answer="".join(parts),
        hits=hits,
        context=context,
        timings={"retrieve": t1 - t0, "generate": t3 - t2, "total": t3 - t0},
        time_to_first_token_s=ttft,
        cut=cut,
    )
