"""The claim-extraction stage Protocol."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from affidavit.core.types import Claim


@runtime_checkable
class ClaimExtractor(Protocol):
    """Turns an answer into atomic, checkable claims with offsets into the answer."""

    def extract(self, answer: str) -> list[Claim]:
        """Return the answer's checkable claims, in answer order."""
        ...
