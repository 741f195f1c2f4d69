"""Reciprocal rank fusion (Cormack et al. 2009): ``score(d) = sum_r w_r / (k + rank_r(d))``.

Examples:
    >>> rrf([["a", "b"], ["b", "c"]], k=60)[0][0]
    'b'
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
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
