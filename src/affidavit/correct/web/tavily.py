"""Tavily search client (``POST /search``).

Examples:
    >>> TavilySearch(api_key="tvly-...").search("eiffel tower", max_results=3)  # doctest: +SKIP
"""

from __future__ import annotations

import httpx

from affidavit.core.correction import WebResult
from affidavit.core.errors import ConfigError
from affidavit.correct.web._http import as_float, as_list, request_json


class TavilySearch:
    """A `WebSearch` over the Tavily API.

    Tavily returns extracted page text itself when ``include_raw_content`` is set, so its results
    usually need no fetch.

    Args:
        api_key: the Tavily key (``settings.correct.tavily_api_key``).
        base_url: API root (default ``https://api.tavily.com``).
        timeout_s: request timeout.
        search_depth: ``basic`` or ``advanced``.
        include_raw_content: ask Tavily for each page's text.
    """

    name = "tavily"

    def __init__(
        self,
        api_key: str,
        *,
        base_url: str = "https://api.tavily.com",
        timeout_s: float = 15.0,
        search_depth: str = "basic",
        include_raw_content: bool = True,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not api_key:
            raise ConfigError("Tavily needs an API key (correct.tavily_api_key)", stage="correct")
        if search_depth not in ("basic", "advanced"):
            raise ConfigError(f"search_depth must be basic or advanced, not {search_depth!r}")
        self._key = api_key
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.search_depth = search_depth
        self.include_raw_content = include_raw_content
        self._transport = transport

    def search(self, query: str, *, max_results: int) -> list[WebResult]:
        """Search; raise ``WebSearchError`` on any failure."""
        data = request_json(
            self.name,
            "POST",
            f"{self.base_url}/search",
            timeout_s=self.timeout_s,
            transport=self._transport,
            headers={"Authorization": f"Bearer {self._key}"},
            json={
                "query": query,
                "max_results": max_results,
                "search_depth": self.search_depth,
                "include_raw_content": self.include_raw_content,
            },
        )
        out = []
        for i, r in enumerate(as_list(self.name, data, "results")[:max_results], start=1):
            url = r.get("url")
            if not isinstance(url, str) or not url:
                continue
            raw = r.get("raw_content")
            out.append(
                WebResult(
                    url=url,
                    title=str(r.get("title") or ""),
                    snippet=str(r.get("content") or ""),
                    content=raw if isinstance(raw, str) and raw.strip() else None,
                    provider=self.name,
                    rank=i,
                    provider_score=as_float(r.get("score")),
                )
            )
        return out
