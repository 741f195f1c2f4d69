"""The one thing proofs need from a tree: the hash of a complete, aligned subtree.

A Merkle tree of ``size`` leaves (RFC 9162, section 2.1) is stored as levels: level 0 holds the
leaf hashes, level ``l`` the hashes of the complete subtrees of ``2**l`` leaves that start at a
multiple of ``2**l``. Every subtree an inclusion or consistency proof names is either such a node
or a right-edge subtree built from at most ``log2(size)`` of them, so a store that answers
`NodeSource.node` in constant time builds any proof in ``O(log n)`` lookups.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class NodeSource(Protocol):
    """A tree that can answer for its complete, aligned subtrees."""

    def node(self, level: int, index: int) -> bytes:
        """Hash of the complete subtree of leaves ``[index * 2**level, (index + 1) * 2**level)``.

        The caller asks only for subtrees that lie within the tree's size.
        """
        ...
