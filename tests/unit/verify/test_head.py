"""The embedding-head verifier: features, the numpy forward pass, loading, scoring, the cascade."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from affidavit.core.errors import ModelError
from affidavit.core.settings import PolicySettings, VerifySettings
from affidavit.core.types import Chunk
from affidavit.testing.embedder import FakeEmbedder
from affidavit.verify.cascade import ClaimCascade, claim_from_text
from affidavit.verify.checks import run_checks
from affidavit.verify.features import (
    EMBED_DIM,
    FEATURE_NAMES,
    FEATURE_VERSION,
    IDF_BUCKETS,
    MAX_UNIT_WORDS,
    N_FEATURES,
    IdfTable,
    evidence_units,
    featurize,
    lexical_coverage,
)
from affidavit.verify.head import HEAD_DIR, EmbedHeadScorer, forward

FAKE = FakeEmbedder(dim=EMBED_DIM)
IDF = IdfTable(np.ones(IDF_BUCKETS, dtype=np.float32), 1.0)
COL = {n: i for i, n in enumerate(FEATURE_NAMES)}


def feats(claim: str, evidence: str) -> dict[str, float]:
    x, _ = featurize([(claim, evidence)], FAKE.embed, IDF, check_fn=run_checks)
    return {n: float(x[0, i]) for n, i in COL.items()}


def test_long_sentence_becomes_overlapping_windows_covering_every_word() -> None:
    words = [f"w{i}" for i in range(400)]
    units = evidence_units(" ".join(words) + ". Short one.")
    assert all(len(u.split()) <= MAX_UNIT_WORDS for u in units)
    assert len(units) == 5  # windows at 0, 100, 200, 300 (the last reaches the end) + 1 sentence
    seen = {w.rstrip(".") for u in units for w in u.split()}
    assert {w for w in words} <= seen
    assert units[-1] == "Short one."


def test_lexical_coverage_hand_computed() -> None:
    # content stems of the claim: cat, sat, red, mat -> 2 of 4 in the evidence
    assert lexical_coverage("The cat sat on the red mat.", "A cat sat here.") == 0.5
    assert lexical_coverage("the of", "anything") == 1.0


def test_features_see_identity_numbers_and_checks() -> None:
    same = feats("The bridge opened in 1932.", "It rained. The bridge opened in 1932.")
    assert same["cos_max"] == pytest.approx(1.0, abs=1e-5)
    assert same["cov_uni"] == 1.0 and same["num_cov"] == 1.0
    assert same["check_date_fail"] == 0.0
    other = feats("The bridge opened in 1951.", "It rained. The bridge opened in 1932.")
    assert other["num_cov"] == 0.0 and other["num_has"] == 1.0
    assert other["check_date_fail"] + other["check_number_fail"] >= 1.0
    assert other["cos_max"] < 1.0


def test_negation_mismatch_feature() -> None:
    f = feats("The museum is not open on Mondays.", "The museum is open on Mondays.")
    assert f["claim_neg"] == 1.0 and f["unit_neg"] == 0.0 and f["neg_mismatch"] == 1.0


def test_featurize_reports_units_and_embeds_only_top_k() -> None:
    calls: list[int] = []

    def embed(texts: list[str]) -> np.ndarray:
        calls.append(len(texts))
        return FAKE.embed(texts)

    ev = " ".join(f"Sentence number {i} is here." for i in range(10))
    x, used = featurize([("Sentence 3 is here.", ev)], embed, IDF, top_k=3)
    assert x.shape == (1, N_FEATURES)
    assert used == [(10, 3)]
    assert calls == [4]  # the claim + 3 units, in one call


def test_idf_fit_rare_words_weigh_more() -> None:
    t = IdfTable.fit(["the cat sat", "the cat ran", "a zebra ran"])
    assert t.of("zebra") > t.of("cat")
    assert t.of("neverseen") == pytest.approx(t.default)


def test_forward_matches_hand_computation() -> None:
    params = {
        "mean": np.array([1.0, 0.0]),
        "std": np.array([2.0, 1.0]),
        "W1": np.array([[1.0, -1.0], [0.5, 2.0]]),
        "b1": np.array([0.0, -1.0]),
        "W2": np.array([[1.0, 0.0, 0.0], [0.0, 1.0, -1.0]]),
        "b2": np.array([0.1, 0.0, 0.0]),
    }
    # z = [(3-1)/2, 2] = [1, 2]; h = relu([1 + 1, -1 + 4 - 1]) = [2, 2]; out = [2.1, 2, -2]
    out = forward(params, np.array([[3.0, 2.0]]))
    assert out[0].tolist() == pytest.approx([2.1, 2.0, -2.0])


def write_head(folder: Path, *, version: int = FEATURE_VERSION, bad_hash: bool = False) -> Path:
    """A linear head that reads lexical coverage: covered -> entail, else neutral."""
    folder.mkdir(parents=True, exist_ok=True)
    w = np.zeros((N_FEATURES, 3))
    w[COL["cov_uni"], 0] = 6.0
    w[COL["cov_uni"], 1] = -6.0
    w[COL["neg_mismatch"], 2] = 8.0
    np.savez(
        folder / "head.npz",
        mean=np.zeros(N_FEATURES),
        std=np.ones(N_FEATURES),
        W1=w,
        b1=np.array([-3.0, 3.0, -4.0]),
        idf=np.ones(IDF_BUCKETS),
        idf_default=np.float32(1.0),
    )
    digest = hashlib.sha256((folder / "head.npz").read_bytes()).hexdigest()
    cfg = {
        "labels": ["entail", "neutral", "contradict"],
        "temperature": 1.0,
        "sha256": "0" * 64 if bad_hash else digest,
        "feature_version": version,
        "n_features": N_FEATURES,
    }
    (folder / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    return folder


def test_scorer_orders_pairs_and_fails_closed(tmp_path: Path) -> None:
    s = EmbedHeadScorer(write_head(tmp_path / "m"), embed=FAKE.embed)
    out = s.score(
        [
            ("Marie Curie won two Nobel prizes.", "Marie Curie won two Nobel prizes in science."),
            ("Marie Curie won two Nobel prizes.", "The weather in Lisbon was mild."),
            ("The shop is not open.", "The shop is open."),
            ("", "some evidence"),
            ("A claim.", "   "),
        ]
    )
    assert len(out) == 5
    assert out[0].label == "supported" and out[0].p_entail > 0.9
    assert out[1].label == "unsupported" and out[1].p_entail < 0.1
    assert out[2].label == "contradicted"
    for sc in out[:3]:
        assert sc.p_entail + sc.p_neutral + sc.p_contradict == pytest.approx(1.0)
        assert "evidence units embedded" in sc.detail
    assert out[3].error == "empty claim" and out[4].error == "empty evidence"
    assert out[3].p_entail == 0.0


def test_scorer_rejects_tampered_or_stale_weights(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="sha256"):
        EmbedHeadScorer(write_head(tmp_path / "a", bad_hash=True), embed=FAKE.embed)
    with pytest.raises(ModelError, match="feature version"):
        EmbedHeadScorer(write_head(tmp_path / "b", version=FEATURE_VERSION + 1), embed=FAKE.embed)
    with pytest.raises(ModelError, match="not found"):
        EmbedHeadScorer(tmp_path / "missing", embed=FAKE.embed)


def test_cascade_runs_embed_head_stage(tmp_path: Path) -> None:
    head = EmbedHeadScorer(write_head(tmp_path / "m"), embed=FAKE.embed)
    cascade = ClaimCascade(
        VerifySettings(cascade=["embed_head"], max_combination=1),
        PolicySettings(),
        scorers={"embed_head": head},
    )
    claim = claim_from_text("Marie Curie won two Nobel prizes.")
    good = cascade.verify(claim, [Chunk(text="Marie Curie won two Nobel prizes in science.")])
    bad = cascade.verify(claim, [Chunk(text="The weather in Lisbon was mild.")])
    assert good.label == "supported" and good.stages[-1].stage == "embed_head"
    assert bad.label == "unsupported"


@pytest.mark.integration
def test_packaged_head_loads_and_separates_a_clear_pair() -> None:
    if not (HEAD_DIR / "config.json").is_file():
        pytest.skip("no packaged embed head")
    s = EmbedHeadScorer(threads=1)
    ev = "The Eiffel Tower was completed in 1889 and is 330 metres tall."
    yes, no = s.score(
        [
            ("The Eiffel Tower was completed in 1889.", ev),
            ("The Eiffel Tower was completed in 1925.", ev),
        ]
    )
    assert yes.p_entail > no.p_entail
