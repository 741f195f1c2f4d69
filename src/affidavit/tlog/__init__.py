"""The transparency log: every certificate affidavit issues, in an append-only Merkle tree.

``merkle`` holds RFC 9162 hashing and proofs.
"""

from affidavit.tlog.base import NodeSource
from affidavit.tlog.merkle import (
    EMPTY_ROOT,
    CompactRange,
    MemoryTree,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    node_hash,
    root_hash,
    verify_consistency,
    verify_inclusion,
)

__all__ = [
    "EMPTY_ROOT",
    "CompactRange",
    "MemoryTree",
    "NodeSource",
    "consistency_proof",
    "inclusion_proof",
    "leaf_hash",
    "node_hash",
    "root_hash",
    "verify_consistency",
    "verify_inclusion",
]
