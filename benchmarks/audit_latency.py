"""Latency per audit: affidavit vs Dokis in the same run, and growth with 50 and 500 chunks.

Inputs are real: for each sample, a HaluEval qa knowledge passage plus distractor passages (5,
50 or 500 chunks in all) and an answer of 3-5 sentences taken from the passage (some with a
changed year or an inserted "not", so both supported and unsupported paths run). Both systems
are warmed up first (imports, first call); then every input is audited once (``fresh``: no
cache can help) and the first input is also audited repeatedly (``repeat``: Dokis caches its
BM25 index per chunk set, affidavit caches per-text analyses). affidavit runs with both BM25
paths (exact in-process BM25 and bm25s) at every size so the choice of path can be checked.

Usage (in the benchmark venv that has dokis):
    .venv-bench/bin/python benchmarks/audit_latency.py [DATA] [--samples 200] [--seed 7]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))


YEAR = re.compile(r"\b(1[6-9]\d\d|20[0-2]\d)\b")


def _sentences(text: str) -> list[str]:
    text = re.sub(r"(?<=[a-z0-9)][.!?])(?=[A-Z][a-z])", " ", text)
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+(?=[A-Z\"(])", text) if s.strip()]


def build_inputs(data: Path, n: int, n_chunks: int, seed: int) -> list[dict[str, Any]]:
    rows = [json.loads(x) for x in (data / "halueval" / "qa_dev.jsonl").open(encoding="utf-8")]
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    order = list(range(len(rows)))
    rng.shuffle(order)
    for i in order:
        sents = [s for s in _sentences(rows[i]["knowledge"]) if 6 <= len(s.split()) <= 40]
        if len(sents) < 3:
            continue
        k = rng.randint(3, min(5, len(sents)))
        picked = rng.sample(sents, k)
        answer = []
        for s in picked:
            r = rng.random()
            if r < 0.2:
                s = re.sub(r"\b(is|was|are|were)\b", r"\1 not", s, count=1)
            elif r < 0.4:
                s = re.sub(
                    r"\b(1[6-9]\d\d|20[0-2]\d)\b", lambda m: str(int(m.group(1)) + 3), s, count=1
                )
            answer.append(s)
        others = [j for j in rng.sample(range(len(rows)), n_chunks) if j != i][: n_chunks - 1]
        chunks = [
            {"text": rows[j]["knowledge"], "url": f"https://corpus.example/halueval/{j}"}
            for j in [i, *others]
        ]
        rng.shuffle(chunks)
        out.append({"query": rows[i]["question"], "chunks": chunks, "response": " ".join(answer)})
        if len(out) >= n:
            break
    return out


def _stats(ms: list[float]) -> dict[str, float]:
    ms = sorted(ms)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    return {
        "n": len(ms),
        "p50_ms": round(statistics.median(ms), 3),
        "p95_ms": round(p95, 3),
        "mean_ms": round(statistics.fmean(ms), 3),
    }


def time_systems(
    fns: dict[str, Callable[[dict[str, Any]], Any]], inputs: list[dict[str, Any]], repeat: int
) -> dict[str, dict[str, dict[str, float]]]:
    """Round-robin over systems per input, so machine noise hits every system alike."""
    for fn in fns.values():
        for x in inputs[:5]:
            fn(x)  # warm-up: imports, first-call setup
    gc.collect()
    fresh: dict[str, list[float]] = {n: [] for n in fns}
    cpu: dict[str, list[float]] = {n: [] for n in fns}
    rep: dict[str, list[float]] = {n: [] for n in fns}
    names = list(fns)
    from affidavit.verify.checks import clear_caches

    for k, x in enumerate(inputs[5:]):
        for name in names[k % len(names) :] + names[: k % len(names)]:
            clear_caches()  # a fresh input meets cold per-text caches, for every system
            c = time.process_time()
            t = time.perf_counter()
            fns[name](x)
            fresh[name].append((time.perf_counter() - t) * 1000)
            cpu[name].append((time.process_time() - c) * 1000)
    for _ in range(repeat):
        for name in names:
            t = time.perf_counter()
            fns[name](inputs[0])
            rep[name].append((time.perf_counter() - t) * 1000)
    return {
        n: {"fresh": _stats(fresh[n]), "fresh_cpu": _stats(cpu[n]), "repeat": _stats(rep[n])}
        for n in names
    }


def systems() -> dict[str, Callable[[dict[str, Any]], Any]]:
    from affidavit.audit import Auditor, matcher
    from affidavit.audit import auditor as auditor_mod

    out: dict[str, Callable[[dict[str, Any]], Any]] = {}

    def make_affidavit(backend: str) -> Callable[[dict[str, Any]], Any]:
        a = Auditor()

        def run(x: dict[str, Any]) -> Any:
            original = auditor_mod.EvidenceIndex
            auditor_mod.EvidenceIndex = lambda chunks: matcher.EvidenceIndex(  # type: ignore[misc]
                chunks, backend=backend
            )
            try:
                return a.audit(x["query"], x["chunks"], x["response"])
            finally:
                auditor_mod.EvidenceIndex = original  # type: ignore[misc]

        return run

    a_auto = Auditor()
    out["affidavit"] = lambda x: a_auto.audit(x["query"], x["chunks"], x["response"])
    out["affidavit[exact]"] = make_affidavit("exact")
    out["affidavit[bm25s]"] = make_affidavit("bm25s")
    try:
        import dokis
    except ImportError:
        print("dokis is not installed: run in .venv-bench")
        return out
    cfg = dokis.Config()

    def run_dokis(x: dict[str, Any]) -> Any:
        chunks = [dokis.Chunk(content=c["text"], source_url=c["url"]) for c in x["chunks"]]
        return dokis.audit(x["query"], chunks, x["response"], config=cfg)

    out["dokis"] = run_dokis
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "audit_latency.json"))
    args = ap.parse_args(argv)
    import logging

    logging.getLogger("dokis").setLevel(logging.ERROR)
    data = Path(args.data)
    sizes = {5: args.samples, 50: max(30, args.samples // 4), 500: max(15, args.samples // 10)}
    syss = systems()
    results: dict[str, dict[str, Any]] = {}
    for size, n in sizes.items():
        inputs = build_inputs(data, n + 5, size, args.seed)
        reps = args.repeat if size == 5 else max(10, args.repeat // 10)
        results[str(size)] = time_systems(syss, inputs, reps)
    print("latency per audit in ms (fresh inputs: each audited once, after warm-up)")
    names = list(syss)
    print(f"{'chunks':>7} " + "".join(f"{n:>22}" for n in names))
    for size in sizes:
        row = results[str(size)]
        cells = "".join(
            f"{row[n]['fresh']['p50_ms']:>10.2f} / {row[n]['fresh']['p95_ms']:>8.2f}" for n in names
        )
        print(f"{size:>7} {cells}   (p50 / p95)")
    print("CPU time of the process per audit, p50 (robust to other jobs on the machine):")
    for size in sizes:
        cells = "".join(f"{results[str(size)][n]['fresh_cpu']['p50_ms']:>22.2f}" for n in names)
        print(f"{size:>7} {cells}")
    print("repeated identical input (caches warm), wall p50:")
    for size in sizes:
        cells = "".join(f"{results[str(size)][n]['repeat']['p50_ms']:>22.2f}" for n in names)
        print(f"{size:>7} {cells}")
    ratio = cpu_ratio = None
    if "dokis" in results["5"]:
        ratio = round(
            results["5"]["affidavit"]["fresh"]["p50_ms"] / results["5"]["dokis"]["fresh"]["p50_ms"],
            3,
        )
        print(f"affidavit / dokis median at 5 chunks (fresh, wall): {ratio}")
        cpu_ratio = round(
            results["5"]["affidavit"]["fresh_cpu"]["p50_ms"]
            / results["5"]["dokis"]["fresh_cpu"]["p50_ms"],
            3,
        )
        print(f"affidavit / dokis median at 5 chunks (fresh, CPU): {cpu_ratio}")
    out = {
        "benchmark": "audit_latency",
        "command": "python benchmarks/audit_latency.py " + " ".join(argv or sys.argv[1:]),
        "inputs": "halueval qa knowledge passages; answer 3-5 passage sentences (some perturbed)",
        "sizes": sizes,
        "results": results,
        "ratio_affidavit_over_dokis_p50_5_chunks_fresh": ratio,
        "ratio_affidavit_over_dokis_cpu_p50_5_chunks_fresh": cpu_ratio,
        "note": "wall times share 2 cores with a training job; CPU time is the fairer comparison",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "dokis_version": __import__("dokis").__version__ if "dokis" in syss else None,
    }
    Path(args.out).write_text(json.dumps(out, indent=2), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
