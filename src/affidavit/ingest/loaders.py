"""Format loaders: each turns one file into `Document` objects or raises ``IngestError``.

Loaders never return partial junk: a file that cannot be read whole raises with the reason, and
the ingest run records it as a failure and continues.
"""

from __future__ import annotations

import io
import logging
import re
import struct
import zipfile
import zlib
from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path
from typing import Any

from affidavit.core.errors import IngestError, InputError, MissingDependencyError
from affidavit.core.hosts import web_host
from affidavit.core.limits import loads_json
from affidavit.core.retrieval import content_doc_id
from affidavit.core.text import jsonl_lines
from affidavit.core.types import Document
from affidavit.ingest.detect import ZIP_ERRORS

logger = logging.getLogger(__name__)

# Zip-bomb guard for DOCX: every member is inflated in bounded pieces before python-docx sees the
# archive, and the archive is refused past these, whatever its own size fields say.
MAX_UNCOMPRESSED_BYTES = 256 * 1024 * 1024
MAX_COMPRESSION_RATIO = 100.0
_RATIO_CHECK_MIN_BYTES = 10 * 1024 * 1024
_INFLATE_PIECE = 1024 * 1024
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")  # PK\3\4 ... name length, extra length

# PDF amplification guard (issue 26.7: 4.3 KB whose page tree names one page 90,000 times took
# 182 s and gave 6,923 chunks). A real page costs its own page object and content stream, so a
# file holds at most about one page per PDF_BYTES_PER_PAGE bytes; its text is capped the same way
# (compressed text runs at a few characters per byte). Beyond either cap the file is refused.
MAX_PDF_PAGES = 20_000
PDF_BYTES_PER_PAGE = 16
MAX_PDF_TEXT_CHARS = 50_000_000  # as much as the largest text file by default (50 MB)
PDF_TEXT_CHARS_PER_BYTE = 20
_PDF_TEXT_FLOOR = 64_000  # a tiny honest PDF may hold a page or two of text

# The form of `content_doc_id`: a JSONL record may use it only for the id of its own text.
_CONTENT_ID = re.compile(r"doc-[0-9a-f]{20}")


def decode_utf8(raw: bytes, source: str) -> str:
    """Decode UTF-8 (a BOM is dropped); anything else is an ``IngestError`` naming the byte."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad = raw[exc.start : exc.start + 1]
        raise IngestError(
            f"not valid UTF-8 (byte {bad!r} at offset {exc.start}); convert the file to UTF-8",
            source=source,
        ) from exc


def iso_date(value: Any) -> str | None:
    """Normalise a date-like value (datetime, 'YYYY-MM-DD...', PDF 'D:YYYYMMDD', year) to ISO."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    s = str(value).strip()
    if s.startswith("D:"):
        s = s[2:]
    m = re.match(r"^(\d{4})-?(\d{2})-?(\d{2})", s)
    if m:
        try:
            return date(int(m.group(1)), int(m.group(2)), int(m.group(3))).isoformat()
        except ValueError:
            return None
    if re.fullmatch(r"\d{4}", s):
        return f"{s}-01-01"  # a year alone counts as 1 January
    return None


def domain_of(url: str | None) -> str | None:
    """The host a browser opens for an http(s) URL (lower case, IDNA, no trailing dot), read by
    the parser the allowlist and the web guard use (`affidavit.core.hosts.web_host`); None for
    anything else or anything two parsers could read two ways (``https://evil.com\\@nih.gov/``:
    ``urlparse`` reads nih.gov, a browser opens evil.com), so a ``--domain`` filter never admits
    it."""
    if not url:
        return None
    return web_host(url)


def _base_metadata(path: Path) -> dict[str, Any]:
    return {"path": str(path), "filename": path.name}


def load_text(path: Path, raw: bytes, *, markdown: bool = False) -> list[Document]:
    """Plain text or Markdown (kept verbatim so offsets are offsets into the file's text)."""
    text = decode_utf8(raw, str(path))
    if not text.strip():
        raise IngestError("file is empty (no text)", source=str(path))
    title = None
    if markdown:
        m = re.search(r"^#\s+(.+)$", text, re.MULTILINE)
        title = m.group(1).strip() if m else None
    if title is None:
        # a short first line without a full stop reads as a title; otherwise the file name
        first = text.strip().splitlines()[0].strip()
        title = first if len(first) <= 80 and not first.endswith((".", "?", "!")) else path.stem
    return [
        Document(
            id=content_doc_id(text),
            text=text,
            source=str(path),
            title=title,
            mime="text/markdown" if markdown else "text/plain",
            metadata=_base_metadata(path),
        )
    ]


def pdf_caps(size: int) -> tuple[int, int]:
    """(pages, text characters) a PDF of ``size`` bytes may yield before it is refused.

    Examples:
        >>> pdf_caps(4_300)
        (284, 86000)
    """
    pages = min(MAX_PDF_PAGES, 16 + size // PDF_BYTES_PER_PAGE)
    chars = min(MAX_PDF_TEXT_CHARS, max(_PDF_TEXT_FLOOR, size * PDF_TEXT_CHARS_PER_BYTE))
    return pages, chars


def load_pdf(path: Path, raw: bytes) -> list[Document]:
    """PDF via pypdf: pages joined by blank lines; ``metadata["pages"]`` maps offsets to pages.

    Refused (``IngestError``) past `pdf_caps`: more pages or more text than a file of its
    size can honestly hold.
    """
    try:
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError
    except ImportError as exc:
        raise MissingDependencyError("pypdf", "ingest", purpose="reading PDF files") from exc

    max_pages, max_chars = pdf_caps(len(raw))
    try:
        reader = PdfReader(io.BytesIO(raw))
        if reader.is_encrypted:
            try:
                ok = reader.decrypt("")
            except Exception as exc:  # pypdf raises several types for unsupported crypto
                raise IngestError(
                    f"encrypted PDF that cannot be opened: {exc}", source=str(path)
                ) from exc
            if not ok:
                raise IngestError("encrypted PDF (a password is required)", source=str(path))
        n_pages = len(reader.pages)  # pypdf itself stops a page tree past 100,000 entries
        if n_pages > max_pages:
            raise IngestError(
                f"refused: {n_pages} pages in a {len(raw):,} byte PDF (at most {max_pages} "
                "for its size: a page tree that repeats pages)",
                source=str(path),
            )
        parts: list[str] = []
        pages: list[list[int]] = []
        blank: list[int] = []
        pos = 0
        for number, page in enumerate(reader.pages, start=1):
            page_text = (page.extract_text() or "").strip()
            if not page_text:
                blank.append(number)
                continue
            if parts:
                pos += 2  # the "\n\n" joiner
            pages.append([pos, pos + len(page_text), number])
            parts.append(page_text)
            pos += len(page_text)
            if pos > max_chars:
                raise IngestError(
                    f"refused: more than {max_chars:,} characters of text from a "
                    f"{len(raw):,} byte PDF (stopped at page {number}; more than a file of "
                    "its size can hold)",
                    source=str(path),
                )
        info = reader.metadata
        title = ((info.title or "").strip() or None) if info is not None else None
        created = iso_date(info.get("/CreationDate")) if info is not None else None
    except IngestError:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, OSError, RecursionError) as exc:
        raise IngestError(f"corrupt or unreadable PDF: {exc}", source=str(path)) from exc
    except Exception as exc:  # pypdf also leaks builtins (IndexError, AttributeError...) on
        # hostile files; a reader bug on one file fails that file, with its type for the report
        logger.debug("pypdf failed on %s", path, exc_info=True)
        raise IngestError(
            f"corrupt or unreadable PDF: {type(exc).__name__}: {exc}", source=str(path)
        ) from exc
    if not parts:
        raise IngestError(
            "PDF has no extractable text (empty, or scanned images: run OCR first)",
            source=str(path),
        )
    meta = _base_metadata(path)
    meta["pages"] = pages
    meta["page_count"] = n_pages
    if blank:
        meta["pages_without_text"] = page_ranges(blank)
    if created:
        meta["date"] = created
    text = "\n\n".join(parts)
    return [
        Document(
            id=content_doc_id(text),
            text=text,
            source=str(path),
            title=title,
            mime="application/pdf",
            metadata=meta,
        )
    ]


def page_ranges(numbers: list[int]) -> str:
    """Page numbers in order as ranges.

    Examples:
        >>> page_ranges([2, 3, 4, 7, 9, 10])
        '2-4, 7, 9-10'
    """
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _inflate_member(raw: bytes, info: zipfile.ZipInfo, budget: int, source: str) -> int:
    """Inflate one member in pieces of at most 1 MiB; its real size (raises past ``budget``).

    The compressed bytes are read from the member's local header on, never trusting
    ``info.file_size``: zipfile asks zlib for up to 2 GiB at once and cuts the output to the
    declared size afterwards, so an under-stated size drove a 3.5 MB DOCX to 2.1 GB of memory.
    """
    off = info.header_offset
    head = raw[off : off + _LOCAL_HEADER.size]
    if len(head) < _LOCAL_HEADER.size or head[:4] != b"PK\x03\x04":
        raise IngestError(f"corrupt DOCX: bad local header for {info.filename}", source=source)
    fields = _LOCAL_HEADER.unpack(head)
    start = off + _LOCAL_HEADER.size + fields[-2] + fields[-1]
    data = memoryview(raw)[start : start + info.compress_size]
    if info.flag_bits & 0x1:
        raise IngestError(f"encrypted DOCX member {info.filename}", source=source)
    if info.compress_type == zipfile.ZIP_STORED:
        size = len(data)
    elif info.compress_type == zipfile.ZIP_DEFLATED:
        inflater = zlib.decompressobj(-zlib.MAX_WBITS)
        size = 0
        try:
            for pos in range(0, len(data), _INFLATE_PIECE):
                pending = bytes(data[pos : pos + _INFLATE_PIECE])
                while pending:
                    size += len(inflater.decompress(pending, _INFLATE_PIECE))
                    if size > budget:
                        break
                    pending = inflater.unconsumed_tail
                if size > budget or inflater.eof:
                    break
            if size <= budget:
                size += len(inflater.flush(_INFLATE_PIECE))
        except zlib.error as exc:
            raise IngestError(
                f"corrupt DOCX: {info.filename} does not inflate ({exc})", source=source
            ) from exc
    else:
        raise IngestError(
            f"unsupported compression ({info.compress_type}) in DOCX member {info.filename}",
            source=source,
        )
    if size > budget:
        raise IngestError(
            f"refused as a zip bomb: {info.filename} inflates past "
            f"{budget / 1048576:.0f} MiB (its header says {info.file_size / 1048576:.1f} MiB)",
            source=source,
        )
    return size


def check_zip_bomb(
    path: Path, max_total: int = MAX_UNCOMPRESSED_BYTES, raw: bytes | None = None
) -> None:
    """Refuse a zip container that inflates too far, measured by inflating it in bounded pieces.

    Each member is inflated (and discarded) at most 1 MiB at a time; the run stops as soon as
    the total passes ``max_total``. A member whose real size differs from the size its headers
    state is refused too, since the parser that reads it next trusts those headers.

    Raises:
        IngestError: a zip bomb, lying size fields, or a corrupt container.
    """
    source = str(path)
    if raw is None:
        raw = path.read_bytes()
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as zf:
            total = 0
            for info in zf.infolist():
                size = _inflate_member(raw, info, max_total - total, source)
                total += size
                if size != info.file_size:
                    raise IngestError(
                        f"refused: {info.filename} inflates to {size} bytes but its header "
                        f"says {info.file_size} (a forged or corrupt archive)",
                        source=source,
                    )
                ratio = size / max(info.compress_size, 1)
                if size > _RATIO_CHECK_MIN_BYTES and ratio > MAX_COMPRESSION_RATIO:
                    raise IngestError(
                        f"refused as a zip bomb: {info.filename} inflates {ratio:.0f}x "
                        f"to {size / 1e6:.0f} MB",
                        source=source,
                    )
    except ZIP_ERRORS as exc:  # not only BadZipFile: see ZIP_ERRORS
        raise IngestError(f"corrupt DOCX (bad zip container): {exc}", source=source) from exc


def load_docx(path: Path, raw: bytes) -> list[Document]:
    """DOCX via python-docx: the body in document order (paragraphs; a table a row a block, its
    cells joined by " | "), then the footnotes and endnotes the body refers to, blocks separated
    by blank lines.

    python-docx reads only paragraphs and tables standing directly in the body, and only the
    plain runs of a paragraph: tracked insertions, content controls, text boxes and notes were
    left out without a word. They are read here; deleted and hidden text stays out. What is
    still left out (headers and footers, comments, equations) is named in ``metadata.left_out``.
    """
    try:
        import docx
    except ImportError as exc:
        raise MissingDependencyError("python-docx", "ingest", purpose="reading DOCX") from exc
    check_zip_bomb(path, raw=raw)
    try:
        d = docx.Document(io.BytesIO(raw))
        styles_hide = bool(d.styles.element.xpath(".//w:vanish"))
        body = d.element.body
        _as_read(body)
        blocks = list(_docx_blocks(body, d._body, styles_hide))
        blocks += _docx_notes(d, body, styles_hide)
        left_out = _docx_left_out(d, body)
        props = d.core_properties
    except Exception as exc:  # python-docx surfaces lxml/zip/KeyError variants
        raise IngestError(f"corrupt or unreadable DOCX: {exc}", source=str(path)) from exc
    if not blocks:
        raise IngestError("DOCX has no text", source=str(path))
    meta = _base_metadata(path)
    created = iso_date(props.created)
    if created:
        meta["date"] = created
    if props.author:
        meta["author"] = props.author
    if left_out:
        meta["left_out"] = left_out
    text = "\n\n".join(blocks)
    return [
        Document(
            id=content_doc_id(text),
            text=text,
            source=str(path),
            title=(props.title or "").strip() or None,
            mime="application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            metadata=meta,
        )
    ]


# Wrappers whose content a reader of the final document sees as if they were not there: tracked
# insertions and moves, content controls (their ``w:sdtContent``), custom XML, smart tags, simple
# fields (their shown result is runs inside) and bidi overrides. Their content is lifted into
# place so python-docx, which reads only direct children, sees it.
_DOCX_UNWRAP = (
    "w:ins",
    "w:moveTo",
    "w:sdt",
    "w:sdtContent",
    "w:customXml",
    "w:smartTag",
    "w:fldSimple",
    "w:dir",
    "w:bdo",
)
# Not seen by a reader of the final document: tracked deletions and moves away (their runs hold
# ``w:delText``, or ``w:t`` in some writers), and the properties of the wrappers above
# (a content control's properties hold its placeholder and list entries, not its shown text).
_DOCX_DROP = ("w:del", "w:moveFrom", "w:sdtPr", "w:sdtEndPr", "w:customXmlPr", "w:smartTagPr")
# Separator lines between the body and the notes: no text of the author's.
_NOTE_FURNITURE = ("separator", "continuationSeparator", "continuationNotice")


def _as_read(element: Any) -> None:
    """Rewrite ``element`` (in memory) into the text a reader of the final document sees:
    deleted content removed, the wrappers of ``_DOCX_UNWRAP`` replaced by their content."""
    from docx.oxml.ns import qn

    for el in list(element.iter(*(qn(t) for t in _DOCX_DROP))):
        parent = el.getparent()
        if parent is not None:
            parent.remove(el)
    for el in list(element.iter(*(qn(t) for t in _DOCX_UNWRAP))):
        parent = el.getparent()
        if parent is None:
            continue
        for child in list(el):
            el.addprevious(child)  # moves ``child`` out, in order; no O(n) index in a long body
        parent.remove(el)


def _docx_items(element: Any, parent: Any) -> Iterator[Any]:
    """The paragraphs and tables directly in ``element``, in document order."""
    from docx.oxml.ns import qn
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    for child in element:
        if child.tag == qn("w:p"):
            yield Paragraph(child, parent)
        elif child.tag == qn("w:tbl"):
            yield Table(child, parent)


def _docx_blocks(element: Any, parent: Any, styles_hide: bool) -> Iterator[str]:
    """The non-empty blocks of a body, text box or note: a paragraph's shown text (then the
    text boxes it anchors), or a table row."""
    from docx.text.paragraph import Paragraph

    for item in _docx_items(element, parent):
        if isinstance(item, Paragraph):
            text = _shown_text(item, styles_hide).strip()
            if text:
                yield text
            for box in _text_boxes(item._p):
                yield from _docx_blocks(box, parent, styles_hide)
        else:
            yield from _table_rows(item, styles_hide)


def _table_rows(table: Any, styles_hide: bool) -> Iterator[str]:
    """A table's rows, each its non-empty cells joined by " | " (a merged cell once for each
    grid column or row it spans, as python-docx gives it). A cell's paragraphs are joined by
    line breaks, with the text boxes they anchor and the rows of tables nested in the cell."""
    from docx.text.paragraph import Paragraph

    for row in table.rows:
        cells = []
        for cell in row.cells:
            parts: list[str] = []
            for item in _docx_items(cell._tc, cell):
                if isinstance(item, Paragraph):
                    parts.append(_shown_text(item, styles_hide))
                    for box in _text_boxes(item._p):
                        parts += _docx_blocks(box, cell, styles_hide)
                else:
                    parts += _table_rows(item, styles_hide)
            text = "\n".join(parts).strip()
            if text:
                cells.append(text)
        if cells:
            yield " | ".join(cells)


def _text_boxes(p: Any) -> list[Any]:
    """The ``w:txbxContent`` of the text boxes anchored in paragraph ``p``, each once: Word
    writes a box twice (DrawingML in ``mc:Choice``, VML in ``mc:Fallback``), and the fallback
    copy is skipped when the choice holds a box. A box inside a box is read with the outer."""
    from docx.oxml.ns import qn

    box_tag = qn("w:txbxContent")
    fallback = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
    boxes = []
    for box in p.iter(box_tag):
        keep = True
        anc = box.getparent()
        while anc is not None and anc is not p:
            if anc.tag == box_tag:
                keep = False
            elif anc.tag == fallback:
                alternate = anc.getparent()
                if alternate is not None and any(
                    c is not anc and next(c.iter(box_tag), None) is not None for c in alternate
                ):
                    keep = False
            anc = anc.getparent()
        if keep:
            boxes.append(box)
    return boxes


def _docx_notes(d: Any, body: Any, styles_hide: bool) -> list[str]:
    """The blocks of the footnotes, then the endnotes, the body refers to, in the order it
    refers to them. A note whose reference was deleted is not shown, so it is not read."""
    from docx.opc.constants import RELATIONSHIP_TYPE as RT
    from docx.oxml import parse_xml
    from docx.oxml.ns import qn

    blocks: list[str] = []
    for kind, reltype in (("footnote", RT.FOOTNOTES), ("endnote", RT.ENDNOTES)):
        refs = list(dict.fromkeys(r.get(qn("w:id")) for r in body.iter(qn(f"w:{kind}Reference"))))
        parts = [
            r.target_part
            for r in d.part.rels.values()
            if r.reltype == reltype and not r.is_external
        ]
        if not refs or not parts:
            continue
        part = parts[0]
        notes = getattr(part, "element", None)
        if notes is None:  # python-docx keeps a notes part as bytes
            notes = parse_xml(part.blob)
        _as_read(notes)
        by_id = {
            n.get(qn("w:id")): n
            for n in notes.iter(qn(f"w:{kind}"))
            if n.get(qn("w:type")) not in _NOTE_FURNITURE
        }
        for ref in refs:
            if ref in by_id:
                blocks += _docx_blocks(by_id[ref], d._body, styles_hide)
    return blocks


def _docx_left_out(d: Any, body: Any) -> str:
    """What of a DOCX a reader sees but the loader leaves out, or "": headers and footers
    (page furniture repeated on every page), comments (review notes in the margin) and
    equations (no plain-text form). Said in the metadata so the outcome can tell the user."""
    from docx.opc.constants import RELATIONSHIP_TYPE as RT
    from docx.oxml import parse_xml
    from docx.oxml.ns import qn

    def has_text(reltypes: tuple[str, ...]) -> bool:
        for rel in d.part.rels.values():
            if rel.reltype not in reltypes or rel.is_external:
                continue
            part = rel.target_part
            element = getattr(part, "element", None)
            if element is None:
                element = parse_xml(part.blob)
            if any((t.text or "").strip() for t in element.iter(qn("w:t"))):
                return True
        return False

    left = []
    if has_text((RT.HEADER, RT.FOOTER)):
        left.append("header and footer text")
    if has_text((RT.COMMENTS,)):
        left.append("comments")
    math_text = "{http://schemas.openxmlformats.org/officeDocument/2006/math}t"
    if any((t.text or "").strip() for t in body.iter(math_text)):
        left.append("equations")
    return ", ".join(left)


def _shown_text(paragraph: Any, styles_hide: bool) -> str:
    """A DOCX paragraph's text without its hidden runs (``w:vanish`` set on the run, its
    character style or the paragraph's style): text Word does not show is no evidence.

    ``styles_hide``: some style of the document sets ``w:vanish``.
    """
    from docx.oxml.ns import qn
    from docx.text.run import Run

    p = paragraph._p
    if not styles_hide and not p.xpath(".//w:vanish"):
        return str(paragraph.text)  # nothing hidden: as python-docx reads it

    def hidden(run: Run) -> bool:
        for font in (run.font, *(s.font for s in (run.style, paragraph.style) if s is not None)):
            if font.hidden is not None:
                return bool(font.hidden)
        return False

    parts: list[str] = []
    for element in p.xpath("w:r | w:hyperlink"):
        runs = [element] if element.tag == qn("w:r") else element.xpath("w:r")
        parts += [r.text for r in runs if not hidden(Run(r, paragraph))]
    return "".join(parts)


def load_html(path: Path, raw: bytes) -> list[Document]:
    """HTML main text via trafilatura (navigation and boilerplate dropped).

    Text a browser would not render is no evidence: before extraction the page's own style
    (``<style>`` rules, ``style`` attributes, ``hidden``, ``<template>``) is applied by
    `affidavit.ingest.html_style` and what it hides is left out, counted in
    ``metadata.left_out``. Style it cannot read (linked or imported sheets) hides nothing and is
    named in ``metadata.styles_not_read``.
    """
    try:
        import trafilatura
    except ImportError as exc:
        raise MissingDependencyError("trafilatura", "ingest", purpose="reading HTML") from exc
    for package in ("tinycss2", "cssselect"):  # without them hidden text would be kept
        try:
            __import__(package)
        except ImportError as exc:
            raise MissingDependencyError(package, "ingest", purpose="reading HTML") from exc
    from affidavit.ingest import html_style

    html = decode_utf8(raw, str(path))
    try:
        tree = html_style.parse_page(html)
    except Exception as exc:  # lxml errors surface in several types
        raise IngestError(f"unreadable HTML: {exc}", source=str(path)) from exc
    if tree is None:
        raise IngestError("HTML page has no main text", source=str(path))
    style = html_style.drop_unrendered(tree)
    if style.page_hidden:
        raise IngestError(
            "HTML page shows no text: its own style hides all of it", source=str(path)
        )
    try:
        result = trafilatura.bare_extraction(tree, with_metadata=True, include_comments=False)
    except Exception as exc:  # trafilatura wraps lxml errors inconsistently
        raise IngestError(f"unreadable HTML: {exc}", source=str(path)) from exc
    text = getattr(result, "text", None) if result is not None else None
    if not text or not text.strip():
        if style.dropped:
            raise IngestError(
                f"HTML page shows no main text: its own style hides the rest "
                f"({style.left_out()} left out)",
                source=str(path),
            )
        raise IngestError("HTML page has no main text", source=str(path))
    # trafilatura puts one paragraph per line: make them paragraphs for the sentence splitter
    text = "\n\n".join(line.strip() for line in text.splitlines() if line.strip())
    meta = _base_metadata(path)
    url = getattr(result, "url", None)
    if url:
        meta["url"] = url
        dom = domain_of(url)
        if dom:
            meta["domain"] = dom
    published = iso_date(getattr(result, "date", None))
    if published:
        meta["date"] = published
    if style.left_out():
        meta["left_out"] = style.left_out()
    if style.not_read():
        meta["styles_not_read"] = style.not_read()
    return [
        Document(
            id=content_doc_id(text),
            text=text,
            source=str(path),
            title=getattr(result, "title", None) or None,
            mime="text/html",
            metadata=meta,
        )
    ]


def iter_jsonl(path: Path, raw: bytes) -> Iterator[tuple[int, Document | IngestError]]:
    """JSONL records ``{"id", "text", "title", "url", "metadata"}``; bad lines yield an error.

    A record keeps its ``id`` as its document id (so evaluation qrels refer to it directly).
    """
    text = decode_utf8(raw, str(path))
    for lineno, line in enumerate(jsonl_lines(text), start=1):
        if not line.strip():
            continue
        where = f"{path}#L{lineno}"
        try:
            obj = loads_json(line, where)
        except InputError:  # nested too deeply: this record fails, the file goes on
            yield lineno, IngestError("JSON nested too deeply", source=where)
            continue
        except ValueError as exc:
            yield lineno, IngestError(f"invalid JSON: {exc}", source=where)
            continue
        if not isinstance(obj, dict):
            yield lineno, IngestError("a JSONL line must be an object", source=where)
            continue
        body = obj.get("text")
        if not isinstance(body, str) or not body.strip():
            yield lineno, IngestError('record has no "text" string', source=where)
            continue
        rec_id = obj.get("id")
        if rec_id is None or isinstance(rec_id, (dict, list)) or str(rec_id) == "":
            yield lineno, IngestError('record has no usable "id"', source=where)
            continue
        if _CONTENT_ID.fullmatch(str(rec_id)) and str(rec_id) != content_doc_id(body):
            # ids of this form name a file's content: one taken by other text would make that
            # file "the same content" as this record, and its own text never stored
            yield (
                lineno,
                IngestError(
                    f"id {str(rec_id)!r} has the form of a content id (doc- and 20 hex digits) "
                    "but is not the content id of this record's text; give the record another id",
                    source=where,
                ),
            )
            continue
        meta_in = obj.get("metadata") or {}
        if not isinstance(meta_in, dict):
            yield lineno, IngestError('"metadata" must be an object', source=where)
            continue
        meta: dict[str, Any] = dict(meta_in)
        meta.update({"path": str(path), "line": lineno})
        # the domain is the URL's, never the record's word for it: a "domain" the record gives
        # itself would pass --domain filters for a page of another host (or of none)
        meta.pop("domain", None)
        url = obj.get("url")
        if isinstance(url, str) and url:
            meta["url"] = url
            dom = domain_of(url)
            if dom:
                meta["domain"] = dom
        for key in ("published_at", "date", "year"):
            if key in meta_in:
                d = iso_date(meta_in[key])
                if d:
                    meta["date"] = d
                    break
        title = obj.get("title")
        yield (
            lineno,
            Document(
                id=str(rec_id),
                text=body,
                source=url if isinstance(url, str) and url else where,
                title=title if isinstance(title, str) and title else None,
                mime="application/jsonl",
                metadata=meta,
            ),
        )
