"""The deterministic, model-free claim extractor.

Pipeline per answer: split into sentences with exact offsets -> parse and strip citation
markers -> select checkworthy sentences (skip questions, greetings, meta-talk, opinions,
instructions, hedged filler) -> decompose conjunctions and list items into atomic claims ->
normalise (flag hedges, resolve a leading pronoun, deduplicate) -> type each claim.

Examples:
    >>> claims = extract_claims("Einstein was born in 1879 and died in 1955. I hope this helps!")
    >>> [(c.id, c.text, c.type) for c in claims]
    [('c1', 'Einstein was born in 1879.', 'temporal'), ('c2', 'Einstein died in 1955.', 'temporal')]
"""

from __future__ import annotations

import logging
import re

from affidavit.claims import rules
from affidavit.claims.segment import Segment, split_sentences
from affidavit.core.claims import ClaimExtraction, SkippedSentence, SkipReason
from affidavit.core.errors import ClaimError
from affidavit.core.settings import ClaimsSettings
from affidavit.core.types import Claim

logger = logging.getLogger(__name__)

_LEAD_IN_LABEL = re.compile(r"^\*{0,2}([^:*]{1,60}?)\*{0,2}\s*:\s+(?=\S)")
_MARKDOWN = re.compile(r"\*\*|__|`")
_DISCOURSE = re.compile(
    r"^(?:additionally|also|furthermore|moreover|in addition|in fact|in summary|in conclusion|"
    r"overall|finally|notably|importantly|interestingly|however|indeed|in short|to summari[sz]e|"
    r"of course|sure|certainly|yes|well|absolutely|ultimately)"
    r",\s+",
    re.IGNORECASE,
)
_NORM = re.compile(r"[\W_]+", re.UNICODE)


def _finish(text: str) -> str:
    """Capitalise and end with a full stop, the form every claim text takes."""
    text = text.strip().rstrip(",;:")
    if not text:
        return text
    text = text[0].upper() + text[1:]
    if text[-1] not in ".!?\u3002\uff01\uff1f\"'\u201d)":
        text += "."
    return text


def _clean(text: str) -> str:
    text = rules.strip_citations(text)
    text = _MARKDOWN.sub("", text)
    return _DISCOURSE.sub("", text).strip()


def _repeats_some(parts: list[tuple[str, int, int, str]], seen: set[str]) -> bool:
    """Whether some but not all of a sentence's claims repeat an earlier claim (of this
    sentence or of one before it)."""
    keys = set(seen)
    repeated = []
    for text, *_ in parts:
        key = _NORM.sub(" ", text.lower()).strip()
        repeated.append(key in keys)
        keys.add(key)
    return any(repeated) and not all(repeated)


class RuleBasedExtractor:
    """Deterministic, model-free claim extraction with exact offsets into the answer.

    Args:
        settings: the ``claims`` settings section; ``None`` uses the defaults.

    Examples:
        >>> ex = RuleBasedExtractor()
        >>> [c.text for c in ex.extract("Hi! Paris is the capital of France [1].")]
        ['Paris is the capital of France.']
        >>> ex.extract("Paris is the capital of France [1].")[0].citations
        (1,)
    """

    name = "rules"

    def __init__(self, settings: ClaimsSettings | None = None) -> None:
        if settings is not None and not isinstance(settings, ClaimsSettings):
            raise ClaimError(
                f"RuleBasedExtractor expects ClaimsSettings or None, got {type(settings).__name__}"
            )
        self.settings = settings or ClaimsSettings()

    def config(self) -> dict[str, object]:
        """The effective configuration (recorded in traces and certificates)."""
        return {"extractor": self.name, **self.settings.model_dump(mode="json")}

    def extract(self, answer: str) -> list[Claim]:
        """Return the answer's checkable claims, in answer order (ids c1, c2, ...).

        Raises:
            ClaimError: when ``answer`` is not a string.
        """
        return list(self.run(answer).claims)

    def run(self, answer: str) -> ClaimExtraction:
        """Extract claims and record every sentence that produced none, with the reason.

        Raises:
            ClaimError: when ``answer`` is not a string.
        """
        if not isinstance(answer, str):
            raise ClaimError(f"answer must be a string, got {type(answer).__name__}")
        s = self.settings
        segments = split_sentences(answer)
        claims: list[Claim] = []
        skipped: list[SkippedSentence] = []
        seen: set[str] = set()
        prev_subject: str | None = None
        prev_sentence: str | None = None

        def skip(seg: Segment, reason: SkipReason) -> None:
            skipped.append(
                SkippedSentence(
                    sentence_index=seg.index,
                    start=seg.start,
                    end=seg.end,
                    text=seg.text,
                    reason=reason,
                )
            )

        for seg in segments:
            if len(claims) >= s.max_claims:
                skip(seg, "limit")
                continue
            if seg.kind == "heading":
                skip(seg, "heading")
                continue
            cleaned = _clean(seg.text)
            if s.select:
                # select on the pronoun-resolved text: "His work ..." names someone
                reason = rules.skip_reason(
                    rules.resolve_pronoun(cleaned, prev_subject, prev_sentence)
                    if s.resolve_pronouns
                    else cleaned,
                    min_words=s.min_words,
                    skip_hedged_filler=s.skip_hedged_filler,
                )
                # a bare list item ("- drought") is checkable together with its lead-in
                if reason == "too_short" and seg.kind == "list_item" and seg.lead_in:
                    reason = None
                # a bare noun phrase in a list with no lead-in ("- Health care") states nothing
                if (
                    reason is None
                    and seg.kind == "list_item"
                    and not seg.lead_in
                    and not re.search(r"\d", cleaned)
                    and rules.first_verb_index(cleaned.split()) is None
                    and ":" not in cleaned
                ):
                    reason = "no_content"
                if reason is not None:
                    skip(seg, reason)
                    continue
            elif not cleaned:
                skip(seg, "no_content")
                continue
            citations = rules.parse_citations(seg.text)
            hedged = rules.is_hedged(cleaned)
            parts = self._parts(answer, seg, cleaned, prev_subject, prev_sentence)
            if s.deduplicate and len(parts) > 1 and _repeats_some(parts, seen):
                # a clause repeating an earlier claim ("1,932" and "1.932" are one to the
                # deduplication): that claim's decision is another clause's (withheld, perhaps),
                # and a sentence is shown on its own claims, so this one is checked whole
                whole = (
                    rules.resolve_pronoun(cleaned, prev_subject, prev_sentence)
                    if s.resolve_pronouns
                    else cleaned
                )
                parts = [(_finish(whole), seg.start, seg.end, "extracted")]
            made = 0
            for text, start, end, origin in parts:
                if len(claims) >= s.max_claims:
                    # the limit cut this sentence short: recorded, so that no reader takes the
                    # sentence as checked whole by its first claims (the audit fails it closed)
                    skip(seg, "limit")
                    break
                key = _NORM.sub(" ", text.lower()).strip()
                if s.deduplicate and key in seen:
                    continue
                seen.add(key)
                claims.append(
                    Claim(
                        id=f"c{len(claims) + 1}",
                        text=text,
                        start=start,
                        end=end,
                        sentence_index=seg.index,
                        sentence=seg.text,
                        type=rules.claim_type(text),
                        hedged=hedged,
                        citations=citations,
                        origin=origin,
                    )
                )
                made += 1
            if made == 0:
                skip(seg, "duplicate")
            # the next sentence's pronouns refer to this one's subject, or to nothing clear
            prev_subject = rules.subject_of(parts[0][0]) if parts else None
            prev_sentence = parts[0][0] if parts else None
        logger.debug("extracted claims", extra={"claims": len(claims), "sentences": len(segments)})
        return ClaimExtraction(
            claims=tuple(claims),
            skipped=tuple(skipped),
            sentence_count=len(segments),
            method="rules",
            config=self.config(),
        )

    def _parts(
        self,
        answer: str,
        seg: Segment,
        cleaned: str,
        prev_subject: str | None,
        prev_sentence: str | None = None,
    ) -> list[tuple[str, int, int, str]]:
        """The claims of one sentence: (text, start, end, origin) with offsets in ``answer``."""
        s = self.settings
        lead = ""
        body_text = cleaned
        if seg.kind == "list_item" and s.decompose:
            # "**Paris**: capital of France" -> "Paris: ..." keeps the label as context;
            # an item without a verb borrows the list's lead-in sentence.
            tokens = body_text.split()
            if seg.lead_in and rules.first_verb_index(tokens) is None:
                lead_clean = _clean(seg.lead_in).rstrip(":").strip()
                if lead_clean and not _LEAD_IN_LABEL.match(body_text):
                    lead = lead_clean + " "
                    first, _, rest = body_text.partition(" ")
                    if first in {"The", "A", "An"}:
                        body_text = f"{first.lower()} {rest}"
        if s.resolve_pronouns and not lead:
            body_text = rules.resolve_pronoun(body_text, prev_subject, prev_sentence)
        if not s.decompose or lead:
            return [(_finish(lead + body_text), seg.start, seg.end, "extracted")]

        # split on the raw sentence so the spans map back to exact answer offsets
        raw = seg.text
        pieces: list[tuple[int, int, bool, str | None]] = []
        for a, b, needs_subject in rules.split_clauses(raw):
            for ra, rb, antecedent in rules.split_relative(raw, a, b):
                pieces.append((ra, rb, needs_subject and antecedent is None, antecedent))
        if len(pieces) == 1:
            return [(_finish(body_text), seg.start, seg.end, "extracted")]
        out: list[tuple[str, int, int, str]] = []
        subject = None
        for i, (a, b, needs_subject, antecedent) in enumerate(pieces):
            while a < b and raw[a].isspace():
                a += 1
            while b > a and (raw[b - 1] in ",;" or raw[b - 1].isspace()):
                b -= 1
            if a >= b:
                continue
            part = _clean(raw[a:b])
            if not part:
                continue
            if i == 0:
                if s.resolve_pronouns:
                    part = rules.resolve_pronoun(part, prev_subject, prev_sentence)
                subject = rules.subject_of(part)
            elif antecedent is not None:
                part = f"{antecedent} {part}"
            elif needs_subject:
                if subject is None:
                    # no clear subject to carry: keep the sentence whole
                    return [(_finish(body_text), seg.start, seg.end, "extracted")]
                part = f"{subject} {part}"
            elif s.resolve_pronouns:
                part = rules.resolve_pronoun(
                    part, subject or prev_subject, out[0][0] if subject else prev_sentence
                )
            if rules.skip_reason(part, min_words=2, skip_hedged_filler=False) == "too_short":
                return [(_finish(body_text), seg.start, seg.end, "extracted")]
            out.append((_finish(part), seg.start + a, seg.start + b, "decomposed"))
        if len(out) <= 1:
            return [(_finish(body_text), seg.start, seg.end, "extracted")]
        return out


def extract_claims(answer: str, settings: ClaimsSettings | None = None) -> list[Claim]:
    """Extract the checkable claims of an answer with the rule-based extractor.

    Args:
        answer: the LLM's answer text.
        settings: the ``claims`` settings section (defaults when ``None``).

    Returns:
        Claims with ids ``c1, c2, ...``; ``answer[c.start:c.end]`` is the text each came from.

    Examples:
        >>> [c.text for c in extract_claims("The Nile is longer than the Amazon. Why?")]
        ['The Nile is longer than the Amazon.']
    """
    return RuleBasedExtractor(settings).extract(answer)
