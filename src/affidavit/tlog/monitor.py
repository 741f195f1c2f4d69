"""Watching a log: recompute it from its entries (``log verify``), and witness its checkpoints.

`verify_log` is what the log's keeper (or anyone with a copy of its folder) runs: it
streams every entry through a compact range, compares every stored node and every checkpoint
ever signed, and reports the first divergence. It catches an entry deleted, reordered or
rewritten behind the checkpoints' back, but not a keeper who rewrites the entries, the nodes and
the whole history and re-signs it all: only someone who kept an earlier checkpoint can. That
is the `Witness`: it keeps the last checkpoint it saw of each log and accepts a new one
only with a proof that the new tree extends the old, signed by the same key.

A log is one key's: the one its origin names (the default ``affidavit/<key id>``), else the
one that signed its first checkpoint. Both checks refuse a checkpoint under a log's origin that
only another trusted key (another log's) signed.

Examples:
    >>> import tempfile, pathlib
    >>> from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    >>> key = Ed25519PrivateKey.generate()
    >>> log = FileLog(pathlib.Path(tempfile.mkdtemp()) / "log")
    >>> _ = log.append([bytes(32)], key, "example.com/log")
    >>> verify_log(log, [key.public_key()]).valid
    True
    >>> witness = Witness(pathlib.Path(tempfile.mkdtemp()), [key.public_key()])
    >>> witness.observe(log.checkpoint().note).kind
    'first-sight'
    >>> _ = log.append([bytes([1]) * 32], key, "example.com/log")
    >>> witness.observe(log.checkpoint().note, log=log).kind
    'consistent'
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from affidavit.certify.keys import key_id
from affidavit.core.errors import InputError, ProofError, TransparencyLogError
from affidavit.core.limits import read_bounded
from affidavit.core.locks import exclusive
from affidavit.core.tlog import Checkpoint, ConsistencyProof, LogVerification, WitnessResult
from affidavit.tlog.certificates import check_consistency, origin_key_id
from affidavit.tlog.merkle import EMPTY_ROOT, HASH_SIZE, CompactRange, leaf_hash
from affidavit.tlog.note import MAX_NOTE_BYTES, note_signers, open_checkpoint, parse_checkpoint
from affidavit.tlog.store import ENTRIES, FileLog

__all__ = ["Witness", "open_log_checkpoint", "verify_log"]

_BLOCK = 1 << 14  # entries read at a time
_KEY_ID = re.compile(r"[0-9a-f]{16}")
_MAX_KEYS_BYTES = 1 << 12


def _signer_ids(note: str, keys: list[Ed25519PublicKey]) -> set[str]:
    """The ids of the trusted keys that signed a note (which already opened with ``keys``)."""
    return {key_id(k) for k in note_signers(note, keys)}


def _not_signed_by(origin: str, owners: set[str], signed: set[str], whose: str) -> str | None:
    """Why a checkpoint of ``origin`` signed by ``signed`` is not its log's (``owners``), or
    None. Another trusted key, another log's, does not speak for this one."""
    missing = sorted(owners - signed)
    if not missing:
        return None
    return (
        f"the checkpoint of log {origin!r} is not signed by its key ({', '.join(missing)}, "
        f"{whose}); another trusted key does not speak for this log"
    )


def open_log_checkpoint(note: str, log: FileLog, keys: Iterable[Ed25519PublicKey]) -> Checkpoint:
    """Check that ``note`` is a checkpoint of ``log``: of its origin, and signed by its key.

    The log's key is the one its origin names (``affidavit/<key id>``), else the trusted key
    that signed its first checkpoint, as `verify_log` and the `Witness` take it; a checkpoint
    signed by another trusted key (another log's, or one trusted for something else) is not
    this log's. With none of ``keys`` the log's, nothing passes.

    Raises:
        ProofError: malformed, a bad signature, another log's origin, or not signed by the
            log's key (the message says which).
        TransparencyLogError: the log's own checkpoint cannot be read.
    """
    trusted = list(keys)
    latest = log.checkpoint()
    if latest is None:
        raise TransparencyLogError("the log is empty", source=str(log.path))
    named = origin_key_id(latest.origin)
    if named is not None:
        owners, whose = {named}, "which its origin names"
    else:
        # the first signed (a log whose history is not written yet: its one checkpoint); the
        # generator, dropped at once, closes the history file
        first = next(iter(log.history()), latest.note)
        try:
            open_checkpoint(first, trusted, origin=latest.origin)
            owners, whose = _signer_ids(first, trusted), "which signed its checkpoint #1"
        except ProofError as exc:
            raise ProofError(
                f"the key of log {latest.origin!r} is not among the trusted keys: its first "
                f"checkpoint does not verify ({exc.message})",
                source=str(log.path),
            ) from None
    checkpoint = open_checkpoint(note, trusted, origin=latest.origin)
    foreign = _not_signed_by(checkpoint.origin, owners, _signer_ids(note, trusted), whose)
    if foreign is not None:
        raise ProofError(foreign, source=str(log.path))
    return checkpoint


def _signed_history(
    log: FileLog, latest: Checkpoint, keys: list[Ed25519PublicKey]
) -> tuple[list[Checkpoint], str | None]:
    """Every checkpoint signed, checked in order: signature, no rollback, no second root for a
    size. Returns them (up to the first that fails) and why that one failed."""
    notes = list(log.history())
    if not notes or notes[-1] != latest.note:
        notes.append(latest.note)  # a kill kept it out of the history: it is checked anyway
    out: list[Checkpoint] = []
    roots: dict[int, str] = {}
    # one key signs a log: the one its origin names, else the one that signed its first
    # checkpoint; a checkpoint only another trusted key signed is not this log's
    named = origin_key_id(latest.origin)
    owners: set[str] | None = {named} if named else None
    whose = "which its origin names" if named else "which signed checkpoint #1"
    for i, note in enumerate(notes, start=1):
        try:
            cp = open_checkpoint(note, keys, origin=latest.origin)
            signed = _signer_ids(note, keys)
        except ProofError as exc:
            return out, f"checkpoint #{i}: {exc.message}"
        owners = signed if owners is None else owners
        foreign = _not_signed_by(cp.origin, owners, signed, whose)
        if foreign is not None:
            return out, f"checkpoint #{i}: {foreign}"
        if out and cp.tree_size < out[-1].tree_size:
            return out, (
                f"checkpoint #{i}: size {cp.tree_size} signed after size {out[-1].tree_size} "
                "(the log was rolled back)"
            )
        if roots.get(cp.tree_size, cp.root_hash) != cp.root_hash:
            return out, f"checkpoint #{i}: a second signed root for size {cp.tree_size} (a fork)"
        roots[cp.tree_size] = cp.root_hash
        out.append(cp)
    return out, None


def _mismatch(size: int, matched: int) -> str:
    where = f"entry {matched}" if size - matched == 1 else f"entries {matched} to {size - 1}"
    still = f" (the checkpoint of size {matched} still matches)" if matched else ""
    return (
        f"the checkpoint of size {size} does not match the entries: {where} changed, removed "
        f"or reordered since it was signed{still}"
    )


def _replay(
    log: FileLog, size: int, checkpoints: list[Checkpoint]
) -> tuple[CompactRange, dict[int, list[bytes]], int, str | None]:
    """Stream the entries through a compact range, comparing each checkpoint's root when its
    size is reached. Returns the range, every interior node made (by level), how many
    checkpoints matched, and the first mismatch."""
    compact = CompactRange()
    nodes: dict[int, list[bytes]] = {}
    sizes = sorted({cp.tree_size: cp.root_hash for cp in checkpoints}.items())
    matched, last_good = 0, 0
    if sizes and sizes[0][0] == 0:
        # the empty tree (signed before any entry) is compared here: no append reaches size 0,
        # and left waiting it would keep every later checkpoint from being compared at all
        if sizes[0][1] != EMPTY_ROOT.hex():
            return compact, nodes, 0, "the checkpoint of size 0 does not sign the empty tree"
        matched = 1
    with (log.path / ENTRIES).open("rb") as fh:
        while compact.size < size:
            block = fh.read(min(_BLOCK, size - compact.size) * HASH_SIZE)
            if not block:
                break  # the entries shrank while being read: what is left is never compared
            for at in range(0, len(block), HASH_SIZE):
                for level, _, value in compact.append(leaf_hash(block[at : at + HASH_SIZE])):
                    if level:
                        nodes.setdefault(level, []).append(value)
                while matched < len(sizes) and sizes[matched][0] == compact.size:
                    if compact.root().hex() != sizes[matched][1]:
                        return compact, nodes, matched, _mismatch(compact.size, last_good)
                    last_good = compact.size
                    matched += 1
    return compact, nodes, matched, None


def _stored_node_mismatch(log: FileLog, nodes: dict[int, list[bytes]]) -> str | None:
    """The first stored interior node that differs from the one recomputed."""
    for level, made in sorted(nodes.items()):
        try:
            with (log.path / f"level-{level:02d}").open("rb") as fh:
                stored = fh.read(len(made) * HASH_SIZE)
        except FileNotFoundError:
            stored = b""
        for index, node in enumerate(made):
            if stored[index * HASH_SIZE : (index + 1) * HASH_SIZE] != node:
                return (
                    f"stored node {index} of level {level} does not match the entries "
                    "(proofs built from it would be wrong)"
                )
    return None


def verify_log(log: FileLog, keys: Iterable[Ed25519PublicKey]) -> LogVerification:
    """Recompute a log from its entries and compare every stored node and checkpoint.

    Reads the whole log once (``O(n)`` hashes) and checks every checkpoint's signature, by the
    log's key (see the module); the first divergence is reported.
    """
    try:
        latest = log.checkpoint()
    except TransparencyLogError as exc:
        return LogVerification(valid=False, tree_size=0, reasons=(exc.message,))
    if latest is None:
        return LogVerification(valid=True, tree_size=0)
    size = latest.tree_size
    checkpoints, why = _signed_history(log, latest, list(keys))
    if why is not None:
        return LogVerification(
            valid=False, tree_size=size, checkpoints_checked=len(checkpoints), reasons=(why,)
        )
    entries = log.path / ENTRIES
    held = entries.stat().st_size // HASH_SIZE if entries.exists() else 0
    if held < size:
        why = f"the log holds {held} entries but its latest checkpoint signs {size} (removed)"
        return LogVerification(valid=False, tree_size=size, reasons=(why,))
    compact, nodes, matched, why = _replay(log, size, checkpoints)
    unmatched = len({cp.tree_size for cp in checkpoints}) - matched
    if why is None and unmatched:
        # fail closed: a signed checkpoint that was never compared is not one that agrees
        why = f"{unmatched} signed checkpoint size(s) were never compared with the entries"
    if why is None:
        why = _stored_node_mismatch(log, nodes)
    return LogVerification(
        valid=why is None,
        tree_size=size,
        root_hash=compact.root().hex() if why is None else None,
        checkpoints_checked=matched,
        reasons=(why,) if why else (),
    )


def _read_state(path: Path, limit: int) -> bytes | None:
    """A witness state file, at most ``limit`` bytes (None: there is none yet).

    Raises:
        TransparencyLogError: it is larger than ``limit``.
        OSError: it cannot be read.
    """
    try:
        with path.open("rb") as fh:
            return read_bounded(fh, limit, f"witness state {path}")
    except FileNotFoundError:
        return None
    except InputError as exc:
        raise TransparencyLogError(exc.message, source=str(path)) from None


class Witness:
    """Keeps the last checkpoint seen of each log and refuses any that does not extend it.

    A log is one key's: the one its origin names (``affidavit/<key id>``), else the one that
    signed the first checkpoint seen of it. A later checkpoint of that origin must carry that
    key's signature; another trusted key's (another log's) neither advances the state nor raises
    a fork alarm. The key ids are kept beside the checkpoint; a state folder written before they
    were (the checkpoint alone) takes the trusted keys that signed that checkpoint.

    Args:
        state: folder of the last checkpoints, one file per origin (created when needed), and
            of the keys of each log.
        keys: the log keys trusted; a checkpoint signed by none of them is refused.
    """

    def __init__(self, state: Path, keys: Iterable[Ed25519PublicKey]) -> None:
        self.state = Path(state)
        self.keys = list(keys)

    def _path(self, origin: str) -> Path:
        name = hashlib.sha256(origin.encode("utf-8")).hexdigest()[:32]
        return self.state / f"{name}.checkpoint"

    def _keys_path(self, origin: str) -> Path:
        return self._path(origin).with_suffix(".keys")

    def last(self, origin: str) -> Checkpoint | None:
        """The last checkpoint accepted for ``origin`` (None before the first).

        Raises:
            TransparencyLogError: its state file is damaged: larger than a note may be, not
                UTF-8, or not a checkpoint (never taken for "none seen yet", which would let
                any checkpoint through as a first sight).
            OSError: the state file cannot be read.
        """
        path = self._path(origin)
        raw = _read_state(path, MAX_NOTE_BYTES)
        if raw is None:
            return None
        damaged = f"witness state {path} is damaged"
        advice = "restore it from a backup (removed, the next checkpoint is taken as a first sight)"
        try:
            return parse_checkpoint(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise TransparencyLogError(
                f"{damaged}: not UTF-8 text; {advice}", source=str(path)
            ) from None
        except ProofError as exc:
            raise TransparencyLogError(
                f"{damaged}: {exc.message}; {advice}", source=str(path)
            ) from None

    def log_keys(self, origin: str) -> set[str] | None:
        """The ids of the keys recorded as ``origin``'s (None: none recorded, an older state).

        Raises:
            TransparencyLogError: the keys file is damaged (never taken for "none recorded").
            OSError: it cannot be read.
        """
        path = self._keys_path(origin)
        raw = _read_state(path, _MAX_KEYS_BYTES)
        if raw is None:
            return None
        ids = set(raw.decode("ascii", "replace").split())
        if not ids or not all(_KEY_ID.fullmatch(i) for i in ids):
            raise TransparencyLogError(
                f"witness state {path} is damaged: not key ids; restore it from a backup",
                source=str(path),
            )
        return ids

    def _owners(self, old: Checkpoint) -> tuple[set[str], str]:
        """The ids of the log's key(s), and whose they are (for a refusal's reason)."""
        named = origin_key_id(old.origin)
        if named is not None:
            return {named}, "which its origin names"
        recorded = self.log_keys(old.origin)
        if recorded is not None:
            return recorded, "which signed the first checkpoint seen"
        # an older state: the checkpoint alone; its log's key is the one that signed it
        try:
            owners = _signer_ids(old.note, self.keys)
        except ProofError:
            return set(), "none of the trusted keys signs the last checkpoint seen"
        self._write(self._keys_path(old.origin), "".join(f"{i}\n" for i in sorted(owners)))
        return owners, "which signed the last checkpoint seen"

    def observe(
        self,
        note: str,
        proof: ConsistencyProof | None = None,
        *,
        log: FileLog | None = None,
    ) -> WitnessResult:
        """Check a new checkpoint against the last one seen; keep it if it extends it.

        Two witness runs on one state folder take turns (a file lock), so neither judges against
        a checkpoint the other is replacing.

        Args:
            note: the new signed checkpoint.
            proof: the consistency proof from the last size seen to the new one.
            log: a log to build that proof from when ``proof`` is None.
        """
        self.state.mkdir(parents=True, exist_ok=True)
        with exclusive(self.state / ".lock"):
            return self._observe(note, proof, log)

    def _observe(
        self, note: str, proof: ConsistencyProof | None, log: FileLog | None
    ) -> WitnessResult:
        try:
            new = open_checkpoint(note, self.keys)
            signed = _signer_ids(note, self.keys)
        except ProofError as exc:
            origin = note.split("\n", 1)[0][:200]
            return WitnessResult(
                accepted=False,
                origin=origin,
                tree_size=0,
                kind="invalid",
                reason=f"the checkpoint does not verify: {exc.message}",
            )
        old = self.last(new.origin)
        if old is None:
            named = origin_key_id(new.origin)
            owners = {named} if named else signed
            foreign = _not_signed_by(new.origin, owners, signed, "which its origin names")
            if foreign is not None:
                return WitnessResult(
                    accepted=False,
                    origin=new.origin,
                    tree_size=new.tree_size,
                    kind="invalid",
                    reason=foreign,
                )
            self._keep(new, owners)
            return WitnessResult(
                accepted=True,
                origin=new.origin,
                tree_size=new.tree_size,
                kind="first-sight",
                reason=f"first checkpoint seen of this log (size {new.tree_size}), kept",
            )
        seen = {"origin": new.origin, "previous_size": old.tree_size, "tree_size": new.tree_size}
        owners, whose = self._owners(old)
        if not owners:
            reason = (
                f"{whose} of log {new.origin!r}: trust its key again, or remove "
                f"{self._path(new.origin)} to start over"
            )
            return WitnessResult(accepted=False, kind="invalid", reason=reason, **seen)
        foreign = _not_signed_by(new.origin, owners, signed, whose)
        if foreign is not None:
            return WitnessResult(accepted=False, kind="invalid", reason=foreign, **seen)
        if proof is None and log is not None and 0 < old.tree_size < new.tree_size:
            try:
                proof = log.prove_consistency(old.tree_size, new.tree_size)
            except TransparencyLogError as exc:
                reason = f"the log cannot prove it extends size {old.tree_size}: {exc.message}"
                return WitnessResult(accepted=False, kind="invalid", reason=reason, **seen)
        refused = check_consistency(old, new, proof)
        if refused is not None:
            return WitnessResult(accepted=False, kind=refused[0], reason=refused[1], **seen)
        if new.tree_size == old.tree_size:
            reason = f"same tree as last seen (size {new.tree_size})"
            return WitnessResult(accepted=True, kind="unchanged", reason=reason, **seen)
        self._keep(new)
        reason = f"the tree of size {new.tree_size} extends the one of size {old.tree_size}"
        return WitnessResult(accepted=True, kind="consistent", reason=reason, **seen)

    def _keep(self, checkpoint: Checkpoint, owners: set[str] | None = None) -> None:
        """Keep ``checkpoint`` as the last seen of its log, and on a first sight ``owners``,
        its log's key ids (written first: a kill between the two leaves no checkpoint, so the
        next one is a first sight again and the keys are written anew)."""
        if owners is not None:
            keys = "".join(f"{i}\n" for i in sorted(owners))
            self._write(self._keys_path(checkpoint.origin), keys)
        self._write(self._path(checkpoint.origin), checkpoint.note)

    @staticmethod
    def _write(path: Path, text: str) -> None:
        tmp = path.with_name(f".{path.name}.tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
