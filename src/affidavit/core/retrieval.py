"""Contracts of the ingest, store and retrieve stages (beside the shared ones in ``types.py``).

``Chunk``, ``Document`` and ``Hit`` live in `affidavit.core.types`; this module adds the
ingest report, sentence spans, search filters and the documents a user owns (list, show, delete).

Examples:
    >>> r = IngestReport(outcomes=(FileOutcome(source="a.txt", status="added", chunks=2),))
    >>> r.counts()["added"]
    1
"""

from __future__ import annotations

import re
import unicodedata
from datetime import date, datetime
from typing import Literal

from pydantic import Field, field_validator, model_validator

from affidavit.core.text import escape_surrogates
from affidavit.core.types import Frozen, sha256_text

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

    Examples:
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


_SPACE = re.compile(r"\s+")


def content_doc_id(text: str) -> str:
    """The id of a file's document: derived from its normalised text, not from where it lies.

    The text is NFC-normalised and every run of white space becomes one space, so the same
    content extracted from a copy, a renamed file or another upload has the same id.

    Examples:
        >>> content_doc_id("330 m  tall\\n") == content_doc_id("330 m tall")
        True
        >>> content_doc_id("a")[:4]
        'doc-'
    """
    normal = _SPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()
    return "doc-" + sha256_text(normal)[:20]


class DocumentInfo(Frozen):
    """A stored document as its owner sees it (never a path on the machine that stores it).

    Examples:
        >>> DocumentInfo(id="doc-1", source="a.txt", names=("a.txt", "copy.txt"), chunks=2).names
        ('a.txt', 'copy.txt')
    """

    id: str = Field(description="Document id (derived from the normalised text for files).")
    source: str = Field(
        description="The name it is shown under: path relative to the ingested folder, uploaded "
        "file name, or the URL of a JSONL record."
    )
    names: tuple[str, ...] = Field(
        default=(),
        description="Every name the same content was ingested under, the shown one first.",
    )
    title: str | None = Field(default=None, description="Title, if the format has one.")
    mime: str = Field(default="", description="Detected content type.")
    chunks: int = Field(default=0, ge=0, description="Chunks stored for it.")
    content_hash: str = Field(default="", description="sha256 of the stored text.")

    @field_validator("id", "source", "title", mode="before")
    @classmethod
    def _printable(cls, v: object) -> object:
        return escape_surrogates(v) if isinstance(v, str) else v


class DocumentList(Frozen):
    """The documents in a store (``affidavit documents list``, ``GET /v1/documents``)."""

    documents: tuple[DocumentInfo, ...] = Field(default=(), description="Sorted by source.")
    chunks_total: int = Field(default=0, ge=0, description="Chunks stored, all documents.")


class DocumentDeletion(Frozen):
    """What deleting one document removed (``affidavit documents delete``)."""

    id: str = Field(description="The deleted document's id.")
    source: str = Field(default="", description="The name it was shown under.")
    chunks_removed: int = Field(
        default=0, ge=0, description="Chunks removed from the lexical and vector indexes."
    )


class DeletedChunk(Frozen):
    """A record that a chunk was removed from the store (kept so a certificate that cites it
    can say why its evidence is gone)."""

    chunk_id: str = Field(description="Id of the removed chunk.")
    doc_id: str = Field(description="Id of the document it belonged to.")
    source: str = Field(default="", description="The name its document was shown under.")
    deleted_at: datetime = Field(description="When it was removed (UTC).")
    reason: Literal["deleted", "replaced", "pruned"] = Field(
        description="deleted: its document was deleted; replaced: a newer version of the file "
        "replaced it; pruned: its file was gone at an ingest with --prune."
    )
