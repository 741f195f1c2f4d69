"""affidavit.verify.casing: a claim written all in lower case gets the capitals of its evidence."""

from __future__ import annotations

import pytest

from affidavit.audit import audit
from affidavit.claims.segment import split_sentences
from affidavit.verify.casing import needs_recasing, recase_like
from affidavit.verify.checks import run_checks
from affidavit.verify.lexical import role_mismatch

APOLLO = (
    "Apollo 11 landed on the Moon on July 20, 1969. Neil Armstrong became the first person to "
    "step onto the lunar surface, and Buzz Aldrin joined him. Michael Collins flew the command "
    "module alone in lunar orbit."
)


@pytest.mark.parametrize(
    ("claim", "evidence", "expected"),
    [
        ("paris is in germany.", "Paris is the capital of France.", "Paris is in Germany."),
        (
            "buzz aldrin became the first person to step onto the lunar surface.",
            APOLLO,
            "Buzz Aldrin became the first person to step onto the lunar surface.",
        ),
        # a word the evidence writes in lower case inside a sentence stays lower case
        (
            "the moon was reached by nasa.",
            "Then NASA reached the moon.",
            "The moon was reached by NASA.",
        ),
        # countries and US states from the gazetteer, several words too
        (
            "he moved to the united states and then to new york.",
            "x",
            "He moved to the United States and then to New York.",
        ),
        # gazetteer names that are also common words stay as written
        ("we ate turkey off china plates.", "x", "We ate turkey off china plates."),
        # every sentence starts with a capital
        ("it rained. then it snowed!", "x", "It rained. Then it snowed!"),
        # ... also in tokenised text, once a name before the stop has its capital (the sentences
        # are read from the claim as written: 'Ryn . one' no longer looks like a sentence end)
        (
            "maurice van ryn has pleaded guilty . one of his victims told the court .",
            "The businessman Maurice Van Ryn has pleaded guilty.",
            "Maurice Van Ryn has pleaded guilty . One of his victims told the court .",
        ),
    ],
)
def test_recase_like(claim: str, evidence: str, expected: str) -> None:
    out = recase_like(claim, evidence)
    assert out == expected
    assert len(out) == len(claim)  # offsets into the claim still hold


@pytest.mark.parametrize(
    "claim", ["Paris is in Germany.", "paris is in Germany.", "NASA", "123 456", ""]
)
def test_a_claim_with_a_capital_or_no_letter_is_left_as_written(claim: str) -> None:
    assert recase_like(claim, "Paris is the capital of France and Germany.") == claim


def test_needs_recasing() -> None:
    assert needs_recasing("paris is in germany.")
    # a claim extracted from a lower-case answer starts with a capital
    assert needs_recasing("Paris is in germany. It is big.")
    assert not needs_recasing("Paris is in Germany.")
    assert not needs_recasing("1889")


def test_a_sentence_initial_capital_in_the_evidence_is_no_evidence_of_a_name() -> None:
    # "The" starts the evidence's sentence: "the" in the claim stays lower case
    assert recase_like("it is the tower.", "The tower is tall.") == "It is the tower."


def test_the_rules_see_the_names_of_a_lower_case_claim() -> None:
    # before: no capitals, no names, so neither rule ran
    claim = "buzz aldrin became the first person to step onto the lunar surface."
    assert role_mismatch(claim, APOLLO) is None
    assert role_mismatch(recase_like(claim, APOLLO), APOLLO) is not None
    by_name = {
        r.check: r.status
        for r in run_checks("paris is in germany.", "Paris is the capital of France.")
    }
    assert by_name["entity"] != "fail"
    recased = recase_like("paris is in germany.", "Paris is the capital of France.")
    by_name = {r.check: r.status for r in run_checks(recased, "Paris is the capital of France.")}
    assert by_name["entity"] == "fail"


def test_the_lexical_audit_checks_a_lower_case_claim_with_capitals() -> None:
    report = audit(
        "Where is Paris?",
        [{"text": "Paris is the capital of France.", "url": "https://example.org/paris"}],
        "paris is in germany.",
    )
    assert report.claims and not report.claims[0].supported


def test_a_recased_tokenised_summary_is_still_split_into_its_sentences() -> None:
    # a lower-cased, tokenised news summary (SummEval's form): before, the recased text read
    # "... guilty . one of ..." and the cascade judged both sentences as one claim
    from affidavit.claims.segment import split_sentences

    claim = "maurice van ryn has pleaded guilty . one of his victims told the court ."
    recased = recase_like(claim, "The businessman Maurice Van Ryn has pleaded guilty.")
    assert [s.text for s in split_sentences(recased)] == [
        "Maurice Van Ryn has pleaded guilty .",
        "One of his victims told the court .",
    ]


def test_each_line_of_a_lower_case_highlight_list_starts_a_sentence() -> None:
    # SummaC Polytope, a right three-line summary judged as one sentence: only the first line
    # was capitalised, so its other lines were not read as statements of their own
    claim = (
        "anastasia pavlyuchenkova beat germany 's sabine lisicki 4-6 , 7-6 ( 4 ) , 6-3\n"
        "russia are on the brink of making the fed cup final with a 2-0 lead\n"
        "svetlana kuznetsova had earlier beaten julia goerges in straight sets"
    )
    recased = recase_like(claim, "russia lead germany 2-0 in the fed cup semi-final .")
    assert [s.text.split()[0] for s in split_sentences(recased)] == [
        "Anastasia",
        "Russia",
        "Svetlana",
    ]
