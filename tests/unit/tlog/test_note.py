"""Signed notes and checkpoints against the vectors of Go's golang.org/x/mod/sumdb/note.

The key pair, text and signatures are those of ``sumdb/note/note_test.go`` in
https://github.com/golang/mod (BSD-3-Clause): TestNewVerifier, TestSign and TestOpen. Ed25519 is
deterministic, so signing the same text with the same key must give the very same note.
"""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from affidavit.core.errors import ProofError
from affidavit.tlog.note import (
    key_hash,
    open_checkpoint,
    open_note,
    parse_checkpoint,
    sign_checkpoint,
    sign_note,
    verifier_key,
)

PETER_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
PETER_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
ENOCH_VKEY = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop"
TEXT = (
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n"
)
PETER_SIG = (
    "— PeterNeumann "
    "x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"
)
ENOCH_SIG = (
    "— EnochRoot "
    "rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n"
)


def peter_key() -> Ed25519PrivateKey:
    raw = base64.b64decode(PETER_SKEY.split("+", 4)[4])
    assert raw[0] == 1  # the Ed25519 algorithm byte
    return Ed25519PrivateKey.from_private_bytes(raw[1:])


def public_of(vkey: str) -> Ed25519PublicKey:
    return Ed25519PublicKey.from_public_bytes(base64.b64decode(vkey.split("+", 2)[2])[1:])


def test_verifier_key_and_key_hash_match_go() -> None:
    key = peter_key()
    assert verifier_key("PeterNeumann", key.public_key()) == PETER_VKEY
    assert key_hash("PeterNeumann", key.public_key()).hex() == "c74f20a3"
    assert key_hash("EnochRoot", public_of(ENOCH_VKEY)).hex() == "af0cfe78"


def test_signing_gives_go_s_note_byte_for_byte() -> None:
    assert sign_note(TEXT, "PeterNeumann", peter_key()) == TEXT + "\n" + PETER_SIG


def test_open_checks_trusted_signatures_and_skips_unknown_ones() -> None:
    note = TEXT + "\n" + PETER_SIG + ENOCH_SIG
    assert open_note(note, [public_of(PETER_VKEY)]) == (TEXT, ["PeterNeumann"])
    both = [public_of(PETER_VKEY), public_of(ENOCH_VKEY)]
    assert open_note(note, both)[1] == ["PeterNeumann", "EnochRoot"]
    with pytest.raises(ProofError, match="no signature by a trusted key"):
        open_note(note, [])


@pytest.mark.parametrize(
    "note",
    [
        TEXT,
        TEXT + "\n",
        TEXT + "\n" + PETER_SIG[:-1],
        "\x01" + TEXT + "\n" + PETER_SIG,
        TEXT + "\n" + PETER_SIG.replace("PeterNeumann", "Bad Name"),
        TEXT + "\n" + PETER_SIG + "Unexpected line.\n",
        TEXT + "\n" + PETER_SIG * 101,
    ],
)
def test_malformed_notes_are_refused(note: str) -> None:
    # the bad messages of Go's TestOpen
    with pytest.raises(ProofError):
        open_note(note, [public_of(PETER_VKEY)])


def test_a_changed_signature_or_text_fails() -> None:
    bad_sig = TEXT + "\n" + PETER_SIG[:60] + "ABCD" + PETER_SIG[60:]
    with pytest.raises(ProofError, match="does not match"):
        open_note(bad_sig, [public_of(PETER_VKEY)])
    with pytest.raises(ProofError, match="does not match"):
        open_note(TEXT.replace("answer", "answers") + "\n" + PETER_SIG, [public_of(PETER_VKEY)])


def test_checkpoint_round_trip_and_format() -> None:
    key = Ed25519PrivateKey.generate()
    root = bytes(range(32))
    note = sign_checkpoint("example.com/affidavit", 12, root, key)
    lines = note.split("\n")
    assert lines[:4] == ["example.com/affidavit", "12", base64.b64encode(root).decode(), ""]
    assert lines[4].startswith("— example.com/affidavit ") and lines[5] == ""
    cp = open_checkpoint(note, [key.public_key()], origin="example.com/affidavit")
    assert (cp.tree_size, cp.root_hash, cp.note) == (12, root.hex(), note)
    with pytest.raises(ProofError, match="not 'other'"):
        open_checkpoint(note, [key.public_key()], origin="other")
    with pytest.raises(ProofError):
        open_checkpoint(note, [Ed25519PrivateKey.generate().public_key()])


@pytest.mark.parametrize(
    "body", ["o\n012\nAAAA\n", "o\n-1\n" + "A" * 43 + "=\n", "o\n1\nAAAA\n", "o\n1\n"]
)
def test_malformed_checkpoints_are_refused(body: str) -> None:
    with pytest.raises(ProofError, match="malformed checkpoint"):
        parse_checkpoint(body + "\n— o AAAAAAAA\n")
