"""Rank fusion of the lexical and dense rankings.

* `rrf`: reciprocal rank fusion (Cormack et al. 2009), ``score(d) = sum_r w_r / (k + rank_r(d))``:
  ranks only, so a list's confidence (a passage scoring far above the next) is lost.
* `convex`: a convex combination of min-max normalised scores (Bruch et al. 2023, "An Analysis of
  Fusion Functions for Hybrid Retrieval"), ``score(d) = sum_r w_r * norm_r(d)`` with the weights
  summing to one: keeps how far apart the scores of a list are. The retriever's default; the
  passage benchmark compares the two.

Examples:
    >>> rrf([["a", "b"], ["b", "c"]], k=60)[0][0]
    'b'
    >>> [item for item, _ in convex([{"a": 9.0, "b": 1.0, "c": 0.5}, {"b": 0.9, "c": 0.8}])]
    ['b', 'a', 'c']
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

T = TypeVar("T", bound=Hashable)


def rrf(
    rankings: Sequence[Sequence[T]], k: int = 60, weights: Sequence[float] | None = None
) -> list[tuple[T, float]]:
    """Fuse rankings (each best first, ranks from 1) into one list of ``(item, score)``.

    Ties are broken by the best single rank an item reached, then by first appearance, so the
    result is deterministic.
    """
    if k < 1:
        raise ValueError(f"rrf k must be >= 1, got {k}")
    w = list(weights) if weights is not None else [1.0] * len(rankings)
    if len(w) != len(rankings):
        raise ValueError("one weight per ranking")
    scores: dict[T, float] = {}
    best: dict[T, int] = {}
    for ranking, weight in zip(rankings, w, strict=True):
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
            best[item] = min(best.get(item, rank), rank)
    order = {item: i for i, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda kv: (-kv[1], best[kv[0]], order[kv[0]]))


def min_max(scores: Mapping[T, float]) -> dict[T, float]:
    """Scores scaled to [0, 1] by the list's own lowest and highest (finite) score.

    A score that is not finite is left out; a list whose scores are all equal scores 1.0 each
    (every item is the list's best).

    Examples:
        >>> min_max({"a": 4.0, "b": 2.0, "c": 1.0})
        {'a': 1.0, 'b': 0.3333333333333333, 'c': 0.0}
        >>> min_max({"a": 0.7})
        {'a': 1.0}
    """
    finite = {item: float(s) for item, s in scores.items() if math.isfinite(s)}
    if not finite:
        return {}
    lo, hi = min(finite.values()), max(finite.values())
    if hi <= lo:
        return dict.fromkeys(finite, 1.0)
    return {item: (s - lo) / (hi - lo) for item, s in finite.items()}


def convex(
    score_lists: Sequence[Mapping[T, float]], weights: Sequence[float] | None = None
) -> list[tuple[T, float]]:
    """Fuse scored lists into one list of ``(item, score)``: each list min-max normalised
    (`min_max`), then weighted by ``weights`` divided by their sum (equal by default); an item
    a list does not hold scores 0 there (as its lowest candidate).

    Ties are broken by first appearance (the first list's order first), so the result is
    deterministic.

    Raises:
        ValueError: a weight count that is not one per list, a negative or non-finite weight, or
            weights summing to zero.
    """
    w = list(weights) if weights is not None else [1.0] * len(score_lists)
    if len(w) != len(score_lists):
        raise ValueError("one weight per list")
    if any(not math.isfinite(x) or x < 0 for x in w) or (score_lists and sum(w) <= 0):
        raise ValueError(f"convex weights must be finite, >= 0 and not all 0; got {w}")
    total = sum(w)
    fused: dict[T, float] = {}
    for scores, weight in zip(score_lists, w, strict=True):
        for item in scores:
            fused.setdefault(item, 0.0)
        for item, s in min_max(scores).items():
            fused[item] += weight / total * s
    order = {item: i for i, item in enumerate(fused)}
    return sorted(fused.items(), key=lambda kv: (-kv[1], order[kv[0]]))


__all__ = ["convex", "min_max", "rrf"]
