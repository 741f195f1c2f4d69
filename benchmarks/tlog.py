"""The transparency log at 10^3, 10^5 and 10^6 entries: appends per second, proof sizes, and
the time to build and verify inclusion and consistency proofs, plus what logging adds to
issuing one certificate.

For each size the log is filled in batches of 10 000 entries (one signed checkpoint per batch),
then timed: single appends as certificates make them (entry + nodes + fsync + a signed
checkpoint + atomic rename, each durable), inclusion proofs of random entries of the whole
tree and consistency proofs from random older sizes (built from the stored node levels,
verified by RFC 9162's algorithms), and ``log verify`` (recompute everything).

Usage:
    python benchmarks/tlog.py [--sizes 1000 100000 1000000] [--samples 2000]
        [--out benchmarks/results/tlog.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import affidavit
from affidavit.certify import build_certificate, certify_answer
from affidavit.core.settings import Settings
from affidavit.tlog.merkle import leaf_hash, verify_consistency, verify_inclusion
from affidavit.tlog.monitor import verify_log
from affidavit.tlog.store import FileLog

ROOT = Path(__file__).resolve().parents[1]
ORIGIN = "bench.example/log"
BATCH = 10_000


def entry(i: int) -> bytes:
    return hashlib.sha256(i.to_bytes(8, "big")).digest()


def _us(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_us": round(statistics.median(ordered) * 1e6, 1),
        "p95_us": round(ordered[int(len(ordered) * 0.95) - 1] * 1e6, 1),
        "max_us": round(ordered[-1] * 1e6, 1),
    }


def bench_size(n: int, samples: int, key: Ed25519PrivateKey, folder: Path) -> dict[str, Any]:
    log = FileLog(folder / f"log-{n}")
    start = time.perf_counter()
    for first in range(0, n, BATCH):
        log.append([entry(i) for i in range(first, min(n, first + BATCH))], key, ORIGIN)
    bulk_s = time.perf_counter() - start

    rng = random.Random(n)
    root = log.root()
    incl_build, incl_verify, incl_len = [], [], []
    for index in (rng.randrange(n) for _ in range(samples)):
        t0 = time.perf_counter()
        proof = log.inclusion_proof(index, n)
        t1 = time.perf_counter()
        verify_inclusion(leaf_hash(entry(index)), index, n, proof, root)
        t2 = time.perf_counter()
        incl_build.append(t1 - t0)
        incl_verify.append(t2 - t1)
        incl_len.append(len(proof))

    roots: dict[int, bytes] = {}
    cons_build, cons_verify, cons_len = [], [], []
    for old in (rng.randrange(1, n) for _ in range(samples)):
        old_root = roots.setdefault(old, log.root(old))
        t0 = time.perf_counter()
        proof = [bytes.fromhex(h) for h in log.prove_consistency(old, n).hashes]
        t1 = time.perf_counter()
        verify_consistency(old, n, old_root, root, proof)
        t2 = time.perf_counter()
        cons_build.append(t1 - t0)
        cons_verify.append(t2 - t1)
        cons_len.append(len(proof))

    singles = []
    for i in range(n, n + 200):
        t0 = time.perf_counter()
        log.append([entry(i)], key, ORIGIN)
        singles.append(time.perf_counter() - t0)

    t0 = time.perf_counter()
    result = verify_log(log, [key.public_key()])
    verify_s = time.perf_counter() - t0
    assert result.valid, result.reasons
    log.close()
    return {
        "entries": n,
        "log2_n": round(math.log2(n), 2),
        "bulk_appends_per_s": round(n / bulk_s),
        "single_append": _us(singles) | {"per_s": round(len(singles) / sum(singles))},
        "inclusion": {
            "hashes_max": max(incl_len),
            "hashes_mean": round(statistics.mean(incl_len), 2),
            "bytes_max": 32 * max(incl_len),
            "build": _us(incl_build),
            "verify": _us(incl_verify),
        },
        "consistency": {
            "hashes_max": max(cons_len),
            "hashes_mean": round(statistics.mean(cons_len), 2),
            "bytes_max": 32 * max(cons_len),
            "build": _us(cons_build),
            "verify": _us(cons_verify),
        },
        "log_verify_s": round(verify_s, 2),
        "checkpoints_checked": result.checkpoints_checked,
        "disk_bytes": sum(p.stat().st_size for p in (folder / f"log-{n}").iterdir()),
    }


def bench_certify(folder: Path, repeats: int) -> dict[str, Any]:
    """certify_answer (build, sign, write) with and without the log, on one small answer."""
    out: dict[str, Any] = {}
    for enabled in (False, True, False, True):  # interleaved: the disk warms for both
        settings = Settings(home=folder / "home", tlog={"enabled": enabled})
        key = Ed25519PrivateKey.generate()
        times = []
        for i in range(repeats):
            t0 = time.perf_counter()
            certify_answer(f"Q{i}?", "A.", [], [], settings, key=key, path=folder / "c.json")
            times.append(time.perf_counter() - t0)
        out.setdefault("with_log" if enabled else "without_log", []).extend(times)
    build_certificate  # noqa: B018 - the timed call builds it
    med = {k: statistics.median(v) for k, v in out.items()}
    return {
        "without_log_ms": round(med["without_log"] * 1e3, 2),
        "with_log_ms": round(med["with_log"] * 1e3, 2),
        "added_ms": round((med["with_log"] - med["without_log"]) * 1e3, 2),
    }


def print_table(result: dict[str, Any]) -> None:
    head = (
        f"{'entries':>9} {'bulk/s':>9} {'append/s':>9} {'incl h':>7} {'build us':>9} "
        f"{'verify us':>10} {'cons h':>7} {'build us':>9} {'verify us':>10} {'log verify':>11}"
    )
    print(head)
    print("-" * len(head))
    for r in result["sizes"]:
        i, c = r["inclusion"], r["consistency"]
        print(
            f"{r['entries']:>9} {r['bulk_appends_per_s']:>9} {r['single_append']['per_s']:>9} "
            f"{i['hashes_max']:>7} {i['build']['median_us']:>9} {i['verify']['median_us']:>10} "
            f"{c['hashes_max']:>7} {c['build']['median_us']:>9} {c['verify']['median_us']:>10} "
            f"{r['log_verify_s']:>10}s"
        )
    print("proof times are medians over", result["samples"], "random entries / older sizes")
    cert = result["certify"]
    print(
        f"certify_answer: {cert['without_log_ms']} ms without the log, {cert['with_log_ms']} ms "
        f"with it (+{cert['added_ms']} ms)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 100_000, 1_000_000])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=100, help="certify_answer runs")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "tlog.json")
    args = parser.parse_args()
    key = Ed25519PrivateKey.generate()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        sizes = [bench_size(n, args.samples, key, folder) for n in args.sizes]
        certify = bench_certify(folder, args.repeats)
    result = {
        "benchmark": "tlog",
        "affidavit": affidavit.__version__,
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "samples": args.samples,
        "batch": BATCH,
        "sizes": sizes,
        "certify": certify,
    }
    print_table(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
