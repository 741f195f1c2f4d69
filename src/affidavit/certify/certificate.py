"""Build, sign, write and load certificates.

Examples:
    >>> import tempfile, pathlib
    >>> from affidavit.core.settings import Settings
    >>> from affidavit.certify.keys import generate_key
    >>> key = generate_key(pathlib.Path(tempfile.mkdtemp()) / "k.pem")
    >>> cert = build_certificate("Q?", "No claims here.", [], [], None, Settings(), [])
    >>> signed = sign_certificate(cert, key)
    >>> signed.signature is not None and signed.key_id == key_id(key.public_key())
    True
"""

from __future__ import annotations

import base64
import json
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import ValidationError

import affidavit
from affidavit.certify.canonical import canonical_bytes, loads_strict
from affidavit.certify.keys import key_id, load_signing_key, raw_public_key
from affidavit.core.certificate import (
    Certificate,
    ClaimRecord,
    EvidenceOrigin,
    EvidenceRecord,
    ModelIdentity,
    PolicyRecord,
)
from affidavit.core.correction import RefinedContext
from affidavit.core.errors import CertificateError, InputError
from affidavit.core.limits import MAX_CERTIFICATE_BYTES, read_file_bounded
from affidavit.core.policy import ClaimDecision
from affidavit.core.settings import PolicySettings, Settings
from affidavit.core.types import Claim, Verdict
from affidavit.policy.presets import resolve_policy
from affidavit.policy.render import decide, decide_claim

logger = logging.getLogger(__name__)

__all__ = [
    "build_certificate",
    "certify_answer",
    "load_certificate",
    "policy_of",
    "sign_certificate",
    "signed_payload",
    "write_certificate",
]

_SEVERITY = {"verified": 0, "unverified": 1, "blocked": 2}


def policy_of(record: PolicyRecord) -> PolicySettings:
    """The policy settings a certificate recorded (to re-decide its claims)."""
    return PolicySettings.model_validate(
        {
            "display": record.display,
            "tau_entail": record.tau_entail,
            "tau_contradict": record.tau_contradict,
        }
    )


def _models(models: Iterable[ModelIdentity | Mapping[str, str]]) -> tuple[ModelIdentity, ...]:
    out = []
    for m in models:
        out.append(m if isinstance(m, ModelIdentity) else ModelIdentity.model_validate(dict(m)))
    return tuple(out)


def _origins(context: Iterable[RefinedContext]) -> dict[str, EvidenceOrigin]:
    """The origin of each refined passage, by the id the verifier saw it under."""
    return {
        rc.chunk.id: EvidenceOrigin(
            kind="web" if rc.origin == "web" else "store",
            chunk_id=rc.source_chunk_id,
            kept=rc.kept_spans,
        )
        for rc in context
    }


def _claim_record(
    claim: Claim,
    verdict: Verdict | None,
    decision: ClaimDecision,
    include_text: bool,
    origins: Mapping[str, EvidenceOrigin],
) -> ClaimRecord:
    if verdict is None:
        return ClaimRecord(claim=claim, decision=decision.decision, reason=decision.reason)
    return ClaimRecord(
        claim=claim,
        decision=decision.decision,
        reason=decision.reason,
        label=verdict.label,
        p_entail=verdict.p_entail,
        p_neutral=verdict.p_neutral,
        p_contradict=verdict.p_contradict,
        evidence=tuple(
            EvidenceRecord(
                chunk_id=e.chunk_id,
                doc_id=e.doc_id,
                url=e.url,
                start=e.start,
                end=e.end,
                sha256=e.sha256,
                text=e.text if include_text else None,
                checked_whole=e.checked_whole,
                origin=origins.get(e.chunk_id),
            )
            for e in verdict.evidence
        ),
        checks=verdict.checks,
        stages=verdict.stages,
        complete=verdict.complete,
        errors=verdict.errors,
    )


def build_certificate(
    question: str,
    answer: str,
    claims: Sequence[Claim],
    verdicts: Iterable[Verdict],
    decisions: Sequence[ClaimDecision] | Mapping[str, ClaimDecision] | None,
    settings: Settings,
    models: Iterable[ModelIdentity | Mapping[str, str]],
    *,
    context: Iterable[RefinedContext] = (),
    include_evidence_text: bool = True,
    created_at: datetime | None = None,
) -> Certificate:
    """Assemble an unsigned certificate (sign it with `sign_certificate`).

    Args:
        question: the question asked ("" for an audit of a given response).
        answer: the answer the claims' offsets refer to.
        claims: every claim of the answer.
        verdicts: the verifier's verdicts (a claim without one is recorded unverified).
        decisions: the policy decisions; None decides them here under
            ``resolve_policy(settings.policy)`` (the preset's values, explicit settings first).
            A decision may be stricter than the policy's, never laxer.
        settings: the effective settings (recorded whole, secrets masked; policy from here).
        models: the models that ran, as ``ModelIdentity`` or ``{"name", "sha256"}``.
        context: the refined passages the claims were verified against (corrective retrieval);
            evidence in one of them records the stored chunk and kept sentences it was refined
            from, so the passage can be rebuilt from the store. Evidence in any other chunk
            names that chunk itself.
        include_evidence_text: carry each evidence span's text (lets anyone check its hash).
        created_at: the timestamp (default: now, UTC).

    Raises:
        CertificateError: a decision says verified where the policy does not, or a value has no
            canonical JSON form.
    """
    policy = resolve_policy(settings.policy)
    origins = _origins(context)
    by_verdict: dict[str, list[Verdict]] = {}
    for v in verdicts:
        by_verdict.setdefault(v.claim_id, []).append(v)
    given: dict[str, ClaimDecision] = {}
    if decisions is not None:
        given = (
            dict(decisions)
            if isinstance(decisions, Mapping)
            else {d.claim_id: d for d in decisions}
        )
    records = []
    for claim in claims:
        options = by_verdict.get(claim.id, [])
        # conservative: of several verdicts for one claim, keep the one with the worst decision
        verdict = max(
            options, key=lambda v: _SEVERITY[decide(v, policy, premise=question)[0]], default=None
        )
        own = decide_claim(claim.id, verdict, policy, premise=question)
        decision = given.get(claim.id, own)
        if decision.decision == "verified" and own.decision != "verified":
            raise CertificateError(
                f"claim {claim.id} is marked verified but the policy decides "
                f"{own.decision}: {own.reason}",
                claim_id=claim.id,
            )
        records.append(_claim_record(claim, verdict, decision, include_evidence_text, origins))
    when = (created_at or datetime.now(UTC)).astimezone(UTC)
    cert = Certificate(
        question=question,
        answer=answer,
        claims=tuple(records),
        policy=PolicyRecord(
            preset=policy.preset,
            display=policy.display,
            tau_entail=policy.tau_entail,
            tau_contradict=policy.tau_contradict,
        ),
        config=settings.effective(),
        models=_models(models),
        library_version=affidavit.__version__,
        created_at=when.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
    )
    canonical_bytes(signed_payload(cert))  # fail now, not at signing, on unrepresentable values
    return cert


def signed_payload(cert: Certificate | Mapping[str, Any]) -> dict[str, Any]:
    """The JSON tree a signature covers: every field but ``signature`` and ``log_entry``."""
    tree = cert.model_dump(mode="json") if isinstance(cert, Certificate) else dict(cert)
    tree.pop("signature", None)
    tree.pop("log_entry", None)
    return tree


def sign_certificate(cert: Certificate, key: Ed25519PrivateKey) -> Certificate:
    """Sign a certificate with an Ed25519 key (replacing any earlier signature).

    The key id and public key are set first, so the signature covers them too.
    """
    public = key.public_key()
    unsigned = cert.model_copy(
        update={
            "key_id": key_id(public),
            "public_key": base64.b64encode(raw_public_key(public)).decode("ascii"),
            "signature": None,
        }
    )
    signature = key.sign(canonical_bytes(signed_payload(unsigned)))
    return unsigned.model_copy(update={"signature": base64.b64encode(signature).decode("ascii")})


def write_certificate(cert: Certificate, path: Path | str, *, allow_unsigned: bool = False) -> None:
    """Write a certificate as readable JSON (atomically).

    Raises:
        CertificateError: the certificate is unsigned (unless ``allow_unsigned``), or the file
            cannot be written.
    """
    path = Path(path)
    if cert.signature is None and not allow_unsigned:
        raise CertificateError(
            "refusing to write an unsigned certificate; sign it first", source=str(path)
        )
    text = json.dumps(cert.model_dump(mode="json"), indent=2, ensure_ascii=False, sort_keys=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        raise CertificateError(
            f"cannot write certificate {path}: {exc.strerror or exc}", source=str(path)
        ) from exc


def load_certificate(path: Path | str) -> Certificate:
    """Read a certificate file and check it against the schema (not the signature).

    Raises:
        InputError: unreadable, not JSON (or duplicate keys), or not a certificate.
    """
    path = Path(path)
    raw = read_file_bounded(path, MAX_CERTIFICATE_BYTES, "certificate")
    tree = loads_strict(raw, source=str(path))
    try:
        return Certificate.model_validate_json(json.dumps(tree), strict=True)
    except ValidationError as exc:
        # the first problem, in one line: pydantic's own report spans lines and quotes the input
        errors = exc.errors()
        first = errors[0]
        where = ".".join(str(x) for x in first["loc"]) or "certificate"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise InputError(
            f"{path} is not a valid certificate: {where}: {first['msg']}{more}", source=str(path)
        ) from exc


def certify_answer(
    question: str,
    answer: str,
    claims: Sequence[Claim],
    verdicts: Iterable[Verdict],
    settings: Settings,
    *,
    decisions: Sequence[ClaimDecision] | Mapping[str, ClaimDecision] | None = None,
    models: Iterable[ModelIdentity | Mapping[str, str]] = (),
    context: Iterable[RefinedContext] = (),
    path: Path | str | None = None,
    key: Ed25519PrivateKey | None = None,
) -> Certificate:
    """Build, sign with the configured key, log, and optionally write a certificate in one call.

    ``context``: the refined passages verified against (see `build_certificate`). With
    ``tlog.enabled`` (the default) the signed certificate is appended to the transparency log
    and returned with its ``log_entry`` (`affidavit.tlog`).

    Raises:
        SigningKeyError: no key given and none configured (never writes an unsigned file).
        CertificateError: see `build_certificate` and `write_certificate`.
        TransparencyLogError: the log cannot be appended to (nothing is written).
    """
    signing_key = key if key is not None else load_signing_key(settings)
    cert = build_certificate(
        question, answer, claims, verdicts, decisions, settings, models, context=context
    )
    signed = sign_certificate(cert, signing_key)
    if settings.tlog.enabled:
        # before the file is written: a certificate the log cannot hold is not issued
        from affidavit.tlog.certificates import log_certificate

        signed = log_certificate(signed, settings, signing_key)
    if path is not None:
        write_certificate(signed, path)
    return signed
