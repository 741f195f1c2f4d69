"""Build the configured store."""

from __future__ import annotations

from pathlib import Path

from affidavit.core.settings import StoreSettings
from affidavit.store.base import Store


def make_store(
    settings: StoreSettings, *, path: Path | None = None, dim: int = 384, read_only: bool = False
) -> Store:
    """Open the store the settings name (``path`` overrides ``settings.path``).

    ``read_only``: the local store is opened to read (nothing created or written, so a store in
    a read-only folder can be searched); the Qdrant backend ignores it.

    Examples:
        >>> from affidavit.core.settings import StoreSettings
        >>> make_store(StoreSettings(path=tmp_path)).count()  # doctest: +SKIP
        (0, 0)
    """
    if settings.backend == "qdrant":
        from affidavit.store.qdrant import QdrantStore

        key = settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None
        qdrant: Store = QdrantStore(
            url=settings.qdrant_url,
            path=None if settings.qdrant_url else (path or settings.path) / "qdrant",
            collection=settings.collection,
            api_key=key,
            dim=dim,
        )
        return qdrant
    from affidavit.store.local import LocalStore

    return LocalStore(path or settings.path, read_only=read_only)
