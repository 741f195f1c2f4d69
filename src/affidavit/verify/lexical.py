"""Small, deterministic text helpers shared by the typed checks and the audit matcher.

Tokens are lower-cased word forms; :func:`stem` is a light suffix stripper (plus a few irregular
verb forms) so that "founded"/"founds"/"founding" and "won"/"wins" meet. Nothing here loads a model.

Example:
    >>> content_stems("The Eiffel Tower was completed in 1889.")
    ['eiffel', 'tower', 'complet', '1889']
"""

from __future__ import annotations

import re
from functools import lru_cache

WORD_RE = re.compile(r"[A-Za-z0-9\u00C0-\u024F]+(?:['’][A-Za-z]+)?")

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "then",
        "than",
        "that",
        "this",
        "these",
        "those",
        "there",
        "here",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "do",
        "does",
        "did",
        "done",
        "has",
        "have",
        "had",
        "having",
        "it",
        "its",
        "it's",
        "itself",
        "he",
        "she",
        "they",
        "them",
        "their",
        "theirs",
        "his",
        "her",
        "hers",
        "him",
        "we",
        "us",
        "our",
        "you",
        "your",
        "i",
        "me",
        "my",
        "mine",
        "who",
        "whom",
        "whose",
        "which",
        "what",
        "when",
        "where",
        "why",
        "how",
        "also",
        "very",
        "so",
        "such",
        "can",
        "could",
        "would",
        "should",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "into",
        "onto",
        "over",
        "under",
        "about",
        "after",
        "before",
        "between",
        "through",
        "during",
        "within",
        "without",
        "upon",
        "up",
        "down",
        "out",
        "off",
        "again",
        "further",
        "once",
        "all",
        "any",
        "both",
        "each",
        "few",
        "more",
        "most",
        "other",
        "some",
        "own",
        "same",
        "too",
        "just",
        "only",
        "s",
        "t",
        "not",
        "no",
        "nor",
        "never",
        "now",
        "well",
        "yet",
        "while",
        "because",
        "until",
        "unless",
        "although",
        "though",
        "whether",
        "either",
        "neither",
        "one",
        "ones",
        "many",
        "much",
        "however",
        "thus",
        "hence",
        "therefore",
        "via",
        "per",
        "among",
        "amongst",
        "around",
        "along",
        "across",
        "against",
        "toward",
        "towards",
        "near",
        "like",
        "unlike",
        "including",
        "include",
        "includes",
        "included",
        "several",
        "various",
        "often",
        "usually",
    ]
)

# words whose presence changes nothing about what a claim asserts (hedges, fillers)
FILLER = frozenset(
    [
        "notably",
        "indeed",
        "actually",
        "really",
        "basically",
        "essentially",
        "generally",
        "overall",
        "moreover",
        "furthermore",
        "additionally",
        "also",
        "approximately",
        "about",
        "roughly",
        "nearly",
        "almost",
        "around",
        "some",
    ]
)

IRREGULAR = {
    "won": "win",
    "wins": "win",
    "winning": "win",
    "lost": "lose",
    "loses": "lose",
    "losing": "lose",
    "began": "begin",
    "begun": "begin",
    "built": "build",
    "bought": "buy",
    "sold": "sell",
    "wrote": "write",
    "written": "write",
    "made": "make",
    "found": "find",
    "grew": "grow",
    "grown": "grow",
    "led": "lead",
    "left": "leave",
    "held": "hold",
    "took": "take",
    "taken": "take",
    "gave": "give",
    "given": "give",
    "became": "become",
    "born": "bear",
    "bore": "bear",
    "died": "die",
    "dies": "die",
    "dying": "die",
    "men": "man",
    "women": "woman",
    "children": "child",
    "people": "person",
    "larger": "large",
    "largest": "large",
    "bigger": "big",
    "biggest": "big",
    "smaller": "small",
    "smallest": "small",
    "better": "good",
    "best": "good",
    "worse": "bad",
    "worst": "bad",
}

_SUFFIXES = (
    "ations",
    "ation",
    "ments",
    "ment",
    "ingly",
    "ings",
    "ing",
    "edly",
    "ies",
    "ied",
    "ers",
    "er",
    "ed",
    "es",
    "ly",
    "s",
)


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Light, deterministic stemmer: lower-case, irregular forms, then one suffix strip.

    Example:
        >>> stem("Founded"), stem("founding"), stem("won")
        ('found', 'found', 'win')
    """
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    if w in IRREGULAR:
        return IRREGULAR[w]
    if w.isdigit() or len(w) <= 3:
        return w
    for suf in _SUFFIXES:
        # "tower", "river" keep their -er; "player", "longer" lose it
        if w.endswith(suf) and len(w) - len(suf) >= (4 if suf in ("er", "ers") else 3):
            w = w[: -len(suf)]
            break
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]  # "stopp" -> "stop"
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    return w


def words(text: str) -> list[str]:
    """Word tokens of a text, in order, case kept."""
    return WORD_RE.findall(text)


def content_stems(text: str) -> list[str]:
    """Stems of the content words (no stopwords, no fillers), in order."""
    return list(_content_stems(text))


_SKIP = STOPWORDS | FILLER


@lru_cache(maxsize=16384)
def _content_stems(text: str) -> tuple[str, ...]:
    out = []
    for lw in WORD_RE.findall(text.lower().replace("’", "'")):
        if lw in _SKIP or (lw.endswith("n't") and "'" in lw):
            continue
        out.append(stem(lw))
    return tuple(out)


_SENT_RE = re.compile(
    r"(?<=[.!?])[\"')\]]?\s+(?=[\"'(\[]?[A-Z0-9])"  # ". Next"
    r"|(?<=[a-z0-9)][.!?])(?=[A-Z][a-z])"  # "century.First" (glued sentences)
    r"|\n\s*\n|\n(?=\s*[-*•]\s)"
)
_ABBREV = re.compile(
    r"(?:\b(?:Mr|Mrs|Ms|Dr|Prof|Sr|Jr|St|Mt|vs|etc|e\.g|i\.e|Inc|Ltd|Co|Corp|No|Fig|U\.S|U\.K)"
    r"|\b[A-Z])\.$"
)
# text without a single capital letter (lower-cased corpora, transcripts): any word may open a
# sentence, and abbreviations are matched case-insensitively
_SENT_CASELESS_RE = re.compile(
    r"(?<=[.!?])[\"')\]]?\s+(?=[\"'(\[]?[^\W_])|\n\s*\n|\n(?=\s*[-*•]\s)"
)
_ABBREV_CASELESS = re.compile(
    r"\b(?:mr|mrs|ms|dr|prof|sr|jr|st|mt|vs|etc|e\.g|i\.e|inc|ltd|co|corp|no|fig|u\.s|u\.k)\.$"
)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """See :func:`_sentence_spans` (cached; a fresh list each call)."""
    return list(_sentence_spans(text))


@lru_cache(maxsize=8192)
def _sentence_spans(text: str) -> tuple[tuple[int, int], ...]:
    """Character spans of the sentences of a text (abbreviations and initials kept together).

    Example:
        >>> t = "Dr. Smith came. He left in 1990."
        >>> [t[a:b] for a, b in sentence_spans(t)]
        ['Dr. Smith came.', 'He left in 1990.']
        >>> t = "dr. smith came . he left in 1990 ."  # no capital anywhere: any word opens
        >>> [t[a:b] for a, b in sentence_spans(t)]
        ['dr. smith came .', 'he left in 1990 .']
    """
    spans: list[tuple[int, int]] = []
    start = 0
    cased = any(c.isupper() for c in text)
    sent_re, abbrev = (_SENT_RE, _ABBREV) if cased else (_SENT_CASELESS_RE, _ABBREV_CASELESS)
    for m in sent_re.finditer(text):
        head = text[start : m.start()]
        if abbrev.search(head[-16:].rstrip("\"')] ")):  # the tail is enough
            continue
        if head.strip():
            spans.append(_trim(text, start, m.start()))
        start = m.end()
    if text[start:].strip():
        spans.append(_trim(text, start, len(text)))
    return tuple(spans)


def _trim(text: str, a: int, b: int) -> tuple[int, int]:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b
