"""Citation markers in a generated answer: clean-up, correction to the verifier's evidence, listing.

Three steps, each recorded:

1. `clean_citations` rewrites every marker the model wrote (``[2]``, ``[1, 3]``, ``[1-2]``,
   ``[Passage 2]``) into the canonical ``[n]`` form and removes numbers that name no provided
   passage (a streamed answer citing a passage that does not exist is a known failure).
2. `correct_citations` replaces a sentence's citations with the passages the verifier's
   evidence came from when they differ, and shifts the claims' offsets to the edited answer.
3. `list_citations` lists the citations finally attached to each sentence.

Examples:
    >>> cleaned = clean_citations("Paris is in France [1][7].", n_passages=2)
    >>> cleaned.text, [r.number for r in cleaned.removed]
    ('Paris is in France [1].', [7])
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from affidavit.claims.rules import MARKER as _MARKER
from affidavit.claims.rules import marker_numbers as _numbers
from affidavit.core.answer import Citation, CitationCorrection, RemovedCitation
from affidavit.core.types import Claim, Decision, Verdict
from affidavit.policy.render import split_sentences

# "...in 1969. [1]." (a marker between two sentence ends) -> "...in 1969 [1]."
_STRANDED = re.compile(r"(?<=[a-z0-9]{2})[.!?]((?: \[\d{1,3}(?:, \d{1,3})*\])+)(?=[.!?])")


def _render(numbers: Sequence[int]) -> str:
    return "".join(f"[{n}]" for n in numbers)


def _sentence_index(spans: Sequence[tuple[int, int]], offset: int) -> int:
    for i, (s, e) in enumerate(spans):
        if s <= offset < e or (offset == e and i == len(spans) - 1):
            return i
    # between sentences: attach to the preceding one
    before = [i for i, (s, _) in enumerate(spans) if s <= offset]
    return before[-1] if before else 0


@dataclass(frozen=True)
class CleanedAnswer:
    """An answer with canonical, valid citation markers only."""

    text: str
    removed: tuple[RemovedCitation, ...]


def clean_citations(answer: str, n_passages: int) -> CleanedAnswer:
    """Canonicalise markers and drop numbers outside ``1..n_passages`` (recorded).

    A marker left with no valid number disappears with the space before it. A marker stranded
    between two sentence ends ("in 1969. [1].") moves inside the sentence ("in 1969 [1].").
    """
    spans = split_sentences(answer) or [(0, len(answer))]
    removed: list[RemovedCitation] = []
    pieces: list[str] = []
    last = 0
    for m in _MARKER.finditer(answer):
        numbers = _numbers(m.group(1))
        valid: list[int] = []
        for n in numbers:
            if 1 <= n <= n_passages:
                if n not in valid:
                    valid.append(n)
            else:
                removed.append(
                    RemovedCitation(
                        sentence_index=_sentence_index(spans, m.start()),
                        number=n,
                        marker=m.group(0).strip(),
                        reason=(
                            f"passage [{n}] does not exist: only {n_passages} passages were "
                            "provided"
                            if n_passages
                            else f"passage [{n}] does not exist: no passages were provided"
                        ),
                    )
                )
        pieces.append(answer[last : m.start()])
        if valid:
            lead = " " if m.group(0)[:1] in (" ", "\t") else ""
            pieces.append(lead + _render(valid))
        last = m.end()
    pieces.append(answer[last:])
    return CleanedAnswer(text=_STRANDED.sub(r"\1", "".join(pieces)), removed=tuple(removed))


def sentence_markers(answer: str) -> list[tuple[int, int, list[int]]]:
    """``(start, end, numbers)`` of every marker in a cleaned answer."""
    return [(m.start(), m.end(), _numbers(m.group(1))) for m in _MARKER.finditer(answer)]


@dataclass(frozen=True)
class CorrectedAnswer:
    """The answer after citation correction, with claims moved to the new offsets."""

    text: str
    claims: tuple[Claim, ...]
    corrections: tuple[CitationCorrection, ...]


@dataclass(frozen=True)
class _Edit:
    start: int
    end: int
    text: str


def _apply(answer: str, edits: list[_Edit]) -> tuple[str, list[_Edit]]:
    edits = sorted(edits, key=lambda e: e.start)
    out: list[str] = []
    last = 0
    for e in edits:
        out.append(answer[last : e.start])
        out.append(e.text)
        last = e.end
    out.append(answer[last:])
    return "".join(out), edits


def _shift(offset: int, edits: Sequence[_Edit], *, is_end: bool) -> int:
    """Map an offset of the old answer to the edited one (edits sorted, non-overlapping)."""
    delta = 0
    for e in edits:
        if e.start == e.end:  # an insertion: before a start, at or before an end
            if e.start < offset or (is_end and e.start == offset):
                delta += len(e.text)
        elif e.end <= offset:
            delta += len(e.text) - (e.end - e.start)
        elif e.start < offset:  # inside a replaced marker: snap to its edge
            return e.start + delta + (len(e.text) if is_end else 0)
    return offset + delta


def correct_citations(
    answer: str,
    claims: Sequence[Claim],
    decisions: Mapping[str, Decision],
    evidence_numbers: Mapping[str, Sequence[int]],
) -> CorrectedAnswer:
    """Point each sentence's citations at the passages its verified claims' evidence came from.

    Per sentence (as `affidavit.policy.render.split_sentences` splits it): the target is the
    union of the evidence passages of its *verified* claims. When every claim in the sentence is
    verified, the citations become exactly the target; when only some are, the target is added
    to what the model cited (its other citations may back the unverified claims). A sentence
    with no verified claim keeps its citations. Every change is recorded.

    Args:
        answer: the cleaned answer (canonical markers).
        claims: claims with offsets into ``answer``.
        decisions: claim id -> decision.
        evidence_numbers: claim id -> passage numbers its verdict's evidence spans came from.
    """
    spans = split_sentences(answer)
    markers = sentence_markers(answer)
    edits: list[_Edit] = []
    corrections: list[CitationCorrection] = []
    for index, (s, e) in enumerate(spans):
        in_sentence = [c for c in claims if c.start < e and c.end > s]
        verified = [c for c in in_sentence if decisions.get(c.id) == "verified"]
        if not verified:
            continue
        target: list[int] = sorted({n for c in verified for n in evidence_numbers.get(c.id, ())})
        if not target:
            continue
        own = [(ms, me, nums) for ms, me, nums in markers if s <= ms < e]
        cited = [n for _, _, nums in own for n in nums]
        new = target if len(verified) == len(in_sentence) else sorted(set(cited) | set(target))
        if sorted(set(cited)) == new:
            continue
        if own:
            first_start = own[0][0]
            lead = " " if answer[first_start] in " \t" else ""
            edits.append(_Edit(first_start, own[0][1], lead + _render(new)))
            edits.extend(_Edit(ms, me, "") for ms, me, _ in own[1:])
        else:
            # no marker: insert before the sentence's closing punctuation
            body_end = e
            while body_end > s and answer[body_end - 1] in ".!?\"'”’) \t":
                body_end -= 1
            edits.append(_Edit(body_end, body_end, " " + _render(new)))
        corrections.append(
            CitationCorrection(
                sentence_index=index,
                claim_id=verified[0].id,
                from_numbers=tuple(sorted(set(cited))),
                to_numbers=tuple(new),
                reason=(
                    "the verifier found the supporting evidence in "
                    + ", ".join(f"[{n}]" for n in target)
                    + (
                        f", not in {', '.join(f'[{n}]' for n in sorted(set(cited)))}"
                        if cited
                        else "; the sentence cited nothing"
                    )
                ),
            )
        )
    if not edits:
        return CorrectedAnswer(answer, tuple(claims), ())
    text, ordered = _apply(answer, edits)
    new_numbers = {c.sentence_index: c.to_numbers for c in corrections}
    moved = []
    for c in claims:
        start = _shift(c.start, ordered, is_end=False)
        end = max(start, _shift(c.end, ordered, is_end=True))
        update: dict[str, object] = {"start": start, "end": end}
        touched = [i for i, (s, e) in enumerate(spans) if c.start < e and c.end > s]
        if any(i in new_numbers for i in touched):
            update["citations"] = tuple(
                sorted({n for i in touched for n in new_numbers.get(i, ())} | set(c.citations))
                if len(touched) > 1
                else new_numbers[touched[0]]
            )
        moved.append(c.model_copy(update=update))
    return CorrectedAnswer(text, tuple(moved), tuple(corrections))


def list_citations(
    answer: str,
    chunk_ids: Sequence[str],
    corrections: Sequence[CitationCorrection] = (),
) -> list[Citation]:
    """The citations attached to each sentence of a cleaned (and corrected) answer."""
    spans = split_sentences(answer) or [(0, len(answer))]
    fixed = {c.sentence_index: c for c in corrections}
    out: list[Citation] = []
    seen: set[tuple[int, int]] = set()
    for ms, _, nums in sentence_markers(answer):
        index = _sentence_index(spans, ms)
        fix = fixed.get(index)
        for n in nums:
            if not 1 <= n <= len(chunk_ids) or (index, n) in seen:
                continue
            seen.add((index, n))
            corrected_from = None
            if fix is not None and n not in fix.from_numbers and fix.from_numbers:
                corrected_from = fix.from_numbers[0]
            out.append(
                Citation(
                    sentence_index=index,
                    number=n,
                    chunk_id=chunk_ids[n - 1],
                    corrected_from=corrected_from,
                )
            )
    return out


def evidence_passages(verdict: Verdict, chunk_ids: Sequence[str]) -> tuple[int, ...]:
    """Passage numbers (1-based) the verdict's evidence spans came from."""
    index = {cid: i + 1 for i, cid in enumerate(chunk_ids)}
    return tuple(sorted({index[s.chunk_id] for s in verdict.evidence if s.chunk_id in index}))


_FILLER_WORDS = frozenset({"yes", "no", "sure", "thanks", "thank", "ok", "okay", "hello", "hi"})
# words that make a short sentence a refusal or a remark, not an answer
_NOT_AN_ANSWER = frozenset(
    {"i", "i'm", "don't", "not", "cannot", "can't", "unknown", "sorry", "unsure"}
)
# a question these open is answered by yes or no
_YES_NO_OPENERS = frozenset(
    {"is", "are", "was", "were", "am", "do", "does", "did", "has", "have", "had", "can", "could"}
    | {"will", "would", "should", "shall", "may", "might", "must"}
)
_WORDS = re.compile(r"[^\W_]+(?:['’.-][^\W_]+)*")
MAX_FRAGMENT_WORDS = 12
# a fragment without a name or digit ("Italo disco", "magazine") answers only when this short
MAX_PLAIN_FRAGMENT_WORDS = 4


def fresh_claim_ids(claims: Sequence[Claim]) -> Iterator[str]:
    """Claim ids ``c<n>`` after the last of ``claims``, skipping any already taken."""
    ids = {c.id for c in claims}
    n = len(claims)
    while True:
        n += 1
        if f"c{n}" not in ids:
            yield f"c{n}"


def _question_claim(
    claim_id: str, question: str, answer_words: str, answer: str, s: int, e: int, i: int
) -> Claim:
    """The claim ``"<question> <answer_words>"`` standing for sentence ``i`` (``answer[s:e]``):
    the question-and-answer form the verifier reads best."""
    from affidavit.claims.rules import parse_citations

    return Claim(
        id=claim_id,
        text=f"{question.strip()} {answer_words}",
        start=s,
        end=e,
        sentence_index=i,
        sentence=answer[s:e],
        citations=parse_citations(answer[s:e]),
        origin="decomposed",
    )


def fragment_claims(
    question: str, answer: str, claims: Sequence[Claim], *, max_words: int = MAX_FRAGMENT_WORDS
) -> list[Claim]:
    """Claims for short answer sentences the extractor found nothing in ("Pierre Gasly [1].").

    A bare name, number or date answers the question only together with it, so the claim checked
    is ``"<question> <fragment>"`` (the form the verifier was trained on for question answering);
    its offsets point at the answer sentence, so the sentence is shown only when it verifies.
    A fragment needs a name (a capitalised word after the first) or a digit, or is a plain phrase of
    at most four words ("Italo disco", "magazine"); "yes" / "no" answer a yes-no question. Filler
    ("Sure.") and refusals ("I don't know.") get no claim.

    Examples:
        >>> [c.text for c in fragment_claims("Who won?", "Pierre Gasly [1].", [])]
        ['Who won? Pierre Gasly']
        >>> [c.text for c in fragment_claims("Were both producers?", "No [1].", [])]
        ['Were both producers? No']
        >>> [c.text for c in fragment_claims("What type of media?", "magazine [1]", [])]
        ['What type of media? magazine']
    """
    from affidavit.claims.rules import strip_citations
    from affidavit.policy.render import split_sentences

    if not question.strip():
        return []
    first = _WORDS.search(question)
    yes_no_question = first is not None and first.group(0).lower() in _YES_NO_OPENERS
    taken = [(c.start, c.end) for c in claims]
    out: list[Claim] = []
    fresh = fresh_claim_ids(claims)
    for i, (s, e) in enumerate(split_sentences(answer)):
        if any(a < e and s < b for a, b in taken):
            continue
        sentence = answer[s:e]
        body = strip_citations(sentence).strip().rstrip(".!?;:").strip()
        words = _WORDS.findall(body)
        if not words or len(words) > max_words:
            continue
        lower = [w.lower() for w in words]
        if _NOT_AN_ANSWER & set(lower):
            continue
        named = any(w[:1].isupper() for w in words[1:]) or (
            words[0][:1].isupper() and lower[0] not in _FILLER_WORDS
        )
        yes_no = lower[0] in {"yes", "no"} and yes_no_question
        plain = len(words) <= MAX_PLAIN_FRAGMENT_WORDS and not set(lower) <= _FILLER_WORDS
        if not (named or yes_no or plain or any(ch.isdigit() for ch in body)):
            continue
        out.append(_question_claim(next(fresh), question, body, answer, s, e, i))
    return out


# "Yes, ...", "No." opening a sentence: the answer to a yes-no question ("No one ..." is not);
# "Certainly, ..." too when it opens the answer
_PUNCT_AFTER = r"\b(?=[*_\"'\u201d]*\s*[,.;:!\u2013\u2014])"
_YES_NO = re.compile(
    r"[*_\"'\u201c\s]*(?:(?P<yes>yes|yeah|yep)\b(?![-'\u2019])|(?P<no>no|nope|not at all)"
    + _PUNCT_AFTER
    + r"|(?P<first>absolutely|certainly|indeed|of course|sure|correct|right|true)"
    + _PUNCT_AFTER
    + r")",
    re.IGNORECASE,
)

# "Can you tell me ...?": a request, which a "Yes, ..." does not answer
_REQUEST = re.compile(r"\W*(?:can|could|will|would)\s+you\b", re.IGNORECASE)


def yes_no_claims(question: str, answer: str, claims: Sequence[Claim]) -> list[Claim]:
    """A claim ``"<question> Yes"`` (or ``No``) for each sentence that answers a yes-no
    question with yes or no before stating something else ("Certainly, ..." and the like only
    when it opens the answer).

    The claims stage reads "Yes, the bridge carries eight lanes." as its statement (the "Yes" is
    a discourse word to it), yet the "Yes" is the answer: checked as the question and its answer
    (as a bare "No [1]." is, `fragment_claims`), the sentence is shown only when both verify.
    Sentences no claim covers are left to `fragment_claims`.

    Examples:
        >>> from affidavit.claims.extractor import extract_claims
        >>> a = "Yes, the bridge carries eight lanes [1]."
        >>> [c.text for c in yes_no_claims("Was it designed by Bradfield?", a, extract_claims(a))]
        ['Was it designed by Bradfield? Yes']
        >>> yes_no_claims("Who designed it?", a, extract_claims(a))
        []
        >>> yes_no_claims("Can you tell me about the bridge?", a, extract_claims(a))
        []
    """
    from affidavit.policy.render import split_sentences

    first = _WORDS.search(question)
    if first is None or first.group(0).lower() not in _YES_NO_OPENERS or _REQUEST.match(question):
        return []
    taken = [(c.start, c.end) for c in claims]
    out: list[Claim] = []
    fresh = fresh_claim_ids(claims)
    for i, (s, e) in enumerate(split_sentences(answer)):
        if not any(a < e and s < b for a, b in taken):
            continue
        m = _YES_NO.match(answer, s, e)
        if m is None or (m.group("first") and i > 0):
            continue
        word = "No" if m.group("no") else "Yes"
        out.append(_question_claim(next(fresh), question, word, answer, s, e, i))
    return out


MIN_RESTATED_SHARE = 0.6
MAX_ANSWER_WORDS = 12
# stopwords that turn a statement round: never dropped from what is checked
_NEGATIONS = frozenset(
    {"not", "no", "never", "nor", "neither", "none", "nobody", "nothing", "nowhere", "without"}
    | {"cannot", "unless", "against"}
)


def _negates(word: str) -> bool:
    w = word.lower().replace("’", "'")
    return w in _NEGATIONS or w.endswith("n't")


def answer_form(question: str, claim: str) -> str | None:
    """``"<question> <what the claim adds to it>"`` for a claim that restates the question, else
    None.

    "The population of the small town with an Air Force Base 7 mi northeast of Sacramento,
    California is 743." restates "What is the population of the small town with an Air Force
    Base 7 mi northeast of Sacramento, California?" and adds "743": checked as "<question> 743",
    the question-and-answer form the verifier reads best (held out on HaluEval QA 0.96 balanced
    accuracy), where the restatement joins facts of two passages it reads poorly. The question
    is the user's premise, as for a bare answer (`fragment_claims`); every word the claim adds
    is still checked. A claim restates the question when at least 60% of the question's
    content words are in it; a yes-no question, or a claim adding nothing or more than 12 words,
    has no answer form. The added runs are kept whole, with the words that link them to the
    question ("is 743", "was founded by Austin Winkler").

    Examples:
        >>> answer_form("Who founded the band Hinder?", "The band Hinder was founded by Austin Winkler.")
        'Who founded the band Hinder? was founded by Austin Winkler'
        >>> answer_form("Who founded Hinder?", "Paris is in France.") is None
        True
    """  # noqa: E501
    from difflib import SequenceMatcher

    from affidavit.claims.rules import strip_citations
    from affidavit.verify.lexical import FILLER, STOPWORDS, content_stems, stem

    q = set(content_stems(question))
    first = _WORDS.search(question)
    if len(q) < 2 or first is None or first.group(0).lower() in _YES_NO_OPENERS:
        return None
    body = strip_citations(claim).strip().rstrip(".!?;:").strip()
    c_words = _WORDS.findall(body)
    q_words = _WORDS.findall(question)
    c_keys = [stem(w.lower()) for w in c_words]
    q_keys = [stem(w.lower()) for w in q_words]
    # what the claim writes where the question has its question word, or adds: the runs of
    # the claim that do not align with the question, each kept whole ("My Love from the Star")
    added: list[str] = []
    for op, _, _, j1, j2 in SequenceMatcher(None, q_keys, c_keys, autojunk=False).get_opcodes():
        if op in ("replace", "insert"):
            run = c_words[j1:j2]
            if any(w.lower() not in STOPWORDS | FILLER for w in run):
                added.append(" ".join(run))
            elif any(_negates(w) for w in run):
                # "did not open in 1932": the form would check "<question> in 1932" and show the
                # negation unchecked (fail closed: no answer form)
                return None
    shared = q & set(content_stems(" ".join(c_words)))
    n_added = sum(len(a.split()) for a in added)
    if len(shared) < MIN_RESTATED_SHARE * len(q) or not added or n_added > MAX_ANSWER_WORDS:
        return None
    return f"{question.strip()} {'; '.join(added)}"
