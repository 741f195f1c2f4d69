"""SearXNG client (a self-hosted metasearch engine's JSON API: ``GET /search?format=json``).

The instance must have ``json`` in its ``search.formats`` setting.

Examples:
    >>> SearxngSearch("http://localhost:8888").search("eiffel", max_results=3)  # doctest: +SKIP
"""

from __future__ import annotations

import httpx

from affidavit.core.correction import WebResult
from affidavit.core.errors import ConfigError
from affidavit.correct.web._http import as_float, as_list, request_json


class SearxngSearch:
    """A `WebSearch` over a SearXNG instance (``settings.correct.searxng_url``).

    The instance URL is trusted configuration (often on a private network), so it is not put
    through the SSRF guard; the result pages are, when they are fetched.
    """

    name = "searxng"

    def __init__(
        self,
        base_url: str,
        *,
        timeout_s: float = 15.0,
        language: str = "en",
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not base_url or not base_url.startswith(("http://", "https://")):
            raise ConfigError(
                f"SearXNG needs an http(s) base URL (correct.searxng_url), got {base_url!r}"
            )
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.language = language
        self._transport = transport

    def search(self, query: str, *, max_results: int) -> list[WebResult]:
        """Search; raise ``WebSearchError`` on any failure."""
        data = request_json(
            self.name,
            "GET",
            f"{self.base_url}/search",
            timeout_s=self.timeout_s,
            transport=self._transport,
            params={"q": query, "format": "json", "language": self.language},
        )
        out = []
        for i, r in enumerate(as_list(self.name, data, "results")[:max_results], start=1):
            url = r.get("url")
            if not isinstance(url, str) or not url:
                continue
            out.append(
                WebResult(
                    url=url,
                    title=str(r.get("title") or ""),
                    snippet=str(r.get("content") or ""),
                    provider=self.name,
                    rank=i,
                    provider_score=as_float(r.get("score")),
                )
            )
        return out
