"""Export the MPNet (accurate-stage) verifier: only what training changed, plus a weight-free graph.

Usage (project root, training venv):
    python training/export_accurate.py --ckpt training/checkpoints_mp/final \
        --base training/work/mpnet_raw/all-mpnet-base-v2 --zip training/work/mpnet.zip

Writes ``src/affidavit/verify/model_accurate/``:
 - ``delta.npz``: the LoRA matrices (``lora_A/<weight>``, ``lora_B/<weight>``) and the tensors
   trained in full (``full/<name>``: the classifier head, the adapted layers' LayerNorms);
 - ``graph.onnx``: the whole model's ONNX graph (opset 17, inputs ``input_ids`` /
   ``attention_mask``) with every initializer that is a model weight emptied;
 - ``config.json``: the folder's verifier config (labels, lengths, temperature) and the
   assembly recipe: the base zip's sha256 and the sha256 of each member used, each emptied
   initializer's source weight (and whether it is stored transposed), the LoRA scale, the
   sha256 of the shipped files, and probe pairs with their logits.

The export builds the graph from the weights *as the installer merges them*
(``affidavit.verify.accurate.merge_delta``), then assembles a copy exactly as a user's install
does and checks it against the PyTorch checkpoint (parity) before anything is written.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import zipfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "2")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import numpy as np  # noqa: E402
from common import LABELS, PROJECT_ROOT  # noqa: E402

OUT_DIR = PROJECT_ROOT / "src" / "affidavit" / "verify" / "model_accurate"
ZIP_ROOT = "all-mpnet-base-v2/"
PROBE = [
    (
        "The Forth Bridge opened on 4 March 1890.",
        "The Forth Bridge is a railway bridge across the Firth of Forth in Scotland. It was opened on 4 March 1890.",
    ),
    ("Paris is in Germany.", "Paris is the capital of France."),
    (
        "Buzz Aldrin became the first person to step onto the lunar surface.",
        "Armstrong became the first person to step onto the lunar surface; Aldrin joined him 19 minutes later.",
    ),
]


def sha256_bytes(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def sha256_file(p: Path) -> str:
    return sha256_bytes(p.read_bytes())


def load_trained(ckpt: Path, base: Path):  # type: ignore[no-untyped-def]
    """The LoRA-wrapped training model with the checkpoint's adapter and LayerNorms loaded."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(
        base,
        num_labels=3,
        id2label=dict(enumerate(LABELS)),
        label2id={k: i for i, k in enumerate(LABELS)},
    )
    model = PeftModel.from_pretrained(model, ckpt / "adapter")
    norms = torch.load(ckpt / "layernorms.pt", map_location="cpu")
    missing = model.load_state_dict(norms, strict=False)
    assert not missing.unexpected_keys, missing.unexpected_keys
    return model.eval()


PARITY_TOL = 0.02  # issue 24: no quantisation may move a dev pair by more than this


def is_shipped(name: str, top: list[int]) -> bool:
    """Whether a parameter of the LoRA model is one the delta ships."""
    return (
        ".lora_A.default." in name
        or ".lora_B.default." in name
        or ".modules_to_save.default." in name
        or ("LayerNorm" in name and any(f"layer.{i}." in name for i in top))
    )


def is_lora(name: str) -> bool:
    """Whether a parameter of the LoRA model is an adapter matrix (A or B)."""
    return ".lora_A.default." in name or ".lora_B.default." in name


def dev_pairs(path: Path, n: int) -> list[tuple[str, str]]:
    import random

    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return [(r["claim"], r["evidence"]) for r in random.Random(1).sample(rows, min(n, len(rows)))]


def probabilities(model, tok, pairs: list[tuple[str, str]]) -> np.ndarray:  # type: ignore[no-untyped-def]
    import torch

    out = []
    with torch.no_grad():
        for claim, ev in pairs:
            x = tok(claim, ev, truncation="longest_first", max_length=256, return_tensors="pt")
            lg = model(input_ids=x["input_ids"], attention_mask=x["attention_mask"]).logits[0]
            out.append(torch.softmax(lg, -1).numpy())
    return np.stack(out)


def delta_of(model) -> tuple[dict[str, np.ndarray], float]:  # type: ignore[no-untyped-def]
    """What training changed, keyed by the plain model's parameter names."""
    cfg = model.peft_config["default"]
    scale = cfg.lora_alpha / cfg.r
    top = list(cfg.layers_to_transform or [])
    out: dict[str, np.ndarray] = {}
    prefix = "base_model.model."
    for name, p in model.named_parameters():
        arr = p.detach().cpu().numpy().astype(np.float32)
        plain = name[len(prefix) :] if name.startswith(prefix) else name
        if ".lora_A.default." in plain:
            out["lora_A/" + plain.replace(".lora_A.default", "")] = arr
        elif ".lora_B.default." in plain:
            out["lora_B/" + plain.replace(".lora_B.default", "")] = arr
        elif ".modules_to_save.default." in plain:
            out["full/" + plain.replace(".modules_to_save.default", "")] = arr
        elif "LayerNorm" in plain and any(f"layer.{i}." in plain for i in top):
            # trained in full beside the adapters (frozen again once loaded for export)
            out["full/" + plain.replace(".base_layer", "")] = arr
    return out, scale


def export_graph(state: dict[str, np.ndarray], base: Path, out: Path) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=3).eval()
    sd = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in state.items()}
    res = model.load_state_dict(sd, strict=False)
    # the sentence-embedding pooler and the position-id buffer of the base are not part of it
    unexpected = [k for k in res.unexpected_keys if "pooler" not in k and "position_ids" not in k]
    assert not unexpected, unexpected
    missing = [k for k in res.missing_keys if "position_ids" not in k]
    assert not missing, missing

    class Wrap(torch.nn.Module):
        def __init__(self, m: torch.nn.Module) -> None:
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask):  # type: ignore[no-untyped-def]
            return self.m(input_ids=input_ids, attention_mask=attention_mask).logits

    ids = torch.randint(5, 1000, (2, 24))
    torch.onnx.export(
        Wrap(model),
        (ids, torch.ones_like(ids)),
        str(out),
        input_names=["input_ids", "attention_mask"],
        output_names=["logits"],
        dynamic_axes={
            "input_ids": {0: "batch", 1: "seq"},
            "attention_mask": {0: "batch", 1: "seq"},
            "logits": {0: "batch"},
        },
        opset_version=17,
        do_constant_folding=True,
        dynamo=False,
    )


def strip_weights(onnx_path: Path, state: dict[str, np.ndarray]) -> tuple[bytes, dict[str, dict]]:
    """The graph with each initializer that equals a model weight (or its transpose) emptied,
    and the map initializer -> weight."""
    import onnx
    from onnx import numpy_helper

    m = onnx.load(str(onnx_path))
    by_shape: dict[tuple[int, ...], list[str]] = {}
    for k, v in state.items():
        by_shape.setdefault(tuple(v.shape), []).append(k)
    mapping: dict[str, dict] = {}
    for init in m.graph.initializer:
        a = numpy_helper.to_array(init)
        if a.dtype != np.float32 or a.size < 256:
            continue
        hit = None
        for k in by_shape.get(tuple(a.shape), []):
            if np.array_equal(state[k], a):
                hit = {"param": k, "transpose": False}
                break
        if hit is None and a.ndim == 2:
            for k in by_shape.get(tuple(a.shape[::-1]), []):
                if np.array_equal(state[k].T, a):
                    hit = {"param": k, "transpose": True}
                    break
        if hit is None:
            continue
        mapping[init.name] = hit
        dims = list(init.dims)
        init.ClearField("raw_data")
        init.ClearField("float_data")
        del init.dims[:]
        init.dims.extend(dims)
    return m.SerializeToString(), mapping


def adopt_combiner(assembled: Path, out: Path) -> None:
    """Pin the combiner fitted on an assembled copy (fit_combiner.py) in the shipped recipe."""
    import shutil

    shutil.copyfile(assembled / "combiner.json", out / "combiner.json")
    fitted = json.loads((assembled / "config.json").read_text())
    cfg = json.loads((out / "config.json").read_text())
    cfg["model"]["combiner"] = {
        "file": "combiner.json",
        "sha256": sha256_file(out / "combiner.json"),
    }
    if "thresholds" in fitted:
        cfg["model"]["thresholds"] = fitted["thresholds"]
    (out / "config.json").write_text(json.dumps(cfg, indent=1) + "\n")
    print(json.dumps(cfg["model"], indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--ckpt", type=Path)
    ap.add_argument("--base", type=Path, help="unzipped all-mpnet-base-v2 folder")
    ap.add_argument("--zip", type=Path, help="the joined all-mpnet-base-v2.zip")
    ap.add_argument(
        "--adopt-combiner",
        type=Path,
        default=None,
        help="instead of exporting: take combiner.json and the thresholds that fit_combiner.py "
        "wrote into this assembled folder, and pin them in the shipped folder's recipe",
    )
    ap.add_argument("--out", type=Path, default=OUT_DIR)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--fp32", action="store_true", help="ship the delta in fp32 (default fp16)")
    ap.add_argument(
        "--lora-int8",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="store the LoRA matrices as int8 with a float32 scale per row (the rest fp16); "
        "the model is rounded to those values before the parity check and the probe logits",
    )
    ap.add_argument("--dev", type=Path, default=HERE / "data_mp" / "dev.jsonl")
    ap.add_argument("--parity-pairs", type=int, default=150)
    ap.add_argument("--train-max-len", type=int, default=128)
    args = ap.parse_args()
    if args.adopt_combiner is not None:
        adopt_combiner(args.adopt_combiner, args.out)
        return
    if not (args.ckpt and args.base and args.zip):
        ap.error("--ckpt, --base and --zip are needed to export")

    import torch

    from affidavit.verify.accurate import (
        SCALE_PREFIX,
        assemble,
        merge_delta,
        quantize_rows,
        read_safetensors,
    )

    torch.set_num_threads(2)
    trained = load_trained(args.ckpt, args.base)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(args.base)
    parity: dict[str, float] = {}
    if not args.fp32:
        # ship the trained tensors in fp16 (half the bytes; the merge runs in float64 anyway):
        # round them in the model itself, and refuse if any dev pair's probabilities move by
        # more than PARITY_TOL from the fp32 model
        pairs = dev_pairs(args.dev, args.parity_pairs)
        before = probabilities(trained, tok, pairs)
        top = list(trained.peft_config["default"].layers_to_transform or [])
        with torch.no_grad():
            for name, p in trained.named_parameters():
                if not is_shipped(name, top):
                    continue
                if args.lora_int8 and is_lora(name):
                    q, sc = quantize_rows(p.detach().cpu().numpy())
                    p.copy_(torch.from_numpy(q.astype(np.float32) * sc))
                else:
                    p.copy_(p.half().float())
        after = probabilities(trained, tok, pairs)
        diff = float(np.abs(before - after).max())
        kind = "int8_lora_fp16_rest" if args.lora_int8 else "fp16"
        parity = {"pairs": len(pairs), f"max_abs_prob_diff_{kind}_vs_fp32": diff}
        print(json.dumps(parity))
        if diff > PARITY_TOL:
            raise SystemExit(f"{kind} moves a dev pair by {diff:.4f} > {PARITY_TOL}: use --fp32")
    delta, scale = delta_of(trained)
    members = {}
    with zipfile.ZipFile(args.zip) as zf:
        for name in ("model.safetensors", "tokenizer.json"):
            members[ZIP_ROOT + name] = zf.read(ZIP_ROOT + name)
    prefix = "mpnet."
    base_state = {
        prefix + k: v for k, v in read_safetensors(members[ZIP_ROOT + "model.safetensors"]).items()
    }
    merged = merge_delta(base_state, delta, scale)

    # reference logits: the PyTorch training model itself (LoRA unmerged; fp16-rounded as shipped)
    probe = []
    with torch.no_grad():
        for claim, ev in PROBE:
            x = tok(claim, ev, return_tensors="pt")
            lg = trained(input_ids=x["input_ids"], attention_mask=x["attention_mask"]).logits[0]
            probe.append({"claim": claim, "evidence": ev, "logits": [float(v) for v in lg]})

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as td:
        full = Path(td) / "full.onnx"
        export_graph(merged, args.base, full)
        graph, mapping = strip_weights(full, merged)
    (args.out / "graph.onnx").write_bytes(graph)
    dtype = np.float32 if args.fp32 else np.float16
    stored: dict[str, np.ndarray] = {}
    for k, v in delta.items():
        if args.lora_int8 and not args.fp32 and k.startswith(("lora_A/", "lora_B/")):
            # the model was rounded to exactly these values above: q * s reproduces it
            stored[k], stored[SCALE_PREFIX + k] = quantize_rows(v)
        else:
            stored[k] = v.astype(dtype)
    np.savez_compressed(args.out / "delta.npz", **stored)
    model_cfg = {
        "name": "affidavit-verifier-mpnet",
        "model": "affidavit claim verifier, accurate stage (all-mpnet-base-v2 cross-encoder, LoRA)",
        "labels": list(LABELS),
        "inputs": ["input_ids", "attention_mask"],
        "input_format": "<s> claim </s></s> evidence </s>",
        "max_len": 256,
        "train_max_len": args.train_max_len,
        "temperature": args.temperature,
        "model_file": "model.onnx",
        "tokenizer_file": "tokenizer.json",
    }
    if (args.out / "combiner.json").is_file():
        model_cfg["combiner"] = {
            "file": "combiner.json",
            "sha256": sha256_file(args.out / "combiner.json"),
        }
    cfg = {
        "model": model_cfg,
        "assembly": {
            "base": {
                "pip": 'pip install "affidavit[accurate]"',
                "zip_sha256": sha256_file(args.zip),
                "members": {k: sha256_bytes(v) for k, v in members.items()},
                "weights": ZIP_ROOT + "model.safetensors",
                "tokenizer": ZIP_ROOT + "tokenizer.json",
                "prefix": prefix,
            },
            "lora_scale": scale,
            "initializers": mapping,
            "files": {
                "graph.onnx": sha256_file(args.out / "graph.onnx"),
                "delta.npz": sha256_file(args.out / "delta.npz"),
            },
            "probe": probe,
            "delta_dtype": "float32" if args.fp32 else "float16",
            "parity": parity,
            "checkpoint": str(args.ckpt),
        },
    }
    (args.out / "config.json").write_text(json.dumps(cfg, indent=1) + "\n")
    # assemble exactly as an install does, and check it reproduces the PyTorch logits
    with tempfile.TemporaryDirectory() as td:
        assemble(Path(td) / "assembled", src=args.out, base_members=members)
    print(
        json.dumps(
            {
                "graph_bytes": len(graph),
                "delta_bytes": (args.out / "delta.npz").stat().st_size,
                "initializers_mapped": len(mapping),
                "probe": probe,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
