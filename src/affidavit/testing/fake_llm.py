"""A scripted chat model for tests: returns queued answers, records every prompt.

Shipped with the library so applications can test their use of affidavit without a model.

Examples:
    >>> from affidavit.core.types import Message
    >>> llm = FakeGenerator(["Paris is the capital of France [1]."])
    >>> "".join(llm.stream([Message(role="user", content="Capital of France?")]))
    'Paris is the capital of France [1].'
    >>> llm.calls[0].messages[0].content
    'Capital of France?'
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from affidavit.core.errors import GenerationError
from affidavit.core.types import Message

Script = Sequence[str | BaseException] | Callable[[Sequence[Message]], str]


@dataclass(frozen=True)
class FakeCall:
    """One recorded request."""

    method: Literal["generate", "stream"]
    messages: tuple[Message, ...]
    max_tokens: int | None
    json_schema: dict[str, Any] | None


class FakeGenerator:
    """A `Generator` that replays a script.

    Args:
        responses: answers returned in order (an exception in the list is raised at its turn),
            or a function of the messages that returns the answer.
        name: backend name reported in traces.
        repeat_last: keep returning the last answer once the list is used up (default: raise).

    Raises (from ``generate``/``stream``):
        GenerationError: the script is used up, or a ``json_schema`` answer is not JSON.
    """

    def __init__(self, responses: Script, *, name: str = "fake", repeat_last: bool = False) -> None:
        if not callable(responses) and len(responses) == 0:
            raise ValueError("FakeGenerator needs at least one scripted response")
        self.name = name
        self._responses = responses
        self._repeat_last = repeat_last
        self._turn = 0
        self.calls: list[FakeCall] = []

    def config(self) -> dict[str, Any]:
        """The effective configuration (for certificates)."""
        return {"backend": "fake", "name": self.name}

    def _next(self, messages: Sequence[Message]) -> str:
        if callable(self._responses):
            return self._responses(messages)
        script = self._responses
        if self._turn >= len(script):
            if not (self._repeat_last and script):
                raise GenerationError(
                    f"FakeGenerator script used up after {len(script)} responses",
                    model=self.name,
                )
            item = script[-1]
        else:
            item = script[self._turn]
        self._turn += 1
        if isinstance(item, BaseException):
            raise item
        return item

    def generate(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> str:
        """Return the next scripted answer (checked to be JSON when a schema is given)."""
        self.calls.append(FakeCall("generate", tuple(messages), max_tokens, json_schema))
        text = self._next(messages)
        if json_schema is not None:
            try:
                json.loads(text)
            except ValueError as exc:
                raise GenerationError(
                    f"scripted answer is not JSON but a json_schema was requested: {text[:80]!r}",
                    model=self.name,
                ) from exc
        return text

    def stream(
        self, messages: Sequence[Message], *, max_tokens: int | None = None
    ) -> Iterator[str]:
        """Yield the next scripted answer word by word (spaces kept, so pieces join back)."""
        self.calls.append(FakeCall("stream", tuple(messages), max_tokens, None))
        text = self._next(messages)
        yield from (m.group(0) for m in re.finditer(r"\s*\S+|\s+$", text))


@dataclass
class FakeReply:
    """One scripted reply of `FakeOpenAIServer`."""

    status: int = 200
    content: str = ""
    stream_pieces: list[str] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None  # a raw body instead of the completion JSON
    delay_s: float = 0.0  # pause before each streamed piece (a slow model, for timeouts)


class FakeOpenAIServer:
    """A tiny OpenAI-compatible ``/v1/chat/completions`` server on loopback, for tests.

    Replies come from ``replies`` in order (the last one repeats); streaming requests get the
    reply's ``stream_pieces`` (or its content split into words) as SSE events. Every request body
    and its headers are recorded.

    Examples:
        >>> with FakeOpenAIServer([FakeReply(content="Paris [1].")]) as srv:
        ...     import httpx
        ...     r = httpx.post(srv.url + "/chat/completions", json={"messages": []})
        ...     r.json()["choices"][0]["message"]["content"]
        'Paris [1].'
    """

    def __init__(self, replies: Sequence[FakeReply]) -> None:
        if not replies:
            raise ValueError("FakeOpenAIServer needs at least one reply")
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.url = ""
        self._httpd: Any = None
        self._thread: Any = None

    def _next(self) -> FakeReply:
        return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]

    def __enter__(self) -> FakeOpenAIServer:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append(body)
                server.headers.append(dict(self.headers))
                reply = server._next()
                if self.path.rstrip("/") != "/v1/chat/completions":
                    reply = FakeReply(status=404, body='{"error": "not found"}')
                if body.get("stream") and reply.status == 200:
                    self._stream(reply)
                    return
                payload = (
                    reply.body
                    or json.dumps(
                        {
                            "id": "fake",
                            "object": "chat.completion",
                            "choices": [
                                {
                                    "index": 0,
                                    "message": {"role": "assistant", "content": reply.content},
                                    "finish_reason": "stop",
                                }
                            ],
                        }
                    )
                ).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(payload)

            def _stream(self, reply: FakeReply) -> None:
                pieces = reply.stream_pieces
                if pieces is None:
                    pieces = [m.group(0) for m in re.finditer(r"\s*\S+", reply.content)]
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                self.wfile.write(b": keep-alive\n\n")
                for piece in pieces:
                    if reply.delay_s:
                        time.sleep(reply.delay_s)
                    event = {"choices": [{"index": 0, "delta": {"content": piece}}]}
                    try:
                        self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                        self.wfile.flush()
                    except (BrokenPipeError, ConnectionResetError):
                        return  # the client stopped reading (a cancelled answer)
                final = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
                self.wfile.write(f"data: {json.dumps(final)}\n\ndata: [DONE]\n\n".encode())

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
