"""Does the verifier's judgement move when a sentence's date moves? (same meaning, other order)

"Marie Curie discovered polonium and radium in 1898." and "In 1898, Marie Curie discovered
polonium and radium." say the same thing, so a verifier must judge them alike against the same
evidence. Release 6.1 did not: against "In 1898, Marie Curie discovered polonium and radium." it
gave the first p_entail 0.30 and the second 0.90, because in its training rows a claim *ending*
in "in <year>." was mostly a refuted one.

Rows: the held-out / evaluation-only rows of every set of ``benchmarks/verifier_ablation.py``
(``training/splits.json``), scanned whole (no model call) for claim sentences with one time
adverbial that :func:`affidavit.verify.lexical.move_time_adverbial` can move; at most
``--per-set`` of them per set (seeded sample). Each sentence and its moved twin are verified
against the row's evidence, alone, by the real ``ClaimCascade``: the model alone
(``cross_encoder``), what ``affidavit check`` runs (``default``: checks, model, combiner), and
the same with ``verify.date_order_average`` on (``default_date_order_average``).

Per model (``--model-dir``, repeatable; each gets its own combiner from its folder) and
configuration: mean |p_entail(original) - p_entail(moved)|, the mean signed change for each
direction (``to_front``: a trailing date moved to the front; ``to_end``: the reverse), and the
share of sentences whose decision (supported or not) flips. Lower is better on all of them; 0
is a verifier that reads the sentence, not the date's place.

Usage:
    python benchmarks/verifier_invariance.py [--model-dir DIR ...] [--per-set 40]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
os.environ.setdefault("OMP_NUM_THREADS", "2")

from affidavit.core.settings import PolicySettings, VerifySettings  # noqa: E402
from affidavit.verify.calibration import preset_thresholds  # noqa: E402
from affidavit.verify.cascade import (  # noqa: E402
    ClaimCascade,
    chunks_from_texts,
    claim_from_text,
)
from affidavit.verify.crossencoder import OnnxCrossEncoder, packaged_model_dir  # noqa: E402
from affidavit.verify.datasets import ALL_SETS, load_set, read_splits  # noqa: E402
from affidavit.verify.lexical import move_time_adverbial, sentence_spans  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "verifier_invariance.json"


def movable_pairs(data: Path, splits: dict[str, Any], per_set: int, seed: int) -> list[dict]:
    """(set, sentence, moved, direction, evidence) for every set, at most ``per_set`` each."""
    out: list[dict] = []
    for name in ALL_SETS:
        found = []
        for it in load_set(name, data, splits):
            for a, b in sentence_spans(it.claim):
                mv = move_time_adverbial(it.claim[a:b])
                if mv is not None:
                    found.append(
                        {
                            "set": name,
                            "id": it.id,
                            "sentence": it.claim[a:b],
                            "moved": mv[0],
                            "direction": mv[1],
                            "evidence": it.evidence,
                        }
                    )
        random.Random(seed).shuffle(found)
        out += found[:per_set]
    return out


def cascades(model_dir: Path, threads: int) -> dict[str, ClaimCascade]:
    model = OnnxCrossEncoder(model_dir, threads=threads)
    extra = model.config.model_extra or {}
    tau_e, tau_c = preset_thresholds("default", extra)
    model_tau = float(extra.get("thresholds", {}).get("model_tau_entail") or tau_e)

    def cascade(stages: list[str], combiner: bool, average: bool, tau: float) -> ClaimCascade:
        return ClaimCascade(
            VerifySettings(
                cascade=stages,
                threads=threads,
                combiner=combiner,
                date_order_average=average,
            ),
            PolicySettings(tau_entail=tau, tau_contradict=tau_c),
            scorers={"cross_encoder": model},
        )

    return {
        "cross_encoder": cascade(["cross_encoder"], False, False, model_tau),
        # what `affidavit check` runs (verify.date_order_average off by default)
        "default": cascade(["checks", "cross_encoder"], True, False, tau_e),
        # with verify.date_order_average on: both orders scored and averaged (invariant by
        # construction where the twin moves back to the sentence)
        "default_date_order_average": cascade(["checks", "cross_encoder"], True, True, tau_e),
    }


def measure(cascade: ClaimCascade, pairs: list[dict]) -> dict[str, Any]:
    deltas: dict[str, list[float]] = {"to_front": [], "to_end": []}
    flips = 0
    for k, p in enumerate(pairs):
        chunks = chunks_from_texts([p["evidence"]])
        a = cascade.verify(claim_from_text(p["sentence"], f"o{k}"), chunks)
        b = cascade.verify(claim_from_text(p["moved"], f"m{k}"), chunks)
        deltas[p["direction"]].append(b.p_entail - a.p_entail)
        flips += (a.label == "supported") != (b.label == "supported")
    every = deltas["to_front"] + deltas["to_end"]
    return {
        "n": len(every),
        "mean_abs_delta_p_entail": round(statistics.fmean(abs(d) for d in every), 4),
        "mean_delta_to_front": round(statistics.fmean(deltas["to_front"]), 4)
        if deltas["to_front"]
        else None,
        "n_to_front": len(deltas["to_front"]),
        "mean_delta_to_end": round(statistics.fmean(deltas["to_end"]), 4)
        if deltas["to_end"]
        else None,
        "n_to_end": len(deltas["to_end"]),
        "decision_flip_rate": round(flips / len(every), 4),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--splits", type=Path, default=ROOT / "training" / "splits.json")
    ap.add_argument(
        "--model-dir",
        type=Path,
        action="append",
        default=None,
        help="a model folder (repeatable); default: the packaged model",
    )
    ap.add_argument("--per-set", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    pairs = movable_pairs(args.data, read_splits(args.splits), args.per_set, args.seed)
    by_set: dict[str, int] = {}
    for p in pairs:
        by_set[p["set"]] = by_set.get(p["set"], 0) + 1
    print(f"{len(pairs)} movable sentences: {by_set}", flush=True)
    models: dict[str, Any] = {}
    for md in args.model_dir or [packaged_model_dir()]:
        t0 = time.perf_counter()
        row: dict[str, Any] = {"path": str(md)}
        for cfg, cascade in cascades(md, args.threads).items():
            row[cfg] = measure(cascade, pairs)
            print(f"{md}  {cfg:14s} {json.dumps(row[cfg])}", flush=True)
        row["seconds"] = round(time.perf_counter() - t0, 1)
        models[str(md)] = row
    result = {
        "benchmark": "verifier_invariance",
        "command": "python benchmarks/verifier_invariance.py " + " ".join(sys.argv[1:]),
        "per_set": args.per_set,
        "seed": args.seed,
        "sentences_by_set": by_set,
        "examples": [
            {k: p[k] for k in ("set", "sentence", "moved", "direction")} for p in pairs[:5]
        ],
        "models": models,
        "note": "lower is better; 0 = the judgement does not depend on where the date stands",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
