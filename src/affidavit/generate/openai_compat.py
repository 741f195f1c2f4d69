"""Any OpenAI-compatible chat server (OpenAI, Ollama, vLLM, llama.cpp server, Groq...) over httpx.

Timeouts, retries with exponential backoff on 429 / 5xx / connection errors (``Retry-After`` is
honoured, capped), SSE streaming (each line, the whole stream's bytes and its time capped), and
JSON-schema output through ``response_format`` where the server supports it. A server that
rejects ``response_format`` is asked again with the schema in a system instruction, and the
answer is parsed and checked against the schema (fail closed: a non-conforming answer raises
`GenerationError`).

Examples:
    >>> from affidavit.core.types import Message
    >>> llm = OpenAICompatGenerator("http://127.0.0.1:11434/v1", model="qwen2.5:1.5b")
    >>> llm.generate([Message(role="user", content="Hi")])  # doctest: +SKIP
    'Hello! How can I help?'
"""

from __future__ import annotations

import json
import logging
import math
import random
import re
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal

import httpx

from affidavit.core.answers import (
    ACCEPT_ENCODING,
    AnswerTooLarge,
    AnswerTooSlow,
    AnswerUndecodable,
    iter_answer,
    iter_answer_text,
    read_answer,
)
from affidavit.core.errors import ConfigError, GenerationError, GenerationTruncatedError
from affidavit.core.types import Message
from affidavit.generate._json import extract_json, schema_errors, schema_instruction

log = logging.getLogger(__name__)

JsonMode = Literal["auto", "json_schema", "prompt"]
_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
_MAX_RETRY_AFTER_S = 30.0
# what one answer may hold: a completion (or an error body), and one line of a stream
MAX_ANSWER_BYTES = 8 << 20
MAX_ERROR_BYTES = 64 << 10
MAX_STREAM_LINE_BYTES = 1 << 20
# what one whole stream may hold, keep-alive comments and empty events included (a stream is
# not kept whole: this bounds a server that never stops sending, not memory)
MAX_STREAM_BYTES = 32 << 20
# finish reasons that mean the answer was cut short, not finished
_CUT = frozenset({"length", "content_filter"})


def _messages_payload(messages: Sequence[Message]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in messages]


class OpenAICompatGenerator:
    """A `Generator` for an OpenAI-compatible ``/v1`` endpoint.

    Args:
        base_url: the API base, e.g. ``http://localhost:11434/v1`` (``/chat/completions`` is
            appended).
        model: model name sent in each request.
        api_key: bearer token, if the server needs one.
        timeout_s: per-request timeout (connect, read, write); a completion's whole answer is
            read within it too.
        stream_timeout_s: the time a whole stream may take from the moment it opens (each read
            is still bounded by ``timeout_s``): past it, `GenerationError`.
        max_retries: extra attempts after a retryable failure (429, 5xx, connection error).
        backoff_s: first backoff delay; doubled on each retry, with jitter.
        temperature: sampling temperature.
        max_tokens: default completion budget.
        json_mode: ``auto`` (try ``response_format``, fall back to the prompt), ``json_schema``
            (always ``response_format``) or ``prompt`` (never send ``response_format``).
        transport: an httpx transport (tests).

    Raises:
        ConfigError: an invalid base URL or setting.
    """

    def __init__(
        self,
        base_url: str,
        *,
        model: str = "default",
        api_key: str | None = None,
        timeout_s: float = 120.0,
        stream_timeout_s: float = 600.0,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        temperature: float = 0.0,
        max_tokens: int = 256,
        json_mode: JsonMode = "auto",
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(
                "generate.base_url must start with http:// or https://, got "
                f"{base_url.split('://', 1)[0]!r}://..."
            )
        if max_retries < 0 or timeout_s <= 0 or stream_timeout_s <= 0 or max_tokens < 1:
            raise ConfigError(
                "max_retries must be >= 0, timeout_s and stream_timeout_s > 0, max_tokens >= 1"
            )
        if json_mode not in ("auto", "json_schema", "prompt"):
            raise ConfigError(
                f"json_mode must be one of auto, json_schema, prompt; got {json_mode!r}"
            )
        from affidavit.core.urls import SECRET_PARAM, HiddenSecretsTransport, Redactor

        try:
            url = httpx.URL(base_url.rstrip("/"))
            self._redactor = Redactor(str(url), [api_key])
        except httpx.InvalidURL:
            raise ConfigError("generate.base_url is not a valid URL") from None
        # what errors, logs and the recorded configuration name: no password, no secret
        # parameter (``base_url`` and ``shown_url`` are the same, kept for readers of either)
        self.base_url = self.shown_url = self._redactor.shown_url
        # the query is kept (httpx's base_url would put the path after it); a password goes as
        # Basic auth and a secret query value is put back by the transport, never in a URL that
        # httpx logs
        auth = httpx.BasicAuth(url.username, url.password) if url.userinfo else None
        path = url.path.rstrip("/") + "/chat/completions"
        real = url.copy_with(path=path, username=None, password=None)
        if any(SECRET_PARAM.search(k) for k in url.params):
            hidden = HiddenSecretsTransport(transport, real)
            self._endpoint, transport = hidden.shown, hidden
        else:
            self._endpoint = real
        self.model = model
        self.name = f"openai:{model}"
        self.timeout_s = timeout_s
        self.stream_timeout_s = stream_timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.json_mode: JsonMode = json_mode
        # learnt on first use in auto mode: does the server accept response_format json_schema?
        self._schema_supported: bool | None = (
            None if json_mode == "auto" else (json_mode == "json_schema")
        )
        # only what `read_answer` inflates in bounded steps (httpx also offers zstd and br)
        headers = {"Content-Type": "application/json", "Accept-Encoding": ACCEPT_ENCODING}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(
            auth=auth,
            headers=headers,
            timeout=httpx.Timeout(timeout_s),
            transport=transport,
        )

    def config(self) -> dict[str, Any]:
        """The effective configuration, secrets left out (for certificates)."""
        return {
            "backend": "openai",
            "base_url": self.shown_url,
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "json_mode": self.json_mode,
            "max_retries": self.max_retries,
            "timeout_s": self.timeout_s,
            "stream_timeout_s": self.stream_timeout_s,
        }

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    # -- requests -------------------------------------------------------------------------

    def _body(
        self, messages: Sequence[Message], max_tokens: int | None, stream: bool
    ) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": _messages_payload(messages),
            "temperature": self.temperature,
            "max_tokens": max_tokens or self.max_tokens,
            "stream": stream,
        }

    def _redact(self, text: str) -> str:
        """``text`` (a server's answer, an exception's message) without the secrets sent."""
        return self._redactor.redact(text)

    def _delay(self, attempt: int, response: httpx.Response | None) -> float:
        if response is not None:
            retry_after = response.headers.get("retry-after")
            if retry_after:
                try:
                    wait = float(retry_after)
                except ValueError:
                    wait = math.nan
                if wait >= 0:  # not NaN, not negative
                    return min(wait, _MAX_RETRY_AFTER_S)
        base = self.backoff_s * (2**attempt)
        return float(base + random.uniform(0, base / 4))

    def _send(self, body: dict[str, Any], *, stream: bool) -> httpx.Response:
        """POST with retries; returns an open response with a 2xx status (caller closes it)."""
        last: str = ""
        for attempt in range(self.max_retries + 1):
            response: httpx.Response | None = None
            try:
                request = self._client.build_request("POST", self._endpoint, json=body)
                response = self._client.send(request, stream=stream)
            except httpx.TransportError as exc:
                last = self._redact(f"{type(exc).__name__}: {exc}")
            else:
                if response.status_code < 300:
                    return response
                try:
                    raw = self._read(response, MAX_ERROR_BYTES, cut_off=True)
                except GenerationError as exc:
                    raw = exc.message.encode()
                finally:
                    response.close()
                text = self._redact(raw.decode("utf-8", "replace"))
                last = f"HTTP {response.status_code}: {text[:300]}"
                if response.status_code not in _RETRY_STATUS:
                    raise GenerationError(
                        f"{self.shown_url} refused the request: {last}",
                        source=self.shown_url,
                        status=response.status_code,
                        body=text[:2000],
                    )
            if attempt < self.max_retries:
                delay = self._delay(attempt, response)
                log.warning(
                    "generation request failed, retrying",
                    extra={"attempt": attempt + 1, "delay_s": delay, "error": last},
                )
                time.sleep(delay)
        raise GenerationError(
            f"{self.shown_url} failed after {self.max_retries + 1} attempts: {last}",
            source=self.shown_url,
        )

    def _content(self, data: Any, source: str) -> str:
        try:
            choice = data["choices"][0]
            content = choice["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise GenerationError(
                "malformed completion (no choices[0].message.content): "
                + self._redact(str(data)[:200]),
                source=source,
            ) from exc
        if not isinstance(content, str):
            raise GenerationError("completion content is not text", source=source)
        finish = choice.get("finish_reason") if isinstance(choice, dict) else None
        if finish in _CUT:
            raise _cut(finish, source)
        return content

    def _read(self, response: httpx.Response, limit: int, *, cut_off: bool = False) -> bytes:
        """The body, at most ``limit`` bytes (or a `GenerationError`, unless ``cut_off``: then
        the first ``limit``), read whole within ``timeout_s``, inflated in bounded steps."""
        try:
            return read_answer(response, limit, self.timeout_s, cut_off=cut_off)
        except AnswerUndecodable as exc:
            raise self._undecodable(exc) from None
        except AnswerTooLarge:
            raise GenerationError(
                f"{self.shown_url} sent an answer over {limit >> 20} MiB; not read",
                source=self.shown_url,
            ) from None
        except AnswerTooSlow:
            raise GenerationError(
                f"{self.shown_url} did not finish its answer within timeout_s "
                f"({self.timeout_s:g} s)",
                source=self.shown_url,
            ) from None
        except httpx.HTTPError as exc:
            raise GenerationError(
                f"reading the answer from {self.shown_url} failed: "
                + self._redact(f"{type(exc).__name__}: {exc}"),
                source=self.shown_url,
            ) from exc

    def _undecodable(self, exc: AnswerUndecodable) -> GenerationError:
        return GenerationError(
            f"{self.shown_url} sent an answer that cannot be decoded: {self._redact(str(exc))}",
            source=self.shown_url,
        )

    def _complete(self, body: dict[str, Any]) -> str:
        response = self._send(body, stream=True)
        try:
            raw = self._read(response, MAX_ANSWER_BYTES)
        finally:
            response.close()
        try:
            data = json.loads(raw)
        except ValueError as exc:
            text = raw[:200].decode("utf-8", "replace")
            raise GenerationError(
                f"{self.shown_url} returned non-JSON: {self._redact(text)}",
                source=self.shown_url,
            ) from exc
        return self._content(data, self.shown_url)

    # -- Generator protocol ---------------------------------------------------------------

    def generate(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> str:
        """Return the full completion; with ``json_schema``, a JSON text that conforms to it.

        Raises:
            GenerationTruncatedError: the server cut the answer short (``finish_reason``).
            GenerationError: the server failed after retries, refused the request, or returned
                output that is not JSON conforming to ``json_schema``.
        """
        body = self._body(messages, max_tokens, stream=False)
        if json_schema is None:
            return self._complete(body)
        if self._schema_supported is not False:
            constrained = dict(body)
            constrained["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "response", "schema": json_schema, "strict": True},
            }
            try:
                text = self._complete(constrained)
                self._schema_supported = True
                return self._checked(text, json_schema)
            except GenerationError as exc:
                status = exc.context.get("status")
                # 400/404/415/422: the server does not know response_format; anything else is real
                if self.json_mode == "json_schema" or status not in (400, 404, 415, 422):
                    raise
                log.info("server rejected response_format; falling back to prompt-only JSON")
                self._schema_supported = False
        prompted = [Message(role="system", content=schema_instruction(json_schema)), *messages]
        return self._checked(self._complete(self._body(prompted, max_tokens, False)), json_schema)

    def _checked(self, text: str, schema: dict[str, Any]) -> str:
        try:
            value = extract_json(text)
        except ValueError as exc:
            raise GenerationError(str(exc), source=self.shown_url) from exc
        problems = schema_errors(value, schema)
        if problems:
            raise GenerationError(
                f"model output does not match the JSON schema: {'; '.join(problems[:5])}",
                source=self.shown_url,
            )
        return json.dumps(value, ensure_ascii=False)

    def stream(
        self, messages: Sequence[Message], *, max_tokens: int | None = None
    ) -> Iterator[str]:
        """Yield text pieces from the server's SSE stream as they arrive.

        Retries apply only before the stream opens: a stream cut mid-way raises rather than
        replaying pieces the caller has already shown.

        Raises:
            GenerationTruncatedError: after the last piece, when the server says it cut the
                answer short (``finish_reason`` ``length`` or ``content_filter``).
            GenerationError: the request failed, or the stream broke, carried an error, ended
                before the server said the answer was complete (neither ``[DONE]`` nor a
                ``finish_reason``), or went on past ``stream_timeout_s`` or `MAX_STREAM_BYTES`
                (keep-alives and empty events count: a server that never ends its answer is
                cut, never taken as complete).
        """
        response = self._send(self._body(messages, max_tokens, stream=True), stream=True)
        finish: str | None = None
        try:
            for line in self._lines(response):
                if not line.startswith("data:"):
                    continue  # SSE comments, event names, keep-alives
                payload = line[5:].strip()
                if payload == "[DONE]":
                    break
                try:
                    event = json.loads(payload)
                except ValueError as exc:
                    raise GenerationError(
                        f"malformed stream event: {self._redact(payload[:200])}",
                        source=self.shown_url,
                    ) from exc
                if isinstance(event, dict) and "error" in event:
                    raise GenerationError(
                        f"server error mid-stream: {self._redact(str(event['error']))[:500]}",
                        source=self.shown_url,
                    )
                try:
                    choice = event["choices"][0]
                    delta = choice.get("delta") or {}
                except (KeyError, IndexError, TypeError, AttributeError):
                    continue  # e.g. a final usage-only event
                piece = delta.get("content")
                if piece:
                    yield piece
                finish = choice.get("finish_reason") or finish
            else:
                if finish is None:
                    # neither [DONE] nor a finish reason: the stream was cut mid-answer
                    raise GenerationError(
                        f"the stream from {self.shown_url} ended before the server said the "
                        "answer was complete",
                        source=self.shown_url,
                    )
        except httpx.HTTPError as exc:
            raise GenerationError(
                f"stream from {self.shown_url} broke: "
                + self._redact(f"{type(exc).__name__}: {exc}"),
                source=self.shown_url,
            ) from exc
        finally:
            response.close()
        if finish in _CUT:
            raise _cut(finish, self.shown_url)

    def _lines(self, response: httpx.Response) -> Iterator[str]:
        """The stream's lines, none over `MAX_STREAM_LINE_BYTES` (httpx buffers a line whole),
        inflated in bounded steps (httpx inflated each read whole), the whole stream within
        ``stream_timeout_s`` and `MAX_STREAM_BYTES` (decoded)."""
        buffer = ""
        try:
            texts = iter_answer_text(self._capped(iter_answer(response)))
        except AnswerUndecodable as exc:
            raise self._undecodable(exc) from None
        for text in _undecoded_as(texts, self._undecodable):
            buffer += text
            *lines, buffer = re.split(r"\r\n|\r|\n", buffer)
            yield from lines
            if len(buffer) > MAX_STREAM_LINE_BYTES:
                raise GenerationError(
                    f"{self.shown_url} sent a stream line over "
                    f"{MAX_STREAM_LINE_BYTES >> 20} MiB; not read",
                    source=self.shown_url,
                )
        if buffer:
            yield buffer

    def _capped(self, pieces: Iterator[bytes]) -> Iterator[bytes]:
        """``pieces``, up to `MAX_STREAM_BYTES` in all and within ``stream_timeout_s`` (from
        now): each read is bounded by ``timeout_s``, but a server may keep sending keep-alives
        or empty events forever."""
        limit = MAX_STREAM_BYTES
        deadline = time.monotonic() + self.stream_timeout_s
        total = 0
        for piece in pieces:
            total += len(piece)
            if total > limit:
                raise GenerationError(
                    f"{self.shown_url} sent a stream over {limit / (1 << 20):g} MiB without "
                    "finishing its answer; not read further",
                    source=self.shown_url,
                )
            if time.monotonic() > deadline:
                raise GenerationError(
                    f"{self.shown_url} did not finish its stream within "
                    f"generate.stream_timeout_s ({self.stream_timeout_s:g} s)",
                    source=self.shown_url,
                )
            yield piece


def _undecoded_as(
    texts: Iterator[str], error: Callable[[AnswerUndecodable], GenerationError]
) -> Iterator[str]:
    """``texts``, a damaged compressed stream raised as ``error`` makes it."""
    try:
        yield from texts
    except AnswerUndecodable as exc:
        raise error(exc) from None


def _cut(reason: str, source: str) -> GenerationTruncatedError:
    what = (
        "its token budget (max_tokens) or context window ran out"
        if reason == "length"
        else ("a content filter stopped it")
    )
    return GenerationTruncatedError(
        f"the answer was cut short: {what} (finish_reason={reason})", source=source, reason=reason
    )
