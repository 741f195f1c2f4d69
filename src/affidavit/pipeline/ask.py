"""The ``ask`` job: question in, a verified, cited answer out, with the whole trace.

Stages, each injected through a Protocol so tests run on fakes and users swap parts:

1. **retrieve** (`Retriever`): top ``correct.top_k_documents``
   chunks.
2. **correct** (`Corrector`, optional): CRAG grading, Correct/Ambiguous/Incorrect,
   refinement and web results. Without one, the retrieved chunks are used as they are (recorded).
3. **prompt**: the numbered passages, answer only from them, cite ``[n]`` after every sentence or
   say "I don't have enough information".
4. **generate** (`Generator`): streamed; each piece goes to
   ``on_token`` as it arrives (time to first token recorded). A draft the model was stopped in
   (its token budget or context window ran out: `GenerationTruncatedError`) keeps its pieces,
   recorded; the sentence it stopped in gets a stand-in claim that is never verified.
5. **citations**: control and bidi characters leave the draft (the raw text stays in the
   trace); markers naming no provided passage are removed (recorded).
6. **claims** (`ClaimExtractor`): a sentence the claim limit (``claims.max_claims``) cut
   short or never reached gets a stand-in claim that is never verified (fail closed); a bare
   answer ("Pierre Gasly [1].") and the "Yes, ..." / "No, ..." that answers a yes-no question
   are checked together with the question.
7. **verify** (`ClaimVerifier`): every claim against every context
   passage; a verifier that raises counts as a failed check (fail closed: unverified).
8. **policy**: fail-closed decisions, then a sentence's citations are pointed at the passage the
   verifier's evidence came from when they differ (recorded), then the answer is rendered in
   strict / mixed / debug mode: a citation is shown only on a verified sentence, to the
   passages its evidence came from (an unverified sentence shown in mixed mode cites nothing).
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
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import CancelledError
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from affidavit.claims.base import ClaimExtractor, claims_and_limit_stops
from affidavit.core.answer import (
    AnswerSentence,
    AskResult,
    ClaimOutcome,
    QuoteRetry,
    ScoredChunk,
    Source,
    StageName,
    StageTiming,
    Trace,
    VerificationTrace,
    WebResultTrace,
)
from affidavit.core.claims import SkippedSentence
from affidavit.core.correction import CorrectionResult, RefinedContext
from affidavit.core.errors import (
    AffidavitError,
    CorrectionError,
    GenerationError,
    GenerationTruncatedError,
)
from affidavit.core.policy import ClaimDecision
from affidavit.core.service import (
    ClaimEvent,
    GradingEvent,
    PipelineEvent,
    RefinementEvent,
    RetrievalEvent,
)
from affidavit.core.settings import Settings
from affidavit.core.text import strip_controls
from affidavit.core.types import Chunk, Claim, DisplayMode, Hit, Verdict
from affidavit.generate.base import Generator
from affidavit.pipeline.citations import (
    answer_form,
    clean_citations,
    correct_citations,
    evidence_passages,
    fragment_claims,
    fresh_claim_ids,
    list_citations,
    yes_no_claims,
)
from affidavit.pipeline.prompt import (
    INSUFFICIENT_ANSWER,
    QUOTE_SYSTEM_PROMPT,
    build_prompt,
    is_insufficient,
)
from affidavit.policy.render import decide_all, decide_claim, render
from affidavit.retrieve.base import Retriever
from affidavit.verify.base import ClaimVerifier, unverified

log = logging.getLogger(__name__)

TokenCallback = Callable[[str], None]
EventCallback = Callable[[PipelineEvent], None]

_NOT_CHECKED_PAST_LIMIT = "past the claim limit (claims.max_claims): not checked"
_NOT_CHECKED_CUT = "the model was cut short in this sentence: unfinished, not checked"


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


def _unverifiable(claim: Claim, error: str, reason: str | None = None) -> Verdict:
    # fail closed: a verifier that could not run leaves the claim unverified, never supported
    return unverified(claim, error, reason or f"the verifier failed: {error}")


def _limit_claims(
    answer: str, stopped: Sequence[SkippedSentence], claims: Sequence[Claim]
) -> list[Claim]:
    """One stand-in claim per sentence the claim limit stopped, spanning the whole sentence.

    The sentence was not checked whole (or at all): the stand-in is never verified, so the
    renderer withholds the sentence in strict mode and marks it unverified in the others, and no
    fragment claim checks it behind the limit's back.
    """
    from affidavit.claims.rules import parse_citations

    fresh = fresh_claim_ids(claims)
    out: list[Claim] = []
    for s in stopped:
        out.append(
            Claim(
                id=next(fresh),
                text=answer[s.start : s.end],
                start=s.start,
                end=s.end,
                sentence_index=s.sentence_index,
                sentence=s.text,
                citations=parse_citations(s.text),
            )
        )
    return out


def _cut_claim(answer: str, claims: Sequence[Claim]) -> list[Claim]:
    """A stand-in claim, never verified, spanning the last sentence of a draft cut short.

    The model was stopped inside that sentence (its token budget or context window ran out):
    what it says is not what the model would have said, so it is withheld in strict mode and
    marked unverified in the others, whatever claims of it verify.
    """
    from affidavit.claims.rules import parse_citations
    from affidavit.claims.segment import split_sentences

    segments = split_sentences(answer)
    if not segments:
        return []
    last = segments[-1]
    return [
        Claim(
            id=next(fresh_claim_ids(claims)),
            text=last.text,
            start=last.start,
            end=last.end,
            sentence_index=last.index,
            sentence=last.text,
            citations=parse_citations(last.text),
        )
    ]


def _cut_note(cut: str | None) -> list[str]:
    """The trace's note on a draft the model was stopped in (if it was)."""
    if cut is None:
        return []
    return [f"generate: the answer was cut short ({cut}); its last sentence is not checked"]


def _limit_note(unchecked: frozenset[str]) -> list[str]:
    """The trace's note on the shown draft's sentences the claim limit stopped (if any)."""
    if not unchecked:
        return []
    return [
        f"claims: {len(unchecked)} sentence(s) past the claim limit (claims.max_claims) "
        "not checked, so not verified"
    ]


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


@dataclass
class _Run:
    """What one ``ask`` call carries from stage to stage."""

    question: str
    display: DisplayMode
    on_token: TokenCallback | None = None
    on_event: EventCallback | None = None
    cancel: threading.Event | None = None
    clock: _Clock = field(default_factory=lambda: _Clock())
    skipped: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)
    hits: list[Hit] = field(default_factory=list)
    correction: CorrectionResult | None = None
    context: list[Chunk] = field(default_factory=list)
    origins: list[str] = field(default_factory=list)
    refined: Sequence[RefinedContext] = ()
    prompt: Any = None
    raw: str = ""
    pieces: int = 0
    ttft: float | None = None
    gen_seconds: float = 0.0
    cleaned: Any = None
    draft: str = ""
    insufficient: bool = False
    claims: list[Claim] = field(default_factory=list)
    unchecked: frozenset[str] = frozenset()  # claim ids standing in for text past the limit
    cut: str | None = None  # why the model stopped before its answer was complete
    cut_claims: frozenset[str] = frozenset()  # the stand-in for the sentence it stopped in
    verdicts: list[Verdict] = field(default_factory=list)
    vtrace: list[VerificationTrace] = field(default_factory=list)
    decisions: list[ClaimDecision] = field(default_factory=list)
    by_claim: dict[str, Any] = field(default_factory=dict)
    evidence: dict[str, tuple[int, ...]] = field(default_factory=dict)
    corrected: Any = None
    rendered: Any = None
    answer: str = ""
    quote_retry: QuoteRetry | None = None

    def check_cancel(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise CancelledError("ask cancelled")

    def emit(self, event: PipelineEvent) -> None:
        if self.on_event is not None:
            self.on_event(event)


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
        self.answer_forms = settings.claims.answer_form
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
                ends, then one claim event as each claim is decided (the HTTP API streams
                them; the result's claims are final: citation corrections come after); an
                exception it raises aborts the answer.
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

        if not question.strip():
            raise ConfigError("the question is empty")
        if certify is not None and self.certificate_writer is None:
            raise ConfigError("a certificate was asked for but no certificate writer is set")
        run = _Run(
            question=question,
            display=mode or self.settings.policy.display,
            on_token=on_token,
            on_event=on_event,
            cancel=cancel,
        )
        self._load(run)
        self._retrieve_step(run)
        self._correct_step(run)
        self._generate_step(run)
        self._claims_step(run)
        self._verify_step(run)
        self._policy_step(run)
        self._requote_step(run)
        certificate_path = self._certify_step(run, certify)
        return self._result(run, certificate_path)

    # -- the stages of ask, in order; each records its timing and emits its event -------------

    def _load(self, run: _Run) -> None:
        load = getattr(self.generator, "load", None)
        if callable(load):
            # model loading is a one-off per process; keep it out of the generation timings
            with run.clock.stage("load", "generator model"):
                load()

    def _retrieve_step(self, run: _Run) -> None:
        t_stage = time.perf_counter()
        run.check_cancel()
        with run.clock.stage("retrieve"):
            run.hits = self._retrieve(run.question)
        run.emit(RetrievalEvent(hits=tuple(run.hits), seconds=time.perf_counter() - t_stage))

    def _correct_step(self, run: _Run) -> None:
        """Corrective retrieval, then the prompt (its passage budget decides the context)."""
        t_stage = time.perf_counter()
        with run.clock.stage("correct"):
            context, origins, run.correction = self._correct(run.question, run.hits, run.skipped)
        correct_seconds = time.perf_counter() - t_stage
        with run.clock.stage("prompt"):
            run.prompt = build_prompt(run.question, context, max_chars=self.max_prompt_chars)
            if run.prompt.dropped:
                run.skipped.append(
                    f"prompt: {run.prompt.dropped} passages left out (context budget)"
                )
            run.context = context[: run.prompt.used]
            run.origins = origins[: run.prompt.used]
            # the passages verified against, with where each came from (for the certificate)
            if run.correction is not None:
                run.refined = run.correction.context[: run.prompt.used]
        run.emit(_grading_event(run.correction, run.skipped))
        run.emit(_refinement_event(run.correction, run.context, run.origins, correct_seconds))

    def _generate_step(self, run: _Run) -> None:
        if not run.context:
            # nothing to ground an answer in: do not ask the model to improvise
            run.clock.skipped("generate", "no passages to answer from")
            run.skipped.append(
                "generate: no passages to answer from (none retrieved, or all judged "
                "irrelevant); answered insufficient without calling the model"
            )
            run.raw = INSUFFICIENT_ANSWER
            if run.on_token is not None:
                run.on_token(run.raw)
            return
        run.check_cancel()
        assert run.prompt is not None
        with run.clock.stage("generate"):
            start = time.perf_counter()
            parts: list[str] = []
            run.cut = None
            try:
                for piece in self.generator.stream(run.prompt.messages):
                    run.check_cancel()
                    if run.ttft is None:
                        run.ttft = time.perf_counter() - start
                    parts.append(piece)
                    if run.on_token is not None:
                        run.on_token(piece)
            except GenerationTruncatedError as exc:
                # the pieces stand, recorded as cut: the sentence it stopped in is not checked
                run.cut = exc.message
            except GenerationError:
                raise
            except AffidavitError as exc:
                raise GenerationError(f"generation failed: {exc.message}") from exc
            run.gen_seconds = time.perf_counter() - start
            run.raw, run.pieces = "".join(parts), len(parts)

    def _claims_step(self, run: _Run) -> None:
        with run.clock.stage("citations"):
            # control and bidi characters out of the draft (as out of web evidence): a U+202E
            # shows a verified "1932" as "2391"; what is shown must be what is checked
            run.cleaned = clean_citations(strip_controls(run.raw), len(run.context))
        run.draft = run.cleaned.text
        run.insufficient = is_insufficient(run.draft)
        with run.clock.stage("claims"):
            claims, stopped = claims_and_limit_stops(self.extractor, run.draft)
            # fail closed: a sentence the claim limit cut short or never reached is not verified
            held = _limit_claims(run.draft, stopped, claims)
            run.unchecked = frozenset(c.id for c in held)
            claims = [*claims, *held]
            # fail closed: the sentence the model was stopped in is not what it would have said
            cut = _cut_claim(run.draft, claims) if run.cut is not None else []
            run.cut_claims = frozenset(c.id for c in cut)
            claims = [*claims, *cut]
            if not run.insufficient:
                # "Pierre Gasly [1]." states nothing alone: checked together with the question
                claims = [*claims, *fragment_claims(run.question, run.draft, claims)]
                # "Yes, <a true statement>" to a yes-no question: the "Yes" is checked too
                claims = [*claims, *yes_no_claims(run.question, run.draft, claims)]
        run.claims = list(claims)

    def _verify_step(self, run: _Run) -> None:
        """Every claim against every passage; each claim's event goes out as it is decided."""
        run.check_cancel()
        chunk_ids = [c.id for c in run.context]
        policy = self.settings.policy
        checked: list[Claim] = []
        with run.clock.stage("verify"):
            for claim in run.claims:
                t0 = time.perf_counter()
                if claim.id in run.unchecked:
                    verdict = _unverifiable(
                        claim, _NOT_CHECKED_PAST_LIMIT, reason=_NOT_CHECKED_PAST_LIMIT
                    )
                elif claim.id in run.cut_claims:
                    verdict = _unverifiable(claim, _NOT_CHECKED_CUT, reason=_NOT_CHECKED_CUT)
                else:
                    verdict = self._verify_one(claim, run.context)
                alt = answer_form(run.question, claim.text) if self.answer_forms else None
                if alt is not None and verdict.label == "unsupported" and verdict.complete:
                    # a restatement of the question: checked as the question and its answer
                    as_answer = claim.model_copy(update={"text": alt})
                    second = self._verify_one(as_answer, run.context)
                    if second.label == "supported":
                        claim, verdict = (
                            as_answer,
                            second.model_copy(
                                update={
                                    "reason": f"checked as the answer to the question ('{alt}'): "
                                    f"{second.reason}"
                                }
                            ),
                        )
                checked.append(claim)
                run.verdicts.append(verdict)
                stage_errors = [s.error for s in verdict.stages if s.error]
                run.vtrace.append(
                    VerificationTrace(
                        claim_id=claim.id,
                        label=verdict.label,
                        p_entail=verdict.p_entail,
                        p_contradict=verdict.p_contradict,
                        seconds=time.perf_counter() - t0,
                        error="; ".join([*verdict.errors, *stage_errors]) or None,
                    )
                )
                if run.on_event is not None:
                    decided = decide_claim(claim.id, verdict, policy, premise=run.question)
                    run.emit(
                        ClaimEvent(
                            outcome=ClaimOutcome(
                                claim=claim,
                                verdict=verdict,
                                decision=decided.decision,
                                evidence_numbers=evidence_passages(verdict, chunk_ids),
                            )
                        )
                    )
        run.claims = checked

    def _verify_one(self, claim: Claim, context: Sequence[Chunk]) -> Verdict:
        """The verifier's verdict; one that raises leaves the claim unverified (fail closed)."""
        try:
            return self.verifier.verify(claim, context)
        except AffidavitError as exc:
            return _unverifiable(claim, exc.message)
        except Exception as exc:  # a third-party verifier must not show a claim
            log.exception("verifier raised on claim %s", claim.id)
            return _unverifiable(claim, f"{type(exc).__name__}: {exc}")

    def _policy_step(self, run: _Run) -> None:
        chunk_ids = [c.id for c in run.context]
        with run.clock.stage("policy"):
            decisions = decide_all(
                run.claims, run.verdicts, self.settings.policy, premise=run.question
            )
            run.decisions = decisions
            run.by_claim = {d.claim_id: d.decision for d in decisions}
            run.evidence = {v.claim_id: evidence_passages(v, chunk_ids) for v in run.verdicts}
            run.corrected = correct_citations(run.draft, run.claims, run.by_claim, run.evidence)
            run.draft, run.claims = run.corrected.text, list(run.corrected.claims)
            # a citation is shown only where the verifier found support (`render`)
            run.rendered = render(
                run.draft,
                run.claims,
                decisions,
                run.display,
                verdicts=run.verdicts,
                evidence=run.evidence,
            )
            run.answer = run.rendered.text
            if run.insufficient and not run.claims:
                # the model abstained and nothing was checked: strict mode shows the abstention
                # only, never the rest of the draft ("Napoleon [1]. I don't have enough ...");
                # the others show it unbadged, and (nothing verified) without its citations
                shown = "".join(
                    s.lead + s.shown_text for s in run.rendered.sentences if s.shown
                ).strip()
                run.answer = shown if run.display != "strict" and shown else INSUFFICIENT_ANSWER

    def _requote_step(self, run: _Run) -> None:
        """Strict mode, nothing verified: ask once more for the passages' own sentences.

        A draft whose every claim was withheld shows nothing, although the passages often hold
        the answer in words the verifier can check. The model is asked again with
        `QUOTE_SYSTEM_PROMPT` over the same numbered passages; that draft goes through the same
        citation, claim, verification and policy stages, and replaces the first only when at
        least one of its claims is verified. Either way the draft not shown is in the trace.
        """
        if not (
            self.settings.generate.quote_retry
            and run.display == "strict"
            and run.context
            and run.claims
            and not run.insufficient
            and not any(d.decision == "verified" for d in run.decisions)
        ):
            return
        run.check_cancel()
        first = _Run(**{f: getattr(run, f) for f in run.__dataclass_fields__})
        started = time.perf_counter()
        outer_clock, first_prompt = run.clock, run.prompt
        # the retry's stages time into the one "requote" entry, not the first pass's entries
        run.clock, run.on_token, run.on_event = _Clock(), None, first.on_event
        run.verdicts, run.vtrace, run.claims = [], [], []
        error: str | None = None
        try:
            run.prompt = build_prompt(
                run.question,
                run.context,
                max_chars=10**9,  # the same passages as the first prompt, which fitted
                system=QUOTE_SYSTEM_PROMPT,
            )
            self._generate_step(run)
            self._claims_step(run)
            self._verify_step(run)
            self._policy_step(run)
        except GenerationError as exc:
            error = f"generation failed: {exc.message}"
        adopted = error is None and any(d.decision == "verified" for d in run.decisions)
        second = _Run(**{f: getattr(run, f) for f in run.__dataclass_fields__})
        if not adopted:
            for f in first.__dataclass_fields__:
                setattr(run, f, getattr(first, f))
        run.clock, run.prompt = outer_clock, first_prompt
        run.on_token, run.on_event = first.on_token, first.on_event
        other = first if adopted else second
        seconds = time.perf_counter() - started
        run.clock.timings.append(
            StageTiming(
                stage="requote",
                seconds=seconds,
                note="the quoting draft is shown"
                if adopted
                else (error or "no claim of the quoting draft verified; the first draft stands"),
            )
        )
        run.quote_retry = QuoteRetry(
            adopted=adopted,
            other_raw=other.raw if error is None or adopted else "",
            other_claims=()
            if error is not None
            else tuple(
                ClaimOutcome(
                    claim=c,
                    verdict=v,
                    decision=other.by_claim.get(c.id, "unverified"),
                    evidence_numbers=other.evidence.get(c.id, ()),
                )
                for c, v in zip(other.claims, other.verdicts, strict=True)
            ),
            seconds=seconds,
            error=error,
        )

    def _certify_step(self, run: _Run, certify: Path | str | None) -> str | None:
        if certify is None or self.certificate_writer is None:
            run.clock.skipped("certify", "not requested")
            return None
        run.check_cancel()
        with run.clock.stage("certify"):
            path = Path(certify)
            self.certificate_writer(
                run.question,
                run.draft,
                run.claims,
                run.verdicts,
                run.decisions,
                path,
                context=run.refined,
            )
        return str(path)

    def _result(self, run: _Run, certificate_path: str | None) -> AskResult:
        assert run.prompt is not None and run.cleaned is not None
        assert run.corrected is not None and run.rendered is not None
        run.clock.timings.append(
            StageTiming(stage="total", seconds=time.perf_counter() - run.started)
        )
        chunk_ids = [c.id for c in run.context]
        # the citations listed are those shown: of verified sentences, to their evidence
        shown_citations = {s.index: s.citations for s in run.rendered.sentences if s.shown}
        return AskResult(
            question=run.question,
            mode=run.display,
            answer=run.answer,
            note=run.rendered.note,
            draft=run.draft,
            insufficient=run.insufficient,
            claims=tuple(
                ClaimOutcome(
                    claim=c,
                    verdict=v,
                    decision=run.by_claim.get(c.id, "unverified"),
                    evidence_numbers=run.evidence.get(c.id, ()),
                )
                for c, v in zip(run.claims, run.verdicts, strict=True)
            ),
            citations=tuple(
                c
                for c in list_citations(run.draft, chunk_ids, run.corrected.corrections)
                if c.number in shown_citations.get(c.sentence_index, ())
            ),
            sentences=tuple(
                AnswerSentence(
                    index=s.index,
                    start=s.start,
                    end=s.end,
                    decision=s.decision,
                    claim_ids=s.claim_ids,
                    shown=s.shown,
                    lead=s.lead,
                    text=s.shown_text,
                    citations=s.citations,
                    withdrawn_citations=s.withdrawn_citations,
                )
                for s in run.rendered.sentences
            ),
            sources=tuple(
                Source(
                    number=i,
                    chunk_id=c.id,
                    origin="web" if o == "web" else "store",
                    url=c.url,
                    title=c.title,
                    doc_id=c.doc_id,
                )
                for i, (c, o) in enumerate(zip(run.context, run.origins, strict=True), start=1)
            ),
            trace=_trace(
                hits=run.hits,
                correction=run.correction,
                context=run.context,
                prompt_chars=run.prompt.chars,
                generator=getattr(self.generator, "name", type(self.generator).__name__),
                raw=run.raw,
                pieces=run.pieces,
                gen_seconds=run.gen_seconds,
                ttft=run.ttft,
                removed=run.cleaned.removed,
                corrections=run.corrected.corrections,
                verification=run.vtrace,
                timings=run.clock.timings,
                skipped=[*run.skipped, *_limit_note(run.unchecked), *_cut_note(run.cut)],
                quote_retry=run.quote_retry,
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
        strip_threshold=correction.trace.strip_threshold if correction is not None else None,
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
    quote_retry: QuoteRetry | None = None,
) -> Trace:
    scores: list[ScoredChunk] = []
    classification = None
    detail: dict[str, Any] = {}
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
            "upper_threshold": t.classification.upper_threshold,
            "lower_threshold": t.classification.lower_threshold,
            "strip_threshold": t.strip_threshold,
            "dropped": list(t.dropped),
            "fallback": t.fallback,
            "errors": list(t.errors),
            "timings_ms": dict(t.timings_ms),
        }
        if t.web is not None:
            if t.web.query is not None:
                queries.append(t.web.query.query)
                # whether the LLM's rewrite was sent, or the question because it failed (why)
                detail["web_query"] = t.web.query.model_dump(mode="json")
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
        quote_retry=quote_retry,
    )
