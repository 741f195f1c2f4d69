"""citation_integrity nDCG@10 of the parent-document hybrid on Qdrant's own engine (Qdrant Edge,
in-process) next to the local store, over the very same stored vectors.

Reads the local store that `retrieval_quality.py` built under --cache (no embedding of the corpus
again), writes its documents, chunks and vectors into Qdrant Edge shards exactly as QdrantStore
writes them to a server (benchmarks/qdrant_edge_store.py), and ranks the 316 dev claims both ways.

Usage:
    python benchmarks/retrieval_quality_edge.py [--cache /tmp/affidavit-bench] [--exact-avgdl]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from qdrant_edge_store import EdgeStore  # noqa: E402
from retrieval_quality import CIT, doc_ranking, evaluate  # noqa: E402

from affidavit.retrieve.embedders import MiniLMEmbedder  # noqa: E402
from affidavit.store.base import DocumentBatchItem  # noqa: E402
from affidavit.store.local import LocalStore  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument(
        "--cache", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "affidavit-bench"
    )
    ap.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "results" / "retrieval_quality_edge.json"
    )
    ap.add_argument("--exact-avgdl", action="store_true", help="BM25 lengths of the whole corpus")
    args = ap.parse_args()
    local = LocalStore(args.cache / "citation_integrity" / "store", read_only=True)
    edge = EdgeStore(Path(tempfile.mkdtemp()) / "edge")
    if args.exact_avgdl:
        # the corpus' exact average lengths instead of the first batch's (what bm25s uses)
        an = edge.analyzer
        cl = [len(t.split()) for (t,) in local._db.execute("SELECT terms FROM chunks")]
        dl = [
            len(an.tokens(f"{t}\n{x}" if t else x))
            for t, x in local._db.execute("SELECT title, text FROM documents")
        ]
        edge.avgdl = (sum(cl) / len(cl), sum(dl) / len(dl))
        print(f"exact avgdl: chunks {edge.avgdl[0]:.1f}, documents {edge.avgdl[1]:.1f}")
    t0 = time.perf_counter()
    batch: list[DocumentBatchItem] = []
    name = local.embedder() or ""
    for rec in local.records().values():
        doc = local.get_document(rec.doc_id)
        assert doc is not None
        rows = local._db.execute(
            "SELECT chunk_id, vector FROM chunks WHERE doc_id = ? ORDER BY idx", (rec.doc_id,)
        ).fetchall()
        vecs = np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
        chunks = local.get_chunks([r[0] for r in rows])
        batch.append(
            DocumentBatchItem(document=doc, chunks=tuple(chunks), vectors=vecs, origin=rec.origin)
        )
        if len(batch) >= 256:
            edge.upsert(batch, embedder=name)
            batch = []
    edge.upsert(batch, embedder=name)
    edge.refresh()
    copy_s = time.perf_counter() - t0
    print(f"copied {edge.count()} into Qdrant Edge in {copy_s:.0f}s", flush=True)
    claims = [
        json.loads(line)
        for line in (args.data / "citation_integrity" / "claims_dev.jsonl").open(encoding="utf-8")
    ]
    queries = [CIT.sub(" ", c["claim"]).strip() for c in claims]
    qrels = [{str(d) for d in c["cited_doc_ids"]} for c in claims]
    vecs = MiniLMEmbedder(threads=2).embed(queries)
    runs: dict[str, list[list[str]]] = {"local store hybrid": [], "Qdrant engine hybrid": []}
    secs: dict[str, float] = {}
    for label, store in (("local store hybrid", local), ("Qdrant engine hybrid", edge)):
        t0 = time.perf_counter()
        for q, v in zip(queries, vecs, strict=True):
            hits: Any = store.search_documents(q, v, 100, candidates=100)
            runs[label].append(doc_ranking(hits))
        secs[label] = (time.perf_counter() - t0) / len(queries)
    rows = [evaluate(n, r, qrels) for n, r in runs.items()]
    for r in rows:
        print(
            f"{r['system']:<24} nDCG@10 {100 * r['ndcg@10']:.2f}  recall@10 {100 * r['recall@10']:.2f}"
        )
    diff = rows[1]["ndcg@10"] - rows[0]["ndcg@10"]
    same = sum(a[:10] == b[:10] for a, b in zip(*runs.values(), strict=True))
    print(
        f"Qdrant engine - local = {diff:+.4f} nDCG@10; identical top-10 for {same}/{len(queries)} claims"
    )
    result = {
        "command": " ".join(sys.argv),
        "queries": len(queries),
        "rows": rows,
        "qdrant_minus_local_ndcg": diff,
        "identical_top10": same,
        "seconds_per_query": secs,
        "copy_seconds": copy_s,
        "loadavg": os.getloadavg(),
        "exact_avgdl": args.exact_avgdl,
    }
    args.out.write_text(json.dumps(result, indent=2))
    print(f"wrote {args.out}")
    edge.close()
    local.close()


if __name__ == "__main__":
    main()
