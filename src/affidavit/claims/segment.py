"""Sentence segmentation with exact character offsets.

Every `Segment` satisfies ``answer[seg.start:seg.end] == seg.text``: offsets are never
recomputed from cleaned text, so a claim can always be highlighted in the answer it came from.

The splitter is rule-based and linear in the length of the answer. It knows about
abbreviations (``Dr.``, ``U.S.``, ``e.g.``), initials (``J. R. R. Tolkien``), decimals
(``3.5``), ellipses, citation markers after the full stop (``... in 1905.[2] Next``), CJK
full stops, Markdown headings, bullets and numbered lists.

Examples:
    >>> [s.text for s in split_sentences("Dr. Smith won in 2003. He was 3.5 m tall.")]
    ['Dr. Smith won in 2003.', 'He was 3.5 m tall.']
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

SegmentKind = Literal["sentence", "list_item", "heading"]


@dataclass(frozen=True, slots=True)
class Segment:
    """One sentence-like unit of an answer.

    Attributes:
        start: start offset in the answer (first non-space character).
        end: end offset in the answer (exclusive, after trailing punctuation/citations).
        text: ``answer[start:end]``.
        index: position among all segments of the answer.
        kind: ``sentence`` (running text), ``list_item`` (a bullet or numbered item, marker
            excluded from the span) or ``heading`` (a Markdown heading or a line ending in ':').
        lead_in: for a list item, the text of the sentence introducing the list (the line
            ending with ':' before it), else ``""``.
    """

    start: int
    end: int
    text: str
    index: int
    kind: SegmentKind = "sentence"
    lead_in: str = ""


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Tokens (lower-cased, without the final dot) after which a '.' does not end a sentence.
ABBREVIATIONS = _wordset(
    """
    dr mr mrs ms mx prof sr jr st mt ft rev hon gen col lt sgt capt cmdr adm gov sen rep pres
    vs v etc e.g eg i.e ie cf al approx ca c est inc ltd co corp plc llc bros dept univ assn
    no nos fig figs vol vols pp p ch sec art ed eds ps
    jan feb mar apr jun jul aug sep sept oct nov dec
    mon tue tues wed thu thur thurs fri sat sun
    u.s u.k u.n e.u u.s.a d.c a.m p.m ph.d m.d b.a m.a b.sc m.sc n.b a.d b.c
    """
)

# After these abbreviations a capitalised common sentence opener does start a new sentence
# ("... in the U.S. The law ...").
_END_CAPABLE_ABBREVIATIONS = frozenset({"etc", "u.s", "u.k", "u.n", "e.u", "u.s.a", "d.c", "inc"})
_SENTENCE_OPENERS = _wordset(
    """
    the a an it he she they we i this that these those there in on at for but however
    his her its their our my after before during when while although as since
    """
)

_CITE = r"\[\^?\d+(?:\s*[,;\u2013\-]\s*\d+)*\^?\]"
# A candidate end of sentence: terminal punctuation, then closing quotes/brackets and citations.
_TERMINAL = re.compile(
    r"(?:[.!?]+|\u2026)[\"'\u201d\u2019)\]]*(?:\s*" + _CITE + r")*"
    r"|[\u3002\uff01\uff1f]+[\u300d\u300f\u201d)\]]*(?:\s*" + _CITE + r")*"
)
_WORD_BEFORE = re.compile(r"([\w.\-']+)$")
# A list marker says nothing itself: a symbol, an item number ("1.", "2)", "(3)"), a letter
# ("a)", "(b)", "c." in a lettered list) or a roman numeral ("(iv)"). Shown with its item, never
# checked, so nothing that states a fact may pass for one: a year or a name in brackets
# ("(1925) The bridge opened.", "(NASA) ..."), an area code, an initial ("J. Smith won ...").
_BULLET = re.compile(
    r"^[ \t]*(?:[-*+\u2022\u2023\u25e6\u2043\u2219\u00b7\u25aa\u25cf]|(?P<num>\d{1,3})[.)]"
    r"|\((?:(?P<pnum>\d{1,2})|[a-zA-Z]|[ivx]{1,4}|[IVX]{1,4})\)|\(?[a-zA-Z]\)(?=\s)"
    r"|(?P<letter>[a-zA-Z])\.(?=\s))[ \t]+"
)
_HEADING = re.compile(r"^[ \t]*#{1,6}[ \t]+")
# "c." at the start of a line is a list letter only next to its neighbour ("b." or "d."), else
# an initial ("J. Smith", "E. coli")
_LETTER_ITEM = re.compile(r"^[ \t]*([a-zA-Z])\.[ \t]", re.MULTILINE)
# "(12)" or "12." at the start of a line is a list number only next to its neighbour ("(11)" or
# "(13)", any of the numbered styles), else it is part of the sentence: "(12) people died" states
# a number, which must be checked, not shown beside the checked sentence as a marker
_NUMBER_ITEM = re.compile(r"^[ \t]*(?:(\d{1,3})[.)]|\((\d{1,2})\))[ \t]", re.MULTILINE)


def list_letters(answer: str) -> frozenset[str]:
    """The letters that open a line as ``"x. "``, and the numbers that open a line as ``"n."``,
    ``"n)"`` or ``"(n)"``, in ``answer`` (for `line_marker`)."""
    letters = {m.group(1) for m in _LETTER_ITEM.finditer(answer)}
    numbers = {str(int(m.group(1) or m.group(2))) for m in _NUMBER_ITEM.finditer(answer)}
    return frozenset(letters | numbers)


def line_marker(line: str, letters: frozenset[str]) -> int:
    """The length of the list or heading marker opening ``line`` (0 when none).

    ``letters``: `list_letters` of the whole answer; a lone ``"J. "`` is an initial and a lone
    ``"(12) "`` a number of the sentence, not markers.

    Examples:
        >>> line_marker("- Oslo is in Norway.", frozenset())
        2
        >>> line_marker("(1925) The bridge opened.", frozenset())
        0
        >>> line_marker("J. Smith won.", frozenset("J")), line_marker("b. Two.", frozenset("ab"))
        (0, 3)
        >>> line_marker("(12) people died.", frozenset({"12"}))
        0
        >>> line_marker("(2) Two died.", frozenset({"1", "2"}))
        4
    """
    m = _HEADING.match(line) or _BULLET.match(line)
    if m is None:
        return 0
    found = m.groupdict()
    letter = found.get("letter")
    if letter and not {chr(ord(letter) - 1), chr(ord(letter) + 1)} & letters:
        return 0
    number = found.get("num") or found.get("pnum")
    if number and not {str(int(number) - 1), str(int(number) + 1)} & letters:
        return 0  # a lone "(12)" opens a sentence about twelve of something
    return m.end()


# A line that ends on one of these (or on a comma, dash, colon...) goes on in the next line:
# hard-wrapped prose ("... was born in\nParis"), never a statement of its own.
_LINE_GOES_ON = _wordset(
    """
    a an the this that these those my your his her its our their some any no every each
    of in on at to for from by with into onto upon about over under between among through
    across after before during since until than as via per within without against toward
    towards and or nor but so yet if because while although though whether when where who
    whom whose which what
    is are was were be been being am has have had do does did will would shall should can
    could may might must not very more most less least also
    """
)
# In text without capitals, a next line opening with one of these continues the sentence.
_LINE_CONTINUES = _wordset(
    """
    and or nor but of to than which who whom whose that as by for with from into
    is are was were be been being has have had would could should will can may might must
    not 's n't
    """
)
_LAST_WORD = re.compile(r"([\w'\-]+)[\"'\u201d\u2019)\]]*$")
_FIRST_WORD = re.compile(r"[\"'\u201c\u2018(\[]*([\w'\-]+)(?=[^\w'\-])")


def _line_ends_statement(line: str, next_line: str, caseless: bool) -> bool:
    """Whether a line break inside a paragraph ends a statement, though no full stop does.

    Highlights and notes put one statement per line without a full stop ("Russia lead 2-0\n
    Kuznetsova had earlier won"); hard-wrapped prose breaks lines anywhere. A break counts only
    after a complete-looking line (not ending on a comma, dash, article, preposition,
    conjunction or auxiliary) and before a capitalised word, unless both sides are capitalised
    ("Prime Minister\nBoris Johnson", one name across the wrap) and the next word is not a
    common sentence opener. In text without capitals the next line must open with a word that
    can start a statement.

    Examples:
        >>> _line_ends_statement("Russia lead the tie 2-0", "Kuznetsova won earlier", False)
        True
        >>> _line_ends_statement("Russia lead the tie 2-0", "Kuznetsova", False)  # may go on
        False
        >>> _line_ends_statement("The bridge opened in", "March 1890.", False)
        False
        >>> _line_ends_statement("He met the Prime Minister", "Boris Johnson on Friday.", False)
        False
        >>> _line_ends_statement("The team visited Oslo", "The trip took a week.", False)
        True
        >>> _line_ends_statement("russia lead the tie 2-0", "svetlana won earlier", True)
        True
        >>> _line_ends_statement("the company said that profits", "would rise", True)
        False
    """
    last = _LAST_WORD.search(line.rstrip())
    # the next word must be complete (a streamed answer may stop inside it)
    first = _FIRST_WORD.match(next_line.lstrip())
    if last is None or first is None:
        return False  # a line ending on punctuation that goes on (",", "-", ":"), or a symbol
    last_word, first_word = last.group(1), first.group(1)
    if last_word.lower() in _LINE_GOES_ON:
        return False
    if caseless:
        return first_word[0].isalpha() and first_word.lower() not in _LINE_CONTINUES
    if not first_word[0].isupper():
        return False
    return not (last_word[0].isupper() and first_word.lower() not in _SENTENCE_OPENERS)


_LINE = re.compile(r"[^\n]*(?:\n|$)")


def _is_boundary(
    text: str, dot_pos: int, match_end: int, seg_end: int, caseless: bool = False
) -> bool:
    """Decide whether the terminal punctuation at ``dot_pos`` ends a sentence.

    ``caseless``: the whole text has no capital letter (a lower-cased corpus, a transcript), so a
    lower-case word after the punctuation does not mean the sentence goes on.
    """
    # CJK full stops end a sentence without a following space.
    ch = text[dot_pos]
    if ch in "\u3002\uff01\uff1f":
        return True
    if match_end >= seg_end:
        return True
    nxt = text[match_end]
    if not nxt.isspace():
        return False  # "3.5", "e.g.x", "U.S.-based", "word.[1]x"
    # the next visible character
    j = match_end
    while j < seg_end and text[j].isspace():
        j += 1
    if j >= seg_end:
        return True
    following = text[j]
    if ch in "!?" or text[dot_pos : dot_pos + 3] == "..." or ch == "\u2026":
        # exclamations/questions end a sentence unless the text continues in lower case
        return caseless or not following.islower()
    # a plain full stop
    if following.islower() and not caseless:
        return False
    m = _WORD_BEFORE.search(text, max(0, dot_pos - 40), dot_pos)
    word = m.group(1) if m else ""
    low = word.lower().rstrip(".")
    if low in ABBREVIATIONS or (low.replace(".", "") and "." in low and len(low) <= 6):
        if low in _END_CAPABLE_ABBREVIATIONS or ("." in low and low.replace(".", "").isalpha()):
            next_word = re.match(r"[A-Za-z]+", text[j : j + 20])
            if next_word and next_word.group(0).lower() in _SENTENCE_OPENERS:
                return True
        return False
    # a single capital initial ("J. K. Rowling"), but not a lone pronoun "I."
    return not (len(word) == 1 and word.isupper() and word != "I")


def _split_block(
    text: str,
    start: int,
    end: int,
    out: list[tuple[int, int]],
    caseless: bool = False,
) -> None:
    """Split ``text[start:end]`` (one paragraph or list item) into sentence spans."""
    pos = start
    for m in _TERMINAL.finditer(text, start, end):
        if _is_boundary(text, m.start(), m.end(), end, caseless):
            _push(text, pos, m.end(), out)
            pos = m.end()
    _push(text, pos, end, out)


def _push(text: str, a: int, b: int, out: list[tuple[int, int]]) -> None:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    if a < b and any(c.isalnum() for c in text[a:b]):
        out.append((a, b))


def split_sentences(answer: str) -> list[Segment]:
    """Split an answer into sentences, list items and headings with exact offsets.

    Args:
        answer: the text to split (any language; never modified).

    Returns:
        The segments in answer order; ``answer[s.start:s.end] == s.text`` for each.

    Examples:
        >>> segs = split_sentences("Causes:\\n- drought\\n- war in 1914")
        >>> [(s.kind, s.text) for s in segs]
        [('heading', 'Causes:'), ('list_item', 'drought'), ('list_item', 'war in 1914')]
        >>> segs[1].lead_in
        'Causes:'
        >>> [s.text for s in split_sentences("no capitals . dr. who came back . in 2003 .")]
        ['no capitals .', 'dr. who came back .', 'in 2003 .']
    """
    segments: list[Segment] = []
    # 1. lines -> blocks (paragraph runs, list items, headings)
    blocks: list[tuple[int, int, SegmentKind]] = []
    para_start: int | None = None
    para_end = 0
    pos = 0
    n = len(answer)
    caseless = not any(c.isupper() for c in answer)
    letters = list_letters(answer)
    last_line = ""
    while pos < n:
        nl = answer.find("\n", pos)
        line_end = n if nl < 0 else nl
        next_pos = n if nl < 0 else nl + 1
        line = answer[pos:line_end]
        stripped = line.strip()
        heading = _HEADING.match(line)
        bullet = 0 if heading else line_marker(line, letters)
        if not stripped or bullet or heading:
            if para_start is not None:
                blocks.append((para_start, para_end, "sentence"))
                para_start = None
            if bullet:
                blocks.append((pos + bullet, line_end, "list_item"))
            elif heading:
                blocks.append((pos + heading.end(), line_end, "heading"))
        else:
            if para_start is not None and _line_ends_statement(
                last_line, answer[pos:next_pos], caseless
            ):
                blocks.append((para_start, para_end, "sentence"))
                para_start = None
            if para_start is None:
                para_start = pos
            para_end = line_end
            last_line = line
            if stripped.endswith(":"):
                # a lead-in line closes its paragraph so the list below can refer to it
                blocks.append((para_start, para_end, "sentence"))
                para_start = None
        pos = next_pos
    if para_start is not None:
        blocks.append((para_start, para_end, "sentence"))

    # 2. blocks -> sentences
    lead_in = ""
    for b_start, b_end, kind in blocks:
        spans: list[tuple[int, int]] = []
        if kind == "heading":
            _push(answer, b_start, b_end, spans)
        else:
            _split_block(answer, b_start, b_end, spans, caseless)
        for i, (a, b) in enumerate(spans):
            seg_text = answer[a:b]
            seg_kind: SegmentKind = kind
            if kind == "sentence" and seg_text.endswith(":") and i == len(spans) - 1:
                seg_kind = "heading"
            segments.append(
                Segment(
                    start=a,
                    end=b,
                    text=seg_text,
                    index=len(segments),
                    kind=seg_kind,
                    lead_in=lead_in if kind == "list_item" else "",
                )
            )
        if kind != "list_item":
            last = answer[spans[-1][0] : spans[-1][1]] if spans else ""
            lead_in = last if last.endswith(":") else ""
    return segments
