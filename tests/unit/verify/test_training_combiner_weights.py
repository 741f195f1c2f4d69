"""The dev-row weights of the combiner fit (training/fit_combiner.py --weighting)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TRAINING = Path(__file__).resolve().parents[3] / "training"


@pytest.fixture(scope="module")
def fit_combiner():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(TRAINING))
    try:
        import fit_combiner as module
    finally:
        sys.path.remove(str(TRAINING))
    return module


SRCS = (
    ["wice"] * 2
    + ["x_fm2"] * 8
    + ["summac_factcc"] * 5
    + ["halueval_summarization"] * 5
    + ["citation_integrity"] * 4
    + ["halueval_qa"] * 4
    + ["synthetic_negation"] * 2
)


def test_each_source_weighs_the_same(fit_combiner) -> None:  # type: ignore[no-untyped-def]
    w = fit_combiner.row_weights(SRCS, "source")
    assert w.mean() == pytest.approx(1.0)
    totals = {s: w[[x == s for x in SRCS]].sum() for s in set(SRCS)}
    assert max(totals.values()) == pytest.approx(min(totals.values()))


def test_each_kind_weighs_the_same(fit_combiner) -> None:  # type: ignore[no-untyped-def]
    w = fit_combiner.row_weights(SRCS, "kind")
    kinds = [fit_combiner.evidence_kind(s) for s in SRCS]
    assert set(kinds) == {"web", "summaries", "scientific", "qa", "synthetic"}
    totals = {k: w[[x == k for x in kinds]].sum() for k in set(kinds)}
    assert max(totals.values()) == pytest.approx(min(totals.values()))
    # within a kind, each source the same: WiCE's two rows weigh what FM2's eight do
    wice = w[[s == "wice" for s in SRCS]].sum()
    fm2 = w[[s == "x_fm2" for s in SRCS]].sum()
    assert wice == pytest.approx(fm2)


def test_an_unknown_weighting_is_refused(fit_combiner) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="unknown weighting"):
        fit_combiner.row_weights(SRCS, "row")
