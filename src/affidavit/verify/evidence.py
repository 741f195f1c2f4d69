"""Evidence selection by the verifier: windows over every chunk, lexical ranking, combinations.

The generator never chooses the evidence a claim is checked against. For each claim the verifier
cuts *every* retrieved chunk into overlapping token windows that fit the model next to the claim,
ranks the windows by BM25 against the claim, and hands the best ``top_evidence`` to the model.
Nothing is ever truncated silently: a window is exactly what the model sees, its character offsets
point into the chunk, and the windows of a chunk overlap and cover it end to end.

For minimal sufficient evidence the same module proposes smaller spans (the sentences of a window)
and combinations of two or three spans (concatenated in document order) to be re-verified.

Examples:
    >>> w = Windower(WhitespaceTokens(), max_len=64, stride=32)
    >>> chunk = Chunk(text="Paris is the capital of France. It has 2.1 million inhabitants.")
    >>> [s.text for s in w.windows("Paris is in France.", chunk)]
    ['Paris is the capital of France. It has 2.1 million inhabitants.']
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from affidavit.core.errors import VerificationError
from affidavit.core.types import Chunk, EvidenceSpan
from affidavit.verify.lexical import sentence_spans as _lexical_sentence_spans

# fewest evidence tokens worth checking: a claim longer than max_len minus this cannot be checked
MIN_EVIDENCE_TOKENS = 24
# [CLS] claim [SEP] evidence [SEP]
SPECIAL_TOKENS = 3

_WORD_RE = re.compile(r"\w+", re.UNICODE)
_STOP_TEXT = (
    "a an the of to in on at for by with and or but is are was were be been being it its "
    "this that these those as from he she they we you i his her their our your do does did "
    "has have had will would can could there which who whom what when where why how than "
    "then so such also into about over after before"
)
_STOP = frozenset(_STOP_TEXT.split())


class TokenOffsets(Protocol):
    """The part of a tokenizer windowing needs: token character offsets of a text."""

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """(start, end) character offsets of each token of ``text``, no special tokens."""
        ...


class WhitespaceTokens:
    """Word-level stand-in for a model tokenizer (lexical stages, tests): one token per word."""

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Offsets of each word and punctuation run."""
        return [(m.start(), m.end()) for m in re.finditer(r"\w+|[^\w\s]+", text)]


def content_words(text: str) -> list[str]:
    """Lower-cased words of ``text`` without stop words (the lexical matcher's vocabulary)."""
    return [w for w in _WORD_RE.findall(text.lower()) if w not in _STOP]


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of ``text`` (deterministic regex, no model).

    The one splitter of the verifier (`affidavit.verify.lexical.sentence_spans`): it keeps
    abbreviations and initials together, splits sentences glued without a space after a
    lower-case word (concatenated paragraphs), and splits caseless text at any word.

    Examples:
        >>> sentence_spans("One. Two!")
        [(0, 4), (5, 9)]
        >>> sentence_spans("Formed by Hanson.The U.S. band split.")  # glued; an abbreviation
        [(0, 17), (17, 37)]
        >>> sentence_spans("lower-cased text . no capitals here .")  # caseless: any word opens
        [(0, 18), (19, 37)]
    """
    return _lexical_sentence_spans(text)


def overlap(claim: str, text: str) -> float:
    """Share of the claim's content words found in ``text`` (0..1)."""
    cw = set(content_words(claim))
    if not cw:
        return 0.0
    return len(cw & set(content_words(text))) / len(cw)


def bm25_scores(query: str, docs: Sequence[str], k1: float = 1.5, b: float = 0.75) -> list[float]:
    """Okapi BM25 of ``query`` against ``docs`` (IDF over ``docs`` themselves, as rank_bm25 does).

    The candidate set of one claim is small, so this is computed directly rather than indexed.
    """
    toks = [content_words(d) for d in docs]
    n = len(toks)
    if n == 0:
        return []
    avgdl = sum(len(t) for t in toks) / n or 1.0
    df: Counter[str] = Counter()
    for t in toks:
        df.update(set(t))
    q = content_words(query)
    scores = []
    for t in toks:
        tf = Counter(t)
        dl = len(t)
        s = 0.0
        for w in q:
            if w not in tf:
                continue
            idf = math.log((n - df[w] + 0.5) / (df[w] + 0.5) + 1.0)
            f = tf[w]
            s += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * dl / avgdl))
        scores.append(s)
    return scores


@dataclass(frozen=True)
class Candidate:
    """A span proposed as evidence, with its lexical rank score."""

    span: EvidenceSpan
    score: float
    chunk_index: int


def make_span(chunk: Chunk, start: int, end: int, *, checked_whole: bool = True) -> EvidenceSpan:
    """The EvidenceSpan for ``chunk.text[start:end]``."""
    return EvidenceSpan(
        chunk_id=chunk.id,
        doc_id=chunk.doc_id,
        url=chunk.url,
        start=start,
        end=end,
        text=chunk.text[start:end],
        checked_whole=checked_whole,
    )


class Windower:
    """Cuts chunks into overlapping token windows that fit ``max_len`` together with a claim.

    Args:
        tokenizer: gives token offsets (the model's own tokenizer, so counts are exact).
        max_len: the model's sequence length (claim + evidence + special tokens).
        stride: tokens between the starts of consecutive windows; clamped to three quarters of
            the window so consecutive windows always overlap, never leaving a gap.
        window_len: the preferred sequence length (the length the model was trained at; default
            ``max_len``). Windows are cut to it; only a claim too long to leave
            ``MIN_EVIDENCE_TOKENS`` beside it gets windows up to ``max_len``.
    """

    def __init__(
        self, tokenizer: TokenOffsets, max_len: int, stride: int, window_len: int | None = None
    ) -> None:
        if max_len < SPECIAL_TOKENS + MIN_EVIDENCE_TOKENS + 1:
            raise VerificationError(f"max_len {max_len} is too small to check any evidence")
        if stride < 1:
            raise VerificationError(f"window stride must be positive, got {stride}")
        self.tokenizer = tokenizer
        self.max_len = max_len
        self.window_len = min(window_len or max_len, max_len)
        self.stride = stride

    def budget(self, claim: str) -> int:
        """Evidence tokens available next to ``claim``.

        Raises:
            VerificationError: the claim alone leaves fewer than MIN_EVIDENCE_TOKENS (the claim is
                never truncated: a cut claim is a different claim).
        """
        n_claim = len(self.tokenizer.offsets(claim))
        budget = self.window_len - SPECIAL_TOKENS - n_claim
        if budget < MIN_EVIDENCE_TOKENS:
            budget = self.max_len - SPECIAL_TOKENS - n_claim
        if budget < MIN_EVIDENCE_TOKENS:
            raise VerificationError(
                f"claim is too long to check ({n_claim} tokens; the model takes {self.max_len})",
                n_claim_tokens=n_claim,
            )
        return budget

    def token_windows(self, text: str, budget: int) -> list[tuple[int, int]]:
        """Character spans of overlapping windows of at most ``budget`` tokens covering ``text``.

        Window ends are pulled back to a sentence end when one lies in the window's second half, so
        windows rarely cut a sentence; the next window starts ``stride`` tokens on (or earlier).
        """
        offs = self.tokenizer.offsets(text)
        if not offs:
            return []
        if len(offs) <= budget:
            return [(offs[0][0], offs[-1][1])]
        sent_ends = {e for _, e in sentence_spans(text)}
        stride = max(1, min(self.stride, budget * 3 // 4))
        n = len(offs)

        def word_start(k: int) -> int:
            # a sub-word token glued to the previous one is not a place to cut
            while 0 < k < n and offs[k][0] == offs[k - 1][1] and not text[offs[k][0]].isspace():
                k -= 1
            return k

        out: list[tuple[int, int]] = []
        i = 0
        while i < n:
            j = min(n, i + budget)
            if j < n:
                # prefer to end on a sentence boundary in the second half of the window
                for k in range(j, i + budget // 2, -1):
                    if offs[k - 1][1] in sent_ends:
                        j = k
                        break
                else:
                    j = max(i + 1, word_start(j))
            # the text re-tokenised on its own can differ at the edges: shrink until it fits
            while (
                j > i + 1
                and len(self.tokenizer.offsets(text[offs[i][0] : offs[j - 1][1]])) > budget
            ):
                j -= 1
            out.append((offs[i][0], offs[j - 1][1]))
            if j >= n:
                break
            # the next window starts stride tokens on (on a word start), never after this one ends
            i = max(i + 1, min(word_start(i + stride), j))
        return out

    def windows(self, claim: str, chunk: Chunk, budget: int | None = None) -> list[EvidenceSpan]:
        """Every window of ``chunk`` for ``claim`` (exact offsets, each checked whole)."""
        b = self.budget(claim) if budget is None else budget
        return [make_span(chunk, s, e) for s, e in self.token_windows(chunk.text, b)]

    def fits(self, claim: str, text: str, budget: int | None = None) -> bool:
        """True if ``text`` fits next to ``claim`` without truncation."""
        b = self.budget(claim) if budget is None else budget
        return len(self.tokenizer.offsets(text)) <= b


def rank_windows(
    claim: str, chunks: Sequence[Chunk], windower: Windower, top: int
) -> tuple[list[Candidate], int]:
    """The ``top`` windows of all chunks by BM25 against the claim, and how many there were.

    Ties keep document order (stable sort), so ranking is deterministic.
    """
    budget = windower.budget(claim)
    cands: list[tuple[EvidenceSpan, int]] = []
    for ci, chunk in enumerate(chunks):
        cands += [(w, ci) for w in windower.windows(claim, chunk, budget)]
    if not cands:
        return [], 0
    scores = bm25_scores(claim, [w.text for w, _ in cands])
    # BM25 alone ties at 0 for no shared words; overlap breaks ties by coverage
    keyed = [(scores[i] + 1e-3 * overlap(claim, cands[i][0].text), -i) for i in range(len(cands))]
    order = sorted(range(len(cands)), key=lambda i: keyed[i], reverse=True)
    return [Candidate(cands[i][0], keyed[i][0], cands[i][1]) for i in order[:top]], len(cands)


def sentence_candidates(
    claim: str, chunks: Sequence[Chunk], windows: Sequence[Candidate], top: int
) -> list[Candidate]:
    """The ``top`` sentences inside the given windows, by BM25 (for minimal evidence)."""
    seen: set[tuple[str, int, int]] = set()
    found: list[tuple[EvidenceSpan, int]] = []
    for cand in windows:
        chunk = chunks[cand.chunk_index]
        for s, e in sentence_spans(chunk.text[cand.span.start : cand.span.end]):
            s, e = s + cand.span.start, e + cand.span.start
            key = (chunk.id, s, e)
            if key not in seen:
                seen.add(key)
                found.append((make_span(chunk, s, e), cand.chunk_index))
    if not found:
        return []
    scores = bm25_scores(claim, [sp.text for sp, _ in found])
    order = sorted(range(len(found)), key=lambda i: (scores[i], -i), reverse=True)
    return [Candidate(found[i][0], scores[i], found[i][1]) for i in order[:top]]


def combinations(
    cands: Sequence[Candidate], size: int, claim: str, windower: Windower
) -> list[tuple[Candidate, ...]]:
    """Non-overlapping ``size``-sets of candidates whose concatenation fits next to ``claim``."""
    budget = windower.budget(claim)
    out = []
    for combo in itertools.combinations(cands, size):
        ordered = tuple(sorted(combo, key=lambda c: (c.chunk_index, c.span.start)))
        if _overlapping(ordered):
            continue
        if windower.fits(claim, join_spans(ordered), budget):
            out.append(ordered)
    return out


def _overlapping(ordered: Sequence[Candidate]) -> bool:
    for a, b in itertools.pairwise(ordered):
        if a.span.chunk_id == b.span.chunk_id and b.span.start < a.span.end:
            return True
    return False


def join_spans(ordered: Sequence[Candidate]) -> str:
    """The evidence text of a combination: its spans in document order, space-separated."""
    return " ".join(c.span.text for c in ordered)
