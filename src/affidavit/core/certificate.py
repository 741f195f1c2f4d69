"""The signed certificate: what was asked, what was shown, and exactly how it was decided.

A `Certificate` records the question, the answer, every claim with its decision, scores,
reasons and evidence (with the sha256 of each evidence text), the policy and its thresholds,
the effective configuration, the models that ran (name and sha256), the library version and a
timestamp, and is signed with Ed25519 over its canonical JSON (RFC 8785) without the
``signature`` field. The signer's public key and key id travel inside, but the embedded key alone
is never trusted: a verifier must name the keys it trusts (see ``affidavit.certify``).

Format versions: ``affidavit-certificate/2`` adds, to each evidence span taken from a passage
that corrective retrieval trimmed, its `EvidenceOrigin` (the stored chunk and the kept
sentences' offsets), so that the passage the claim was checked against can be rebuilt from the
store. ``affidavit-certificate/1`` certificates (no origins) still verify as they were signed.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from affidavit.core.tlog import LogEntry
from affidavit.core.types import (
    CheckResult,
    Claim,
    Decision,
    DisplayMode,
    Frozen,
    Label,
    StageScore,
)

CertificateFormat = Literal["affidavit-certificate/1", "affidavit-certificate/2"]
CERTIFICATE_FORMAT: CertificateFormat = "affidavit-certificate/2"
"""The format new certificates are written in."""

_SHA256 = r"^[0-9a-f]{64}$"


class EvidenceOrigin(Frozen):
    """The passage an evidence chunk was refined from (format 2).

    Corrective retrieval hands the verifier a trimmed passage: the kept sentences of a retrieved
    chunk joined by one space (`affidavit.core.correction.refined_chunk`). That passage is
    in no store; this record says how to rebuild it from the chunk that is.
    """

    kind: Literal["store", "web"] = Field(
        description="store: a chunk of the store that answered (a replay rebuilds the passage "
        "from it); web: a page from the web fallback, which no store holds (not replayable)."
    )
    chunk_id: str = Field(
        description="Id of the chunk the passage was refined from (the stored chunk's id, or the "
        "id of the fetched web page's text)."
    )
    kept: tuple[tuple[int, int], ...] | None = Field(
        default=None,
        description="(start, end) offsets in that chunk's text of the sentences kept, in order; "
        "the evidence chunk's text is them joined by one space. None: the chunk was kept whole.",
    )

    @model_validator(mode="after")
    def _ordered(self) -> EvidenceOrigin:
        previous = 0
        for start, end in self.kept or ():
            if not previous <= start <= end:
                raise ValueError(f"kept span {start}-{end} is reversed, negative or out of order")
            previous = end
        return self


class EvidenceRecord(Frozen):
    """One evidence span as recorded in a certificate."""

    chunk_id: str = Field(description="Id of the chunk the span is in.")
    doc_id: str | None = Field(default=None, description="Id of the source document.")
    url: str | None = Field(default=None, description="Source URL, if known.")
    start: int = Field(ge=0, description="Start offset of the span in the chunk text.")
    end: int = Field(ge=0, description="End offset (exclusive) of the span in the chunk text.")
    sha256: str = Field(pattern=_SHA256, description="sha256 (hex) of the span text's UTF-8.")
    text: str | None = Field(
        default=None, description="The span text, when the certificate carries it."
    )
    checked_whole: bool = Field(
        default=True, description="False if the span could not be checked whole by the model."
    )
    origin: EvidenceOrigin | None = Field(
        default=None,
        description="Format 2: the stored (or web) chunk that ``chunk_id``'s passage was refined "
        "from, and how; absent when ``chunk_id`` names the chunk itself (as in format 1).",
    )

    @model_serializer(mode="wrap")
    def _without_absent_origin(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # a format-1 certificate has no "origin" key: it must dump (and so verify) as signed
        data: dict[str, Any] = handler(self)
        if self.origin is None:
            data.pop("origin", None)
        return data


class ClaimRecord(Frozen):
    """One claim, its decision and everything the decision rested on."""

    claim: Claim = Field(description="The claim, with its offsets into the answer.")
    decision: Decision = Field(description="verified / unverified / blocked.")
    reason: str = Field(description="Why, in plain words.")
    label: Label | None = Field(
        default=None, description="The verifier's label; None when the claim had no verdict."
    )
    p_entail: float | None = Field(
        default=None, ge=0.0, le=1.0, description="Calibrated entailment probability."
    )
    p_neutral: float | None = Field(
        default=None, ge=0.0, le=1.0, description="Calibrated not-enough-info probability."
    )
    p_contradict: float | None = Field(
        default=None, ge=0.0, le=1.0, description="Calibrated contradiction probability."
    )
    evidence: tuple[EvidenceRecord, ...] = Field(
        default=(), description="The evidence spans the verdict rested on."
    )
    checks: tuple[CheckResult, ...] = Field(default=(), description="Typed consistency checks.")
    stages: tuple[StageScore, ...] = Field(default=(), description="Every cascade stage's scores.")
    complete: bool = Field(
        default=False, description="False when a step could not run or there was no verdict."
    )
    errors: tuple[str, ...] = Field(default=(), description="What failed, in plain words.")


class PolicyRecord(Frozen):
    """The policy a certificate's decisions were made under."""

    preset: str = Field(description="Named preset the thresholds came from.")
    display: DisplayMode = Field(description="Display mode of the rendered answer.")
    tau_entail: float = Field(ge=0.0, le=1.0, description="VERIFIED needs p_entail >= this.")
    tau_contradict: float = Field(
        ge=0.0, le=1.0, description="VERIFIED needs p_contradict < this; at or above is BLOCKED."
    )


class ModelIdentity(Frozen):
    """A model that took part, by name and content hash."""

    name: str = Field(description="Model name (e.g. the verifier or embedder id).")
    sha256: str = Field(pattern=_SHA256, description="sha256 (hex) of the model file(s).")


class Certificate(Frozen):
    """A signed record of one answer and how each of its claims was decided.

    The signature covers the RFC 8785 canonical JSON of every other field but ``log_entry``.
    """

    format: CertificateFormat = Field(
        default=CERTIFICATE_FORMAT,
        description="Certificate format and version (2 adds evidence origins).",
    )
    question: str = Field(description="The question asked (empty for an audit of a response).")
    answer: str = Field(description="The answer as generated; claim offsets refer to it.")
    claims: tuple[ClaimRecord, ...] = Field(description="Every claim, in answer order.")
    policy: PolicyRecord = Field(description="Policy and thresholds the decisions used.")
    config: dict[str, Any] = Field(
        description="The effective configuration (Settings.effective(), secrets masked)."
    )
    models: tuple[ModelIdentity, ...] = Field(default=(), description="Models that ran.")
    library_version: str = Field(description="affidavit version that made the certificate.")
    created_at: str = Field(
        pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$",
        description="UTC timestamp, ISO 8601 with a Z suffix.",
    )
    algorithm: Literal["Ed25519"] = Field(default="Ed25519", description="Signature algorithm.")
    key_id: str = Field(
        default="", description="First 16 hex digits of the sha256 of the raw public key."
    )
    public_key: str = Field(
        default="", description="The signer's raw 32-byte Ed25519 public key, base64."
    )
    signature: str | None = Field(
        default=None,
        description="Base64 Ed25519 signature over the canonical JSON of every other field; "
        "None for an unsigned certificate, which never verifies.",
    )

    log_entry: LogEntry | None = Field(
        default=None,
        description="Where the certificate sits in the issuer's transparency log, with the "
        "inclusion proof and signed checkpoint that show it; not covered by the signature (the "
        "log holds the signed certificate's hash, which cannot include its own position).",
    )

    @model_serializer(mode="wrap")
    def _without_absent_log_entry(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # a certificate that was never logged dumps (and so verifies) as it was signed
        data: dict[str, Any] = handler(self)
        if self.log_entry is None:
            data.pop("log_entry", None)
        return data

    @model_validator(mode="after")
    def _origins_need_format_2(self) -> Certificate:
        if self.format == "affidavit-certificate/1" and any(
            e.origin is not None for r in self.claims for e in r.evidence
        ):
            raise ValueError("evidence origins need format affidavit-certificate/2")
        return self


class CertificateVerification(Frozen):
    """The outcome of checking a certificate."""

    valid: bool = Field(description="True only if every check passed.")
    reasons: tuple[str, ...] = Field(
        default=(), description="Why it is invalid, in plain words (empty when valid)."
    )
    warnings: tuple[str, ...] = Field(
        default=(), description="What could not be checked (e.g. evidence without its text)."
    )
    key_id: str | None = Field(default=None, description="Key id the certificate names.")
    signature_ok: bool = Field(default=False, description="The signature matches the content.")
    trusted: bool = Field(default=False, description="The signing key is among the trusted keys.")
    evidence_checked: int = Field(default=0, ge=0, description="Evidence hashes compared.")


class ReplayResult(Frozen):
    """The outcome of re-running verification on a certificate's stored evidence."""

    agree: bool = Field(
        description="True only if every claim was replayed and its decision reproduced "
        "(False when a claim is in ``not_replayed``, even with no mismatch)."
    )
    mismatches: tuple[str, ...] = Field(
        default=(), description="Each disagreement or missing evidence, in plain words."
    )
    not_replayed: tuple[str, ...] = Field(
        default=(),
        description="Each claim that cannot be replayed from the store, and why (its evidence "
        "came from the web): neither a disagreement nor an agreement.",
    )
    decisions: dict[str, Decision] = Field(
        default_factory=dict, description="The replayed decision per claim id."
    )
    deleted_chunks: tuple[str, ...] = Field(
        default=(),
        description="Evidence chunks the store removed since the certificate was issued (their "
        "document deleted, replaced by a new version or pruned); each claim resting on one is "
        "in ``not_replayed``, saying so.",
    )
