"""Birth and death dates given in a parenthesis after a name, read as the sentence states them.

Reference text (encyclopaedias, biographies, the passages QA answers cite) gives a person's dates
in a parenthesis after their name: "Elspeth Mary Campbell, Baroness Campbell of Pittenweem (born
January 1940) is ...", "James Harold Doolittle (December 14, 1896 – September 27, 1993) was
...". The cross-encoder does not read that shape as a statement about birth or death: it scored
"Elspeth Campbell was born in January 1940." p_entail 0.25 against the sentence above, and the
answer was withheld. `lifespan_support` reads it deterministically, for one claim shape only:
"<Name> was born [on|in] <date>." or "<Name> died [on|in] <date>.", nothing else in the claim
(no place, no second clause). A finding only supports; it never withholds.
"""

from __future__ import annotations

import re

from affidavit.verify.checks import date_compatible
from affidavit.verify.lexical import (
    _NAME,
    _name_words,
    _written_lower,
    fold_text,
    sentence_spans,
)
from affidavit.verify.numbers import DateMention, find_dates

_CLAIM = re.compile(
    rf"^\s*(?P<name>{_NAME})\s+(?P<verb>was born|died)(?:\s+(?:on|in))?\s+(?P<date>[^.;:!?]+?)"
    r"\s*\.?\s*$"
)
# the opening of an evidence sentence up to its first parenthesis: a name, then at most an
# appositive ("..., Baroness Campbell of Pittenweem")
_OPENING = re.compile(rf"^\s*(?P<name>{_NAME})(?P<rest>[^()]{{0,80}}?)\s*\((?P<paren>[^()]*)\)")
_RANGE = re.compile(r"\s*(?:–|—|-|\bto\b)\s*")
_BORN = re.compile(r"^(?:born|b\.)\s+", re.IGNORECASE)
_DIED = re.compile(r"^(?:died|d\.)\s+", re.IGNORECASE)
_APPOSITIVE = re.compile(r"^(?:\s*,[^,]{1,60},?)?\s*$")


def _one_date(text: str) -> DateMention | None:
    """The date ``text`` is, when it is one date and nothing else."""
    found = find_dates(text)
    if len(found) != 1:
        return None
    d = found[0]
    if d.decade or d.year is None or text[: d.start].strip(" ,") or text[d.end :].strip(" ,."):
        return None
    return d


def _paren_dates(paren: str) -> tuple[DateMention | None, DateMention | None]:
    """(born, died) dates the parenthesis gives, each None when it gives none."""
    born: DateMention | None = None
    died: DateMention | None = None
    for part in paren.split(";"):
        part = part.strip(" ,")
        if not part:
            continue
        if _BORN.match(part):
            born = born or _one_date(_BORN.sub("", part, count=1))
            continue
        if _DIED.match(part):
            died = died or _one_date(_DIED.sub("", part, count=1))
            continue
        ends = _RANGE.split(part)
        if len(ends) == 2:
            a, b = _one_date(ends[0]), _one_date(ends[1])
            if a is not None and b is not None:
                born, died = born or a, died or b
    return born, died


def lifespan_support(claim: str, evidence: str) -> tuple[int, int] | None:
    """Character span of the evidence sentence whose parenthesis gives the claim's birth or
    death date to the claim's subject, or None.

    The claim must be "<Name> was born [on|in] <date>." or "<Name> died [on|in] <date>."; the
    evidence sentence must open with a name holding every name word of the claim's subject
    (an appositive may follow it), then a parenthesis stating "born <date>", "died <date>" or a
    range "<date> – <date>"; the claim's date must state nothing the evidence's does not
    (a year matches "January 1940"; "1941" does not match "22 May 1942").

    Examples:
        >>> ev = "Elspeth Mary Campbell (born January 1940) is the wife of Menzies Campbell."
        >>> lifespan_support("Elspeth Campbell was born in January 1940.", ev) is not None
        True
        >>> lifespan_support("Elspeth Campbell was born in 1941.", ev) is None
        True
        >>> lifespan_support("Menzies Campbell was born in January 1940.", ev) is None
        True
    """
    m = _CLAIM.match(fold_text(claim))
    if m is None:
        return None
    want = _one_date(m.group("date"))
    if want is None:
        return None
    dying = m.group("verb") == "died"
    low = _written_lower(claim + " " + evidence)
    subject = _name_words(m.group("name"), low)
    if not subject:
        return None
    for a, b in sentence_spans(evidence):
        sent = fold_text(evidence[a:b])
        o = _OPENING.match(sent)
        if o is None or not _APPOSITIVE.match(o.group("rest")):
            continue
        named = _name_words(o.group("name"), low) | _name_words(o.group("rest"), low)
        if not subject <= named or not subject & _name_words(o.group("name"), low):
            continue
        born, died = _paren_dates(o.group("paren"))
        have = died if dying else born
        if have is not None and date_compatible(want, have):
            return a, b
    return None


__all__ = ["lifespan_support"]
