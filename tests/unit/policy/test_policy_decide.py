"""The fail-closed decision: each condition of VERIFIED, BLOCKED and UNVERIFIED, one at a time."""

from __future__ import annotations

import pytest

from affidavit.core.settings import PolicySettings
from affidavit.core.types import CheckResult, Claim, EvidenceSpan, StageScore, Verdict
from affidavit.policy import decide, decide_all, load_preset

POLICY = PolicySettings(tau_entail=0.5, tau_contradict=0.5)
SPAN = EvidenceSpan(
    chunk_id="k1", doc_id="3", start=0, end=35, text="The tower was completed in 1889."
)


def verdict(**kw: object) -> Verdict:
    base: dict[str, object] = {
        "claim_id": "c1",
        "label": "supported",
        "p_entail": 0.9,
        "p_neutral": 0.05,
        "p_contradict": 0.05,
        "evidence": (SPAN,),
    }
    base.update(kw)
    return Verdict.model_validate(base)


def test_supported_with_evidence_is_verified() -> None:
    decision, reason = decide(verdict(), POLICY)
    assert decision == "verified"
    assert "doc 3" in reason and "0.90 >= 0.50" in reason


def test_a_verdict_labelled_unsupported_is_never_verified_whatever_its_score() -> None:
    # a verifier that withholds a claim but leaves its score high (a custom verifier, or a
    # policy layer that relabels, like an audit certificate under stale_action = fail) must not
    # have the claim verified on the score alone
    decision, reason = decide(
        verdict(label="unsupported", p_entail=0.95, p_neutral=0.04, p_contradict=0.01), POLICY
    )
    assert decision == "unverified"
    assert "labelled it unsupported" in reason


def test_threshold_is_inclusive_for_entail() -> None:
    assert decide(verdict(p_entail=0.5, p_neutral=0.45), POLICY)[0] == "verified"
    assert decide(verdict(p_entail=0.4999, p_neutral=0.45), POLICY)[0] == "unverified"


def test_threshold_is_exclusive_for_contradict() -> None:
    # p_contradict equal to tau_contradict is a contradiction
    v = verdict(p_entail=0.5, p_neutral=0.0, p_contradict=0.5)
    assert decide(v, POLICY)[0] == "blocked"


def test_contradiction_score_without_a_span_is_unverified_not_blocked() -> None:
    # the verifier found no contradicting span (label unsupported): not proof of falsehood, and
    # never verified either
    v = verdict(
        label="unsupported", p_entail=0.43, p_neutral=0.057, p_contradict=0.513, evidence=()
    )
    decision, reason = decide(v, POLICY)
    assert decision == "unverified"
    assert "p_contradict 0.51 >= 0.50" in reason
    # the same scores with a span to show are blocked
    assert (
        decide(
            verdict(label="unsupported", p_entail=0.43, p_neutral=0.057, p_contradict=0.513), POLICY
        )[0]
        == "blocked"
    )
    # and a high entail score with a high contradiction score is never verified
    both = verdict(p_entail=0.6, p_neutral=0.0, p_contradict=0.55, evidence=())
    assert decide(both, POLICY)[0] == "unverified"


def test_tau_entail_is_not_ignored() -> None:
    v = verdict(p_entail=0.7, p_neutral=0.25)
    assert decide(v, PolicySettings(tau_entail=0.6))[0] == "verified"
    assert decide(v, PolicySettings(tau_entail=0.8))[0] == "unverified"


def test_no_verdict_is_unverified() -> None:
    assert decide(None, POLICY) == ("unverified", "the claim was not verified (no verdict)")


def test_no_evidence_is_unverified_even_when_entailed() -> None:
    decision, reason = decide(verdict(evidence=()), POLICY)
    assert decision == "unverified"
    assert "no evidence span supports it" in reason


@pytest.mark.parametrize(
    "change",
    [
        {"complete": False},
        {"errors": ("cross_encoder timed out",)},
        {
            "stages": (
                StageScore(
                    stage="llm_judge",
                    p_entail=0.9,
                    p_neutral=0.05,
                    p_contradict=0.05,
                    label="supported",
                    error="server unreachable",
                ),
            )
        },
        {"evidence": (SPAN.model_copy(update={"checked_whole": False}),)},
    ],
)
def test_any_step_that_could_not_run_makes_it_unverified(change: dict[str, object]) -> None:
    decision, _ = decide(verdict(**change), POLICY)
    assert decision == "unverified"


def test_failed_check_blocks_with_values_and_location() -> None:
    check = CheckResult(check="date", status="fail", claim_value="1925", evidence_value="1889")
    decision, reason = decide(verdict(checks=(check,)), POLICY)
    assert decision == "blocked"
    assert reason.startswith("the year 1925 disagrees with 1889 in [doc 3")


def test_passing_checks_do_not_block() -> None:
    check = CheckResult(check="number", status="pass", claim_value="3", evidence_value="3")
    assert decide(verdict(checks=(check,)), POLICY)[0] == "verified"


def test_contradicted_label_blocks_even_below_threshold() -> None:
    v = verdict(label="contradicted", p_entail=0.3, p_neutral=0.4, p_contradict=0.3)
    assert decide(v, POLICY)[0] == "blocked"


def test_unsupported_below_threshold_is_unverified_with_reason() -> None:
    v = verdict(label="unsupported", p_entail=0.2, p_neutral=0.7, p_contradict=0.1)
    decision, reason = decide(v, POLICY)
    assert decision == "unverified"
    assert reason == "p_entail 0.20 is below the threshold 0.50"


def test_decide_all_defaults_missing_claims_and_takes_worst_of_duplicates() -> None:
    claims = [
        Claim(id="c1", text="a", start=0, end=1),
        Claim(id="c2", text="b", start=2, end=3),
    ]
    good = verdict()
    bad = verdict(label="contradicted", p_entail=0.0, p_neutral=0.1, p_contradict=0.9)
    out = decide_all(claims, [good, bad], POLICY)
    assert [d.claim_id for d in out] == ["c1", "c2"]
    assert out[0].decision == "blocked"
    assert out[1].decision == "unverified"


def test_strict_preset_thresholds_apply() -> None:
    strict = load_preset("strict").policy
    assert decide(verdict(p_entail=0.7, p_neutral=0.25), strict)[0] == "unverified"
    assert decide(verdict(p_entail=0.85, p_neutral=0.1), strict)[0] == "verified"


def test_decide_applies_the_named_presets_thresholds() -> None:
    v = verdict(p_entail=0.7, p_neutral=0.25)
    assert decide(v, PolicySettings(preset="strict"))[0] == "unverified"
    assert decide(v, PolicySettings(preset="strict", tau_entail=0.6))[0] == "verified"
    assert decide(v, PolicySettings(preset="mixed"))[0] == "verified"


def test_contradiction_reason_names_evidence_and_scores() -> None:
    v = verdict(label="contradicted", p_entail=0.05, p_neutral=0.05, p_contradict=0.9)
    decision, reason = decide(v, POLICY)
    assert decision == "blocked"
    assert reason.startswith('contradicted by [doc 3, chunk k1, chars 0-35: "The tower was')
    assert reason.endswith("(p_contradict 0.90 >= 0.50)")


def test_check_reason_names_the_sentence_of_the_conflicting_value() -> None:
    chunk_text = "Work began in 1887. The tower was completed in 1889. It is 330 m tall."
    span = EvidenceSpan(
        chunk_id="k7", doc_id="3", start=100, end=100 + len(chunk_text), text=chunk_text
    )
    check = CheckResult(
        check="date",
        status="fail",
        claim_value="1925",
        evidence_value="1889",
        reason="the year 1925 disagrees with 1889 in the evidence",
    )
    decision, reason = decide(verdict(checks=(check,), evidence=(span,)), POLICY)
    assert decision == "blocked"
    assert reason == (
        "the year 1925 disagrees with 1889 in [doc 3, chunk k7, sentence 2, chars 120-152: "
        '"The tower was completed in 1889."]'
    )


# issue 12: a name the evidence does not mention is not a contradiction ("Edwin Gagiano won ..."
# against a passage that says "He won ..."), and a verifier that weighed a differing value and
# labelled the claim unsupported is not overruled into "contradicted"
NAME_ABSENT = CheckResult(
    check="entity",
    status="fail",
    claim_value="Edwin, Gagiano",
    reason="the names 'Edwin', 'Gagiano' do not appear in the evidence",
)
YEAR_ABSENT = CheckResult(
    check="date", status="fail", claim_value="1925", reason="the year 1925 does not appear"
)
YEAR_DIFFERS = CheckResult(check="date", status="fail", claim_value="1925", evidence_value="1889")


@pytest.mark.parametrize("check", [NAME_ABSENT, YEAR_ABSENT])
def test_an_absence_is_unverified_never_blocked(check: CheckResult) -> None:
    # a swapped name or number the evidence never mentions: not shown, not called false
    assert check.absent and not YEAR_DIFFERS.absent
    decision, reason = decide(verdict(checks=(check,)), POLICY)
    assert decision == "unverified"
    assert check.reason in reason


def test_a_name_the_question_supplies_is_left_to_the_verifier() -> None:
    question = "Edwin Gagiano won Best Actor Award as Alf Bueller in a show written by who?"
    assert decide(verdict(checks=(NAME_ABSENT,)), POLICY, premise=question)[0] == "verified"
    # only when every missing name comes from the question; a year never does
    assert decide(verdict(checks=(NAME_ABSENT,)), POLICY, premise="Who is Edwin?")[0] == (
        "unverified"
    )
    assert decide(verdict(checks=(YEAR_ABSENT,)), POLICY, premise="In 1925?")[0] == "unverified"
    v = verdict(label="unsupported", p_entail=0.2, p_neutral=0.7, p_contradict=0.1)
    assert decide(v.model_copy(update={"checks": (NAME_ABSENT,)}), POLICY, premise=question)[0] == (
        "unverified"
    )


def test_a_differing_value_the_verifier_did_not_call_a_contradiction_is_withheld() -> None:
    # what the cascade returns when the model reads the evidence as support despite the value
    v = verdict(label="unsupported", p_entail=0.9, p_neutral=0.05, checks=(YEAR_DIFFERS,))
    decision, reason = decide(v, POLICY)
    assert decision == "unverified"
    assert "1925 disagrees with 1889" in reason and "did not judge" in reason
    # the same value on a verdict that claims support or contradiction blocks
    assert decide(v.model_copy(update={"label": "supported"}), POLICY)[0] == "blocked"
    assert decide(v.model_copy(update={"label": "contradicted"}), POLICY)[0] == "blocked"
