"""Claim -> evidence matching: BM25 over the given chunks, then the best sentence window.

The index is built per call over the chunks an application retrieved (they change every call).
An exact in-process BM25 (Lucene idf, k1=1.5, b=0.75) is cheaper than bm25s' setup for the
chunk counts an application retrieves; from `BM25S_MIN_CHUNKS` chunks on, bm25s scores the
same formula. Both paths are
kept and compared in the tests and in ``benchmarks/audit_latency.py``.

The confidence of a match is the lexical coverage of the claim's content words (stemmed, numbers
excluded: the number check owns them) by the best window of one or two consecutive sentences.
Its ``predicate_coverage`` is the share of the claim's words besides names that a window of the
same chunk covers: the auditor needs some of them, since a name alone does not support what a
claim says of it ("Einstein was a carpenter." shares only "Einstein" with "Albert Einstein was
born in Ulm.").

Examples:
    >>> from affidavit.core.types import Chunk
    >>> idx = EvidenceIndex([Chunk(text="Paris is the capital of France. It is big.")])
    >>> m = idx.match("Paris is the capital of France.")[0]
    >>> round(m.coverage, 2), m.window_text
    (1.0, 'Paris is the capital of France.')
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from affidavit.core.types import Chunk
from affidavit.verify.casing import recase_like
from affidavit.verify.lexical import STOPWORDS, WORD_RE, content_stems, sentence_spans, stem
from affidavit.verify.numbers import SCALES, SPELLED, UNITS

# measured here (build + 4 queries, HaluEval passages): exact 0.9 / 10 / 56 ms and bm25s
# 18 / 15 / 54 ms at 50 / 500 / 2000 chunks: bm25s's fixed overhead only pays off beyond ~2000
BM25S_MIN_CHUNKS = 2000
K1 = 1.5
B = 0.75
_NUMERIC = re.compile(r"^\d[\d,.]*$")
_DIGITS = re.compile(r"\d+(?:[.,]\d+)*")
_NUMBER_WORDS = frozenset(
    {stem(w) for w in SPELLED if " " not in w}
    | {stem(w) for w in SCALES}
    | {stem(w) for w in UNITS if " " not in w and len(w) > 2}
)


def match_stems(text: str) -> list[str]:
    """Content stems used for matching (numbers, number and unit words left to the checks)."""
    return [s for s in content_stems(text) if not _NUMERIC.match(s) and s not in _NUMBER_WORDS]


_SKIP_BM25 = STOPWORDS | _NUMBER_WORDS


def bm25_tokens(text: str) -> list[str]:
    """Tokens for BM25 candidate ranking: lower-cased words cut to 5 letters (a crude, cheap
    stemmer: "founded" and "founding" meet), no stopwords, no numbers."""
    return [
        w[:5]
        for w in WORD_RE.findall(text.lower())
        if w not in _SKIP_BM25 and not w.isdigit() and len(w) > 1
    ]


@dataclass(frozen=True)
class Window:
    """One or two consecutive sentences of a chunk."""

    start: int
    end: int
    stems: frozenset[str]
    prefixes: frozenset[str]


@dataclass(frozen=True)
class Match:
    """A candidate piece of evidence for a claim."""

    chunk_index: int
    bm25: float
    coverage: float
    window_start: int
    window_end: int
    window_text: str
    predicate_coverage: float = 1.0
    """Coverage of the claim's content words besides names by the chunk's best window for
    them (1.0: it has none)."""


class ExactBM25:
    """Okapi BM25 with Lucene's idf over pre-tokenised documents (no dependencies).

    Examples:
        >>> bm = ExactBM25([["a", "b"], ["b", "c", "c"]])
        >>> [round(s, 3) for s in bm.scores(["c"])]
        [0.0, 0.372]
    """

    def __init__(self, docs: Sequence[Sequence[str]]) -> None:
        self.n = len(docs)
        self.lengths = [len(d) for d in docs]
        self.avgdl = (sum(self.lengths) / self.n) if self.n else 0.0
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for i, d in enumerate(docs):
            for term, tf in Counter(d).items():
                self.postings.setdefault(term, []).append((i, tf))

    def scores(self, query: Sequence[str]) -> list[float]:
        """BM25 score of every document for the query (terms counted once each)."""
        out = [0.0] * self.n
        for term in dict.fromkeys(query):
            plist = self.postings.get(term)
            if not plist:
                continue
            df = len(plist)
            idf = math.log(1.0 + (self.n - df + 0.5) / (df + 0.5))
            for i, tf in plist:
                norm = K1 * (1.0 - B + B * self.lengths[i] / (self.avgdl or 1.0))
                # Lucene form (no (k1 + 1) factor in the numerator), as bm25s computes it
                out[i] += idf * tf / (tf + norm)
        return out


class Bm25sIndex:
    """The same scores through bm25s (for many chunks)."""

    def __init__(self, docs: Sequence[Sequence[str]]) -> None:
        import logging

        import bm25s  # core dependency; imported here to keep `import affidavit` light

        # bm25s sets its own logger to DEBUG on import: without this, "DEBUG bm25s: Building
        # index" reached stderr on every audit, with or without -v
        logging.getLogger("bm25s").setLevel(logging.WARNING)

        self.n = len(docs)
        self._vocab: set[str] = set()
        # bm25s cannot index a corpus without a single token: every score is then 0
        if any(docs):
            self._bm = bm25s.BM25(method="lucene", k1=K1, b=B)
            self._bm.index([list(d) for d in docs], show_progress=False)
            self._vocab = set(self._bm.vocab_dict) - {""}

    def scores(self, query: Sequence[str]) -> list[float]:
        """BM25 score of every document for the query."""
        q = [t for t in dict.fromkeys(query) if t in self._vocab]
        if not q:
            return [0.0] * self.n
        return [float(x) for x in self._bm.get_scores(q)]


class EvidenceIndex:
    """The chunks of one audit, indexed for BM25 and sentence windows.

    Args:
        chunks: the (policy-kept) chunks.
        backend: ``auto`` (exact below `BM25S_MIN_CHUNKS` chunks, bm25s above),
            ``exact`` or ``bm25s``.
        max_window_sentences: sentences per evidence window (1 or 2 is typical).
    """

    def __init__(
        self,
        chunks: Sequence[Chunk],
        backend: Literal["auto", "exact", "bm25s"] = "auto",
        max_window_sentences: int = 2,
    ) -> None:
        self.chunks = list(chunks)
        self.max_window_sentences = max_window_sentences
        use_bm25s = backend == "bm25s" or (
            backend == "auto" and len(self.chunks) >= BM25S_MIN_CHUNKS
        )
        self.backend = "bm25s" if use_bm25s else "exact"
        self._sentences: dict[int, tuple[list[tuple[int, int]], list[list[str]]]] = {}
        self._windows: dict[int, list[Window]] = {}
        # BM25 only picks candidates: plain lower-cased words (no stemming) keep the index cheap
        # at 500 chunks; the candidates' windows are then stemmed for the coverage score
        docs = [bm25_tokens(c.text) for c in self.chunks]
        self.bm25: ExactBM25 | Bm25sIndex = Bm25sIndex(docs) if use_bm25s else ExactBM25(docs)
        self._flat_and_numbers: tuple[list[str], list[frozenset[str]]] | None = None

    def _tie_breaks(self, claim: str) -> tuple[list[bool], list[int]]:
        """Per chunk: does it hold the claim verbatim, and how many of the claim's numbers.

        BM25 here ignores numbers (the number check owns them), so among near-identical chunks
        that differ only in their numbers every score ties and the first ``top_k`` chunks won:
        a sentence copied word for word from chunk 17 of 100 was checked against chunk 0
        ("year 1961 disagrees with 1301"). A chunk that holds the claim verbatim, then one that
        shares more of its numbers, now comes first.
        """
        if self._flat_and_numbers is None:  # built once per index, on the first claim
            self._flat_and_numbers = (
                [" ".join(c.text.split()) for c in self.chunks],
                [frozenset(_DIGITS.findall(c.text)) for c in self.chunks],
            )
        flat, numbers = self._flat_and_numbers
        needle = " ".join(claim.split()).rstrip(".!?;: ")
        verbatim = [bool(needle) and needle in t for t in flat]
        nums = set(_DIGITS.findall(claim))
        shared = [len(nums & n) for n in numbers] if nums else [0] * len(self.chunks)
        return verbatim, shared

    def _sentence_stems(self, i: int) -> tuple[list[tuple[int, int]], list[list[str]]]:
        if i not in self._sentences:
            text = self.chunks[i].text
            spans = sentence_spans(text) or [(0, len(text))]
            self._sentences[i] = (spans, [match_stems(text[a:b]) for a, b in spans])
        return self._sentences[i]

    def windows(self, i: int) -> list[Window]:
        """Sentence windows of chunk ``i`` (computed lazily, cached)."""
        if i not in self._windows:
            spans, sent_stems = self._sentence_stems(i)
            stems = [frozenset(st) for st in sent_stems]
            wins: list[Window] = []
            # single sentences first, so a tie in coverage keeps the shorter window
            for n in range(self.max_window_sentences):
                for j in range(len(spans) - n):
                    acc = frozenset().union(*stems[j : j + n + 1])
                    wins.append(
                        Window(spans[j][0], spans[j + n][1], acc, frozenset(s[:5] for s in acc))
                    )
            self._windows[i] = wins
        return self._windows[i]

    def match(self, claim: str, top_k: int = 5) -> list[Match]:
        """Candidate evidence for a claim, best coverage first (ties: higher BM25 first)."""
        if not self.chunks:
            return []
        q = list(dict.fromkeys(match_stems(claim)))
        scores = self.bm25.scores(bm25_tokens(claim))
        verbatim, shared = self._tie_breaks(claim)
        order = sorted(range(len(scores)), key=lambda i: (-verbatim[i], -scores[i], -shared[i]))
        cands = [i for i in order[:top_k] if scores[i] > 0.0 or verbatim[i]]
        out: list[Match] = []
        for i in cands:
            names = name_stems(claim, self.chunks[i].text)
            said = [st for st in q if st not in names]
            best: tuple[float, float, int, int] = (-1.0, -1.0, 0, 0)
            said_best = 0.0 if said else 1.0
            for w in self.windows(i):
                cov = coverage(q, w.stems, w.prefixes)
                pcov = coverage(said, w.stems, w.prefixes) if said else 1.0
                # what is said of a name may be in a window of its own ("The Eiffel Tower is
                # a tower in Paris. [...] It is 330 metres tall."), but in the same chunk
                said_best = max(said_best, pcov)
                # prefer the shorter window on ties: less text, same support
                if cov > best[0] + 1e-9 or (cov > best[0] - 1e-9 and pcov > best[1] + 1e-9):
                    best = (cov, pcov, w.start, w.end)
            cov, _, a, b = best
            text = self.chunks[i].text[a:b]
            out.append(Match(i, scores[i], max(cov, 0.0), a, b, text, said_best))
        # ties in coverage: the chunk holding the claim verbatim, then BM25, then shared numbers
        out.sort(
            key=lambda m: (
                -m.coverage,
                -verbatim[m.chunk_index],
                -m.bm25,
                -shared[m.chunk_index],
            )
        )
        return out


def name_stems(claim: str, evidence: str) -> frozenset[str]:
    """Stems of the names in a claim: the words it capitalises (a claim written in lower case
    takes the capitals the evidence gives it). Its first word is a name only when the evidence
    writes it with a capital and never without, so a capital that only opens the sentence
    ("Carpenters built it.") names nothing.

    Examples:
        >>> sorted(name_stems("Einstein was a carpenter.", "Albert Einstein was born in Ulm."))
        ['einstein']
        >>> sorted(name_stems("Carpenters built the bridge.", "The carpenters built it."))
        []
    """
    words = WORD_RE.findall(recase_like(claim, evidence))
    if not words:
        return frozenset()
    found = WORD_RE.findall(evidence)
    lower = {stem(w) for w in found if w[0].islower()}
    upper = {stem(w) for w in found if w[0].isupper()}
    first = stem(words[0])
    names = {stem(w) for w in words[1:] if w[0].isupper()}
    if words[0][0].isupper() and first in upper and first not in lower:
        names.add(first)
    return frozenset(names)


def coverage(claim_stems: Sequence[str], stems: frozenset[str], prefixes: frozenset[str]) -> float:
    """Share of the claim's content stems found in a window (5-letter prefix match counts).

    A claim with no content word (after numbers are set aside) has coverage 0: nothing shows it
    is about this evidence.
    """
    if not claim_stems:
        return 0.0
    hit = sum(1 for s in claim_stems if s in stems or (len(s) >= 5 and s[:5] in prefixes))
    return hit / len(claim_stems)
