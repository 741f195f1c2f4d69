"""Guarding a stream: an answer is released sentence by sentence, each once it is decided.

A streamed answer arrives token by token. `StreamGuard` holds the tokens back until a
sentence is complete (the next sentence has begun, or the stream has ended), audits the answer
up to the end of that sentence, and releases the sentence as the enforcement mode shows it:

- ``guardrail``: the sentence with every failing claim replaced by the withheld marker, so the
  released text is, sentence by sentence, the non-streamed ``guarded_response``;
- ``enforce``: a sentence with a failing claim raises
  `EnforcementError`; nothing of it is released;
- ``audit``: the sentence as written (the audit changes no answer; it reports).

Fail closed: no text is released before its sentence is decided, and an audit that raises
releases nothing more. One definition of a sentence for the project
(`affidavit.policy.render.split_sentences`). The integrations' ``stream``/``astream``,
streaming responses and streaming callbacks all run through this guard;
``benchmarks/stream_guard.py`` measures the delay it adds per sentence.

Examples:
    >>> guard = StreamGuard(
    ...     Auditor({"mode": "guardrail"}), "When did it open?",
    ...     [{"text": "The Forth Bridge opened on 4 March 1890.", "url": "https://a.org/f"}])
    >>> tokens = ["The Forth Bridge opened", " on 4 March 1890.", " The Forth Bridge", " opened",
    ...           " on 4 March 1925."]
    >>> [guard.feed(t) for t in tokens]
    ['', '', 'The Forth Bridge opened on 4 March 1890.', '', '']
    >>> guard.finish()
    ' [withheld: not supported by the sources]'
    >>> guard.released == guard.report.guarded_response
    True
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from affidavit.audit.auditor import (
    Auditor,
    ChunkLike,
    to_chunks,
    violating_spans,
    withhold_spans,
)
from affidavit.core.errors import EnforcementError, InputError
from affidavit.core.report import WITHHELD_MARKER, AuditReport
from affidavit.policy.render import split_sentences


class StreamGuard:
    """Holds a streamed answer back sentence by sentence until the audit decides each one.

    Args:
        auditor: the auditor whose settings (mode, allowlist, freshness, verifier) decide.
        query: the question the answer responds to.
        chunks: the evidence (chunk dicts or `Chunk` models).

    Attributes:
        released: everything released so far.
        report: the audit of the whole answer, set by `finish`.
        decision_ms: for each decided sentence, the milliseconds its decision took (the delay
            the guard adds once the sentence is complete).

    Raises:
        InputError: malformed chunks.
    """

    def __init__(self, auditor: Auditor, query: str, chunks: Sequence[ChunkLike] | None) -> None:
        self.auditor = auditor
        self.query = query
        self.chunks = to_chunks(chunks)
        self.released = ""
        self.report: AuditReport | None = None
        self.decision_ms: list[float] = []
        self._text = ""
        self._upto = 0  # the answer up to here has been decided and released
        self._open = False  # the last released piece ended in a withheld span
        self._finished = False

    @property
    def text(self) -> str:
        """The answer as streamed so far (the draft: what the model wrote)."""
        return self._text

    def feed(self, piece: str) -> str:
        """Take one streamed piece; return what may be shown now ('' while a sentence is open).

        Raises:
            EnforcementError: enforce mode and a completed sentence holds a failing claim.
            InputError: the stream has already finished.
        """
        if self._finished:
            raise InputError("the stream has finished; start a new StreamGuard")
        self._text += piece
        return self._release(final=False)

    def finish(self) -> str:
        """End the stream: decide and return the last sentence; audit the whole answer.

        Raises:
            EnforcementError: enforce mode and the last sentence or the whole answer fails.
        """
        if self._finished:
            return ""
        self._finished = True
        out = self._release(final=True)
        self.report = self.auditor.audit(self.query, self.chunks, self._text)
        return out

    def _release(self, final: bool) -> str:
        tail = self._text[self._upto :]
        spans = split_sentences(tail)
        # the last sentence may still grow ("4 March" + " 1890."): decided once the next begins
        done = spans if final else spans[:-1]
        # the ends in the answer's offsets, taken before any decision moves ``_upto``: a piece
        # that completes two sentences at once must not decide the second past its own end
        base = self._upto
        out = [self._decide(base + end) for _start, end in done]
        if final and self._upto < len(self._text):
            rest = self._text[self._upto :]
            if rest.strip():  # text outside any sentence is never shown undecided
                out.append(self._decide(len(self._text)))
            else:
                out.append(rest)
                self._upto = len(self._text)
        released = "".join(out)
        self.released += released
        return released

    def _decide(self, end: int) -> str:
        """Audit the answer up to ``end``; release what the mode shows of ``[_upto, end)``."""
        t0 = time.perf_counter()
        prefix = self._text[:end]
        try:
            report = self.auditor.audit(self.query, self.chunks, prefix)
        except EnforcementError as exc:
            report = exc.report  # decided below, claim by claim, not by the prefix's trust
        s = self.auditor.settings
        start = self._upto
        piece = prefix[start:]
        # the spans of the whole prefix, clipped to the piece: a sentence said twice has one
        # claim, before the piece, and its repeat in the piece is found from that claim (its text
        # and the sentence as written at its span)
        bad = [
            (max(a, start) - start, b - start)
            for a, b in violating_spans(prefix, report.claims, s)
            if b > start
        ]
        if s.mode == "enforce" and bad:
            self.decision_ms.append((time.perf_counter() - t0) * 1000.0)
            a, b = bad[0]
            raise EnforcementError(
                f"a streamed sentence holds text that fails the audit ({piece[a:b]!r})",
                report=report,
            )
        if s.mode == "guardrail" and bad:
            shown = withhold_spans(piece, bad)
            if self._open and bad[0][0] == 0:
                # the span goes on from the one the last piece ended withheld in (a "[1]" after
                # the full stop of a withheld sentence): one span, one marker, as the
                # non-streamed answer merges it
                shown = shown[len(WITHHELD_MARKER) :]
            self._open = max(b for _a, b in bad) >= len(piece)
            piece = shown
        else:
            self._open = False
        self._upto = end
        self.decision_ms.append((time.perf_counter() - t0) * 1000.0)
        return piece


__all__ = ["StreamGuard"]
