"""A deterministic fake embedder for tests: hashed bag of words, no model, no network.

Texts that share words get similar vectors, so dense retrieval behaves sensibly in tests. The
implementation is `affidavit.retrieve.embedders.HashEmbedder` (the ``fake`` embed
backend); this module only names it for tests, so the import goes one way: testing imports the
library, never the reverse.

Examples:
    >>> emb = FakeEmbedder(dim=64)
    >>> v = emb.embed(["red apple", "red apple"])
    >>> bool((v[0] == v[1]).all())
    True
"""

from __future__ import annotations

from affidavit.retrieve.embedders import HashEmbedder

#: Hashes each lower-cased word to a random-sign direction and sums them (``calls`` counts
#: ``embed`` calls); the very class the ``fake`` backend builds.
FakeEmbedder = HashEmbedder


__all__ = ["FakeEmbedder"]
