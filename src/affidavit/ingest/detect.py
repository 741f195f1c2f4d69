"""File type by content (magic bytes), with the extension only as a tie-breaker for text."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Literal

Kind = Literal["pdf", "docx", "html", "jsonl", "markdown", "text"]

MIME: dict[str, str] = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "html": "text/html",
    "jsonl": "application/jsonl",
    "markdown": "text/markdown",
    "text": "text/plain",
}

# Signatures of common binary formats we do not read, for a precise failure reason.
_BINARY_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x7fELF", "ELF executable"),
    (b"\x89PNG", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF8", "GIF image"),
    (b"\x1f\x8b", "gzip archive"),
    (b"7z\xbc\xaf", "7-zip archive"),
    (b"Rar!", "RAR archive"),
    (b"\xd0\xcf\x11\xe0", "legacy Office (OLE) file; save it as .docx or .pdf"),
    (b"SQLite format 3", "SQLite database"),
    (b"RIFF", "RIFF media file"),
    (b"OggS", "Ogg media file"),
    (b"\x00\x00\x00", "binary file"),
)

_MARKDOWN_EXT = {".md", ".markdown", ".mdown", ".mkd"}
_JSONL_EXT = {".jsonl", ".ndjson"}
_HTML_EXT = {".html", ".htm", ".xhtml"}


# What zipfile raises for a container it cannot read: besides BadZipFile, NotImplementedError
# for an unknown "version needed to extract", UnicodeDecodeError (a ValueError) for a name
# flagged UTF-8 that is not, EOFError for a truncated member.
ZIP_ERRORS: tuple[type[Exception], ...] = (
    zipfile.BadZipFile,
    OSError,
    ValueError,
    NotImplementedError,
    EOFError,
)


class UnsupportedType(Exception):
    """Raised by `detect` with the reason the file cannot be read."""


def detect(path: Path, head: bytes) -> Kind:
    """Decide how to read a file from its first bytes (and, for text, its extension).

    Raises:
        UnsupportedType: binary or unsupported content, with the reason.
    """
    if b"%PDF-" in head[:1024]:
        return "pdf"
    if head.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(path) as zf:
                names = set(zf.namelist())
        except ZIP_ERRORS as exc:
            raise UnsupportedType(f"corrupt zip container: {exc}") from exc
        if "word/document.xml" in names:
            return "docx"
        raise UnsupportedType("zip archive that is not a DOCX document")
    for magic, what in _BINARY_MAGIC:
        if head.startswith(magic):
            raise UnsupportedType(f"binary file ({what})")
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise UnsupportedType("UTF-16 text is not supported; convert it to UTF-8")
    if b"\x00" in head:
        raise UnsupportedType("binary file (contains NUL bytes)")
    controls = sum(1 for b in head if b < 9 or 13 < b < 32 or b == 127)
    if head and controls / len(head) > 0.05:
        raise UnsupportedType("binary file (control bytes, not text)")
    ext = path.suffix.lower()
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if stripped.startswith((b"<!doctype html", b"<html")) or (
        ext in _HTML_EXT and stripped.startswith(b"<")
    ):
        return "html"
    if ext in _JSONL_EXT or _looks_like_jsonl(stripped):
        return "jsonl"
    if ext in _MARKDOWN_EXT:
        return "markdown"
    return "text"


def _looks_like_jsonl(head: bytes) -> bool:
    if not head.startswith(b"{"):
        return False
    from affidavit.core.errors import InputError
    from affidavit.core.limits import loads_json

    first = head.split(b"\n", 1)[0]
    try:
        obj = loads_json(first, "first line")
    except InputError:  # a record nested too deeply: JSONL, whose loader fails that line alone
        return True
    except ValueError:
        return False
    return isinstance(obj, dict) and "text" in obj
