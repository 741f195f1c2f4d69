"""The fail-closed render decision and the rendered answer.

`decide` turns one verdict into verified / unverified / blocked with a reason in plain
words; `render` shows the answer in a display mode:

- ``strict``: only sentences whose every claim is verified, in their original wording; a
  sentence with any claim not verified is withheld whole, and a note says how much was withheld.
- ``mixed``: every sentence, each with its badge.
- ``debug``: the mixed text followed by every claim's scores, stages, checks and evidence.

In every mode a citation marker is shown only where the verifier found support: a sentence that
is not verified (unverified, blocked, undecided) is shown without its markers (a "[2]" next to it
would tell a reader that passage 2 supports it), and a verified sentence keeps only the markers
of the passages its evidence came from (see ``evidence`` in `render`). What was taken out is in
each `RenderedSentence`'s ``withdrawn_citations``.

Examples:
    >>> from affidavit.core.settings import PolicySettings
    >>> from affidavit.core.types import Claim, EvidenceSpan, Verdict
    >>> answer = "Paris is in France [1]. It was founded in 1925."
    >>> claims = [Claim(id="c1", text="Paris is in France", start=0, end=23),
    ...           Claim(id="c2", text="It was founded in 1925.", start=24, end=47)]
    >>> span = EvidenceSpan(chunk_id="k1", start=0, end=19, text="Paris is in France.")
    >>> verdicts = [Verdict(claim_id="c1", label="supported", p_entail=0.9, p_neutral=0.05,
    ...                     p_contradict=0.05, evidence=(span,))]
    >>> decisions = decide_all(claims, verdicts, PolicySettings())
    >>> render(answer, claims, decisions, "strict").text.splitlines()[0]
    'Paris is in France [1].'
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence

from affidavit.claims.rules import MARKER, marker_numbers
from affidavit.claims.segment import line_marker, list_letters
from affidavit.claims.segment import split_sentences as segment_sentences
from affidavit.core.errors import PolicyError
from affidavit.core.policy import ClaimDecision, RenderedAnswer, RenderedSentence
from affidavit.core.settings import PolicySettings
from affidavit.core.types import CheckResult, Claim, Decision, DisplayMode, EvidenceSpan, Verdict
from affidavit.policy.presets import DisplayStyle, resolve_policy

logger = logging.getLogger(__name__)

__all__ = [
    "decide",
    "decide_all",
    "decide_claim",
    "render",
    "split_sentences",
    "worst",
]

# blocked is worse than unverified, which is worse than verified
_SEVERITY: dict[Decision, int] = {"verified": 0, "unverified": 1, "blocked": 2}

_CHECK_NOUN = {
    "number": "the number",
    "date": "the date",
    "entity": "the name",
    "polarity": "the negation",
    "comparative": "the comparison",
    "unit": "the unit",
}


def worst(decisions: Iterable[Decision]) -> Decision:
    """The most severe decision (blocked > unverified > verified); none at all is unverified.

    Conservative: one unverified claim makes a sentence unverified.
    """
    items = list(decisions)
    if not items:
        return "unverified"
    return max(items, key=lambda d: _SEVERITY[d])


def _where(span: EvidenceSpan, focus: str | None = None) -> str:
    """Where evidence is, in plain words: document, chunk, sentence, offsets and a short quote.

    With ``focus`` (e.g. the conflicting value), the quote and offsets narrow to the sentence of
    the span that holds it.
    """
    start, end, text = span.start, span.end, span.text
    sentence = ""
    if focus and focus in span.text:
        at = span.text.index(focus)
        for k, seg in enumerate(segment_sentences(span.text)):
            if seg.start <= at < seg.end:
                start, end, text = span.start + seg.start, span.start + seg.end, seg.text
                sentence = f"sentence {k + 1}"
                break
    parts = []
    if span.doc_id:
        parts.append(f"doc {span.doc_id}")
    parts.append(span.chunk_id if span.chunk_id.startswith("chunk") else f"chunk {span.chunk_id}")
    if sentence:
        parts.append(sentence)
    parts.append(f"chars {start}-{end}")
    quote = " ".join(text.split())
    if len(quote) > 80:
        quote = quote[:77] + "..."
    return f'[{", ".join(parts)}: "{quote}"]'


def _span_for_check(check: CheckResult, evidence: Sequence[EvidenceSpan]) -> EvidenceSpan | None:
    if not evidence:
        return None
    if check.evidence_value:
        for span in evidence:
            if check.evidence_value in span.text:
                return span
    return evidence[0]


def _check_reason(check: CheckResult, evidence: Sequence[EvidenceSpan]) -> str:
    span = _span_for_check(check, evidence)
    where = _where(span, check.evidence_value) if span is not None else ""
    if check.reason:
        # the check's own words, with "the evidence" made precise when we know where it is
        if not where:
            return check.reason
        if "in the evidence" in check.reason:
            return check.reason.replace("in the evidence", f"in {where}", 1)
        return f"{check.reason} (in {where})"
    if check.claim_value is not None and check.evidence_value is not None:
        noun = _CHECK_NOUN.get(check.check, check.check)
        if check.check == "date" and re.fullmatch(r"\d{4}", check.claim_value.strip()):
            noun = "the year"
        text = f"{noun} {check.claim_value} disagrees with {check.evidence_value}"
    else:
        text = f"the {check.check} check failed"
    return f"{text} in {where}" if where else text


def decide(
    verdict: Verdict | None, policy: PolicySettings, *, premise: str = ""
) -> tuple[Decision, str]:
    """Decide how one claim may be shown; deterministic and fail-closed.

    VERIFIED iff the verifier labelled the claim supported, ``p_entail >= tau_entail`` and
    ``p_contradict < tau_contradict`` and at least one
    evidence span supports it, the verdict is complete (every step ran, evidence checked whole),
    no step reported an error and no typed check failed (but see ``premise``). BLOCKED when the
    claim is contradicted (label contradicted, or ``p_contradict >= tau_contradict`` with a
    contradicting evidence span) or a typed check found a differing value in the evidence,
    unless the verifier weighed that value and labelled the claim unsupported. UNVERIFIED
    otherwise, including when there is no verdict at all. A number, date or name the evidence
    never mentions is an *absence*: not a contradiction, so never blocked, and not verified
    either (a swapped name or number is the commonest hallucination: docs/concepts/fail-closed.md).

    Args:
        verdict: the verifier's verdict, or None when the claim was never verified.
        policy: thresholds (``tau_entail``, ``tau_contradict``); a named preset's values apply
            where they are not set explicitly (see `resolve_policy`).
        premise: the question the claim answers, if any. A name the question itself supplies
            is a premise the passage may refer to by pronoun ("He won ..." for "Edwin Gagiano
            won ..."): its absence from the evidence is left to the verifier. Names the answer
            introduces must be in the evidence.

    Returns:
        The decision and the reason in plain words.

    Examples:
        >>> from affidavit.core.types import Verdict
        >>> v = Verdict(claim_id="c1", label="unsupported", p_entail=0.3, p_neutral=0.6,
        ...             p_contradict=0.1)
        >>> decide(v, PolicySettings())[0]
        'unverified'
    """
    if verdict is None:
        return "unverified", "the claim was not verified (no verdict)"
    policy = resolve_policy(policy)
    tau_e, tau_c = policy.tau_entail, policy.tau_contradict
    evidence = verdict.evidence

    failed = [c for c in verdict.checks if c.status == "fail"]
    # a value the evidence states differently (a conflict) blocks, unless the verifier weighed it
    # and labelled the claim "unsupported" (the model reads the evidence as support, or the
    # passage is about another subject): then it is withheld, not called false. A number, date or
    # name the evidence never mentions (an absence) is not a contradiction and never blocks.
    conflicts = [c for c in failed if not c.absent]
    if conflicts and verdict.label != "unsupported":
        return "blocked", "; ".join(_check_reason(c, evidence) for c in conflicts)
    # blocked = shown to be false: the verifier's label, or a contradiction score over the
    # threshold that points at evidence. A high p_contradict with no span to show is not a proof
    # of falsehood; the claim stays unverified (below), never verified.
    if verdict.label == "contradicted" or (verdict.p_contradict >= tau_c and evidence):
        where = f" by {_where(evidence[0])}" if evidence else ""
        if verdict.p_contradict >= tau_c:
            why = f"p_contradict {verdict.p_contradict:.2f} >= {tau_c:.2f}"
        else:
            why = "the verifier labelled it contradicted"
        if verdict.reason:
            why += f"; {verdict.reason}"
        return "blocked", f"contradicted{where} ({why})"

    problems: list[str] = []
    if conflicts:
        problems.append(
            "; ".join(_check_reason(c, evidence) for c in conflicts)
            + " (the verifier did not judge this a contradiction)"
        )
    problems += [
        c.reason or f"the {c.check} check found nothing to compare in the evidence"
        for c in failed
        if c.absent and not _premise_names(c, premise)
    ]
    stage_errors = [f"{s.stage}: {s.error}" for s in verdict.stages if s.error]
    if verdict.errors or stage_errors:
        problems.append(
            "a step could not run (" + "; ".join([*verdict.errors, *stage_errors]) + ")"
        )
    if not verdict.complete:
        problems.append("the verification did not complete")
    partial = [s for s in evidence if not s.checked_whole]
    if partial:
        problems.append(f"the evidence {_where(partial[0])} was not checked whole")
    if not evidence:
        problems.append("no evidence span supports it")
    if verdict.label != "supported" and verdict.p_entail >= tau_e:
        # the verifier withheld it: a score left high does not verify it on its own
        problems.append(f"the verifier labelled it {verdict.label}")
    if verdict.p_entail < tau_e:
        problems.append(f"p_entail {verdict.p_entail:.2f} is below the threshold {tau_e:.2f}")
    if verdict.p_contradict >= tau_c:
        problems.append(
            f"p_contradict {verdict.p_contradict:.2f} >= {tau_c:.2f} with no contradicting span"
        )
    if problems:
        return "unverified", "; ".join(problems)
    return "verified", (
        f"entailed by {_where(evidence[0])} (p_entail {verdict.p_entail:.2f} >= {tau_e:.2f}, "
        f"p_contradict {verdict.p_contradict:.2f} < {tau_c:.2f})"
    )


def _premise_names(check: CheckResult, premise: str) -> bool:
    """An absent-name check whose every missing name is supplied by the question itself."""
    if check.check != "entity" or not premise or not check.claim_value:
        return False
    names = [n.strip() for n in check.claim_value.split(",") if n.strip()]
    words = {w.casefold() for w in re.findall(r"\w+", premise)}
    return bool(names) and all(
        all(w.casefold() in words for w in re.findall(r"\w+", n)) for n in names
    )


def decide_claim(
    claim_id: str, verdict: Verdict | None, policy: PolicySettings, *, premise: str = ""
) -> ClaimDecision:
    """`decide` packaged as a `ClaimDecision` (the scores it used included)."""
    decision, reason = decide(verdict, policy, premise=premise)
    return ClaimDecision(
        claim_id=claim_id,
        decision=decision,
        reason=reason,
        label=verdict.label if verdict is not None else None,
        p_entail=verdict.p_entail if verdict is not None else None,
        p_contradict=verdict.p_contradict if verdict is not None else None,
    )


def decide_all(
    claims: Sequence[Claim],
    verdicts: Iterable[Verdict],
    policy: PolicySettings,
    *,
    premise: str = "",
) -> list[ClaimDecision]:
    """Decide every claim, in claim order; a claim without a verdict is unverified.

    When several verdicts name the same claim, the most severe decision wins (conservative).
    """
    by_claim: dict[str, list[Verdict]] = {}
    for v in verdicts:
        by_claim.setdefault(v.claim_id, []).append(v)
    out = []
    for claim in claims:
        options = [
            decide_claim(claim.id, v, policy, premise=premise) for v in by_claim.get(claim.id, [])
        ]
        if not options:
            out.append(decide_claim(claim.id, None, policy, premise=premise))
        else:
            out.append(max(options, key=lambda d: _SEVERITY[d.decision]))
    return out


# --- sentences ---------------------------------------------------------------------------------


def split_sentences(answer: str) -> list[tuple[int, int]]:
    """Sentence spans ``(start, end)`` of an answer, as the claims stage splits it.

    One definition of a sentence for the whole project (``affidavit.claims.segment``): claims,
    rendering and citation checks agree on boundaries. Trailing citation markers stay attached;
    list markers are not part of a sentence.

    Examples:
        >>> a = "Paris is big [1]. Dr. Who lives in the U.S. now. [2]"
        >>> [a[s:e] for s, e in split_sentences(a)]
        ['Paris is big [1].', 'Dr. Who lives in the U.S. now. [2]']
    """
    return [(seg.start, seg.end) for seg in segment_sentences(answer)]


def _line_marker(answer: str, pos: int, letters: frozenset[str]) -> str:
    """The list/heading marker of the line holding ``pos`` (empty when none).

    The segmenter's own marker (`affidavit.claims.segment.line_marker`): what it leaves out of
    every sentence, and so out of every claim, is a marker that states nothing.
    """
    line_start = answer.rfind("\n", 0, pos) + 1
    end = line_marker(answer[line_start:pos], letters)
    return answer[line_start : line_start + end]


def _leads(answer: str, spans: Sequence[tuple[int, int]]) -> list[str]:
    """What goes before each shown sentence ``(start, end)``, keeping the answer's line structure.

    Sentences on one line are joined by the original whitespace (one space when something was
    withheld between them); a line break in the original becomes one (a blank line, two), and
    a kept sentence keeps its line's list marker. Nothing of a withheld sentence remains.
    """
    out: list[str] = []
    prev_end: int | None = None
    letters = list_letters(answer) if spans else frozenset()
    for start, end in spans:
        if prev_end is None:
            out.append(_line_marker(answer, start, letters).lstrip("\n"))
        else:
            gap = answer[prev_end:start]
            breaks = gap.count("\n")
            if breaks:
                blank = re.search(r"\n[ \t]*\n", gap) is not None
                out.append(("\n\n" if blank else "\n") + _line_marker(answer, start, letters))
            elif gap.strip() == "" and gap:
                out.append(gap if len(gap) <= 2 else " ")
            else:
                out.append(" ")
        prev_end = end
    return out


_ACCORDING_TO = re.compile(r"\baccording to\s*$", re.IGNORECASE)


def shown_citations(
    sentence: str, keep: Callable[[int], bool]
) -> tuple[str, tuple[int, ...], tuple[int, ...]]:
    """``sentence`` with only the citation numbers ``keep`` accepts; the numbers kept and taken.

    A marker left with no number goes with the space before it ("according to [2], " with it).
    A sentence whose every number is kept comes back verbatim.

    Examples:
        >>> shown_citations("Aldrin was first [2].", lambda n: False)
        ('Aldrin was first.', (), (2,))
        >>> shown_citations("According to [2], it rained [1][2].", lambda n: n == 1)
        ('It rained [1].', (1,), (2,))
    """
    kept: dict[int, None] = {}
    taken: dict[int, None] = {}
    pieces: list[str] = []
    last = 0
    changed = carry = False
    for m in MARKER.finditer(sentence):
        numbers = list(dict.fromkeys(marker_numbers(m.group(1))))
        ok = [n for n in numbers if keep(n)]
        kept.update(dict.fromkeys(ok))
        taken.update(dict.fromkeys(n for n in numbers if n not in ok))
        before = sentence[last : m.start()]
        spaced = m.group(0)[:1] in (" ", "\t")
        # "[1][2]" with [1] taken: [2] takes over the space [1] stood after
        lead = " " if spaced or (carry and not before) else ""
        carry = False
        if len(ok) == len(numbers):
            pieces.append(before + lead + m.group(0).lstrip(" \t"))
        elif ok:
            pieces.append(before + lead + "".join(f"[{n}]" for n in ok))
            changed = True
        else:
            changed = True
            carry = spaced or (carry and not before)
            said = _ACCORDING_TO.search(before)
            if said is not None:
                before = before[: said.start()]
                rest = sentence[m.end() :]
                # "according to [2], it rained": the comma after it goes too
                after = re.match(r"[ \t]*,[ \t]*", rest)
                if after is not None:
                    pieces.append(before)
                    last = m.end() + after.end()
                    continue
            pieces.append(before)
        last = m.end()
    if not changed:
        return sentence, tuple(kept), tuple(taken)
    pieces.append(sentence[last:])
    text = re.sub(r"[ \t]+([.,;:!?])", r"\1", "".join(pieces)).strip()
    text = re.sub(r"[ \t]{2,}", " ", text)
    if text and text[0].islower() and not sentence.lstrip()[:1].islower():
        text = text[0].upper() + text[1:]
    return text, tuple(kept), tuple(taken)


# --- rendering -------------------------------------------------------------------------------


def _claim_sentences(claim: Claim, answer: str, spans: Sequence[tuple[int, int]]) -> list[int]:
    def overlapping(s: int, e: int) -> list[int]:
        if e <= s:
            return [i for i, (a, b) in enumerate(spans) if a <= s < b]
        return [i for i, (a, b) in enumerate(spans) if s < b and a < e]

    if 0 <= claim.start <= claim.end <= len(answer):
        found = overlapping(claim.start, claim.end)
        if found:
            return found
    if claim.sentence:
        at = answer.find(claim.sentence)
        if at >= 0:
            return overlapping(at, at + len(claim.sentence))
    return []


def _debug_block(
    claims: Sequence[Claim],
    decisions: Mapping[str, ClaimDecision],
    verdicts: Mapping[str, Verdict],
    claim_sentences: Mapping[str, list[int]],
) -> str:
    rows = ["", "--- debug ---"]
    for claim in claims:
        d = decisions.get(claim.id)
        decision = d.decision if d else "unverified"
        where = ",".join(str(i) for i in claim_sentences.get(claim.id, [])) or "?"
        rows.append(f"{claim.id} (sentence {where}, {claim.type}) {decision}: {claim.text}")
        rows.append(f"  reason: {d.reason if d else 'no decision'}")
        v = verdicts.get(claim.id)
        if v is None:
            rows.append("  verdict: none")
            continue
        rows.append(
            f"  verdict: {v.label} p_entail={v.p_entail:.4f} p_neutral={v.p_neutral:.4f} "
            f"p_contradict={v.p_contradict:.4f} complete={v.complete}"
        )
        for s in v.stages:
            err = f" error={s.error}" if s.error else ""
            rows.append(
                f"  stage {s.stage}: {s.label} e={s.p_entail:.4f} n={s.p_neutral:.4f} "
                f"c={s.p_contradict:.4f} decided={s.decided}{err} {s.detail}".rstrip()
            )
        for c in v.checks:
            vals = ""
            if c.claim_value is not None or c.evidence_value is not None:
                vals = f" claim={c.claim_value} evidence={c.evidence_value}"
            rows.append(f"  check {c.check}: {c.status}{vals} {c.reason}".rstrip())
        for e in v.evidence:
            rows.append(f"  evidence {_where(e)} sha256={e.sha256[:16]} whole={e.checked_whole}")
        for err in v.errors:
            rows.append(f"  error: {err}")
    return "\n".join(rows)


def _note(
    sentences: Sequence[RenderedSentence], n_claims: int, verified: int, collateral: int
) -> str:
    withheld = [s for s in sentences if not s.shown]
    if not withheld:
        return ""
    blocked = sum(1 for s in withheld if s.decision == "blocked")
    not_verified = len(withheld) - blocked
    parts = []
    if blocked:
        parts.append(f"{blocked} contradicted by the evidence")
    if not_verified:
        parts.append(f"{not_verified} not verified")
    text = (
        f"Withheld {len(withheld)} of {len(sentences)} sentences ({', '.join(parts)}); "
        f"{verified} of {n_claims} claims verified."
    )
    if collateral > 0:
        text += (
            f" {collateral} verified claim{'s were' if collateral > 1 else ' was'} withheld "
            "because the sentence also holds a claim that is not verified."
        )
    return text


def _nothing(number: int) -> bool:
    return False


def _anything(number: int) -> bool:
    return True


def render(
    answer: str,
    claims: Sequence[Claim],
    decisions: Sequence[ClaimDecision] | Mapping[str, ClaimDecision],
    mode: DisplayMode = "strict",
    *,
    verdicts: Iterable[Verdict] = (),
    style: DisplayStyle | None = None,
    evidence: Mapping[str, Sequence[int]] | None = None,
) -> RenderedAnswer:
    """Render an answer under the policy's decisions.

    A sentence is shown in strict mode only if it holds at least one claim and every claim in it
    is verified; a claim without a decision counts as unverified. If a claim that is not verified
    cannot be placed in the answer, nothing is shown (fail closed).

    Args:
        answer: the generated answer, as the claims' offsets refer to it.
        claims: the claims taken from the answer.
        decisions: one decision per claim (a sequence, or a mapping by claim id).
        mode: ``strict``, ``mixed`` or ``debug``.
        verdicts: the verdicts, for the scores shown in debug mode.
        style: badges (default: the default preset's).
        evidence: claim id -> the passage numbers its verdict's evidence came from. A verified
            sentence then shows only the markers naming those passages (none when its evidence
            names no passage). Without it, a verified sentence keeps its markers. A sentence
            that is not verified shows no marker either way.

    Raises:
        PolicyError: an unknown display mode (the message lists the valid ones).

    Examples:
        >>> render("Hi there.", [], [], "strict").note
        'Withheld 1 of 1 sentences (1 not verified); 0 of 0 claims verified.'
    """
    if mode not in ("strict", "mixed", "debug"):
        raise PolicyError(f"unknown display mode {mode!r}; valid modes: strict, mixed, debug")
    style = style or DisplayStyle()
    by_id: dict[str, ClaimDecision] = (
        dict(decisions) if isinstance(decisions, Mapping) else {d.claim_id: d for d in decisions}
    )
    verdict_map = {v.claim_id: v for v in verdicts}
    spans = split_sentences(answer)

    per_sentence: list[list[str]] = [[] for _ in spans]
    claim_sentences: dict[str, list[int]] = {}
    unplaced: list[str] = []
    for claim in claims:
        idx = _claim_sentences(claim, answer, spans)
        claim_sentences[claim.id] = idx
        if not idx:
            decided = by_id.get(claim.id)
            if decided is None or decided.decision != "verified":
                unplaced.append(claim.id)
            logger.warning("claim %s could not be placed in the answer", claim.id)
        for i in idx:
            per_sentence[i].append(claim.id)

    counts: dict[Decision, int] = {"verified": 0, "unverified": 0, "blocked": 0}
    for claim in claims:
        d = by_id.get(claim.id)
        counts[d.decision if d else "unverified"] += 1

    sentences: list[RenderedSentence] = []
    for i, (s, e) in enumerate(spans):
        ids = per_sentence[i]
        decision = worst(by_id[c].decision if c in by_id else "unverified" for c in ids)
        if not ids:
            reason = "no checkable claim in this sentence"
        else:
            bad = [c for c in ids if c not in by_id or by_id[c].decision != "verified"]
            if bad:
                reason = "; ".join(
                    f"{c}: {by_id[c].reason if c in by_id else 'no decision'}" for c in bad
                )
            else:
                reason = "; ".join(f"{c}: {by_id[c].reason}" for c in ids)
        shown = mode != "strict" or (decision == "verified" and not unplaced)
        if mode == "strict" and unplaced and decision == "verified":
            reason = f"claims {', '.join(unplaced)} could not be placed in the answer"
        # a citation only where the verifier found support: none on a sentence not verified,
        # and on a verified one only the passages its evidence came from (when known)
        if decision != "verified":
            keep: Callable[[int], bool] = _nothing
        elif evidence is None:
            keep = _anything
        else:
            found = {n for c in ids for n in evidence.get(c, ())}
            keep = found.__contains__
        shown_text, cited, withdrawn = shown_citations(answer[s:e], keep)
        sentences.append(
            RenderedSentence(
                index=i,
                start=s,
                end=e,
                text=answer[s:e],
                decision=decision,
                claim_ids=tuple(ids),
                shown=shown,
                reason=reason,
                shown_text=shown_text if shown else "",
                citations=cited if shown else (),
                withdrawn_citations=withdrawn,
            )
        )

    leads = iter(_leads(answer, [(x.start, x.end) for x in sentences if x.shown]))
    sentences = [x.model_copy(update={"lead": next(leads)}) if x.shown else x for x in sentences]
    text = "".join(
        x.lead + (x.shown_text if mode == "strict" else f"{style.badge(x.decision)} {x.shown_text}")
        for x in sentences
        if x.shown
    )

    withheld_ids = {c for s in sentences if not s.shown for c in s.claim_ids}
    collateral = sum(1 for c in withheld_ids if c in by_id and by_id[c].decision == "verified")
    note = _note(sentences, len(claims), counts["verified"], collateral) if mode == "strict" else ""
    if mode == "strict" and unplaced:
        note = (
            f"Withheld everything: claims {', '.join(unplaced)} could not be placed in the "
            f"answer. " + note
        ).strip()
    if mode == "debug":
        text += _debug_block(claims, by_id, verdict_map, claim_sentences)
    if note and style.show_note:
        text = f"{text}\n\n({note})" if text else f"({note})"
    return RenderedAnswer(
        text=text,
        mode=mode,
        sentences=tuple(sentences),
        note=note,
        total_claims=len(claims),
        verified_claims=counts["verified"],
        blocked_claims=counts["blocked"],
        unverified_claims=counts["unverified"],
        withheld_sentences=sum(1 for s in sentences if not s.shown),
        withheld_claims=len(withheld_ids) if mode == "strict" else 0,
    )
