"""Any OpenAI-compatible chat server (OpenAI, Ollama, vLLM, llama.cpp server, Groq...) over httpx.

Timeouts, retries with exponential backoff on 429 / 5xx / connection errors (``Retry-After`` is
honoured, capped), SSE streaming, and JSON-schema output through ``response_format`` where the
server supports it. A server that rejects ``response_format`` is asked again with the schema in a
system instruction, and the answer is parsed and checked against the schema (fail closed: a
non-conforming answer raises `GenerationError`).

Examples:
    >>> from affidavit.core.types import Message
    >>> llm = OpenAICompatGenerator("http://127.0.0.1:11434/v1", model="qwen2.5:1.5b")
    >>> llm.generate([Message(role="user", content="Hi")])  # doctest: +SKIP
    'Hello! How can I help?'
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Iterator, Sequence
from typing import Any, Literal

import httpx

from affidavit.core.errors import ConfigError, GenerationError
from affidavit.core.types import Message
from affidavit.generate._json import extract_json, schema_errors, schema_instruction

log = logging.getLogger(__name__)

JsonMode = Literal["auto", "json_schema", "prompt"]
_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
_MAX_RETRY_AFTER_S = 30.0


def _messages_payload(messages: Sequence[Message]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in messages]


class OpenAICompatGenerator:
    """A `Generator` for an OpenAI-compatible ``/v1`` endpoint.

    Args:
        base_url: the API base, e.g. ``http://localhost:11434/v1`` (``/chat/completions`` is
            appended).
        model: model name sent in each request.
        api_key: bearer token, if the server needs one.
        timeout_s: per-request timeout (connect, read, write).
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
        max_retries: int = 2,
        backoff_s: float = 0.5,
        temperature: float = 0.0,
        max_tokens: int = 256,
        json_mode: JsonMode = "auto",
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(
                f"generate.base_url must start with http:// or https://, got {base_url!r}"
            )
        if max_retries < 0 or timeout_s <= 0 or max_tokens < 1:
            raise ConfigError("max_retries must be >= 0, timeout_s > 0 and max_tokens >= 1")
        if json_mode not in ("auto", "json_schema", "prompt"):
            raise ConfigError(
                f"json_mode must be one of auto, json_schema, prompt; got {json_mode!r}"
            )
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = f"openai:{model}"
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.json_mode: JsonMode = json_mode
        # learnt on first use in auto mode: does the server accept response_format json_schema?
        self._schema_supported: bool | None = (
            None if json_mode == "auto" else (json_mode == "json_schema")
        )
        headers = {"Content-Type": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout_s),
            transport=transport,
        )

    def config(self) -> dict[str, Any]:
        """The effective configuration, secrets left out (for certificates)."""
        return {
            "backend": "openai",
            "base_url": self.base_url,
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "json_mode": self.json_mode,
            "max_retries": self.max_retries,
            "timeout_s": self.timeout_s,
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

    def _delay(self, attempt: int, response: httpx.Response | None) -> float:
        if response is not None:
            retry_after = response.headers.get("retry-after")
            if retry_after:
                try:
                    return min(float(retry_after), _MAX_RETRY_AFTER_S)
                except ValueError:
                    pass
        base = self.backoff_s * (2**attempt)
        return float(base + random.uniform(0, base / 4))

    def _send(self, body: dict[str, Any], *, stream: bool) -> httpx.Response:
        """POST with retries; returns an open response with a 2xx status (caller closes it)."""
        last: str = ""
        for attempt in range(self.max_retries + 1):
            response: httpx.Response | None = None
            try:
                request = self._client.build_request("POST", "/chat/completions", json=body)
                response = self._client.send(request, stream=stream)
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code < 300:
                    return response
                text = response.read().decode("utf-8", "replace")
                response.close()
                last = f"HTTP {response.status_code}: {text[:300]}"
                if response.status_code not in _RETRY_STATUS:
                    raise GenerationError(
                        f"{self.base_url} refused the request: {last}",
                        source=self.base_url,
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
            f"{self.base_url} failed after {self.max_retries + 1} attempts: {last}",
            source=self.base_url,
        )

    @staticmethod
    def _content(data: Any, source: str) -> str:
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise GenerationError(
                f"malformed completion (no choices[0].message.content): {str(data)[:200]}",
                source=source,
            ) from exc
        if not isinstance(content, str):
            raise GenerationError("completion content is not text", source=source)
        return content

    def _complete(self, body: dict[str, Any]) -> str:
        response = self._send(body, stream=False)
        try:
            data = response.json()
        except ValueError as exc:
            raise GenerationError(
                f"{self.base_url} returned non-JSON: {response.text[:200]}", source=self.base_url
            ) from exc
        finally:
            response.close()
        return self._content(data, self.base_url)

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
            raise GenerationError(str(exc), source=self.base_url) from exc
        problems = schema_errors(value, schema)
        if problems:
            raise GenerationError(
                f"model output does not match the JSON schema: {'; '.join(problems[:5])}",
                source=self.base_url,
            )
        return json.dumps(value, ensure_ascii=False)

    def stream(
        self, messages: Sequence[Message], *, max_tokens: int | None = None
    ) -> Iterator[str]:
        """Yield text pieces from the server's SSE stream as they arrive.

        Retries apply only before the stream opens: a stream cut mid-way raises rather than
        replaying pieces the caller has already shown.

        Raises:
            GenerationError: the request failed, or the stream broke or carried an error.
        """
        response = self._send(self._body(messages, max_tokens, stream=True), stream=True)
        try:
            for line in response.iter_lines():
                if not line.startswith("data:"):
                    continue  # SSE comments, event names, keep-alives
                payload = line[5:].strip()
                if payload == "[DONE]":
                    return
                try:
                    event = json.loads(payload)
                except ValueError as exc:
                    raise GenerationError(
                        f"malformed stream event: {payload[:200]}", source=self.base_url
                    ) from exc
                if isinstance(event, dict) and "error" in event:
                    raise GenerationError(
                        f"server error mid-stream: {event['error']}", source=self.base_url
                    )
                try:
                    delta = event["choices"][0].get("delta") or {}
                except (KeyError, IndexError, TypeError, AttributeError):
                    continue  # e.g. a final usage-only event
                piece = delta.get("content")
                if piece:
                    yield piece
        except httpx.HTTPError as exc:
            raise GenerationError(
                f"stream from {self.base_url} broke: {type(exc).__name__}: {exc}",
                source=self.base_url,
            ) from exc
        finally:
            response.close()
