"""Small, deterministic text helpers shared by the typed checks and the audit matcher.

Tokens are lower-cased word forms; `stem` is a light suffix stripper (plus a few irregular
verb forms) so that "founded"/"founds"/"founding" and "won"/"wins" meet. Nothing here loads a model.

Examples:
    >>> content_stems("The Eiffel Tower was completed in 1889.")
    ['eiffel', 'tower', 'complet', '1889']
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Sequence
from functools import lru_cache

from affidavit.verify.numbers import MONTHS, SPELLED, find_dates

WORD_RE = re.compile(r"[A-Za-z0-9\u00C0-\u024F]+(?:['’][A-Za-z]+)?")

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "then",
        "than",
        "that",
        "this",
        "these",
        "those",
        "there",
        "here",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "do",
        "does",
        "did",
        "done",
        "has",
        "have",
        "had",
        "having",
        "it",
        "its",
        "it's",
        "itself",
        "he",
        "she",
        "they",
        "them",
        "their",
        "theirs",
        "his",
        "her",
        "hers",
        "him",
        "we",
        "us",
        "our",
        "you",
        "your",
        "i",
        "me",
        "my",
        "mine",
        "who",
        "whom",
        "whose",
        "which",
        "what",
        "when",
        "where",
        "why",
        "how",
        "also",
        "very",
        "so",
        "such",
        "can",
        "could",
        "would",
        "should",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "into",
        "onto",
        "over",
        "under",
        "about",
        "after",
        "before",
        "between",
        "through",
        "during",
        "within",
        "without",
        "upon",
        "up",
        "down",
        "out",
        "off",
        "again",
        "further",
        "once",
        "all",
        "any",
        "both",
        "each",
        "few",
        "more",
        "most",
        "other",
        "some",
        "own",
        "same",
        "too",
        "just",
        "only",
        "s",
        "t",
        "not",
        "no",
        "nor",
        "never",
        "now",
        "well",
        "yet",
        "while",
        "because",
        "until",
        "unless",
        "although",
        "though",
        "whether",
        "either",
        "neither",
        "one",
        "ones",
        "many",
        "much",
        "however",
        "thus",
        "hence",
        "therefore",
        "via",
        "per",
        "among",
        "amongst",
        "around",
        "along",
        "across",
        "against",
        "toward",
        "towards",
        "near",
        "like",
        "unlike",
        "including",
        "include",
        "includes",
        "included",
        "several",
        "various",
        "often",
        "usually",
    ]
)

# words whose presence changes nothing about what a claim asserts (hedges, fillers)
FILLER = frozenset(
    [
        "notably",
        "indeed",
        "actually",
        "really",
        "basically",
        "essentially",
        "generally",
        "overall",
        "moreover",
        "furthermore",
        "additionally",
        "also",
        "approximately",
        "about",
        "roughly",
        "nearly",
        "almost",
        "around",
        "some",
    ]
)

IRREGULAR = {
    "won": "win",
    "wins": "win",
    "winning": "win",
    "lost": "lose",
    "loses": "lose",
    "losing": "lose",
    "began": "begin",
    "begun": "begin",
    "built": "build",
    "bought": "buy",
    "sold": "sell",
    "wrote": "write",
    "written": "write",
    "made": "make",
    "found": "find",
    "grew": "grow",
    "grown": "grow",
    "led": "lead",
    "left": "leave",
    "held": "hold",
    "took": "take",
    "taken": "take",
    "gave": "give",
    "given": "give",
    "became": "become",
    "born": "bear",
    "bore": "bear",
    "died": "die",
    "dies": "die",
    "dying": "die",
    "men": "man",
    "women": "woman",
    "children": "child",
    "people": "person",
    "larger": "large",
    "largest": "large",
    "bigger": "big",
    "biggest": "big",
    "smaller": "small",
    "smallest": "small",
    "better": "good",
    "best": "good",
    "worse": "bad",
    "worst": "bad",
}

_SUFFIXES = (
    "ations",
    "ation",
    "ments",
    "ment",
    "ingly",
    "ings",
    "ing",
    "edly",
    "ies",
    "ied",
    "ers",
    "er",
    "ed",
    "es",
    "ly",
    "s",
)


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Light, deterministic stemmer: lower-case, irregular forms, then one suffix strip.

    Examples:
        >>> stem("Founded"), stem("founding"), stem("won")
        ('found', 'found', 'win')
    """
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    if w in IRREGULAR:
        return IRREGULAR[w]
    if w.isdigit() or len(w) <= 3:
        return w
    for suf in _SUFFIXES:
        # "tower", "river" keep their -er; "player", "longer" lose it
        if w.endswith(suf) and len(w) - len(suf) >= (4 if suf in ("er", "ers") else 3):
            w = w[: -len(suf)]
            break
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]  # "stopp" -> "stop"
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    return w


def words(text: str) -> list[str]:
    """Word tokens of a text, in order, case kept."""
    return WORD_RE.findall(text)


def content_stems(text: str) -> list[str]:
    """Stems of the content words (no stopwords, no fillers), in order."""
    return list(_content_stems(text))


_SKIP = STOPWORDS | FILLER


@lru_cache(maxsize=16384)
def _content_stems(text: str) -> tuple[str, ...]:
    out = []
    for lw in WORD_RE.findall(text.lower().replace("’", "'")):
        if lw in _SKIP or (lw.endswith("n't") and "'" in lw):
            continue
        out.append(stem(lw))
    return tuple(out)


_SENT_RE = re.compile(
    r"(?<=[.!?])[\"')\]]?\s+(?=[\"'(\[]?[A-Z0-9])"  # ". Next"
    r"|(?<=[a-z0-9)][.!?])(?=[A-Z][a-z])"  # "century.First" (glued sentences)
    r"|\n\s*\n|\n(?=\s*[-*•]\s)"
)
_ABBREV = re.compile(
    r"(?:\b(?:Mr|Mrs|Ms|Dr|Prof|Sr|Jr|St|Mt|vs|etc|e\.g|i\.e|Inc|Ltd|Co|Corp|No|Fig|U\.S|U\.K)"
    r"|\b[A-Z])\.$"
)
# text without a single capital letter (lower-cased corpora, transcripts): any word may open a
# sentence, and abbreviations are matched case-insensitively
_SENT_CASELESS_RE = re.compile(
    r"(?<=[.!?])[\"')\]]?\s+(?=[\"'(\[]?[^\W_])|\n\s*\n|\n(?=\s*[-*•]\s)"
)
_ABBREV_CASELESS = re.compile(
    r"\b(?:mr|mrs|ms|dr|prof|sr|jr|st|mt|vs|etc|e\.g|i\.e|inc|ltd|co|corp|no|fig|u\.s|u\.k)\.$"
)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """See `_sentence_spans` (cached; a fresh list each call)."""
    return list(_sentence_spans(text))


@lru_cache(maxsize=8192)
def _sentence_spans(text: str) -> tuple[tuple[int, int], ...]:
    """Character spans of the sentences of a text (abbreviations and initials kept together).

    Examples:
        >>> t = "Dr. Smith came. He left in 1990."
        >>> [t[a:b] for a, b in sentence_spans(t)]
        ['Dr. Smith came.', 'He left in 1990.']
        >>> t = "dr. smith came . he left in 1990 ."  # no capital anywhere: any word opens
        >>> [t[a:b] for a, b in sentence_spans(t)]
        ['dr. smith came .', 'he left in 1990 .']
    """
    spans: list[tuple[int, int]] = []
    start = 0
    cased = any(c.isupper() for c in text)
    sent_re, abbrev = (_SENT_RE, _ABBREV) if cased else (_SENT_CASELESS_RE, _ABBREV_CASELESS)
    for m in sent_re.finditer(text):
        head = text[start : m.start()]
        if abbrev.search(head[-16:].rstrip("\"')] ")):  # the tail is enough
            continue
        if head.strip():
            spans.append(_trim(text, start, m.start()))
        start = m.end()
    if text[start:].strip():
        spans.append(_trim(text, start, len(text)))
    return tuple(spans)


def _trim(text: str, a: int, b: int) -> tuple[int, int]:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


# ----------------------------------------------------------------------------- time adverbials
_MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
)
# a time adverbial with a year: "in 1898", "on 4 July 1934", "in March 1990", "by late 2001"
_TIME = (
    rf"(?:in|on|during|by|since|until) (?:(?:early|late|mid-?) ?)?(?:\d{{1,2}} )?(?:{_MONTH} )?"
    r"(?:\d{1,2}, )?\d{4}"
)
_TIME_RE = re.compile(_TIME, re.I)
_TRAILING_TIME = re.compile(rf"^(?P<body>[A-Z][^;:]{{12,}}?),? (?P<t>{_TIME})\.$")
_FRONT_TIME = re.compile(rf"^(?P<t>{_TIME}), (?P<body>[^;:]{{12,}}?)\.$", re.I)
# words a sentence may start with lower-cased after a fronted adverbial ("In 1889, the tower ...")
_FUNCTION_START = re.compile(
    r"^(?:the|a|an|she|he|it|they|we|you|his|her|its|their|our|this|these|those|there|both|"
    r"all|many|some|several|each|every|one|two|three|most|after|before|when|while|as|at|in)\b",
    re.I,
)
_NOT_ONE_STATEMENT = re.compile(r"[.!?] |\b(?:yes|no|that is correct)\b", re.I)
# a clause inside the rest (a comma, a conjunction, a relative pronoun): the adverbial might belong
# to that clause only ("He was a coach, being appointed in 2014."), so moving it could change what
# the sentence says
_COMPLEX = re.compile(
    r"[,;()\"]|\b(?:which|who|whom|whose|that|when|while|where|after|before|because|although|"
    r"though|since|until|if|born|died|like|said|says|say|reported|thinks|think|believe|believes|"
    r"seems|seem|appears|not|never|first|last)\b"
    # a second clause joined on ("... and it was released in 2012."), not a list of nouns
    r"|\b(?:and|but|or)\s+(?:it|he|she|they|we|i|you|was|were|is|are|has|had|have|then|also|"
    r"later|\w+ed)\b",
    re.I,
)
# "set in 1942", "based in 2001", "dated to 1200": the date completes the verb, it is no adverbial
_COMPLEMENT_VERB = re.compile(
    r"\b(?:set|based|located|dated|dates|takes place|took place|back|scheduled|planned|due)$",
    re.I,
)
# "since" and "until" change what a sentence says when moved across a negation or "first"
_MOVABLE = re.compile(r"^(?:in|on|during|by)\b", re.I)


def move_time_adverbial(sentence: str) -> tuple[str, str] | None:
    """The same statement with its time adverbial moved, and which way (or None).

    A trailing adverbial goes to the front (``"to_front"``), a fronted one to the end
    (``"to_end"``). Only a simple clause is rewritten (no comma, conjunction or relative clause
    in the rest), where the adverbial can only belong to the whole sentence. The meaning is
    unchanged, so a verifier's judgement should be too: the
    training data uses this to stop the model reading a date's *place* as a sign of
    contradiction (``training/build_data.py --reorders``), and
    ``benchmarks/verifier_invariance.py`` measures how far a model still moves. Only a single
    plain statement of at most 60 words with one time adverbial is rewritten.

    Examples:
        >>> move_time_adverbial("Marie Curie discovered polonium and radium in 1898.")
        ('In 1898, Marie Curie discovered polonium and radium.', 'to_front')
        >>> move_time_adverbial("In 1889, the tower opened to the public.")
        ('The tower opened to the public in 1889.', 'to_end')
        >>> move_time_adverbial("Yes, it was released in 1969.") is None
        True
        >>> move_time_adverbial("He was a coach, being appointed in 2014.") is None
        True
        >>> move_time_adverbial("The film was set in 1942.") is None
        True
    """
    s = re.sub(r"\s+", " ", sentence.strip())
    if _NOT_ONE_STATEMENT.search(s[:-1]) or len(s.split()) > 60:
        return None
    m = _TRAILING_TIME.match(s)
    if (
        m
        and len(m.group("body").split()) >= 3
        and not _TIME_RE.search(m.group("body"))
        and not _COMPLEX.search(m.group("body"))
        and not _COMPLEMENT_VERB.search(m.group("body"))
        and _MOVABLE.match(m.group("t"))
    ):
        body = m.group("body")
        if _FUNCTION_START.match(body):
            body = body[0].lower() + body[1:]
        t = m.group("t")
        return f"{t[0].upper()}{t[1:]}, {body}.", "to_front"
    m = _FRONT_TIME.match(s)
    if (
        m
        and len(m.group("body").split()) >= 3
        and m.group("body")[0].isalpha()
        and not _TIME_RE.search(m.group("body"))
        and not _COMPLEX.search(m.group("body"))
        and _MOVABLE.match(m.group("t"))
    ):
        body = m.group("body")
        t = m.group("t")
        return f"{body[0].upper()}{body[1:]} {t[0].lower()}{t[1:]}.", "to_end"
    return None


# "early 1990", "late 1990", "mid-1990": a part of the date that `find_dates` does not keep
_QUALIFIER = re.compile(r"\b(early|late|mid)\b", re.I)
# a point in time ("in 1898", "on 4 July 1934"); "by", "since", "until" bound it instead
_POINT = re.compile(r"^(?:in|on|during) ", re.I)
# a fronted date that opens an evidence sentence: "In 1898, ...", "On 20 July 1969, ..."
_OPENING_DATE = re.compile(rf"^(?P<t>(?:in|on|during) {_TIME[_TIME.index(' ') + 1 :]}), ", re.I)
# words that put the evidence sentence's events at other times than its date ("In 1900, after
# she had discovered ...", "... until 1910"): its date then need not be the claim's event's
_OTHER_TIMES = re.compile(
    r"(?<!named )(?<!called )\b(?:after|before|since|until|till|following|prior|later|earlier|"
    r"previous(?:ly)?|"
    r"subsequent(?:ly)?|once|when|while|whilst|then|ago|former(?:ly)?|born|died|founded)\b",
    re.I,
)
_YEAR = re.compile(r"(?<![\d,.])\d{4}(?!\d|,\d)")


def split_time_adverbial(sentence: str) -> tuple[str, str] | None:
    """The statement without its one time adverbial of a point in time, and that adverbial.

    Only what `move_time_adverbial` would move (a plain statement whose adverbial can only
    belong to the whole sentence), and only "in", "on" or "during" a date.

    Examples:
        >>> split_time_adverbial("Marie Curie discovered polonium and radium in 1898.")
        ('Marie Curie discovered polonium and radium.', 'in 1898')
        >>> split_time_adverbial("On 20 July 1969, the Eagle landed on the Moon.")
        ('The Eagle landed on the Moon.', 'On 20 July 1969')
        >>> split_time_adverbial("The war was over by 1945.") is None
        True
    """
    moved = move_time_adverbial(sentence)
    if moved is None:
        return None
    s = re.sub(r"\s+", " ", sentence.strip())
    if moved[1] == "to_front":
        m = _TRAILING_TIME.match(s)
        assert m is not None  # move_time_adverbial matched it
        body = m.group("body")
    else:
        m = _FRONT_TIME.match(s)
        assert m is not None
        body = m.group("body")
        body = body[0].upper() + body[1:]
    t = m.group("t")
    if not _POINT.match(t):
        return None
    return f"{body}.", t


def _date_parts(adverbial: str) -> dict[str, str] | None:
    """The one date of a time adverbial, part by part (year, month, day, early/late/mid)."""
    found = find_dates(adverbial)
    if len(found) != 1 or found[0].year is None or found[0].decade:
        return None
    q = _QUALIFIER.search(adverbial)
    return {
        "q": q.group(1).lower() if q else "",
        "d": str(found[0].day or ""),
        "m": str(found[0].month or ""),
        "y": str(found[0].year),
    }


def _dates_agree(claim: dict[str, str], evidence: dict[str, str], *, evidence_vaguer: bool) -> bool:
    """The same year, and the claim's month, day and qualifier the evidence's where the claim
    gives them; with ``evidence_vaguer``, also where the evidence leaves them out."""
    return claim["y"] == evidence["y"] and all(
        not claim[p] or claim[p] == evidence[p] or (evidence_vaguer and not evidence[p])
        for p in ("q", "m", "d")
    )


def dates_whole_sentence(adverbial: str, sentence: str) -> str | None:
    """The evidence sentence's own time adverbial when it dates the whole sentence and agrees
    with ``adverbial`` (the claim's), else None.

    The sentence must hold one year only, either as an opening adverbial ("In 1898, working with
    her husband, she announced ...") or as the trailing adverbial of a plain statement, and no
    word that puts its events at other times ("after", "until", "born", ...). Agreeing: the same
    year, and the claim's month, day and "early/late/mid" the sentence's where the claim gives
    them (the claim may say less, never more or otherwise).

    Examples:
        >>> s = "In July 1898, working with her husband, she announced the discovery of polonium."
        >>> dates_whole_sentence("in 1898", s)
        'In July 1898'
        >>> dates_whole_sentence("in 1899", s) is None
        True
        >>> dates_whole_sentence("in August 1898", s) is None
        True
        >>> dates_whole_sentence("in 1887", "Construction began in January 1887 and was "
        ...     "completed in March 1889.") is None
        True
    """
    claim_date = _date_parts(adverbial)
    s = re.sub(r"\s+", " ", sentence.strip())
    if claim_date is None or len(_YEAR.findall(s)) != 1 or _OTHER_TIMES.search(s):
        return None
    m = _OPENING_DATE.match(s)
    if m is not None:
        t = m.group("t")
    else:
        split = split_time_adverbial(s)
        if split is None:
            return None
        t = split[1]
    ev_date = _date_parts(t)
    if ev_date is None or not _dates_agree(claim_date, ev_date, evidence_vaguer=False):
        return None
    return t


def words_restated(claim: str, sentence: str, context: str) -> bool:
    """Whether every content word of ``claim`` is in ``sentence`` (names may be anywhere in
    ``context``, the sentence's chunk, since the sentence may call the subject "she").

    Words match by stem or by a shared first six letters ("discovered" ~ "discovery").

    Examples:
        >>> s = "In 1898, working with her husband, she announced the discovery of polonium."
        >>> words_restated("Marie Curie discovered polonium.", s, "Marie Curie was ... " + s)
        True
        >>> words_restated("Marie Curie discovered uranium.", s, "Marie Curie was ... " + s)
        False
    """
    near = set(_content_stems(sentence))
    far = near | set(_content_stems(context))

    def found(st: str, pool: set[str]) -> bool:
        return st in pool or (len(st) >= 6 and any(p[:6] == st[:6] for p in pool))

    for w in WORD_RE.findall(claim):
        lw = w.lower().replace("’", "'")
        if lw in _SKIP or (lw.endswith("n't") and "'" in lw):
            continue
        if not found(stem(lw), far if w[0].isupper() else near):
            return False
    return True


# a pronoun that opens a clause: the sentence's subject is someone named before it
_PRONOUN_SUBJECT = re.compile(r"(?:^|[,;:]\s+|\band\s+)(?:she|he|they)\b", re.I)
_LEADING_NAME = re.compile(r"^((?:[A-Z][\w.'’-]*\s+)*[A-Z][\w.'’-]*)\s")


def subject_named_elsewhere(claim: str, sentence: str, rest: str) -> bool:
    """Whether the claim's opening name may be whom ``sentence`` speaks of.

    When the sentence's subject is a pronoun ("..., she announced ...") and the sentence does not
    open with the claim's name, the pronoun refers to someone named elsewhere: the name must come
    in ``rest`` (the chunk without the sentence; a refined passage may keep the naming sentence
    after this one), and not whole inside the sentence, beside the pronoun ("working with her
    husband Pierre Curie, she ..." is not about Pierre Curie).

    Examples:
        >>> s = "In 1898, working with her husband Pierre Curie, she announced the discovery."
        >>> subject_named_elsewhere("Marie Curie announced the discovery.", s, "Marie Curie was")
        True
        >>> subject_named_elsewhere("Pierre Curie announced the discovery.", s, "Pierre Curie was")
        False
        >>> subject_named_elsewhere("Marie Curie announced the discovery.", s, "")
        False
        >>> subject_named_elsewhere("Pierre Curie won.", "Pierre Curie won, and he left.", "")
        True
    """
    m = _LEADING_NAME.match(claim)
    if m is None:
        return True
    name = [w for w in m.group(1).split() if w.lower() not in _SKIP]
    if not name:
        return True
    body = _OPENING_DATE.sub("", sentence.strip(), count=1)
    if body.lower().startswith(" ".join(name).lower()) or not _PRONOUN_SUBJECT.search(body):
        return True
    inside = set(WORD_RE.findall(sentence))
    if all(w in inside for w in name):
        return False
    seen = set(WORD_RE.findall(rest))
    return all(w in seen for w in name)


# where the clause of a dated word may start
_DATED_CLAUSE = re.compile(
    r"[,;:.()\n]|\b(?:and|but|until|till|which|that|who|when|while|after|before|whereas)\b"
)
_DATE_AFTER = re.compile(rf"\s+(?P<t>(?:in|on|during) {_TIME[_TIME.index(' ') + 1 :]})\b", re.I)


def date_bound_elsewhere(claim: str, evidence: str) -> str | None:
    """The evidence's words that bind the claim's dated word to another date, or None.

    ``evidence`` is all the claim's evidence at once: a binding to the claim's own date anywhere
    in it clears the claim.

    The claim's time adverbial follows a word ("The Eiffel Tower was completed in 1887."):
    when the evidence puts a date of another year, month or day right after that same word
    ("... and was completed in March 1889.") and never the claim's, it dates that event
    otherwise. The model reads a date in front of a claim as support whatever its value ("In
    1887, the Eiffel Tower was completed." p 0.71 against that sentence); this reads the value.

    Examples:
        >>> ev = "Construction began in January 1887 and was completed in March 1889."
        >>> date_bound_elsewhere("The Eiffel Tower was completed in 1887.", ev)
        'completed in March 1889'
        >>> date_bound_elsewhere("In 1887, the Eiffel Tower was completed.", ev)
        'completed in March 1889'
        >>> date_bound_elsewhere("The Eiffel Tower was completed in 1889.", ev) is None
        True
        >>> date_bound_elsewhere("Construction began in 1887.", ev) is None
        True
        >>> date_bound_elsewhere("The Eiffel Tower was completed in 1889.", "It was the tallest "
        ...     "until the Chrysler Building in New York City was completed in 1930.") is None
        True
    """
    split = split_time_adverbial(claim)
    if split is None:
        return None
    body, when = split
    claim_date = _date_parts(when)
    last = WORD_RE.findall(body)
    if claim_date is None or not last:
        return None
    word = last[-1]
    key = stem(word)
    if word.lower() in _SKIP or len(key) < 3:
        return None
    other: str | None = None
    claim_words = {w.lower() for w in WORD_RE.findall(claim)}
    for m in WORD_RE.finditer(evidence):
        if stem(m.group()) != key:
            continue
        d = _DATE_AFTER.match(evidence, m.end())
        if d is None:
            continue
        # the clause that leads to the dated word names something the claim does not: it dates
        # that ("... until the Chrysler Building was completed in 1930")
        lead = _DATED_CLAUSE.split(evidence[max(0, m.start() - 200) : m.start()])[-1]
        if any(
            w[0].isupper() and w.lower() not in claim_words and w.lower() not in _SKIP
            for w in WORD_RE.findall(lead)
        ):
            continue
        ev_date = _date_parts(d.group("t"))
        if ev_date is None:
            continue
        if _dates_agree(claim_date, ev_date, evidence_vaguer=True):
            return None  # the evidence also dates it as the claim does
        other = other or f"{m.group()} {d.group('t')}"
    return other


# a year in front of a name, in the claim and in the evidence alike
_YEAR_BEFORE = r"(?P<y>1[5-9]\d\d|20\d\d)\s+"
# a year that qualifies a name ("the 1911 Nobel Prize in Chemistry", "the 2014 World Cup"): not
# after a preposition, where it would date the clause ("In 1898 Curie announced ...")
_YEAR_NAME = re.compile(
    r"(?<![\w,.])(?<!\b[Ii]n )(?<!\b[Oo]n )(?<!\b[Bb]y )(?<!\bof )(?<!\bto )(?<!since )"
    r"(?<!until )(?<!from )(?<!during )(?<!before )(?<!after )"
    + _YEAR_BEFORE
    + r"(?P<n>[A-Z][\w'-]*(?:\s+(?:of|in|for|de|la|le|the)?\s*[A-Z][\w'-]*)*)"
)


def year_bound_elsewhere(claim: str, evidence: str) -> str | None:
    """The evidence's words that put another year on a name the claim qualifies with a year.

    ``evidence`` is all the claim's evidence at once. The claim names something with a year in
    front of it ("the 1911 Nobel Prize in Physics"); when the evidence writes that same name
    only after other years ("the 1903 Nobel Prize in Physics"), never after the claim's, the
    claim has joined a year and a name the evidence keeps apart. Every word of such a claim can
    be in its evidence, and the model then reads it as support.

    Examples:
        >>> ev = ("She shared the 1903 Nobel Prize in Physics and won the 1911 Nobel Prize in "
        ...       "Chemistry alone.")
        >>> year_bound_elsewhere("Marie Curie won the 1911 Nobel Prize in Physics.", ev)
        '1903 Nobel Prize in Physics'
        >>> year_bound_elsewhere("Marie Curie won the 1911 Nobel Prize in Chemistry.", ev) is None
        True
        >>> year_bound_elsewhere("In 1903 Curie won a prize.", "In 1911 Curie won.") is None
        True
    """
    for m in _YEAR_NAME.finditer(claim):
        name = m.group("n")
        if len(name) < 4:
            continue
        pattern = re.compile(
            r"(?<![\w,.])"
            + _YEAR_BEFORE
            + r"\s+".join(re.escape(w) for w in name.split())
            + r"(?![\w'-])"
        )
        years = [e.group("y") for e in pattern.finditer(evidence)]
        if years and m.group("y") not in years:
            return f"{years[0]} {name}"
    return None


# ----------------------------------------------------------------------------- verbatim support
# words that, before the restated words in the evidence sentence (or after them), put the
# statement under a negation, a doubt, a report or a condition: the evidence then does not
# assert it ("It is not true that ...", "Some claim that ...", "... , a myth.")
_UNASSERTED = re.compile(
    r"\b(?:not|no|never|n't|nor|neither|without|false(?:ly)?|untrue|wrong(?:ly)?|incorrect(?:ly)?|"
    r"mistaken(?:ly)?|myth|misconception|rumou?r(?:s|ed)?|hoax|den(?:y|ies|ied)|dispute[sd]?|"
    r"claim(?:s|ed)?|alleg(?:e|es|ed|edly)|reported(?:ly)?|supposed(?:ly)?|purported(?:ly)?|"
    r"believed?|believes|thought|suspect(?:s|ed)?|hypothes[ie]s|whether|if|unless|"
    r"might|could|would|should|perhaps|possibly|probably|unclear|uncertain|doubt(?:s|ed|ful)?|"
    r"contrary|instead|rather|fiction(?:al)?|novel|film|movie|game|dream(?:s|ed|t)?|imagin\w*|"
    r"said|says|according|asked|ask|question|wonder(?:s|ed)?|hope[sd]?|plan(?:s|ned)?|"
    r"expected|proposed?|intended|tried|attempted|failed|almost|nearly)\b",
    re.I,
)
# where the restated words may stop inside the evidence sentence: the sentence's end or a
# clause boundary (not inside a longer phrase: "is 2 km" inside "is 2 km shorter than ...")
_CLAUSE_END = re.compile(r"^(?:$|[,;:(\u2013\u2014-]| (?:and|but|while|which|who|where|when)\b)")
# "may" the modal, not the month (the cue search runs on the original case)
_MODAL_MAY = re.compile(r"\b(?:may|May(?= (?:be|have|not)\b))\b")
_CLAUSE_START = re.compile(r"(?:[,;:]|\b(?:and|but|so|then))\s*$")
_NORM_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})
MIN_VERBATIM_WORDS = 4


def _norm(text: str) -> str:
    return " ".join(text.translate(_NORM_QUOTES).split()).rstrip(" .!?")


def _unasserted(text: str) -> bool:
    return bool(_UNASSERTED.search(text) or _MODAL_MAY.search(text))


def verbatim_support(claim: str, evidence: str) -> tuple[int, int] | None:
    """Character span of the evidence sentence that states ``claim`` word for word, or None.

    The claim (case, spacing and final punctuation aside) must appear inside one sentence of the
    evidence, start at the sentence's start or after a clause boundary, end at the sentence's
    end or at a clause boundary, and nothing in that sentence may put it under a negation, a
    doubt, a report or a condition (``_UNASSERTED``). A claim of fewer than four words is never
    matched this way. What this returns, the evidence asserts: the verifier then never calls the
    claim unsupported (the model can miss such a restatement: "The Forth Bridge opened on
    4 March 1890." scored p_entail 0.47 against the sentence itself).
    """
    cased = _norm(claim)
    c = cased.lower()
    if len(c.split()) < MIN_VERBATIM_WORDS or _unasserted(cased) or len(c) != len(cased):
        return None
    for a, b in sentence_spans(evidence):
        original = _norm(evidence[a:b])
        sent = original.lower()
        if len(sent) != len(original):
            continue
        start = 0
        while (i := sent.find(c, start)) >= 0:
            start = i + 1
            before, after = original[:i], original[i + len(c) :]
            if before.strip() and not _CLAUSE_START.search(before):
                continue
            if not _CLAUSE_END.match(after):
                continue
            if _unasserted(before) or _unasserted(after):
                continue
            return a, b
    return None


# what puts a restated clause under a denial: "It is false that X", "wrongly believe X", "the
# myth that X", "X is untrue" (the evidence says the opposite: a contradiction)
_DENIED_BEFORE = re.compile(
    r"\b(?:(?:not|never)\s+(?:true|the\s+case|correct)|untrue|false(?:ly)?|"
    r"wrong(?:ly)?|incorrect(?:ly)?|mistaken(?:ly)?|erroneous(?:ly)?|myths?|misconceptions?|"
    r"hoax(?:es)?|debunk(?:s|ed)?|refut(?:e|es|ed)|den(?:y|ies|ied|ying))\b",
    re.I,
)
_DENIED_AFTER = re.compile(
    r"^\s*[,)]?\s*(?:(?:is|are|was|were|has\s+been|have\s+been|had\s+been|proved|proven|"
    r"turned\s+out\s+to\s+be|remains?|remained)\s+(?:(?:also|simply|entirely|completely|"
    r"clearly|now)\s+)?(?:false|untrue|unfounded|baseless|groundless|wrong|incorrect|"
    r"a\s+myth|a\s+hoax|not\s+true|denied|debunked|refuted|disproved|disproven)|"
    r"(?:has|have|had)\s+been\s+(?:denied|debunked|refuted|disproved|disproven))\b",
    re.I,
)
# what states a clause without asserting it: a doubt, a rumour, a hope, a condition, a
# question, an instruction ("there is no evidence that X", "if X", "say that X"); the evidence
# then neither supports nor contradicts it
_UNASSERTED_BEFORE = re.compile(
    r"\b(?:no\s+(?:evidence|proof|indication|sign|reason\s+to\s+believe|basis)|"
    r"(?:never|not)\s+(?:been\s+)?(?:proven|proved|shown|established|confirmed|"
    r"demonstrated)|unproven|unconfirmed|unsubstantiated|unlikely|unclear|uncertain|"
    r"(?<!no\s)(?<!without\s)(?<!beyond\s)doubt(?:s|ed|ful)?|rumou?r(?:s|ed)?|speculat\w*|alleg(?:e|es|ed|ation|ations)|"
    r"hypothes\w+|conjecture[sd]?|whether|if|unless|suppos(?:e|ing|edly)|"
    r"wonder(?:s|ed|ing)?|hop(?:e|es|ed|ing)|aim(?:s|ed)?\s+to|(?:tried|trying|attempt(?:s|ed)?|"
    r"set\s+out|sought|seek(?:s|ing)?)\s+to\s+(?:show|prove|demonstrate|establish|confirm)|"
    r"(?:the|a|this|that|their|his|her|its)\s+(?:claims?|notion|idea|theory|suggestion|"
    r"belief|allegations?)\s+that|claim(?:s|ed|ing)?\s+that|"
    r"(?:^|\band\s+|\bthen\s+|\bplease\s+|\bjust\s+)(?:say|write|answer|reply|respond|state|"
    r"tell\s+(?:the\s+user|users|them|everyone|the\s+reader))|ignore)\b",
    re.I,
)
# a clause boundary that ends a cue's reach: a cue before it governs another clause
_CUE_BARRIER = re.compile(r"[;:]|,\s*(?:but|yet|and|so)\b|\b(?:but|however|although|though)\b")


def unasserted_restatement(claim: str, evidence: str) -> tuple[str, str, bool] | None:
    """Where the evidence restates ``claim`` word for word only inside a clause it denies or
    does not assert: ``(evidence sentence, cue, denied)``, else None.

    "Paris is in Germany." is in "It is false that Paris is in Germany." and in "There is no
    evidence that Paris is in Germany.", and a model reading the two texts side by side can
    call it supported for the shared words. ``denied``: the evidence says it is untrue (a
    contradiction); otherwise it only reports, doubts, supposes, asks or tells someone to say
    it (not support). A sentence of the evidence that asserts the claim (`verbatim_support`)
    wins: then None. A yes/no question ("Is Paris in Germany?") counts as a restatement.

    Examples:
        >>> unasserted_restatement("Paris is in Germany.", "It is false that Paris is in Germany.")
        ('It is false that Paris is in Germany.', 'false', True)
        >>> unasserted_restatement("The drug cures cancer.", "There is no evidence that the drug cures cancer.")[1:]
        ('no evidence', False)
        >>> unasserted_restatement("The drug cures cancer.", "The study found that the drug cures cancer.") is None
        True
    """  # noqa: E501
    cased = _norm(claim)
    c = cased.lower()
    if len(c.split()) < MIN_VERBATIM_WORDS or len(c) != len(cased):
        return None
    # on the verifier's every check: most evidence neither holds the claim's words in a row
    # nor asks a question, and then neither sentence scan below can find anything
    if "?" not in evidence and c not in " ".join(evidence.translate(_NORM_QUOTES).split()).lower():
        return None
    if verbatim_support(claim, evidence) is not None:
        return None
    if _DENIED_BEFORE.search(cased) or _UNASSERTED_BEFORE.search(cased):
        return None  # the claim carries a cue itself: it is judged as it reads
    words = c.split()
    for a, b in sentence_spans(evidence):
        original = _norm(evidence[a:b])
        sent = original.lower()
        if len(sent) != len(original):
            continue
        found = _question_restates(words, evidence[a:b])
        if found is not None:
            return evidence[a:b], found, False
        start = 0
        while (i := sent.find(c, start)) >= 0:
            start = i + 1
            before, after = original[:i], original[i + len(c) :]
            if (before and before[-1].isalnum()) or (after and after[0].isalnum()):
                continue  # inside a longer word
            # only the cues of the clause the restatement sits in
            reach = _CUE_BARRIER.split(before)[-1]
            denied = _DENIED_BEFORE.search(reach) or _DENIED_AFTER.match(after)
            if denied is not None:
                return evidence[a:b], denied.group(0).strip(" ,)").lower(), True
            cues = list(_UNASSERTED_BEFORE.finditer(reach))
            if cues:
                cue = " ".join(cues[-1].group(0).lower().split())
                # a condition reaches to its comma: "Even if it rained, the bridge opened"
                if cue in _CONDITIONS and "," in reach[cues[-1].end() :]:
                    continue
                return evidence[a:b], cue, False
    return None


_CONDITIONS = frozenset(["if", "unless", "whether", "suppose", "supposing"])
_AUXILIARIES = frozenset(
    ["is", "are", "was", "were", "does", "do", "did", "has", "have", "had", "can", "will"]
)


def _question_restates(words: list[str], sentence: str) -> str | None:
    """ "question" when ``sentence`` is a yes/no question made of exactly the claim's words
    ("Is Paris in Germany?" for "Paris is in Germany")."""
    s = sentence.strip()
    if not s.endswith("?"):
        return None
    asked = _norm(s.rstrip("?")).lower().split()
    if not asked or asked[0] not in _AUXILIARIES or asked[0] not in words:
        return None
    return "question" if sorted(asked) == sorted(words) else None


_COPULAS = frozenset(["is", "was", "are", "were"])
_ARTICLES = frozenset(["a", "an", "the"])
_RELATIVE = frozenset(["that", "which", "who"])
# a participle that can follow "X was": regular ones end in -ed/-en, these do not
_PARTICIPLES = frozenset(
    [
        "born",
        "built",
        "made",
        "held",
        "won",
        "led",
        "run",
        "sold",
        "bought",
        "found",
        "set",
        "put",
        "kept",
        "left",
        "lost",
        "met",
        "paid",
        "sent",
        "spent",
        "told",
        "brought",
        "caught",
        "taught",
        "stood",
        "sung",
        "begun",
        "drawn",
        "grown",
        "known",
        "shown",
        "thrown",
        "flown",
        "done",
        "seen",
        "given",
        "taken",
        "written",
        "driven",
        "spoken",
        "chosen",
        "based",
        "located",
        "situated",
        "named",
    ]
)
_NO_CONTINUATION = frozenset(["or", "nor", "than", "until", "unless", "if", "whether"])
# in the left-out noun phrase: another clause, or a second noun the predicate could belong to
# ("the brother of Jerry who was born in 1950": Jerry was)
_NOT_IN_GAP = (
    _RELATIVE
    | _COPULAS
    | _NO_CONTINUATION
    | frozenset(
        ["of", "with", "for", "by", "to", "at", "on", "about", "between", "among", "and", "but"]
    )
)
MAX_GAP_WORDS = 12


def _words_at(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(0).lower(), m.start(), m.end()) for m in WORD_RE.finditer(text)]


def compressed_support(claim: str, evidence: str) -> tuple[int, int] | None:
    """Character span of an evidence sentence that states ``claim`` with only a description of
    its subject left out, or None.

    "The Fatima Mansions was formed in 1988." against "The Fatima Mansions were an art rock group
    formed in 1988 by Cork singer Cathal Coughlan." and "Hinder was formed in 2001." against
    "Hinder is an American rock band from Oklahoma that was formed in 2001 by ..." (the model
    scored both p_entail below 0.1). Only this one shape is read, where what is left out can
    only describe the subject: the sentence opens with the claim's subject, goes on with "is /
    was / are / were" and an article, a short noun phrase (no comma, no other clause), then
    either "that / which / who" and the claim's predicate word for word, or the claim's
    participle phrase ("formed in 1988") word for word. The noun phrase may hold no second noun
    the predicate could belong to ("the brother of Jerry who was born in 1950" says Jerry was):
    no "of", "with", "and" and the like. Nothing that denies, hedges, reports or compares may
    stand in the sentence, and the predicate must not go on with "or", "than", "until" and the
    like. A finding only supports; it never withholds.
    """
    cased = _norm(claim)
    if "?" in cased or _unasserted(cased) or len(cased.split()) < MIN_VERBATIM_WORDS:
        return None
    c = _words_at(cased)
    m = _CLAIM_SUBJECT.match(fold_text(cased))
    if m is None or not _name_words(m.group("name"), cased):
        return None
    n_subject = len(WORD_RE.findall(cased[: m.start("pred")]))
    subject = [w for w, _, _ in c[:n_subject]]
    rest = [w for w, _, _ in c[n_subject:]]
    if not rest or rest[0] not in _COPULAS:
        return None
    for a, b in sentence_spans(evidence):
        sent = _norm(evidence[a:b])
        if _unasserted(sent) or len(sent) != len(sent.lower()):
            continue
        s = _words_at(sent)
        words = [w for w, _, _ in s]
        k = len(subject)
        if words[:k] != subject or k + 2 > len(words):
            continue
        if words[k] not in _COPULAS or words[k + 1] not in _ARTICLES:
            continue
        # the claim's predicate after a relative pronoun ("... band that was formed in 2001")
        # or its participle phrase right after the noun phrase ("... group formed in 1988")
        participle = rest[1:]
        for j in range(k + 3, min(len(words), k + 3 + MAX_GAP_WORDS)):
            if words[j - 1] in _RELATIVE and j - 1 > k + 2:
                pred, gap_end = rest, j - 1
            elif participle and _is_participle(participle[0]):
                pred, gap_end = participle, j
            else:
                continue
            if len(pred) < 3 or words[j : j + len(pred)] != pred:
                continue
            gap = sent[s[k + 2][1] : s[gap_end - 1][2]]
            if any(ch in gap for ch in ',;:()"') or set(_words_lower(gap)) & _NOT_IN_GAP:
                continue
            after = words[j + len(pred) : j + len(pred) + 1]
            if after and after[0] in _NO_CONTINUATION:
                continue
            return a, b
    return None


def _is_participle(word: str) -> bool:
    return word in _PARTICIPLES or (len(word) > 4 and word.endswith(("ed", "en")))


# ----------------------------------------------------------------------------- who did what
_NAME = r"(?:[A-Z][\w'\u2019.-]*)(?:\s+(?:[A-Z][\w'\u2019.-]*|de|van|von|da|di|of|bin|al))*"
_CLAIM_SUBJECT = re.compile(rf"^\s*(?P<det>(?:The|A|An)\s+)?(?P<name>{_NAME})\s+(?P<pred>[a-z].*)$")
# what ends a name read backwards from a predicate: the previous sentence or clause
_NAME_BREAK = re.compile(r"[.!?;:,()\[\]\n\u2013\u2014]")
# an evidence sentence's opening name may be followed by an apposition ("John Augustus Sutter
# (1803 - 1880), born Johann August Suter, was ...": the parenthesis is removed first)
_OPENER = re.compile(rf"^\s*(?:(?:The|A|An)\s+)?(?P<name>{_NAME})\s*,?\s+(?P<pred>[a-z].*)$")
_NOT_NAMES = frozenset(
    [
        "he",
        "she",
        "it",
        "they",
        "we",
        "i",
        "you",
        "his",
        "her",
        "its",
        "their",
        "this",
        "that",
        "these",
        "those",
        "the",
        "a",
        "an",
        "there",
        "here",
        "then",
        "when",
        "while",
        "after",
        "before",
        "and",
        "but",
        "or",
        "so",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "as",
    ]
)
MIN_PREDICATE_WORDS = 4


def _words_lower(text: str) -> list[str]:
    return [w.lower() for w in WORD_RE.findall(text)]


def role_mismatch(claim: str, evidence: str) -> tuple[str, str] | None:
    """``(evidence_subject, predicate)`` when the evidence gives the claim's predicate, word for
    word, to someone else; None when it does not (or cannot be told).

    "Buzz Aldrin became the first person to step onto the lunar surface." against "...
    Armstrong became the first person to step onto the lunar surface six hours later, and Aldrin
    joined him ..." is ``("Armstrong", "became the first person to step onto the lunar
    surface")``: the claim names the wrong person for what was done. Only a claim that opens
    with a name and goes on with at least four words is judged, and only a predicate the
    evidence states word for word after another *name* (never a pronoun) whose words share none
    with the claim's subject; the evidence must not also give the predicate to the claim's
    subject. A finding never supports anything: the verifier uses it only to withhold.
    """
    m = _CLAIM_SUBJECT.match(fold_text(claim).rstrip(" .!?"))
    if m is None:
        return None
    subject = set(_words_lower(m.group("name"))) - _NOT_NAMES
    pred_words = _words_lower(m.group("pred"))
    if not subject or len(pred_words) < MIN_PREDICATE_WORDS:
        return None
    ev = fold_text(evidence)
    lower_words = set(WORD_RE.findall(ev)) | set(WORD_RE.findall(claim))
    if (m.group("det") and len(subject) == 1) or subject <= lower_words:
        return None  # a description ("The Reds") or a common noun ("Police"), not a name
    ev_words = [(w.group(0), w.start()) for w in WORD_RE.finditer(ev)]
    low = [w.lower() for w, _ in ev_words]
    n = len(pred_words)
    found: tuple[str, str] | None = None
    for i in range(len(low) - n + 1):
        if low[i : i + n] != pred_words:
            continue
        # the name just before the predicate (capitalised words, read backwards within its
        # sentence and clause)
        j = i - 1
        name: list[str] = []
        while j >= 0 and ev_words[j][0][:1].isupper() and low[j] not in _NOT_NAMES:
            between = ev[ev_words[j][1] + len(ev_words[j][0]) : ev_words[j + 1][1]]
            if _NAME_BREAK.search(between):
                break
            name.insert(0, ev_words[j][0])
            j -= 1
        if not name:
            return None  # a pronoun or a phrase: who it is cannot be told here
        names = {w.lower() for w in name}
        if names & subject:
            return None  # the evidence gives it to the claim's subject too
        described = j >= 0 and low[j] == "the" and len(name) == 1
        if described or names <= lower_words:
            return None  # "The Foxes", "Authorities": who it is cannot be told here
        found = found or (" ".join(name), " ".join(m.group("pred").split()))
    return found


_PRONOUN_OPENERS = frozenset(["he", "she", "they", "his", "her", "their", "him", "them"])
# capitalised words that open a sentence without naming anyone
_OPENERS = frozenset(
    [
        "however",
        "although",
        "though",
        "during",
        "following",
        "despite",
        "since",
        "until",
        "today",
        "later",
        "meanwhile",
        "initially",
        "finally",
        "originally",
        "currently",
        "also",
        "both",
        "each",
        "many",
        "most",
        "some",
        "several",
        "all",
        "other",
        "another",
        "one",
        "two",
        "three",
        "first",
        "according",
        "because",
        "unlike",
        "like",
        "once",
        "now",
        "what",
        "who",
        "which",
        "where",
        "why",
        "how",
    ]
)


def _written_lower(text: str) -> frozenset[str]:
    """The words ``text`` writes in lower case (ordinary words, not names)."""
    return frozenset(w for w in WORD_RE.findall(text) if w.islower())


def _name_words(name: str, text: str | frozenset[str]) -> set[str]:
    """The words of a capitalised run that name someone: not function words, not sentence
    openers, and not ordinary words the text also writes in lower case (``text``, or its
    `_written_lower` when the caller asks about many runs of one text)."""
    low = _written_lower(text) if isinstance(text, str) else text
    return {
        w.lower()
        for w in WORD_RE.findall(name)
        if w.lower() not in _NOT_NAMES
        and w.lower() not in STOPWORDS
        and w.lower() not in _OPENERS
        and (w.lower() not in low or w.isupper())
    }


_PARENS = re.compile(r"\s*\([^()]*\)")
_WHEN_NAMES = frozenset(MONTHS) | frozenset(
    ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
)


def subject_focus(claim: str, evidence: str) -> str | None:
    """The evidence without the sentences about the claim's other participants; None when the
    claim does not open with a name or names no one else, the evidence never mentions its
    subject, or no sentence would go.

    "Michael Collins walked on the Moon with Armstrong." against the Apollo 11 passage keeps
    "Michael Collins flew the command module Columbia alone in lunar orbit while they were on
    the surface." and the sentences that name no one, and drops "Armstrong became the first person
    to step onto the lunar surface ...": what the claim says its subject did with someone must
    be supported by what the evidence says of that subject, not by what it says the other one
    did. A sentence is about the other participant when it opens with their name (sharing no word
    with the claim's subject) and never mentions the subject; one opening with a pronoun ("She
    ...", "They ...") continues the sentence before it. A sentence that opens with the full name
    (two name words or more) of someone the claim does not name and gives them one of the claim's
    other names is about someone else too: "Bruce Guthro is a member of Radiohead." is not
    supported by "Thomas Edward Yorke ... is the singer of the band Radiohead." Other sentences
    about people the claim does not name stay (news text calls its subject "the Filipino" or "the
    Scot" as often as by name). Used only to withhold (the claim must also be supported by this
    focused evidence), never to support.
    """
    if "?" in claim:
        return None
    m = _CLAIM_SUBJECT.match(fold_text(claim).rstrip(" .!?"))
    if m is None:
        return None
    both = _written_lower(claim + " " + evidence)
    ev_low = _written_lower(evidence)
    subject = _name_words(m.group("name"), both)
    # the claim's other participants ("... with Armstrong"): only sentences that open with one
    # of them are taken away (a role swap), never those about anyone the claim does not name
    partners: set[str] = set()
    for run in re.finditer(_NAME, m.group("pred")):
        partners |= _name_words(run.group(0), both)
    # a day or a month is when, not who: "... said on Wednesday ..." has no partner there (a
    # sentence about another bank "on Wednesday" was taken away from a Bank of Japan claim)
    partners -= subject | _WHEN_NAMES
    if not subject or not partners:
        return None
    spans = sentence_spans(evidence)
    kept: list[str] = []
    mentions = dropped = 0
    previous = "neutral"
    for a, b in spans:
        sent = evidence[a:b]
        words = _words_lower(sent)
        if not words:
            continue
        if subject & set(words):
            status = "subject"
            mentions += 1
        elif words[0] in _PRONOUN_OPENERS:
            status = previous
        else:
            # "Thomas Edward Yorke (born 7 October 1968) is ...": the parenthesis is no predicate
            opener = _OPENER.match(fold_text(_PARENS.sub("", sent)))
            others = _name_words(opener.group("name"), ev_low) if opener else set()
            if others & partners:
                status = "other"
            elif len(others) >= 2 and not others & subject and partners & set(words):
                # a sentence about someone else, by full name, that gives them the claim's
                # partner ("Thomas Edward Yorke ... of the band Radiohead." is no support for
                # "Bruce Guthro is a member of Radiohead.")
                status = "other"
            else:
                status = "neutral"
        previous = status
        if status == "other":
            dropped += 1
        else:
            kept.append(sent.strip())
    if not mentions or not dropped:
        return None
    return " ".join(kept)


# a sentence opening with one of these continues the one before it (which may name the subject)
_CONTINUING = _PRONOUN_OPENERS | {"it", "its", "this", "these", "there"}


_PERSONAL = frozenset(["he", "she", "they"])


def pronoun_for_someone_else(
    claim: str, evidence: Sequence[str], spans: Sequence[tuple[int, int, int]]
) -> str | None:
    """The full name of the person the supporting sentences' pronoun stands for, when that is
    someone else and the evidence never mentions the claim's subject; None otherwise.

    "Isaac Newton developed the theory of relativity." against "Albert Einstein was born in Ulm
    in 1879. He developed the theory of relativity." is ``"Albert Einstein"``: the sentence that
    supports it says "He", and "He" is the man the sentence before it opens with; nothing in the
    evidence ties the claim's subject to what was done (the model read "He" as anyone and scored
    it 0.64). Read only for a claim that opens with a name none of whose words the evidence
    holds anywhere; every supporting span must open with "He", "She" or "They", and walking
    back over the sentences that continue with a pronoun must reach one that opens with a full
    name (two name words or more) sharing no word with the names in the claim. A span is
    ``(evidence index, start, end)``. A finding never supports anything: the verifier uses it
    only to withhold.
    """
    if "?" in claim or not spans:
        return None
    m = _CLAIM_SUBJECT.match(fold_text(claim).rstrip(" .!?"))
    if m is None:
        return None
    joined = "\n".join(evidence)
    both = _written_lower(claim + " " + joined)
    subject = _name_words(m.group("name"), both)
    if not subject or subject & set(_words_lower(joined)):
        return None
    in_claim: set[str] = set()
    for run in re.finditer(_NAME, fold_text(claim)):
        in_claim |= _name_words(run.group(0), both)
    found: str | None = None
    for index, start, end in spans:
        text = evidence[index] if 0 <= index < len(evidence) else ""
        words = _words_lower(text[start:end])
        if not words or words[0] not in _PERSONAL:
            return None
        name = None
        for a, b in reversed(sentence_spans(text[:start])):
            sent = text[a:b]
            opening = _words_lower(sent)
            if not opening or opening[0] in _PRONOUN_OPENERS:
                continue  # it continues the one before it
            opener = _OPENER.match(fold_text(_PARENS.sub("", sent)))
            name = opener.group("name") if opener else None
            break
        if name is None:
            return None
        named = _name_words(name, both)
        if len(named) < 2 or named & in_claim:
            return None
        found = found or " ".join(name.split())
    return found


def support_about_someone_else(claim: str, spans: Sequence[str]) -> str | None:
    """The full name the supporting sentences give in place of the claim's subject, or None.

    "Norway was mentioned in the inscription of the disc." was supported by "The Danish Viking
    king, Harald Bluetooth, is mentioned in the inscription of the disc.": the sentence that
    supports it never names Norway, and names someone else by full name. Read only when the
    claim opens with a name; None (nothing found) when any supporting sentence names the
    subject, or opens with a pronoun (it continues a sentence about something, maybe the subject),
    or names no one by full name (two name words or more) outside the claim: news text gives its
    subject as "the Filipino" or "the Scot", and those sentences stay support. Used only to
    withhold, never to support.
    """
    if "?" in claim or not spans:
        return None
    m = _CLAIM_SUBJECT.match(fold_text(claim).rstrip(" .!?"))
    if m is None:
        return None
    joined = " ".join(spans)
    both = _written_lower(claim + " " + joined)
    subject = _name_words(m.group("name"), both)
    if not subject:
        return None

    def names(run: str) -> set[str]:
        # "Gustave Eiffel's" names Eiffel
        return {re.sub(r"['’]s$", "", w) for w in _name_words(run, both)}

    in_claim: set[str] = set()
    for run in re.finditer(_NAME, fold_text(claim)):
        in_claim |= names(run.group(0))
    others: list[str] = []
    for span in spans:
        words = _words_lower(span)
        if not words or subject & set(words) or words[0] in _CONTINUING:
            return None
        for run in re.finditer(_NAME, fold_text(span)):
            named = names(run.group(0))
            if len(named) >= 2 and not named & in_claim:
                others.append(run.group(0))
    return others[0] if others else None


def fold_text(text: str) -> str:
    """Spaces and quotes made uniform (for `role_mismatch`)."""
    return " ".join(text.translate(_NORM_QUOTES).split())


# ------------------------------------------------------------------ distributive claims
# "Both A and B are ...", "A and B were both ...", "Both bands are ...": said of each member
_PAST_VERBS = frozenset(
    [
        "won",
        "wrote",
        "made",
        "took",
        "became",
        "went",
        "came",
        "grew",
        "began",
        "held",
        "led",
        "left",
        "met",
        "ran",
        "saw",
        "sang",
        "spoke",
        "taught",
        "built",
        "found",
        "fought",
        "gave",
        "got",
        "knew",
        "lost",
        "sold",
        "told",
        "drew",
        "flew",
        "rode",
        "stood",
    ]
)
_AGREE = {"are": "is", "were": "was", "have": "has", "had": "had"}
_MEMBER = r"[^,;:()]{1,60}?"
_BOTH_FRONT = re.compile(
    rf"^\s*Both\s+(?P<a>{_MEMBER})\s+and\s+(?P<b>{_MEMBER})\s+(?P<verb>[a-z]+)\s+(?P<pred>.+?)\s*[.!]?\s*$"
)
_BOTH_AFTER = re.compile(
    rf"^\s*(?P<a>{_MEMBER})\s+and\s+(?P<b>{_MEMBER})\s+(?P<verb>are|were|have|had)\s+both\s+"
    r"(?P<pred>.+?)\s*[.!]?\s*$"
)
_BOTH_NOUN = re.compile(
    r"^\s*Both\s+(?:the\s+|of\s+the\s+|these\s+|those\s+)?(?P<noun>[a-z]{3,}s)\s+"
    r"(?P<verb>[a-z]+)\s+(?P<pred>.+?)\s*[.!]?\s*$"
)
_PLURAL_STOP = frozenset(
    [
        "in",
        "on",
        "at",
        "of",
        "from",
        "for",
        "with",
        "by",
        "to",
        "as",
        "that",
        "which",
        "who",
        "whose",
        "and",
        "or",
        "but",
        "than",
        "since",
        "during",
    ]
)


def _singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes", "zes")):
        return word[:-2]
    return word[:-1]


def _is_plural(word: str) -> bool:
    return (
        len(word) > 3
        and word.islower()
        and word.endswith("s")
        and not word.endswith(("ss", "us", "is", "ous"))
    )


def _each_predicate(verb: str, pred: str) -> tuple[str, str] | None:
    """The verb and predicate said of one member ('are American pop punk bands' -> 'is', 'an
    American pop punk band'); None when the verb's singular form is not known."""
    if verb in _AGREE:
        verb1 = _AGREE[verb]
    elif verb.endswith("ed") or verb in _PAST_VERBS:
        return verb, pred
    else:
        return None
    pred = re.sub(r"^(?:also|both)\s+", "", pred)
    if verb1 not in ("is", "was"):
        return verb1, pred
    words = pred.split()
    if words and words[0].lower() in ("the", "a", "an"):
        return None  # "are the founders of": who founded what is not one member's to say
    for i, w in enumerate(words[:6]):
        low = w.lower().strip(",")
        if low in _PLURAL_STOP:
            break
        if _is_plural(w.strip(",")):
            words[i] = _singular(w.strip(",")) + ("," if w.endswith(",") else "")
            art = "an" if words[0][:1].lower() in "aeio" else "a"
            return verb1, f"{art} {' '.join(words)}"
    return verb1, pred


def _described_as(head: str, evidence: str) -> list[str]:
    """The names the evidence describes as a ``head`` ('Yellowcard was an American pop punk
    band ...'), in order, each once."""
    pattern = re.compile(
        rf"(?:^|[.!?]\s+|\n)\s*(?P<name>{_NAME})\s*(?:\([^()]*\)\s*)?,?\s+(?:is|was|are|were)\s+"
        rf"(?:a|an|the)\s+(?:[\w/'’-]+\s+){{0,5}}?{re.escape(head)}\b"
    )
    found: list[str] = []
    for m in pattern.finditer(fold_text(evidence)):
        name = m.group("name").strip()
        first = name.split()[0].lower()
        if first in _OPENERS or (first in _NOT_NAMES and len(name.split()) < 2):
            continue
        if first in ("the", "a", "an", "this", "that", "these", "those", "there", "here"):
            continue
        if name not in found:
            found.append(name)
    return found


def distributive_claims(claim: str, evidence: str) -> list[str] | None:
    """What a claim about both of two members says of each, as one sentence per member; None
    when it is not such a claim.

    "Both Yellowcard and For Against are American pop punk bands." says "Yellowcard is an
    American pop punk band." and "For Against is an American pop punk band."; so does "Both
    bands are American pop punk bands." against evidence that describes exactly two names as a
    band (the members are read from the evidence). The model reads the claim as a whole and
    supports it from the one member the evidence does describe so: each member must be
    supported on its own. Used only to withhold, never to support.
    """
    text = fold_text(claim)
    if "?" in text or "\n" in claim.strip():
        return None
    members: list[str] = []
    m = _BOTH_FRONT.match(text) or _BOTH_AFTER.match(text)
    if m is not None:
        members = [m.group("a").strip(), m.group("b").strip()]
        if any(len(x.split()) > 8 or " and " in f" {x} " for x in members):
            return None
        verb, pred = m.group("verb"), m.group("pred")
    else:
        m = _BOTH_NOUN.match(text)
        if m is None:
            return None
        members = _described_as(_singular(m.group("noun")), evidence)
        if len(members) != 2:
            return None
        verb, pred = m.group("verb"), m.group("pred")
    each = _each_predicate(verb, pred)
    if each is None:
        return None
    verb1, pred1 = each
    out = []
    for name in members:
        head = name[:1].upper() + name[1:]
        out.append(f"{head} {verb1} {pred1}.")
    return out


# a claim that copies an evidence sentence but for a few words: at least this many words match
MIN_COPIED_WORDS = 5
# ... and they are at least this share of the claim's words
MIN_COPIED_SHARE = 0.6
# the words replaced on either side (a name, not a clause)
MAX_REPLACED_WORDS = 4


def _squashed(tokens: Sequence[str]) -> str:
    return re.sub(r"[^a-z0-9]", "", "".join(tokens).lower())


def _one_run_replaced(
    claim_tokens: Sequence[str], evidence: str
) -> Iterator[tuple[list[str], tuple[int, int, int, int]]]:
    """Each evidence sentence the claim copies word for word but for one run of at most four
    words replaced (bounded by copied words on both sides: at least two after it, or the end of
    both; at least two before it, or the start of the claim), with the claim's other words all
    the sentence's, in order: ``(sentence words, (i1, i2, j1, j2))``, the run being
    ``claim_tokens[i1:i2]`` in the claim and ``sentence words[j1:j2]`` in the sentence. Runs
    that are the same words spaced otherwise ("Villa'sFA", "Brazilian 's") are no change."""
    claim_low = [w.lower() for w in claim_tokens]
    for a, b in sentence_spans(evidence):
        sent_tokens = WORD_RE.findall(fold_text(evidence[a:b]))
        sent_low = [w.lower() for w in sent_tokens]
        if not set(claim_low) & set(sent_low):
            continue
        ops = difflib.SequenceMatcher(None, claim_low, sent_low, autojunk=False).get_opcodes()
        copied = sum(i2 - i1 for tag, i1, i2, _, _ in ops if tag == "equal")
        if copied < MIN_COPIED_WORDS or copied < MIN_COPIED_SHARE * len(claim_low):
            continue
        # every claim word outside one replaced run comes from the sentence (the claim may
        # leave out some of the sentence's words: "insert" here, read from the claim's side)
        changed = [op for op in ops if op[0] in ("replace", "delete")]
        if len(changed) != 1 or changed[0][0] != "replace":
            continue
        k = ops.index(changed[0])
        _, i1, i2, j1, j2 = changed[0]
        if i2 - i1 > MAX_REPLACED_WORDS or j2 - j1 > MAX_REPLACED_WORDS:
            continue
        before = ops[k - 1] if k > 0 else None
        after = ops[k + 1] if k + 1 < len(ops) else None
        starts = i1 == 0 or (
            before is not None and before[0] == "equal" and before[2] - before[1] >= 2
        )
        ends = (i2 == len(claim_low) and j2 == len(sent_low)) or (
            after is not None and after[0] == "equal" and after[2] - after[1] >= 2
        )
        if not (starts and ends):
            continue
        if _squashed(claim_tokens[i1:i2]) == _squashed(sent_tokens[j1:j2]):
            continue  # the same words spaced otherwise ("Villa'sFA", "Brazilian 's")
        yield sent_tokens, (i1, i2, j1, j2)


# the words that turn a statement round (also a feature of the head model, `features`)
NEGATIONS = frozenset(
    ["no", "not", "never", "none", "nobody", "nothing", "neither", "nor", "without", "cannot"]
)
_GENERAL = frozenset(["a", "an", "some", "one", "another", "other", "several", "many"])


def substituted_words(claim: str, evidence: str) -> list[tuple[str, str]]:
    """``(claim_words, evidence_words)`` for each evidence sentence the claim copies word for
    word but for a few words, where the claim puts in their place an ordinary word the evidence
    never uses: the places to ask whether the claim says the same thing there or another.

    "Albert Einstein developed the theory of evolution." against "Albert Einstein developed the
    theory of relativity." gives ``("evolution", "relativity")``; whether that is another
    attribute or the same one said otherwise ("movie" for "film") is not told here: the verifier
    compares the two (`affidavit.verify.cascade`). The copy is the one `substituted_name` reads.
    Left out: a run whose new words are all function words, numbers, negations ("did not bore":
    the number and negation checks own those) or names (`substituted_name`), a sentence side
    with no content word ("They are ..."), and a claim run that opens with an indefinite
    ("a city" for "Edinburgh": a claim may say less than its evidence).
    """
    claim_tokens = WORD_RE.findall(fold_text(claim))
    if len(claim_tokens) < MIN_COPIED_WORDS + 1:
        return []
    ev_words = WORD_RE.findall(evidence)
    ev_low = {w.lower() for w in ev_words}
    ev_stems = {stem(w) for w in ev_low}

    def new_word(w: str) -> bool:
        low = w.lower()
        return (
            w.isalpha()
            and w.islower()
            and len(w) > 2
            and low not in STOPWORDS | FILLER
            and low not in ev_low
            and stem(low) not in ev_stems
        )

    out: list[tuple[str, str]] = []
    for sent_tokens, (i1, i2, j1, j2) in _one_run_replaced(claim_tokens, evidence):
        said = claim_tokens[i1:i2]
        instead = sent_tokens[j1:j2]
        lows = {w.lower() for w in said + instead}
        if lows & NEGATIONS or any(w.lower() in SPELLED or w[:1].isdigit() for w in said):
            continue
        if said[0].lower() in _GENERAL or not any(new_word(w) for w in said):
            continue
        if not any(w.lower() not in STOPWORDS | FILLER and w.isalpha() for w in instead):
            continue
        out.append((" ".join(said), " ".join(instead)))
    return out


def substituted_name(claim: str, evidence: str) -> tuple[str, str] | None:
    """``(claim_words, evidence_words)`` when the claim copies an evidence sentence word for word
    except for a few words, and puts in their place a name the evidence never mentions; None
    otherwise.

    "There Will Be Blood is a 2007 Crucible drama film written and directed by Paul Thomas
    Anderson." against "There Will Be Blood is a 2007 American drama film written and directed
    by Paul Thomas Anderson." is ``("Crucible", "American")``: the sentence says something
    else at the very place the claim changed, so the claim states a wrong attribute, however
    close it is word for word (the model scored it 0.87). The replaced words are at most four
    on each side, bounded by copied words on both sides (at least two after them, or the end of
    both sentences; at least two before them, or the start of the claim), and the claim's other
    words are all the sentence's, in order. The claim's new words must hold a capitalised word
    (not opening the claim, not a function word) that appears nowhere in the evidence, and the
    words it replaced must name something too (not "They" or "The group", which the claim may
    resolve to a name); an
    abbreviation whose letters are the initials of the words it replaced ("US" for "United
    States") does not count. A finding never supports anything: the verifier uses it only to
    withhold.
    """
    claim_tokens = WORD_RE.findall(fold_text(claim))
    if len(claim_tokens) < MIN_COPIED_WORDS + 1:
        return None
    claim_low = [w.lower() for w in claim_tokens]
    ev_all = {w.lower() for w in WORD_RE.findall(evidence)}
    # the claim's capitalised words the evidence never mentions (the claim's first word may be
    # an ordinary word written with a capital)
    new_names = {
        k
        for k, w in enumerate(claim_tokens)
        if k > 0
        and w[:1].isupper()
        and claim_low[k] not in ev_all
        and claim_low[k] not in STOPWORDS
        and claim_low[k] not in _NOT_NAMES
    }
    if not new_names:
        return None
    for sent_tokens, (i1, i2, j1, j2) in _one_run_replaced(claim_tokens, evidence):
        replaced = sent_tokens[j1:j2]
        if not any(
            w[:1].isupper() and w.lower() not in _NOT_NAMES | STOPWORDS | _OPENERS for w in replaced
        ):
            # the sentence refers to it without a name ("They are identified by ..."): the
            # claim may name what the pronoun stands for
            continue
        initials = "".join(w[0].lower() for w in replaced)
        names = [
            claim_tokens[i]
            for i in range(i1, i2)
            if i in new_names and not (claim_tokens[i].isupper() and claim_low[i] == initials)
        ]
        if names:
            return " ".join(claim_tokens[i1:i2]), " ".join(replaced)
    return None
