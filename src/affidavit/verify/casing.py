"""A claim written all in lower case, recased like its evidence before the checks read names.

The typed checks and the who-did-what rules find names by their capitals. A claim written
entirely in lower case hid every name from them, so they did not run and the model alone
decided. It supported "buzz aldrin became the first person to step onto the lunar surface." at
p 0.91 and "paris is in germany." at 0.58, although both are withheld when written with
capitals.

`recase_like` gives such a claim the capitals a writer would have used:

- each word takes the form the evidence writes it in *inside* a sentence ("Buzz Aldrin",
  "NASA"); a word the evidence also writes in lower case there stays lower case;
- countries, US states and their adjectives take their gazetteer form ("germany" -> "Germany",
  `affidavit.verify.places`), except the few that are also common words ("turkey", "china");
- each sentence starts with a capital.

A claim with a capital letter anywhere but at the start of a sentence is left exactly as
written. The recased text has the same
length as the original, so offsets into it still hold.

Limit: a name found neither in the evidence nor in the gazetteer ("... with neil young") stays
lower case, and the checks still cannot see it; such a claim is left to the model, as before.

Examples:
    >>> recase_like("paris is in germany.", "Paris is the capital of France.")
    'Paris is in Germany.'
    >>> recase_like("buzz aldrin walked on the moon.", "Armstrong and Buzz Aldrin landed.")
    'Buzz Aldrin walked on the moon.'
    >>> recase_like("buzz aldrin landed . he walked .", "Buzz Aldrin landed on the Moon.")
    'Buzz Aldrin landed . He walked .'
    >>> recase_like("russia lead 2-0\\nmary won earlier", "Russia won.")
    'Russia lead 2-0\\nMary won earlier'
    >>> recase_like("Already Cased text.", "Already cased, with Text.")
    'Already Cased text.'
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

from affidavit.claims.segment import split_sentences
from affidavit.verify.lexical import sentence_spans
from affidavit.verify.places import gazetteer_names

_WORD = re.compile(r"[A-Za-z\u00C0-\u024F][A-Za-z0-9\u00C0-\u024F'’\-]*")
# gazetteer names that are as often ordinary words when written in lower case
_COMMON_WORDS = frozenset({"turkey", "china", "chile", "jersey", "guinea", "georgia", "jordan"})


def needs_recasing(text: str) -> bool:
    """True when ``text`` has letters and no capital but a sentence's first letter.

    A claim extracted from a lower-case answer has its first letter capitalised ("Paris is in
    germany."), so a capital that starts a sentence says nothing about how it was written.
    """
    if not any(c.isalpha() for c in text):
        return False
    initial = set()
    for start, end in sentence_spans(text) or [(0, len(text))]:
        first = next((i for i in range(start, end) if text[i].isalnum()), None)
        if first is not None:
            initial.add(first)
    return not any(c.isupper() and i not in initial for i, c in enumerate(text))


@lru_cache(maxsize=1024)
def _evidence_forms(evidence: str) -> dict[str, str]:
    """lower-case word -> its most frequent form inside the evidence's sentences.

    A word the evidence writes in lower case anywhere inside a sentence maps to itself.
    """
    forms: dict[str, Counter[str]] = {}
    for start, end in sentence_spans(evidence) or [(0, len(evidence))]:
        # the sentence's first word is capitalised whatever it is: its capital says nothing
        for m in list(_WORD.finditer(evidence, start, end))[1:]:
            word = m.group(0).rstrip("'’-")
            forms.setdefault(word.lower(), Counter())[word] += 1
    out: dict[str, str] = {}
    for low, seen in forms.items():
        out[low] = low if low in seen else seen.most_common(1)[0][0]
    return out


@lru_cache(maxsize=1)
def _places() -> tuple[re.Pattern[str], dict[str, str]]:
    names = {
        n.lower(): n
        for n in gazetteer_names()
        if n.lower() not in _COMMON_WORDS and not n.isupper()  # "UK", "US": not from "us"
    }
    alternation = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![\w.])(?:{alternation})(?![\w])"), names


def recase_like(claim: str, evidence: str) -> str:
    """``claim`` with the capitals the evidence and the gazetteer give its words (same length).

    Only a claim without a capital letter but at sentence starts is changed (see the module
    docstring).
    """
    if not needs_recasing(claim):
        return claim
    forms = _evidence_forms(evidence)

    def from_evidence(m: re.Match[str]) -> str:
        word = m.group(0)
        core = word.rstrip("'’-")
        form = forms.get(core)
        if form is None or len(form) != len(core):
            return word
        return form + word[len(core) :]

    text = _WORD.sub(from_evidence, claim)
    pattern, names = _places()

    def place(m: re.Match[str]) -> str:
        found = m.group(0)
        # a word the evidence writes in lower case keeps it ("the turkey", "american" as written)
        if forms.get(found) == found:
            return found
        form = names.get(found, found)
        return form if len(form) == len(found) else found

    text = pattern.sub(place, text)
    chars = list(text)
    # the sentences of the claim as written: once names have capitals, a lower-case
    # tokenised stop (" . one of ...") no longer reads as a sentence end; a line that holds a
    # statement of its own (news highlights without full stops) starts one too
    starts = sentence_spans(claim) or [(0, len(claim))]
    starts += [(g.start, g.end) for g in split_sentences(claim)]
    for start, end in starts:
        first = next((i for i in range(start, end) if chars[i].isalnum()), None)
        if first is not None and chars[first].islower() and len(chars[first].upper()) == 1:
            chars[first] = chars[first].upper()
    return "".join(chars)
