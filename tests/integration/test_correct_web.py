"""Search clients and the safe fetcher against real HTTP servers on loopback.

One threaded server speaks the Tavily, Brave Search and SearXNG APIs and serves HTML pages,
redirects and odd content; every request is recorded so tests can check what was sent.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from affidavit.core.errors import WebSearchError
from affidavit.core.settings import CorrectSettings
from affidavit.core.types import Chunk
from affidavit.correct import CorrectiveRetrieval
from affidavit.correct.fakes import KeywordEvaluator
from affidavit.correct.web import BraveSearch, SafeFetcher, SearxngSearch, TavilySearch, UrlGuard

pytestmark = pytest.mark.integration

ARTICLE = """<html><head><title>Eiffel Tower facts</title></head><body>
<nav><a href="/">Home</a> | <a href="/about">About</a> | Subscribe to our newsletter</nav>
<article><h1>The Eiffel Tower</h1>
<p>The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France.
It is named after the engineer Gustave Eiffel, whose company designed and built the tower.</p>
<p>The tower is 330 metres tall, about the same height as an 81-storey building, and was the
tallest man-made structure in the world until the Chrysler Building was finished in 1930.</p>
<p>Construction began in January 1887 and the tower was opened on 31 March 1889 as the
entrance to the 1889 World's Fair.</p>
</article>
<footer>Copyright 2024 Example Media. All rights reserved. Cookie settings.</footer>
</body></html>"""


class Recorder:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []


def _handler(rec: Recorder) -> type[BaseHTTPRequestHandler]:
    class H(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep test output clean
            pass

        def _send(self, status: int, body: bytes, ctype: str, extra: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def _json(self, data: Any, status: int = 200) -> None:
            self._send(status, json.dumps(data).encode(), "application/json")

        def _record(self, body: bytes = b"") -> tuple[str, dict[str, list[str]]]:
            parts = urlsplit(self.path)
            rec.requests.append(
                {
                    "method": self.command,
                    "path": parts.path,
                    "query": parse_qs(parts.query),
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body": body.decode() if body else "",
                }
            )
            return parts.path, parse_qs(parts.query)

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            path, _ = self._record(body)
            if path == "/search":  # Tavily
                if self.headers.get("Authorization") != "Bearer tvly-test":
                    self._json({"detail": {"error": "Unauthorized"}}, 401)
                    return
                req = json.loads(body)
                n = int(req["max_results"])
                results = [
                    {
                        "title": f"Tavily {i}",
                        "url": f"https://t{i}.example/page",
                        "content": f"snippet {i} about {req['query']}",
                        "score": 0.9 - i / 10,
                        "raw_content": "Full page text." if i == 0 else None,
                    }
                    for i in range(5)
                ][:n]
                self._json({"query": req["query"], "results": results, "response_time": 0.1})
                return
            self._send(404, b"not found", "text/plain")

        def do_GET(self) -> None:
            path, q = self._record()
            port = self.server.server_address[1]
            if path == "/res/v1/web/search":  # Brave
                if self.headers.get("X-Subscription-Token") != "brave-test":
                    self._json({"type": "ErrorResponse"}, 422)
                    return
                self._json(
                    {
                        "type": "search",
                        "query": {"original": q["q"][0]},
                        "web": {
                            "type": "search",
                            "results": [
                                {
                                    "title": "Eiffel <strong>Tower</strong>",
                                    "url": "https://b.example/eiffel",
                                    "description": "It is <strong>330</strong> m &amp; iron.",
                                },
                                {"title": "no url"},
                                {"title": "Two", "url": "https://b.example/2", "description": ""},
                            ],
                        },
                    }
                )
            elif path == "/search":  # SearXNG
                if q.get("format") != ["json"]:
                    self._send(403, b"Forbidden", "text/html")
                    return
                self._json(
                    {
                        "query": q["q"][0],
                        "results": [
                            {
                                "url": f"http://127.0.0.1:{port}/article.html",
                                "title": "Eiffel Tower facts",
                                "content": "The tower is 330 metres tall.",
                                "engine": "duckduckgo",
                                "score": 2.5,
                            },
                            {
                                "url": f"http://127.0.0.1:{port}/missing",
                                "title": "Gone",
                                "content": "Snippet of a page that is gone.",
                                "engine": "bing",
                                "score": 1.0,
                            },
                        ],
                    }
                )
            elif path == "/article.html":
                self._send(200, ARTICLE.encode(), "text/html; charset=utf-8")
            elif path == "/plain.txt":
                self._send(200, b"Plain text body.", "text/plain")
            elif path == "/binary":
                self._send(200, b"%PDF-1.4", "application/pdf")
            elif path == "/slow-json":
                self._send(200, b"not json", "application/json")
            elif path == "/redirect":
                target = q["to"][0]
                self._send(302, b"", "text/plain", {"Location": target})
            elif path == "/loop":
                self._send(302, b"", "text/plain", {"Location": "/loop"})
            elif path == "/echo-host":
                self._send(200, self.headers.get("Host", "").encode(), "text/plain")
            elif path == "/huge":
                self._send(200, b"x" * 300_000, "text/plain")
            else:
                self._send(404, b"<html><body>not found</body></html>", "text/html")

    return H


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, Recorder]]:
    rec = Recorder()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(rec))
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", rec
    finally:
        httpd.shutdown()
        httpd.server_close()


# --- search clients -----------------------------------------------------------------------


def test_tavily_client(server: tuple[str, Recorder]) -> None:
    base, rec = server
    results = TavilySearch("tvly-test", base_url=base).search("eiffel tower", max_results=3)
    assert [r.url for r in results] == [f"https://t{i}.example/page" for i in range(3)]
    assert [r.rank for r in results] == [1, 2, 3]
    assert results[0].content == "Full page text." and results[1].content is None
    assert results[0].provider_score == pytest.approx(0.9)
    sent = json.loads(rec.requests[-1]["body"])
    assert sent["query"] == "eiffel tower" and sent["max_results"] == 3


def test_tavily_bad_key_is_typed_and_hides_the_key(server: tuple[str, Recorder]) -> None:
    base, _ = server
    with pytest.raises(WebSearchError, match="HTTP 401") as err:
        TavilySearch("tvly-wrong", base_url=base).search("x", max_results=1)
    assert "tvly-wrong" not in str(err.value)


def test_brave_client(server: tuple[str, Recorder]) -> None:
    base, rec = server
    results = BraveSearch("brave-test", base_url=base).search("eiffel tower", max_results=5)
    assert [r.url for r in results] == ["https://b.example/eiffel", "https://b.example/2"]
    assert results[0].title == "Eiffel Tower"  # markup stripped
    assert results[0].snippet == "It is 330 m & iron."
    req = rec.requests[-1]
    assert req["query"]["q"] == ["eiffel tower"] and req["headers"]["x-subscription-token"]


def test_brave_rejected_token(server: tuple[str, Recorder]) -> None:
    base, _ = server
    with pytest.raises(WebSearchError, match="HTTP 422"):
        BraveSearch("nope", base_url=base).search("x", max_results=1)


def test_searxng_client(server: tuple[str, Recorder]) -> None:
    base, rec = server
    results = SearxngSearch(base).search("eiffel", max_results=1)
    assert len(results) == 1 and results[0].url.endswith("/article.html")
    assert results[0].provider == "searxng" and results[0].provider_score == 2.5
    assert rec.requests[-1]["query"]["format"] == ["json"]


def test_unreachable_and_timeout_are_typed() -> None:
    with pytest.raises(WebSearchError, match="failed"):
        SearxngSearch("http://127.0.0.1:1", timeout_s=1).search("x", max_results=1)


def test_non_json_body_is_typed(server: tuple[str, Recorder]) -> None:
    base, _ = server
    with pytest.raises(WebSearchError, match="non-JSON"):
        SearxngSearch(base + "/slow-json#").search("x", max_results=1)


# --- fetcher ------------------------------------------------------------------------------


def test_fetch_extracts_main_text(server: tuple[str, Recorder]) -> None:
    base, _ = server
    page = SafeFetcher(allow_private_addresses=True).fetch(base + "/article.html")
    assert page.title == "Eiffel Tower facts"
    assert "330 metres tall" in page.text
    assert "Subscribe to our newsletter" not in page.text  # navigation removed
    assert "Cookie settings" not in page.text  # footer removed


def test_fetch_plain_text_and_refuses_binary(server: tuple[str, Recorder]) -> None:
    base, _ = server
    f = SafeFetcher(allow_private_addresses=True)
    assert f.fetch(base + "/plain.txt").text == "Plain text body."
    with pytest.raises(WebSearchError, match="content type"):
        f.fetch(base + "/binary")
    with pytest.raises(WebSearchError, match="HTTP 404"):
        f.fetch(base + "/missing")


def test_fetch_caps_body_size(server: tuple[str, Recorder]) -> None:
    base, _ = server
    page = SafeFetcher(allow_private_addresses=True, max_bytes=1000).fetch(base + "/huge")
    assert len(page.text) == 1000


def test_loopback_refused_without_the_setting(server: tuple[str, Recorder]) -> None:
    base, rec = server
    before = len(rec.requests)
    with pytest.raises(WebSearchError, match="loopback"):
        SafeFetcher().fetch(base + "/article.html")
    assert len(rec.requests) == before  # refused before any connection


def test_redirect_followed_and_rechecked(server: tuple[str, Recorder]) -> None:
    base, _ = server
    f = SafeFetcher(allow_private_addresses=True)
    page = f.fetch(f"{base}/redirect?to=/article.html")
    assert page.final_url == base + "/article.html" and "330 metres" in page.text
    with pytest.raises(WebSearchError, match="scheme 'file'"):
        f.fetch(f"{base}/redirect?to=file:///etc/passwd")
    with pytest.raises(WebSearchError, match="too many redirects"):
        SafeFetcher(allow_private_addresses=True, max_redirects=3).fetch(base + "/loop")


class OnlyThisServer(UrlGuard):
    """Trusts exactly the test server; every other URL gets the real checks."""

    def __init__(self, base: str) -> None:
        super().__init__()
        self.base = base

    def check(self, url: str) -> list[str]:
        if url.startswith(self.base + "/"):
            return ["127.0.0.1"]
        return super().check(url)


@pytest.mark.parametrize(
    "target",
    [
        "http://10.0.0.1/admin",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://localhost/",
        "http://127.0.0.1:1/",
    ],
)
def test_redirect_to_private_address_refused(server: tuple[str, Recorder], target: str) -> None:
    base, _ = server
    f = SafeFetcher(guard=OnlyThisServer(base), timeout_s=2)
    with pytest.raises(WebSearchError, match="refused"):
        f.fetch(f"{base}/redirect?to={target}")


def test_redirect_outside_allowlist_refused(server: tuple[str, Recorder]) -> None:
    base, _ = server
    f = SafeFetcher(allow_private_addresses=True, allowlist=["127.0.0.1"])
    assert "330" in f.fetch(f"{base}/redirect?to=/article.html").text
    with pytest.raises(WebSearchError, match="allowlist"):
        f.fetch(f"{base}/redirect?to=http://localhost:{base.rsplit(':', 1)[1]}/article.html")


def test_connection_pinned_to_checked_address(server: tuple[str, Recorder]) -> None:
    base, _ = server
    port = base.rsplit(":", 1)[1]

    def resolver(host: str, p: int) -> list[str]:
        assert host == "tower.test"
        return ["127.0.0.1"]

    f = SafeFetcher(allow_private_addresses=True, resolver=resolver)
    # tower.test does not exist in DNS: the fetch works only because it connects to the
    # address the guard resolved, and the server still sees the original host name
    page = f.fetch(f"http://tower.test:{port}/echo-host")
    assert page.text == f"tower.test:{port}"


# --- end to end: CRAG with SearXNG + the real fetcher ------------------------------------


def test_crag_ambiguous_goes_to_searxng_and_fetches(server: tuple[str, Recorder]) -> None:
    base, _ = server
    settings = CorrectSettings(allow_private_addresses=True, top_k_web_results=2)
    crag = CorrectiveRetrieval(
        KeywordEvaluator(),
        web=SearxngSearch(base),
        settings=settings,
        fetcher=SafeFetcher(allow_private_addresses=True),
    )
    local = Chunk(text="Paris has many towers. The weather is mild.")
    r = crag.run("How tall is the Eiffel Tower in metres?", [local])
    assert r.classification.kind in ("ambiguous", "incorrect")
    assert r.trace.web is not None and r.trace.web.provider == "searxng"
    by_url = {x.url: x for x in r.trace.web.results}
    art = by_url[base + "/article.html"]
    assert art.content is not None and "330 metres" in art.content
    gone = by_url[base + "/missing"]
    assert gone.fetch_error is not None and "404" in gone.fetch_error
    web_text = " ".join(c.chunk.text for c in r.context if c.origin == "web")
    assert "330 metres tall" in web_text
    assert "Cookie" not in web_text
