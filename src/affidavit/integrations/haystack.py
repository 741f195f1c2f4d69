"""Haystack integration (``pip install "affidavit[haystack]"``, ``haystack-ai``).

Components for a Haystack ``Pipeline``, their sockets typed from their ``run`` signatures:

- `AffidavitRetriever`: ``query: str`` (and optional ``top_k``, ``filters``) ->
  ``documents: list[Document]`` from an affidavit store (``mode``, ``granularity`` at init).
- `AffidavitAuditor`: ``query: str``, ``documents: list[Document]`` and the generator's
  ``replies: list[ChatMessage]`` (or a plain ``answer: str``) -> ``answer: str`` (what the
  enforcement mode lets through), ``replies: list[ChatMessage]`` (the same, as a message),
  ``report: AuditReport``, ``trust_passed: bool``. Guardrail mode withholds failing claims;
  enforce mode raises ``EnforcementError`` carrying the report.
- `AffidavitStreamGuard`: ``query``, ``documents`` -> ``documents``; its
  ``streaming_callback`` passes a streaming generator's tokens on one decided sentence at a time.
- `AffidavitEvaluator`: ``questions``, ``predicted_answers`` and ``contexts`` (or
  ``documents``) -> ``score``, ``individual_scores``, ``trust_passed``, ``results``: a
  dataset scored by the audit, as Haystack's evaluators do.
- `AffidavitVerifier`: the same sockets, but every claim that passes the lexical audit
  must also be entailed by its evidence under the verifier cascade (the project's
  cross-encoder, needs ``affidavit[models]``).

Both audit components have ``run_async`` (the audit runs in the shared worker pool).
Loading a saved pipeline needs ``Pipeline.loads(text,
allowed_modules=["affidavit.integrations.haystack"])`` (or that module in
``HAYSTACK_DESERIALIZATION_ALLOWLIST``): Haystack builds classes only from modules it trusts.

Examples:
    >>> from haystack import Document
    >>> out = AffidavitAuditor(mode="guardrail").run(
    ...     query="When did the Forth Bridge open?",
    ...     documents=[Document(content="The Forth Bridge opened on 4 March 1890.",
    ...                         meta={"url": "https://en.wikipedia.org/wiki/Forth_Bridge"})],
    ...     answer="The Forth Bridge opened on 4 March 1925.")
    >>> out["answer"], out["trust_passed"]
    ('[withheld: not supported by the sources]', False)
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Sequence
from typing import Any, Literal

from affidavit.core.errors import InputError, MissingDependencyError

try:
    from haystack import Document, component, default_from_dict, default_to_dict
    from haystack.dataclasses import ChatMessage, StreamingChunk
    from haystack.utils import deserialize_callable, serialize_callable
    from haystack.utils.filters import document_matches_filter
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError(
        "haystack-ai", "haystack", purpose="the Haystack integration"
    ) from exc

from affidavit.audit.auditor import Auditor
from affidavit.audit.stream import StreamGuard
from affidavit.concurrency import offload
from affidavit.core.report import AuditReport
from affidavit.core.retrieval import SearchFilters
from affidavit.core.settings import AuditSettings, Settings, load_settings
from affidavit.core.types import Chunk, EnforcementMode
from affidavit.integrations._common import (
    StoreSearch,
    audit_for_evaluation,
    chunk_from,
    hit_metadata,
    report_feedback,
    search_filters,
    settings_to_dict,
    shown_answer,
)
from affidavit.verify.base import ClaimVerifier


def document_chunks(documents: Sequence[Document]) -> list[Chunk]:
    """Chunks for Haystack documents (source URL from ``url``/``source``/``file_path`` meta).

    Raises:
        InputError: an item is not a Document, or has no text content.

    Examples:
        >>> document_chunks([Document(content="x", meta={"url": "https://a.org"})])[0].url
        'https://a.org'
    """
    out = []
    for i, d in enumerate(documents):
        if not isinstance(d, Document):
            raise InputError(f"documents[{i}] is not a Document: {type(d).__name__}")
        if d.content is None:
            raise InputError(f"documents[{i}] has no text content")
        out.append(chunk_from(d.content, d.meta, d.meta.get("doc_id")))
    return out


def _answer(replies: Sequence[ChatMessage] | None, answer: str | None) -> str:
    if answer is not None:
        return answer
    if replies:
        text = replies[0].text
        if text is not None:
            return text
    raise InputError("no answer to audit: connect the generator's replies or pass answer")


@component
class AffidavitRetriever:
    """Retrieves documents from an affidavit store.

    Args:
        store_path: the store folder (default ``store.path`` from the settings).
        top_k: documents returned.
        mode: bm25 / dense / hybrid (default ``retrieve.mode``).
        granularity: what hybrid search fuses and returns: ``passage`` (at most
            ``retrieve.per_document`` chunks of a document, neighbours merged), ``document`` (one
            best chunk per document) or ``chunk`` (default ``retrieve.granularity``).
        filters: default filters (``run(filters=...)`` replaces them), in either form:
            affidavit's own fields (``{"domains": [...], "date_from": ..., "date_to": ...,
            "doc_ids": [...]}``), applied in the store before ranking; or Haystack's filter
            syntax (``{"field": "meta.doc_id", "operator": "==", "value": "x"}``, nested with
            ``AND``/``OR``/``NOT``), applied to the best ``retrieve.candidates`` hits, so a
            filter that keeps few of them may return fewer than ``top_k`` documents.

    Raises:
        ConfigError: an unknown mode, granularity or filter key.
    """

    def __init__(
        self,
        store_path: str | None = None,
        top_k: int = 5,
        mode: Literal["bm25", "dense", "hybrid"] | None = None,
        granularity: Literal["passage", "document", "chunk"] | None = None,
        filters: dict[str, Any] | None = None,
    ) -> None:
        self.store_path = store_path
        self.top_k = top_k
        self.mode = mode
        self.granularity = granularity
        self.filters = filters
        self._search = StoreSearch(load_settings(), store_path, mode, granularity)
        _split_filters(filters)  # an invalid filter fails here, not at the first query

    def _documents(
        self, query: str, top_k: int | None, filters: dict[str, Any] | None
    ) -> list[Document]:
        k = top_k or self.top_k
        own, haystack_filters = _split_filters(filters if filters is not None else self.filters)
        n = max(k, self._search.settings.retrieve.candidates) if haystack_filters else k
        docs = [
            Document(id=h.chunk.id, content=h.chunk.text, meta=hit_metadata(h), score=h.score)
            for h in self._search.search(query, k=n, filters=own)
        ]
        if haystack_filters:
            docs = [d for d in docs if document_matches_filter(haystack_filters, d)]
        return docs[:k]

    @component.output_types(documents=list[Document])
    def run(
        self, query: str, top_k: int | None = None, filters: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The top documents for ``query`` (``filters`` replace the ones given at init)."""
        return {"documents": self._documents(query, top_k, filters)}

    @component.output_types(documents=list[Document])
    async def run_async(
        self, query: str, top_k: int | None = None, filters: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """`run` off the event loop."""
        return {"documents": await offload(self._documents, query, top_k, filters)}


def _split_filters(
    filters: dict[str, Any] | None,
) -> tuple[SearchFilters | None, dict[str, Any] | None]:
    """(affidavit's filters, Haystack-syntax filters): a dict with ``operator`` is Haystack's."""
    if not filters:
        return None, None
    if "operator" in filters:
        return None, filters
    return search_filters(filters), None


def settings_from_dict(data: dict[str, Any] | None) -> Settings | None:
    """Settings from `settings_to_dict` output; a secret left out comes from the
    environment (arguments > environment > TOML > defaults)."""
    if data is None:
        return None
    return Settings(**data)


def _audit_from_dict(cls: type, data: dict[str, Any]) -> Any:
    init = dict(data.get("init_parameters", {}))
    init["settings"] = settings_from_dict(init.get("settings"))
    return default_from_dict(cls, {**data, "init_parameters": init})


class _AuditBase:
    """What the audit and verification components share.

    Serialises its whole configuration (``to_dict``): the arguments and the effective settings
    it was built with (secrets left out), so a pipeline loaded from YAML enforces exactly the
    policy it was saved with, never a looser one from the loading machine's defaults.
    """

    def __init__(
        self,
        mode: EnforcementMode = "guardrail",
        allowlist: list[str] | None = None,
        max_age_days: int | None = None,
        min_compliance: float | None = None,
        settings: Settings | None = None,
        verifier: ClaimVerifier | None = None,
        use_verifier: bool = False,
    ) -> None:
        self.mode = mode
        self.allowlist = allowlist
        self.max_age_days = max_age_days
        self.min_compliance = min_compliance
        base = settings or load_settings()
        self.settings = base
        # the settings' `audit.use_verifier` holds for every component: an auditor never runs a
        # looser check than the configured one
        use_verifier = use_verifier or base.audit.use_verifier
        update: dict[str, Any] = {"mode": mode, "use_verifier": use_verifier}
        if allowlist is not None:
            update["allowlist"] = allowlist
        if max_age_days is not None:
            update["max_age_days"] = max_age_days
        if min_compliance is not None:
            update["min_compliance"] = min_compliance
        audit = base.audit.model_validate({**base.audit.model_dump(), **update})
        self._effective = base.model_copy(update={"audit": audit})
        self._lock = threading.Lock()
        self._auditor: Auditor | None = None
        if not use_verifier or verifier is not None:
            self._auditor = Auditor(self._effective, verifier=verifier)  # nothing to load

    def warm_up(self) -> None:
        """Load the verifier model when one is needed (Haystack calls this before the first
        run; a component is built, serialised and connected without loading any model)."""
        self._ready()

    def _ready(self) -> Auditor:
        with self._lock:
            if self._auditor is None:
                # use_verifier without a verifier: Auditor builds the settings' cascade
                self._auditor = Auditor(self._effective)
            return self._auditor

    @property
    def auditor(self) -> Auditor:
        """The auditor (warmed up on first use when `warm_up` has not run)."""
        return self._ready()

    @property
    def audit_settings(self) -> AuditSettings:
        """The effective audit settings (no model loaded to read them)."""
        return self._effective.audit

    def to_dict(self) -> dict[str, Any]:
        """The component's whole configuration (for ``Pipeline.dumps``)."""
        params: dict[str, Any] = {
            "mode": self.mode,
            "allowlist": self.allowlist,
            "max_age_days": self.max_age_days,
            "settings": settings_to_dict(self.settings),
        }
        if "min_compliance" in inspect.signature(type(self).__init__).parameters:
            params["min_compliance"] = self.min_compliance
        return default_to_dict(self, **params)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        """The component `to_dict` described (for ``Pipeline.loads``)."""
        return _audit_from_dict(cls, data)

    def _audit(
        self,
        query: str,
        documents: Sequence[Document],
        replies: Sequence[ChatMessage] | None,
        answer: str | None,
    ) -> dict[str, Any]:
        draft = _answer(replies, answer)
        report: AuditReport = self.auditor.audit(query, document_chunks(documents), draft)
        shown = shown_answer(report, draft)
        return {
            "answer": shown,
            "replies": [ChatMessage.from_assistant(shown)],
            "report": report,
            "trust_passed": report.trust_passed,
        }


@component
class AffidavitAuditor(_AuditBase):
    """Audits a generated answer against the documents it was generated from.

    Args:
        mode: audit / guardrail / enforce.
        allowlist: allowed source domains (default: the settings' ``audit.allowlist``).
        max_age_days: freshness limit (default: the settings').
        min_compliance: share of supported claims needed (default: the settings').
        settings: the effective settings (default: loaded as the CLI does).
    """

    def __init__(
        self,
        mode: EnforcementMode = "guardrail",
        allowlist: list[str] | None = None,
        max_age_days: int | None = None,
        min_compliance: float | None = None,
        settings: Settings | None = None,
    ) -> None:
        # @component rebuilds the class, so the zero-argument super() cannot be used here
        _AuditBase.__init__(self, mode, allowlist, max_age_days, min_compliance, settings)

    @component.output_types(
        answer=str, replies=list[ChatMessage], report=AuditReport, trust_passed=bool
    )
    def run(
        self,
        query: str,
        documents: list[Document],
        replies: list[ChatMessage] | None = None,
        answer: str | None = None,
    ) -> dict[str, Any]:
        """Audit the first reply (or ``answer``) against ``documents``.

        Raises:
            InputError: no answer, or a document without text.
            EnforcementError: enforce mode and the audit failed (``exc.report``).
        """
        return self._audit(query, documents, replies, answer)

    @component.output_types(
        answer=str, replies=list[ChatMessage], report=AuditReport, trust_passed=bool
    )
    async def run_async(
        self,
        query: str,
        documents: list[Document],
        replies: list[ChatMessage] | None = None,
        answer: str | None = None,
    ) -> dict[str, Any]:
        """`run` off the event loop."""
        result: dict[str, Any] = await offload(self._audit, query, documents, replies, answer)
        return result


@component
class AffidavitVerifier(_AuditBase):
    """Audits an answer and verifies every claim with the entailment verifier cascade.

    A claim is supported only if the lexical audit supports it AND the verifier says its
    evidence entails it (fail closed: a verifier that cannot run leaves it unsupported).

    Args:
        mode: audit / guardrail / enforce.
        allowlist: allowed source domains (default: the settings' ``audit.allowlist``).
        max_age_days: freshness limit (default: the settings').
        settings: the effective settings (default: loaded as the CLI does).
        verifier: the claim verifier (default: the settings' cascade, which loads the
            project's cross-encoder and needs ``affidavit[models]``).
    """

    def __init__(
        self,
        mode: EnforcementMode = "guardrail",
        allowlist: list[str] | None = None,
        max_age_days: int | None = None,
        settings: Settings | None = None,
        verifier: ClaimVerifier | None = None,
    ) -> None:
        _AuditBase.__init__(self, mode, allowlist, max_age_days, None, settings, verifier, True)

    @component.output_types(
        answer=str, replies=list[ChatMessage], report=AuditReport, trust_passed=bool
    )
    def run(
        self,
        query: str,
        documents: list[Document],
        replies: list[ChatMessage] | None = None,
        answer: str | None = None,
    ) -> dict[str, Any]:
        """Verify the first reply (or ``answer``) against ``documents``.

        Raises:
            InputError: no answer, or a document without text.
            EnforcementError: enforce mode and verification failed (``exc.report``).
        """
        return self._audit(query, documents, replies, answer)

    @component.output_types(
        answer=str, replies=list[ChatMessage], report=AuditReport, trust_passed=bool
    )
    async def run_async(
        self,
        query: str,
        documents: list[Document],
        replies: list[ChatMessage] | None = None,
        answer: str | None = None,
    ) -> dict[str, Any]:
        """`run` off the event loop."""
        result: dict[str, Any] = await offload(self._audit, query, documents, replies, answer)
        return result


@component
class AffidavitStreamGuard(_AuditBase):
    """Guards a streaming generator: its tokens reach ``on_chunk`` one decided sentence at a
    time (`StreamGuard`), never before.

    Put it between the retriever and the prompt, so it learns the question and the documents
    before the generator writes, and give the generator its `streaming_callback` (or
    `astreaming_callback` for ``run_async``), as in the example below.

    Guardrail mode sends each sentence with its failing claims withheld; enforce mode raises
    ``EnforcementError`` from the callback at the first failing sentence (the generator's run
    fails); audit mode sends every sentence as written. Fail closed: a token that arrives before
    the guard has run (no documents known) raises ``InputError``. The last sentence is sent when
    a chunk carries ``finish_reason``; `last_report` then holds the whole answer's audit.
    A guard serves one pipeline run at a time (``run`` arms it for that run's question).

    Args:
        on_chunk: receives every released piece as a ``StreamingChunk`` (the generator's
            ``meta`` and ``component_info`` kept); a coroutine function for the async callback.
        mode: audit / guardrail / enforce.
        allowlist: allowed source domains (default: the settings' ``audit.allowlist``).
        max_age_days: freshness limit (default: the settings').
        min_compliance: share of supported claims needed (default: the settings').
        settings: the effective settings (default: loaded as the CLI does).

    Examples:
        ```python
        guard = AffidavitStreamGuard(on_chunk=print_streaming_chunk, mode="guardrail")
        p.add_component("guard", guard)
        p.add_component("llm", OpenAIChatGenerator(streaming_callback=guard.streaming_callback))
        p.connect("retriever.documents", "guard.documents")
        p.connect("guard.documents", "prompt.documents")
        p.run({"retriever": {"query": q}, "guard": {"query": q}, "prompt": {"query": q}})
        ```
    """

    def __init__(
        self,
        on_chunk: Callable[[StreamingChunk], Any] | None = None,
        mode: EnforcementMode = "guardrail",
        allowlist: list[str] | None = None,
        max_age_days: int | None = None,
        min_compliance: float | None = None,
        settings: Settings | None = None,
    ) -> None:
        _AuditBase.__init__(self, mode, allowlist, max_age_days, min_compliance, settings)
        self.on_chunk = on_chunk
        self._guard: StreamGuard | None = None
        self.last_report: AuditReport | None = None

    def to_dict(self) -> dict[str, Any]:
        """The component's configuration, ``on_chunk`` by its import path."""
        data = _AuditBase.to_dict(self)
        data["init_parameters"]["on_chunk"] = (
            serialize_callable(self.on_chunk) if self.on_chunk is not None else None
        )
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        """The component `to_dict` described."""
        init = dict(data.get("init_parameters", {}))
        if init.get("on_chunk"):
            init["on_chunk"] = deserialize_callable(init["on_chunk"])
        return _audit_from_dict(cls, {**data, "init_parameters": init})

    @component.output_types(documents=list[Document])
    def run(self, query: str, documents: list[Document]) -> dict[str, Any]:
        """Arm the guard for this question and these documents; pass the documents on.

        Raises:
            InputError: a document without text.
        """
        self._guard = StreamGuard(self.auditor, query, document_chunks(documents))
        self.last_report = None
        return {"documents": documents}

    def _take(self, chunk: StreamingChunk) -> list[StreamingChunk]:
        guard = self._guard
        if guard is None:
            raise InputError(
                "a streamed token arrived before AffidavitStreamGuard ran: connect "
                "retriever.documents to guard.documents and guard.documents to the prompt"
            )
        shown = [guard.feed(chunk.content)] if chunk.content else []
        if chunk.finish_reason is not None:
            shown.append(guard.finish())
            self.last_report = guard.report
            self._guard = None
        return [
            StreamingChunk(content=t, meta=chunk.meta, component_info=chunk.component_info)
            for t in shown
            if t
        ]

    def streaming_callback(self, chunk: StreamingChunk) -> None:
        """The generator's ``streaming_callback``: holds tokens until their sentence is decided.

        Raises:
            InputError: the guard has not run for this question.
            EnforcementError: enforce mode and a sentence fails.
        """
        for out in self._take(chunk):
            if self.on_chunk is not None:
                self.on_chunk(out)

    async def astreaming_callback(self, chunk: StreamingChunk) -> None:
        """`streaming_callback` for async generators (decisions off the event loop)."""
        for out in await offload(self._take, chunk):
            if self.on_chunk is not None:
                result = self.on_chunk(out)
                if inspect.isawaitable(result):
                    await result


@component
class AffidavitEvaluator(_AuditBase):
    """Scores a dataset's answers with the audit, as Haystack's evaluators do.

    Inputs are parallel lists, one item per example: ``questions``, ``predicted_answers`` and
    the evidence, as ``contexts`` (texts) or ``documents`` (with their URLs and dates). Outputs:
    ``score`` (the mean compliance rate), ``individual_scores`` (each answer's compliance rate),
    ``trust_passed`` (each answer's verdict), ``results`` (one dict per answer: its scores and
    every unsupported claim and why) and ``reports``. It scores; it never enforces, whatever
    the settings' mode. Feed its output to Haystack's ``EvaluationRunResult`` with the other
    metrics.

    Args:
        allowlist: allowed source domains (default: the settings' ``audit.allowlist``).
        max_age_days: freshness limit (default: the settings').
        min_compliance: share of supported claims needed (default: the settings').
        settings: the effective settings (default: loaded as the CLI does).

    Examples:
        >>> out = AffidavitEvaluator().run(
        ...     questions=["When did the Forth Bridge open?"],
        ...     predicted_answers=["The Forth Bridge opened on 4 March 1925."],
        ...     contexts=[["The Forth Bridge opened on 4 March 1890."]])
        >>> out["score"], out["trust_passed"]
        (0.0, [False])
    """

    def __init__(
        self,
        allowlist: list[str] | None = None,
        max_age_days: int | None = None,
        min_compliance: float | None = None,
        settings: Settings | None = None,
    ) -> None:
        _AuditBase.__init__(self, "audit", allowlist, max_age_days, min_compliance, settings)

    def to_dict(self) -> dict[str, Any]:
        """The component's configuration (its mode is always ``audit``)."""
        data = _AuditBase.to_dict(self)
        data["init_parameters"].pop("mode", None)
        return data

    @component.output_types(
        score=float,
        individual_scores=list[float],
        trust_passed=list[bool],
        results=list[dict[str, Any]],
        reports=list[AuditReport],
    )
    def run(
        self,
        questions: list[str],
        predicted_answers: list[str],
        contexts: list[list[str]] | None = None,
        documents: list[list[Document]] | None = None,
    ) -> dict[str, Any]:
        """Audit every answer against its own evidence.

        Raises:
            InputError: lists of different lengths, or no evidence list at all.
        """
        n = len(questions)
        evidence: list[list[Chunk]]
        if documents is not None:
            evidence = [document_chunks(d) for d in documents]
        elif contexts is not None:
            evidence = [[Chunk(text=t) for t in c] for c in contexts]
        else:
            raise InputError("give the evidence: contexts (texts) or documents, one list each")
        if not (len(predicted_answers) == len(evidence) == n):
            raise InputError(
                f"questions ({n}), predicted_answers ({len(predicted_answers)}) and the "
                f"evidence ({len(evidence)}) must have one item per example"
            )
        reports = [
            audit_for_evaluation(self.auditor, q, e, a)
            for q, a, e in zip(questions, predicted_answers, evidence, strict=True)
        ]
        scores = [r.compliance_rate for r in reports]
        return {
            # an empty dataset has shown nothing to be supported
            "score": sum(scores) / n if n else 0.0,
            "individual_scores": scores,
            "trust_passed": [r.trust_passed for r in reports],
            "results": [
                {
                    "compliance": r.compliance_rate,
                    "trust_passed": r.trust_passed,
                    "feedback": report_feedback(r),
                }
                for r in reports
            ],
            "reports": reports,
        }


__all__ = [
    "AffidavitAuditor",
    "AffidavitEvaluator",
    "AffidavitRetriever",
    "AffidavitStreamGuard",
    "AffidavitVerifier",
    "document_chunks",
]
