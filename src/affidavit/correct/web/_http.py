"""Shared HTTP plumbing of the search clients: one request, typed errors, JSON decoding."""

from __future__ import annotations

from typing import Any

import httpx

from affidavit.core.errors import WebSearchError


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

    Raises:
        WebSearchError: network failure, timeout, HTTP error status or a non-JSON body. The
            message never contains the API key.
    """
    try:
        with httpx.Client(timeout=timeout_s, trust_env=False, transport=transport) as client:
            response = client.request(method, url, **kwargs)
    except httpx.TimeoutException as exc:
        raise WebSearchError(
            f"{provider} search timed out after {timeout_s}s", source=url, provider=provider
        ) from exc
    except httpx.HTTPError as exc:
        raise WebSearchError(
            f"{provider} search failed: {type(exc).__name__}", source=url, provider=provider
        ) from exc
    if response.status_code >= 400:
        detail = response.text[:200].replace("\n", " ")
        raise WebSearchError(
            f"{provider} search returned HTTP {response.status_code}: {detail}",
            source=url,
            provider=provider,
            status=response.status_code,
        )
    try:
        return response.json()
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
