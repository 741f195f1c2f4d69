"""`SafeFetcher` reads a compressed page raw and inflates it itself, boundedly: every gzip
member, never past ``max_bytes``, and a damaged or truncated body is refused. Against a real
loopback server."""

from __future__ import annotations

import contextlib
import gzip
import tracemalloc
from collections.abc import Iterator

import pytest

from affidavit.core.errors import WebSearchError
from affidavit.correct.web.fetch import SafeFetcher
from affidavit.testing.loopback import QuietHandler, loopback_server

MIB = 1 << 20


@contextlib.contextmanager
def serving(body: bytes, encoding: str) -> Iterator[str]:
    """A loopback server answering every GET with the text/plain ``body`` in ``encoding``."""

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Encoding", encoding)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(OSError):
                self.wfile.write(body)

    with loopback_server(Handler) as base:
        yield f"{base}/page"


def _fetch(url: str, max_bytes: int = 100_000) -> str:
    return SafeFetcher(allow_private_addresses=True, max_bytes=max_bytes).fetch(url).text


def test_every_member_of_a_multi_member_gzip_page_is_read() -> None:
    # RFC 1952: a gzip body is a series of members (the fetcher kept the first one only)
    body = gzip.compress(b"The bridge opened in 1932. ") + gzip.compress(b"It is 1149 m long.")
    with serving(body, "gzip") as url:
        assert _fetch(url) == "The bridge opened in 1932. It is 1149 m long."


def test_a_page_of_many_gzip_members_is_never_inflated_past_max_bytes() -> None:
    member = gzip.compress(b"a" * MIB, 9)
    with serving(member * 16, "gzip") as url:
        tracemalloc.start()
        try:
            text = _fetch(url, max_bytes=1000)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert text == "a" * 1000
    assert peak < 8 * MIB


def test_a_truncated_gzip_page_is_refused() -> None:
    body = gzip.compress(b"The bridge opened in 1932. " * 200)
    with serving(body[:-8], "gzip") as url, pytest.raises(WebSearchError, match="decode"):
        _fetch(url)


@pytest.mark.parametrize("encoding", ["br", "zstd", "gzip, gzip"])
def test_an_encoding_not_asked_for_is_refused(encoding: str) -> None:
    with (
        serving(b"The bridge opened in 1932.", encoding) as url,
        pytest.raises(WebSearchError, match="content encoding"),
    ):
        _fetch(url)


@contextlib.contextmanager
def redirecting(hops: int, pause_s: float) -> Iterator[str]:
    """A loopback server: ``/hop/N`` answers after ``pause_s`` with a redirect to ``/hop/N+1``,
    up to ``hops`` redirects, then a text page."""

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            import time

            time.sleep(pause_s)
            n = int(self.path.rsplit("/", 1)[-1])
            if n < hops:
                self.send_response(302)
                self.send_header("Location", f"/hop/{n + 1}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = b"The bridge opened in 1932."
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(OSError):
                self.wfile.write(body)

    with loopback_server(Handler) as base:
        yield f"{base}/hop/0"


def test_a_fetch_through_redirects_is_bounded_by_its_timeout_in_all() -> None:
    import time

    # each hop answers within timeout_s; five of them took five times it (one page fetch)
    with redirecting(5, 0.15) as url:
        fetcher = SafeFetcher(allow_private_addresses=True, timeout_s=0.4)
        started = time.perf_counter()
        with pytest.raises(WebSearchError, match=r"took longer than 0\.4s"):
            fetcher.fetch(url)
        assert time.perf_counter() - started < 0.8


def test_a_fetch_through_redirects_within_its_timeout_is_read() -> None:
    with redirecting(2, 0.0) as url:
        page = SafeFetcher(allow_private_addresses=True, timeout_s=5.0).fetch(url)
        assert page.text == "The bridge opened in 1932." and page.final_url.endswith("/hop/2")


def test_a_page_cut_at_max_bytes_says_so() -> None:
    # the cut was silent: the page's text ended inside a sentence and nothing said so
    body = gzip.compress(b"The bridge opened in 1932. It is 1,149 metres long.")
    with serving(body, "gzip") as url:
        cut = SafeFetcher(allow_private_addresses=True, max_bytes=38).fetch(url)
        whole = SafeFetcher(allow_private_addresses=True).fetch(url)
    assert cut.text == "The bridge opened in 1932. It is 1,149" and cut.truncated
    assert whole.text.endswith("metres long.") and not whole.truncated
