"""The fitted combiner and the cascade's sentence-by-sentence judgement of longer texts."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from affidavit.core.errors import ModelError, VerificationError
from affidavit.core.settings import PolicySettings, VerifySettings
from affidavit.core.types import CheckResult, Chunk
from affidavit.verify.cascade import ClaimCascade, claim_from_text
from affidavit.verify.combiner import (
    FEATURES,
    Combiner,
    PartSignals,
    feature_vector,
    load_combiner,
)
from affidavit.verify.fakes import ScriptedScorer

POLICY = PolicySettings(tau_entail=0.5, tau_contradict=0.5)
# decides on the weakest sentence: p > 0.5 exactly when pe_min > 0.5
WEAKEST = Combiner(features=["pe_min"], mean=[0.5], scale=[0.1], coef=[3.0], intercept=0.0, tau=0.5)
DOC = [
    Chunk(
        id="d1",
        text="Marie Curie was born in Warsaw in 1867. She discovered polonium in 1898. "
        "She won the Nobel Prize in Physics in 1903.",
    )
]


def five_not_seven(claim: str, evidence: str) -> list[CheckResult]:
    """Checks that find 5 in the claim where the evidence says 7."""
    return [
        CheckResult(
            check="number",
            status="fail",
            claim_value="5",
            evidence_value="7",
            reason="5 disagrees with 7",
        )
    ]


def passing(claim: str, evidence: str) -> list[CheckResult]:
    return [CheckResult(check="number", status="pass")]


def by_fact(claim: str, evidence: str) -> tuple[float, float, float]:
    """Entails a sentence only if its key fact is in the evidence; the whole text is lenient."""
    if "Paris" in claim and "polonium" not in claim:
        return (0.05, 0.9, 0.05)
    return (0.9, 0.08, 0.02)


def cascade(scorer: ScriptedScorer, combiner: Combiner | None = WEAKEST, **kw: object):  # type: ignore[no-untyped-def]
    settings = VerifySettings(cascade=["checks", "cross_encoder"], threads=1, **kw)  # type: ignore[arg-type]
    return ClaimCascade(
        settings, POLICY, scorers={"cross_encoder": scorer}, check_fn=passing, combiner=combiner
    )


def test_probability_is_the_standardised_logistic() -> None:
    c = Combiner(
        features=["pe_whole", "cov_whole"],
        mean=[0.5, 0.5],
        scale=[0.5, 0.25],
        coef=[2.0, -1.0],
        intercept=0.25,
        tau=0.5,
    )
    z = 0.25 + 2.0 * (0.9 - 0.5) / 0.5 - 1.0 * (0.4 - 0.5) / 0.25
    p = c.probability({"pe_whole": 0.9, "cov_whole": 0.4})
    assert p == pytest.approx(1 / (1 + 2.718281828459045 ** (-z)))


@pytest.mark.parametrize(
    "kw",
    [
        {"features": ["nope"], "mean": [0], "scale": [1], "coef": [1]},
        {"features": ["pe_min"], "mean": [0, 1], "scale": [1], "coef": [1]},
        {"features": ["pe_min"], "mean": [0], "scale": [0], "coef": [1]},
        # a NaN passed every bound and made p(supported) NaN (then the verdict raised: exit 3)
        {"features": ["pe_min"], "mean": [float("nan")], "scale": [1], "coef": [1]},
        {"features": ["pe_min"], "mean": [0], "scale": [float("nan")], "coef": [1]},
        {"features": ["pe_min"], "mean": [0], "scale": [1], "coef": [float("inf")]},
        {"features": ["pe_min"], "mean": [0], "scale": [1], "coef": [1], "intercept": float("nan")},
        {"features": ["pe_min"], "mean": [0], "scale": [1], "coef": [1], "model_tau": float("nan")},
    ],
)
def test_malformed_combiners_are_refused(kw: dict) -> None:
    with pytest.raises(ModelError):
        Combiner(**{"intercept": 0.0, "tau": 0.5, **kw})


def test_load_checks_the_pinned_sha256(tmp_path: Path) -> None:
    path = tmp_path / "combiner.json"
    path.write_text(
        json.dumps(
            {
                "features": ["pe_min"],
                "mean": [0.5],
                "scale": [0.1],
                "coef": [3.0],
                "intercept": 0.0,
                "tau": 0.5,
            }
        )
    )
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert load_combiner(path, digest).sha256 == digest
    path.write_text(path.read_text().replace("3.0", "30.0"))
    with pytest.raises(ModelError, match="sha256 mismatch"):
        load_combiner(path, digest)
    path.write_text("{}")
    with pytest.raises(ModelError, match="malformed"):
        load_combiner(path)


def test_feature_vector_of_one_sentence_is_consistent() -> None:
    s = PartSignals(0.8, 0.1, 0.6, False, True, False)
    f = feature_vector(s, [s], evidence_tokens=99)
    assert set(f) == set(FEATURES)
    assert f["pe_min"] == f["pe_mean"] == f["pe_whole"] == 0.8
    assert f["missing_frac"] == 1.0 and f["log_sentences"] == 0.0


def test_a_summary_with_one_unsupported_sentence_is_not_supported() -> None:
    scorer = ScriptedScorer(fn=by_fact)
    text = "Marie Curie discovered polonium in 1898. She later moved to Paris with her family."
    v = cascade(scorer).verify(claim_from_text(text), DOC)
    assert v.label == "unsupported"
    assert "weakest sentence" in v.reason and "Paris" in v.reason
    # each sentence was checked on its own, and the whole text too
    claims = {c for c, _ in scorer.calls}
    assert text in claims and "Marie Curie discovered polonium in 1898." in claims
    assert v.stages[-1].stage == "combiner"


def _no_answer_to_questions(claim: str, evidence: str) -> tuple[float, float, float]:
    """The evidence answers no question (the model scored a question such as "Have you seen
    her ranking?" p_entail 0.2 and sank a right HaluEval dialogue answer with it)."""
    if claim.rstrip().endswith("?") and "polonium" not in claim:
        return (0.05, 0.9, 0.05)
    return (0.9, 0.08, 0.02)


def test_a_question_that_asserts_nothing_is_not_a_sentence_to_check() -> None:
    scorer = ScriptedScorer(fn=_no_answer_to_questions)
    text = "Marie Curie discovered polonium in 1898. Have you read her biography?"
    v = cascade(scorer).verify(claim_from_text(text), DOC)
    assert v.label == "supported", v.reason
    claims = {c for c, _ in scorer.calls}
    assert "Have you read her biography?" not in claims and text in claims


def test_a_question_that_tells_something_is_still_checked() -> None:
    scorer = ScriptedScorer(fn=_no_answer_to_questions)
    for question in ("Did you know she was born in Paris?", "Did you know she was a sailor?"):
        text = f"Marie Curie discovered polonium in 1898. {question}"
        v = cascade(scorer).verify(claim_from_text(text), DOC)
        assert v.label != "supported"
        assert question in {c for c, _ in scorer.calls}


def test_a_question_that_names_something_is_still_checked() -> None:
    """It may presuppose what it names: "Have you seen her in the movie Liar Liar?" (a
    hallucinated HaluEval dialogue answer) says she is in it."""
    scorer = ScriptedScorer(fn=_no_answer_to_questions)
    text = "Marie Curie discovered polonium in 1898. Have you read her book on Radium?"
    v = cascade(scorer).verify(claim_from_text(text), DOC)
    assert v.label != "supported"


def test_a_text_of_questions_only_is_still_judged() -> None:
    scorer = ScriptedScorer(fn=_no_answer_to_questions)
    text = "Have you read her biography? Do you know where she was born?"
    v = cascade(scorer).verify(claim_from_text(text), DOC)
    assert v.label != "supported"


def _no_answer_to_pointers(claim: str, evidence: str) -> tuple[float, float, float]:
    """The evidence says nothing about "CLICK HERE for ..." (a right HaluEval summary was
    withheld on its closing "CLICK HERE for all the latest Liverpool news.")."""
    if "here" in claim.lower() and "polonium" not in claim:
        return (0.05, 0.9, 0.05)
    return (0.9, 0.08, 0.02)


@pytest.mark.parametrize(
    "pointer",
    ["CLICK HERE for all the latest Curie news.", "See our full timeline of her work here."],
)
def test_a_pointer_to_other_content_is_not_a_sentence_to_check(pointer: str) -> None:
    scorer = ScriptedScorer(fn=_no_answer_to_pointers)
    text = f"Marie Curie discovered polonium in 1898. {pointer}"
    v = cascade(scorer).verify(claim_from_text(text), DOC)
    assert v.label == "supported", v.reason
    assert pointer not in {c for c, _ in scorer.calls}


def test_a_sentence_that_says_something_here_is_still_checked() -> None:
    scorer = ScriptedScorer(fn=_no_answer_to_pointers)
    text = "Marie Curie discovered polonium in 1898. She was born here in Warsaw."
    v = cascade(scorer).verify(claim_from_text(text), DOC)
    assert v.label != "supported"


def test_without_a_combiner_the_text_is_judged_whole_as_before() -> None:
    text = "Marie Curie discovered polonium in 1898. She later moved to Paris with her family."
    v = cascade(ScriptedScorer(fn=by_fact), combiner=None).verify(claim_from_text(text), DOC)
    assert v.label == "supported"  # the lenient whole-text score: why the combiner exists


def test_a_supported_summary_shows_evidence_for_every_sentence() -> None:
    text = "Marie Curie discovered polonium in 1898. She won the Nobel Prize in Physics in 1903."
    v = cascade(ScriptedScorer(fn=by_fact)).verify(claim_from_text(text), DOC)
    assert v.label == "supported" and v.complete
    assert v.evidence and all(e.chunk_id == "d1" for e in v.evidence)


def test_any_part_not_checked_fails_closed() -> None:
    scorer = ScriptedScorer(fn=by_fact, fail_on="Nobel")
    text = "Marie Curie discovered polonium in 1898. She won the Nobel Prize in Physics in 1903."
    v = cascade(scorer).verify(claim_from_text(text), DOC)
    assert v.label == "unsupported" and not v.complete and v.p_entail == 0.0


def test_a_contradicting_sentence_makes_the_text_contradicted() -> None:
    def fn(claim: str, evidence: str) -> tuple[float, float, float]:
        if "1920" in claim and "polonium" not in claim:
            return (0.02, 0.03, 0.95)
        return (0.9, 0.08, 0.02)

    text = "Marie Curie discovered polonium in 1898. She won the Nobel Prize in Physics in 1920."
    v = cascade(ScriptedScorer(fn=fn)).verify(claim_from_text(text), DOC)
    assert v.label == "contradicted" and v.evidence


def test_model_is_scored_for_the_combiner_even_when_checks_decide() -> None:
    scorer = ScriptedScorer(default=(0.1, 0.1, 0.8))
    settings = VerifySettings(cascade=["checks", "cross_encoder"], threads=1)
    casc = ClaimCascade(
        settings,
        POLICY,
        scorers={"cross_encoder": scorer},
        check_fn=five_not_seven,
        combiner=WEAKEST,
    )
    f = casc.features(
        claim_from_text("The box holds 5 apples."), [Chunk(text="The box holds 7 apples.")]
    )
    assert f is not None and f["conflict_any"] == 1.0 and f["pc_whole"] == pytest.approx(0.8)
    assert scorer.calls  # the model ran after the checks had decided


def test_matched_frac_counts_values_found_in_the_evidence_only() -> None:
    def date_pass(claim: str, evidence: str) -> list[CheckResult]:
        return [
            CheckResult(check="date", status="pass", claim_value="2001"),
            CheckResult(check="entity", status="pass", claim_value="Hinder"),
        ]

    def name_absent(claim: str, evidence: str) -> list[CheckResult]:
        # the date is there but the evidence never names the subject: not a match
        return [
            CheckResult(check="date", status="pass", claim_value="2001"),
            CheckResult(check="entity", status="fail", claim_value="Hinder"),
        ]

    def no_values(claim: str, evidence: str) -> list[CheckResult]:
        return [CheckResult(check="entity", status="pass", claim_value="Hinder")]

    settings = VerifySettings(cascade=["checks", "cross_encoder"], threads=1)
    claim = claim_from_text("Hinder was formed in 2001.")
    ev = [Chunk(text="Hinder is a rock band that was formed in 2001.")]
    got = {}
    for name, fn in (
        ("pass", date_pass),
        ("absent", name_absent),
        ("none", no_values),
        ("fail", five_not_seven),
    ):
        casc = ClaimCascade(
            settings,
            POLICY,
            scorers={"cross_encoder": ScriptedScorer(default=(0.3, 0.1, 0.6))},
            check_fn=fn,
            combiner=WEAKEST,
        )
        f = casc.features(claim, ev)
        assert f is not None
        got[name] = f["matched_frac"]
    assert got == {"pass": 1.0, "absent": 0.0, "none": 0.0, "fail": 0.0}
    s = PartSignals(0.3, 0.6, 0.9, False, False, False, matched=True)
    t = PartSignals(0.3, 0.6, 0.9, False, False, False)
    assert feature_vector(s, [s, t], evidence_tokens=10)["matched_frac"] == 0.5


def test_features_needs_a_combiner() -> None:
    with pytest.raises(VerificationError):
        cascade(ScriptedScorer(), combiner=None).features(claim_from_text("x y z"), DOC)


@pytest.mark.parametrize("name_missing", [True, False])
def test_a_conflicting_year_about_another_subject_is_not_a_contradiction(
    name_missing: bool,
) -> None:
    # issue 12: "the University of Texas was founded in 1883" against a passage on Virginia
    def checks(claim: str, evidence: str) -> list[CheckResult]:
        out = [
            CheckResult(
                check="date",
                status="fail",
                claim_value="1883",
                evidence_value="1819",
                reason="the year 1883 disagrees with 1819",
            )
        ]
        if name_missing:
            out.append(
                CheckResult(check="entity", status="fail", claim_value="Texas", reason="absent")
            )
        return out

    settings = VerifySettings(cascade=["checks", "cross_encoder"], threads=1, combiner=False)
    casc = ClaimCascade(
        settings, POLICY, scorers={"cross_encoder": ScriptedScorer()}, check_fn=checks
    )
    v = casc.verify(
        claim_from_text("The University of Texas was founded in 1883."),
        [Chunk(text="The University of Virginia was founded in 1819.")],
    )
    assert v.label == ("unsupported" if name_missing else "contradicted")


@pytest.mark.parametrize(
    ("model", "label"),
    [
        # the model also reads the evidence as against the claim: contradicted
        ((0.05, 0.15, 0.8), "contradicted"),
        # the model reads the evidence as support: a differing value alone is not evidence that
        # says otherwise; the claim is still not shown as verified
        ((0.95, 0.04, 0.01), "unsupported"),
    ],
)
def test_a_check_conflict_is_a_contradiction_only_if_the_model_does_not_read_support(
    model: tuple[float, float, float], label: str
) -> None:
    # a combiner that would call the text supported on the model's score alone
    lenient = Combiner(
        features=["pe_whole"], mean=[0.5], scale=[0.1], coef=[3.0], intercept=0.0, tau=0.5
    )
    settings = VerifySettings(cascade=["checks", "cross_encoder"], threads=1)
    casc = ClaimCascade(
        settings,
        POLICY,
        scorers={"cross_encoder": ScriptedScorer(default=model)},
        check_fn=five_not_seven,
        combiner=lenient,
    )
    v = casc.verify(
        claim_from_text("The box holds 5 apples."), [Chunk(text="The box holds 7 apples.")]
    )
    assert v.label == label, v.reason


def test_a_number_no_evidence_states_is_never_supported_by_the_combiner() -> None:
    """Fail closed: the model may like a sentence whose year or count the evidence never gives
    ("... growing cotton since about 800 AD." was verified by BingCheck evidence without it);
    what the checks found absent from all of the evidence blocks support."""
    from affidavit.verify.checks import run_checks

    settings = VerifySettings(cascade=["checks", "cross_encoder"], threads=1)
    casc = ClaimCascade(
        settings,
        POLICY,
        scorers={"cross_encoder": ScriptedScorer(default=(0.95, 0.04, 0.01))},
        check_fn=run_checks,
        combiner=WEAKEST,
    )
    for text in (
        "Marie Curie discovered polonium in 1898. She had 14 assistants.",
        "She had 14 assistants.",
    ):
        v = casc.verify(claim_from_text(text), DOC)
        assert v.label == "unsupported", v.reason
        assert "does not state" in v.reason or "missing" in v.reason
    ok = casc.verify(claim_from_text("Marie Curie discovered polonium in 1898."), DOC)
    assert ok.label == "supported", ok.reason


@pytest.mark.parametrize(
    "evidence", [[], ["  \x00\t "], ["...", "\u200b"]], ids=["none", "controls", "marks"]
)
def test_a_claim_with_no_usable_evidence_says_why_it_is_not_verified(
    evidence: list[str],
) -> None:
    # the verdict was incomplete with no error: `affidavit check` exited 1 ("could not be fully
    # verified") with no line saying why; and a passage of control characters was a window the
    # model could score as entailing (supported, with "\x00" as its evidence)
    why = "no evidence given"
    v = cascade(ScriptedScorer(default=(0.99, 0.005, 0.005))).verify(
        claim_from_text("Paris is in France."), [Chunk(text=t) for t in evidence]
    )
    assert v.label == "unsupported" and not v.complete
    assert v.errors == (why,) and v.reason == f"not verified: {why}"
