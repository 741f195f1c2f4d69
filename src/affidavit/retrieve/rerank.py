"""Rerankers. The identity keeps the order; a trained cross-encoder plugs in behind the Protocol."""

from __future__ import annotations

from collections.abc import Sequence

from affidavit.core.types import Hit


class IdentityReranker:
    """Keeps the retriever's order (and truncates to ``k``).

    Examples:
        >>> IdentityReranker().rerank("q", [], 5)
        []
    """

    name = "identity"

    def rerank(self, query: str, hits: Sequence[Hit], k: int) -> list[Hit]:
        """Return the first ``k`` hits, ranks renumbered."""
        del query
        return [h.model_copy(update={"rank": i}) for i, h in enumerate(hits[:k], start=1)]
