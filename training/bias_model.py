"""A claim-only ("hypothesis-only") model of the training rows, for product-of-experts training.

Many training rows can be labelled from the claim alone, without reading the evidence: HaluEval's
hallucinated answers and summaries have a style of their own, FEVER refutations and SNLI
contradictions have their tell-tale words, the rule-made negations all say "not". A cross-encoder
learns those cues because they are the cheapest way down the loss, and they do not carry over to
other data (release 6 gave "Marie Curie discovered polonium and radium in 1898." p_entail 0.54
against *the same sentence* as evidence). Product-of-experts training (Clark et al. 2019,
"Don't Take the Easy Way Out"; He et al. 2019; Mahabadi et al. 2020) adds this model's
log-probabilities to the verifier's logits during training only, so the verifier gains nothing from
re-learning what the claim alone tells, and is used alone at inference.

The model: TF-IDF of the claim's words and word pairs, logistic regression, entail vs not
(scikit-learn). Every training row gets an *out-of-fold* probability (5 folds by group), so a
claim is never scored by a model that saw it. Writes ``<data-dir>/train_bias.npy`` (float32, one
p_entail per line of ``train.jsonl``, in file order) and ``train_bias.json`` (the fold AUROC per
source). ``train_verifier.py --poe-bias <data-dir>/train_bias.npy`` uses it.

Usage (project root, training venv):
    python training/bias_model.py --data-dir training/data9
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import read_jsonl  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data-dir", type=Path, default=HERE / "data")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--C", type=float, default=1.0)
    args = ap.parse_args()

    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import GroupKFold

    rows = list(read_jsonl(args.data_dir / "train.jsonl"))
    y = np.array([r["label"] == "entail" for r in rows], dtype=int)
    groups = [r["group"] for r in rows]
    claims = [r["claim"] for r in rows]
    oof = np.zeros(len(rows))
    for tr, te in GroupKFold(n_splits=args.folds).split(claims, y, groups):
        vec = TfidfVectorizer(ngram_range=(1, 2), min_df=3, max_features=200_000, sublinear_tf=True)
        xtr = vec.fit_transform([claims[i] for i in tr])
        lr = LogisticRegression(C=args.C, max_iter=1000).fit(xtr, y[tr])
        oof[te] = lr.predict_proba(vec.transform([claims[i] for i in te]))[:, 1]
    np.save(args.data_dir / "train_bias.npy", oof.astype(np.float32))
    by: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        by[r["source"]].append(i)
    report = {
        "rows": len(rows),
        "oof_auroc": round(float(roc_auc_score(y, oof)), 4),
        "by_source": {
            s: {
                "n": len(ix),
                "positive_rate": round(float(y[ix].mean()), 3),
                "mean_p_entail": round(float(oof[ix].mean()), 3),
                "oof_auroc": round(float(roc_auc_score(y[ix], oof[ix])), 4)
                if 0 < y[ix].sum() < len(ix)
                else None,
            }
            for s, ix in sorted(by.items())
        },
        "command": "python training/bias_model.py " + " ".join(sys.argv[1:]),
    }
    (args.data_dir / "train_bias.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: report[k] for k in ("rows", "oof_auroc")}))


if __name__ == "__main__":
    main()
