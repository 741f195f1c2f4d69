"""Fetch a web page safely and reduce it to its main text (trafilatura).

Every hop (the first URL and each redirect) goes through `UrlGuard`, and the connection is
made to the very address the guard checked (the host name still goes in the ``Host`` header and
TLS SNI, so certificates are verified against the name), which closes the DNS-rebinding window.
Bodies are read up to ``max_bytes`` (after decompression: a gzip bomb is never inflated past it),
and a whole fetch, every redirect included, takes at most ``timeout_s`` (each hop waits only for
what is left of it); only HTML and plain text are accepted.

Examples:
    >>> f = SafeFetcher(allowlist=["wikipedia.org"])
    >>> page = f.fetch("https://en.wikipedia.org/wiki/Paris")  # doctest: +SKIP
    >>> page.text[:40]  # doctest: +SKIP
"""

from __future__ import annotations

import html
import logging
import re
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

import httpx

from affidavit.core.answers import (
    ACCEPT_ENCODING,
    AnswerTooSlow,
    AnswerUndecodable,
    UnsupportedEncoding,
    read_answer,
)
from affidavit.core.errors import MissingDependencyError, WebSearchError
from affidavit.core.text import escape_surrogates
from affidavit.correct.base import FetchedPage
from affidavit.correct.web.guard import Resolver, UrlGuard, system_resolver, url_host

log = logging.getLogger(__name__)

_REDIRECTS = (301, 302, 303, 307, 308)
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
USER_AGENT = "affidavit/0.1 (+corrective retrieval)"


def extract_main_text(body: str) -> tuple[str, str]:
    """``(title, main text)`` of an HTML page, boilerplate removed by trafilatura."""
    try:
        import trafilatura
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise MissingDependencyError("trafilatura", "ingest", purpose="web page text") from exc
    m = _TITLE.search(body)
    # unescaped first: a character reference (&#10;) must not put a line break in the title
    title = re.sub(r"\s+", " ", html.unescape(m.group(1))).strip() if m else ""
    text = trafilatura.extract(body, include_comments=False, include_tables=True) or ""
    return title, text.strip()


def _looks_binary(body: bytes) -> bool:
    """True for a body that is not text: NUL bytes, or more than 5% control bytes, in its first
    KiB (the rule ingest applies to files)."""
    head = body[:1024]
    controls = sum(1 for b in head if b < 9 or 13 < b < 32 or b == 127)
    return b"\x00" in head or (bool(head) and controls / len(head) > 0.05)


class SafeFetcher:
    """A `Fetcher` with an SSRF guard, a domain allowlist, timeouts and a size cap.

    Args:
        allowlist: allowed domains (suffix match); None allows any public host, an empty
            list none.
        allow_private_addresses: allow private/loopback/link-local targets (tests, intranets).
        timeout_s: the time one whole fetch may take: connecting, reading each response whole,
            and every redirect hop (a hop gets what is left of it).
        max_bytes: larger bodies are cut at this size (decompressed size); the page then says
            so (``truncated``).
        max_redirects: redirect hops followed (each one checked).
        resolver: host -> addresses.
        guard: a ready `UrlGuard` (then ``allowlist``, ``allow_private_addresses`` and
            ``resolver`` are ignored).
    """

    def __init__(
        self,
        *,
        allowlist: Sequence[str] | None = None,
        allow_private_addresses: bool = False,
        timeout_s: float = 10.0,
        max_bytes: int = 2_000_000,
        max_redirects: int = 5,
        resolver: Resolver = system_resolver,
        guard: UrlGuard | None = None,
    ) -> None:
        if timeout_s <= 0 or max_bytes <= 0 or max_redirects < 0:
            raise ValueError("timeout_s and max_bytes must be positive, max_redirects >= 0")
        self.guard = guard or UrlGuard(
            allowlist=allowlist, allow_private_addresses=allow_private_addresses, resolver=resolver
        )
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects

    def _client(self) -> httpx.Client:
        # no keep-alive: a pooled connection is keyed by IP and must not serve another host name
        return httpx.Client(
            timeout=self.timeout_s,
            follow_redirects=False,
            trust_env=False,
            limits=httpx.Limits(max_keepalive_connections=0),
            headers={
                "User-Agent": USER_AGENT,
                "Accept": "text/html, text/plain;q=0.9",
                # what `read_answer` inflates in bounded steps, within max_bytes
                "Accept-Encoding": ACCEPT_ENCODING,
            },
        )

    def fetch(self, url: str) -> FetchedPage:
        """Fetch ``url`` (following checked redirects) and extract its main text.

        Raises:
            WebSearchError: refused by the guard, network failure, HTTP error status, too many
                redirects, unsupported content type or no text.
        """
        current = url
        # one deadline for the page: five redirects each just inside timeout_s took five times it
        deadline = time.monotonic() + self.timeout_s
        with self._client() as client:
            for _hop in range(self.max_redirects + 1):
                addrs = self.guard.check(current)
                status, headers, body = self._get(client, current, addrs[0], deadline)
                if status in _REDIRECTS and headers.get("location"):
                    current = urljoin(current, headers["location"])
                    continue
                return self._page(url, current, status, headers, body)
        raise WebSearchError(f"too many redirects (> {self.max_redirects}) from {url}", source=url)

    def _get(
        self, client: httpx.Client, url: str, ip: str, deadline: float | None = None
    ) -> tuple[int, httpx.Headers, bytes]:
        parts = urlsplit(url)
        host = url_host(url) or ""  # the IDNA name the guard checked
        ip_host = f"[{ip}]" if ":" in ip else ip
        netloc = f"{ip_host}:{parts.port}" if parts.port else ip_host
        pinned = urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
        host_header = f"{host}:{parts.port}" if parts.port else host
        if ":" in host:
            host_header = f"[{host}]:{parts.port}" if parts.port else f"[{host}]"
        extensions: dict[str, Any] = {}
        if parts.scheme == "https":
            extensions["sni_hostname"] = host
        if deadline is None:
            deadline = time.monotonic() + self.timeout_s
        left = deadline - time.monotonic()
        if left <= 0:
            raise WebSearchError(
                f"fetch of {url} took longer than {self.timeout_s}s (redirects included)",
                source=url,
                timeout_s=self.timeout_s,
            )
        try:
            request = client.build_request(
                "GET",
                pinned,
                headers={"Host": host_header},
                extensions=extensions,
                timeout=httpx.Timeout(min(left, self.timeout_s)),
            )
            response = client.send(request, stream=True)
            if response.status_code in _REDIRECTS and response.headers.get("location"):
                response.close()  # a redirect's body is never used
                return response.status_code, response.headers, b""
            try:
                # raw bytes, inflated a bounded step at a time: httpx would inflate each read
                # whole (a few KB of gzip, or gzip in gzip, is gigabytes) before the size cap
                body = read_answer(
                    response,
                    self.max_bytes,
                    max(deadline - time.monotonic(), 0.0),
                    cut_off=True,
                )
            finally:
                response.close()
        except UnsupportedEncoding as exc:
            raise WebSearchError(
                f"unsupported content encoding {exc.encoding!r} at {url}",
                source=url,
                content_encoding=exc.encoding,
            ) from None
        except AnswerUndecodable as exc:
            raise WebSearchError(f"cannot decode the body of {url}: {exc}", source=url) from None
        except (AnswerTooSlow, httpx.TimeoutException):  # a trickle never times out a read
            raise WebSearchError(
                f"fetch of {url} took longer than {self.timeout_s}s",
                source=url,
                timeout_s=self.timeout_s,
            ) from None
        except httpx.HTTPError as exc:
            raise WebSearchError(f"fetch failed for {url}: {exc!r}", source=url) from exc
        return response.status_code, response.headers, body

    def _page(
        self, url: str, final: str, status: int, headers: httpx.Headers, body: bytes
    ) -> FetchedPage:
        if status >= 400:
            raise WebSearchError(f"HTTP {status} from {final}", source=final, status=status)
        ctype = headers.get("content-type", "").split(";")[0].strip().lower()
        charset = "utf-8"
        m = re.search(r"charset=([\w-]+)", headers.get("content-type", ""), re.IGNORECASE)
        if m:
            charset = m.group(1)
        try:
            decoded = body.decode(charset, errors="replace")
        except LookupError:
            decoded = body.decode("utf-8", errors="replace")
        # some charsets (unicode_escape, utf-7) decode to lone surrogates, which nothing encodes
        decoded = escape_surrogates(decoded)
        if ctype == "" and _looks_binary(body):
            raise WebSearchError(
                f"unsupported content type (none, and a binary body) at {final}",
                source=final,
                content_type=ctype,
            )
        if ctype in ("text/html", "application/xhtml+xml", ""):
            title, text = extract_main_text(decoded)
        elif ctype == "text/plain":
            title, text = "", decoded.strip()
        else:
            raise WebSearchError(
                f"unsupported content type {ctype!r} at {final}", source=final, content_type=ctype
            )
        if not text:
            raise WebSearchError(f"no main text found at {final}", source=final)
        return FetchedPage(
            url=url,
            final_url=final,
            status=status,
            content_type=ctype,
            title=title,
            text=text,
            # `read_answer` cuts past max_bytes; a body of exactly max_bytes counts as cut too
            truncated=len(body) >= self.max_bytes,
        )
