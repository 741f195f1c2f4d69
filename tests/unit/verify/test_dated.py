"""A claim's date compared as a value, the statement without it judged by the model
(`verify.dated_support`; `affidavit.verify.lexical.split_time_adverbial`,
`dates_whole_sentence`, `words_restated`)."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from affidavit.core.settings import PolicySettings, VerifySettings
from affidavit.verify.cascade import ClaimCascade, chunks_from_texts, claim_from_text
from affidavit.verify.fakes import ScriptedScorer
from affidavit.verify.lexical import (
    date_bound_elsewhere,
    dates_whole_sentence,
    split_time_adverbial,
    subject_named_elsewhere,
    words_restated,
    year_bound_elsewhere,
)

# the sample corpus's Marie Curie document (sample_corpus/docs/marie_curie.docx), as chunked
CURIE = (
    "Marie Skłodowska Curie (7 November 1867 - 4 July 1934) was a Polish and naturalised-French "
    "physicist and chemist who conducted pioneering research on radioactivity. In 1898, working "
    "with her husband Pierre Curie, she announced the discovery of two new elements: polonium, "
    "which she named after her native Poland, and radium."
)
EIFFEL = (
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris. "
    "Construction began in January 1887 and was completed in March 1889."
)


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        (
            "Marie Curie discovered polonium and radium in 1898.",
            ("Marie Curie discovered polonium and radium.", "in 1898"),
        ),
        (
            "In July 1969, the Eagle landed on the Moon.",
            ("The Eagle landed on the Moon.", "In July 1969"),
        ),
        ("The bridge opened on 4 March 1890.", ("The bridge opened.", "on 4 March 1890")),
        # not a point in time
        ("The war was over by 1945.", None),
        # not one plain statement: the date may belong to a clause only
        ("He was a coach, being appointed in 2014.", None),
        ("The film was set in 1942.", None),
        ("The tower was planned in 1884 and completed in 1889.", None),
    ],
)
def test_split_time_adverbial(sentence: str, expected: tuple[str, str] | None) -> None:
    assert split_time_adverbial(sentence) == expected


SENT = CURIE.split(". ", 1)[1]


@pytest.mark.parametrize(
    ("adverbial", "sentence", "expected"),
    [
        ("in 1898", SENT, "In 1898"),
        ("in 1898", "The station opened to passengers in July 1898.", "in July 1898"),
        ("in July 1898", "In July 1898, the station opened.", "In July 1898"),
        # another year, month or day than the sentence's
        ("in 1899", SENT, None),
        ("in August 1898", "In July 1898, the station opened.", None),
        ("on 5 July 1898", "On 4 July 1898, the station opened.", None),
        # the claim more exact than the sentence: not stated
        ("in July 1898", SENT, None),
        # two years in the sentence: which one dates what is not read here
        ("in 1887", EIFFEL.split(". ")[1], None),
        ("in 1889", EIFFEL.split(". ")[1], None),
        # words that place the sentence's events at other times
        ("in 1900", "In 1900, after she had discovered radium, she married.", None),
        ("in 1900", "In 1900, the company, founded by his father, moved to Paris.", None),
        # the year not as an adverbial of the whole sentence
        ("in 1898", "The 1898 elections, he said, were fair and the result stood.", None),
    ],
)
def test_dates_whole_sentence(adverbial: str, sentence: str, expected: str | None) -> None:
    assert dates_whole_sentence(adverbial, sentence) == expected


def test_words_restated_needs_every_word() -> None:
    assert words_restated("Marie Curie discovered polonium and radium.", SENT, CURIE)
    assert not words_restated("Marie Curie discovered uranium and radium.", SENT, CURIE)
    # a name the chunk never gives
    assert not words_restated("Irène Curie discovered polonium and radium.", SENT, CURIE)
    assert not words_restated("Marie Curie discovered polonium and radium.", SENT, SENT)


def _trailing_date_shortcut(claim: str, evidence: str) -> tuple[float, float, float]:
    # any claim with a year scores low, the same statement without it high
    return (0.2, 0.5, 0.3) if re.search(r"\d{4}", claim) else (0.8, 0.15, 0.05)


def _cascade(
    fn: Callable[[str, str], tuple[float, float, float]] = _trailing_date_shortcut,
    **kw: object,
) -> ClaimCascade:
    return ClaimCascade(
        VerifySettings(cascade=["checks", "cross_encoder"], threads=1, **kw),  # type: ignore[arg-type]
        PolicySettings(tau_entail=0.5, tau_contradict=0.5),
        scorers={"cross_encoder": ScriptedScorer(fn=fn)},
    )


def test_the_demo_answer_is_supported_and_says_why() -> None:
    claim = claim_from_text("Marie Curie discovered polonium and radium in 1898.")
    v = _cascade().verify(claim, chunks_from_texts([CURIE]))
    assert v.label == "supported", v.reason
    assert "dates it In 1898" in v.reason
    assert v.evidence and v.evidence[0].text == SENT
    assert [st.stage for st in v.stages][-1] == "dated"
    # the setting turns it off: the model's verdict stands
    off = _cascade(dated_support=False).verify(claim, chunks_from_texts([CURIE]))
    assert off.label == "unsupported"


@pytest.mark.parametrize(
    "text",
    [
        "Marie Curie discovered polonium and radium in 1899.",  # another year
        "Marie Curie discovered polonium and radium in August 1898.",  # another month
        "Marie Curie discovered uranium and radium in 1898.",  # a word the sentence lacks
        # named only beside the sentence's "she", who is Marie Curie
        "Pierre Curie discovered polonium and radium in 1898.",
        "Marie Curie discovered polonium and radium by 1898.",  # not a point in time
        "The Eiffel Tower was completed in 1887.",  # the sentence holds two years
        "The Eiffel Tower was completed in 1889.",
    ],
)
def test_anything_else_is_left_to_the_model(text: str) -> None:
    v = _cascade().verify(claim_from_text(text), chunks_from_texts([CURIE, EIFFEL]))
    assert v.label != "supported", v.reason


def test_a_statement_the_model_rejects_stays_unsupported() -> None:
    cascade = _cascade(lambda c, e: (0.2, 0.5, 0.3))
    claim = claim_from_text("Marie Curie discovered polonium and radium in 1898.")
    assert cascade.verify(claim, chunks_from_texts([CURIE])).label == "unsupported"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Eiffel Tower was completed in 1887.", "completed in March 1889"),
        ("In 1887, the Eiffel Tower was completed.", "completed in March 1889"),
        ("The Eiffel Tower was completed in April 1889.", "completed in March 1889"),
        ("The Eiffel Tower was completed in 1889.", None),
        ("The Eiffel Tower was completed in March 1889.", None),
        ("Construction began in 1887.", None),
        # the evidence dates that word both ways: not read as another date
        ("He joined the club in 2005.", None),
        # another thing's date: its clause names what the claim does not
        ("The Eiffel Tower was topped out in 1930.", None),
    ],
)
def test_date_bound_elsewhere(text: str, expected: str | None) -> None:
    evidence = (
        EIFFEL + " He joined the club in 2005 and left the club in 2010. It was the tallest until"
        " the Chrysler Building was topped out in 1931."
    )
    assert date_bound_elsewhere(text, evidence) == expected


def test_a_fronted_wrong_date_is_withheld_whatever_the_model_says() -> None:
    # the model's other shortcut: a date in front reads as support whatever its value
    cascade = _cascade(lambda c, e: (0.9, 0.05, 0.05))
    v = cascade.verify(
        claim_from_text("In 1887, the Eiffel Tower was completed."), chunks_from_texts([EIFFEL])
    )
    assert v.label == "unsupported"
    assert "completed in March 1889" in v.reason
    right = cascade.verify(
        claim_from_text("The Eiffel Tower was completed in 1889."), chunks_from_texts([EIFFEL])
    )
    assert right.label == "supported", right.reason


def test_subject_named_elsewhere() -> None:
    before, sent = CURIE.split(". ", 1)
    assert subject_named_elsewhere("Marie Curie discovered polonium.", sent, before)
    assert not subject_named_elsewhere("Pierre Curie discovered polonium.", sent, before)
    # named after the sentence (a refined passage keeps its sentences, not their order)
    assert subject_named_elsewhere("Marie Curie discovered polonium.", sent, "Marie Curie won.")
    # named nowhere but beside the pronoun
    assert not subject_named_elsewhere("Marie Curie discovered polonium.", sent, "")
    assert not subject_named_elsewhere(
        "Pierre Curie discovered polonium.", sent, "Pierre Curie won."
    )
    # no pronoun subject, or the sentence opens with the name: nothing to resolve
    assert subject_named_elsewhere("Pierre Curie won.", "In 1903, Pierre Curie won.", "")
    assert subject_named_elsewhere("Pierre Curie won.", "Pierre Curie won, and he left.", "")


def test_a_date_of_the_claim_in_another_chunk_clears_it() -> None:
    # the sample corpus's Eiffel document in two chunks: the other chunk's "completed in 1930"
    # belongs to the Chrysler Building, and the first chunk dates the tower's completion as
    # the claim does (three server, page and CLI tests withheld the true sentence)
    cascade = _cascade(lambda c, e: (0.9, 0.05, 0.05))
    chrysler = (
        "It was the tallest man-made structure in the world until the Chrysler Building in New "
        "York City was completed in 1930."
    )
    claim = claim_from_text("The Eiffel Tower was completed in March 1889.")
    v = cascade.verify(claim, chunks_from_texts([EIFFEL, chrysler]))
    assert v.label == "supported", v.reason
    v = cascade.verify(claim, chunks_from_texts([chrysler, EIFFEL]))
    assert v.label == "supported", v.reason


def test_the_sentence_naming_the_subject_may_come_after() -> None:
    # `ask` refines its passage to the relevant sentences: the demo's chunk put the dated
    # sentence first and the sentence naming Marie Curie after it
    refined = SENT + " Marie Curie was the first woman to win a Nobel Prize."
    claim = claim_from_text("Marie Curie discovered polonium and radium in 1898.")
    v = _cascade().verify(claim, chunks_from_texts([refined]))
    assert v.label == "supported", v.reason
    pierre = claim_from_text("Pierre Curie discovered polonium and radium in 1898.")
    assert _cascade().verify(pierre, chunks_from_texts([refined])).label != "supported"


NOBEL = (
    "Marie Curie shared the 1903 Nobel Prize in Physics with Pierre Curie and Henri Becquerel, "
    "and she won the 1911 Nobel Prize in Chemistry alone."
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # every word is in the evidence, the year bound to the other prize
        ("Marie Curie won the 1911 Nobel Prize in Physics.", "1903 Nobel Prize in Physics"),
        ("Marie Curie won the 1903 Nobel Prize in Chemistry.", "1911 Nobel Prize in Chemistry"),
        ("Marie Curie won the 1911 Nobel Prize in Chemistry alone.", None),
        ("Marie Curie shared the 1903 Nobel Prize in Physics.", None),
        # a name the evidence never qualifies with a year: nothing to compare
        ("Marie Curie won the 1911 Solvay Medal.", None),
        # a year after a preposition dates the clause, it does not qualify the name
        ("In 1911 Marie Curie won the prize.", None),
    ],
)
def test_year_bound_elsewhere(text: str, expected: str | None) -> None:
    assert year_bound_elsewhere(text, NOBEL) == expected


def test_a_year_joined_to_the_wrong_name_is_withheld_whatever_the_model_says() -> None:
    # the accurate stage scored "... the 1911 Nobel Prize in Physics." p_entail 0.99
    cascade = _cascade(lambda c, e: (0.99, 0.005, 0.005))
    chunks = chunks_from_texts([NOBEL])
    wrong = cascade.verify(
        claim_from_text("Marie Curie won the 1911 Nobel Prize in Physics."), chunks
    )
    assert wrong.label == "unsupported"
    assert "1903 Nobel Prize in Physics" in wrong.reason
    right = cascade.verify(
        claim_from_text("Marie Curie won the 1911 Nobel Prize in Chemistry alone."), chunks
    )
    assert right.label == "supported", right.reason
