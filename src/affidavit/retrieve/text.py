"""Lexical analysis shared by every BM25 index and query (one definition, so they always agree).

Lower-cased Unicode word tokens, English stop words removed, Snowball (Porter 2) stemming when
PyStemmer is installed. The analyser's name is recorded in the store so that an index is never
queried with a different analyser.

Examples:
    >>> Analyzer().tokens("The studies were running")
    ['studi', 'run']
"""

from __future__ import annotations

import logging
import re
import unicodedata
from functools import lru_cache
from typing import Any

logger = logging.getLogger(__name__)

_WORD = re.compile(r"\w+", re.UNICODE)

# bm25s' English list plus a few frequent function words; kept literal so the analyser's output
# does not change when a dependency updates its list.
STOPWORDS_EN = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
        "were",
        "been",
        "being",
        "has",
        "have",
        "had",
        "do",
        "does",
        "did",
        "from",
        "which",
        "who",
        "whom",
        "its",
        "our",
        "we",
        "you",
        "your",
        "he",
        "she",
        "his",
        "her",
        "them",
        "than",
        "so",
        "can",
        "could",
        "would",
        "should",
        "may",
        "might",
        "also",
    ]
)


@lru_cache(maxsize=1)
def _stemmer() -> Any | None:
    try:
        import Stemmer  # PyStemmer
    except ImportError:  # pragma: no cover - PyStemmer is a core dependency
        logger.warning("PyStemmer is not installed: BM25 runs without stemming")
        return None
    return Stemmer.Stemmer("english")


class Analyzer:
    """Turns text into BM25 terms.

    Args:
        stem: apply English Snowball stemming.
        stopwords: drop English stop words.
    """

    def __init__(self, *, stem: bool = True, stopwords: bool = True) -> None:
        self.stem = stem and _stemmer() is not None
        self.stopwords = stopwords

    @property
    def name(self) -> str:
        """Identifier recorded with an index (changes when the analysis would)."""
        return f"word-lower{'-stop' if self.stopwords else ''}{'-snowball' if self.stem else ''}"

    def tokens(self, text: str) -> list[str]:
        """The text's terms, in order."""
        words = _WORD.findall(unicodedata.normalize("NFKC", text).lower())
        if self.stopwords:
            words = [w for w in words if w not in STOPWORDS_EN]
        stemmer = _stemmer() if self.stem else None
        if stemmer is not None and words:
            words = list(stemmer.stemWords(words))
        return words

    def query_terms(self, text: str) -> list[str]:
        """A query's distinct terms, in order of first occurrence.

        Every BM25 backend scores a query term once however often the query repeats it, as
        Qdrant's sparse query does (each term with weight 1): bm25s would add a term's weight once
        per occurrence, tilting the ranking towards whatever words a query happens to repeat.

        Examples:
            >>> Analyzer().query_terms("cancer cells and the cancer")
            ['cancer', 'cell']
        """
        return list(dict.fromkeys(self.tokens(text)))
