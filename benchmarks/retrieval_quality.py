"""Retrieval quality: our BM25 / dense / hybrid vs bm25s and rank_bm25, side by side.

1. citation_integrity (dev): 316 claims -> the abstracts they cite, among 3,063 abstracts.
   nDCG@10 and recall@10 (binary relevance; a document's rank is that of its best chunk).
2. halueval qa_dev: question -> its own knowledge passage among all distinct passages.
   recall@1 and recall@5 on a seeded sample of questions.

Our systems run the real pipeline: JSONL ingest -> sentence chunks -> LocalStore (SQLite + bm25s
+ MiniLM int8 vectors) -> StoreRetriever. The baselines index whole documents with their own
default tokenisation. The stores are cached under --cache (incremental ingest makes a re-run
cheap).

Usage:
    python benchmarks/retrieval_quality.py [--data ../shared/data] [--halueval-sample 1000]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from affidavit.core.settings import IngestSettings  # noqa: E402
from affidavit.ingest.pipeline import Ingestor  # noqa: E402
from affidavit.retrieve.embedders import MiniLMEmbedder  # noqa: E402
from affidavit.retrieve.fusion import rrf  # noqa: E402
from affidavit.retrieve.retriever import StoreRetriever  # noqa: E402
from affidavit.retrieve.text import Analyzer  # noqa: E402
from affidavit.store.local import LocalStore  # noqa: E402

CIT = re.compile(r"\[?<\|[a-z_]+\|>\]?")


def ndcg_at(ranked: list[str], relevant: set[str], k: int = 10) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(ranked[:k]) if d in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return dcg / ideal if ideal else 0.0


def recall_at(ranked: list[str], relevant: set[str], k: int) -> float:
    return len(set(ranked[:k]) & relevant) / len(relevant) if relevant else 0.0


def doc_ranking(hits: list[Any]) -> list[str]:
    """Chunk hits -> document ranking (first occurrence = best chunk)."""
    out: list[str] = []
    for h in hits:
        d = str(h.chunk.doc_id)
        if d not in out:
            out.append(d)
    return out


def build_store(path: Path, records: list[dict[str, Any]], embedder: MiniLMEmbedder) -> LocalStore:
    path.mkdir(parents=True, exist_ok=True)
    src = path / "corpus.jsonl"
    body = "\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n"
    if not src.exists() or src.read_text(encoding="utf-8") != body:
        src.write_text(body, encoding="utf-8")
    store = LocalStore(path / "store")
    t0 = time.perf_counter()
    report = Ingestor(store, embedder, IngestSettings()).ingest([src])
    c = report.counts()
    print(
        f"  ingest {path.name}: {c} chunks={report.chunks_total} "
        f"in {time.perf_counter() - t0:.1f}s",
        flush=True,
    )
    return store


def copy_to_qdrant(local: LocalStore, path: Path | None) -> Any:
    """The local store's documents, chunks and vectors written to a Qdrant store (local mode),
    so both backends rank the very same vectors (no second embedding run)."""
    from affidavit.store.base import DocumentBatchItem
    from affidavit.store.qdrant import QdrantStore

    if path is not None and path.exists():
        import shutil

        shutil.rmtree(path)
    q = QdrantStore(path=path)
    name = local.embedder() or ""
    batch: list[DocumentBatchItem] = []
    t0 = time.perf_counter()
    for rec in local.records().values():
        doc = local.get_document(rec.doc_id)
        assert doc is not None
        rows = local._db.execute(
            "SELECT chunk_id, vector FROM chunks WHERE doc_id = ? ORDER BY idx", (rec.doc_id,)
        ).fetchall()
        chunks = local.get_chunks([r[0] for r in rows])
        vecs = np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
        batch.append(
            DocumentBatchItem(document=doc, chunks=tuple(chunks), vectors=vecs, origin=rec.origin)
        )
        if len(batch) >= 256:
            q.upsert(batch, embedder=name)
            batch = []
    q.upsert(batch, embedder=name)
    print(f"  copied to Qdrant (local mode): {q.count()} in {time.perf_counter() - t0:.0f}s")
    return q


# qdrant-client's local mode scans in Python (~3 s a query here): only the default ranking
QDRANT_VARIANTS = {"qdrant hybrid RRF k=60 (in engine)": {"mode": "hybrid"}}


def evaluate(name: str, rankings: list[list[str]], qrels: list[set[str]]) -> dict[str, float]:
    return {
        "system": name,
        "ndcg@10": float(np.mean([ndcg_at(r, q) for r, q in zip(rankings, qrels, strict=True)])),
        "recall@10": float(
            np.mean([recall_at(r, q, 10) for r, q in zip(rankings, qrels, strict=True)])
        ),
        "recall@1": float(
            np.mean([recall_at(r, q, 1) for r, q in zip(rankings, qrels, strict=True)])
        ),
        "recall@5": float(
            np.mean([recall_at(r, q, 5) for r, q in zip(rankings, qrels, strict=True)])
        ),
    }


def baselines(
    ids: list[str], texts: list[str], queries: list[str], k: int
) -> dict[str, list[list[str]]]:
    """bm25s (its own tokenizer, English stop words, with and without stemming) and rank_bm25."""
    import bm25s
    import Stemmer
    from rank_bm25 import BM25Okapi

    out: dict[str, list[list[str]]] = {}
    for label, stemmer in (
        ("bm25s (stopwords)", None),
        ("bm25s (stopwords+stem)", Stemmer.Stemmer("english")),
    ):
        tok = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
        m = bm25s.BM25()
        m.index(tok, show_progress=False)
        qt = bm25s.tokenize(queries, stopwords="en", stemmer=stemmer, show_progress=False)
        res, _ = m.retrieve(qt, k=k, show_progress=False)
        out[label] = [[ids[i] for i in row] for row in res]
    # rank_bm25 as its README uses it: whitespace split, lower-case
    okapi = BM25Okapi([t.lower().split() for t in texts])
    ranked = []
    for q in queries:
        s = okapi.get_scores(q.lower().split())
        ranked.append([ids[i] for i in np.argsort(-s)[:k]])
    out["rank_bm25 Okapi (split)"] = ranked
    an = Analyzer()
    okapi2 = BM25Okapi([an.tokens(t) or [""] for t in texts])
    ranked = []
    for q in queries:
        s = okapi2.get_scores(an.tokens(q))
        ranked.append([ids[i] for i in np.argsort(-s)[:k]])
    out["rank_bm25 Okapi (our analyzer)"] = ranked
    return out


def ours(
    store: Any,
    embedder: MiniLMEmbedder,
    queries: list[str],
    k: int,
    variants: dict[str, dict[str, Any]],
) -> tuple[dict[str, list[list[str]]], dict[str, float]]:
    out: dict[str, list[list[str]]] = {}
    secs: dict[str, float] = {}
    for label, v in variants.items():
        r = StoreRetriever(
            store,
            embedder,
            rrf_k=v.get("rrf_k", 60),
            candidates=v.get("candidates", 100),
            weights=v.get("weights", (1.0, 1.0)),
            granularity=v.get("granularity", "document"),
            document_prior=v.get("document_prior", False),
            fusion=v.get("fusion", "rrf"),
        )
        t0 = time.perf_counter()
        res = r.search_many(queries, k=k, mode=v["mode"])
        secs[label] = (time.perf_counter() - t0) / max(len(queries), 1)
        out[label] = [doc_ranking(h) for h in res]
    # fusion of the two document rankings (each deduplicated first), no extra search
    if "affidavit bm25" in out and "affidavit dense (MiniLM int8)" in out:
        lex, den = out["affidavit bm25"], out["affidavit dense (MiniLM int8)"]
        out["affidavit hybrid RRF k=60, fused per document"] = [
            [d for d, _ in rrf([a, b], k=60)] for a, b in zip(lex, den, strict=True)
        ]
    return out, secs


VARIANTS = {
    "affidavit bm25": {"mode": "bm25"},
    "affidavit dense (MiniLM int8)": {"mode": "dense"},
    "affidavit hybrid RRF k=60": {"mode": "hybrid"},
    "affidavit hybrid RRF k=60 (chunk-level fusion)": {"mode": "hybrid", "granularity": "chunk"},
    "affidavit hybrid passage (3 per document)": {"mode": "hybrid", "granularity": "passage"},
    "affidavit hybrid passage (3 per document, document prior)": {
        "mode": "hybrid",
        "granularity": "passage",
        "document_prior": True,
    },
    "affidavit hybrid convex (chunk-level fusion)": {
        "mode": "hybrid",
        "granularity": "chunk",
        "fusion": "convex",
    },
    "affidavit hybrid convex passage (3 per document, document prior; the default)": {
        "mode": "hybrid",
        "granularity": "passage",
        "document_prior": True,
        "fusion": "convex",
    },
}


def table(rows: list[dict[str, Any]], cols: list[str]) -> str:
    w = max(len(r["system"]) for r in rows) + 2
    lines = ["system".ljust(w) + "".join(c.rjust(11) for c in cols)]
    for r in rows:
        lines.append(r["system"].ljust(w) + "".join(f"{100 * r[c]:11.1f}" for c in cols))
    return "\n".join(lines)


def run_citation(
    data: Path, cache: Path, embedder: MiniLMEmbedder, qdrant: bool = False
) -> dict[str, Any]:
    folder = data / "citation_integrity"
    corpus = [json.loads(line) for line in (folder / "corpus.jsonl").open(encoding="utf-8")]
    claims = [json.loads(line) for line in (folder / "claims_dev.jsonl").open(encoding="utf-8")]
    records = [
        {"id": str(c["doc_id"]), "title": c["title"] or None, "text": " ".join(c["abstract"])}
        for c in corpus
    ]
    store = build_store(cache / "citation_integrity", records, embedder)
    queries = [CIT.sub(" ", c["claim"]).strip() for c in claims]
    qrels = [{str(d) for d in c["cited_doc_ids"]} for c in claims]
    k_chunks = 100  # chunk hits taken to form a top-10 document ranking
    runs, secs = ours(store, embedder, queries, k_chunks, VARIANTS)
    if qdrant:
        q = copy_to_qdrant(store, cache / "citation_integrity" / "qdrant")
        qruns, qsecs = ours(q, embedder, queries, k_chunks, QDRANT_VARIANTS)
        runs.update(qruns)
        secs.update(qsecs)
        q.close()
    runs.update(baselines([r["id"] for r in records], [r["text"] for r in records], queries, 10))
    rows = [evaluate(n, r, qrels) for n, r in runs.items()]
    store.close()
    best_bm25 = max(
        r["ndcg@10"] for r in rows if "dense" not in r["system"] and "hybrid" not in r["system"]
    )
    by_name = {r["system"]: r["ndcg@10"] for r in rows}
    q_hybrid = by_name.get("qdrant hybrid RRF k=60 (in engine)")
    hybrid = next(r["ndcg@10"] for r in rows if r["system"] == "affidavit hybrid RRF k=60")
    print("\ncitation_integrity dev (316 claims, 3,063 abstracts)")
    print(table(rows, ["ndcg@10", "recall@10"]))
    print(f"hybrid - best BM25 = {100 * (hybrid - best_bm25):+.1f} nDCG@10 points (bar: +5.0)")
    if q_hybrid is not None:
        print(f"qdrant hybrid - local hybrid = {q_hybrid - hybrid:+.4f} nDCG@10 (bar: within 0.01)")
    return {
        "qdrant_minus_local_hybrid_ndcg": None if q_hybrid is None else q_hybrid - hybrid,
        "queries": len(queries),
        "corpus": len(records),
        "rows": rows,
        "hybrid_minus_best_bm25_ndcg_points": 100 * (hybrid - best_bm25),
        "bar_met": bool(hybrid - best_bm25 >= 0.05),
        "seconds_per_query": secs,
    }


def run_halueval(data: Path, cache: Path, embedder: MiniLMEmbedder, sample: int) -> dict[str, Any]:
    rows_in = [
        json.loads(line) for line in (data / "halueval" / "qa_dev.jsonl").open(encoding="utf-8")
    ]

    def pid(t: str) -> str:
        return "p-" + hashlib.sha256(t.encode()).hexdigest()[:16]

    passages: dict[str, str] = {}
    for r in rows_in:
        passages.setdefault(pid(r["knowledge"]), r["knowledge"])
    records = [{"id": i, "text": t} for i, t in passages.items()]
    store = build_store(cache / "halueval_qa", records, embedder)
    rng = np.random.default_rng(13)
    idx = rng.choice(len(rows_in), size=min(sample, len(rows_in)), replace=False)
    queries = [rows_in[i]["question"] for i in idx]
    qrels = [{pid(rows_in[i]["knowledge"])} for i in idx]
    runs, secs = ours(store, embedder, queries, 50, VARIANTS)
    runs.update(baselines(list(passages), list(passages.values()), queries, 10))
    rows = [evaluate(n, r, qrels) for n, r in runs.items()]
    store.close()
    print(f"\nhalueval qa_dev ({len(queries)} sampled questions, seed 13; {len(records)} passages)")
    print(table(rows, ["recall@1", "recall@5"]))
    return {
        "queries": len(queries),
        "corpus": len(records),
        "sample_seed": 13,
        "rows": rows,
        "seconds_per_query": secs,
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument(
        "--cache", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "affidavit-bench"
    )
    ap.add_argument("--halueval-sample", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--skip-halueval", action="store_true")
    ap.add_argument("--skip-citation", action="store_true")
    ap.add_argument(
        "--qdrant", action="store_true", help="also rank citation_integrity with the Qdrant store"
    )
    ap.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "results" / "retrieval_quality.json"
    )
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    embedder = MiniLMEmbedder(threads=args.threads, batch_size=32)
    t0 = time.perf_counter()
    result: dict[str, Any] = {"command": " ".join(sys.argv), "embedder": embedder.config()}
    if not args.skip_citation:
        result["citation_integrity"] = run_citation(args.data, args.cache, embedder, args.qdrant)
    if not args.skip_halueval:
        result["halueval_qa"] = run_halueval(args.data, args.cache, embedder, args.halueval_sample)
    result["seconds"] = time.perf_counter() - t0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"\nwrote {args.out} ({result['seconds']:.0f}s)")


if __name__ == "__main__":
    main()
