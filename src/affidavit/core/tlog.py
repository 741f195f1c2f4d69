"""Transparency-log contracts: checkpoints, proofs, a certificate's log entry, check results.

Hashes are lowercase hex (as every sha256 in a certificate); a checkpoint travels as the exact
signed-note text (C2SP ``tlog-checkpoint``), whose root hash is base64 by that format.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from affidavit.core.types import Frozen

_HASH = r"^[0-9a-f]{64}$"


class Checkpoint(Frozen):
    """A signed tree head: a log's origin, size and root hash, in a C2SP signed note.

    Only ``note`` is signed; the other fields are read from it (and checked against it by
    ``affidavit.tlog.note.open_checkpoint``).
    """

    origin: str = Field(description="The log's origin line: a unique name for the log.")
    tree_size: int = Field(ge=0, description="Number of entries the root hash covers.")
    root_hash: str = Field(pattern=_HASH, description="RFC 9162 root hash of those entries, hex.")
    note: str = Field(
        description="The checkpoint as a C2SP signed note: origin, size, base64 root, a blank "
        "line and one signature line per signer."
    )


class InclusionProof(Frozen):
    """An RFC 9162 inclusion proof (audit path) of one leaf in a tree of a given size."""

    kind: Literal["inclusion"] = Field(default="inclusion", description="The proof's kind.")
    leaf_index: int = Field(ge=0, description="Index of the leaf in the log (0-based).")
    tree_size: int = Field(ge=1, description="Size of the tree the proof leads to.")
    leaf_hash: str = Field(pattern=_HASH, description="RFC 9162 leaf hash (0x00 prefix), hex.")
    hashes: tuple[str, ...] = Field(
        description="The audit path, leaf side first; at most log2(tree_size) + 1 hashes."
    )


class ConsistencyProof(Frozen):
    """An RFC 9162 consistency proof: the tree of ``old_size`` is a prefix of ``new_size``'s."""

    kind: Literal["consistency"] = Field(default="consistency", description="The proof's kind.")
    old_size: int = Field(ge=1, description="Size of the older tree.")
    new_size: int = Field(ge=1, description="Size of the newer tree.")
    hashes: tuple[str, ...] = Field(description="The proof's hashes, as RFC 9162 orders them.")


class LogEntry(Frozen):
    """Where a certificate sits in a transparency log, with what proves it offline.

    Attached to a certificate outside its signed payload (the certificate's bytes are what the
    log holds, so they cannot include their own position). Anyone holding the log's public key
    checks it: the checkpoint's signature, then the inclusion proof against its root.
    """

    entry: str = Field(
        pattern=_HASH,
        description="sha256 of the certificate's canonical JSON without this entry: the leaf's "
        "data (its leaf hash is sha256(0x00 || entry)).",
    )
    inclusion: InclusionProof = Field(description="The certificate's path to the checkpoint.")
    checkpoint: Checkpoint = Field(description="The signed tree head the proof leads to.")


class LogEntryRecord(Frozen):
    """One entry of a log, as ``GET /v1/log/entries/{index}`` returns it."""

    index: int = Field(ge=0, description="The entry's index.")
    entry: str = Field(pattern=_HASH, description="The entry: sha256 of a certificate, hex.")
    leaf_hash: str = Field(pattern=_HASH, description="Its RFC 9162 leaf hash, hex.")


class LogVerification(Frozen):
    """The outcome of recomputing a log from its entries (``affidavit log verify``)."""

    valid: bool = Field(description="True only if every stored node and checkpoint agrees.")
    tree_size: int = Field(ge=0, description="Entries in the log (per its latest checkpoint).")
    root_hash: str | None = Field(default=None, description="The recomputed root hash, hex.")
    checkpoints_checked: int = Field(default=0, ge=0, description="Stored checkpoints compared.")
    reasons: tuple[str, ...] = Field(
        default=(), description="The first divergence and what follows from it (empty if valid)."
    )


class WitnessResult(Frozen):
    """What a witness made of a new checkpoint (``affidavit log witness``)."""

    accepted: bool = Field(description="True if the checkpoint extends the last one seen.")
    origin: str = Field(description="The log's origin.")
    previous_size: int | None = Field(
        default=None, description="Size of the last checkpoint seen before (None: first sight)."
    )
    tree_size: int = Field(ge=0, description="Size of the checkpoint presented.")
    reason: str = Field(description="Why it was accepted or refused, in plain words.")
    kind: Literal["first-sight", "consistent", "unchanged", "fork", "rollback", "invalid"] = Field(
        description="The verdict's kind: refused ones are fork, rollback and invalid (a bad "
        "signature or proof)."
    )
