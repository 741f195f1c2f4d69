"""Check a certificate: schema, signature, trusted key, evidence hashes, decision consistency.

The signature is checked over the canonical JSON of the certificate *as read* (every field but
``signature``), and the file must hold exactly what the schema says: no unknown field, no value
the schema would silently change. The key embedded in the certificate is used to check the
signature, but is not trusted by itself: the key id must be among the trusted keys.

Examples:
    >>> import tempfile, pathlib
    >>> from affidavit.core.settings import Settings
    >>> from affidavit.certify.keys import generate_key
    >>> from affidavit.certify.certificate import build_certificate, sign_certificate
    >>> key = generate_key(pathlib.Path(tempfile.mkdtemp()) / "k.pem")
    >>> cert = sign_certificate(build_certificate("Q?", "A.", [], [], None, Settings(), []), key)
    >>> verify_certificate(cert, [key.public_key()]).valid
    True
    >>> verify_certificate(cert).reasons[0].startswith("unknown key")
    True
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pydantic import ValidationError

from affidavit.certify.canonical import canonical_bytes, loads_strict
from affidavit.certify.certificate import policy_of, signed_payload
from affidavit.certify.keys import (
    PublicKeyLike,
    key_id,
    load_public_key,
    public_key_from_b64,
    raw_public_key,
)
from affidavit.core.certificate import (
    Certificate,
    CertificateVerification,
    ClaimRecord,
    EvidenceRecord,
)
from affidavit.core.errors import CertificateError, InputError
from affidavit.core.limits import MAX_CERTIFICATE_BYTES, read_file_bounded
from affidavit.core.types import EvidenceSpan, Verdict, sha256_text
from affidavit.policy.render import decide

logger = logging.getLogger(__name__)

__all__ = ["EvidenceLookup", "read_certificate_tree", "record_verdict", "verify_certificate"]

EvidenceLookup = Callable[[EvidenceRecord], str | None]
"""Returns the text of an evidence span (e.g. from the store), or None when it is not found."""


def read_certificate_tree(path: Path | str) -> dict[str, Any]:
    """Read a certificate file as a raw JSON tree (strict: no duplicate keys, no NaN).

    Raises:
        InputError: unreadable or not a JSON object.
    """
    path = Path(path)
    raw = read_file_bounded(path, MAX_CERTIFICATE_BYTES, "certificate")
    tree = loads_strict(raw, source=str(path))
    if not isinstance(tree, dict):
        raise InputError(f"{path}: a certificate is a JSON object", source=str(path))
    return tree


def record_verdict(record: ClaimRecord) -> Verdict | None:
    """The verdict a claim record holds (None when the claim had no verdict, or its label,
    p_entail or p_contradict is not recorded: a missing score is not a score of 0)."""
    if record.label is None or record.p_entail is None or record.p_contradict is None:
        return None
    return Verdict(
        claim_id=record.claim.id,
        label=record.label,
        p_entail=record.p_entail,
        p_neutral=record.p_neutral if record.p_neutral is not None else 0.0,
        p_contradict=record.p_contradict,
        evidence=tuple(
            EvidenceSpan(
                chunk_id=e.chunk_id,
                doc_id=e.doc_id,
                url=e.url,
                start=e.start,
                end=e.end,
                text=e.text or "",
                sha256=e.sha256,
                checked_whole=e.checked_whole,
            )
            for e in record.evidence
        ),
        checks=record.checks,
        stages=record.stages,
        complete=record.complete,
        errors=record.errors,
    )


def _schema_errors(exc: ValidationError) -> list[str]:
    out = []
    for e in exc.errors()[:10]:
        loc = ".".join(str(x) for x in e["loc"]) or "certificate"
        out.append(f"schema: {loc}: {e['msg']}")
    return out


def _trusted(
    keys: Iterable[PublicKeyLike] | Mapping[str, Ed25519PublicKey] | None,
) -> dict[str, Ed25519PublicKey]:
    if keys is None:
        return {}
    if isinstance(keys, Mapping):
        return dict(keys)
    loaded = [load_public_key(k) for k in keys]
    return {key_id(k): k for k in loaded}


def verify_certificate(
    cert: Certificate | Mapping[str, Any] | Path | str,
    trusted_public_keys: Iterable[PublicKeyLike] | Mapping[str, Ed25519PublicKey] | None = None,
    evidence_lookup: EvidenceLookup | None = None,
) -> CertificateVerification:
    """Check a certificate; every failure is reported, none raised.

    Args:
        cert: a certificate, its raw JSON tree, or a path to its file (best: the exact bytes
            that were shared are what is checked).
        trusted_public_keys: keys to trust (objects, raw bytes, PEM text or PEM file paths, or a
            ``{key_id: key}`` mapping as `affidavit.certify.keys.trusted_keys` returns).
            None trusts no key, so the certificate is reported as signed by an unknown key.
        evidence_lookup: fetches an evidence span's text (e.g. from the store, with
            `affidavit.certify.replay.store_lookup`, which rebuilds trimmed passages) to
            compare its sha256 with the recorded one; spans that carry their text are always
            compared. Web evidence (format 2) is not looked up: a warning says so.

    Returns:
        ``valid`` is True only when the schema, signature, trust, evidence hashes and decision
        consistency all pass; ``reasons`` says why not.

    Raises:
        InputError: ``cert`` is a path that cannot be read or is not JSON.
        CertificateError: a trusted key given cannot be loaded.
    """
    if isinstance(cert, Certificate):
        tree: dict[str, Any] = cert.model_dump(mode="json")
    elif isinstance(cert, Path | str):
        tree = read_certificate_tree(cert)
    else:
        tree = dict(cert)
    trusted = _trusted(trusted_public_keys)
    reasons: list[str] = []
    warnings: list[str] = []

    try:
        model = Certificate.model_validate_json(json.dumps(tree), strict=True)
    except (ValidationError, ValueError) as exc:
        errors = _schema_errors(exc) if isinstance(exc, ValidationError) else [f"schema: {exc}"]
        return CertificateVerification(valid=False, reasons=tuple(errors))
    if model.model_dump(mode="json") != tree:
        # a value the schema would change (a default filled in, a coerced type) is not what was
        # signed as it reads: refuse rather than guess which form the signer meant
        return CertificateVerification(
            valid=False,
            reasons=("schema: the certificate holds values not in the schema's exact form",),
            key_id=model.key_id or None,
        )

    signature_ok = False
    if model.signature is None:
        reasons.append("the certificate is not signed")
    elif not model.public_key:
        reasons.append(
            "the certificate carries no public key: its signature cannot be checked "
            "(a trusted key id alone proves nothing)"
        )
    else:
        try:
            public = public_key_from_b64(model.public_key)
            if key_id(public) != model.key_id:
                reasons.append(
                    f"key id {model.key_id} does not match the embedded public key "
                    f"({key_id(public)})"
                )
            signature = base64.b64decode(model.signature, validate=True)
            public.verify(signature, canonical_bytes(signed_payload(tree)))
            signature_ok = True
        except (CertificateError, binascii.Error, ValueError) as exc:
            reasons.append(f"bad signature: {exc}")
        except InvalidSignature:
            reasons.append("bad signature: the content does not match the signature")

    # trust is in the key the certificate carries, so no key is no trust (its id alone was)
    is_trusted = (
        bool(model.public_key)
        and model.key_id in trusted
        and base64.b64encode(raw_public_key(trusted[model.key_id])).decode("ascii")
        == model.public_key
    )
    if model.signature is not None and model.public_key and not is_trusted:
        reasons.append(
            f"unknown key {model.key_id or '(none)'}: not among the trusted keys "
            "(pass --public-key FILE or add it to certify.trusted_keys)"
        )

    checked = 0
    policy = policy_of(model.policy)
    for record in model.claims:
        cid = record.claim.id
        for i, ev in enumerate(record.evidence):
            texts: list[tuple[str, str]] = []
            if ev.end < ev.start or (ev.text is not None and len(ev.text) != ev.end - ev.start):
                reasons.append(
                    f"claim {cid} evidence {i}: offsets {ev.start}-{ev.end} do not match the "
                    "length of its text"
                )
            if ev.text is not None:
                texts.append(("recorded", ev.text))
            if evidence_lookup is not None and ev.origin is not None and ev.origin.kind == "web":
                # no store holds a web page: say so, rather than "not found" or a silent pass
                warnings.append(
                    f"claim {cid} evidence {i}: from the web ({ev.url or ev.origin.chunk_id}), "
                    "not in the store; checked against the certificate's own text only"
                )
            elif evidence_lookup is not None:
                looked = evidence_lookup(ev)
                if looked is None:
                    warnings.append(f"claim {cid} evidence {i}: not found in the evidence source")
                else:
                    texts.append(("stored", looked))
            if not texts:
                warnings.append(f"claim {cid} evidence {i}: no text to check its sha256 against")
            for where, text in texts:
                checked += 1
                if sha256_text(text) != ev.sha256:
                    reasons.append(
                        f"evidence hash mismatch: claim {cid} evidence {i} ({where} text of "
                        f"chunk {ev.chunk_id}) does not hash to the recorded sha256"
                    )
        # fail closed: nothing may read VERIFIED unless its own scores justify it
        if record.decision == "verified":
            own, why = decide(record_verdict(record), policy, premise=model.question)
            if own != "verified":
                reasons.append(
                    f"claim {cid} is recorded verified but its recorded scores under the recorded "
                    f"policy give {own}: {why}"
                )

    return CertificateVerification(
        valid=not reasons,
        reasons=tuple(reasons),
        warnings=tuple(warnings),
        key_id=model.key_id or None,
        signature_ok=signature_ok,
        trusted=is_trusted,
        evidence_checked=checked,
    )
