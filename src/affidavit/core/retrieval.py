"""Contracts of the ingest, store and retrieve stages (beside the shared ones in ``types.py``).

``Chunk``, ``Document`` and ``Hit`` live in :mod:`affidavit.core.types`; this module adds the
ingest report, sentence spans and search filters.

Example:
    >>> r = IngestReport(outcomes=(FileOutcome(source="a.txt", status="added", chunks=2),))
    >>> r.counts()["added"]
    1
"""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import Field, field_validator, model_validator

from affidavit.core.text import escape_surrogates
from affidavit.core.types import Frozen

OutcomeStatus = Literal["added", "skipped", "replaced", "failed", "pruned"]


class SentenceSpan(Frozen):
    """One sentence of a document, with exact offsets (``doc.text[start:end] == text``)."""

    start: int = Field(ge=0, description="Start offset in the document text.")
    end: int = Field(ge=0, description="End offset (exclusive) in the document text.")
    text: str = Field(description="The sentence text, exactly as in the document.")


class FileOutcome(Frozen):
    """What ingest did with one input file (or one JSONL record)."""

    source: str = Field(description="Path (or path#line for JSONL records) of the input.")
    status: OutcomeStatus = Field(description="added / skipped / replaced / failed / pruned.")
    doc_id: str | None = Field(default=None, description="Document id, when one was assigned.")
    chunks: int = Field(default=0, ge=0, description="Chunks written for this document.")
    mime: str | None = Field(default=None, description="Detected content type.")
    reason: str = Field(default="", description="Why it failed or was skipped, in plain words.")

    @field_validator("source", "doc_id", "reason", mode="before")
    @classmethod
    def _printable(cls, v: object) -> object:
        # a file name that is not UTF-8 (or a JSONL id with a lone surrogate) must still be
        # reportable: as JSON, on the terminal, in the log
        return escape_surrogates(v) if isinstance(v, str) else v


class IngestReport(Frozen):
    """The final report of one ingest run."""

    outcomes: tuple[FileOutcome, ...] = Field(default=(), description="One entry per input.")
    store: str = Field(default="", description="Where the store lives.")
    seconds: float = Field(default=0.0, ge=0.0, description="Wall time of the run.")
    chunks_total: int = Field(default=0, ge=0, description="Chunks in the store after the run.")

    def counts(self) -> dict[str, int]:
        """Number of inputs per status (every status present, zero when unused)."""
        out = {s: 0 for s in ("added", "skipped", "replaced", "failed", "pruned")}
        for o in self.outcomes:
            out[o.status] += 1
        return out

    @property
    def failed(self) -> tuple[FileOutcome, ...]:
        """The inputs that failed, with their reasons."""
        return tuple(o for o in self.outcomes if o.status == "failed")


class SearchFilters(Frozen):
    """Metadata filters applied before ranking.

    Example:
        >>> SearchFilters(domains=("example.org",)).domains
        ('example.org',)
    """

    domains: tuple[str, ...] = Field(
        default=(),
        description="Allowed source domains (suffix match: 'nih.gov' admits 'pubmed.nih.gov').",
    )
    date_from: date | None = Field(
        default=None, description="Keep chunks whose document date is on or after this day."
    )
    date_to: date | None = Field(
        default=None, description="Keep chunks whose document date is on or before this day."
    )
    doc_ids: tuple[str, ...] = Field(default=(), description="Restrict to these documents.")

    @model_validator(mode="after")
    def _check_range(self) -> SearchFilters:
        if self.date_from and self.date_to and self.date_from > self.date_to:
            raise ValueError(f"date_from {self.date_from} is after date_to {self.date_to}")
        return self

    def is_empty(self) -> bool:
        """True when no filter is set."""
        return not (self.domains or self.date_from or self.date_to or self.doc_ids)
