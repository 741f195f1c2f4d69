"""Replay: re-run verification on a certificate's stored evidence and compare the decisions.

For each claim the replay fetches the chunks its evidence came from (any object with the store's
``get_chunks``), rebuilds the passage the claim was checked against (for evidence that corrective
retrieval trimmed, from the stored chunk and the recorded kept sentences, format 2), checks that
each recorded span still hashes to its recorded sha256, runs the given
`ClaimVerifier` on the claim and those passages, decides under the
certificate's own policy, and compares with the recorded decision. Missing evidence or a hash
mismatch is a disagreement: a replay never agrees by default. Evidence the store deleted on
purpose (its document deleted, replaced or pruned) is said to be deleted, with when and why, and
its claim is listed as not replayed. A claim whose evidence came from the
web is not replayed (no store holds it) and is listed as such, neither agreeing nor disagreeing.

Examples:
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
from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from affidavit.certify.certificate import policy_of
from affidavit.certify.verify import EvidenceLookup
from affidavit.core.certificate import Certificate, EvidenceRecord, ReplayResult
from affidavit.core.correction import refined_chunk
from affidavit.core.errors import AffidavitError
from affidavit.core.retrieval import DeletedChunk
from affidavit.core.types import Chunk, Decision, sha256_text
from affidavit.policy.render import decide
from affidavit.verify.base import ClaimVerifier

logger = logging.getLogger(__name__)

__all__ = ["EvidenceSource", "evidence_chunk", "replay_certificate", "store_lookup"]


@runtime_checkable
class EvidenceSource(Protocol):
    """Where stored chunks are read back from (every ``Store`` is one)."""

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """The stored chunks with these ids (unknown ids are left out)."""
        ...


def _stored_id(ev: EvidenceRecord) -> str:
    """The id of the stored chunk an evidence span's passage is (or was refined from)."""
    return ev.origin.chunk_id if ev.origin is not None else ev.chunk_id


def evidence_chunk(ev: EvidenceRecord, stored: Chunk) -> Chunk | None:
    """The passage an evidence span was checked in, rebuilt from its stored chunk.

    Returns ``stored`` itself for evidence without an origin (format 1, or a chunk used as it
    was), the refined passage for evidence with one, and None when the recorded kept sentences
    do not fit the stored text or the rebuilt passage is not the one recorded (its id, derived
    from text and url, differs): the store no longer holds what the claim was checked against.
    """
    if ev.origin is None:
        return stored
    try:
        rebuilt = refined_chunk(stored, ev.origin.kept)
    except ValueError:
        return None
    return rebuilt if rebuilt.id == ev.chunk_id else None


def store_lookup(source: EvidenceSource) -> EvidenceLookup:
    """An evidence lookup for `verify_certificate` that reads
    each span's text from the store (rebuilding trimmed passages first).

    Web evidence is never looked up here: ``verify_certificate`` reports it as not in the store.
    """

    def lookup(ev: EvidenceRecord) -> str | None:
        found = source.get_chunks([_stored_id(ev)])
        if not found:
            return None
        passage = evidence_chunk(ev, found[0])
        if passage is None or ev.end > len(passage.text):
            return None
        return passage.text[ev.start : ev.end]

    return lookup


def _web_evidence(record_evidence: Sequence[EvidenceRecord]) -> list[str]:
    return [
        ev.url or ev.chunk_id
        for ev in record_evidence
        if ev.origin is not None and ev.origin.kind == "web"
    ]


def replay_certificate(
    cert: Certificate, verifier: ClaimVerifier, evidence: EvidenceSource
) -> ReplayResult:
    """Re-verify every claim of a certificate on stored evidence and compare decisions.

    Args:
        cert: the certificate (check its signature first with ``verify_certificate``).
        verifier: the claim verifier to re-run (e.g. ``affidavit.verify.cascade.ClaimCascade``).
        evidence: the store the evidence chunks are read from.

    Returns:
        ``agree`` only if every claim was replayed, its replayed decision equals the recorded
        one and every recorded evidence span was found with the same sha256. Claims resting on
        web evidence are listed in ``not_replayed``.
    """
    policy = policy_of(cert.policy)
    mismatches: list[str] = []
    not_replayed: list[str] = []
    decisions: dict[str, Decision] = {}
    deleted: list[str] = []
    for record in cert.claims:
        claim = record.claim
        web = _web_evidence(record.evidence)
        if web:
            not_replayed.append(
                f"claim {claim.id}: its evidence came from the web ({', '.join(web)}), which the "
                "store does not hold; only the certificate's own evidence text was checked"
            )
            continue
        wanted = list(dict.fromkeys(_stored_id(e) for e in record.evidence))
        try:
            chunks = {c.id: c for c in evidence.get_chunks(wanted)} if wanted else {}
        except AffidavitError as exc:
            mismatches.append(f"claim {claim.id}: evidence could not be read ({exc.message})")
            continue
        missing = [cid for cid in wanted if cid not in chunks]
        removed = _removed(evidence, missing)
        if removed:
            deleted.extend(c for c in removed if c not in deleted)
            not_replayed.append(
                f"claim {claim.id}: "
                + "; ".join(_removed_reason(removed[c]) for c in missing if c in removed)
                + ", so the claim cannot be replayed"
            )
            continue
        if missing:
            mismatches.append(
                f"claim {claim.id}: evidence chunk(s) {', '.join(missing)} not in the store"
            )
        passages = _passages(claim.id, record.evidence, chunks, mismatches)
        try:
            verdict = verifier.verify(claim, list(passages.values()))
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
    logger.info(
        "replayed %d claims, %d mismatches, %d not replayable",
        len(cert.claims) - len(not_replayed),
        len(mismatches),
        len(not_replayed),
    )
    return ReplayResult(
        agree=not mismatches and not not_replayed,
        mismatches=tuple(mismatches),
        not_replayed=tuple(not_replayed),
        decisions=decisions,
        deleted_chunks=tuple(deleted),
    )


def _removed(evidence: EvidenceSource, chunk_ids: Sequence[str]) -> dict[str, DeletedChunk]:
    """The removal records of missing chunks, from a store that keeps them (else none)."""
    lookup = getattr(evidence, "deleted_chunks", None)
    if not chunk_ids or not callable(lookup):
        return {}
    try:
        found: dict[str, DeletedChunk] = lookup(chunk_ids)
    except AffidavitError as exc:  # then the chunks are reported missing, never passed
        logger.warning("removal records unreadable: %s", exc.message)
        return {}
    return found


_WHY = {
    "deleted": "its document was deleted",
    "replaced": "a new version of its document replaced it",
    "pruned": "its file was gone at an ingest with --prune",
}


def _removed_reason(r: DeletedChunk) -> str:
    name = f" ({r.source})" if r.source else ""
    return (
        f"evidence chunk {r.chunk_id} was deleted from the store on "
        f"{r.deleted_at:%Y-%m-%d %H:%M} UTC: {_WHY[r.reason]} ({r.doc_id}{name})"
    )


def _passages(
    claim_id: str,
    records: Sequence[EvidenceRecord],
    stored: Mapping[str, Chunk],
    mismatches: list[str],
) -> dict[str, Chunk]:
    """The passages the claim was checked in, rebuilt from the store, by their recorded id;
    every span that is not found whole with its recorded hash is added to ``mismatches``."""
    passages: dict[str, Chunk] = {}
    for i, ev in enumerate(records):
        chunk = stored.get(_stored_id(ev))
        if chunk is None:
            continue
        passage = evidence_chunk(ev, chunk)
        if passage is None:
            mismatches.append(
                f"claim {claim_id} evidence {i}: stored chunk {_stored_id(ev)} no longer gives "
                f"the passage {ev.chunk_id} the claim was checked in"
            )
            continue
        passages.setdefault(ev.chunk_id, passage)
        if not 0 <= ev.start <= ev.end <= len(passage.text):
            mismatches.append(
                f"claim {claim_id} evidence {i}: offsets {ev.start}-{ev.end} are outside "
                f"stored chunk {ev.chunk_id}"
            )
        elif sha256_text(passage.text[ev.start : ev.end]) != ev.sha256:
            mismatches.append(
                f"claim {claim_id} evidence {i}: stored text of chunk {ev.chunk_id} "
                f"[{ev.start}:{ev.end}] does not hash to the recorded sha256"
            )
    return passages
