"""The ``ask`` job: question in, a verified, cited answer out, with the whole trace.

Stages, each injected through a Protocol so tests run on fakes and users swap parts:

1. **retrieve** (`Retriever`): top ``correct.top_k_documents``
   chunks.
2. **correct** (`Corrector`, optional): CRAG grading, Correct/Ambiguous/Incorrect,
   refinement and web results. Without one, the retrieved chunks are used as they are (recorded).
3. **prompt**: the numbered passages, answer only from them, cite ``[n]`` after every sentence or
   say "I don't have enough information".
4. **generate** (`Generator`): streamed; each piece goes to
   ``on_token`` as it arrives (time to first token recorded).
5. **citations**: markers naming no provided passage are removed (recorded).
6. **claims** (`ClaimExtractor`).
7. **verify** (`ClaimVerifier`): every claim against every context
   passage; a verifier that raises counts as a failed check (fail closed: unverified).
8. **policy**: fail-closed decisions, then a sentence's citations are pointed at the passage the
   verifier's evidence came from when they differ (recorded), then the answer is rendered in
   strict / mixed / debug mode.
9. **certify** (optional): a signed certificate written to a path.

Examples:
    >>> from affidavit.core.settings import load_settings
    >>> from affidavit.core.types import Chunk, Hit
    >>> from affidavit.testing.fake_llm import FakeGenerator
    >>> from affidavit.claims.extractor import RuleBasedExtractor
    >>> class OneHit:
    ...     def search(self, query, k=10, mode="hybrid", filters=None):
    ...         return [Hit(chunk=Chunk(text="Paris is the capital of France."), score=1.0,
    ...                     rank=1, mode="bm25")]
    >>> class Yes:
    ...     def verify(self, claim, chunks):
    ...         from affidavit.core.types import EvidenceSpan, Verdict
    ...         span = EvidenceSpan(chunk_id=chunks[0].id, start=0, end=31, text=chunks[0].text)
    ...         return Verdict(claim_id=claim.id, label="supported", p_entail=0.95,
    ...                        p_neutral=0.03, p_contradict=0.02, evidence=(span,))
    >>> pipe = AskPipeline(retriever=OneHit(), generator=FakeGenerator(
    ...     ["Paris is the capital of France [1]."]), extractor=RuleBasedExtractor(),
    ...     verifier=Yes(), settings=load_settings())
    >>> pipe.ask("What is the capital of France?").answer
    'Paris is the capital of France [1].'
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import CancelledError
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from affidavit.claims.base import ClaimExtractor
from affidavit.core.answer import (
    AskResult,
    ClaimOutcome,
    ScoredChunk,
    Source,
    StageName,
    StageTiming,
    Trace,
    VerificationTrace,
    WebResultTrace,
)
from affidavit.core.correction import CorrectionResult, RefinedContext
from affidavit.core.errors import AffidavitError, CorrectionError, GenerationError
from affidavit.core.policy import ClaimDecision
from affidavit.core.service import GradingEvent, PipelineEvent, RefinementEvent, RetrievalEvent
from affidavit.core.settings import Settings
from affidavit.core.types import Chunk, Claim, DisplayMode, Hit, Verdict
from affidavit.generate.base import Generator
from affidavit.pipeline.citations import (
    clean_citations,
    correct_citations,
    evidence_passages,
    fragment_claims,
    list_citations,
)
from affidavit.pipeline.prompt import INSUFFICIENT_ANSWER, build_prompt, is_insufficient
from affidavit.policy.render import decide_all, render
from affidavit.retrieve.base import Retriever
from affidavit.verify.base import ClaimVerifier

log = logging.getLogger(__name__)

TokenCallback = Callable[[str], None]
EventCallback = Callable[[PipelineEvent], None]


@runtime_checkable
class Corrector(Protocol):
    """The corrective-retrieval stage as the pipeline uses it."""

    def run(self, question: str, hits: Sequence[Hit]) -> CorrectionResult:
        """Grade, classify and refine ``hits``; add web results when the classification asks."""
        ...


@runtime_checkable
class CertificateWriter(Protocol):
    """Signs and writes a certificate for one answer (see `affidavit.certify`)."""

    def __call__(
        self,
        question: str,
        answer: str,
        claims: Sequence[Claim],
        verdicts: Sequence[Verdict],
        decisions: Sequence[ClaimDecision],
        path: Path,
        *,
        context: Sequence[RefinedContext] = (),
    ) -> None:
        """Write the signed certificate to ``path``; raise ``CertificateError`` on failure.

        ``context`` holds the refined passages the claims were verified against (empty when
        the retrieved chunks were used as they are), so that the certificate can name the
        stored chunks the evidence came from.
        """
        ...


def _unverifiable(claim: Claim, error: str) -> Verdict:
    # fail closed: a verifier that could not run leaves the claim unverified, never supported
    return Verdict(
        claim_id=claim.id,
        label="unsupported",
        p_entail=0.0,
        p_neutral=1.0,
        p_contradict=0.0,
        complete=False,
        errors=(error,),
        reason=f"the verifier failed: {error}",
    )


class _Clock:
    def __init__(self) -> None:
        self.timings: list[StageTiming] = []

    @contextmanager
    def stage(self, name: StageName, note: str = "") -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings.append(
                StageTiming(stage=name, seconds=time.perf_counter() - start, note=note)
            )

    def skipped(self, name: StageName, note: str) -> None:
        self.timings.append(StageTiming(stage=name, seconds=0.0, skipped=True, note=note))


class AskPipeline:
    """Answers a question from a store with every shown sentence verified and cited.

    Args:
        retriever: ranks stored chunks.
        generator: the LLM.
        extractor: turns the answer into claims.
        verifier: verifies one claim against the context passages.
        settings: the effective settings (``correct.top_k_documents``, ``retrieve.mode``,
            ``policy``, ``generate``).
        corrector: the CRAG stage; None uses the retrieved chunks as they are (recorded).
        certificate_writer: signs and writes certificates; needed for ``ask(certify=...)``.
        max_prompt_chars: passage budget of the prompt (default: from the context size).
    """

    def __init__(
        self,
        *,
        retriever: Retriever,
        generator: Generator,
        extractor: ClaimExtractor,
        verifier: ClaimVerifier,
        settings: Settings,
        corrector: Corrector | None = None,
        certificate_writer: CertificateWriter | None = None,
        max_prompt_chars: int | None = None,
    ) -> None:
        self.retriever = retriever
        self.generator = generator
        self.extractor = extractor
        self.verifier = verifier
        self.settings = settings
        self.corrector = corrector
        self.certificate_writer = certificate_writer
        gen = settings.generate
        # ~3 characters per token for English prose is a safe under-estimate of capacity
        self.max_prompt_chars = max_prompt_chars or max(
            2000, (gen.context_size - gen.max_tokens - 64) * 3
        )

    def config(self) -> dict[str, Any]:
        """What each stage is (for traces and certificates)."""

        def describe(obj: object) -> Any:
            for attr in ("config", "describe"):
                fn = getattr(obj, attr, None)
                if callable(fn):
                    return fn()
            return type(obj).__name__

        return {
            "retriever": describe(self.retriever),
            "corrector": describe(self.corrector) if self.corrector else None,
            "generator": describe(self.generator),
            "extractor": describe(self.extractor),
            "verifier": describe(self.verifier),
            "max_prompt_chars": self.max_prompt_chars,
        }

    # ------------------------------------------------------------------------------------

    def _retrieve(self, question: str) -> list[Hit]:
        return self.retriever.search(
            question, k=self.settings.correct.top_k_documents, mode=self.settings.retrieve.mode
        )

    def _correct(
        self, question: str, hits: list[Hit], skipped: list[str]
    ) -> tuple[list[Chunk], list[str], CorrectionResult | None]:
        """Context chunks, their origins ("store"/"web"), and the corrector's result."""
        plain = [h.chunk for h in hits]
        if self.corrector is None:
            skipped.append("correct: no corrective stage configured; retrieved chunks used as-is")
            return plain, ["store"] * len(plain), None
        try:
            result = self.corrector.run(question, hits)
        except CorrectionError as exc:
            # the verifier still guards what is shown, so answering from the raw hits is safe
            log.warning("corrective retrieval failed, using the retrieved chunks: %s", exc)
            skipped.append(f"correct: failed ({exc.message}); retrieved chunks used as-is")
            return plain, ["store"] * len(plain), None
        chunks = [c.chunk for c in result.context]
        origins = ["web" if c.origin == "web" else "store" for c in result.context]
        return chunks, origins, result

    def ask(
        self,
        question: str,
        *,
        mode: DisplayMode | None = None,
        on_token: TokenCallback | None = None,
        certify: Path | str | None = None,
        on_event: EventCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> AskResult:
        """Answer ``question``; stream pieces to ``on_token`` while the model writes.

        Args:
            question: the question.
            mode: display mode (default ``settings.policy.display``).
            on_token: called with each generated piece as it arrives (the provisional text).
            certify: write a signed certificate of the answer to this path.
            on_event: called with the retrieval, grading and refinement events as each stage
                ends (the HTTP API streams them); an exception it raises aborts the answer.
            cancel: when set (from another thread), the call stops at the next stage boundary
                or generated piece and raises ``concurrent.futures.CancelledError``; it is
                checked last just before the certificate is written, which is atomic.

        Raises:
            RetrievalError: the store could not be searched.
            GenerationError: the LLM failed.
            CertificateError / SigningKeyError: a certificate was asked for and could not be made.
            ConfigError: ``certify`` given but no certificate writer configured.
            concurrent.futures.CancelledError: ``cancel`` was set.
        """
        from affidavit.core.errors import ConfigError

        def check_cancel() -> None:
            if cancel is not None and cancel.is_set():
                raise CancelledError("ask cancelled")

        if not question.strip():
            raise ConfigError("the question is empty")
        if certify is not None and self.certificate_writer is None:
            raise ConfigError("a certificate was asked for but no certificate writer is set")
        display: DisplayMode = mode or self.settings.policy.display
        clock = _Clock()
        skipped: list[str] = []
        total_start = time.perf_counter()

        load = getattr(self.generator, "load", None)
        if callable(load):
            # model loading is a one-off per process; keep it out of the generation timings
            with clock.stage("load", "generator model"):
                load()

        t_stage = time.perf_counter()
        check_cancel()
        with clock.stage("retrieve"):
            hits = self._retrieve(question)
        if on_event is not None:
            on_event(RetrievalEvent(hits=tuple(hits), seconds=time.perf_counter() - t_stage))

        t_stage = time.perf_counter()
        with clock.stage("correct"):
            context, origins, correction = self._correct(question, hits, skipped)
        correct_seconds = time.perf_counter() - t_stage

        with clock.stage("prompt"):
            prompt = build_prompt(question, context, max_chars=self.max_prompt_chars)
            if prompt.dropped:
                skipped.append(f"prompt: {prompt.dropped} passages left out (context budget)")
            context, origins = context[: prompt.used], origins[: prompt.used]
            # the passages verified against, with where each came from (for the certificate)
            refined = correction.context[: prompt.used] if correction is not None else ()
        chunk_ids = [c.id for c in context]
        if on_event is not None:
            on_event(_grading_event(correction, skipped))
            on_event(_refinement_event(correction, context, origins, correct_seconds))

        raw, pieces, ttft, gen_seconds = "", 0, None, 0.0
        if not context:
            # nothing to ground an answer in: do not ask the model to improvise
            clock.skipped("generate", "no passages to answer from")
            skipped.append(
                "generate: no passages to answer from (none retrieved, or all judged "
                "irrelevant); answered insufficient without calling the model"
            )
            raw = INSUFFICIENT_ANSWER
            if on_token is not None:
                on_token(raw)
        else:
            check_cancel()
            with clock.stage("generate"):
                start = time.perf_counter()
                parts: list[str] = []
                try:
                    for piece in self.generator.stream(prompt.messages):
                        check_cancel()
                        if ttft is None:
                            ttft = time.perf_counter() - start
                        parts.append(piece)
                        if on_token is not None:
                            on_token(piece)
                except GenerationError:
                    raise
                except AffidavitError as exc:
                    raise GenerationError(f"generation failed: {exc.message}") from exc
                gen_seconds = time.perf_counter() - start
                raw, pieces = "".join(parts), len(parts)

        with clock.stage("citations"):
            cleaned = clean_citations(raw, len(context))
        draft = cleaned.text
        insufficient = is_insufficient(draft)

        with clock.stage("claims"):
            claims = self.extractor.extract(draft)
            if not insufficient:
                # "Pierre Gasly [1]." states nothing alone: checked together with the question
                claims = [*claims, *fragment_claims(question, draft, claims)]

        check_cancel()
        verdicts: list[Verdict] = []
        vtrace: list[VerificationTrace] = []
        with clock.stage("verify"):
            for claim in claims:
                t0 = time.perf_counter()
                try:
                    verdict = self.verifier.verify(claim, context)
                except AffidavitError as exc:
                    verdict = _unverifiable(claim, exc.message)
                except Exception as exc:  # a third-party verifier must not show a claim
                    log.exception("verifier raised on claim %s", claim.id)
                    verdict = _unverifiable(claim, f"{type(exc).__name__}: {exc}")
                verdicts.append(verdict)
                stage_errors = [s.error for s in verdict.stages if s.error]
                vtrace.append(
                    VerificationTrace(
                        claim_id=claim.id,
                        label=verdict.label,
                        p_entail=verdict.p_entail,
                        p_contradict=verdict.p_contradict,
                        seconds=time.perf_counter() - t0,
                        error="; ".join([*verdict.errors, *stage_errors]) or None,
                    )
                )

        with clock.stage("policy"):
            decisions = decide_all(claims, verdicts, self.settings.policy, premise=question)
            by_claim = {d.claim_id: d.decision for d in decisions}
            evidence = {v.claim_id: evidence_passages(v, chunk_ids) for v in verdicts}
            corrected = correct_citations(draft, claims, by_claim, evidence)
            draft, claims = corrected.text, list(corrected.claims)
            rendered = render(draft, claims, decisions, display, verdicts=verdicts)
            answer = rendered.text
            if insufficient and not claims:
                answer = draft.strip() or INSUFFICIENT_ANSWER

        certificate_path: str | None = None
        if certify is not None and self.certificate_writer is not None:
            check_cancel()
            with clock.stage("certify"):
                path = Path(certify)
                self.certificate_writer(
                    question, draft, claims, verdicts, decisions, path, context=refined
                )
                certificate_path = str(path)
        else:
            clock.skipped("certify", "not requested")

        clock.timings.append(StageTiming(stage="total", seconds=time.perf_counter() - total_start))
        return AskResult(
            question=question,
            mode=display,
            answer=answer,
            note=rendered.note,
            draft=draft,
            insufficient=insufficient,
            claims=tuple(
                ClaimOutcome(
                    claim=c,
                    verdict=v,
                    decision=by_claim.get(c.id, "unverified"),
                    evidence_numbers=evidence.get(c.id, ()),
                )
                for c, v in zip(claims, verdicts, strict=True)
            ),
            citations=tuple(list_citations(draft, chunk_ids, corrected.corrections)),
            sources=tuple(
                Source(
                    number=i,
                    chunk_id=c.id,
                    origin="web" if o == "web" else "store",
                    url=c.url,
                    title=c.title,
                    doc_id=c.doc_id,
                )
                for i, (c, o) in enumerate(zip(context, origins, strict=True), start=1)
            ),
            trace=_trace(
                hits=hits,
                correction=correction,
                context=context,
                prompt_chars=prompt.chars,
                generator=getattr(self.generator, "name", type(self.generator).__name__),
                raw=raw,
                pieces=pieces,
                gen_seconds=gen_seconds,
                ttft=ttft,
                removed=cleaned.removed,
                corrections=corrected.corrections,
                verification=vtrace,
                timings=clock.timings,
                skipped=skipped,
            ),
            certificate_path=certificate_path,
        )

    async def aask(
        self,
        question: str,
        *,
        mode: DisplayMode | None = None,
        on_token: TokenCallback | None = None,
        certify: Path | str | None = None,
    ) -> AskResult:
        """`ask` in the shared worker pool (`affidavit.concurrency`).

        ``on_token`` is called on the event loop, never from the worker thread. Cancelling the
        awaiting task stops the worker at its next generated piece or stage boundary, before any
        certificate is written.

        Examples:
            >>> import asyncio
            >>> from affidavit.core.settings import load_settings
            >>> from affidavit.core.types import Chunk, Hit
            >>> from affidavit.testing.fake_llm import FakeGenerator
            >>> from affidavit.testing.verifiers import KeywordVerifier
            >>> from affidavit.claims.extractor import RuleBasedExtractor
            >>> class OneHit:
            ...     def search(self, query, k=10, mode="hybrid", filters=None):
            ...         return [Hit(chunk=Chunk(text="Rome is in Italy."), score=1.0, rank=1,
            ...                     mode="bm25")]
            >>> pipe = AskPipeline(retriever=OneHit(), generator=FakeGenerator(
            ...     ["Rome is in Italy [1]."]), extractor=RuleBasedExtractor(),
            ...     verifier=KeywordVerifier(), settings=load_settings())
            >>> asyncio.run(pipe.aask("Where is Rome?")).answer
            'Rome is in Italy [1].'
        """
        from affidavit.concurrency import offload

        loop = asyncio.get_running_loop()
        cancel = threading.Event()

        def relay(piece: str) -> None:
            if on_token is not None:
                loop.call_soon_threadsafe(on_token, piece)

        try:
            return await offload(
                self.ask, question, mode=mode, on_token=relay, certify=certify, cancel=cancel
            )
        except asyncio.CancelledError:
            cancel.set()
            raise


def _grading_event(correction: CorrectionResult | None, skipped: Sequence[str]) -> GradingEvent:
    if correction is None:
        note = next((s for s in skipped if s.startswith("correct:")), "corrective stage off")
        return GradingEvent(note=note)
    t = correction.trace
    return GradingEvent(grades=t.grades, classification=t.classification)


def _refinement_event(
    correction: CorrectionResult | None,
    context: Sequence[Chunk],
    origins: Sequence[str],
    seconds: float,
) -> RefinementEvent:
    web = correction.trace.web if correction is not None else None
    return RefinementEvent(
        context=tuple(context),
        origins=tuple("web" if o == "web" else "store" for o in origins),
        dropped=correction.trace.dropped if correction is not None else (),
        web_ran=web is not None and web.provider != "none",
        web_query=web.query.query if web is not None and web.query is not None else None,
        seconds=seconds,
    )


def _trace(
    *,
    hits: Sequence[Hit],
    correction: CorrectionResult | None,
    context: Sequence[Chunk],
    prompt_chars: int,
    generator: str,
    raw: str,
    pieces: int,
    gen_seconds: float,
    ttft: float | None,
    removed: Sequence[Any],
    corrections: Sequence[Any],
    verification: Sequence[VerificationTrace],
    timings: Sequence[StageTiming],
    skipped: Sequence[str],
) -> Trace:
    scores: list[ScoredChunk] = []
    classification = None
    detail: Mapping[str, Any] = {}
    queries: list[str] = []
    web: list[WebResultTrace] = []
    if correction is not None:
        t = correction.trace
        scores = [
            ScoredChunk(chunk_id=g.chunk_id, score=g.score, detail=g.error or g.evaluator)
            for g in t.grades
        ]
        classification = t.classification.kind
        detail = {
            "evaluator": t.evaluator,
            "classification_reason": t.classification.reason,
            "max_score": t.classification.max_score,
            "strip_threshold": t.strip_threshold,
            "dropped": list(t.dropped),
            "fallback": t.fallback,
            "errors": list(t.errors),
            "timings_ms": dict(t.timings_ms),
        }
        if t.web is not None:
            if t.web.query is not None:
                queries.append(t.web.query.query)
            web = [
                WebResultTrace(
                    url=r.url,
                    title=r.title or None,
                    used=r.used and r.blocked is None,
                    note=r.blocked or r.fetch_error or "",
                )
                for r in t.web.results
            ]
    return Trace(
        retrieval_hits=tuple(hits),
        evaluator_scores=tuple(scores),
        classification=classification,
        corrective_detail=dict(detail),
        context=tuple(context),
        web_queries=tuple(queries),
        web_results=tuple(web),
        prompt_chars=prompt_chars,
        prompt_tokens_estimate=prompt_chars // 4,
        generator=generator,
        raw_answer=raw,
        generated_pieces=pieces,
        generation_seconds=gen_seconds,
        time_to_first_token_s=ttft,
        removed_citations=tuple(removed),
        citation_corrections=tuple(corrections),
        verification=tuple(verification),
        timings=tuple(timings),
        skipped_stages=tuple(skipped),
    )
