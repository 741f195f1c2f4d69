"""The embedded llama.cpp backend over a scripted stand-in for ``xllamacpp.Server``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from affidavit.core.errors import GenerationTruncatedError
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
