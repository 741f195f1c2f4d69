"""Refits of the fast tier's combiner on its dev rows, side by side (a study; nothing is written).

Reads the feature cache ``fit_combiner.py`` writes (run it first, with the same row options) and
cross-validates, 5 folds by group, each source weighted the same (as the shipped fit) or each
kind of evidence weighted the same: the shipped seven inputs, with four interaction terms, all
sixteen inputs, and gradient-boosted trees. Prints the weighted balanced accuracy and the
balanced accuracy per held-out-like source at the cross-validated threshold.

Usage (project root, training venv):
    python training/fit_combiner.py --model-dir src/affidavit/verify/model --per-source 150 \
        --synthetic-per-source 15 --all-rows-of summac_factcc,summac_polytope,summac_summeval,\
summac_xsumfaith --cache /tmp/feat_fast.jsonl --no-write
    python training/combiner_variants.py "/tmp/feat_fast*.jsonl" training/data/dev.jsonl
"""

import glob
import hashlib
import json
import sys
from collections import Counter
from pathlib import Path

HERE = __import__("pathlib").Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))
import fit_combiner as fc  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import GroupKFold  # noqa: E402

from affidavit.verify.combiner import FEATURES as ALL  # noqa: E402

cache_glob = sys.argv[1] if len(sys.argv) > 1 else str(HERE / "work" / "combiner_features*.jsonl")
dev = sys.argv[2] if len(sys.argv) > 2 else str(HERE / "data" / "dev.jsonl")
items = fc.dev_items(
    fc.DEFAULT_DATA,
    Path(dev),
    150,
    7,
    15,
    frozenset(["summac_factcc", "summac_polytope", "summac_summeval", "summac_xsumfaith"]),
)
cache = {}
for f in glob.glob(cache_glob):
    for line in open(f):
        d = json.loads(line)
        cache[d["id"]] = d["features"]
F, y, src, grp = [], [], [], []
for it in items:
    rid = hashlib.sha256((it["claim"] + "\x00" + it["evidence"]).encode()).hexdigest()[:20]
    f = cache.get(rid)
    if f is None:
        continue
    F.append(f)
    y.append(int(it["label"] == "entail"))
    src.append(it["source"])
    grp.append(it["group"])
y = np.array(y)
print("rows", len(y), "of", len(items))


def kind(s):
    if s.startswith("synthetic"):
        return "synthetic"
    if s.startswith("summac") or s in ("halueval_summarization", "x_summedits"):
        return "summ"
    if s in (
        "x_snli",
        "x_fever_nli",
        "x_fever_symmetric",
        "x_fm2",
        "x_sufficient_facts",
        "vitaminc",
    ):
        return "nli"
    if s in ("wice", "x_wice_nst"):
        return "web"
    return s


def weights(mode):
    if mode == "source":
        n = Counter(src)
        w = np.array([1.0 / n[s] for s in src])
    elif mode == "kind":
        ks = [kind(s) for s in src]
        nk = Counter(ks)
        ns = Counter(src)
        # each kind the same, sources equal within a kind
        spk = {k: len({s for s in src if kind(s) == k}) for k in nk}
        w = np.array([1.0 / (spk[kind(s)] * ns[s]) for s in src])
    return w * len(w) / w.sum()


def X_of(names):
    cols = []
    for n in names:
        if "*" in n:
            a, b = n.split("*")
            cols.append([f[a] * f[b] for f in F])
        else:
            cols.append([f[n] for f in F])
    return np.array(cols).T


def cv(names, wmode="source", C=1.0, model="lr"):
    X = X_of(names)
    w = weights(wmode)
    oof = np.zeros(len(y))
    for tr, te in GroupKFold(n_splits=5).split(X, y, grp):
        if model == "lr":
            m, s = X[tr].mean(0), X[tr].std(0)
            s[s < 1e-6] = 1
            lr = LogisticRegression(C=C, max_iter=3000, class_weight="balanced").fit(
                (X[tr] - m) / s, y[tr], sample_weight=w[tr]
            )
            oof[te] = lr.predict_proba((X[te] - m) / s)[:, 1]
        else:
            from sklearn.ensemble import HistGradientBoostingClassifier

            g = HistGradientBoostingClassifier(
                max_depth=3, max_iter=150, learning_rate=0.05, class_weight="balanced"
            ).fit(X[tr], y[tr], sample_weight=w[tr])
            oof[te] = g.predict_proba(X[te])[:, 1]
    ws = weights("source")
    wk = weights("kind")
    tau, _ = fc.best_threshold(y, oof, w)
    out = {
        "src_w": round(fc.weighted_bacc(y, (oof >= tau).astype(int), ws), 4),
        "kind_w": round(fc.weighted_bacc(y, (oof >= tau).astype(int), wk), 4),
    }
    per = {}
    for s in [
        "summac_factcc",
        "summac_xsumfaith",
        "summac_polytope",
        "summac_summeval",
        "halueval_summarization",
        "halueval_dialogue",
        "halueval_qa",
        "citation_integrity",
        "wice",
        "x_summedits",
    ]:
        m = np.array([x == s for x in src])
        per[s[:10]] = round(
            fc.weighted_bacc(y[m], (oof[m] >= tau).astype(int), np.ones(m.sum())), 3
        )
    return out, per


base7 = [
    "pe_whole",
    "pc_whole",
    "pe_mean",
    "conflict_any",
    "log_evidence_tokens",
    "log_sentences",
    "cov_whole",
]
inter = [
    "pe_whole*cov_whole",
    "pe_whole*log_evidence_tokens",
    "cov_whole*log_evidence_tokens",
    "pe_mean*log_sentences",
]
variants = {
    "base7": (base7, "source"),
    "base7_kind": (base7, "kind"),
    "base7+inter": (base7 + inter, "source"),
    "base7+inter_kind": (base7 + inter, "kind"),
    "all16": (list(ALL), "source"),
    "all16+inter": (list(ALL) + inter, "source"),
    "all16+inter_kind": (list(ALL) + inter, "kind"),
}
for name, (feats, wm) in variants.items():
    print(name, *cv(feats, wm))
print("gbm16", *cv(list(ALL), "source", model="gbm"))
print("gbm16_kind", *cv(list(ALL), "kind", model="gbm"))
