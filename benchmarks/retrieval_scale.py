"""Retrieval at scale: ingest throughput, query latency (p50/p95) and peak memory vs corpus size.

Chunks are synthesised from real text (citation_integrity abstract sentences and halueval
knowledge passages, recombined into ~450-character documents). Each size runs in its own
subprocess so its peak RSS is its own.

What is measured, honestly:
  * embed_chunks_per_s: MiniLM int8 (2 threads) on a sample of real chunks.
  * ingest (at every size): the real pipeline (JSONL -> chunks -> SQLite -> bm25s + vector
    index) with PRECOMPUTED random unit vectors instead of MiniLM, so the store's own cost is
    measured at 10k and 100k without hours of embedding; end-to-end throughput with embedding
    is then 1 / (1/ingest + 1/embed) and is reported as derived, not measured.
  * query latency: real MiniLM query embedding + search over the store; the stored vectors are
    random, so dense rankings are meaningless here but their cost is real.

Usage:
    python benchmarks/retrieval_scale.py [--data ../shared/data] [--sizes 10000 100000]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

CIT = re.compile(r"\[?<\|[a-z_]+\|>\]?")


def sentences(data: Path) -> list[str]:
    out: list[str] = []
    with (data / "citation_integrity" / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            out.extend(s.strip() for s in json.loads(line)["abstract"] if s.strip())
    with (data / "halueval" / "qa_dev.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            k = json.loads(line)["knowledge"]
            out.extend(
                s.strip() + "." for s in re.split(r"(?<=[a-z])\.(?=[A-Z])|\. ", k) if s.strip()
            )
    return out


def synth_docs(sents: list[str], n_chunks: int, seed: int = 7) -> list[dict[str, Any]]:
    """Documents of ~450 characters (one chunk each at chunk_size 500) from random sentences."""
    rng = np.random.default_rng(seed)
    docs = []
    for i in range(n_chunks):
        parts: list[str] = []
        while sum(len(p) + 1 for p in parts) < 350:
            s = sents[int(rng.integers(len(sents)))]
            if len(s) < 480:
                parts.append(s)
        text = " ".join(parts)
        while len(text) > 500:
            parts.pop()
            text = " ".join(parts)
        docs.append({"id": f"s{i}", "text": text})
    return docs


class RandomVectors:
    """Precomputed-vector stand-in for the embedder (unit vectors, MiniLM's name and dim)."""

    dim = 384
    name = "all-MiniLM-L6-v2-onnx-int8"

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)

    def config(self) -> dict[str, Any]:
        return {"kind": "random-unit-vectors", "dim": self.dim}

    def embed(self, texts: list[str]) -> np.ndarray:
        v = self.rng.standard_normal((len(texts), self.dim)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def worker(args: argparse.Namespace) -> dict[str, Any]:
    from affidavit.core.settings import IngestSettings
    from affidavit.ingest.pipeline import Ingestor
    from affidavit.retrieve.embedders import MiniLMEmbedder
    from affidavit.retrieve.retriever import StoreRetriever
    from affidavit.store.local import LocalStore

    n = args.worker
    sents = sentences(args.data)
    docs = synth_docs(sents, n)
    with tempfile.TemporaryDirectory(prefix="affidavit-scale-") as tmp:
        src = Path(tmp) / "docs.jsonl"
        src.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
        store = LocalStore(Path(tmp) / "store")
        t0 = time.perf_counter()
        report = Ingestor(store, RandomVectors(), IngestSettings(), batch_chunks=1024).ingest([src])
        ingest_s = time.perf_counter() - t0
        chunks = report.chunks_total
        t0 = time.perf_counter()
        rerun = Ingestor(store, RandomVectors(), IngestSettings()).ingest([src])
        rerun_s = time.perf_counter() - t0
        assert rerun.counts()["skipped"] == n
        store.close()
        # a fresh reader: loads the persisted index from disk
        t0 = time.perf_counter()
        reader = LocalStore(Path(tmp) / "store")
        reader.refresh()
        open_s = time.perf_counter() - t0
        claims = [
            CIT.sub(" ", json.loads(line)["claim"]).strip()
            for line in (args.data / "citation_integrity" / "claims_dev.jsonl").open(
                encoding="utf-8"
            )
        ][: args.queries]
        emb = MiniLMEmbedder(threads=2)
        emb.name = RandomVectors.name  # same model; the stored vectors are random stand-ins
        r = StoreRetriever(reader, emb)
        lat: dict[str, dict[str, float]] = {}
        for mode in ("bm25", "dense", "hybrid"):
            r.search(claims[0], k=10, mode=mode)  # warm-up
            times = []
            for q in claims:
                t0 = time.perf_counter()
                r.search(q, k=10, mode=mode)
                times.append(1000 * (time.perf_counter() - t0))
            lat[mode] = {
                "p50_ms": float(np.percentile(times, 50)),
                "p95_ms": float(np.percentile(times, 95)),
            }
        t0 = time.perf_counter()
        emb.embed(claims)
        embed_query_ms = 1000 * (time.perf_counter() - t0) / len(claims)
        reader.close()
        disk = sum(f.stat().st_size for f in (Path(tmp) / "store").rglob("*") if f.is_file())
    return {
        "chunks": chunks,
        "ingest_seconds_store_only": ingest_s,
        "ingest_chunks_per_s_store_only": chunks / ingest_s,
        "rerun_seconds_all_skipped": rerun_s,
        "open_and_load_index_seconds": open_s,
        "query_latency_ms": lat,
        "query_embedding_ms": embed_query_ms,
        "queries": len(claims),
        "disk_mb": disk / 1e6,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def embed_throughput(data: Path, n: int) -> dict[str, Any]:
    from affidavit.retrieve.embedders import MiniLMEmbedder

    docs = synth_docs(sentences(data), n, seed=11)
    emb = MiniLMEmbedder(threads=2, batch_size=32)
    emb.embed([d["text"] for d in docs[:32]])  # warm-up
    t0 = time.perf_counter()
    emb.embed([d["text"] for d in docs])
    s = time.perf_counter() - t0
    return {"chunks": n, "seconds": s, "chunks_per_s": n / s, "threads": 2}


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--embed-sample", type=int, default=1000)
    ap.add_argument("--worker", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "results" / "retrieval_scale.json"
    )
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args)))
        return
    load = os.getloadavg()
    result: dict[str, Any] = {
        "command": " ".join(sys.argv),
        "cpu_count": os.cpu_count(),
        "loadavg_at_start": load,
        "sizes": {},
    }
    print(f"machine: {os.cpu_count()} cores, load average {load[0]:.1f} (shared)", flush=True)
    result["embedding"] = embed_throughput(args.data, args.embed_sample)
    e = result["embedding"]["chunks_per_s"]
    print(
        f"MiniLM int8 embedding: {e:.1f} chunks/s ({args.embed_sample} chunks, 2 threads)",
        flush=True,
    )
    for n in args.sizes:
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--worker",
                str(n),
                "--data",
                str(args.data),
                "--queries",
                str(args.queries),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        row = json.loads(out.stdout.strip().splitlines()[-1])
        s = row["ingest_chunks_per_s_store_only"]
        row["ingest_chunks_per_s_with_embedding_derived"] = 1 / (1 / s + 1 / e)
        result["sizes"][str(n)] = row
        print(f"{n} chunks done", flush=True)
    print(
        f"\n{'chunks':>8} {'store ch/s':>10} {'+embed ch/s':>11} {'rerun s':>8} {'open s':>7} "
        f"{'bm25 p50/p95':>14} {'dense p50/p95':>14} {'hybrid p50/p95':>15} "
        f"{'RSS MB':>7} {'disk MB':>8}"
    )
    for n, r in result["sizes"].items():
        q = r["query_latency_ms"]
        print(
            f"{n:>8} {r['ingest_chunks_per_s_store_only']:>10.0f} "
            f"{r['ingest_chunks_per_s_with_embedding_derived']:>11.1f} "
            f"{r['rerun_seconds_all_skipped']:>8.1f} {r['open_and_load_index_seconds']:>7.2f} "
            f"{q['bm25']['p50_ms']:>6.1f}/{q['bm25']['p95_ms']:<7.1f} "
            f"{q['dense']['p50_ms']:>6.1f}/{q['dense']['p95_ms']:<7.1f} "
            f"{q['hybrid']['p50_ms']:>6.1f}/{q['hybrid']['p95_ms']:<8.1f} "
            f"{r['peak_rss_mb']:>7.0f} {r['disk_mb']:>8.0f}"
        )
    result["loadavg_at_end"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
