"""Signed certificates for audit reports (``affidavit audit FILE --certify CERT.json``).

An audit decides support lexically plus typed checks; only the entailment verifier gives an
entailment probability. So, failing closed, a claim of an audit certificate can be VERIFIED only
when the verifier ran on it (``audit.use_verifier``) and the audit's freshness policy does not
reject it (a claim only a stale source supports, under ``audit.stale_action = "fail"``, is not
verified); a claim whose typed check failed is BLOCKED; every other claim is UNVERIFIED with the
audit's reason recorded.

Examples:
    >>> from affidavit.core.settings import load_settings
    >>> from affidavit.audit import audit
    >>> report = audit("q", [{"text": "Paris is in France.", "url": "https://a.org"}],
    ...                "Paris is in France.")
    >>> [v.label for v in report_verdicts(report)]
    ['unsupported']
"""

from __future__ import annotations

from pathlib import Path

from affidavit.core.report import AuditReport, ClaimAudit
from affidavit.core.settings import Settings
from affidavit.core.types import Claim, StageScore, Verdict

_NO_VERIFIER = "entailment verifier not run (audit.use_verifier is false): lexical audit only"
_NOT_NEEDED = "not supported by the lexical audit: the entailment verifier was not needed"


def report_claims(report: AuditReport) -> list[Claim]:
    """The report's claims as Claim contracts (offsets into ``report.response``)."""
    return [Claim(id=c.id, text=c.text, start=c.start, end=c.end) for c in report.claims]


def _verdict(c: ClaimAudit, verifier_used: bool = False, stale_fails: bool = False) -> Verdict:
    if c.verdict is not None and not c.failed_checks:
        if stale_fails and c.verdict.label == "supported" and c.freshness == "supported_stale":
            # the audit rejects what only a stale source supports (audit.stale_action = fail):
            # a certificate of that audit does not record it as verified
            return c.verdict.model_copy(
                update={
                    "label": "unsupported",
                    "reason": "supported only by a stale source, and audit.stale_action is "
                    f"fail: not verified (the verifier said: {c.verdict.reason})",
                }
            )
        return c.verdict
    evidence = (c.evidence,) if c.evidence is not None else ()
    lexical = StageScore(
        stage="lexical",
        p_entail=0.0,
        p_neutral=1.0,
        p_contradict=0.0,
        label="supported" if c.supported else "unsupported",
        detail=f"BM25 match, word coverage {c.confidence:.3f} (not an entailment probability)",
    )
    if c.failed_checks:
        return Verdict(
            claim_id=c.id,
            label="contradicted",
            p_entail=0.0,
            p_neutral=0.0,
            p_contradict=1.0,
            evidence=evidence,
            checks=c.checks,
            stages=(lexical,),
            reason="; ".join(f.reason for f in c.failed_checks) or c.reason,
        )
    # the audit already rejected it before any entailment was needed: a complete decision;
    # otherwise the verifier never ran on it, so it cannot be verified (fail closed)
    decided = verifier_used and not c.supported
    return Verdict(
        claim_id=c.id,
        label="unsupported",
        p_entail=0.0,
        p_neutral=1.0,
        p_contradict=0.0,
        evidence=evidence,
        checks=c.checks,
        stages=(lexical,),
        complete=decided,
        errors=() if decided else (_NO_VERIFIER,),
        reason=f"{c.reason or 'not supported'} ({_NOT_NEEDED})"
        if decided
        else c.reason or ("lexically supported" if c.supported else "not supported"),
    )


def report_verdicts(
    report: AuditReport, verifier_used: bool = False, stale_fails: bool = False
) -> list[Verdict]:
    """One conservative Verdict per audited claim (see the module docstring).

    Args:
        report: the audit report.
        verifier_used: the audit ran with the entailment verifier (``audit.use_verifier``): a
            claim the lexical audit rejected is then a complete "unsupported", not "unverified
            because the verifier never ran".
        stale_fails: the audit ran with ``audit.stale_action = "fail"``: a claim that only a
            stale (or undated) source supports is "unsupported", as the audit counts it.
    """
    return [_verdict(c, verifier_used, stale_fails) for c in report.claims]


def certify_report(
    report: AuditReport,
    settings: Settings,
    path: Path | str,
    models: list[dict[str, str]] | None = None,
) -> Path:
    """Sign a certificate for an audit report and write it to ``path``.

    Args:
        report: the audit report.
        settings: the effective settings (recorded, secrets masked; key path from here).
        path: where to write the signed certificate.
        models: the models that ran, ``{"name", "sha256"}`` each (the verifier's, if used).

    Raises:
        SigningKeyError: no signing key configured (run ``affidavit keys generate``); nothing
            is written.
    """
    from affidavit.certify.certificate import certify_answer

    certify_answer(
        report.query,
        report.response,
        report_claims(report),
        report_verdicts(
            report,
            verifier_used=settings.audit.use_verifier,
            stale_fails=settings.audit.stale_action == "fail",
        ),
        settings,
        models=models or [],
        path=path,
    )
    return Path(path)
