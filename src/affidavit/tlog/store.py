"""The log on disk: append-only, crash-safe, serialised between processes, fast at 10^6.

A log is a folder (default ``tlog/`` beside the signing key) holding:

``entries``
    the entries, 32 bytes each (a certificate's sha256), in order;
``level-01`` ... ``level-NN``
    the hashes of every complete subtree of ``2**l`` entries, 32 bytes each, so that any proof
    is ``O(log n)`` lookups (level 0, the leaf hashes, is computed from ``entries``);
``checkpoint``
    the latest signed checkpoint: **the commit point**. The log holds exactly the entries it
    counts; bytes past them in the other files belong to an append that never committed;
``checkpoints``
    every checkpoint signed, each as a 4-byte big-endian length and the note, for
    ``affidavit log verify`` to compare with the entries (written after the commit, not
    fsynced: the next append re-adds a committed checkpoint a crash kept out);
``.lock``
    the ``flock`` that serialises writers (readers need none).

An append, under the lock: truncate whatever an interrupted append left past the committed
size, write and ``fsync`` the entries and the new nodes, sign the new checkpoint, write it to a
temporary file, ``fsync``, rename it over ``checkpoint`` and ``fsync`` the folder, then add it to
``checkpoints``. A kill or a full disk at any moment before the rename leaves the previous tree
as it was (the append raises); after it the append has happened and returns, and the next one
finishes the history if it could not be written. Before signing, the stored right edge must
give the committed root, so a damaged node index can never make the log sign a tree that does
not extend its own (the append is refused instead).

Examples:
    >>> import tempfile, pathlib
    >>> from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    >>> key = Ed25519PrivateKey.generate()
    >>> log = FileLog(pathlib.Path(tempfile.mkdtemp()) / "tlog")
    >>> first, cp = log.append([bytes(32), bytes([1]) * 32], key, "example.com/log")
    >>> first, cp.tree_size, log.size()
    (0, 2, 2)
    >>> from affidavit.tlog.merkle import verify_inclusion
    >>> proof = log.inclusion_proof(1, 2)
    >>> verify_inclusion(log.node(0, 1), 1, 2, proof, bytes.fromhex(cp.root_hash))
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from affidavit.core.errors import ProofError, TransparencyLogError
from affidavit.core.locks import exclusive
from affidavit.core.tlog import Checkpoint, ConsistencyProof, InclusionProof
from affidavit.tlog.merkle import (
    HASH_SIZE,
    CompactRange,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    root_hash,
)
from affidavit.tlog.note import MAX_NOTE_BYTES, open_checkpoint, parse_checkpoint, sign_checkpoint

logger = logging.getLogger(__name__)

__all__ = ["FileLog"]

ENTRIES = "entries"
CHECKPOINT = "checkpoint"
HISTORY = "checkpoints"
LOCK = ".lock"
_LEN = struct.Struct(">I")


def _level_name(level: int) -> str:
    return f"level-{level:02d}"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_at(path: Path, offset: int, data: bytes) -> None:
    """Write ``data`` at ``offset``, dropping anything past it, and make it durable."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.ftruncate(fd, offset)
        view = memoryview(data)
        while view:
            written = os.pwrite(fd, view, offset)
            view, offset = view[written:], offset + written
        os.fsync(fd)
    finally:
        os.close(fd)


class FileLog:
    """A transparency log in a folder (see the module docstring for the layout).

    Readers (proofs, entries, checkpoints) see only committed entries and take no lock; writers
    (`append`) are serialised by an exclusive ``flock``.

    Args:
        path: the log folder (created on the first append).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fds: dict[str, int] = {}

    # -- reading ---------------------------------------------------------------------------

    def checkpoint(self) -> Checkpoint | None:
        """The latest checkpoint, unchecked (None for a log with no entry yet).

        Raises:
            TransparencyLogError: the checkpoint file is unreadable or malformed.
        """
        try:
            with (self.path / CHECKPOINT).open("rb") as fh:
                raw = fh.read(MAX_NOTE_BYTES + 1)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise TransparencyLogError(
                f"cannot read the log's checkpoint: {exc.strerror or exc}", source=str(self.path)
            ) from exc
        try:
            return parse_checkpoint(raw.decode("utf-8"))
        except (UnicodeDecodeError, ProofError) as exc:
            raise TransparencyLogError(
                f"the log's checkpoint is damaged: {exc}", source=str(self.path)
            ) from exc

    def size(self) -> int:
        """Number of committed entries."""
        cp = self.checkpoint()
        return 0 if cp is None else cp.tree_size

    def _fd(self, name: str) -> int:
        fd = self._fds.get(name)
        if fd is None:
            try:
                fd = os.open(self.path / name, os.O_RDONLY)
            except OSError as exc:
                raise TransparencyLogError(
                    f"cannot read {name} of the log: {exc.strerror or exc}", source=str(self.path)
                ) from exc
            self._fds[name] = fd
        return fd

    def _read(self, name: str, index: int) -> bytes:
        data = os.pread(self._fd(name), HASH_SIZE, index * HASH_SIZE)
        if len(data) != HASH_SIZE:
            raise TransparencyLogError(
                f"{name} of the log is shorter than its checkpoint says (record {index} missing)",
                source=str(self.path),
            )
        return data

    def entry(self, index: int) -> bytes:
        """Entry ``index`` (its 32 bytes), which must be below `size`."""
        return self._read(ENTRIES, index)

    def node(self, level: int, index: int) -> bytes:
        """See `affidavit.tlog.base.NodeSource`."""
        if level == 0:
            return leaf_hash(self._read(ENTRIES, index))
        return self._read(_level_name(level), index)

    def close(self) -> None:
        """Close the files kept open for reading."""
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def __enter__(self) -> FileLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _sized(self, size: int | None) -> int:
        committed = self.size()
        if size is None:
            return committed
        if not 0 <= size <= committed:
            raise TransparencyLogError(
                f"the log has {committed} entries; there is no tree of size {size}",
                source=str(self.path),
            )
        return size

    def root(self, size: int | None = None) -> bytes:
        """The root hash of the first ``size`` entries (default: all)."""
        return root_hash(self, self._sized(size))

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]:
        """The inclusion proof of entry ``index`` in the tree of ``size`` (default: all)."""
        size = self._sized(size)
        if not 0 <= index < size:
            raise TransparencyLogError(
                f"entry {index} is not in a tree of size {size}", source=str(self.path)
            )
        return inclusion_proof(self, index, size)

    def prove_inclusion(self, index: int, size: int | None = None) -> InclusionProof:
        """`inclusion_proof` as the contract (with the leaf hash)."""
        size = self._sized(size)
        hashes = self.inclusion_proof(index, size)
        return InclusionProof(
            leaf_index=index,
            tree_size=size,
            leaf_hash=self.node(0, index).hex(),
            hashes=tuple(h.hex() for h in hashes),
        )

    def prove_consistency(self, old_size: int, new_size: int | None = None) -> ConsistencyProof:
        """The consistency proof from ``old_size`` to ``new_size`` (default: all)."""
        new_size = self._sized(new_size)
        if not 1 <= old_size <= new_size:
            raise TransparencyLogError(
                f"no consistency proof from size {old_size} to size {new_size} "
                "(the older size must be between 1 and the newer)",
                source=str(self.path),
            )
        hashes = consistency_proof(self, old_size, new_size)
        return ConsistencyProof(
            old_size=old_size, new_size=new_size, hashes=tuple(h.hex() for h in hashes)
        )

    def find(self, entry: bytes, size: int | None = None) -> int | None:
        """The index of ``entry`` among the first ``size`` entries (a linear scan), or None."""
        size = self._sized(size)
        fd = self._fd(ENTRIES)
        block = 1 << 15
        for start in range(0, size, block):
            data = os.pread(fd, min(block, size - start) * HASH_SIZE, start * HASH_SIZE)
            at = data.find(entry)
            while at >= 0:
                if at % HASH_SIZE == 0:
                    return start + at // HASH_SIZE
                at = data.find(entry, at + 1)
        return None

    def history(self) -> Iterator[str]:
        """Every checkpoint in the order it was signed (a torn last record is skipped)."""
        try:
            fh = (self.path / HISTORY).open("rb")
        except FileNotFoundError:
            return
        with fh:
            while True:
                head = fh.read(_LEN.size)
                if len(head) < _LEN.size:
                    return
                (length,) = _LEN.unpack(head)
                if length > MAX_NOTE_BYTES:
                    raise TransparencyLogError(
                        "the checkpoint history is damaged (a record is too long)",
                        source=str(self.path),
                    )
                body = fh.read(length)
                if len(body) < length:
                    return
                yield body.decode("utf-8", "replace")

    # -- writing ---------------------------------------------------------------------------

    def append(
        self, entries: Sequence[bytes], key: Ed25519PrivateKey, origin: str
    ) -> tuple[int, Checkpoint]:
        """Append entries (32 bytes each) and sign the new checkpoint, atomically.

        Args:
            entries: the entries, in order.
            key: the log's signing key.
            origin: the log's origin; it must be the one the log already has.

        Returns:
            The index of the first entry appended and the new checkpoint.

        Raises:
            TransparencyLogError: an entry is not 32 bytes, the log belongs to another origin
                or key, or it cannot be written (nothing is then committed).
        """
        if any(len(e) != HASH_SIZE for e in entries):
            raise TransparencyLogError("every log entry must be 32 bytes", source=str(self.path))
        if not entries:
            raise TransparencyLogError("nothing to append", source=str(self.path))
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            with exclusive(self.path / LOCK):
                return self._append_locked(entries, key, origin)
        except OSError as exc:
            raise TransparencyLogError(
                f"cannot append to the log {self.path}: {exc.strerror or exc}",
                source=str(self.path),
            ) from exc

    def _committed(self, key: Ed25519PrivateKey, origin: str) -> Checkpoint | None:
        current = self.checkpoint()
        if current is None:
            return None
        try:
            open_checkpoint(current.note, [key.public_key()], origin=origin)
        except ProofError as exc:
            raise TransparencyLogError(
                f"the log at {self.path} is not this key's log of {origin!r} ({exc.message}); "
                "a new key or origin needs its own log (tlog.path)",
                source=str(self.path),
            ) from exc
        return current

    def _append_locked(
        self, entries: Sequence[bytes], key: Ed25519PrivateKey, origin: str
    ) -> tuple[int, Checkpoint]:
        current = self._committed(key, origin)
        size = 0 if current is None else current.tree_size
        self._finish_history(current)
        self.close()  # files are truncated and rewritten below: reopen them afterwards
        peaks = CompactRange.from_peaks(size, self._peaks(size))
        if current is not None and peaks.root().hex() != current.root_hash:
            # the new root is computed from the stored right edge: one that does not give the
            # signed root would make the log sign a tree that does not extend its own
            raise TransparencyLogError(
                f"the stored nodes of {self.path} do not give its signed root; nothing appended "
                "(`affidavit log verify` says what differs)",
                source=str(self.path),
            )
        new_nodes: dict[int, list[bytes]] = {}
        for entry in entries:
            for level, _, value in peaks.append(leaf_hash(entry)):
                if level:
                    new_nodes.setdefault(level, []).append(value)
        _write_at(self.path / ENTRIES, size * HASH_SIZE, b"".join(entries))
        new_size = size + len(entries)
        for level in range(1, new_size.bit_length()):
            path, keep = self.path / _level_name(level), (size >> level) * HASH_SIZE
            nodes = new_nodes.get(level)
            if nodes:
                _write_at(path, keep, b"".join(nodes))
            elif path.exists() and path.stat().st_size > keep:
                _write_at(path, keep, b"")  # what a killed append left past the committed nodes
        note = sign_checkpoint(origin, new_size, peaks.root(), key)
        tmp = self.path / f".{CHECKPOINT}.tmp"
        _write_at(tmp, 0, note.encode("utf-8"))
        os.replace(tmp, self.path / CHECKPOINT)
        _fsync_dir(self.path)
        checkpoint = parse_checkpoint(note)
        try:
            self._append_history(note)
        except OSError as exc:
            # committed already: raising would tell the caller that entries now in the log are
            # not (a certificate refused as unlogged, logged twice on a retry); the next append
            # adds this checkpoint to the history, as after a kill
            logger.warning(
                "log %s: size %d committed, its checkpoint not yet in the history: %s",
                self.path,
                new_size,
                exc.strerror or exc,
            )
        logger.debug("log %s: appended %d entries, size %d", self.path, len(entries), new_size)
        return size, checkpoint

    def _peaks(self, size: int) -> list[bytes]:
        """The complete subtrees that make up a tree of ``size``, largest first."""
        peaks, start = [], 0
        for level in range(size.bit_length() - 1, -1, -1):
            if size >> level & 1:
                peaks.append(self.node(level, start >> level))
                start += 1 << level
        return peaks

    def _append_history(self, note: str) -> None:
        # no fsync: the committed checkpoint is durable in CHECKPOINT, and the next append adds
        # it here if a crash lost it; an OS crash can lose only the last few records, which
        # `log verify` then has fewer of to compare
        data = note.encode("utf-8")
        with (self.path / HISTORY).open("ab") as fh:
            fh.write(_LEN.pack(len(data)) + data)

    def _finish_history(self, current: Checkpoint | None) -> None:
        """Drop a torn last record, and add the committed checkpoint if a kill kept it out.

        The usual case (the last record is the committed checkpoint) reads only that record;
        the whole history is read only after an interrupted append.
        """
        path = self.path / HISTORY
        if current is not None:
            data = current.note.encode("utf-8")
            record = _LEN.pack(len(data)) + data
            try:
                with path.open("rb") as fh:
                    end = fh.seek(0, os.SEEK_END)
                    if end >= len(record):
                        fh.seek(end - len(record))
                        if fh.read(len(record)) == record:
                            return
            except FileNotFoundError:
                pass
        good, last = 0, None
        try:
            with path.open("rb") as fh:
                while True:
                    head = fh.read(_LEN.size)
                    if len(head) < _LEN.size:
                        break
                    (length,) = _LEN.unpack(head)
                    body = fh.read(length)
                    if len(body) < length or length > MAX_NOTE_BYTES:
                        break
                    good, last = good + _LEN.size + length, body.decode("utf-8", "replace")
        except FileNotFoundError:
            pass
        if path.exists() and path.stat().st_size != good:
            _write_at(path, good, b"")
        if current is not None and last != current.note:
            self._append_history(current.note)
