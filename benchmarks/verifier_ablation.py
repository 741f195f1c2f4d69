"""Cascade ablation: each stage alone and combined, balanced accuracy per evaluation set.

Configurations (the real ``ClaimCascade`` each time, same evidence selection):
  word_overlap      baseline: share of the claim's content words found anywhere in the evidence,
                    thresholded at its dev-chosen value (combiner.json); ``word_overlap_oracle``
                    is the same rule at the best threshold *for each eval set* (flatters it)
  checks            typed checks + lexical coverage of the best window (model-free)
  cross_encoder     the packaged ONNX model alone
  checks+cross_enc  checks then model, the hand-set cascade rules (no combiner)
  default           what ``affidavit check`` runs: checks + model, sentence by sentence for
                    longer texts, decided by the fitted combiner shipped with the model

Rows: held-out rows only (``training/splits.json``) plus the evaluation-only sets, capped at
``--limit`` rows per set (seeded sample) so the whole run stays under ~10 minutes on 2 cores.
Cross-encoder scores are cached by (claim, evidence) text, so the combined configuration re-uses
the model calls of the model-only one (identical inputs give identical scores).

Per configuration and set: balanced accuracy, F1, AUROC, ECE with bootstrap 95% intervals (the
metrics of ``affidavit eval``), ``<config>_oracle``: the same scores at the best threshold for each
set (chosen on that set's labels: the most any recalibration of the configuration could reach),
and a reliability plot of the default cascade
(``verifier_ablation.png``).

Usage:
    python benchmarks/verifier_ablation.py [--data ../shared/data] [--limit 100] [--sets a,b]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "2")

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from affidavit.core.settings import PolicySettings, VerifySettings  # noqa: E402
from affidavit.core.types import StageScore  # noqa: E402
from affidavit.verify.calibration import preset_thresholds  # noqa: E402
from affidavit.verify.cascade import ClaimCascade  # noqa: E402
from affidavit.verify.crossencoder import OnnxCrossEncoder, packaged_model_dir  # noqa: E402
from affidavit.verify.datasets import ALL_SETS, load_set, read_splits, sample  # noqa: E402
from affidavit.verify.eval import metrics_for, reliability_plot, run_set  # noqa: E402
from affidavit.verify.evidence import overlap  # noqa: E402


def bacc(y: np.ndarray, pred: np.ndarray) -> float:
    if y.all() or (~y).all():
        return float("nan")
    return float(0.5 * (pred[y].mean() + (~pred[~y]).mean()))


OUT = ROOT / "benchmarks" / "results" / "verifier_ablation.json"


KINDS = {
    "web_evidence": ["wice", "bingcheck"],
    "scientific": ["citation_integrity_dev"],
    "summaries": [
        "summac_factcc",
        "summac_polytope",
        "summac_summeval",
        "summac_xsumfaith",
        "aggrefact_error_types",
        "halueval_summarization",
    ],
    "qa": ["halueval_qa"],
}

# ../shared/REFERENCE.md: ANLI dev accuracy of RoBERTa-large (3-way), for scale
ANLI_REFERENCE = {"anli_r1": 73.8, "anli_r2": 50.6, "anli_r3": 46.1}


def oracle_bacc(y: np.ndarray, score: np.ndarray) -> float:
    """Balanced accuracy of ``score >= t`` at the best ``t`` for these labels (a ceiling: the
    threshold is chosen on the rows it is measured on)."""
    if len(y) == 0:
        return float("nan")
    return max(bacc(y, score >= t) for t in np.unique(score))


def leaderboard(data: Path) -> dict[str, dict[str, Any]]:
    """LLM-AggreFact balanced accuracy (%) of reference checkers, WiCE and mean of 11 sets."""
    try:
        rows = json.loads((data / "llm_aggrefact_leaderboard.json").read_text())["rows"]
    except (OSError, KeyError, ValueError):
        return {}
    keep = {
        "Bespoke-Minicheck-7B",
        "MiniCheck-Flan-T5-L",
        "MiniCheck-RoBERTa-L",
        "HHEM-2.1-open",
        "AlignScore",
        "SummaC-ZS",
    }
    return {
        r["model"]: {"WiCE": r.get("WiCE"), "Avg": r.get("Avg")} for r in rows if r["model"] in keep
    }


class CachedScorer:
    """Memoises a PairScorer by (claim, evidence)."""

    def __init__(self, inner: OnnxCrossEncoder) -> None:
        self.inner = inner
        self.name = inner.name
        self.max_len = inner.max_len
        self.window_len = inner.window_len
        self.tokenizer = inner.tokenizer
        self.combiner = inner.combiner
        self.cache: dict[tuple[str, str], StageScore] = {}
        self.model_pairs = 0

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[StageScore]:
        todo = list(dict.fromkeys(p for p in pairs if p not in self.cache))
        if todo:
            self.model_pairs += len(todo)
            for p, s in zip(todo, self.inner.score(todo), strict=True):
                self.cache[p] = s
        return [self.cache[p] for p in pairs]

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--splits", type=Path, default=ROOT / "training" / "splits.json")
    ap.add_argument("--model-dir", type=Path, default=packaged_model_dir())
    ap.add_argument("--limit", type=int, default=100)
    ap.add_argument("--sets", default="")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--tau-entail",
        type=float,
        default=None,
        help="default: the model config's dev-tuned tau_entail, else 0.5",
    )
    ap.add_argument("--rounds", type=int, default=500, help="bootstrap resamples")
    ap.add_argument("--max-len", type=int, default=256, help="window length cap (tokens)")
    ap.add_argument(
        "--window-len",
        type=int,
        default=None,
        help="preferred window length (default: the model's train_max_len)",
    )
    ap.add_argument(
        "--date-order-average",
        action=argparse.BooleanOptionalAction,
        default=VerifySettings().date_order_average,
        help="verify.date_order_average (a sentence with one time adverbial is also scored with "
        "it moved, and the two averaged); default: the setting's default",
    )
    ap.add_argument(
        "--accurate-dir",
        type=Path,
        default=None,
        help="an assembled accurate verifier folder (python -m affidavit.verify.accurate): adds "
        "accurate_model (that model alone), accurate (checks + it + its combiner) and cascade "
        "(verify.tier=cascade: the fast default, its uncertain band sent to the accurate stage)",
    )
    ap.add_argument(
        "--band",
        default=None,
        help="low,high: verify.accurate_band for the cascade configuration (default: the setting's)",
    )
    ap.add_argument(
        "--configs",
        default="",
        help="comma list: run only these configurations (word overlap is always reported)",
    )
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()

    model = OnnxCrossEncoder(args.model_dir, threads=args.threads)
    cached = CachedScorer(model)
    th = model.config.model_extra.get("thresholds", {}) if model.config.model_extra else {}
    # the thresholds `affidavit check` runs with by default (the model's dev-tuned values, as
    # affidavit.verify.calibration.effective_policy picks them for the default preset)
    tau_e, tau_c = preset_thresholds("default", model.config.model_extra or {})
    if args.tau_entail is not None:
        tau_e = args.tau_entail
    policy = PolicySettings(tau_entail=tau_e, tau_contradict=tau_c)
    splits = read_splits(args.splits)
    names = [s for s in args.sets.split(",") if s] or list(ALL_SETS)
    configs: dict[str, tuple[list[str], bool]] = {
        "checks": (["checks"], False),
        "cross_encoder": (["cross_encoder"], False),
        "checks+cross_encoder": (["checks", "cross_encoder"], False),
    }
    model_tau = float(th.get("model_tau_entail") or tau_e)
    if cached.combiner is not None:
        configs["default"] = (["checks", "cross_encoder"], True)
    verifiers: dict[str, ClaimCascade] = {
        k: ClaimCascade(
            VerifySettings(
                cascade=v,  # type: ignore[arg-type]
                threads=args.threads,
                max_len=args.max_len,
                window_len=args.window_len,
                combiner=comb,
                date_order_average=args.date_order_average,
            ),
            policy if comb else PolicySettings(tau_entail=model_tau, tau_contradict=tau_c),
            scorers={"cross_encoder": cached},
        )
        for k, (v, comb) in configs.items()
    }
    accurate_desc = None
    if args.accurate_dir is not None:
        acc = CachedScorer(OnnxCrossEncoder(args.accurate_dir, threads=args.threads))
        accurate_desc = acc.describe()
        base = {
            "threads": args.threads,
            "max_len": args.max_len,
            "window_len": args.window_len,
            "date_order_average": args.date_order_average,
        }
        band = (
            tuple(float(x) for x in args.band.split(","))
            if args.band
            else VerifySettings().accurate_band
        )
        verifiers["accurate_model"] = ClaimCascade(
            VerifySettings(cascade=["cross_encoder"], combiner=False, **base),  # type: ignore[arg-type]
            PolicySettings(tau_entail=0.5, tau_contradict=tau_c),
            scorers={"cross_encoder": acc},
        )
        verifiers["accurate"] = ClaimCascade(
            VerifySettings(cascade=["checks", "cross_encoder"], **base),  # type: ignore[arg-type]
            policy,
            scorers={"cross_encoder": acc},
        )
        verifiers["cascade"] = ClaimCascade(
            VerifySettings(
                cascade=["checks", "cross_encoder"],
                tier="cascade",
                accurate_band=band,  # type: ignore[arg-type]
                **base,  # type: ignore[arg-type]
            ),
            policy,
            scorers={"cross_encoder": cached, "accurate": acc},
        )
        for k in ("accurate_model", "accurate", "cascade"):
            configs[k] = (["checks", "cross_encoder"], True)
    if args.configs:
        keep = [c for c in args.configs.split(",") if c]
        configs = {k: v for k, v in configs.items() if k in keep}
        verifiers = {k: v for k, v in verifiers.items() if k in keep}
    combiner_file = args.model_dir / "combiner.json"
    wo_tau = 0.5
    if combiner_file.exists():
        wo_tau = float(json.loads(combiner_file.read_text()).get("word_overlap_tau", 0.5))
    table: dict[str, dict[str, Any]] = {}
    curves: dict[str, Any] = {}
    t_all = time.perf_counter()
    for name in names:
        items = sample(load_set(name, args.data, splits), args.limit)
        y = np.array([it.label == "entail" for it in items])
        table[name] = {"n": len(items), "n_positive": int(y.sum())}
        cov = np.array([overlap(it.claim, it.evidence) for it in items])
        table[name]["word_overlap"] = {
            "balanced_accuracy": bacc(y, cov >= wo_tau),
            "threshold": wo_tau,
        }
        best_t = max(np.unique(cov), key=lambda t: bacc(y, cov >= t)) if len(items) else 0.5
        table[name]["word_overlap_oracle"] = {
            "balanced_accuracy": bacc(y, cov >= best_t),
            "threshold": float(best_t),
        }
        for cfg, ver in verifiers.items():
            before = cached.model_pairs + (acc.model_pairs if accurate_desc else 0)
            verdicts, secs = run_set(ver, items)
            m = metrics_for(name, items, verdicts, tau_e, rounds=args.rounds, seconds=secs)
            p_sup = np.array([v.p_entail for v in verdicts])
            table[name][cfg] = {
                **m.model_dump(mode="json", exclude={"name", "n", "n_positive", "threshold"}),
                # the same scores at the best threshold *for this set* (chosen on its own labels):
                # what any recalibration of this configuration could reach here, at most
                "oracle_balanced_accuracy": oracle_bacc(y, p_sup),
                "contradicted": sum(v.label == "contradicted" for v in verdicts),
                "decided_by_checks": sum(
                    bool(v.stages) and v.stages[0].stage == "checks" and v.stages[0].decided
                    for v in verdicts
                ),
                "new_model_pairs": cached.model_pairs
                + (acc.model_pairs if accurate_desc else 0)
                - before,
            }
            if cfg == list(configs)[-1]:
                curves[name] = (y, np.array([v.p_entail for v in verdicts]))
        row = table[name]
        print(
            f"{name:24s} n={row['n']:4d}  "
            + "  ".join(
                f"{c}={row[c]['balanced_accuracy']:.3f}"
                for c in ["word_overlap", "word_overlap_oracle", *configs]
            ),
            flush=True,
        )
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"partial": True, "sets": table}, indent=1) + "\n")
    binary = [n for n in names if not n.startswith("anli")]
    for name in names:  # the ceilings as pseudo-configurations, for the means and kinds below
        for cfg in configs:
            if cfg in table[name]:
                table[name][f"{cfg}_oracle"] = {
                    "balanced_accuracy": table[name][cfg]["oracle_balanced_accuracy"]
                }
    reported = [*configs, *(f"{c}_oracle" for c in configs)]
    means = (
        {
            c: round(float(np.nanmean([table[n][c]["balanced_accuracy"] for n in binary])), 4)
            for c in ["word_overlap", "word_overlap_oracle", *reported]
        }
        if binary
        else {}
    )
    # the four kinds of issue 12 (web evidence, scientific claims, summaries, QA): mean per kind,
    # then the mean of the kinds
    kinds: dict[str, dict[str, float]] = {}
    for kind, members in KINDS.items():
        have = [n for n in members if n in table]
        if have:
            kinds[kind] = {
                c: round(float(np.nanmean([table[n][c]["balanced_accuracy"] for n in have])), 4)
                for c in ["word_overlap", "word_overlap_oracle", *reported]
            }
    if kinds:
        kinds["mean_of_kinds"] = {
            c: round(float(np.mean([kinds[k][c] for k in KINDS if k in kinds])), 4)
            for c in ["word_overlap", "word_overlap_oracle", *reported]
        }
        for k, v in kinds.items():
            print(f"kind {k:14s} " + "  ".join(f"{c}={x:.3f}" for c, x in v.items()))
    result = {
        "by_kind": kinds,
        "kinds": KINDS,
        "limit_per_set": args.limit,
        "max_len": args.max_len,
        "tau_entail": tau_e,
        "tau_contradict": tau_c,
        "sets": table,
        "mean_balanced_accuracy_binary": means,
        "model": model.describe(),
        "accurate_model": accurate_desc,
        "reference": {
            "llm_aggrefact_bacc_pct": leaderboard(args.data),
            "anli_acc_pct_roberta_large": ANLI_REFERENCE,
        },
        "seconds_total": round(time.perf_counter() - t_all, 1),
        "note": "rows capped per set (seeded sample of held-out/eval-only rows); binary = all but "
        "ANLI; prediction = label supported",
        "command": " ".join(["python", *sys.argv]),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    png = reliability_plot(curves, args.out.with_suffix(".png"), list(configs)[-1])
    print("mean balanced accuracy (binary sets):", means)
    print(f"reliability plot: {png}")
    print(f"wrote {args.out} in {result['seconds_total']}s")


if __name__ == "__main__":
    main()
