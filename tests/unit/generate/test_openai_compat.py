"""The OpenAI-compatible backend against scripted answers (httpx.MockTransport, no network)."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest

from affidavit.core.errors import GenerationError, GenerationTruncatedError
from affidavit.core.types import Message
from affidavit.generate.openai_compat import OpenAICompatGenerator

MESSAGES = [Message(role="user", content="When did the bridge open?")]


def _llm(handler: Callable[[httpx.Request], httpx.Response], **kw: object) -> OpenAICompatGenerator:
    return OpenAICompatGenerator(
        "http://llm.test/v1",
        transport=httpx.MockTransport(handler),
        backoff_s=0.001,
        **kw,  # type: ignore[arg-type]
    )


def _sse(*events: object, done: bool = True) -> httpx.Response:
    lines = [f"data: {json.dumps(e)}\n\n" for e in events]
    if done:
        lines.append("data: [DONE]\n\n")
    return httpx.Response(
        200, headers={"content-type": "text/event-stream"}, content="".join(lines).encode()
    )


def _piece(text: str, finish: str | None = None) -> dict[str, object]:
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}


# -- an answer cut short -------------------------------------------------------------------------


@pytest.mark.parametrize("reason", ["length", "content_filter"])
def test_a_stream_cut_short_by_the_server_says_so_after_its_pieces(reason: str) -> None:
    llm = _llm(lambda _: _sse(_piece("The bridge opened"), _piece(" in", reason)))
    pieces: list[str] = []
    with pytest.raises(GenerationTruncatedError) as caught:
        for piece in llm.stream(MESSAGES):
            pieces.append(piece)
    assert pieces == ["The bridge opened", " in"]
    assert caught.value.context["reason"] == reason


@pytest.mark.parametrize("reason", ["length", "content_filter"])
def test_a_completion_cut_short_is_not_returned_as_an_answer(reason: str) -> None:
    body = {"choices": [{"message": {"content": "The bridge opened in"}, "finish_reason": reason}]}
    llm = _llm(lambda _: httpx.Response(200, json=body))
    with pytest.raises(GenerationTruncatedError):
        llm.generate(MESSAGES)


def test_a_stream_that_ends_before_the_server_says_it_is_complete_is_an_error() -> None:
    # no [DONE] and no finish_reason: a proxy or the server closed the stream mid-answer
    llm = _llm(lambda _: _sse(_piece("The bridge opened in"), done=False))
    with pytest.raises(GenerationError, match="complete"):
        list(llm.stream(MESSAGES))


def test_a_stream_the_server_completes_is_whole() -> None:
    # [DONE] alone, or a finish_reason of "stop" alone, says the answer is complete
    assert list(_llm(lambda _: _sse(_piece("Done [1]."))).stream(MESSAGES)) == ["Done [1]."]
    finished = _llm(lambda _: _sse(_piece("Done [1].", "stop"), done=False))
    assert list(finished.stream(MESSAGES)) == ["Done [1]."]


# -- secrets -------------------------------------------------------------------------------------

SECRET_URL = "https://svc:pw-SECRET1@llm.test/v1"


def test_a_secret_in_the_base_url_is_left_out_of_the_recorded_configuration() -> None:
    llm = OpenAICompatGenerator("https://svc:pw-SECRET1@llm.test/v1?api-key=qs-SECRET2&v=7")
    assert "SECRET" not in json.dumps(llm.config()) + llm.base_url
    assert llm.config()["base_url"].endswith("llm.test/v1?api-key=%2A%2A%2A&v=7")


def _echo(status: int) -> Callable[[httpx.Request], httpx.Response]:
    # a server (or proxy) that echoes what it was sent in its error body
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, text=f"refused {request.url} {dict(request.headers)}")

    return handler


@pytest.mark.parametrize("status", [401, 503])
def test_no_secret_reaches_the_config_an_error_or_the_log(
    status: int, caplog: pytest.LogCaptureFixture
) -> None:
    llm = OpenAICompatGenerator(
        SECRET_URL,
        api_key="sk-SECRET3",
        transport=httpx.MockTransport(_echo(status)),
        max_retries=1,
        backoff_s=0.001,
    )
    assert "SECRET" not in json.dumps(llm.config())
    with caplog.at_level("DEBUG"), pytest.raises(GenerationError) as caught:
        llm.generate(MESSAGES)
    err = caught.value
    for text in (str(err), repr(err.context), str(err.source), caplog.text):
        assert "SECRET" not in text
    assert str(status) in str(err)
    # the password still authenticates: it went as Basic auth, outside the URL
    assert "***" in str(err)


def test_no_secret_reaches_a_stream_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        auth = request.headers["authorization"]
        return _sse({"error": {"message": f"bad key {auth}"}})

    llm = OpenAICompatGenerator(
        SECRET_URL, api_key="sk-SECRET3", transport=httpx.MockTransport(handler)
    )
    with pytest.raises(GenerationError) as caught:
        list(llm.stream(MESSAGES))
    assert "SECRET" not in str(caught.value)


# -- answers that never end ----------------------------------------------------------------------


class _Endless:
    """A body of ``chunks`` pieces of 1 MiB (or a few bytes every ``pause_s``); counts what
    was read."""

    def __init__(self, chunks: int, *, pause_s: float = 0.0, size: int = 1 << 20) -> None:
        self.chunks, self.pause_s, self.size, self.sent = chunks, pause_s, size, 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        import time

        for _ in range(self.chunks):
            if self.pause_s:
                time.sleep(self.pause_s)
            self.sent += self.size
            yield b" " * self.size


@pytest.mark.parametrize(("status", "error"), [(200, "over 8 MiB"), (500, "HTTP 500")])
def test_an_endless_answer_or_error_body_is_not_read_whole(status: int, error: str) -> None:
    body = _Endless(40)
    llm = _llm(lambda _: httpx.Response(status, content=body), max_retries=0)
    with pytest.raises(GenerationError, match=error):
        llm.generate(MESSAGES)
    assert body.sent <= 9 << 20


def test_an_endless_stream_line_is_not_read_whole() -> None:
    body = _Endless(40)
    llm = _llm(lambda _: httpx.Response(200, content=body))
    with pytest.raises(GenerationError, match="MiB"):
        list(llm.stream(MESSAGES))
    assert body.sent <= 9 << 20


def test_an_answer_trickling_in_is_bounded_by_the_timeout() -> None:
    import time

    body = _Endless(60, pause_s=0.05, size=1)
    llm = _llm(lambda _: httpx.Response(200, content=body), timeout_s=0.3, max_retries=0)
    started = time.perf_counter()
    with pytest.raises(GenerationError, match="timeout_s"):
        llm.generate(MESSAGES)
    assert time.perf_counter() - started < 1.5


@pytest.mark.parametrize("retry_after", ["-5", "nan", "soon"])
def test_a_retry_after_that_is_no_delay_falls_back_to_the_backoff(retry_after: str) -> None:
    llm = _llm(lambda _: httpx.Response(503, headers={"retry-after": retry_after}), max_retries=1)
    with pytest.raises(GenerationError, match="2 attempts"):
        llm.generate(MESSAGES)


@pytest.mark.parametrize(
    "base", ["https://llm.test/v1", "https://llm.test/v1/", "https://llm.test"]
)
def test_a_key_in_the_base_url_query_reaches_the_server_and_never_the_log(
    base: str, caplog: pytest.LogCaptureFixture
) -> None:
    """httpx's base_url put the path after the query ("/v1?api-key=K/chat/completions": the key
    corrupted, the wrong endpoint) and logged the key with the request line."""
    sent: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(str(request.url))
        return httpx.Response(
            200, json={"choices": [{"message": {"content": "Hi."}, "finish_reason": "stop"}]}
        )

    llm = OpenAICompatGenerator(
        f"{base}?api-key=qs-SECRET2&v=7", transport=httpx.MockTransport(handler)
    )
    with caplog.at_level("DEBUG"):
        assert llm.generate(MESSAGES) == "Hi."
    path = base.removeprefix("https://llm.test").rstrip("/")
    assert sent == [f"https://llm.test{path}/chat/completions?api-key=qs-SECRET2&v=7"]
    assert "SECRET" not in caplog.text + json.dumps(llm.config())


# -- compressed answers (gzip bombs) -------------------------------------------------------------

#: 32 MiB of spaces in about 32 KB: httpx inflated each read whole before any size check
BOMB = __import__("gzip").compress(b" " * (32 << 20), 9)


def _gzipped(body: bytes, status: int = 200, encoding: str = "gzip") -> httpx.Response:
    return httpx.Response(
        status,
        headers={"content-type": "application/json", "content-encoding": encoding},
        stream=httpx.ByteStream(body),  # as received: raw, not yet inflated
    )


def _peak(fn: Callable[[], object]) -> int:
    """The most memory allocated while ``fn`` ran (its GenerationError suppressed)."""
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(GenerationError):
            fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_gzip_bomb_answer_is_never_inflated_past_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    from affidavit.generate import openai_compat

    monkeypatch.setattr(openai_compat, "MAX_ANSWER_BYTES", 64 << 10)
    llm = _llm(lambda _: _gzipped(BOMB), max_retries=0)
    with pytest.raises(GenerationError, match="over"):
        llm.generate(MESSAGES)
    assert _peak(lambda: llm.generate(MESSAGES)) < 4 << 20


def test_a_gzip_bomb_error_body_is_never_inflated_past_its_cap() -> None:
    llm = _llm(lambda _: _gzipped(BOMB, status=500), max_retries=0)
    with pytest.raises(GenerationError, match="HTTP 500"):
        llm.generate(MESSAGES)
    assert _peak(lambda: llm.generate(MESSAGES)) < 4 << 20


def test_a_gzip_bomb_stream_is_never_inflated_whole() -> None:
    llm = _llm(lambda _: _gzipped(BOMB), max_retries=0)
    with pytest.raises(GenerationError, match="MiB"):
        list(llm.stream(MESSAGES))
    assert _peak(lambda: list(llm.stream(MESSAGES))) < 12 << 20


def test_a_gzipped_answer_and_stream_are_read() -> None:
    import gzip

    done = {"choices": [{"message": {"content": "Hi."}, "finish_reason": "stop"}]}
    # two gzip members, as a server that compresses each write sends them
    body = gzip.compress(json.dumps(done).encode()[:10]) + gzip.compress(
        json.dumps(done).encode()[10:]
    )
    assert _llm(lambda _: _gzipped(body)).generate(MESSAGES) == "Hi."
    events = "".join(f"data: {json.dumps(_piece(t))}\n\n" for t in ("The bridge", " opened."))
    sse = b"".join(gzip.compress(line.encode() + b"\n") for line in events.splitlines())
    sse += gzip.compress(b"data: [DONE]\n\n")
    got = list(_llm(lambda _: _gzipped(sse)).stream(MESSAGES))
    assert got == ["The bridge", " opened."]


def test_only_encodings_it_decodes_boundedly_are_asked_for() -> None:
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(request.headers.get("accept-encoding", ""))
        return httpx.Response(
            200, json={"choices": [{"message": {"content": "Hi."}, "finish_reason": "stop"}]}
        )

    assert _llm(handler).generate(MESSAGES) == "Hi."
    assert asked == ["gzip, deflate"]  # not zstd or br, which httpx would inflate whole


@pytest.mark.parametrize("encoding", ["zstd", "br", "gzip, gzip", "x-unknown"])
def test_an_answer_in_an_encoding_not_asked_for_is_refused(encoding: str) -> None:
    llm = _llm(lambda _: _gzipped(b'{"choices": []}', encoding=encoding), max_retries=0)
    with pytest.raises(GenerationError, match="encoding") as caught:
        llm.generate(MESSAGES)
    assert "llm.test" in str(caught.value)
    with pytest.raises(GenerationError, match="encoding"):
        list(llm.stream(MESSAGES))


# -- streams that never end ----------------------------------------------------------------------


class _EndlessStream:
    """An SSE body: ``blocks`` blocks of ``block`` (keep-alive comments or empty deltas), one
    every ``pause_s``, then ``[DONE]``; counts the bytes sent."""

    def __init__(self, block: bytes, blocks: int, *, pause_s: float = 0.0) -> None:
        self.block, self.blocks, self.pause_s, self.sent = block, blocks, pause_s, 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        import time

        for _ in range(self.blocks):
            if self.pause_s:
                time.sleep(self.pause_s)
            self.sent += len(self.block)
            yield self.block
        yield b"data: [DONE]\n\n"


_KEEP_ALIVE = b": keep-alive\n\n"
_EMPTY_DELTA = f"data: {json.dumps(_piece(''))}\n\n".encode()


@pytest.mark.parametrize("event", [_KEEP_ALIVE, _EMPTY_DELTA], ids=["comment", "empty_delta"])
def test_a_stream_that_keeps_sending_nothing_is_cut_at_its_total_time(event: bytes) -> None:
    import time

    # each read comes well within timeout_s: only a cap on the whole stream stops it
    body = _EndlessStream(event, 60, pause_s=0.05)
    llm = _llm(lambda _: httpx.Response(200, content=body), stream_timeout_s=0.3)
    started = time.perf_counter()
    with pytest.raises(GenerationError, match="stream_timeout_s"):
        list(llm.stream(MESSAGES))
    assert time.perf_counter() - started < 1.5


@pytest.mark.parametrize("event", [_KEEP_ALIVE, _EMPTY_DELTA], ids=["comment", "empty_delta"])
def test_a_stream_that_keeps_sending_nothing_is_cut_at_its_total_size(
    monkeypatch: pytest.MonkeyPatch, event: bytes
) -> None:
    from affidavit.generate import openai_compat

    monkeypatch.setattr(openai_compat, "MAX_STREAM_BYTES", 256 << 10)
    block = event * ((64 << 10) // len(event))  # valid events, no line anywhere near 1 MiB
    body = _EndlessStream(block, 64)
    llm = _llm(lambda _: httpx.Response(200, content=body))
    with pytest.raises(GenerationError, match=r"over 0\.25 MiB"):
        list(llm.stream(MESSAGES))
    assert body.sent <= 512 << 10


def test_a_stream_within_its_caps_is_read_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    from affidavit.generate import openai_compat

    monkeypatch.setattr(openai_compat, "MAX_STREAM_BYTES", 256 << 10)
    events = [_piece(""), _piece("The bridge"), _piece(" opened.", "stop")]
    llm = _llm(lambda _: _sse(*events), stream_timeout_s=5.0)
    assert list(llm.stream(MESSAGES)) == ["The bridge", " opened."]


def test_a_stream_cut_at_its_caps_is_never_an_answer_of_ask() -> None:
    from affidavit.claims.extractor import RuleBasedExtractor
    from affidavit.core.settings import load_settings
    from affidavit.core.types import Chunk, Hit
    from affidavit.pipeline import AskPipeline

    chunk = Chunk(text="The bridge opened in 1932.", url="file:///bridge.txt")

    class OneHit:
        def search(self, query, k=10, mode="hybrid", filters=None):  # type: ignore[no-untyped-def]
            return [Hit(chunk=chunk, score=1.0, rank=1, mode="bm25")]

    class Never:
        def verify(self, claim, chunks):  # type: ignore[no-untyped-def]
            raise AssertionError("a cut stream must not reach the verifier")

    def body():  # type: ignore[no-untyped-def]
        yield f"data: {json.dumps(_piece('The bridge opened in 1932 [1].'))}\n\n".encode()
        yield from _EndlessStream(_KEEP_ALIVE, 60, pause_s=0.05)

    def handler(_: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body())

    pipe = AskPipeline(
        retriever=OneHit(),
        generator=_llm(handler, stream_timeout_s=0.3),
        extractor=RuleBasedExtractor(),
        verifier=Never(),
        settings=load_settings(),
    )
    shown: list[str] = []
    with pytest.raises(GenerationError, match="stream_timeout_s"):
        pipe.ask("When did the bridge open?", on_token=shown.append)
    assert shown == ["The bridge opened in 1932 [1]."]  # shown as it came, never as an answer
