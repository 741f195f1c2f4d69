"""Signed notes and checkpoints against the vectors of Go's golang.org/x/mod/sumdb/note.

The key pair, text and signatures are those of ``sumdb/note/note_test.go`` in
https://github.com/golang/mod (BSD-3-Clause): TestNewVerifier, TestSign and TestOpen. Ed25519 is
deterministic, so signing the same text with the same key must give the very same note.
"""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from affidavit.certify.keys import key_id
from affidavit.core.errors import ProofError
from affidavit.tlog.merkle import EMPTY_ROOT
from affidavit.tlog.note import (
    key_hash,
    note_signers,
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


ROOT = base64.b64encode(bytes(range(32))).decode()


@pytest.mark.parametrize(
    "body",
    [
        f"o\n1\n{ROOT}\n{ROOT}\n",  # the root line twice
        f"o\n1\n{ROOT}\no\n2\n{ROOT}\n",  # a second checkpoint appended to the first
        f"o\n1\n{ROOT}\nextension\n",  # an extension line (affidavit signs none)
        f"o\n9223372036854775808\n{ROOT}\n",  # 2^63: past any size a log can hold
        f"o\n99999999999999999999\n{ROOT}\n",  # 20 digits: past uint64 as well
        f"o\n0\n{ROOT}\n",  # size 0 but not the empty tree's root
    ],
    ids=["duplicate-root", "two-checkpoints", "extension", "2^63", "20-digits", "size-0"],
)
def test_a_checkpoint_body_is_exactly_origin_size_root(body: str) -> None:
    """Each of these was read as a checkpoint (the first three lines taken, the rest ignored;
    any size of up to 20 digits; any root for the empty tree), though it is signed as a whole:
    a reader that takes the last lines, or a tool that refuses sizes past int64, sees another
    tree than this one."""
    key = Ed25519PrivateKey.generate()
    note = sign_note(body, "o", key)
    with pytest.raises(ProofError, match="malformed checkpoint"):
        parse_checkpoint(note)
    with pytest.raises(ProofError, match="malformed checkpoint"):
        open_checkpoint(note, [key.public_key()])


@pytest.mark.parametrize(
    "size", ["+1", "01", "00", " 1", "1 ", "1_0", "\u0661", "\uff11", "0x1", "1e3", "-0"]
)
def test_a_tree_size_is_plain_ascii_decimal(size: str) -> None:
    key = Ed25519PrivateKey.generate()
    with pytest.raises(ProofError, match="malformed checkpoint"):
        open_checkpoint(sign_note(f"o\n{size}\n{ROOT}\n", "o", key), [key.public_key()])


def test_the_largest_and_the_empty_tree_sizes_are_read() -> None:
    key = Ed25519PrivateKey.generate()
    big = open_checkpoint(sign_checkpoint("o", 2**63 - 1, bytes(32), key), [key.public_key()])
    assert big.tree_size == 2**63 - 1
    empty = open_checkpoint(sign_checkpoint("o", 0, EMPTY_ROOT, key), [key.public_key()])
    assert empty.tree_size == 0 and empty.root_hash == EMPTY_ROOT.hex()


@pytest.mark.parametrize("root", [bytes(31), bytes(33), bytes(1), bytes(64)])
def test_a_root_hash_of_another_length_is_refused(root: bytes) -> None:
    key = Ed25519PrivateKey.generate()
    note = sign_note(f"o\n1\n{base64.b64encode(root).decode()}\n", "o", key)
    with pytest.raises(ProofError, match="malformed checkpoint"):
        open_checkpoint(note, [key.public_key()])


def test_trailing_data_after_the_signatures_is_refused() -> None:
    key = Ed25519PrivateKey.generate()
    note = sign_checkpoint("o", 1, bytes(32), key)
    for tail in ("garbage", "garbage\n", "\n", "\n\n", " \n"):
        with pytest.raises(ProofError):
            open_checkpoint(note + tail, [key.public_key()])
    with pytest.raises(ProofError):
        open_checkpoint(note[:-1], [key.public_key()])  # no final newline


def test_signatures_by_unknown_keys_and_by_the_same_name_with_other_key_ids() -> None:
    """Unknown keys' signatures are skipped, whatever name they use; only the trusted keys'
    count, each once; a trusted key's bad signature fails the whole note."""
    a, b, stranger = (Ed25519PrivateKey.generate() for _ in range(3))
    note = sign_checkpoint("o", 1, bytes(32), a)
    text = note[: note.rfind("\n\n") + 1]
    extra = "".join(sign_note(text, "o", k).split("\n\n", 1)[1] for k in (stranger, b, a))
    both = note + extra  # A, then under the same name: a stranger, B, and A again
    assert note_signers(both, [a.public_key()]) == [a.public_key()]
    assert {key_id(k) for k in note_signers(both, [a.public_key(), b.public_key()])} == {
        key_id(a.public_key()),
        key_id(b.public_key()),
    }
    with pytest.raises(ProofError, match="no signature by a trusted key"):
        open_checkpoint(note + extra, [Ed25519PrivateKey.generate().public_key()])
    # a line under A's name and key hash whose signature is B's: A's signature fails
    blob = base64.b64decode(sign_note(text, "o", b).split(" ")[-1])
    forged = base64.b64encode(key_hash("o", a.public_key()) + blob[4:]).decode()
    with pytest.raises(ProofError, match="does not match"):
        open_checkpoint(f"{text}\n\u2014 o {forged}\n", [a.public_key(), b.public_key()])
