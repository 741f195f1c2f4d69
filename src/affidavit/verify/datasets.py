"""Evaluation sets of ``../shared/data``, restricted to rows the verifier was never trained on.

The held-out rows of the trainable sets (WiCE, Citation-Integrity dev, HaluEval, SummaC) are read
from the split file the trainer writes (``training/splits.json``); the readers mirror
``training/sources.py`` so that eval rows are exactly the ones it held out. BingCheck, AggreFact
error types and ANLI are evaluation-only (their licences forbid training a shipped model).

Labels are ``entail`` / ``neutral`` / ``contradict`` (3-way sets) or ``entail`` / ``not_entail``.

Examples:
    >>> splits = read_splits(Path("training/splits.json"))  # doctest: +SKIP
    >>> load_set("wice", Path("../shared/data"), splits)[0].label  # doctest: +SKIP
    'entail'
"""

from __future__ import annotations

import csv
import gzip
import json
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from affidavit.core.errors import InputError

HALU_FILES = {
    "qa": "qa_dev.jsonl",
    "dialogue": "dialogue_dev.jsonl",
    "summarization": "summarization_dev.jsonl.gz",
}
SUMMAC = ("factcc", "polytope", "summeval", "xsumfaith")
HELD_OUT_SETS = (
    "wice",
    "citation_integrity_dev",
    *(f"halueval_{k}" for k in HALU_FILES),
    *(f"summac_{s}" for s in SUMMAC),
)
EVAL_ONLY_SETS = ("bingcheck", "aggrefact_error_types", "anli_r1", "anli_r2", "anli_r3")
ALL_SETS = HELD_OUT_SETS + EVAL_ONLY_SETS
THREE_WAY_SETS = frozenset({"anli_r1", "anli_r2", "anli_r3", "citation_integrity_dev"})


@dataclass(frozen=True)
class EvalItem:
    """One (claim, evidence, gold label) row of an evaluation set."""

    id: str
    claim: str
    evidence: str
    label: str
    meta: str = ""


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    yield json.loads(line)
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read {path}: {exc}", source=str(path)) from exc


def _csv(path: Path) -> list[dict[str, str]]:
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            return list(csv.DictReader(fh))
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc}", source=str(path)) from exc


def _halueval(data: Path, kind: str, rows_idx: Sequence[int]) -> list[EvalItem]:
    rows = list(_jsonl(data / "halueval" / HALU_FILES[kind]))
    out = []
    for i in rows_idx:
        row = rows[i]
        if kind == "qa":
            ev = row["knowledge"]
            pairs = [
                (f"{row['question']} {row['right_answer']}", "entail"),
                (f"{row['question']} {row['hallucinated_answer']}", "not_entail"),
            ]
        elif kind == "dialogue":
            ev = f"{row['knowledge']} Dialogue so far: {row['dialogue_history']}"
            pairs = [
                (row["right_response"], "entail"),
                (row["hallucinated_response"], "not_entail"),
            ]
        else:
            ev = row["document"]
            pairs = [
                (row["right_summary"], "entail"),
                (row["hallucinated_summary"], "not_entail"),
            ]
        out += [
            EvalItem(f"halueval_{kind}:{i}:{j}", c, ev, lab) for j, (c, lab) in enumerate(pairs)
        ]
    return out


def _summac(data: Path, subset: str, keys: set[str]) -> list[EvalItem]:
    d = json.loads((data / "summac_subsets" / f"{subset}.json").read_text(encoding="utf-8"))
    return [
        EvalItem(
            f"summac_{subset}:{k}",
            v["claim"],
            v["document"],
            "entail" if str(v["label"]) == "1" else "not_entail",
        )
        for k, v in d.items()
        if k in keys
    ]


def _wice(data: Path, claim_ids: set[str]) -> list[EvalItem]:
    out = []
    for i, row in enumerate(_jsonl(data / "wice" / "oracle_chunks_claim_dev.jsonl")):
        if row["meta"]["id"] in claim_ids:
            lab = "entail" if row["label"] == "supported" else "not_entail"
            out.append(EvalItem(f"wice:{i}", row["claim"], " ".join(row["evidence"]), lab))
    return out


def _citint(data: Path) -> list[EvalItem]:
    corpus = {
        d["doc_id"]: " ".join(d["abstract"])
        for d in _jsonl(data / "citation_integrity" / "corpus.jsonl")
    }
    m = {"SUPPORT": "entail", "REFUTE": "contradict"}
    out = []
    for row in _jsonl(data / "citation_integrity" / "claims_dev.jsonl"):
        ev = row.get("evidence") or {}
        for doc in row["cited_doc_ids"]:
            if doc not in corpus:
                continue
            labs = [e["label"] for e in ev.get(str(doc), [])]
            out.append(
                EvalItem(
                    f"citint:{row['id']}:{doc}",
                    row["claim"],
                    corpus[doc],
                    m[labs[0]] if labs else "neutral",
                )
            )
    return out


def _bingcheck(data: Path) -> list[EvalItem]:
    out = []
    for row in _jsonl(data / "bingcheck" / "bingcheck_compact.jsonl"):
        for j, sc in enumerate(row["subclaims"]):
            concl = row["subconclusions"].get(sc)
            ev = row["evidence"].get(sc) or []
            if concl is None or not ev:
                continue
            lab = "entail" if concl == "supported" else "not_entail"
            out.append(EvalItem(f"bingcheck:{row['answer_id']}:{j}", sc, " ".join(ev), lab))
    return out


def _aggrefact(data: Path) -> list[EvalItem]:
    out = []
    for f in ("CLIFF_error_types.csv", "Goyal21_error_types.csv"):
        for i, r in enumerate(_csv(data / "aggrefact_error_types" / f)):
            et = r["error_type"].strip() or "correct"
            lab = "entail" if et == "correct" else "not_entail"
            out.append(EvalItem(f"aggrefact:{f}:{i}", r["summ"], r["doc"], lab, meta=et))
    return out


def _anli(data: Path, rnd: int) -> list[EvalItem]:
    m = {"e": "entail", "n": "neutral", "c": "contradict"}
    return [
        EvalItem(f"anli_r{rnd}:{r['uid']}", r["statement"], r["context"], m[r["gold_label"]])
        for r in _csv(data / "anli" / f"ANLI_analysis_r{rnd}_dev.csv")
    ]


def read_splits(path: Path) -> dict[str, Any]:
    """The trainer's held-out split definitions.

    Raises:
        InputError: the file is missing or not JSON.
    """
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError(
            f"split file not found: {path} (written by training/build_data.py)", source=str(path)
        ) from exc
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read split file {path}: {exc}", source=str(path)) from exc
    return data


def load_set(name: str, data: Path, splits: dict[str, Any] | None) -> list[EvalItem]:
    """One evaluation set by name (see ALL_SETS).

    Raises:
        InputError: unknown name, a held-out set without splits, or unreadable data.
    """
    readers: dict[str, Callable[[], list[EvalItem]]] = {
        "bingcheck": lambda: _bingcheck(data),
        "aggrefact_error_types": lambda: _aggrefact(data),
        "anli_r1": lambda: _anli(data, 1),
        "anli_r2": lambda: _anli(data, 2),
        "anli_r3": lambda: _anli(data, 3),
        "citation_integrity_dev": lambda: _citint(data),
    }
    if name in readers:
        return readers[name]()
    if name not in ALL_SETS:
        raise InputError(f"unknown eval set {name!r}; valid: {', '.join(ALL_SETS)}")
    if splits is None:
        raise InputError(f"{name} needs the held-out split file (--splits)")
    if name == "wice":
        return _wice(data, set(splits["wice"]["eval_claim_ids"]))
    if name.startswith("halueval_"):
        kind = name.removeprefix("halueval_")
        return _halueval(data, kind, splits["halueval"][kind]["eval_row_indices"])
    sub = name.removeprefix("summac_")
    return _summac(data, sub, set(splits["summac"][sub]["eval_keys"]))


def sample(items: list[EvalItem], limit: int | None, seed: int = 0) -> list[EvalItem]:
    """At most ``limit`` rows, a seeded random sample (all rows when limit is None)."""
    if limit is None or len(items) <= limit:
        return items
    rng = random.Random(seed)
    idx = sorted(rng.sample(range(len(items)), limit))
    return [items[i] for i in idx]
