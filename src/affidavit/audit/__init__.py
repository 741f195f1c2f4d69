"""The runtime provenance audit: ``audit``, ``aaudit`` and ``filter``.

Examples:
    >>> from affidavit.audit import audit
    >>> r = audit("Capital?", [{"text": "Paris is the capital of France.", "url": "https://a.org"}],
    ...           "Paris is not the capital of France.")
    >>> r.claims[0].supported, r.trust_passed
    (False, False)
"""

from __future__ import annotations

import logging
import pickle
from collections.abc import Sequence
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from affidavit.audit.auditor import Auditor, ChunkLike, ConfigLike, resolve_settings, to_chunks
from affidavit.audit.matcher import EvidenceIndex, ExactBM25
from affidavit.claims.base import ClaimExtractor
from affidavit.concurrency import offload, offload_process
from affidavit.core.errors import AffidavitError, EnforcementError
from affidavit.core.report import AuditReport
from affidavit.core.settings import AuditSettings, Settings
from affidavit.core.types import Chunk
from affidavit.policy.sources import apply_allowlist
from affidavit.verify.base import ClaimVerifier

logger = logging.getLogger(__name__)


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
        chunks: the retrieved chunks, as `Chunk` models or dicts
            ``{"text", "url", "metadata"}``.
        response: the answer to audit.
        config: Settings, AuditSettings, a dict (full settings or the ``audit`` section) or None.
        extractor: a claim extractor (default: the rule-based one).
        verifier: an entailment verifier used when ``audit.use_verifier`` is set (default
            then: the settings' verifier cascade, as the integrations and MCP build it).

    Returns:
        The `AuditReport`.

    Raises:
        ConfigError: invalid or unknown settings.
        InputError: malformed chunks or arguments.
        EnforcementError: in ``enforce`` mode when trust fails (``exc.report`` holds the report).

    Examples:
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
    """`audit` off the event loop, so the loop keeps running.

    The lexical audit is pure Python. A small one (answer and chunks under
    ``PROCESS_MIN_CHARS`` characters, about 15 ms of work) runs in the shared thread pool; a
    larger one runs in the shared worker-process pool
    (`affidavit.concurrency.offload_process`), where it cannot hold the loop's GIL. With a
    custom ``extractor`` or ``verifier``, or ``use_verifier`` (model work releases the GIL), it
    runs in the thread pool. At most `affidavit.concurrency.max_workers` audits run at
    once; the rest wait without blocking the loop. A cancelled call that has not started is
    dropped; the audit itself is pure, so cancelling one that is running leaves nothing
    half-written.

    Worker processes are started with ``spawn``, which imports the calling script again: a
    script that calls ``aaudit`` on large inputs at its top level must keep that code under
    ``if __name__ == "__main__":`` (a worker that finds it unguarded stops with a message that
    says so, and the audit runs in a thread instead).

    Examples:
        >>> import asyncio
        >>> r = asyncio.run(aaudit("q", [{"text": "Rome is in Italy."}], "Rome is in Italy."))
        >>> r.compliance_rate
        1.0
    """
    if (
        extractor is None
        and verifier is None
        and _picklable_input(chunks, config)
        and _input_chars(chunks, response) >= PROCESS_MIN_CHARS
        and not _wants_verifier(config)
    ):
        try:
            outcome = await offload_process(_audit_in_process, query, chunks, response, config)
        except (TypeError, pickle.PicklingError, BrokenProcessPool) as exc:
            # an input a worker process cannot take (or a worker that died): same audit, in a
            # thread
            logger.debug("audit not run in a worker process: %s", exc)
        else:
            if outcome[0] == "enforce":
                raise EnforcementError(outcome[1], report=outcome[2])
            report: AuditReport = outcome[1]
            return report
    return await offload(
        audit, query, chunks, response, config, extractor=extractor, verifier=verifier
    )


# below this many characters (answer plus chunk texts) an audit takes about 15 ms: a thread
# holds the GIL for no longer than that, and a worker process (which re-imports the caller's
# script under spawn) is not worth starting
PROCESS_MIN_CHARS = 20_000


def _input_chars(chunks: Sequence[ChunkLike] | None, response: str) -> int:
    n = len(response) if isinstance(response, str) else 0
    for c in chunks or ():
        text = c.get("text") if isinstance(c, dict) else getattr(c, "text", "")
        n += len(text) if isinstance(text, str) else 0
    return n


def _wants_verifier(config: ConfigLike) -> bool:
    """``audit.use_verifier`` set: the verifier's model work belongs in a thread (it releases
    the GIL, and a worker process would load the model again)."""
    try:
        return resolve_settings(config)[0].use_verifier
    except AffidavitError:
        return False  # the audit itself reports the bad config


def _picklable_input(chunks: Sequence[ChunkLike] | None, config: ConfigLike) -> bool:
    """Plain data only: lists or tuples of dicts or Chunks, and settings or a dict."""
    plain_chunks = chunks is None or (
        isinstance(chunks, list | tuple) and all(isinstance(c, dict | Chunk) for c in chunks)
    )
    return plain_chunks and (config is None or isinstance(config, dict | Settings | AuditSettings))


def _audit_in_process(
    query: str, chunks: Sequence[ChunkLike] | None, response: str, config: ConfigLike
) -> tuple[str, Any, Any]:
    """`audit` in a worker process; an enforcement failure comes back as data (its
    exception does not survive pickling with its report)."""
    try:
        return ("ok", audit(query, chunks, response, config), None)
    except EnforcementError as exc:
        return ("enforce", exc.message, exc.report)


def filter(chunks: Sequence[ChunkLike], config: ConfigLike = None) -> list[Chunk]:
    """Drop chunks whose source the policy blocks (not allowlisted, malformed or missing URL).

    Examples:
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
