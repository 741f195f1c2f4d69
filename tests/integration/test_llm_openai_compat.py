"""OpenAICompatGenerator against a tiny OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from affidavit.core.errors import GenerationError
from affidavit.core.types import Message
from affidavit.generate.openai_compat import OpenAICompatGenerator
from affidavit.testing.fake_llm import FakeOpenAIServer, FakeReply

pytestmark = pytest.mark.integration

USER = [Message(role="user", content="What is the capital of France?")]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer([FakeReply(content="Paris [1].")]) as srv:
        yield srv


def _client(url: str, **kw: Any) -> OpenAICompatGenerator:
    kw.setdefault("backoff_s", 0.01)
    return OpenAICompatGenerator(url, model="m", api_key="sk-test", **kw)


def test_generate_sends_chat_request(server: FakeOpenAIServer) -> None:
    server.replies = [FakeReply(content="Paris is the capital [1].")]
    out = _client(server.url, max_tokens=33).generate(USER)
    assert out == "Paris is the capital [1]."
    req = server.requests[0]
    assert req["model"] == "m"
    assert req["messages"] == [{"role": "user", "content": "What is the capital of France?"}]
    assert req["max_tokens"] == 33
    assert req["stream"] is False
    assert server.headers[0]["Authorization"] == "Bearer sk-test"


def test_stream_yields_pieces_as_sent(server: FakeOpenAIServer) -> None:
    server.replies = [FakeReply(stream_pieces=["Par", "is", " [1]", "."])]
    pieces = list(_client(server.url).stream(USER))
    assert pieces == ["Par", "is", " [1]", "."]
    assert server.requests[0]["stream"] is True


def test_retries_500_then_succeeds(server: FakeOpenAIServer) -> None:
    server.replies = [
        FakeReply(status=500, body='{"error": "overloaded"}'),
        FakeReply(content="ok"),
    ]
    assert _client(server.url, max_retries=2).generate(USER) == "ok"
    assert len(server.requests) == 2


def test_stream_retries_before_first_piece(server: FakeOpenAIServer) -> None:
    server.replies = [FakeReply(status=503, body="{}"), FakeReply(stream_pieces=["a", "b"])]
    assert list(_client(server.url, max_retries=1).stream(USER)) == ["a", "b"]
    assert len(server.requests) == 2


def test_429_honours_retry_after(server: FakeOpenAIServer) -> None:
    server.replies = [
        FakeReply(status=429, body="{}", headers={"Retry-After": "0.3"}),
        FakeReply(content="ok"),
    ]
    start = time.perf_counter()
    assert _client(server.url, max_retries=1).generate(USER) == "ok"
    assert time.perf_counter() - start >= 0.3


def test_gives_up_after_max_retries(server: FakeOpenAIServer) -> None:
    server.replies = [FakeReply(status=502, body="bad gateway")]
    with pytest.raises(GenerationError, match="after 3 attempts"):
        _client(server.url, max_retries=2).generate(USER)
    assert len(server.requests) == 3


def test_client_error_is_not_retried(server: FakeOpenAIServer) -> None:
    server.replies = [FakeReply(status=401, body='{"error": "bad key"}')]
    with pytest.raises(GenerationError, match="401"):
        _client(server.url, max_retries=3).generate(USER)
    assert len(server.requests) == 1


def test_connection_refused_is_a_generation_error() -> None:
    # a port nobody listens on (bound then closed)
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(GenerationError, match="attempts"):
        _client(f"http://127.0.0.1:{port}/v1", max_retries=1).generate(USER)


SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "integer", "minimum": 0, "maximum": 10}},
    "required": ["score"],
}


def test_json_schema_sent_as_response_format(server: FakeOpenAIServer) -> None:
    server.replies = [FakeReply(content='{"score": 8}')]
    out = _client(server.url).generate(USER, json_schema=SCHEMA)
    assert json.loads(out) == {"score": 8}
    rf = server.requests[0]["response_format"]
    assert rf["type"] == "json_schema"
    assert rf["json_schema"]["schema"] == SCHEMA


def test_json_schema_falls_back_to_prompt_when_unsupported(server: FakeOpenAIServer) -> None:
    server.replies = [
        FakeReply(status=400, body='{"error": "response_format not supported"}'),
        FakeReply(content='Here you go: {"score": 4}'),
        FakeReply(content='{"score": 5}'),
    ]
    llm = _client(server.url)
    assert json.loads(llm.generate(USER, json_schema=SCHEMA)) == {"score": 4}
    second = server.requests[1]
    assert "response_format" not in second
    assert second["messages"][0]["role"] == "system"
    assert "JSON Schema" in second["messages"][0]["content"]
    # learnt: the next request goes straight to the prompt route
    llm.generate(USER, json_schema=SCHEMA)
    assert "response_format" not in server.requests[2]
    assert len(server.requests) == 3


def test_non_conforming_json_fails_closed(server: FakeOpenAIServer) -> None:
    server.replies = [FakeReply(content='{"score": 42}')]
    with pytest.raises(GenerationError, match="maximum"):
        _client(server.url).generate(USER, json_schema=SCHEMA)


def test_malformed_completion_is_an_error(server: FakeOpenAIServer) -> None:
    server.replies = [FakeReply(body='{"choices": []}')]
    with pytest.raises(GenerationError, match="malformed"):
        _client(server.url).generate(USER)
