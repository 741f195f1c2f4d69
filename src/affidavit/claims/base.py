"""The claim-extraction stage Protocol."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from affidavit.core.claims import ClaimExtraction, SkippedSentence
from affidavit.core.types import Claim


@runtime_checkable
class ClaimExtractor(Protocol):
    """Turns an answer into atomic, checkable claims with offsets into the answer."""

    def extract(self, answer: str) -> list[Claim]:
        """Return the answer's checkable claims, in answer order."""
        ...


def claims_and_limit_stops(
    extractor: ClaimExtractor, answer: str
) -> tuple[list[Claim], list[SkippedSentence]]:
    """The answer's claims, and the sentences the extractor's claim limit (``max_claims``) cut
    short or never reached.

    An extractor with ``run`` returning a `ClaimExtraction` (the shipped ones) reports what it
    skipped; another gives its claims only.
    """
    run = getattr(extractor, "run", None)
    if callable(run):
        extraction = run(answer)
        if isinstance(extraction, ClaimExtraction):
            stopped = [s for s in extraction.skipped if s.reason == "limit"]
            return list(extraction.claims), stopped
    return list(extractor.extract(answer)), []
