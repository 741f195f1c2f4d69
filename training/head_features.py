"""Extract frozen features (affidavit.verify.features) for the embedding-head verifier.

Usage (from the project root, in the runtime venv: numpy + onnxruntime only):
    .venv/bin/python training/head_features.py --part train --n 5500
    .venv/bin/python training/head_features.py --part dev --n 800
    .venv/bin/python training/head_features.py --part eval --per-set 200

Writes ``training/work/head/<part>_<k>.npz`` in blocks of ``--block`` rows (so a run cut short
still leaves usable blocks) plus ``training/work/head/idf.npz`` (hashed IDF over the evidence of
training/data/train.jsonl). Train and dev rows come from training/data (built by build_data.py,
which already excludes the held-out rows of training/splits.json); eval rows are the held-out sets
of splits.json read by affidavit.verify.datasets, plus the eval-only BingCheck and AggreFact error
types, each a seeded sample of at most ``--per-set`` rows.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from affidavit.retrieve.embedders import MiniLMEmbedder
from affidavit.verify.checks import run_checks
from affidavit.verify.datasets import load_set, read_splits, sample
from affidavit.verify.features import IdfTable, featurize

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "training" / "work" / "head"
EVAL_SETS = (
    "wice",
    "citation_integrity_dev",
    "halueval_qa",
    "halueval_dialogue",
    "halueval_summarization",
    "summac_factcc",
    "summac_polytope",
    "summac_summeval",
    "summac_xsumfaith",
    "bingcheck",
    "aggrefact_error_types",
)
# rows per training source (the rest of the budget is spread by the sampler)
CAPS = {
    "wice": 600,
    "citation_integrity": 1000,
    "vitaminc": 400,
    "summac_factcc": 300,
    "summac_polytope": 400,
    "summac_summeval": 200,
    "summac_xsumfaith": 300,
}
log = logging.getLogger("head_features")


def read_rows(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def idf_table() -> IdfTable:
    path = WORK / "idf.npz"
    if path.is_file():
        z = np.load(path)
        return IdfTable(z["idf"], float(z["default"]))
    docs = list({r["evidence"] for r in read_rows(ROOT / "training" / "data" / "train.jsonl")})
    t = IdfTable.fit(docs)
    np.savez(path, idf=t.idf, default=np.float32(t.default), n_docs=len(docs))
    log.info("idf over %d evidence texts", len(docs))
    return t


def train_sample(rows: list[dict], n: int, seed: int, halu_weight: float = 2.0) -> list[dict]:
    """Stratified: small real sources up to their caps, the rest evenly over the big ones."""
    rng = random.Random(seed)
    by: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by[r["source"]].append(r)
    out: list[dict] = []
    for src, cap in CAPS.items():
        got = by.pop(src, [])
        rng.shuffle(got)
        out += got[:cap]
    rest = max(0, n - len(out))
    per = rest // max(len(by), 1)
    # halueval sources get a double share: they are the biggest real sets
    weights = {s: (halu_weight if s.startswith("halueval") else 1.0) for s in by}
    tot = sum(weights.values())
    for src, got in sorted(by.items()):
        rng.shuffle(got)
        out += got[: int(rest * weights[src] / tot) if tot else per]
    rng.shuffle(out)
    return out[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=["train", "dev", "eval"], required=True)
    ap.add_argument("--n", type=int, default=5500, help="train/dev rows")
    ap.add_argument("--per-set", type=int, default=200, help="eval rows per set")
    ap.add_argument("--block", type=int, default=250)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--only", default="", help="comma list of source prefixes (train part)")
    ap.add_argument("--name", default="", help="output prefix (default: the part)")
    ap.add_argument("--halueval-weight", type=float, default=2.0)
    ap.add_argument(
        "--reverse", action="store_true", help="blocks last first (a second worker on one part)"
    )
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    WORK.mkdir(parents=True, exist_ok=True)
    idf = idf_table()
    emb = MiniLMEmbedder(threads=args.threads, batch_size=32)
    items: list[tuple[str, str, str, str, str]] = []  # id, set, claim, evidence, label
    if args.part in ("train", "dev"):
        rows = read_rows(ROOT / "training" / "data" / f"{args.part}.jsonl")
        if args.part == "train":
            if args.only:
                keep = tuple(args.only.split(","))
                rows = [r for r in rows if r["source"].startswith(keep)]
            rows = train_sample(rows, args.n, args.seed, args.halueval_weight)
        else:
            random.Random(args.seed).shuffle(rows)
            rows = rows[: args.n]
        items = [(r["id"], r["source"], r["claim"], r["evidence"], r["label"]) for r in rows]
    else:
        splits = read_splits(ROOT / "training" / "splits.json")
        per: list[list[tuple[str, str, str, str, str]]] = []
        for name in EVAL_SETS:
            got = sample(load_set(name, args.data, splits), args.per_set, seed=0)
            per.append([(it.id, name, it.claim, it.evidence, it.label) for it in got])
            log.info("eval set %s: %d rows", name, len(got))
        # interleave the sets so a cut-short run still covers each
        for k in range(max(len(p) for p in per)):
            items += [p[k] for p in per if k < len(p)]
    log.info("%s: %d rows", args.part, len(items))
    cache: dict[str, np.ndarray] = {}
    t0 = time.perf_counter()
    blocks = list(enumerate(range(0, len(items), args.block)))
    for b, s in reversed(blocks) if args.reverse else blocks:
        out = WORK / f"{args.name or args.part}_{b:03d}.npz"
        if out.is_file():
            continue
        blk = items[s : s + args.block]
        X, used = featurize(
            [(c, e) for _, _, c, e, _ in blk], emb.embed, idf, check_fn=run_checks, cache=cache
        )
        if len(cache) > 20000:
            cache.clear()
        np.savez(
            out,
            X=X,
            used=np.array(used, dtype=np.int32),
            ids=np.array([i for i, *_ in blk]),
            sets=np.array([x[1] for x in blk]),
            labels=np.array([x[4] for x in blk]),
        )
        done = s + len(blk)
        rate = len(blk) / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        log.info("%s block %d: %d/%d rows, %.1f rows/s", args.part, b, done, len(items), rate)
    sys.exit(0)


if __name__ == "__main__":
    main()
