"""The fast verifier, the accurate one (MPNet) and simple ensembles of the two, on the same rows.

For every row of the held-out sample of ``verifier_ablation.py`` (same sets, same seeded
sample), both full verifiers run: checks + model + that model's combiner, as ``verify.tier =
fast`` and ``verify.tier = accurate`` decide. Then, from the two verdicts of each row, without
any threshold tuned here:

- ``fast``, ``accurate``: each alone (its own label);
- ``avg``: the mean of the two p(supported) >= 0.5 (each combiner is calibrated so that 0.5
  decides), and neither verdict contradicted;
- ``avg_p``: the mean alone;
- ``geo``: the geometric mean >= 0.5;
- ``both``: supported by both; ``either``: supported by either.

Balanced accuracy per set and the means (the binary sets, and the four kinds), AUROC of each
score and of their sum. The per-row verdicts are kept in ``--rows`` (a rerun reuses them).

A diagnostic, not a result: ``oracle_*`` is each score's balanced accuracy at the threshold
chosen on the set itself (its best one), the ceiling that calibrating per kind of evidence could
reach; the gap to the dev-tuned decisions is what a single operating point costs.

Usage (project root; an assembled accurate folder, e.g. from ``python -m
affidavit.verify.accurate install``):
    python benchmarks/verifier_ensemble.py --accurate-dir DIR --limit 40 \
        --rows /tmp/ensemble_rows.json --out benchmarks/results/verifier_ensemble.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "2")

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from verifier_ablation import KINDS, CachedScorer  # noqa: E402

from affidavit.core.settings import PolicySettings, VerifySettings  # noqa: E402
from affidavit.verify.calibration import preset_thresholds  # noqa: E402
from affidavit.verify.cascade import ClaimCascade  # noqa: E402
from affidavit.verify.crossencoder import OnnxCrossEncoder, packaged_model_dir  # noqa: E402
from affidavit.verify.datasets import load_set, read_splits, sample  # noqa: E402
from affidavit.verify.eval import run_set  # noqa: E402

# the binary sets of verifier_ablation.py: the four kinds and HaluEval dialogue
SETS = [n for members in KINDS.values() for n in members] + ["halueval_dialogue"]

Row = dict[str, Any]
RULES: dict[str, Callable[[Row], bool]] = {
    "fast": lambda r: r["lf"] == "supported",
    "accurate": lambda r: r["la"] == "supported",
    "avg": lambda r: (r["pf"] + r["pa"]) / 2 >= 0.5 and "contradicted" not in (r["lf"], r["la"]),
    "avg_p": lambda r: (r["pf"] + r["pa"]) / 2 >= 0.5,
    "geo": lambda r: (r["pf"] * r["pa"]) ** 0.5 >= 0.5,
    "both": lambda r: r["lf"] == "supported" and r["la"] == "supported",
    "either": lambda r: r["lf"] == "supported" or r["la"] == "supported",
}


def bacc(y: np.ndarray, pred: np.ndarray) -> float:
    if y.all() or not y.any():
        return float("nan")
    return float(0.5 * (pred[y].mean() + (~pred[~y]).mean()))


def oracle_bacc(y: np.ndarray, s: np.ndarray) -> float:
    """Balanced accuracy at the best threshold for these very rows (a ceiling, not a result)."""
    vals = [bacc(y, s >= t) for t in np.unique(s)]
    return max(vals) if vals and not np.isnan(vals).all() else float("nan")


def auroc(y: np.ndarray, s: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, s)) if 0 < y.sum() < len(y) else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--accurate-dir", type=Path, required=True)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--splits", type=Path, default=ROOT / "training" / "splits.json")
    ap.add_argument("--limit", type=int, default=40)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rows", type=Path, required=True, help="per-row verdicts (reused)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/verifier_ensemble.json")
    args = ap.parse_args()

    rows: dict[str, list[Row]] = json.loads(args.rows.read_text()) if args.rows.exists() else {}
    todo = [n for n in SETS if n not in rows]
    if todo:
        fast_model = OnnxCrossEncoder(packaged_model_dir(), threads=args.threads)
        tau_e, tau_c = preset_thresholds("default", fast_model.config.model_extra or {})
        policy = PolicySettings(tau_entail=tau_e, tau_contradict=tau_c)
        settings = VerifySettings(cascade=["checks", "cross_encoder"], threads=args.threads)  # type: ignore[arg-type]
        fast = ClaimCascade(settings, policy, scorers={"cross_encoder": CachedScorer(fast_model)})
        acc_model = OnnxCrossEncoder(args.accurate_dir, threads=args.threads)
        acc = ClaimCascade(settings, policy, scorers={"cross_encoder": CachedScorer(acc_model)})
        splits = read_splits(args.splits)
        for name in todo:
            items = sample(load_set(name, args.data, splits), args.limit)
            t = time.perf_counter()
            vf, _ = run_set(fast, items)
            va, _ = run_set(acc, items)
            rows[name] = [
                {
                    "id": it.id,
                    "y": int(it.label == "entail"),
                    "pf": f.p_entail,
                    "lf": f.label,
                    "pa": a.p_entail,
                    "la": a.label,
                }
                for it, f, a in zip(items, vf, va, strict=True)
            ]
            args.rows.write_text(json.dumps(rows))
            print(f"{name}: {len(items)} rows, {time.perf_counter() - t:.0f}s", flush=True)

    table: dict[str, dict[str, float]] = {}
    for name in SETS:
        y = np.array([r["y"] == 1 for r in rows[name]])
        row = {k: bacc(y, np.array([f(r) for r in rows[name]])) for k, f in RULES.items()}
        pf = np.array([r["pf"] for r in rows[name]])
        pa = np.array([r["pa"] for r in rows[name]])
        row |= {"auroc_fast": auroc(y, pf), "auroc_accurate": auroc(y, pa)}
        row["auroc_sum"] = auroc(y, pf + pa)
        row |= {
            "oracle_fast": oracle_bacc(y, pf),
            "oracle_accurate": oracle_bacc(y, pa),
            "oracle_sum": oracle_bacc(y, pf + pa),
        }
        table[name] = {k: round(v, 4) for k, v in row.items()}
        print(f"{name:24s} " + "  ".join(f"{k}={v:.3f}" for k, v in table[name].items()))
    cols = list(next(iter(table.values())))
    mean = {k: round(float(np.nanmean([table[n][k] for n in SETS])), 4) for k in cols}
    kinds = {
        kind: {k: round(float(np.nanmean([table[n][k] for n in members])), 4) for k in RULES}
        for kind, members in KINDS.items()
    }
    kinds["mean_of_kinds"] = {
        k: round(float(np.mean([kinds[kind][k] for kind in KINDS])), 4) for k in RULES
    }
    print("mean", mean)
    print("mean of kinds", kinds["mean_of_kinds"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "limit_per_set": args.limit,
                "accurate_dir": str(args.accurate_dir),
                "accurate_sha256": json.loads((args.accurate_dir / "config.json").read_text()).get(
                    "sha256", ""
                ),
                "sets": table,
                "mean_balanced_accuracy_binary": mean,
                "by_kind": kinds,
                "command": "python " + " ".join(sys.argv),
            },
            indent=1,
        )
        + "\n"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
