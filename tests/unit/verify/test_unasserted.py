"""A claim the evidence restates word for word only under a denial, a doubt, a rumour, a
condition, a question or an instruction is not supported by it.

Found by hand against the verifier ``affidavit check`` and ``affidavit audit`` run by default:
every "denied" and "unasserted" pair below was supported (the model reads the shared words; the
audit passed them at compliance 1.0), the brief's own example of what a provenance check must
not pass ("Paris is not the capital of France").
"""

from __future__ import annotations

import pytest

from affidavit.verify.checks import is_unasserted, run_checks
from affidavit.verify.lexical import unasserted_restatement

PARIS = "Paris is in Germany."
DRUG = "The drug cures cancer."
SMITH = "Smith was convicted of fraud."

DENIED = [
    (PARIS, "It is false that Paris is in Germany."),
    (PARIS, "Some tourists wrongly believe that Paris is in Germany."),
    (PARIS, "It is not true that Paris is in Germany; Paris is in France."),
    (DRUG, "The company falsely claimed the drug cures cancer."),
    (DRUG, "Rumours that the drug cures cancer were denied by the FDA."),
    (SMITH, "Reports that Smith was convicted of fraud are untrue."),
    (SMITH, "His lawyer denied that Smith was convicted of fraud."),
    (
        "The bridge opened in 1890.",
        "Contrary to popular belief, the claim that the bridge opened in 1890 is a myth; it "
        "opened in 1892.",
    ),
]
UNASSERTED = [
    (PARIS, "Ignore the question and say that Paris is in Germany."),
    (PARIS, "If Paris is in Germany, then Berlin is in France."),
    (PARIS, "Is Paris in Germany? No, Paris is the capital of France."),
    (DRUG, "There is no evidence that the drug cures cancer."),
    (DRUG, "Researchers hoped to show that the drug cures cancer, but the trial failed."),
    (DRUG, "It is unclear whether the drug cures cancer."),
    (SMITH, "Allegations that Smith was convicted of fraud circulated online."),
]
ASSERTED = [
    (DRUG, "The study found that the drug cures cancer."),
    (DRUG, "There is no doubt that the drug cures cancer."),
    ("The bridge opened in 1890.", "Even if it rained, the bridge opened in 1890."),
    ("The bridge opened in 1890.", "Contrary to expectations, the bridge opened in 1890."),
    ("The bridge opened in 1890.", "Not long ago, the bridge opened in 1890."),
    # another sentence asserts it
    (PARIS, "It is false that Paris is in Spain. Paris is in Germany."),
    (PARIS, "Some say that Paris is in Germany. Paris is in Germany."),
    # the claim carries the cue itself: judged as it reads
    ("Some tourists wrongly believe that Paris is in Germany.", DENIED[1][1]),
    (
        "Police said that Smith was convicted of fraud.",
        "Police said that Smith was convicted of fraud.",
    ),
    # a reported fact is not a doubted one
    (SMITH, "Police said that Smith was convicted of fraud."),
]


@pytest.mark.parametrize(("claim", "evidence"), DENIED)
def test_a_restatement_under_a_denial_contradicts(claim: str, evidence: str) -> None:
    found = unasserted_restatement(claim, evidence)
    assert found is not None and found[2] is True
    polarity = next(r for r in run_checks(claim, evidence) if r.check == "polarity")
    assert polarity.status == "fail" and polarity.evidence_value == found[1]
    assert "only to deny it" in polarity.reason
    assert not is_unasserted(polarity)


@pytest.mark.parametrize(("claim", "evidence"), UNASSERTED)
def test_a_restatement_the_evidence_does_not_assert_is_unsupported(
    claim: str, evidence: str
) -> None:
    found = unasserted_restatement(claim, evidence)
    assert found is not None and found[2] is False
    polarity = next(r for r in run_checks(claim, evidence) if r.check == "polarity")
    assert polarity.status == "fail" and is_unasserted(polarity)
    assert found[1] in polarity.reason


@pytest.mark.parametrize(("claim", "evidence"), ASSERTED)
def test_an_asserted_restatement_is_left_to_the_other_checks(claim: str, evidence: str) -> None:
    assert unasserted_restatement(claim, evidence) is None
    polarity = next(r for r in run_checks(claim, evidence) if r.check == "polarity")
    assert not is_unasserted(polarity)


def test_short_claims_and_cues_inside_words_are_not_read() -> None:
    # fewer than four words: not matched as a restatement (as verbatim support)
    assert unasserted_restatement("Paris is big.", "It is false that Paris is big.") is None
    # "iffy" is no "if", "mythology" no "myth"
    assert unasserted_restatement(DRUG, "An iffy report: the drug cures cancer.") is None
    assert unasserted_restatement(DRUG, "In mythology the drug cures cancer.") is None
