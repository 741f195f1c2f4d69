"""C2SP signed notes and ``tlog-checkpoint`` checkpoints, signed with Ed25519.

A checkpoint is the text ``<origin>\\n<tree size>\\n<base64 root hash>\\n`` followed by a blank
line and one signature line per signer, ``— <key name> <base64(key hash || signature)>``
(https://c2sp.org/tlog-checkpoint, https://c2sp.org/signed-note). The key hash is the first 4
bytes of ``SHA-256(key name || 0x0A || 0x01 || raw public key)`` (0x01: Ed25519) and the
signature covers the text above the blank line. The same key that signs affidavit's certificates
signs its checkpoints, under the log's origin as key name, so standard checkpoint tooling (Go's
``golang.org/x/mod/sumdb/note``, for one) reads them given `verifier_key`.

Examples:
    >>> from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    >>> key = Ed25519PrivateKey.generate()
    >>> note = sign_checkpoint("example.com/log", 3, bytes(32), key)
    >>> note.splitlines()[:3]
    ['example.com/log', '3', 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=']
    >>> open_checkpoint(note, [key.public_key()]).tree_size
    3
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Iterable

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from affidavit.certify.keys import raw_public_key
from affidavit.core.errors import ProofError
from affidavit.core.tlog import Checkpoint
from affidavit.tlog.merkle import EMPTY_ROOT

__all__ = [
    "MAX_NOTE_BYTES",
    "MAX_TREE_SIZE",
    "key_hash",
    "note_signers",
    "open_checkpoint",
    "open_note",
    "parse_checkpoint",
    "sign_checkpoint",
    "sign_note",
    "verifier_key",
]

ALG_ED25519 = 0x01
SIG_PREFIX = "\u2014 "  # an em dash and a space, as the signed-note format requires
MAX_NOTE_BYTES = 1 << 20
MAX_SIGNATURES = 100  # as Go's note package: a note with more is malformed
_NAME = re.compile(r"^[^\s+]+$")
_SIZE = re.compile(r"0|[1-9][0-9]{0,18}")
MAX_TREE_SIZE = (1 << 63) - 1
"""The largest tree size read (int64, as Go's ``sumdb/tlog`` reads it); no log holds more."""


def _check_name(name: str) -> None:
    if not name or not _NAME.match(name) or not name.isprintable():
        raise ProofError(f"key name {name!r} is empty or has a space or '+'")


def key_hash(name: str, public: Ed25519PublicKey) -> bytes:
    """The 4-byte key hash of an Ed25519 signed-note key named ``name``."""
    data = name.encode("utf-8") + b"\n" + bytes([ALG_ED25519]) + raw_public_key(public)
    return hashlib.sha256(data).digest()[:4]


def verifier_key(name: str, public: Ed25519PublicKey) -> str:
    """The signed-note verifier key string, ``<name>+<hex key hash>+<base64(0x01 || key)>``."""
    _check_name(name)
    encoded = base64.b64encode(bytes([ALG_ED25519]) + raw_public_key(public)).decode("ascii")
    return f"{name}+{key_hash(name, public).hex()}+{encoded}"


def _check_text(text: str) -> None:
    if not text.endswith("\n") or "\n\n" in text:
        raise ProofError("a note's text must end with a newline and hold no blank line")
    if any(ord(c) < 0x20 and c != "\n" for c in text):
        raise ProofError("a note's text may hold no control character but newlines")


def sign_note(text: str, name: str, key: Ed25519PrivateKey) -> str:
    """``text`` signed by ``key`` under ``name``, as a signed note.

    Raises:
        ProofError: the text or name cannot be a note's.
    """
    _check_text(text)
    _check_name(name)
    signature = key.sign(text.encode("utf-8"))
    blob = base64.b64encode(key_hash(name, key.public_key()) + signature).decode("ascii")
    return f"{text}\n{SIG_PREFIX}{name} {blob}\n"


def _signatures(
    note: str, keys: Iterable[Ed25519PublicKey]
) -> tuple[str, list[tuple[str, Ed25519PublicKey]]]:
    """The note's text, and the name and key of each trusted signature (every one checked)."""
    if len(note.encode("utf-8", "surrogatepass")) > MAX_NOTE_BYTES:
        raise ProofError(f"note is over {MAX_NOTE_BYTES} bytes")
    split = note.rfind("\n\n")
    if split < 0 or not note.endswith("\n"):
        raise ProofError("malformed note: no blank line before the signatures")
    text, sig_lines = note[: split + 1], note[split + 2 : -1].split("\n")
    _check_text(text)
    if len(sig_lines) > MAX_SIGNATURES:
        raise ProofError(f"malformed note: more than {MAX_SIGNATURES} signatures")
    trusted = list(keys)
    signed: list[tuple[str, Ed25519PublicKey]] = []
    for line in sig_lines:
        if not line.startswith(SIG_PREFIX):
            raise ProofError(f"malformed signature line {line[:80]!r}")
        name, _, blob = line[len(SIG_PREFIX) :].partition(" ")
        _check_name(name)
        try:
            raw = base64.b64decode(blob, validate=True)
        except (binascii.Error, ValueError):
            raise ProofError(f"signature of {name!r} is not base64") from None
        if len(raw) < 5:
            raise ProofError(f"signature of {name!r} is too short")
        for public in trusted:
            if key_hash(name, public) != raw[:4]:
                continue
            try:
                public.verify(raw[4:], text.encode("utf-8"))
            except InvalidSignature:
                raise ProofError(f"the signature of {name!r} does not match the note") from None
            signed.append((name, public))
            break
    if not signed:
        raise ProofError("the note carries no signature by a trusted key")
    return text, signed


def open_note(note: str, keys: Iterable[Ed25519PublicKey]) -> tuple[str, list[str]]:
    """Check a signed note: its text, and the names of the trusted keys that signed it.

    A signature by a key not in ``keys`` is skipped (a note may carry a witness's too); one
    whose key hash names a trusted key must verify.

    Raises:
        ProofError: malformed, no signature by a trusted key, or a bad signature.
    """
    text, signed = _signatures(note, keys)
    return text, [name for name, _ in signed]


def note_signers(note: str, keys: Iterable[Ed25519PublicKey]) -> list[Ed25519PublicKey]:
    """The keys among ``keys`` whose signature the note carries (checked as `open_note` does),
    each once: which of several trusted keys vouch for it.

    Raises:
        ProofError: malformed, no signature by a trusted key, or a bad signature.
    """
    found: dict[bytes, Ed25519PublicKey] = {}
    for _, public in _signatures(note, keys)[1]:
        found.setdefault(raw_public_key(public), public)
    return list(found.values())


def sign_checkpoint(origin: str, size: int, root: bytes, key: Ed25519PrivateKey) -> str:
    """A C2SP checkpoint for a tree of ``size`` with hash ``root``, signed under ``origin``."""
    if not origin or "\n" in origin:
        raise ProofError("a checkpoint's origin must be one non-empty line")
    if not 0 <= size <= MAX_TREE_SIZE:
        raise ProofError(f"a checkpoint's tree size is from 0 to {MAX_TREE_SIZE}, not {size}")
    encoded = base64.b64encode(root).decode("ascii")
    return sign_note(f"{origin}\n{size}\n{encoded}\n", origin, key)


def parse_checkpoint(note: str) -> Checkpoint:
    """Read a checkpoint's fields without checking its signature.

    Raises:
        ProofError: not a checkpoint note.
    """
    split = note.rfind("\n\n")
    body = note[: split + 1] if split >= 0 else note
    lines = body.split("\n")
    if len(lines) < 4 or not lines[0]:
        raise ProofError("malformed checkpoint: it needs an origin, a size and a root hash")
    if len(lines) > 4:
        # signed as a whole: a line past the root (a second size, a second root) is something
        # another reader may take for the tree, so none is accepted (affidavit signs none)
        raise ProofError(
            "malformed checkpoint: more than an origin, a size and a root hash "
            f"(line 4 is {lines[3][:40]!r})"
        )
    origin, size, root = lines[0], lines[1], lines[2]
    if not _SIZE.fullmatch(size) or int(size) > MAX_TREE_SIZE:
        raise ProofError(
            f"malformed checkpoint: tree size {size[:40]!r} is not a decimal number from 0 to "
            f"{MAX_TREE_SIZE}"
        )
    try:
        raw = base64.b64decode(root, validate=True)
    except (binascii.Error, ValueError):
        raise ProofError("malformed checkpoint: the root hash is not base64") from None
    if len(raw) != 32:
        raise ProofError(f"malformed checkpoint: the root hash is {len(raw)} bytes, not 32")
    if size == "0" and raw != EMPTY_ROOT:
        raise ProofError(
            "malformed checkpoint: a tree of size 0 is the empty tree, whose root hash is "
            "SHA-256 of nothing; this one signs another"
        )
    return Checkpoint(origin=origin, tree_size=int(size), root_hash=raw.hex(), note=note)


def open_checkpoint(
    note: str, keys: Iterable[Ed25519PublicKey], *, origin: str | None = None
) -> Checkpoint:
    """Check a checkpoint's signature (by one of ``keys``) and read it.

    Args:
        note: the signed checkpoint.
        keys: the log keys trusted.
        origin: the origin expected (None: any).

    Raises:
        ProofError: malformed, not signed by a trusted key, or another log's.
    """
    open_note(note, keys)
    checkpoint = parse_checkpoint(note)
    if origin is not None and checkpoint.origin != origin:
        raise ProofError(
            f"the checkpoint is of log {checkpoint.origin!r}, not {origin!r}", source=origin
        )
    return checkpoint
