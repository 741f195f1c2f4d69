"""The FastAPI application of ``affidavit serve``: the one module that imports fastapi/starlette.

Request and response bodies are the library's contracts (``affidavit.core``); errors are
`ApiError` with a distinct status each (400 bad input, 401 no or
bad key, 403 key lacks the scope, 404, 413 body too large, 422 invalid fields, 429 rate limit,
503 queue full or models loading, with ``Retry-After``, 504 past the request budget).
Models load once, in a background thread at start-up (``/readyz`` says when they are ready);
blocking work runs in bounded work queues (`affidavit.server.limits`), never on the event
loop.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import threading
import time
import uuid
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Mapping,
    MutableMapping,
    Sequence,
)
from contextlib import asynccontextmanager
from importlib import resources
from typing import TYPE_CHECKING, Annotated, Any, Literal

from affidavit.core.errors import (
    AffidavitError,
    ConfigError,
    GenerationError,
    InputError,
    MissingDependencyError,
    RetrievalError,
    StoreError,
    TransparencyLogError,
)

try:
    from fastapi import Depends, FastAPI, File, Query, Request, UploadFile
    from fastapi import Path as PathParam
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
    from fastapi.routing import APIRoute
    from fastapi.staticfiles import StaticFiles
    from starlette.concurrency import run_in_threadpool
    from starlette.exceptions import HTTPException as StarletteHTTPException
    from starlette.routing import Match
except ImportError as exc:  # pragma: no cover - the server extra installs them
    raise MissingDependencyError("fastapi", "server", purpose="affidavit serve") from exc

from affidavit.core.certificate import CertificateVerification
from affidavit.core.report import AuditReport
from affidavit.core.service import (
    MAX_QUERY_CHARS,
    ApiError,
    ApiScope,
    AskRequest,
    AskResponse,
    AuditInput,
    CertificateEvent,
    ErrorEvent,
    IngestJob,
    PublicKeyInfo,
    Readiness,
    ResultEvent,
    SearchResponse,
    TokenEvent,
)
from affidavit.core.settings import Settings, load_settings
from affidavit.core.text import safe_one_line
from affidavit.core.tlog import Checkpoint, ConsistencyProof, InclusionProof, LogEntryRecord
from affidavit.core.types import EnforcementMode
from affidavit.core.verification import CheckInput, CheckOutput
from affidavit.server import is_loopback
from affidavit.server.apikeys import ApiKeyStore, AuthError, default_keys_path
from affidavit.server.documents import document_routes
from affidavit.server.jobs import IngestJobs
from affidavit.server.limits import Cancelled, QueueFull, RateLimited, RateLimiter, Timeout
from affidavit.server.limits import WorkQueue as _WorkQueue
from affidavit.server.metrics import CONTENT_TYPE, Metrics
from affidavit.server.services import NotReady, Services
from affidavit.server.tarpit import AuthTarpit

if TYPE_CHECKING:
    from affidavit.tlog.store import FileLog

log = logging.getLogger(__name__)
access_log = logging.getLogger("affidavit.access")

__all__ = ["create_app"]

_ERRORS: dict[int, str] = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    415: "unsupported_media_type",
    422: "invalid",
    429: "rate_limited",
    500: "internal",
    502: "upstream_failed",
    503: "unavailable",
    504: "timeout",
}

_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)


# the page and the API page: scripts and styles from this server only, no sniffing, no referrer
_PAGE_HEADERS = {
    "Content-Security-Policy": _CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


class _PageFiles(StaticFiles):
    """Static files with the page's headers: ``/static/index.html`` is the page itself, which
    must not run without its CSP nor be framed there either; no file is sniffed."""

    async def get_response(self, path: str, scope: MutableMapping[str, Any]) -> Response:
        response = await super().get_response(path, scope)
        response.headers.update(_PAGE_HEADERS)
        return response


def _error(
    status: int,
    message: str,
    *,
    code: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    body = ApiError(status=status, error=code or _ERRORS.get(status, "error"), message=message)
    return JSONResponse(body.model_dump(), status_code=status, headers=headers)


class TooLarge(StarletteHTTPException):
    """The request body is over the limit (413); raised while the body is read."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            413, f"the request body is larger than {limit} bytes (serve.max_body_mb, max_upload_mb)"
        )


def _status_of(exc: AffidavitError) -> tuple[int, dict[str, str]]:
    """HTTP status and headers for a library error."""
    if isinstance(exc, AuthError):
        hdr = {"WWW-Authenticate": 'Bearer realm="affidavit"'} if exc.status == 401 else {}
        return exc.status, hdr
    if isinstance(exc, QueueFull | NotReady):
        return 503, {"Retry-After": str(_RETRY_AFTER.get())}
    if isinstance(exc, RateLimited):
        return 429, {"Retry-After": str(max(1, math.ceil(exc.retry_after)))}
    if isinstance(exc, Timeout):
        return 504, {}
    if isinstance(exc, ConfigError | InputError):
        return 400, {}
    if isinstance(exc, GenerationError):
        return 502, {}
    if isinstance(exc, StoreError | RetrievalError):
        return 503, {"Retry-After": str(_RETRY_AFTER.get())}
    return 500, {}


class _RetryAfter:
    # the Retry-After hint comes from settings; one value per process is enough
    value = 2

    def get(self) -> int:
        return self.value


_RETRY_AFTER = _RetryAfter()


class _Limits:
    """ASGI middleware: body size limit (413), request metrics and the headers every answer
    carries (request id, nosniff; no-store on the API), around everything else."""

    def __init__(self, app: Any, *, state: _State, routes: Sequence[Any] = ()) -> None:
        self.app = app
        self.state = state
        self.routes = routes

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
        send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        serve = self.state.settings.serve
        upload = scope["path"] == "/v1/documents"
        limit = int((serve.max_upload_mb if upload else serve.max_body_mb) * 1024 * 1024)
        start = time.perf_counter()
        status = {"code": 500}
        given = dict(scope.get("headers") or []).get(b"x-request-id", b"")
        request_id = given.decode("ascii") if _REQUEST_ID.fullmatch(given) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id
        api = scope["path"].startswith("/v1/")

        async def sending(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
                headers = [h for h in message.get("headers", []) if h[0].lower() != b"x-request-id"]
                names = {h[0].lower() for h in headers}
                extra = [(b"x-request-id", request_id.encode("ascii"))]
                # no answer is read as another type than it says (JSON quoting its input)
                if b"x-content-type-options" not in names:
                    extra.append((b"x-content-type-options", b"nosniff"))
                # API answers carry a store's texts and names, read with a key: never cached
                if api and b"cache-control" not in names:
                    extra.append((b"cache-control", b"no-store"))
                message["headers"] = [*headers, *extra]
            await send(message)

        try:
            length = dict(scope.get("headers") or []).get(b"content-length")
            if length is not None and length.isdigit() and int(length) > limit:
                self.state.metrics.rejections.labels(reason="too_large").inc()
                await _error(413, TooLarge(limit).detail)(scope, receive, sending)
                return
            seen = 0

            async def limited() -> MutableMapping[str, Any]:
                nonlocal seen
                message = await receive()
                if message["type"] == "http.request":
                    seen += len(message.get("body", b""))
                    if seen > limit:
                        self.state.metrics.rejections.labels(reason="too_large").inc()
                        raise TooLarge(limit)
                return message

            await self.app(scope, limited, sending)
        finally:
            path = _route_of(scope, self.routes)
            seconds = time.perf_counter() - start
            # any token is a method: a label per made-up one would grow the metrics without end
            method = scope["method"] if scope["method"] in _METHODS else "other"
            self.state.metrics.requests.labels(
                method=method, route=path, status=str(status["code"])
            ).inc()
            self.state.metrics.latency.labels(route=path).observe(seconds)
            if self.state.settings.serve.access_log:
                client = scope.get("client") or ("-", 0)
                access_log.info(
                    '%s "%s %s" %d %.0fms route=%s request_id=%s',
                    safe_one_line(str(client[0]))[:100],
                    scope["method"],
                    safe_one_line(scope["path"])[:300],
                    status["code"],
                    seconds * 1000,
                    path,
                    request_id,
                )


# where a request's write key, checked before its body was read, waits for its dependency
_WRITER_CHECKED = "affidavit.writer_checked"

# the methods the request metrics name; any other is counted as "other"
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

# a request id the client may choose: short, and nothing a log line or a header could misread
_REQUEST_ID = re.compile(rb"[A-Za-z0-9._:-]{1,128}")


def _route_of(scope: Mapping[str, Any], routes: Sequence[Any]) -> str:
    """The route template a request went to (its metrics label), also for requests answered
    before routing (an early 413) and routes FastAPI does not tag (/openapi.json, mounts)."""
    tagged = getattr(scope.get("route"), "path", None)
    if tagged:
        return str(tagged)
    for candidate in routes:
        try:
            match, _ = candidate.matches(scope)
        except Exception:
            continue
        if match != Match.NONE:
            return str(getattr(candidate, "path", "unmatched") or "unmatched")
    return "unmatched"


class _State:
    """Everything one app holds: settings, components, queues, keys, limits, metrics."""

    def __init__(self, settings: Settings, services: Services | None = None) -> None:
        serve = settings.serve
        self.settings = settings
        self.services = services or Services(settings)
        self.metrics = Metrics()
        self.keys = ApiKeyStore(default_keys_path(settings))
        # latched: a server that has keys when it starts, or sees one later, requires one for
        # the rest of its life (revoking every key, or the key file going away, then refuses
        # every request); so does one bound beyond loopback, which `serve` starts only with a
        # key. Checked here, not at the first request: a key file moved away before anyone
        # called opened the server (issue 25.1)
        self.keys_latched = not is_loopback(serve.host)
        _keys_required(self)
        self.rate = RateLimiter(
            per_minute=serve.rate_limit_per_minute, burst=serve.rate_limit_burst
        )
        self.auth_attempts = RateLimiter(
            per_minute=serve.auth_attempts_per_minute, burst=serve.auth_attempts_burst
        )
        self.llm = _WorkQueue("llm", concurrency=serve.llm_concurrency, max_waiting=serve.llm_queue)
        self.verify = _WorkQueue(
            "verify", concurrency=serve.verify_concurrency, max_waiting=serve.verify_queue
        )
        self.jobs = IngestJobs(
            self._ingest,
            settings.resolved_home() / "uploads",
            max_queued=serve.ingest_queue,
            keep_uploads_s=serve.keep_uploads_s,
        )
        self.metrics.watch_queue("llm", lambda: self.llm.depth)
        self.metrics.watch_queue("verify", lambda: self.verify.depth)
        self.metrics.watch_queue("ingest", lambda: self.jobs.depth)
        _RETRY_AFTER.value = serve.retry_after_s

    def _ingest(self, folder: Any) -> Any:
        self.services.require()
        return self.services.ingest(folder)

    def close(self) -> None:
        self.llm.close()
        self.verify.close()
        self.jobs.close()


def create_app(settings: Settings | None = None, *, services: Services | None = None) -> FastAPI:
    """The ASGI app; models load in a background thread when it starts.

    Args:
        settings: the effective settings (default: ``load_settings()``).
        services: components to use instead of loading them (tests, embedding in an app).

    Examples:
        >>> app = create_app()  # doctest: +SKIP
        >>> import uvicorn; uvicorn.run(app, host="127.0.0.1", port=8000)  # doctest: +SKIP
    """
    settings = settings or load_settings()
    state = _State(settings, services)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if not state.services.ready:
            threading.Thread(target=state.services.load, name="affidavit-load", daemon=True).start()
        yield
        state.close()

    app = FastAPI(
        title="affidavit",
        version=_version(),
        summary="Answers questions from your documents and proves every sentence it shows.",
        description=(
            "Every body is a contract of the affidavit library. With API keys configured, send "
            "`Authorization: Bearer <key>`; read keys ask, audit, check and search, write keys "
            "also upload documents."
        ),
        lifespan=lifespan,
        # FastAPI's own /docs and /redoc load their scripts from a CDN: /docs is served from
        # the files installed with the server extra instead (_api_page), nothing from elsewhere
        docs_url=None,
        redoc_url=None,
    )
    app.state.affidavit = state
    _handlers(app, state)
    _routes(app, state)
    _api_page(app)
    _document_security(app)
    web = resources.files("affidavit.server") / "web"
    app.mount("/static", _PageFiles(directory=str(web)), name="static")
    app.add_middleware(_Limits, state=state, routes=app.router.routes)
    # outermost: an address over its failed-check limit is delayed and refused before any of
    # the framework runs (issue 25.7); known keys and /healthz pass undelayed
    app.add_middleware(
        AuthTarpit,
        attempts=state.auth_attempts,
        is_known=state.keys.peek,
        delay_s=settings.serve.auth_tarpit_s,
        max_held=settings.serve.auth_tarpit_max_held,
        on_refuse=lambda reason: state.metrics.rejections.labels(reason=reason).inc(),
    )
    return app


_SECURITY_SCHEME = {
    "bearer": {
        "type": "http",
        "scheme": "bearer",
        "description": "An API key from `affidavit keys api create --name NAME` (read or write "
        "scope). Needed once the server has any key; a loopback server without keys is open.",
    }
}


def _document_security(app: FastAPI) -> None:
    """The schema says which operations need a key (the ``bearer`` scheme) and lists the error
    answers each can really give: 401/403/429 (and 503/504: models loading, queue full, past the
    budget) only where a key is checked, 413 only where a body is read."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        from fastapi.openapi.utils import get_openapi

        schema = get_openapi(
            title=app.title,
            version=app.version,
            summary=app.summary,
            description=app.description,
            routes=app.routes,
        )
        guarded = {}
        for route in app.routes:
            dependant = getattr(route, "dependant", None)
            if dependant is None:
                continue
            names = {getattr(d.call, "__name__", "") for d in dependant.dependencies}
            for method in getattr(route, "methods", ()):
                guarded[(route.path, method.lower())] = bool(names & {"reader", "writer"})  # type: ignore[attr-defined]
        schema.setdefault("components", {}).setdefault("securitySchemes", {}).update(
            _SECURITY_SCHEME
        )
        schemas = schema["components"].setdefault("schemas", {})
        schemas.setdefault("ApiError", ApiError.model_json_schema())
        ref = {"$ref": "#/components/schemas/ApiError"}
        for path, ops in schema.get("paths", {}).items():
            for method, op in ops.items():
                responses = op.setdefault("responses", {})
                needs_key = guarded.get((path, method), False)
                codes: list[int] = []
                if needs_key:
                    op["security"] = [{"bearer": []}]
                    codes += [400, 401, 403, 429, 503, 504]
                if method in ("post", "put", "patch"):
                    codes += [400, 413]
                if "422" in responses or method in ("post", "put", "patch"):
                    codes.append(422)
                for code in codes:
                    entry = responses.setdefault(
                        str(code), {"description": _ERRORS[code].replace("_", " ")}
                    )
                    entry.setdefault("content", {"application/json": {"schema": ref}})
                    if (
                        entry["content"]
                        .get("application/json", {})
                        .get("schema", {})
                        .get("$ref", "")
                        .endswith("/HTTPValidationError")
                    ):
                        entry["content"]["application/json"]["schema"] = ref
        schemas.pop("HTTPValidationError", None)
        schemas.pop("ValidationError", None)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


_DOCS_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>affidavit API</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/api-docs/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="/api-docs/swagger-ui-bundle.js"></script>
<script src="/static/api-docs.js"></script></body></html>
"""


def _api_page(app: FastAPI) -> None:
    """``/docs``: the interactive API page (Swagger UI from the ``fastapi-offline`` package of
    the server extra, served from here, under the page's CSP: no CDN, no inline script)."""
    try:
        import fastapi_offline
    except ImportError:  # pragma: no cover - the server extra installs it
        log.warning("fastapi-offline is not installed: /docs is not served")
        return
    files = resources.files(fastapi_offline) / "static"
    app.mount("/api-docs", _PageFiles(directory=str(files)), name="api-docs")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return HTMLResponse(
            _DOCS_PAGE,
            headers=_PAGE_HEADERS,
        )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("affidavit")
    except PackageNotFoundError:
        return "0"


def _handlers(app: FastAPI, state: _State) -> None:
    @app.exception_handler(AffidavitError)
    async def library_error(request: Request, exc: AffidavitError) -> JSONResponse:
        status, headers = _status_of(exc)
        if status >= 500 and status not in (503, 504):
            log.error(
                "%s %s failed: %s",
                request.method,
                safe_one_line(request.url.path)[:300],
                safe_one_line(str(exc)),
            )
        reason = {401: "unauthorized", 403: "forbidden", 429: "rate_limited", 504: "timeout"}
        if isinstance(exc, QueueFull):
            state.metrics.rejections.labels(reason="queue_full").inc()
        elif status in reason:
            state.metrics.rejections.labels(reason=reason[status]).inc()
        code = "queue_full" if isinstance(exc, QueueFull) else None
        code = "not_ready" if isinstance(exc, NotReady) else code
        return _error(status, exc.message, code=code, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = list(exc.errors())
        bad_json = next((e for e in errors if e.get("type") == "json_invalid"), None)
        if bad_json is not None:
            return _error(400, _json_syntax_message(bad_json, await request.body()))
        parts = []
        for e in errors[:5]:
            loc = ".".join(str(x) for x in e.get("loc", ()) if x != "body") or "body"
            parts.append(f"{loc}: {e.get('msg', 'invalid')}")
        return _error(422, "; ".join(parts) or "invalid request")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail), headers=exc.headers)

    @app.exception_handler(Exception)
    async def crash(request: Request, exc: Exception) -> JSONResponse:
        log.exception("%s %s crashed", request.method, safe_one_line(request.url.path)[:300])
        return _error(500, f"internal error ({type(exc).__name__}); see the server log")


async def _refuse_duplicate_keys(request: Request) -> None:
    """Read the JSON body again, refusing a duplicate key (400): the parser that built the body
    model keeps a key's last value, a client that shows the request may keep its first, so the
    server would answer or check another question or claim than the one shown."""
    from affidavit.core.limits import loads_json, no_duplicate_keys

    try:
        loads_json(await request.body(), "the body", object_pairs_hook=no_duplicate_keys)
    except UnicodeDecodeError:
        raise InputError("the body is not UTF-8 JSON") from None
    except ValueError as exc:  # the body model was built, so the JSON is valid: a duplicate key
        raise InputError(f"the body: not usable JSON: {str(exc)[:200]}") from None


def _json_syntax_message(error: Mapping[str, Any], body: bytes) -> str:
    """'the body is not valid JSON: Expecting ',' delimiter at line 3, column 5' (pydantic
    reports an offset and 'JSON decode error' only)."""
    reason = str((error.get("ctx") or {}).get("error") or "not valid JSON")
    loc = error.get("loc") or ()
    offset = loc[-1] if loc and isinstance(loc[-1], int) else None
    if offset is None:
        return f"the body is not valid JSON: {reason}"
    head = body[:offset].decode("utf-8", "replace")
    line = head.count("\n") + 1
    column = len(head) - (head.rfind("\n") + 1) + 1
    return f"the body is not valid JSON: {reason} at line {line}, column {column}"


def _keys_required(state: _State) -> bool:
    """Whether requests need a key: latched on once the key file has listed any key. A key file
    that cannot be read counts as keys required (AuthError 503 via ConfigError), never as none."""
    if not state.keys_latched:
        try:
            state.keys_latched = state.keys.ever_had_keys()
        except ConfigError as exc:
            state.keys_latched = True
            log.error("API key file unreadable: %s; refusing requests", exc.message)
    return state.keys_latched


async def _caller(request: Request, scope: ApiScope, state: _State) -> str:
    """Check the bearer key (when keys are configured) and the rate limit; returns the caller."""
    if _keys_required(state):
        try:
            any_active = state.keys.active()
        except ConfigError as exc:
            raise AuthError(
                "this server cannot read its API key file; every request is refused until it "
                "is repaired",
                status=503,
            ) from exc
        if not any_active:
            raise AuthError(
                "this server requires an API key and every key has been revoked: every request "
                "is refused (create one with `affidavit keys api create --name NAME`)",
                status=401,
            )
        header = request.headers.get("authorization", "")
        kind, _, token = header.partition(" ")
        if not header:
            raise AuthError(
                "this server requires an API key: send 'Authorization: Bearer <key>' "
                "(create one with `affidavit keys api create --name NAME`)",
                status=401,
            )
        if kind.lower() != "bearer" or not token.strip():
            raise AuthError("the Authorization header must be 'Bearer <key>'", status=401)
        token = token.strip()
        # a key seen before is in memory; a new one costs one HMAC, after the client address
        # passed its limit of failed token checks (wrong guesses cannot buy hashing or a timing
        # signal). The check is reserved before hashing and given back when the key is good:
        # only failures count, so a flood from a shared address never uses up a good key's place
        client = request.client.host if request.client else "unknown"
        try:
            info = state.keys.known(token)
            if info is None:
                state.auth_attempts.check(client)
                try:
                    info = await run_in_threadpool(state.keys.authenticate, token)
                except AuthError:
                    raise  # a wrong token: the check counts
                except BaseException:
                    state.auth_attempts.refund(client)  # the server's failure, not the client's
                    raise
                state.auth_attempts.refund(client)
        except ConfigError as exc:
            log.error("API keys cannot be checked: %s", exc.message)
            raise AuthError(
                "this server cannot check API keys (its key files are damaged); every request "
                "is refused until they are repaired",
                status=503,
            ) from exc
        if scope == "write" and info.scope != "write":
            raise AuthError(
                f"API key {info.id} ({info.name}) has the read scope; this needs a write key",
                status=403,
            )
        caller = f"key:{info.id}"
    else:
        caller = f"ip:{request.client.host if request.client else 'unknown'}"
    state.rate.check(caller)
    return caller


def _routes(app: FastAPI, state: _State) -> None:
    services = state.services
    serve = state.settings.serve

    async def reader(request: Request) -> str:
        return await _caller(request, "read", state)

    async def writer(request: Request) -> str:
        checked = request.scope.get(_WRITER_CHECKED)
        if isinstance(checked, str):
            return checked  # by _KeyBeforeBody, before the body: checked and counted once
        return await _caller(request, "write", state)

    class _KeyBeforeBody(APIRoute):
        """A route whose write key is checked before its body is read. FastAPI reads and
        parses a body before any dependency runs: an upload without a key, or with a read key,
        was received whole, parsed and spooled to disk before its 401 or 403."""

        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            handler = super().get_route_handler()

            async def checked(request: Request) -> Response:
                request.scope[_WRITER_CHECKED] = await _caller(request, "write", state)
                return await handler(request)

            return checked

    # -- the page ------------------------------------------------------------------------------

    @app.get("/", include_in_schema=False)
    def page() -> HTMLResponse:
        html = (resources.files("affidavit.server") / "web" / "index.html").read_text("utf-8")
        return HTMLResponse(
            html,
            headers=_PAGE_HEADERS,
        )

    # -- health --------------------------------------------------------------------------------

    @app.get("/healthz", tags=["health"], summary="The process is up.")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get(
        "/readyz",
        tags=["health"],
        summary="Models loaded and store readable (503 until then).",
        response_model=Readiness,
        responses={503: {"model": Readiness, "description": "not ready"}},
    )
    def readyz() -> JSONResponse:
        ready = services.readiness()
        return JSONResponse(
            ready.model_dump(mode="json"),
            status_code=200 if ready.ready else 503,
            headers=None if ready.ready else {"Retry-After": str(serve.retry_after_s)},
        )

    @app.get(
        "/metrics",
        tags=["health"],
        summary="Prometheus metrics.",
        response_class=Response,
        responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
    )
    def metrics() -> Response:
        return Response(state.metrics.render(), media_type=CONTENT_TYPE)

    # -- ask -----------------------------------------------------------------------------------

    @app.post(
        "/v1/ask",
        tags=["ask"],
        summary="Answer a question; every shown sentence verified (JSON, or SSE when asked).",
        response_model=AskResponse,
        responses={
            200: {
                "content": {
                    "text/event-stream": {
                        "schema": {
                            "type": "string",
                            "description": "Events retrieval, grading, refinement, token..., "
                            "claim..., certificate, then result or error; each `data:` is the "
                            "JSON of the event's contract (affidavit.core.service).",
                        }
                    }
                }
            }
        },
    )
    async def ask(body: AskRequest, request: Request, caller: str = Depends(reader)) -> Any:
        services.require()
        await _refuse_duplicate_keys(request)
        ticket = state.llm.enter()  # full: 503 now, before any stream starts
        if "text/event-stream" in request.headers.get("accept", ""):
            return StreamingResponse(
                _event_stream(state, body, ticket),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
            )

        def stop_when_abandoned(_: Any = None) -> None:  # called in the worker thread
            if ticket.cancel.is_set():
                raise Cancelled("the request ran past its budget or the client went away")

        def work() -> AskResponse:
            # the JSON answer is generated piece by piece too, so that a request past its budget
            # (504) or a client gone stops its generation at the next piece, not minutes later
            # (issue 25.8: the LLM slot stayed busy about 84 s after a 6 s budget)
            return services.ask(body, on_token=stop_when_abandoned, on_event=stop_when_abandoned)

        watcher = asyncio.ensure_future(_cancel_when_gone(request, ticket.cancel))
        try:
            response = await ticket.run(work, timeout=serve.request_timeout_s)
        except BaseException:
            ticket.leave()
            raise
        finally:
            watcher.cancel()
        _count_ask(state, response)
        return _json(response)

    # -- audit, check --------------------------------------------------------------------------

    @app.post(
        "/v1/audit",
        tags=["audit"],
        summary="The provenance audit (the JSON `affidavit audit` reads; its --json report).",
        response_model=AuditReport,
    )
    async def audit(
        body: AuditInput,
        request: Request,
        mode: Annotated[EnforcementMode | None, Query(description="Overrides audit.mode.")] = None,
        verify: Annotated[
            bool, Query(description="Also run the entailment verifier (audit.use_verifier).")
        ] = False,
        caller: str = Depends(reader),
    ) -> Any:
        services.require()
        # a duplicate key could make the server audit another answer, or keep another source,
        # than the one a client shows (400, as `affidavit audit` refuses such a file)
        await _refuse_duplicate_keys(request)
        report = await state.verify.run(
            lambda: services.audit(body, mode=mode, verify=verify),
            timeout=serve.request_timeout_s,
        )
        for c in report.claims:
            state.metrics.verdicts.labels(
                endpoint="audit", outcome="supported" if c.supported else "unsupported"
            ).inc()
        return _json(report)

    @app.post(
        "/v1/check",
        tags=["verify"],
        summary="Verify claims against evidence, one pair or a list (as `affidavit check`).",
        response_model=CheckOutput | list[CheckOutput],
    )
    async def check(
        body: CheckInput | list[CheckInput], request: Request, caller: str = Depends(reader)
    ) -> Any:
        services.require()
        await _refuse_duplicate_keys(request)
        items = body if isinstance(body, list) else [body]
        if len(items) > serve.max_check_pairs:
            raise InputError(
                f"{len(items)} pairs in one request; at most {serve.max_check_pairs} "
                "(serve.max_check_pairs)"
            )
        out = await state.verify.run(lambda: services.check(items), timeout=serve.request_timeout_s)
        for row in out:
            state.metrics.verdicts.labels(endpoint="check", outcome=row.label).inc()
        return _json(out if isinstance(body, list) else out[0])

    # -- search, documents, jobs ---------------------------------------------------------------

    @app.get(
        "/v1/search",
        tags=["store"],
        summary="Search the store (as `affidavit search`).",
        response_model=SearchResponse,
    )
    async def search(
        q: Annotated[
            str, Query(min_length=1, max_length=MAX_QUERY_CHARS, description="The query.")
        ],
        k: Annotated[int, Query(ge=1, le=100, description="Hits to return.")] = 10,
        mode: Annotated[
            Literal["bm25", "dense", "hybrid"] | None,
            Query(description="Ranking (default retrieve.mode)."),
        ] = None,
        caller: str = Depends(reader),
    ) -> Any:
        services.require()
        chosen = mode or state.settings.retrieve.mode
        found = await state.verify.run(
            lambda: services.search(q, k, chosen), timeout=serve.request_timeout_s
        )
        return _json(found)

    async def documents(
        files: Annotated[list[UploadFile], File(description="PDF, DOCX, HTML, text, JSONL.")],
        caller: str = Depends(writer),
    ) -> IngestJob:
        services.require()
        data = [(f.filename or "upload", await f.read()) for f in files]
        return state.jobs.submit(data)

    app.router.add_api_route(
        "/v1/documents",
        documents,
        methods=["POST"],
        tags=["store"],
        status_code=202,
        summary="Upload files to ingest; returns a job to poll at /v1/jobs/{id}.",
        response_model=IngestJob,
        route_class_override=_KeyBeforeBody,
    )

    document_routes(app, services, reader, writer)

    @app.get(
        "/v1/jobs/{job_id}",
        tags=["store"],
        summary="An ingest job: queued, running, done or failed, with each file's outcome.",
        response_model=IngestJob,
        responses={404: {"model": ApiError, "description": "no such job"}},
    )
    async def job(job_id: str, caller: str = Depends(reader)) -> IngestJob:
        found = state.jobs.get(job_id)
        if found is None:
            raise StarletteHTTPException(404, f"no job {job_id!r} (jobs live in server memory)")
        return found

    # -- certificates --------------------------------------------------------------------------

    @app.post(
        "/v1/certificates/verify",
        tags=["certify"],
        summary="Check a certificate: schema, signature, trusted signer, evidence hashes, and "
        "the log entry it carries.",
        response_model=CertificateVerification,
    )
    async def verify_certificate(
        body: dict[str, Any], request: Request, caller: str = Depends(reader)
    ) -> CertificateVerification:
        from affidavit.certify.canonical import loads_strict

        services.require()
        # read again as `certificate verify` reads a file: a duplicate key (which the parser
        # above resolves to the last one, a client's maybe to the first) or a NaN could make
        # the server check another certificate than the one a client shows (400)
        tree = loads_strict(await request.body(), source="the body")
        return await state.verify.run(
            lambda: services.verify_certificate(tree), timeout=serve.request_timeout_s
        )

    @app.get(
        "/v1/keys/public",
        tags=["certify"],
        summary="The public key this server signs certificates with.",
        response_model=PublicKeyInfo,
        responses={404: {"model": ApiError, "description": "no signing key"}},
    )
    async def public_key(caller: str = Depends(reader)) -> PublicKeyInfo:
        services.require()
        info = services.public_key()
        if info is None:
            raise StarletteHTTPException(
                404, f"this server has no signing key ({services.signing_note})"
            )
        return info

    # -- transparency log (docs/concepts/transparency-log.md) ----------------------------------

    def _log_call(work: Callable[[FileLog], Any]) -> Awaitable[Any]:
        services.require()
        tlog = services.transparency_log()
        if tlog is None or tlog.checkpoint() is None:
            why = "the log is off" if tlog is None else "nothing has been logged yet"
            raise StarletteHTTPException(404, f"this server has no transparency log ({why})")

        def run() -> Any:
            try:
                return work(tlog)
            except TransparencyLogError as exc:
                raise StarletteHTTPException(404, exc.message) from None
            finally:
                tlog.close()

        return run_in_threadpool(run)

    log_404: dict[int | str, dict[str, Any]] = {
        404: {"model": ApiError, "description": "no log, or no such entry or size"}
    }

    @app.get(
        "/v1/log/checkpoint",
        tags=["log"],
        summary="The log's latest signed checkpoint (C2SP tlog-checkpoint, in `note`).",
        response_model=Checkpoint,
        responses=log_404,
    )
    async def log_checkpoint(caller: str = Depends(reader)) -> Checkpoint:
        found: Checkpoint = await _log_call(lambda t: t.checkpoint())
        return found

    @app.get(
        "/v1/log/entries/{index}",
        tags=["log"],
        summary="One entry of the log: a certificate's sha256 and its leaf hash.",
        response_model=LogEntryRecord,
        responses=log_404,
    )
    async def log_entry(
        index: Annotated[int, PathParam(ge=0)], caller: str = Depends(reader)
    ) -> LogEntryRecord:
        def get(t: FileLog) -> LogEntryRecord:
            if index >= t.size():
                raise StarletteHTTPException(404, f"no entry {index} (the log has {t.size()})")
            return LogEntryRecord(
                index=index, entry=t.entry(index).hex(), leaf_hash=t.node(0, index).hex()
            )

        found: LogEntryRecord = await _log_call(get)
        return found

    @app.get(
        "/v1/log/proof/inclusion",
        tags=["log"],
        summary="The inclusion proof of a certificate (by its sha256, the entry) at a tree size.",
        response_model=InclusionProof,
        responses=log_404,
    )
    async def log_inclusion(
        entry: Annotated[str, Query(alias="hash", pattern="^[0-9a-f]{64}$")],
        size: Annotated[int | None, Query(ge=1)] = None,
        caller: str = Depends(reader),
    ) -> InclusionProof:
        def prove(t: FileLog) -> InclusionProof:
            index = t.find(bytes.fromhex(entry), size)
            if index is None:
                where = f"the first {size}" if size is not None else "the"
                raise StarletteHTTPException(404, f"no such entry among {where} entries")
            return t.prove_inclusion(index, size)

        found: InclusionProof = await _log_call(prove)
        return found

    @app.get(
        "/v1/log/proof/consistency",
        tags=["log"],
        summary="The proof that the tree of size `from` is a prefix of the tree of size `to`.",
        response_model=ConsistencyProof,
        responses=log_404,
    )
    async def log_consistency(
        old: Annotated[int, Query(alias="from", ge=1)],
        new: Annotated[int | None, Query(alias="to", ge=1)] = None,
        caller: str = Depends(reader),
    ) -> ConsistencyProof:
        found: ConsistencyProof = await _log_call(lambda t: t.prove_consistency(old, new))
        return found


def _json(model: Any) -> Response:
    # the body is already a validated contract: skip FastAPI's re-validation and re-encoding
    if isinstance(model, list):
        body = "[" + ",".join(m.model_dump_json() for m in model) + "]"
    else:
        body = model.model_dump_json()
    return Response(body, media_type="application/json")


def _count_ask(state: _State, response: AskResponse) -> None:
    for c in response.result.claims:
        state.metrics.verdicts.labels(endpoint="ask", outcome=c.decision).inc()


async def _cancel_when_gone(request: Request, cancel: threading.Event) -> None:
    """Set ``cancel`` when the client goes away. A JSON answer sends nothing until it is done,
    so nothing else notices a client that left, and its generation ran on to the budget (issue
    25.8). The body is already read: the next message is the disconnect."""
    while (await request.receive())["type"] != "http.disconnect":
        await asyncio.sleep(0.2)  # a server that answers at once with empty bodies: no spinning
    cancel.set()


def _sse(event: Any) -> bytes:
    return f"event: {event.kind}\ndata: {event.model_dump_json()}\n\n".encode()


_DONE = object()


async def _event_stream(state: _State, body: AskRequest, ticket: Any) -> AsyncIterator[bytes]:
    """The events of one streamed answer; a client that goes away stops the work (and its slot)."""
    loop = asyncio.get_running_loop()
    events: asyncio.Queue[Any] = asyncio.Queue()

    def push(event: Any) -> None:  # called in the worker thread
        if ticket.cancel.is_set():
            raise Cancelled("the client went away")
        loop.call_soon_threadsafe(events.put_nowait, event)

    # strict mode shows only the guarded answer, on every channel (the page, the terminal and
    # this stream alike): the draft's pieces are not sent as it is written, since a sentence
    # among them may be withheld; the guarded answer goes out as one token event once decided
    # the mode is the pipeline's (services built from other settings than the app's may default
    # to strict where the app does not); strict when either says so, so a draft never streams
    # where its answer will be guarded
    strict = "strict" in (
        state.services.display_mode(body),
        body.mode or state.settings.policy.display,
    )

    def on_token(piece: str) -> None:  # called in the worker thread
        if strict:
            if ticket.cancel.is_set():
                raise Cancelled("the client went away")
            return
        push(TokenEvent(text=piece))

    def work() -> AskResponse:
        return state.services.ask(body, on_token=on_token, on_event=push)

    task = asyncio.ensure_future(ticket.run(work, timeout=state.settings.serve.request_timeout_s))
    task.add_done_callback(lambda _: events.put_nowait(_DONE))
    try:
        while True:
            event = await events.get()
            if event is _DONE:
                break
            yield _sse(event)
        try:
            response: AskResponse = task.result()
        except AffidavitError as exc:
            status, _ = _status_of(exc)
            error = ApiError(status=status, error=_ERRORS.get(status, "error"), message=exc.message)
            yield _sse(ErrorEvent(error=error))
            return
        _count_ask(state, response)
        # the claim events went out as each claim was decided (AskPipeline's verify stage)
        if strict and response.result.answer:
            yield _sse(TokenEvent(text=response.result.answer))
        if response.certificate is not None:
            yield _sse(CertificateEvent(certificate=response.certificate))
        yield _sse(ResultEvent(response=response))
    finally:
        ticket.leave()
        if not task.done():
            ticket.cancel.set()
            task.cancel()


def app_from_environment() -> Any:
    """The uvicorn factory ``affidavit serve`` starts (settings from TOML and environment)."""
    import os

    config = os.environ.get("AFFIDAVIT_SERVE_CONFIG") or None
    if not access_log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s access %(message)s"))
        access_log.addHandler(handler)
        access_log.setLevel(logging.INFO)
        access_log.propagate = False
    return create_app(load_settings(config))
