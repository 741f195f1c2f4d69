"""Typed errors: one base class, one subclass per stage, each carrying context.

Every error affidavit raises on purpose derives from `AffidavitError`, so an
application can catch the whole family with one ``except`` and still read which stage,
source or claim was involved.
"""

from __future__ import annotations

from typing import Any


class AffidavitError(Exception):
    """Base class of every error raised by affidavit.

    Attributes:
        stage: the pipeline stage that raised (``"audit"``, ``"verify"``, ...).
        source: the file, URL or chunk involved, when there is one.
        claim_id: the claim involved, when there is one.
        context: any further structured detail.
    """

    stage: str = "core"

    def __init__(
        self,
        message: str,
        *,
        stage: str | None = None,
        source: str | None = None,
        claim_id: str | None = None,
        **context: Any,
    ) -> None:
        super().__init__(message)
        self.message = message
        if stage is not None:
            self.stage = stage
        self.source = source
        self.claim_id = claim_id
        self.context = context

    def __str__(self) -> str:
        where = [f"stage={self.stage}"]
        if self.source:
            where.append(f"source={self.source}")
        if self.claim_id:
            where.append(f"claim={self.claim_id}")
        return f"{self.message} ({', '.join(where)})"


class ConfigError(AffidavitError):
    """A setting is invalid, unknown or missing."""

    stage = "config"


class InputError(AffidavitError):
    """User input (a file, JSON payload, argument) is malformed."""

    stage = "input"


class MissingDependencyError(AffidavitError):
    """An optional dependency is not installed; the message names the ``pip install``."""

    stage = "dependency"

    def __init__(self, package: str, extra: str, *, purpose: str = "") -> None:
        hint = f'pip install "affidavit[{extra}]"'
        what = f" (needed for {purpose})" if purpose else ""
        super().__init__(f"{package} is not installed{what}: run `{hint}`", package=package)
        self.package = package
        self.extra = extra
        self.install_hint = hint


class ModelError(AffidavitError):
    """A packaged model is missing, corrupt (sha256 mismatch) or failed to load."""

    stage = "model"


class IngestError(AffidavitError):
    """A document could not be loaded or chunked."""

    stage = "ingest"


class StoreError(AffidavitError):
    """The store could not be read or written."""

    stage = "store"


class StoreUnusableError(StoreError):
    """The disk or database under the store refused a write in a way no other document can get
    past: full, over quota, read-only, failing or damaged. An ingest run stops at the first one
    (retrying the rest one by one would only fail each of them); what was committed stays."""


class DocumentNotFound(InputError):
    """No stored document has the id asked for (``affidavit documents``: exit 2; HTTP 404)."""

    stage = "store"


class RetrievalError(AffidavitError):
    """Retrieval failed."""

    stage = "retrieve"


class CorrectionError(AffidavitError):
    """The corrective-retrieval stage (evaluation, refinement, web search) failed."""

    stage = "correct"


class WebSearchError(CorrectionError):
    """A web search provider failed or a URL was refused (SSRF guard, allowlist)."""


class GenerationError(AffidavitError):
    """The LLM backend failed (unreachable, timeout, bad output)."""

    stage = "generate"


class GenerationTruncatedError(GenerationError):
    """The LLM stopped before its answer was complete: its token budget or context window ran
    out, or a content filter cut it (``context["reason"]``: the server's ``finish_reason``).

    ``stream`` raises it after the last piece, so a caller that knows it keeps the pieces and
    records the cut (the ask pipeline never counts the unfinished sentence as checked); any
    other caller fails closed as on any `GenerationError`.
    """


class ClaimError(AffidavitError):
    """Claim extraction or compilation failed."""

    stage = "claims"


class VerificationError(AffidavitError):
    """A verifier could not score a claim (the claim is then never shown as verified)."""

    stage = "verify"


class PolicyError(AffidavitError):
    """A policy could not be applied."""

    stage = "policy"


class EnforcementError(PolicyError):
    """Raised in ``enforce`` mode when an audit fails; carries the full report."""

    def __init__(self, message: str, *, report: Any, **context: Any) -> None:
        super().__init__(message, **context)
        self.report = report


class CertificateError(AffidavitError):
    """A certificate could not be signed or did not verify."""

    stage = "certify"


class SigningKeyError(CertificateError):
    """No signing key is configured, or the key file is unreadable."""


class TransparencyLogError(AffidavitError):
    """The transparency log cannot be read, written or trusted (see ``affidavit.tlog``)."""

    stage = "tlog"


class ProofError(TransparencyLogError):
    """An inclusion or consistency proof, or a checkpoint, does not verify; ``message`` says why."""
