"""Corrective retrieval (CRAG): grade the retrieved chunks, decide, refine, fall back to the web.

Steps of `CorrectiveRetrieval.run`:

1. Grade the first ``top_k_documents`` chunks 0-10 with the relevance evaluator (how many came
   past it, never graded nor used, is said in the trace's ``dropped``).
2. Classify: Correct (best grade ``>= upper_threshold``), Incorrect (every grade
   ``< lower_threshold``), else Ambiguous.
3. Correct: refine the chunks graded ``>= upper``. Ambiguous: refine the chunks graded
   ``>= lower`` and add web results. Incorrect: web results only.
4. Refinement keeps the sentences scored ``>= strip_threshold``; a chunk graded ``>= upper`` with
   no passing sentence is kept whole. When nothing at all is left (local or web) but a chunk was
   selected, the best-graded one is kept whole (``keep_best_when_empty``; the trace's
   ``fallback`` says so).
5. Web: the question is rewritten into a search query by the LLM (the original is used when that
   fails, and the failure recorded), searched, bounded whatever the search (at most the results
   asked for, text fields cut to their caps, an over-long URL or an item that is not a
   `WebResult` dropped, each recorded), filtered by the domain allowlist, pages fetched
   through the SSRF guard (the snippet is used when a fetch fails), cut at a sentence end to
   ``max_web_chars`` (recorded), graded and refined like local chunks. At most
   ``top_k_web_results`` pages are used.

Nothing here raises for a failed grade, sentence score, rewrite, search or fetch: each is recorded
in the trace and the run continues with what is left. A grade that could not be computed (or a
chunk with no text) never counts, whatever the thresholds: it is left out of the classification,
and neither its chunk nor its web page, nor a sentence whose score failed, is used.

Examples:
    >>> from affidavit.core.settings import CorrectSettings
    >>> from affidavit.core.types import Chunk
    >>> from affidavit.correct.fakes import KeywordEvaluator
    >>> paper = CorrectSettings(sentence_window=0, keep_whole_threshold=None)
    >>> crag = CorrectiveRetrieval(KeywordEvaluator(), settings=paper)
    >>> chunks = [Chunk(text="The Eiffel Tower is 330 metres tall. It opened in 1889."),
    ...           Chunk(text="Cats sleep a lot.")]
    >>> result = crag.run("How tall is the Eiffel Tower?", chunks)
    >>> result.classification.kind
    'correct'
    >>> [c.text for c in result.chunks]
    ['The Eiffel Tower is 330 metres tall.']
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Iterable, Sequence, Sized
from typing import TYPE_CHECKING

from affidavit.core.correction import (
    ChunkGrade,
    CorrectionResult,
    CorrectionTrace,
    QueryRewrite,
    RefinedContext,
    RelevanceScore,
    WebResult,
    WebTrace,
)
from affidavit.core.errors import AffidavitError, ConfigError, WebSearchError
from affidavit.core.settings import CorrectSettings
from affidavit.core.text import escape_surrogates, strip_controls
from affidavit.core.types import Chunk, Hit
from affidavit.correct.base import (
    NOT_A_SCORE,
    NOT_GRADED_BUDGET,
    Fetcher,
    QueryRewriter,
    RelevanceEvaluator,
    WebSearch,
    checked_scores,
)
from affidavit.correct.classify import classify
from affidavit.correct.refine import refine_chunk, refine_many, split_sentences
from affidavit.correct.web.guard import domain_allowed
from affidavit.correct.web.store_fallback import StoreFallbackSearch

if TYPE_CHECKING:
    from affidavit.core.settings import Settings
    from affidavit.generate.base import Generator

log = logging.getLogger(__name__)

MAX_WEB_URL_CHARS = 2048
"""A web result whose URL is longer is dropped (a URL cut short is another URL)."""
MAX_WEB_TITLE_CHARS = 500
"""A web result's title is cut to this many characters."""
MAX_WEB_PROVIDER_CHARS = 100
"""A web result's provider name is cut to this many characters."""


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


def _printable(r: WebResult) -> WebResult:
    """A web result fit for the trace and the evidence: lone surrogates escaped (JSON allows
    ``"\\ud800"`` and a page's charset may decode to one; neither serialises nor hashes), control
    and bidi characters removed from its text (what is shown must be what is checked) and the
    title on one line (it is printed as one line of the sources)."""
    update: dict[str, str] = {}
    for name in ("url", "title", "snippet", "content"):
        value = getattr(r, name)
        if value is None:
            continue
        clean = escape_surrogates(value)
        if name != "url":
            clean = strip_controls(clean)
        if name == "title":
            clean = " ".join(clean.split())
        if clean != value:
            update[name] = clean
    return r.model_copy(update=update) if update else r


def _capped(r: WebResult, caps: dict[str, int], notes: list[str]) -> WebResult:
    """``r`` with each field named in ``caps`` cut to its cap (each cut named in ``notes``),
    then `_printable`."""
    update: dict[str, str] = {}
    for name, cap in caps.items():
        value = getattr(r, name)
        if value is not None and len(value) > cap:
            update[name] = value[:cap]
            notes.append(
                f"{r.url}: {name} cut to its first {cap} of {len(value)} characters "
                "(web results are bounded whatever search they came from)"
            )
    r = _printable(r.model_copy(update=update) if update else r)
    # escaping a lone surrogate lengthens the text: cut again, within the same note
    over = {
        name: value[:cap]
        for name, cap in caps.items()
        if (value := getattr(r, name)) is not None and len(value) > cap
    }
    return r.model_copy(update=over) if over else r


def _bounded_results(
    raw: Iterable[object], asked: int, text_chars: int, notes: list[str]
) -> list[WebResult]:
    """What a search returned, as the stage takes it from any `WebSearch`, built-in or not.

    At most ``asked`` results are read (an endless iterable is not read further); an item that
    is not a `WebResult`, or whose URL is longer than `MAX_WEB_URL_CHARS`, is dropped; the title,
    provider, snippet and content are cut to their caps (snippet and content to ``text_chars``);
    what this stage records about a result (``used``, ``blocked``, ``fetch_error``) is its own,
    never the search's. Each drop and cut is named in ``notes``.
    """
    caps = {
        "title": MAX_WEB_TITLE_CHARS,
        "provider": MAX_WEB_PROVIDER_CHARS,
        "snippet": text_chars,
        "content": text_chars,
    }
    items = list(itertools.islice(iter(raw), asked + 1))
    if len(items) > asked:
        returned = f"{len(raw)} results" if isinstance(raw, Sized) else f"more than {asked} results"
        notes.append(
            f"the web search returned {returned}; only the first {asked} asked for are read"
        )
        items = items[:asked]
    out: list[WebResult] = []
    for position, item in enumerate(items, start=1):
        if not isinstance(item, WebResult):
            notes.append(f"web result {position}: not a WebResult ({type(item).__name__}), dropped")
            continue
        if len(item.url) > MAX_WEB_URL_CHARS:
            notes.append(
                f"web result {position}: its URL of {len(item.url)} characters (over "
                f"{MAX_WEB_URL_CHARS}) dropped"
            )
            continue
        fresh = item.model_copy(update={"used": False, "blocked": None, "fetch_error": None})
        out.append(_capped(fresh, caps, notes))
    return out


def _cut_at_sentence_end(text: str, max_chars: int) -> tuple[str, str | None]:
    """``text`` cut to at most ``max_chars`` at a sentence end, and what was cut (None: nothing).

    Never mid-sentence: a cut inside "1,000,000 people" left "1,000" standing as evidence.
    """
    if len(text) <= max_chars:
        return text, None
    end = 0
    for _, e in split_sentences(text):
        if e > max_chars:
            break
        end = e
    if end == 0:
        return "", (
            f"web text not used: its first sentence is longer than max_web_chars ({max_chars})"
        )
    return text[:end], (
        f"web text cut to its first {end} of {len(text)} characters, at a sentence end "
        f"(max_web_chars {max_chars})"
    )


def _without_last_sentence(text: str) -> tuple[str, str]:
    """The text of a page whose body the fetcher cut at its size cap, without its last sentence
    (the cut may have split it: "1,000,000 people" read "1,000"), and the note that says so."""
    spans = split_sentences(text)
    kept = text[: spans[-2][1]] if len(spans) > 1 else ""
    return kept, (
        "page body cut at the fetcher's size cap; its last sentence, which the cut may have "
        "split, left out"
        + ("" if kept else " (no whole sentence left: its snippet, if any, is used)")
    )


class CorrectiveRetrieval:
    """The CRAG stage: the single entry point the ``ask`` pipeline calls.

    Args:
        evaluator: grades chunks and sentences 0-10.
        web: the web search provider (None: no web fallback; Ambiguous and Incorrect then use
            local context only, and the trace says why).
        rewriter: rewrites the question into a search query (None: the question is sent as is).
        fetcher: fetches result pages that came without text (None: snippets are used).
        sentence_evaluator: scores sentences during refinement (default: ``evaluator``). With
            a slow LLM evaluator, the model evaluator here keeps refinement affordable.
        settings: the ``correct`` section (thresholds, top-k, allowlist).
        max_web_chars: web page text is cut to at most this many characters, at a sentence
            end, before refinement (the cut is recorded in the trace's ``dropped``). A result's
            snippet and content are kept up to twice this (the trace's copy; room past the cut
            so it still sees how its last sentence ends), whatever search or fetcher sent them.

    Examples:
        >>> from affidavit.correct.fakes import KeywordEvaluator
        >>> crag = CorrectiveRetrieval(KeywordEvaluator())
        >>> crag.run("capital of France?", []).classification.kind
        'incorrect'
    """

    def __init__(
        self,
        evaluator: RelevanceEvaluator,
        web: WebSearch | None = None,
        rewriter: QueryRewriter | None = None,
        settings: CorrectSettings | None = None,
        *,
        fetcher: Fetcher | None = None,
        sentence_evaluator: RelevanceEvaluator | None = None,
        max_web_chars: int = 4000,
    ) -> None:
        self.settings = settings if settings is not None else CorrectSettings()
        s = self.settings
        if s.lower_threshold > s.upper_threshold:
            raise ConfigError(
                f"lower_threshold ({s.lower_threshold}) must not exceed upper_threshold "
                f"({s.upper_threshold})",
                stage="correct",
            )
        if max_web_chars < 100:
            raise ConfigError(f"max_web_chars must be >= 100, got {max_web_chars}")
        self.evaluator = evaluator
        self.web = web
        self.rewriter = rewriter
        self.fetcher = fetcher
        self.sentence_evaluator = sentence_evaluator or evaluator
        self.max_web_chars = max_web_chars

    def config(self) -> dict[str, object]:
        """The effective configuration (for certificates)."""
        return {
            **self.settings.model_dump(mode="json", exclude={"tavily_api_key", "brave_api_key"}),
            "evaluator_name": self.evaluator.name,
            "sentence_evaluator_name": self.sentence_evaluator.name,
            "web": self.web.name if self.web is not None else "none",
            "rewriter": type(self.rewriter).__name__ if self.rewriter is not None else None,
            "fetcher": type(self.fetcher).__name__ if self.fetcher is not None else None,
            "max_web_chars": self.max_web_chars,
        }

    def _grade(
        self,
        question: str,
        texts: Sequence[str],
        errors: list[str],
        evaluator: RelevanceEvaluator | None = None,
    ) -> list[RelevanceScore]:
        if not texts:
            return []
        try:
            scores = checked_scores(
                (evaluator or self.evaluator).score(question, texts), len(texts)
            )
        except Exception as exc:  # fail closed: an evaluator crash grades everything 0
            log.warning("relevance evaluator failed", extra={"error": repr(exc)})
            errors.append(f"evaluator failed: {exc!r}")
            return [RelevanceScore(score=0.0, error=f"evaluator failed: {exc!r}") for _ in texts]
        if len(scores) != len(texts):
            errors.append(f"evaluator returned {len(scores)} scores for {len(texts)} passages")
            return [
                RelevanceScore(score=0.0, error="evaluator returned a wrong number of scores")
                for _ in texts
            ]
        invalid = sum(1 for sc in scores if (sc.error or "").startswith(NOT_A_SCORE))
        if invalid:
            errors.append(
                f"{NOT_A_SCORE} {invalid} item(s) that are no valid score for {len(texts)} "
                "passage(s): not graded, never counted as relevant"
            )
        late = sum(1 for sc in scores if (sc.error or "").startswith(NOT_GRADED_BUDGET))
        if late:
            errors.append(
                f"{NOT_GRADED_BUDGET} (correct.llm_budget_s): {late} of {len(texts)} "
                "passage(s) not graded, never counted as relevant"
            )
        return scores

    def _grade_chunks(
        self,
        question: str,
        chunks: Sequence[Chunk],
        errors: list[str],
        evaluator: RelevanceEvaluator | None = None,
    ) -> list[RelevanceScore]:
        """Grade each chunk; a chunk with no text is not graded (its title alone would be)."""
        todo = [i for i, c in enumerate(chunks) if c.text.strip()]
        texts = [self._graded_text(chunks[i]) for i in todo]
        graded = iter(self._grade(question, texts, errors, evaluator))
        empty = RelevanceScore(score=0.0, error="the passage has no text: nothing to grade")
        return [next(graded) if c.text.strip() else empty for c in chunks]

    def _graded_text(self, chunk: Chunk) -> str:
        """The text a chunk is graded on: with its document's title first when the chunk does
        not name it (a later chunk says "the tower", never "the Eiffel Tower"; graded alone it
        looks unrelated to a question about the Eiffel Tower)."""
        title = (chunk.title or "").strip()
        if not self.settings.grade_with_title or not title or title.lower() in chunk.text.lower():
            return chunk.text
        return f"{title}\n{chunk.text}"

    def run(self, question: str, hits_or_chunks: Sequence[Hit | Chunk]) -> CorrectionResult:
        """Grade, classify, refine and (when needed) search the web for one question.

        Args:
            question: the user's question.
            hits_or_chunks: the retriever's hits (or bare chunks), best first.

        Returns:
            The refined context (local first, then web) and the full trace.
        """
        s = self.settings
        t_total = time.perf_counter()
        timings: dict[str, float] = {}
        errors: list[str] = []
        given = list(hits_or_chunks)
        items = given[: s.top_k_documents]
        # what is not graded is not used: said, never dropped silently
        past_k = (
            [
                f"{len(given) - len(items)} retrieved chunk(s) past correct.top_k_documents "
                f"({s.top_k_documents}) not graded and not used"
            ]
            if len(given) > len(items)
            else []
        )
        chunks = [h.chunk if isinstance(h, Hit) else h for h in items]
        # an LLM evaluator's calls for this question share one time budget (fail closed: what
        # it has no time left for is not graded)
        evaluator = _within(self.evaluator, s.llm_budget_s)
        sentence_evaluator = (
            evaluator
            if self.sentence_evaluator is self.evaluator
            else _within(self.sentence_evaluator, s.llm_budget_s)
        )

        t0 = time.perf_counter()
        scores = self._grade_chunks(question, chunks, errors, evaluator)
        timings["evaluate"] = _ms(t0)
        grades = tuple(
            ChunkGrade(
                chunk_id=c.id,
                rank=(h.rank if isinstance(h, Hit) else i),
                score=sc.score,
                reason=sc.reason,
                error=sc.error,
                evaluator=self.evaluator.name,
                retrieval_score=h.score if isinstance(h, Hit) else None,
            )
            for i, (h, c, sc) in enumerate(zip(items, chunks, scores, strict=True), start=1)
        )
        # a grade that could not be computed never counts (fail closed, whatever the thresholds)
        classification = classify(
            [g.score for g in grades if g.error is None],
            upper=s.upper_threshold,
            lower=s.lower_threshold,
            failed=sum(g.error is not None for g in grades),
        )

        if classification.kind == "correct":
            floor = s.upper_threshold
        elif classification.kind == "ambiguous":
            floor = s.lower_threshold
        else:
            floor = None
        selected = (
            [
                (c, g.score)
                for c, g in zip(chunks, grades, strict=True)
                if g.error is None and g.score >= floor
            ]
            if floor is not None
            else []
        )
        dropped = past_k + [
            f"{g.chunk_id}: not graded ({g.error})"
            if g.error is not None
            else f"{g.chunk_id}: grade {g.score:.2f} < {floor:g}"
            for g in grades
            if floor is not None and (g.error is not None or g.score < floor)
        ]
        t0 = time.perf_counter()
        local, why = refine_many(
            question,
            selected,
            evaluator=sentence_evaluator,
            strip_threshold=s.strip_threshold,
            keep_whole_threshold=s.upper_threshold,
            origin="local",
            window=s.sentence_window,
            whole_threshold=s.keep_whole_threshold,
            errors=errors,
        )
        timings["refine"] = _ms(t0)
        dropped.extend(why)

        web_ctx: list[RefinedContext] = []
        web_trace: WebTrace | None = None
        if classification.kind != "correct":
            t0 = time.perf_counter()
            web_ctx, web_trace, web_dropped = self._web(
                question, errors, timings, evaluator, sentence_evaluator
            )
            dropped.extend(web_dropped)
            timings["web"] = _ms(t0)

        fallback: str | None = None
        if not local and not web_ctx and selected and s.keep_best_when_empty:
            t0 = time.perf_counter()
            best = self._keep_best(question, selected, sentence_evaluator)
            if best is not None:
                kept, fallback = best
                local = [kept]
                dropped = [d for d in dropped if not d.startswith(f"{kept.source_chunk_id}:")]
            timings["fallback"] = _ms(t0)

        timings["total"] = _ms(t_total)
        trace = CorrectionTrace(
            question=question,
            evaluator=self.evaluator.name,
            grades=grades,
            classification=classification,
            strip_threshold=s.strip_threshold,
            web=web_trace,
            dropped=tuple(dropped),
            errors=tuple(errors),
            fallback=fallback,
            timings_ms=timings,
        )
        log.info(
            "corrective retrieval",
            extra={
                "kind": classification.kind,
                "max_score": classification.max_score,
                "local": len(local),
                "web": len(web_ctx),
            },
        )
        return CorrectionResult(context=(*local, *web_ctx), trace=trace)

    def _keep_best(
        self,
        question: str,
        selected: Sequence[tuple[Chunk, float]],
        sentence_evaluator: RelevanceEvaluator | None = None,
    ) -> tuple[RefinedContext, str] | None:
        """Keep the best-graded selected chunk whole (refinement kept nothing anywhere).

        CRAG's Ambiguous action combines refined local knowledge with the web. When no sentence
        passes the strip threshold and there is no web result, the paper answers from nothing;
        a chunk the grader placed above the lower threshold is better evidence than none, and
        every claim drawn from it is still verified against it.
        """
        s = self.settings
        chunk, grade = max(selected, key=lambda cg: cg[1])
        kept = refine_chunk(
            question,
            chunk,
            grade=grade,
            evaluator=sentence_evaluator or self.sentence_evaluator,
            strip_threshold=s.strip_threshold,
            keep_whole_threshold=grade,
            origin="local",
            window=s.sentence_window,
            whole_threshold=grade,
        )
        if kept is None:  # cannot happen (its grade meets whole_threshold); keep CRAG's result
            return None
        why = (
            f"{chunk.id}: refinement kept no sentence and the web brought nothing; the best-graded "
            f"chunk (grade {grade:.2f}) is kept whole rather than answering from nothing"
        )
        return kept, why

    def _web(
        self,
        question: str,
        errors: list[str],
        timings: dict[str, float],
        evaluator: RelevanceEvaluator | None = None,
        sentence_evaluator: RelevanceEvaluator | None = None,
    ) -> tuple[list[RefinedContext], WebTrace, list[str]]:
        s = self.settings
        if self.web is None or s.top_k_web_results == 0:
            why = "no web search configured" if self.web is None else "top_k_web_results is 0"
            return [], WebTrace(provider="none", error=why), []

        t0 = time.perf_counter()
        if self.rewriter is not None:
            try:
                query, rerr = self.rewriter.rewrite(question)
            except Exception as exc:  # a rewriter must not stop the search
                query, rerr = question, f"rewrite failed: {exc!r}"
            rewrite = QueryRewrite(
                original=question, query=query, rewritten=rerr is None, error=rerr
            )
        else:
            rewrite = QueryRewrite(original=question, query=question, rewritten=False)
        timings["rewrite"] = _ms(t0)

        t0 = time.perf_counter()
        web_notes: list[str] = []
        # ask for extra results: some may be refused by the allowlist or fail to fetch
        asked = s.top_k_web_results * 2
        text_chars = 2 * self.max_web_chars
        try:
            raw = self.web.search(rewrite.query, max_results=asked)
            found = _bounded_results(raw, asked, text_chars, web_notes)
        except Exception as exc:  # a plugged-in search must not stop the answer (fail closed)
            why = exc.message if isinstance(exc, WebSearchError) else repr(exc)
            errors.append(f"web search failed: {why}")
            timings["search"] = _ms(t0)
            return [], WebTrace(provider=self.web.name, query=rewrite, error=why), web_notes
        timings["search"] = _ms(t0)
        # only the built-in offline corpus is read without the web allowlist (its URLs are
        # store paths): a result's own provider field is the search's word, not a credential
        from_store = type(self.web) is StoreFallbackSearch

        t0 = time.perf_counter()
        results: list[WebResult] = []
        usable: list[tuple[WebResult, Chunk]] = []
        for r in found:
            if len(usable) >= s.top_k_web_results:
                results.append(r)
                continue
            if not from_store and not domain_allowed(r.url, s.web_allowlist):
                results.append(r.model_copy(update={"blocked": "not in the domain allowlist"}))
                continue
            if r.content is None and self.fetcher is not None:
                try:
                    page = self.fetcher.fetch(r.url)
                    if not domain_allowed(page.final_url, s.web_allowlist):
                        # the allowlist holds for where the text came from, whatever the fetcher
                        why = f"redirected to {page.final_url}, not in the domain allowlist"
                        results.append(r.model_copy(update={"blocked": why}))
                        continue
                    text = page.text
                    if page.truncated:
                        text, why_cut = _without_last_sentence(text)
                        web_notes.append(f"{r.url}: {why_cut}")
                    r = _capped(
                        r.model_copy(update={"content": text, "title": r.title or page.title}),
                        {"title": MAX_WEB_TITLE_CHARS, "content": text_chars},
                        web_notes,
                    )
                except WebSearchError as exc:
                    refused = exc.context.get("reason")
                    if refused is not None:
                        results.append(r.model_copy(update={"blocked": exc.message}))
                        continue
                    r = r.model_copy(update={"fetch_error": exc.message})
                except AffidavitError as exc:  # e.g. trafilatura missing
                    r = r.model_copy(update={"fetch_error": exc.message})
            text, cut = _cut_at_sentence_end(
                (r.content or r.snippet or "").strip(), self.max_web_chars
            )
            if cut is not None:
                web_notes.append(f"{r.url}: {cut}")
            if not text:
                results.append(r)
                continue
            r = r.model_copy(update={"used": True})
            results.append(r)
            usable.append(
                (
                    r,
                    Chunk(
                        text=text,
                        url=r.url,
                        title=r.title or None,
                        metadata={"provider": r.provider, "web_rank": r.rank},
                    ),
                )
            )
        timings["fetch"] = _ms(t0)

        t0 = time.perf_counter()
        scores = self._grade(question, [c.text for _, c in usable], errors, evaluator)
        # a page whose grade failed is not used, like a local chunk (fail closed)
        failed = [(r, sc) for (r, _), sc in zip(usable, scores, strict=True) if sc.error]
        web_notes.extend(f"{r.url}: not graded ({sc.error})" for r, sc in failed)
        results = [
            x.model_copy(update={"used": False}) if any(x is r for r, _ in failed) else x
            for x in results
        ]
        refined, dropped = refine_many(
            question,
            [(c, sc.score) for (_, c), sc in zip(usable, scores, strict=True) if sc.error is None],
            evaluator=sentence_evaluator or self.sentence_evaluator,
            strip_threshold=s.strip_threshold,
            keep_whole_threshold=s.upper_threshold,
            origin="web",
            window=s.sentence_window,
            whole_threshold=s.keep_whole_threshold,
            errors=errors,
        )
        timings["web_refine"] = _ms(t0)
        return (
            refined,
            WebTrace(provider=self.web.name, query=rewrite, results=tuple(results)),
            [*web_notes, *dropped],
        )


def _within(evaluator: RelevanceEvaluator, budget_s: float) -> RelevanceEvaluator:
    """``evaluator`` with one time budget for all its calls from now on, when it has one
    (`LLMRelevanceEvaluator.within`); any other evaluator as it is."""
    within = getattr(evaluator, "within", None)
    return within(budget_s) if callable(within) else evaluator


def build_corrective_retrieval(
    settings: Settings, generator: Generator | None = None
) -> CorrectiveRetrieval:
    """Wire the CRAG stage from settings: evaluator, web provider, fetcher and rewriter.

    Args:
        settings: the whole settings object (the ``correct`` section, plus ``embed``/``store``
            for the offline fallback store).
        generator: the LLM, needed by the ``llm`` evaluator and the query rewriter.

    Raises:
        ConfigError: the ``llm`` evaluator without a generator, or a web provider without its
            key / URL.

    Examples:
        >>> from affidavit.core.settings import load_settings
        >>> crag = build_corrective_retrieval(load_settings())  # doctest: +SKIP
    """
    from affidavit.correct.evaluator import LLMRelevanceEvaluator, ModelRelevanceEvaluator
    from affidavit.correct.multipart import MultiPartEvaluator
    from affidavit.correct.rewrite import LLMQueryRewriter
    from affidavit.correct.web import (
        BraveSearch,
        SafeFetcher,
        SearxngSearch,
        StoreFallbackSearch,
        TavilySearch,
    )

    c = settings.correct
    evaluator: RelevanceEvaluator
    sentence_evaluator: RelevanceEvaluator | None = None
    if c.evaluator == "llm":
        if generator is None:
            raise ConfigError("correct.evaluator = 'llm' needs a generator", stage="correct")
        evaluator = LLMRelevanceEvaluator(generator, budget_s=c.llm_budget_s)
        # one LLM call per sentence is minutes per question on a CPU: sentences go to the model
        # evaluator when it can load (recorded in config() as sentence_evaluator_name)
        try:
            sentence_evaluator = ModelRelevanceEvaluator(threads=settings.embed.threads)
        except AffidavitError as exc:
            log.warning("model evaluator unavailable, the LLM scores sentences too: %s", exc)
    else:
        evaluator = ModelRelevanceEvaluator(threads=settings.embed.threads)
    if c.grade_parts:
        # a multi-part question: each part graded by the model evaluator, the best grade kept
        # (the LLM evaluator would pay one call per part and passage, so it grades as asked)
        if c.evaluator != "llm":
            evaluator = MultiPartEvaluator(evaluator)
        if sentence_evaluator is not None:
            sentence_evaluator = MultiPartEvaluator(sentence_evaluator)

    web: WebSearch | None = None
    if c.web_provider == "tavily":
        if c.tavily_api_key is None:
            raise ConfigError("web_provider 'tavily' needs correct.tavily_api_key")
        web = TavilySearch(c.tavily_api_key.get_secret_value(), timeout_s=c.web_timeout_s)
    elif c.web_provider == "brave":
        if c.brave_api_key is None:
            raise ConfigError("web_provider 'brave' needs correct.brave_api_key")
        web = BraveSearch(c.brave_api_key.get_secret_value(), timeout_s=c.web_timeout_s)
    elif c.web_provider == "searxng":
        if not c.searxng_url:
            raise ConfigError("web_provider 'searxng' needs correct.searxng_url")
        web = SearxngSearch(c.searxng_url, timeout_s=c.web_timeout_s)
    elif c.web_provider == "store":
        web = StoreFallbackSearch.from_settings(settings)

    fetcher = (
        SafeFetcher(
            allowlist=c.web_allowlist,
            allow_private_addresses=c.allow_private_addresses,
            timeout_s=c.web_timeout_s,
        )
        if web is not None and c.web_provider != "store"
        else None
    )
    rewriter = (
        LLMQueryRewriter(generator)
        if generator is not None and c.rewrite_query and web is not None
        else None
    )
    return CorrectiveRetrieval(
        evaluator, web, rewriter, c, fetcher=fetcher, sentence_evaluator=sentence_evaluator
    )
