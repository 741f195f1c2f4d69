"""A deterministic fake embedder for tests: hashed bag of words, no model, no network.

Texts that share words get similar vectors, so dense retrieval behaves sensibly in tests.

Example:
    >>> emb = FakeEmbedder(dim=64)
    >>> v = emb.embed(["red apple", "red apple"])
    >>> bool((v[0] == v[1]).all())
    True
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from affidavit.retrieve.base import Vectors
from affidavit.retrieve.embedders import l2_normalise

_WORD = re.compile(r"\w+")


class FakeEmbedder:
    """Hashes each lower-cased word to a random-sign direction and sums them."""

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.name = f"fake-hash-{dim}"
        self.calls = 0

    def config(self) -> dict[str, Any]:
        """The effective configuration."""
        return {"kind": "fake", "dim": self.dim}

    def _word(self, word: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
        return np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One normalised vector per text."""
        self.calls += 1
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in _WORD.findall(t.lower()):
                out[i] += self._word(w)
        return l2_normalise(out)
