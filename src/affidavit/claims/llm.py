"""Optional LLM decomposition into atomic, decontextualised claims, on top of the rules.

The rule-based extractor first selects the checkworthy sentences (so the LLM never decides
alone what is left unchecked). The generator then rewrites each selected sentence into atomic
claims that stand on their own (pronouns replaced, context added) through JSON-schema output.
Every claim keeps the offsets of the sentence it came from.

Fail closed: a generator error, invalid JSON, a reply that breaks the schema or names a
sentence that does not exist makes the whole answer fall back to the rule-based claims, and
``ClaimExtraction.fallback_reason`` says why. A single LLM claim that is not grounded in the
answer (a number or a content word of it is no word of the answer, or it negates what its
sentence does not: the sentence is shown whole when its claims verify) is rejected and that
sentence keeps its rule-based claims (recorded in ``notes``). A sentence for which the LLM returns
nothing also keeps its rule-based claims, so no selected sentence goes unchecked.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from affidavit.claims import rules
from affidavit.claims.extractor import RuleBasedExtractor, _clean, _finish
from affidavit.claims.segment import Segment, split_sentences
from affidavit.core.claims import ClaimExtraction
from affidavit.core.errors import ClaimError
from affidavit.core.settings import ClaimsSettings
from affidavit.core.types import Claim, Message
from affidavit.generate.base import Generator

logger = logging.getLogger(__name__)

SYSTEM_PROMPT = (
    "You split an answer into atomic, self-contained factual claims for fact-checking. "
    "For each numbered sentence, write the claims it states: one fact per claim, pronouns and "
    "vague references replaced by the names they refer to (use the context), no opinions, no "
    "advice, no hedging words added or removed, no facts that the sentence does not state. "
    "Copy numbers, dates and names exactly. Reply with JSON only."
)

CLAIMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "claims": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "sentence": {"type": "integer", "minimum": 1},
                    "claim": {"type": "string", "minLength": 3, "maxLength": 600},
                },
                "required": ["sentence", "claim"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["claims"],
    "additionalProperties": False,
}


class _LLMClaim(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    sentence: int = Field(ge=1)
    claim: str = Field(min_length=3, max_length=600)


class _LLMOutput(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    claims: list[_LLMClaim]


_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")
_CONTENT_WORD = re.compile(r"[^\W_]{3,}|\d+(?:[.,]\d+)*", re.UNICODE)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_STOP = frozenset(
    {
        "the", "and", "was", "were", "are", "has", "had", "have", "for", "with", "that", "this",
        "from", "which", "who", "its", "his", "her", "their", "into", "also", "been", "not",
        "but", "than", "then", "there", "they", "she", "him", "them", "these", "those", "such",
    }
)  # fmt: skip


class LLMOutputError(ClaimError):
    """The generator's reply could not be used as claims (bad JSON, schema, indices)."""


def parse_llm_claims(reply: str, n_sentences: int) -> list[tuple[int, str]]:
    """Validate a generator reply and return ``(sentence_number, claim_text)`` pairs.

    Args:
        reply: the raw text the generator returned.
        n_sentences: how many sentences were numbered in the prompt (1-based).

    Raises:
        LLMOutputError: not JSON, does not match `CLAIMS_SCHEMA`, or names a sentence
            number outside ``1..n_sentences``.

    Examples:
        >>> parse_llm_claims('{"claims": [{"sentence": 1, "claim": "Oslo is in Norway."}]}', 1)
        [(1, 'Oslo is in Norway.')]
    """
    text = _FENCE.sub("", reply.strip())
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LLMOutputError(f"reply is not JSON: {exc.msg} at char {exc.pos}") from exc
    try:
        out = _LLMOutput.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "$"
        raise LLMOutputError(f"reply breaks the schema at {where}: {first['msg']}") from exc
    pairs: list[tuple[int, str]] = []
    for item in out.claims:
        if item.sentence > n_sentences:
            raise LLMOutputError(
                f"reply names sentence {item.sentence}, only {n_sentences} were given"
            )
        claim = " ".join(item.claim.split())
        if claim:
            pairs.append((item.sentence, claim))
    return pairs


_SUFFIXES = ("'s", "ing", "ed", "es", "s", "d")


def _stems(word: str) -> set[str]:
    """``word`` and the stems a plain English ending leaves ("opened", "opens" -> "open").

    Whole words only: a word inside another ("safe" in "unsafe", "12" in "125") is no match.
    """
    out = {word}
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            out.add(word[: -len(suffix)])
    return out


def _words_of(text: str) -> set[str]:
    """The stems of the content words and numbers of ``text`` (lower case, digits unsplit)."""
    out: set[str] = set()
    for w in _CONTENT_WORD.findall(text.lower().replace("\u2019", "'")):
        out |= _stems(w.replace(",", "")) if w[0].isdigit() else _stems(w)
    return out


def _has(word: str, stems: set[str]) -> bool:
    return bool(_stems(word.replace(",", "") if word[0].isdigit() else word) & stems)


def _negations(text: str) -> set[str]:
    words = set(re.findall(r"[^\W_]+(?:['\u2019][^\W_]+)?", text.lower()))
    return {w for w in words if w in _NEGATIONS or w.endswith(("n't", "n\u2019t"))}


def _grounded(claim: str, source: str, sentence: str) -> str | None:
    """Why ``claim`` is not grounded in ``source`` (the answer), or ``None`` when it is.

    Its sentence is shown whole when the claim verifies, so the claim may say nothing the
    answer does not: every number and content word of it is a word of the answer (a name a
    pronoun stood for comes from the answer too), and it negates nothing ``sentence`` does not.
    """
    source_numbers = {n.replace(",", "") for n in _NUMBER.findall(source)}
    for num in _NUMBER.findall(claim):
        if num.replace(",", "") not in source_numbers:
            return f"number {num} does not occur in the answer"
    words = [w for w in _CONTENT_WORD.findall(claim.lower()) if w not in _STOP]
    if not words:
        return "no content words"
    known = _words_of(source)
    missing = [w for w in words if not _has(w, known)]
    if missing:
        return f"{', '.join(repr(w) for w in missing[:5])} does not occur in the answer"
    added = _negations(claim)
    if added and not _negations(sentence):
        return f"negates what its sentence does not ({', '.join(sorted(added))})"
    return None


_NEGATIONS = frozenset(
    {"not", "no", "never", "nor", "neither", "none", "nobody", "nothing", "cannot", "without"}
)


def _uncovered(sentence: str, claims: Sequence[str]) -> list[str]:
    """The sentence's numbers and content words that none of ``claims`` holds.

    A claim may name what a pronoun stood for and leave out a discourse opener ("However,"), but
    every fact of the sentence must be in some claim: the sentence is shown whole when they
    verify.
    """
    if not claims:
        return []
    said = " ".join(claims).lower().replace("\u2019", "'")
    said_stems = _words_of(said)
    text = _clean(sentence).lower().replace("\u2019", "'")
    missing: list[str] = []
    for w in _CONTENT_WORD.findall(text):
        # whole words: "safe" is not said by "unsafe", nor "12" by "125"
        if w in _STOP or _has(w, said_stems):
            continue
        if w not in missing:
            missing.append(w)
    # a negation is no stopword here ("did not open" is not "opened")
    said_words = set(re.findall(r"[^\W_]+(?:'[^\W_]+)?", said))
    negated = any(w in _NEGATIONS or w.endswith("n't") for w in said_words)
    for w in re.findall(r"[^\W_]+", text):
        if w in _NEGATIONS and w not in said_words and not negated and w not in missing:
            missing.append(w)
    return missing


class LLMClaimCompiler:
    """Claim decomposition by a chat model, validated, mapped to offsets, failing closed.

    Args:
        generator: any `Generator`; it is asked for JSON with
            `CLAIMS_SCHEMA`.
        settings: the ``claims`` settings section (used by the rule-based pass and fallback).
        batch_sentences: selected sentences sent per generator call.
        context_chars: characters of the answer before a batch given as context.
        max_tokens: generation budget per call.

    Examples:
        >>> import json
        >>> class Scripted:
        ...     name = "scripted"
        ...     def generate(self, messages, *, max_tokens=None, json_schema=None):
        ...         return json.dumps({"claims": [
        ...             {"sentence": 2, "claim": "Marie Curie was born in Warsaw."}]})
        ...     def stream(self, messages, *, max_tokens=None):
        ...         yield ""
        >>> answer = "Marie Curie was a chemist. She was born in Warsaw."
        >>> r = LLMClaimCompiler(Scripted()).run(answer)
        >>> [(c.text, c.origin) for c in r.claims][-1]
        ('Marie Curie was born in Warsaw.', 'llm')
    """

    name = "llm"

    def __init__(
        self,
        generator: Generator,
        settings: ClaimsSettings | None = None,
        *,
        batch_sentences: int = 12,
        context_chars: int = 2000,
        max_tokens: int = 768,
    ) -> None:
        if not callable(getattr(generator, "generate", None)):
            raise ClaimError("LLMClaimCompiler needs a generator with a generate() method")
        if batch_sentences < 1 or context_chars < 0 or max_tokens < 16:
            raise ClaimError(
                "invalid LLMClaimCompiler limits: batch_sentences >= 1, context_chars >= 0, "
                "max_tokens >= 16",
                batch_sentences=batch_sentences,
                context_chars=context_chars,
                max_tokens=max_tokens,
            )
        self.generator = generator
        self.rules = RuleBasedExtractor(settings)
        self.settings = self.rules.settings
        self.batch_sentences = batch_sentences
        self.context_chars = context_chars
        self.max_tokens = max_tokens

    def config(self) -> dict[str, object]:
        """The effective configuration (recorded in traces and certificates)."""
        return {
            **self.rules.config(),
            "extractor": self.name,
            "generator": getattr(self.generator, "name", type(self.generator).__name__),
            "batch_sentences": self.batch_sentences,
            "context_chars": self.context_chars,
            "max_tokens": self.max_tokens,
        }

    def extract(self, answer: str) -> list[Claim]:
        """Return the answer's claims (LLM-decomposed where it succeeded)."""
        return list(self.run(answer).claims)

    def run(self, answer: str) -> ClaimExtraction:
        """Compile claims with the LLM; on any failure return the rule-based ones and why.

        Raises:
            ClaimError: when ``answer`` is not a string (never for a generator failure).
        """
        base = self.rules.run(answer)
        if not base.claims:
            return base.model_copy(update={"config": self.config()})
        segments = {s.index: s for s in split_sentences(answer)}
        by_sentence: dict[int, list[Claim]] = {}
        for c in base.claims:
            by_sentence.setdefault(c.sentence_index, []).append(c)
        selected = [segments[i] for i in sorted(by_sentence)]
        try:
            llm_pairs = self._ask(answer, selected)
        except Exception as exc:  # any failure falls back: the rules' claims are still valid
            reason = f"{type(exc).__name__}: {exc}"
            logger.warning("LLM claim compilation failed, using rules", extra={"reason": reason})
            return base.model_copy(update={"fallback_reason": reason, "config": self.config()})

        notes: list[str] = []
        out: list[tuple[Segment, list[tuple[str, Claim | None]]]] = []
        for seg in selected:
            texts = llm_pairs.get(seg.index, [])
            good: list[str] = []
            for t in texts:
                why = _grounded(t, answer, seg.text)
                if why is None:
                    good.append(t)
                else:
                    notes.append(f"sentence {seg.index}: rejected LLM claim {t!r} ({why})")
            missing = _uncovered(seg.text, good)
            if good and missing:
                # the sentence is shown whole when its claims verify: a fact the claims leave
                # out would be shown unchecked
                notes.append(
                    f"sentence {seg.index}: the LLM claims leave out "
                    f"{', '.join(repr(w) for w in missing[:5])}"
                )
                good = []
            if not good:
                if texts:
                    notes.append(f"sentence {seg.index}: kept the rule-based claims")
                out.append((seg, [(c.text, c) for c in by_sentence[seg.index]]))
            else:
                out.append((seg, [(t, None) for t in good]))

        def key_of(text: str) -> str:
            return re.sub(r"[\W_]+", " ", text.lower()).strip()

        claims: list[Claim] = []
        seen: set[str] = set()
        for seg, entries in out:
            origin = "llm"
            if self.settings.deduplicate:
                keys, repeated = set(seen), []
                for text, _ in entries:
                    repeated.append(key_of(text) in keys)
                    keys.add(key_of(text))
                if any(repeated) and not all(repeated):
                    # a claim repeating another's: that claim's decision may be another
                    # sentence's, so this sentence is checked whole (fail closed)
                    entries, origin = [(_finish(_clean(seg.text)), None)], "extracted"
            for text, rule_claim in entries:
                key = key_of(text)
                if self.settings.deduplicate and key in seen:
                    continue
                seen.add(key)
                if rule_claim is not None:
                    claims.append(rule_claim.model_copy(update={"id": f"c{len(claims) + 1}"}))
                    continue
                first = by_sentence[seg.index][0]
                claims.append(
                    Claim(
                        id=f"c{len(claims) + 1}",
                        text=text,
                        start=seg.start,
                        end=seg.end,
                        sentence_index=seg.index,
                        sentence=seg.text,
                        type=rules.claim_type(text),
                        hedged=rules.is_hedged(text),
                        citations=first.citations,
                        origin=origin,
                    )
                )
        return ClaimExtraction(
            claims=tuple(claims),
            skipped=base.skipped,
            sentence_count=base.sentence_count,
            method="llm",
            notes=tuple(notes),
            config=self.config(),
        )

    def _ask(self, answer: str, selected: Sequence[Segment]) -> dict[int, list[str]]:
        """Query the generator batch by batch; sentence index -> claim texts."""
        result: dict[int, list[str]] = {}
        for b in range(0, len(selected), self.batch_sentences):
            batch = selected[b : b + self.batch_sentences]
            ctx_start = max(0, batch[0].start - self.context_chars)
            context = answer[ctx_start : batch[-1].end]
            numbered = "\n".join(
                f"{i}. {rules.strip_citations(s.text)}" for i, s in enumerate(batch, 1)
            )
            messages = [
                Message(role="system", content=SYSTEM_PROMPT),
                Message(
                    role="user",
                    content=(
                        f"Context:\n{context}\n\nSentences:\n{numbered}\n\n"
                        'Reply as {"claims": [{"sentence": <number>, "claim": "<text>"}]}.'
                    ),
                ),
            ]
            reply = self.generator.generate(
                messages, max_tokens=self.max_tokens, json_schema=CLAIMS_SCHEMA
            )
            if not isinstance(reply, str):
                raise LLMOutputError(f"generator returned {type(reply).__name__}, not text")
            for number, text in parse_llm_claims(reply, len(batch)):
                result.setdefault(batch[number - 1].index, []).append(text)
        return result


def build_extractor(
    settings: ClaimsSettings | None = None, generator: Generator | None = None
) -> RuleBasedExtractor | LLMClaimCompiler:
    """The extractor the settings ask for.

    Raises:
        ClaimError: ``extractor = "llm"`` without a generator.

    Examples:
        >>> type(build_extractor()).__name__
        'RuleBasedExtractor'
    """
    s = settings or ClaimsSettings()
    if s.extractor == "llm":
        if generator is None:
            raise ClaimError(
                'claims.extractor = "llm" needs a generator backend (configure [generate])'
            )
        return LLMClaimCompiler(generator, s)
    return RuleBasedExtractor(s)
