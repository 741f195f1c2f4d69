"""An offline "web": a second local affidavit store searched as a fallback corpus.

When the user's store does not answer, CRAG looks elsewhere; without network, elsewhere is a
second store (a reference corpus, an encyclopaedia dump...). Results come with their text, so no
fetch is needed.

Examples:
    >>> fb = StoreFallbackSearch.from_settings(settings)  # doctest: +SKIP
    >>> fb.search("eiffel tower height", max_results=3)  # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from affidavit.core.correction import WebResult
from affidavit.core.errors import AffidavitError, ConfigError, WebSearchError

if TYPE_CHECKING:
    from affidavit.core.settings import Settings
    from affidavit.retrieve.base import Retriever


class StoreFallbackSearch:
    """A `WebSearch` over any `Retriever` (normally a second local store).

    Args:
        retriever: the fallback corpus' retriever.
        mode: ``bm25``, ``dense`` or ``hybrid`` ranking.
        label: where the corpus is (recorded as the provider detail).
    """

    name = "store"

    def __init__(
        self,
        retriever: Retriever,
        *,
        mode: Literal["bm25", "dense", "hybrid"] = "hybrid",
        label: str = "",
    ) -> None:
        self.retriever = retriever
        self.mode = mode
        self.label = label

    @classmethod
    def from_settings(cls, settings: Settings, path: Path | None = None) -> StoreFallbackSearch:
        """Open ``path`` (default ``settings.correct.fallback_store``) with the store and
        embedder the settings name.

        Raises:
            ConfigError: no fallback store is configured or the folder does not exist.
        """
        from affidavit.retrieve.embedders import make_embedder
        from affidavit.retrieve.retriever import StoreRetriever
        from affidavit.store.factory import make_store

        where = path or settings.correct.fallback_store
        if where is None:
            raise ConfigError("correct.fallback_store is not set", stage="correct")
        if not Path(where).is_dir():
            raise ConfigError(f"fallback store {where} does not exist", source=str(where))
        store = make_store(settings.store, path=Path(where))
        embedder = make_embedder(settings.embed)
        retriever = StoreRetriever.from_settings(store, embedder, settings.retrieve)
        return cls(retriever, mode=settings.retrieve.mode, label=str(where))

    def search(self, query: str, *, max_results: int) -> list[WebResult]:
        """Search the fallback corpus; raise ``WebSearchError`` when it fails."""
        try:
            hits = self.retriever.search(query, k=max_results, mode=self.mode)
        except AffidavitError as exc:
            raise WebSearchError(
                f"fallback store search failed: {exc.message}", source=self.label
            ) from exc
        out = []
        for h in hits[:max_results]:
            c = h.chunk
            url = c.url or (f"store:{c.doc_id}#{c.id}" if c.doc_id else f"store:{c.id}")
            out.append(
                WebResult(
                    url=url,
                    title=c.title or "",
                    snippet=c.text[:300],
                    content=c.text,
                    provider=self.name,
                    rank=h.rank,
                    provider_score=h.score,
                )
            )
        return out
