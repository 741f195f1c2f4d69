"""Verifier speed: claim-evidence pairs per second at 128 and 256 tokens, load time, peak memory.

Side by side in the same run: the lexical-only matcher (typed checks + BM25/overlap, what a
model-free audit does) and variants of the ONNX model: graph optimisation level, dynamic int8
quantisation (only when the shipped model is not already int8), batch sizes and IO binding.

Pairs are real text: HaluEval qa knowledge passages (claim = question + right answer), cut so the
encoded pair is exactly L tokens. Timing includes tokenisation (the runtime path of
``OnnxCrossEncoder.score``). Each setting: one warm-up pass, then the median of ``--repeats``.

Usage:
    python benchmarks/verifier_speed.py [--data ../shared/data] [--model-dir DIR] [--threads 2]
        [--pairs 256] [--repeats 3] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "2")

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from affidavit.verify.crossencoder import (  # noqa: E402
    OnnxCrossEncoder,
    packaged_model_dir,
    read_config,
)
from affidavit.verify.datasets import _jsonl  # noqa: E402
from affidavit.verify.evidence import bm25_scores, overlap  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "verifier_speed.json"


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def make_pairs(data: Path, model: OnnxCrossEncoder, length: int, n: int) -> list[tuple[str, str]]:
    """n (claim, evidence) pairs whose encoding is exactly ``length`` tokens (or as long as the
    passage allows, then skipped)."""
    tok = model.tokenizer
    out: list[tuple[str, str]] = []
    for row in _jsonl(data / "halueval" / "qa_dev.jsonl"):
        claim = f"{row['question']} {row['right_answer']}"
        ev = row["knowledge"]
        budget = length - 3 - tok.count(claim)
        offs = tok.offsets(ev)
        while len(offs) < budget:  # short passages: repeat them (speed depends on length only)
            ev = f"{ev} {row['knowledge']}"
            offs = tok.offsets(ev)
        cut = ev[: offs[budget - 1][1]]
        enc = tok.tok.encode(claim, cut)
        if len(enc.ids) != length:
            continue
        out.append((claim, cut))
        if len(out) == n:
            break
    return out


def time_scorer(score: Any, pairs: list[tuple[str, str]], repeats: int) -> dict[str, float]:
    score(pairs[: min(len(pairs), 32)])  # warm-up
    times, cpu = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        score(pairs)
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    med = statistics.median(times)
    med_cpu = statistics.median(cpu)
    # CPU seconds are what this process used; on a shared machine wall time also counts waiting
    return {
        "pairs_per_s": round(len(pairs) / med, 2),
        "pairs_per_cpu_s": round(len(pairs) / med_cpu, 2) if med_cpu else None,
        "median_s": round(med, 4),
        "runs": repeats,
    }


def lexical_score(pairs: list[tuple[str, str]]) -> None:
    from affidavit.verify.checks import run_checks

    for claim, ev in pairs:
        run_checks(claim, ev)
        overlap(claim, ev)
        bm25_scores(claim, [ev])


def io_bound_scorer(model: OnnxCrossEncoder) -> Any:
    """Score with ORT IO binding (inputs bound as CPU OrtValues, output allocated by ORT)."""
    import onnxruntime as ort

    sess = model.session

    def score(pairs: list[tuple[str, str]]) -> None:
        for s in range(0, len(pairs), model.batch_size):
            enc = model.tokenizer.encode(pairs[s : s + model.batch_size])
            b = sess.io_binding()
            for name, arr in (
                ("input_ids", enc.input_ids),
                ("attention_mask", enc.attention_mask),
                ("token_type_ids", enc.token_type_ids),
            ):
                if name in model.input_names:
                    b.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(arr))
            b.bind_output(sess.get_outputs()[0].name)
            sess.run_with_iobinding(b)
            model.probabilities(np.asarray(b.copy_outputs_to_cpu()[0], dtype=np.float64))

    return score


def is_int8(path: Path) -> bool:
    import onnx

    m = onnx.load(str(path), load_external_data=False)
    return any(n.op_type in ("DynamicQuantizeLinear", "MatMulInteger") for n in m.graph.node)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--model-dir", type=Path, default=packaged_model_dir())
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--pairs", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="main setting only (no variants)")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument(
        "--compare-dir",
        type=Path,
        action="append",
        default=[],
        help="another model folder timed on the same pairs in the same run (repeatable)",
    )
    args = ap.parse_args()

    rss0 = rss_mb()
    t0 = time.perf_counter()
    model = OnnxCrossEncoder(args.model_dir, threads=args.threads, batch_size=args.batch)
    load_s = time.perf_counter() - t0
    rss_loaded = rss_mb()
    cfg = read_config(args.model_dir)
    onnx_path = args.model_dir / cfg.model_file
    shipped_int8 = is_int8(onnx_path)
    rows: list[dict[str, Any]] = []
    pairs_by_len = {L: make_pairs(args.data, model, L, args.pairs) for L in (128, 256)}

    def add(name: str, L: int, res: dict[str, Any], **extra: Any) -> None:
        rows.append({"setting": name, "tokens": L, **res, **extra})
        print(
            f"{name:38s} L={L:3d}  {res['pairs_per_s']:9.1f} pairs/s"
            f"  {res['pairs_per_cpu_s'] or 0:9.1f} pairs/cpu-s  load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        partial = {"rows": rows, "complete": False, "model": model.describe()}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(partial, indent=1) + "\n")

    for L, pairs in pairs_by_len.items():
        add("lexical only (checks + BM25)", L, time_scorer(lexical_score, pairs, args.repeats))
        add(
            f"onnx shipped{' int8' if shipped_int8 else ''} opt=all b={args.batch}",
            L,
            time_scorer(model.score, pairs, args.repeats),
            main=True,
        )
    for other in args.compare_dir:
        om = OnnxCrossEncoder(other, threads=args.threads, batch_size=args.batch)
        for L, pairs in pairs_by_len.items():
            add(
                f"compare: {other.name} b={args.batch}",
                L,
                time_scorer(om.score, pairs, args.repeats),
                model_dir=str(other),
            )
        del om
    rss_scored = rss_mb()
    if not args.quick:
        pairs = pairs_by_len[256]
        ms = OnnxCrossEncoder(
            args.model_dir, threads=args.threads, batch_size=args.batch, spin=True
        )
        add(
            f"onnx spinning threads b={args.batch}", 256, time_scorer(ms.score, pairs, args.repeats)
        )
        del ms
        m1 = OnnxCrossEncoder(args.model_dir, threads=1, batch_size=args.batch)
        add(f"onnx 1 thread b={args.batch}", 256, time_scorer(m1.score, pairs, args.repeats))
        del m1
        for opt in ("basic", "disable"):
            m = OnnxCrossEncoder(
                args.model_dir, threads=args.threads, batch_size=args.batch, graph_opt=opt
            )
            add(f"onnx opt={opt} b={args.batch}", 256, time_scorer(m.score, pairs, args.repeats))
        for b in (8, 16, 64):
            model.batch_size = b
            add(f"onnx opt=all b={b}", 256, time_scorer(model.score, pairs, args.repeats))
        model.batch_size = args.batch
        add(
            f"onnx io-binding b={args.batch}",
            256,
            time_scorer(io_bound_scorer(model), pairs, args.repeats),
        )
        if not shipped_int8:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            with tempfile.TemporaryDirectory() as tmp:
                tdir = Path(tmp)
                quantize_dynamic(
                    str(onnx_path), str(tdir / "verifier.onnx"), weight_type=QuantType.QInt8
                )
                (tdir / "tokenizer.json").write_bytes(
                    (args.model_dir / cfg.tokenizer_file).read_bytes()
                )
                c = json.loads((args.model_dir / "config.json").read_text())
                c.pop("sha256", None)
                c.pop("tokenizer_sha256", None)
                (tdir / "config.json").write_text(json.dumps(c))
                q = OnnxCrossEncoder(
                    tdir, threads=args.threads, batch_size=args.batch, require_sha256=False
                )
                for L, pairs in pairs_by_len.items():
                    add(
                        f"onnx int8 (dynamic) b={args.batch}",
                        L,
                        time_scorer(q.score, pairs, args.repeats),
                    )
    main_256 = next(r for r in rows if r.get("main") and r["tokens"] == 256)
    lex_256 = next(r for r in rows if r["setting"].startswith("lexical") and r["tokens"] == 256)
    result = {
        "model": model.describe(),
        "shipped_int8": shipped_int8,
        "load_seconds": round(load_s, 3),
        "peak_rss_mb": {
            "before_load": round(rss0, 1),
            "after_load": round(rss_loaded, 1),
            "after_scoring": round(rss_scored, 1),
            "end": round(rss_mb(), 1),
        },
        "threads": args.threads,
        "pairs_per_setting": args.pairs,
        "rows": rows,
        "bar_256_tokens_pairs_per_s": 50,
        "meets_bar": main_256["pairs_per_s"] >= 50,
        "model_vs_lexical_slowdown_256": round(lex_256["pairs_per_s"] / main_256["pairs_per_s"], 1),
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "note": "2-core CPU shared with other jobs (training) during the run",
        },
        "command": " ".join(["python", *sys.argv]),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"load {load_s:.2f}s, peak RSS {rss_mb():.0f} MB; wrote {args.out}")


if __name__ == "__main__":
    main()
