"""The claim verifier: evidence selection, then a cascade of stages, cheap and certain first.

Stages (``settings.verify.cascade``, in order):

* ``checks``: the typed consistency checks (numbers, dates, entities, polarity...) on the best
  evidence window, confirmed against all the evidence given; a conflicting value or flipped
  polarity decides *contradicted*, a number or date the evidence never mentions decides
  *unsupported* (a missing name is recorded but left to the model). Passing checks decide
  nothing; the stage reports the lexical coverage of the claim as its p_entail (the lexical-only
  matcher).
* ``cross_encoder``: the project's ONNX model on every selected window; decides when p_entail is
  outside ``[uncertain_low, uncertain_high]`` or a window contradicts with high confidence.
* ``external``: a user's own model (same role), only while undecided.
* ``llm_judge``: only for the uncertain band left after the model stages.

Every stage's score is kept in ``Verdict.stages``. Fail closed: a stage error, the per-claim
timeout, a claim too long to check or a window the model could not see whole sets
``complete=False``, records why, and the claim is never labelled supported.

Examples:
    >>> from affidavit.core.settings import PolicySettings, VerifySettings
    >>> from affidavit.verify.fakes import ScriptedScorer
    >>> v = ClaimCascade(VerifySettings(cascade=["cross_encoder"]), PolicySettings(),
    ...                  scorers={"cross_encoder": ScriptedScorer({"Paris": (0.95, 0.04, 0.01)})})
    >>> v.verify(Claim(id="c1", text="Paris is in France.", start=0, end=19),
    ...          [Chunk(text="Paris is the capital of France.")]).label
    'supported'
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from affidavit.core.errors import AffidavitError, VerificationError
from affidavit.core.settings import PolicySettings, VerifySettings
from affidavit.core.types import (
    CheckResult,
    Chunk,
    Claim,
    EvidenceSpan,
    Label,
    StageScore,
    Verdict,
)
from affidavit.verify.base import PairScorer, unverified
from affidavit.verify.casing import recase_like
from affidavit.verify.checks import is_unasserted
from affidavit.verify.combiner import Combiner, PartSignals, feature_vector
from affidavit.verify.evidence import (
    Candidate,
    TokenOffsets,
    WhitespaceTokens,
    Windower,
    combinations,
    join_spans,
    make_span,
    overlap,
    rank_windows,
    sentence_candidates,
)
from affidavit.verify.lexical import (
    compressed_support,
    date_bound_elsewhere,
    dates_whole_sentence,
    distributive_claims,
    move_time_adverbial,
    pronoun_for_someone_else,
    role_mismatch,
    sentence_spans,
    split_time_adverbial,
    subject_focus,
    subject_named_elsewhere,
    substituted_name,
    substituted_words,
    support_about_someone_else,
    verbatim_support,
    words_restated,
    year_bound_elsewhere,
)
from affidavit.verify.lifespan import lifespan_support

log = logging.getLogger(__name__)

CheckFn = Callable[[str, str], list[CheckResult]]

# checks whose failure is a contradiction (a wrong figure, date, name or a flipped polarity)
CONTRADICTING_CHECKS = frozenset({"number", "date", "entity", "polarity", "comparative", "unit"})
# of those, the ones whose failure without an evidence value means "not mentioned". A name the
# evidence lacks is not decisive: abbreviations and paraphrased names make that check too noisy to
# end the cascade (measured: benchmarks/results/verifier_ablation*.json); the model decides.
ABSENCE_CHECKS = frozenset({"number", "date"})
NON_DECISIVE = frozenset({"entity"})
# checks that compare a stated value with the evidence's (the combiner's matched_frac)
VALUE_CHECKS = frozenset({"number", "date"})
MODEL_STAGES = ("cross_encoder", "external")
# sentences tried when looking for smaller or combined evidence
MIN_EVIDENCE_POOL = 4


class _Timeout(Exception):
    """The per-claim budget ran out."""


@dataclass
class _Run:
    """Mutable state of one claim's verification."""

    claim: Claim
    chunks: Sequence[Chunk]
    deadline: float
    stages: list[StageScore] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    checks: list[CheckResult] = field(default_factory=list)
    windows: list[Candidate] = field(default_factory=list)
    n_windows: int = 0
    # evidence behind the current best score: supporting set, or the contradicting span
    support: tuple[EvidenceSpan, ...] = ()
    contra: tuple[EvidenceSpan, ...] = ()
    best_spans: tuple[EvidenceSpan, ...] = ()
    final: StageScore | None = None
    decided: bool = False
    incomplete: bool = False
    # signals for the combiner
    conflict: bool = False
    missing: bool = False
    name_missing: bool = False
    misplaced: bool = False  # the claim names a country or state where the evidence names another
    matched: bool = False
    model_score: StageScore | None = None

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise _Timeout


def _score(
    stage: str, p: tuple[float, float, float], label: Label, decided: bool, detail: str
) -> StageScore:
    pe, pn, pc = (min(1.0, max(0.0, x)) for x in p)
    return StageScore(
        stage=stage,
        p_entail=pe,
        p_neutral=pn,
        p_contradict=pc,
        label=label,
        decided=decided,
        detail=detail,
    )


class ClaimCascade:
    """Verifies claims against retrieved chunks with the configured cascade (a ClaimVerifier).

    Args:
        settings: the ``verify`` settings section.
        policy: thresholds tau_entail / tau_contradict that turn probabilities into labels.
        scorers: stage name -> PairScorer, overriding what the cascade would build (tests, a
            preloaded model, an LLM judge). ``cross_encoder`` defaults to the packaged model;
            ``external`` to ``settings.external_model_path``; ``llm_judge`` must be given.
        check_fn: the typed checks (default ``affidavit.verify.checks.run_checks``).
        tokenizer: token offsets for windowing (default: the cross-encoder's own tokenizer).
        combiner: the fitted combiner to decide with (default: the one shipped with the
            model stage's model, if any, when ``settings.combiner`` is on).

    A stage that cannot be built (model missing, dependency absent) does not raise here: every
    verdict records the error and stays unverified (fail closed).
    """

    def __init__(
        self,
        settings: VerifySettings,
        policy: PolicySettings,
        *,
        scorers: Mapping[str, PairScorer] | None = None,
        check_fn: CheckFn | None = None,
        tokenizer: TokenOffsets | None = None,
        combiner: Combiner | None = None,
        similarity: Callable[[str, str], float] | None = None,
    ) -> None:
        if settings.uncertain_low > settings.uncertain_high:
            raise VerificationError(
                f"uncertain_low {settings.uncertain_low} > uncertain_high {settings.uncertain_high}"
            )
        self.settings = settings
        self.policy = policy
        self.scorers: dict[str, PairScorer] = dict(scorers or {})
        # how close in meaning two short phrases are (substituted_words); the MiniLM embedder,
        # built on first use
        self.similarity = similarity
        self.stage_errors: dict[str, str] = {}
        self.check_fn = check_fn
        # the cascade tier's second opinion: the same cascade on the accurate model
        self.accurate: ClaimCascade | None = None
        for name in settings.cascade:
            if name == "checks" and self.check_fn is None:
                self.check_fn = self._load_checks()
            elif name != "checks" and name not in self.scorers:
                self._build_scorer(name)
        max_len = settings.max_len
        window_len = settings.window_len
        tok = tokenizer
        for stage in MODEL_STAGES:
            scorer = self.scorers.get(stage)
            if scorer is None:
                continue
            model_len = getattr(scorer, "max_len", None)
            if isinstance(model_len, int):
                max_len = min(max_len, model_len)
            trained_len = getattr(scorer, "window_len", None)
            if window_len is None and isinstance(trained_len, int):
                window_len = trained_len
            model_tok = getattr(scorer, "tokenizer", None)
            if tok is None and hasattr(model_tok, "offsets"):
                tok = model_tok
            break
        self.windower = Windower(
            tok or WhitespaceTokens(), max_len, settings.window_stride, window_len
        )
        self.combiner: Combiner | None = combiner
        self.combiner_stage = "cross_encoder"
        if combiner is None and settings.combiner and "checks" in settings.cascade:
            # the combiner is fitted to one model's scores: it ships in that model's folder
            for stage in MODEL_STAGES:
                found = getattr(self.scorers.get(stage), "combiner", None)
                if isinstance(found, Combiner):
                    self.combiner = found
                    self.combiner_stage = stage
                    break
        if settings.tier == "cascade":
            self._build_accurate(scorers or {})

    def _build_accurate(self, scorers: Mapping[str, PairScorer]) -> None:
        """The accurate stage of the cascade tier (a ClaimCascade on the accurate model; given
        as ``scorers['accurate']`` in tests). Unavailable: recorded, and every claim that would
        need it stays unverified."""
        acc_settings = self.settings.model_copy(update={"tier": "accurate"})
        given = scorers.get("accurate")
        try:
            self.accurate = ClaimCascade(
                acc_settings,
                self.policy,
                scorers={"cross_encoder": given} if given is not None else None,
                check_fn=self.check_fn,
            )
        except AffidavitError as exc:
            self.stage_errors["accurate"] = f"accurate unavailable: {exc.message}"
            return
        err = self.accurate.stage_errors.get("cross_encoder")
        if err is not None:
            self.stage_errors["accurate"] = err.replace("cross_encoder", "accurate", 1)
            self.accurate = None

    def _load_checks(self) -> CheckFn | None:
        try:
            from affidavit.verify.checks import run_checks
        except ImportError as exc:
            self.stage_errors["checks"] = f"typed checks unavailable: {exc}"
            return None
        fn: CheckFn = run_checks
        return fn

    def _build_scorer(self, stage: str) -> None:
        try:
            if stage == "cross_encoder" and self.settings.tier == "accurate":
                from affidavit.verify.accurate import load_accurate_cross_encoder

                self.scorers[stage] = load_accurate_cross_encoder(self.settings)
            elif stage == "cross_encoder":
                from affidavit.verify.crossencoder import load_cross_encoder

                self.scorers[stage] = load_cross_encoder(self.settings)
            elif stage == "embed_head":
                from affidavit.verify.head import load_embed_head

                self.scorers[stage] = load_embed_head(self.settings)
            elif stage == "external":
                from affidavit.verify.external import load_external

                self.scorers[stage] = load_external(self.settings)
            else:
                raise VerificationError(
                    f"stage {stage} needs a scorer (pass scorers={{'{stage}': ...}})"
                )
        except AffidavitError as exc:
            log.info("verifier stage %s unavailable: %s", stage, exc)
            self.stage_errors[stage] = f"{stage} unavailable: {exc.message}"

    def describe(self) -> dict[str, Any]:
        """Effective configuration (for certificates and traces)."""
        stages: dict[str, Any] = {}
        for name, scorer in self.scorers.items():
            desc = getattr(scorer, "describe", None)
            stages[name] = desc() if callable(desc) else {"name": getattr(scorer, "name", name)}
        if self.accurate is not None:
            stages.update(
                {f"accurate:{k}": v for k, v in self.accurate.describe()["stages"].items()}
            )
        return {
            "settings": self.settings.model_dump(mode="json"),
            "policy": self.policy.model_dump(mode="json"),
            "stages": stages,
            "unavailable": dict(self.stage_errors),
            "max_len": self.windower.max_len,
            "window_len": self.windower.window_len,
            "combiner": self.combiner.describe() if self.combiner else None,
        }

    def model_identities(self) -> list[dict[str, str]]:
        """Name and sha256 of every model stage that reports one (for certificates)."""
        out: list[dict[str, str]] = []
        for name, desc in self.describe()["stages"].items():
            if isinstance(desc, dict) and desc.get("sha256"):
                out.append({"name": str(desc.get("name", name)), "sha256": str(desc["sha256"])})
        if self.combiner is not None and self.combiner.sha256:
            out.append({"name": "affidavit-combiner", "sha256": self.combiner.sha256})
        if self.accurate is not None and self.accurate.combiner is not None:
            sha = self.accurate.combiner.sha256
            if sha:
                out.append({"name": "affidavit-combiner-accurate", "sha256": sha})
        return out

    # ------------------------------------------------------------------ public API
    def verify(self, claim: Claim, chunks: Sequence[Chunk]) -> Verdict:
        """Verify one claim against all the given chunks; never raises for one claim.

        With the model's combiner, a claim of several sentences is also judged sentence by
        sentence (each against its own best evidence) and the results are combined. A claim
        written all in lower case is first given the capitals its evidence uses
        (`affidavit.verify.casing`), so that the checks and rules that read names see them.
        """
        if not any(ch.isalnum() for ch in claim.text):
            # blank, punctuation or control characters: no statement, nothing the evidence can
            # support (the model scored a blank claim as entailed)
            return _nothing_to_check(claim)
        recased = recase_like(claim.text, "\n".join(c.text for c in chunks))
        if recased != claim.text:
            verdict = self.verify(claim.model_copy(update={"text": recased}), chunks)
            return verdict.model_copy(
                update={"reason": f"read with capitals as '{recased}': {verdict.reason}"}
            )
        if self.combiner is None:
            verdict = self._verdict(
                self._run(claim, chunks, time.monotonic() + self.settings.timeout_s)
            )
        else:
            whole, parts = self._runs(claim, chunks)
            verdict = self._combined(claim, whole, parts)
        if verdict.label != "supported" and verdict.complete:
            restated = self._verbatim(claim, chunks, verdict)
            if restated is not None:
                return restated
        if verdict.label == "unsupported" and verdict.complete and self.settings.dated_support:
            dated = self._dated(claim, chunks, verdict)
            if dated is not None:
                return self._other_date(claim, chunks, dated)
        if self.settings.tier == "cascade" and self._second_look(verdict):
            verdict = self._accurate_verdict(claim, chunks, verdict)
        return _below_tau(self._roles(claim, chunks, verdict), self.policy.tau_entail)

    def _roles(self, claim: Claim, chunks: Sequence[Chunk], v: Verdict) -> Verdict:
        """Withhold a supported claim whose predicate the evidence gives, word for word, to
        someone else (`affidavit.verify.lexical.role_mismatch`: "Buzz Aldrin became the
        first person to step onto the lunar surface." against a passage saying Armstrong did),
        or that copies an evidence sentence but puts a name the evidence never mentions in place
        of some of its words (`affidavit.verify.lexical.substituted_name`: "... a 2007 Crucible
        drama film ..." against "... a 2007 American drama film ...")."""
        if v.label != "supported" or any(st.stage == "verbatim" for st in v.stages):
            return v
        v = self._each_member(claim, chunks, v)
        if v.label != "supported":
            return v
        sentences = _sentences(claim) or [claim]
        for sent in sentences:
            for chunk in chunks:
                found = role_mismatch(sent.text, chunk.text)
                if found is not None:
                    who, pred = found
                    return _withheld(
                        v, f"the evidence says {who} {pred[:80]}, not the claim's subject"
                    )
                swapped = substituted_name(sent.text, chunk.text)
                if swapped is not None:
                    said, instead = swapped
                    return _withheld(
                        v,
                        f"the evidence says {instead[:60]} where the claim says {said[:60]}, "
                        "in the same sentence word for word",
                    )
                if not self.settings.substituted_words:
                    continue
                for said, instead in substituted_words(sent.text, chunk.text):
                    close = self._similarity(said, instead)
                    if close is None:
                        return _withheld(
                            v,
                            f"the evidence says {instead[:60]} where the claim says {said[:60]}, "
                            "and the two could not be compared",
                        )
                    if close < self.settings.substitution_min_similarity:
                        return _withheld(
                            v,
                            f"the evidence says {instead[:60]} where the claim says {said[:60]}, "
                            f"in the same sentence word for word (similarity {close:.2f})",
                        )
        v = self._other_date(claim, chunks, v)
        if v.label != "supported":
            return v
        if self.settings.subject_focus and len(sentences) == 1:
            where = {c.id: i for i, c in enumerate(chunks)}
            spans = [(where.get(e.chunk_id, -1), e.start, e.end) for e in v.evidence]
            other = pronoun_for_someone_else(sentences[0].text, [c.text for c in chunks], spans)
            if other is not None:
                return _withheld(
                    v,
                    f"the evidence says this of {other[:60]} (by a pronoun) and never names "
                    "the claim's subject",
                )
        if not self.settings.subject_focus or self.combiner is None:
            return v
        if self.settings.subject_in_support and len(sentences) == 1:
            other = support_about_someone_else(sentences[0].text, [e.text for e in v.evidence])
            if other is not None:
                return _withheld(
                    v,
                    f"the sentences that support it never name its subject and speak of {other}",
                )
        for sent in sentences:
            focused: list[Chunk] = []
            changed = False
            for chunk in chunks:
                text = subject_focus(sent.text, chunk.text)
                if text is None:
                    focused.append(chunk)
                elif text:
                    focused.append(chunk.model_copy(update={"text": text}))
                    changed = True
                else:
                    changed = True
            if not changed:
                continue
            if not focused:
                return _withheld(v, "the evidence only says this of someone else")
            again = self._combined(sent, *self._runs(sent, focused))
            if again.label != "supported":
                return _withheld(
                    v,
                    "supported only by sentences about someone else: the sentences about the "
                    f"claim's subject give p(supported) {again.p_entail:.2f}",
                )
        return v

    def _similarity(self, a: str, b: str) -> float | None:
        """Cosine similarity of two short phrases; None when it cannot be computed (then the
        caller withholds: fail closed)."""
        try:
            if self.similarity is None:
                from affidavit.retrieve.embedders import MiniLMEmbedder

                embedder = MiniLMEmbedder(threads=self.settings.threads)

                def cosine(x: str, y: str) -> float:
                    u, w = embedder.embed([x, y])
                    return float(sum(p * q for p, q in zip(u, w, strict=True)))

                self.similarity = cosine
            return float(self.similarity(a, b))
        except (AffidavitError, OSError) as exc:
            self.stage_errors["similarity"] = getattr(exc, "message", str(exc))
            return None

    def _each_member(self, claim: Claim, chunks: Sequence[Chunk], v: Verdict) -> Verdict:
        """Withhold a supported claim about both of two members ("Both bands are American pop
        punk bands.") unless what it says is supported of each member on its own
        (`affidavit.verify.lexical.distributive_claims`)."""
        if not self.settings.distributive:
            return v
        evidence = "\n".join(c.text for c in chunks)
        for sent in _sentences(claim) or [claim]:
            each = distributive_claims(sent.text, evidence)
            for k, text in enumerate(each or ()):
                member = sent.model_copy(update={"id": f"{sent.id}.m{k}", "text": text})
                mv = self.verify(member, chunks)
                if mv.label != "supported":
                    return _withheld(
                        v,
                        f"said of each: '{text[:80]}' is {mv.label} "
                        f"(p(supported) {mv.p_entail:.2f})",
                    )
        return v

    def _other_date(self, claim: Claim, chunks: Sequence[Chunk], v: Verdict) -> Verdict:
        """Withhold a supported claim whose dated word the evidence binds to another date only
        (`affidavit.verify.lexical.date_bound_elsewhere`: "In 1887, the Eiffel Tower was
        completed." against "... and was completed in March 1889."), or whose year-qualified
        name the evidence gives other years only (`affidavit.verify.lexical.year_bound_elsewhere`:
        "the 1911 Nobel Prize in Physics" against "the 1903 Nobel Prize in Physics")."""
        if v.label != "supported":
            return v
        evidence = "\n".join(c.text for c in chunks)
        for sent in _sentences(claim) or [claim]:
            found = date_bound_elsewhere(sent.text, evidence)
            if found is not None:
                return _withheld(v, f"the evidence says '{found[:80]}', another date")
            found = year_bound_elsewhere(sent.text, evidence)
            if found is not None:
                return _withheld(v, f"the evidence says '{found[:80]}', another year")
        return v

    def _verbatim(self, claim: Claim, chunks: Sequence[Chunk], v: Verdict) -> Verdict | None:
        """Supported when the evidence states every sentence of the claim word for word
        (`affidavit.verify.lexical.verbatim_support`), whatever the model scored; never
        over a typed check's contradiction."""
        if any(st.stage == "checks" and st.decided for st in v.stages):
            return None
        sentences = _sentences(claim) or [claim]
        spans: list[EvidenceSpan] = []
        compressed = dated = False
        for sent in sentences:
            hit = None
            for chunk in chunks:
                found = verbatim_support(sent.text, chunk.text)
                if found is None and self.settings.compressed_support:
                    found = compressed_support(sent.text, chunk.text)
                    compressed = compressed or found is not None
                if found is None and self.settings.lifespan_support:
                    found = lifespan_support(sent.text, chunk.text)
                    dated = dated or found is not None
                if found is not None:
                    hit = make_span(chunk, *found)
                    break
            if hit is None:
                return None
            spans.append(hit)
        quoted = "; ".join(f"'{sp.text[:80]}'" for sp in spans)
        how = (
            "word for word, but for a description of its subject" if compressed else "word for word"
        )
        if dated:
            how = (
                "word for word, or as a date in a parenthesis after the name"
                if len(sentences) > 1
                else "as a date in a parenthesis after the name"
            )
        stage = StageScore(
            stage="verbatim",
            p_entail=1.0,
            p_neutral=0.0,
            p_contradict=0.0,
            label="supported",
            decided=True,
            detail=f"the evidence states it {how}: {quoted}",
        )
        return v.model_copy(
            update={
                "label": "supported",
                "p_entail": 1.0,
                "p_neutral": 0.0,
                "p_contradict": 0.0,
                "evidence": tuple(dict.fromkeys(spans)),
                "stages": (*v.stages, stage),
                "reason": f"the evidence states the claim {how} ({v.label} by "
                f"p(supported) {v.p_entail:.2f} before): {quoted}",
            }
        )

    def _dated(self, claim: Claim, chunks: Sequence[Chunk], v: Verdict) -> Verdict | None:
        """Supported when the claim without its date is supported by an evidence sentence on its
        own, that sentence has every word of it (names may be elsewhere in the chunk; a subject
        it calls "she" named elsewhere in it, not beside the "she"), and dates all it says by
        the claim's date (``verify.dated_support``).

        The model reads a date at the end of a claim as a sign of contradiction ("Marie Curie
        discovered polonium and radium in 1898." p 0.19 against "In 1898, ... she announced the
        discovery of two new elements: polonium ... and radium."). Here the model judges the
        statement without the date, against one sentence at a time, and the date is compared
        as a value (`affidavit.verify.lexical.dates_whole_sentence`: one year in the sentence,
        an adverbial of the whole sentence, nothing placed at another time; the same year and
        no other month or day). Never over a typed check that found a differing value."""
        if any(st.stage == "checks" and st.decided for st in v.stages) or any(
            c.status == "fail" and c.evidence_value is not None for c in v.checks
        ):
            return None
        if len(_sentences(claim)) > 1:
            return None
        split = split_time_adverbial(claim.text)
        if split is None:
            return None
        body, when = split
        if any(role_mismatch(body, c.text) is not None for c in chunks):
            return None
        undated = claim.model_copy(update={"text": body})
        tried = 0
        for chunk in chunks:
            for a, b in sentence_spans(chunk.text):
                sentence = chunk.text[a:b]
                ev_when = dates_whole_sentence(when, sentence)
                if (
                    ev_when is None
                    or not words_restated(body, sentence, chunk.text)
                    or not subject_named_elsewhere(
                        body, sentence, chunk.text[:a] + " " + chunk.text[b:]
                    )
                ):
                    continue
                tried += 1
                if tried > 4:  # bounded: a few dated sentences, one verdict each
                    return None
                inner = self.verify(undated, [chunk.model_copy(update={"text": sentence})])
                if inner.label != "supported" or not inner.complete:
                    continue
                span = make_span(chunk, a, b)
                detail = (
                    f"without its date ('{body[:80]}') supported by p {inner.p_entail:.2f}, "
                    f"and the sentence dates it {ev_when}: '{sentence[:80]}'"
                )
                stage = StageScore(
                    stage="dated",
                    p_entail=inner.p_entail,
                    p_neutral=inner.p_neutral,
                    p_contradict=inner.p_contradict,
                    label="supported",
                    decided=True,
                    detail=detail,
                )
                return v.model_copy(
                    update={
                        "label": "supported",
                        "p_entail": inner.p_entail,
                        "p_neutral": inner.p_neutral,
                        "p_contradict": inner.p_contradict,
                        "evidence": (span,),
                        "stages": (
                            *v.stages,
                            *(
                                st.model_copy(
                                    update={"stage": f"undated:{st.stage}", "decided": False}
                                )
                                for st in inner.stages
                            ),
                            stage,
                        ),
                        "reason": f"the claim {detail} ({v.label} by p(supported) "
                        f"{v.p_entail:.2f} with the date in place)",
                    }
                )
        return None

    def _second_look(self, v: Verdict) -> bool:
        """Whether the cascade tier sends a fast verdict to the accurate stage: a complete
        verdict whose p(supported) lies in ``accurate_band``, or a contradiction the model (not
        a typed check) found."""
        if not v.complete:
            return False
        if v.label == "contradicted":
            return not any(st.stage == "checks" and st.decided for st in v.stages)
        lo, hi = self.settings.accurate_band
        return lo <= v.p_entail <= hi

    def _accurate_verdict(self, claim: Claim, chunks: Sequence[Chunk], fast: Verdict) -> Verdict:
        """The accurate stage's verdict, with the fast stages kept in the trace; fail closed
        when the accurate stage is unavailable."""
        why = f"fast p(supported) {fast.p_entail:.2f} ({fast.label})"
        fast_stages = tuple(
            st.model_copy(update={"stage": f"fast:{st.stage}", "decided": False})
            for st in fast.stages
        )
        if self.accurate is None:
            err = self.stage_errors.get("accurate", "accurate stage unavailable")
            label: Label = "contradicted" if fast.label == "contradicted" else "unsupported"
            return fast.model_copy(
                update={
                    "label": label,
                    "evidence": fast.evidence if label == "contradicted" else (),
                    "p_entail": 0.0 if label != "contradicted" else fast.p_entail,
                    "complete": False,
                    "errors": (*fast.errors, err),
                    "reason": f"not verified: {why} needs the accurate stage; {err}",
                }
            )
        v = self.accurate.verify(claim, chunks)
        return v.model_copy(
            update={
                "stages": fast_stages + v.stages,
                "reason": f"accurate stage ({why}): {v.reason}",
            }
        )

    def features(self, claim: Claim, chunks: Sequence[Chunk]) -> dict[str, float] | None:
        """The combiner's input for a claim (None when some part could not be checked whole).

        Runs exactly what `verify` runs; used to fit the combiner on dev rows.
        """
        if self.combiner is None:
            raise VerificationError("features() needs a combiner (pass combiner=...)")
        whole, parts = self._runs(claim, chunks)
        if any(
            r.incomplete or r.errors or r.final is None
            for r in {id(r): r for r in [whole, *parts]}.values()
        ):
            return None
        tokens = sum(len(c.text.split()) for c in whole.chunks)
        return feature_vector(
            self._signals(whole, doc=True), [self._signals(r, doc=True) for r in parts], tokens
        )

    def _runs(self, claim: Claim, chunks: Sequence[Chunk]) -> tuple[_Run, list[_Run]]:
        deadline = time.monotonic() + self.settings.timeout_s
        whole = self._run(claim, chunks, deadline)
        parts = [whole]
        if self.settings.split_sentences:
            subs = _sentences(claim)
            if len(subs) > 1:
                # a question that names nothing asserts nothing to check ("Have you seen her
                # ranking?"), nor does a pointer to other content ("Click here for ..."); the
                # whole text, scored above, still holds them. Kept when every sentence is one.
                stated = [
                    sub
                    for sub in subs
                    if not _asks_only(sub.text) and not _points_elsewhere(sub.text)
                ] or subs
                parts = [self._run(sub, chunks, deadline) for sub in stated]
        return whole, parts

    def _run(self, claim: Claim, chunks: Sequence[Chunk], deadline: float) -> _Run:
        run = _Run(claim, chunks, deadline)
        try:
            self._select(run)
            if run.windows:
                for stage in self.settings.cascade:
                    run.check_time()
                    if run.decided:
                        if self.combiner is not None and stage == self.combiner_stage:
                            # the combiner weighs every signal: score the model anyway
                            self._model(stage, run, signals_only=True)
                        continue
                    self._run_stage(stage, run)
        except _Timeout:
            run.errors.append(f"timeout: not decided within {self.settings.timeout_s:g}s")
            run.incomplete = True
        except VerificationError as exc:
            run.errors.append(exc.message)
            run.incomplete = True
        return run

    def verify_many(self, items: Sequence[tuple[Claim, Sequence[Chunk]]]) -> list[Verdict]:
        """Verify several claims (each with its own chunks), in order."""
        return [self.verify(c, ch) for c, ch in items]

    # ------------------------------------------------------------------ stages
    def _select(self, run: _Run) -> None:
        # a passage of blanks, punctuation or control characters states nothing (a "\x00" was
        # a window the model could score as entailing)
        chunks = [c for c in run.chunks if any(ch.isalnum() for ch in c.text)]
        run.chunks = chunks
        if not chunks:
            return
        run.windows, run.n_windows = rank_windows(
            run.claim.text, chunks, self.windower, self.settings.top_evidence
        )

    def _run_stage(self, stage: str, run: _Run) -> None:
        if stage in self.stage_errors:
            run.errors.append(self.stage_errors[stage])
            run.incomplete = True
            run.stages.append(
                StageScore(
                    stage=stage,
                    p_entail=0.0,
                    p_neutral=1.0,
                    p_contradict=0.0,
                    label="unsupported",
                    error=self.stage_errors[stage],
                )
            )
            return
        try:
            if stage == "checks":
                self._checks(run)
            elif stage == "llm_judge":
                self._judge(run)
            else:
                self._model(stage, run)
        except _Timeout:
            raise
        except Exception as exc:  # any stage failure is recorded, the claim stays unverified
            log.warning("verifier stage %s failed on claim %s: %s", stage, run.claim.id, exc)
            msg = f"{stage} failed: {type(exc).__name__}: {exc}"
            run.errors.append(msg)
            run.incomplete = True
            run.stages.append(
                StageScore(
                    stage=stage,
                    p_entail=0.0,
                    p_neutral=1.0,
                    p_contradict=0.0,
                    label="unsupported",
                    error=msg,
                )
            )

    def _checks(self, run: _Run) -> None:
        assert self.check_fn is not None  # guarded by stage_errors
        best = run.windows[0].span
        results = list(self.check_fn(run.claim.text, best.text))
        failed = [
            r
            for r in results
            if r.status == "fail"
            and r.check in CONTRADICTING_CHECKS
            and not (r.check in NON_DECISIVE and r.evidence_value is None)
        ]
        if failed and (len(run.windows) > 1 or run.n_windows > 1):
            # a value the best window lacks or contradicts may be stated elsewhere in the evidence
            # given: a failure counts only if it also fails against all of it
            joined = " ".join(c.text for c in run.chunks)
            whole = list(self.check_fn(run.claim.text, joined))
            still = {r.check for r in whole if r.status == "fail"}
            failed = [r for r in failed if r.check in still]
            # what is recorded (and what the display policy reads) is what the whole evidence
            # says: a failure of the best window alone that the rest resolves is not kept
            by_check = {r.check: r for r in whole}
            results = [
                by_check.get(r.check, r) if r.status == "fail" and r.check not in still else r
                for r in results
            ]
        run.checks = results
        conflicts = [r for r in failed if not _absence(r)]
        missing = [r for r in failed if _absence(r)]
        run.misplaced = any(r.check == "entity" and r.evidence_value is not None for r in failed)
        # a place the evidence names instead is a missing name too: the evidence is about
        # somewhere else, and a year it gives says nothing against the claim
        run.name_missing = run.misplaced or any(
            r.absent and r.check in NON_DECISIVE for r in results
        )
        # the combiner's signal is what the checks found (it was fitted on exactly that)
        run.conflict, run.missing = bool(conflicts), bool(missing)
        run.matched = (
            not failed
            and not run.name_missing
            and any(r.status == "pass" and r.check in VALUE_CHECKS for r in results)
        )
        if conflicts and run.name_missing:
            # the evidence lacks a name the claim is about (Texas vs a passage on Virginia): a
            # different year there is about something else, not a contradiction. Unsupported.
            missing, conflicts = missing + conflicts, []
        run.best_spans = (best,)
        if conflicts:
            why = "; ".join(f"{r.check}: {r.reason or r.evidence_value}" for r in conflicts)
            score = _score("checks", (0.02, 0.03, 0.95), "contradicted", True, f"failed {why}")
            run.contra, run.support = (best,), ()
            run.decided = True
        elif missing:
            # the claim states a number, date or name no selected evidence mentions: it cannot be
            # entailed as written (fail closed: unsupported, not contradicted)
            why = "; ".join(f"{r.check}: {r.reason or r.claim_value}" for r in missing)
            score = _score("checks", (0.05, 0.9, 0.05), "unsupported", True, f"missing {why}")
            run.contra, run.support = (), ()
            run.decided = True
        else:
            cov = overlap(run.claim.text, best.text)
            passed = sum(r.status == "pass" for r in results)
            score = _score(
                "checks",
                (cov, 1.0 - cov, 0.0),
                "supported" if cov >= self.policy.tau_entail else "unsupported",
                False,
                f"{passed} passed, lexical coverage {cov:.2f}",
            )
            if cov >= self.policy.tau_entail:
                run.support = (best,)
        run.stages.append(score)
        run.final = score

    def _batched(self, scorer: PairScorer, pairs: list[tuple[str, str]], run: _Run) -> list[Any]:
        out: list[StageScore] = []
        step = self.settings.batch_size
        for s in range(0, len(pairs), step):
            run.check_time()
            out += scorer.score(pairs[s : s + step])
        if len(out) != len(pairs):
            raise VerificationError(f"{scorer.name} returned {len(out)} scores for {len(pairs)}")
        return out

    def _model(self, stage: str, run: _Run, signals_only: bool = False) -> None:
        scorer = self.scorers[stage]
        claim = run.claim.text
        tau_e = self._model_tau()
        windows = run.windows
        try:
            scores = self._batched(scorer, [(claim, w.span.text) for w in windows], run)
            moved = move_time_adverbial(claim) if self.settings.date_order_average else None
            if moved is not None:
                twins = self._batched(scorer, [(moved[0], w.span.text) for w in windows], run)
                scores = [_mean_score(a, b) for a, b in zip(scores, twins, strict=True)]
        except VerificationError:
            if signals_only:
                run.incomplete = True
                run.errors.append(f"{stage}: could not score the claim for the combiner")
                return
            raise
        if signals_only:
            ok_scores = [s for s in scores if s.error is None]
            if len(ok_scores) != len(scores) or any(
                s.detail.startswith("truncated") for s in ok_scores
            ):
                run.incomplete = True
                run.errors.append(f"{stage}: not every window scored for the combiner")
            if ok_scores:
                best = max(ok_scores, key=lambda s: s.p_entail)
                pc = max(s.p_contradict for s in ok_scores)
                run.model_score = best.model_copy(
                    update={
                        "stage": stage,
                        "p_contradict": pc,
                        "decided": False,
                        "detail": f"scored after the decision, for the combiner; {best.detail}",
                    }
                )
                run.stages.append(run.model_score)
            return
        spans = [w.span for w in windows]
        ok = [i for i, s in enumerate(scores) if s.error is None]
        failed = len(scores) - len(ok)
        if failed:
            errs = sorted({s.error for s in scores if s.error})
            run.errors.append(f"{stage}: {failed} of {len(scores)} windows not scored: {errs[0]}")
            run.incomplete = True
        if not ok:
            raise VerificationError(f"{stage} scored no window")
        for i in ok:
            if scores[i].detail.startswith("truncated"):
                spans[i] = spans[i].model_copy(update={"checked_whole": False})
                run.incomplete = True
                run.errors.append(f"{stage}: window {i + 1} not checked whole")
        ie = max(ok, key=lambda i: scores[i].p_entail)
        ic = max(ok, key=lambda i: scores[i].p_contradict)
        rep = scores[ie]
        detail = f"{len(scores)} of {run.n_windows} windows scored"
        support: tuple[EvidenceSpan, ...] = ()
        contra: tuple[EvidenceSpan, ...] = ()
        if rep.p_entail >= tau_e:
            support = (spans[ie],)
            smaller = self._smaller(scorer, run, windows[ie], rep)
            if smaller is not None:
                # the fewest sentences that still entail are what the user is shown; the claim's
                # score stays the window's, where the model read them in context. A scrap cut out
                # of its context must not raise it (a small model can score "offset." as entailing)
                support, rep_small = smaller
                detail += f"; minimal evidence: {len(support)} sentence(s)"
                detail += f", p_entail {rep_small.p_entail:.2f}"
        elif scores[ic].p_contradict >= self.settings.contradict_confidence:
            rep = scores[ic]
            contra = (spans[ic],)
            detail += f"; window {ic + 1} contradicts"
        elif self.settings.max_combination > 1:
            combo = self._combine(scorer, run)
            if combo is not None:
                support, rep = combo
                detail += f"; entailed by {len(support)} spans together"
        run.check_time()
        pe = rep.p_entail
        decided = (
            pe > self.settings.uncertain_high
            or pe < self.settings.uncertain_low
            or rep.p_contradict >= self.settings.contradict_confidence
        )
        score = rep.model_copy(
            update={"stage": stage, "decided": decided, "detail": f"{detail}; {rep.detail}"}
        )
        run.model_score = score.model_copy(
            update={"p_contradict": max(scores[i].p_contradict for i in ok)}
        )
        run.stages.append(score)
        run.final = score
        run.support = support
        run.contra = contra
        run.best_spans = support or contra or (spans[ie],)
        run.decided = decided

    def _smaller(
        self, scorer: PairScorer, run: _Run, window: Candidate, rep: StageScore
    ) -> tuple[tuple[EvidenceSpan, ...], StageScore] | None:
        """The fewest sentences of an entailing window that still entail (re-verified)."""
        sents = sentence_candidates(run.claim.text, run.chunks, [window], MIN_EVIDENCE_POOL)
        if len(sents) <= 1:
            return None
        return self._first_entailing(scorer, run, sents, max_size=2)

    def _combine(
        self, scorer: PairScorer, run: _Run
    ) -> tuple[tuple[EvidenceSpan, ...], StageScore] | None:
        """Sentences from different windows/chunks that together entail (re-verified)."""
        if len(run.windows) < 2:
            # one window already held all the evidence and the model saw it together
            return None
        sents = sentence_candidates(run.claim.text, run.chunks, run.windows, MIN_EVIDENCE_POOL)
        if len(sents) < 2:
            return None
        return self._first_entailing(
            scorer,
            run,
            sents,
            max_size=self.settings.max_combination,
            min_size=2,
            windows=run.windows,
        )

    def _first_entailing(
        self,
        scorer: PairScorer,
        run: _Run,
        sents: list[Candidate],
        *,
        max_size: int,
        min_size: int = 1,
        windows: Sequence[Candidate] = (),
    ) -> tuple[tuple[EvidenceSpan, ...], StageScore] | None:
        claim = run.claim.text
        for size in range(min_size, max_size + 1):
            combos = (
                [(c,) for c in sents]
                if size == 1
                else combinations(sents, size, claim, self.windower)
            )
            # a set inside one scored window was already seen together: skip re-scoring it
            combos = [c for c in combos if not _inside_one(c, windows)]
            if not combos:
                continue
            texts = [join_spans(c) for c in combos]
            scores = self._batched(scorer, [(claim, t) for t in texts], run)
            good = [
                i
                for i, s in enumerate(scores)
                if s.error is None
                and not s.detail.startswith("truncated")
                and s.p_entail >= self._model_tau()
            ]
            if good:
                # smallest set first; among equals the shortest text, then the most confident
                i = min(good, key=lambda i: (len(texts[i]), -scores[i].p_entail))
                return tuple(c.span for c in combos[i]), scores[i]
        return None

    def _judge(self, run: _Run) -> None:
        scorer = self.scorers["llm_judge"]
        spans = run.best_spans or (run.windows[0].span,)
        evidence = " ".join(s.text for s in spans)
        (score,) = self._batched(scorer, [(run.claim.text, evidence)], run)
        if score.error is not None:
            raise VerificationError(f"llm_judge: {score.error}")
        run.support, run.contra = (), ()
        if score.p_entail >= self.policy.tau_entail:
            run.support = spans
        elif score.p_contradict >= self.policy.tau_contradict:
            run.contra = spans
        score = score.model_copy(update={"stage": "llm_judge", "decided": True})
        run.stages.append(score)
        run.final = score
        run.decided = True

    # ------------------------------------------------------------------ combiner
    def _model_tau(self) -> float:
        """Threshold on the model's own p_entail (which evidence counts as supporting)."""
        if self.combiner is not None and self.combiner.model_tau is not None:
            return self.combiner.model_tau
        return self.policy.tau_entail

    def _signals(self, run: _Run, doc: bool = False) -> PartSignals:
        """The combiner's inputs of one run; the coverage of all the evidence (a pass over every
        chunk's words) only when ``doc`` asks for it: fitting, or a combiner that reads it."""
        ms = run.model_score
        cov = overlap(run.claim.text, run.windows[0].span.text) if run.windows else 0.0
        doc_cov = overlap(run.claim.text, " ".join(c.text for c in run.chunks)) if doc else 0.0
        return PartSignals(
            p_entail=ms.p_entail if ms is not None else 0.0,
            p_contradict=ms.p_contradict if ms is not None else 0.0,
            coverage=cov,
            conflict=run.conflict,
            missing=run.missing,
            name_missing=run.name_missing,
            matched=run.matched,
            doc_coverage=doc_cov,
        )

    def _combined(self, claim: Claim, whole: _Run, parts: list[_Run]) -> Verdict:
        """One verdict from the whole text's run and its sentences' runs, by the combiner."""
        assert self.combiner is not None  # only called with one
        split = parts[0] is not whole
        runs = [whole, *parts] if split else [whole]
        verdicts = [self._verdict(r) for r in runs]
        part_verdicts = verdicts[1:] if split else verdicts
        tokens = sum(len(c.text.split()) for c in whole.chunks)
        doc = any(f.startswith("ovd_") for f in self.combiner.features)
        feats = feature_vector(
            self._signals(whole, doc), [self._signals(r, doc) for r in parts], tokens
        )
        p = self.combiner.probability(feats)
        errors = tuple(dict.fromkeys(e for r in runs for e in r.errors))
        complete = all(v.complete for v in verdicts) and whole.final is not None
        tau_e = self.policy.tau_entail
        contra = [v for v in verdicts if v.label == "contradicted"]
        pc = max(v.p_contradict for v in verdicts)
        evidence: tuple[EvidenceSpan, ...] = ()
        if not complete:
            # fail closed: a text with any part not fully checked is never supported
            label: Label = "contradicted" if contra else "unsupported"
            if not errors:
                # nothing scored it (no evidence, or only blank evidence): the whole run's
                # verdict says why, and an incomplete verdict always names a reason
                errors = (verdicts[0].reason,)
            reason = "not verified: " + "; ".join(errors)
            if contra:
                evidence = contra[0].evidence
            p = 0.0
        elif contra:
            # evidence that states otherwise outweighs the combiner's overall score
            label, evidence = "contradicted", tuple(e for v in contra for e in v.evidence)
            reason = contra[0].reason
        elif p >= tau_e and not any(r.conflict or r.misplaced or r.missing for r in runs):
            label = "supported"
            spans: list[EvidenceSpan] = []
            for v, r in zip(part_verdicts, parts, strict=True):
                spans += v.evidence or r.support or r.best_spans
            evidence = tuple(dict.fromkeys(spans))
            reason = f"combiner: p(supported) {p:.2f} >= {tau_e:g}"
        elif p >= tau_e:
            label = "unsupported"
            what = (
                "a differing value"
                if any(r.conflict for r in runs)
                else "a different country or state in the evidence"
                if any(r.misplaced for r in runs)
                else "the claim in the evidence only under a doubt, a rumour, a condition or a "
                "question, which does not assert it"
                if any(is_unasserted(c) for r in runs for c in r.checks)
                # fail closed: a number or date no evidence states cannot be entailed as written
                else "a number or date the evidence does not state"
            )
            reason = (
                f"combiner: p(supported) {p:.2f} >= {tau_e:g}, but a typed check found "
                f"{what}: not verified"
            )
        else:
            label = "unsupported"
            reason = f"combiner: p(supported) {p:.2f} < {tau_e:g}"
            if split:
                weakest = min(range(len(parts)), key=lambda i: _model_pe(parts[i]))
                reason += f"; weakest sentence: '{parts[weakest].claim.text[:80]}'"
        pc = min(pc, 1.0 - p)
        detail = ", ".join(
            f"{k} {v:.3f}" for k, v in feats.items() if doc or not k.startswith("ovd_")
        )
        stages = list(whole.stages)
        if split:
            for i, r in enumerate(parts, start=1):
                stages += [
                    st.model_copy(update={"detail": f"sentence {i}/{len(parts)}: {st.detail}"})
                    for st in r.stages
                ]
        stages.append(
            StageScore(
                stage="combiner",
                p_entail=p,
                p_neutral=max(0.0, 1.0 - p - pc),
                p_contradict=pc,
                label=label,
                decided=True,
                detail=f"{len(parts)} sentence(s); {detail}",
            )
        )
        checks = tuple(dict.fromkeys(c for v in verdicts for c in v.checks))
        return Verdict(
            claim_id=claim.id,
            label=label,
            p_entail=p,
            p_neutral=max(0.0, 1.0 - p - pc),
            p_contradict=pc,
            evidence=evidence,
            checks=checks,
            stages=tuple(stages),
            complete=complete,
            errors=errors,
            reason=reason,
        )

    # ------------------------------------------------------------------ verdict
    def _verdict(self, run: _Run) -> Verdict:
        claim = run.claim
        final = run.final
        if final is None or final.error is not None:
            # nothing scored the claim: not verified
            reason = "no evidence given" if not run.chunks else "no stage could score the claim"
            if run.chunks and not run.windows and not run.errors:
                reason = "evidence is empty"
            return Verdict(
                claim_id=claim.id,
                label="unsupported",
                p_entail=0.0,
                p_neutral=1.0,
                p_contradict=0.0,
                checks=tuple(run.checks),
                stages=tuple(run.stages),
                complete=not run.incomplete and not run.errors,
                errors=tuple(run.errors),
                reason=reason,
            )
        pe, pc = final.p_entail, final.p_contradict
        tau_e, tau_c = self.policy.tau_entail, self.policy.tau_contradict
        evidence: tuple[EvidenceSpan, ...] = ()
        overruled = (
            final.stage == "checks"
            and run.contra
            and self.combiner is not None
            and run.model_score is not None
            and run.model_score.p_entail >= self._model_tau()
        )
        if overruled:
            # a typed check found a differing value, but the model reads the evidence as support:
            # that is not evidence that says otherwise. Not verified (the combiner never shows a
            # claim with a conflict as supported), and not called contradicted either.
            assert run.model_score is not None
            label: Label = "unsupported"
            reason = (
                f"checks: {final.detail}; the model reads the evidence as support "
                f"(p_entail {run.model_score.p_entail:.2f}): not verified, not a contradiction"
            )
            pe, pc = run.model_score.p_entail, run.model_score.p_contradict
        elif (
            pc >= tau_c
            and pc >= pe
            and run.contra
            and final.stage in _SMALL_MODELS
            and _states_negation(run.claim.text)
        ):
            # the small models read a contradiction into a sentence that states a negation as
            # often as not where the evidence says the same in other words ("have not destroyed"
            # for "untouched", "won't show" for "opts out of showing"): held out, 10 of the 19
            # such contradictions were of true sentences. An opposite statement ("is not" / "is")
            # is the typed polarity check's to find; the model's alone is not a contradiction.
            label = "unsupported"
            reason = (
                f"{final.stage}: p_contradict {pc:.2f} >= {tau_c:g} against a sentence that "
                "states a negation, with no opposite statement found by the typed checks: not "
                "verified, not a contradiction"
            )
        elif pc >= tau_c and pc >= pe and run.contra:
            label = "contradicted"
            evidence = run.contra
            reason = f"{final.stage}: p_contradict {pc:.2f} >= {tau_c:g}"
        elif pe >= tau_e and pc < tau_c and run.support:
            label = "supported"
            evidence = run.support
            reason = f"{final.stage}: p_entail {pe:.2f} >= {tau_e:g}"
        else:
            label = "unsupported"
            reason = f"{final.stage}: p_entail {pe:.2f} < {tau_e:g}" + (
                "" if pe < tau_e else f" or p_contradict {pc:.2f} >= {tau_c:g}"
            )
        complete = not run.incomplete and not run.errors
        p_neutral = max(0.0, 1.0 - pe - pc) if overruled else final.p_neutral
        if not complete and label != "contradicted":
            # fail closed: a claim is never supported, nor given a supporting probability, on a
            # check that did not fully run (every stage's own score stays in the trace)
            if label == "supported":
                reason = "not verified: " + "; ".join(run.errors)
            label, evidence = "unsupported", ()
            pe, p_neutral = 0.0, 1.0 - pc
        return Verdict(
            claim_id=claim.id,
            label=label,
            p_entail=pe,
            p_neutral=p_neutral,
            p_contradict=pc,
            evidence=evidence,
            checks=tuple(run.checks),
            stages=tuple(run.stages),
            complete=complete,
            errors=tuple(run.errors),
            reason=reason,
        )


def _mean_score(a: StageScore, b: StageScore) -> StageScore:
    """The mean of a sentence's score and its date-moved twin's (an error fails closed)."""
    # only reached once a model stage has scored, so its module is loaded already
    from affidavit.verify.crossencoder import stage_label

    if a.error is not None or b.error is not None:
        return a if a.error is not None else b
    p = [(x + y) / 2 for x, y in zip(_probs(a), _probs(b), strict=True)]
    return a.model_copy(
        update={
            "p_entail": p[0],
            "p_neutral": p[1],
            "p_contradict": p[2],
            "label": stage_label(p),
            # a twin cut to fit (it has a comma more) marks the mean as not checked whole
            "detail": f"{b.detail if b.detail.startswith('truncated') else a.detail}; "
            "mean with the date moved",
        }
    )


def _nothing_to_check(claim: Claim) -> Verdict:
    """The verdict of a claim without a letter or digit: not verified, and said why."""
    why = "the claim states nothing to check"
    return unverified(claim, why, f"not verified: {why} (no letter or digit)")


def _probs(s: StageScore) -> tuple[float, float, float]:
    return (s.p_entail, s.p_neutral, s.p_contradict)


def _withheld(v: Verdict, detail: str) -> Verdict:
    """``v`` made unsupported by a who-did-what finding (recorded as a ``roles`` stage)."""
    stage = StageScore(
        stage="roles",
        p_entail=0.0,
        p_neutral=1.0 - v.p_contradict,
        p_contradict=v.p_contradict,
        label="unsupported",
        decided=True,
        detail=detail,
    )
    return v.model_copy(
        update={
            "label": "unsupported",
            "p_entail": 0.0,
            "p_neutral": 1.0 - v.p_contradict,
            "evidence": (),
            "stages": (*v.stages, stage),
            "reason": f"not verified: {detail} (p(supported) {v.p_entail:.2f} before)",
        }
    )


def _below_tau(v: Verdict, tau_entail: float) -> Verdict:
    """A verdict that is not ``supported`` never carries a p(supported) at or above the
    threshold: a claim withheld for a differing value, a wrong place or a contradiction the
    model or a check found reports p_entail 0 (the stages keep every score that was computed),
    so a consumer that thresholds ``p_entail`` reads the same decision as one that reads
    ``label``."""
    if v.label == "supported" or v.p_entail < tau_entail:
        return v
    return v.model_copy(
        update={
            "p_entail": 0.0,
            "p_neutral": max(0.0, 1.0 - v.p_contradict),
            "reason": f"{v.reason} (p(supported) {v.p_entail:.2f} withheld)",
        }
    )


# the stages whose contradiction of a negated sentence is not trusted on its own (`_verdict`)
_SMALL_MODELS = frozenset({"cross_encoder", "embed_head"})


def _states_negation(text: str) -> bool:
    """`affidavit.verify.checks.states_negation`; False where the checks cannot load, so the
    model's contradiction then stands."""
    try:
        from affidavit.verify.checks import states_negation
    except ImportError:  # pragma: no cover - the checks ship with the package
        return False
    return states_negation(text)


def _model_pe(run: _Run) -> float:
    """The model's p_entail of a run (0 when the model did not score it)."""
    return run.model_score.p_entail if run.model_score is not None else 0.0


def _sentences(claim: Claim) -> list[Claim]:
    """The claim's sentences as claims of their own (offsets into the same answer)."""
    from affidavit.claims.segment import split_sentences

    segs = [g for g in split_sentences(claim.text) if len(g.text.split()) >= 3]
    return [
        Claim(
            id=f"{claim.id}.s{i}",
            text=g.text,
            start=claim.start + g.start,
            end=claim.start + g.end,
            sentence_index=claim.sentence_index,
            sentence=g.text,
            type=claim.type,
            hedged=claim.hedged,
            citations=claim.citations,
            origin="decomposed",
        )
        for i, g in enumerate(segs, start=1)
    ]


# a question that states something as known: "Did you know (that) she died in Paris?"
_TELLING_QUESTION = re.compile(
    r"^\W*(?:(?:but|and|so|also|oh|well)\W+)*(?:did|do|have|had|were|are)\s+you\s+"
    r"(?:\w+\s+)?(?:know|knew|heard?\s+(?:that|about|how)|aware|realize|realise)\b",
    re.IGNORECASE,
)

# a pointer to other content that asserts nothing: "CLICK HERE for all the latest Liverpool
# news.", "Scroll down for video.", "See our combined XI here." (web pages and the summaries
# written from them carry these; a right HaluEval summary was withheld on one)
_NAVIGATION = re.compile(
    r"^\W*(?:(?:click|tap|press)\s+here\b|scroll\s+down\b|"
    r"(?:read|see|watch|view|find)\s+(?:more|all|the\s+latest|our|the\s+full)\b[^.!?]{0,80}"
    r"\b(?:here|below|above)\W*$)",
    re.IGNORECASE,
)


def _points_elsewhere(text: str) -> bool:
    """A sentence that only points to other content ("Click here for the latest news.").

    Examples:
        >>> _points_elsewhere("CLICK HERE for all the latest Liverpool news.")
        True
        >>> _points_elsewhere("See our Manchester United vs Manchester City combined XI here.")
        True
        >>> _points_elsewhere("Liverpool beat Newcastle 2-0, see the report for details.")
        False
    """
    return _NAVIGATION.match(text.strip()) is not None


def _asks_only(text: str) -> bool:
    """A question that asserts nothing: it names nothing checkable (no name, title, number or
    date: "Have you seen her ranking?") and does not tell something as known ("Did you know he
    was a sailor?"). A question that names something may presuppose it ("Have you seen her in
    Liar Liar?" says she is in it) and is checked like any sentence.

    Examples:
        >>> _asks_only("Have you seen her ranking?"), _asks_only("Do you like that music?")
        (True, True)
        >>> _asks_only("Have you seen her in the movie Liar Liar?")
        False
        >>> _asks_only("Did you know he was a sailor?"), _asks_only("He was a sailor.")
        (False, False)
    """
    from affidavit.claims.rules import has_content, skip_reason

    if skip_reason(text) != "question":
        return False
    return _TELLING_QUESTION.match(text.strip()) is None and not has_content(text)


def _absence(r: CheckResult) -> bool:
    """A failed check that found nothing to compare in the evidence (vs. a conflicting value)."""
    if r.check == "entity" and r.status == "fail" and r.evidence_value is not None:
        return True  # a wrong place (checks.check_entities): unsupported, not contradicted
    if is_unasserted(r):
        return True  # stated only as a doubt, a rumour, a condition: unsupported
    return r.absent and r.check in ABSENCE_CHECKS


def _inside_one(combo: Sequence[Candidate], windows: Sequence[Candidate]) -> bool:
    for w in windows:
        if all(
            c.span.chunk_id == w.span.chunk_id
            and w.span.start <= c.span.start
            and c.span.end <= w.span.end
            for c in combo
        ):
            return True
    return False


def claim_from_text(text: str, claim_id: str = "c1") -> Claim:
    """A Claim for a bare claim text (batch CLI, eval)."""
    return Claim(id=claim_id, text=text, start=0, end=len(text), sentence=text)


def chunks_from_texts(texts: Sequence[str], prefix: str = "e") -> list[Chunk]:
    """Chunks for bare evidence texts, ids ``e1, e2...`` in order."""
    return [Chunk(text=t, id=f"{prefix}{i + 1}") for i, t in enumerate(texts)]


__all__ = ["ClaimCascade", "chunks_from_texts", "claim_from_text", "make_span"]
