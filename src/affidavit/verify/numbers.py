"""Quantities and dates found in text, normalised so that different spellings compare equal.

"95 billion", "$95B" and "95,000 million" are all 9.5e10 (the first two in US dollars); "5 km"
is 5000 m; "a dozen" is 12; "2 March 1991", "March 2, 1991" and "1991-03-02" are the same date.
A quantity keeps its *precision* (half a unit of its last written digit, times its scale) so a
rounded claim ("about 95 billion") matches a precise source ("95.3 billion").

Examples:
    >>> [q.value for q in find_quantities("revenue of $95B")]
    [95000000000.0]
    >>> [(d.year, d.month, d.day) for d in find_dates("born on March 2, 1991")]
    [(1991, 3, 2)]
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

SCALES = {
    "thousand": 1e3,
    "k": 1e3,
    "million": 1e6,
    "millions": 1e6,
    "mn": 1e6,
    "m": 1e6,
    "mil": 1e6,
    "billion": 1e9,
    "billions": 1e9,
    "bn": 1e9,
    "b": 1e9,
    "trillion": 1e12,
    "tn": 1e12,
    "hundred": 1e2,
}

# unit word -> (dimension, factor to the dimension's base unit)
UNITS: dict[str, tuple[str, float]] = {}


def _add(dim: str, factor: float, *names: str) -> None:
    for n in names:
        UNITS[n] = (dim, factor)


_add("length", 1e-3, "mm", "millimetre", "millimetres", "millimeter", "millimeters")
_add("length", 1e-2, "cm", "centimetre", "centimetres", "centimeter", "centimeters")
_add("length", 1.0, "metre", "metres", "meter", "meters")
_add("length", 1e3, "km", "kilometre", "kilometres", "kilometer", "kilometers", "kms")
_add("length", 0.0254, "in", "inch", "inches")
_add("length", 0.3048, "ft", "foot", "feet")
_add("length", 0.9144, "yd", "yard", "yards")
_add("length", 1609.344, "mi", "mile", "miles")
_add("length", 1852.0, "nmi", "nautical mile", "nautical miles")
_add(
    "area",
    1e6,
    "km2",
    "km²",
    "sq km",
    "square kilometres",
    "square kilometers",
    "square kilometre",
    "square kilometer",
)
_add("area", 1.0, "m2", "m²", "square metres", "square meters", "square metre", "square meter")
_add("area", 2589988.11, "sq mi", "square miles", "square mile")
_add("area", 0.092903, "sq ft", "square feet", "square foot")
_add("area", 4046.856, "acre", "acres")
_add("area", 1e4, "hectare", "hectares", "ha")
_add("mass", 1e-6, "mg", "milligram", "milligrams")
_add("mass", 1e-3, "g", "gram", "grams")
_add("mass", 1.0, "kg", "kilogram", "kilograms", "kilo", "kilos")
_add("mass", 1e3, "tonne", "tonnes", "metric ton", "metric tons", "t")
_add("mass", 0.45359237, "lb", "lbs", "pound", "pounds")
_add("mass", 0.028349523, "oz", "ounce", "ounces")
_add("mass", 907.18474, "ton", "tons", "short ton", "short tons")
_add("volume", 1e-3, "ml", "millilitre", "millilitres", "milliliter", "milliliters")
_add("volume", 1.0, "l", "litre", "litres", "liter", "liters")
_add("volume", 3.785411784, "gallon", "gallons", "gal")
_add("time", 1.0, "second", "seconds", "sec", "secs")
_add("time", 60.0, "minute", "minutes", "min", "mins")
_add("time", 3600.0, "hour", "hours", "hr", "hrs", "h")
_add("time", 86400.0, "day", "days")
_add("time", 604800.0, "week", "weeks")
_add("time", 2629800.0, "month", "months")
_add("time", 31557600.0, "year", "years", "yr", "yrs")
_add("time", 315576000.0, "decade", "decades")
_add("time", 3155760000.0, "century", "centuries")
_add(
    "speed",
    1.0,
    "km/h",
    "kph",
    "kmh",
    "kilometres per hour",
    "kilometers per hour",
    "km per hour",
    "km an hour",
    "kilometres an hour",
    "kilometers an hour",
)
_add("speed", 1.609344, "mph", "miles per hour", "miles an hour", "mi/h")
_add("speed", 3.6, "m/s", "metres per second", "meters per second")
_add("power", 1.0, "w", "watt", "watts")
_add("power", 1e3, "kw", "kilowatt", "kilowatts")
_add("power", 1e6, "mw", "megawatt", "megawatts")
_add("power", 1e9, "gw", "gigawatt", "gigawatts")
_add("power", 745.7, "hp", "horsepower")
_add("percent", 1.0, "%", "percent", "per cent", "pct")
_add("percent_point", 1.0, "percentage point", "percentage points")
_add("temperature_c", 1.0, "°c", "degrees celsius", "celsius", "degrees c", "℃")
_add("temperature_f", 1.0, "°f", "degrees fahrenheit", "fahrenheit", "degrees f", "℉")
_add("currency_usd", 1.0, "$", "us$", "usd", "dollar", "dollars", "us dollars")
_add("currency_eur", 1.0, "€", "eur", "euro", "euros")
_add("currency_gbp", 1.0, "£", "gbp", "pounds sterling", "sterling")
_add("currency_jpy", 1.0, "¥", "yen", "jpy")
_add("currency_inr", 1.0, "₹", "rupees", "inr", "rupee")
_add("ordinal", 1.0, "th", "st", "nd", "rd")

SPELLED = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
    "dozen": 12,
    "a dozen": 12,
    "half a dozen": 6,
    "a hundred": 100,
    "a thousand": 1000,
    "a million": 1e6,
    "a billion": 1e9,
    "twice": 2,
    "thrice": 3,
    "double": 2,
    "triple": 3,
}
SPELLED_ORDINAL = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
    "eleventh": 11,
    "twelfth": 12,
    "thirteenth": 13,
    "fourteenth": 14,
    "fifteenth": 15,
    "sixteenth": 16,
    "seventeenth": 17,
    "eighteenth": 18,
    "nineteenth": 19,
    "twentieth": 20,
    "twenty-first": 21,
}

MONTHS = {
    "january": 1,
    "jan": 1,
    "february": 2,
    "feb": 2,
    "march": 3,
    "mar": 3,
    "april": 4,
    "apr": 4,
    "may": 5,
    "june": 6,
    "jun": 6,
    "july": 7,
    "jul": 7,
    "august": 8,
    "aug": 8,
    "september": 9,
    "sep": 9,
    "sept": 9,
    "october": 10,
    "oct": 10,
    "november": 11,
    "nov": 11,
    "december": 12,
    "dec": 12,
}
MONTH_NAMES = [
    "",
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


# how far (relative) a converted value may sit from its source: "2 miles (3 km)" is 7% off
CONVERSION_SLACK = 0.1


@dataclass(frozen=True)
class Quantity:
    """A number found in text, normalised.

    Attributes:
        value: the value in the dimension's base unit, scale applied (5 km -> 5000.0).
        raw: the text it was read from.
        magnitude: the number with its scale word but without the unit (5 km -> 5.0).
        dimension: ``length``, ``currency_usd``, ``percent``... or ``""`` for a bare count.
        unit: the unit as written, lower-cased (``""`` when none).
        tolerance: half a unit of the last written digit, in base units (rounding allowance).
        start: offset in the text.
        end: end offset in the text.
        context: the lower-cased word right after it ("seven *children*"), "" at the end.
    """

    value: float
    raw: str
    magnitude: float
    dimension: str
    unit: str
    tolerance: float
    start: int
    end: int
    context: str = ""

    def matches(self, other: Quantity) -> bool:
        """Same dimension (or one side unit-less) and equal within either side's rounding."""
        if ("ordinal" in (self.dimension, other.dimension)) and self.dimension != other.dimension:
            return False  # "the third film" is not "three films"
        if self.dimension and other.dimension and self.dimension != other.dimension:
            return False
        eps = 1e-9 * max(abs(self.value), 1.0)
        if self.dimension != other.dimension:
            # a bare number against one with a unit: the written numbers must agree exactly
            return abs(self.magnitude - other.magnitude) <= eps
        # a rounded side ("about 95 billion") matches a precise one ("95.3 billion")
        tol = max(self.tolerance, other.tolerance)
        diff = abs(self.value - other.value)
        if self.unit != other.unit:
            # a conversion ("10 miles" for "16 km", "2.5 km" for "2,528.7 m") must also be
            # close in relative terms, so the rounding of "1 mile" does not cover "1 km"
            return diff <= tol + eps and diff <= CONVERSION_SLACK * max(
                abs(self.value), abs(other.value)
            )
        return diff <= tol + eps


@dataclass(frozen=True)
class DateMention:
    """A date (or a year, a month, a decade) found in text.

    Attributes:
        year: the year, when stated.
        month: 1-12, when stated.
        day: 1-31, when stated.
        decade: True for "the 1990s" (year is then the decade's first year).
        raw: the text it was read from.
        start: offset in the text.
        end: end offset in the text.
    """

    year: int | None
    month: int | None
    day: int | None
    decade: bool
    raw: str
    start: int
    end: int

    @property
    def is_bare_year(self) -> bool:
        """A year alone (no month, day or decade)."""
        return self.year is not None and self.month is None and self.day is None and not self.decade

    def describe(self) -> str:
        """Human form: '2 March 1991', 'March 1991', '1991', 'the 1990s', 'March'."""
        if self.decade and self.year is not None:
            return f"the {self.year}s"
        parts = []
        if self.day is not None:
            parts.append(str(self.day))
        if self.month is not None:
            parts.append(MONTH_NAMES[self.month])
        if self.year is not None:
            parts.append(str(self.year))
        return " ".join(parts)


# full month names in any case (lower-cased corpora write "april 28"; a date pattern still needs
# a day or year next to the name, so "may" the verb does not make a date); abbreviations only
# capitalised ("mar", "dec" are words)
_MONTH_ALT = (
    r"(?:(?i:January|February|March|April|May|June|July|August|September|October|November"
    r"|December)|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\.?"
)
_DATE_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"), "ymd"),
    (re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b"), "mdy_num"),
    (re.compile(r"\b(\d{4})/(\d{1,2})/(\d{1,2})\b"), "ymd"),
    (re.compile(r"\b(\d{1,2})\.(\d{1,2})\.(\d{4})\b"), "dmy_num"),
    (re.compile(rf"\b({_MONTH_ALT})\s+(\d{{1,2}})(?:st|nd|rd|th)?\s?,?\s+(\d{{4}})\b"), "mdy"),
    (
        re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_ALT})\s?,?\s+(\d{{4}})\b"),
        "dmy",
    ),
    (re.compile(rf"\b({_MONTH_ALT})\s?,?\s+(?:of\s+)?(\d{{4}})\b"), "my"),
    (re.compile(rf"\b({_MONTH_ALT})\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?!\s*,?\s*\d)"), "md"),
    (re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_ALT})\b(?!,?\s*\d)"), "dm"),
    # a season or academic year ("1996-97", "2019–20"): its first year; the two-digit tail is
    # not a separate number
    (re.compile(r"\b(1\d{3}|20\d{2})[-–](\d{2})\b(?![-–./]\d)"), "season"),
    (re.compile(r"\b(1\d{3}|20\d{2})s\b"), "decade"),
    # a decade written short ("the '90s"): the 1930s-1990s for '30s-'90s; '00s-'20s name no
    # century for sure (the 1920s or the 2020s) and are read as no date; never the number 90
    (re.compile(r"(?<![\w'’])['’](\d0)s\b"), "decade2"),
    (re.compile(r"(?<![\d$€£.,])\b(1[0-9]{3}|20[0-9]{2})\b(?![.,]\d)(?!\s*(?:%|percent))"), "y"),
]
# the word ending right before a "-" or "#", when it holds a letter ("VH3", "ASO")
_LETTERED_TOKEN = re.compile(r"(?<![\w.])(?=\w*[A-Za-z])\w+$")
_SHORT_DECADE = re.compile(r"['’]\d0s\b")
_SCALE_AFTER = re.compile(r"\s?(?:thousand|million|billion|trillion|bn|mn)\b", re.IGNORECASE)
_DATE_HINT = re.compile(
    r"\d|January|February|March|April|May|June|July|August|September|October|November|December"
)
_MONTH_HINT = re.compile(_MONTH_ALT)
_MONTH_KINDS = frozenset({"mdy", "dmy", "my", "md", "dm"})
_NUMERIC_KINDS = frozenset({"ymd", "mdy_num", "dmy_num"})
_BARE_MONTH = re.compile(
    r"\b(January|February|March|April|June|July|August|September|October|November|December)\b"
)


def _month(s: str) -> int | None:
    return MONTHS.get(s.lower().rstrip("."))


# what cites rather than states: a reference list "[3]", "[<|cit|>,10]", "[4-6]", and an
# author-year citation "(Daly and Robinson, 2021)", "Smith et al. (2020)"
_BRACKETS = re.compile(r"\[[^\[\]\n]{0,60}\]")
_CITE_TOKEN = re.compile(r"<\|[^|<>]{0,30}\|>")
_REFERENCE_LIST = re.compile(r"[\d\s,;–-]*")
_CITE_YEAR = re.compile(
    r"\b([A-Z][\w'’-]+(?:\s+et\s+al\.?|\s+(?:and|&)\s+[A-Z][\w'’-]+)),?\s+\(?"
    r"((?:19|20)\d{2})[a-z]?(?=\s*[);,\]])"
)


@dataclass(frozen=True)
class Citation:
    """An author-year citation: "Chen et al., 2020", "Daly and Robinson (2021)".

    Its year cites a paper; it states no date.
    """

    authors: str  # as written: "Chen et al.", "Daly and Robinson"
    year: int

    @property
    def key(self) -> str:
        """The authors, compared: "Daly and Robinson" and "Daly et al." are other papers."""
        return re.sub(r"\s+", " ", self.authors.replace("&", "and")).casefold().rstrip(".")

    @property
    def text(self) -> str:
        return f"{self.authors}, {self.year}"


def find_citations(text: str) -> list[Citation]:
    """The author-year citations of a text, in order. Their years cite, they state no date
    (`find_dates` leaves them out), but a citation the evidence gives the same authors with
    another year is a wrong reference.

    Examples:
        >>> cited = find_citations("as shown (Chen et al., 2020; Qin and Li, 2009)")
        >>> [c.text for c in cited]
        ['Chen et al., 2020', 'Qin and Li, 2009']
    """
    if "(" not in text and "," not in text:
        return []
    return [Citation(m.group(1), int(m.group(2))) for m in _CITE_YEAR.finditer(text)]


def _marker_spans(text: str) -> list[tuple[int, int]]:
    """Spans of numbers that cite a source rather than state something.

    Examples:
        >>> t = "rose [<|cit|>,10] (Daly and Robinson, 2021) and Smith et al. (2020) in 2019"
        >>> [t[a:b] for a, b in _marker_spans(t)]
        ['[<|cit|>,10]', '2021', '2020']
    """
    if "[" not in text and "(" not in text:
        return []
    out: list[tuple[int, int]] = []
    for m in _BRACKETS.finditer(text):
        inner = _CITE_TOKEN.sub("", m.group(0)[1:-1])
        if _DIGIT.search(inner) and _REFERENCE_LIST.fullmatch(inner):
            out.append((m.start(), m.end()))
    out += [(m.start(2), m.end(2)) for m in _CITE_YEAR.finditer(text)]
    return sorted(out)


def find_dates(text: str) -> list[DateMention]:
    """Every date, month-and-year, decade or year in the text, in text order.

    The most specific reading of a span wins ("3 May 2001" is one date, not a year).

    Examples:
        >>> [d.describe() for d in find_dates("From 1844 to 1846, and on 3 May 2001.")]
        ['1844', '1846', '3 May 2001']
    """
    if not _DATE_HINT.search(text):
        return []  # no digit and no month name: nothing to find
    taken: list[tuple[int, int]] = _marker_spans(text)
    found: list[DateMention] = []

    def free(a: int, b: int) -> bool:
        return all(b <= x or a >= y for x, y in taken)

    has_month = _MONTH_HINT.search(text) is not None
    has_sep = "-" in text or "/" in text or "." in text
    for pat, kind in _DATE_PATTERNS:
        if kind in _MONTH_KINDS and not has_month:
            continue  # cheap gates: most passages have neither month names nor numeric dates
        if kind in _NUMERIC_KINDS and not has_sep:
            continue
        for m in pat.finditer(text):
            if not free(m.start(), m.end()):
                continue
            g = m.groups()
            y = mo = d = None
            decade = False
            try:
                if kind == "ymd":
                    y, mo, d = int(g[0]), int(g[1]), int(g[2])
                elif kind == "mdy_num":
                    mo, d, y = int(g[0]), int(g[1]), int(g[2])
                    if mo > 12 and d <= 12:
                        mo, d = d, mo
                elif kind == "dmy_num":
                    d, mo, y = int(g[0]), int(g[1]), int(g[2])
                elif kind == "mdy":
                    mo, d, y = _month(g[0]), int(g[1]), int(g[2])
                elif kind == "dmy":
                    d, mo, y = int(g[0]), _month(g[1]), int(g[2])
                elif kind == "my":
                    mo, y = _month(g[0]), int(g[1])
                elif kind == "md":
                    mo, d = _month(g[0]), int(g[1])
                elif kind == "dm":
                    d, mo = int(g[0]), _month(g[1])
                elif kind == "season":
                    y = int(g[0])
                    if int(g[1]) != (y + 1) % 100:
                        continue  # "1996-12" is not a season
                elif kind == "decade":
                    y, decade = int(g[0]), True
                elif kind == "decade2":
                    if int(g[0]) < 30:
                        taken.append((m.start(), m.end()))  # not a number either
                        continue
                    y, decade = 1900 + int(g[0]), True
                else:
                    y = int(g[0])
            except ValueError:
                continue
            if kind == "y" and (_UNIT_RE.match(text, m.end()) or _SCALE_AFTER.match(text, m.end())):
                continue  # "1083 feet", "1500 million": a quantity, not a year
            if (mo is not None and not 1 <= mo <= 12) or (d is not None and not 1 <= d <= 31):
                continue
            found.append(DateMention(y, mo, d, decade, m.group(0), m.start(), m.end()))
            taken.append((m.start(), m.end()))
    for m in _BARE_MONTH.finditer(text):
        if free(m.start(), m.end()):
            found.append(
                DateMention(None, _month(m.group(1)), None, False, m.group(0), m.start(), m.end())
            )
            taken.append((m.start(), m.end()))
    found.sort(key=lambda x: x.start)
    return found


_DIGIT = re.compile(r"\d")
_NUM = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:[.·]\d+)?|\.\d+"  # "·": Lancet-style decimal point
_CUR_PREFIX = r"(?:US\$|\$|€|£|¥|₹)"
_SCALE_ALT = r"thousand|millions?|billions?|trillion|hundred|bn|mn|tn|mil|k|m|b"
_QTY_RE = re.compile(
    rf"(?P<cur>{_CUR_PREFIX})?\s?(?P<num>{_NUM})"
    rf"(?:\s?(?P<ord>st|nd|rd|th)\b)?"
    rf"(?:\s?-?\s?(?P<scale>{_SCALE_ALT})\b)?",
    re.IGNORECASE,
)
_UNIT_NAMES = sorted(UNITS, key=len, reverse=True)
_UNIT_RE = re.compile(
    r"\s?-?\s?(?P<unit>"
    + "|".join(re.escape(u) for u in _UNIT_NAMES if u not in ("th", "st", "nd", "rd"))
    + r")(?![A-Za-z])",
    re.IGNORECASE,
)
_SPELLED_RE = re.compile(
    r"\b(half a dozen|a dozen|a hundred|a thousand|a million|a billion|"
    + "|".join(sorted((k for k in SPELLED if " " not in k), key=len, reverse=True))
    + r")\b(?:\s+(?P<scale>thousand|million|billion|trillion|hundred)\b)?",
    re.IGNORECASE,
)
_SPELLED_ORD_RE = re.compile(
    r"\b(" + "|".join(sorted(SPELLED_ORDINAL, key=len, reverse=True)) + r")\b", re.IGNORECASE
)
# cheap pre-filters: the spelled-number regexes are slow and rarely match
_LOWER_WORD = re.compile(r"[a-z]+")  # "six-star" -> "six", "star"
_SPELLED_WORDS = frozenset(w for k in SPELLED for w in k.split()) - {"a", "of", "half"}
_ORDINAL_WORDS = frozenset(w for k in SPELLED_ORDINAL for w in k.split("-"))
# single-letter scales/units are too ambiguous on their own ("5 m" could be metres)
_AMBIGUOUS_SCALE = {"m", "b", "k"}


def _precision(num: str) -> float:
    """Half a unit of the last written digit: '95' -> 0.5, '95.3' -> 0.05, '95,000' -> 0.5."""
    s = num.replace(",", "")
    if "." in s:
        return 0.5 * 10.0 ** -len(s.split(".")[1])
    return 0.5


def _is_marker(text: str, a: int, b: int) -> bool:
    """Is text[a:b] a small whole number written as a list marker: "(1)" opening a list item,
    followed by a word ("(2) viral entry"; not "(2 km)", nor the goals in "Lewandowski (2),
    Muller")?"""
    if a == 0 or b >= len(text) or not text[a:b].isdigit() or b - a > 3:
        return False
    before, after = text[a - 1], text[b]
    if before == "(" and after == ")":
        rest = text[b + 1 : b + 3]
        return rest[:1] == " " and rest[1:2].isalpha()
    return False


def _in_title(text: str, a: int, b: int) -> bool:
    """Whether the capitalised number word at ``a:b`` is part of a title or name inside a
    lower-case sentence: after a lower-case word, and after "the" or before another capitalised
    word ("by the Dozen", "the Three Musketeers", "saw Seven Samurai"). In title case ("Man
    Scores Three Goals") or a sentence's first word it stays a number, and so does "won Five
    titles": a guess must never hide a number from the checks."""
    before = _WORDS_BEFORE.search(text, max(0, a - 80), a)
    if before is None or not before.group(1)[:1].islower():
        return False
    after = _WORD_AFTER.match(text, b)
    return before.group(1) == "the" or (after is not None and after.group(1)[:1].isupper())


_WORDS_BEFORE = re.compile(r"([A-Za-z][\w'\u2019-]*)[ \t]+$")
_WORD_AFTER = re.compile(r"[ \t]+([A-Za-z][\w'\u2019-]*)")


# a rank written out: "world number one", "ranked number one", "seeded number one"
_RANK_BEFORE = re.compile(r"\b(?:world|ranked|seeded|rated)\s+(?:no\.?|number)\s+$", re.IGNORECASE)


def find_quantities(text: str, dates: list[DateMention] | None = None) -> list[Quantity]:
    """Every number with its scale and unit; years and dates are left to `find_dates`.

    Examples:
        >>> [(q.value, q.dimension) for q in find_quantities("3.5% of 12 km and a dozen eggs")]
        [(3.5, 'percent'), (12000.0, 'length'), (12.0, '')]
    """
    if dates is None:
        dates = find_dates(text)
    taken = [(d.start, d.end) for d in dates if d.year is not None or d.day is not None]
    taken += _marker_spans(text)
    out: list[Quantity] = []

    def free(a: int, b: int) -> bool:
        return all(b <= x or a >= y for x, y in taken)

    has_digit = _DIGIT.search(text) is not None
    for m in _QTY_RE.finditer(text) if has_digit else ():
        a, b = m.start("num"), m.end("num")
        if not free(a, b):
            continue
        num_s = m.group("num").replace("·", ".")
        # a digit glued to letters ("COVID-19", "B2B", "F16") is a name, not a quantity, and so
        # is one joined by "-" or "#" to a word holding letters ("VH3-53", "ASO#26")
        if a > 0 and (
            text[a - 1].isalpha()
            or (text[a - 1] == "-" and a > 1 and text[a - 2].isalpha())
            or (text[a - 1] in "-#" and _LETTERED_TOKEN.search(text, 0, a - 1) is not None)
        ):
            continue
        # a decade written short ("the '20s", "the '90s") counts nothing
        if a > 0 and text[a - 1] in "'’" and _SHORT_DECADE.match(text, a - 1):
            continue
        # a list marker "(1) an immune response, (2) ..." counts nothing (citation markers
        # are `taken` above)
        if _is_marker(text, a, b):
            continue
        try:
            value = float(num_s.replace(",", ""))
        except ValueError:
            continue
        tol = _precision(num_s)
        magnitude = value
        scale_s = (m.group("scale") or "").lower()
        end = m.end()
        unit = ""
        dim = ""
        cur = m.group("cur")
        if m.group("ord"):
            dim, unit = "ordinal", m.group("ord").lower()
            scale_s = ""
            end = m.end("ord")
        if scale_s in _AMBIGUOUS_SCALE and not cur:
            # single letters are only scales after a currency sign ("$5m"); "5 m" is metres
            if scale_s == "m":
                dim, unit = "length", "m"
            else:
                end = m.end("num")
            scale_s = ""
        if scale_s:
            factor = SCALES[scale_s]
            value *= factor
            tol *= factor
            magnitude *= factor
        if cur:
            dim, unit = UNITS[cur.lower()][0], cur.lower()
        if not dim:
            um = _UNIT_RE.match(text, end)
            if um:
                u = um.group("unit").lower()
                dim, factor = UNITS[u]
                # short units only glued to the number, never as a word ("5 in Paris")
                if um.group(0).startswith(" ") and u in ("in", "t", "h", "l", "w"):
                    dim, factor = "", 1.0
                if dim:
                    unit = u
                    value *= factor
                    tol *= factor
                    end = um.end()
        elif dim.startswith("currency"):
            # "$5 million dollars": swallow a trailing currency word
            um = _UNIT_RE.match(text, end)
            if um and UNITS[um.group("unit").lower()][0] == dim:
                end = um.end()
        if dim == "temperature_f":
            value, tol, dim = (value - 32.0) * 5.0 / 9.0, tol * 5.0 / 9.0, "temperature_c"
        start = m.start("cur") if cur else a
        out.append(Quantity(value, text[start:end], magnitude, dim, unit, tol, start, end))
        taken.append((start, end))
    lowered = set(_LOWER_WORD.findall(text.lower()))
    has_spelled = not lowered.isdisjoint(_SPELLED_WORDS)
    has_ordinal = not lowered.isdisjoint(_ORDINAL_WORDS)
    for m in _SPELLED_RE.finditer(text) if has_spelled else ():
        if not free(m.start(), m.end()):
            continue
        word = m.group(1).lower()
        value = float(SPELLED[word])
        scale_s = (m.group("scale") or "").lower()
        if word == "one" and not scale_s and not _RANK_BEFORE.search(text, 0, m.start()):
            continue  # "one of the", "no one": not a count worth checking ("world number one" is)
        if word in ("double", "triple", "second") and not scale_s:
            continue
        if m.group(1)[:1].isupper() and _in_title(text, m.start(), m.end()):
            continue  # part of a title inside a lower-case sentence: "Cheaper by the Dozen"
        if scale_s:
            value *= SCALES[scale_s]
        magnitude = value
        end = m.end()
        dim, unit = "", ""
        um = _UNIT_RE.match(text, end)
        tol = 0.5 * (SCALES[scale_s] if scale_s else 1.0)
        if um:
            u = um.group("unit").lower()
            d2, factor = UNITS[u]
            if u not in ("in", "t", "h", "l", "g", "w", "ha", "m", "min", "sec"):
                dim, unit = d2, u
                value *= factor
                tol *= factor
                end = um.end()
        if dim == "temperature_f":
            value, tol, dim = (value - 32.0) * 5.0 / 9.0, tol * 5.0 / 9.0, "temperature_c"
        out.append(
            Quantity(value, text[m.start() : end], magnitude, dim, unit, tol, m.start(), end)
        )
        taken.append((m.start(), end))
    for m in _SPELLED_ORD_RE.finditer(text) if has_ordinal else ():
        if not free(m.start(), m.end()):
            continue
        word = m.group(1).lower()
        if word == "second":
            continue  # also a unit and a verb
        n = float(SPELLED_ORDINAL[word])
        out.append(Quantity(n, m.group(0), n, "ordinal", "th", 0.5, m.start(), m.end()))
    out.sort(key=lambda q: q.start)
    return [_with_context(q, text) for q in out]


# a score's or range's other half ("2*-1* at"; "5*-0* up") belongs to the number, not after it
_NEXT_WORD = re.compile(r"(?:[\s,()]|[-–]\s*\d+(?:[.,]\d+)?|[-–])*([A-Za-z]+)")
# words that say nothing about what a number counts: "18 *at the* time" and "2-1 *at* Selhurst"
# count different things, "seven children" and "eight children" the same
_FUNCTION_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "at",
        "in",
        "on",
        "of",
        "to",
        "for",
        "from",
        "by",
        "with",
        "as",
        "and",
        "or",
        "than",
        "into",
        "onto",
        "over",
        "under",
        "after",
        "before",
        "during",
        "since",
        "until",
        "up",
        "down",
        "off",
        "out",
        "about",
    ]
)
_SPACE_WORD = re.compile(r"[\s,()-]*([A-Za-z]+)")


def _with_context(q: Quantity, text: str) -> Quantity:
    m = _NEXT_WORD.match(text, q.end)
    if m is None:
        return q
    w = m.group(1).lower()
    for _ in range(3):
        if w not in _FUNCTION_WORDS:
            break
        nxt = _SPACE_WORD.match(text, m.end())
        if nxt is None:
            break
        m, w = nxt, nxt.group(1).lower()
    return replace(q, context=w[:5])


def describe_quantity(q: Quantity) -> str:
    """The quantity as written in its text (for reasons)."""
    return q.raw.strip()
