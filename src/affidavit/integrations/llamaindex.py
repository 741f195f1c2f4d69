"""LlamaIndex integration (``pip install "affidavit[llamaindex]"``, ``llama-index-core``).

- `AffidavitRetriever`: a retriever over an affidavit store (``NodeWithScore`` results).
- `AuditEvaluator`: an evaluator that audits a ``Response`` against its own
  ``source_nodes`` (their text and source URLs), ``passing`` = the report's ``trust_passed``.
- `VerifiedQueryEngine`: wraps any query engine; every response is audited against its
  own ``source_nodes`` and the enforcement mode applies (guardrail: failing claims withheld from
  ``response.response``; enforce: raises ``EnforcementError``). The report is attached as
  ``response.metadata["affidavit_report"]``. A streaming engine stays streaming: each sentence
  is yielded once it is decided (`StreamGuard`).
- `SourcePolicyPostprocessor`: drops nodes whose source fails the allowlist or the
  freshness policy before they reach the prompt.
- `AffidavitLLM`: affidavit's generator (the embedded llama.cpp model, an
  OpenAI-compatible server, or the scripted fake) as a LlamaIndex LLM.

Examples:
    >>> from llama_index.core.schema import NodeWithScore, TextNode
    >>> nodes = [NodeWithScore(node=TextNode(text="Rome is in Italy.",
    ...                        metadata={"url": "https://ok.org/rome"})),
    ...          NodeWithScore(node=TextNode(text="Rome is in Spain.",
    ...                        metadata={"url": "https://bad.net/x"}))]
    >>> policy = SourcePolicyPostprocessor(settings={"allowlist": ["ok.org"]})
    >>> kept = policy.postprocess_nodes(nodes)
    >>> len(kept), kept[0].node.metadata["url"]
    (1, 'https://ok.org/rome')
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Generator, Sequence
from datetime import date
from typing import Any, Literal

from affidavit.core.errors import MissingDependencyError

try:
    from llama_index.core.base.base_query_engine import BaseQueryEngine
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.base.llms.types import (
        CompletionResponse,
        CompletionResponseGen,
        LLMMetadata,
    )
    from llama_index.core.base.response.schema import (
        RESPONSE_TYPE,
        AsyncStreamingResponse,
        PydanticResponse,
        Response,
        StreamingResponse,
    )
    from llama_index.core.bridge.pydantic import (
        BaseModel,
        ConfigDict,
        Field,
        PrivateAttr,
        field_serializer,
    )
    from llama_index.core.evaluation import BaseEvaluator, EvaluationResult
    from llama_index.core.llms.callbacks import llm_completion_callback
    from llama_index.core.llms.custom import CustomLLM
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError(
        "llama-index-core", "llamaindex", purpose="the LlamaIndex integration"
    ) from exc

from affidavit.audit.auditor import Auditor, ConfigLike, resolve_settings
from affidavit.audit.stream import StreamGuard
from affidavit.concurrency import offload
from affidavit.core.report import AuditReport, BlockedSource
from affidavit.core.retrieval import SearchFilters
from affidavit.core.settings import Settings
from affidavit.core.types import Chunk
from affidavit.integrations._common import (
    StoreSearch,
    audit_for_evaluation,
    chunk_from,
    hit_metadata,
    make_auditor,
    report_feedback,
    search_filters,
    settings_to_dict,
    shown_answer,
)
from affidavit.policy.sources import assess_freshness, check_source

logger = logging.getLogger(__name__)

REPORT_KEY = "affidavit_report"
"""``response.metadata`` key the `VerifiedQueryEngine` attaches the report under."""


class AffidavitRetriever(BaseRetriever):
    """A LlamaIndex retriever over an affidavit store.

    Each node's metadata carries the chunk's provenance (``url``, ``doc_id``, ``chunk_id``,
    ``title``, ``score``, ``rank``) and its own metadata; its id is the chunk id.

    Args:
        store_path: the store folder (default ``settings.store.path``).
        k: nodes returned.
        mode: bm25 / dense / hybrid (default ``settings.retrieve.mode``).
        granularity: what hybrid search fuses and returns: passage / document / chunk
            (default ``settings.retrieve.granularity``; see the LangChain retriever).
        filters: metadata filters applied before ranking: a
            `SearchFilters` or its fields as a dict.
        settings: the effective settings.

    Examples:
        >>> nodes = AffidavitRetriever(".affidavit", k=3).retrieve("Who?")  # doctest: +SKIP
    """

    def __init__(
        self,
        store_path: str | None = None,
        *,
        k: int = 5,
        mode: Literal["bm25", "dense", "hybrid"] | None = None,
        granularity: Literal["passage", "document", "chunk"] | None = None,
        filters: SearchFilters | dict[str, Any] | None = None,
        settings: Settings | None = None,
        **kwargs: Any,
    ) -> None:
        self._search = StoreSearch(settings, store_path, mode, granularity)
        self._filters = search_filters(filters)
        self.k = k
        super().__init__(**kwargs)

    def _nodes(self, query: str) -> list[NodeWithScore]:
        return [
            NodeWithScore(
                node=TextNode(text=h.chunk.text, id_=h.chunk.id, metadata=hit_metadata(h)),
                score=h.score,
            )
            for h in self._search.search(query, k=self.k, filters=self._filters)
        ]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._nodes(query_bundle.query_str)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await offload(self._nodes, query_bundle.query_str)


def node_chunks(nodes: Sequence[NodeWithScore | Any]) -> list[Chunk]:
    """Chunks for LlamaIndex nodes: text, source URL from ``url``/``source``/``file_path``
    metadata, and the rest of the metadata (dates for the freshness policy).

    Examples:
        >>> node_chunks([NodeWithScore(node=TextNode(text="x", metadata={"url": "https://a.org"}))])[0].url
        'https://a.org'
    """
    out = []
    for n in nodes:
        node = n.node if isinstance(n, NodeWithScore) else n
        out.append(chunk_from(node.get_content(), node.metadata, getattr(node, "ref_doc_id", None)))
    return out


def _text(response: Any) -> str:
    if isinstance(response, StreamingResponse):
        response = response.get_response()
    if isinstance(response, PydanticResponse):
        return str(response.response.model_dump_json() if response.response else "")
    return str(response.response or "")


class AuditEvaluationResult(EvaluationResult):
    """An `EvaluationResult` with the full audit report."""

    report: AuditReport | None = Field(default=None, description="The affidavit audit report.")


class AuditEvaluator(BaseEvaluator):
    """Audits a response against its source nodes (or given contexts).

    ``passing`` is the report's ``trust_passed``, ``score`` its compliance rate, ``feedback``
    names every unsupported claim and why; ``report`` holds the whole report.

    Args:
        settings: audit settings (Settings, AuditSettings, a dict, or an `Auditor`; default:
            loaded as the CLI does, from ``affidavit.toml`` and the environment).

    Examples:
        >>> from llama_index.core.base.response.schema import Response
        >>> from llama_index.core.schema import NodeWithScore, TextNode
        >>> r = Response(response="Rome is in Spain.",
        ...              source_nodes=[NodeWithScore(node=TextNode(text="Rome is in Italy."))])
        >>> result = AuditEvaluator().evaluate_response(query="Where is Rome?", response=r)
        >>> result.passing
        False
    """

    def __init__(self, settings: ConfigLike | Auditor = None) -> None:
        self.auditor = make_auditor(settings)

    def _get_prompts(self) -> dict[str, Any]:
        return {}

    def _update_prompts(self, prompts: dict[str, Any]) -> None:
        del prompts

    def _result(self, query: str | None, chunks: list[Chunk], response: str) -> EvaluationResult:
        report = audit_for_evaluation(self.auditor, query or "", chunks, response)
        return AuditEvaluationResult(
            query=query,
            contexts=[c.text for c in chunks],
            response=response,
            passing=report.trust_passed,
            score=report.compliance_rate,
            feedback=report_feedback(report),
            report=report,
        )

    async def aevaluate(
        self,
        query: str | None = None,
        response: str | None = None,
        contexts: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> EvaluationResult:
        """Audit ``response`` against plain-text ``contexts`` (no source URLs)."""
        chunks = [Chunk(text=t) for t in contexts or []]
        return await offload(self._result, query, chunks, response or "")

    def evaluate_response(
        self, query: str | None = None, response: Response | None = None, **kwargs: Any
    ) -> EvaluationResult:
        """Audit a ``Response`` against its own ``source_nodes``, URLs and dates included."""
        if response is None:
            return self._result(query, [], "")
        return self._result(query, node_chunks(response.source_nodes), _text(response))

    async def aevaluate_response(
        self, query: str | None = None, response: Response | None = None, **kwargs: Any
    ) -> EvaluationResult:
        """`evaluate_response` off the event loop."""
        result: EvaluationResult = await offload(self.evaluate_response, query, response)
        return result


class VerifiedQueryEngine(BaseQueryEngine):
    """Wraps a query engine: every response is audited against its own ``source_nodes``.

    Args:
        query_engine: the engine to wrap.
        settings: audit settings (Settings, AuditSettings, a dict, or an `Auditor`; default:
            loaded as the CLI does); ``mode`` guardrail withholds failing claims, enforce
            raises ``EnforcementError``.

    Examples:
        >>> engine = VerifiedQueryEngine(  # doctest: +SKIP
        ...     index.as_query_engine(), {"mode": "guardrail"})
        >>> response = engine.query("When did the Forth Bridge open?")  # doctest: +SKIP
        >>> response.metadata["affidavit_report"].trust_passed  # doctest: +SKIP
    """

    def __init__(self, query_engine: BaseQueryEngine, settings: ConfigLike | Auditor = None):
        self._engine = query_engine
        self.auditor = make_auditor(settings)
        super().__init__(callback_manager=query_engine.callback_manager)

    def _get_prompt_modules(self) -> dict[str, Any]:
        return {"query_engine": self._engine}

    def _verified(self, query: str, response: RESPONSE_TYPE) -> RESPONSE_TYPE:
        if isinstance(response, StreamingResponse):
            return self._guarded_stream(query, response)
        draft = _text(response)
        nodes = list(response.source_nodes)
        report = self.auditor.audit(query, node_chunks(nodes), draft)
        return Response(
            response=shown_answer(report, draft),
            source_nodes=nodes,
            metadata={**(response.metadata or {}), REPORT_KEY: report, "affidavit_draft": draft},
        )

    def _guarded_stream(self, query: str, response: StreamingResponse) -> StreamingResponse:
        """A streaming response stays streaming: each sentence is yielded once the guard has
        decided it; the report is attached to ``metadata`` when the stream ends."""
        nodes = list(response.source_nodes)
        guard = StreamGuard(self.auditor, query, node_chunks(nodes))
        metadata: dict[str, Any] = dict(response.metadata or {})

        def gen() -> Generator[str, None, None]:
            for token in response.response_gen:
                shown = guard.feed(token)
                if shown:
                    yield shown
            tail = guard.finish()
            metadata.update({REPORT_KEY: guard.report, "affidavit_draft": guard.text})
            if tail:
                yield tail

        return StreamingResponse(response_gen=gen(), source_nodes=nodes, metadata=metadata)

    def _aguarded_stream(
        self, query: str, response: AsyncStreamingResponse
    ) -> AsyncStreamingResponse:
        """`_guarded_stream` for an async streaming response (decisions off the loop)."""
        nodes = list(response.source_nodes)
        guard = StreamGuard(self.auditor, query, node_chunks(nodes))
        metadata: dict[str, Any] = dict(response.metadata or {})

        async def agen() -> AsyncGenerator[str, None]:
            async for token in response.async_response_gen():
                shown = await offload(guard.feed, token)
                if shown:
                    yield shown
            tail = await offload(guard.finish)
            metadata.update({REPORT_KEY: guard.report, "affidavit_draft": guard.text})
            if tail:
                yield tail

        return AsyncStreamingResponse(response_gen=agen(), source_nodes=nodes, metadata=metadata)

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        response = self._engine.query(query_bundle)
        return self._verified(query_bundle.query_str, response)

    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        response = await self._engine.aquery(query_bundle)
        if isinstance(response, AsyncStreamingResponse):
            return self._aguarded_stream(query_bundle.query_str, response)
        if isinstance(response, StreamingResponse):
            return self._guarded_stream(query_bundle.query_str, response)
        verified: RESPONSE_TYPE = await offload(self._verified, query_bundle.query_str, response)
        return verified


class SourcePolicyPostprocessor(BaseNodePostprocessor):
    """Drops nodes whose source fails the allowlist or the freshness policy.

    Allowlist: ``audit.allowlist`` / ``require_url`` as the audit applies them. Freshness (when
    ``audit.max_age_days`` is set): a stale source is dropped; an undated one too when
    ``stale_action`` is ``fail`` (fail closed: its age cannot be shown). What was dropped, and
    why, is kept in `last_dropped`.

    Attributes:
        settings: audit settings (Settings, AuditSettings or a dict; default: loaded as the
            CLI does, from ``affidavit.toml`` and the environment).
        today: the date ages are measured on (default: today, UTC).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    settings: Any = None
    today: date | None = None
    _audit: Any = PrivateAttr(default=None)
    _dropped: list[BlockedSource | dict[str, Any]] = PrivateAttr(default_factory=list)

    def model_post_init(self, context: Any, /) -> None:
        """Validate the settings now: an invalid value fails at construction."""
        from affidavit.core.settings import load_settings

        # no settings: as the CLI loads them (an allowlist in affidavit.toml holds here too)
        self._audit, _ = resolve_settings(
            self.settings if self.settings is not None else load_settings()
        )

    @classmethod
    def class_name(cls) -> str:
        """The LlamaIndex class name."""
        return "AffidavitSourcePolicyPostprocessor"

    @field_serializer("settings")
    def _settings_data(self, value: Any) -> Any:
        # JSON data, so that to_json / from_json round-trip the whole policy (a Settings object
        # held paths json.dumps refused); secrets are left out and come back from the environment
        if isinstance(value, Settings):
            return settings_to_dict(value)
        if isinstance(value, BaseModel):
            return value.model_dump(mode="json")
        return value

    @field_serializer("today")
    def _today_data(self, value: date | None) -> str | None:
        return value.isoformat() if value is not None else None

    @property
    def last_dropped(self) -> list[BlockedSource | dict[str, Any]]:
        """What the last call dropped: a BlockedSource, or ``{"chunk_id", "reason"}`` for age."""
        return list(self._dropped)

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        s = self._audit
        chunks = node_chunks(nodes)
        dropped: list[BlockedSource | dict[str, Any]] = []
        out = []
        for node, chunk in zip(nodes, chunks, strict=True):
            # decided node by node: chunk ids come from metadata and may repeat, so a blocked
            # node with an allowed node's id must not pass on that id
            blocked = check_source(chunk, s)
            if blocked is not None:
                dropped.append(blocked)
                continue
            if s.max_age_days is not None:
                f = assess_freshness(chunk, s, self.today)
                if f.status == "stale" or (f.status == "unknown" and s.stale_action == "fail"):
                    dropped.append({"chunk_id": chunk.id, "reason": f"source age {f.status}"})
                    continue
            out.append(node)
        if dropped:
            logger.info("nodes dropped by the source policy", extra={"dropped": len(dropped)})
        self._dropped = dropped
        return out


class AffidavitLLM(CustomLLM):
    """Affidavit's generator as a LlamaIndex LLM (offline with the embedded model).

    Attributes:
        generator: an affidavit `Generator` (e.g. the scripted
            `FakeGenerator`); when None, the one
            ``settings.generate`` names (the embedded llama.cpp model needs ``affidavit[llm]``).
        settings: the effective settings.

    Examples:
        >>> from affidavit.testing.fake_llm import FakeGenerator
        >>> AffidavitLLM(generator=FakeGenerator(["Hi."])).complete("Hello").text
        'Hi.'
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    generator: Any = None
    settings: Settings | None = None
    context_window: int = 4096
    num_output: int = 256

    def model_post_init(self, context: Any, /) -> None:
        """Build the configured generator when none was given."""
        if self.generator is None:
            from affidavit.core.settings import load_settings
            from affidavit.generate.factory import make_generator

            s = self.settings or load_settings()
            self.generator = make_generator(s.generate, cache_dir=s.resolved_home() / "models")

    @classmethod
    def class_name(cls) -> str:
        """The LlamaIndex class name."""
        return "AffidavitLLM"

    @property
    def metadata(self) -> LLMMetadata:
        """Context size and output budget."""
        return LLMMetadata(
            context_window=self.context_window, num_output=self.num_output, model_name="affidavit"
        )

    def _stream(self, prompt: str) -> Any:
        from affidavit.core.types import Message

        return self.generator.stream([Message(role="user", content=prompt)])

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """The whole completion."""
        from affidavit.core.errors import GenerationTruncatedError

        parts: list[str] = []
        extra: dict[str, Any] = {"finish_reason": "stop"}
        try:
            parts.extend(self._stream(prompt))
        except GenerationTruncatedError as exc:
            # a reply cut at its token budget: the text as far as it went, marked as cut
            extra = {"finish_reason": str(exc.context.get("reason", "length"))}
        return CompletionResponse(text="".join(parts), additional_kwargs=extra)

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        """The completion, piece by piece."""

        def gen() -> CompletionResponseGen:
            from affidavit.core.errors import GenerationTruncatedError

            text = ""
            try:
                for piece in self._stream(prompt):
                    text += piece
                    yield CompletionResponse(text=text, delta=piece)
            except GenerationTruncatedError as exc:
                # cut at its token budget: a last, empty piece says so
                reason = str(exc.context.get("reason", "length"))
                yield CompletionResponse(
                    text=text, delta="", additional_kwargs={"finish_reason": reason}
                )

        return gen()


__all__ = [
    "REPORT_KEY",
    "AffidavitLLM",
    "AffidavitRetriever",
    "AuditEvaluationResult",
    "AuditEvaluator",
    "SourcePolicyPostprocessor",
    "VerifiedQueryEngine",
    "node_chunks",
]
