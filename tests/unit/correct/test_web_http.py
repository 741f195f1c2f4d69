"""A search API's answer is read within a size cap, inflated by us (no decompression bomb)."""

from __future__ import annotations

import gzip
import json

import httpx
import pytest

from affidavit.core.errors import WebSearchError
from affidavit.correct.web import _http
from affidavit.correct.web._http import request_json


def _transport(body: bytes, headers: dict[str, str] | None = None) -> httpx.MockTransport:
    return httpx.MockTransport(
        lambda request: httpx.Response(200, stream=httpx.ByteStream(body), headers=headers)
    )


def test_a_gzipped_answer_is_read() -> None:
    body = gzip.compress(json.dumps({"results": [{"url": "https://e.org"}]}).encode())
    got = request_json(
        "test",
        "GET",
        "https://api.example/s",
        timeout_s=5,
        transport=_transport(body, {"content-encoding": "gzip"}),
    )
    assert got == {"results": [{"url": "https://e.org"}]}


def test_an_answer_past_the_cap_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # a provider is a third party: httpx read (and inflated) any answer whole
    monkeypatch.setattr(_http, "MAX_ANSWER_BYTES", 1000)
    with pytest.raises(WebSearchError, match="more than"):
        request_json(
            "test",
            "GET",
            "https://api.example/s",
            timeout_s=5,
            transport=_transport(b"[" + b"1," * 5000 + b"1]"),
        )


def test_a_gzip_bomb_is_never_inflated_past_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_http, "MAX_ANSWER_BYTES", 1 << 16)
    bomb = gzip.compress(b" " * (64 << 20))  # 64 MiB of spaces in about 64 KB
    with pytest.raises(WebSearchError, match="more than"):
        request_json(
            "test",
            "GET",
            "https://api.example/s",
            timeout_s=5,
            transport=_transport(bomb, {"content-encoding": "gzip"}),
        )


def test_an_encoding_not_asked_for_is_refused() -> None:
    with pytest.raises(WebSearchError, match="encoding"):
        request_json(
            "test",
            "GET",
            "https://api.example/s",
            timeout_s=5,
            transport=_transport(b"{}", {"content-encoding": "br"}),
        )


def test_a_transport_that_built_its_answer_whole_still_works() -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json={"ok": True}))
    got = request_json("test", "GET", "https://api.example/s", timeout_s=5, transport=transport)
    assert got == {"ok": True}


def test_every_member_of_a_multi_member_gzip_answer_is_read() -> None:
    # RFC 1952: a gzip body is a series of members (all but the first were dropped)
    raw = json.dumps({"results": [{"url": "https://e.org"}, {"url": "https://f.org"}]}).encode()
    body = gzip.compress(raw[:25]) + gzip.compress(raw[25:])
    got = request_json(
        "test",
        "GET",
        "https://api.example/s",
        timeout_s=5,
        transport=_transport(body, {"content-encoding": "gzip"}),
    )
    assert got == json.loads(raw)


def test_a_bomb_split_into_gzip_members_is_never_inflated_past_the_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tracemalloc

    monkeypatch.setattr(_http, "MAX_ANSWER_BYTES", 1 << 16)
    bomb = gzip.compress(b" " * (1 << 20), 9) * 32  # 32 members of 1 MiB each

    def ask() -> None:
        request_json(
            "test",
            "GET",
            "https://api.example/s",
            timeout_s=5,
            transport=_transport(bomb, {"content-encoding": "gzip"}),
        )

    with pytest.raises(WebSearchError, match="more than"):
        ask()
    tracemalloc.start()
    try:
        with pytest.raises(WebSearchError):
            ask()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20


@pytest.mark.parametrize("encoding", ["gzip, gzip", "zstd", "x-unknown"])
def test_a_stacked_or_unknown_encoding_is_refused(encoding: str) -> None:
    with pytest.raises(WebSearchError, match="encoding"):
        request_json(
            "test",
            "GET",
            "https://api.example/s",
            timeout_s=5,
            transport=_transport(
                gzip.compress(gzip.compress(b"{}")), {"content-encoding": encoding}
            ),
        )


def test_a_truncated_gzip_answer_is_refused_not_read_as_complete() -> None:
    body = gzip.compress(json.dumps({"results": []}).encode() + b" " * 3000)
    with pytest.raises(WebSearchError, match="decode"):
        request_json(
            "test",
            "GET",
            "https://api.example/s",
            timeout_s=5,
            transport=_transport(body[:-8], {"content-encoding": "gzip"}),
        )
