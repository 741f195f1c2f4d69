"""Attacks on the log, each caught by `affidavit log verify` or the witness with a reason and
exit 1: an entry deleted, two entries reordered, an old entry rewritten and a checkpoint
re-signed (with and without rewriting the history), a fork, a rollback - and a certificate whose
log entry was tampered with."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import shutil
import zlib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from typer.testing import CliRunner

from affidavit.certify import build_certificate, sign_certificate
from affidavit.certify.keys import generate_key, key_id
from affidavit.cli.main import app
from affidavit.core.errors import TransparencyLogError
from affidavit.core.settings import Settings
from affidavit.core.tlog import Checkpoint
from affidavit.testing.loopback import QuietHandler, loopback_server
from affidavit.tlog.certificates import (
    certificate_entry,
    check_consistency,
    check_log_entry,
    default_log_path,
    log_certificate,
)
from affidavit.tlog.merkle import EMPTY_ROOT, MemoryTree, leaf_hash
from affidavit.tlog.monitor import Witness, verify_log
from affidavit.tlog.note import parse_checkpoint, sign_checkpoint
from affidavit.tlog.store import FileLog

N = 8


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output + (result.stderr if result.stderr_bytes else "")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AFFIDAVIT_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


@pytest.fixture
def issued(home: Path) -> tuple[Ed25519PrivateKey, Path, list[Path]]:
    """A key, its log, and N logged certificates written to files."""
    settings = Settings(home=home)
    key = generate_key(home / "keys" / "signing.pem")
    paths = []
    for i in range(N):
        cert = build_certificate(f"Q{i}?", "A.", [], [], None, settings, [])
        signed = log_certificate(sign_certificate(cert, key), settings, key)
        path = home.parent / f"c{i}.json"
        path.write_text(signed.model_dump_json(), encoding="utf-8")
        paths.append(path)
    return key, default_log_path(settings, key.public_key()), paths


def _entries(log: Path) -> list[bytes]:
    data = (log / "entries").read_bytes()
    return [data[i : i + 32] for i in range(0, len(data), 32)]


def _rewrite(log: Path, entries: list[bytes]) -> None:
    """Rewrite entries and every stored node level to match them (a careful attacker)."""
    tree = MemoryTree()
    for e in entries:
        tree.append_hash(leaf_hash(e))
    (log / "entries").write_bytes(b"".join(entries))
    for level in range(1, len(tree.levels)):
        (log / f"level-{level:02d}").write_bytes(b"".join(tree.levels[level]))


def _resign(log: Path, key: Ed25519PrivateKey, entries: list[bytes]) -> str:
    origin = (log / "checkpoint").read_text().split("\n")[0]
    tree = MemoryTree()
    for e in entries:
        tree.append_hash(leaf_hash(e))
    note = sign_checkpoint(origin, len(entries), tree.root(), key)
    (log / "checkpoint").write_text(note)
    return note


def test_an_honest_log_verifies(issued: tuple[Ed25519PrivateKey, Path, list[Path]]) -> None:
    code, out = run("log", "verify")
    assert code == 0 and f"{N} signed checkpoints agree" in out


def test_a_deleted_entry_is_caught(issued: tuple[Ed25519PrivateKey, Path, list[Path]]) -> None:
    _, log, _ = issued
    entries = _entries(log)
    (log / "entries").write_bytes(b"".join(entries[:3] + entries[4:]))
    code, out = run("log", "verify")
    assert code == 1 and "holds 7 entries but its latest checkpoint signs 8" in out


def test_a_deleted_entry_with_nodes_rebuilt_is_caught(
    issued: tuple[Ed25519PrivateKey, Path, list[Path]],
) -> None:
    key, log, _ = issued
    entries = _entries(log)
    kept = entries[:3] + entries[4:]
    _rewrite(log, kept)
    _resign(log, key, kept)  # even with the key: the history holds the old checkpoints
    code, out = run("log", "verify")
    assert code == 1 and "size 7 signed after size 8 (the log was rolled back)" in out
    # and one more entry, to keep the size: a second root for size 8
    _rewrite(log, [*kept, bytes(32)])
    _resign(log, key, [*kept, bytes(32)])
    code, out = run("log", "verify")
    assert code == 1 and "a second signed root for size 8 (a fork)" in out


def test_two_reordered_entries_are_caught(
    issued: tuple[Ed25519PrivateKey, Path, list[Path]],
) -> None:
    _, log, _ = issued
    entries = _entries(log)
    entries[2], entries[5] = entries[5], entries[2]
    _rewrite(log, entries)
    code, out = run("log", "verify")
    assert code == 1 and "checkpoint of size 3 does not match the entries: entry 2" in out


def test_a_rewritten_entry_with_a_resigned_checkpoint_is_caught_by_log_verify(
    issued: tuple[Ed25519PrivateKey, Path, list[Path]],
) -> None:
    key, log, _ = issued
    entries = _entries(log)
    entries[1] = bytes(32)
    _rewrite(log, entries)
    code, out = run("log", "verify")  # without the key: every checkpoint since disagrees
    assert code == 1 and "checkpoint of size 2 does not match the entries: entry 1" in out
    _resign(log, key, entries)  # with it: the new root for size 8 is a second one
    code, out = run("log", "verify")
    assert code == 1 and "a second signed root for size 8 (a fork)" in out


def test_a_rewritten_log_with_its_history_rewritten_is_caught_by_the_witness(
    issued: tuple[Ed25519PrivateKey, Path, list[Path]],
) -> None:
    key, log, _ = issued
    assert run("log", "witness", str(log))[0] == 0  # the witness saw size 8
    entries = _entries(log)
    entries[1] = bytes(32)
    entries.append(bytes([9]) * 32)  # and the log grows, as if nothing happened
    _rewrite(log, entries)
    note = _resign(log, key, entries)
    (log / "checkpoints").write_bytes(len(note.encode()).to_bytes(4, "big") + note.encode())
    assert run("log", "verify")[0] == 0  # the keeper erased every trace of the old tree...
    code, out = run("log", "witness", str(log))
    assert code == 1 and "REFUSED (fork)" in out and "does not extend" in out  # ...but not this


def test_a_fork_of_the_same_size_is_caught_by_the_witness(
    issued: tuple[Ed25519PrivateKey, Path, list[Path]], home: Path
) -> None:
    key, log, _ = issued
    assert run("log", "witness", str(log / "checkpoint"))[0] == 0
    entries = _entries(log)
    entries[-1] = bytes(32)
    fork = home.parent / "fork.checkpoint"
    origin = (log / "checkpoint").read_text().split("\n")[0]
    tree = MemoryTree()
    for e in entries:
        tree.append_hash(leaf_hash(e))
    fork.write_text(sign_checkpoint(origin, N, tree.root(), key))
    code, out = run("log", "witness", str(fork))
    assert code == 1 and f"REFUSED (fork): fork: two signed checkpoints of size {N}" in out


def test_a_fork_in_the_history_is_caught_by_log_verify(
    issued: tuple[Ed25519PrivateKey, Path, list[Path]],
) -> None:
    key, log, _ = issued
    entries = _entries(log)
    other = [*entries[:-1], bytes(32)]
    tree = MemoryTree()
    for e in other:
        tree.append_hash(leaf_hash(e))
    origin = (log / "checkpoint").read_text().split("\n")[0]
    note = sign_checkpoint(origin, N, tree.root(), key).encode()
    with (log / "checkpoints").open("ab") as fh:
        fh.write(len(note).to_bytes(4, "big") + note)
    code, out = run("log", "verify")
    assert code == 1 and f"a second signed root for size {N} (a fork)" in out


def test_a_signed_empty_tree_in_the_history_does_not_switch_the_comparisons_off(
    issued: tuple[Ed25519PrivateKey, Path, list[Path]],
) -> None:
    """A checkpoint of size 0 (the empty tree, which other log tools sign) first in the history:
    every later checkpoint is still compared with the entries (it was none of them)."""
    key, log, _ = issued
    origin = (log / "checkpoint").read_text().split("\n")[0]
    history = (log / "checkpoints").read_bytes()
    empty = sign_checkpoint(origin, 0, EMPTY_ROOT, key).encode()
    (log / "checkpoints").write_bytes(len(empty).to_bytes(4, "big") + empty + history)
    code, out = run("log", "verify")
    assert code == 0 and f"{N + 1} signed checkpoints agree" in out
    entries = _entries(log)
    entries[1] = bytes(32)
    _rewrite(log, entries)  # without the key: the signed roots no longer match
    code, out = run("log", "verify")
    assert code == 1 and "checkpoint of size 2 does not match the entries: entry 1" in out
    # a "size 0" checkpoint whose root is not the empty tree's is no empty tree
    bogus = sign_checkpoint(origin, 0, bytes(32), key).encode()
    (log / "checkpoints").write_bytes(len(bogus).to_bytes(4, "big") + bogus + history)
    code, out = run("log", "verify")
    assert code == 1 and "size 0" in out


def test_a_rollback_is_caught_by_the_witness(
    issued: tuple[Ed25519PrivateKey, Path, list[Path]], home: Path
) -> None:
    key, log, _ = issued
    old = home.parent / "old.checkpoint"
    shutil.copy(log / "checkpoint", old)
    old_note = old.read_text()
    assert run("log", "witness", str(log))[0] == 0
    # an older checkpoint of the same log (size 8) after the witness saw size 9
    FileLog(log).append([bytes(32)], key, old_note.split("\n")[0])
    assert run("log", "witness", str(log))[0] == 0
    code, out = run("log", "witness", str(old))
    assert code == 1 and "REFUSED (rollback)" in out and "fewer than the 9" in out


def test_a_checkpoint_by_another_key_is_refused(
    issued: tuple[Ed25519PrivateKey, Path, list[Path]], home: Path
) -> None:
    _, log, _ = issued
    stranger = Ed25519PrivateKey.generate()
    origin = (log / "checkpoint").read_text().split("\n")[0]
    fake = home.parent / "fake.checkpoint"
    fake.write_text(sign_checkpoint(origin, 100, bytes(32), stranger))
    code, out = run("log", "witness", str(fake))
    assert code == 1 and "REFUSED (invalid)" in out and "no signature by a trusted key" in out


def test_certificate_verify_log_catches_a_tampered_entry(
    issued: tuple[Ed25519PrivateKey, Path, list[Path]],
) -> None:
    paths = issued[2]
    assert run("certificate", "verify", str(paths[2]), "--log")[0] == 0
    tree = json.loads(paths[2].read_text())
    tree["log_entry"]["inclusion"]["hashes"][0] = "00" * 32
    paths[2].write_text(json.dumps(tree))
    code, out = run("certificate", "verify", str(paths[2]), "--log")
    assert code == 1 and "log: inclusion proof" in out
    # another certificate's entry, moved over: the hash does not match
    tree["log_entry"] = json.loads(paths[3].read_text())["log_entry"]
    paths[2].write_text(json.dumps(tree))
    code, out = run("certificate", "verify", str(paths[2]), "--log")
    assert code == 1 and "another certificate" in out


def test_a_log_entry_the_certificate_carries_is_checked_without_log_too(
    issued: tuple[Ed25519PrivateKey, Path, list[Path]],
) -> None:
    """The log entry is outside the signature: an edited one (a byte of the checkpoint note, a
    proof hash) verified as valid unless --log was given (found by the certificate fuzzer)."""
    paths = issued[2]
    assert run("certificate", "verify", str(paths[1]))[0] == 0
    tree = json.loads(paths[1].read_text())
    note = tree["log_entry"]["checkpoint"]["note"]
    tree["log_entry"]["checkpoint"]["note"] = note.replace("\n", "\n ", 1)
    paths[1].write_text(json.dumps(tree))
    code, out = run("certificate", "verify", str(paths[1]))
    assert code == 1 and "log: checkpoint" in out, out
    tree = json.loads(paths[2].read_text())
    tree["log_entry"]["inclusion"]["hashes"][0] = "00" * 32
    paths[2].write_text(json.dumps(tree))
    code, out = run("certificate", "verify", str(paths[2]))
    assert code == 1 and "log: inclusion proof" in out, out
    # a certificate without a log entry verifies as before
    del tree["log_entry"]
    paths[2].write_text(json.dumps(tree))
    assert run("certificate", "verify", str(paths[2]))[0] == 0


def test_certificate_prove_and_a_newer_checkpoint(
    issued: tuple[Ed25519PrivateKey, Path, list[Path]], home: Path
) -> None:
    key, log, paths = issued
    newer = home.parent / "newer.checkpoint"
    shutil.copy(log / "checkpoint", newer)
    code, out = run("certificate", "verify", str(paths[0]), "--log", "--checkpoint", str(newer))
    assert code == 0 and "a newer checkpoint extends" in out
    code, _ = run("log", "prove-consistency", "1", str(newer), "-o", str(home.parent / "p.json"))
    assert code == 0
    code, out = run(
        "certificate", "verify", str(paths[0]), "--log", "--checkpoint", str(newer),
        "--consistency-proof", str(home.parent / "p.json"),
    )  # fmt: skip
    assert code == 0
    # the proof of another pair of sizes does not pass for this one
    code, out = run(
        "certificate", "verify", str(paths[1]), "--log", "--checkpoint", str(newer),
        "--consistency-proof", str(home.parent / "p.json"),
    )  # fmt: skip
    assert code == 1 and "for sizes 1 -> 8, not 2 -> 8" in out
    assert run("certificate", "prove", str(paths[0]))[0] == 0
    proved = json.loads(paths[0].read_text())["log_entry"]
    assert proved["inclusion"]["tree_size"] == N and proved["checkpoint"]["tree_size"] == N
    assert run("certificate", "verify", str(paths[0]), "--log")[0] == 0
    # an unlogged certificate: not in the log, exit 1
    settings = Settings(home=home, tlog={"enabled": False})
    lone = sign_certificate(build_certificate("Q?", "B.", [], [], None, settings, []), key)
    lone_path = home.parent / "lone.json"
    lone_path.write_text(lone.model_dump_json())
    code, out = run("certificate", "prove", str(lone_path))
    assert code == 1 and "NOT IN THE LOG" in out
    code, out = run("certificate", "verify", str(lone_path), "--log")
    assert code == 1 and "carries no log entry" in out
    assert certificate_entry(lone) not in _entries(log)


def _other_log(home: Path) -> tuple[Ed25519PrivateKey, Path, Settings]:
    """A second trusted log operator: its own key (public PEM written) and its own log."""
    other = Settings(home=home.parent / "other")
    key = generate_key(home.parent / "other" / "keys" / "signing.pem")
    return key, home.parent / "other" / "keys" / "signing.pub.pem", other


def test_a_checkpoint_of_another_trusted_log_does_not_vouch_for_a_certificate(
    issued: tuple[Ed25519PrivateKey, Path, list[Path]], home: Path
) -> None:
    """The log entry is outside the certificate's signature: anyone holding another trusted
    log key could log the certificate in their own log and pass it off as logged, though the
    issuer's log (the one monitors watch) never held it."""
    key, _, paths = issued
    other_key, other_pub, other = _other_log(home)
    settings = Settings(home=home, tlog={"enabled": False})
    hidden = sign_certificate(build_certificate("Q?", "hidden", [], [], None, settings, []), key)
    moved = log_certificate(hidden, other, other_key)
    reasons = check_log_entry(moved, [key.public_key(), other_key.public_key()])
    assert reasons and "checkpoint" in reasons[0], reasons
    path = home.parent / "moved.json"
    path.write_text(moved.model_dump_json())
    code, out = run("certificate", "verify", str(path), "--log", "--public-key", str(other_pub))
    assert code == 1 and "log: checkpoint" in out, out
    # without --log too: the entry the file carries is checked against the issuer's key
    code, out = run("certificate", "verify", str(path), "--public-key", str(other_pub))
    assert code == 1 and "log: checkpoint" in out, out
    # the issuer's own log still vouches for its own certificates with the other key trusted
    code, out = run(
        "certificate", "verify", str(paths[0]), "--log", "--public-key", str(other_pub)
    )  # fmt: skip
    assert code == 0, out


def test_a_newer_checkpoint_signed_by_another_trusted_log_is_refused(
    issued: tuple[Ed25519PrivateKey, Path, list[Path]], home: Path
) -> None:
    """A newer checkpoint must be the issuer's log's: another trusted key signing one under the
    same origin (here the same tree, re-signed) cannot vouch that the log grew consistently."""
    _, log, paths = issued
    other_key, other_pub, _ = _other_log(home)
    entries = _entries(log)
    tree = MemoryTree()
    for e in entries:
        tree.append_hash(leaf_hash(e))
    origin = (log / "checkpoint").read_text().split("\n")[0]
    fake = home.parent / "fake.checkpoint"
    fake.write_text(sign_checkpoint(origin, len(entries), tree.root(), other_key))
    code, out = run(
        "certificate", "verify", str(paths[-1]), "--log", "--checkpoint", str(fake),
        "--public-key", str(other_pub),
    )  # fmt: skip
    assert code == 1 and "newer checkpoint" in out, out


@contextlib.contextmanager
def serving(answer: Callable[[BaseHTTPRequestHandler], None]) -> Iterator[str]:
    """A loopback HTTP server whose every GET is answered by ``answer``; yields its URL."""

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            answer(self)

    with loopback_server(Handler) as base:
        yield base


MIB = 1 << 20


@pytest.mark.parametrize("status", [200, 500])
def test_a_witness_stops_reading_a_server_that_never_stops_answering(
    home: Path, status: int
) -> None:
    """A hostile server streams an endless answer (here up to 64 MiB) to `log witness URL`: the
    witness read it whole into memory; it stops at its cap and says so (exit 2)."""
    sent = [0]

    def endless(h: BaseHTTPRequestHandler) -> None:
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.end_headers()
        block = b" " * (1 << 16)
        try:
            while sent[0] < 64 * MIB:
                h.wfile.write(block)
                sent[0] += len(block)
        except OSError:
            pass  # the witness hung up

    with serving(endless) as url:
        code, out = run("log", "witness", url, "--state", str(home.parent / "witness"))
    assert code == 2, out
    assert sent[0] < 32 * MIB  # it hung up near its cap, not after reading everything
    if status == 200:
        assert "larger than" in out and "limit" in out
    else:
        assert "answered 500" in out


def test_a_witness_refuses_a_compressed_answer_it_did_not_ask_for(home: Path) -> None:
    """A gzip bomb (a few hundred KiB inflating to 100 MiB): httpx inflated it whole before
    anything was checked; the witness asks for no encoding and refuses one it is sent."""
    packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    bomb = b"".join(packer.compress(b" " * MIB) for _ in range(100)) + packer.flush()

    def gzipped(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Encoding", "gzip")
        h.send_header("Content-Length", str(len(bomb)))
        h.end_headers()
        with contextlib.suppress(OSError):
            h.wfile.write(bomb)

    with serving(gzipped) as url:
        code, out = run("log", "witness", url, "--state", str(home.parent / "witness"))
    assert code == 2 and "encoding" in out, out


@pytest.mark.parametrize(
    ("damage", "said"),
    [(b"\xff\xfe\x00 not a checkpoint", "not UTF-8"), (b"not\na checkpoint\n", "malformed")],
    ids=["not-utf8", "not-a-checkpoint"],
)
def test_a_damaged_witness_state_file_is_an_input_error(
    issued: tuple[Ed25519PrivateKey, Path, list[Path]], home: Path, damage: bytes, said: str
) -> None:
    """A damaged witness state file ended in "internal error" (exit 3: not UTF-8, or any damage
    when the checkpoint came from a server); it is named, and the run stops with exit 2, for a
    log folder and for a server alike (never taken for "no checkpoint seen yet")."""
    _, log, _ = issued
    state = home.parent / "witness"
    assert run("log", "witness", str(log), "--state", str(state))[0] == 0
    (kept,) = state.glob("*.checkpoint")
    kept.write_bytes(damage)
    code, out = run("log", "witness", str(log), "--state", str(state))
    assert code == 2 and said in out and kept.name in out, out
    checkpoint = FileLog(log).checkpoint()
    assert checkpoint is not None
    body = checkpoint.model_dump_json().encode()

    def served(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    with serving(served) as url:
        code, out = run("log", "witness", url, "--state", str(state))
    assert code == 2 and said in out and kept.name in out, out
    with pytest.raises(TransparencyLogError, match=said):
        Witness(state, []).last(checkpoint.origin)
    assert kept.read_bytes() == damage  # left as it was, for its keeper to look at


# -- a log's origin is tied to its key -----------------------------------------------------------


def _hijack(log: Path, dest: Path, key: Ed25519PrivateKey, extra: int = 2) -> FileLog:
    """What a holder of another trusted key can make from a log's public entries: a copy whose
    checkpoints, under the same origin, that key signs, grown by ``extra`` entries of its own."""
    shutil.copytree(log, dest)
    current = FileLog(dest).checkpoint()
    assert current is not None
    root = bytes.fromhex(current.root_hash)
    (dest / "checkpoint").write_text(sign_checkpoint(current.origin, current.tree_size, root, key))
    evil = FileLog(dest)
    if extra:
        evil.append([bytes([0xEE, i]) * 16 for i in range(extra)], key, current.origin)
    return evil


@pytest.fixture
def two_logs(tmp_path: Path) -> tuple[Ed25519PrivateKey, Ed25519PrivateKey, FileLog]:
    """Key A's log (an origin that names no key, so only the witness's memory ties them), and
    key B: both trusted."""
    a, b = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    log = FileLog(tmp_path / "a")
    for i in range(5):
        log.append([bytes([i]) * 32], a, "example.com/log")
    return a, b, log


def test_another_trusted_key_cannot_advance_the_witness_state_of_a_log(
    two_logs: tuple[Ed25519PrivateKey, Ed25519PrivateKey, FileLog], tmp_path: Path
) -> None:
    """Any trusted key's signature was enough: B signed a checkpoint under A's origin, proved
    it consistent from A's public entries, and the witness kept it as A's log."""
    a, b, log = two_logs
    witness = Witness(tmp_path / "witness", [a.public_key(), b.public_key()])
    seen = log.checkpoint()
    assert seen is not None and witness.observe(seen.note).kind == "first-sight"
    evil = _hijack(log.path, tmp_path / "evil", b)
    forged = evil.checkpoint()
    assert forged is not None and forged.tree_size == seen.tree_size + 2
    result = witness.observe(forged.note, log=evil)
    assert not result.accepted and result.kind == "invalid", result
    assert key_id(a.public_key()) in result.reason and "example.com/log" in result.reason
    assert witness.last(seen.origin) == seen  # the state still holds A's checkpoint
    # nor does a second root for the size seen, signed by B, raise a fork alarm for A's log
    fork = sign_checkpoint(seen.origin, seen.tree_size, bytes(32), b)
    assert witness.observe(fork).kind == "invalid"
    # A's own next checkpoint is still taken
    log.append([bytes([9]) * 32], a, seen.origin)
    grown = log.checkpoint()
    assert grown is not None and witness.observe(grown.note, log=log).kind == "consistent"


def test_a_witness_state_of_before_keys_were_recorded_trusts_the_key_of_its_checkpoint(
    two_logs: tuple[Ed25519PrivateKey, Ed25519PrivateKey, FileLog], tmp_path: Path
) -> None:
    """A state folder written before the log's key was recorded holds only the checkpoint: the
    key that signed that checkpoint is the log's, no other trusted key."""
    a, b, log = two_logs
    state = tmp_path / "witness"
    seen = log.checkpoint()
    assert seen is not None
    state.mkdir()
    name = hashlib.sha256(seen.origin.encode()).hexdigest()[:32]
    (state / f"{name}.checkpoint").write_text(seen.note)  # the old layout: the note alone
    witness = Witness(state, [a.public_key(), b.public_key()])
    evil = _hijack(log.path, tmp_path / "evil", b)
    forged = evil.checkpoint()
    assert forged is not None
    result = witness.observe(forged.note, log=evil)
    assert not result.accepted and result.kind == "invalid", result
    log.append([bytes([9]) * 32], a, seen.origin)
    grown = log.checkpoint()
    assert grown is not None and witness.observe(grown.note, log=log).kind == "consistent"
    assert not witness.observe(forged.note, log=evil).accepted
    assert (state / f"{name}.keys").read_text() == key_id(a.public_key()) + "\n"  # recorded
    # an old state whose checkpoint no trusted key signs any more accepts nothing
    (state / f"{name}.keys").unlink()
    result = Witness(state, [b.public_key()]).observe(forged.note, log=evil)
    assert not result.accepted and "trust its key again" in result.reason, result


def test_a_log_whose_origin_names_its_key_is_not_taken_from_another_key_even_at_first_sight(
    issued: tuple[Ed25519PrivateKey, Path, list[Path]], tmp_path: Path
) -> None:
    """The default origin, ``affidavit/<key id>``, names the log's key: a checkpoint under it
    signed by another trusted key is refused on the first sight too."""
    key, log, _ = issued
    other = Ed25519PrivateKey.generate()
    evil = _hijack(log, tmp_path / "evil", other)
    forged = evil.checkpoint()
    assert forged is not None and forged.origin == f"affidavit/{key_id(key.public_key())}"
    witness = Witness(tmp_path / "witness", [key.public_key(), other.public_key()])
    result = witness.observe(forged.note, log=evil)
    assert not result.accepted and result.kind == "invalid", result
    assert key_id(key.public_key()) in result.reason
    assert witness.last(forged.origin) is None
    own = FileLog(log).checkpoint()
    assert own is not None and witness.observe(own.note).kind == "first-sight"


def test_log_witness_refuses_a_checkpoint_of_the_log_signed_by_another_trusted_key(
    issued: tuple[Ed25519PrivateKey, Path, list[Path]], home: Path
) -> None:
    """``affidavit log witness`` with a second log operator's key trusted (--public-key)."""
    _, log, _ = issued
    other_key, other_pub, _ = _other_log(home)
    state = home.parent / "witness"
    assert run("log", "witness", str(log), "--state", str(state))[0] == 0
    evil = _hijack(log, home.parent / "evil", other_key)
    forged = evil.checkpoint()
    assert forged is not None
    fake, proof = home.parent / "forged.checkpoint", home.parent / "proof.json"
    fake.write_text(forged.note)
    proof.write_text(evil.prove_consistency(N, forged.tree_size).model_dump_json())
    code, out = run(
        "log", "witness", str(fake), "--proof", str(proof), "--state", str(state),
        "--public-key", str(other_pub),
    )  # fmt: skip
    assert code == 1 and "REFUSED (invalid)" in out, out
    code, out = run(
        "log", "witness", str(evil.path), "--state", str(state), "--public-key", str(other_pub)
    )
    assert code == 1 and "REFUSED (invalid)" in out, out
    assert run("log", "witness", str(log), "--state", str(state))[0] == 0


def test_log_verify_refuses_checkpoints_signed_by_another_trusted_key(
    two_logs: tuple[Ed25519PrivateKey, Ed25519PrivateKey, FileLog],
    issued: tuple[Ed25519PrivateKey, Path, list[Path]],
    home: Path,
    tmp_path: Path,
) -> None:
    """Every checkpoint of a log was opened with any trusted key: B could sign the later ones
    of A's log (or a rewritten log under A's origin) and `log verify` called it valid."""
    a, b, log = two_logs
    evil = _hijack(log.path, tmp_path / "grown", b)
    both = [a.public_key(), b.public_key()]
    result = verify_log(evil, both)
    assert not result.valid and "key" in result.reasons[0], result
    assert verify_log(log, both).valid
    # a whole log rewritten under the origin naming key A, every checkpoint signed by B
    key, own, _ = issued
    other_key, other_pub, _ = _other_log(home)
    entries = _entries(own)
    entries[1] = bytes(32)
    _rewrite(own, entries)
    note = _resign(own, other_key, entries)
    (own / "checkpoints").write_bytes(len(note.encode()).to_bytes(4, "big") + note.encode())
    code, out = run("log", "verify", "--public-key", str(other_pub))
    assert code == 1 and key_id(key.public_key()) in out, out


# -- `log prove-consistency`: both checkpoints are the log's, by its key ---------------------------


def _history(log: Path) -> list[str]:
    return list(FileLog(log).history())


def _resigned(note: str, key: Ed25519PrivateKey, dest: Path, origin: str | None = None) -> Path:
    """``note``'s tree (its size and root), signed by ``key`` (under ``origin``), in ``dest``."""
    lines = note.split("\n")
    root = base64.b64decode(lines[2])
    dest.write_text(sign_checkpoint(origin or lines[0], int(lines[1]), root, key))
    return dest


def test_prove_consistency_refuses_checkpoints_signed_by_another_trusted_key(
    issued: tuple[Ed25519PrivateKey, Path, list[Path]], home: Path
) -> None:
    """Any trusted key's signature was enough: B re-signed two of A's tree heads under A's
    origin and `log prove-consistency` called them consistent (exit 0), vouching for them as the
    log's checkpoints."""
    key, log, _ = issued
    other_key, other_pub, _ = _other_log(home)
    history = _history(log)
    old = _resigned(history[2], other_key, home.parent / "old.checkpoint")
    new = _resigned(history[-1], other_key, home.parent / "new.checkpoint")
    code, out = run("log", "prove-consistency", str(old), str(new), "--public-key", str(other_pub))
    assert code == 1 and "INVALID checkpoint" in out and key_id(key.public_key()) in out, out
    assert "consistent:" not in out
    # one of the log's own and one by B: refused too, whichever is B's
    own_old, own_new = home.parent / "own_old.checkpoint", home.parent / "own_new.checkpoint"
    own_old.write_text(history[2])
    own_new.write_text(history[-1])
    for pair in ((own_old, new), (old, own_new)):
        code, out = run(
            "log", "prove-consistency", str(pair[0]), str(pair[1]),
            "--public-key", str(other_pub),
        )  # fmt: skip
        assert code == 1 and "INVALID checkpoint" in out, out
    # a bare size with B's checkpoint file
    code, out = run("log", "prove-consistency", "3", str(new), "--public-key", str(other_pub))
    assert code == 1 and "INVALID checkpoint" in out, out
    # the log's own checkpoints still prove, with B trusted or not
    for extra in ((), ("--public-key", str(other_pub))):
        code, out = run("log", "prove-consistency", str(own_old), str(own_new), *extra)
        assert code == 0 and "consistent: size 8 extends size 3" in out, out


def test_prove_consistency_refuses_checkpoints_of_another_log(
    issued: tuple[Ed25519PrivateKey, Path, list[Path]], home: Path
) -> None:
    """Two checkpoints of B's own log (origin ``affidavit/<B>``), over the same entries as A's
    log, were proved consistent from A's log: another log's checkpoints passed for A's."""
    key, log, _ = issued
    other_key, other_pub, _ = _other_log(home)
    origin_b = f"affidavit/{key_id(other_key.public_key())}"
    history = _history(log)
    old = _resigned(history[2], other_key, home.parent / "old.checkpoint", origin_b)
    new = _resigned(history[-1], other_key, home.parent / "new.checkpoint", origin_b)
    code, out = run("log", "prove-consistency", str(old), str(new), "--public-key", str(other_pub))
    assert code == 1 and "INVALID checkpoint" in out and origin_b in out, out
    # the same with key A itself signing under B's origin: not this log's checkpoints
    old = _resigned(history[2], key, home.parent / "old.checkpoint", origin_b)
    new = _resigned(history[-1], key, home.parent / "new.checkpoint", origin_b)
    code, out = run("log", "prove-consistency", str(old), str(new), "--public-key", str(other_pub))
    assert code == 1 and "INVALID checkpoint" in out, out


def _pem(key: Ed25519PrivateKey, path: Path) -> Path:
    from cryptography.hazmat.primitives import serialization

    path.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return path


def test_prove_consistency_of_a_log_with_a_custom_origin_takes_the_key_of_its_first_checkpoint(
    two_logs: tuple[Ed25519PrivateKey, Ed25519PrivateKey, FileLog], home: Path, tmp_path: Path
) -> None:
    """A log whose origin names no key (``example.com/log``) is the key's that signed its first
    checkpoint: B's checkpoints under that origin are refused; with no trusted key at all,
    nothing is taken (a missing key list narrows)."""
    a, b, log = two_logs
    pub_a, pub_b = _pem(a, tmp_path / "a.pem"), _pem(b, tmp_path / "b.pem")
    history = _history(log.path)
    old = _resigned(history[1], b, tmp_path / "old.checkpoint")
    new = _resigned(history[-1], b, tmp_path / "new.checkpoint")
    trust = ("--log-dir", str(log.path), "--public-key", str(pub_a), "--public-key", str(pub_b))
    code, out = run("log", "prove-consistency", str(old), str(new), *trust)
    assert code == 1 and "INVALID checkpoint" in out and key_id(a.public_key()) in out, out
    own_old, own_new = tmp_path / "own_old.checkpoint", tmp_path / "own_new.checkpoint"
    own_old.write_text(history[1])
    own_new.write_text(history[-1])
    code, out = run("log", "prove-consistency", str(own_old), str(own_new), *trust)
    assert code == 0 and "consistent: size 5 extends size 2" in out, out
    # trusting B only: the log's key (A, which signed its first checkpoint) is not trusted
    only_b = ("--log-dir", str(log.path), "--public-key", str(pub_b))
    code, out = run("log", "prove-consistency", str(old), str(new), *only_b)
    assert code == 1 and "INVALID checkpoint" in out, out
    # no trusted key at all: nothing passes
    code, out = run(
        "log", "prove-consistency", str(own_old), str(own_new), "--log-dir", str(log.path)
    )
    assert code == 1 and "INVALID checkpoint" in out, out


def test_prove_consistency_wants_the_older_tree_first_and_sizes_it_can_read(
    issued: tuple[Ed25519PrivateKey, Path, list[Path]], home: Path
) -> None:
    """Sizes in the wrong order, or a size that is no ASCII number ('²' passed ``isdigit`` and
    crashed ``int``; 5000 digits passed both checks and crashed it too), are usage errors
    (exit 2), never a traceback."""
    _, log, _ = issued
    history = _history(log)
    old, new = home.parent / "old.checkpoint", home.parent / "new.checkpoint"
    old.write_text(history[2])
    new.write_text(history[-1])
    code, out = run("log", "prove-consistency", str(new), str(old))
    assert code == 2 and "larger than the newer" in out, out
    code, out = run("log", "prove-consistency", "8", "3")
    assert code == 2 and "larger than the newer" in out, out
    code, out = run("log", "prove-consistency", "0", "3")
    assert code == 2 and "size 0" in out, out
    code, out = run("log", "prove-consistency", "3", "9")
    assert code == 2 and "no tree of size 9" in out, out
    for bad in ("\u00b2", "\u0663", "9" * 5000):
        result = CliRunner().invoke(app, ["log", "prove-consistency", "1", bad])
        assert result.exit_code == 2, (bad[:10], result.exception)
    # equal sizes, two files of the same tree: consistent
    code, out = run("log", "prove-consistency", str(new), str(new))
    assert code == 0 and "consistent" in out, out


# -- the empty tree, and a log entry under an origin naming another key -------------------------


def test_a_size_0_checkpoint_is_the_empty_tree_or_invalid(
    issued: tuple[Ed25519PrivateKey, Path, list[Path]], tmp_path: Path
) -> None:
    """A signed "size 0" checkpoint whose root is not the empty tree's was taken by a witness as
    a first sight, and every later checkpoint then passed with no proof ("every tree extends
    the empty one")."""
    key, log, _ = issued
    origin = (log / "checkpoint").read_text().split("\n")[0]
    witness = Witness(tmp_path / "witness", [key.public_key()])
    bogus = sign_checkpoint(origin, 0, bytes(32), key)
    result = witness.observe(bogus)
    assert not result.accepted and result.kind == "invalid" and "empty tree" in result.reason
    assert witness.last(origin) is None
    # the true empty tree is taken, and any later tree extends it
    assert witness.observe(sign_checkpoint(origin, 0, EMPTY_ROOT, key)).kind == "first-sight"
    own = FileLog(log).checkpoint()
    assert own is not None and witness.observe(own.note).kind == "consistent"
    # a checkpoint built as a model (not read from a note) is held to the same
    fake = Checkpoint(origin=origin, tree_size=0, root_hash="00" * 32, note="")
    refused = check_consistency(fake, own, None)
    assert refused is not None and refused[0] == "invalid", refused


def test_a_log_entry_under_an_origin_naming_another_key_is_refused(
    issued: tuple[Ed25519PrivateKey, Path, list[Path]], home: Path
) -> None:
    """The origin ``affidavit/<B>`` is B's log: a checkpoint of it signed by A (the issuer) is
    no checkpoint of that log, so a certificate logged there by A is in no log anyone
    witnesses (every witness and `log verify` refuse A's checkpoints under B's origin)."""
    key, _, _ = issued
    other_key, _, _ = _other_log(home)
    origin_b = f"affidavit/{key_id(other_key.public_key())}"
    settings = Settings(
        home=home, tlog={"origin": origin_b, "path": str(home.parent / "elsewhere")}
    )
    cert = sign_certificate(build_certificate("Q?", "hid", [], [], None, settings, []), key)
    logged = log_certificate(cert, settings, key)
    reasons = check_log_entry(logged, [key.public_key(), other_key.public_key()])
    assert reasons and "checkpoint" in reasons[0] and origin_b in reasons[0], reasons
    # the issuer's own origin, or one that names no key, is fine
    for origin in (f"affidavit/{key_id(key.public_key())}", "example.com/log"):
        settings = Settings(home=home, tlog={"origin": origin, "path": str(home.parent / origin)})
        logged = log_certificate(cert, settings, key)
        assert check_log_entry(logged, [key.public_key()]) == []


def test_inclusion_and_consistency_proofs_of_the_wrong_shape_are_refused(
    issued: tuple[Ed25519PrivateKey, Path, list[Path]],
) -> None:
    """Audit (these held already): a leaf index at or past the tree size, a proof one hash too
    long or too short, a consistency proof from size 0, and one for equal sizes that is not
    empty or joins two roots."""
    _, log, paths = issued
    cert = json.loads(paths[5].read_text())
    good = cert["log_entry"]["inclusion"]
    for change in (
        {"leaf_index": N},
        {"leaf_index": 10**30},
        {"hashes": [*good["hashes"], "00" * 32]},
        {"hashes": good["hashes"][:-1]},
        {"hashes": []},
    ):
        tree = json.loads(paths[5].read_text())
        tree["log_entry"]["inclusion"].update(change)
        paths[5].write_text(json.dumps(tree))
        code, out = run("certificate", "verify", str(paths[5]), "--log")
        assert code == 1 and "log: inclusion proof" in out, (change, out)
    history = [parse_checkpoint(n) for n in FileLog(log).history()]
    three, eight = history[2], history[-1]
    with FileLog(log) as source:
        proof = source.prove_consistency(3, 8)
        with pytest.raises(TransparencyLogError):
            source.prove_consistency(0, 8)
    assert check_consistency(three, eight, proof) is None
    for hashes in (proof.hashes[:-1], (*proof.hashes, "00" * 32), ()):
        bent = proof.model_copy(update={"hashes": hashes})
        refused = check_consistency(three, eight, bent)
        assert refused is not None and refused[0] in ("fork", "invalid"), hashes
    other = history[3].model_copy(update={"tree_size": 3})  # size 3, another root
    assert check_consistency(three, other, None) == (
        "fork",
        "fork: two signed checkpoints of size 3, two roots",
    )
    assert check_consistency(three, three, proof) is None  # equal and the same: no proof needed
