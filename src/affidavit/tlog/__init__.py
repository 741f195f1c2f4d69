"""The transparency log: every certificate affidavit issues, in an append-only Merkle tree.

``merkle`` holds RFC 9162 hashing and proofs, ``note`` C2SP signed notes and checkpoints,
``store`` the log on disk, ``certificates`` a certificate's entry and its check, ``monitor``
the whole-log check and the witness. See docs/concepts/transparency-log.md.
"""

from affidavit.tlog.base import NodeSource
from affidavit.tlog.certificates import (
    certificate_entry,
    check_consistency,
    check_log_entry,
    default_log_path,
    log_certificate,
    log_origin,
    prove_certificate,
)
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
from affidavit.tlog.monitor import Witness, verify_log
from affidavit.tlog.note import open_checkpoint, sign_checkpoint, verifier_key
from affidavit.tlog.store import FileLog

__all__ = [
    "EMPTY_ROOT",
    "CompactRange",
    "FileLog",
    "MemoryTree",
    "NodeSource",
    "Witness",
    "certificate_entry",
    "check_consistency",
    "check_log_entry",
    "consistency_proof",
    "default_log_path",
    "inclusion_proof",
    "leaf_hash",
    "log_certificate",
    "log_origin",
    "node_hash",
    "open_checkpoint",
    "prove_certificate",
    "root_hash",
    "sign_checkpoint",
    "verifier_key",
    "verify_consistency",
    "verify_inclusion",
    "verify_log",
]
