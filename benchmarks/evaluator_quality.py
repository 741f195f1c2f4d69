"""Relevance-evaluator quality: relevant vs BM25-hard-negative passages on HaluEval qa dev.

For a seeded sample of questions, the positive is the question's own knowledge passage and the
hard negative is the best BM25 (bm25s) hit among all 8000 knowledge passages other than its own.
A seeded half calibrates the model evaluator (logistic regression on its features); the other
half is held out for every number reported. The decision "relevant" is ``score >= 5`` (the CRAG
strip threshold). Baselines in the same run: cosine alone and BM25 saturation alone, each with its
threshold tuned on the calibration half.

Usage:
    python benchmarks/evaluator_quality.py [DATA] [--questions 2000] [--llm-chunks 40]
        [--write-calibration]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from affidavit.correct.evaluator import (  # noqa: E402
    CALIBRATION_PATH,
    FEATURE_NAMES,
    LLMRelevanceEvaluator,
    ModelRelevanceEvaluator,
    fit_logistic,
)


def load_pairs(data: Path, n_questions: int, seed: int) -> list[dict[str, Any]]:
    """Questions with their own passage and a BM25-hard negative."""
    import bm25s

    rows = [json.loads(line) for line in (data / "halueval" / "qa_dev.jsonl").open()]
    corpus = [r["knowledge"] for r in rows]
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False
    )
    rng = random.Random(seed)
    idx = rng.sample(range(len(rows)), n_questions)
    qs = [rows[i]["question"] for i in idx]
    res, _ = retriever.retrieve(
        bm25s.tokenize(qs, stopwords="en", show_progress=False), k=5, show_progress=False
    )
    out = []
    for row_i, q, hits in zip(idx, qs, res, strict=True):
        own = corpus[row_i]
        neg = next((int(h) for h in hits if corpus[int(h)] != own), None)
        if neg is None:
            continue
        out.append({"row": row_i, "question": q, "pos": own, "neg": corpus[neg], "neg_row": neg})
    return out


def balanced_accuracy(scores: np.ndarray, labels: np.ndarray, threshold: float) -> float:
    pred = scores >= threshold
    tpr = float(pred[labels == 1].mean())
    tnr = float((~pred[labels == 0]).mean())
    return (tpr + tnr) / 2


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    pos, neg = scores[labels == 1], scores[labels == 0]
    order = np.argsort(np.concatenate([pos, neg]), kind="mergesort")
    ranks = np.empty(len(order))
    ranks[order] = np.arange(1, len(order) + 1)
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def best_threshold(scores: np.ndarray, labels: np.ndarray) -> float:
    cands = np.unique(np.quantile(scores, np.linspace(0.01, 0.99, 197)))
    return float(max(cands, key=lambda t: balanced_accuracy(scores, labels, t)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--questions", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--llm-chunks", type=int, default=40)
    ap.add_argument("--write-calibration", action="store_true")
    ap.add_argument(
        "--crag",
        type=int,
        default=0,
        metavar="N",
        help="CRAG decisions on N held-out questions with BM25 top-5 (as retrieved, and with "
        "the gold passage removed), written to evaluator_quality_crag.json",
    )
    ap.add_argument(
        "--llm-only",
        action="store_true",
        help="only the LLM evaluator (and the model evaluator on the same passages), "
        "written to evaluator_quality_llm.json after every chunk",
    )
    ap.add_argument(
        "--reranker-only",
        action="store_true",
        help="the packaged passage reranker as a grader (10 x p(relevant)) next to the default "
        "model evaluator, on the questions held out in training/splits.json only (the reranker "
        "trained on the others), written to evaluator_quality_reranker.json",
    )
    ap.add_argument(
        "--out", default=str(ROOT / "benchmarks" / "results" / "evaluator_quality.json")
    )
    args = ap.parse_args()
    data = Path(args.data)

    t0 = time.perf_counter()
    pairs = load_pairs(data, args.questions, args.seed)
    rng = random.Random(args.seed + 1)
    rng.shuffle(pairs)
    half = len(pairs) // 2
    calib, held = pairs[:half], pairs[half:]
    if args.crag:
        run_crag(data, held, args.crag, Path(args.out).with_name("evaluator_quality_crag.json"))
        return
    if args.reranker_only:
        out = Path(args.out).with_name("evaluator_quality_reranker.json")
        run_reranker_only(pairs, out)
        return
    if args.llm_only:
        out = Path(args.out).with_name("evaluator_quality_llm.json")
        run_llm_only(held, args.llm_chunks, out)
        return
    print(
        f"{len(pairs)} questions ({len(calib)} calibration, {len(held)} held out); "
        f"pairs built in {time.perf_counter() - t0:.1f}s"
    )

    # features with the current calibration's avgdl (features do not depend on the coefficients)
    ev = ModelRelevanceEvaluator(
        calibration={"coef": [0.0] * len(FEATURE_NAMES), "intercept": 0.0, "avgdl": 40.0},
        threads=1,
    )

    def feats(items: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
        xs, ys = [], []
        for it in items:
            f = ev.features(it["question"], [it["pos"], it["neg"]])
            xs.append(f)
            ys.extend([1, 0])
        return np.concatenate(xs), np.array(ys)

    t1 = time.perf_counter()
    xc, yc = feats(calib)
    xh, yh = feats(held)
    print(f"features for {len(xc) + len(xh)} passages in {time.perf_counter() - t1:.1f}s")
    coef, intercept = fit_logistic(xc, yc.astype(np.float64))
    calibration = {
        "features": list(FEATURE_NAMES),
        "coef": [float(c) for c in coef],
        "intercept": intercept,
        "avgdl": 40.0,
        "score": "10 * sigmoid(features @ coef + intercept)",
        "fitted_on": {
            "file": "halueval/qa_dev.jsonl",
            "rows": sorted(it["row"] for it in calib),
            "negatives": "best bm25s hit (en stopwords) among the other 7999 knowledge passages",
            "seed": args.seed,
            "questions": len(calib),
        },
    }
    if args.write_calibration:
        CALIBRATION_PATH.write_text(json.dumps(calibration, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {CALIBRATION_PATH}")

    model_scores = 10.0 / (1.0 + np.exp(-(xh @ coef + intercept)))
    systems: dict[str, dict[str, Any]] = {}
    for name, sc_h, sc_c, thr in [
        ("model (cos+bm25, calibrated)", model_scores, None, 5.0),
        ("cosine only (tuned threshold)", xh[:, 0], xc[:, 0], None),
        ("bm25 saturation only (tuned threshold)", xh[:, 1], xc[:, 1], None),
    ]:
        t = thr if thr is not None else best_threshold(sc_c, yc)
        systems[name] = {
            "threshold": t,
            "balanced_accuracy": balanced_accuracy(sc_h, yh, t),
            "auc": auc(sc_h, yh),
            "n": len(yh),
        }
    m = systems["model (cos+bm25, calibrated)"]
    m["share_pos_ge_upper_8"] = float((model_scores[yh == 1] >= 8.0).mean())
    m["share_neg_lt_lower_3"] = float((model_scores[yh == 0] < 3.0).mean())
    m["share_neg_ge_upper_8"] = float((model_scores[yh == 0] >= 8.0).mean())
    m["median_score_pos"] = float(np.median(model_scores[yh == 1]))
    m["median_score_neg"] = float(np.median(model_scores[yh == 0]))

    # cost: one question + 5 chunks per call, as in a real run (embedding the question included)
    real = ModelRelevanceEvaluator(threads=1) if CALIBRATION_PATH.exists() else None
    timer_ev = real or ev
    per_chunk = []
    for it in held[:60]:
        chunks = [it["pos"], it["neg"], *[h["pos"] for h in held[60:63]]]
        s = time.perf_counter()
        timer_ev.score(it["question"], chunks)
        per_chunk.append((time.perf_counter() - s) * 1000 / len(chunks))
    m["ms_per_chunk_median"] = statistics.median(per_chunk)
    m["ms_per_chunk_p90"] = float(np.quantile(per_chunk, 0.9))

    # LLM rubric evaluator on a small balanced sample, when the embedded backend is available
    llm: dict[str, Any] = {"status": "not run"}
    if args.llm_chunks > 0:
        llm = run_llm(held, args.llm_chunks, model_scores, yh)
    systems["llm rubric (embedded)"] = llm

    result = {
        "benchmark": "evaluator_quality",
        "data": "halueval/qa_dev.jsonl",
        "questions": len(pairs),
        "held_out_questions": len(held),
        "seed": args.seed,
        "decision": "relevant iff score >= 5.0 (strip threshold)",
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, 1 inference thread",
        "calibration": {k: v for k, v in calibration.items() if k != "fitted_on"},
        "systems": systems,
        "seconds": time.perf_counter() - t0,
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"\n{'system':42s} {'bal.acc':>8s} {'AUC':>6s} {'thr':>6s} {'ms/chunk':>9s}")
    for name, s in systems.items():
        if "balanced_accuracy" not in s:
            print(f"{name:42s} {s.get('status', '')}")
            continue
        ms = s.get("ms_per_chunk_median")
        print(
            f"{name:42s} {s['balanced_accuracy']:8.3f} {s.get('auc', float('nan')):6.3f} "
            f"{s.get('threshold', float('nan')):6.2f} {ms if ms is not None else float('nan'):9.2f}"
        )
    print(f"wrote {args.out}")


def run_llm(
    held: list[dict[str, Any]], n_chunks: int, model_scores: np.ndarray, yh: np.ndarray
) -> dict[str, Any]:
    try:
        from affidavit.core.settings import load_settings
        from affidavit.generate.factory import make_generator

        settings = load_settings(overrides={"generate": {"threads": 2}})
        gen = make_generator(settings.generate, cache_dir=settings.resolved_home() / "models")
    except Exception as exc:
        return {"status": f"not run: embedded generator unavailable ({exc!r})"}
    ev = LLMRelevanceEvaluator(gen)
    n_q = max(1, n_chunks // 2)
    scores, labels, ms, errors = [], [], [], 0
    for it in held[:n_q]:
        for text, label in ((it["pos"], 1), (it["neg"], 0)):
            s = time.perf_counter()
            r = ev.score_one(it["question"], text)
            ms.append((time.perf_counter() - s) * 1000)
            scores.append(r.score)
            labels.append(label)
            errors += r.error is not None
    sc, lb = np.array(scores), np.array(labels)
    # the model evaluator on exactly the same passages, side by side
    same = model_scores[: 2 * n_q]
    return {
        "status": "ran",
        "generator": gen.name,
        "n": len(lb),
        "threshold": 5.0,
        "balanced_accuracy": balanced_accuracy(sc, lb, 5.0),
        "auc": auc(sc, lb),
        "parse_errors": errors,
        "ms_per_chunk_median": statistics.median(ms),
        "model_balanced_accuracy_same_sample": balanced_accuracy(same, yh[: 2 * n_q], 5.0),
    }


class _MemoEvaluator:
    """Memoises a relevance evaluator by (question, text): identical inputs, identical scores."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.cache: dict[tuple[str, str], Any] = {}

    def score(self, question: str, passages: Any) -> list[Any]:
        todo = [p for p in dict.fromkeys(passages) if (question, p) not in self.cache]
        if todo:
            for p, sc in zip(todo, self.inner.score(question, todo), strict=True):
                self.cache[(question, p)] = sc
        return [self.cache[(question, p)] for p in passages]


def run_crag(data: Path, held: list[dict[str, Any]], n: int, out: Path) -> None:
    """Classification and refinement quality of the whole CRAG stage (model evaluator, no web).

    Retrieval is BM25 (bm25s) top-5 over all 8000 knowledge passages. Scenario "retrieved": the
    hits as they are; scenario "gold removed": the question's own passage taken out (a retrieval
    miss). Answer recall: the dataset's right_answer appears (case-insensitive) in the context.
    """
    import bm25s

    from affidavit.core.types import Chunk
    from affidavit.correct import CorrectiveRetrieval

    rows = [json.loads(line) for line in (data / "halueval" / "qa_dev.jsonl").open()]
    corpus = [r["knowledge"] for r in rows]
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False
    )
    from affidavit.core.settings import CorrectSettings

    ev = ModelRelevanceEvaluator(threads=1)
    memo = _MemoEvaluator(ev)  # configurations share the scores of identical texts
    paper = {"keep_best_when_empty": False}  # answer from nothing when nothing passes
    configs = {
        "sentence_window_0": CorrectSettings(sentence_window=0, keep_whole_threshold=None, **paper),
        "sentence_window_1": CorrectSettings(sentence_window=1, keep_whole_threshold=None, **paper),
        "sentence_window_2": CorrectSettings(sentence_window=2, keep_whole_threshold=None, **paper),
        "sentence_window_2_whole_8": CorrectSettings(
            sentence_window=2, keep_whole_threshold=8.0, **paper
        ),
        "sentence_window_2_whole_5": CorrectSettings(
            sentence_window=2, keep_whole_threshold=5.0, **paper
        ),
        # the shipped default: the above, and the best-graded chunk kept whole when nothing passes
        "sentence_window_2_whole_5_keep_best": CorrectSettings(),
    }
    crags = {w: CorrectiveRetrieval(memo, settings=c) for w, c in configs.items()}
    items = held[:n]
    res, _ = retriever.retrieve(
        bm25s.tokenize([it["question"] for it in items], stopwords="en", show_progress=False),
        k=6,
        show_progress=False,
    )
    per: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for it, hits in zip(items, res, strict=True):
        answer = rows[it["row"]]["right_answer"].lower()
        gold = corpus[it["row"]]
        ranked = [corpus[int(h)] for h in hits]
        for (w, crag), (scenario, texts) in itertools.product(
            crags.items(),
            (
                ("retrieved", ranked[:5]),
                ("gold_removed", [t for t in ranked if t != gold][:5]),
            ),
        ):
            s = time.perf_counter()
            r = crag.run(it["question"], [Chunk(text=t) for t in texts])
            ctx = " ".join(c.text for c in r.chunks)
            per.append(
                {
                    "row": it["row"],
                    "window": w,
                    "scenario": scenario,
                    "gold_in_hits": gold in texts,
                    "kind": r.classification.kind,
                    "max_score": r.classification.max_score,
                    "answer_in_hits": any(answer in t.lower() for t in texts),
                    "answer_in_context": answer in ctx.lower(),
                    "hits_chars": sum(len(t) for t in texts),
                    "context_chars": len(ctx),
                    "ms": (time.perf_counter() - s) * 1000,
                }
            )

    def summary(sel: list[dict[str, Any]]) -> dict[str, Any]:
        if not sel:
            return {"n": 0}
        kinds = {
            k: sum(x["kind"] == k for x in sel) / len(sel)
            for k in ("correct", "ambiguous", "incorrect")
        }
        with_ans = [x for x in sel if x["answer_in_hits"]]
        return {
            "n": len(sel),
            "kind_share": kinds,
            "answer_recall_hits": sum(x["answer_in_hits"] for x in sel) / len(sel),
            "answer_recall_context": sum(x["answer_in_context"] for x in sel) / len(sel),
            "answer_kept_when_in_hits": (
                sum(x["answer_in_context"] for x in with_ans) / len(with_ans) if with_ans else None
            ),
            "context_chars_ratio_median": statistics.median(
                x["context_chars"] / x["hits_chars"] for x in sel
            ),
            "ms_per_question_median": statistics.median(x["ms"] for x in sel),
        }

    result: dict[str, Any] = {
        "benchmark": "evaluator_quality_crag",
        "data": "halueval/qa_dev.jsonl (held-out half only)",
        "questions": len(items),
        "retrieval": "bm25s top-5 over 8000 knowledge passages",
        "evaluator": ev.name,
        "thresholds": {"upper": 8.0, "lower": 3.0, "strip": 5.0},
        "answer_recall": "right_answer appears (case-insensitive) in the hits / refined context",
    }
    keys = ("retrieved", "retrieved_gold_in_top5", "retrieved_gold_not_in_top5", "gold_removed")
    for w in crags:
        mine = [x for x in per if x["window"] == w]
        ret = [x for x in mine if x["scenario"] == "retrieved"]
        parts = (
            summary(ret),
            summary([x for x in ret if x["gold_in_hits"]]),
            summary([x for x in ret if not x["gold_in_hits"]]),
            summary([x for x in mine if x["scenario"] == "gold_removed"]),
        )
        result[w] = {**dict(zip(keys, parts, strict=True)), "settings": configs[w].model_dump()}
    result["seconds"] = time.perf_counter() - t0
    result["rows"] = per
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(
        f"{'config':>26s} {'scenario':28s} {'n':>4s} {'correct':>8s} {'ambig':>6s} "
        f"{'incorr':>7s} {'ans@hits':>8s} {'ans@ctx':>8s} {'ctx/hits':>8s}"
    )
    for w in crags:
        for key in keys:
            m = result[w][key]
            if not m.get("n"):
                continue
            k = m["kind_share"]
            print(
                f"{w:>26s} {key:28s} {m['n']:4d} {k['correct']:8.2f} {k['ambiguous']:6.2f} "
                f"{k['incorrect']:7.2f} {m['answer_recall_hits']:8.2f} "
                f"{m['answer_recall_context']:8.2f} {m['context_chars_ratio_median']:8.2f}"
            )
    print(f"wrote {out}")


def run_reranker_only(pairs: list[dict[str, Any]], out: Path) -> None:
    """Default model evaluator vs the packaged reranker on held-out questions (both sides)."""
    from affidavit.correct.evaluator import PairScorerRelevanceEvaluator
    from affidavit.retrieve.rerank import packaged_reranker_dir
    from affidavit.verify.crossencoder import OnnxCrossEncoder

    splits = json.loads((ROOT / "training" / "splits.json").read_text())
    held_rows = set(splits["halueval"]["qa"]["eval_row_indices"])
    items = [p for p in pairs if p["row"] in held_rows and p["neg_row"] in held_rows]
    model = ModelRelevanceEvaluator(threads=1)
    reranker = PairScorerRelevanceEvaluator(
        OnnxCrossEncoder(packaged_reranker_dir(), threads=1, stage="reranker"), signal="entail"
    )
    systems: dict[str, Any] = {}
    for name, ev in [
        ("model (default evaluator)", model),
        ("reranker (10 x p_relevant)", reranker),
    ]:
        t = time.perf_counter()
        sc = np.array(
            [r.score for it in items for r in ev.score(it["question"], [it["pos"], it["neg"]])]
        )
        y = np.array([1, 0] * len(items))
        systems[name] = {
            "balanced_accuracy": balanced_accuracy(sc, y, 5.0),
            "auc": auc(sc, y),
            "share_pos_ge_upper_8": float((sc[y == 1] >= 8.0).mean()),
            "share_neg_lt_lower_3": float((sc[y == 0] < 3.0).mean()),
            "share_neg_ge_upper_8": float((sc[y == 0] >= 8.0).mean()),
            "ms_per_passage": (time.perf_counter() - t) * 1000 / len(sc),
        }
        print(name, json.dumps({k: round(v, 3) for k, v in systems[name].items()}), flush=True)
    result = {
        "benchmark": "evaluator_quality --reranker-only",
        "data": "halueval/qa_dev.jsonl",
        "questions": len(items),
        "rows": "question and its hard negative both held out (training/splits.json)",
        "decision": "relevant iff score >= 5.0 (strip threshold)",
        "note": "the default evaluator's calibration was fitted on a random half of 2000 rows, "
        "which may include some of these rows; the reranker never saw them",
        "systems": systems,
    }
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}")


def run_llm_only(held: list[dict[str, Any]], n_chunks: int, out: Path) -> None:
    """LLM rubric vs model evaluator on the same held-out passages, saved after every chunk."""
    from affidavit.core.settings import load_settings
    from affidavit.generate.factory import make_generator

    settings = load_settings(overrides={"generate": {"threads": 2}})
    gen = make_generator(settings.generate, cache_dir=settings.resolved_home() / "models")
    llm = LLMRelevanceEvaluator(gen)
    model = ModelRelevanceEvaluator(threads=1)
    rows: list[dict[str, Any]] = []
    for it in held[: max(1, n_chunks // 2)]:
        for text, label in ((it["pos"], 1), (it["neg"], 0)):
            s = time.perf_counter()
            r = llm.score_one(it["question"], text)
            llm_ms = (time.perf_counter() - s) * 1000
            s = time.perf_counter()
            (m,) = model.score(it["question"], [text])
            model_ms = (time.perf_counter() - s) * 1000
            rows.append(
                {
                    "row": it["row"],
                    "label": label,
                    "llm_score": r.score,
                    "llm_error": r.error,
                    "llm_reason": r.reason,
                    "llm_ms": llm_ms,
                    "model_score": m.score,
                    "model_ms": model_ms,
                }
            )
            lb = np.array([x["label"] for x in rows])
            summary: dict[str, Any] = {
                "benchmark": "evaluator_quality_llm",
                "generator": gen.name,
                "machine": f"{platform.machine()} {os.cpu_count()} cpus (shared), 2 LLM threads",
                "n": len(rows),
                "decision": "relevant iff score >= 5.0",
            }
            if 0 < lb.sum() < len(lb):
                for key in ("llm", "model"):
                    sc = np.array([x[f"{key}_score"] for x in rows])
                    summary[key] = {
                        "balanced_accuracy": balanced_accuracy(sc, lb, 5.0),
                        "auc": auc(sc, lb),
                        "ms_per_chunk_median": statistics.median(x[f"{key}_ms"] for x in rows),
                    }
                summary["llm"]["parse_errors"] = sum(x["llm_error"] is not None for x in rows)
            summary["rows"] = rows
            out.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
            print(
                f"{len(rows)} chunks: llm {r.score:.0f} ({llm_ms / 1000:.0f}s) model "
                f"{m.score:.1f} label {label}",
                flush=True,
            )


if __name__ == "__main__":
    main()
