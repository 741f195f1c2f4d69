"""An HTTP answer read boundedly: at most so many *decoded* bytes, within so much time.

Every client of affidavit (the LLM and embedding endpoints, the web search APIs and pages, a
remote transparency log) reads its answers here. httpx inflates a compressed body a whole read
at a time before anything sees it (``iter_bytes``, ``read``, ``text``, ``json``), so a few KB
of gzip can allocate gigabytes before a size check; here the raw bytes are read
(``iter_raw``) and inflated by `Inflater`, whose every step yields at most `STEP` bytes.

Only the encodings a client asks for (`ACCEPT_ENCODING`: gzip and deflate, never br or zstd,
which cannot be inflated in bounded steps) are decoded; any other, or stacked ones
(``gzip, gzip``), are refused with `UnsupportedEncoding`, and a damaged or truncated body with
`AnswerUndecodable`.

Examples:
    >>> import gzip
    >>> inflater = Inflater("gzip")
    >>> [len(p) for p in inflater.decode(gzip.compress(b" " * 100_000), 65536)]
    [65536, 34464]
    >>> inflater.finish()
    >>> try:
    ...     Inflater("br")
    ... except UnsupportedEncoding as exc:
    ...     print(exc)
    content encoding 'br', which was not asked for (asked for: gzip, deflate)
"""

from __future__ import annotations

import codecs
import itertools
import time
import zlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import httpx

__all__ = [
    "ACCEPT_ENCODING",
    "STEP",
    "AnswerTooLarge",
    "AnswerTooSlow",
    "AnswerUndecodable",
    "Inflater",
    "UnsupportedEncoding",
    "iter_answer",
    "iter_answer_text",
    "read_answer",
]

#: the ``Accept-Encoding`` every client sends: what `Inflater` decodes in bounded steps
ACCEPT_ENCODING = "gzip, deflate"

#: most decoded bytes one inflation step produces (one piece of `iter_answer`)
STEP = 64 << 10

_GZIP = ("gzip", "x-gzip")
_KNOWN = (*_GZIP, "deflate")


class AnswerTooLarge(Exception):
    """An endpoint's answer went past the bytes the caller allows (see `read_answer`)."""


class AnswerTooSlow(Exception):
    """An endpoint's answer was not finished within the caller's time (see `read_answer`)."""


class AnswerUndecodable(Exception):
    """An endpoint's answer could not be decoded: its compressed body is damaged or truncated,
    or in an encoding not asked for (`UnsupportedEncoding`)."""


class UnsupportedEncoding(AnswerUndecodable):
    """An answer in a content encoding not asked for, unknown, or stacked (``gzip, gzip``).

    Attributes:
        encoding: the ``Content-Encoding`` as sent (at most 40 characters).
    """

    def __init__(self, encoding: str, accept: str) -> None:
        self.encoding = encoding[:40]
        asked = accept if _codings(accept) else "none"
        if len(_codings(encoding)) > 1:
            why = "stacked encodings are not decoded"
        else:
            why = f"which was not asked for (asked for: {asked})"
        super().__init__(f"content encoding {self.encoding!r}, {why}")


def _codings(header: str) -> list[str]:
    """The content codings a header names, ``identity`` and parameters (``;q=0``) left out."""
    names = (part.split(";")[0].strip().lower() for part in header.split(","))
    return [name for name in names if name not in ("", "identity")]


class Inflater:
    """Decodes a body's ``Content-Encoding`` (none, gzip or deflate) a bounded step at a time.

    A gzip body may hold several members (RFC 1952), each decoded in turn; "deflate" is
    taken with or without its zlib header (servers send both).

    Args:
        encoding: the answer's ``Content-Encoding`` header ("" for none).
        accept: the ``Accept-Encoding`` that was sent: an encoding it does not name is refused.

    Raises:
        UnsupportedEncoding: an encoding not asked for or not decoded here, or stacked ones.
    """

    def __init__(self, encoding: str, accept: str = ACCEPT_ENCODING) -> None:
        codings = _codings(encoding)
        asked = [c for c in _codings(accept) if c in _KNOWN]
        if "gzip" in asked:
            asked.append("x-gzip")
        if len(codings) > 1 or (codings and codings[0] not in asked):
            raise UnsupportedEncoding(encoding, accept)
        self.coding = codings[0] if codings else None
        self._zlib: Any = self._new() if self.coding else None
        self._started = False  # a first block was decoded (no more raw-deflate fallback)
        self._seen = False  # any raw byte came

    def _new(self) -> Any:
        wbits = zlib.MAX_WBITS | 16 if self.coding in _GZIP else zlib.MAX_WBITS
        return zlib.decompressobj(wbits)

    def decode(self, data: bytes, step: int = STEP) -> Iterator[bytes]:
        """The decoded bytes of ``data`` (the next raw bytes of the body), in pieces of at most
        ``step`` (> 0) bytes: stop iterating, and no more is inflated.

        Raises:
            AnswerUndecodable: the body is damaged, or goes on past its (last) end.
        """
        if self._zlib is None:
            for at in range(0, len(data), step):
                yield data[at : at + step]
            return
        self._seen = self._seen or bool(data)
        pending = data
        while True:
            if self._zlib.eof:
                pending = self._zlib.unused_data + pending
                if not pending:
                    return
                if self.coding not in _GZIP:
                    raise AnswerUndecodable("the deflate body goes on past its end")
                self._zlib = self._new()  # the next gzip member
            try:
                out: bytes = self._zlib.decompress(pending, step)
            except zlib.error as exc:
                if self.coding in _GZIP or self._started:
                    raise AnswerUndecodable(f"the {self.coding} body is damaged ({exc})") from None
                # "deflate" is sometimes sent raw, without its zlib header
                self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                self._started = True
                continue
            self._started = True
            pending = self._zlib.unconsumed_tail
            if out:
                yield out
            # less than a step, no input left: zlib holds nothing more back
            if len(out) < step and not pending and not self._zlib.eof:
                return

    def finish(self) -> None:
        """Check that the body ended where its compressed stream does.

        Raises:
            AnswerUndecodable: the compressed body stopped short of its end.
        """
        if self._zlib is not None and self._seen and not self._zlib.eof:
            raise AnswerUndecodable(f"the {self.coding} body is cut short")


def iter_answer(
    response: httpx.Response,
    timeout_s: float | None = None,
    *,
    accept: str = ACCEPT_ENCODING,
    step: int = STEP,
) -> Iterator[bytes]:
    """The decoded body of a streamed ``response``, in pieces of at most ``step`` bytes, read
    raw and inflated here (stop iterating: nothing more is read or inflated).

    Args:
        timeout_s: the time the whole body may take (httpx's timeout is per read, so an answer
            trickling in would never time out); None: no limit but httpx's own.
        accept: the ``Accept-Encoding`` the request sent.

    Raises:
        AnswerTooSlow: not finished within ``timeout_s``.
        UnsupportedEncoding: an encoding not asked for, unknown or stacked (raised at once).
        AnswerUndecodable: a damaged or truncated compressed body.
        httpx.HTTPError: the read failed.
    """
    import httpx

    inflater = Inflater(response.headers.get("content-encoding", ""), accept)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s

    def pieces() -> Iterator[bytes]:
        raw = response.iter_raw()
        try:
            first = next(raw, b"")
        except httpx.StreamConsumed:
            # a response built whole in this process (a test transport): httpx decoded it
            content = response.content
            for at in range(0, len(content), step):
                yield content[at : at + step]
            return
        for block in itertools.chain([first], raw):
            for piece in inflater.decode(block, step):
                yield piece
                if deadline is not None and time.monotonic() > deadline:
                    raise AnswerTooSlow(timeout_s)
            if deadline is not None and time.monotonic() > deadline:
                raise AnswerTooSlow(timeout_s)
        inflater.finish()

    return pieces()


def iter_answer_text(pieces: Iterator[bytes], encoding: str = "utf-8") -> Iterator[str]:
    """``pieces`` (from `iter_answer`) decoded as text, undecodable bytes replaced."""
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    for piece in pieces:
        text = decoder.decode(piece)
        if text:
            yield text
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail


def read_answer(
    response: httpx.Response,
    limit: int,
    timeout_s: float,
    *,
    cut_off: bool = False,
    accept: str = ACCEPT_ENCODING,
) -> bytes:
    """The body of a streamed ``response``, read whole within ``timeout_s`` (httpx's timeout
    is per read, so an answer trickling in would never time out) and at most ``limit`` decoded
    bytes (a compressed answer is inflated a step at a time, never much past ``limit``).

    Args:
        cut_off: past ``limit``, return the first ``limit`` bytes (an error body shown in a
            message) instead of raising.
        accept: the ``Accept-Encoding`` the request sent (`ACCEPT_ENCODING`).

    Raises:
        AnswerTooLarge: past ``limit`` (unless ``cut_off``).
        AnswerTooSlow: not finished within ``timeout_s``.
        UnsupportedEncoding: an encoding not asked for, unknown or stacked.
        AnswerUndecodable: a damaged or truncated compressed body.
        httpx.HTTPError: the read failed.
    """
    data = bytearray()
    pieces = iter_answer(response, timeout_s, accept=accept, step=min(STEP, limit + 1))
    for piece in pieces:
        data += piece
        if len(data) > limit:
            if cut_off:
                return bytes(data[:limit])
            raise AnswerTooLarge(limit)
    return bytes(data)
