"""Brave Search API client (``GET /res/v1/web/search``).

Examples:
    >>> BraveSearch(api_key="...").search("eiffel tower height", max_results=3)  # doctest: +SKIP
"""

from __future__ import annotations

import html
import re

import httpx

from affidavit.core.correction import WebResult
from affidavit.core.errors import ConfigError
from affidavit.correct.web._http import as_list, request_json

_TAGS = re.compile(r"<[^>]+>")


def _plain(text: object) -> str:
    # Brave marks query terms in snippets with <strong>
    return html.unescape(_TAGS.sub("", str(text or ""))).strip()


class BraveSearch:
    """A `WebSearch` over the Brave Search API (snippets only; pages are fetched after).

    Args:
        api_key: the subscription token (``settings.correct.brave_api_key``).
        base_url: API root (default ``https://api.search.brave.com``).
        timeout_s: request timeout.
    """

    name = "brave"

    def __init__(
        self,
        api_key: str,
        *,
        base_url: str = "https://api.search.brave.com",
        timeout_s: float = 15.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not api_key:
            raise ConfigError("Brave Search needs an API key (correct.brave_api_key)")
        self._key = api_key
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self._transport = transport

    def search(self, query: str, *, max_results: int) -> list[WebResult]:
        """Search; raise ``WebSearchError`` on any failure."""
        data = request_json(
            self.name,
            "GET",
            f"{self.base_url}/res/v1/web/search",
            timeout_s=self.timeout_s,
            transport=self._transport,
            headers={"X-Subscription-Token": self._key, "Accept": "application/json"},
            params={"q": query, "count": min(max(max_results, 1), 20)},
        )
        out = []
        for i, r in enumerate(as_list(self.name, data, "web", "results")[:max_results], start=1):
            url = r.get("url")
            if not isinstance(url, str) or not url:
                continue
            out.append(
                WebResult(
                    url=url,
                    title=_plain(r.get("title")),
                    snippet=_plain(r.get("description")),
                    provider=self.name,
                    rank=i,
                )
            )
        return out
