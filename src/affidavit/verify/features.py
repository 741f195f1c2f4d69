"""Frozen, fast features of a (claim, evidence) pair for the embedding head verifier.

Three families, all deterministic given the frozen MiniLM embedder:

* **embedding**: the evidence is cut into units (sentences; a sentence too long for the embedder
  is cut into overlapping word windows, so nothing is truncated); every unit is ranked lexically
  against the claim and the ``top_k`` best are embedded with the claim. Features: max / mean /
  second-best cosine, cosine to the centroid of those units, and ``[u * v, |u - v|]`` of the
  claim ``u`` against the closest unit ``v`` (InferSent style).
* **lexical**: content-stem coverage of the claim in the whole evidence (unigram, bigram,
  IDF-weighted), in the best unit and in the best two units, coverage of numbers and capitalised
  names, rarest missing word, lengths, negation counts.
* **typed checks** (`affidavit.verify.checks.run_checks`) on the best units: a fail / pass
  indicator per check type.

Only the lexical ranking sees every unit; the embedder sees the claim and the ``top_k`` units
(``n_units`` and ``n_embedded`` are reported so a caller can tell how much was embedded).

Examples:
    >>> units = evidence_units("Paris is in France. It is big.")
    >>> units
    ['Paris is in France.', 'It is big.']
    >>> lexical_coverage("Paris is in France.", "Paris is the capital of France.")
    1.0
"""

from __future__ import annotations

import itertools
import math
import re
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from affidavit.verify.lexical import NEGATIONS, content_stems, sentence_spans

#: bump when the feature layout changes (stored in the model config and checked at load)
FEATURE_VERSION = 1
EMBED_DIM = 384
#: a unit longer than this many words is cut into windows (MiniLM sees at most 256 tokens)
MAX_UNIT_WORDS = 150
UNIT_STRIDE_WORDS = 100
IDF_BUCKETS = 1 << 15
CHECK_TYPES = ("number", "date", "entity", "polarity", "comparative", "unit")
_WORD = re.compile(r"[A-Za-z0-9\u00C0-\u024F]+(?:['’][A-Za-z]+)?")
_NUM = re.compile(r"\d+(?:[.,]\d+)*")
_CAP = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-zA-Z\u00C0-\u024F]+")

Embed = Callable[[Sequence[str]], np.ndarray]
CheckFn = Callable[[str, str], Sequence[object]]

LEXICAL_NAMES = (
    "cov_uni",
    "cov_bi",
    "cov_idf",
    "cov_best_unit",
    "cov_top2_units",
    "missing_log1p",
    "missing_max_idf",
    "num_has",
    "num_cov",
    "cap_has",
    "cap_cov",
    "claim_len_log",
    "evidence_len_log",
    "len_ratio",
    "claim_neg",
    "unit_neg",
    "neg_mismatch",
    "n_units_log",
    "cos_max",
    "cos_mean",
    "cos_second",
    "cos_centroid",
)
CHECK_NAMES = tuple(f"check_{c}_{s}" for c in CHECK_TYPES for s in ("fail", "pass"))
FEATURE_NAMES = (
    LEXICAL_NAMES
    + CHECK_NAMES
    + tuple(f"uv_{i}" for i in range(EMBED_DIM))
    + tuple(f"absdiff_{i}" for i in range(EMBED_DIM))
)
N_FEATURES = len(FEATURE_NAMES)


def _bucket(stem: str) -> int:
    return zlib.crc32(stem.encode("utf-8")) % IDF_BUCKETS


class IdfTable:
    """Hashed inverse document frequencies of content stems (``IDF_BUCKETS`` buckets).

    Args:
        idf: one float per bucket; a stem never seen gets ``default``.
        default: the IDF of an unseen stem (the maximum).
    """

    def __init__(self, idf: np.ndarray, default: float) -> None:
        self.idf = np.asarray(idf, dtype=np.float32)
        self.default = float(default)

    @classmethod
    def fit(cls, docs: Sequence[str]) -> IdfTable:
        """IDF ``log((N + 1) / (df + 1)) + 1`` over ``docs`` (unseen buckets: the maximum)."""
        df = np.zeros(IDF_BUCKETS, dtype=np.float64)
        for d in docs:
            for b in {_bucket(s) for s in content_stems(d)}:
                df[b] += 1
        n = len(docs)
        default = math.log(n + 1) + 1.0
        idf = np.where(df > 0, np.log((n + 1) / (df + 1)) + 1.0, default)
        return cls(idf.astype(np.float32), default)

    def of(self, stem: str) -> float:
        """IDF of one stem."""
        return float(self.idf[_bucket(stem)])


def evidence_units(evidence: str) -> list[str]:
    """Sentences of ``evidence``; a sentence over ``MAX_UNIT_WORDS`` words becomes overlapping
    word windows (stride ``UNIT_STRIDE_WORDS``), so every word is in some unit."""
    out: list[str] = []
    for a, b in sentence_spans(evidence):
        sent = evidence[a:b]
        toks = sent.split()
        if len(toks) <= MAX_UNIT_WORDS:
            out.append(sent)
            continue
        for s in range(0, len(toks), UNIT_STRIDE_WORDS):
            out.append(" ".join(toks[s : s + MAX_UNIT_WORDS]))
            if s + MAX_UNIT_WORDS >= len(toks):
                break
    return out or ([evidence.strip()] if evidence.strip() else [])


def lexical_coverage(claim: str, evidence: str) -> float:
    """Share of the claim's content stems present in the evidence (1.0 for a claim without any)."""
    cs = set(content_stems(claim))
    if not cs:
        return 1.0
    return len(cs & set(content_stems(evidence))) / len(cs)


def _bigrams(stems: Sequence[str]) -> set[tuple[str, str]]:
    return set(itertools.pairwise(stems))


def _neg_count(text: str) -> int:
    return sum(
        1 for w in _WORD.findall(text.lower()) if w in NEGATIONS or w.endswith(("n't", "n’t"))
    )


@dataclass
class _Prep:
    """Per-pair intermediate state between the lexical pass and the embedding pass."""

    lex: list[float]
    checks: list[float]
    units: list[str]
    top: list[int]
    n_units: int


def _prepare(
    claim: str, evidence: str, idf: IdfTable, top_k: int, check_fn: CheckFn | None
) -> _Prep:
    units = evidence_units(evidence)
    c_stems = content_stems(claim)
    c_set = set(c_stems)
    e_stems = content_stems(evidence)
    e_set = set(e_stems)
    unit_sets = [set(content_stems(u)) for u in units]
    # rank units by IDF-weighted overlap with the claim (ties: earlier unit first)
    weights = {s: idf.of(s) for s in c_set}
    scores = [sum(weights[s] for s in c_set & us) for us in unit_sets]
    order = sorted(range(len(units)), key=lambda i: (-scores[i], i))
    top = order[:top_k]
    total_w = sum(weights.values())
    missing = c_set - e_set
    if c_set:
        cov_uni = len(c_set & e_set) / len(c_set)
        cov_idf = sum(weights[s] for s in c_set & e_set) / total_w
        cov_best = len(c_set & unit_sets[top[0]]) / len(c_set) if top else 0.0
        top2 = set().union(*(unit_sets[i] for i in top[:2])) if top else set()
        cov_top2 = len(c_set & top2) / len(c_set)
        miss_idf = max((weights[s] for s in missing), default=0.0) / idf.default
    else:
        cov_uni = cov_idf = cov_best = cov_top2 = 1.0
        miss_idf = 0.0
    c_bi = _bigrams(c_stems)
    cov_bi = len(c_bi & _bigrams(e_stems)) / len(c_bi) if c_bi else 1.0
    c_nums = set(_NUM.findall(claim))
    e_nums = set(_NUM.findall(evidence))
    num_cov = len(c_nums & e_nums) / len(c_nums) if c_nums else 1.0
    c_caps = {m.lower() for m in _CAP.findall(claim)}
    e_low = evidence.lower()
    cap_cov = sum(1 for c in c_caps if c in e_low) / len(c_caps) if c_caps else 1.0
    n_cw = len(_WORD.findall(claim))
    n_ew = len(_WORD.findall(evidence))
    best_text = " ".join(units[i] for i in sorted(top)) if top else ""
    c_neg = _neg_count(claim)
    u_neg = _neg_count(units[top[0]]) if top else 0
    lex = [
        cov_uni,
        cov_bi,
        cov_idf,
        cov_best,
        cov_top2,
        math.log1p(len(missing)),
        miss_idf,
        float(bool(c_nums)),
        num_cov,
        float(bool(c_caps)),
        cap_cov,
        math.log1p(n_cw),
        math.log1p(n_ew),
        n_cw / max(n_ew, 1),
        float(min(c_neg, 3)),
        float(min(u_neg, 3)),
        float((c_neg % 2) != (u_neg % 2)),
        math.log1p(len(units)),
    ]
    checks = [0.0] * len(CHECK_NAMES)
    if check_fn is not None and best_text:
        for r in check_fn(claim, best_text):
            name = getattr(r, "check", None)
            status = getattr(r, "status", None)
            if name in CHECK_TYPES and status in ("fail", "pass"):
                checks[2 * CHECK_TYPES.index(name) + (status == "pass")] = 1.0
    return _Prep(lex, checks, units, top, len(units))


def featurize(
    pairs: Sequence[tuple[str, str]],
    embed: Embed,
    idf: IdfTable,
    *,
    top_k: int = 3,
    check_fn: CheckFn | None = None,
    cache: dict[str, np.ndarray] | None = None,
) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Feature matrix (``len(pairs)`` x ``N_FEATURES``) and, per pair, (units, units embedded).

    All texts of the batch are embedded in one call (deduplicated; ``cache`` keeps vectors across
    calls, e.g. for evidence shared by many claims).

    Examples:
        >>> import numpy as np
        >>> fake = lambda texts: np.ones((len(texts), EMBED_DIM), dtype=np.float32) / EMBED_DIM**0.5
        >>> X, used = featurize([("A cat.", "A cat sat.")], fake, IdfTable.fit(["A cat sat."]))
        >>> X.shape == (1, N_FEATURES), used
        (True, [(1, 1)])
    """
    preps = [_prepare(c, e, idf, top_k, check_fn) for c, e in pairs]
    texts: set[str] = set()
    for (claim, _), p in zip(pairs, preps, strict=True):
        texts.add(claim)
        texts.update(p.units[i] for i in p.top)
    memo = cache if cache is not None else {}
    todo = sorted(t for t in texts if t not in memo)
    if todo:
        vecs = np.asarray(embed(todo), dtype=np.float32)
        for t, v in zip(todo, vecs, strict=True):
            memo[t] = v
    out = np.zeros((len(pairs), N_FEATURES), dtype=np.float32)
    used: list[tuple[int, int]] = []
    zero = np.zeros(EMBED_DIM, dtype=np.float32)
    for k, ((claim, _), p) in enumerate(zip(pairs, preps, strict=True)):
        u = memo[claim]
        if p.top:
            vs = np.stack([memo[p.units[i]] for i in p.top])
            cos = vs @ u
            best = int(np.argmax(cos))
            v = vs[best]
            srt = np.sort(cos)[::-1]
            centroid = vs.mean(axis=0)
            cos_feats = [
                float(srt[0]),
                float(cos.mean()),
                float(srt[1] if len(srt) > 1 else srt[0]),
                float(centroid @ u / max(float(np.linalg.norm(centroid)), 1e-9)),
            ]
        else:
            v = zero
            cos_feats = [0.0, 0.0, 0.0, 0.0]
        row = p.lex + cos_feats + p.checks
        out[k, : len(row)] = row
        out[k, len(row) : len(row) + EMBED_DIM] = u * v
        out[k, len(row) + EMBED_DIM :] = np.abs(u - v)
        used.append((p.n_units, len(p.top)))
    return out, used


__all__ = [
    "FEATURE_NAMES",
    "FEATURE_VERSION",
    "N_FEATURES",
    "IdfTable",
    "evidence_units",
    "featurize",
    "lexical_coverage",
]
