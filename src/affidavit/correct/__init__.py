"""Corrective retrieval (CRAG): grade retrieved chunks, classify, refine, fall back to the web.

The single entry point is `CorrectiveRetrieval` (or `build_corrective_retrieval`
to wire it from settings)::

    from affidavit.core.settings import load_settings
    from affidavit.correct import build_corrective_retrieval

    settings = load_settings()
    crag = build_corrective_retrieval(settings, generator=None)   # model evaluator, no web
    result = crag.run("How tall is the Eiffel Tower?", hits)      # hits from the retriever
    result.classification.kind        # 'correct' | 'ambiguous' | 'incorrect'
    result.chunks                     # refined context for the numbered prompt
    result.trace.grades               # every chunk's 0-10 grade and reason
    result.trace.web                  # web query, results, refusals (when searched)
    result.trace.timings_ms           # evaluate / refine / web / total

Examples:
    >>> from affidavit.core.types import Chunk
    >>> from affidavit.correct.fakes import KeywordEvaluator
    >>> r = CorrectiveRetrieval(KeywordEvaluator()).run(
    ...     "Who wrote Hamlet?", [Chunk(text="Shakespeare wrote Hamlet.")])
    >>> r.classification.kind, r.context[0].kept_whole  # graded >= keep_whole_threshold (5)
    ('correct', True)
"""

from affidavit.correct.base import Fetcher, QueryRewriter, RelevanceEvaluator, WebSearch
from affidavit.correct.classify import classify
from affidavit.correct.pipeline import CorrectiveRetrieval, build_corrective_retrieval
from affidavit.correct.refine import refine_chunk, split_sentences

__all__ = [
    "CorrectiveRetrieval",
    "Fetcher",
    "QueryRewriter",
    "RelevanceEvaluator",
    "WebSearch",
    "build_corrective_retrieval",
    "classify",
    "refine_chunk",
    "split_sentences",
]
