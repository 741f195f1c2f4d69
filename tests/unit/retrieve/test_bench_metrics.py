"""The retrieval benchmark's metrics against a hand-computed case."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[3] / "benchmarks" / "retrieval_quality.py"


def _bench():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("retrieval_quality", _PATH)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["retrieval_quality"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_ndcg_and_recall_hand_computed() -> None:
    b = _bench()
    # ranked a, b, c; relevant {b, d}: DCG = 1/log2(3) = 0.63093;
    # ideal DCG = 1 + 1/log2(3) = 1.63093; nDCG = 0.38685
    assert b.ndcg_at(["a", "b", "c"], {"b", "d"}) == pytest.approx(0.38685, abs=1e-5)
    assert b.recall_at(["a", "b", "c"], {"b", "d"}, 10) == 0.5
    assert b.recall_at(["a", "b", "c"], {"b", "d"}, 1) == 0.0
    assert b.ndcg_at(["b", "d"], {"b", "d"}) == pytest.approx(1.0)
    assert b.ndcg_at([], {"x"}) == 0.0
