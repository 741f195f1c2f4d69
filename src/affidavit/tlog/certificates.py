"""Certificates in the log: append one as it is issued, prove one later, check one offline.

A certificate's entry is the sha256 of its RFC 8785 canonical JSON, signature included and its
``log_entry`` left out (the entry cannot contain its own position). The log kept for a signing
key lives in ``tlog/<key id>/`` beside the key (``tlog.path`` overrides it) and its origin is
``affidavit/<key id>`` (``tlog.origin``); its checkpoints are signed by that same key.

Examples:
    >>> import tempfile, pathlib
    >>> from affidavit.core.settings import Settings
    >>> from affidavit.certify import build_certificate, generate_key, sign_certificate
    >>> settings = Settings(home=pathlib.Path(tempfile.mkdtemp()))
    >>> key = generate_key(settings.resolved_home() / "keys" / "signing.pem")
    >>> cert = sign_certificate(build_certificate("Q?", "A.", [], [], None, settings, []), key)
    >>> logged = log_certificate(cert, settings, key)
    >>> logged.log_entry.inclusion.leaf_index, logged.log_entry.checkpoint.tree_size
    (0, 1)
    >>> check_log_entry(logged, [key.public_key()])
    []
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from affidavit.certify.canonical import canonical_bytes
from affidavit.certify.keys import default_key_path, key_id
from affidavit.core.certificate import Certificate
from affidavit.core.errors import CertificateError, ProofError, TransparencyLogError
from affidavit.core.settings import Settings
from affidavit.core.tlog import Checkpoint, ConsistencyProof, LogEntry
from affidavit.tlog.merkle import EMPTY_ROOT, leaf_hash, verify_consistency, verify_inclusion
from affidavit.tlog.note import open_checkpoint
from affidavit.tlog.store import FileLog

__all__ = [
    "Refusal",
    "certificate_entry",
    "check_consistency",
    "check_log_entry",
    "default_log_path",
    "log_certificate",
    "log_origin",
    "origin_key_id",
    "prove_certificate",
]


def certificate_entry(cert: Certificate | Mapping[str, Any]) -> bytes:
    """The log entry of a certificate: sha256 of its canonical JSON without ``log_entry``."""
    tree = cert.model_dump(mode="json") if isinstance(cert, Certificate) else dict(cert)
    tree.pop("log_entry", None)
    return hashlib.sha256(canonical_bytes(tree)).digest()


def default_log_path(settings: Settings, public: Ed25519PublicKey) -> Path:
    """``tlog.path``, else ``tlog/<key id>/`` beside the signing key."""
    if settings.tlog.path is not None:
        return settings.tlog.path.expanduser()
    return default_key_path(settings).parent / "tlog" / key_id(public)


def log_origin(settings: Settings, public: Ed25519PublicKey) -> str:
    """``tlog.origin``, else ``affidavit/<key id>``."""
    return settings.tlog.origin or f"affidavit/{key_id(public)}"


_NAMED_ORIGIN = re.compile(r"affidavit/([0-9a-f]{16})")


def origin_key_id(origin: str) -> str | None:
    """The key id an origin of the default form, ``affidavit/<key id>``, names (else None):
    that log's checkpoints are that key's, and no other key's.

    Examples:
        >>> origin_key_id("affidavit/0123456789abcdef"), origin_key_id("example.com/log")
        ('0123456789abcdef', None)
    """
    named = _NAMED_ORIGIN.fullmatch(origin)
    return named.group(1) if named else None


def log_certificate(cert: Certificate, settings: Settings, key: Ed25519PrivateKey) -> Certificate:
    """Append a signed certificate to the log and return it with its `LogEntry`.

    Raises:
        CertificateError: the certificate is unsigned.
        TransparencyLogError: the log cannot be written, or is another key's.
    """
    if cert.signature is None:
        raise CertificateError("only a signed certificate is logged")
    public = key.public_key()
    entry = certificate_entry(cert)
    with FileLog(default_log_path(settings, public)) as log:
        index, checkpoint = log.append([entry], key, log_origin(settings, public))
        proof = log.prove_inclusion(index, checkpoint.tree_size)
    return cert.model_copy(
        update={"log_entry": LogEntry(entry=entry.hex(), inclusion=proof, checkpoint=checkpoint)}
    )


def prove_certificate(cert: Certificate, log: FileLog) -> Certificate:
    """The certificate with a fresh log entry: its proof to the log's latest checkpoint.

    Raises:
        TransparencyLogError: the certificate is not in this log (or the log is empty).
    """
    entry = certificate_entry(cert)
    checkpoint = log.checkpoint()
    if checkpoint is None:
        raise TransparencyLogError("the log is empty", source=str(log.path))
    index = None
    known = cert.log_entry
    if (
        known is not None
        and known.inclusion.leaf_index < checkpoint.tree_size
        and log.entry(known.inclusion.leaf_index) == entry
    ):
        index = known.inclusion.leaf_index
    if index is None:
        index = log.find(entry, checkpoint.tree_size)
    if index is None:
        raise TransparencyLogError(
            f"the certificate is not among the {checkpoint.tree_size} entries of {log.path}",
            source=str(log.path),
        )
    proof = log.prove_inclusion(index, checkpoint.tree_size)
    return cert.model_copy(
        update={"log_entry": LogEntry(entry=entry.hex(), inclusion=proof, checkpoint=checkpoint)}
    )


Refusal = tuple[Literal["fork", "rollback", "invalid"], str]


def check_consistency(
    old: Checkpoint, new: Checkpoint, proof: ConsistencyProof | None
) -> Refusal | None:
    """Why ``new`` does not extend ``old`` (both already signature-checked), or None.

    A smaller size is a rollback, the same size with another root a fork, a larger one whose
    ``proof`` (from ``old.tree_size`` to ``new.tree_size``) fails a fork too; no proof, or one
    for other sizes, is invalid.
    """
    if new.origin != old.origin:
        return "invalid", f"the checkpoints are of two logs ({old.origin!r}, {new.origin!r})"
    if new.tree_size < old.tree_size:
        return "rollback", (
            f"rollback: the newer checkpoint has {new.tree_size} entries, fewer than the "
            f"{old.tree_size} already signed"
        )
    if new.tree_size == old.tree_size:
        if new.root_hash != old.root_hash:
            return "fork", f"fork: two signed checkpoints of size {old.tree_size}, two roots"
        return None
    if old.tree_size == 0:
        if old.root_hash != EMPTY_ROOT.hex():  # parse_checkpoint refuses it; a model may not
            return "invalid", "the older checkpoint of size 0 does not sign the empty tree"
        return None  # every tree extends the empty one
    if proof is None:
        return "invalid", (
            f"no consistency proof from size {old.tree_size} to {new.tree_size} "
            "(give one, or the log to build it from)"
        )
    if (proof.old_size, proof.new_size) != (old.tree_size, new.tree_size):
        return "invalid", (
            f"the consistency proof is for sizes {proof.old_size} -> {proof.new_size}, not "
            f"{old.tree_size} -> {new.tree_size}"
        )
    try:
        verify_consistency(
            old.tree_size,
            new.tree_size,
            bytes.fromhex(old.root_hash),
            bytes.fromhex(new.root_hash),
            [bytes.fromhex(h) for h in proof.hashes],
        )
    except (ProofError, ValueError) as exc:
        return "fork", f"fork: the newer checkpoint does not extend the older ({exc})"
    return None


def check_log_entry(
    cert: Certificate,
    keys: Iterable[Ed25519PublicKey],
    *,
    newer: str | None = None,
    consistency: ConsistencyProof | None = None,
    log: FileLog | None = None,
) -> list[str]:
    """Why a certificate's log entry does not hold, offline (an empty list: it holds).

    Checks that the checkpoint is signed by the log's key, that the entry is this certificate's
    hash, and that the inclusion proof leads from it to the checkpoint's root. With ``newer`` (a
    signed checkpoint note) it also checks that the newer tree extends the certificate's, with
    ``consistency`` or, failing that, a proof built from ``log``.

    A certificate is logged in its issuer's log, whose checkpoints its signing key signs: only
    the key among ``keys`` with the certificate's ``key_id`` vouches for the checkpoint and
    ``newer``. Another trusted key, another log's, does not (the entry is outside the signature,
    so anyone holding such a key could log the certificate where the issuer's monitors never
    look).

    Args:
        cert: the certificate, with its ``log_entry``.
        keys: the keys trusted; only the certificate's signer's counts.
        newer: a later checkpoint of the same log.
        consistency: the proof from the certificate's checkpoint to ``newer``.
        log: a log to build that proof from when ``consistency`` is None.
    """
    found = cert.log_entry
    if found is None:
        return ["the certificate carries no log entry (`affidavit certificate prove CERT`)"]
    keys = [k for k in keys if cert.key_id and key_id(k) == cert.key_id]
    if not keys:
        return [
            f"checkpoint: the log's key (the certificate's, {cert.key_id or '(unsigned)'}) is not "
            "among the trusted keys"
        ]
    try:
        checkpoint = open_checkpoint(found.checkpoint.note, keys)
    except ProofError as exc:
        return [f"checkpoint: {exc.message} (its log's key is the certificate's, {cert.key_id})"]
    reasons: list[str] = []
    named = origin_key_id(checkpoint.origin)
    if named is not None and named != cert.key_id:
        # that origin is another key's log: the certificate's key signing a checkpoint of it
        # puts the certificate in no log its owner (or any witness of it) keeps
        return [
            f"checkpoint: it is of log {checkpoint.origin!r}, whose key is {named}, not the "
            f"certificate's ({cert.key_id}); one log, one key"
        ]
    if checkpoint != found.checkpoint:
        reasons.append("checkpoint: its fields differ from the signed note they were read from")
    entry = certificate_entry(cert)
    if found.entry != entry.hex():
        reasons.append("log entry: it is the hash of another certificate, not of this one")
    proof = found.inclusion
    if proof.leaf_hash != leaf_hash(entry).hex():
        reasons.append("inclusion proof: its leaf hash is not this certificate's")
    if proof.tree_size != checkpoint.tree_size:
        reasons.append(
            f"inclusion proof: it is to size {proof.tree_size}, the checkpoint is of size "
            f"{checkpoint.tree_size}"
        )
    if not reasons:
        try:
            verify_inclusion(
                leaf_hash(entry),
                proof.leaf_index,
                proof.tree_size,
                [bytes.fromhex(h) for h in proof.hashes],
                bytes.fromhex(checkpoint.root_hash),
            )
        except (ProofError, ValueError) as exc:
            reasons.append(f"inclusion proof: {exc}")
    if newer is None or reasons:
        return reasons
    try:
        later = open_checkpoint(newer, keys)
    except ProofError as exc:
        return [
            f"newer checkpoint: {exc.message} (its log's key is the certificate's, {cert.key_id})"
        ]
    if consistency is None and log is not None and checkpoint.tree_size < later.tree_size:
        try:
            consistency = log.prove_consistency(checkpoint.tree_size, later.tree_size)
        except TransparencyLogError as exc:
            return [f"newer checkpoint: no consistency proof from the log ({exc.message})"]
    refused = check_consistency(checkpoint, later, consistency)
    return [f"newer checkpoint: {refused[1]}"] if refused else []
