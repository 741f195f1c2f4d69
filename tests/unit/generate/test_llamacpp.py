"""The embedded llama.cpp backend over a scripted stand-in for ``xllamacpp.Server``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from affidavit.core.errors import GenerationError, GenerationTruncatedError
from affidavit.core.types import Message
from affidavit.generate.llamacpp import LlamaCppGenerator

MESSAGES = [Message(role="user", content="When did the bridge open?")]


class _Server:
    """Answers ``handle_chat_completions`` as llama.cpp's server does, from a script."""

    def __init__(self, pieces: Sequence[str], finish: str) -> None:
        self.pieces, self.finish = list(pieces), finish

    def handle_chat_completions(
        self, request: dict[str, Any], on_chunk: Callable[[Any], bool] | None = None
    ) -> Any:
        if on_chunk is None:
            message = {"role": "assistant", "content": "".join(self.pieces)}
            return {"choices": [{"index": 0, "message": message, "finish_reason": self.finish}]}
        for piece in self.pieces:
            on_chunk({"choices": [{"index": 0, "delta": {"content": piece}}]})
        on_chunk({"choices": [{"index": 0, "delta": {}, "finish_reason": self.finish}]})
        return None


def _llm(monkeypatch: pytest.MonkeyPatch, server: _Server) -> LlamaCppGenerator:
    llm = LlamaCppGenerator(Path("unused.gguf"))
    monkeypatch.setattr(llm, "_server", lambda: server)
    return llm


def test_a_stream_cut_at_the_token_budget_says_so_after_its_pieces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    llm = _llm(monkeypatch, _Server(["The bridge", " opened in"], "length"))
    pieces: list[str] = []
    with pytest.raises(GenerationTruncatedError) as caught:
        for piece in llm.stream(MESSAGES):
            pieces.append(piece)
    assert pieces == ["The bridge", " opened in"]
    assert caught.value.context["reason"] == "length"


def test_a_completion_cut_at_the_token_budget_is_not_returned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    llm = _llm(monkeypatch, _Server(["The bridge opened in"], "length"))
    with pytest.raises(GenerationTruncatedError):
        llm.generate(MESSAGES)


def test_a_finished_answer_is_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    llm = _llm(monkeypatch, _Server(["Done", " [1]."], "stop"))
    assert "".join(llm.stream(MESSAGES)) == "Done [1]."
    assert llm.generate(MESSAGES) == "Done [1]."


class _Trickle(_Server):
    """Streams one piece every ``pause_s`` until asked to stop, at most ``limit`` pieces, and
    ends without a finish reason when asked to stop (as llama.cpp does)."""

    def __init__(self, pause_s: float, limit: int = 200, finish: str | None = "stop") -> None:
        super().__init__([], finish or "stop")
        self.pause_s, self.limit, self.end_finish = pause_s, limit, finish
        self.stopped = False

    def handle_chat_completions(
        self, request: dict[str, Any], on_chunk: Callable[[Any], bool] | None = None
    ) -> Any:
        import time

        assert on_chunk is not None
        for _ in range(self.limit):
            time.sleep(self.pause_s)
            if on_chunk({"choices": [{"index": 0, "delta": {"content": " word"}}]}):
                self.stopped = True
                return None
        if self.end_finish is not None:
            on_chunk({"choices": [{"index": 0, "delta": {}, "finish_reason": self.end_finish}]})
        return None


def test_a_stream_that_ends_without_a_finish_reason_is_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # llama.cpp ends every finished answer with a finish reason; without one it was stopped
    llm = _llm(monkeypatch, _Trickle(0.0, limit=3, finish=None))
    with pytest.raises(GenerationError, match="complete"):
        list(llm.stream(MESSAGES))


def test_a_stream_past_its_total_time_is_cut_and_llama_cpp_is_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import time

    server = _Trickle(0.02, limit=150)  # 3 s of pieces
    llm = LlamaCppGenerator(Path("unused.gguf"), stream_timeout_s=0.3)
    monkeypatch.setattr(llm, "_server", lambda: server)
    started = time.perf_counter()
    with pytest.raises(GenerationError, match="stream_timeout_s"):
        list(llm.stream(MESSAGES))
    assert time.perf_counter() - started < 1.5
    assert server.stopped  # the native generation was asked to stop, not left running


class _SlowWhole(_Trickle):
    """A `_Trickle` whose plain (non-streamed) call also takes the whole trickle's time before
    it answers, as llama.cpp does when the callback is left out."""

    def handle_chat_completions(
        self, request: dict[str, Any], on_chunk: Callable[[Any], bool] | None = None
    ) -> Any:
        import time

        self.requests = [*getattr(self, "requests", []), request]
        if on_chunk is not None:
            return super().handle_chat_completions(request, on_chunk)
        time.sleep(self.pause_s * self.limit)
        message = {"role": "assistant", "content": " word" * self.limit}
        return {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}


def test_a_completion_past_its_time_limit_is_cut_and_llama_cpp_is_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import time

    server = _SlowWhole(0.02, limit=150)  # 3 s of generation
    llm = LlamaCppGenerator(Path("unused.gguf"), timeout_s=0.3)
    monkeypatch.setattr(llm, "_server", lambda: server)
    started = time.perf_counter()
    with pytest.raises(GenerationError, match=r"generate\.timeout_s"):
        llm.generate(MESSAGES)
    assert time.perf_counter() - started < 1.5
    assert server.stopped  # the native generation was asked to stop, not left running


def test_a_constrained_completion_is_bounded_by_the_same_time_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = _SlowWhole(0.02, limit=150)
    llm = LlamaCppGenerator(Path("unused.gguf"), timeout_s=0.3)
    monkeypatch.setattr(llm, "_server", lambda: server)
    with pytest.raises(GenerationError, match=r"generate\.timeout_s"):
        llm.generate(MESSAGES, json_schema={"type": "object"})
    # the schema still constrains the answer (grammar sampling) on the bounded path
    assert server.requests[-1]["response_format"]["json_schema"]["schema"] == {"type": "object"}


def test_a_completion_is_bounded_by_timeout_s_and_a_stream_by_stream_timeout_s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # generate.timeout_s bounds one call, as for the OpenAI backend's completion; a stream
    # shown piece by piece has the longer generate.stream_timeout_s
    server = _SlowWhole(0.02, limit=25)  # 0.5 s
    llm = LlamaCppGenerator(Path("unused.gguf"), timeout_s=0.2, stream_timeout_s=5.0)
    monkeypatch.setattr(llm, "_server", lambda: server)
    assert "".join(llm.stream(MESSAGES)) == " word" * 25
    with pytest.raises(GenerationError, match=r"generate\.timeout_s"):
        llm.generate(MESSAGES)
    assert llm.config()["timeout_s"] == 0.2


def test_a_completion_within_its_time_limit_is_whole_and_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    llm = _llm(monkeypatch, _Server(['{"score":', " 7}"], "stop"))
    schema = {"type": "object", "properties": {"score": {"type": "integer"}}}
    assert llm.generate(MESSAGES, json_schema=schema) == '{"score": 7}'


def test_a_completion_that_ends_without_a_finish_reason_is_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    llm = _llm(monkeypatch, _Trickle(0.0, limit=3, finish=None))
    with pytest.raises(GenerationError, match="complete"):
        llm.generate(MESSAGES)
