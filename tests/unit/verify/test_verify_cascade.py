"""The cascade: stage order, decisions, minimal evidence, fail-closed paths."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from affidavit.core.settings import PolicySettings, VerifySettings
from affidavit.core.types import CheckResult, Chunk, StageScore
from affidavit.verify.base import ClaimVerifier
from affidavit.verify.cascade import ClaimCascade, claim_from_text
from affidavit.verify.fakes import ScriptedScorer, build_tiny_model

POLICY = PolicySettings(tau_entail=0.5, tau_contradict=0.5)
PASS: list[CheckResult] = [CheckResult(check="number", status="pass")]


def passing_checks(claim: str, evidence: str) -> list[CheckResult]:
    return list(PASS)


def cascade(stages: list[str], scorers: dict, **kw: object) -> ClaimCascade:
    settings = VerifySettings(cascade=stages, threads=1, **kw)  # type: ignore[arg-type]
    return ClaimCascade(settings, POLICY, scorers=scorers, check_fn=passing_checks)


def entail_if(needles: Sequence[str], p: float = 0.95):  # type: ignore[no-untyped-def]
    """Entails only when every needle is in the evidence."""

    def fn(claim: str, evidence: str) -> tuple[float, float, float]:
        if all(n in evidence for n in needles):
            return (p, 1 - p - 0.01, 0.01)
        return (0.05, 0.9, 0.05)

    return fn


CHUNKS = [
    Chunk(text="Cooking pasta takes ten minutes in boiling water.", id="k1"),
    Chunk(
        text="Marie Curie was a physicist. She won the Nobel Prize in Physics in 1903. "
        "She was born in Warsaw.",
        id="k2",
    ),
]


def test_supported_with_minimal_single_sentence_evidence() -> None:
    ce = ScriptedScorer(fn=entail_if(["Nobel", "1903"]))
    v = cascade(["checks", "cross_encoder"], {"cross_encoder": ce})
    assert isinstance(v, ClaimVerifier)
    verdict = v.verify(claim_from_text("Curie won the Nobel Prize in 1903."), CHUNKS)
    assert verdict.label == "supported" and verdict.complete
    (span,) = verdict.evidence
    assert span.text == "She won the Nobel Prize in Physics in 1903."
    assert span.chunk_id == "k2" and CHUNKS[1].text[span.start : span.end] == span.text
    assert [s.stage for s in verdict.stages] == ["checks", "cross_encoder"]
    assert verdict.stages[-1].decided


def test_minimal_evidence_is_shown_but_never_raises_the_claims_score() -> None:
    # a model that is more sure on a sentence cut out of its context than on the whole window
    def fn(claim: str, evidence: str) -> tuple[float, float, float]:
        if "Nobel" not in evidence:
            return (0.05, 0.9, 0.05)
        return (0.97, 0.02, 0.01) if len(evidence) < 60 else (0.6, 0.3, 0.1)

    v = cascade(["checks", "cross_encoder"], {"cross_encoder": ScriptedScorer(fn=fn)})
    verdict = v.verify(claim_from_text("Curie won the Nobel Prize in 1903."), CHUNKS)
    assert verdict.label == "supported"
    (span,) = verdict.evidence
    assert span.text == "She won the Nobel Prize in Physics in 1903."
    assert verdict.p_entail == pytest.approx(0.6)  # the window's score, not the scrap's 0.97
    assert "minimal evidence: 1 sentence(s), p_entail 0.97" in verdict.stages[-1].detail


def test_failed_typed_check_decides_contradiction_before_the_model() -> None:
    def failing(claim: str, evidence: str) -> list[CheckResult]:
        return [
            CheckResult(check="date", status="fail", reason="1904 vs 1903", evidence_value="1903")
        ]

    ce = ScriptedScorer(default=(0.99, 0.005, 0.005))
    settings = VerifySettings(cascade=["checks", "cross_encoder"])
    v = ClaimCascade(settings, POLICY, scorers={"cross_encoder": ce}, check_fn=failing)
    verdict = v.verify(claim_from_text("Curie won the Nobel Prize in 1904."), CHUNKS)
    assert verdict.label == "contradicted"
    assert ce.calls == []  # decided: the model never ran
    assert verdict.checks[0].status == "fail"
    assert "1903" in verdict.evidence[0].text


def test_certain_model_skips_the_judge_and_uncertain_band_runs_it() -> None:
    judge = ScriptedScorer(default=(0.9, 0.05, 0.05), name="llm_judge")
    sure = ScriptedScorer(default=(0.97, 0.02, 0.01))
    v = cascade(["cross_encoder", "llm_judge"], {"cross_encoder": sure, "llm_judge": judge})
    v.verify(claim_from_text("Curie won the Nobel Prize."), CHUNKS)
    assert judge.calls == []
    unsure = ScriptedScorer(default=(0.6, 0.3, 0.1))
    v = cascade(["cross_encoder", "llm_judge"], {"cross_encoder": unsure, "llm_judge": judge})
    verdict = v.verify(claim_from_text("Curie won the Nobel Prize."), CHUNKS)
    assert len(judge.calls) == 1
    assert [s.stage for s in verdict.stages] == ["cross_encoder", "llm_judge"]
    assert verdict.label == "supported" and verdict.p_entail == pytest.approx(0.9)


def test_missing_model_leaves_claims_unverified(tmp_path: Path) -> None:
    settings = VerifySettings(cascade=["cross_encoder"], model_path=tmp_path / "absent")
    v = ClaimCascade(settings, POLICY, check_fn=passing_checks)
    verdict = v.verify(claim_from_text("Curie won the Nobel Prize in 1903."), CHUNKS)
    assert verdict.label == "unsupported"
    assert not verdict.complete
    assert any("unavailable" in e for e in verdict.errors)


def test_stage_exception_fails_closed_even_after_supportive_checks() -> None:
    ce = ScriptedScorer(fail_on="Nobel")
    v = cascade(["checks", "cross_encoder"], {"cross_encoder": ce})
    verdict = v.verify(
        claim_from_text("Marie Curie won the Nobel Prize in Physics in 1903."), CHUNKS
    )
    assert verdict.stages[0].p_entail >= 0.5  # lexical coverage alone would have said yes
    assert verdict.label == "unsupported" and not verdict.complete
    assert "RuntimeError" in verdict.errors[0]
    assert verdict.evidence == ()
    assert verdict.p_entail == 0.0  # no supporting probability on an incomplete check


def test_timeout_fails_closed() -> None:
    def slow(claim: str, evidence: str) -> tuple[float, float, float]:
        time.sleep(0.05)
        return (0.99, 0.005, 0.005)

    v = cascade(
        ["cross_encoder"], {"cross_encoder": ScriptedScorer(fn=slow)}, timeout_s=0.01, batch_size=1
    )
    verdict = v.verify(claim_from_text("Curie won the Nobel Prize."), CHUNKS)
    assert verdict.label == "unsupported" and not verdict.complete
    assert "timeout" in verdict.errors[0]


def warsaw_contradicts(claim: str, evidence: str) -> tuple[float, float, float]:
    """A model that reads every claim as contradicted by the Warsaw chunk."""
    return (0.02, 0.08, 0.9) if "Warsaw" in evidence else (0.05, 0.9, 0.05)


def test_contradicting_window_with_high_confidence() -> None:
    v = cascade(["cross_encoder"], {"cross_encoder": ScriptedScorer(fn=warsaw_contradicts)})
    verdict = v.verify(claim_from_text("Curie was born in Paris."), CHUNKS)
    assert verdict.label == "contradicted"
    assert "Warsaw" in verdict.evidence[0].text


def test_the_models_contradiction_of_a_negated_sentence_is_not_a_contradiction() -> None:
    # HaluEval summaries, true sentences shown contradicted: the model reads "not" as the
    # opposite where the evidence says the same in other words ("untouched" / "not destroyed")
    v = cascade(["cross_encoder"], {"cross_encoder": ScriptedScorer(fn=warsaw_contradicts)})
    verdict = v.verify(claim_from_text("Curie was not born in Paris."), CHUNKS)
    assert verdict.label == "unsupported"
    assert "states a negation" in verdict.reason and "not a contradiction" in verdict.reason
    # the same contradiction of a sentence without a negation stands
    verdict = v.verify(claim_from_text("Curie was born in Paris."), CHUNKS)
    assert verdict.label == "contradicted"
    # so does one that only looks negated ("not only")
    verdict = v.verify(claim_from_text("Curie was born not only in Paris."), CHUNKS)
    assert verdict.label == "contradicted"


def test_two_chunks_together_entail_when_neither_does_alone() -> None:
    chunks = [
        Chunk(text="Alice moved to Rome in 1990. The weather was mild.", id="a"),
        Chunk(text="Rome is the capital of Italy. It is old.", id="b"),
    ]
    ce = ScriptedScorer(fn=entail_if(["Alice moved", "capital of Italy"]))
    v = cascade(["cross_encoder"], {"cross_encoder": ce})
    verdict = v.verify(claim_from_text("Alice moved to the capital of Italy."), chunks)
    assert verdict.label == "supported"
    assert [s.chunk_id for s in verdict.evidence] == ["a", "b"]
    assert [s.text for s in verdict.evidence] == [
        "Alice moved to Rome in 1990.",
        "Rome is the capital of Italy.",
    ]


def test_thresholds_come_from_the_policy() -> None:
    ce = ScriptedScorer(default=(0.7, 0.25, 0.05))
    claim = claim_from_text("Curie won the Nobel Prize.")
    lax = ClaimCascade(
        VerifySettings(cascade=["cross_encoder"]),
        PolicySettings(tau_entail=0.6),
        scorers={"cross_encoder": ce},
    )
    strict = ClaimCascade(
        VerifySettings(cascade=["cross_encoder"]),
        PolicySettings(tau_entail=0.8),
        scorers={"cross_encoder": ce},
    )
    assert lax.verify(claim, CHUNKS).label == "supported"
    assert strict.verify(claim, CHUNKS).label == "unsupported"


def test_no_evidence_is_unsupported() -> None:
    v = cascade(["cross_encoder"], {"cross_encoder": ScriptedScorer(default=(1.0, 0.0, 0.0))})
    verdict = v.verify(claim_from_text("Anything."), [])
    assert verdict.label == "unsupported" and verdict.evidence == ()


@pytest.mark.parametrize("text", ["   ", "\t\n ", "...", "\u200b", "\x00\x07"])
@pytest.mark.parametrize("combined", [False, True])
def test_a_claim_with_nothing_to_check_is_never_supported(text: str, combined: bool) -> None:
    from affidavit.verify.combiner import Combiner

    # a blank claim was supported (p 0.69 against the evidence "y" with the packaged model)
    sure = ScriptedScorer(default=(0.99, 0.005, 0.005))
    combiner = Combiner(
        features=["pe_whole"], mean=[0.5], scale=[0.1], coef=[3.0], intercept=0.0, tau=0.5
    )
    settings = VerifySettings(cascade=["checks", "cross_encoder"], threads=1)
    v = ClaimCascade(
        settings,
        POLICY,
        scorers={"cross_encoder": sure},
        check_fn=passing_checks,
        combiner=combiner if combined else None,
    )
    verdict = v.verify(claim_from_text(text), [Chunk(text="y"), *CHUNKS])
    assert verdict.label == "unsupported" and verdict.p_entail == 0.0
    assert not verdict.complete and verdict.errors == ("the claim states nothing to check",)


def test_window_not_seen_whole_is_marked_and_not_supported() -> None:
    class Truncating(ScriptedScorer):
        def score(self, pairs: Sequence[tuple[str, str]]) -> list[StageScore]:
            return [
                s.model_copy(update={"detail": "truncated: 5 evidence tokens not seen"})
                for s in super().score(pairs)
            ]

    v = cascade(["cross_encoder"], {"cross_encoder": Truncating(default=(0.99, 0.005, 0.005))})
    verdict = v.verify(claim_from_text("Curie won the Nobel Prize."), CHUNKS)
    assert not verdict.complete and verdict.label == "unsupported"
    assert any("not checked whole" in e for e in verdict.errors)


def test_long_chunk_is_windowed_and_any_window_entails(tmp_path: Path) -> None:
    # real tokenizer from the tiny ONNX model; a fact deep inside a long chunk is still found
    from affidavit.verify.crossencoder import OnnxCrossEncoder

    model = OnnxCrossEncoder(build_tiny_model(tmp_path / "m", max_len=64), threads=1)
    filler = " ".join(f"The river {i} is in England." for i in range(30))
    chunk = Chunk(text=f"{filler} Paris is the capital of France. {filler}", id="long")
    ce = ScriptedScorer(fn=entail_if(["capital of France"]))
    v = ClaimCascade(
        VerifySettings(cascade=["cross_encoder"], window_stride=16),
        POLICY,
        scorers={"cross_encoder": ce},
        tokenizer=model.tokenizer,
    )
    verdict = v.verify(claim_from_text("Paris is the capital of France."), [chunk])
    assert v.windower.max_len == 256
    assert verdict.label == "supported" and verdict.complete
    assert verdict.evidence[0].text == "Paris is the capital of France."
    assert all(len(model.tokenizer.offsets(e)) <= 256 for _, e in ce.calls)
    assert "windows scored" in verdict.stages[0].detail


def test_real_onnx_model_in_the_cascade(tmp_path: Path) -> None:
    d = build_tiny_model(tmp_path / "m", max_len=64)
    v = ClaimCascade(VerifySettings(cascade=["cross_encoder"], model_path=d, threads=1), POLICY)
    verdict = v.verify(claim_from_text("Paris is the capital of France."), CHUNKS)
    assert v.windower.max_len == 64  # the model's own length wins over settings.max_len
    assert verdict.stages[0].stage == "cross_encoder" and verdict.stages[0].error is None
    assert verdict.complete


def test_no_recombination_when_one_window_held_all_the_evidence() -> None:
    ce = ScriptedScorer(default=(0.3, 0.6, 0.1))
    v = cascade(["cross_encoder"], {"cross_encoder": ce})
    chunk = Chunk(text="Alice moved to Rome. Rome is in Italy. It is old.", id="one")
    verdict = v.verify(claim_from_text("Alice moved to Italy."), [chunk])
    assert verdict.label == "unsupported"
    assert len(ce.calls) == 1  # the single window; its sentences were already seen together


def test_value_missing_from_the_evidence_decides_unsupported_not_contradicted() -> None:
    def missing(claim: str, evidence: str) -> list[CheckResult]:
        return [
            CheckResult(
                check="number",
                status="fail",
                claim_value="9",
                reason="the number 9 does not appear in the evidence",
            )
        ]

    ce = ScriptedScorer(default=(0.99, 0.005, 0.005))
    v = ClaimCascade(
        VerifySettings(cascade=["checks", "cross_encoder"]),
        POLICY,
        scorers={"cross_encoder": ce},
        check_fn=missing,
    )
    verdict = v.verify(claim_from_text("Curie won 9 prizes."), CHUNKS)
    assert verdict.label == "unsupported" and ce.calls == []
    assert verdict.stages[0].decided and "missing" in verdict.stages[0].detail


def test_a_check_failing_on_the_best_window_only_is_not_decisive() -> None:
    # the year is wrong in the best window but stated in another selected window
    def year_check(claim: str, evidence: str) -> list[CheckResult]:
        ok = "1903" in evidence
        return [
            CheckResult(
                check="date", status="pass" if ok else "fail", evidence_value=None if ok else "1904"
            )
        ]

    chunks = [
        Chunk(text="Curie won the Nobel Prize in Physics, as reported in 1904.", id="a"),
        Chunk(text="The award was given in 1903.", id="b"),
    ]
    ce = ScriptedScorer(default=(0.95, 0.04, 0.01))
    v = ClaimCascade(
        VerifySettings(cascade=["checks", "cross_encoder"]),
        POLICY,
        scorers={"cross_encoder": ce},
        check_fn=year_check,
    )
    verdict = v.verify(claim_from_text("Curie won the Nobel Prize in Physics in 1903."), chunks)
    assert verdict.label == "supported"
    assert ce.calls


def test_a_missing_name_is_left_to_the_model() -> None:
    def no_name(claim: str, evidence: str) -> list[CheckResult]:
        return [CheckResult(check="entity", status="fail", claim_value="Sklodowska")]

    ce = ScriptedScorer(default=(0.95, 0.04, 0.01))
    v = ClaimCascade(
        VerifySettings(cascade=["checks", "cross_encoder"]),
        POLICY,
        scorers={"cross_encoder": ce},
        check_fn=no_name,
    )
    # a passage that names no one else (against CHUNKS, "She" stands for Marie Curie: the claim
    # is then withheld as said of someone else, as when the passage names her before the verb;
    # tests/unit/verify/test_pronoun_roles.py)
    chunks = [Chunk(text="She won the Nobel Prize in Physics in 1903.", id="k3")]
    verdict = v.verify(claim_from_text("Sklodowska won the Nobel Prize."), chunks)
    assert ce.calls and verdict.label == "supported"
    assert verdict.checks[0].status == "fail"  # still recorded for the trace


def date_position_biased(claim: str, evidence: str) -> tuple[float, float, float]:
    """A model that reads a trailing date as a contradiction and a fronted one as support."""
    if claim.startswith("In 1903,"):
        return (0.9, 0.05, 0.05)
    return (0.2, 0.1, 0.7)


def test_date_order_average_scores_both_orders_and_averages() -> None:
    assert not VerifySettings().date_order_average  # off by default (see its description)
    ce = ScriptedScorer(fn=date_position_biased)
    plain = cascade(
        ["cross_encoder"], {"cross_encoder": ce}, combiner=False, date_order_average=False
    )
    avg = cascade(["cross_encoder"], {"cross_encoder": ce}, combiner=False, date_order_average=True)
    trailing = claim_from_text("Curie won the Nobel Prize in 1903.")
    fronted = claim_from_text("In 1903, Curie won the Nobel Prize.")
    assert plain.verify(trailing, CHUNKS).p_entail != plain.verify(fronted, CHUNKS).p_entail
    a, b = avg.verify(trailing, CHUNKS), avg.verify(fronted, CHUNKS)
    # the same two scores averaged, whichever order the claim came in
    assert a.p_entail == pytest.approx(b.p_entail) == pytest.approx(0.55)
    assert a.p_contradict == pytest.approx(0.375)
    assert "mean with the date moved" in a.stages[-1].detail
    assert any(c == "In 1903, Curie won the Nobel Prize." for c, _ in ce.calls)


def test_date_order_average_leaves_other_sentences_alone() -> None:
    ce = ScriptedScorer(fn=entail_if(["Nobel", "1903"]))
    avg = cascade(["cross_encoder"], {"cross_encoder": ce}, combiner=False, date_order_average=True)
    verdict = avg.verify(claim_from_text("Curie won the Nobel Prize."), CHUNKS)
    assert all(c == "Curie won the Nobel Prize." for c, _ in ce.calls)
    assert "date moved" not in verdict.stages[-1].detail


def test_date_order_average_fails_closed_when_the_twin_fails() -> None:
    ce = ScriptedScorer(fn=date_position_biased, fail_on="In 1903,")
    avg = cascade(["cross_encoder"], {"cross_encoder": ce}, combiner=False, date_order_average=True)
    verdict = avg.verify(claim_from_text("Curie won the Nobel Prize in 1903."), CHUNKS)
    assert verdict.label != "supported"


def test_a_check_the_rest_of_the_evidence_resolves_is_recorded_as_the_whole_says() -> None:
    """A check that fails on the best window but not on all the evidence given is recorded as
    it reads on all of it: the display policy, which reads the recorded checks, once blocked a
    supported answer for a place only the other passage names (the ask benchmark's 'Curmsun
    Disc': 'Norway' missing from the best window, 'Danish' there)."""
    from affidavit.policy.render import decide
    from affidavit.verify.combiner import Combiner

    def places(claim: str, evidence: str) -> list[CheckResult]:
        if "Denmark" in evidence and "Norway" in evidence:
            return [CheckResult(check="entity", status="pass", reason="every name is there")]
        return [
            CheckResult(
                check="entity",
                status="fail",
                reason="the claim names Norway; the evidence names Denmark instead",
                claim_value="Norway",
                evidence_value="Denmark",
            )
        ]

    casc = ClaimCascade(
        VerifySettings(cascade=["checks", "cross_encoder"], threads=1),
        PolicySettings(tau_entail=0.5, tau_contradict=0.5),
        scorers={"cross_encoder": ScriptedScorer(default=(0.9, 0.08, 0.02))},
        check_fn=places,
        combiner=Combiner(
            features=["pe_whole"], mean=[0.5], scale=[0.1], coef=[3.0], intercept=0.0, tau=0.5
        ),
    )
    chunks = [
        Chunk(text="The inscription names Harald, a king of Denmark.", id="a"),
        Chunk(text="Harald also ruled Norway.", id="b"),
    ]
    v = casc.verify(claim_from_text("The disc names a king of Denmark and Norway."), chunks)
    assert v.label == "supported"
    assert [c.status for c in v.checks if c.check == "entity"] == ["pass"]
    assert decide(v, PolicySettings(tau_entail=0.5, tau_contradict=0.5))[0] == "verified"
