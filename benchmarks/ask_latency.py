"""Latency of ``affidavit ask`` with the embedded LLM: per stage, end to end, time to first token,
peak memory; plain RAG (same retriever and LLM, no correction, no verification) in the same run.

Corpus: ``sample_corpus/`` (else the demo's built-in two documents); questions: the demo's.

    python benchmarks/ask_latency.py [--corpus DIR] [--repeats 1] [--threads 2]

Writes ``benchmarks/results/ask_latency.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def rss_mib() -> float:
    """Peak resident set size of this process so far, MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=None)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/ask_latency.json")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)

    from affidavit import demo
    from affidavit.core.settings import load_settings
    from affidavit.ingest.pipeline import Ingestor
    from affidavit.pipeline.baseline import plain_rag
    from affidavit.pipeline.build import build_pipeline
    from affidavit.retrieve.embedders import make_embedder
    from affidavit.store.factory import make_store

    settings = load_settings(overrides={"generate": {"threads": args.threads}})
    memory: dict[str, float] = {"start_mib": rss_mib()}
    with tempfile.TemporaryDirectory(prefix="affidavit-latency-") as tmp:
        corpus = args.corpus or demo.default_corpus()
        if corpus is None:
            corpus = demo._fallback_corpus(Path(tmp) / "corpus")
        store_dir = Path(tmp) / "store"
        store = make_store(settings.store, path=store_dir)
        t0 = time.perf_counter()
        report = Ingestor(store, make_embedder(settings.embed), settings.ingest).ingest([corpus])
        ingest_s = time.perf_counter() - t0
        pipe = build_pipeline(settings, store_path=store_dir)
        memory["pipeline_built_mib"] = rss_mib()
        t0 = time.perf_counter()
        getattr(pipe.generator, "load", lambda: None)()
        load_s = time.perf_counter() - t0
        memory["llm_loaded_mib"] = rss_mib()

        runs: list[dict[str, Any]] = []
        for r in range(args.repeats):
            for q in demo.SAMPLE_QUESTIONS:
                res = pipe.ask(q, mode="strict")
                plain = plain_rag(q, pipe.retriever, pipe.generator, settings)
                runs.append(
                    {
                        "repeat": r,
                        "question": q,
                        "ours": {
                            "stages": {
                                t.stage: t.seconds for t in res.trace.timings if not t.skipped
                            },
                            "ttft": res.trace.time_to_first_token_s,
                            "pieces": res.trace.generated_pieces,
                            "prompt_chars": res.trace.prompt_chars,
                            "claims": len(res.claims),
                            "verified": sum(c.decision == "verified" for c in res.claims),
                            "classification": res.trace.classification,
                            "answer": res.answer,
                        },
                        "plain": {
                            "stages": plain.timings,
                            "ttft": plain.time_to_first_token_s,
                            "answer": plain.answer,
                        },
                    }
                )
                print(
                    f"{q[:50]:50} ask {res.timings['total']:6.1f}s  "
                    f"plain {plain.timings['total']:6.1f}s",
                    flush=True,
                )
        memory["peak_mib"] = rss_mib()

    stages = sorted({s for run in runs for s in run["ours"]["stages"]} - {"total", "load"})
    ours_stage = {
        s: median([r["ours"]["stages"][s] for r in runs if s in r["ours"]["stages"]])
        for s in stages
    }
    ours_total = median([r["ours"]["stages"]["total"] for r in runs])
    plain_total = median([r["plain"]["stages"]["total"] for r in runs])
    generated = [r for r in runs if r["ours"]["ttft"] is not None]
    summary = {
        "questions": len(demo.SAMPLE_QUESTIONS),
        "repeats": args.repeats,
        "threads": args.threads,
        "cpu_count": os.cpu_count(),
        "load_average_at_end": os.getloadavg(),
        "ingest_seconds": ingest_s,
        "ingest_chunks": report.chunks_total,
        "model_load_seconds": load_s,
        "ask_stage_median_s": ours_stage,
        "ask_total_median_s": ours_total,
        "ask_ttft_median_s": median([r["ours"]["ttft"] for r in generated]),
        "plain_total_median_s": plain_total,
        "plain_ttft_median_s": median(
            [r["plain"]["ttft"] for r in runs if r["plain"]["ttft"] is not None]
        ),
        "plain_generate_median_s": median([r["plain"]["stages"]["generate"] for r in runs]),
        "ask_over_plain_total": round(ours_total / plain_total, 3)
        if ours_total and plain_total
        else None,
        "memory_mib": {k: round(v, 1) for k, v in memory.items()},
    }
    print()
    print(f"{'stage':12} {'ask median s':>14}")
    for s, v in ours_stage.items():
        print(f"{s:12} {v:>14.3f}")
    print(
        f"end to end: ask {ours_total:.2f}s vs plain RAG {plain_total:.2f}s "
        f"(x{summary['ask_over_plain_total']}); time to first token: ask "
        f"{summary['ask_ttft_median_s']}s, plain {summary['plain_ttft_median_s']}s"
    )
    print(f"model load {load_s:.1f}s; peak RSS {memory['peak_mib']:.0f} MiB")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "benchmark": "ask_latency",
                "command": "python " + " ".join(sys.argv),
                "corpus": str(corpus),
                "settings": settings.effective(),
                "summary": summary,
                "runs": runs,
            },
            indent=1,
            default=str,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
