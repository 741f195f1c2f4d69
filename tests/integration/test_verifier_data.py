"""Eval sets from ../shared/data: held-out rows match the trainer's splits and never leak."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from affidavit.verify.datasets import load_set, read_splits

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
SPLITS = ROOT / "training" / "splits.json"
TRAIN = ROOT / "training" / "data" / "train.jsonl"

needs_data = pytest.mark.skipif(
    not (DATA.is_dir() and SPLITS.is_file()), reason="../shared/data or training/splits.json absent"
)


@needs_data
def test_held_out_sizes_follow_the_split_file() -> None:
    splits = read_splits(SPLITS)
    qa = load_set("halueval_qa", DATA, splits)
    assert len(qa) == 2 * len(splits["halueval"]["qa"]["eval_row_indices"])
    assert sum(it.label == "entail" for it in qa) == len(qa) // 2
    fcc = load_set("summac_factcc", DATA, splits)
    assert len(fcc) == len(splits["summac"]["factcc"]["eval_keys"])
    wice = load_set("wice", DATA, splits)
    assert len(wice) > 0 and {it.label for it in wice} <= {"entail", "not_entail"}
    anli = load_set("anli_r1", DATA, splits)
    assert {it.label for it in anli} == {"entail", "neutral", "contradict"}


@needs_data
@pytest.mark.skipif(not TRAIN.is_file(), reason="training/data/train.jsonl absent")
def test_no_held_out_halueval_row_is_in_the_training_data() -> None:
    splits = read_splits(SPLITS)
    train_groups = set()
    with TRAIN.open(encoding="utf-8") as fh:
        for line in fh:
            train_groups.add(json.loads(line)["group"])
    for kind in ("qa", "dialogue", "summarization"):
        held = {f"halueval_{kind}:{i}" for i in splits["halueval"][kind]["eval_row_indices"]}
        assert not held & train_groups, kind
    wice_held = {f"wice:{c}" for c in splits["wice"]["eval_claim_ids"]}
    assert not wice_held & train_groups
