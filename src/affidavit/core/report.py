"""The audit report: what ``affidavit.audit`` returns, one frozen, JSON round-trippable model.

Examples:
    >>> r = AuditReport(mode="audit", claims=(), compliance_rate=1.0, passed=True,
    ...                 trust_passed=True)
    >>> AuditReport.model_validate_json(r.model_dump_json()) == r
    True
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from affidavit.core.types import CheckResult, EnforcementMode, EvidenceSpan, Frozen, Verdict

FreshnessVerdict = Literal["supported_fresh", "supported_stale", "unsupported"]
"""Per-claim trust status: supported by a fresh (or undated) source, by a stale one, or not."""

SourceAge = Literal["fresh", "stale", "unknown", "not_applicable"]
"""Age of one source under the freshness policy (not_applicable: no max_age_days set)."""

BlockReason = Literal["not_allowlisted", "malformed_url", "missing_url"]
"""Why a source was dropped before matching."""

PolicyIssueKind = Literal[
    "empty_response",
    "no_chunks",
    "no_claims",
    "empty_chunk",
    "blocked_sources",
    "unsupported_claims",
    "contradicted_claims",
    "stale_sources",
    "stale_supported_claims",
    "unparseable_date",
    "unknown_source_age",
    "response_truncated",
    "withheld_marker",
]
"""Kinds of policy issue a report can carry."""

WITHHELD_MARKER = "[withheld: not supported by the sources]"
"""What a guarded answer shows in place of a withheld claim (never audited as a claim)."""


class ClaimAudit(Frozen):
    """The audit of one claim of the answer."""

    id: str = Field(description="Claim id (c1, c2, ...), unique within the answer.")
    text: str = Field(description="The claim as checked.")
    start: int = Field(description="Start offset in the answer of the text the claim came from.")
    end: int = Field(description="End offset in the answer of the text the claim came from.")
    supported: bool = Field(
        description="True iff confidence >= support_threshold and no typed check failed."
    )
    confidence: float = Field(
        ge=0.0,
        le=1.0,
        description="Lexical coverage of the claim's content words by its evidence (0 when the "
        "evidence shares only the claim's names: a name alone supports nothing said of it).",
    )
    source_url: str | None = Field(default=None, description="URL of the best matching chunk.")
    chunk_id: str | None = Field(default=None, description="Id of the best matching chunk.")
    evidence: EvidenceSpan | None = Field(
        default=None, description="The best sentence window of the best chunk."
    )
    checks: tuple[CheckResult, ...] = Field(
        default=(), description="Every typed check that applied between claim and evidence."
    )
    failed_checks: tuple[CheckResult, ...] = Field(
        default=(), description="The checks that failed (claim disagrees with a source)."
    )
    freshness: FreshnessVerdict = Field(
        default="unsupported", description="supported_fresh / supported_stale / unsupported."
    )
    source_date: str | None = Field(
        default=None, description="ISO date of the supporting source, when known."
    )
    reason: str = Field(default="", description="Why this verdict, in plain words.")
    verdict: Verdict | None = Field(
        default=None, description="The entailment verifier's verdict, when use_verifier ran."
    )


class BlockedSource(Frozen):
    """A chunk dropped by the source policy before matching."""

    chunk_id: str = Field(description="Id of the dropped chunk.")
    url: str | None = Field(default=None, description="Its URL as given (None when missing).")
    domain: str | None = Field(default=None, description="Normalised host, when parseable.")
    reason: BlockReason = Field(description="not_allowlisted / malformed_url / missing_url.")
    detail: str = Field(default="", description="Plain-words explanation.")


class SourceFreshness(Frozen):
    """Freshness of one (kept) source chunk."""

    chunk_id: str = Field(description="Id of the chunk.")
    url: str | None = Field(default=None, description="Its URL, if any.")
    status: SourceAge = Field(description="fresh / stale / unknown / not_applicable.")
    source_date: str | None = Field(default=None, description="Parsed ISO date, when any.")
    age_days: int | None = Field(default=None, description="Age in days on the audit date.")
    metadata_key: str | None = Field(default=None, description="Metadata key the date came from.")
    note: str = Field(default="", description="Why the age is unknown, when it is.")


class Violation(Frozen):
    """A claim that breaks the policy."""

    claim_id: str = Field(description="Id of the offending claim.")
    text: str = Field(description="The claim text.")
    kind: Literal["unsupported", "contradicted", "stale_source"] = Field(
        description="unsupported (no evidence), contradicted (a check failed), stale_source."
    )
    message: str = Field(description="Plain-words reason.")


class PolicyIssue(Frozen):
    """Something about the inputs or the outcome the policy flags."""

    kind: PolicyIssueKind = Field(description="What kind of issue.")
    message: str = Field(description="Plain-words detail.")
    chunk_id: str | None = Field(default=None, description="The chunk involved, if any.")
    claim_id: str | None = Field(default=None, description="The claim involved, if any.")


class AuditReport(Frozen):
    """Everything ``affidavit.audit`` found, JSON round-trippable."""

    kind: Literal["audit_report"] = Field(default="audit_report", description="Type tag.")
    query: str = Field(default="", description="The question the answer responds to.")
    response: str = Field(default="", description="The audited answer (as given).")
    mode: EnforcementMode = Field(description="audit / guardrail / enforce.")
    claims: tuple[ClaimAudit, ...] = Field(description="Every claim, in answer order.")
    compliance_rate: float = Field(
        ge=0.0,
        le=1.0,
        description="Supported claims / claims; 0.0 when the answer has no claim (fail closed).",
    )
    provenance: dict[str, str | None] = Field(
        default_factory=dict, description="Supported claim text -> source URL."
    )
    violations: tuple[Violation, ...] = Field(default=(), description="Claims that fail policy.")
    blocked_sources: tuple[BlockedSource, ...] = Field(
        default=(), description="Chunks dropped by the source policy, with reasons."
    )
    freshness: tuple[SourceFreshness, ...] = Field(
        default=(), description="Freshness of each kept source chunk."
    )
    policy_issues: tuple[PolicyIssue, ...] = Field(default=(), description="Flagged issues.")
    passed: bool = Field(description="Support policy: compliance_rate >= min_compliance.")
    trust_passed: bool = Field(
        description="passed and no stale supported claim under stale_action='fail'."
    )
    guarded_response: str | None = Field(
        default=None, description="guardrail mode: the answer with failing claims withheld."
    )
    settings: dict[str, Any] = Field(
        default_factory=dict, description="The effective audit settings that ran."
    )
    n_chunks: int = Field(default=0, description="Chunks given.")
    n_chunks_used: int = Field(default=0, description="Chunks kept after the source policy.")
    elapsed_ms: float = Field(default=0.0, description="Wall time of the audit.")

    @property
    def supported_claims(self) -> list[ClaimAudit]:
        """The claims that passed."""
        return [c for c in self.claims if c.supported]

    @property
    def unsupported_claims(self) -> list[ClaimAudit]:
        """The claims that did not pass."""
        return [c for c in self.claims if not c.supported]
