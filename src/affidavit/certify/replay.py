"""Replay: re-run verification on a certificate's stored evidence and compare the decisions.

For each claim the replay fetches the chunks its evidence came from (any object with the store's
``get_chunks``), checks that each recorded span still hashes to its recorded sha256, runs the
given :class:`~affidavit.verify.base.ClaimVerifier` on the claim and those chunks, decides under
the certificate's own policy, and compares with the recorded decision. Missing evidence or a
hash mismatch is a disagreement: a replay never agrees by default.

Example:
    >>> class NoChunks:
    ...     def get_chunks(self, ids): return []
    >>> class Never:
    ...     def verify(self, claim, chunks): raise AssertionError("no claims to verify")
    >>> from affidavit.core.certificate import Certificate, PolicyRecord
    >>> cert = Certificate(question="", answer="", claims=(), config={}, library_version="0",
    ...     created_at="2026-01-01T00:00:00Z",
    ...     policy=PolicyRecord(preset="default", display="strict", tau_entail=0.5,
    ...                         tau_contradict=0.5))
    >>> replay_certificate(cert, Never(), NoChunks()).agree
    True
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from affidavit.certify.certificate import policy_of
from affidavit.core.certificate import Certificate, ReplayResult
from affidavit.core.errors import AffidavitError
from affidavit.core.types import Chunk, Decision, sha256_text
from affidavit.policy.render import decide
from affidavit.verify.base import ClaimVerifier

logger = logging.getLogger(__name__)

__all__ = ["EvidenceSource", "replay_certificate"]


@runtime_checkable
class EvidenceSource(Protocol):
    """Where stored chunks are read back from (every ``Store`` is one)."""

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """The stored chunks with these ids (unknown ids are left out)."""
        ...


def replay_certificate(
    cert: Certificate, verifier: ClaimVerifier, evidence: EvidenceSource
) -> ReplayResult:
    """Re-verify every claim of a certificate on stored evidence and compare decisions.

    Args:
        cert: the certificate (check its signature first with ``verify_certificate``).
        verifier: the claim verifier to re-run (e.g. ``affidavit.verify.cascade.ClaimCascade``).
        evidence: the store the evidence chunks are read from.

    Returns:
        ``agree`` only if every claim's replayed decision equals the recorded one and every
        recorded evidence span was found with the same sha256.
    """
    policy = policy_of(cert.policy)
    mismatches: list[str] = []
    decisions: dict[str, Decision] = {}
    for record in cert.claims:
        claim = record.claim
        wanted = list(dict.fromkeys(e.chunk_id for e in record.evidence))
        try:
            chunks = {c.id: c for c in evidence.get_chunks(wanted)} if wanted else {}
        except AffidavitError as exc:
            mismatches.append(f"claim {claim.id}: evidence could not be read ({exc.message})")
            continue
        missing = [cid for cid in wanted if cid not in chunks]
        if missing:
            mismatches.append(
                f"claim {claim.id}: evidence chunk(s) {', '.join(missing)} not in the store"
            )
        for i, ev in enumerate(record.evidence):
            chunk = chunks.get(ev.chunk_id)
            if chunk is None:
                continue
            if not 0 <= ev.start <= ev.end <= len(chunk.text):
                mismatches.append(
                    f"claim {claim.id} evidence {i}: offsets {ev.start}-{ev.end} are outside "
                    f"stored chunk {ev.chunk_id}"
                )
            elif sha256_text(chunk.text[ev.start : ev.end]) != ev.sha256:
                mismatches.append(
                    f"claim {claim.id} evidence {i}: stored text of chunk {ev.chunk_id} "
                    f"[{ev.start}:{ev.end}] does not hash to the recorded sha256"
                )
        try:
            verdict = verifier.verify(claim, [chunks[c] for c in wanted if c in chunks])
        except AffidavitError as exc:
            # fail closed: a replay that cannot run does not agree
            mismatches.append(f"claim {claim.id}: the verifier failed ({exc.message})")
            continue
        decision, reason = decide(verdict, policy, premise=cert.question)
        decisions[claim.id] = decision
        if decision != record.decision:
            mismatches.append(
                f"claim {claim.id}: recorded {record.decision}, replay gives {decision} ({reason})"
            )
    logger.info("replayed %d claims, %d mismatches", len(cert.claims), len(mismatches))
    return ReplayResult(agree=not mismatches, mismatches=tuple(mismatches), decisions=decisions)
