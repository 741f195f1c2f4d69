"""Typed consistency checks between a claim and its evidence: deterministic, fast, model-free.

Lexical matching says a claim and a passage share words; these checks say whether the claim's
numbers, units, dates, names, polarity and comparatives agree with the passage. They are the
first stage of the verifier cascade and the reason the audit catches "Paris is not the capital
of France" or a wrong year that shares every other word with its source.

Each check returns ``pass`` (the claim's values are found in the evidence), ``fail`` (a value
disagrees with, or is absent from, the evidence; the reason says which, in plain words) or
``not_applicable`` (the claim states nothing of that type). Checks are built for precision: a
paraphrase that keeps the facts passes (reordering, dropped clauses, synonyms, "95 billion" for
"$95B", "10 miles" for "16 km").

Examples:
    >>> r = run_checks("The tower was finished in 1925.", "The tower was finished in 1889.")
    >>> [x.reason for x in r if x.status == "fail"]
    ['the year 1925 disagrees with 1889 in the evidence']
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from affidavit.core.types import CheckName, CheckResult
from affidavit.verify.lexical import (
    FILLER,
    STOPWORDS,
    WORD_RE,
    content_stems,
    sentence_spans,
    stem,
    unasserted_restatement,
)
from affidavit.verify.numbers import (
    MONTHS,
    Citation,
    DateMention,
    Quantity,
    describe_quantity,
    find_citations,
    find_dates,
    find_quantities,
)
from affidavit.verify.places import wrong_place

CHECK_NAMES: tuple[CheckName, ...] = ("number", "unit", "date", "entity", "polarity", "comparative")

# Latin look-alikes (Unicode's confusables, the letters that render the same in common fonts):
# "nоt" (Cyrillic o) must read as "not", "Рierre" as "Pierre"
_CONFUSABLES = str.maketrans(
    {
        **dict(zip("аеорсухіјѕԁһ", "aeopcyxijsdh", strict=True)),
        **dict(zip("АВЕКМНОРСТХІЈЅҮ", "ABEKMHOPCTXIJSY", strict=True)),
        **dict(zip("οαικνρυχ", "oaiknpux", strict=True)),
        **dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧ", "ABEZHIKMNOPTYX", strict=True)),
        # Armenian, dotless i and j, and small capitals (read as capitals: "ɴᴏᴛ" is "NOT")
        **dict(zip("օսհոՕՍıȷ", "ouhnOUij", strict=True)),
        **dict(zip("ᴀʙᴄᴅᴇꜰɢʜɪᴊᴋʟᴍɴᴏᴘʀꜱᴛᴜᴠᴡʏᴢ", "ABCDEFGHIJKLMNOPRSTUVWYZ", strict=True)),
    }
)

# invisible characters that are not format characters (Cf), so dropping Cf missed them:
# combining grapheme joiner, Hangul fillers (NFKC turns U+3164 and U+FFA0 into U+1160), Khmer
# inherent vowels, Mongolian variation selectors and the variation selectors ("n\ufe0fot")
_INVISIBLE = frozenset(
    (
        *(0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5),
        *range(0x180B, 0x1810),
        *range(0xFE00, 0xFE10),
        *range(0xE0100, 0xE01F0),
    )
)


def fold_for_checks(text: str) -> str:
    """The text as the typed checks read it: NFKC (fullwidth letters, superscript digits and
    ligatures become plain ones), format and other invisible characters removed (zero-width
    joiners and spaces, soft hyphens, direction marks, variation selectors, Hangul fillers:
    "n‍o‍t" is "not"), and Latin look-alike letters from Cyrillic, Greek and Armenian, and
    small capitals, folded to Latin. Both claim and evidence are folded the same way,
    so text genuinely in those scripts still compares equal to itself.

    Examples:
        >>> fold_for_checks("was n‍o‍t found in ¹⁹²⁵ by Рierre")
        'was not found in 1925 by Pierre'
    """
    text = unicodedata.normalize("NFKC", text)
    text = "".join(
        ch for ch in text if unicodedata.category(ch) != "Cf" and ord(ch) not in _INVISIBLE
    )
    # a tokenised amount "£50, 000" is "£50,000" (a list "5, 000" without a currency sign is
    # left alone)
    text = _SPACED_THOUSANDS.sub(lambda m: m.group(0).replace(", ", ","), text)
    return text.translate(_CONFUSABLES)


_SPACED_THOUSANDS = re.compile(r"[$£€¥]\s?\d{1,3}(?:, \d{3})+(?![\d.,]\d)")


# --------------------------------------------------------------------------- numbers and units


def _comparable(a: Quantity, b: Quantity) -> bool:
    """Two quantities that state the same kind of thing: the same unit dimension, or two bare
    numbers counting the same word ("seven *children*" / "eight *children*"; an age "42," is
    not comparable with "seven children")."""
    if a.dimension == "ordinal" and b.dimension == "ordinal":
        # a rank says which of something: "the 9th *grade*" does not rank what "the first
        # *time*" does (a context is the word after it, unknown at the end of a text)
        return not a.context or not b.context or a.context == b.context
    if a.dimension or b.dimension:
        # an age ("the 30-year-old") and a length of time ("after 30 minutes") state different
        # things, so a window with only the second still sends the first to the whole passage
        return a.dimension == b.dimension and _is_age(a) == _is_age(b)
    return a.context == b.context


def _found(cq: Quantity, pool: Sequence[Quantity], years: frozenset[int] = frozenset()) -> bool:
    """Is the claim quantity stated in the pool?

    A quantity with a unit must agree with the pool's quantities of that dimension when there
    are any ("5 hours" is not licensed by a bare "Five" in a name); a bare number may also match
    a number with a unit written the same ("95 billion" / "$95B") or a year ("2,000" / "2000").
    """
    if _is_age(cq):
        # an age is stated as an age or a span of the same years ("the 30-year-old", "20,000
        # years ago"), or as a bare number ("Obraniak, 30,") where the evidence states no other
        # age ("30 people ... the 45-year-old" does not state the 30-year-old); "after 30
        # minutes" is no age
        if any(e.dimension == "time" and cq.matches(e) for e in pool):
            return True
        if any(_is_age(e) for e in pool):
            return False
        return any(not e.dimension and abs(e.magnitude - cq.magnitude) < 1e-9 for e in pool)
    same = [e for e in pool if e.dimension == cq.dimension]
    if any(cq.matches(e) for e in same):
        return True
    if cq.dimension and same:
        return False
    if any(cq.matches(e) for e in pool if e.dimension != cq.dimension):
        return True
    return not cq.dimension and cq.value in years


# a claim that adds up what the evidence gives separately: "two million followers *between
# them*" against "Jay has 735,000 followers and Alexis 1.1million"
_TOTAL_CUE = re.compile(
    r"\b(?:between them|between the two|combined|in total|in all|altogether|all told|"
    r"a total of|together(?:,)? (?:they|we|the two))\b",
    re.IGNORECASE,
)


def _sum_found(cq: Quantity, pool: Sequence[Quantity]) -> bool:
    """Is the claim quantity the sum of two of the pool's, of its own kind?"""
    same = [
        e for e in pool if e.dimension == cq.dimension and e.dimension != "ordinal" and e.value > 0
    ]
    for i, a in enumerate(same):
        for b in same[i + 1 :]:
            total = replace(
                a,
                value=a.value + b.value,
                magnitude=a.magnitude + b.magnitude,
                tolerance=max(a.tolerance, b.tolerance),
            )
            if cq.matches(total) or total.matches(cq):
                return True
    return False


def check_numbers(
    claim_q: Sequence[Quantity],
    ev_q: Sequence[Quantity],
    window_q: Sequence[Quantity] | None = None,
    years: frozenset[int] = frozenset(),
    totals: bool = False,
) -> tuple[CheckResult, CheckResult]:
    """Number and unit checks: every claim quantity must equal an evidence quantity.

    Equality is after scale and unit conversion, within rounding (see ``Quantity.matches``).
    The evidence window closest to the claim (``window_q``) is asked first: when it states a
    comparable quantity that disagrees, the claim fails even if the same value happens to occur
    elsewhere in a long passage. A quantity whose number appears with another unit fails the
    unit check.
    """
    if not claim_q:
        na = "the claim states no number"
        return _na("number", na), _na("unit", "the claim states no unit")
    num_fail: CheckResult | None = None
    unit_fail: CheckResult | None = None
    unit_seen = False
    near = list(window_q) if window_q is not None else list(ev_q)
    for cq in claim_q:
        if cq.dimension and cq.dimension != "ordinal":
            unit_seen = True
        if _found(cq, near, years):
            continue
        near_comparable = [eq for eq in near if _comparable(cq, eq)]
        if not near_comparable and _found(cq, ev_q, years):
            continue
        if totals and len(ev_q) <= 60 and _sum_found(cq, ev_q):
            continue  # a total the claim says it adds up (`_TOTAL_CUE`)
        scope = near if near_comparable else ev_q
        same_number = [
            eq
            for eq in scope
            if (eq.dimension and cq.dimension and eq.dimension != cq.dimension)
            or (eq.dimension == cq.dimension and eq.unit != cq.unit and cq.dimension)
        ]
        same_number = [
            eq
            for eq in same_number
            if abs(eq.magnitude - cq.magnitude) < 1e-9 and _is_age(eq) == _is_age(cq)
        ]
        if same_number and unit_fail is None:
            eq = same_number[0]
            unit_fail = CheckResult(
                check="unit",
                status="fail",
                reason=(
                    f"the unit of {describe_quantity(cq)} disagrees with "
                    f"{describe_quantity(eq)} in the evidence"
                ),
                claim_value=describe_quantity(cq),
                evidence_value=describe_quantity(eq),
            )
            continue
        if num_fail is None:
            comparable = [
                eq
                for eq in scope
                if (not cq.dimension or not eq.dimension or eq.dimension == cq.dimension)
                # a rank and a count never disagree ("9th-grade students" / "Audrey, 14,"),
                # and two ranks only when they rank the same thing
                and ("ordinal" not in (cq.dimension, eq.dimension) or _comparable(cq, eq))
                # two bare numbers only when they count the same thing: a score "2-1 at
                # Selhurst" does not disagree with an age "18 at the time"
                and (cq.dimension or eq.dimension or _comparable(cq, eq))
                # a bare number that says what it counts ("six *games*") is no amount of money
                # or distance ("£60million"); "revenue was 90 billion." may be
                and not (not cq.dimension and eq.dimension and cq.context)
                and not (cq.dimension and not eq.dimension and eq.context)
                # an age ("the 30-year-old") is no length of time ("after 30 minutes")
                and _is_age(eq) == _is_age(cq)
            ]
            if comparable:
                # prefer the evidence value of the same dimension, then the closest in size
                same_dim = [e for e in comparable if e.dimension == cq.dimension]
                pool = same_dim or comparable
                eq = min(pool, key=lambda e: abs(_log_ratio(e.value, cq.value)))
                num_fail = CheckResult(
                    check="number",
                    status="fail",
                    reason=(
                        f"the number {describe_quantity(cq)} disagrees with "
                        f"{describe_quantity(eq)} in the evidence"
                    ),
                    claim_value=describe_quantity(cq),
                    evidence_value=describe_quantity(eq),
                )
            else:
                num_fail = CheckResult(
                    check="number",
                    status="fail",
                    reason=f"the number {describe_quantity(cq)} does not appear in the evidence",
                    claim_value=describe_quantity(cq),
                )
    numbers = num_fail or CheckResult(
        check="number",
        status="pass",
        reason="every number in the claim is in the evidence",
        claim_value=", ".join(describe_quantity(q) for q in claim_q),
    )
    if unit_fail is not None:
        units = unit_fail
    elif unit_seen:
        units = CheckResult(check="unit", status="pass", reason="units agree with the evidence")
    else:
        units = _na("unit", "the claim states no unit")
    return numbers, units


def _is_age(q: Quantity) -> bool:
    return q.dimension == "time" and q.context == "old"


def _log_ratio(a: float, b: float) -> float:
    import math

    if a == 0 or b == 0 or (a < 0) != (b < 0):
        return abs(a - b) + 1e6
    return math.log(abs(a) / abs(b))


# --------------------------------------------------------------------------- dates


_SEASON_RAW = re.compile(r"^\d{4}[-–]\d{2}$")


def _season_years(d: DateMention) -> tuple[int, int] | None:
    """The two calendar years of a season or academic year ("1996-97"), else None."""
    if d.year is None or d.month is not None or not _SEASON_RAW.match(d.raw):
        return None
    return d.year, d.year + 1


def _date_compatible(c: DateMention, e: DateMention) -> bool:
    """True when the evidence date states (at least) everything the claim date states.

    A season ("1996-97") and a year it spans ("1997") do not disagree: the tournament of the
    1996-97 season is "the 1997 tournament" as often as not.
    """
    c_season, e_season = _season_years(c), _season_years(e)
    if c_season is not None or e_season is not None:
        if c_season is not None and e_season is not None:
            return c_season == e_season
        season, other = (c_season, e) if c_season is not None else (e_season, c)
        assert season is not None
        bare = other.month is None and other.day is None and not other.decade
        return bare and other.year in season
    if c.decade:
        if e.year is None:
            return False
        return e.year // 10 == c.year // 10 if c.year is not None else False
    if e.decade:
        return False
    for field in ("year", "month", "day"):
        cv = getattr(c, field)
        if cv is not None and getattr(e, field) != cv:
            return False
    return True


date_compatible = _date_compatible


def _same_year_conflict(c: DateMention, e: DateMention) -> bool:
    """The evidence date has the claim date's year and states a month or day it contradicts."""
    if c.year is None or e.year != c.year or c.decade or e.decade:
        return False
    return any(
        getattr(c, f) is not None and getattr(e, f) is not None and getattr(c, f) != getattr(e, f)
        for f in ("month", "day")
    )


def check_dates(
    claim_d: Sequence[DateMention],
    ev_d: Sequence[DateMention],
    ev_q: Sequence[Quantity] = (),
) -> CheckResult:
    """Every date, year, month or decade of the claim must be stated by the evidence.

    A bare year-like number in the claim also matches the same number in the evidence written
    as a quantity ("more than 2000 species" / "2,000 species").
    """
    if not claim_d:
        return _na("date", "the claim states no date")
    for cd in claim_d:
        if any(_date_compatible(cd, ed) for ed in ev_d):
            continue
        if cd.is_bare_year and any(not q.dimension and q.value == cd.year for q in ev_q):
            continue
        if _dated_by_context(cd, ev_d):
            continue
        what = _date_kind(cd)
        partial = next((ed for ed in ev_d if _date_compatible(ed, cd)), None)
        conflicts = [ed for ed in ev_d if _same_year_conflict(cd, ed)]
        if partial is not None and partial.day is not None:
            # the evidence gives the claim's day and month: a date of that year in another
            # month is another event ("on November 2" beside "19 October 2004")
            conflicts = [ed for ed in conflicts if ed.month == cd.month]
        if partial is not None and not conflicts:
            # the evidence states part of the claim's date and nothing against the rest: "June"
            # for "June 2019" (beside a dateline of another year), "2002" for "30 April 2002".
            # What it leaves out is missing, not contradicted.
            return CheckResult(
                check="date",
                status="fail",
                reason=(
                    f"the {what} {cd.describe()} is more specific than "
                    f"{partial.describe()} in the evidence"
                ),
                claim_value=cd.describe(),
            )
        # the most informative conflicting evidence date: same kind of statement first
        pool = [ed for ed in ev_d if (ed.year is not None) == (cd.year is not None)] or list(ev_d)
        if cd.year is not None:
            pool = [ed for ed in pool if ed.year is not None] or pool
        if pool:
            ed = _closest_date(cd, pool)
            reason = f"the {what} {cd.describe()} disagrees with {ed.describe()} in the evidence"
            return CheckResult(
                check="date",
                status="fail",
                reason=reason,
                claim_value=cd.describe(),
                evidence_value=ed.describe(),
            )
        return CheckResult(
            check="date",
            status="fail",
            reason=f"the {what} {cd.describe()} does not appear in the evidence",
            claim_value=cd.describe(),
        )
    return CheckResult(
        check="date",
        status="pass",
        reason="every date in the claim is in the evidence",
        claim_value=", ".join(d.describe() for d in claim_d),
    )


def check_citations(claim_text: str, evidence_text: str) -> CheckResult | None:
    """A failing date check when the claim cites an author with a year the evidence never gives
    that author but gives another ("Chen et al., 2008" beside "Chen et al., 2020"), else None.

    A citation year states no date (it names a paper), so an author the evidence does not cite
    says nothing either way: a claim may cite a paper its evidence does not.

    Examples:
        >>> check_citations("It rose (Chen et al., 2008).", "It rose (Chen et al., 2020).").reason
        'the citation Chen et al., 2008 disagrees with Chen et al., 2020 in the evidence'
        >>> check_citations("It rose (Chen et al., 2008).", "It rose (Qin et al., 2020).") is None
        True
    """
    cited = find_citations(claim_text)
    if not cited:
        return None
    given: dict[str, list[Citation]] = {}
    for c in find_citations(evidence_text):
        given.setdefault(c.key, []).append(c)
    for c in cited:
        others = given.get(c.key, [])
        if others and all(o.year != c.year for o in others):
            closest = min(others, key=lambda o: abs(o.year - c.year))
            return CheckResult(
                check="date",
                status="fail",
                reason=f"the citation {c.text} disagrees with {closest.text} in the evidence",
                claim_value=c.text,
                evidence_value=closest.text,
            )
    return None


def _dated_by_context(c: DateMention, ev_d: Sequence[DateMention]) -> bool:
    """The evidence states the claim date's day and month without a year, after a date of the
    claim's year that dates the text (a dateline, a byline, a publication date): "eMOTIVe hits
    stores on Election Day, November 2" in a page published on 19 October 2004 states 2
    November 2004; "on April 9th", in an article of 22 February 2011, 9 April 2011. A date of
    that year in the same month but on another day leaves it open.

    Examples:
        >>> from affidavit.verify.numbers import find_dates
        >>> claim = find_dates("released on November 2, 2004")[0]
        >>> _dated_by_context(claim, find_dates("Published 2004-10-19. Out on November 2."))
        True
        >>> _dated_by_context(claim, find_dates("Published 2001-10-19. Out on November 2."))
        False
        >>> _dated_by_context(claim, find_dates("Out on November 2. Shown on 9 November 2004."))
        False
        >>> _dated_by_context(claim, find_dates("Out in November. Published 2004-10-19."))
        False
        >>> _dated_by_context(claim, find_dates("Out on November 2. Published 2004-10-19."))
        False
    """
    if c.year is None or c.month is None or c.day is None or c.decade:
        return False
    partial = [e for e in ev_d if e.year is None and e.month == c.month and e.day == c.day]
    if not partial:
        return False
    # the text's own date comes first (a dateline, a byline, a page's publication date) and
    # names a day; a year mentioned in passing dates nothing
    dateline = [
        e
        for e in ev_d
        if e.year == c.year
        and e.month is not None
        and e.day is not None
        and not e.decade
        and e.start < partial[0].start
    ]
    same_year = [e for e in ev_d if e.year == c.year and e.month is not None and not e.decade]
    return bool(dateline) and not any(
        e.month == c.month and e.day is not None and e.day != c.day for e in same_year
    )


def _date_kind(d: DateMention) -> str:
    if d.decade:
        return "decade"
    if d.day is not None:
        return "date"
    if d.month is not None and d.year is None:
        return "month"
    if d.month is not None:
        return "month"
    return "year"


def _closest_date(c: DateMention, pool: Sequence[DateMention]) -> DateMention:
    def dist(e: DateMention) -> float:
        if c.year is not None and e.year is not None:
            return abs(c.year - e.year) * 400 + abs((c.month or 0) - (e.month or 0)) * 31
        return abs((c.month or 0) - (e.month or 0)) * 31 + abs((c.day or 0) - (e.day or 0))

    return min(pool, key=dist)


# --------------------------------------------------------------------------- entities

_CAP_RE = re.compile(r"\b[A-Z][A-Za-z0-9\u00C0-\u024F'’\-]*|\b[A-Z]{2,}\b")
_NON_NAMES = frozenset(
    {m.capitalize() for m in MONTHS}
    | {
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
        "I",
        "Mr",
        "Mrs",
        "Ms",
        "Dr",
        "Prof",
        "Sir",
        "St",
        "Mt",
        "AD",
        "BC",
        "CE",
        "BCE",
    }
)
# sentence-initial words that are ordinary words even though capitalised
_STARTERS = frozenset(
    [
        "today",
        "originally",
        "currently",
        "later",
        "earlier",
        "finally",
        "first",
        "second",
        "third",
        "also",
        "however",
        "yes",
        "no",
        "after",
        "before",
        "during",
        "since",
        "following",
        "according",
        "although",
        "though",
        "despite",
        "born",
        "founded",
        "located",
        "based",
        "situated",
        "built",
        "established",
        "released",
        "published",
        "created",
        "written",
        "directed",
        "produced",
        "known",
        "considered",
        "described",
        "called",
        "named",
        "several",
        "many",
        "most",
        "some",
        "both",
        "each",
        "overall",
        "initially",
        "subsequently",
        "eventually",
        "meanwhile",
        "together",
    ]
)


# after a sentence-initial capitalised word, these make it read as a subject name
_SUBJECT_NEXT = frozenset(
    [
        "is",
        "was",
        "are",
        "were",
        "has",
        "have",
        "had",
        "will",
        "would",
        "can",
        "could",
        "may",
        "might",
        "shall",
        "should",
        "does",
        "did",
        "and",
        "or",
        "of",
        "'s",
        "became",
        "becomes",
        "remains",
        "remained",
        "won",
        "lost",
        "played",
        "wrote",
        "founded",
        "said",
        "says",
        "announced",
        "released",
        "reported",
        "serves",
        "served",
        "owns",
        "owned",
    ]
)


@lru_cache(maxsize=4096)
def _entity_tokens(text: str) -> list[tuple[str, bool]]:
    """Capitalised tokens with a flag 'sentence-initial and reads like an ordinary word'.

    A capitalised first word is taken as a name only when the next word is capitalised too
    ("New York ...") or reads like its verb ("Mumbai is ..."); "Rather than ..." is not a name.
    """
    out: list[tuple[str, bool]] = []
    for a, b in sentence_spans(text) or [(0, len(text))]:
        sent = text[a:b]
        first = True
        for m in _CAP_RE.finditer(sent):
            tok = m.group(0).strip("-'’")
            if tok.endswith(("'s", "’s")):
                tok = tok[:-2]
            # first word of the sentence: only the very first token (quotes/brackets skipped)
            initial = first and not sent[: m.start()].strip(" \"'([“‘")
            first = False
            if len(tok) < 2 or tok in _NON_NAMES:
                continue  # single capitals are unit letters ("°F") or initials
            ordinary = False
            if initial:
                nxt = re.match(r"(['’]s\b|[\s]+[\w']+)", sent[m.end() :])
                nw = nxt.group(0).strip() if nxt else ""
                lw = tok.lower()
                ordinary = (
                    lw in _STARTERS
                    or lw.endswith("ly")
                    or not (nw[:1].isupper() or nw.lower() in _SUBJECT_NEXT)
                )
            out.append((tok, ordinary))
    return out


@dataclass(frozen=True)
class _EvidenceWords:
    words: frozenset[str]
    stems: frozenset[str]
    prefix_lengths: dict[str, frozenset[int]]


@lru_cache(maxsize=4096)
def _evidence_words(evidence: str) -> _EvidenceWords:
    wl = _lower_words(evidence)
    ws = set(wl) | {w[:-2] for w in wl if w.endswith("'s")}
    ws |= {part for w in wl if "'" in w for part in w.split("'") if part}  # "d'Assise"
    pl: dict[str, set[int]] = {}
    for w in ws:
        if len(w) >= 5:
            pl.setdefault(w[:5], set()).add(len(w))
    return _EvidenceWords(
        frozenset(ws),
        frozenset(stem(w) for w in wl),
        {k: frozenset(v) for k, v in pl.items()},
    )


def _present(token: str, ev: _EvidenceWords) -> bool:
    lw = token.lower().replace("’", "'")
    if lw in ev.words or stem(lw) in ev.stems:
        return True
    if "-" in lw and all(p in ev.words for p in lw.split("-") if p):
        return True
    # demonyms and inflections: "American" / "America", "Canadians" / "Canada"
    if len(lw) < 6:
        return False
    return any(abs(n - len(lw)) <= 3 for n in ev.prefix_lengths.get(lw[:5], ()))


# two or more capitalised words inside a sentence: a name even when its words are common ones
# ("... and Can Be", "by Take That"); a sentence-initial run is not matched (lookbehind)
_CAP_RUN = re.compile(r"(?<=[a-z0-9,;:]\s)[A-Z][a-z'’]+(?:\s+[A-Z][a-z'’]+)+")


# a name made of a proper name and a word for its kind ("Latah County", "Hudson River"): two
# such names with the same kind word are different places, whatever words they share
_KINDS = (
    "County|Parish|Province|District|Township|Borough|Prefecture|River|Lake|Island|"
    "University|College|Airport|Stadium"
)
_KIND_NAME = re.compile(rf"((?:(?:St|Mt|Ft)\.\s+|[A-Z][\w'’\-]*\s+){{1,3}})({_KINDS})\b")
_KIND_SKIP = frozenset({"The", "A", "An", "In", "At", "Of", "From", "To", "And", "Its", "Their"})


def _kind_names(text: str) -> list[tuple[str, str]]:
    """``(name, kind)`` for each "<Proper Name> <Kind>" in ``text`` ("Idaho County")."""
    out = []
    for m in _KIND_NAME.finditer(text):
        words = m.group(1).split()
        while words and words[0] in _KIND_SKIP:
            words = words[1:]
        if words:
            out.append((" ".join([*words, m.group(2)]), m.group(2)))
    return out


def _wrong_kind_name(claim: str, evidence: str) -> tuple[str, list[str]] | None:
    """``(claim_name, evidence_names)`` when the claim names "<X> County" (or another kind) that
    the evidence does not, while the evidence names another of that kind; None otherwise."""
    flat = " ".join(evidence.split()).lower()
    rivals: dict[str, list[str]] | None = None
    for name, kind in _kind_names(claim):
        if name.lower() in flat:
            continue
        if rivals is None:
            rivals = {}
            for n, k in _kind_names(evidence):
                rivals.setdefault(k, []).append(n)
        others = [n for n in dict.fromkeys(rivals.get(kind, ())) if n.lower() != name.lower()]
        if others:
            return name, others
    return None


def check_entities(claim: str, evidence: str) -> CheckResult:
    """Names in the claim (capitalised, not sentence-initial common words) must be in the evidence.

    Applies only when the evidence shares other content with the claim (it is about the same
    thing); otherwise the lexical confidence, not this check, says the evidence does not match.
    """
    tokens = _entity_tokens(claim)
    in_runs = {w for m in _CAP_RUN.finditer(claim) for w in m.group(0).split()}
    names: list[str] = []
    for tok, ordinary in tokens:
        if ordinary or (tok.lower() in STOPWORDS and not tok.isupper() and tok not in in_runs):
            continue
        names.append(tok)
    if not names:
        return _na("entity", "the claim names no entity")
    plain = _word_set(evidence)
    # fast path: every name is in the evidence word for word (the common case)
    missing = [n for n in names if n.lower().replace("’", "'") not in plain]
    if missing:
        ev = _evidence_words(evidence)
        if not _stem_set(claim) & ev.stems:
            return _na("entity", "the evidence is about something else")
        missing = [n for n in missing if not _present(n, ev)]
    if not missing:
        named = _wrong_kind_name(claim, evidence)
        if named is not None:
            # every word is in the evidence, not the name: "Idaho County" against a passage
            # that names Latah County and the state of Idaho
            name, rival_names = named
            listed = ", ".join(rival_names)
            return CheckResult(
                check="entity",
                status="fail",
                reason=f"the claim names {name}; the evidence names {listed} instead",
                claim_value=name,
                evidence_value=listed,
            )
    if missing:
        placed = wrong_place(claim, evidence)
        if placed is not None:
            # a country or state the evidence never names, where it names another: the claim
            # puts it in the wrong place ("Paris is in Germany." against "... capital of
            # France."). Decisive, but as unsupported: the evidence says where, not where not.
            where, rivals = placed
            others = ", ".join(dict.fromkeys(q.name for q in rivals))
            return CheckResult(
                check="entity",
                status="fail",
                reason=f"the claim names {where.name}; the evidence names {others} instead",
                claim_value=where.name,
                evidence_value=others,
            )
        # a sentence-initial capitalised word missing from the evidence is a name unless the
        # rest of the claim's names are all present and it looks like an ordinary word
        shown = ", ".join(f"'{m}'" for m in dict.fromkeys(missing))
        many = len(set(missing)) > 1
        verb = "names" if many else "name"
        return CheckResult(
            check="entity",
            status="fail",
            reason=f"the {verb} {shown} {'do' if many else 'does'} not appear in the evidence",
            claim_value=", ".join(dict.fromkeys(missing)),
        )
    return CheckResult(
        check="entity",
        status="pass",
        reason="every name in the claim is in the evidence",
        claim_value=", ".join(dict.fromkeys(names)),
    )


# --------------------------------------------------------------------------- polarity

_NEG_RE = re.compile(
    r"\b(?:not|never|no longer|no|none|nobody|nothing|neither|nor|without|cannot|"
    r"failed to|fails to|fail to|failing to|unable to|refused to|ceased to|"
    r"[a-z]*n['’]t)\b",  # "didn't", and "did n't" as tokenised (PTB) corpora write it
    re.IGNORECASE,
)
_NOT_NEGATION = re.compile(
    r"\b(?:not only|not just|no doubt|nothing but|not until|no matter|no sooner|not least|"
    r"no one else|none other than|not far)\b"
    # an answer particle negates nothing that follows it ("No, I ...", "No! It ...")
    r"|\bno(?=\s*[,!;]\s)",
    re.IGNORECASE,
)
# in a claim that quotes or reports no one: its speaker's own knowledge, not a statement about
# the world ("No, I did not know that!" was contradicted by the user's "... did you know
# that?"). Only verbs whose complement stays true ("I didn't know it was against the law": it
# was); "I don't think X" means not-X. In the evidence, "I didn't know what I was about to see"
# is someone's statement that a claim may report ("he didn't know ..."): kept there.
_SPEAKER_KNOWLEDGE = re.compile(
    r"\bI(?:['’]m|\s+am|\s+was)\s+not\s+(?:sure|aware|certain)\b"
    r"|\bI\s+(?:do|did|have|had)?\s*(?:not|never|n['’]t|\s?n['’]t)\s+"
    r"(?:know|knew|heard|seen|realized?|realised?|remember|recall)\b",
    re.IGNORECASE,
)
_REPORTS = re.compile(r"[\"“”]|\b(?:said|says|told|tells|added|adds|wrote|writes)\b", re.I)
# in the evidence, words that negate what follows without a negation word: a claim's "won't
# show" says what "opts out of showing" does (a right HaluEval summary was shown contradicted).
# They license a negation in the claim; a claim is not required to repeat them.
_IMPLICIT_NEG_RE = re.compile(
    r"\b(?:(?:opt|opts|opted|opting|pull|pulls|pulled|pulling|drop|drops|dropped|dropping|"
    r"back|backs|backed|backing|sit|sits|sat|sitting|miss|misses|missed|missing|rule|rules|"
    r"ruled|ruling|stay|stays|stayed|staying)\s+out(?:\s+of)?|"
    r"withdr(?:ew|aw|aws|awn|awing)(?:\s+from)?|instead\s+of|rather\s+than|"
    r"declin(?:e|es|ed|ing)\s+to|skip(?:s|ped|ping)?|absent\s+from|lack(?:s|ed|ing)?|"
    r"free\s+(?:of|from)|(?:barred|banned|prevented|stopped|kept|excluded)\s+from|"
    r"gave\s+up|give\s+up|giving\s+up|ceased|abandon(?:s|ed|ing)?|"
    r"(?:has|have|had)\s+yet\s+to|is\s+yet\s+to|are\s+yet\s+to)\b",
    re.IGNORECASE,
)
# the implicit negations that state the opposite of a claim that leaves them out: "Alex Perry
# will show at this year's MBFWA" against "Perry opts out of showing at this year's MBFWA" was
# supported at p 0.86. Not "missing", "lack of", "free of", "skipped": as often adjectives or
# nouns that negate nothing a claim says ("the missing plane was found").
_OPPOSITE_NEG_RE = re.compile(
    r"\b(?:(?:opt|opts|opted|opting|pull|pulls|pulled|pulling|drop|drops|dropped|dropping|"
    r"back|backs|backed|backing|sit|sits|sat|sitting|rule|rules|ruled|ruling|stay|stays|"
    r"stayed|staying)\s+out\s+of|"
    r"withdr(?:ew|aw|aws|awn|awing)\s+from|instead\s+of|rather\s+than|"
    r"declin(?:e|es|ed|ing)\s+to|(?:barred|banned|prevented|stopped|excluded)\s+from|"
    r"(?:has|have|had)\s+yet\s+to|is\s+yet\s+to|are\s+yet\s+to)\b",
    re.IGNORECASE,
)
_HEAD_WINDOW = 4
_SKIP_HEAD = STOPWORDS | FILLER

ANTONYMS: tuple[tuple[str, str], ...] = (
    ("increase", "decrease"),
    ("increase", "reduce"),
    ("rise", "fall"),
    ("rose", "fell"),
    ("gain", "loss"),
    ("win", "lose"),
    ("victory", "defeat"),
    ("alive", "dead"),
    ("before", "after"),
    ("largest", "smallest"),
    ("biggest", "smallest"),
    ("highest", "lowest"),
    ("maximum", "minimum"),
    ("most", "least"),
    ("first", "last"),
    ("earliest", "latest"),
    ("oldest", "youngest"),
    ("oldest", "newest"),
    ("longest", "shortest"),
    ("north", "south"),
    ("east", "west"),
    ("northern", "southern"),
    ("eastern", "western"),
    ("accept", "reject"),
    ("approve", "reject"),
    ("allow", "forbid"),
    ("allow", "prohibit"),
    ("legal", "illegal"),
    ("success", "failure"),
    ("succeed", "fail"),
    ("true", "false"),
    ("positive", "negative"),
    ("male", "female"),
    ("above", "below"),
    ("inside", "outside"),
    ("internal", "external"),
    ("public", "private"),
    ("include", "exclude"),
    ("import", "export"),
    ("buy", "sell"),
    ("open", "close"),
    ("enter", "exit"),
    ("ancient", "modern"),
    ("major", "minor"),
    ("majority", "minority"),
    ("upper", "lower"),
    ("always", "never"),
)
COMPARATIVES: tuple[tuple[str, str], ...] = (
    ("more", "less"),
    ("more", "fewer"),
    ("higher", "lower"),
    ("greater", "smaller"),
    ("greater", "less"),
    ("larger", "smaller"),
    ("bigger", "smaller"),
    ("older", "younger"),
    ("older", "newer"),
    ("earlier", "later"),
    ("longer", "shorter"),
    ("taller", "shorter"),
    ("faster", "slower"),
    ("heavier", "lighter"),
    ("richer", "poorer"),
    ("warmer", "colder"),
    ("stronger", "weaker"),
    ("better", "worse"),
    ("cheaper", "dearer"),
    ("wider", "narrower"),
    ("deeper", "shallower"),
)


@lru_cache(maxsize=8192)
def _lower_words(text: str) -> tuple[str, ...]:
    return tuple(WORD_RE.findall(text.lower().replace("’", "'")))


@lru_cache(maxsize=8192)
def _word_set(text: str) -> frozenset[str]:
    return frozenset(_lower_words(text))


@lru_cache(maxsize=8192)
def _stem_set(text: str) -> frozenset[str]:
    return frozenset(content_stems(text))


@lru_cache(maxsize=4096)
def _dates(text: str) -> tuple[DateMention, ...]:
    return tuple(find_dates(text))


@lru_cache(maxsize=4096)
def _quantities(text: str) -> tuple[Quantity, ...]:
    return tuple(find_quantities(text, list(_dates(text))))


@lru_cache(maxsize=4096)
def _negations(
    text: str, speaker: bool = False, implicit: bool = False, opposite: bool = False
) -> list[tuple[str, set[str], str]]:
    """Negation cues with the content stems they govern (the next few words) and the first one
    (the negated word itself: "not *completed* in 1889"). ``speaker``: the text is a claim, in
    which the speaker's own not-knowing is no negated fact (`_SPEAKER_KNOWLEDGE`).
    ``implicit``: also the words that negate without a negation word (`_IMPLICIT_NEG_RE`);
    ``opposite``: only those of them that state the opposite outright (`_OPPOSITE_NEG_RE`)."""
    out = _explicit_negations(text, speaker)
    pattern = _IMPLICIT_NEG_RE if implicit else _OPPOSITE_NEG_RE if opposite else None
    if pattern is not None and pattern.search(text):
        for m in pattern.finditer(text):
            after = _lower_words(text[m.end() : m.end() + 80])[:_HEAD_WINDOW]
            words_after = [w for w in after if w not in _SKIP_HEAD]
            first = next((stem(w) for w in words_after if not w.endswith("ly")), "")
            # it governs the word it is attached to only: "pulls out of *presenting*:
            # acclaimed designer" says nothing against "is not a designer"
            out.append((m.group(0).lower(), {first} - {""}, first))
    return out


def states_negation(text: str) -> bool:
    """Whether a claim states a negation ("have not destroyed", "won't show"), not counting what
    only looks like one ("not only", an answer's "No, ...", the speaker's "I didn't know").

    Examples:
        >>> states_negation("The Saudis have not destroyed the airstrips.")
        True
        >>> states_negation("No, it opened in 1890."), states_negation("It is not only red.")
        (False, False)
    """
    return bool(_explicit_negations(text, speaker=True))


def _masked(text: str, speaker: bool) -> str:
    """The text with what only looks like a negation blanked out ("not only", "No, ...", and in
    a claim that reports no one, the speaker's own not-knowing)."""
    masked = _NOT_NEGATION.sub(lambda m: " " * len(m.group(0)), text)
    if speaker and not _REPORTS.search(text):
        masked = _SPEAKER_KNOWLEDGE.sub(lambda m: " " * len(m.group(0)), masked)
    return masked


def _explicit_negations(text: str, speaker: bool) -> list[tuple[str, set[str], str]]:
    if not _NEG_RE.search(text):
        return []
    masked = _masked(text, speaker)
    out: list[tuple[str, set[str], str]] = []
    for m in _NEG_RE.finditer(masked):
        after = _lower_words(masked[m.end() : m.end() + 80])[:_HEAD_WINDOW]
        words_after = [w for w in after if w not in _SKIP_HEAD and not _NEG_RE.fullmatch(w)]
        heads = [stem(w) for w in words_after]
        # the negated word: the first that is not an adverb ("not *generally* acclaimed")
        first = next((stem(w) for w in words_after if not w.endswith("ly")), "")
        out.append((m.group(0).lower(), set(heads), first))
    return out


_CLAUSE_END = re.compile(
    r"[,;:.!?()\"“”]|\s[-–—]\s|\b(?:but|and|while|whereas|although|though|yet|however|"
    r"instead|unlike|except)\b",
    re.IGNORECASE,
)
_SCOPE_WORDS = 15


def _negation_scopes(text: str, speaker: bool = False) -> list[set[str]]:
    """For each negation cue, the content stems up to the end of its clause: "has *never* been
    in charge of a side who have been *relegated*" negates being relegated, five words on."""
    if not _NEG_RE.search(text):
        return []
    masked = _masked(text, speaker)
    out: list[set[str]] = []
    for m in _NEG_RE.finditer(masked):
        rest = masked[m.end() : m.end() + 200]
        end = _CLAUSE_END.search(rest)
        clause = rest[: end.start()] if end else rest
        words = _lower_words(clause)[:_SCOPE_WORDS]
        out.append({stem(w) for w in words if w not in _SKIP_HEAD})
    return out


def check_polarity(claim: str, evidence: str, sentence: str | None = None) -> CheckResult:
    """Negation and antonyms: the claim must not flip what the evidence says.

    A negation counts only where it governs words the other side also uses, so "not widely known"
    in an unrelated clause of the evidence does not fail a claim about something else.
    """
    c_neg = _negations(claim, speaker=True)
    if _CHANGE_RE.search(evidence):
        # "no longer X" against "X once ... has changed since": what changed is stated
        c_neg = [n for n in c_neg if n[0].lower() != "no longer"]
    # what licenses a claim's negation includes the evidence's implicit ones ("opts out of")
    e_neg = _negations(evidence, implicit=True)
    # a negation the claim drops must sit in the evidence sentence that matches the claim best,
    # not in a neighbouring sentence about something else
    e_neg_strict = _negations(sentence if sentence is not None else evidence, opposite=True)
    c_stems = _stem_set(claim)
    e_stems = _stem_set(evidence)
    # a negation further on in its clause governs the word too
    c_scopes = _negation_scopes(claim, speaker=True)
    e_scopes = _negation_scopes(evidence)
    # a cue counts where the other side uses the very word it negates ("not *completed*")
    for cue, heads, first in c_neg:
        relevant = heads & e_stems
        if (
            first in e_stems
            and not any(h & (heads | relevant) for _, h, _f in e_neg)
            and not any(first in sc for sc in e_scopes)
        ):
            return CheckResult(
                check="polarity",
                status="fail",
                reason=f"the claim says '{cue}' where the evidence states it without negation",
                claim_value=f"{cue} … {first}",
            )
    # the claim's own "withdrew from" repeats the evidence's, it does not drop it
    c_neg_opp = (
        c_neg + [n for n in _negations(claim, opposite=True) if n not in c_neg]
        if e_neg_strict
        else c_neg
    )
    for cue, heads, first in e_neg_strict:
        relevant = heads & c_stems
        if (
            first in c_stems
            and len(relevant) >= min(2, len(heads))
            and not any(h & (heads | relevant) for _, h, _f in c_neg_opp)
            and not any(first in sc for sc in c_scopes)
        ):
            return CheckResult(
                check="polarity",
                status="fail",
                reason=f"the evidence says '{cue}' where the claim states it without negation",
                evidence_value=cue,
            )
    # one negation in the evidence cannot license two in the claim ("not made ... do not involve")
    c_rel = [cue for cue, _h, first in c_neg if first in e_stems]
    e_rel = [cue for cue, h, _f in e_neg if h & c_stems]
    if len(c_rel) > len(e_rel):
        return CheckResult(
            check="polarity",
            status="fail",
            reason=f"the claim negates more ('{c_rel[-1]}') than the evidence does",
            claim_value=", ".join(c_rel),
        )
    # antonyms are judged on the best-matching sentence: "before"/"after" are common connectives
    best = sentence if sentence is not None else evidence
    flip = _opposite(claim, best, ANTONYMS)
    if flip is not None and set(flip) == {"before", "after"} and not _same_events(claim, best):
        flip = None  # "came after she pruned ..." / "bail for months before being put on trial"
    if flip is not None:
        a, b = flip
        return CheckResult(
            check="polarity",
            status="fail",
            reason=f"the claim says '{a}' but the evidence says '{b}'",
            claim_value=a,
            evidence_value=b,
        )
    if c_neg or _has_any(claim, ANTONYMS):
        return CheckResult(check="polarity", status="pass", reason="polarity agrees")
    return _na("polarity", "the claim has no negation or polar word")


def _same_events(claim: str, evidence: str) -> bool:
    """Whether "before"/"after" joins the same two events in the same order on both sides: the
    words just before the connective share a content word with the other side's, and so do
    those just after it ("A after B" / "B before A" says the same and is not judged here)."""
    c = _CONNECTIVE_RE.search(claim)
    e = _CONNECTIVE_RE.search(evidence)
    if c is None or e is None:
        return False

    def near(text: str, m: re.Match[str]) -> tuple[frozenset[str], frozenset[str]]:
        before = " ".join(text[: m.start()].split()[-_EVENT_WORDS:])
        after = " ".join(text[m.end() :].split()[:_EVENT_WORDS])
        return _stem_set(before) - _SKIP_HEAD, _stem_set(after) - _SKIP_HEAD

    cb, ca = near(claim, c)
    eb, ea = near(evidence, e)
    return bool(cb & eb) and bool(ca & ea)


_CONNECTIVE_RE = re.compile(r"\b(?:before|after)\b", re.IGNORECASE)
_EVENT_WORDS = 6
# in the evidence, what says something has changed: it licenses a claim's "no longer" (not
# "once" or "previously", which say nothing of now: "once a week", "as previously reported")
_CHANGE_RE = re.compile(
    r"\b(?:used to|formerly|no more|any ?more|(?:has|have|had) changed|changed since|"
    r"(?:has|have|had) ended|ceased|stopped)\b",
    re.IGNORECASE,
)


def _has_any(text: str, pairs: Iterable[tuple[str, str]]) -> bool:
    ws = _word_set(text)
    return any(a in ws or b in ws for a, b in pairs)


def _forms(word: str) -> frozenset[str]:
    """Surface forms of a pair word (verbs inflect: increase/increased/increases/increasing)."""
    base = {word}
    if word.endswith("e"):
        base |= {word + "d", word + "s", word[:-1] + "ing"}
    elif word[-1] not in "sy":
        base |= {word + "ed", word + "s", word + "ing"}
    special = {
        "win": {"won", "wins", "winning"},
        "lose": {"lost", "loses", "losing"},
        "rise": {"rose", "risen", "rises", "rising"},
        "fall": {"fell", "fallen"},
        "buy": {"bought", "buys"},
        "sell": {"sold", "sells"},
        "fail": {"failed", "fails"},
        "succeed": {"succeeded", "succeeds"},
    }
    return frozenset(base | special.get(word, set()))


_PAIR_INDEX: dict[int, dict[str, list[tuple[frozenset[str], frozenset[str]]]]] = {}


def _pair_index(
    pairs: tuple[tuple[str, str], ...],
) -> dict[str, list[tuple[frozenset[str], frozenset[str]]]]:
    """surface form -> [(its side's forms, the opposite side's forms)], built once per table."""
    key = id(pairs)
    if key not in _PAIR_INDEX:
        idx: dict[str, list[tuple[frozenset[str], frozenset[str]]]] = {}
        for a, b in pairs:
            fa, fb = _forms(a), _forms(b)
            for w in fa:
                idx.setdefault(w, []).append((fa, fb))
            for w in fb:
                idx.setdefault(w, []).append((fb, fa))
        _PAIR_INDEX[key] = idx
    return _PAIR_INDEX[key]


def _opposite(
    claim: str, evidence: str, pairs: tuple[tuple[str, str], ...]
) -> tuple[str, str] | None:
    """A claim word whose opposite the evidence uses instead (and the claim does not)."""
    cw = _word_set(claim)
    ew = _word_set(evidence)
    idx = _pair_index(pairs)
    for w in sorted(cw & idx.keys()):
        for fx, fy in idx[w]:
            if not (cw & fy) and (ew & fy) and not (ew & fx):
                return w, sorted(ew & fy)[0]
    return None


# zero-width so that "river is longer than" does not hide "longer than"
_THAN_RE = re.compile(r"(?=\b(\w+er|more|less|fewer)\b((?:\s+\w+){0,2}?\s+than)\b)", re.IGNORECASE)
_NOT_COMP = frozenset({"other", "rather", "whether", "under", "over", "after", "number"})


def _than_end(m: re.Match[str]) -> int:
    return m.start(1) + len(m.group(1)) + len(m.group(2))


def _sides(text: str, m: re.Match[str]) -> tuple[set[str], set[str]]:
    """Content stems just before a comparative and just after its 'than'."""
    return (
        set(content_stems(text[: m.start()])[-3:]),
        set(content_stems(text[_than_end(m) :])[:3]),
    )


def _comparisons(text: str) -> list[re.Match[str]]:
    if "than" not in text.lower():
        return []  # the lookahead regex is slow; most texts compare nothing
    return [m for m in _THAN_RE.finditer(text) if m.group(1).lower() not in _NOT_COMP]


def check_comparatives(claim: str, evidence: str) -> CheckResult:
    """Comparatives: a swapped direction (older/younger) or swapped operands fail.

    Swapping both ("B is shorter than A" for "A is longer than B") is a paraphrase and passes.
    """
    c_cmp = _comparisons(claim)
    e_cmp = _comparisons(evidence)
    flip = _opposite(claim, evidence, COMPARATIVES)
    if flip is not None:
        a, b = flip
        for cm in c_cmp:
            if cm.group(1).lower() != a:
                continue
            cx, cy = _sides(claim, cm)
            for em in e_cmp:
                ex, ey = _sides(evidence, em)
                if em.group(1).lower() == b and cx & ey and cy & ex and not cx & ex:
                    return CheckResult(
                        check="comparative",
                        status="pass",
                        reason=f"'{a}' with its sides swapped says the same as '{b}'",
                    )
        return CheckResult(
            check="comparative",
            status="fail",
            reason=f"the claim says '{a}' but the evidence says '{b}'",
            claim_value=a,
            evidence_value=b,
        )
    if not c_cmp:
        if _has_any(claim, COMPARATIVES):
            return CheckResult(check="comparative", status="pass", reason="comparatives agree")
        return _na("comparative", "the claim compares nothing")
    cm = c_cmp[0]
    word = cm.group(1).lower()
    cx, cy = _sides(claim, cm)
    for em in e_cmp:
        if em.group(1).lower() != word:
            continue
        ex, ey = _sides(evidence, em)
        if cx & ey and cy & ex and not (cx & ex):
            return CheckResult(
                check="comparative",
                status="fail",
                reason=f"the claim compares the other way round ('{word} than' with sides swapped)",
                claim_value=claim[cm.start() : _than_end(cm)],
                evidence_value=evidence[em.start() : _than_end(em)],
            )
    return CheckResult(check="comparative", status="pass", reason="comparatives agree")


# --------------------------------------------------------------------------- driver


@lru_cache(maxsize=4096)
def _spans(text: str) -> tuple[tuple[int, int], ...]:
    return tuple(sentence_spans(text))


@lru_cache(maxsize=8192)
def local_evidence(claim: str, evidence: str, max_sentences: int = 2) -> str:
    """The window of up to ``max_sentences`` consecutive evidence sentences closest to the claim.

    Polarity and comparatives are judged on this window so that a negation elsewhere in a long
    passage does not count against the claim.
    """
    spans = _spans(evidence)
    if len(spans) <= max_sentences:
        return evidence
    cs = _stem_set(claim)
    best = (-1.0, 0, 0)
    sent_stems = [_stem_set(evidence[a:b]) for a, b in spans]
    for i in range(len(spans)):
        for n in range(1, max_sentences + 1):
            if i + n > len(spans):
                break
            st: set[str] = set().union(*sent_stems[i : i + n])
            cov = len(cs & st) / max(len(cs), 1) - 0.01 * (n - 1)
            if cov > best[0]:
                best = (cov, i, i + n)
    _, i, j = best
    return evidence[spans[i][0] : spans[j - 1][1]]


def run_checks(claim_text: str, evidence_text: str) -> list[CheckResult]:
    """Run every typed check between a claim and its evidence.

    Numbers, units, dates and names are looked up in the whole evidence; polarity and
    comparatives in the evidence window closest to the claim.

    Args:
        claim_text: the claim.
        evidence_text: the evidence passage (a sentence window or a whole chunk).

    Returns:
        One `CheckResult` per check, in the order of `CHECK_NAMES`.

    Examples:
        >>> r = run_checks("Revenue was 95 billion dollars.", "Revenue reached $95B in 2023.")
        >>> {x.check: x.status for x in r}["number"]
        'pass'
    """
    # the checks read both texts folded (issue 25.10: zero-width joiners, fullwidth letters,
    # Cyrillic look-alikes and superscript digits walked past them)
    claim_text, evidence_text = fold_for_checks(claim_text), fold_for_checks(evidence_text)
    c_dates = _dates(claim_text)
    c_q = _quantities(claim_text)
    window = local_evidence(claim_text, evidence_text)
    if c_q or c_dates:
        # the evidence is parsed only when the claim states a number or a date: the window
        # first, the whole passage only when the window does not settle it (same verdicts,
        # since the window is part of the passage). A claim of several sentences has no one
        # closest window: each sentence's numbers are judged against its own window.
        spans = _spans(claim_text)
        if len(spans) > 1:
            numbers, units, dates = _by_sentence(
                [claim_text[a:b] for a, b in spans], evidence_text, c_q
            )
        else:
            numbers, units, dates = _numbers_dates_in(claim_text, c_q, c_dates, evidence_text)
    else:
        numbers, units = check_numbers((), ())
        dates = check_dates((), ())
    if dates.status != "fail":
        dates = check_citations(claim_text, evidence_text) or dates
    entity = check_entities(claim_text, evidence_text)
    restated = unasserted_restatement(claim_text, evidence_text)
    if restated is not None:
        polarity = _unasserted_result(*restated)
    else:
        polarity = check_polarity(claim_text, window, local_evidence(claim_text, evidence_text, 1))
    comparative = check_comparatives(claim_text, window)
    return [numbers, units, dates, entity, polarity, comparative]


def _numbers_dates_in(
    claim_text: str,
    c_q: Sequence[Quantity],
    c_dates: Sequence[DateMention],
    evidence_text: str,
) -> tuple[CheckResult, CheckResult, CheckResult]:
    """Numbers, units and dates of one claim sentence: the evidence window closest to it first,
    the whole passage only when the window does not settle it (same verdicts, since the window
    is part of the passage)."""
    window = local_evidence(claim_text, evidence_text)
    w_q = _quantities(window)
    totals = _TOTAL_CUE.search(claim_text) is not None
    numbers, units, dates = _numbers_and_dates(c_q, c_dates, window, w_q, totals)
    if window != evidence_text and "fail" in (numbers.status, units.status, dates.status):
        numbers, units, dates = _numbers_and_dates(c_q, c_dates, evidence_text, w_q, totals)
    return numbers, units, dates


_STATUS_RANK = {"not_applicable": 0, "pass": 1, "fail": 2}


def _by_sentence(
    sentences: Sequence[str], evidence_text: str, c_q: Sequence[Quantity]
) -> tuple[CheckResult, CheckResult, CheckResult]:
    """Numbers, units and dates of a claim of several sentences, each sentence against its own
    window: the first failure of each check, else a pass."""
    found: dict[str, CheckResult] = {}
    for sent in sentences:
        s_q, s_dates = _quantities(sent), _dates(sent)
        if not s_q and not s_dates:
            continue
        for r in _numbers_dates_in(sent, s_q, s_dates, evidence_text):
            prev = found.get(r.check)
            if prev is None or _STATUS_RANK[r.status] > _STATUS_RANK[prev.status]:
                found[r.check] = r  # the first failure, else the first pass
    numbers = found.get("number") or check_numbers(c_q, ())[0]
    units = found.get("unit") or _na("unit", "the claim states no unit")
    dates = found.get("date") or check_dates((), ())
    return numbers, units, dates


def _numbers_and_dates(
    c_q: Sequence[Quantity],
    c_dates: Sequence[DateMention],
    evidence: str,
    window_q: Sequence[Quantity] | None,
    totals: bool = False,
) -> tuple[CheckResult, CheckResult, CheckResult]:
    e_dates = _dates(evidence)
    e_q = _quantities(evidence)
    # a year in the claim that the evidence writes as a plain number still counts as stated
    e_years = frozenset(d.year for d in e_dates if d.year is not None and not d.decade)
    numbers, units = check_numbers(c_q, e_q, window_q, e_years, totals)
    return numbers, units, check_dates(c_dates, e_dates, e_q)


def _unasserted_result(sentence: str, cue: str, denied: bool) -> CheckResult:
    """The polarity failure of a claim the evidence restates only under a denial (a
    contradiction: ``evidence_value`` is the cue) or without asserting it (`is_unasserted`)."""
    quoted = " ".join(sentence.split())[:120]
    if denied:
        return CheckResult(
            check="polarity",
            status="fail",
            reason=f"the evidence states it only to deny it ('{cue}'): '{quoted}'",
            evidence_value=cue,
        )
    return CheckResult(
        check="polarity",
        status="fail",
        reason=f"the evidence does not assert it, it says it under '{cue}': '{quoted}'",
    )


def is_unasserted(result: CheckResult) -> bool:
    """Whether a failed check is the evidence stating the claim without asserting it ("there
    is no evidence that X", "if X", "Is X?"): nothing there supports it, nor says otherwise."""
    return (
        result.check == "polarity"
        and result.status == "fail"
        and result.claim_value is None
        and result.evidence_value is None
    )


def failed(results: Iterable[CheckResult]) -> list[CheckResult]:
    """The failing results."""
    return [r for r in results if r.status == "fail"]


@lru_cache(maxsize=64)
def _na(check: CheckName, reason: str) -> CheckResult:
    # frozen and immutable: one shared instance per (check, reason)
    return CheckResult(check=check, status="not_applicable", reason=reason)


def clear_caches() -> None:
    """Drop the per-text analysis caches (numbers, dates, stems...) of the checks.

    The caches only speed up repeated texts (the same chunk checked for several claims); call
    this to bound memory in a long-running process or to time cold audits. The word-level
    stem cache is a vocabulary, not per-input state, and is kept.
    """
    import affidavit.verify.lexical as lexical_mod
    import affidavit.verify.numbers as numbers_mod

    for mod in (lexical_mod, numbers_mod, sys.modules[__name__]):
        for obj in vars(mod).values():
            if callable(obj) and hasattr(obj, "cache_clear") and obj is not lexical_mod.stem:
                obj.cache_clear()
