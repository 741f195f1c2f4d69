"""The ONNX cross-encoder backend, against a tiny random model of the packaged signature."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from affidavit.core.errors import ModelError
from affidavit.core.settings import VerifySettings
from affidavit.verify.base import PairScorer
from affidavit.verify.crossencoder import (
    OnnxCrossEncoder,
    canonical_labels,
    collapse,
    load_cross_encoder,
    softmax,
)
from affidavit.verify.fakes import build_tiny_model

PAIRS = [
    ("Paris is the capital of France.", "Paris is a city in France."),
    ("He was born in 1990.", "He was born in 1991 in London and died in 2000."),
    ("The trial found no risk.", "The study found the drug increased the risk by ten percent."),
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny"), max_len=48)


def test_is_a_pair_scorer_and_probabilities_are_distributions(tiny: Path) -> None:
    m = OnnxCrossEncoder(tiny, threads=1, batch_size=2)
    assert isinstance(m, PairScorer)
    scores = m.score(PAIRS)
    assert len(scores) == len(PAIRS)
    for s in scores:
        assert s.error is None
        assert s.p_entail + s.p_neutral + s.p_contradict == pytest.approx(1.0, abs=1e-6)
        best = max(
            ("supported", s.p_entail),
            ("unsupported", s.p_neutral),
            ("contradicted", s.p_contradict),
            key=lambda x: x[1],
        )[0]
        assert s.label == best


def test_batching_and_padding_do_not_change_scores(tiny: Path) -> None:
    batched = OnnxCrossEncoder(tiny, threads=1, batch_size=3).score(PAIRS)
    single = OnnxCrossEncoder(tiny, threads=1, batch_size=1).score(PAIRS)
    for a, b in zip(batched, single, strict=True):
        assert a.p_entail == pytest.approx(b.p_entail, abs=1e-5)
        assert a.p_contradict == pytest.approx(b.p_contradict, abs=1e-5)


def test_scores_match_a_numpy_reimplementation_of_the_graph(tmp_path: Path) -> None:
    # independent reference: mean-pool the embeddings ourselves, softmax with the temperature
    import onnx
    from onnx import numpy_helper
    from tokenizers import Tokenizer

    d = build_tiny_model(tmp_path / "m", temperature=2.0, seed=3)
    init = {
        t.name: numpy_helper.to_array(t)
        for t in onnx.load(str(d / "verifier.onnx")).graph.initializer
    }
    tok = Tokenizer.from_file(str(d / "tokenizer.json"))
    claim, ev = PAIRS[0]
    enc = tok.encode(claim, ev)
    e = init["emb"][enc.ids] + init["type_emb"][enc.type_ids]
    logits = e.mean(axis=0) @ init["w"] + init["b"]
    z = logits / 2.0
    p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    got = OnnxCrossEncoder(d, threads=1).score([PAIRS[0]])[0]
    assert [got.p_entail, got.p_neutral, got.p_contradict] == pytest.approx(list(p), abs=1e-4)


def test_label_order_from_config_is_respected(tmp_path: Path) -> None:
    a = build_tiny_model(tmp_path / "a", labels=("entail", "neutral", "contradict"), seed=1)
    b = build_tiny_model(tmp_path / "b", labels=("contradict", "neutral", "entail"), seed=1)
    sa = OnnxCrossEncoder(a, threads=1).score(PAIRS)
    sb = OnnxCrossEncoder(b, threads=1).score(PAIRS)
    for x, y in zip(sa, sb, strict=True):  # same weights, reversed meaning of the logits
        assert x.p_entail == pytest.approx(y.p_contradict, abs=1e-6)
        assert x.p_contradict == pytest.approx(y.p_entail, abs=1e-6)


def test_sha256_mismatch_and_missing_files_raise_model_error(tmp_path: Path) -> None:
    d = build_tiny_model(tmp_path / "m")
    cfg = json.loads((d / "config.json").read_text())
    cfg["sha256"] = "0" * 64
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelError, match="sha256 mismatch"):
        OnnxCrossEncoder(d)
    del cfg["sha256"]
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelError, match="no sha256"):
        OnnxCrossEncoder(d)
    assert OnnxCrossEncoder(d, require_sha256=False).sha256
    with pytest.raises(ModelError, match="config not found"):
        OnnxCrossEncoder(tmp_path / "nowhere")
    (d / "verifier.onnx").unlink()
    with pytest.raises(ModelError, match="missing"):
        OnnxCrossEncoder(d, require_sha256=False)


def test_over_long_evidence_is_cut_and_marked_never_silently(tiny: Path) -> None:
    m = OnnxCrossEncoder(tiny, threads=1)
    long_ev = " ".join(["paris is a city in france ."] * 20)
    (s,) = m.score([("Paris is in France.", long_ev)])
    assert s.error is None
    assert s.detail.startswith("truncated")
    (ok,) = m.score([("Paris is in France.", "Paris is a city in France.")])
    assert not ok.detail.startswith("truncated")


def test_claim_too_long_is_an_error_score_not_a_truncated_claim(tiny: Path) -> None:
    m = OnnxCrossEncoder(tiny, threads=1)
    long_claim = " ".join(["paris"] * 50)
    scores = m.score([(long_claim, "paris"), PAIRS[0]])
    assert scores[0].error and "too long" in scores[0].error
    assert scores[0].label == "unsupported" and scores[0].p_entail == 0.0
    assert scores[1].error is None  # the rest of the batch is still scored


def test_load_cross_encoder_caches_and_reports_missing(tiny: Path, tmp_path: Path) -> None:
    s = VerifySettings(model_path=tiny, threads=1)
    assert load_cross_encoder(s) is load_cross_encoder(s)
    with pytest.raises(ModelError):
        load_cross_encoder(VerifySettings(model_path=tmp_path / "absent"))


def test_label_names_and_collapse() -> None:
    assert canonical_labels(["CONTRADICTION", "NEUTRAL", "ENTAILMENT"]) == [
        "contradict",
        "neutral",
        "entail",
    ]
    assert canonical_labels(["not_entailment", "entailment"]) == ["not_entail", "entail"]
    with pytest.raises(ModelError):
        canonical_labels(["yes", "no"])
    p = collapse(np.array([[0.3, 0.7]]), ["not_entail", "entail"])
    assert p.tolist() == [[0.7, 0.3, 0.0]]
    assert softmax(np.array([[0.0, 0.0]])).tolist() == [[0.5, 0.5]]
