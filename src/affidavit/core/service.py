"""Contracts of the HTTP API (``affidavit serve``) beyond the shared ones.

The API returns the library's own contracts (``AskResult``, ``AuditReport``, ``CheckOutput``,
``CertificateVerification``, ``Hit``...); the models here exist only where an endpoint's input or
envelope differs: a request body, a job, an error, and the events of a streamed answer.

Examples:
    >>> AskRequest(question="Who discovered polonium?").mode is None
    True
    >>> TokenEvent(text="Marie").kind
    'token'
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from affidavit.core.answer import AskResult, ClaimOutcome
from affidavit.core.certificate import Certificate
from affidavit.core.correction import ChunkGrade, Classification
from affidavit.core.retrieval import FileOutcome, IngestReport
from affidavit.core.text import require_unicode
from affidavit.core.types import Chunk, DisplayMode, Frozen, Hit

ApiScope = Literal["read", "write"]
"""What an API key may do: ``read`` asks, audits, checks and searches; ``write`` also uploads."""

JobState = Literal["queued", "running", "done", "failed"]
"""Where an ingest job is."""

MAX_QUESTION_CHARS = 4000
"""The longest question ``POST /v1/ask`` and the MCP ``ask`` tool take."""

MAX_QUERY_CHARS = 2000
"""The longest query ``GET /v1/search`` and the MCP ``search`` tool take."""


class ApiError(Frozen):
    """The body of every 4xx/5xx answer."""

    status: int = Field(description="The HTTP status, repeated.")
    error: str = Field(description="A short machine-readable code (bad_request, queue_full...).")
    message: str = Field(description="What went wrong and what to do, in plain words.")


class AskRequest(Frozen):
    """``POST /v1/ask``."""

    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS, description="The question.")
    mode: DisplayMode | None = Field(
        default=None, description="strict / mixed / debug (default: policy.display)."
    )
    correct: bool = Field(default=True, description="Run corrective retrieval (CRAG grading).")
    certify: bool = Field(
        default=True, description="Sign a certificate when the server has a signing key."
    )


class AskResponse(Frozen):
    """``POST /v1/ask`` (JSON): the library's result and, when signed, its certificate."""

    result: AskResult = Field(description="The answer, its claims and the whole trace.")
    certificate: Certificate | None = Field(
        default=None, description="The signed certificate (None: no signing key or not asked)."
    )


class AuditInput(Frozen):
    """``POST /v1/audit``: the JSON ``affidavit audit`` reads."""

    query: str | None = Field(default="", description="The question (may be empty).")
    chunks: list[Chunk] = Field(description="The chunks the answer was generated from.")
    response: str = Field(description="The answer to audit.")

    @model_validator(mode="before")
    @classmethod
    def _unicode_only(cls, data: Any) -> Any:
        # a "\ud800" escape: refused here (422) as `affidavit audit` refuses it (exit 2), not
        # met later as an answer that cannot be encoded (500)
        return require_unicode(data)


class SearchResponse(Frozen):
    """``GET /v1/search``."""

    query: str = Field(description="The query as searched.")
    mode: Literal["bm25", "dense", "hybrid"] = Field(description="The ranking used.")
    hits: tuple[Hit, ...] = Field(description="The hits, best first.")


class IngestJob(Frozen):
    """An ingest job started by ``POST /v1/documents`` (poll ``GET /v1/jobs/{id}``)."""

    id: str = Field(description="Job id.")
    state: JobState = Field(description="queued / running / done / failed.")
    files: tuple[str, ...] = Field(description="The uploaded file names, in order.")
    created_at: datetime = Field(description="When the upload was accepted (UTC).")
    finished_at: datetime | None = Field(default=None, description="When the job ended (UTC).")
    outcomes: tuple[FileOutcome, ...] = Field(
        default=(), description="What ingest did with each file (failures carry their reason)."
    )
    report: IngestReport | None = Field(default=None, description="The ingest report, when done.")
    error: str | None = Field(
        default=None, description="Why the whole job failed (nothing already stored is lost)."
    )


class PublicKeyInfo(Frozen):
    """``GET /v1/keys/public``: the key this server signs certificates with."""

    key_id: str = Field(description="The key id certificates name.")
    public_key_pem: str = Field(description="The Ed25519 public key, PEM.")


class ApiKeyInfo(Frozen):
    """An API key as listed (the secret and its hash are never shown)."""

    id: str = Field(description="Key id (the part of the token before the secret).")
    name: str = Field(description="Who or what the key is for.")
    scope: ApiScope = Field(description="read or write.")
    created_at: datetime = Field(description="When it was created (UTC).")
    revoked_at: datetime | None = Field(default=None, description="When it was revoked, if so.")


class ReadyCheck(Frozen):
    """One readiness check."""

    name: str = Field(description="What was checked (store, verifier, generator, signing_key).")
    ok: bool = Field(description="True when it is usable.")
    detail: str = Field(default="", description="Why not, or what was found.")


class Readiness(Frozen):
    """``GET /readyz``."""

    ready: bool = Field(description="True when every required check passed.")
    checks: tuple[ReadyCheck, ...] = Field(description="Each check.")


# -- the events of a streamed answer (Server-Sent Events, one ``event:`` name per kind) --------


class RetrievalEvent(Frozen):
    """The retriever's hits, before any grading."""

    kind: Literal["retrieval"] = "retrieval"
    hits: tuple[Hit, ...] = Field(description="What the retriever returned, best first.")
    seconds: float = Field(ge=0.0, description="Time the retrieval took.")


class GradingEvent(Frozen):
    """The corrective stage's 0-10 grades and its Correct / Ambiguous / Incorrect decision."""

    kind: Literal["grading"] = "grading"
    grades: tuple[ChunkGrade, ...] = Field(default=(), description="One grade per chunk.")
    classification: Classification | None = Field(
        default=None, description="The decision and its thresholds (None: stage off or failed)."
    )
    note: str = Field(default="", description="Why there are no grades, when there are none.")


class RefinementEvent(Frozen):
    """What refinement kept (and what the web fallback added): the passages the LLM sees."""

    kind: Literal["refinement"] = "refinement"
    context: tuple[Chunk, ...] = Field(description="The passages, in prompt order.")
    origins: tuple[Literal["store", "web"], ...] = Field(description="Where each passage is from.")
    dropped: tuple[str, ...] = Field(default=(), description="Why passages were dropped.")
    web_ran: bool = Field(default=False, description="True when the web fallback ran.")
    web_query: str | None = Field(default=None, description="The (rewritten) web query.")
    strip_threshold: float | None = Field(
        default=None,
        description="Sentences graded below this were stripped (None: no corrective stage).",
    )
    seconds: float = Field(ge=0.0, description="Time grading and refinement took.")


class TokenEvent(Frozen):
    """A piece of the answer as the model writes it (provisional: not yet verified)."""

    kind: Literal["token"] = "token"
    text: str = Field(description="The piece.")


class ClaimEvent(Frozen):
    """One claim with its verdict and decision."""

    kind: Literal["claim"] = "claim"
    outcome: ClaimOutcome = Field(description="The claim, verdict and decision.")


class CertificateEvent(Frozen):
    """The signed certificate of the answer."""

    kind: Literal["certificate"] = "certificate"
    certificate: Certificate = Field(description="The certificate.")


class ResultEvent(Frozen):
    """The last event of a successful stream: the same body ``POST /v1/ask`` returns as JSON."""

    kind: Literal["result"] = "result"
    response: AskResponse = Field(description="The whole response.")


class ErrorEvent(Frozen):
    """The last event of a failed stream."""

    kind: Literal["error"] = "error"
    error: ApiError = Field(description="What went wrong.")


PipelineEvent = Annotated[
    RetrievalEvent | GradingEvent | RefinementEvent | ClaimEvent, Field(discriminator="kind")
]
"""The stage events the ask pipeline reports through ``on_event`` (a claim's as it is decided)."""

AskEvent = Annotated[
    RetrievalEvent
    | GradingEvent
    | RefinementEvent
    | TokenEvent
    | ClaimEvent
    | CertificateEvent
    | ResultEvent
    | ErrorEvent,
    Field(discriminator="kind"),
]
"""Every event of ``POST /v1/ask`` with ``Accept: text/event-stream``, in this order: retrieval,
grading, refinement, token..., claim..., certificate (when signed), then result or error."""
