"""Fit the verifier's combiner (``affidavit.verify.combiner``) on dev rows and publish it.

Rows: the *dev* groups of ``training/data/dev.jsonl`` (group-disjoint from training, never eval
rows). Real rows are re-read from ``../shared/data`` with their whole evidence (a summary against
its whole article, an answer against its whole passage), as ``affidavit check`` sees them;
synthetic dev rows keep their evidence window. At most ``--per-source`` rows per source, and each
source weighs the same in the fit and in every dev number (so HaluEval's thousands of rows do not
decide alone how summaries or scientific claims are judged).

For each row the real ``ClaimCascade`` runs exactly as at inference (checks, the model on the best
windows, sentence by sentence for multi-sentence claims) and returns the combiner's features.
A standardised logistic regression (scikit-learn) is fitted on them; its dev balanced accuracy
(5-fold cross-validated by group, threshold chosen inside) is reported next to every input alone
(its best dev threshold, which flatters the single inputs). The combiner is kept only if it is
never worse than any single input; ``tau`` maximises weighted balanced accuracy on the
cross-validated probabilities, ``tau_strict`` is the lowest threshold with weighted precision
>= 0.9.

Writes ``<model-dir>/combiner.json`` and pins its sha256 and thresholds in the model's
``config.json``.

Usage (project root, training venv, after export_onnx.py):
    python training/fit_combiner.py --model-dir src/affidavit/verify/model --per-source 60
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "2")
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "src"))

import numpy as np  # noqa: E402
from common import DEFAULT_DATA, read_jsonl  # noqa: E402
from sources import read_splits_file, train_pool  # noqa: E402

from affidavit.core.settings import PolicySettings, VerifySettings  # noqa: E402
from affidavit.verify.cascade import ClaimCascade, chunks_from_texts, claim_from_text  # noqa: E402
from affidavit.verify.combiner import COMBINER_FILE, Combiner  # noqa: E402
from affidavit.verify.combiner import FEATURES as ALL_FEATURES  # noqa: E402
from affidavit.verify.crossencoder import OnnxCrossEncoder  # noqa: E402
from affidavit.verify.evidence import overlap  # noqa: E402


def weighted_bacc(y: np.ndarray, pred: np.ndarray, w: np.ndarray) -> float:
    pos, neg = y == 1, y == 0
    tpr = (w[pos] * (pred[pos] == 1)).sum() / max(w[pos].sum(), 1e-12)
    tnr = (w[neg] * (pred[neg] == 0)).sum() / max(w[neg].sum(), 1e-12)
    return float(0.5 * (tpr + tnr))


def best_threshold(y: np.ndarray, s: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    cands = np.unique(np.quantile(s, np.linspace(0.01, 0.99, 99)))
    best = (0.5, -1.0)
    for t in cands:
        b = weighted_bacc(y, (s >= t).astype(int), w)
        if b > best[1]:
            best = (float(t), b)
    return best


def strict_threshold(y: np.ndarray, s: np.ndarray, w: np.ndarray, target: float = 0.9) -> float:
    for t in np.linspace(0.05, 0.99, 95):
        pred = s >= t
        if pred.sum() < 10:
            break
        prec = (w[pred] * (y[pred] == 1)).sum() / w[pred].sum()
        if prec >= target:
            return float(t)
    return 0.99


def evidence_kind(source: str) -> str:
    """The kind of evidence a dev source stands for: the four kinds the held-out bar measures
    (claims against web pages, scientific claims against abstracts, summaries against their
    documents, answers against QA passages or dialogue), general NLI, or generated pairs."""
    if source.startswith("synthetic"):
        return "synthetic"
    if source.startswith("summac") or source in ("halueval_summarization", "x_summedits"):
        return "summaries"
    if source in ("halueval_qa", "halueval_dialogue"):
        return "qa"
    if source == "citation_integrity":
        return "scientific"
    if source == "x_snli":
        return "nli"
    # WiCE, VitaminC and the FEVER family: claims against web / Wikipedia evidence
    return "web"


def row_weights(srcs: list[str], weighting: str) -> np.ndarray:
    """Per-row fit weights, normalised to mean 1: each source the same (``source``), or each kind
    of evidence the same and each source the same within its kind (``kind``)."""
    n_src = Counter(srcs)
    if weighting == "source":
        w = np.array([1.0 / n_src[s] for s in srcs])
    elif weighting == "kind":
        kinds = {s: evidence_kind(s) for s in n_src}
        per_kind = Counter(kinds.values())
        w = np.array([1.0 / (per_kind[kinds[s]] * n_src[s]) for s in srcs])
    else:
        raise ValueError(f"unknown weighting {weighting!r}")
    return w * len(w) / w.sum()


def dev_items(
    data: Path,
    dev_path: Path,
    per_source: int,
    seed: int,
    synthetic_per_source: int | None = None,
    all_rows_of: frozenset[str] = frozenset(),
) -> list[dict]:
    dev = list(read_jsonl(dev_path))
    groups = {r["group"] for r in dev}
    # sources in ``all_rows_of`` contribute their training rows too (never held-out rows): the
    # 5% dev cut leaves 3 SummEval rows, too few to weigh as much as any other source
    real = [
        it
        for it in train_pool(data, read_splits_file())
        if it.group in groups or it.source in all_rows_of
    ]
    rows = [
        {
            "source": it.source,
            "group": it.group,
            "claim": it.claim,
            "evidence": it.evidence,
            "label": it.label,
        }
        for it in real
    ]
    rows += [
        {k: r[k] for k in ("source", "group", "claim", "evidence", "label")}
        for r in dev
        if r["source"].startswith("synthetic")
    ]
    by: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by[r["source"]].append(r)
    rng = random.Random(seed)
    out = []
    for src in sorted(by):
        rs = by[src]
        cap = per_source
        if synthetic_per_source is not None and src.startswith("synthetic"):
            cap = synthetic_per_source
        out += rng.sample(rs, min(cap, len(rs)))
    return out


# held-out evaluation sets whose rows may calibrate the combiner (their licences allow training,
# ../shared/data/README.md), and the training source each stands for
POOL_SOURCES = {
    "wice": "wice",
    "citation_integrity_dev": "citation_integrity",
    "summac_factcc": "summac_factcc",
    "summac_polytope": "summac_polytope",
    "summac_summeval": "summac_summeval",
    "summac_xsumfaith": "summac_xsumfaith",
    "halueval_qa": "halueval_qa",
    "halueval_dialogue": "halueval_dialogue",
    "halueval_summarization": "halueval_summarization",
}


def pool_items(data: Path, sets: list[str], exclude_limit: int) -> list[dict]:
    """Calibration rows the model never trained on: the held-out rows of ``sets`` *minus* the
    seeded sample ``benchmarks/verifier_ablation.py --limit exclude_limit`` reports on (so that
    benchmark stays out of sample). Grouped by evidence text (SummaC scores several summaries of
    one document)."""
    from affidavit.verify.datasets import load_set, read_splits, sample

    splits = read_splits(HERE / "splits.json")
    out = []
    for name in sets:
        if name not in POOL_SOURCES:
            raise SystemExit(f"--pool: {name!r} may not calibrate (known: {sorted(POOL_SOURCES)})")
        items = load_set(name, data, splits)
        reported = {it.id for it in sample(items, exclude_limit)}
        for it in items:
            if it.id in reported:
                continue
            out.append(
                {
                    "source": POOL_SOURCES[name],
                    "group": "pool:" + hashlib.sha256(it.evidence.encode()).hexdigest()[:16],
                    "claim": it.claim,
                    "evidence": it.evidence,
                    "label": "entail" if it.label == "entail" else "not_entail",
                }
            )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--model-dir", type=Path, default=ROOT / "src/affidavit/verify/model")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--dev", type=Path, default=HERE / "data" / "dev.jsonl")
    ap.add_argument("--per-source", type=int, default=60)
    ap.add_argument(
        "--synthetic-per-source",
        type=int,
        default=None,
        help="cap for each synthetic (one-class, generated) source; default: --per-source",
    )
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument(
        "--weighting",
        choices=("source", "kind"),
        default="source",
        help="source: each dev source weighs the same; kind: each kind of evidence (web, "
        "scientific, summaries, qa, nli, synthetic) weighs the same, sources equal within a kind",
    )
    ap.add_argument(
        "--all-rows-of",
        default="",
        help="comma list of sources whose training rows (not only dev rows) are fitted on, "
        "capped at --per-source (for sources whose dev cut is a handful of rows)",
    )
    ap.add_argument(
        "--pool",
        default="",
        help="comma list of held-out sets whose rows outside the ablation's sample calibrate the "
        "combiner in place of their source's dev (and --all-rows-of training) rows: rows the "
        "model never trained on",
    )
    ap.add_argument(
        "--pool-exclude-limit",
        type=int,
        default=100,
        help="the --limit of benchmarks/verifier_ablation.py whose sample the pool leaves out",
    )
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cache", type=Path, default=HERE / "work" / "combiner_features.jsonl")
    ap.add_argument("--no-write", action="store_true", help="report only")
    ap.add_argument(
        "--shard",
        default="",
        help="K/N: only compute the features of every N-th row from K (cached), then stop; run "
        "N shards in parallel (one per core), then once without --shard to fit",
    )
    ap.add_argument("--cached-only", action="store_true", help="fit on the cached rows only")
    ap.add_argument(
        "--top-evidence", type=int, default=5, help="windows the model scores per claim"
    )
    ap.add_argument(
        "--features",
        default=",".join(ALL_FEATURES),
        help="comma-separated subset of the combiner's features to fit on",
    )
    args = ap.parse_args()
    FEATURES = [f for f in args.features.split(",") if f]
    unknown = sorted(set(FEATURES) - set(ALL_FEATURES))
    if unknown:
        ap.error(f"unknown features {unknown}; known: {list(ALL_FEATURES)}")

    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold

    model = OnnxCrossEncoder(args.model_dir, threads=args.threads)
    th = json.loads((args.model_dir / "config.json").read_text()).get("thresholds", {})
    model_tau = float(th.get("model_tau_entail") or th.get("tau_entail") or 0.5)
    placeholder = Combiner(
        features=["pe_whole"],
        mean=[0.0],
        scale=[1.0],
        coef=[1.0],
        intercept=0.0,
        tau=0.5,
        model_tau=model_tau,
    )
    cascade = ClaimCascade(
        VerifySettings(threads=args.threads, top_evidence=args.top_evidence),
        PolicySettings(tau_entail=0.5, tau_contradict=0.5),
        scorers={"cross_encoder": model},
        combiner=placeholder,
    )
    all_rows_of = frozenset(x for x in args.all_rows_of.split(",") if x)
    items = dev_items(
        args.data, args.dev, args.per_source, args.seed, args.synthetic_per_source, all_rows_of
    )
    pool_sets = [x for x in args.pool.split(",") if x]
    if pool_sets:
        pooled = pool_items(args.data, pool_sets, args.pool_exclude_limit)
        replaced = {r["source"] for r in pooled}
        rng = random.Random(args.seed)
        by_src: dict[str, list[dict]] = defaultdict(list)
        for r in pooled:
            by_src[r["source"]].append(r)
        items = [it for it in items if it["source"] not in replaced]
        for src in sorted(by_src):
            rs = by_src[src]
            items += rng.sample(rs, min(args.per_source, len(rs)))
    key = hashlib.sha256(
        (
            model.describe()["sha256"]
            + str(args.per_source)
            + str(args.seed)
            + f"w{cascade.windower.window_len}/{cascade.windower.max_len}"
            + ("" if args.top_evidence == 5 else f"top{args.top_evidence}")
        ).encode()
    ).hexdigest()[:16]
    cache: dict[str, dict] = {}
    shard_k, shard_n = (int(x) for x in args.shard.split("/")) if args.shard else (0, 1)
    if args.shard:
        args.cache = args.cache.with_name(f"{args.cache.stem}.shard{shard_k}{args.cache.suffix}")
    for f in sorted(
        args.cache.parent.glob(f"{args.cache.stem.split('.shard')[0]}*{args.cache.suffix}")
    ):
        for line in f.read_text().splitlines():
            d = json.loads(line)
            if d.get("key") == key:
                cache[d["id"]] = d
    args.cache.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    feats, ys, srcs, groups, wo = [], [], [], [], []
    skipped = Counter()
    with args.cache.open("a") as fh:
        for i, it in enumerate(items):
            rid = hashlib.sha256((it["claim"] + "\x00" + it["evidence"]).encode()).hexdigest()[:20]
            if args.shard and i % shard_n != shard_k:
                continue
            if rid in cache:
                f = cache[rid]["features"]
            elif args.cached_only:
                continue
            else:
                f = cascade.features(
                    claim_from_text(it["claim"]), chunks_from_texts([it["evidence"]])
                )
                fh.write(json.dumps({"key": key, "id": rid, "features": f}) + "\n")
                fh.flush()
            if f is None:
                skipped[it["source"]] += 1
                continue
            feats.append([f[k] for k in ALL_FEATURES])
            wo.append(overlap(it["claim"], it["evidence"]))
            ys.append(int(it["label"] == "entail"))
            srcs.append(it["source"])
            groups.append(it["group"])
            if (i + 1) % 100 == 0:
                print(f"{i + 1}/{len(items)} rows, {time.time() - t0:.0f}s", flush=True)
    if args.shard:
        print(f"shard {args.shard}: features cached in {args.cache}")
        return
    X_all = np.array(feats)
    X = X_all[:, [ALL_FEATURES.index(f) for f in FEATURES]]
    y = np.array(ys)
    n_src = Counter(srcs)
    w = row_weights(srcs, args.weighting)

    # every input alone, at its best dev threshold (optimistic for them)
    single = {}
    for j, name in enumerate(ALL_FEATURES):
        s = X_all[:, j] if name.startswith(("pe_", "cov_")) else -X_all[:, j]
        t, b = best_threshold(y, s, w)
        single[name] = {
            "bacc": round(b, 4),
            "threshold": round(t if name.startswith(("pe_", "cov_")) else -t, 4),
        }

    def fit(Xtr, ytr, wtr):  # type: ignore[no-untyped-def]
        mean = Xtr.mean(0)
        scale = Xtr.std(0)
        scale[scale < 1e-6] = 1.0
        lr = LogisticRegression(C=1.0, max_iter=2000, class_weight="balanced")
        lr.fit((Xtr - mean) / scale, ytr, sample_weight=wtr)
        return mean, scale, lr

    # the plain word-overlap rule (share of the claim's content words anywhere in the evidence):
    # the baseline benchmarks/verifier_ablation.py runs at this dev threshold
    wo_tau, wo_bacc = best_threshold(y, np.array(wo), w)
    oof = np.zeros(len(y))
    for tr, te in GroupKFold(n_splits=5).split(X, y, groups):
        mean, scale, lr = fit(X[tr], y[tr], w[tr])
        oof[te] = lr.predict_proba((X[te] - mean) / scale)[:, 1]
    tau, cv_bacc = best_threshold(y, oof, w)
    tau_strict = strict_threshold(y, oof, w)
    mean, scale, lr = fit(X, y, w)
    # fold the dev threshold into the intercept, so that p >= 0.5 is the dev-chosen decision: the
    # policy presets' 0.5 (default, mixed) then means what was tuned, for every command alike
    logit = lambda q: float(np.log(q / (1 - q)))  # noqa: E731
    shift = logit(min(max(tau, 1e-4), 1 - 1e-4))
    tau_strict = 1 / (1 + np.exp(-(logit(min(max(tau_strict, 1e-4), 1 - 1e-4)) - shift)))
    dev_tau = tau
    tau = 0.5
    best_single = max(single.items(), key=lambda kv: kv[1]["bacc"])
    per_source = {}
    for s in sorted(n_src):
        m = np.array([x == s for x in srcs])
        if len(set(y[m])) == 2:
            per_source[s] = {
                "n": int(m.sum()),
                "combiner_cv": round(
                    weighted_bacc(y[m], (oof[m] >= dev_tau).astype(int), np.ones(m.sum())), 4
                ),
                "pe_whole@best": round(
                    weighted_bacc(
                        y[m],
                        (
                            X_all[m, ALL_FEATURES.index("pe_whole")]
                            >= single["pe_whole"]["threshold"]
                        ).astype(int),
                        np.ones(m.sum()),
                    ),
                    4,
                ),
                "cov_whole@best": round(
                    weighted_bacc(
                        y[m],
                        (
                            X_all[m, ALL_FEATURES.index("cov_whole")]
                            >= single["cov_whole"]["threshold"]
                        ).astype(int),
                        np.ones(m.sum()),
                    ),
                    4,
                ),
            }
        else:
            per_source[s] = {"n": int(m.sum()), "note": "one class only"}
    report = {
        "features": list(FEATURES),
        "mean": [float(v) for v in mean],
        "scale": [float(v) for v in scale],
        "coef": [float(v) for v in lr.coef_[0]],
        "intercept": float(lr.intercept_[0]) - shift,
        "intercept_note": f"fitted intercept minus logit({dev_tau:.4f}), the dev threshold, so that 0.5 decides",
        "tau": round(tau, 4),
        "tau_strict": round(tau_strict, 4),
        "model_tau_entail": model_tau,
        "word_overlap_tau": round(wo_tau, 4),
        "word_overlap_dev_bacc": round(wo_bacc, 4),
        "dev_fit": {
            "rows": int(len(y)),
            "positives": int(y.sum()),
            "rows_by_source": dict(sorted(n_src.items())),
            "skipped_incomplete_by_source": dict(skipped),
            "weighting": (
                "each source weighs the same"
                if args.weighting == "source"
                else "each kind of evidence weighs the same, sources equal within a kind: "
                + json.dumps({s: evidence_kind(s) for s in sorted(n_src)})
            ),
            "per_source_cap": args.per_source,
            "all_rows_of": sorted(all_rows_of),
            "pool": pool_sets,
            "pool_exclude_limit": args.pool_exclude_limit if pool_sets else None,
            "synthetic_per_source_cap": args.synthetic_per_source or args.per_source,
            "combiner_bacc_cv5_by_group": round(cv_bacc, 4),
            "single_input_bacc_at_best_threshold": single,
            "best_single_input": best_single[0],
            "never_worse_than_any_input": bool(cv_bacc >= best_single[1]["bacc"]),
            "per_source": per_source,
        },
        "model_sha256": model.describe()["sha256"],
        "command": " ".join(["python", *sys.argv]),
        "seconds": round(time.time() - t0, 1),
    }
    print(
        json.dumps(
            {
                k: report["dev_fit"][k]
                for k in (
                    "rows",
                    "combiner_bacc_cv5_by_group",
                    "best_single_input",
                    "never_worse_than_any_input",
                )
            },
            indent=1,
        )
    )
    for name, v in single.items():
        print(f"  {name:22s} {v['bacc']:.4f}")
    print("coef", dict(zip(FEATURES, np.round(lr.coef_[0], 3))))
    if args.no_write:
        return
    if not report["dev_fit"]["never_worse_than_any_input"]:
        raise SystemExit("combiner is worse on dev than a single input: not written")
    path = args.model_dir / COMBINER_FILE
    path.write_text(json.dumps(report, indent=1) + "\n")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    cfg_path = args.model_dir / "config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["combiner"] = {"file": COMBINER_FILE, "sha256": digest}
    th = cfg.setdefault("thresholds", {})
    th["model_tau_entail"] = th.get("model_tau_entail", th.get("tau_entail"))
    th["tau_entail"] = report["tau"]
    th["tau_entail_strict"] = report["tau_strict"]
    th["note"] = (
        "tau_entail / tau_entail_strict apply to the combiner's p(supported) (combiner.json: "
        "weighted dev balanced accuracy, and dev precision >= 0.9); model_tau_entail is the model's "
        "own dev threshold on p_entail; tau_contradict = dev precision >= 0.9 for contradiction"
    )
    cfg_path.write_text(json.dumps(cfg, indent=1) + "\n")
    print("wrote", path, digest)


if __name__ == "__main__":
    main()
