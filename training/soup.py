"""Average two checkpoints of the same architecture (a weight-space ensemble, "WiSE-FT").

``alpha`` weighs the second (newer, fine-tuned) checkpoint: theta = (1 - alpha) * A + alpha * B.
Interpolating a fine-tuned model with the model it started from keeps most of the fine-tuning's
in-distribution gain and more of the starting point's robustness off distribution (Wortsman et
al., "Robust fine-tuning of zero-shot models", CVPR 2022); inference costs nothing extra.

Usage (project root, training venv):
    python training/soup.py --a training/checkpoints6/final --b training/checkpoints7/final \
        --alpha 0.5 --out training/checkpoints7_soup/final
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--a", type=Path, required=True, help="the starting checkpoint")
    ap.add_argument("--b", type=Path, required=True, help="the checkpoint trained from it")
    ap.add_argument("--alpha", type=float, default=0.5)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    if not 0.0 <= args.alpha <= 1.0:
        ap.error("--alpha must be in [0, 1]")

    from safetensors.torch import load_file, save_file

    sa = load_file(str(args.a / "model.safetensors"))
    sb = load_file(str(args.b / "model.safetensors"))
    if sa.keys() != sb.keys():
        raise SystemExit(f"different parameters: {sorted(sa.keys() ^ sb.keys())[:5]}")
    out = {}
    for k, va in sa.items():
        vb = sb[k]
        if va.shape != vb.shape:
            raise SystemExit(f"shape mismatch for {k}: {tuple(va.shape)} vs {tuple(vb.shape)}")
        out[k] = ((1 - args.alpha) * va.float() + args.alpha * vb.float()).to(va.dtype).contiguous()
    args.out.mkdir(parents=True, exist_ok=True)
    for f in args.b.iterdir():
        if f.is_file() and f.name not in ("model.safetensors", "run.json", "resume_state.pt"):
            shutil.copy(f, args.out / f.name)
    save_file(out, str(args.out / "model.safetensors"), metadata={"format": "pt"})
    run = json.loads((args.b / "run.json").read_text())
    run["soup"] = {"a": str(args.a), "b": str(args.b), "alpha": args.alpha}
    (args.out / "run.json").write_text(json.dumps(run, indent=1) + "\n")
    print(f"wrote {args.out} = {1 - args.alpha:g} * {args.a} + {args.alpha:g} * {args.b}")


if __name__ == "__main__":
    main()
