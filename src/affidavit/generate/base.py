"""The generation stage Protocol: any chat LLM (embedded llama.cpp, OpenAI-compatible, fake)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

from affidavit.core.types import Message


@runtime_checkable
class Generator(Protocol):
    """A chat model. Implementations raise ``GenerationError`` on failure, never return junk.

    Optional, used when present: ``load()`` loads the model ahead of the first request (the ask
    pipeline times it apart from generation), ``config()`` returns the effective configuration
    (recorded in traces and certificates). Backends: ``affidavit.generate.llamacpp``,
    ``affidavit.generate.openai_compat``, ``affidavit.testing.fake_llm``.
    """

    name: str

    def generate(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> str:
        """Return the full completion; with ``json_schema``, a JSON text matching it."""
        ...

    def stream(
        self, messages: Sequence[Message], *, max_tokens: int | None = None
    ) -> Iterator[str]:
        """Yield the completion as text pieces while it is generated."""
        ...
