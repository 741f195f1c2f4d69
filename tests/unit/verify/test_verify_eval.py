"""Evaluation metrics against hand-computed cases; the reliability plot is a real PNG."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from affidavit.core.types import Verdict
from affidavit.verify.datasets import EvalItem, sample
from affidavit.verify.eval import (
    auroc,
    balanced_accuracy,
    bootstrap_ci,
    ece,
    f1,
    metrics_for,
    reliability_plot,
)


def test_metrics_on_a_hand_computed_case() -> None:
    y = np.array([1, 1, 1, 0, 0])
    p = np.array([0.9, 0.6, 0.2, 0.7, 0.1])
    pred = p >= 0.5
    # TPR 2/3, TNR 1/2
    assert balanced_accuracy(y, pred) == pytest.approx((2 / 3 + 1 / 2) / 2)
    # tp 2, fp 1, fn 1 -> F1 = 4 / 6
    assert f1(y, pred) == pytest.approx(4 / 6)
    # positive-negative pairs ranked right: (0.9>0.7,0.9>0.1,0.6<0.7,0.6>0.1,0.2<0.7,0.2>0.1) = 4/6
    assert auroc(y, p) == pytest.approx(4 / 6)
    assert auroc(np.array([1, 1]), np.array([0.2, 0.3])) is None
    # one class only: the rate of that class, not half of it
    assert balanced_accuracy(np.array([1, 1]), np.array([True, False])) == 0.5
    assert auroc(np.array([1, 0]), np.array([0.5, 0.5])) == 0.5


def test_ece_hand_case() -> None:
    y = np.array([1, 0, 1, 1])
    p = np.array([0.95, 0.95, 0.15, 0.15])
    # two bins of 2: |0.95-0.5| and |0.15-1.0| -> (0.45 + 0.85) / 2
    assert ece(y, p) == pytest.approx(0.65)


def test_bootstrap_interval_brackets_the_estimate() -> None:
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 300)
    pred = np.where(rng.random(300) < 0.8, y, 1 - y)
    iv = bootstrap_ci(lambda i: balanced_accuracy(y[i], pred[i]), 300, rounds=300)
    assert iv is not None
    est = balanced_accuracy(y, pred)
    assert iv.low < est < iv.high and iv.high - iv.low < 0.2


def verdict(label: str, pe: float) -> Verdict:
    return Verdict(claim_id="c", label=label, p_entail=pe, p_neutral=1 - pe, p_contradict=0.0)


def test_metrics_for_three_way_and_binary(tmp_path: Path) -> None:
    items = [
        EvalItem("1", "c", "e", "entail"),
        EvalItem("2", "c", "e", "contradict"),
        EvalItem("3", "c", "e", "neutral"),
    ]
    vs = [verdict("supported", 0.9), verdict("contradicted", 0.05), verdict("supported", 0.6)]
    m = metrics_for("anli_r1", items, vs, 0.5, rounds=50)
    assert m.accuracy_3way == pytest.approx(2 / 3)
    assert m.balanced_accuracy == pytest.approx((1 + 0.5) / 2)
    assert m.n == 3 and m.n_positive == 1
    png = reliability_plot(
        {"anli_r1": (np.array([1, 0, 0]), np.array([0.9, 0.05, 0.6]))}, tmp_path / "r.png"
    )
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_sample_is_seeded_and_capped() -> None:
    items = [EvalItem(str(i), "c", "e", "entail") for i in range(100)]
    a, b = sample(items, 10), sample(items, 10)
    assert a == b and len(a) == 10
    assert sample(items, None) == items
