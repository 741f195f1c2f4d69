"""Rebuild a LoRA training checkpoint from the shipped accurate-stage delta (its checkpoint is
not kept in git), so that a later run continues from the shipped weights instead of from zero:

    python training/recover_accurate.py --base training/work/mpnet_raw/all-mpnet-base-v2 \\
        --out training/checkpoints_rec/accurate
    python training/train_verifier.py --base training/work/mpnet_raw/all-mpnet-base-v2 \\
        --lora-r 16 --lora-layers 4 --init training/checkpoints_rec/accurate ...

The rebuilt model is checked against the shipped probe logits (the same pairs the installer
checks) before anything is written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import torch  # noqa: E402
from common import LABELS  # noqa: E402

SHIPPED = HERE.parent / "src" / "affidavit" / "verify" / "model_accurate"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--lora-r", type=int, default=16)
    ap.add_argument("--lora-layers", type=int, default=4)
    args = ap.parse_args()

    import train_verifier as tv
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(args.base)
    model = AutoModelForSequenceClassification.from_pretrained(
        args.base,
        num_labels=3,
        id2label=dict(enumerate(LABELS)),
        label2id={k: i for i, k in enumerate(LABELS)},
    )
    model = tv.add_lora(model, args)
    from affidavit.verify.accurate import read_delta

    delta = {k: torch.from_numpy(v.copy()) for k, v in read_delta(SHIPPED / "delta.npz").items()}
    params = dict(model.named_parameters())
    loaded = 0
    for key, value in delta.items():
        kind, _, name = key.partition("/")
        stem = name.rsplit(".", 1)
        if kind == "lora_A":
            target = f"base_model.model.{stem[0]}.lora_A.default.{stem[1]}"
        elif kind == "lora_B":
            target = f"base_model.model.{stem[0]}.lora_B.default.{stem[1]}"
        elif name.startswith("classifier."):
            target = (
                "base_model.model.classifier.modules_to_save.default." + name[len("classifier.") :]
            )
        else:
            target = f"base_model.model.{name}"
        if target not in params:
            raise SystemExit(f"{key}: no parameter {target} in the LoRA model")
        with torch.no_grad():
            params[target].copy_(value)
        loaded += 1
    model.eval()
    probe = json.loads((SHIPPED / "config.json").read_text())["assembly"]["probe"]
    worst = 0.0
    with torch.no_grad():
        for p in probe:
            x = tok(p["claim"], p["evidence"], return_tensors="pt")
            got = model(input_ids=x["input_ids"], attention_mask=x["attention_mask"]).logits[0]
            worst = max(worst, float((got - torch.tensor(p["logits"])).abs().max()))
    if worst > 1e-3:
        raise SystemExit(f"rebuilt model misses the shipped probe logits by {worst:.4g}")
    model.train()
    tv.save(model, tok, args.out, {"recovered_from": str(SHIPPED), "probe_max_diff": worst})
    print(json.dumps({"tensors": loaded, "probe_max_diff": worst, "out": str(args.out)}))


if __name__ == "__main__":
    main()
