"""Shared HTTP plumbing of the search clients: one request, typed errors, JSON decoding."""

from __future__ import annotations

import json
from typing import Any

import httpx

from affidavit.core.answers import (
    ACCEPT_ENCODING,
    AnswerTooLarge,
    AnswerTooSlow,
    AnswerUndecodable,
    read_answer,
)
from affidavit.core.errors import WebSearchError

MAX_ANSWER_BYTES = 8 << 20
"""Most bytes of a search API's answer read (after decompression): a provider is a third party,
and an endless or inflating answer must not fill memory."""


def request_json(
    provider: str,
    method: str,
    url: str,
    *,
    timeout_s: float,
    transport: httpx.BaseTransport | None = None,
    **kwargs: Any,
) -> Any:
    """Send one request to a search API and return its decoded JSON body.

    The answer is read raw and inflated a bounded step at a time (`read_answer`), never past
    `MAX_ANSWER_BYTES`, within ``timeout_s`` in all (httpx would inflate each read whole
    before any cap applied).

    Raises:
        WebSearchError: network failure, timeout, HTTP error status, an answer over
            `MAX_ANSWER_BYTES` or in an encoding not asked for, or a non-JSON body. The message
            never contains the API key.
    """
    headers = {"Accept-Encoding": ACCEPT_ENCODING, **dict(kwargs.pop("headers", None) or {})}
    try:
        with (
            httpx.Client(timeout=timeout_s, trust_env=False, transport=transport) as client,
            client.stream(method, url, headers=headers, **kwargs) as response,
        ):
            accept = response.request.headers.get("accept-encoding", "")
            body = read_answer(response, MAX_ANSWER_BYTES, timeout_s, accept=accept)
    except AnswerTooLarge:
        raise WebSearchError(
            f"{provider} search answered with more than {MAX_ANSWER_BYTES} bytes",
            source=url,
            provider=provider,
        ) from None
    except AnswerTooSlow:
        raise WebSearchError(
            f"{provider} search timed out after {timeout_s}s", source=url, provider=provider
        ) from None
    except AnswerUndecodable as exc:
        raise WebSearchError(
            f"{provider} search answered in a way that cannot be decoded: {exc}",
            source=url,
            provider=provider,
        ) from None
    except httpx.TimeoutException as exc:
        raise WebSearchError(
            f"{provider} search timed out after {timeout_s}s", source=url, provider=provider
        ) from exc
    except httpx.HTTPError as exc:
        raise WebSearchError(
            f"{provider} search failed: {type(exc).__name__}", source=url, provider=provider
        ) from exc
    if response.status_code >= 400:
        detail = body[:200].decode("utf-8", "replace").replace("\n", " ")
        raise WebSearchError(
            f"{provider} search returned HTTP {response.status_code}: {detail}",
            source=url,
            provider=provider,
            status=response.status_code,
        )
    try:
        return json.loads(body)
    except ValueError as exc:
        raise WebSearchError(
            f"{provider} search returned a non-JSON body", source=url, provider=provider
        ) from exc


def as_list(provider: str, data: Any, *path: str) -> list[dict[str, Any]]:
    """Walk ``path`` into a JSON object and return the list of result objects found there."""
    cur = data
    for key in path:
        if not isinstance(cur, dict):
            raise WebSearchError(f"{provider} response has no {'.'.join(path)}", provider=provider)
        cur = cur.get(key, [])
    if not isinstance(cur, list):
        raise WebSearchError(
            f"{provider} response {'.'.join(path)} is not a list", provider=provider
        )
    return [r for r in cur if isinstance(r, dict)]


def as_float(value: Any) -> float | None:
    """A provider score as float, or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    return None
