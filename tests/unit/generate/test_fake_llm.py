"""The scripted fake generator shipped in affidavit.testing."""

from __future__ import annotations

import pytest

from affidavit.core.errors import GenerationError
from affidavit.core.types import Message
from affidavit.generate.base import Generator
from affidavit.testing.fake_llm import FakeGenerator

USER = [Message(role="user", content="Capital of France?")]


def test_is_a_generator() -> None:
    assert isinstance(FakeGenerator(["x"]), Generator)


def test_replays_in_order_and_records_prompts() -> None:
    llm = FakeGenerator(["first", "second"])
    assert llm.generate(USER) == "first"
    assert "".join(llm.stream(USER, max_tokens=7)) == "second"
    assert [c.method for c in llm.calls] == ["generate", "stream"]
    assert llm.calls[1].max_tokens == 7
    assert llm.calls[0].messages[0].content == "Capital of France?"


def test_stream_yields_several_pieces_that_join_back() -> None:
    text = "Paris is the capital [1].\nIt is large [2]. "
    pieces = list(FakeGenerator([text]).stream(USER))
    assert len(pieces) > 3
    assert "".join(pieces) == text


def test_used_up_script_raises() -> None:
    llm = FakeGenerator(["only"])
    llm.generate(USER)
    with pytest.raises(GenerationError, match="used up"):
        llm.generate(USER)


def test_repeat_last() -> None:
    llm = FakeGenerator(["a", "b"], repeat_last=True)
    assert [llm.generate(USER) for _ in range(3)] == ["a", "b", "b"]


def test_scripted_exception_is_raised() -> None:
    llm = FakeGenerator([GenerationError("boom"), "ok"])
    with pytest.raises(GenerationError, match="boom"):
        llm.generate(USER)
    assert llm.generate(USER) == "ok"


def test_json_schema_requires_json() -> None:
    llm = FakeGenerator(["not json", '{"score": 3}'])
    with pytest.raises(GenerationError, match="not JSON"):
        llm.generate(USER, json_schema={"type": "object"})
    assert llm.generate(USER, json_schema={"type": "object"}) == '{"score": 3}'


def test_callable_script_sees_messages() -> None:
    llm = FakeGenerator(lambda msgs: msgs[-1].content.upper())
    assert llm.generate(USER) == "CAPITAL OF FRANCE?"


def test_empty_script_rejected() -> None:
    with pytest.raises(ValueError):
        FakeGenerator([])
