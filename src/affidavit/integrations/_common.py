"""What the framework integrations share: opening the store, chunks from foreign documents,
and the answer an enforcement mode lets through.

Examples:
    >>> shown_answer(_report("guardrail", "[withheld: not supported by the sources]"), "x")
    '[withheld: not supported by the sources]'
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, get_args

from pydantic import ValidationError

from affidavit.audit.auditor import Auditor, ConfigLike
from affidavit.core.errors import ConfigError
from affidavit.core.report import AuditReport
from affidavit.core.retrieval import SearchFilters
from affidavit.core.settings import Granularity, Settings, load_settings
from affidavit.core.types import Chunk, Hit
from affidavit.retrieve.base import SEARCH_MODES, SearchMode

GRANULARITIES: tuple[Granularity, ...] = get_args(Granularity)

# metadata keys a framework document may carry its source URL under, in order of preference
URL_KEYS = ("url", "source_url", "source", "link", "file_path")


class StoreSearch:
    """Searches the affidavit store lazily (opened on first use, reused, thread-safe).

    Args:
        settings: the effective settings (store backend and path, retrieve mode, embedder).
        store_path: the store folder (default ``settings.store.path``).
        mode: bm25 / dense / hybrid (default ``settings.retrieve.mode``).
        granularity: what hybrid search fuses and returns: passage / document / chunk (default
            ``settings.retrieve.granularity``; see `affidavit.retrieve.retriever`).

    Raises:
        ConfigError: an unknown mode or granularity.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        store_path: Path | str | None = None,
        mode: SearchMode | None = None,
        granularity: Granularity | None = None,
    ) -> None:
        self.settings = settings or load_settings()
        self.store_path = Path(store_path) if store_path is not None else None
        self.mode: SearchMode = mode or self.settings.retrieve.mode
        if self.mode not in SEARCH_MODES:
            raise ConfigError(f"unknown mode {self.mode!r}; valid: {', '.join(SEARCH_MODES)}")
        self.granularity: Granularity = granularity or self.settings.retrieve.granularity
        if self.granularity not in GRANULARITIES:
            raise ConfigError(
                f"unknown granularity {self.granularity!r}; valid: {', '.join(GRANULARITIES)}"
            )
        self._lock = threading.Lock()
        self._store: Any = None
        self._retrievers: dict[bool, Any] = {}

    @property
    def path(self) -> Path:
        """The store folder."""
        return self.store_path or self.settings.store.path

    def store(self) -> Any:
        """The opened store.

        Raises:
            ConfigError: a local store that does not exist yet.
            StoreError: the store cannot be opened.
        """
        from affidavit.store.factory import make_store

        with self._lock:
            if self._store is None:
                s = self.settings.store
                if s.backend == "local" and not (self.path / "store.sqlite").exists():
                    raise ConfigError(
                        f"no store at {self.path} (run `affidavit ingest PATH` first)"
                    )
                self._store = make_store(s, path=self.path)
            return self._store

    def retriever(self, mode: SearchMode | None = None) -> Any:
        """The `StoreRetriever` over the store.

        BM25 needs no query embedder, so a BM25 search never loads the embedding model.
        """
        from affidavit.retrieve.retriever import StoreRetriever

        dense = (mode or self.mode) != "bm25"
        store = self.store()
        with self._lock:
            if self._retrievers.get(dense) is None:
                embedder = None
                if dense:
                    from affidavit.retrieve.embedders import make_embedder

                    embedder = make_embedder(self.settings.embed)
                retrieve = self.settings.retrieve.model_copy(
                    update={"granularity": self.granularity}
                )
                self._retrievers[dense] = StoreRetriever.from_settings(store, embedder, retrieve)
            return self._retrievers[dense]

    def search(
        self,
        query: str,
        k: int = 5,
        mode: SearchMode | None = None,
        filters: SearchFilters | None = None,
    ) -> list[Hit]:
        """The top ``k`` hits for ``query`` (within ``filters``, applied before ranking)."""
        m = mode or self.mode
        if m not in SEARCH_MODES:
            raise ConfigError(f"unknown mode {m!r}; valid: {', '.join(SEARCH_MODES)}")
        hits: list[Hit] = self.retriever(m).search(query, k=k, mode=m, filters=filters)
        return hits

    def close(self) -> None:
        """Close the store (it reopens on the next use)."""
        with self._lock:
            if self._store is not None:
                self._store.close()
            self._store = None
            self._retrievers = {}


def search_filters(value: SearchFilters | Mapping[str, Any] | None) -> SearchFilters | None:
    """Filters from a `SearchFilters` or its fields as a dict
    (``domains``, ``date_from``, ``date_to``, ``doc_ids``).

    Raises:
        ConfigError: an unknown key or an invalid value (the message lists the valid keys).

    Examples:
        >>> search_filters({"domains": ["wikipedia.org"]}).domains
        ('wikipedia.org',)
    """
    if value is None or isinstance(value, SearchFilters):
        return value
    valid = ", ".join(SearchFilters.model_fields)
    unknown = sorted(set(value) - set(SearchFilters.model_fields))
    if unknown:
        raise ConfigError(f"unknown filter key(s) {', '.join(unknown)}; valid: {valid}")
    try:
        return SearchFilters.model_validate(dict(value))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"invalid filters: {where}: {first['msg']} (keys: {valid})") from exc


def hit_metadata(hit: Hit) -> dict[str, Any]:
    """The metadata a framework document gets for a hit: the chunk's own plus its provenance."""
    c = hit.chunk
    meta: dict[str, Any] = dict(c.metadata)
    meta.update(
        {
            "chunk_id": c.id,
            "doc_id": c.doc_id,
            "url": c.url,
            "title": c.title,
            "score": hit.score,
            "rank": hit.rank,
            "retrieval_mode": hit.mode,
        }
    )
    return meta


def chunk_from(text: str, metadata: Mapping[str, Any] | None, doc_id: str | None = None) -> Chunk:
    """A Chunk for a framework document: text, a source URL from the usual metadata keys, and
    the rest of the metadata (dates for the freshness policy). Ids are kept as text (a
    document's metadata may hold a numeric ``doc_id``)."""
    meta = {k: v for k, v in (metadata or {}).items() if _jsonable(v)}
    url = next((str(meta[k]) for k in URL_KEYS if meta.get(k)), None)
    cid = str(meta.get("chunk_id") or "")
    did = doc_id if doc_id else meta.get("doc_id")
    return Chunk(
        text=text,
        url=url,
        metadata=meta,
        id=cid,
        doc_id=None if did is None or did == "" else str(did),
    )


def _jsonable(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool | list | dict)


_MASKED = "**********"


def _without_secrets(value: Any) -> Any:
    """A settings dump with masked secrets left out (they come back from the environment)."""
    if isinstance(value, dict):
        return {k: _without_secrets(v) for k, v in value.items() if v != _MASKED}
    return value


def settings_to_dict(settings: Settings) -> dict[str, Any]:
    """The full settings as JSON data for a saved pipeline, secrets left out (never written)."""
    data: dict[str, Any] = _without_secrets(settings.model_dump(mode="json"))
    return data


def make_auditor(config: ConfigLike | Auditor) -> Auditor:
    """An Auditor from settings-like config, or the one given. No config: the settings as the
    CLI loads them (``affidavit.toml`` in the working directory, ``AFFIDAVIT_*`` variables), as
    the Haystack and MCP integrations do: an allowlist or policy configured there holds for
    every integration, never only for some."""
    if isinstance(config, Auditor):
        return config
    return Auditor(load_settings() if config is None else config)


def shown_answer(report: AuditReport, answer: str) -> str:
    """What the enforcement mode lets through: in guardrail mode the answer with failing claims
    withheld, otherwise the answer as it was (enforce mode raises before this)."""
    if report.mode == "guardrail" and report.guarded_response is not None:
        return report.guarded_response
    return answer


def report_feedback(report: AuditReport) -> str:
    """One line for an evaluator: every unsupported claim and why, or that all are supported."""
    bad = [f"{c.text}: {c.reason}" for c in report.claims if not c.supported]
    if not bad:
        if not report.claims:
            return "no checkable claim: nothing was verified"
        return f"all {len(report.claims)} claim(s) supported by the sources"
    return "; ".join(bad)


def audit_for_evaluation(
    auditor: Auditor, query: str, chunks: Sequence[Chunk], answer: str
) -> AuditReport:
    """The audit as an evaluator needs it: a report, never an exception for a failing answer
    (an evaluator scores; it does not enforce)."""
    from affidavit.core.errors import EnforcementError

    try:
        return auditor.audit(query, chunks, answer)
    except EnforcementError as exc:
        report: AuditReport = exc.report
        return report


def _report(mode: str, guarded: str | None) -> AuditReport:
    return AuditReport(
        mode=mode,
        claims=(),
        compliance_rate=0.0,
        passed=False,
        trust_passed=False,
        guarded_response=guarded,
    )


__all__ = [
    "GRANULARITIES",
    "URL_KEYS",
    "StoreSearch",
    "audit_for_evaluation",
    "chunk_from",
    "hit_metadata",
    "make_auditor",
    "report_feedback",
    "search_filters",
    "shown_answer",
]
