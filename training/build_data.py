"""Build train/dev JSONL for the claim verifier from ../shared/data (+ synthetic pairs).

Usage (from the project root, in the training venv):
    python training/build_data.py --data ../shared/data --out training/data --max-len 128

Writes:
    training/splits.json        held-out eval row ids (never trained on), reproducible by eval_verifier.py
    training/data/train.jsonl   {"id", "source", "claim", "evidence", "label", "n_windows"}
    training/data/dev.jsonl     same; a group-disjoint slice of the training pool, for calibration and
                                threshold tuning (never eval rows)
    training/data/stats.json    row counts per source/label

Only folders whose licence allows training a shipped model are read for training (halueval,
citation_integrity, vitaminc_sample, summac_subsets, wice). Long evidence is cut into
sentence-aligned windows that fit max_len with the claim; the window with the highest share of
the claim's content words is kept (MiniCheck-style chunk choice).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from common import (
    DEFAULT_DATA,
    Windower,
    base_model_dir,
    content_words,
    load_tokenizer,
    overlap_score,
    split_sentences,
)
from sources import Item, make_splits, train_pool

from affidavit.verify.lexical import move_time_adverbial

# ----------------------------------------------------------------------------- perturbations
AUX = r"\b(is|are|was|were|has|have|had|can|will|would|should|could|does|did|do|may|might|must)\b"
NEG_RE = re.compile(
    r"\b(is|are|was|were|has|have|had|can|will|would|should|could|does|did|do|may|might|must) not\b|\bnever\b|n't\b"
)
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
NUM_WORDS = [
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
ENT_RE = re.compile(r"(?<!^)(?<![.!?] )\b([A-Z][a-z]+(?:\s+(?:of\s+|de\s+|the\s+)?[A-Z][a-z]+)*)")
YEAR_RE = re.compile(r"\b(1[6-9]\d\d|20\d\d)\b")
NUM_RE = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\w,]*\d)")


def negate(s: str, rng: random.Random) -> str | None:
    m = NEG_RE.search(s)
    if m:
        t = m.group(0)
        if t == "never":
            rep = "always"
        elif t.endswith("n't"):
            rep = ""
            # can't -> can, won't -> will, don't -> do
            full = s[max(0, m.start() - 3) : m.end()]
            if full.endswith("won't"):
                return s[: m.start() - 2] + "will" + s[m.end() :]
            if full.endswith("can't"):
                return s[: m.start()] + s[m.end() :]
        else:
            rep = m.group(1)
        out = s[: m.start()] + rep + s[m.end() :]
        return re.sub(r"\s+", " ", out).strip()
    m = re.search(AUX, s)
    if m:
        return s[: m.end()] + " not" + s[m.end() :]
    m = re.search(r"\b(\w+ed)\b", s[1:])
    if m and len(m.group(1)) > 4:
        i = m.start() + 1
        return s[:i] + "did not " + _base_form(m.group(1)) + s[i + len(m.group(1)) :]
    return None


def _base_form(v: str) -> str:
    if v.endswith("ied"):
        return v[:-3] + "y"
    if v.endswith("ed") and len(v) > 4 and v[-3] == v[-4]:
        return v[:-3]
    if v.endswith("ed"):
        return (
            v[:-1]
            if v[-3] in "aeiouv" or v.endswith(("ated", "ized", "ised", "uced", "ored"))
            else v[:-2]
        )
    return v


def change_number(s: str, rng: random.Random) -> str | None:
    cands = [m for m in NUM_RE.finditer(s) if not YEAR_RE.fullmatch(m.group(0))]
    if cands:
        m = rng.choice(cands)
        raw = m.group(0).replace(",", "")
        if "." in raw:
            v = float(raw)
            new = f"{v * rng.choice([0.5, 1.5, 2, 0.8, 1.3]):.{len(raw.split('.')[1])}f}"
        else:
            v = int(raw)
            delta = max(1, int(v * rng.choice([0.2, 0.5, 1.0, 2.0]))) * rng.choice([-1, 1])
            nv = v + delta if v + delta > 0 else v + abs(delta)
            new = f"{nv:,}" if "," in m.group(0) else str(nv)
        if new == m.group(0):
            return None
        return s[: m.start()] + new + s[m.end() :]
    words = [w for w in NUM_WORDS if re.search(rf"\b{w}\b", s, re.I)]
    if words:
        w = rng.choice(words)
        other = rng.choice([x for x in NUM_WORDS if x != w])
        return re.sub(rf"\b{w}\b", other, s, count=1, flags=re.I)
    return None


def change_date(s: str, rng: random.Random) -> str | None:
    ys = list(YEAR_RE.finditer(s))
    months = [mo for mo in MONTHS if re.search(rf"\b{mo}\b", s)]
    if ys and (not months or rng.random() < 0.7):
        m = rng.choice(ys)
        y = int(m.group(0)) + rng.choice([-1, 1]) * rng.randint(1, 12)
        return s[: m.start()] + str(y) + s[m.end() :]
    if months:
        mo = rng.choice(months)
        return re.sub(rf"\b{mo}\b", rng.choice([x for x in MONTHS if x != mo]), s, count=1)
    return None


def swap_entity(s: str, evidence: str, other_ents: list[str], rng: random.Random) -> str | None:
    ents = [
        m for m in ENT_RE.finditer(s) if len(m.group(1)) > 3 and m.group(1).split()[0] not in MONTHS
    ]
    if not ents:
        return None
    m = rng.choice(ents)
    e = m.group(1)
    # prefer an entity from the same evidence (hard negative), else one from another row
    pool = [
        x.group(1)
        for x in ENT_RE.finditer(evidence)
        if x.group(1).split()[0] not in MONTHS
        and x.group(1) != e
        and x.group(1) not in s
        and len(x.group(1)) > 3
    ]
    if not pool or rng.random() < 0.3:
        pool = [x for x in other_ents if x != e and x not in s]
    if not pool:
        return None
    return s[: m.start(1)] + rng.choice(pool) + s[m.end(1) :]


def drop_clause(s: str, rng: random.Random) -> str | None:
    """A faithful shortening of s (entailed by it): drop a parenthetical / relative / trailing clause."""
    opts = []
    t = re.sub(r"\s*\([^()]*\)", "", s)
    if t != s:
        opts.append(t)
    t = re.sub(r",\s*(which|who|whose|where|while|although|though)\b[^,]*(,|(?=[.!?]$))", r"\2", s)
    if t != s:
        opts.append(t.replace(",.", ".").replace(" ,", ","))
    for sep in ("; ", ", and ", ", but "):
        if sep in s:
            head = s.split(sep)[0].rstrip(",;") + "."
            opts.append(head)
    opts = [
        o.strip()
        for o in opts
        if len(o.split()) >= 5
        and o.strip() != s.strip()
        and bool(NEG_RE.search(o)) == bool(NEG_RE.search(s))
    ]
    if not opts:
        return None
    return rng.choice(opts)


# ----------------------------------------------------------------------------- compressions
_COPULA = r"(is|was|are|were)"
_PARTICIPLE = (
    r"(?:\w+ed|born|built|founded|known|made|written|released|located|based|held|set|run|"
    r"owned|formed|composed|sung|drawn|shown|taken|given|won|found|seen|begun|chosen|led)"
)
# "X is an American rock band from Oklahoma that was formed in 2001 ..." -> "X was formed in 2001 ..."
_LIFT_REL = re.compile(
    rf"^(?P<subj>[A-Z][^,;()]{{1,60}}?) {_COPULA} (?:a|an|the) [^,;()]{{1,80}}? "
    r"(?:that|which|who) (?P<vp>(?:is|was|are|were|has|had|have) [^;]{8,})$"
)
# "X were an art rock group formed in 1988 by ..." -> "X were formed in 1988 by ..."
_LIFT_PART = re.compile(
    rf"^(?P<subj>[A-Z][^,;()]{{1,60}}?) (?P<cop>{_COPULA}) (?:a|an|the) [^,;()]{{1,80}}? "
    rf"(?P<vp>{_PARTICIPLE} (?:in|by|on|at|from|for|as|with|under|near) [^;]{{4,}})$"
)
# "X, a Y of Z, won the award in 1990." -> "X won the award in 1990."
_APPOSITIVE = re.compile(
    r"^(?P<subj>[A-Z][\w.'\- ]{1,50}?), (?:a|an|the) [^,;()]{2,80}?, (?P<vp>[a-z][^;]{8,})$"
)
# a trailing phrase cut before one of these words (the prefix stays a full statement)
_CUT = re.compile(r",? \b(?:by|with|in|at|on|for|from|after|during|under|near|including)\b ")
# words whose scope a cut or a lift can change ("the largest city in X" is not "the largest city")
_SCOPED = re.compile(
    r"\b(?:only|first|last|largest|smallest|biggest|most|least|best|worst|second|third|"
    r"oldest|youngest|longest|highest|lowest|all|every|each|no|none|any|some|either|neither|"
    r"if|unless|whether|than|not|never|n't|nor|without|except|former|formerly|until)\b",
    re.I,
)
_DANGLING = re.compile(
    r"\b(?:a|an|the|of|to|and|or|its|his|her|their|as|is|was|are|were|be|been|by|with|"
    r"in|at|on|for|from|that|which|who|whose|this|these|those|very|more|less)$",
    re.I,
)


def _finish(s: str) -> str:
    s = re.sub(r"\s+", " ", s).strip().rstrip(",;:")
    return s if s.endswith((".", "!", "?")) else s + "."


def compress(s: str, rng: random.Random) -> tuple[str, str] | None:
    """A shorter statement entailed by sentence ``s``, and how it was made (or None).

    ``lift``: a relative or participle clause lifted onto the subject ("X is a band that was
    formed in 2001" -> "X was formed in 2001"); ``appositive``: an appositive dropped;
    ``truncate``: a trailing phrase cut off at a preposition. Sentences with negation,
    quantifiers, superlatives or conditionals are left alone: cutting can change their meaning.
    """
    s = s.strip()
    body = s.rstrip(".!?").strip()
    if _SCOPED.search(body) or re.search(r'["\[\]]', body) or len(body.split()) < 7:
        return None
    opts: list[tuple[str, str]] = []
    m = _LIFT_REL.match(body)
    if m:
        opts.append((_finish(f"{m.group('subj')} {m.group('vp')}"), "lift"))
    m = None if opts else _LIFT_PART.match(body)
    if m:
        opts.append((_finish(f"{m.group('subj')} {m.group('cop')} {m.group('vp')}"), "lift"))
    m = _APPOSITIVE.match(body)
    if m:
        opts.append((_finish(f"{m.group('subj')} {m.group('vp')}"), "appositive"))
    cuts = [c.start() for c in _CUT.finditer(body) if len(body[: c.start()].split()) >= 5]
    if cuts:
        head = body[: rng.choice(cuts)].rstrip()
        last = head.split()[-1].lower()
        # a participle left without its complement ("is directed.", "was listed.") says little
        participle = re.fullmatch(_PARTICIPLE, last) is not None or last.endswith(("en", "ing"))
        # the kept part must state something itself: a finite verb before its last word
        finite = re.search(r"\b(?:is|was|are|were|has|had|have|\w+ed)\b", head.rsplit(" ", 1)[0])
        balanced = head.count("(") == head.count(")")
        if finite and not participle and not _DANGLING.search(head) and balanced:
            opts.append((_finish(head), "truncate"))
    # a lifted clause can itself be truncated: "X was formed in 2001 by A, B and C" -> "... in 2001"
    for text, kind in list(opts):
        if kind == "lift":
            t = text.rstrip(".")
            c2 = [c.start() for c in _CUT.finditer(t) if len(t[: c.start()].split()) >= 4]
            c2 = [c for c in c2 if not _DANGLING.search(t[:c].rstrip())]
            if c2:
                opts.append((_finish(t[: c2[-1]]), "lift"))
    opts = [(o, k) for o, k in opts if len(o.split()) >= 4 and o.rstrip(".") != body]
    if not opts:
        return None
    return rng.choice(opts)


def synthesize_compressions(rows: list[dict], rng: random.Random, n_target: int) -> list[dict]:
    """Shorter restatements of an evidence sentence, against the row's whole evidence window.

    Each is an entailed compression (:func:`compress`: a lifted clause, a dropped appositive, a
    cut trailing phrase); half of them also come as a minimal pair: the same compression with a
    number, date or name changed (or negated), labelled contradict, so that neither shortness
    nor a stated value is itself a sign of support or contradiction. Release 6 had learned both
    shortcuts: "Hinder was formed in 2001." against "Hinder is an American rock band from
    Oklahoma that was formed in 2001 by ..." scored p_contradict 0.69 (0.13 for "Hinder was
    formed by Austin Winkler.").
    """
    out: list[dict] = []
    other_ents: list[str] = []
    for r in rng.sample(rows, min(3000, len(rows))):
        other_ents += [m.group(1) for m in ENT_RE.finditer(r["evidence"]) if len(m.group(1)) > 3]
    anchors = rows[:]
    rng.shuffle(anchors)
    i = 0
    while len(out) < n_target and i < len(anchors) * 2:
        r = anchors[i % len(anchors)]
        i += 1
        sents = [x for x in split_sentences(r["evidence"]) if 7 <= len(x.split()) <= 60]
        rng.shuffle(sents)
        made = next((c for c in (compress(x, rng) for x in sents) if c is not None), None)
        if made is None:
            continue
        claim, kind = made
        pair = [(claim, kind, "entail")]
        if rng.random() < 0.5:
            # the same compression with a value or name changed (a negation last: synthetic_negation
            # has those aplenty): a minimal pair, so the model has to compare the values themselves
            edits = [change_number, change_date]
            rng.shuffle(edits)
            edited = next((e for e in (f(claim, rng) for f in edits) if e), None)
            edited = edited or swap_entity(claim, r["evidence"], other_ents, rng)
            edited = edited or negate(claim, rng)
            if edited and edited.strip() != claim.strip():
                pair.append((edited, f"{kind}_edited", "contradict"))
        for text, how, label in pair:
            out.append(
                {
                    "id": f"synth:compress_{how}:{len(out)}:{r['id']}",
                    "source": "synthetic_compress",
                    "group": r["group"],
                    "claim": text,
                    "evidence": r["evidence"],
                    "label": label,
                    "n_windows": r["n_windows"],
                    "from": f"evsent_{how}",
                }
            )
    return out


# ----------------------------------------------------------------------------- roles

# words that make two names interchangeable ("A and B won"): a swap across them keeps the meaning
_SYMMETRIC_JOIN = re.compile(r"^\s*(?:,|and|or|&|,\s*and|nor|with|/|-|–)\s*$", re.I)
_SYMMETRIC_VERB = re.compile(
    r"\b(?:married|met|partners?|together|both|tied|drew|versus|vs|between|and|with|alongside)\b",
    re.I,
)


def swap_roles(s: str) -> str | None:
    """The sentence with two of its names exchanged ("A defeated B" -> "B defeated A").

    Only where the words between the names are not a symmetric join ("A and B", "A, B") and the
    sentence has no symmetric verb ("married", "met", "with"), so the swap changes who did what.
    """
    ents = [
        m for m in ENT_RE.finditer(s) if len(m.group(1)) > 3 and m.group(1).split()[0] not in MONTHS
    ]
    names = []
    seen: set[str] = set()
    for m in ents:
        if m.group(1) not in seen:
            names.append(m)
            seen.add(m.group(1))
    if len(names) < 2 or _SYMMETRIC_VERB.search(s):
        return None
    a, b = names[0], names[1]
    between = s[a.end(1) : b.start(1)]
    if _SYMMETRIC_JOIN.match(between) or len(between.split()) > 12 or a.group(1) in b.group(1):
        return None
    return s[: a.start(1)] + b.group(1) + between + a.group(1) + s[b.end(1) :]


def synthesize_roles(rows: list[dict], rng: random.Random, n_target: int) -> list[dict]:
    """Role swaps and misattributed roles against the row's evidence (not entailed), with their
    entailed originals as minimal pairs.

    Two kinds: (1) two names of one evidence sentence exchanged ("Armstrong ... before Aldrin" ->
    "Aldrin ... before Armstrong", :func:`swap_roles`); (2) the sentence's subject replaced by
    another name *of the same evidence* ("Buzz Aldrin became the first person to step onto the
    lunar surface." against a passage naming Armstrong as first and Aldrin as second). Both are
    labelled ``not_entail`` (refuted or merely unsupported, depending on the passage): the model
    must read who did what, not which names occur.
    """
    out: list[dict] = []
    anchors = rows[:]
    rng.shuffle(anchors)
    i = 0
    while len(out) < n_target and i < len(anchors) * 2:
        r = anchors[i % len(anchors)]
        i += 1
        sents = [x for x in split_sentences(r["evidence"]) if 6 <= len(x.split()) <= 45]
        rng.shuffle(sents)
        made: tuple[str, str, str] | None = None
        for x in sents:
            swapped = swap_roles(x)
            if swapped and swapped != x and rng.random() < 0.6:
                made = (x, swapped, "role_swap")
                break
            ents = [m for m in ENT_RE.finditer(x) if len(m.group(1)) > 3]
            others = [
                m.group(1)
                for m in ENT_RE.finditer(r["evidence"])
                if len(m.group(1)) > 3
                and m.group(1) not in x
                and m.group(1).split()[0] not in MONTHS
                and not any(m.group(1) in e.group(1) or e.group(1) in m.group(1) for e in ents)
            ]
            if ents and others:
                e = ents[0]
                made = (x, x[: e.start(1)] + rng.choice(others) + x[e.end(1) :], "misattributed")
                break
        if made is None:
            continue
        orig, edited, kind = made
        compressed = compress(orig, rng)
        pair = [(orig, "entail", "original")]
        if compressed is not None and rng.random() < 0.5:
            pair = [(compressed[0], "entail", "original_compressed")]
        pair.append((edited, "not_entail", kind))
        for text, label, how in pair:
            out.append(
                {
                    "id": f"synth:roles_{how}:{len(out)}:{r['id']}",
                    "source": "synthetic_roles",
                    "group": r["group"],
                    "claim": text,
                    "evidence": r["evidence"],
                    "label": label,
                    "n_windows": r["n_windows"],
                    "from": f"evsent_{how}",
                }
            )
    return out


# ----------------------------------------------------------------------------- reorders
# "X is a United States post-punk/dream pop band from ...": the words between the article and a
# lower-case head noun, when a preposition, relative, comma or the end follows the head
_DESCRIPTION = re.compile(
    r"\b(?P<cop>is|was|are|were|became|remains|remained)\s+(?P<art>an?)\s+"
    r"(?P<mods>(?:[A-Za-z][\w/'-]*\s+){1,4}?)(?P<head>[a-z][a-z-]{2,})"
    r"(?=\s+(?:who|that|which|from|in|of|based|for|with|and|by|on)\b|\s*[,.;]|\s*$)"
)
_NOT_MODIFIER = re.compile(
    r"\b(?:a|an|the|of|and|or|is|was|are|were|very|most|more|first|second|third|last|only|"
    r"former|current|new|other|same|such|one|two|three|his|her|their|its)\b",
    re.I,
)


def _descriptions(text: str) -> list[re.Match[str]]:
    out = []
    for m in _DESCRIPTION.finditer(text):
        mods = m.group("mods").strip()
        if _NOT_MODIFIER.search(mods) or re.search(r"\d", mods):
            continue
        out.append(m)
    return out


def synthesize_attributes(rows: list[dict], rng: random.Random, n_target: int) -> list[dict]:
    """Wrong attributes: an evidence sentence's description of its subject with the modifiers
    of its head noun replaced by those another row gives the same head (not entailed), paired
    with the sentence as it stands (entailed).

    "For Against is a United States post-punk/dream pop band from Lincoln, Nebraska." becomes
    "For Against is a heavy metal band from Lincoln, Nebraska.": the model must read what the
    subject is said to be, not only that the evidence describes it with similar words. A
    replacement is used only when none of its words occurs anywhere in the row's evidence, so
    the edited claim is never stated there.
    """
    pool: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        for x in split_sentences(r["evidence"]):
            for m in _descriptions(x):
                pool[m.group("head")].append(m.group("mods").strip())
    out: list[dict] = []
    anchors = rows[:]
    rng.shuffle(anchors)
    i = 0
    while len(out) < n_target and i < len(anchors) * 2:
        r = anchors[i % len(anchors)]
        i += 1
        ev_words = {w.lower() for w in re.findall(r"[\w/'-]+", r["evidence"])}
        sents = [x for x in split_sentences(r["evidence"]) if 5 <= len(x.split()) <= 40]
        rng.shuffle(sents)
        made: tuple[str, str] | None = None
        for x in sents:
            for m in _descriptions(x):
                mods = m.group("mods").strip()
                cands = [
                    c
                    for c in set(pool.get(m.group("head"), []))
                    if c.lower() != mods.lower()
                    and not {w.lower() for w in re.findall(r"[\w/'-]+", c)} & ev_words
                ]
                if not cands:
                    continue
                repl = rng.choice(sorted(cands))
                low = repl.lower()
                vowel = low[:1] in "aeio" or (low[:1] == "u" and not low.startswith(("uni", "us")))
                art = "an" if vowel else "a"
                edited = x[: m.start("art")] + art + " " + repl + " " + x[m.start("head") :]
                made = (x, edited)
                break
            if made:
                break
        if made is None:
            continue
        orig, edited = made
        for text, label, how in ((orig, "entail", "original"), (edited, "not_entail", "attribute")):
            out.append(
                {
                    "id": f"synth:attr_{how}:{len(out)}:{r['id']}",
                    "source": "synthetic_attributes",
                    "group": r["group"],
                    "claim": text.strip(),
                    "evidence": r["evidence"],
                    "label": label,
                    "n_windows": r["n_windows"],
                    "from": f"evsent_{how}",
                }
            )
    return out


def synthesize_reorders(rows: list[dict], rng: random.Random, n_target: int) -> list[dict]:
    """Claims whose time adverbial moved, so that where a date stands says nothing of the label.

    Release 8 scored "Marie Curie discovered polonium and radium in 1898." p_entail 0.30,
    p_contradict 0.66 against "In 1898, Marie Curie discovered polonium and radium." (0.90 for
    the claim with the date in front). In the training rows a claim ending "in <year>." was
    mostly not supported (FEVER-NLI refutations, HaluEval's hallucinated answers): 340 supported
    against 1360 not. Two kinds, both against the row's own evidence window:

    * ``move``: every row (real or synthetic) whose claim has a trailing or fronted time
      adverbial, again with it moved; same label.
    * ``evsent``: an evidence sentence with its time adverbial moved, labelled entail; half of
      them also with the date changed, labelled contradict (a minimal pair: the value decides).
    """
    out: list[dict] = []

    def add(r: dict, claim: str, how: str, label: str) -> None:
        out.append(
            {
                "id": f"synth:reorder_{how}:{len(out)}:{r['id']}",
                "source": "synthetic_reorder",
                "group": r["group"],
                "claim": claim,
                "evidence": r["evidence"],
                "label": label,
                "n_windows": r["n_windows"],
                "from": how,
            }
        )

    movable = [(r, mv) for r in rows if (mv := move_time_adverbial(r["claim"])) is not None]
    rng.shuffle(movable)
    for r, (claim, how) in movable[: n_target // 2]:
        add(r, claim, f"move_{how}", r["label"])
    anchors = [r for r in rows if not r["source"].startswith("synthetic")]
    rng.shuffle(anchors)
    for r in anchors:
        if len(out) >= n_target:
            break
        sents = [x for x in split_sentences(r["evidence"]) if 6 <= len(x.split()) <= 50]
        rng.shuffle(sents)
        made = next((mv for mv in map(move_time_adverbial, sents) if mv is not None), None)
        if made is None:
            continue
        claim, how = made
        add(r, claim, f"evsent_{how}", "entail")
        if rng.random() < 0.5:
            edited = change_date(claim, rng)
            if edited and edited != claim:
                add(r, edited, f"evsent_{how}_date", "contradict")
    return out


# ----------------------------------------------------------------------------- building
def window_items(items: list[Item], win: Windower) -> list[dict]:
    out = []
    for it in items:
        ev, nwin = win.best_window(it.claim, it.evidence)
        out.append(
            {
                "id": it.id,
                "source": it.source,
                "group": it.group,
                "claim": it.claim,
                "evidence": ev,
                "label": it.label,
                "n_windows": nwin,
            }
        )
    return out


def synthesize(rows: list[dict], rng: random.Random, n_target: int) -> list[dict]:
    """Synthetic pairs from the real rows (their evidence windows and entailed claims)."""
    out: list[dict] = []
    other_ents = []
    for r in rng.sample(rows, min(3000, len(rows))):
        other_ents += [m.group(1) for m in ENT_RE.finditer(r["evidence"]) if len(m.group(1)) > 3]
    # sentence pool for lexically similar neutrals
    sent_pool: list[tuple[str, str]] = []
    for r in rows:
        for s in split_sentences(r["evidence"]):
            if 6 <= len(s.split()) <= 40:
                sent_pool.append((r["group"], s))
    inv: dict[str, list[int]] = defaultdict(list)
    for i, (_, s) in enumerate(sent_pool):
        for w in content_words(s):
            inv[w].append(i)
    df = {w: len(v) for w, v in inv.items()}

    def similar_sentence(r: dict) -> str | None:
        ew = content_words(r["evidence"])
        ev_norm = r["evidence"].lower()
        rare = sorted((w for w in ew if 2 <= df.get(w, 0) <= 400), key=lambda w: df[w])[:8]
        score: Counter[int] = Counter()
        for w in rare:
            for i in inv[w]:
                score[i] += 1
        for i, _ in score.most_common(30):
            g, s = sent_pool[i]
            cw = content_words(s)
            if g == r["group"] or s.lower() in ev_norm or not cw:
                continue
            if len(cw & ew) / len(cw) > 0.7:  # too much overlap: might well be entailed
                continue
            return s
        return None

    perturb = {"negation": negate, "number": change_number, "date": change_date}
    anchors = rows[:]
    rng.shuffle(anchors)
    kinds = [
        "negation",
        "number",
        "date",
        "entity",
        "neutral",
        "neutral",
        "extract",
        "extract",
        "extract",
        "clause",
        "clause",
        "negation",
        "entity",
        "neutral",
    ]
    i = 0
    while len(out) < n_target and i < len(anchors) * 3:
        r = anchors[i % len(anchors)]
        i += 1
        kind = kinds[i % len(kinds)]
        sents = [s for s in split_sentences(r["evidence"]) if 6 <= len(s.split()) <= 45]
        # the claim to edit: an entailed real claim, or a sentence taken from the evidence
        if r["label"] == "entail" and rng.random() < 0.4:
            base, base_kind = r["claim"], "claim"
        elif sents:
            base, base_kind = rng.choice(sents), "evsent"
        else:
            continue
        claim, label = None, None
        if kind in perturb:
            claim, label = perturb[kind](base, rng), "contradict"
        elif kind == "entity":
            claim, label = swap_entity(base, r["evidence"], other_ents, rng), "contradict"
        elif kind == "neutral":
            claim, label = similar_sentence(r), "neutral"
            base_kind = "other_row"
        elif kind == "extract":
            if base_kind == "evsent":
                claim, label = base, "entail"
        elif kind == "clause":
            claim, label = drop_clause(base, rng), "entail"
        if not claim or (claim.strip() == base.strip() and kind != "extract"):
            continue
        out.append(
            {
                "id": f"synth:{kind}:{len(out)}:{r['id']}",
                "source": f"synthetic_{kind}",
                "group": r["group"],
                "claim": claim,
                "evidence": r["evidence"],
                "label": label,
                "n_windows": r["n_windows"],
                "from": base_kind,
            }
        )
    return out


_KEY_RE = re.compile(r"\b(?:[A-Z][a-z]+|[A-Z]{2,}|\d[\d,.]*)\b")


def synthesize_topic_negatives(rows: list[dict], rng: random.Random, n_target: int) -> list[dict]:
    """Same-topic, unrelated evidence (neutral): the hard negative that must not read as support.

    A real entailed claim is paired with the evidence window of *another* group that shares the
    most of its rarer content words (what a retriever would bring back: "the University of
    Texas was founded in 1883" against a passage on the University of Virginia), provided the
    window lacks at least one of the claim's names or numbers, so it cannot state the fact.
    The label is neutral (unsupported), never contradict: unrelated evidence says nothing against
    the claim.
    """
    inv: dict[str, list[int]] = defaultdict(list)
    ev_words = []
    for i, r in enumerate(rows):
        ws = content_words(r["evidence"])
        ev_words.append(ws)
        for w in ws:
            inv[w].append(i)
    df = {w: len(v) for w, v in inv.items()}
    anchors = [r for r in rows if r["label"] == "entail"]
    rng.shuffle(anchors)
    out: list[dict] = []
    for r in anchors:
        if len(out) >= n_target:
            break
        cw = content_words(r["claim"])
        keys = {k.lower() for k in _KEY_RE.findall(r["claim"]) if k.lower() not in STOP_KEYS}
        if len(cw) < 3 or not keys:
            continue
        rare = sorted((w for w in cw if 2 <= df.get(w, 0) <= 2000), key=lambda w: df[w])[:6]
        score: Counter[int] = Counter()
        for w in rare:
            for j in inv[w]:
                score[j] += 1
        for j, _ in score.most_common(20):
            o = rows[j]
            if o["group"] == r["group"] or o["evidence"] == r["evidence"]:
                continue
            shared = len(cw & ev_words[j]) / len(cw)
            ev_low = o["evidence"].lower()
            if shared < 0.3 or all(k in ev_low for k in keys):
                continue
            out.append(
                {
                    "id": f"synth:topic:{len(out)}:{r['id']}",
                    "source": "synthetic_topic",
                    "group": r["group"],
                    "claim": r["claim"],
                    "evidence": o["evidence"],
                    "label": "neutral",
                    "n_windows": o["n_windows"],
                    "from": o["id"],
                }
            )
            break
    return out


STOP_KEYS = frozenset({"the", "a", "an", "in", "on", "it", "he", "she", "they", "this", "there"})


def synthesize_grounding(rows: list[dict], rng: random.Random, n_target: int) -> list[dict]:
    """Pairs that teach where the support is, built from the rows' own evidence windows.

    * ``deletion`` (neutral): a sentence of the evidence (or a faithful shortening of it) as the
      claim, with that sentence and every sentence sharing half of its content words removed
      from the evidence: the same document and topic, but the fact is no longer stated;
    * ``fragment`` (neutral): the claim against a content-free scrap (a few words of the
      evidence, or a short sentence of another row);
    * ``short_extract`` (entail): the claim against just the sentence that states it (alone or
      with a neighbour), so short evidence that does state the fact stays entailed;
    * ``short_contra`` (contradict): a negated or re-numbered claim against that sentence.
    """
    out: list[dict] = []
    short_pool = [
        s for r in rows[:5000] for s in split_sentences(r["evidence"]) if 1 <= len(s.split()) <= 5
    ]
    anchors = rows[:]
    rng.shuffle(anchors)
    kinds = ["deletion", "short_extract", "deletion", "fragment", "short_contra", "deletion"]
    i = 0
    while len(out) < n_target and i < len(anchors) * 2:
        r = anchors[i % len(anchors)]
        i += 1
        kind = kinds[i % len(kinds)]
        all_sents = split_sentences(r["evidence"])
        idx = [k for k, x in enumerate(all_sents) if 6 <= len(x.split()) <= 45]
        if not idx:
            continue
        k = rng.choice(idx)
        sent = all_sents[k]
        claim = sent
        if kind != "short_contra" and rng.random() < 0.3:
            claim = drop_clause(sent, rng) or sent
        cw = content_words(claim)
        if len(cw) < 3:
            continue
        if kind == "deletion":
            rest = [x for j, x in enumerate(all_sents) if j != k and overlap_score(cw, x) < 0.5]
            evidence = " ".join(rest)
            if len(rest) < 1 or len(evidence.split()) < 8 or overlap_score(cw, evidence) >= 0.6:
                continue
            label = "neutral"
        elif kind == "fragment":
            if short_pool and rng.random() < 0.5:
                evidence = rng.choice(short_pool)
            else:
                words = sent.split()
                n = rng.randint(1, 4)
                s0 = rng.randrange(0, max(1, len(words) - n))
                evidence = " ".join(words[s0 : s0 + n]).rstrip(",;:") + "."
            label = "neutral"
        elif kind == "short_extract":
            evidence = sent
            if rng.random() < 0.4 and len(all_sents) > 1:
                j = k + 1 if k + 1 < len(all_sents) else k - 1
                evidence = f"{all_sents[min(j, k)]} {all_sents[max(j, k)]}"
            label = "entail"
        else:  # short_contra
            edited = negate(sent, rng) or change_number(sent, rng)
            if not edited or edited.strip() == sent.strip():
                continue
            claim, evidence, label = edited, sent, "contradict"
        out.append(
            {
                "id": f"synth:{kind}:{len(out)}:{r['id']}",
                "source": f"synthetic_{kind}",
                "group": r["group"],
                "claim": claim,
                "evidence": evidence,
                "label": label,
                "n_windows": 1,
                "from": "evsent",
            }
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "data")
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument(
        "--halueval-rows",
        type=int,
        default=2500,
        help="training rows kept per HaluEval file (each gives 2 pairs)",
    )
    ap.add_argument("--synthetic", type=int, default=12000)
    ap.add_argument(
        "--grounding",
        type=int,
        default=9000,
        help="synthetic deletion/fragment/short-evidence pairs (synthesize_grounding)",
    )
    ap.add_argument(
        "--topic-negatives",
        type=int,
        default=6000,
        help="same-topic unrelated evidence pairs, neutral (synthesize_topic_negatives)",
    )
    ap.add_argument(
        "--snli-rows",
        type=int,
        default=8000,
        help="SNLI rows kept (of 19.7k: short captions, the farthest from our domain)",
    )
    ap.add_argument(
        "--compressions",
        type=int,
        default=0,
        help="synthetic compressions of evidence sentences (entail), half of them paired with "
        "an edited copy (contradict) (synthesize_compressions; release 8)",
    )
    ap.add_argument(
        "--reorders",
        type=int,
        default=0,
        help="claims with their time adverbial moved (same label), and evidence sentences so "
        "moved (entail, half paired with a changed date) (synthesize_reorders; release 9)",
    )
    ap.add_argument(
        "--roles",
        type=int,
        default=0,
        help="role swaps and misattributed names (not_entail), each with its entailed original "
        "(synthesize_roles; the MPNet release)",
    )
    ap.add_argument(
        "--attributes",
        type=int,
        default=0,
        help="wrong attributes (not_entail), each with its entailed original "
        "(synthesize_attributes: the modifiers of a described head noun replaced)",
    )
    ap.add_argument("--no-extra", action="store_true", help="leave out verification_extra")
    ap.add_argument("--dev-frac", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=13)
    args = ap.parse_args()

    rng = random.Random(args.seed)
    splits = make_splits(args.data)
    (Path(__file__).resolve().parent / "splits.json").write_text(json.dumps(splits, indent=1))

    pool = list(train_pool(args.data, splits, extra=not args.no_extra))
    snli = [it for it in pool if it.source == "x_snli"]
    if len(snli) > args.snli_rows:
        keep_snli = {it.id for it in random.Random(args.seed).sample(snli, args.snli_rows)}
        pool = [it for it in pool if it.source != "x_snli" or it.id in keep_snli]
    # subsample HaluEval groups (rows) to keep the data within the CPU training budget
    by_src: dict[str, list[str]] = defaultdict(list)
    for it in pool:
        if it.source.startswith("halueval") and it.group not in by_src[it.source]:
            by_src[it.source].append(it.group)
    keep_groups = set()
    for src, groups in by_src.items():
        keep_groups |= set(
            random.Random(args.seed).sample(groups, min(args.halueval_rows, len(groups)))
        )
    pool = [it for it in pool if not it.source.startswith("halueval") or it.group in keep_groups]

    # overlap 0.5 only changes which candidate windows exist; training keeps the single best one
    win = Windower(load_tokenizer(base_model_dir() / "tokenizer.json"), args.max_len, overlap=0.5)
    rows = window_items(pool, win)
    groups = sorted({r["group"] for r in rows})
    dev_groups = set(random.Random(args.seed + 1).sample(groups, int(args.dev_frac * len(groups))))
    train_rows = [r for r in rows if r["group"] not in dev_groups]
    dev_rows = [r for r in rows if r["group"] in dev_groups]
    n_dev_syn = int(args.synthetic * args.dev_frac)
    train_rows += synthesize(train_rows, random.Random(args.seed + 2), args.synthetic)
    dev_rows += synthesize(dev_rows, random.Random(args.seed + 3), n_dev_syn)
    # drawn from the real rows only (the list above also holds the first synthetic pairs)
    real_train = [r for r in train_rows if not r["source"].startswith("synthetic")]
    real_dev = [r for r in dev_rows if not r["source"].startswith("synthetic")]
    train_rows += synthesize_grounding(real_train, random.Random(args.seed + 4), args.grounding)
    dev_rows += synthesize_grounding(
        real_dev, random.Random(args.seed + 5), int(args.grounding * args.dev_frac)
    )
    train_rows += synthesize_topic_negatives(
        real_train, random.Random(args.seed + 6), args.topic_negatives
    )
    dev_rows += synthesize_topic_negatives(
        real_dev, random.Random(args.seed + 7), int(args.topic_negatives * args.dev_frac)
    )
    if args.compressions:
        train_rows += synthesize_compressions(
            real_train, random.Random(args.seed + 8), args.compressions
        )
        dev_rows += synthesize_compressions(
            real_dev, random.Random(args.seed + 9), int(args.compressions * args.dev_frac)
        )
    if args.roles:
        train_rows += synthesize_roles(real_train, random.Random(args.seed + 12), args.roles)
        dev_rows += synthesize_roles(
            real_dev, random.Random(args.seed + 13), int(args.roles * args.dev_frac)
        )
    if args.attributes:
        train_rows += synthesize_attributes(
            real_train, random.Random(args.seed + 14), args.attributes
        )
        dev_rows += synthesize_attributes(
            real_dev, random.Random(args.seed + 15), int(args.attributes * args.dev_frac)
        )
    if args.reorders:
        # drawn from every row so far: the date's place must say nothing in any source
        train_rows += synthesize_reorders(train_rows, random.Random(args.seed + 10), args.reorders)
        dev_rows += synthesize_reorders(
            dev_rows, random.Random(args.seed + 11), int(args.reorders * args.dev_frac)
        )
    rng.shuffle(train_rows)
    rng.shuffle(dev_rows)

    args.out.mkdir(parents=True, exist_ok=True)
    stats: dict = {"max_len": args.max_len, "args": {k: str(v) for k, v in vars(args).items()}}
    for name, rs in (("train", train_rows), ("dev", dev_rows)):
        with open(args.out / f"{name}.jsonl", "w", encoding="utf-8") as fh:
            for r in rs:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        c: Counter[str] = Counter(f"{r['source']}|{r['label']}" for r in rs)
        stats[name] = {
            "total": len(rs),
            "by_source_label": dict(sorted(c.items())),
            "windowed_rows": sum(1 for r in rs if r["n_windows"] > 1),
        }
    (args.out / "stats.json").write_text(json.dumps(stats, indent=1))
    print(json.dumps({k: stats[k]["total"] for k in ("train", "dev")}))
    for k, v in stats["train"]["by_source_label"].items():
        print(f"  {k:45s} {v}")


if __name__ == "__main__":
    main()
