"""LangChain integration (``pip install "affidavit[langchain]"``, ``langchain-core``).

- `AffidavitRetriever`: a ``BaseRetriever`` over an affidavit store.
- `AuditRunnable`: a ``Runnable`` that audits a chain's answer against the documents the
  chain really retrieved, taken from the chain's own output (a ``context`` key) or, when it
  wraps the chain, from the chain's retriever callbacks; honours the enforcement modes (audit:
  report attached; guardrail: failing claims withheld from ``answer``; enforce: raises
  `EnforcementError` carrying the report).
- `AuditCallbackHandler`: audits every top-level run it sees and records the reports.
- `AuditRunEvaluator`: scores a dataset's answers (a LangSmith run evaluator, and a plain
  ``(inputs, outputs, reference_outputs)`` evaluator function).
- `AffidavitChatModel`: affidavit's own generator (the embedded llama.cpp model, or any
  OpenAI-compatible server) as a LangChain chat model, so an example chain runs offline.

Examples:
    >>> from langchain_core.documents import Document
    >>> audited = AuditRunnable(settings={"mode": "guardrail"}).invoke({
    ...     "question": "When did the Forth Bridge open?",
    ...     "context": [Document(page_content="The Forth Bridge opened on 4 March 1890.",
    ...                          metadata={"source": "https://en.wikipedia.org/wiki/Forth_Bridge"})],
    ...     "answer": "The Forth Bridge opened on 4 March 1925."})
    >>> audited["answer"], audited["report"].trust_passed
    ('[withheld: not supported by the sources]', False)
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any, Literal
from uuid import UUID

from affidavit.core.errors import InputError, MissingDependencyError

try:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForChainRun,
        BaseCallbackHandler,
        BaseCallbackManager,
        CallbackManagerForChainRun,
        CallbackManagerForLLMRun,
        CallbackManagerForRetrieverRun,
    )
    from langchain_core.documents import Document
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import Runnable, RunnableConfig
    from langchain_core.runnables.config import patch_config
    from langchain_core.runnables.utils import AddableDict
    from langsmith.evaluation import EvaluationResult, EvaluationResults, RunEvaluator
    from pydantic import ConfigDict, PrivateAttr
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError(
        "langchain-core", "langchain", purpose="the LangChain integration"
    ) from exc

from affidavit.audit.auditor import Auditor, ConfigLike
from affidavit.audit.stream import StreamGuard
from affidavit.concurrency import offload
from affidavit.core.report import AuditReport
from affidavit.core.retrieval import SearchFilters
from affidavit.core.settings import Settings
from affidavit.core.types import Chunk, Message
from affidavit.integrations._common import (
    StoreSearch,
    audit_for_evaluation,
    chunk_from,
    hit_metadata,
    make_auditor,
    report_feedback,
    search_filters,
    shown_answer,
)

# input keys a chain commonly carries its question under, in order of preference
QUESTION_KEYS = ("question", "query", "input")


class AffidavitRetriever(BaseRetriever):
    """A LangChain retriever over an affidavit store.

    Each document's metadata carries the chunk's provenance (``url``, ``doc_id``, ``chunk_id``,
    ``title``, ``score``, ``rank``) and its own metadata (dates for the freshness policy).

    Attributes:
        store_path: the store folder (default ``settings.store.path``).
        k: documents returned.
        mode: bm25 / dense / hybrid (default ``settings.retrieve.mode``).
        granularity: what hybrid search fuses and returns: ``passage`` (at most
            ``retrieve.per_document`` chunks of a document, neighbours merged), ``document``
            (one best chunk per document) or ``chunk`` (plain chunk fusion); default
            ``settings.retrieve.granularity``.
        filters: metadata filters applied before ranking: a
            `SearchFilters` or its fields as a dict
            (``domains``, ``date_from``, ``date_to``, ``doc_ids``).
        settings: the effective settings (default: loaded as the CLI does).

    Examples:
        >>> retriever = AffidavitRetriever(store_path=".affidavit", k=3, mode="bm25",
        ...                                granularity="document")
        >>> docs = retriever.invoke("When did the Forth Bridge open?")  # doctest: +SKIP
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store_path: str | None = None
    k: int = 5
    mode: Literal["bm25", "dense", "hybrid"] | None = None
    granularity: Literal["passage", "document", "chunk"] | None = None
    filters: SearchFilters | dict[str, Any] | None = None
    settings: Settings | None = None
    _search: StoreSearch = PrivateAttr()
    _filters: SearchFilters | None = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        """Validate now, open nothing yet: the store is opened on the first query."""
        self._search = StoreSearch(self.settings, self.store_path, self.mode, self.granularity)
        self._filters = search_filters(self.filters)

    def _documents(self, query: str) -> list[Document]:
        return [
            Document(page_content=h.chunk.text, metadata=hit_metadata(h), id=h.chunk.id)
            for h in self._search.search(query, k=self.k, filters=self._filters)
        ]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return self._documents(query)

    async def _aget_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        return await offload(self._documents, query)


def document_chunks(documents: Sequence[Any]) -> list[Chunk]:
    """Chunks for a chain's context: LangChain ``Document``s (source URL from ``url``/``source``
    metadata), chunk dicts (``{"text", "url", "metadata"}``), ``Chunk`` models or plain strings.

    Raises:
        InputError: an item is none of these.

    Examples:
        >>> document_chunks([Document(page_content="x", metadata={"source": "https://a.org"})])[0].url
        'https://a.org'
    """
    out: list[Chunk] = []
    for i, d in enumerate(documents):
        if isinstance(d, Document):
            out.append(chunk_from(d.page_content, d.metadata))
        elif isinstance(d, Chunk):
            out.append(d)
        elif isinstance(d, Mapping) and isinstance(d.get("text"), str):
            url, meta = d.get("url"), d.get("metadata")
            if url is not None and not isinstance(url, str):
                raise InputError(f"context[{i}].url must be a string, not {type(url).__name__}")
            if meta is not None and not isinstance(meta, Mapping):
                raise InputError(
                    f"context[{i}].metadata must be an object, not {type(meta).__name__}"
                )
            chunk = chunk_from(d["text"], meta, None)
            out.append(chunk.model_copy(update={"url": url}) if url else chunk)
        elif isinstance(d, str):
            out.append(Chunk(text=d))
        else:
            raise InputError(
                f"context[{i}] is not a Document, a chunk dict, a Chunk or a string: "
                f"{type(d).__name__}"
            )
    return out


def answer_text(output: Any, answer_key: str = "answer") -> str:
    """The answer in a chain's output: a string, a message's text, or ``output[answer_key]``.

    Raises:
        InputError: no answer can be found.

    Examples:
        >>> answer_text(AIMessage(content="Hi."))
        'Hi.'
    """
    if isinstance(output, str):
        return output
    if isinstance(output, BaseMessage):
        return output.text if isinstance(output.text, str) else str(output.text())
    if isinstance(output, Mapping) and answer_key in output:
        return answer_text(output[answer_key], answer_key)
    raise InputError(
        f"cannot find the answer in the chain's output ({type(output).__name__}); expected a "
        f"string, a message, or a dict with {answer_key!r}"
    )


def question_text(value: Any, question_key: str = "question") -> str:
    """The question in a chain's input or output (a string, or one of the usual keys)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        for key in (question_key, *QUESTION_KEYS):
            if isinstance(value.get(key), str):
                return str(value[key])
    return ""


class _Collector(BaseCallbackHandler):
    """Collects the documents every retriever returned during one chain run."""

    def __init__(self) -> None:
        self.documents: list[Document] = []
        self._lock = threading.Lock()

    def on_retriever_end(
        self, documents: Sequence[Document], *, run_id: UUID, **kwargs: Any
    ) -> None:
        with self._lock:
            self.documents.extend(documents)


def _with_handler(config: RunnableConfig, handler: BaseCallbackHandler) -> RunnableConfig:
    callbacks = config.get("callbacks")
    if callbacks is None:
        merged: Any = [handler]
    elif isinstance(callbacks, BaseCallbackManager):
        merged = callbacks.copy()
        merged.add_handler(handler, inherit=True)
    else:
        merged = [*callbacks, handler]
    return {**config, "callbacks": merged}


def _dedupe(docs: Sequence[Any]) -> list[Any]:
    """The documents without exact repeats (same text *and* same metadata): the same text from
    two sources stays two sources (issue 25.6: keyed on chunk_id/source alone, a passage quoted
    by two URLs collapsed into one, losing provenance). Any form the context may take
    (``Document``, chunk dict, ``Chunk``, string) is compared by what it says and where from."""
    seen: set[tuple[str, str]] = set()
    out = []
    for d in docs:
        key = _identity(d)
        if key is None or key not in seen:
            if key is not None:
                seen.add(key)
            out.append(d)
    return out


def _identity(d: Any) -> tuple[str, str] | None:
    if isinstance(d, Document):
        return d.page_content, json.dumps(d.metadata, sort_keys=True, default=str)
    if isinstance(d, Chunk):
        return d.text, d.model_dump_json()
    if isinstance(d, str):
        return d, ""
    if isinstance(d, Mapping):
        return str(d.get("text")), json.dumps(dict(d), sort_keys=True, default=str)
    return None  # not a context item: document_chunks names it


def _taken_report(outputs: Any, auditor: Auditor) -> AuditReport | None:
    """The report an `AuditRunnable` attached to ``outputs``, when it was made under
    ``auditor``'s audit settings (the mode aside); None when there is none or it was made under
    others (a looser allowlist, threshold or freshness policy): then it is audited again."""
    if not (isinstance(outputs, Mapping) and isinstance(outputs.get("report"), AuditReport)):
        return None
    report: AuditReport = outputs["report"]
    own = auditor.settings.model_dump(mode="json")
    return report if {**report.settings, "mode": None} == {**own, "mode": None} else None


def _audited_answer(outputs: Any, answer_key: str) -> str:
    """The answer an audit reads in a run's output: an `AuditRunnable`'s draft (its ``answer``
    may be the guarded one), otherwise the answer as `answer_text` finds it."""
    if (
        isinstance(outputs, Mapping)
        and isinstance(outputs.get("report"), AuditReport)
        and isinstance(outputs.get("draft"), str)
    ):
        return str(outputs["draft"])
    return answer_text(outputs, answer_key)


class AuditRunnable(Runnable[Any, dict[str, Any]]):
    """Audits a chain's answer against the documents the chain retrieved.

    Two ways to use it:

    - after a chain whose output is a dict holding the answer and its documents (the usual
      ``RunnableParallel({"context": retriever, "question": ...}).assign(answer=...)``):
      ``chain | AuditRunnable()``;
    - around any chain: ``AuditRunnable(chain)`` runs the chain, collects every document its
      retrievers returned through the callbacks, and audits the chain's answer (a string, a
      message, or ``output["answer"]``) against them.

    The output is a dict: ``answer`` (what the enforcement mode lets through: the guarded
    answer in guardrail mode), ``draft`` (the chain's answer), ``question``, ``context`` (the
    documents), ``report`` (the `AuditReport`) and
    ``trust_passed``. In enforce mode a failing audit raises ``EnforcementError``.

    Args:
        chain: the chain to wrap (None: audit the input as described above).
        settings: audit settings (Settings, AuditSettings, a dict, or an `Auditor`; default:
            loaded as the CLI does, from ``affidavit.toml`` and the environment).
        question_key: the input (or output) key holding the question.
        answer_key: the output key holding the answer.
        context_key: the output key holding the documents.
    """

    def __init__(
        self,
        chain: Runnable[Any, Any] | None = None,
        *,
        settings: ConfigLike | Auditor = None,
        question_key: str = "question",
        answer_key: str = "answer",
        context_key: str = "context",
    ) -> None:
        self.chain = chain
        self.auditor = make_auditor(settings)
        self.question_key = question_key
        self.answer_key = answer_key
        self.context_key = context_key

    def _audit(self, question: str, output: Any, docs: Sequence[Document]) -> dict[str, Any]:
        draft = answer_text(output, self.answer_key)
        if isinstance(output, Mapping) and isinstance(output.get(self.context_key), list):
            docs = _dedupe([*output[self.context_key], *docs])
        docs = list(docs)
        report = self.auditor.audit(question, document_chunks(docs), draft)
        return {
            "question": question,
            "answer": shown_answer(report, draft),
            "draft": draft,
            "context": docs,
            "report": report,
            "trust_passed": report.trust_passed,
        }

    def invoke(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        """Run (the chain and) the audit; see the class docstring.

        The audit is a run of its own in LangChain's callbacks and traces, with the wrapped
        chain's runs as its children.

        Raises:
            InputError: the answer or the documents cannot be found.
            EnforcementError: enforce mode and the audit failed (``exc.report``).
        """
        result: dict[str, Any] = self._call_with_config(self._run, input, config, **kwargs)
        return result

    def _run(
        self,
        input: Any,
        run_manager: CallbackManagerForChainRun,
        config: RunnableConfig,
        **kwargs: Any,
    ) -> dict[str, Any]:
        if self.chain is None:
            return self._audit(question_text(input, self.question_key), input, [])
        collector = _Collector()
        child = patch_config(config, callbacks=run_manager.get_child())
        output = self.chain.invoke(input, _with_handler(child, collector), **kwargs)
        question = question_text(input, self.question_key) or question_text(output)
        return self._audit(question, output, collector.documents)

    async def ainvoke(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        """`invoke` with the chain awaited and the audit off the event loop."""
        result: dict[str, Any] = await self._acall_with_config(self._arun, input, config, **kwargs)
        return result

    async def _arun(
        self,
        input: Any,
        run_manager: AsyncCallbackManagerForChainRun,
        config: RunnableConfig,
        **kwargs: Any,
    ) -> dict[str, Any]:
        if self.chain is None:
            q = question_text(input, self.question_key)
            result: dict[str, Any] = await offload(self._audit, q, input, [])
            return result
        collector = _Collector()
        child = patch_config(config, callbacks=run_manager.get_child())
        output = await self.chain.ainvoke(input, _with_handler(child, collector), **kwargs)
        question = question_text(input, self.question_key) or question_text(output)
        result = await offload(self._audit, question, output, collector.documents)
        return result

    # --- streaming: every sentence held back until the guard has decided it ----------------

    def stream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[dict[str, Any]]:
        """Stream the answer through the guard, sentence by sentence.

        Yields dict chunks that add up to `invoke`'s output: ``{"answer": piece}`` for
        each decided sentence (what the mode shows of it; nothing of a sentence is yielded
        before it is decided), then one chunk with ``question``, ``context``, ``draft``,
        ``report`` and ``trust_passed``. Enforce mode raises ``EnforcementError`` at the first
        failing sentence. The documents are those known when the answer's first token arrives
        (the chain's ``context``, or its retrievers' through the callbacks).

        Examples:
            >>> out = AuditRunnable(settings={"mode": "guardrail"}).stream({
            ...     "question": "When did it open?", "answer": "It opened in 1890. It is red.",
            ...     "context": ["The Forth Bridge opened in 1890."]})
            >>> [c.get("answer") for c in out][:2]
            ['It opened in 1890.', ' [withheld: not supported by the sources]']
        """
        yield from self.transform(iter([input]), config, **kwargs)

    def transform(
        self, input: Iterator[Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[dict[str, Any]]:
        """`stream` over an upstream chain's streamed output (``chain | AuditRunnable()``)."""
        yield from self._transform_stream_with_config(input, self._transform, config, **kwargs)

    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[dict[str, Any]]:
        """`stream` with the chain awaited and every decision off the event loop."""

        async def one() -> AsyncIterator[Any]:
            yield input

        async for chunk in self.atransform(one(), config, **kwargs):
            yield chunk

    async def atransform(
        self, input: AsyncIterator[Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[dict[str, Any]]:
        """`transform` for async streams."""
        async for chunk in self._atransform_stream_with_config(
            input, self._atransform, config, **kwargs
        ):
            yield chunk

    def _transform(
        self,
        inputs: Iterator[Any],
        run_manager: CallbackManagerForChainRun,
        config: RunnableConfig,
        **kwargs: Any,
    ) -> Iterator[dict[str, Any]]:
        stream = _Stream(self)
        if self.chain is None:
            source: Iterator[Any] = inputs
        else:
            stream.chain_input = _merged(list(inputs))
            child = patch_config(config, callbacks=run_manager.get_child())
            source = self.chain.stream(
                stream.chain_input, _with_handler(child, stream.collector), **kwargs
            )
        for chunk in source:
            piece = stream.take(chunk)
            if piece:
                shown = stream.guard().feed(piece)
                if shown:
                    yield AddableDict(answer=shown)
        yield from (AddableDict(c) for c in stream.finish())

    async def _atransform(
        self,
        inputs: AsyncIterator[Any],
        run_manager: AsyncCallbackManagerForChainRun,
        config: RunnableConfig,
        **kwargs: Any,
    ) -> AsyncIterator[dict[str, Any]]:
        stream = _Stream(self)
        if self.chain is None:
            source: AsyncIterator[Any] = inputs
        else:
            stream.chain_input = _merged([x async for x in inputs])
            child = patch_config(config, callbacks=run_manager.get_child())
            source = self.chain.astream(
                stream.chain_input, _with_handler(child, stream.collector), **kwargs
            )
        async for chunk in source:
            piece = stream.take(chunk)
            if piece:
                guard = await offload(stream.guard)
                shown = await offload(guard.feed, piece)
                if shown:
                    yield AddableDict(answer=shown)
        for c in await offload(stream.finish):
            yield AddableDict(c)


def _merged(chunks: list[Any]) -> Any:
    """Input chunks added up (a streamed dict's parts), or the last one when they do not add."""
    out: Any = None
    for c in chunks:
        try:
            out = c if out is None else out + c
        except TypeError:
            out = c
    return out


class _Stream:
    """One streamed run of an `AuditRunnable`: the answer's pieces, the other keys of
    the chain's output, and the guard, built when the answer begins."""

    def __init__(self, runnable: AuditRunnable) -> None:
        self.runnable = runnable
        self.collector = _Collector()
        self.chain_input: Any = None
        self.other: dict[str, Any] = {}
        self.seen_answer = False
        self._guard: StreamGuard | None = None
        self._docs: list[Any] = []

    def take(self, chunk: Any) -> str:
        """The answer's piece in one chunk of the chain's output ('' when it holds none)."""
        r = self.runnable
        if isinstance(chunk, str | BaseMessage):
            self.seen_answer = True
            return answer_text(chunk)
        if not isinstance(chunk, Mapping):
            raise InputError(
                f"cannot stream the answer from a chunk of type {type(chunk).__name__}; expected "
                f"a string, a message, or a dict with {r.answer_key!r}"
            )
        piece = ""
        for key, value in chunk.items():
            if key == r.answer_key:
                self.seen_answer = True
                piece += answer_text(value)
            elif key in self.other:
                try:
                    self.other[key] = self.other[key] + value
                except TypeError:
                    self.other[key] = value
            else:
                self.other[key] = value
        return piece

    def question(self) -> str:
        r = self.runnable
        return question_text(self.chain_input, r.question_key) or question_text(
            self.other, r.question_key
        )

    def guard(self) -> StreamGuard:
        """The guard, over the documents known now (built once)."""
        if self._guard is None:
            ctx = self.other.get(self.runnable.context_key)
            self._docs = _dedupe(
                [*(ctx if isinstance(ctx, list) else []), *self.collector.documents]
            )
            self._guard = StreamGuard(
                self.runnable.auditor, self.question(), document_chunks(self._docs)
            )
        return self._guard

    def finish(self) -> list[dict[str, Any]]:
        """The last chunks: the last sentence, then the report and the rest of the output.

        Raises:
            InputError: the chain's output held no answer (as `AuditRunnable.invoke`).
            EnforcementError: enforce mode and the answer fails.
        """
        if not self.seen_answer:
            answer_text(self.other, self.runnable.answer_key)  # raises the invoke's InputError
        g = self.guard()
        tail = g.finish()
        report = g.report
        if report is None:  # pragma: no cover - finish() always sets it
            raise InputError("the stream guard finished without a report")
        return [
            {"answer": tail},
            {
                "question": self.question(),
                "draft": g.text,
                "context": self._docs,
                "report": report,
                "trust_passed": report.trust_passed,
            },
        ]


class AuditCallbackHandler(BaseCallbackHandler):
    """Audits every top-level chain run and records the report.

    The question comes from the run's input, the documents from every retriever that ran
    inside it, the answer from its output. A run is top-level when the handler saw no parent
    of it start (a handler given to a nested chain audits that chain's runs). An
    `AuditRunnable`'s output is taken with its report when that was made under the handler's
    audit settings (the mode aside), and its draft audited again otherwise. Reports are
    appended to `reports` (and passed to ``on_report`` when given). The handler never changes
    what the chain returns; in enforce mode it raises ``EnforcementError`` from the callback,
    which LangChain propagates (``raise_error``), and ``InputError`` when it cannot find the
    run's answer (in the other modes that is only recorded in `errors`).

    Examples:
        >>> handler = AuditCallbackHandler()
        >>> chain.invoke("When did it open?", config={"callbacks": [handler]})  # doctest: +SKIP
        >>> handler.reports[-1].trust_passed  # doctest: +SKIP
    """

    def __init__(
        self,
        settings: ConfigLike | Auditor = None,
        *,
        on_report: Any = None,
        question_key: str = "question",
        answer_key: str = "answer",
    ) -> None:
        self.auditor = make_auditor(settings)
        self.raise_error = self.auditor.settings.mode == "enforce"
        self.on_report = on_report
        self.question_key = question_key
        self.answer_key = answer_key
        self.reports: list[AuditReport] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._parent: dict[UUID, UUID | None] = {}
        self._question: dict[UUID, str] = {}
        self._docs: dict[UUID, list[Document]] = {}

    def _root(self, run_id: UUID) -> UUID:
        seen = 0
        while self._parent.get(run_id) is not None and seen < 10_000:
            run_id = self._parent[run_id]  # type: ignore[assignment]
            seen += 1
        return run_id

    def _start(self, run_id: UUID, parent_run_id: UUID | None) -> None:
        with self._lock:
            self._parent[run_id] = parent_run_id

    def on_chain_start(
        self,
        serialized: dict[str, Any],
        inputs: dict[str, Any],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Record the run tree and, for a top-level run, its question.

        A run is top-level for this handler when it has no parent, or a parent the handler
        never saw start (the handler was given to a chain that runs inside another).
        """
        with self._lock:
            if parent_run_id is not None and parent_run_id in self._parent:
                self._parent[run_id] = parent_run_id
                return
            self._parent[run_id] = None
            self._question[run_id] = question_text(inputs, self.question_key)
            self._docs[run_id] = []

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Record the run tree (a chain or a retriever inside a tool belongs to its run)."""
        self._start(run_id, parent_run_id)

    def on_retriever_start(
        self,
        serialized: dict[str, Any],
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Record the run tree."""
        self._start(run_id, parent_run_id)

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Record the run tree."""
        self._start(run_id, parent_run_id)

    def on_llm_start(
        self,
        serialized: dict[str, Any],
        prompts: list[str],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Record the run tree."""
        self._start(run_id, parent_run_id)

    def on_retriever_end(
        self,
        documents: Sequence[Document],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Keep the documents for the top-level run they belong to."""
        with self._lock:
            root = self._root(run_id)
            self._docs.setdefault(root, []).extend(documents)

    def on_chain_end(
        self,
        outputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """At the end of a top-level run: audit its answer against its documents."""
        from affidavit.core.errors import EnforcementError

        with self._lock:
            if run_id not in self._question:
                return  # not a top-level run
            question = self._question.pop(run_id)
            docs = self._docs.pop(run_id, [])
            self._forget(run_id)
        done = _taken_report(outputs, self.auditor)
        if done is not None:  # the run was an AuditRunnable with these settings: it audited
            self._record(done)
            if self.raise_error and not done.trust_passed:
                raise EnforcementError("audit failed: the run's audit did not pass", report=done)
            return
        if isinstance(outputs, Mapping) and isinstance(outputs.get("context"), list):
            docs = _dedupe([*outputs["context"], *docs])
        question = question or question_text(outputs, self.question_key)
        try:
            draft = _audited_answer(outputs, self.answer_key)
        except InputError as exc:
            with self._lock:
                self.errors.append(exc.message)
            if self.raise_error:
                raise  # enforce fails closed: an answer it cannot find is not passed unaudited
            return
        try:
            report = self.auditor.audit(question, document_chunks(docs), draft)
        except EnforcementError as exc:
            self._record(exc.report)
            raise
        self._record(report)

    def on_chain_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **_: Any
    ) -> None:
        """Forget a failed top-level run."""
        with self._lock:
            if run_id in self._question:
                self._question.pop(run_id, None)
                self._docs.pop(run_id, None)
                self._forget(run_id)

    def _forget(self, root: UUID) -> None:
        for rid in [r for r in self._parent if self._root(r) == root]:
            self._parent.pop(rid, None)

    def _record(self, report: AuditReport) -> None:
        with self._lock:
            self.reports.append(report)
        if self.on_report is not None:
            self.on_report(report)


class AuditRunEvaluator(RunEvaluator):
    """Scores a dataset's answers with the audit: a LangSmith run evaluator, and a plain
    ``(inputs, outputs, reference_outputs)`` evaluator function as well.

    Two scores per answer: ``affidavit_trust`` (1 when the report's ``trust_passed``, else 0)
    and ``affidavit_compliance`` (the share of supported claims), with every unsupported claim
    and why in the comment. The question comes from the inputs (``question_key`` or the usual
    keys), the answer from the outputs (a string, a message or ``outputs[answer_key]``), the
    documents from ``outputs[context_key]`` or, when the run kept none, the reference outputs'
    ``context_key`` (Documents, chunk dicts, Chunks or strings). An output that already holds an
    `AuditRunnable` report made under the evaluator's audit settings (the mode aside) is scored
    by that report; one made under others has its draft audited again. It scores; it never
    enforces.

    Args:
        settings: audit settings (Settings, AuditSettings, a dict, or an `Auditor`; default:
            loaded as the CLI does, from ``affidavit.toml`` and the environment).
        question_key: the input key holding the question.
        answer_key: the output key holding the answer.
        context_key: the output (or reference output) key holding the documents.

    Examples:
        >>> score = AuditRunEvaluator()(
        ...     inputs={"question": "When did the Forth Bridge open?"},
        ...     outputs={"answer": "The Forth Bridge opened on 4 March 1925.",
        ...              "context": ["The Forth Bridge opened on 4 March 1890."]})
        >>> [(r["key"], r["score"]) for r in score["results"]]
        [('affidavit_trust', 0), ('affidavit_compliance', 0.0)]

        With LangSmith (needs its API): ``langsmith.evaluate(chain.invoke, data="my-dataset",
        evaluators=[AuditRunEvaluator()])``.
    """

    KEYS = ("affidavit_trust", "affidavit_compliance")

    def __init__(
        self,
        settings: ConfigLike | Auditor = None,
        *,
        question_key: str = "question",
        answer_key: str = "answer",
        context_key: str = "context",
    ) -> None:
        self.auditor = make_auditor(settings)
        self.question_key = question_key
        self.answer_key = answer_key
        self.context_key = context_key

    @property
    def feedback_keys(self) -> list[str]:
        """The feedback keys this evaluator emits."""
        return list(self.KEYS)

    def report(
        self,
        inputs: Mapping[str, Any] | str | None,
        outputs: Any,
        reference_outputs: Mapping[str, Any] | None = None,
    ) -> AuditReport:
        """The audit report for one example.

        Raises:
            InputError: no answer in ``outputs``, or a malformed document.
        """
        done = _taken_report(outputs, self.auditor)
        if done is not None:
            return done
        question = question_text(inputs, self.question_key) or question_text(outputs)
        answer = _audited_answer(outputs, self.answer_key)
        docs: Any = outputs.get(self.context_key) if isinstance(outputs, Mapping) else None
        if not isinstance(docs, list) and reference_outputs is not None:
            docs = reference_outputs.get(self.context_key)
        chunks = document_chunks(docs if isinstance(docs, list) else [])
        return audit_for_evaluation(self.auditor, question, chunks, answer)

    def __call__(
        self,
        inputs: Mapping[str, Any] | str | None,
        outputs: Any,
        reference_outputs: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Score one example: ``{"results": [{"key", "score", "comment"}, ...]}``."""
        r = self.report(inputs, outputs, reference_outputs)
        comment = report_feedback(r)
        return {
            "results": [
                {"key": self.KEYS[0], "score": int(r.trust_passed), "comment": comment},
                {"key": self.KEYS[1], "score": r.compliance_rate, "comment": comment},
            ]
        }

    def evaluate_run(
        self, run: Any, example: Any = None, evaluator_run_id: UUID | None = None
    ) -> EvaluationResults:
        """LangSmith's interface: score a traced run against its dataset example."""
        scored = self(run.inputs, run.outputs, example.outputs if example is not None else None)
        return EvaluationResults(
            results=[
                EvaluationResult(
                    key=x["key"],
                    score=x["score"],
                    comment=x["comment"],
                    source_run_id=evaluator_run_id,
                    target_run_id=getattr(run, "id", None),
                )
                for x in scored["results"]
            ]
        )


class AffidavitChatModel(BaseChatModel):
    """Affidavit's generator as a LangChain chat model (offline with the embedded LLM).

    Attributes:
        generator: an affidavit `Generator`; when None, the
            one ``settings.generate`` names (the embedded llama.cpp model by default, which
            needs ``affidavit[llm]``; or an OpenAI-compatible server).
        settings: the effective settings.

    Examples:
        >>> from affidavit.testing.fake_llm import FakeGenerator
        >>> AffidavitChatModel(generator=FakeGenerator(["Hi."])).invoke("Hello").content
        'Hi.'
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    generator: Any = None
    settings: Settings | None = None

    def model_post_init(self, context: Any, /) -> None:
        """Build the configured generator when none was given."""
        if self.generator is None:
            from affidavit.core.settings import load_settings
            from affidavit.generate.factory import make_generator

            s = self.settings or load_settings()
            self.generator = make_generator(s.generate, cache_dir=s.resolved_home() / "models")

    @property
    def _llm_type(self) -> str:
        return "affidavit"

    def _messages(self, messages: Sequence[BaseMessage]) -> list[Message]:
        roles = {"human": "user", "ai": "assistant", "system": "system"}
        return [Message(role=roles.get(m.type, "user"), content=answer_text(m)) for m in messages]

    def _stream_text(self, messages: Sequence[BaseMessage]) -> Iterator[str]:
        yield from self.generator.stream(self._messages(messages))

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        from affidavit.core.errors import GenerationTruncatedError

        parts: list[str] = []
        info: dict[str, Any] = {"finish_reason": "stop"}
        try:
            parts.extend(self._stream_text(messages))
        except GenerationTruncatedError as exc:
            # LangChain's convention for a reply cut at its token budget: the text as far as it
            # went, marked by its finish reason (an auditor downstream still checks every claim)
            info = {"finish_reason": str(exc.context.get("reason", "length"))}
        message = AIMessage(content="".join(parts), response_metadata=info)
        return ChatResult(generations=[ChatGeneration(message=message, generation_info=info)])


__all__ = [
    "AffidavitChatModel",
    "AffidavitRetriever",
    "AuditCallbackHandler",
    "AuditRunEvaluator",
    "AuditRunnable",
    "answer_text",
    "document_chunks",
    "question_text",
]
