"""Evaluation of a claim verifier: metrics with bootstrap intervals, and a reliability plot.

Metrics (supported vs not): balanced accuracy and F1 at the policy's tau_entail, AUROC of
p_entail, expected calibration error (10 equal-width bins); 3-way accuracy on 3-way labelled sets.
Each comes with a bootstrap 95% interval (percentile method, seeded).

Examples:
    >>> import numpy as np
    >>> y = np.array([1, 1, 0, 0]); p = np.array([0.9, 0.4, 0.3, 0.6])
    >>> balanced_accuracy(y, p >= 0.5), auroc(y, p)
    (0.5, 0.75)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from affidavit.core.errors import MissingDependencyError
from affidavit.core.types import Verdict
from affidavit.core.verification import Interval, SetMetrics
from affidavit.verify.base import ClaimVerifier
from affidavit.verify.cascade import chunks_from_texts, claim_from_text
from affidavit.verify.datasets import THREE_WAY_SETS, EvalItem

log = logging.getLogger(__name__)

GOLD_3WAY = {"entail": "supported", "neutral": "unsupported", "contradict": "contradicted"}


def balanced_accuracy(y: np.ndarray, pred: np.ndarray) -> float:
    """Mean of the true-positive and true-negative rates over the classes present."""
    y, pred = np.asarray(y).astype(bool), np.asarray(pred).astype(bool)
    rates = []
    if y.any():
        rates.append(float(pred[y].mean()))
    if (~y).any():
        rates.append(float((~pred[~y]).mean()))
    return float(np.mean(rates)) if rates else 0.0


def f1(y: np.ndarray, pred: np.ndarray) -> float:
    """F1 of the positive class."""
    y, pred = np.asarray(y).astype(bool), np.asarray(pred).astype(bool)
    tp = float((y & pred).sum())
    denom = float(y.sum() + pred.sum())
    return 2 * tp / denom if denom else 0.0


def auroc(y: np.ndarray, score: np.ndarray) -> float | None:
    """Area under the ROC curve (Mann-Whitney, ties count half); None with one class only."""
    y = np.asarray(y).astype(bool)
    s = np.asarray(score, dtype=np.float64)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return None
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s), dtype=np.float64)
    sorted_s = s[order]
    # average ranks over ties
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and sorted_s[j + 1] == sorted_s[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def ece(y: np.ndarray, p: np.ndarray, bins: int = 10) -> float:
    """Expected calibration error of p (probability of the positive class), equal-width bins."""
    y = np.asarray(y, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    idx = np.minimum((p * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        m = idx == b
        if m.any():
            total += m.sum() / len(p) * abs(p[m].mean() - y[m].mean())
    return float(total)


def reliability(y: np.ndarray, p: np.ndarray, bins: int = 10) -> list[tuple[float, float, int]]:
    """Per non-empty bin: (mean predicted, observed rate, count)."""
    y = np.asarray(y, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    idx = np.minimum((p * bins).astype(int), bins - 1)
    return [
        (float(p[idx == b].mean()), float(y[idx == b].mean()), int((idx == b).sum()))
        for b in range(bins)
        if (idx == b).any()
    ]


def bootstrap_ci(
    metric: Callable[[np.ndarray], float | None], n: int, *, rounds: int = 1000, seed: int = 0
) -> Interval | None:
    """Percentile 95% interval of ``metric(indices)`` over bootstrap resamples of ``range(n)``."""
    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(rounds):
        v = metric(rng.integers(0, n, n))
        if v is not None:
            vals.append(v)
    if not vals:
        return None
    lo, hi = np.percentile(vals, [2.5, 97.5])
    return Interval(low=float(lo), high=float(hi))


def metrics_for(
    name: str,
    items: Sequence[EvalItem],
    verdicts: Sequence[Verdict],
    tau_entail: float,
    *,
    rounds: int = 1000,
    seconds: float = 0.0,
    note: str = "",
) -> SetMetrics:
    """SetMetrics of verdicts against gold labels; the binary prediction is label == supported."""
    y = np.array([it.label == "entail" for it in items])
    p = np.array([v.p_entail for v in verdicts])
    pred = np.array([v.label == "supported" for v in verdicts])
    acc3: float | None = None
    correct3 = None
    if name in THREE_WAY_SETS or name.startswith("anli"):
        correct3 = np.array(
            [GOLD_3WAY.get(it.label) == v.label for it, v in zip(items, verdicts, strict=True)]
        )
        acc3 = float(correct3.mean())
    fns: dict[str, Callable[[np.ndarray], float | None]] = {
        "balanced_accuracy": lambda i: balanced_accuracy(y[i], pred[i]),
        "f1": lambda i: f1(y[i], pred[i]),
        "auroc": lambda i: auroc(y[i], p[i]),
        "ece": lambda i: ece(y[i], p[i]),
    }
    if correct3 is not None:
        c3 = correct3
        fns["accuracy_3way"] = lambda i: float(c3[i].mean())
    ci = {}
    for k, fn in fns.items():
        iv = bootstrap_ci(fn, len(items), rounds=rounds)
        if iv is not None:
            ci[k] = iv
    return SetMetrics(
        name=name,
        n=len(items),
        n_positive=int(y.sum()),
        n_errors=sum(not v.complete for v in verdicts),
        balanced_accuracy=balanced_accuracy(y, pred),
        f1=f1(y, pred),
        auroc=auroc(y, p),
        ece=ece(y, p),
        accuracy_3way=acc3,
        threshold=tau_entail,
        ci95=ci,
        seconds=seconds,
        note=note,
    )


def run_set(
    verifier: ClaimVerifier,
    items: Sequence[EvalItem],
    progress: Callable[[int], None] | None = None,
) -> tuple[list[Verdict], float]:
    """Verify every item (claim against its evidence as one chunk); verdicts and seconds."""
    t0 = time.perf_counter()
    out = []
    for k, it in enumerate(items):
        out.append(
            verifier.verify(claim_from_text(it.claim, it.id), chunks_from_texts([it.evidence]))
        )
        if progress is not None:
            progress(k + 1)
    return out, time.perf_counter() - t0


def reliability_plot(
    curves: dict[str, tuple[np.ndarray, np.ndarray]], path: Path, title: str = ""
) -> Path:
    """Write a reliability diagram (one line per set) as PNG.

    Raises:
        MissingDependencyError: matplotlib is not installed.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise MissingDependencyError("matplotlib", "dev", purpose="reliability plots") from exc
    fig, ax = plt.subplots(figsize=(6, 6))
    ax.plot([0, 1], [0, 1], "k--", lw=1, label="perfect calibration")
    colours = [plt.get_cmap("tab20")(i) for i in range(20)]
    for k, (name, (y, p)) in enumerate(curves.items()):
        pts = reliability(y, p)
        if pts:
            ax.plot(
                [a for a, _, _ in pts],
                [b for _, b, _ in pts],
                marker="o",
                ms=3,
                label=name,
                color=colours[k % len(colours)],
            )
    ax.set_xlabel("predicted p_entail (bin mean)")
    ax.set_ylabel("observed fraction supported")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_title(title or "Verifier reliability")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
