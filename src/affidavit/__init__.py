"""affidavit: answers questions from your documents and proves every sentence it shows.

The runtime provenance audit (``audit``, ``aaudit``, ``filter``), claim verification (``check``,
``acheck``) and asking a store (``aask``) are available at the top level; the ``a*`` forms run
their model work off the event loop (`affidavit.concurrency`).

Examples:
    >>> import affidavit
    >>> chunks = [{"text": "Paris is the capital of France.", "url": "https://example.org/p"}]
    >>> report = affidavit.audit("Capital?", chunks, "Paris is not the capital of France.")
    >>> report.trust_passed, report.claims[0].failed_checks[0].check
    (False, 'polarity')
"""

from __future__ import annotations

from affidavit.audit import aaudit, audit, filter
from affidavit.core.report import (
    AuditReport,
    BlockedSource,
    ClaimAudit,
    PolicyIssue,
    SourceFreshness,
    Violation,
)
from affidavit.pipeline.build import aask
from affidavit.pipeline.check import acheck, check

__version__ = "0.1.0"

__all__ = [
    "AuditReport",
    "BlockedSource",
    "ClaimAudit",
    "PolicyIssue",
    "SourceFreshness",
    "Violation",
    "__version__",
    "aask",
    "aaudit",
    "acheck",
    "audit",
    "check",
    "filter",
]
