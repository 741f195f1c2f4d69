"""The runtime provenance audit: ``audit``, ``aaudit`` and ``filter``.

Example:
    >>> from affidavit.audit import audit
    >>> r = audit("Capital?", [{"text": "Paris is the capital of France.", "url": "https://a.org"}],
    ...           "Paris is not the capital of France.")
    >>> r.claims[0].supported, r.trust_passed
    (False, False)
"""

from __future__ import annotations

from collections.abc import Sequence

from affidavit.audit.auditor import Auditor, ChunkLike, ConfigLike, resolve_settings, to_chunks
from affidavit.audit.matcher import EvidenceIndex, ExactBM25
from affidavit.claims.base import ClaimExtractor
from affidavit.concurrency import offload
from affidavit.core.report import AuditReport
from affidavit.core.types import Chunk
from affidavit.policy.sources import apply_allowlist
from affidavit.verify.base import ClaimVerifier


def audit(
    query: str,
    chunks: Sequence[ChunkLike] | None,
    response: str,
    config: ConfigLike = None,
    *,
    extractor: ClaimExtractor | None = None,
    verifier: ClaimVerifier | None = None,
) -> AuditReport:
    """Audit an answer against the chunks it was generated from.

    Args:
        query: the user's question.
        chunks: the retrieved chunks, as :class:`~affidavit.core.types.Chunk` models or dicts
            ``{"text", "url", "metadata"}``.
        response: the answer to audit.
        config: Settings, AuditSettings, a dict (full settings or the ``audit`` section) or None.
        extractor: a claim extractor (default: the rule-based one).
        verifier: an entailment verifier used when ``audit.use_verifier`` is set.

    Returns:
        The :class:`~affidavit.core.report.AuditReport`.

    Raises:
        ConfigError: invalid or unknown settings.
        InputError: malformed chunks or arguments.
        EnforcementError: in ``enforce`` mode when trust fails (``exc.report`` holds the report).

    Example:
        >>> r = audit("When?", [{"text": "The bridge opened in 1932.", "url": "https://b.org"}],
        ...           "The bridge opened in 1932.")
        >>> r.trust_passed, r.provenance
        (True, {'The bridge opened in 1932.': 'https://b.org'})
    """
    return Auditor(config, extractor=extractor, verifier=verifier).audit(query, chunks, response)


async def aaudit(
    query: str,
    chunks: Sequence[ChunkLike] | None,
    response: str,
    config: ConfigLike = None,
    *,
    extractor: ClaimExtractor | None = None,
    verifier: ClaimVerifier | None = None,
) -> AuditReport:
    """:func:`audit` in the shared worker pool, so the event loop keeps running.

    At most :func:`affidavit.concurrency.max_workers` audits run at once; the rest wait without
    blocking the loop. A cancelled call that has not started is dropped; the audit itself is pure,
    so cancelling one that is running leaves nothing half-written.

    Example:
        >>> import asyncio
        >>> r = asyncio.run(aaudit("q", [{"text": "Rome is in Italy."}], "Rome is in Italy."))
        >>> r.compliance_rate
        1.0
    """
    return await offload(
        audit, query, chunks, response, config, extractor=extractor, verifier=verifier
    )


def filter(chunks: Sequence[ChunkLike], config: ConfigLike = None) -> list[Chunk]:
    """Drop chunks whose source the policy blocks (not allowlisted, malformed or missing URL).

    Example:
        >>> kept = filter([{"text": "a", "url": "https://ok.org/1"},
        ...                {"text": "b", "url": "https://bad.net/2"}], {"allowlist": ["ok.org"]})
        >>> len(kept), kept[0].url
        (1, 'https://ok.org/1')
    """
    settings, _ = resolve_settings(config)
    kept, _blocked = apply_allowlist(to_chunks(chunks), settings)
    return kept


__all__ = [
    "AuditReport",
    "Auditor",
    "EvidenceIndex",
    "ExactBM25",
    "aaudit",
    "audit",
    "filter",
]
