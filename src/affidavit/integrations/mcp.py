"""An MCP server (official ``mcp`` SDK): affidavit's tools for any assistant that speaks MCP.

Tools, each with a JSON schema for its input generated from its signature:

- ``ask(question, mode)``: answer from the store, every shown sentence verified (needs an LLM).
- ``search(query, k, mode)``: the top chunks of the store.
- ``audit(query, chunks, response, mode)``: `affidavit.audit` with the same arguments;
  returns the same report as ``affidavit audit --json`` (``trust_passed`` included).
- ``check(claim, evidence)``: verify one claim against evidence passages (the verifier cascade).
- ``verify_certificate(certificate, public_keys)``: check a signed certificate.

Resources: ``affidavit://documents`` (the stored documents, as JSON) and one
``affidavit://documents/{doc_id}`` resource per stored document (its text).

Every parameter is described in the input schema. A tool answers with its contract as
structured content (the output schema keeps each contract's own fields and describes the
objects nested below them without spelling out their fields, to stay small) and a short text
summary, so a large report is not sent twice. A failing tool (bad input, no store, no LLM, a
model that cannot load) comes back as a tool error with a one-line message; a document that is
not in the store is a "not found" resource error; the server keeps running. Model work runs in
the shared worker pool (`affidavit.concurrency`), never on the server's event loop.

Run it with ``affidavit mcp`` (stdio) or ``affidavit mcp --transport streamable-http`` (binds
127.0.0.1 by default, and only a loopback address: the transport checks no API key).

Examples:
    >>> server = make_server()  # doctest: +SKIP
    >>> server.run("stdio")  # doctest: +SKIP
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, ValidationError

from affidavit.core.errors import (
    AffidavitError,
    ConfigError,
    EnforcementError,
    MissingDependencyError,
)

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import (
        ResourceError,
        ResourceNotFoundError,
        ToolError,
        UnexpectedToolError,
    )
    from mcp.server.mcpserver.resources import FunctionResource
    from mcp.server.transport_security import TransportSecuritySettings
    from mcp.types import CallToolResult, TextContent
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError("mcp", "mcp", purpose="the affidavit MCP server") from exc

from affidavit.concurrency import offload
from affidavit.core.answer import AskResult
from affidavit.core.certificate import CertificateVerification
from affidavit.core.report import AuditReport
from affidavit.core.service import MAX_QUERY_CHARS, MAX_QUESTION_CHARS
from affidavit.core.settings import Settings, load_settings
from affidavit.core.text import (
    escape_surrogates,
    find_lone_surrogate,
    safe_one_line,
    safe_terminal,
)
from affidavit.core.types import Chunk, EnforcementMode, Verdict
from affidavit.integrations._common import StoreSearch
from affidavit.pipeline.ask import AskPipeline
from affidavit.verify.base import ClaimVerifier

logger = logging.getLogger(__name__)

# documents listed one resource each; beyond this only the template and the index resource
MAX_DOCUMENT_RESOURCES = 1000
MAX_K = 100
ASK_MODE = (
    "How unverified sentences are shown: strict (default: only verified sentences, the rest "
    "withheld), mixed (every sentence, each marked by its decision), debug (mixed plus scores)."
)
SEARCH_MODE = (
    "Ranking: bm25 (exact words), dense (meaning, embeddings), hybrid (both fused); default: "
    "the server's retrieve.mode."
)
AUDIT_MODE = (
    "What a failing answer gives: audit (default: the report only), guardrail (the report and "
    "guarded_response, failing claims withheld), enforce (trust_passed false fails the policy; "
    "the report is still returned)."
)
INSTRUCTIONS = (
    "affidavit answers questions from the user's documents and verifies every sentence. Use "
    "`search` to find passages, `ask` for a verified answer, `audit` to check an answer you "
    "wrote against the passages it came from (look at trust_passed and each claim's reason), "
    "`check` to verify one claim, `verify_certificate` to check a signed certificate."
)


class _Tools:
    """The tool bodies, with the state they share (settings, store, verifier, pipeline)."""

    def __init__(
        self,
        settings: Settings,
        store_path: Path | None,
        pipeline: AskPipeline | None,
        verifier: ClaimVerifier | None,
    ) -> None:
        self.settings = settings
        self.search_ = StoreSearch(settings, store_path)
        self.store_path = store_path
        self.pipeline = pipeline
        self.verifier = verifier
        self._lock = threading.Lock()

    def _pipeline(self) -> AskPipeline:
        # two first calls arriving together build the models once
        with self._lock:
            if self.pipeline is None:
                from affidavit.pipeline.build import build_pipeline

                self.pipeline = build_pipeline(self.settings, store_path=self.store_path)
            return self.pipeline

    def ask(self, question: str, mode: Literal["strict", "mixed", "debug"] | None) -> AskResult:
        return self._pipeline().ask(question, mode=mode)

    def search(self, query: str, k: int, mode: Literal["bm25", "dense", "hybrid"] | None) -> Any:
        hits = self.search_.search(query, k=k, mode=mode)
        return [
            {
                "rank": h.rank,
                "score": h.score,
                "chunk_id": h.chunk.id,
                "doc_id": h.chunk.doc_id,
                "url": h.chunk.url,
                "title": h.chunk.title,
                "text": h.chunk.text,
            }
            for h in hits
        ]

    def audit_settings(self, mode: EnforcementMode | None) -> Settings:
        if mode is None:
            return self.settings
        return self.settings.model_copy(
            update={"audit": self.settings.audit.model_copy(update={"mode": mode})}
        )

    def audit(
        self, query: str, chunks: list[Chunk], response: str, mode: EnforcementMode | None
    ) -> AuditReport:
        from affidavit.audit import Auditor

        settings = self.audit_settings(mode)
        verifier = None
        if settings.audit.use_verifier:
            from affidavit.pipeline.check import default_verifier

            verifier = self.verifier or default_verifier(settings)
        try:
            return Auditor(settings, verifier=verifier).audit(query, chunks, response)
        except EnforcementError as exc:
            # enforce mode: the caller gets the failing report, as `affidavit audit` prints it
            report: AuditReport = exc.report
            return report

    def check(self, claim: str, evidence: list[str]) -> Verdict:
        from affidavit.pipeline.check import check

        return check(claim, evidence, settings=self.settings, verifier=self.verifier)

    def verify_certificate(
        self, certificate: dict[str, Any], public_keys: list[str] | None
    ) -> CertificateVerification:
        from affidavit.certify.keys import trusted_keys
        from affidavit.certify.verify import verify_certificate

        # a client names keys inline only: a string that is not PEM text is refused, never
        # opened as a path on the server (issue 25.5)
        extra: list[bytes] = []
        for k in public_keys or []:
            if not isinstance(k, str) or "-----BEGIN" not in k:
                raise ToolError(
                    "public_keys must be PEM text ('-----BEGIN PUBLIC KEY-----...'); the server "
                    "never reads a file a client names (its own trusted keys come from its "
                    "configuration)"
                )
            extra.append(k.encode("utf-8"))
        keys = trusted_keys(self.settings, extra)
        return verify_certificate(certificate, keys)

    def documents(self) -> list[dict[str, Any]]:
        store = self.search_.store()
        return [r.model_dump(mode="json") for r in store.records().values()]

    def document(self, doc_id: str) -> str:
        doc = self.search_.store().get_document(doc_id)
        if doc is None:
            raise ResourceNotFoundError(f"document {doc_id!r} not found in the store")
        return str(doc.text)


async def _run(fn: Any, *args: Any) -> Any:
    """A tool body off the event loop; affidavit's own errors become tool errors."""
    try:
        return await offload(fn, *args)
    except ToolError:
        raise
    except AffidavitError as exc:
        raise ToolError(exc.message) from exc


async def _read(fn: Any, *args: Any) -> Any:
    """A resource body off the event loop; affidavit's own errors become resource errors (a
    resource error reaches the client with its message, and the server logs no traceback)."""
    try:
        return await offload(fn, *args)
    except ResourceError:
        raise
    except AffidavitError as exc:
        raise ResourceError(exc.message) from exc


def _one_line(exc: ValidationError) -> str:
    """Pydantic's report as one line: ``field: message`` per error, no input echo, no link."""
    parts = []
    for err in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(x) for x in err["loc"]) or "arguments"
        parts.append(f"{where}: {err['msg']}")
    return "invalid arguments: " + "; ".join(parts)


class _Server(MCPServer):
    """The SDK's server with one-line argument errors (the SDK sends pydantic's multi-line
    report, with a documentation link, as the tool error's text)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                # keep the ValidationError as the cause: the SDK then logs field names only
                raise ToolError(f"{name}: {_one_line(exc.__cause__)}") from exc.__cause__
            raise


# -- results: the contract as structured content, a short summary as text ----------------------


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def _shown(text: str, n: int) -> str:
    """An untrusted value (a claim, a title, a reason quoting a document) for the text summary:
    on one line, its control and bidi characters escaped, as the terminal shows them (a host
    may print the text content as it is: an ESC sequence painted a fake verdict, a U+202E
    reordered a year, a line break forged a summary line)."""
    return _clip(safe_one_line(text), n)


def _result(data: BaseModel | dict[str, Any], summary: str) -> CallToolResult:
    structured = data.model_dump(mode="json") if isinstance(data, BaseModel) else data
    return CallToolResult(
        content=[TextContent(type="text", text=summary)], structured_content=structured
    )


_SEE = "(the full result is the structured content)"


def _ask_summary(r: AskResult) -> str:
    counts = Counter(c.decision for c in r.claims)
    tally = ", ".join(f"{n} {d}" for d, n in sorted(counts.items())) or "no claims"
    note = f"\n{_shown(r.note, 500)}" if r.note else ""
    answer = safe_terminal(_clip(r.answer, 4000), keep_newlines=True)
    return f"{answer}{note}\n[{tally}] {_SEE}"


def _audit_summary(r: AuditReport) -> str:
    supported = sum(1 for c in r.claims if c.supported)
    head = (
        f"trust {'passed' if r.trust_passed else 'failed'}: {supported} of {len(r.claims)} "
        f"claims supported (mode {r.mode})"
    )
    failing = [c for c in r.claims if not c.supported][:5]
    lines = [f"- {_shown(c.text, 150)}: {_shown(c.reason, 200)}" for c in failing]
    more = len([c for c in r.claims if not c.supported]) - len(failing)
    if more > 0:
        lines.append(f"- ... {more} more")
    return "\n".join([head, *lines, _SEE])


def _check_summary(v: Verdict) -> str:
    return f"{v.label} (p_entail {v.p_entail:.2f}): {_shown(v.reason, 500)}"


def _certificate_summary(r: CertificateVerification) -> str:
    if r.valid:
        return f"valid (key {_shown(str(r.key_id), 100)})"
    return "invalid: " + _shown("; ".join(r.reasons), 1000)


def _search_summary(query: str, hits: list[dict[str, Any]]) -> str:
    lines = [f"{len(hits)} hits for {_clip(query, 200)!r}"]
    for h in hits:
        where = h.get("title") or h.get("url") or h.get("doc_id")
        lines.append(
            f"{h['rank']}. {_shown(str(where), 100)} ({h['score']:.3f}) "
            f"{_shown(str(h['chunk_id']), 100)}"
        )
    return "\n".join([*lines, _SEE])


# -- compact output schemas --------------------------------------------------------------------


def _strip_titles(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: _strip_titles(v)
            for k, v in node.items()
            if not (k == "title" and isinstance(v, str))
        }
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


def _refs(node: Any, found: set[str]) -> set[str]:
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                found.add(v.rsplit("/", 1)[-1])
            else:
                _refs(v, found)
    elif isinstance(node, list):
        for v in node:
            _refs(v, found)
    return found


def _stub_refs(node: Any, defs: dict[str, Any]) -> Any:
    """Every reference below a kept object replaced by an open object with that contract's
    description (still a valid schema for the data: looser, never wrong)."""
    if isinstance(node, dict):
        if "$ref" in node:
            target = defs.get(str(node["$ref"]).rsplit("/", 1)[-1], {})
            stub: dict[str, Any] = {"type": "object"}
            if target.get("description"):
                stub["description"] = target["description"]
            return stub
        return {k: _stub_refs(v, defs) for k, v in node.items()}
    if isinstance(node, list):
        return [_stub_refs(v, defs) for v in node]
    return node


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """An output schema small enough to send with every tools/list: no titles, the contract's
    own fields and those of the objects it holds directly, deeper objects as described open
    objects (their full schemas: ``affidavit export-schemas``).

    Examples:
        >>> from affidavit.core.report import AuditReport
        >>> full = AuditReport.model_json_schema()
        >>> small = compact_schema(full)
        >>> len(json.dumps(small)) < len(json.dumps(full)) / 1.5, "title" in small
        (True, False)
    """
    schema = _strip_titles(schema)
    defs = schema.pop("$defs", {})
    kept = {name: _stub_refs(defs[name], defs) for name in sorted(_refs(schema, set()))}
    if kept:
        schema["$defs"] = kept
    return schema


def make_server(
    settings: Settings | None = None,
    *,
    store_path: Path | str | None = None,
    pipeline: AskPipeline | None = None,
    verifier: ClaimVerifier | None = None,
    list_documents: bool = True,
) -> MCPServer:
    """The MCP server with affidavit's five tools and the store's documents as resources.

    Args:
        settings: the effective settings (default: `load_settings`).
        store_path: the store folder (default ``settings.store.path``); it may not exist yet
            (``search`` and ``ask`` then answer with a tool error).
        pipeline: an ask pipeline to use (default: built from the settings on the first ``ask``).
        verifier: the claim verifier for ``check`` and ``audit`` with ``use_verifier`` (default:
            the settings' cascade, loaded on first use).
        list_documents: register one resource per stored document (up to
            ``MAX_DOCUMENT_RESOURCES``) when the store exists.

    Examples:
        >>> import asyncio
        >>> server = make_server(list_documents=False)
        >>> sorted(t.name for t in asyncio.run(server.list_tools()))
        ['ask', 'audit', 'check', 'search', 'verify_certificate']
    """
    s = settings or load_settings()
    path = Path(store_path) if store_path is not None else None
    tools = _Tools(s, path, pipeline, verifier)
    server: MCPServer = _Server(
        name="affidavit",
        instructions=INSTRUCTIONS,
        version=_version(),
        log_level="WARNING",
    )

    @server.tool(
        description="Answer a question from the user's documents; every sentence shown is "
        "verified against its sources (unverified ones are withheld in strict mode)."
    )
    async def ask(
        question: Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_QUESTION_CHARS,
                description=f"The question, in plain words (at most {MAX_QUESTION_CHARS} "
                "characters).",
            ),
        ],
        mode: Annotated[Literal["strict", "mixed", "debug"] | None, Field(description=ASK_MODE)] = (
            None
        ),
    ) -> Annotated[CallToolResult, AskResult]:
        result: AskResult = await _run(tools.ask, question, mode)
        # strict withholds everywhere: the host hands the structured result to its model, so
        # the draft, the raw text and the unverified claims must not ride along in it
        result = result.shown_only()
        return _result(result, _ask_summary(result))

    @server.tool(description="Search the user's documents; returns the top chunks as hits.")
    async def search(
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_QUERY_CHARS,
                description=f"What to look for, in plain words (at most {MAX_QUERY_CHARS} "
                "characters).",
            ),
        ],
        k: Annotated[
            int, Field(ge=1, le=MAX_K, description=f"How many hits to return (1-{MAX_K}).")
        ] = 5,
        mode: Annotated[
            Literal["bm25", "dense", "hybrid"] | None, Field(description=SEARCH_MODE)
        ] = None,
    ) -> Annotated[CallToolResult, dict[str, Any]]:
        hits: list[dict[str, Any]] = await _run(tools.search, query, k, mode)
        return _result({"query": query, "hits": hits}, _search_summary(query, hits))

    @server.tool(
        description="Audit an answer against the chunks it was generated from: which claims "
        "are supported by which source, which typed check failed and why. Same arguments as "
        "affidavit.audit(query, chunks, response); returns the report of `affidavit audit "
        "--json` (trust_passed, claims with reason and failed_checks, guarded_response)."
    )
    async def audit(
        query: Annotated[str, Field(description="The question the answer responds to.")],
        chunks: Annotated[
            list[Chunk],
            Field(description="The passages the answer was generated from (text, url...)."),
        ],
        response: Annotated[str, Field(description="The answer to audit.")],
        mode: Annotated[EnforcementMode | None, Field(description=AUDIT_MODE)] = None,
    ) -> Annotated[CallToolResult, AuditReport]:
        report = await _audit(tools, query, chunks, response, mode)
        return _result(report, _audit_summary(report))

    @server.tool(
        description="Verify one claim against evidence passages with the entailment verifier "
        "cascade; returns label (supported / contradicted / unsupported), probabilities and "
        "the minimal evidence."
    )
    async def check(
        claim: Annotated[str, Field(description="One statement to verify.")],
        evidence: Annotated[
            list[str], Field(description="The passages to verify it against, as plain text.")
        ],
    ) -> Annotated[CallToolResult, Verdict]:
        verdict: Verdict = await _run(tools.check, claim, evidence)
        return _result(verdict, _check_summary(verdict))

    @server.tool(
        description="Check a signed affidavit certificate (the JSON object): schema, Ed25519 "
        "signature, trusted key, evidence hashes, decision consistency. public_keys: extra "
        "trusted Ed25519 public keys as PEM text (never file paths: the server's own trusted "
        "keys come from its configuration)."
    )
    async def verify_certificate(
        certificate: Annotated[
            dict[str, Any], Field(description="The signed certificate, as its JSON object.")
        ],
        public_keys: Annotated[
            list[str] | None,
            Field(description="Extra trusted Ed25519 public keys, as PEM text (not paths)."),
        ] = None,
    ) -> Annotated[CallToolResult, CertificateVerification]:
        result: CertificateVerification = await _run(
            tools.verify_certificate, certificate, public_keys
        )
        return _result(result, _certificate_summary(result))

    @server.resource(
        "affidavit://documents",
        name="documents",
        description="The documents in the affidavit store (id, origin, chunk count).",
        mime_type="application/json",
    )
    async def documents() -> str:
        return json.dumps(await _read(tools.documents), ensure_ascii=False)

    @server.resource(
        "affidavit://documents/{doc_id}",
        name="document",
        description="The text of one stored document.",
        mime_type="text/plain",
    )
    async def document(doc_id: str) -> str:
        text: str = await _read(tools.document, doc_id)
        return text

    if list_documents:
        _list_documents(server, tools)
    for tool in server._tool_manager.list_tools():
        if tool.fn_metadata.output_schema is not None:
            # validation still uses the full contract; only the advertised schema is compact
            tool.fn_metadata.output_schema = compact_schema(tool.fn_metadata.output_schema)
    return server


async def _audit(
    tools: _Tools, query: str, chunks: list[Chunk], response: str, mode: EnforcementMode | None
) -> AuditReport:
    settings = tools.audit_settings(mode)
    if settings.audit.use_verifier:
        report: AuditReport = await _run(tools.audit, query, chunks, response, mode)
        return report
    from affidavit.audit import aaudit

    try:
        return await aaudit(query, chunks, response, settings)
    except EnforcementError as exc:
        enforced: AuditReport = exc.report  # enforce mode: the failing report, as the CLI
        return enforced
    except AffidavitError as exc:
        raise ToolError(exc.message) from exc


def _list_documents(server: MCPServer, tools: _Tools) -> None:
    """One resource per stored document, so a client's resources/list shows them."""
    try:
        records = tools.documents()
    except AffidavitError:
        return  # no store yet: the index resource answers with the reason when read
    for rec in records[:MAX_DOCUMENT_RESOURCES]:
        doc_id = str(rec["doc_id"])

        def read(doc_id: str = doc_id) -> str:
            return tools.document(doc_id)

        server.add_resource(
            FunctionResource.from_function(
                fn=read,
                uri=f"affidavit://documents/{doc_id}",
                name=doc_id,
                description=f"stored document from {rec.get('origin', '')}",
                mime_type="text/plain",
            )
        )


def _version() -> str:
    from affidavit import __version__

    return __version__


# deeper than this, a JSON-RPC message is answered with an error instead of being parsed: the
# MCP library's parser gives up near 200 levels and then drops the message without a reply, so
# the client waited forever (issue 25.13); `json.loads` here stays well inside the recursion limit
MAX_JSON_DEPTH = 100


def json_depth_and_ids(line: str) -> tuple[int, list[Any]]:
    """The nesting depth of a JSON text and the ``id`` of each request in it (of the top-level
    object, or of each object of a top-level array), found by one scan without parsing (so a
    hostile depth costs no recursion, and a text cut short still shows its id).

    Examples:
        >>> json_depth_and_ids('{"jsonrpc": "2.0", "id": 7, "params": {"a": [[1]]}}')
        (4, [7])
        >>> json_depth_and_ids('[{"id": 1, "p": {"id": 9}}, {"id": "b"}]')
        (3, [1, 'b'])
    """
    depth = best = 0
    in_str = esc = False
    found: list[Any] = []
    id_depth = 2 if line.lstrip().startswith("[") else 1
    key_start = -1
    i = 0
    n = len(line)
    while i < n:
        ch = line[i]
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
                if depth == id_depth and line[key_start:i] == "id":
                    j = i + 1
                    while j < n and line[j] in " \t:":
                        j += 1
                    m = re.match(r'-?\d+|"(?:[^"\\]|\\.)*"', line[j:])
                    if m is not None:
                        found.append(json.loads(m.group(0)))
        elif ch == '"':
            in_str, key_start = True, i + 1
        elif ch in "[{":
            depth += 1
            best = max(best, depth)
        elif ch in "]}":
            depth -= 1
        i += 1
    return best, found


def _refusal(msg_id: Any, reason: str) -> str:
    """A request line the server answers with an error naming ``reason``: a call of a tool
    that does not exist, named by the reason (the SDK then answers in its own error format)."""
    params = {"name": f"request refused: {reason}", "arguments": {}}
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "tools/call", "params": params})


def _refused_message(message: Any) -> str | None:
    """Why a parsed stdin message is refused before the SDK reads it, or None to pass it on."""
    if isinstance(message, list):
        return "a batch is not accepted: send one request a line"
    bad = find_lone_surrogate(message)
    if bad is not None:
        # Python's JSON reader takes a lone "\ud800" escape, the SDK's refuses it as invalid
        # JSON and drops the message without a reply; the location may hold it (a key), and a
        # refusal holding it would be dropped the same way
        where = _clip(escape_surrogates(bad), 200)
        return f"{where} holds a lone surrogate (an invalid \\uD800-\\uDFFF escape)"
    return None


class _LineGuard:
    """stdin lines for the stdio transport. The SDK drops a line it cannot take without a
    reply, so its client waits forever (issue 25.13); such a line is replaced here by one the
    server answers with an error saying why, when it names an id: a request nested deeper than
    `MAX_JSON_DEPTH`, one that is not valid JSON, one holding a lone surrogate escape (valid
    JSON to Python, not to the SDK), and a batch (one answer per request in it; MCP accepts no
    batches since 2025-06-18). A notification, which has no id, is dropped."""

    def __init__(self, lines: Any) -> None:
        self._lines = lines
        self._pending: list[str] = []

    def __aiter__(self) -> _LineGuard:
        self._it = self._lines.__aiter__()
        return self

    async def __anext__(self) -> str:
        while not self._pending:
            line: str = await self._it.__anext__()
            depth, ids = json_depth_and_ids(line)
            if depth > MAX_JSON_DEPTH:
                reason = f"it nests {depth} levels deep, at most {MAX_JSON_DEPTH} are accepted"
            else:
                try:
                    message = json.loads(line)
                except ValueError as exc:
                    reason = f"it is not valid JSON ({exc})"
                else:
                    refused = _refused_message(message)
                    if refused is None:
                        return line  # the SDK's to check (and answer) from here
                    reason = refused
            self._pending = [_refusal(i, reason) + "\n" for i in ids if i is not None]
        return self._pending.pop(0)


def _run_stdio(server: Any) -> None:
    import io
    import sys

    import anyio
    from mcp.server.stdio import stdio_server

    async def main() -> None:
        text = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
        stdin = _LineGuard(anyio.wrap_file(text))
        async with stdio_server(stdin=stdin) as (read_stream, write_stream):  # type: ignore[arg-type]
            low = server._lowlevel_server
            await low.run(read_stream, write_stream, low.create_initialization_options())

    anyio.run(main)


def run(
    settings: Settings | None = None,
    *,
    store_path: Path | str | None = None,
    transport: Literal["stdio", "streamable-http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 8765,
) -> None:
    """Serve until the client disconnects (stdio) or the process is stopped (HTTP)."""
    server = make_server(settings, store_path=store_path)
    if transport == "stdio":
        _run_stdio(server)
        return
    import uvicorn

    app = http_app(server, host)
    uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).run()


def check_http_host(host: str) -> None:
    """Refuse an address beyond loopback for the MCP HTTP transport, which checks no API key.

    Raises:
        ConfigError: ``host`` is not a loopback address.

    Examples:
        >>> check_http_host("127.0.0.1")
        >>> check_http_host("0.0.0.0")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        affidavit.core.errors.ConfigError: refusing to bind 0.0.0.0: ... checks no API key, ...
    """
    from affidavit.server import is_loopback

    if not is_loopback(host):
        raise ConfigError(
            f"refusing to bind {host}: the MCP HTTP transport checks no API key, so anyone who "
            "can reach it could use it; bind a loopback address (127.0.0.1)"
        )


def http_app(server: MCPServer, host: str = "127.0.0.1") -> Any:
    """The streamable-HTTP app (``/mcp``) of ``server`` for an address of ``host``.

    The MCP transport checks no API key, so it binds loopback only, whatever keys ``serve``
    has; and it answers only requests whose Host (and Origin, when sent) name that address or
    another loopback name, so a web page cannot reach it through DNS rebinding. The SDK checks
    these only for 127.0.0.1, localhost and ::1: on 127.0.0.2 any Host was served.

    Raises:
        ConfigError: ``host`` is not a loopback address.

    Examples:
        >>> type(http_app(make_server(list_documents=False), "127.0.0.2")).__name__
        'Starlette'
    """
    check_http_host(host)
    bare = host.strip("[]")
    named = f"[{bare}]" if ":" in bare else bare
    hosts = list(dict.fromkeys([named, "127.0.0.1", "localhost", "[::1]"]))
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{h}:*" for h in hosts],
        allowed_origins=[f"http://{h}:*" for h in hosts],
    )
    return server.streamable_http_app(host=bare, transport_security=security)


__all__ = ["MAX_DOCUMENT_RESOURCES", "check_http_host", "http_app", "make_server", "run"]
