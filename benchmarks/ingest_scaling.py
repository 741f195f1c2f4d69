"""Ingest time and peak memory against document size: is the growth linear? (issue 13)

One synthetic English document per size (seeded: sentences with abbreviations, decimals,
initials, list items and paragraph breaks, so the sentence splitter's hard cases occur at every
size) is ingested into a fresh local store, each in its own child process so that peak memory
(``ru_maxrss``) belongs to that size alone.

Two measurements, stated separately because they scale differently:

- **chunk+store** (every size): the whole ``Ingestor.ingest`` run (read, decode, sentence
  splitting, chunking, writing documents/chunks/vectors to SQLite, building the BM25 index)
  with a null embedder (constant vectors, no model), so embedding time is left out; the
  sentence splitting and chunking alone is also timed in the same child.
- **full** (``--embed-sizes``, default 100 kB and 1 MB): the same run with the real MiniLM int8
  embedder (``OMP_NUM_THREADS`` threads): embedding dominates and is linear in the number of
  chunks; its chunks/s gives the time for larger sizes.

    nice -n 10 python benchmarks/ingest_scaling.py [--sizes 100k,1m,10m,50m] [--embed-sizes 100k,1m]

Writes ``benchmarks/results/ingest_scaling.json`` and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "ingest_scaling.json"

_WORDS = str.split(
    "the of and to in a is that for it as was with be by on not he this are or his from at "
    "which but have an they you were her she there been one all we their has would when if "
    "more will about some what up out them into other time then its two may these like only "
    "river bridge tower council report measured observed century population engine treaty "
    "harbour province railway museum observatory committee element reaction sample growth"
)
_TAILS = ["Dr. Smith", "Mr. J. Doe", "approx. 3.5 m", "e.g. the delta", "U.S. officials", "No. 7"]


def make_text(n_bytes: int, seed: int = 13) -> str:
    """About ``n_bytes`` of ASCII prose (at most ``n_bytes``), deterministic for a seed."""
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    sentence_no = 0
    while size < n_bytes:
        words = [rng.choice(_WORDS) for _ in range(rng.randint(6, 24))]
        if rng.random() < 0.3:
            words.insert(rng.randint(0, len(words)), rng.choice(_TAILS))
        if rng.random() < 0.2:
            words.append(str(rng.randint(1200, 2025)))
        sentence = " ".join(words)
        sentence = sentence[0].upper() + sentence[1:] + rng.choice([".", ".", ".", "!", "?"])
        sentence_no += 1
        if sentence_no % 40 == 0:
            sep = "\n\n# Section heading\n\n"
        elif sentence_no % 17 == 0:
            sep = "\n- "
        elif sentence_no % 6 == 0:
            sep = "\n\n"
        else:
            sep = " "
        piece = sentence + sep
        parts.append(piece)
        size += len(piece)
    return "".join(parts)[:n_bytes].rstrip() + "\n"


def parse_size(s: str) -> int:
    s = s.strip().lower()
    mult = {"k": 1000, "m": 1000_000}.get(s[-1], 1)
    return int(float(s[:-1] if s[-1] in "km" else s) * mult)


def label(n: int) -> str:
    return f"{n // 1000_000} MB" if n >= 1000_000 else f"{n // 1000} kB"


class NullEmbedder:
    """Constant unit vectors: stores like an embedder, costs nothing (isolates chunk+store)."""

    name = "null-64"
    dim = 64

    def embed(self, texts: list[str]) -> Any:
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        out[:, 0] = 1.0
        return out


def child(size: int, embedder: str) -> dict[str, Any]:
    """Runs in a fresh process: one ingest of one document; prints its measurements."""
    from affidavit.core.settings import EmbedSettings, IngestSettings
    from affidavit.core.types import Document
    from affidavit.ingest.chunking import SentenceChunker
    from affidavit.ingest.pipeline import Ingestor
    from affidavit.retrieve.embedders import make_embedder
    from affidavit.store.local import LocalStore

    text = make_text(size)
    settings = IngestSettings()
    with tempfile.TemporaryDirectory(prefix="ingest-scaling-") as tmp:
        doc_path = Path(tmp) / "doc.txt"
        doc_path.write_text(text, encoding="utf-8")
        threads = int(os.environ.get("OMP_NUM_THREADS", "2"))
        emb = (
            NullEmbedder()
            if embedder == "null"
            else make_embedder(EmbedSettings(backend=embedder, threads=threads))  # type: ignore[arg-type]
        )
        t0 = time.perf_counter()
        chunks = SentenceChunker(settings.chunk_size, settings.chunk_overlap).chunk(
            Document(id="d", source=str(doc_path), text=text)
        )
        chunk_s = time.perf_counter() - t0
        del chunks
        store = LocalStore(Path(tmp) / "store")
        t0, c0 = time.perf_counter(), time.process_time()
        report = Ingestor(store, emb, settings).ingest([doc_path])
        ingest_s, ingest_cpu = time.perf_counter() - t0, time.process_time() - c0
        _, n_chunks = store.count()
        store.close()
    if report.failed:
        raise SystemExit(f"ingest failed: {report.failed[0].reason}")
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "bytes": size,
        "embedder": embedder,
        "chunks": n_chunks,
        "chunking_s": round(chunk_s, 3),
        "ingest_s": round(ingest_s, 3),
        "ingest_cpu_s": round(ingest_cpu, 3),
        "peak_rss_mb": round(peak_kib / 1024, 1),
    }


def run_child(size: int, embedder: str) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", str(size), "--embedder", embedder]
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if p.returncode != 0:
        raise SystemExit(f"child {size} {embedder} failed:\n{p.stderr[-3000:]}")
    return dict(json.loads(p.stdout.strip().splitlines()[-1]))


def linearity(rows: list[dict[str, Any]], key: str) -> list[float | None]:
    """Seconds per MB at each size (flat when linear)."""
    return [round(r[key] / (r["bytes"] / 1e6), 3) if r["bytes"] else None for r in rows]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="100k,1m,10m,50m")
    ap.add_argument("--embed-sizes", default="100k,1m")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--embedder", default="null", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child, args.embedder)))
        return

    sizes = [parse_size(s) for s in args.sizes.split(",") if s]
    embed_sizes = [parse_size(s) for s in args.embed_sizes.split(",") if s]
    rows = []
    for n in sizes:
        r = run_child(n, "null")
        rows.append(r)
        print(f"chunk+store {label(n):>7}: {r}", flush=True)
    full = []
    for n in embed_sizes:
        r = run_child(n, "minilm")
        full.append(r)
        print(f"full (MiniLM) {label(n):>5}: {r}", flush=True)
    for r, spm, cpm, cpu in zip(
        rows,
        linearity(rows, "ingest_s"),
        linearity(rows, "chunking_s"),
        linearity(rows, "ingest_cpu_s"),
        strict=True,
    ):
        r["ingest_s_per_mb"] = spm
        r["chunking_s_per_mb"] = cpm
        r["cpu_s_per_mb"] = cpu
    for r, spm in zip(full, linearity(full, "ingest_s"), strict=True):
        r["ingest_s_per_mb"] = spm
        r["chunks_per_s"] = round(r["chunks"] / r["ingest_s"], 1) if r["ingest_s"] else None

    print()
    print(
        "| size | chunks | chunking s | chunk+store s (wall) | chunk+store CPU s "
        "| CPU s per MB | peak RSS MB |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {label(r['bytes'])} | {r['chunks']} | {r['chunking_s']:.2f} | "
            f"{r['ingest_s']:.2f} | {r['ingest_cpu_s']:.2f} | {r['cpu_s_per_mb']:.2f} | "
            f"{r['peak_rss_mb']:.0f} |"
        )
    if full:
        print()
        print(
            "| size (MiniLM int8) | chunks | full ingest s (wall) | CPU s | chunks/s (wall) "
            "| peak RSS MB |"
        )
        print("|---:|---:|---:|---:|---:|---:|")
        for r in full:
            print(
                f"| {label(r['bytes'])} | {r['chunks']} | {r['ingest_s']:.1f} | "
                f"{r['ingest_cpu_s']:.1f} | {r['chunks_per_s']} | {r['peak_rss_mb']:.0f} |"
            )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps(
            {
                "benchmark": "ingest_scaling",
                "command": "nice -n 10 python benchmarks/ingest_scaling.py "
                f"--sizes {args.sizes} --embed-sizes {args.embed_sizes}",
                "machine": {
                    "cpus": os.cpu_count(),
                    "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
                    "python": platform.python_version(),
                    "note": "2 cores shared with other jobs: times are upper bounds",
                },
                "what": {
                    "chunk_store": "Ingestor.ingest with a null embedder (constant vectors): read, decode, "
                    "split, chunk, SQLite write, BM25 index build (no embedding model)",
                    "chunking": "SentenceChunker.chunk alone on the same text",
                    "full": "Ingestor.ingest with MiniLM int8 (embedding included)",
                },
                "chunk_store": rows,
                "full": full,
            },
            indent=1,
        ),
        encoding="utf-8",
    )
    print(f"\nwrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
