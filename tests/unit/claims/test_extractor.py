"""The rule-based claim extractor: offsets, selection, decomposition, normalisation."""

from __future__ import annotations

import pytest

from affidavit.claims import ClaimExtractor, RuleBasedExtractor, extract_claims
from affidavit.core.claims import ClaimExtraction
from affidavit.core.errors import ClaimError
from affidavit.core.settings import ClaimsSettings, load_settings


def texts(answer: str) -> list[str]:
    return [c.text for c in extract_claims(answer)]


def test_is_a_claim_extractor() -> None:
    assert isinstance(RuleBasedExtractor(), ClaimExtractor)


@pytest.mark.parametrize("answer", ["", " ", "\n\n\t  ", "   \r\n"])
def test_empty_answer_gives_no_claims(answer: str) -> None:
    assert extract_claims(answer) == []


def test_offsets_point_at_the_source_text() -> None:
    answer = "Hello!  Marie Curie won two Nobel Prizes [1].\nShe was born in Warsaw."
    claims = extract_claims(answer)
    assert [answer[c.start : c.end] for c in claims] == [
        "Marie Curie won two Nobel Prizes [1].",
        "She was born in Warsaw.",
    ]
    assert [c.id for c in claims] == ["c1", "c2"]
    assert claims[1].sentence == "She was born in Warsaw."


def test_citations_parsed_and_stripped() -> None:
    claims = extract_claims("Paris is the capital of France [1][2, 4-5]. Rome is in Italy.[3]")
    assert claims[0].text == "Paris is the capital of France."
    assert claims[0].citations == (1, 2, 4, 5)
    assert claims[1].text == "Rome is in Italy."
    assert claims[1].citations == (3,)


def test_conjunction_decomposed_with_subject_carried() -> None:
    answer = "Albert Einstein was born in 1879 and died in 1955."
    claims = extract_claims(answer)
    assert [c.text for c in claims] == [
        "Albert Einstein was born in 1879.",
        "Albert Einstein died in 1955.",
    ]
    assert all(c.origin == "decomposed" for c in claims)
    assert answer[claims[0].start : claims[0].end] == "Albert Einstein was born in 1879"
    assert answer[claims[1].start : claims[1].end] == "died in 1955."


def test_noun_coordination_not_split() -> None:
    assert texts("Tom and Jerry are cartoon characters created by Hanna and Barbera.") == [
        "Tom and Jerry are cartoon characters created by Hanna and Barbera."
    ]


def test_pronoun_resolved_from_previous_subject() -> None:
    claims = extract_claims("Marie Curie was a physicist. She won the Nobel Prize in 1903.")
    assert claims[1].text == "Marie Curie won the Nobel Prize in 1903."


def test_expletive_it_not_resolved() -> None:
    claims = extract_claims("The Eiffel Tower is in Paris. It is estimated that 7 million visit.")
    assert claims[-1].text.startswith("It is estimated")


def test_hedge_flagged() -> None:
    claims = extract_claims("Napoleon was reportedly 1.57 m tall. Napoleon died in 1821.")
    assert [c.hedged for c in claims] == [True, False]


@pytest.mark.parametrize(
    ("sentence", "reason"),
    [
        ("What year did the war end?", "question"),
        ("Hello there!", "greeting"),
        ("Here is a summary of the facts.", "meta"),
        ("As an AI language model, I cannot browse the web.", "meta"),
        ("I hope this helps!", "meta"),
        ("Let me know if you need anything else.", "meta"),
        ("I think the film is wonderful.", "opinion"),
        ("You should consult a doctor.", "instruction"),
        ("It depends on many factors.", "hedged_filler"),
    ],
)
def test_non_checkworthy_sentences_skipped(sentence: str, reason: str) -> None:
    result = RuleBasedExtractor().run(sentence + " The Danube flows through Vienna.")
    assert [c.text for c in result.claims] == ["The Danube flows through Vienna."]
    assert [s.reason for s in result.skipped] == [reason]


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        ("Einstein was born in 1879.", "temporal"),
        ("The bridge is 1,200 metres long.", "numeric"),
        ("Smoking causes lung cancer.", "causal"),
        ("The Nile is longer than the Amazon.", "comparative"),
        ("A tensor is a multilinear map.", "definition"),
        ("To reset the router, hold the button for ten seconds.", "procedural"),
        ("Canberra hosts the Australian parliament.", "factual"),
    ],
)
def test_claim_types(sentence: str, kind: str) -> None:
    assert extract_claims(sentence)[0].type == kind


def test_list_items_become_claims_with_lead_in() -> None:
    answer = "The main exports of Chile are:\n- copper\n- lithium\n* Wine is exported to China."
    claims = extract_claims(answer)
    assert [c.text for c in claims] == [
        "The main exports of Chile are copper.",
        "The main exports of Chile are lithium.",
        "Wine is exported to China.",
    ]
    assert [answer[c.start : c.end] for c in claims] == [
        "copper",
        "lithium",
        "Wine is exported to China.",
    ]


def test_duplicates_dropped() -> None:
    result = RuleBasedExtractor().run("Oslo is in Norway. Oslo is in Norway [2].")
    assert [c.text for c in result.claims] == ["Oslo is in Norway."]
    assert [s.reason for s in result.skipped] == ["duplicate"]


def test_settings_switch_rules_off() -> None:
    answer = "Hello! Einstein was born in 1879 and died in 1955."
    settings = ClaimsSettings(select=False, decompose=False)
    assert [c.text for c in extract_claims(answer, settings)] == [
        "Hello!",
        "Einstein was born in 1879 and died in 1955.",
    ]


def test_settings_section_loads_and_validates() -> None:
    s = load_settings(overrides={"claims": {"decompose": False}})
    assert s.claims.decompose is False
    with pytest.raises(Exception, match="extractor"):
        load_settings(overrides={"claims": {"extractor": "magic"}})


def test_non_string_answer_is_a_typed_error() -> None:
    with pytest.raises(ClaimError):
        RuleBasedExtractor().extract(b"bytes")  # type: ignore[arg-type]


def test_wrong_settings_type_is_a_typed_error() -> None:
    with pytest.raises(ClaimError):
        RuleBasedExtractor({"select": True})  # type: ignore[arg-type]


def test_result_round_trips_as_json() -> None:
    r = RuleBasedExtractor().run("Hi! Oslo is in Norway [1]. Why?")
    assert ClaimExtraction.model_validate_json(r.model_dump_json()) == r


@pytest.mark.parametrize(
    "answer",
    [
        "東京は日本の首都です。人口は約1400万人です。",
        "Москва — столица России. Она основана в 1147 году.",
        "القاهرة هي عاصمة مصر.",
        "\x00\ud800 broken \ufffd text. Ünïcödé façade in 2001.",
    ],
)
def test_non_english_does_not_crash(answer: str) -> None:
    for c in extract_claims(answer):
        assert 0 <= c.start < c.end <= len(answer)


def test_who_clause_about_a_named_person_split() -> None:
    answer = (
        "The first patient was Barney Clark, a dentist from Seattle, who survived 112 days[^2^]."
    )
    claims = extract_claims(answer)
    assert [c.text for c in claims] == [
        "The first patient was Barney Clark, a dentist from Seattle.",
        "Barney Clark survived 112 days.",
    ]
    assert answer[claims[1].start : claims[1].end] == "survived 112 days[^2^]."
    assert claims[1].citations == (2,)


def test_which_clause_not_split() -> None:
    answer = "The Mongol invasions of China, which forced many artists to flee, began in 1211."
    assert texts(answer) == [answer]


def test_pronoun_needs_number_agreement() -> None:
    # "It" cannot refer to a plural subject: left alone rather than resolved wrongly
    claims = extract_claims("Scientists found the scutoid in 2018. It is found in skin cells.")
    assert claims[1].text == "It is found in skin cells."


def test_she_after_a_passive_sentence_that_names_a_person_is_not_the_subject() -> None:
    # "She" here is Marie Curie, not polonium: it was resolved to the subject and the true
    # sentence became the false claim "Polonium also won two Nobel Prizes." (found by probing)
    claims = extract_claims(
        "Polonium was discovered by Marie Curie in 1898. She also won two Nobel Prizes."
    )
    assert claims[1].text == "She also won two Nobel Prizes."
    # a full name as the subject is still the antecedent, whoever else the sentence names
    claims = extract_claims("Marie Curie worked with Pierre Curie. She won two Nobel Prizes.")
    assert claims[1].text == "Marie Curie won two Nobel Prizes."


def test_a_sentence_cut_by_the_claim_limit_is_recorded() -> None:
    """The limit stopped a sentence after its first claim and nothing said so: a reader took
    the sentence as checked whole (the audit passed its unchecked second half)."""
    answer = "The Forth Bridge opened on 4 March 1890 and was painted blue by Napoleon in 1700."
    assert len(RuleBasedExtractor().run(answer).claims) == 2
    cut = RuleBasedExtractor(ClaimsSettings(max_claims=1)).run(answer)
    assert [c.text for c in cut.claims] == ["The Forth Bridge opened on 4 March 1890."]
    assert [(s.reason, s.start, s.end) for s in cut.skipped] == [("limit", 0, len(answer))]
    # a sentence whose claims fit the limit exactly is not cut
    assert RuleBasedExtractor(ClaimsSettings(max_claims=2)).run(answer).skipped == ()
