"""The rules of the deterministic extractor: citations, selection, hedges, typing, clauses.

All functions are pure and work on plain strings; offsets are the caller's business except in
`split_clauses`, which returns spans relative to the text it was given.
"""

from __future__ import annotations

import re

from affidavit.core.claims import SkipReason
from affidavit.core.types import ClaimType


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


# ---------------------------------------------------------------- citations

# "[1]", "[2, 3]", "[1-3]" and Bing's "[^2^]". A passage number has at most three digits, as
# for `affidavit.pipeline.citations` (which removes the numbers of passages that do not exist):
# "in [1925]" is no citation, and a claim that dropped it would show the year unchecked.
_CITED = r"\d{1,3}(?:\s*[,;\u2013\-]\s*\d{1,3})*"
CITATION = re.compile(r"\s*\[\^?(" + _CITED + r")\^?\]")
_ACCORDING_TO_CITATION = re.compile(
    r"\baccording to\s*\[\^?" + _CITED + r"\^?\],?\s*", re.IGNORECASE
)


# A marker as the model writes it, for `affidavit.pipeline.citations` (clean-up) and
# `affidavit.policy.render` (what is shown): "[3]", "[1, 2]", "[1-3]", "[Passage 2]",
# "[Source 1; 4]", Bing's "[^2^]" and the markdown footnote "[^2]", with an optional space
# before it. A markdown link destination right after it ("[2](https://...)") is part of the
# marker: left in the text it would show a link labelled like a citation, to anywhere.
MARKER = re.compile(
    r"[ \t]?\[\s*\^?\s*(?:(?:passage|source|doc(?:ument)?|context)\s*#?\s*)?"
    r"(\d{1,3}(?:\s*(?:[,;\u2013\-]|and)\s*(?:(?:passage|source)\s*)?\d{1,3})*)\s*\^?\s*\]"
    r"(?:\((?:[^()\s]|\([^()\s]*\))*\))?",
    re.IGNORECASE,
)
_MARKER_RANGE = re.compile(r"(\d+)\s*[\u2013\-]\s*(\d+)")
_MAX_MARKER_RANGE = 20


def marker_numbers(body: str) -> list[int]:
    """The passage numbers in the body of a `MARKER` (its group 1), in order, repeats kept.

    Examples:
        >>> marker_numbers("1, 3-4 and passage 6")
        [1, 3, 4, 6]
    """
    out: list[int] = []
    for part in re.split(r"\s*(?:[,;]|and)\s*", body, flags=re.IGNORECASE):
        part = re.sub(r"(?i)passage|source", "", part).strip()
        rng = _MARKER_RANGE.fullmatch(part)
        if rng:
            lo, hi = int(rng.group(1)), int(rng.group(2))
            if lo <= hi and hi - lo <= _MAX_MARKER_RANGE:
                out.extend(range(lo, hi + 1))
            else:
                out.extend([lo, hi])
        elif part.isdigit():
            out.append(int(part))
    return out


def parse_citations(text: str) -> tuple[int, ...]:
    """Citation numbers ``[n]``, ``[2, 3]``, ``[1-3]`` in order of appearance, no repeats.

    Examples:
        >>> parse_citations("Born in 1879 [1][2, 4-5].")
        (1, 2, 4, 5)
        >>> parse_citations("Born in Ulm[^3^] [^1^].")
        (3, 1)
    """
    seen: dict[int, None] = {}
    for m in CITATION.finditer(text):
        for part in re.split(r"\s*[,;]\s*", m.group(1)):
            bounds = re.split(r"\s*[\u2013\-]\s*", part)
            if len(bounds) == 2 and bounds[0].isdigit() and bounds[1].isdigit():
                lo, hi = int(bounds[0]), int(bounds[1])
                if 0 <= hi - lo <= 50:
                    for k in range(lo, hi + 1):
                        seen.setdefault(k, None)
                    continue
            for b in bounds:
                if b.isdigit():
                    seen.setdefault(int(b), None)
    return tuple(seen)


def strip_citations(text: str) -> str:
    """Remove citation markers and tidy the spaces they leave.

    Examples:
        >>> strip_citations("Paris is big [1]. It grew.[2]")
        'Paris is big. It grew.'
    """
    out = _ACCORDING_TO_CITATION.sub("", text)
    out = CITATION.sub("", out)
    out = re.sub(r"\s+([.,;:!?])", r"\1", out)
    return re.sub(r"\s+", " ", out).strip()


# ---------------------------------------------------------------- selection
# The selection and typing patterns are written in lower case and run on ``text.lower()``:
# three times faster than re.IGNORECASE, and they only answer yes/no (no offsets).

_GREETING = re.compile(
    r"^(?:hi|hello|hey|greetings|dear\b.*|thanks?|thank you|you'?re welcome|sure|certainly|"
    r"of course|absolutely|great|good|okay|ok|yes|no|well|alright|glad to help|happy to help)"
    r"(?:\s+(?:there|everyone|again|question|so much|for asking|thing))*\s*[!.,]*\s*$",
)
_INTERJECTION = re.compile(
    r"^(?:sure|certainly|of course|absolutely|yes|no|well|okay|ok|great|indeed|alright|"
    r"thanks|thank you)(?: [a-z]+)?\s*[,!.]\s+",
    re.IGNORECASE,
)
_META = re.compile(
    r"^(?:here(?:'s| is| are)\b|below (?:is|are)\b|the following\b|"
    r"as an ai\b|as a (?:large )?language model\b|i(?:'m| am) (?:an ai|a language model|not able|"
    r"unable|sorry|not sure|happy|glad|here)\b|"
    r"i (?:hope|can(?:not|'t)?|could|don'?t have|do not have|"
    r"apologi[sz]e|would be happy|will|'ll)\b|sorry\b|"
    r"(?:please )?(?:let me know|feel free)\b|if you have (?:any )?(?:other|more|further)|"
    r"i hope (?:this|it|that)\b|hope (?:this|it|that) helps\b|"
    r"let me (?:explain|summari[sz]e|help|know)\b|"
    r"(?:good|great|excellent|interesting) question\b|in this (?:answer|response)\b|"
    r"(?:that'?s|that is|this is|what) an? (?:very |really )?(?:[\w-]+,? (?:and )?){0,3}"
    r"(?:question|topic)\b|these are (?:just )?(?:some|a few) (?:of|examples)\b|"
    r"to answer your question\b|my (?:knowledge|training)\b|as you can see\b|"
    r"(?:hello|hi),? this is\b|there (?:are|is) (?:much |many )?more\b.{0,60}\bnot covered\b)",
)
_META_ANYWHERE = re.compile(
    r"\b(?:as of my (?:last )?(?:knowledge|training)|my knowledge cutoff|i (?:can )?try to|"
    r"(?:search )?results i found|i (?:recommend|suggest|would recommend|would suggest)\b|"
    r"i don'?t have (?:access|"
    r"real-time)|i do not have (?:access|real-time)|as an ai\b|language model)",
)
_OPINION = re.compile(
    r"^(?:i (?:think|believe|feel|guess|suppose|would say|'d say|personally|prefer|love|like|"
    r"recommend|suggest|agree|disagree)|personally\b|in my (?:opinion|view|experience)|imo\b|"
    r"it(?:'s| is) (?:my (?:opinion|view)|a matter of (?:taste|opinion))|"
    r"(?:i|we) (?:would|'d) (?:recommend|suggest|advise))",
)
_INSTRUCTION = re.compile(
    r"^(?:please\b|make sure|be sure|remember (?:to|that)|don'?t forget|do not forget|"
    r"(?:always|never) (?:consult|check|remember|make|be|use|ask|seek|keep|try)|"
    r"consider\b|try\b|consult\b|seek\b|ask\b|contact\b|visit\b|check (?:out|with|the|your|if)\b|"
    r"keep in mind|note that|bear in mind|it(?:'s| is) (?:always )?(?:a good idea|best|advisable|"
    r"recommended|important|essential|crucial|worth|wise|helpful)\b|"
    r"you (?:should|must|may want|might want|can|could|need|will need|'ll need|'d)\b|"
    r"if you(?:'re| are)? (?:want|need|have|looking|interested|planning)|"
    r"(?:for|to get) (?:more|further|additional) (?:information|details|help)|"
    r"ultimately, (?:it|the (?:best|choice|decision))\b)",
)
# hedges that make a statement uncertain; vagueness ("about", "around") is not a hedge
HEDGE = re.compile(
    r"\b(?:may|might|could|possibly|perhaps|maybe|probably|likely|unlikely|reportedly|allegedly|"
    r"apparently|supposedly|presumably|seem(?:s|ed)?|appears? to|is (?:said|thought|believed|"
    r"reported|rumou?red) to|are (?:said|thought|believed|reported) to|it is (?:believed|thought|"
    r"said|rumou?red)|some (?:say|believe|argue)|arguably|potentially|i think|i believe|not sure|"
    r"uncertain|unclear)\b",
)
_FILLER = re.compile(
    r"\b(?:depends? on|vary|varies|various factors|many factors|several factors|"
    r"different (?:people|factors|reasons)|many (?:reasons|ways|possibilities)|"
    r"case[- ]by[- ]case|it'?s complicated|"
    r"hard to say|difficult to (?:say|determine|predict)|no (?:single|simple|one) answer|"
    r"individual (?:circumstances|needs))\b",
)
_IMPERATIVE_VERBS = _wordset(
    "add adjust aim avoid be begin build buy call celebrate check choose clean click count "
    "recognize recognise reward breathe drink "
    "compare consider create cut decide determine do drink eat embrace enjoy engage "
    "ensure enter establish evaluate exercise explore find focus follow get give go "
    "identify include install join keep learn let limit listen look maintain make open "
    "plan practice practise prioritize prioritise put reach read reduce remember remove "
    "replace research run save schedule seek select set share shortlist sleep spend start "
    "stay stop surround switch take talk track try turn type use visit wait watch write"
)
_SECOND_PERSON = re.compile(
    r"\b(?:helps?|allows?|lets?|makes?|enables?|distracts?|keeps?|gives?|encourages?|"
    r"motivates?|inspires?) you\b",
)
_EVALUATIVE_WORDS = (
    r"(?:important|crucial|essential|vital|remarkable|immense|fascinating|amazing|incredible|"
    r"wonderful|beautiful|interesting|complex|complicated|exciting|impressive|significant|"
    r"valuable|powerful|great|unique|rich|diverse|meaningful|rewarding|challenging)"
)
# an evaluation as the point of the sentence: "... are very important topics", "... are immense."
_EVALUATIVE = re.compile(
    r"\b(?:very|so|truly|really|extremely|incredibly|highly|immensely|quite|most) "
    + _EVALUATIVE_WORDS
    + r"\b|\b(?:is|are|was|were) (?:\w+ ){0,2}"
    + _EVALUATIVE_WORDS
    + r"[.!]?$",
)
_FILLER_START = re.compile(
    r"^(?:it(?:'s| is) (?:difficult|hard|impossible) to (?:say|determine|know|predict)|"
    r"there is no (?:single|simple|one|definitive|easy) answer|it depends\b|"
    r"(?:the )?answer (?:depends|varies)\b)",
)
_WORD = re.compile(r"[^\W_]+(?:['\u2019\-.][^\W_]+)*", re.UNICODE)
_DIGIT = re.compile(r"\d")
_CAPITALISED_INNER = re.compile(r"(?<=[\w,;:)] )[A-Z][a-z]+|\b[A-Z]{2,}\b")


def is_hedged(text: str) -> bool:
    """True when the text makes its statement uncertain (may, might, reportedly, likely...).

    Examples:
        >>> is_hedged("He may have been born in 1879."), is_hedged("He was born in 1879.")
        (True, False)
    """
    return HEDGE.search(text.lower()) is not None


def has_content(text: str) -> bool:
    """True when the text names something checkable: a number, a date or a proper name."""
    return bool(_DIGIT.search(text) or _CAPITALISED_INNER.search(text))


def skip_reason(
    text: str, *, min_words: int = 3, skip_hedged_filler: bool = True
) -> SkipReason | None:
    """Why a sentence is not checkworthy, or ``None`` when it states something verifiable.

    Args:
        text: the sentence, citation markers already stripped.
        min_words: sentences with fewer words are skipped as ``too_short``.
        skip_hedged_filler: skip hedged or vague sentences that name nothing checkable.

    Examples:
        >>> skip_reason("I hope this helps!"), skip_reason("Paris is the capital of France.")
        ('meta', None)
    """
    t = text.strip().lstrip("\"'\u201c*_ ").rstrip("*_ ")
    if not t:
        return "no_content"
    interjection = _INTERJECTION.match(t)
    if interjection and interjection.end() < len(t):
        t = t[interjection.end() :]
    low = t.lower()
    if t.rstrip("\"'\u201d)] ").endswith(("?", "\uff1f")):
        return "question"
    if _GREETING.match(low):
        return "greeting"
    if _META.match(low) or _META_ANYWHERE.search(low):
        return "meta"
    if _OPINION.match(low):
        return "opinion"
    if _INSTRUCTION.match(low) or _is_imperative(t):
        return "instruction"
    if t.startswith(":"):
        return "no_content"  # a reference list line "[^1^]: Title"
    words = _WORD.findall(t)
    if not words:
        return "no_content"
    # CJK and other scripts without spaces: count characters instead of words
    n_words = len(words) if " " in t else max(len(words), len(t) // 4)
    if n_words < min_words and not _DIGIT.search(t):
        return "too_short"
    content = has_content(t)
    if not content and _SECOND_PERSON.search(low):
        return "instruction"  # advice addressed to the reader ("... helps you sleep")
    if not content and _EVALUATIVE.search(low) and n_words < 16:
        return "opinion"
    if skip_hedged_filler:
        if _FILLER_START.match(low):
            return "hedged_filler"
        if low.startswith("if ") and HEDGE.search(low):
            return "hedged_filler"  # speculation: "If X is not addressed, it could ..."
        # short and naming nothing: "Results may vary.", "It depends on many factors."
        if not content and n_words < 12 and (_FILLER.search(low) or HEDGE.search(low)):
            return "hedged_filler"
    return None


def _is_imperative(t: str) -> bool:
    """A sentence opening with a bare verb addressed to the reader ("Reduce time online.")."""
    tokens = t.split(None, 2)
    if not tokens:
        return False
    first = tokens[0].lower().strip(",.:;!")
    if first not in _IMPERATIVE_VERBS:
        return False
    if len(tokens) == 1:
        return True
    second = tokens[1].lower().strip(",.:;!")
    # "Research shows ...", "Exercise is ...", "Use of X ...": the first word is a noun
    return not (second in {"of", "and", "or"} or _is_verb(second) or second.endswith("s"))


# ---------------------------------------------------------------- typing

_PROCEDURAL = re.compile(
    r"^(?:to [a-z]+\b[^,]{0,80},|first(?:ly)?,|second(?:ly)?,|then,|next,|finally,|step \d+|"
    r"after (?:that|this),)|\b(?:by (?:pressing|clicking|running|selecting|typing|using)|"
    r"(?:press|click|run|select|type|enter|install|open) (?:the|a|an)\b)",
)
_CAUSAL = re.compile(
    r"\b(?:because|due to|caus(?:e|es|ed|ing)|lead(?:s)? to|led to|result(?:s|ed)? in|"
    r"as a result|therefore|thus|hence|consequently|owing to|thanks to|trigger(?:s|ed)?|"
    r"contribut(?:e|es|ed) to|responsible for|so that|since (?!\d))\b",
)
_COMPARATIVE = re.compile(
    r"\b(?:more|less|fewer|greater|larger|smaller|higher|lower|bigger|older|younger|faster|"
    r"slower|better|worse|longer|shorter|earlier|later|heavier|lighter)\s+(?:\w+\s+)?than\b|"
    r"\b\w+er than\b|\bthe (?:(?:most|least) \w+|largest|smallest|highest|lowest|biggest|"
    r"oldest|youngest|fastest|longest|shortest|best|worst|tallest|deepest|richest|busiest)\b|"
    r"\b(?:compared (?:to|with)|as \w+ as|outnumber|exceed(?:s|ed)?|surpass(?:es|ed)?)\b",
)
_MONTHS = (
    r"january|february|march|april|may|june|july|august|september|october|november|december|"
    r"jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_TEMPORAL = re.compile(
    r"\b(?:1[0-9]{3}|20[0-9]{2})s?\b|\b(?:" + _MONTHS + r")\.? \d{1,2}\b|\b\d{1,2} (?:"
    r"" + _MONTHS + r")\b|\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b|"
    r"\b\d+(?:st|nd|rd|th) century\b|\b(?:century|decade|era|yesterday|today|since|until|"
    r"born|died|founded|established|dynasty)\b",
)
_NUMERIC = re.compile(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|"
    r"forty|fifty|hundred|thousand|million|billion|trillion|dozen|percent|half|twice|double|"
    r"triple)\b",
)
_DEFINITION = re.compile(
    r"^[\w\s\-'(),.]{1,80}?\b(?:is|are|was|were)\s+(?:a|an|the|one of the)\b|"
    r"\b(?:refers? to|is defined as|are defined as|means|stands for|is known as|is called|"
    r"also known as|is a type of|is a kind of)\b",
)


def claim_type(text: str) -> ClaimType:
    """The claim's type by rules, most specific first.

    Order: procedural, causal, comparative, temporal, numeric, definition, factual.

    Examples:
        >>> claim_type("Einstein was born in 1879."), claim_type("Smoking causes cancer.")
        ('temporal', 'causal')
    """
    text = text.lower()
    if _PROCEDURAL.search(text):
        return "procedural"
    if _CAUSAL.search(text):
        return "causal"
    if _COMPARATIVE.search(text):
        return "comparative"
    if _TEMPORAL.search(text):
        return "temporal"
    if _NUMERIC.search(text):
        return "numeric"
    if _DEFINITION.search(text):
        return "definition"
    return "factual"


# ---------------------------------------------------------------- clauses and subjects

_AUX = (
    "is are was were be been being am has have had do does did will would shall should can "
    "could may might must"
)
_COMMON_VERBS = (
    "became become becomes won wins win died dies lived lives served serves founded founds "
    "wrote writes made makes led leads received receives remained remains moved moves went goes "
    "began begins started starts married marries joined joins left leaves took takes gave gives "
    "built builds held holds grew grows ran runs lost loses sold sells bought buys taught "
    "teaches studied studies graduated graduates worked works played plays developed develops "
    "created creates published publishes released releases produced produces directed directs "
    "starred stars appeared appears returned returns earned earns spent spends features "
    "featured contains contained includes included covers covered reached reaches peaked "
    "peaks consists consisted comprises comprised owns owned uses used known located based "
    "born named called considered elected appointed awarded"
)
VERBS = frozenset((_AUX + " " + _COMMON_VERBS).split())
_PRONOUNS = frozenset({"he", "she", "it", "they", "his", "her", "its", "their", "him", "them"})
_PRONOUNS |= {"this", "these", "those"}
_NOT_ED_VERBS = frozenset({"red", "bed", "need", "seed", "feed", "hundred", "indeed", "united"})
_EXPLETIVE_IT = re.compile(
    r"^it(?:'s| is| was| has been| will be| would be)\s+(?:important|worth|possible|likely|"
    r"unlikely|clear|true|false|known|believed|thought|said|estimated|reported|not|also|"
    r"difficult|hard|easy|necessary|recommended|essential|crucial|unclear|interesting|common|"
    r"rare|a good idea|best)\b|^it (?:seems|appears|depends|takes)\b",
    re.IGNORECASE,
)
_TOKEN = re.compile(r"\S+")


def _is_verb(token: str) -> bool:
    w = token.lower().strip(".,;:!?\"'()")
    if w in VERBS:
        return True
    return len(w) > 4 and w.endswith("ed") and w.isalpha() and w not in _NOT_ED_VERBS


def first_verb_index(tokens: list[str]) -> int | None:
    """Index of the first token that looks like a verb, or ``None``."""
    for i, tok in enumerate(tokens):
        if i == 0 and tok[:1].isupper() and tok.lower() not in VERBS:
            continue  # a capitalised first word is a name far more often than a verb
        if _is_verb(tok):
            return i
    return None


_NAME = r"[A-Z][\w\-'.]*(?: (?:[A-Z][\w\-'.]*|de|von|van|der|da|al|bin|of))*"
# "John Newlands (1837-1898), a British chemist ..." / "Marie Curie, a physicist, ..."
_APPOSITIVE_NAME = re.compile(r"(" + _NAME + r")\s*(?:\([^)]{1,40}\)\s*)?,\s+(?:a|an|the)\s")
_SUBORDINATE = re.compile(
    r"\b(?:that|which|who|whom|whose|where|when|because|if|although|while|whether)\b",
    re.IGNORECASE,
)


def subject_of(text: str) -> str | None:
    """The subject of a simple declarative sentence: the words before its first verb.

    Returns ``None`` when there is no clear subject (no verb, a pronoun, too long, or a
    sentence opening with an adverbial clause).

    Examples:
        >>> subject_of("Albert Einstein was born in Ulm.")
        'Albert Einstein'
    """
    appositive = _APPOSITIVE_NAME.match(text)
    if appositive:
        return appositive.group(1)
    tokens = _TOKEN.findall(text)
    vi = first_verb_index(tokens)
    if vi is None or vi == 0 or vi > 6:
        return None
    subj_tokens = tokens[:vi]
    subj = " ".join(subj_tokens).strip(" ,;:")
    if not subj or subj.lower() in _PRONOUNS or "," in subj:
        return None
    if subj.count("(") != subj.count(")") or subj.count('"') % 2:
        return None  # cut inside a bracket or quote: not a clean subject
    first = subj_tokens[0].lower()
    if first in {
        "in",
        "on",
        "at",
        "after",
        "before",
        "during",
        "when",
        "while",
        "although",
        "if",
        "because",
        "since",
        "as",
        "however",
        "but",
        "and",
        "so",
        "there",
        "here",
        "i",
        "we",
        "you",
        "this",
        "that",
        "these",
        "those",
    }:
        return None
    if not (subj[0].isupper() or first in {"the", "a", "an"}):
        return None
    return subj


_PERSON = re.compile(r"(?!(?:The|A|An|This|That)\b)" + _NAME)


_FULL_NAME = re.compile(r"\b[A-Z][a-z\-']+(?: (?:de|von|van|der|da|al|bin))?(?: [A-Z][a-z\-']+)+")


def _rival_person(antecedent: str, sentence: str | None) -> bool:
    """Whether ``sentence`` (the one ``antecedent`` is the subject of) names a person other
    than a one-word antecedent: "Polonium was discovered by Marie Curie." - a following "She"
    means Marie Curie, not polonium, so a he/she there is not resolved to the subject."""
    if not sentence or len(antecedent.split()) > 1:
        return False
    rest = sentence.replace(antecedent, " ", 1)
    return _FULL_NAME.search(rest) is not None


def resolve_pronoun(text: str, antecedent: str | None, sentence: str | None = None) -> str:
    """Replace a sentence-initial He/She/They/It (or His/Her/Its/Their) by ``antecedent``.

    ``sentence`` is the sentence ``antecedent`` is the subject of: a he/she is left as it is
    when a one-word antecedent shares it with a person's full name (the pronoun is as likely
    to mean that person).

    Examples:
        >>> resolve_pronoun("He died in 1955.", "Albert Einstein")
        'Albert Einstein died in 1955.'
        >>> resolve_pronoun("She also won two Nobel Prizes.", "Polonium",
        ...                 "Polonium was discovered by Marie Curie in 1898.")
        'She also won two Nobel Prizes.'
    """
    if not antecedent:
        return text
    m = re.match(r"(he|she|they|it|his|her|its|their)\b", text, re.IGNORECASE)
    if not m:
        return text
    word = m.group(1).lower()
    if word == "it" and _EXPLETIVE_IT.match(text):
        return text
    plural = antecedent.endswith("s") or " and " in antecedent
    if word in {"it", "its"} and plural:
        return text
    if word in {"they", "their"} and not plural:
        return text
    if word in {"he", "she", "his", "her"} and (
        not _PERSON.fullmatch(antecedent) or _rival_person(antecedent, sentence)
    ):
        return text
    rest = text[m.end() :]
    if word in {"his", "her", "its", "their"}:
        # "Her" at sentence start followed by a verb is an object pronoun we do not touch
        nxt = _TOKEN.findall(rest[:40])
        if nxt and _is_verb(nxt[0]):
            return text
        possessive = antecedent + ("'" if antecedent.endswith("s") else "'s")
        return possessive + rest
    return antecedent + rest


MAX_SPLIT_CHARS = 1500
_SPLIT_POINT = re.compile(r"(?:,?\s+(?:and|but|while|whereas)\s+|\s*;\s+)", re.IGNORECASE)


def split_clauses(text: str) -> list[tuple[int, int, bool]]:
    """Split a sentence at coordinating conjunctions that join two predicates or clauses.

    Returns ``(start, end, needs_subject)`` spans relative to ``text``; ``needs_subject`` is
    True for a bare predicate ("... and died in 1955") that needs the first clause's subject.
    A single span covering the whole text is returned when nothing should be split.

    Examples:
        >>> t = "Einstein was born in 1879 and died in 1955."
        >>> [(t[a:b], s) for a, b, s in split_clauses(t)]
        [('Einstein was born in 1879', False), ('died in 1955.', True)]
    """
    spans: list[tuple[int, int, bool]] = []
    pos = 0
    needs = False
    if len(text) > MAX_SPLIT_CHARS:
        # not a sentence a person wrote; kept whole (and keeps this linear in the answer)
        return [(0, len(text), False)]
    for m in _SPLIT_POINT.finditer(text):
        left = text[pos : m.start()]
        right = text[m.end() : m.end() + 200]  # only its first few words matter
        left_tokens = _TOKEN.findall(left)
        right_tokens = _TOKEN.findall(right)
        if len(left_tokens) < 3 or len(right_tokens) < 2:
            continue
        if first_verb_index(left_tokens) is None and not needs:
            continue
        if left.count("(") != left.count(")") or left.count('"') % 2:
            continue
        head = right_tokens[0]
        # a capitalised "verb" after "and" mid-sentence is a name ("Will Smith", "May Day")
        if (
            _is_verb(head)
            and head[:1].islower()
            and head.lower() not in {"used", "known", "based", "located"}
        ):
            if _SUBORDINATE.search(text, pos, m.start()):
                continue  # "... found that it reduced X and improved Y": Y is not the subject's
            right_needs = True
        else:
            # an independent clause: a subject of at most four words, then a verb
            vi = first_verb_index(right_tokens[:6])
            if vi is None or vi == 0:
                continue
            first = right_tokens[0].lower()
            if not (
                right_tokens[0][:1].isupper()
                or first in _PRONOUNS
                or first in {"the", "a", "an", "many", "most", "some", "its", "his", "her"}
            ):
                continue
            if any(t.endswith(",") for t in right_tokens[:vi]):
                continue
            right_needs = False
        spans.append((pos, m.start(), needs))
        pos = m.end()
        needs = right_needs
    spans.append((pos, len(text), needs))
    return spans


# only "who": the antecedent of "which" is too often a whole clause or the wrong noun
_RELATIVE = re.compile(r",\s+who\s+(?=\S)")
_TRAILING_APPOSITIVE = re.compile(r",\s+(?:a|an|the)\s[^,]{1,60}$", re.IGNORECASE)
_TRAILING_NAME = re.compile(
    r"(?<![\w'-])(" + _NAME + r"(?: and " + _NAME + r")?)\s*(?:\([^)]{1,40}\))?$"
)


def split_relative(text: str, start: int, end: int) -> list[tuple[int, int, str | None]]:
    """Split off a non-restrictive ``who`` clause about a named antecedent.

    ``"..., Barney Clark, a dentist, who survived 112 days"`` gives the main span (up to the
    comma) and the clause span after ``who`` with ``"Barney Clark"`` as its subject. Only a
    proper-name antecedent is trusted; anything else keeps the span whole.

    Returns ``(start, end, subject)`` spans in ``text`` coordinates; ``subject`` is ``None``
    for the main span.

    Examples:
        >>> t = "He met Alan Turing, who proposed the Turing machine."
        >>> [(t[a:b], s) for a, b, s in split_relative(t, 0, len(t))]
        [('He met Alan Turing', None), ('proposed the Turing machine.', 'Alan Turing')]
    """
    m = _RELATIVE.search(text, start, end)
    if m is None:
        return [(start, end, None)]
    before = text[start : m.start()]
    appositive = _TRAILING_APPOSITIVE.search(before)
    if appositive:
        before = before[: appositive.start()]
    name = _TRAILING_NAME.search(before)
    rest = _TOKEN.findall(text[m.end() : end])
    if (
        name is None
        or not all(_PERSON.fullmatch(n) for n in name.group(1).split(" and "))
        or len(_TOKEN.findall(text[start : m.start()])) < 2
        or not rest
        or not _is_verb(rest[0])
    ):
        return [(start, end, None)]
    return [(start, m.start(), None), (m.end(), end, name.group(1))]
