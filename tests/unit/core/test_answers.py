"""`read_answer` (core.urls) reads a compressed answer raw and inflates it itself, a bounded
step at a time: a gzip bomb is never inflated past the caller's limit (httpx's ``iter_bytes``
inflated each read whole, so a few KB of gzip allocated megabytes, or gigabytes, before any
size check). Against a real loopback server."""

from __future__ import annotations

import contextlib
import gzip
import tracemalloc
import zlib
from collections.abc import Callable, Iterator

import httpx
import pytest

from affidavit.core.urls import AnswerTooLarge, read_answer
from affidavit.testing.loopback import QuietHandler, loopback_server

KIB = 1 << 10
MIB = 1 << 20
#: 16 MiB of spaces in about 16 KB: one network read inflated whole is 16 MiB
BOMB = gzip.compress(b" " * (16 * MIB), 9)


@contextlib.contextmanager
def serving(body: bytes, encoding: str | None = "gzip", status: int = 200) -> Iterator[str]:
    """A loopback server answering every GET with ``body`` (sent as is) in ``encoding``."""

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            if encoding is not None:
                self.send_header("Content-Encoding", encoding)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(OSError):
                self.wfile.write(body)

    with loopback_server(Handler) as base:
        yield f"{base}/"


def _read(url: str, limit: int, **kw: object) -> bytes:
    with httpx.Client(trust_env=False) as client, client.stream("GET", url) as response:
        return read_answer(response, limit, 10.0, **kw)  # type: ignore[arg-type]


def peak_of(fn: Callable[[], object]) -> int:
    """The most memory Python allocated while ``fn`` ran (its exception suppressed)."""
    tracemalloc.start()
    try:
        with contextlib.suppress(Exception):
            fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_gzip_bomb_is_refused_without_being_inflated() -> None:
    with serving(BOMB) as url:
        with pytest.raises(AnswerTooLarge):
            _read(url, 64 * KIB)
        assert peak_of(lambda: _read(url, 64 * KIB)) < 4 * MIB


def test_a_gzip_bomb_cut_off_is_cut_without_being_inflated() -> None:
    with serving(BOMB) as url:
        assert _read(url, 64 * KIB, cut_off=True) == b" " * (64 * KIB)
        assert peak_of(lambda: _read(url, 64 * KIB, cut_off=True)) < 4 * MIB


def test_gzip_in_gzip_is_refused_without_being_inflated() -> None:
    with serving(gzip.compress(BOMB, 9), "gzip, gzip") as url:
        with pytest.raises(Exception, match="encoding") as caught:
            _read(url, 64 * KIB)
        assert not isinstance(caught.value, httpx.HTTPError)
        assert peak_of(lambda: _read(url, 64 * KIB)) < 4 * MIB


def test_a_deflate_bomb_is_refused_without_being_inflated() -> None:
    bomb = zlib.compress(b" " * (16 * MIB), 9)
    with serving(bomb, "deflate") as url:
        with pytest.raises(AnswerTooLarge):
            _read(url, 64 * KIB)
        assert peak_of(lambda: _read(url, 64 * KIB)) < 4 * MIB


def test_every_member_of_a_multi_member_gzip_answer_is_read() -> None:
    # RFC 1952: a gzip file is a series of members (httpx kept only the first)
    body = gzip.compress(b'{"a": "one",') + gzip.compress(b' "b": "two"}')
    with serving(body) as url:
        assert _read(url, 64 * KIB) == b'{"a": "one", "b": "two"}'


def test_a_bomb_split_into_members_is_still_refused() -> None:
    member = gzip.compress(b" " * MIB, 9)
    with serving(member * 16) as url:
        with pytest.raises(AnswerTooLarge):
            _read(url, 64 * KIB)
        assert peak_of(lambda: _read(url, 64 * KIB)) < 4 * MIB


@pytest.mark.parametrize("encoding", ["br", "zstd", "compress", "x-unknown"])
def test_an_encoding_it_cannot_decode_is_a_clear_error(encoding: str) -> None:
    # httpx passed an unknown encoding on undecoded (and inflated zstd whole)
    with serving(b'{"ok": true}', encoding) as url, pytest.raises(Exception) as caught:
        _read(url, 64 * KIB)
    assert not isinstance(caught.value, httpx.HTTPError | AnswerTooLarge)
    assert "encoding" in str(caught.value) and encoding in str(caught.value)


def test_a_truncated_or_damaged_gzip_answer_is_a_clear_error() -> None:
    body = gzip.compress(b'{"answer": "' + b"x" * 5000 + b'"}')
    for broken in (body[:-12], body[:30] + b"\x00" * 40 + body[70:]):
        with serving(broken) as url, pytest.raises(Exception, match=r"damaged|cut short") as caught:
            _read(url, 64 * KIB)
        assert not isinstance(caught.value, httpx.HTTPError | AnswerTooLarge)


@pytest.mark.parametrize("encoding", [None, "identity", "gzip", "x-gzip", "deflate", "raw"])
def test_an_answer_it_can_decode_is_read_whole(encoding: str | None) -> None:
    data = b'{"text": "' + b"The bridge opened in 1932. " * 2000 + b'"}'
    body = {
        "gzip": gzip.compress(data),
        "x-gzip": gzip.compress(data),
        "deflate": zlib.compress(data),
        "raw": zlib.compress(data)[2:-4],  # "deflate" as some servers send it: no zlib header
    }.get(encoding or "", data)
    sent = "deflate" if encoding == "raw" else encoding
    with serving(body, sent) as url:
        assert _read(url, 1 * MIB) == data
