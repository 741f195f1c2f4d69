"""Protocols of the retrieval stage: embedders, retrievers and rerankers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from affidavit.core.retrieval import SearchFilters
from affidavit.core.types import Hit

SearchMode = Literal["bm25", "dense", "hybrid"]
SEARCH_MODES: tuple[SearchMode, ...] = ("bm25", "dense", "hybrid")

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors, one row per text, in input order."""

    name: str
    """Identifier recorded in the store (a store refuses vectors from another embedder)."""
    dim: int
    """Vector dimension."""

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts``; returns an array of shape ``(len(texts), dim)``."""
        ...

    def config(self) -> dict[str, Any]:
        """The effective configuration (for certificates)."""
        ...


@runtime_checkable
class Retriever(Protocol):
    """Ranks stored chunks for a query."""

    def search(
        self,
        query: str,
        k: int = 10,
        mode: SearchMode = "hybrid",
        filters: SearchFilters | None = None,
    ) -> list[Hit]:
        """Return at most ``k`` hits, best first, ranks 1..n."""
        ...


@runtime_checkable
class Reranker(Protocol):
    """Reorders hits for a query (a cross-encoder, or the identity)."""

    name: str

    def rerank(self, query: str, hits: Sequence[Hit], k: int) -> list[Hit]:
        """Return at most ``k`` hits in the new order, ranks renumbered from 1."""
        ...
