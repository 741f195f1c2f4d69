"""The on-disk log: appends, proofs, recovery from an interrupted append, concurrent writers."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from affidavit.core.errors import TransparencyLogError
from affidavit.tlog.merkle import (
    MemoryTree,
    leaf_hash,
    root_hash,
    verify_consistency,
    verify_inclusion,
)
from affidavit.tlog.monitor import verify_log
from affidavit.tlog.note import open_checkpoint
from affidavit.tlog.store import FileLog

ORIGIN = "example.com/test-log"


def entry(i: int) -> bytes:
    return hashlib.sha256(i.to_bytes(8, "big")).digest()


@pytest.fixture
def key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def test_appends_match_the_in_memory_tree_and_every_proof_verifies(
    tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    log, ref = FileLog(tmp_path / "log"), MemoryTree()
    roots = {}
    for batch in ([entry(0)], [entry(i) for i in range(1, 6)], [entry(6)], [entry(7), entry(8)]):
        first, cp = log.append(batch, key, ORIGIN)
        assert first == ref.size
        for e in batch:
            ref.append_hash(leaf_hash(e))
        assert cp.tree_size == ref.size and bytes.fromhex(cp.root_hash) == ref.root()
        assert open_checkpoint(cp.note, [key.public_key()], origin=ORIGIN) == cp
        roots[cp.tree_size] = ref.root()
    n = log.size()
    for size in range(1, n + 1):
        for index in range(size):
            proof = log.inclusion_proof(index, size)
            verify_inclusion(leaf_hash(entry(index)), index, size, proof, log.root(size))
    for old, old_root in roots.items():
        p = log.prove_consistency(old, n)
        verify_consistency(old, n, old_root, ref.root(), [bytes.fromhex(h) for h in p.hashes])
    assert log.find(entry(7)) == 7 and log.find(b"\x00" * 32) is None
    assert [c.split("\n")[1] for c in log.history()] == ["1", "6", "7", "9"]
    assert verify_log(log, [key.public_key()]).valid


def test_a_log_refuses_another_key_or_origin(tmp_path: Path, key: Ed25519PrivateKey) -> None:
    log = FileLog(tmp_path / "log")
    log.append([entry(0)], key, ORIGIN)
    with pytest.raises(TransparencyLogError, match="not this key's log"):
        log.append([entry(1)], Ed25519PrivateKey.generate(), ORIGIN)
    with pytest.raises(TransparencyLogError, match="not this key's log"):
        log.append([entry(1)], key, "other.example/log")
    with pytest.raises(TransparencyLogError, match="32 bytes"):
        log.append([b"short"], key, ORIGIN)
    assert log.size() == 1


def test_what_an_interrupted_append_left_is_dropped(tmp_path: Path, key: Ed25519PrivateKey) -> None:
    log = FileLog(tmp_path / "log")
    log.append([entry(i) for i in range(5)], key, ORIGIN)
    committed = log.checkpoint()
    # a writer killed after writing entries, nodes and half a history record, before the rename
    for name in ("entries", "level-01", "level-02", "level-03"):
        with (log.path / name).open("ab") as fh:
            fh.write(os.urandom(96))
    with (log.path / "checkpoints").open("ab") as fh:
        fh.write(b"\x00\x00\x01\x00partial")
    assert log.checkpoint() == committed and log.size() == 5
    assert verify_log(log, [key.public_key()]).valid  # readers never look past the checkpoint
    log.append([entry(5)], key, ORIGIN)
    ref = MemoryTree()
    for i in range(6):
        ref.append_hash(leaf_hash(entry(i)))
    assert log.root() == ref.root()
    assert (log.path / "entries").stat().st_size == 6 * 32
    assert [c.split("\n")[1] for c in log.history()] == ["5", "6"]
    assert verify_log(log, [key.public_key()]).valid


def test_a_checkpoint_committed_but_not_in_the_history_is_added(
    tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    log = FileLog(tmp_path / "log")
    log.append([entry(0)], key, ORIGIN)
    log.append([entry(1)], key, ORIGIN)
    # killed between the rename and the history write: drop the last record
    history = (log.path / "checkpoints").read_bytes()
    first_len = int.from_bytes(history[:4], "big")
    (log.path / "checkpoints").write_bytes(history[: 4 + first_len])
    assert verify_log(log, [key.public_key()]).valid
    log.append([entry(2)], key, ORIGIN)
    assert [c.split("\n")[1] for c in log.history()] == ["1", "2", "3"]


def _writer(path: str, pem: bytes, worker: int, count: int, start: Barrier) -> None:
    key = serialization.load_pem_private_key(pem, password=None)
    assert isinstance(key, Ed25519PrivateKey)
    log = FileLog(path)
    start.wait(60)  # both writers are loaded: they append at the same time
    for i in range(count):
        log.append([entry(worker * 10_000 + i)], key, ORIGIN)


def test_two_concurrent_writers_lose_and_duplicate_nothing(
    tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    path = str(tmp_path / "log")
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(2)
    workers = [ctx.Process(target=_writer, args=(path, pem, w, 40, start)) for w in (1, 2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
        assert w.exitcode == 0
    log = FileLog(path)
    got = [log.entry(i) for i in range(log.size())]
    want = {entry(w * 10_000 + i) for w in (1, 2) for i in range(40)}
    assert len(got) == 80 and set(got) == want
    # each writer's entries keep their order
    where: dict[int, list[int]] = {}
    for n in (1, 2):
        mine = [g for g in got if g in {entry(n * 10_000 + i) for i in range(40)}]
        assert mine == [entry(n * 10_000 + i) for i in range(40)]
        where[n] = [got.index(e) for e in mine]
    # and they really wrote at the same time: neither finished before the other began
    assert where[1][0] < where[2][-1] and where[2][0] < where[1][-1], where
    result = verify_log(log, [key.public_key()])
    assert result.valid and result.checkpoints_checked == 80


def test_a_full_disk_mid_append_commits_nothing(
    tmp_path: Path, key: Ed25519PrivateKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    import affidavit.tlog.store as store

    log = FileLog(tmp_path / "log")
    log.append([entry(i) for i in range(3)], key, ORIGIN)
    before = log.checkpoint()
    real_pwrite, calls = os.pwrite, []

    def full(fd: int, data: bytes, offset: int) -> int:
        calls.append(offset)
        if len(calls) == 2:  # the entries went through; the first node level does not
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_pwrite(fd, data, offset)

    monkeypatch.setattr(store.os, "pwrite", full)
    with pytest.raises(TransparencyLogError, match="No space left"):
        log.append([entry(3)], key, ORIGIN)
    monkeypatch.setattr(store.os, "pwrite", real_pwrite)
    assert log.checkpoint() == before
    assert verify_log(log, [key.public_key()]).valid
    log.append([entry(3)], key, ORIGIN)
    assert [log.entry(i) for i in range(4)] == [entry(i) for i in range(4)]
    assert verify_log(log, [key.public_key()]).valid


def test_a_damaged_node_index_is_never_signed_over(tmp_path: Path, key: Ed25519PrivateKey) -> None:
    log = FileLog(tmp_path / "log")
    log.append([entry(i) for i in range(4)], key, ORIGIN)
    before = log.checkpoint()
    (log.path / "level-02").write_bytes(bytes(32))  # the one peak of a tree of 4, zeroed
    with pytest.raises(TransparencyLogError, match="do not give its signed root"):
        log.append([entry(4)], key, ORIGIN)
    assert log.checkpoint() == before
    result = verify_log(log, [key.public_key()])
    assert not result.valid and "stored node 0 of level 2" in result.reasons[0]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=12))
def test_any_sequence_of_batches_stores_the_same_tree_as_memory(batches: list[int]) -> None:
    import tempfile

    key = Ed25519PrivateKey.generate()
    with tempfile.TemporaryDirectory() as tmp:
        log, ref, n = FileLog(Path(tmp) / "log"), MemoryTree(), 0
        for count in batches:
            log.append([entry(n + i) for i in range(count)], key, ORIGIN)
            for i in range(count):
                ref.append_hash(leaf_hash(entry(n + i)))
            n += count
        for level, nodes in enumerate(ref.levels):
            assert [log.node(level, i) for i in range(len(nodes))] == nodes
        for size in range(1, n + 1):
            assert log.root(size) == root_hash(ref, size)
        log.close()
