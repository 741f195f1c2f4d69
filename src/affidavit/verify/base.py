"""The verification stage Protocols.

A `PairScorer` scores (claim, evidence) text pairs into 3-way probabilities (one cascade
stage); a `ClaimVerifier` turns a claim plus retrieved chunks into a `Verdict`
(evidence selection, windows, cascade, minimal sufficient evidence). Both fail closed: a stage that
cannot run returns/records an error and the claim is never reported as supported.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from affidavit.core.types import Chunk, Claim, StageScore, Verdict


@runtime_checkable
class PairScorer(Protocol):
    """Scores claim/evidence pairs: one StageScore per pair, in input order."""

    name: str

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[StageScore]:
        """Score each (claim, evidence) pair."""
        ...


@runtime_checkable
class ClaimVerifier(Protocol):
    """Verifies one claim against the retrieved chunks."""

    def verify(self, claim: Claim, chunks: Sequence[Chunk]) -> Verdict:
        """Return the verdict; never raises for a claim that merely cannot be decided."""
        ...


def unverified(claim: Claim, error: str, reason: str) -> Verdict:
    """The verdict of a claim that could not be checked: unsupported, incomplete, ``error``
    recorded (fail closed: never supported)."""
    return Verdict(
        claim_id=claim.id,
        label="unsupported",
        p_entail=0.0,
        p_neutral=1.0,
        p_contradict=0.0,
        complete=False,
        errors=(error,),
        reason=reason,
    )
