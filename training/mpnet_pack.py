"""Carry the MPNet base to a machine that cannot reach a package registry (the device tool's GPU
machine) in pieces small enough for its transfer limit, and rebuild it there.

The device tool sends at most 64 MiB per call and the fp32 base is 438 MB. ``pack`` stores every
matrix as int8 with one fp32 scale per row (symmetric, absmax / 127) and every vector as fp32,
split into files of at most ``--part-mib``; ``unpack`` joins them back into a transformers folder
(fp32 ``model.safetensors`` + config + tokenizer). The rebuilt base differs from the real one by
the rounding alone (reported by ``pack --check``: relative RMS error per matrix about 1%); it is
used only to *train* LoRA adapters, which are then merged into the real fp32 base at install
(``affidavit.verify.accurate``), and ``training/export_accurate.py``'s parity check and the dev
metrics recomputed here on the real base measure what that costs.

    python training/mpnet_pack.py pack --base training/work/mpnet_raw/all-mpnet-base-v2 --out xfer/mp
    python training/mpnet_pack.py unpack --parts xfer/mp --out /tmp/mpnet_base     # on the GPU
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import numpy as np

TOKENIZER_FILES = (
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
)


def pack(base: Path, out: Path, part_mib: float, check: bool) -> None:
    from safetensors.numpy import load_file, save_file

    # the same per-row int8 rounding the accurate stage's shipped delta uses (pack runs here,
    # where the package is importable; unpack, on the GPU machine, needs torch alone)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    from affidavit.verify.accurate import quantize_rows

    w = load_file(str(base / "model.safetensors"))
    out.mkdir(parents=True, exist_ok=True)
    for f in TOKENIZER_FILES:
        if (base / f).exists():
            shutil.copy(base / f, out / f)
    limit = int(part_mib * 1024 * 1024)
    parts: list[dict[str, np.ndarray]] = [{}]
    size = 0
    errs = {}
    for name in sorted(w):
        t = w[name].astype(np.float32)
        if t.ndim == 2 and t.size >= 500_000:  # the layer matrices and word embeddings
            q, scale = quantize_rows(t)
            items = {f"{name}::q": q, f"{name}::s": scale}
            if check:
                d = q.astype(np.float32) * scale - t
                errs[name] = float(np.sqrt((d**2).mean()) / (np.sqrt((t**2).mean()) + 1e-12))
        else:
            items = {name: t}
        n = sum(v.nbytes for v in items.values())
        if size + n > limit and parts[-1]:
            parts.append({})
            size = 0
        parts[-1].update(items)
        size += n
    for i, p in enumerate(parts):
        save_file(p, str(out / f"part{i}.safetensors"))
        print(f"{out}/part{i}.safetensors: {sum(v.nbytes for v in p.values()) / 2**20:.1f} MiB")
    (out / "pack.json").write_text(json.dumps({"parts": len(parts), "tensors": len(w)}))
    if check:
        worst = max(errs, key=errs.get)  # type: ignore[arg-type]
        print(
            f"int8 relative RMS error: mean {np.mean(list(errs.values())):.4f}, "
            f"worst {errs[worst]:.4f} ({worst})"
        )


def unpack(parts: Path, out: Path) -> None:
    import torch
    from safetensors.torch import load_file, save_file

    meta = json.loads((parts / "pack.json").read_text())
    w: dict[str, torch.Tensor] = {}
    for i in range(meta["parts"]):
        part = load_file(str(parts / f"part{i}.safetensors"))
        for k, v in part.items():
            if k.endswith("::q"):
                w[k[:-3]] = v.float() * part[k[:-3] + "::s"]
            elif not k.endswith("::s"):
                w[k] = v
    if len(w) != meta["tensors"]:
        raise SystemExit(f"unpack: {len(w)} tensors, the pack has {meta['tensors']}")
    out.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in w.items()}, str(out / "model.safetensors"))
    for f in TOKENIZER_FILES:
        if (parts / f).exists():
            shutil.copy(parts / f, out / f)
    print(f"{out}: {len(w)} tensors")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack")
    p.add_argument("--base", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--part-mib", type=float, default=38.0)
    p.add_argument("--check", action="store_true")
    u = sub.add_parser("unpack")
    u.add_argument("--parts", type=Path, required=True)
    u.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    if a.cmd == "pack":
        pack(a.base, a.out, a.part_mib, a.check)
    else:
        unpack(a.parts, a.out)


if __name__ == "__main__":
    main()
