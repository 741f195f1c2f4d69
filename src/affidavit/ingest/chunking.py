"""Sentence splitting and sentence-aware chunking with exact character offsets.

Every span is a slice of the document: ``doc.text[span.start:span.end] == span.text``, for
sentences and chunks alike. Chunks are packed from whole sentences up to ``chunk_size``
characters; consecutive chunks share up to ``overlap`` characters of whole trailing sentences.
A sentence longer than ``chunk_size`` is split at word boundaries (never inside a word unless the
word alone is longer than a chunk) and its pieces are flagged ``split_sentence`` in the chunk
metadata.

Examples:
    >>> doc = Document(id="d", source="d.txt", text="One fish. Two fish. Red fish.")
    >>> [c.text for c in SentenceChunker(chunk_size=20, overlap=0).chunk(doc)]
    ['One fish. Two fish.', 'Red fish.']
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Sequence
from typing import Any

from affidavit.core.errors import ConfigError
from affidavit.core.retrieval import SentenceSpan
from affidavit.core.types import Chunk, Document, sha256_text

# Words after which a full stop does not end a sentence.
_ABBREVIATIONS = frozenset(
    [
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "sr",
        "jr",
        "st",
        "vs",
        "etc",
        "e.g",
        "i.e",
        "cf",
        "al",
        "fig",
        "figs",
        "no",
        "nos",
        "vol",
        "eq",
        "eqs",
        "approx",
        "ca",
        "inc",
        "ltd",
        "co",
        "corp",
        "dept",
        "est",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "u.s",
        "u.k",
        "ph.d",
        "mt",
        "ft",
        "gen",
        "col",
        "lt",
        "rev",
        "hon",
    ]
)
_BOUNDARY = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s)")
_PARAGRAPH = re.compile(r"\n[ \t\r\f\v]*\n\s*")
_LIST_OR_HEADING = re.compile(r"\n(?=[ \t]*(?:#{1,6}\s|[-*•]\s|\d{1,3}[.)]\s))")
_WORD_BEFORE = re.compile(r"([\w.]+)$")
# The word before a full stop is looked for in this many characters only: every abbreviation is
# far shorter, and a search from offset 0 made splitting quadratic in the text's length.
_WORD_WINDOW = 64


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _is_boundary(text: str, punct_start: int, punct_end: int, limit: int | None = None) -> bool:
    """Decide whether the punctuation at ``text[punct_start:punct_end]`` ends a sentence.

    ``limit`` is the end of the block (paragraph) being split; the text is never copied, so the
    cost is independent of the text's length.
    """
    end = len(text) if limit is None else limit
    nxt = punct_end
    while nxt < end and text[nxt].isspace():
        nxt += 1
    if nxt >= end:
        return True
    if text[nxt].islower():
        return False  # "e.g. the", "approx. five": a sentence rarely starts lower-case
    if text[punct_start] != ".":
        return True
    m = _WORD_BEFORE.search(text, max(0, punct_start - _WORD_WINDOW), punct_start)
    if m is None:
        return True
    word = m.group(1).lower().rstrip(".")
    if word in _ABBREVIATIONS:
        return False
    # single initials ("J. Smith", "U.S.") do not end sentences
    return not (len(word) == 1 and word.isalpha() and text[punct_start - 1].isupper())


def split_sentences(text: str) -> list[SentenceSpan]:
    """Split text into sentence spans with exact offsets (whitespace between them is dropped).

    Paragraph breaks, headings and list items always end a sentence.

    Examples:
        >>> [s.text for s in split_sentences("Dr. Who left. He came back!")]
        ['Dr. Who left.', 'He came back!']
    """
    blocks: list[tuple[int, int]] = []
    pos = 0
    for m in _PARAGRAPH.finditer(text):
        blocks.append((pos, m.start()))
        pos = m.end()
    blocks.append((pos, len(text)))
    spans: list[SentenceSpan] = []
    for b_start, b_end in blocks:
        cuts = [b_start]
        for m in _LIST_OR_HEADING.finditer(text, b_start, b_end):
            cuts.append(m.start() + 1)
        for m in _BOUNDARY.finditer(text, b_start, b_end):
            if _is_boundary(text, m.start(), m.end(), b_end):
                cuts.append(m.end())
        cuts = [*sorted(set(cuts)), b_end]
        for s, e in itertools.pairwise(cuts):
            s2, e2 = _strip(text, s, e)
            if e2 > s2:
                spans.append(SentenceSpan(start=s2, end=e2, text=text[s2:e2]))
    return spans


def _split_long(text: str, start: int, end: int, size: int) -> list[tuple[int, int]]:
    """Split ``text[start:end]`` into pieces of at most ``size`` characters at word boundaries."""
    pieces: list[tuple[int, int]] = []
    pos = start
    while pos < end:
        if end - pos <= size:
            pieces.append((pos, end))
            break
        cut = pos + size
        # last whitespace inside the window; a word longer than the window is cut hard
        ws = max(text.rfind(" ", pos + 1, cut + 1), text.rfind("\n", pos + 1, cut + 1))
        if ws > pos:
            cut = ws
        s, e = _strip(text, pos, cut)
        if e > s:
            pieces.append((s, e))
        pos = cut
        while pos < end and text[pos].isspace():
            pos += 1
    return pieces


class SentenceChunker:
    """Packs whole sentences into chunks of about ``chunk_size`` characters.

    Args:
        chunk_size: target maximum chunk length in characters.
        overlap: at most this many characters of whole sentences are repeated from the end of
            one chunk at the start of the next (0 disables overlap).

    Raises:
        ConfigError: sizes out of range.
    """

    def __init__(self, chunk_size: int = 500, overlap: int = 50) -> None:
        if chunk_size < 20:
            raise ConfigError(f"chunk_size must be at least 20 characters, got {chunk_size}")
        if not 0 <= overlap < chunk_size:
            raise ConfigError(f"overlap must be in [0, chunk_size), got {overlap}")
        self.chunk_size = chunk_size
        self.overlap = overlap

    def config(self) -> dict[str, Any]:
        """The effective configuration."""
        return {"kind": "sentence", "chunk_size": self.chunk_size, "overlap": self.overlap}

    def units(self, text: str) -> list[tuple[int, int, bool]]:
        """Sentence spans, long sentences split: ``(start, end, is_piece_of_long_sentence)``."""
        units: list[tuple[int, int, bool]] = []
        for s in split_sentences(text):
            if s.end - s.start <= self.chunk_size:
                units.append((s.start, s.end, False))
            else:
                units.extend(
                    (a, b, True) for a, b in _split_long(text, s.start, s.end, self.chunk_size)
                )
        return units

    def spans(self, text: str) -> list[list[tuple[int, int, bool]]]:
        """Group the text's units into chunks (each a list of units)."""
        units = self.units(text)
        groups: list[list[tuple[int, int, bool]]] = []
        i = 0
        while i < len(units):
            group = [units[i]]
            j = i + 1
            while j < len(units) and units[j][1] - group[0][0] <= self.chunk_size:
                group.append(units[j])
                j += 1
            groups.append(group)
            if j >= len(units):
                break
            # step back over whole trailing sentences that fit in the overlap budget
            back = j
            while (
                back - 1 > i
                and units[j - 1][1] - units[back - 1][0] <= self.overlap
                and units[j][1] - units[back - 1][0] <= self.chunk_size
            ):
                back -= 1
            i = back
        return groups

    def chunk(self, doc: Document) -> list[Chunk]:
        """Chunk a document; chunk ``i`` has ``doc.text[c.start:c.end] == c.text``."""
        text = doc.text
        pages = page_map(doc.metadata.get("pages"))  # [[start, end, page_no], ...] for PDFs
        page_starts = [p[0] for p in pages]
        # any other "pages" (a JSONL record's own "pages": 12) is the record's data: kept
        base_meta = {k: v for k, v in doc.metadata.items() if k != "pages" or not pages}
        url = doc.metadata.get("url")  # a record's own non-string "url" is its data, not a URL
        url = url if isinstance(url, str) and url else doc.source
        chunks: list[Chunk] = []
        for index, group in enumerate(self.spans(text)):
            start, end = group[0][0], group[-1][1]
            meta: dict[str, Any] = dict(base_meta)
            meta["chunk_index"] = index
            meta["source"] = doc.source
            meta["sentences"] = [[a - start, b - start] for a, b, _ in group]
            if any(flag for _, _, flag in group):
                meta["split_sentence"] = True
            if pages:
                meta["page"] = _page_at(pages, page_starts, start)
                meta["page_end"] = _page_at(pages, page_starts, max(start, end - 1))
            chunk_text = text[start:end]
            chunks.append(
                Chunk(
                    id=chunk_id(doc.id, start, end, chunk_text),
                    text=chunk_text,
                    url=url,
                    metadata=meta,
                    doc_id=doc.id,
                    title=doc.title,
                    start=start,
                    end=end,
                )
            )
        return chunks


def chunk_id(doc_id: str, start: int, end: int, text: str) -> str:
    """Stable chunk id from its document, position and text."""
    return "chunk-" + sha256_text(f"{doc_id}\x00{start}\x00{end}\x00{text}")[:20]


def page_map(value: Any) -> list[list[int]]:
    """The PDF loader's page map, ``[[start, end, page_no], ...]`` in order, or [] when
    ``value`` is anything else.

    Examples:
        >>> page_map([[0, 19, 1], [21, 40, 2]])
        [[0, 19, 1], [21, 40, 2]]
        >>> page_map("123-145")  # a JSONL record's bibliographic field, not a page map
        []
    """
    if not isinstance(value, list) or not all(
        isinstance(p, list | tuple) and len(p) == 3 and all(type(x) is int for x in p)
        for p in value
    ):
        return []
    starts = [p[0] for p in value]
    return [list(p) for p in value] if starts == sorted(starts) else []


def _page_at(pages: Sequence[Sequence[int]], starts: list[int], offset: int) -> int:
    i = bisect.bisect_right(starts, offset) - 1
    return int(pages[max(i, 0)][2])
