"""Experiment (not shipped): let a standalone evidence sentence raise a window's p_entail.

The cascade scores a claim against evidence *windows*; a window that also holds a distractor
("Hinder ... formed in 2001 ...Hanson.The Fatima Mansions ... formed in 1988") can score lower
than the one sentence that states the claim. This patch additionally scores the top-3 (BM25)
sentences of the scored windows that stand alone (>= 6 words, not opening with a pronoun or
demonstrative) and lets the best one's p_entail replace the run's when higher.

Runs the real benchmarks with the patch applied:

    python training/experiment_sentence_scores.py ablation --limit 100 --configs default --out X.json
    python training/experiment_sentence_scores.py ask --sample 30 --fed-sample 30 \
        --cache /tmp/affidavit-bench --replay benchmarks/results/ask_halueval.json --out Y.json

Measured 2026-12-02 (fast tier, same code otherwise; benchmarks/results/*sentence_scores*.json):
ablation mean 0.640 -> 0.644, four kinds 0.683 -> 0.681 (within noise;
summeval +0.06, wice -0.01, citation -0.01); ask replay accuracy 0.533 -> 0.600, wrong shown
0.100 -> 0.133, but hallucinated answers with a claim shown verified 0.233 -> 0.333. Not adopted:
it lets more hallucinations through than it gains.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from affidavit.verify import cascade as C  # noqa: E402
from affidavit.verify.evidence import sentence_candidates  # noqa: E402

ANAPHORA = {"he", "she", "it", "they", "this", "that", "these", "those", "his", "her", "its"}
ANAPHORA |= {"their", "such", "there", "both"}
TOP, MIN_WORDS = 3, 6


def standalone(text: str) -> bool:
    words = text.split()
    return len(words) >= MIN_WORDS and words[0].lower().strip("\"'(") not in ANAPHORA


_orig = C.ClaimCascade._model


def _model(self: Any, stage: str, run: Any, signals_only: bool = False) -> None:
    _orig(self, stage, run, signals_only)
    if stage != "cross_encoder" or not run.windows or run.model_score is None:
        return
    whole = {w.span.text.strip() for w in run.windows}
    sents = [
        s
        for s in sentence_candidates(run.claim.text, run.chunks, run.windows, TOP)
        if standalone(s.span.text) and s.span.text.strip() not in whole
    ]
    if not sents:
        return
    scores = self._batched(self.scorers[stage], [(run.claim.text, s.span.text) for s in sents], run)
    ok = [i for i, s in enumerate(scores) if s.error is None and not s.detail.startswith("trunc")]
    if not ok:
        return
    i = max(ok, key=lambda i: scores[i].p_entail)
    pe = scores[i].p_entail
    if pe <= run.model_score.p_entail:
        return
    pc = run.model_score.p_contradict
    run.model_score = run.model_score.model_copy(
        update={"p_entail": pe, "p_neutral": max(0.0, 1 - pe - pc)}
    )
    if run.final is not None and run.final.stage == stage and not signals_only:
        s = self.settings
        decided = pe > s.uncertain_high or pe < s.uncertain_low or pc >= s.contradict_confidence
        run.final = run.final.model_copy(
            update={"p_entail": pe, "decided": decided, "detail": run.final.detail + "; sentence"}
        )
        if pe >= self._model_tau():
            run.support = (sents[i].span,)


def main() -> None:
    which, rest = sys.argv[1], sys.argv[2:]
    script = {"ablation": "verifier_ablation.py", "ask": "ask_halueval.py"}[which]
    C.ClaimCascade._model = _model  # type: ignore[method-assign]
    sys.argv = [script, *rest]
    runpy.run_path(str(ROOT / "benchmarks" / script), run_name="__main__")


if __name__ == "__main__":
    main()
