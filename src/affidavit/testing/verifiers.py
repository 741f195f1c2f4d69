"""A deterministic fake verifier for tests: word containment, no model.

Shipped with the library so applications can test code that calls a
`ClaimVerifier` without loading the cross-encoder. It is not a
verifier anyone should trust: it only asks whether one chunk contains every content word of the
claim.

Examples:
    >>> from affidavit.core.types import Chunk
    >>> from affidavit.verify.cascade import claim_from_text
    >>> v = KeywordVerifier()
    >>> v.verify(claim_from_text("Rome is in Italy."), [Chunk(text="Rome is in Italy.")]).label
    'supported'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from affidavit.core.types import Chunk, Claim, EvidenceSpan, Verdict

_WORD = re.compile(r"\w+")
_STOP = frozenset(
    "a an the is are was were in on of to and or it its by for with at as".split()  # noqa: SIM905
)


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


class KeywordVerifier:
    """Supported when one chunk contains every content word of the claim, else unsupported."""

    name = "keyword-fake"

    def describe(self) -> dict[str, Any]:
        """The effective configuration."""
        return {"kind": "fake", "name": self.name}

    def verify(self, claim: Claim, chunks: Sequence[Chunk]) -> Verdict:
        """The verdict for ``claim`` against ``chunks``."""
        need = _words(claim.text)
        for c in chunks:
            if need and need <= _words(c.text):
                span = EvidenceSpan(chunk_id=c.id, start=0, end=len(c.text), text=c.text)
                return Verdict(
                    claim_id=claim.id,
                    label="supported",
                    p_entail=0.9,
                    p_neutral=0.05,
                    p_contradict=0.05,
                    evidence=(span,),
                    reason="every content word of the claim is in one chunk",
                )
        return Verdict(
            claim_id=claim.id,
            label="unsupported",
            p_entail=0.05,
            p_neutral=0.9,
            p_contradict=0.05,
            reason="no chunk contains every content word of the claim",
        )


__all__ = ["KeywordVerifier"]
