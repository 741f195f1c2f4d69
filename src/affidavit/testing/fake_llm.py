"""A scripted chat model for tests: returns queued answers, records every prompt.

Shipped with the library so applications can test their use of affidavit without a model.

Example:
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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
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
    """A :class:`~affidavit.generate.base.Generator` that replays a script.

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
