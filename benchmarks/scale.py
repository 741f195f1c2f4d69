"""Cost growth to a million chunks: the local store vs Qdrant, and `check` on one process vs Ray.

Backends: `local` (SQLite + bm25s + numpy), `qdrant-edge` (Qdrant's own engine in-process via
qdrant-edge-py, storing and querying what QdrantStore does on a server; see qdrant_edge_store.py)
and `qdrant` (QdrantStore on qdrant-client's local mode, a pure-Python scan: small sizes only).

For each corpus size and store backend (each in its own subprocess, so peak RSS is its own):
  * ingest chunks/s through the real pipeline (JSONL -> sentence chunks -> store writes -> index
    build) with SYNTHETIC unit vectors in place of MiniLM: real embedding runs at 10-17
    chunks/s on this 2-core machine (measured here on --embed-sample real chunks), so 100k
    chunks would take hours and 1M days. End-to-end throughput with embedding is derived as
    1 / (1/store + 1/embed), not measured;
  * query latency p50/p95 of the store's own search for BM25, dense and hybrid (parent-document
    RRF, the default), with real MiniLM query vectors computed once beforehand (query embedding,
    ~100 ms at this load, is reported separately: it is the same for every store). The stored
    vectors are random, so dense rankings are meaningless here but their cost is real;
  * peak RSS and disk.
Then `affidavit check` on --check-pairs real pairs (anli_r1, premise -> hypothesis) with the
shipped verifier: one process (2 threads) vs Ray (2 workers x 1 thread), same input, same run;
labels and probabilities are compared.

Corpora are synthesised from real sentences (citation_integrity abstracts, halueval knowledge)
recombined into ~450-character documents of one chunk each.

Usage:
    python benchmarks/scale.py [--sizes 10000 100000 1000000] [--backends local qdrant]
        [--qdrant-max 100000] [--check-pairs 400] [--out benchmarks/results/scale.json]
    python benchmarks/scale.py --sizes --check-pairs 400   # only check: one process vs Ray
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from retrieval_scale import CIT, RandomVectors, sentences, synth_docs  # noqa: E402


def _du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def worker(args: argparse.Namespace) -> dict[str, Any]:
    from affidavit.core.settings import IngestSettings
    from affidavit.ingest.pipeline import Ingestor

    n, backend = args.worker, args.backend
    work = Path(args.work)
    src = work / f"docs-{n}.jsonl"
    where = work / f"{backend}-{n}"
    shutil.rmtree(where, ignore_errors=True)
    store: Any
    if backend == "local":
        from affidavit.store.local import LocalStore

        store = LocalStore(where)
    elif backend == "qdrant-edge":
        from qdrant_edge_store import EdgeStore

        store = EdgeStore(where, dim=RandomVectors.dim)
    else:
        from affidavit.store.qdrant import QdrantStore

        store = QdrantStore(path=where, dim=RandomVectors.dim)
    t0 = time.perf_counter()
    # the 1M corpus is one 420 MB JSONL file, above the default 50 MB per-file limit
    settings = IngestSettings(max_file_mb=2048)
    report = Ingestor(store, RandomVectors(), settings, batch_chunks=1024).ingest([src])
    if report.failed:
        raise RuntimeError(f"ingest failed: {report.failed[0].reason}")
    ingest_s = time.perf_counter() - t0
    chunks = report.chunks_total
    rss_ingest = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    # a fresh reader, as a search process would open it (Qdrant Edge: the same shards stay open)
    t0 = time.perf_counter()
    if backend == "local":
        from affidavit.store.local import LocalStore

        store.close()
        store = LocalStore(where)
        store.refresh()
    elif backend == "qdrant":
        from affidavit.store.qdrant import QdrantStore

        store.close()
        store = QdrantStore(path=where, dim=RandomVectors.dim)
    open_s = time.perf_counter() - t0
    queries = json.loads((work / "queries.json").read_text())[: args.queries]
    qvecs = np.load(work / "queries.npy")[: len(queries)]
    runs = {
        "bm25": lambda q, v: store.search_lexical(q, 10),
        "dense": lambda q, v: store.search_dense(v, 10),
        "hybrid": lambda q, v: store.search_documents(q, v, 10, candidates=50),
    }
    lat: dict[str, dict[str, float]] = {}
    for mode, fn in runs.items():
        fn(queries[0], qvecs[0])  # warm-up
        times = []
        for q, v in zip(queries, qvecs, strict=True):
            t0 = time.perf_counter()
            fn(q, v)
            times.append(1000 * (time.perf_counter() - t0))
        lat[mode] = {
            "p50_ms": float(np.percentile(times, 50)),
            "p95_ms": float(np.percentile(times, 95)),
        }
    store.close()
    disk = _du(where)
    shutil.rmtree(where, ignore_errors=True)
    return {
        "backend": backend,
        "chunks": chunks,
        "ingest_seconds": ingest_s,
        "ingest_chunks_per_s_synthetic_vectors": chunks / ingest_s,
        "open_seconds": open_s,
        "query_ms": lat,
        "queries": len(queries),
        "peak_rss_mb_ingest": rss_ingest,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "disk_mb": disk / 1e6,
    }


def prepare(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Corpora (largest first, smaller ones are its prefixes), queries and their vectors, and
    the real embedding throughput."""
    from affidavit.retrieve.embedders import MiniLMEmbedder

    sents = sentences(args.data)
    biggest = max(args.sizes)
    t0 = time.perf_counter()
    todo = [n for n in sorted(args.sizes) if not (work / f"docs-{n}.jsonl").exists()]
    docs = synth_docs(sents, max(todo)) if todo else []
    for n in todo:
        # written to a temporary name first: a corpus file that exists is complete
        tmp = work / f".docs-{n}.jsonl"
        with tmp.open("w", encoding="utf-8") as fh:
            for d in docs[:n]:
                fh.write(json.dumps(d) + "\n")
        tmp.rename(work / f"docs-{n}.jsonl")
    print(f"corpora ready in {time.perf_counter() - t0:.0f}s (largest {biggest})", flush=True)
    claims = [
        CIT.sub(" ", json.loads(line)["claim"]).strip()
        for line in (args.data / "citation_integrity" / "claims_dev.jsonl").open(encoding="utf-8")
    ][: args.queries]
    emb = MiniLMEmbedder(threads=2, batch_size=32)
    t0 = time.perf_counter()
    qv = emb.embed(claims)
    query_ms = 1000 * (time.perf_counter() - t0) / len(claims)
    (work / "queries.json").write_text(json.dumps(claims))
    np.save(work / "queries.npy", qv)
    sample = [d["text"] for d in synth_docs(sents, args.embed_sample, seed=11)]
    emb.embed(sample[:32])
    t0 = time.perf_counter()
    emb.embed(sample)
    secs = time.perf_counter() - t0
    return {
        "query_embedding_ms": query_ms,
        "embed_real": {
            "chunks": len(sample),
            "seconds": secs,
            "chunks_per_s": len(sample) / secs,
            "threads": 2,
        },
    }


def check_bench(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """`affidavit check` on the same real pairs: one process vs Ray, same machine, same run."""
    from affidavit.verify.datasets import load_set, sample

    items = sample(load_set("anli_r1", args.data, None), args.check_pairs, seed=0)
    src = work / "pairs.jsonl"
    src.write_text(
        "".join(
            json.dumps({"id": it.id, "claim": it.claim, "evidence": [it.evidence]}) + "\n"
            for it in items
        ),
        encoding="utf-8",
    )
    exe = [sys.executable, "-m", "affidavit.cli.main"]
    env = {**os.environ, "OMP_NUM_THREADS": "2"}
    out: dict[str, Any] = {"pairs": len(items), "set": "anli_r1 (seeded sample)"}
    runs = {
        "one_process": ["--threads", "2"],
        "ray": ["--engine", "ray", "--workers", "2", "--shard-size", "25"],
    }
    for name, extra in runs.items():
        dest = work / f"check-{name}.jsonl"
        t0 = time.perf_counter()
        res = subprocess.run(
            [*exe, "check", str(src), "--output", str(dest), *extra],
            env=env,
            capture_output=True,
            text=True,
        )
        secs = time.perf_counter() - t0
        if res.returncode not in (0, 1) or not dest.exists():
            raise RuntimeError(f"check {name} failed ({res.returncode}): {res.stderr[-2000:]}")
        out[name] = {
            "seconds_wall_incl_start": secs,
            "pairs_per_s": len(items) / secs,
            "args": extra,
        }
        print(f"check {name}: {secs:.1f}s ({len(items) / secs:.1f} pairs/s)", flush=True)
    a = [json.loads(x) for x in (work / "check-one_process.jsonl").read_text().splitlines()]
    b = [json.loads(x) for x in (work / "check-ray.jsonl").read_text().splitlines()]
    out["same_ids_in_order"] = [x["id"] for x in a] == [x["id"] for x in b]
    out["labels_identical"] = [x["label"] for x in a] == [x["label"] for x in b]
    out["max_abs_prob_diff"] = max(
        max(abs(x["p_entail"] - y["p_entail"]), abs(x["p_contradict"] - y["p_contradict"]))
        for x, y in zip(a, b, strict=True)
    )
    out["labels"] = {k: sum(x["label"] == k for x in a) for k in {x["label"] for x in a}}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument(
        "--sizes",
        type=int,
        nargs="*",
        default=[10_000, 100_000, 1_000_000],
        help="corpus sizes in chunks (none: only the check comparison)",
    )
    ap.add_argument(
        "--backends",
        nargs="+",
        default=["local", "qdrant-edge", "qdrant"],
        help="local store; Qdrant's engine in-process (qdrant-edge-py); qdrant-client local mode",
    )
    ap.add_argument(
        "--qdrant-max",
        type=int,
        default=10_000,
        help="largest corpus given to qdrant-client's local mode (a Python scan)",
    )
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--embed-sample", type=int, default=300)
    ap.add_argument("--check-pairs", type=int, default=400)
    ap.add_argument("--work", type=Path, default=None, help="scratch folder (default: a temp dir)")
    ap.add_argument("--worker", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--backend", default="local", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "scale.json")
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args)))
        return
    work = args.work or Path(tempfile.mkdtemp(prefix="affidavit-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "command": " ".join(sys.argv),
        "cpu_count": os.cpu_count(),
        "loadavg_at_start": os.getloadavg(),
        "vectors": "synthetic random unit vectors (384-d) for every stored chunk; real MiniLM "
        "query vectors",
        "runs": [],
        "not_run": [],
    }
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} (shared)", flush=True)
    if args.check_pairs:
        result["check"] = check_bench(args, work)
    if args.sizes:
        result.update(prepare(args, work))
        e = result["embed_real"]["chunks_per_s"]
        print(f"real MiniLM int8 embedding: {e:.1f} chunks/s", flush=True)
    for n in sorted(args.sizes):
        for backend in args.backends:
            if backend == "qdrant" and n > args.qdrant_max:
                result["not_run"].append(
                    {
                        "backend": backend,
                        "chunks": n,
                        "why": f"above --qdrant-max {args.qdrant_max}",
                    }
                )
                continue
            t0 = time.perf_counter()
            cmd = [sys.executable, __file__, "--worker", str(n), "--backend", backend]
            cmd += ["--work", str(work), "--queries", str(args.queries)]
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode != 0:
                result["not_run"].append(
                    {"backend": backend, "chunks": n, "why": res.stderr[-1500:]}
                )
                print(f"{backend} {n}: FAILED\n{res.stderr[-1500:]}", flush=True)
                args.out.parent.mkdir(parents=True, exist_ok=True)
                args.out.write_text(json.dumps(result, indent=2))
                continue
            row = json.loads(res.stdout.strip().splitlines()[-1])
            s = row["ingest_chunks_per_s_synthetic_vectors"]
            row["ingest_chunks_per_s_with_real_embedding_derived"] = 1 / (1 / s + 1 / e)
            result["runs"].append(row)
            q = row["query_ms"]
            print(
                f"{backend:>6} {n:>8}: ingest {s:7.0f} ch/s, bm25 {q['bm25']['p50_ms']:.1f}/"
                f"{q['bm25']['p95_ms']:.1f} ms, dense {q['dense']['p50_ms']:.1f}/"
                f"{q['dense']['p95_ms']:.1f} ms, hybrid {q['hybrid']['p50_ms']:.1f}/"
                f"{q['hybrid']['p95_ms']:.1f} ms, RSS {row['peak_rss_mb']:.0f} MB, disk "
                f"{row['disk_mb']:.0f} MB ({time.perf_counter() - t0:.0f}s)",
                flush=True,
            )
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(result, indent=2))
    result["loadavg_at_end"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
