"""Perturbation suite for the provenance audit: affidavit vs Dokis on the same inputs.

Built programmatically from real sentences in ``../shared/data``: HaluEval qa knowledge passages
(HotpotQA Wikipedia paragraphs) and the citation_integrity abstracts (scientific text, rich in
numbers and units). For each item, the grounded claim is one sentence of a passage; the audit
sees that passage plus 4 distractor passages (5 chunks) and an answer that is one of:

- ``grounded``: the sentence itself;
- perturbations (should be flagged): ``absent`` (the sentence's own passage is not among the
  chunks; one distractor shares a name with it when any does), ``negation`` ("was" ->
  "was not"), ``number`` (a count or amount changed), ``date`` (a year shifted or a month
  swapped), ``entity`` (a multi-word name swapped for a name from another passage), ``unit``
  (km -> miles, years -> months, ...);
- faithful paraphrases (should be accepted): ``clause_drop`` (a parenthetical, appositive or
  trailing coordinate clause removed), ``reorder`` (a leading/trailing time or place phrase
  moved), ``synonym`` (dictionary synonyms), ``number_format`` ("1,500" -> "1500",
  "10 km" -> "10 kilometres", "%" -> "percent").

The rules here are deliberately independent of affidavit's own parsers (no import of
``affidavit.verify``), and a perturbed value is never one that already appears in the passage.

A system *accepts* an answer when its audit passes with every claim supported (affidavit:
``trust_passed`` with default settings; Dokis: ``passed`` with ``min_citation_rate=1.0``, BM25
matcher, default extractor and threshold). Detection = share of perturbed answers not accepted.

Items are split by passage into a dev half and a test half with a fixed seed; the checks were
tuned looking only at dev items, and the headline numbers are the test half.

Usage (in the benchmark venv that has dokis):
    .venv-bench/bin/python benchmarks/audit_perturbations.py [DATA] [--per-type 300] [--seed 13]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

PERTURBATIONS = ("negation", "number", "date", "entity", "unit", "absent")
PARAPHRASES = ("clause_drop", "reorder", "synonym", "number_format")
KINDS = ("grounded", *PERTURBATIONS, *PARAPHRASES)

# ----------------------------------------------------------------------------- passages


def _split_sentences(text: str) -> list[str]:
    # independent, simple splitter: ". " + capital, also "century.First" glued sentences
    text = re.sub(r"(?<=[a-z0-9)][.!?])(?=[A-Z][a-z])", " ", text)
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z\"(])", text)
    return [p.strip() for p in parts if p.strip()]


@dataclass
class Passage:
    pid: str
    text: str
    question: str
    sentences: list[str] = field(default_factory=list)


def load_passages(data: Path) -> list[Passage]:
    out: list[Passage] = []
    with (data / "halueval" / "qa_dev.jsonl").open(encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            r = json.loads(line)
            text = r["knowledge"].strip()
            out.append(Passage(f"halueval-{i}", text, r["question"], _split_sentences(text)))
    with (data / "citation_integrity" / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            sents = [s.strip() for s in r["abstract"] if s.strip()]
            text = " ".join(sents)
            if 200 <= len(text) <= 3000:
                out.append(Passage(f"ci-{r['doc_id']}", text, r.get("title") or "", sents))
    return out


# ----------------------------------------------------------------------------- perturbations

AUX = re.compile(r"\b(is|was|are|were|has|had|can|will|could|would|does|did|has been|have)\b")
YEAR = re.compile(r"(?<![\d,.$])\b(1[5-9]\d\d|20[0-2]\d)\b(?![\d,.%])")
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
MONTH_RE = re.compile(r"\b(" + "|".join(MONTHS) + r")\b")
NUMBER = re.compile(r"(?<![\w.,$-])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?![\w,-]|\.\d)")
SPELLED = [
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
]
SPELLED_RE = re.compile(r"\b(" + "|".join(SPELLED) + r")\b")
NAME = re.compile(r"(?<=[a-z,] )((?:[A-Z][a-z]+)(?: (?:[A-Z][a-z]+)){1,2})\b")
UNIT_SWAP = {
    "km": "miles",
    "kilometres": "miles",
    "kilometers": "miles",
    "miles": "kilometres",
    "mi": "km",
    "metres": "feet",
    "meters": "feet",
    "m": "ft",
    "feet": "metres",
    "ft": "m",
    "kg": "lb",
    "kilograms": "pounds",
    "pounds": "kilograms",
    "lb": "kg",
    "acres": "hectares",
    "hectares": "acres",
    "square miles": "square kilometres",
    "square kilometres": "square miles",
    "km2": "sq mi",
    "mph": "km/h",
    "years": "months",
    "months": "years",
    "weeks": "days",
    "days": "weeks",
    "hours": "minutes",
    "minutes": "hours",
    "mg": "g",
    "g": "mg",
    "ml": "l",
    "cm": "mm",
    "mm": "cm",
    "°C": "°F",
    "inches": "centimetres",
    "tons": "kilograms",
    "tonnes": "kilograms",
}
UNIT_RE = re.compile(
    r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)\s?("
    + "|".join(re.escape(u) for u in sorted(UNIT_SWAP, key=len, reverse=True))
    + r")(?![\w])"
)


def negate(s: str, rng: random.Random) -> str | None:
    m = AUX.search(s, 1)
    if m is None or re.match(r"\s+(not|never|no)\b", s[m.end() :]):
        return None
    return s[: m.end()] + " not" + s[m.end() :]


def change_number(s: str, passage: str, rng: random.Random) -> str | None:
    cands = []
    for m in NUMBER.finditer(s):
        raw = m.group(0)
        if YEAR.fullmatch(raw) or raw in ("0", "1"):
            continue
        # citation markers ("[270]", "loci54") are references, not stated quantities
        if s[max(0, m.start() - 1) : m.start()] in ("[", "·") or s[m.end() : m.end() + 1] in (
            "]",
            "·",
        ):
            continue
        cands.append(m)
    if cands:
        m = rng.choice(cands)
        whole = m.group(1).replace(",", "")
        n = int(whole)
        for _ in range(10):
            new_n = rng.choice([n + rng.randint(1, 9), n * rng.choice([2, 3, 10]), max(2, n // 2)])
            if new_n == n:
                continue
            new = f"{new_n:,}" if "," in m.group(1) else str(new_n)
            if m.group(2):
                new += "." + m.group(2)
            if new not in passage:
                return s[: m.start()] + new + s[m.end() :]
        return None
    sm = SPELLED_RE.search(s)
    if sm:
        options = [w for w in SPELLED if w != sm.group(1) and w not in passage.lower()]
        if options:
            return s[: sm.start()] + rng.choice(options) + s[sm.end() :]
    return None


def change_date(s: str, passage: str, rng: random.Random) -> str | None:
    years = list(YEAR.finditer(s))
    if years:
        m = rng.choice(years)
        y = int(m.group(1))
        for _ in range(10):
            ny = y + rng.choice([-1, 1]) * rng.randint(1, 30)
            if str(ny) not in passage and 1000 < ny < 2030:
                return s[: m.start()] + str(ny) + s[m.end() :]
        return None
    mm = MONTH_RE.search(s)
    if mm:
        options = [x for x in MONTHS if x != mm.group(1) and x not in passage and x != "May"]
        return s[: mm.start()] + rng.choice(options) + s[mm.end() :]
    return None


def swap_entity(s: str, passage: str, pool: list[str], rng: random.Random) -> str | None:
    names = [m for m in NAME.finditer(s) if not MONTH_RE.search(m.group(1))]
    if not names:
        return None
    m = rng.choice(names)
    k = m.group(1).count(" ") + 1
    low = passage.lower()
    for _ in range(20):
        cand = rng.choice(pool)
        if cand.count(" ") + 1 != k:
            continue
        if any(w.lower() in low for w in cand.split()):
            continue
        return s[: m.start(1)] + cand + s[m.end(1) :]
    return None


def change_unit(s: str, passage: str, rng: random.Random) -> str | None:
    ms = list(UNIT_RE.finditer(s))
    if not ms:
        return None
    m = rng.choice(ms)
    new_unit = UNIT_SWAP[m.group(2)]
    sep = " " if " " in m.group(0) or len(new_unit) > 3 else ""
    out = s[: m.start()] + m.group(1) + (sep or " ") + new_unit + s[m.end() :]
    # the new (number, unit) must not already be stated in the passage
    if f"{m.group(1)} {new_unit}" in passage or f"{m.group(1)}{new_unit}" in passage:
        return None
    return out


# ----------------------------------------------------------------------------- paraphrases

SYNONYMS = {
    "film": "movie",
    "films": "movies",
    "located": "situated",
    "began": "started",
    "begins": "starts",
    "famous": "well-known",
    "company": "firm",
    "author": "writer",
    "authors": "writers",
    "large": "big",
    "largest": "biggest",
    "approximately": "about",
    "known as": "called",
    "also known as": "also called",
    "popular": "well-liked",
    "established": "set up",
    "founded": "set up",
    "completed": "finished",
    "purchased": "bought",
    "received": "got",
    "commonly": "usually",
    "often": "frequently",
    "primarily": "mainly",
    "mostly": "mainly",
    "significant": "notable",
    "significantly": "notably",
    "demonstrated": "showed",
    "showed": "demonstrated",
    "revealed": "showed",
    "obtained": "got",
    "individuals": "people",
    "currently": "presently",
    "nearly": "almost",
    "assist": "help",
    "assisted": "helped",
    "residents": "inhabitants",
    "novel": "book",
    "starring": "featuring",
    "stars": "features",
}
SYN_RE = re.compile(r"\b(" + "|".join(sorted(SYNONYMS, key=len, reverse=True)) + r")\b")


def clause_drop(s: str, rng: random.Random) -> str | None:
    paren = re.search(r" \([^()]{3,80}\)", s)
    if paren:
        return s[: paren.start()] + s[paren.end() :]
    appos = re.search(r", (which|who|where) [^,]{5,120},", s)
    if appos:
        return s[: appos.start()] + s[appos.end() - 1 :].lstrip(",")
    trail = re.search(r", (which|who|where|and) [^,]{5,200}\.$", s)
    if trail and trail.start() > 30:
        return s[: trail.start()] + "."
    return None


def reorder(s: str, rng: random.Random) -> str | None:
    lead = re.match(r"^((?:In|On|During|After|Since|By) [^,]{3,40}), (.+)$", s)
    if lead:
        rest = lead.group(2).rstrip(".")
        phrase = lead.group(1)
        phrase = phrase[0].lower() + phrase[1:]
        if rest[:1].isupper() and rest.split()[0] in ("The", "A", "An", "It", "This"):
            rest = rest[0].lower() + rest[1:] if rest.split()[0] in ("The", "A", "An") else rest
        return rest[0].upper() + rest[1:] + " " + phrase + "."
    trail = re.search(
        r" (in|on|since|during) ((?:[A-Z][a-z]+ )?(?:\d{1,2} )?(?:1[5-9]|20)\d\d)\.$", s
    )
    if trail:
        head = s[: trail.start()]
        first = head.split()[0]
        if first in ("The", "A", "An"):
            head = head[0].lower() + head[1:]
        return f"{trail.group(1).capitalize()} {trail.group(2)}, {head}."
    return None


def synonym(s: str, rng: random.Random) -> str | None:
    ms = list(SYN_RE.finditer(s))
    if not ms:
        return None
    out = s
    for m in reversed(ms[:2]):
        out = out[: m.start()] + SYNONYMS[m.group(1)] + out[m.end() :]
    return out


NUMFMT: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str]]] = [
    (re.compile(r"(?<![\d,.])(\d{1,3}),(\d{3})(?![\d,]|\.\d)"), lambda m: m.group(1) + m.group(2)),
    (re.compile(r"(\d)\s?%"), lambda m: m.group(1) + " percent"),
    (re.compile(r"(\d) km\b"), lambda m: m.group(1) + " kilometres"),
    (re.compile(r"(\d) kg\b"), lambda m: m.group(1) + " kilograms"),
    (re.compile(r"(\d) (mi)\b"), lambda m: m.group(1) + " miles"),
    (re.compile(r"\$(\d+(?:\.\d+)?) million"), lambda m: m.group(1) + " million dollars"),
    (re.compile(r"\$(\d+(?:\.\d+)?) billion"), lambda m: "$" + m.group(1) + "B"),
    (re.compile(r"(?<![\d.,·])(\d+) million\b"), lambda m: f"{int(m.group(1)):,}" + ",000,000"),
    (
        re.compile(r"(?<![\w-])(two|three|four|five|six|seven|eight|nine) "),
        lambda m: str(SPELLED.index(m.group(1)) + 2) + " ",
    ),
]


def number_format(s: str, rng: random.Random) -> str | None:
    for pat, fn in NUMFMT:
        m = pat.search(s)
        if m and not YEAR.fullmatch(m.group(0).strip()):
            return s[: m.start()] + fn(m) + s[m.end() :]
    return None


# ----------------------------------------------------------------------------- suite


@dataclass
class Item:
    kind: str
    passage: str
    half: str
    answer: str
    base: str
    chunks: list[dict[str, Any]]
    query: str


def build_suite(passages: list[Passage], per_type: int, seed: int) -> list[Item]:
    rng = random.Random(seed)
    order = list(range(len(passages)))
    rng.shuffle(order)
    half_of = {passages[i].pid: ("dev" if k % 2 == 0 else "test") for k, i in enumerate(order)}
    pool = sorted({m.group(1) for p in passages[:4000] for m in NAME.finditer(p.text)})
    by_name: dict[str, list[int]] = defaultdict(list)
    for j, q in enumerate(passages):
        for m in NAME.finditer(q.text):
            by_name[m.group(1)].append(j)
    gens: dict[str, Callable[[str, Passage], str | None]] = {
        "grounded": lambda s, p: s,
        "absent": lambda s, p: s,
        "negation": lambda s, p: negate(s, rng),
        "number": lambda s, p: change_number(s, p.text, rng),
        "date": lambda s, p: change_date(s, p.text, rng),
        "entity": lambda s, p: swap_entity(s, p.text, pool, rng),
        "unit": lambda s, p: change_unit(s, p.text, rng),
        "clause_drop": lambda s, p: clause_drop(s, rng),
        "reorder": lambda s, p: reorder(s, rng),
        "synonym": lambda s, p: synonym(s, rng),
        "number_format": lambda s, p: number_format(s, rng),
    }
    counts: dict[tuple[str, str], int] = defaultdict(int)
    items: list[Item] = []
    for i in order:
        p = passages[i]
        half = half_of[p.pid]
        sents = [s for s in p.sentences if 8 <= len(s.split()) <= 45 and s.endswith(".")]
        if not sents:
            continue
        rng.shuffle(sents)
        for kind, gen in gens.items():
            if counts[(kind, half)] >= per_type:
                continue
            for s in sents:
                ans = gen(s, p)
                if ans is None or (ans == s and kind not in ("grounded", "absent")):
                    continue
                others = [o for o in rng.sample(range(len(passages)), 6) if o != i]
                if kind == "absent":
                    # the source passage is left out; one distractor shares a name with the
                    # sentence when any does, so the chunks are about the same thing
                    near = [
                        j
                        for m in NAME.finditer(s)
                        for j in by_name.get(m.group(1), ())
                        if passages[j].text != p.text
                    ]
                    picked = ([rng.choice(near)] if near else []) + others
                    # HaluEval repeats Wikipedia paragraphs across rows: no chunk may hold s
                    idx = [j for j in dict.fromkeys(picked) if s not in passages[j].text][:5]
                else:
                    idx = [i, *others][:5]
                chunks = [
                    {"text": passages[j].text, "url": f"https://corpus.example/{passages[j].pid}"}
                    for j in idx
                ]
                rng.shuffle(chunks)
                items.append(Item(kind, p.pid, half, ans, s, chunks, p.question))
                counts[(kind, half)] += 1
                break
        if all(counts[(k, h)] >= per_type for k in KINDS for h in ("dev", "test")):
            break
    return items


# ----------------------------------------------------------------------------- systems


def affidavit_system() -> Callable[[Item], tuple[bool, str]]:
    from affidavit.audit import Auditor

    auditor = Auditor()

    def run(item: Item) -> tuple[bool, str]:
        r = auditor.audit(item.query, item.chunks, item.answer)
        why = "; ".join(c.reason for c in r.claims if not c.supported) or (
            "no claims" if not r.claims else "claims: " + " | ".join(c.text for c in r.claims)
        )
        return r.trust_passed, why

    return run


def dokis_system() -> Callable[[Item], tuple[bool, str]] | None:
    try:
        import dokis
    except ImportError:
        return None
    cfg = dokis.Config(min_citation_rate=1.0)

    def run(item: Item) -> tuple[bool, str]:
        chunks = [dokis.Chunk(content=c["text"], source_url=c["url"]) for c in item.chunks]
        r = dokis.audit(item.query, chunks, item.answer, config=cfg)
        why = "; ".join(f"unsupported ({c.confidence:.2f})" for c in r.claims if not c.supported)
        return bool(r.passed), why

    return run


def evaluate(
    items: list[Item], system: Callable[[Item], tuple[bool, str]]
) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    acc: dict[tuple[str, str], list[bool]] = defaultdict(list)
    examples: list[dict[str, Any]] = []
    for it in items:
        ok, why = system(it)
        acc[(it.half, it.kind)].append(ok)
        wrong = (it.kind in PERTURBATIONS and ok) or (it.kind not in PERTURBATIONS and not ok)
        if wrong and it.half == "dev":
            examples.append({"kind": it.kind, "base": it.base, "answer": it.answer, "why": why})
    out: dict[str, dict[str, Any]] = {}
    for (half, kind), oks in acc.items():
        rate = sum(oks) / len(oks)
        metric = 1.0 - rate if kind in PERTURBATIONS else rate
        out.setdefault(half, {})[kind] = {"n": len(oks), "rate": round(metric, 4)}
    return out, examples


def coverage_table(items: list[Item]) -> dict[str, Any]:
    """How the confidence (lexical coverage) alone separates supported from absent claims.

    Dev half only: positives are grounded and paraphrased answers, negatives are ``absent``
    answers (their source passage is not among the chunks). Shows what the coverage threshold
    does before the typed checks run.
    """
    from affidavit.audit.matcher import EvidenceIndex
    from affidavit.claims import RuleBasedExtractor
    from affidavit.core.types import Chunk

    ex = RuleBasedExtractor()
    pos: list[float] = []
    neg: list[float] = []
    for it in items:
        if it.half != "dev" or it.kind not in ("grounded", "absent", *PARAPHRASES):
            continue
        idx = EvidenceIndex([Chunk(**c) for c in it.chunks])
        for c in ex.extract(it.answer):
            m = idx.match(c.text)
            (neg if it.kind == "absent" else pos).append(m[0].coverage if m else 0.0)
    rows = {}
    for th in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8):
        rows[str(th)] = {
            "supported_claims_passing": round(sum(x >= th for x in pos) / max(len(pos), 1), 4),
            "absent_claims_passing": round(sum(x >= th for x in neg) / max(len(neg), 1), 4),
        }
    return {"n_positive_claims": len(pos), "n_absent_claims": len(neg), "thresholds": rows}


def natural_suite(data: Path, n: int, seed: int) -> list[Item]:
    """Real hallucinations: HaluEval summarization, faithful vs hallucinated summary per article.

    The article is cut into ~600-character chunks on sentence boundaries (all given to the
    audit); the answer is the whole summary. Articles are shuffled with the seed and the test
    half (odd positions) is used.
    """
    import gzip

    rows = []
    with gzip.open(data / "halueval" / "summarization_dev.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            rows.append(json.loads(line))
    rng = random.Random(seed)
    order = list(range(len(rows)))
    rng.shuffle(order)
    items: list[Item] = []
    for k, i in enumerate(order):
        if k % 2 == 0:
            continue  # dev half: not used for the headline
        r = rows[i]
        chunks: list[dict[str, Any]] = []
        buf = ""
        for sent in _split_sentences(r["document"]):
            if buf and len(buf) + len(sent) > 600:
                chunks.append({"text": buf, "url": f"https://news.example/{i}/{len(chunks)}"})
                buf = ""
            buf = f"{buf} {sent}".strip()
        if buf:
            chunks.append({"text": buf, "url": f"https://news.example/{i}/{len(chunks)}"})
        for kind, answer in (
            ("faithful", r["right_summary"]),
            ("hallucinated", r["hallucinated_summary"]),
        ):
            items.append(Item(kind, f"sum-{i}", "test", answer, answer, chunks, ""))
        if len(items) >= 2 * n:
            break
    return items


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--per-type", type=int, default=300, help="items per type and half")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--examples", type=int, default=0, help="print N dev misses per system")
    ap.add_argument(
        "--natural", type=int, default=300, help="HaluEval summarization pairs (0: skip)"
    )
    ap.add_argument(
        "--out", default=str(ROOT / "benchmarks" / "results" / "audit_perturbations.json")
    )
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    passages = load_passages(Path(args.data))
    items = build_suite(passages, args.per_type, args.seed)
    build_s = time.perf_counter() - t0
    systems: dict[str, Callable[[Item], tuple[bool, str]]] = {"affidavit": affidavit_system()}
    dk = dokis_system()
    if dk is not None:
        systems["dokis"] = dk
    else:
        print("dokis is not installed: run in .venv-bench (see the module docstring)")
    results: dict[str, Any] = {}
    misses: dict[str, list[dict[str, Any]]] = {}
    timing: dict[str, float] = {}
    for name, sysfn in systems.items():
        t = time.perf_counter()
        results[name], misses[name] = evaluate(items, sysfn)
        timing[name] = round(time.perf_counter() - t, 2)

    names = list(systems)
    print(f"suite: {len(items)} items from {len(passages)} passages (built in {build_s:.1f}s)")
    for half in ("test", "dev"):
        print(f"\n[{half} half]  detection for perturbations, acceptance for the rest")
        print(f"{'type':<15}{'n':>6}" + "".join(f"{n:>12}" for n in names))
        for kind in KINDS:
            row = results[names[0]].get(half, {}).get(kind)
            if row is None:
                continue
            cells = "".join(f"{results[n][half][kind]['rate'] * 100:>11.1f}%" for n in names)
            print(f"{kind:<15}{row['n']:>6}{cells}")
    for name in names:
        for ex in misses[name][: args.examples]:
            print(f"[{name} miss] {ex['kind']}: {ex['answer']!r} ({ex['why']})")

    bar = {
        name: {
            "every_perturbation_detected_95": all(
                results[name]["test"][k]["rate"] >= 0.95 for k in PERTURBATIONS
            ),
            "paraphrases_accepted_90": all(
                results[name]["test"][k]["rate"] >= 0.90 for k in PARAPHRASES
            ),
        }
        for name in names
    }
    natural: dict[str, Any] = {}
    if args.natural:
        nat = natural_suite(Path(args.data), args.natural, args.seed)
        for name, sysfn in systems.items():
            acc: dict[str, list[bool]] = defaultdict(list)
            for it in nat:
                acc[it.kind].append(sysfn(it)[0])
            natural[name] = {
                "faithful_accepted": round(sum(acc["faithful"]) / len(acc["faithful"]), 4),
                "hallucinated_detected": round(
                    1 - sum(acc["hallucinated"]) / len(acc["hallucinated"]), 4
                ),
                "n_pairs": len(acc["faithful"]),
            }
        print("\nHaluEval summarization (real hallucinations, whole summary must pass):")
        print(f"{'system':<12}{'faithful accepted':>20}{'hallucinated detected':>24}")
        for name, row in natural.items():
            print(
                f"{name:<12}{row['faithful_accepted'] * 100:>19.1f}%"
                f"{row['hallucinated_detected'] * 100:>23.1f}%"
            )
    cov = coverage_table(items)
    print("\ncoverage threshold alone (dev half): supported claims passing / absent passing")
    for th, row in cov["thresholds"].items():
        print(
            f"  {th}: {row['supported_claims_passing'] * 100:.1f}% / "
            f"{row['absent_claims_passing'] * 100:.1f}%"
        )
    out = {
        "benchmark": "audit_perturbations",
        "coverage_threshold_dev": cov,
        "natural_halueval_summarization": natural,
        "command": "python benchmarks/audit_perturbations.py " + " ".join(argv or sys.argv[1:]),
        "data": ["halueval/qa_dev.jsonl (knowledge)", "citation_integrity/corpus.jsonl"],
        "seed": args.seed,
        "per_type_per_half": args.per_type,
        "n_items": len(items),
        "headline_half": "test",
        "metric": "perturbations: share flagged (detection); grounded/paraphrases: share accepted",
        "results": results,
        "bar": bar,
        "seconds": timing,
        "dev_misses_sample": {k: v[:25] for k, v in misses.items()},
        "python": platform.python_version(),
        "dokis_version": __import__("dokis").__version__ if dk is not None else None,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2, ensure_ascii=False), encoding="utf-8")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
