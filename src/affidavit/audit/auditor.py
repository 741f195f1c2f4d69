"""The runtime provenance audit: which claims of an answer are supported by which source.

For every claim of the answer: BM25 over the given chunks finds candidates, the best window of
one or two sentences gives a confidence (lexical coverage of the claim's content words), and the
typed checks (numbers, units, dates, names, polarity, comparatives) compare the claim with that
evidence. A claim is supported only if its confidence reaches ``audit.support_threshold`` AND no
check failed. Around that: the source policy (allowlist, URL validity), freshness, compliance,
and the enforcement mode.

Examples:
    >>> report = Auditor().audit(
    ...     "When was the Eiffel Tower finished?",
    ...     [{"text": "The Eiffel Tower was completed in 1889.", "url": "https://a.org/e"}],
    ...     "The Eiffel Tower was completed in 1925.",
    ... )
    >>> report.claims[0].supported, report.claims[0].failed_checks[0].reason
    (False, 'the year 1925 disagrees with 1889 in the evidence')
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any

from pydantic import ValidationError

from affidavit.audit.matcher import EvidenceIndex, Match
from affidavit.claims.base import ClaimExtractor, claims_and_limit_stops
from affidavit.core.errors import ConfigError, EnforcementError, InputError
from affidavit.core.report import (
    WITHHELD_MARKER,
    AuditReport,
    ClaimAudit,
    FreshnessVerdict,
    PolicyIssue,
    SourceFreshness,
    Violation,
)
from affidavit.core.settings import AuditSettings, ClaimsSettings, Settings, load_settings
from affidavit.core.types import CheckResult, Chunk, Claim, EvidenceSpan
from affidavit.policy.sources import apply_allowlist, assess_freshness
from affidavit.verify.base import ClaimVerifier
from affidavit.verify.casing import recase_like
from affidavit.verify.checks import run_checks

logger = logging.getLogger(__name__)

ChunkLike = Chunk | Mapping[str, Any]
ConfigLike = Settings | AuditSettings | Mapping[str, Any] | None

# how many BM25 candidates get windows and checks, per claim
TOP_K = 5
# chunk sets whose index an Auditor keeps (keyed by chunk id, url and text)
INDEX_CACHE_SIZE = 8
# a second source counts as a contradiction witness when it covers the claim this well
_CONTRA_MARGIN = 0.1
# explicit contradictions from another source: numbers may legitimately differ between
# sources (editions, years), a flipped polarity or comparative may not
_CONTRA_CHECKS = frozenset({"polarity", "comparative"})


def _full_settings(config: ConfigLike) -> Settings:
    """The whole settings a config stands for (the verifier needs its ``verify`` and
    ``policy`` sections): the config itself, its sections over the defaults, or the defaults."""
    if isinstance(config, Settings):
        return config
    if isinstance(config, Mapping) and config and set(config) <= set(Settings.model_fields):
        return load_settings(overrides=dict(config))
    return load_settings()


def resolve_settings(config: ConfigLike) -> tuple[AuditSettings, ClaimsSettings]:
    """Accept Settings, AuditSettings, a dict (full settings or the audit section) or None.

    Raises:
        ConfigError: unknown keys or invalid values (the message names them).
    """
    if config is None:
        return AuditSettings(), ClaimsSettings()
    if isinstance(config, Settings):
        return config.audit, config.claims
    if isinstance(config, AuditSettings):
        return config, ClaimsSettings()
    if isinstance(config, Mapping):
        data = dict(config)
        sections = set(Settings.model_fields)
        if data and set(data) <= sections:
            s = load_settings(overrides=data)
            return s.audit, s.claims
        try:
            return AuditSettings(**data), ClaimsSettings()
        except ValidationError as exc:
            parts = []
            for e in exc.errors():
                loc = ".".join(str(x) for x in e["loc"]) or "audit"
                msg = "unknown setting" if e["type"] == "extra_forbidden" else e["msg"]
                parts.append(f"audit.{loc}: {msg}")
            raise ConfigError("invalid audit settings: " + "; ".join(parts)) from exc
    raise ConfigError(
        f"config must be Settings, AuditSettings, a dict or None, not {type(config).__name__}"
    )


def to_chunks(chunks: Sequence[ChunkLike] | None) -> list[Chunk]:
    """Validate chunks given as Chunk models or dicts ``{"text", "url", "metadata"}``.

    Raises:
        InputError: a chunk is not a dict/Chunk, lacks ``text``, or has a field of the wrong type
            (the message names the chunk index and field).
    """
    if chunks is None:
        return []
    if isinstance(chunks, str | bytes | Mapping):
        raise InputError(f"chunks must be a list of chunks, not {type(chunks).__name__}")
    out: list[Chunk] = []
    for i, c in enumerate(chunks):
        if isinstance(c, Chunk):
            out.append(c)
            continue
        if not isinstance(c, Mapping):
            raise InputError(f"chunks[{i}] must be an object, not {type(c).__name__}")
        if "text" not in c:
            raise InputError(f"chunks[{i}].text: missing field")
        data = dict(c)
        if data.get("metadata") is None:
            data.pop("metadata", None)
        try:
            out.append(Chunk(**data))
        except ValidationError as exc:
            e = exc.errors()[0]
            loc = ".".join(str(x) for x in e["loc"])
            msg = "unknown field" if e["type"] == "extra_forbidden" else e["msg"].lower()
            raise InputError(f"chunks[{i}].{loc}: {msg}") from exc
        except TypeError as exc:
            raise InputError(f"chunks[{i}]: {exc}") from exc
    return out


class Auditor:
    """Audits answers against the chunks they were generated from.

    Args:
        config: Settings, AuditSettings, a dict, or None for the defaults.
        extractor: claim extractor (default: the rule-based extractor with ``claims`` settings).
        verifier: optional entailment verifier; runs when ``audit.use_verifier`` is set, and a
            claim then also needs the verifier's ``supported`` label (fail closed). Without
            one, ``use_verifier`` builds the settings' verifier cascade (``affidavit[models]``).
        today: the date freshness is measured on (default: today, UTC).

    Examples:
        >>> a = Auditor({"min_compliance": 0.5})
        >>> a.settings.min_compliance
        0.5
    """

    def __init__(
        self,
        config: ConfigLike = None,
        *,
        extractor: ClaimExtractor | None = None,
        verifier: ClaimVerifier | None = None,
        today: date | None = None,
    ) -> None:
        self.settings, claims_settings = resolve_settings(config)
        if extractor is None:
            from affidavit.claims import RuleBasedExtractor

            extractor = RuleBasedExtractor(claims_settings)
        self.extractor = extractor
        self.verifier = verifier
        self.today = today
        self._indexes: dict[tuple[tuple[str, str, str], ...], EvidenceIndex] = {}
        self._lock = threading.Lock()
        if self.settings.use_verifier and verifier is None:
            # what the integrations and the MCP server do too: the settings' verifier cascade
            # (cached, so consecutive audits share one model)
            from affidavit.pipeline.check import default_verifier

            self.verifier = default_verifier(_full_settings(config))

    def audit(self, query: str, chunks: Sequence[ChunkLike] | None, response: str) -> AuditReport:
        """Audit ``response`` against ``chunks``; see the module docstring.

        Raises:
            InputError: malformed chunks or a non-string query/response.
            EnforcementError: in ``enforce`` mode when trust fails (carries ``.report``).
        """
        t0 = time.perf_counter()
        s = self.settings
        if not isinstance(response, str):
            raise InputError(f"response must be a string, not {type(response).__name__}")
        if query is None:
            query = ""
        if not isinstance(query, str):
            raise InputError(f"query must be a string, not {type(query).__name__}")
        all_chunks = to_chunks(chunks)
        issues: list[PolicyIssue] = []

        text = response
        limit = s.max_response_chars
        if len(text) > limit:
            issues.append(
                PolicyIssue(
                    kind="response_truncated",
                    message=f"the answer has {len(text)} characters; only the first "
                    f"{limit} were audited and the rest counts as unsupported",
                )
            )
        kept, blocked = apply_allowlist(all_chunks, s)
        usable: list[Chunk] = []
        for c in kept:
            if c.text.strip():
                usable.append(c)
            else:
                issues.append(
                    PolicyIssue(kind="empty_chunk", message="chunk has no text", chunk_id=c.id)
                )
        if blocked:
            issues.append(
                PolicyIssue(
                    kind="blocked_sources",
                    message=f"{len(blocked)} source(s) blocked by the source policy",
                )
            )
        if not all_chunks:
            issues.append(
                PolicyIssue(kind="no_chunks", message="no chunks given: nothing can be supported")
            )
        if not response.strip():
            issues.append(PolicyIssue(kind="empty_response", message="the answer is empty"))

        audited = text[:limit]
        markers = audited.count(WITHHELD_MARKER)
        if markers:
            # an answer guarded before: the marker states nothing. Blanked to the same length
            # so every claim keeps its offsets in the response; only the exact marker is
            # skipped, so no other bracketed text can hide a claim from the audit.
            audited = audited.replace(WITHHELD_MARKER, " " * len(WITHHELD_MARKER))
            issues.append(
                PolicyIssue(
                    kind="withheld_marker",
                    message=f"{markers} withheld-claim marker(s) of an earlier guard skipped "
                    "(not claims)",
                )
            )
        claims, stopped = (
            claims_and_limit_stops(self.extractor, audited) if audited.strip() else ([], [])
        )
        # the span of the sentences the claim limit stopped, from the first to the last
        cut = (stopped[0].start, stopped[-1].end) if stopped else None
        unchecked = len(claims) if cut is not None else -1  # the index of the claim below
        if cut is not None:
            # sentences the claim limit kept from becoming claims were never checked: they
            # count as one unsupported claim (fail closed), as text past max_response_chars does
            claims.append(
                Claim(
                    id=f"c{len(claims) + 1}",
                    text=text[cut[0] : cut[1]][:200],
                    start=cut[0],
                    end=cut[1],
                )
            )
        if len(text) > limit:
            claims.append(
                Claim(
                    id=f"c{len(claims) + 1}",
                    text=text[limit : limit + 200],
                    start=limit,
                    end=len(text),
                )
            )
        if text.strip() and not claims:
            issues.append(
                PolicyIssue(
                    kind="no_claims",
                    message="the answer states no checkable claim; nothing was verified",
                )
            )

        # one per usable chunk, by position: chunk ids are the caller's and may repeat, and a
        # stale chunk must not borrow the date of a fresh one that shares its id
        fresh = [assess_freshness(c, s, self.today) for c in usable]
        for f in fresh:
            if f.note.startswith("unparseable"):
                issues.append(
                    PolicyIssue(kind="unparseable_date", message=f.note, chunk_id=f.chunk_id)
                )
            elif f.status == "unknown":
                issues.append(
                    PolicyIssue(kind="unknown_source_age", message=f.note, chunk_id=f.chunk_id)
                )

        index = self._index(usable)
        audits = [
            _unchecked(c, "past the claim limit (claims.max_claims): not checked")
            if i == unchecked
            else self._audit_claim(c, index, fresh)
            for i, c in enumerate(claims)
        ]
        if len(text) > limit and audits:
            last = audits[-1]
            audits[-1] = last.model_copy(
                update={
                    "supported": False,
                    "freshness": "unsupported",
                    "reason": "text beyond the audit size limit was not checked",
                }
            )

        n = len(audits)
        n_ok = sum(a.supported for a in audits)
        # fail closed: an answer with no checkable claim has nothing shown to be supported
        compliance = n_ok / n if n else 0.0
        violations = tuple(_violation(a, s.stale_action) for a in audits if violates(a, s))
        if any(not a.supported for a in audits):
            issues.append(
                PolicyIssue(
                    kind="unsupported_claims",
                    message=f"{n - n_ok} of {n} claim(s) not supported",
                )
            )
        if any(a.failed_checks for a in audits):
            issues.append(
                PolicyIssue(
                    kind="contradicted_claims",
                    message=f"{sum(bool(a.failed_checks) for a in audits)} claim(s) disagree "
                    "with their evidence",
                )
            )
        stale_src = [f for f in fresh if f.status == "stale"]
        if stale_src:
            issues.append(
                PolicyIssue(kind="stale_sources", message=f"{len(stale_src)} stale source(s)")
            )
        stale_claims = [a for a in audits if a.freshness == "supported_stale"]
        if stale_claims:
            issues.append(
                PolicyIssue(
                    kind="stale_supported_claims",
                    message=f"{len(stale_claims)} supported claim(s) rest on stale or undated "
                    "sources",
                )
            )
        passed = bool(n) and compliance >= s.min_compliance
        trust = passed and not (s.stale_action == "fail" and stale_claims)
        guarded = withhold_violations(response, audits, s) if s.mode == "guardrail" else None
        report = AuditReport(
            query=query,
            response=response,
            mode=s.mode,
            claims=tuple(audits),
            compliance_rate=compliance,
            provenance={a.text: a.source_url for a in audits if a.supported},
            violations=violations,
            blocked_sources=tuple(blocked),
            freshness=tuple(fresh),
            policy_issues=tuple(issues),
            passed=passed,
            trust_passed=trust,
            guarded_response=guarded,
            settings=s.model_dump(mode="json"),
            n_chunks=len(all_chunks),
            n_chunks_used=len(usable),
            elapsed_ms=(time.perf_counter() - t0) * 1000.0,
        )
        logger.debug(
            "audit done",
            extra={"claims": n, "supported": n_ok, "chunks": len(usable), "trust": trust},
        )
        if s.mode == "enforce" and not trust:
            raise EnforcementError(
                f"audit failed: {n - n_ok} of {n} claim(s) unsupported, compliance "
                f"{compliance:.2f} < {s.min_compliance:.2f}"
                if not passed
                else "audit failed: supported claims rest on stale sources",
                report=report,
            )
        return report

    def _index(self, chunks: list[Chunk]) -> EvidenceIndex:
        """The evidence index for a chunk set; the last few are kept (chunk sets often repeat)."""
        key = tuple((c.id, c.url or "", c.text) for c in chunks)
        with self._lock:
            hit = self._indexes.pop(key, None)
            if hit is not None:
                self._indexes[key] = hit  # most recently used last
                return hit
        index = EvidenceIndex(chunks)
        with self._lock:
            self._indexes[key] = index
            while len(self._indexes) > INDEX_CACHE_SIZE:
                self._indexes.pop(next(iter(self._indexes)))
        return index

    def _audit_claim(
        self, claim: Claim, index: EvidenceIndex, fresh: Sequence[SourceFreshness]
    ) -> ClaimAudit:
        s = self.settings
        matches = index.match(claim.text, top_k=TOP_K)
        base = {"id": claim.id, "text": claim.text, "start": claim.start, "end": claim.end}
        if not matches:
            return ClaimAudit(
                **base,
                supported=False,
                confidence=0.0,
                reason="no source shares the claim's content words",
            )
        checked: list[tuple[Match, list[CheckResult]]] = []
        for m in matches:
            if m.coverage < s.support_threshold and checked:
                break  # ordered by coverage: the rest cannot support the claim
            chunk_text = index.chunks[m.chunk_index].text
            # a claim written all in lower case is checked with the capitals the chunk uses
            checked.append((m, run_checks(recase_like(claim.text, chunk_text), chunk_text)))
        good = [
            (m, r)
            for m, r in checked
            if _covers(m, s.support_threshold) and not any(x.status == "fail" for x in r)
        ]
        chosen, results = good[0] if good else checked[0]
        failed = [x for x in results if x.status == "fail"]
        best_cov = checked[0][0].coverage
        # another source that covers the claim as well and flatly contradicts it
        for m, r in checked:
            if m is chosen or m.coverage < max(s.support_threshold, best_cov - _CONTRA_MARGIN):
                continue
            for x in r:
                if x.status == "fail" and x.check in _CONTRA_CHECKS:
                    url = index.chunks[m.chunk_index].url or index.chunks[m.chunk_index].id
                    failed.append(x.model_copy(update={"reason": f"{x.reason} (source {url})"}))
        chunk = index.chunks[chosen.chunk_index]
        supported = _covers(chosen, s.support_threshold) and not failed
        verdict = None
        if supported and s.use_verifier and self.verifier is not None:
            # the verifier reads every source that shares the claim's words, the chosen one
            # first, as ask's verifier reads all its passages: a claim whose subject one
            # passage names and whose date another states was withheld when it saw only one
            pool = [chunk] + [
                index.chunks[m.chunk_index]
                for m in matches
                if index.chunks[m.chunk_index].id != chunk.id
            ]
            verdict = self.verifier.verify(claim, pool)
            supported = verdict.label == "supported"
        if failed:
            reason = "; ".join(dict.fromkeys(x.reason for x in failed))
        elif chosen.coverage < s.support_threshold:
            reason = (
                f"best evidence covers {chosen.coverage:.0%} of the claim's content words "
                f"(needs {s.support_threshold:.0%})"
            )
        elif chosen.predicate_coverage <= 0.0:
            reason = (
                "the best evidence shares only names with the claim, none of the words it says "
                "of them: a name it shares does not support what the claim says of it"
            )
        elif verdict is not None and not supported:
            reason = f"the verifier says {verdict.label}: {verdict.reason}"
        else:
            reason = f"supported by {chunk.url or chunk.id}"
        f = fresh[chosen.chunk_index]  # fresh is aligned with index.chunks (both: usable)
        freshness: FreshnessVerdict = "unsupported"
        if supported:
            # fail closed: a source whose age cannot be established counts as stale, and so
            # does a claim that any stale source the verifier quoted helps support (evidence
            # names its chunk by id: of several chunks with that id, any stale one counts)
            old = {g.chunk_id for g in fresh if g.status in ("stale", "unknown")}
            quoted = [e.chunk_id for e in (verdict.evidence if verdict else ())]
            stale = f.status in ("stale", "unknown") or any(cid in old for cid in quoted)
            freshness = "supported_stale" if stale else "supported_fresh"
        return ClaimAudit(
            **base,
            supported=supported,
            confidence=round(min(max(_confidence(chosen), 0.0), 1.0), 4),
            source_url=chunk.url,
            chunk_id=chunk.id,
            evidence=EvidenceSpan(
                chunk_id=chunk.id,
                doc_id=chunk.doc_id,
                url=chunk.url,
                start=chosen.window_start,
                end=chosen.window_end,
                text=chosen.window_text,
            ),
            checks=tuple(x for x in results if x.status != "not_applicable"),
            failed_checks=tuple(failed),
            freshness=freshness,
            source_date=f.source_date,
            reason=reason,
            verdict=verdict,
        )


def _covers(m: Match, threshold: float) -> bool:
    """Whether a match reaches the threshold on the claim's content words, at least one of them
    besides its names (a shared name alone supports nothing said of it). Requiring the threshold
    on the words besides names too cost faithful paraphrases more than it caught
    (`benchmarks/audit_perturbations.py`: synonyms accepted 98% -> 95%, faithful HaluEval
    summaries 30% -> 22%)."""
    return m.coverage >= threshold and m.predicate_coverage > 0.0


def _confidence(m: Match) -> float:
    # none when only names are shared, so "supported iff confidence reaches the threshold and no
    # check failed" still holds
    return m.coverage if m.predicate_coverage > 0.0 else 0.0


def _unchecked(claim: Claim, reason: str) -> ClaimAudit:
    """An unsupported audit for text that was not checked."""
    return ClaimAudit(
        id=claim.id,
        text=claim.text,
        start=claim.start,
        end=claim.end,
        supported=False,
        confidence=0.0,
        reason=reason,
    )


def violates(a: ClaimAudit, s: AuditSettings) -> bool:
    """Whether a claim's audit breaks the policy: unsupported, or supported only by a stale
    source when ``stale_action`` is ``fail``."""
    return not a.supported or (a.freshness == "supported_stale" and s.stale_action == "fail")


def _violation(a: ClaimAudit, stale_action: str) -> Violation:
    if a.failed_checks:
        return Violation(claim_id=a.id, text=a.text, kind="contradicted", message=a.reason)
    if not a.supported:
        return Violation(claim_id=a.id, text=a.text, kind="unsupported", message=a.reason)
    return Violation(
        claim_id=a.id,
        text=a.text,
        kind="stale_source",
        message=f"supported only by a stale source ({a.source_date or 'undated'})",
    )


def violating_spans(
    response: str, audits: Sequence[ClaimAudit], settings: AuditSettings
) -> list[tuple[int, int]]:
    """The ``(start, end)`` spans of ``response`` that violate the policy, sorted.

    A violating claim's own span, and every other exact occurrence of its text: the extractor
    keeps one claim for a sentence said twice, and the repeat must not slip through the guard.
    The claim's text may be the extractor's rewrite ("Einstein died in 1955." for "He died in
    1955."), so a repeat of the sentence as written is withheld too, unless a claim that passed
    was audited on that repeat itself.
    Spans are clipped to the response (a claim audited on a longer text may lie outside it).
    """
    spans: set[tuple[int, int]] = set()
    passed = [(a.start, a.end) for a in audits if not violates(a, settings)]
    for a in audits:
        if not violates(a, settings):
            continue
        spans.add((a.start, a.end))
        if a.text:
            at = response.find(a.text)
            while at >= 0:
                spans.add((at, at + len(a.text)))
                at = response.find(a.text, at + 1)
            spans.update(_repeats(response, a.text))
        written = response[max(a.start, 0) : max(a.end, 0)]
        if written.strip() and written != a.text:
            end = written.rstrip()[-1:]
            for x, y in _repeats(response, written):
                if any(x < q and p < y for p, q in passed):
                    continue
                # the sentence's own closing stop goes with it, as it does at the claim's span
                spans.add((x, y + 1) if end in ".!?" and response[y : y + 1] == end else (x, y))
    n = len(response)
    return sorted((max(a, 0), min(b, n)) for a, b in spans if b > 0 and a < n and b > a)


# the extractor deduplicates claims on their words alone (case, punctuation, citation markers
# and markdown dropped), so a repeat it dropped is found the same way, not as exact text
_WORDS = re.compile(r"[^\W_]+")
_CITATION = r"\[\d+(?:\s*[,;\-\u2013]\s*\d+)*\]"
_BETWEEN = rf"(?:[\W_]|{_CITATION})+"


def _repeats(response: str, claim_text: str) -> list[tuple[int, int]]:
    """Spans of ``response`` that say ``claim_text``'s words in order (whatever lies between
    them: punctuation, markdown, citation markers), with the citation markers that follow."""
    words = _WORDS.findall(claim_text)
    if not words:
        return []
    pattern = re.compile(
        r"(?<![^\W_])"
        + _BETWEEN.join(re.escape(w) for w in words)
        + rf"(?![^\W_])(?:\s*{_CITATION})*",
        re.IGNORECASE,
    )
    return [m.span() for m in pattern.finditer(response)]


def withhold_violations(
    response: str, audits: Sequence[ClaimAudit], settings: AuditSettings
) -> str:
    """The answer with the text of every violating claim withheld (merged spans): what
    guardrail mode shows (also per sentence, by `StreamGuard`)."""
    return withhold_spans(response, violating_spans(response, audits, settings))


def withhold_spans(response: str, bad: Sequence[tuple[int, int]]) -> str:
    """``response`` with each of the sorted ``(start, end)`` spans ``bad`` (overlapping ones
    merged) replaced by the withheld marker."""
    if not bad:
        return response
    merged: list[list[int]] = []
    for a, b in bad:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    out, pos = [], 0
    for a, b in merged:
        out.append(response[pos:a])
        out.append(WITHHELD_MARKER)
        pos = b
    out.append(response[pos:])
    return "".join(out)
