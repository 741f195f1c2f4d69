"""Readers for the datasets in ../shared/data, with the held-out eval splits.

Every reader yields ``Item``s: one claim, its full (unwindowed) evidence, a label in
``entail | neutral | contradict | not_entail`` and a ``group`` key (rows that share a
source row share a group, so train/dev/eval never split a group).

The eval splits are a pure function of (seed, file row count); ``make_splits`` writes the
row ids to ``training/splits.json`` and ``eval_verifier.py`` reads them back, so the
evaluation uses exactly the rows that were never trained on.
"""

from __future__ import annotations

import csv
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import read_jsonl

SPLIT_SEED = 20261130
HALU_FILES = {
    "qa": "qa_dev.jsonl",
    "dialogue": "dialogue_dev.jsonl",
    "summarization": "summarization_dev.jsonl.gz",
}
SUMMAC_FILES = ("factcc", "polytope", "summeval", "xsumfaith")


@dataclass
class Item:
    id: str
    source: str
    group: str
    claim: str
    evidence: str
    label: str


def _held_out(ids: list[str], frac: float, seed: int) -> list[str]:
    rng = random.Random(seed)
    ids = sorted(ids)
    rng.shuffle(ids)
    return sorted(ids[: int(round(frac * len(ids)))])


# --------------------------------------------------------------------------- halueval
def halueval_rows(data: Path, kind: str) -> list[dict[str, Any]]:
    return list(read_jsonl(data / "halueval" / HALU_FILES[kind]))


def halueval_items(kind: str, idx: int, row: dict[str, Any]) -> list[Item]:
    src = f"halueval_{kind}"
    g = f"{src}:{idx}"
    if kind == "qa":
        ev = row["knowledge"]
        pairs = [
            (f"{row['question']} {row['right_answer']}", "entail"),
            (f"{row['question']} {row['hallucinated_answer']}", "not_entail"),
        ]
    elif kind == "dialogue":
        ev = f"{row['knowledge']} Dialogue so far: {row['dialogue_history']}"
        pairs = [(row["right_response"], "entail"), (row["hallucinated_response"], "not_entail")]
    else:
        ev = row["document"]
        pairs = [(row["right_summary"], "entail"), (row["hallucinated_summary"], "not_entail")]
    return [
        Item(f"{g}:{'right' if i == 0 else 'hallucinated'}", src, g, c, ev, lab)
        for i, (c, lab) in enumerate(pairs)
    ]


# --------------------------------------------------------------------------- citation integrity
def citint_items(data: Path, split: str) -> list[Item]:
    corpus = {
        d["doc_id"]: " ".join(d["abstract"])
        for d in read_jsonl(data / "citation_integrity" / "corpus.jsonl")
    }
    out = []
    m = {"SUPPORT": "entail", "REFUTE": "contradict"}
    for row in read_jsonl(data / "citation_integrity" / f"claims_{split}.jsonl"):
        ev = row.get("evidence") or {}
        for doc in row["cited_doc_ids"]:
            labs = [e["label"] for e in ev.get(str(doc), [])]
            label = m[labs[0]] if labs else "neutral"
            if doc not in corpus:
                continue
            g = f"citint_{split}:{row['id']}"
            out.append(
                Item(f"{g}:{doc}", "citation_integrity", g, row["claim"], corpus[doc], label)
            )
    return out


# --------------------------------------------------------------------------- vitaminc
def vitaminc_items(data: Path, files: list[str]) -> list[Item]:
    m = {"supports": "entail", "refutes": "contradict", "not enough info": "neutral"}
    out = []
    for f in files:
        for i, row in enumerate(read_jsonl(data / "vitaminc_sample" / f)):
            out.append(
                Item(
                    f"vitaminc:{f}:{i}",
                    "vitaminc",
                    f"vitaminc:{row['id']}",
                    row["claim"],
                    row["evidence"],
                    m[row["label"]],
                )
            )
    return out


# --------------------------------------------------------------------------- summac
def summac_items(data: Path, subset: str) -> list[Item]:
    d = json.loads((data / "summac_subsets" / f"{subset}.json").read_text())
    out = []
    for key, v in d.items():
        lab = "entail" if str(v["label"]) == "1" else "not_entail"
        doc_key = v.get("bbcid") or v.get("id") or v.get("cnndm_id") or v.get("ID") or key
        out.append(
            Item(
                f"summac:{key}",
                f"summac_{subset}",
                f"summac_{subset}:{key}",
                v["claim"],
                v["document"],
                lab,
            )
        )
        out[-1].doc_key = str(doc_key)  # type: ignore[attr-defined]
    return out


# --------------------------------------------------------------------------- wice
def wice_items(data: Path) -> list[Item]:
    out = []
    for i, row in enumerate(read_jsonl(data / "wice" / "oracle_chunks_claim_dev.jsonl")):
        lab = "entail" if row["label"] == "supported" else "not_entail"
        cid = row["meta"]["id"]
        out.append(
            Item(f"wice:{i}", "wice", f"wice:{cid}", row["claim"], " ".join(row["evidence"]), lab)
        )
    return out


# --------------------------------------------------------------------------- verification_extra
EXTRA_LABELS = {"supported": "entail", "contradicted": "contradict", "unsupported": "neutral"}
EXTRA_FILES = (
    "snli/dev.jsonl",
    "snli/test.jsonl",
    "fever_nli/dev.jsonl",
    "fm2/dev.jsonl",
    "fm2/test.jsonl",
    "fever_symmetric/dev.jsonl",
    "fever_symmetric/test.jsonl",
    "sufficient_facts/test.jsonl",
    "summedits/dev.jsonl",
    "summedits/test.jsonl",
    "wice_nst/train.jsonl",
)


def extra_items(data: Path, files: tuple[str, ...] = EXTRA_FILES) -> list[Item]:
    """``verification_extra``: 43.7k licence-clean rows in one schema (see its README).

    Its ``group`` ids are kept (FEVER-derived claims share one group across fever_nli,
    fever_symmetric and sufficient_facts), prefixed so that they never collide with ours.
    """
    out = []
    for f in files:
        ds = f.split("/", 1)[0]
        for row in read_jsonl(data / "verification_extra" / f):
            label = EXTRA_LABELS[row["label"]]
            if ds == "summedits" and label != "entail":
                # its README: contradicted vs unsupported comes from GPT-4 edit typing and is
                # noisy; only "not consistent" is human. Train the binary label.
                label = "not_entail"
            out.append(
                Item(
                    f"extra:{row['id']}",
                    f"x_{ds}",
                    f"extra:{row['group']}",
                    row["claim"],
                    row["evidence"],
                    label,
                )
            )
    return out


# --------------------------------------------------------------------------- eval-only sets
def bingcheck_items(data: Path) -> list[Item]:
    out = []
    for row in read_jsonl(data / "bingcheck" / "bingcheck_compact.jsonl"):
        for j, sc in enumerate(row["subclaims"]):
            concl = row["subconclusions"].get(sc)
            ev = row["evidence"].get(sc) or []
            if concl is None or not ev:
                continue
            lab = "entail" if concl == "supported" else "not_entail"
            g = f"bingcheck:{row['answer_id']}"
            out.append(Item(f"{g}:{j}", "bingcheck", g, sc, " ".join(ev), lab))
    return out


def aggrefact_items(data: Path) -> list[Item]:
    out = []
    for f in ("CLIFF_error_types.csv", "Goyal21_error_types.csv"):
        with open(data / "aggrefact_error_types" / f, newline="", encoding="utf-8") as fh:
            for i, r in enumerate(csv.DictReader(fh)):
                et = r["error_type"].strip()
                lab = "entail" if et in ("correct", "") else "not_entail"
                it = Item(
                    f"aggrefact:{f}:{i}",
                    "aggrefact_error_types",
                    f"aggrefact:{r['id']}",
                    r["summ"],
                    r["doc"],
                    lab,
                )
                it.error_type = et or "correct"  # type: ignore[attr-defined]
                out.append(it)
    return out


def aggrefact_doc_ids(data: Path) -> set[str]:
    return {it.group.split(":", 1)[1] for it in aggrefact_items(data)}


def anli_items(data: Path, rnd: int) -> list[Item]:
    m = {"e": "entail", "n": "neutral", "c": "contradict"}
    with open(data / "anli" / f"ANLI_analysis_r{rnd}_dev.csv", newline="", encoding="utf-8") as fh:
        return [
            Item(
                f"anli_r{rnd}:{r['uid']}",
                f"anli_r{rnd}",
                f"anli:{r['uid']}",
                r["statement"],
                r["context"],
                m[r["gold_label"]],
            )
            for r in csv.DictReader(fh)
        ]


# --------------------------------------------------------------------------- splits
def make_splits(data: Path) -> dict[str, Any]:
    """Held-out (eval) row ids per dataset. Deterministic given SPLIT_SEED."""
    sp: dict[str, Any] = {"seed": SPLIT_SEED, "halueval": {}, "summac": {}, "notes": {}}
    for kind in HALU_FILES:
        n = len(halueval_rows(data, kind))
        ids = _held_out([str(i) for i in range(n)], 0.2, SPLIT_SEED + len(kind))
        sp["halueval"][kind] = {
            "file": HALU_FILES[kind],
            "n_rows": n,
            "frac": 0.2,
            "eval_row_indices": sorted(int(i) for i in ids),
        }
    for s in SUMMAC_FILES:
        keys = [it.id.split(":", 1)[1] for it in summac_items(data, s)]
        sp["summac"][s] = {
            "n_rows": len(keys),
            "frac": 0.5,
            "eval_keys": _held_out(keys, 0.5, SPLIT_SEED + len(s)),
        }
    claims = sorted({it.group.split(":", 1)[1] for it in wice_items(data)})
    sp["wice"] = {
        "n_claims": len(claims),
        "frac": 0.5,
        "by": "meta.id",
        "eval_claim_ids": _held_out(claims, 0.5, SPLIT_SEED),
    }
    sp["citation_integrity"] = {
        "eval": "claims_dev.jsonl (all rows)",
        "train": "claims_train.jsonl",
    }
    sp["vitaminc_sample"] = {"eval": "test.jsonl (all rows)", "train": "train_0..4.jsonl"}
    sp["eval_only"] = ["bingcheck", "aggrefact_error_types", "anli"]
    sp["notes"]["method"] = (
        "random.Random(seed + offset).shuffle(sorted ids); the first frac are held out (see sources._held_out)"
    )
    return sp


def read_splits_file(path: Path | None = None) -> dict[str, Any]:
    """``training/splits.json`` as written by build_data.py."""
    p = path or Path(__file__).resolve().parent / "splits.json"
    return json.loads(p.read_text())


def eval_sets(data: Path, splits: dict[str, Any]) -> dict[str, list[Item]]:
    """Every evaluation set, rebuilt from splits.json."""
    out: dict[str, list[Item]] = {}
    for kind, s in splits["halueval"].items():
        rows = halueval_rows(data, kind)
        out[f"halueval_{kind}"] = [
            it for i in s["eval_row_indices"] for it in halueval_items(kind, i, rows[i])
        ]
    for sub, s in splits["summac"].items():
        keep = set(s["eval_keys"])
        out[f"summac_{sub}"] = [
            it for it in summac_items(data, sub) if it.id.split(":", 1)[1] in keep
        ]
    keep = set(splits["wice"]["eval_claim_ids"])
    out["wice"] = [it for it in wice_items(data) if it.group.split(":", 1)[1] in keep]
    out["citation_integrity_dev"] = citint_items(data, "dev")
    out["vitaminc_test"] = vitaminc_items(data, ["test.jsonl"])
    out["bingcheck"] = bingcheck_items(data)
    out["aggrefact_error_types"] = aggrefact_items(data)
    for r in (1, 2, 3):
        out[f"anli_r{r}"] = anli_items(data, r)
    return out


def train_pool(data: Path, splits: dict[str, Any], extra: bool = True) -> Iterator[Item]:
    """Every real row that may train the shipped model and is not held out."""
    for kind, s in splits["halueval"].items():
        held = set(s["eval_row_indices"])
        for i, row in enumerate(halueval_rows(data, kind)):
            if i not in held:
                yield from halueval_items(kind, i, row)
    agg_docs = aggrefact_doc_ids(data)
    for sub, s in splits["summac"].items():
        held = set(s["eval_keys"])
        for it in summac_items(data, sub):
            # XSumFaith shares BBC documents with the AggreFact eval set: keep those documents out.
            if it.id.split(":", 1)[1] not in held and getattr(it, "doc_key", "") not in agg_docs:
                yield it
    held = set(splits["wice"]["eval_claim_ids"])
    for it in wice_items(data):
        if it.group.split(":", 1)[1] not in held:
            yield it
    yield from citint_items(data, "train")
    yield from vitaminc_items(data, [f"train_{i}.jsonl" for i in range(5)])
    if extra:
        yield from extra_items(data)
