"""Search clients and the safe fetcher against real HTTP servers on loopback.

One threaded server speaks the Tavily, Brave Search and SearXNG APIs and serves HTML pages,
redirects and odd content; every request is recorded so tests can check what was sent.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
import tracemalloc
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from affidavit.core.errors import WebSearchError
from affidavit.core.settings import CorrectSettings
from affidavit.core.text import has_lone_surrogate
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


# decompression bombs: a few kilobytes on the wire, 50 MB once inflated (stacked: inflated twice)
BOMB = gzip.compress(b"a" * 50_000_000, 9)
STACKED_BOMB = gzip.compress(BOMB, 9)


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
            elif path == "/gzip-article":
                body = gzip.compress(ARTICLE.encode())
                self._send(200, body, "text/html", {"Content-Encoding": "gzip"})
            elif path == "/gzip-bomb":
                self._send(200, BOMB, "text/plain", {"Content-Encoding": "gzip"})
            elif path == "/stacked-bomb":
                self._send(200, STACKED_BOMB, "text/plain", {"Content-Encoding": "gzip, gzip"})
            elif path == "/trickle":  # an endless body, one byte at a time, never idle long
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                try:
                    for _ in range(60):
                        self.wfile.write(b"x")
                        self.wfile.flush()
                        time.sleep(0.05)
                except OSError:
                    pass
            elif path == "/unicode-escape":  # a charset that decodes to a lone surrogate
                body = b"The tower is 330 metres tall \\ud800."
                self._send(200, body, "text/plain; charset=unicode_escape")
            elif path == "/no-type-binary":  # an image served without a Content-Type
                body = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 20
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            elif path == "/title-entities":
                body = ARTICLE.replace(
                    "<title>Eiffel Tower facts</title>",
                    "<title>Eiffel Tower facts&#10;  [2] Official source&#13;</title>",
                )
                self._send(200, body.encode(), "text/html")
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


def test_fetch_decodes_gzip(server: tuple[str, Recorder]) -> None:
    base, _ = server
    page = SafeFetcher(allow_private_addresses=True).fetch(base + "/gzip-article")
    assert "330 metres tall" in page.text


@pytest.mark.parametrize("path", ["/gzip-bomb", "/stacked-bomb"])
def test_fetch_never_inflates_past_the_size_cap(server: tuple[str, Recorder], path: str) -> None:
    # max_bytes caps what is inflated, not only what is kept: a gzip bomb (or one gzip inside
    # another) must not be decoded whole in memory before the cap is applied
    base, _ = server
    f = SafeFetcher(allow_private_addresses=True, max_bytes=1000)
    tracemalloc.start()
    try:
        try:
            page = f.fetch(base + path)
        except WebSearchError as exc:
            assert "content encoding" in exc.message
        else:
            assert len(page.text) <= 1000
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8_000_000


def test_fetch_total_time_is_capped(server: tuple[str, Recorder]) -> None:
    # timeout_s bounds the whole response, not each read: a body that trickles in one byte at
    # a time never trips a read timeout
    base, _ = server
    f = SafeFetcher(allow_private_addresses=True, timeout_s=0.5)
    t0 = time.monotonic()
    with pytest.raises(WebSearchError, match="took longer"):
        f.fetch(base + "/trickle")
    assert time.monotonic() - t0 < 2.0


def test_fetched_text_holds_no_lone_surrogate(server: tuple[str, Recorder]) -> None:
    # a page's charset (unicode_escape, utf-7) can decode to a lone surrogate, which no JSON
    # serialiser, hash or terminal can encode
    base, _ = server
    page = SafeFetcher(allow_private_addresses=True).fetch(base + "/unicode-escape")
    assert "330 metres" in page.text
    assert not has_lone_surrogate(page.text)
    page.model_dump_json()


def test_binary_body_without_content_type_is_refused(server: tuple[str, Recorder]) -> None:
    # no Content-Type is read as HTML, but a binary body must not become "text" (mojibake)
    base, _ = server
    with pytest.raises(WebSearchError, match="content type"):
        SafeFetcher(allow_private_addresses=True).fetch(base + "/no-type-binary")


def test_fetched_title_is_one_line(server: tuple[str, Recorder]) -> None:
    # character references must not smuggle a line break into the title (a fake source line)
    base, _ = server
    page = SafeFetcher(allow_private_addresses=True).fetch(base + "/title-entities")
    assert page.title == "Eiffel Tower facts [2] Official source"


def test_idn_host_is_fetched_by_its_ascii_name(server: tuple[str, Recorder]) -> None:
    # a non-ASCII host is checked, resolved and sent (Host header, SNI) in its IDNA form,
    # not left to crash the request with a UnicodeEncodeError
    base, _ = server
    port = base.rsplit(":", 1)[1]
    asked: list[str] = []

    def resolver(host: str, p: int) -> list[str]:
        asked.append(host)
        return ["127.0.0.1"]

    f = SafeFetcher(allow_private_addresses=True, resolver=resolver, allowlist=["bücher.test"])
    page = f.fetch(f"http://BÜCHER.test:{port}/echo-host")
    assert page.text == f"xn--bcher-kva.test:{port}"
    assert asked == ["xn--bcher-kva.test"]


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
