"""Where ingest time goes, and the embedding changes measured before/after in the same run.

Real documents (citation_integrity abstracts) through the real pipeline with the real MiniLM int8
embedder. Each run is split into stages by timing the embedder, the store writes and the index
build; load + chunk + BM25 analysis is the rest. Variants run interleaved (before, after, before,
after, ...) so that the shared machine's load hits both alike.

* before: the embedder as it was (each call sorted by character length, the tokeniser padding
  every batch, called per ingest batch of 256 chunks);
* after: one tokeniser pass per call, batches by exact token count each padded to its own
  longest, ingest batches of 1024 chunks (fewer, larger transactions and length buckets).

Usage:
    python benchmarks/ingest_speed.py [--docs 150] [--repeats 2] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from affidavit.core.settings import IngestSettings  # noqa: E402
from affidavit.ingest.pipeline import Ingestor  # noqa: E402
from affidavit.retrieve.embedders import MiniLMEmbedder, l2_normalise  # noqa: E402
from affidavit.store.local import LocalStore  # noqa: E402


class BeforeEmbedder(MiniLMEmbedder):
    """The embedder before this change: sorted by characters, the tokeniser pads each batch."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for b in range(0, len(order), self.batch_size):
            idx = order[b : b + self.batch_size]
            enc = self.tokenizer.encode_batch([texts[i] for i in idx])
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self.session.run(None, feeds)[0]
            m = mask[..., None].astype(np.float32)
            out[idx] = l2_normalise((hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9))
        return out


class Timed:
    """Wraps a callable and adds up its wall time."""

    def __init__(self, fn: Any) -> None:
        self.fn, self.seconds = fn, 0.0

    def __call__(self, *a: Any, **kw: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return self.fn(*a, **kw)
        finally:
            self.seconds += time.perf_counter() - t0


def run(variant: str, src: Path, threads: int) -> tuple[dict[str, Any], np.ndarray]:
    emb = (BeforeEmbedder if variant == "before" else MiniLMEmbedder)(threads=threads)
    batch_chunks = 256 if variant == "before" else 1024
    with tempfile.TemporaryDirectory() as tmp:
        store = LocalStore(Path(tmp) / "store")
        t_embed, t_write, t_index = Timed(emb.embed), Timed(store.upsert), Timed(store.refresh)
        emb.embed = t_embed  # type: ignore[method-assign]
        store.upsert = t_write  # type: ignore[method-assign]
        store.refresh = t_index  # type: ignore[method-assign]
        t0 = time.perf_counter()
        report = Ingestor(store, emb, IngestSettings(), batch_chunks=batch_chunks).ingest([src])
        total = time.perf_counter() - t0
        chunks = report.chunks_total
        vecs = store._current_index().vectors.copy()
        store.close()
    row = {
        "variant": variant,
        "chunks": chunks,
        "seconds": total,
        "chunks_per_s": chunks / total,
        "stages_s": {
            "embed": t_embed.seconds,
            "store_writes": t_write.seconds,
            "index_build": t_index.seconds,
            "load_chunk_analyse": total - t_embed.seconds - t_write.seconds - t_index.seconds,
        },
    }
    return row, vecs


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--docs", type=int, default=150)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "results" / "ingest_speed.json"
    )
    args = ap.parse_args()
    corpus = []
    with (args.data / "citation_integrity" / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            c = json.loads(line)
            corpus.append(
                {
                    "id": str(c["doc_id"]),
                    "title": c["title"] or None,
                    "text": " ".join(c["abstract"]),
                }
            )
            if len(corpus) >= args.docs:
                break
    tmp = Path(tempfile.mkdtemp())
    src = tmp / "docs.jsonl"
    src.write_text("".join(json.dumps(d) + "\n" for d in corpus), encoding="utf-8")
    result: dict[str, Any] = {
        "command": " ".join(sys.argv),
        "cpu_count": os.cpu_count(),
        "loadavg_at_start": os.getloadavg(),
        "docs": len(corpus),
        "runs": [],
    }
    vectors: dict[str, np.ndarray] = {}
    for rep in range(args.repeats):
        for variant in ("before", "after"):
            row, vecs = run(variant, src, args.threads)
            row["repeat"] = rep
            vectors[variant] = vecs
            result["runs"].append(row)
            st = row["stages_s"]
            print(
                f"{variant:>6} #{rep}: {row['chunks']} chunks in {row['seconds']:.1f}s "
                f"({row['chunks_per_s']:.1f}/s); embed {st['embed']:.1f}s, writes "
                f"{st['store_writes']:.2f}s, index {st['index_build']:.2f}s, load+chunk+analyse "
                f"{st['load_chunk_analyse']:.2f}s",
                flush=True,
            )
    cos = np.sum(vectors["before"] * vectors["after"], axis=1)
    result["vector_agreement"] = {"min_cosine": float(cos.min()), "mean_cosine": float(cos.mean())}
    for variant in ("before", "after"):
        rates = [r["chunks_per_s"] for r in result["runs"] if r["variant"] == variant]
        result[f"{variant}_chunks_per_s_median"] = float(np.median(rates))
    result["speedup"] = result["after_chunks_per_s_median"] / result["before_chunks_per_s_median"]
    result["loadavg_at_end"] = os.getloadavg()
    print(
        f"before {result['before_chunks_per_s_median']:.2f} chunks/s, after "
        f"{result['after_chunks_per_s_median']:.2f} chunks/s (x{result['speedup']:.2f}); "
        f"vectors agree at cosine >= {cos.min():.4f}"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
