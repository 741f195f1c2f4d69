"""Typed consistency checks: each check catches its perturbation and lets paraphrases pass."""

from __future__ import annotations

import pytest

from affidavit.core.types import CheckResult
from affidavit.verify.checks import CHECK_NAMES, check_entities, failed, run_checks
from affidavit.verify.numbers import find_dates, find_quantities

EVIDENCE = (
    "The Eiffel Tower in Paris was completed in 1889. It is 330 metres tall and attracts about "
    "7 million visitors a year. Apple reported revenue of $95B in 2023, an increase of 3.5%. "
    "The Seine is longer than the Marne. Gustave Eiffel's company was founded on 12 March 1868."
)


def failing(claim: str, evidence: str = EVIDENCE) -> dict[str, str]:
    return {r.check: r.reason for r in failed(run_checks(claim, evidence))}


@pytest.mark.parametrize(
    ("claim", "check", "reason_part"),
    [
        ("The Eiffel Tower was completed in 1925.", "date", "1925 disagrees with 1889"),
        ("The Eiffel Tower was not completed in 1889.", "polarity", "'not'"),
        ("The Eiffel Tower was never completed.", "polarity", "'never'"),
        ("The Eiffel Tower in London was completed in 1889.", "entity", "'London'"),
        ("The Eiffel Tower is 330 feet tall.", "unit", "330 feet"),
        ("The Eiffel Tower attracts about 70 million visitors a year.", "number", "70 million"),
        ("Apple reported revenue of $59B in 2023.", "number", "$59B"),
        ("Apple reported a revenue increase of 35%.", "number", "35%"),
        ("Apple reported a decrease of 3.5% in revenue in 2023.", "polarity", "'decrease'"),
        ("The Marne is longer than the Seine.", "comparative", "other way round"),
        ("The Seine is shorter than the Marne.", "comparative", "'shorter'"),
        ("Gustave Eiffel's company was founded on 12 May 1868.", "date", "12 May 1868"),
        ("Gustave Eiffel's company was founded in March 1869.", "date", "March 1869"),
    ],
)
def test_each_perturbation_fails_with_a_plain_reason(
    claim: str, check: str, reason_part: str
) -> None:
    got = failing(claim)
    assert check in got, got
    assert reason_part in got[check]


@pytest.mark.parametrize(
    "claim",
    [
        "The Eiffel Tower was completed in 1889.",
        "Completed in 1889, the Eiffel Tower stands in Paris.",
        "The tower in Paris is 1083 feet tall.",  # 330 m converted
        "Roughly seven million people visit the Eiffel Tower each year.",
        "Apple's revenue was 95 billion dollars in 2023.",
        "Apple's revenue in 2023 was 95,000 million dollars.",
        "In 2023 Apple's revenue rose by 3.5 percent.",
        "The Marne is shorter than the Seine.",
        "Gustave Eiffel's company was founded in March 1868.",
        "Gustave Eiffel's company was founded in the 1860s.",
        "Rather than the Marne, the Seine is the longer river.",
        "Notably, the Eiffel Tower was completed in 1889.",
    ],
)
def test_paraphrases_pass(claim: str) -> None:
    assert failing(claim) == {}


def test_every_check_reports_in_a_fixed_order() -> None:
    results = run_checks("Paris is big.", "Paris is big.")
    assert tuple(r.check for r in results) == CHECK_NAMES
    assert all(r.status == "not_applicable" for r in results if r.check != "entity")


def test_number_absent_from_evidence_fails() -> None:
    got = failing("The bridge has 12 arches.", "The bridge has many arches.")
    assert "does not appear" in got["number"]


def test_unrelated_negation_elsewhere_does_not_fail() -> None:
    ev = "Although not widely known at first, the band released its debut album in 1994."
    assert failing("The band released its debut album in 1994.", ev) == {}


def test_negation_in_evidence_is_caught() -> None:
    ev = "The treaty was not ratified by the Senate in 1920."
    assert "polarity" in failing("The treaty was ratified by the Senate in 1920.", ev)


@pytest.mark.parametrize(
    "reply",
    ["No, I did not know that!", "I didn't know that.", "I did n't know that .", "I'm not sure."],
)
def test_the_speakers_own_knowledge_is_not_a_negated_fact(reply: str) -> None:
    """A right HaluEval dialogue answer, "No, I did not know that! I did think the meat dress
    she made years ago was awful though.", was shown contradicted: the polarity check read "not
    know that" against the user's "... did you know that?"."""
    ev = "[Human]: Marry the Night won the MTV Video Music Award, did you know that?"
    assert "polarity" not in failing(reply, ev)


def test_a_quoted_not_knowing_still_counts_as_negation() -> None:
    """In the evidence, "I didn't know what I was about to see" is someone's statement; a
    summary that reports it ("he did n't know what he was about to see") agrees with it."""
    ev = 'Barnett said: "I didn\'t know what I was about to see. It was shocking."'
    assert "polarity" not in failing("he did n't know what he was about to see .", ev)
    quoted = 'Barnett said: "I didn\'t know what I was about to see."'
    assert "polarity" not in failing(quoted, "Barnett said he didn't know what he would see.")


def test_a_negated_fact_after_an_answer_particle_still_fails() -> None:
    ev = "[Human]: Marry the Night won the MTV Video Music Award, did you know that?"
    assert "polarity" in failing("No, Marry the Night did not win the award.", ev)
    assert "polarity" in failing("She did not know that Marry the Night won.", ev)
    assert "polarity" in failing("No, the tower was not completed.", "It was completed in 1889.")


def test_sentence_initial_swapped_name_fails() -> None:
    ev = "The Oberoi Group is a hotel company with its head office in Delhi."
    assert "entity" in failing("Mumbai is the head office of the Oberoi Group.", ev)
    assert failing("Its head office is in Delhi.", ev) == {}


def test_scale_words_and_currency() -> None:
    a = find_quantities("$95B")[0]
    b = find_quantities("95 billion dollars")[0]
    c = find_quantities("95,000 million")[0]
    assert a.value == b.value == c.value == 95e9
    assert a.dimension == b.dimension == "currency_usd"
    assert a.matches(c)


def test_spelled_numbers_and_dozen() -> None:
    q = find_quantities("a dozen eggs and fifteen cats")
    assert [x.value for x in q] == [12.0, 15.0]


def test_dates_in_many_formats_are_equal() -> None:
    forms = ["March 2, 1991", "2 March 1991", "1991-03-02", "2nd of March, 1991", "03/02/1991"]
    for f in forms:
        (d,) = find_dates(f"born on {f} in Ohio")
        assert (d.year, d.month, d.day) == (1991, 3, 2), f


def test_rounded_claim_matches_precise_source() -> None:
    assert failing("Revenue was about $95 billion.", "Revenue was $95.3 billion.") == {}
    assert "number" in failing("Revenue was $95.3 billion.", "Revenue was $96 billion.")


def test_temperature_conversion() -> None:
    assert failing("It melts at 32 °F.", "It melts at 0 °C.") == {}
    assert "number" in failing("It melts at 50 °F.", "It melts at 0 °C.")


def test_a_name_made_of_common_words_mid_sentence_is_still_a_name() -> None:
    from affidavit.verify.checks import check_entities

    ev = "She was the older sister of Judith Quiney and Hamnet Shakespeare."
    swapped = check_entities("She was the older sister of Judith Quiney and Can Be.", ev)
    assert swapped.status == "fail" and "Can" in (swapped.claim_value or "")
    assert check_entities("She was the older sister of Judith Quiney.", ev).status == "pass"
    # present in the evidence: passes
    took = check_entities("It was recorded by Take That in 1995.", "Take That recorded it in 1995.")
    assert took.status == "pass"


def test_lower_cased_month_dates_are_dates() -> None:
    """Lower-cased corpora (news summaries) write "april 28": a date, not the bare number 28."""
    assert [d.describe() for d in find_dates("he is 35 on april 28 .")] == ["28 April"]
    assert [d.describe() for d in find_dates("on march 31 , 2015 in june , 2010")] == [
        "31 March 2015",
        "June 2010",
    ]
    # the verb "may" and lower-case abbreviations that are words do not make dates
    assert find_dates("it may rain; the dec was 5 points higher") == []
    ev = "The Tour de France winner, who is 35 on April 28, will ride the hour."
    assert failing("the tour de france winner is 35 on april 28 .", ev) == {}
    assert "date" in failing("the tour de france winner is 35 on april 29 .", ev)


def test_tokenised_negation_counts_as_negation() -> None:
    """PTB-tokenised text splits "didn't" into "did n't": still a negation."""
    ev = "She said she didn't understand why she had been targeted."
    assert failing("she did n't understand why she had been targeted .", ev) == {}
    assert "polarity" in failing("she understood why she had been targeted .", ev) or (
        "polarity" in failing("she did understand why she had been targeted .", ev)
    )
    assert "polarity" in failing(
        "he did n't sign the treaty .", "He signed the treaty in Paris in 1920."
    )


def test_a_season_is_one_date_not_a_year_and_a_number() -> None:
    """'1996-97' is a season: its first year, and '97' is not a number compared with others."""
    assert [d.describe() for d in find_dates("its final in 1996-97 and the 2019–20 season")] == [
        "1996",
        "2019",
    ]
    assert find_quantities("its final in 1996-97") == []
    assert [q.raw for q in find_quantities("from 1996-12 to 2001")] == ["12"]  # not a season
    ev = "The Phillips 66 tournament, held since 1996-97, is the championship."
    assert "number" not in failing("The tournament was held in 1996-97.", ev)


@pytest.mark.parametrize(
    ("claim", "evidence", "status"),
    [
        # issue 24's ask benchmark: "1996-97" (the claim's season) against "1997" was called a
        # contradiction ("the year 1996 disagrees with 1997") and a right answer was withheld
        (
            "The Basketball Tournament which Kansas played its final in 1996-97 incepted in 1997.",
            "The Big 12 Tournament (known since its inception in 1997) is the championship.",
            "pass",
        ),
        ("He played for Leeds in 1997.", "In the 1996–97 season he played for Leeds.", "pass"),
        ("He played for Leeds in 1998.", "In the 1996–97 season he played for Leeds.", "fail"),
        ("He played in the 1996-97 season.", "He played in the 1997–98 season.", "fail"),
        ("He played in the 1996-97 season.", "He played in the 1996–97 season.", "pass"),
    ],
)
def test_a_season_and_a_year_it_spans_agree(claim: str, evidence: str, status: str) -> None:
    assert {r.check: r.status for r in run_checks(claim, evidence)}["date"] == status


# -- "<Name> County" and other names of a kind: the whole name, not its words ----------------

HEMP_FEST = (
    "The Moscow Hemp Fest is an annual cannabis event held in Moscow, Idaho, in the United States. "
    "The University of Idaho is located in the city of Moscow in Latah County in the northern "
    "portion of the state."
)


@pytest.mark.parametrize(
    ("claim", "evidence", "named"),
    [
        # HaluEval qa, a hallucinated answer ask showed: every word is in the evidence
        ("The Moscow Hemp Fest is held in Idaho County.", HEMP_FEST, "Latah County"),
        (
            "It flows into the Kansas River.",
            "It joins the Missouri River in Kansas.",
            "Missouri River",
        ),
        (
            "He studied at Boston University.",
            "He studied at Harvard University and in Boston.",
            "Harvard University",
        ),
    ],
)
def test_a_name_of_a_kind_the_evidence_gives_another_name_fails(
    claim: str, evidence: str, named: str
) -> None:
    r = check_entities(claim, evidence)
    assert r.status == "fail"
    assert r.evidence_value == named


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("The Moscow Hemp Fest is held in Latah County.", HEMP_FEST),
        # no other county in the evidence: left to the other checks and the model
        ("He was born in Oneida County.", "He was born in Rome, in Oneida County, New York."),
        ("He lives in St. Louis County.", "He lives in St. Louis County, Missouri."),
        # sentence boundaries do not join names ("New York. Kansas River")
        ("He lives in New York.", "He lives in New York. Kansas River is long."),
    ],
)
def test_a_name_of_a_kind_the_evidence_gives_passes(claim: str, evidence: str) -> None:
    assert check_entities(claim, evidence).status == "pass"


def _fail(claim: str, evidence: str, check: str) -> CheckResult:
    return next(r for r in run_checks(claim, evidence) if r.check == check)


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        # a rank is not a count: "9th" was said to disagree with the age "14" (WiCE, true claim
        # shown contradicted), and with "the first time", which ranks something else
        (
            "The school opened in fall 2016 with 400 9th-grade students.",
            "Audrey Chiang, 14, is reunited with friends. Portola High School opens to 400 "
            "freshmen in 2016.",
        ),
        (
            "The school opened in fall 2016 with 400 9th-grade students.",
            "Portola High School opens to 400 freshmen in 2016. It welcomes students for the "
            "first time on Wednesday.",
        ),
    ],
)
def test_a_rank_the_evidence_does_not_give_is_missing_not_contradicted(
    claim: str, evidence: str
) -> None:
    r = _fail(claim, evidence, "number")
    assert r.status == "fail"
    assert r.absent and r.evidence_value is None


@pytest.mark.parametrize(
    ("claim", "evidence", "other"),
    [
        ("She finished 3rd in the race.", "She finished 5th in the race.", "5th"),
        (
            "It was the 3rd largest city.",
            "It was the first time. It was the 2nd largest city.",
            "2nd",
        ),
    ],
)
def test_two_ranks_of_the_same_thing_still_disagree(claim: str, evidence: str, other: str) -> None:
    r = _fail(claim, evidence, "number")
    assert r.status == "fail" and not r.absent
    assert r.evidence_value == other


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        # HaluEval dialogue, a right answer shown contradicted: the evidence gives only the year
        ("It sure was on April 30, 2002.", "The film was released in 2002."),
        ("It opened in 2002.", "It opened in the 2000s."),
    ],
)
def test_a_date_more_specific_than_the_evidence_is_missing_not_contradicted(
    claim: str, evidence: str
) -> None:
    r = _fail(claim, evidence, "date")
    assert r.status == "fail"
    assert r.absent and "more specific than" in r.reason


def test_a_date_the_evidence_contradicts_still_fails_as_a_conflict() -> None:
    for claim, evidence in [
        ("It was released on April 30, 2002.", "The film was released on May 1, 2002."),
        ("It was released in 2003.", "The film was released in 2002."),
        ("It was released in the 1990s.", "The film was released in 2002."),
    ]:
        r = _fail(claim, evidence, "date")
        assert r.status == "fail" and not r.absent, claim


def test_a_month_the_evidence_gives_without_a_year_is_not_a_conflict() -> None:
    # WiCE, a true claim shown contradicted: 'June 2019' was compared with the article's dateline
    r = _fail(
        "Perez announced a series of debates, set to begin in June 2019.",
        "December 20, 2018 WASHINGTON - The Democratic National Committee announced a plan for "
        "12 primary debates, with the first planned for June.",
        "date",
    )
    assert r.status == "fail"
    assert r.absent and "more specific than June" in r.reason
    # ... but a date of the claim's own year that disagrees still does
    r = _fail("He was born in June 1990.", "He was born on 3 May 1990. In June he moved.", "date")
    assert r.status == "fail" and not r.absent


# issue 24, HaluEval summaries: right summaries were shown contradicted by a typed check that
# compared numbers counting different things, or missed a negation said without "not"
@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        # a score and an age share only the preposition after them ("2-1 *at*", "18 *at*")
        (
            "Crystal Palace beat Manchester City 2-1 at Selhurst Park on Monday night.",
            "There was poetic symmetry in Glenn Murray's humbling of Vincent Kompany at Selhurst "
            "Park on Monday night. Sure, Pique was just 18 at the time and playing for Manchester "
            "United's reserves.",
        ),
        (
            "Manchester United have won their last six Premier League games.",
            "Juan Mata has scored 4 goals for United since January.",
        ),
        # a count of games is no amount of money
        (
            "Manchester United have won their last six Premier League games.",
            "United spent £60million on Angel di Maria last summer.",
        ),
    ],
)
def test_numbers_counting_different_things_are_missing_not_contradicted(
    claim: str, evidence: str
) -> None:
    r = _fail(claim, evidence, "number")
    assert r.status == "fail"
    assert r.evidence_value is None, r.reason


def test_a_bare_number_the_evidence_counts_nothing_like_is_missing_not_contradicted() -> None:
    r = _fail(
        "United have won their last six Premier League games.",
        "United's run began when Pique was just 4 at the time of the move.",
        "number",
    )
    assert r.status == "fail"
    assert r.evidence_value is None


def test_an_amount_without_its_noun_still_disagrees_with_money() -> None:
    r = _fail("Revenue was 90 billion.", "Revenue reached $95B in 2023.", "number")
    assert r.status == "fail" and r.evidence_value == "$95B"


def test_two_counts_of_the_same_thing_still_disagree() -> None:
    r = _fail("The couple have seven children.", "The couple have eight children.", "number")
    assert r.status == "fail" and r.evidence_value == "eight"
    r = _fail("It rose 2 at the open.", "It rose 3 at the open.", "number")
    assert r.status == "fail" and r.evidence_value == "3"


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        (
            "Australian fashion designer Alex Perry won't show at this year's MBFWA.",
            "Perry pulls out of presenting: Acclaimed designer Alex Perry opts out of showing at "
            "this year's MBFWA.",
        ),
        (
            "The minister will not attend the summit.",
            "The minister pulled out of attending the summit.",
        ),
        ("She did not sign the deal.", "She declined to sign the deal."),
    ],
)
def test_a_negation_the_evidence_says_without_not_is_no_conflict(claim: str, evidence: str) -> None:
    assert _fail(claim, evidence, "polarity").status == "pass"


def test_an_implicit_negation_licenses_only_the_word_it_governs() -> None:
    ev = "Perry pulls out of presenting: Acclaimed designer Alex Perry is in Paris."
    assert _fail("Alex Perry is not a designer.", ev, "polarity").status == "fail"
    # a claim that repeats it, or says nothing of what it governs, agrees
    assert _fail("Alex Perry pulled out of presenting.", ev, "polarity").status != "fail"
    assert _fail("Alex Perry is a designer.", ev, "polarity").status != "fail"


@pytest.mark.parametrize(
    "claim",
    [
        # HaluEval summaries' article: a claim that leaves out "opts out of" states the opposite
        # (it was supported at p 0.86)
        "Alex Perry will show at this year's MBFWA.",
        "Alex Perry opted to present.",
    ],
)
def test_an_implicit_negation_in_the_evidence_is_the_opposite_of_a_claim_without_it(
    claim: str,
) -> None:
    ev = (
        "Perry pulls out of presenting: Acclaimed designer Alex Perry opts out of showing at "
        "this year's MBFWA."
    )
    r = _fail(claim, ev, "polarity")
    assert r.status == "fail" and "out of" in r.reason


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("The plane was found.", "The missing plane was found on Monday."),
        ("He chose tea.", "He chose tea instead of coffee."),
        ("Smith withdrew from the race.", "Smith withdrew from the race in May."),
    ],
)
def test_words_that_negate_nothing_the_claim_says_do_not_fail_it(claim: str, evidence: str) -> None:
    assert _fail(claim, evidence, "polarity").status != "fail"


def test_a_negation_governs_its_whole_clause() -> None:
    ev = (
        "Pulis will know he isn't yet guaranteed preserving his proud record of never being "
        "relegated. This is his seventh season in the top flight."
    )
    ok = "Pulis has never been in charge of a side who have been relegated."
    assert _fail(ok, ev, "polarity").status == "pass"
    # a clause of its own is not governed: the flip is still caught
    flip = "Pulis has never been in charge of a big side, but he was relegated."
    assert _fail(flip, ev, "polarity").status == "fail"
    assert _fail("Pulis has been relegated twice.", ev, "polarity").status == "fail"


@pytest.mark.parametrize(
    ("text", "numbers", "dates"),
    [
        # citing is not stating: a reference list and an author-year citation (Citation
        # Integrity claims were withheld on "... (Daly and Robinson, 2021)" and "[<|cit|>,10]")
        ("It peaked in June (Daly and Robinson, 2021).", [], ["June"]),
        ("Smith et al. (2020) found 12 cases [<|other_cit|>,10].", ["12"], []),
        ("The Pueblo [3] and the Navajo [5][6] were 7 tribes.", ["7"], []),
        ("Mechanisms are (1) an immune response and (2) direct damage.", [], []),
        # a year that is stated stays a year, and goals in a parenthesis stay a count
        ('She featured in a short film named "Leading with Intensity" (2019).', [], ["2019"]),
        ("Campbell (born in Paris, 1867) wrote it.", [], ["1867"]),
        ("Lewandowski (2), Muller and Alonso scored.", ["2"], []),
    ],
)
def test_reference_markers_are_neither_numbers_nor_dates(
    text: str, numbers: list[str], dates: list[str]
) -> None:
    assert [q.raw for q in find_quantities(text)] == numbers
    assert [d.raw for d in find_dates(text)] == dates


JAY = (
    "The pair share their images on Jay's tumblr blog as well as on Instagram, where Jay has "
    "735,000 followers and Alexis an impressive 1.1million. Their travels take them across the "
    "globe."
)


def test_a_total_the_claim_says_it_adds_up_is_found() -> None:
    """A right HaluEval summary was contradicted: "almost two million followers between them"
    is 735,000 + 1.1million."""
    claim = "The pair have almost two million followers between them."
    assert _fail(claim, JAY, "number").status == "pass"


@pytest.mark.parametrize(
    "claim",
    [
        "The pair have almost two million followers.",  # no cue: a sum is not what it says
        "The pair have five million followers between them.",  # a wrong total
        "Jay has two million followers.",
    ],
)
def test_a_sum_counts_only_where_the_claim_says_it_adds_up(claim: str) -> None:
    assert _fail(claim, JAY, "number").status == "fail"


# ---------------------------------------------------------------- held-out summaries (issue 24)


@pytest.mark.parametrize(
    ("claim", "evidence", "check"),
    [
        # a tokenised amount: "£50, 000" is £50,000 (XSumFaith), not £50
        (
            "A campaign to raise £50, 000 for British troops has reached £50, 000.",
            "The campaign, which set out to raise £50,000 for the troops, has now reached £50,000.",
            "number",
        ),
        # an age is no length of time (AggreFact)
        (
            "Obraniak was substituted after 30 minutes. The 30 - year - old was taken to hospital.",
            "Obraniak was substituted after 30 minutes and taken to hospital for tests.",
            "unit",
        ),
        # "km per hour" is a speed, like "kilometers per hour"
        (
            "The train spent 10.8 seconds traveling above 600 km per hour.",
            "The train spent 10.8 seconds traveling above 600 kilometers per hour.",
            "unit",
        ),
        # a claim of several sentences has no one closest window: each number is looked up
        # in the whole passage (AggreFact: "$ 17.1 million" was held against "$32.38")
        (
            "He made a generous donation of $ 32.38. The appeal managed to rake in over "
            "$ 17.1 million.",
            "Hugh made a generous donation of $32.38. Twitter users were quick to notice. In a "
            "record effort the appeal managed to rake in over $17.1 million that will be put "
            "towards research.",
            "number",
        ),
    ],
)
def test_summary_values_the_evidence_states_pass(claim: str, evidence: str, check: str) -> None:
    assert _fail(claim, evidence, check).status != "fail"


def test_a_capitalised_number_word_in_a_title_is_a_name() -> None:
    assert [q.raw for q in find_quantities("He wrote Cheaper by the Dozen and Ten Days.")] == []
    assert [q.raw for q in find_quantities("Ten studies found it. We saw a dozen.")] == [
        "Ten",
        "a dozen",
    ]
    # never a guess that hides a number: title case, or a capital alone, stays a number
    assert [q.raw for q in find_quantities("Man Scores Three Goals In Final")] == ["Three"]
    assert [q.raw for q in find_quantities("He won Five titles.")] == ["Five"]


@pytest.mark.parametrize(
    ("claim", "evidence", "check"),
    [
        (
            "The 30-year-old was taken to hospital.",
            "The 31-year-old was taken to hospital.",
            "number",
        ),
        (
            "The train reached 600 km per hour.",
            "The train reached 500 kilometers per hour.",
            "number",
        ),
        ("It raised £60, 000 in a week.", "It raised £50,000 in a week.", "number"),
    ],
)
def test_summary_values_that_differ_still_fail(claim: str, evidence: str, check: str) -> None:
    assert _fail(claim, evidence, check).status == "fail"


def test_an_age_is_stated_by_a_bare_number_not_by_a_length_of_time() -> None:
    claim = "The 30-year-old was taken to hospital."
    assert _fail(claim, "Obraniak, 30, was taken to hospital.", "number").status == "pass"
    assert _fail(claim, "He was taken to hospital after 30 minutes.", "number").status == "fail"
    # another age stated: a bare 30 elsewhere does not state this one
    other = "30 people were hurt. The 45-year-old was taken to hospital."
    assert _fail(claim, other, "number").status == "fail"


def test_each_sentence_of_a_claim_is_held_against_its_own_window() -> None:
    evidence = (
        "Sales rose 5% in 2019, the company said. Its new factory opened in Ohio. Profit fell "
        "4% in 2020 as costs grew."
    )
    assert _fail("Sales rose 5% in 2019. Profit fell 4% in 2020.", evidence, "number").status == (
        "pass"
    )
    wrong = _fail("Sales rose 5% in 2019. Profit fell 3% in 2020.", evidence, "number")
    assert wrong.status == "fail" and wrong.claim_value == "3%"


def test_the_first_sentence_failing_is_reported() -> None:
    evidence = "Sales rose 5% in 2019, the company said. Profit fell 4% in 2020 as costs grew."
    wrong = _fail("Sales rose 6% in 2019. Profit fell 4% in 2020.", evidence, "number")
    assert wrong.status == "fail" and wrong.claim_value == "6%"
    assert wrong.evidence_value == "5%"


def test_a_unit_in_a_later_sentence_is_checked() -> None:
    evidence = "Sales rose in 2019, the company said. The new line is 5 km long."
    units = _fail("Sales rose in 2019. The new line is 5 km long.", evidence, "unit")
    assert units.status == "pass"


@pytest.mark.parametrize(
    ("claim", "evidence", "status"),
    [
        # a right HaluEval summary: the two connectives join different events
        (
            "Came after she pruned neighbour's tree that was hanging over her garden.",
            "She was put on bail for seven months before being put on trial for chopping back "
            "tree branches hanging over her garden.",
            "pass",
        ),
        # the same events in the same order, the connective flipped
        (
            "The bridge opened after the war ended.",
            "The bridge opened before the war ended.",
            "fail",
        ),
        # "no longer X" against evidence that says X once was and has changed since
        (
            "City spending can no longer blow other teams out of the water.",
            "The landscape has changed since City were able to blow everybody out of the water.",
            "pass",
        ),
        (
            "City can no longer blow teams out of the water.",
            "City blow teams out of the water.",
            "fail",
        ),
    ],
)
def test_connectives_and_no_longer(claim: str, evidence: str, status: str) -> None:
    assert (_fail(claim, evidence, "polarity").status == "fail") == (status == "fail")


def test_an_age_in_years_is_stated_by_the_same_span_of_years() -> None:
    claim = "Geologist claims the site could be 9,000 to 20,000 years old."
    evidence = "The site was built between 9,000 and 20,000 years ago, he claims."
    assert _fail(claim, evidence, "number").status == "pass"


def test_once_or_previously_does_not_license_no_longer() -> None:
    claim = "He no longer trains the team."
    evidence = "He trains the team once a week, as previously reported."
    assert _fail(claim, evidence, "polarity").status == "fail"


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        # WiCE, true claims withheld: the page states the day and month, its date gives the year
        (
            'The band\'s album, "Emotive", was released on November 2, 2004.',
            "A Perfect Circle Album Preview (meta data) PUBLISHED DATETIME: 2004-10-19 14:49 "
            "eMOTIVe hits stores on Election Day, November 2.",
        ),
        (
            "Young faced Kedzie in a title rematch on April 9, 2011 in Albuquerque.",
            "Young vs Kedzie Set By Robert Sargent on February 22, 2011. The fighters will collide "
            "in a five-round title fight at Jackson's MMA Series 4 on April 9th in Albuquerque.",
        ),
    ],
)
def test_a_day_and_month_in_a_text_dated_in_the_claims_year_state_the_date(
    claim: str, evidence: str
) -> None:
    r = next(c for c in run_checks(claim, evidence) if c.check == "date")
    assert r.status == "pass", r.reason


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        # another year: the day and month alone do not state it
        (
            "It was released on November 2, 2005.",
            "PUBLISHED DATETIME: 2004-10-19. It hits stores on November 2.",
        ),
        # the same month of that year on another day leaves the year open
        (
            "It was released on November 2, 2004.",
            "It hits stores on November 2. The tour starts on 9 November 2004.",
        ),
        # a year alone does not date the text
        ("It was released on November 2, 2004.", "In 2004 the band toured. Out on November 2."),
    ],
)
def test_a_day_and_month_without_a_dated_text_of_that_year_stay_missing(
    claim: str, evidence: str
) -> None:
    r = next(c for c in run_checks(claim, evidence) if c.check == "date")
    assert r.status == "fail", r.reason


def test_an_age_is_looked_up_past_a_window_with_only_a_length_of_time() -> None:
    # AggreFact, a right summary withheld: the window nearest the claim had "30 minutes" only,
    # which is no age, so the age stated further on ("the 30-year-old") was never looked up
    claim = (
        "Obraniak was substituted after just 30 minutes against Fenerbahce. "
        "The 30 - year - old was taken to hospital with a suspected heart problem."
    )
    evidence = (
        "Caykur Rizespor midfielder Ludovic Obraniak was taken to hospital with a suspected heart "
        "problem after being substituted during his side's match against Fenerbahce on Saturday. "
        "The Poland international had to be replaced after just 30 minutes before being taken for "
        "tests. There were fears that the 30-year-old, who is on loan from Bundesliga club Werder "
        "Bremen had suffered a heart attack but he appears to have given the all-clear."
    )
    r = next(c for c in run_checks(claim, evidence) if c.check == "number")
    assert r.status == "pass", r.reason
    # a length of time is still no age
    r = next(
        c
        for c in run_checks("The 30-year-old was taken to hospital.", "He left after 30 minutes.")
        if c.check == "number"
    )
    assert r.status == "fail"


def test_a_day_and_month_before_the_texts_date_are_not_dated_by_it() -> None:
    # a year-bearing date after the day and month is no dateline: the year stays unstated
    r = next(
        c
        for c in run_checks(
            "It was released on November 2, 2004.",
            "The album hits stores on November 2. The band played Leeds on 19 October 2004.",
        )
        if c.check == "date"
    )
    assert r.status == "fail" and r.absent


def test_a_rank_written_out_is_a_number() -> None:
    # XSumFaith: "world number one Querrey" against "world number 29 Querrey"
    evidence = "The Australian, 21, beat world number 29 Querrey 6-4 6-4 in 53 minutes."
    results = run_checks("Kyrgios beat world number one Querrey in straight sets.", evidence)
    assert [r.check for r in failed(results)] == ["number"]
    ok = run_checks("Selby is world number one.", "World number one Mark Selby won.")
    assert not failed(ok)
    # "one" elsewhere is still no count to check
    assert [q.raw for q in find_quantities("He is one of the best, ranked number one.")] == ["one"]
    assert find_quantities("No one came; one of them left.") == []


def test_a_decade_written_short_is_a_decade_not_a_number() -> None:
    # a faithful dev claim ("In a Champions League match in the '90s, Lee Sharpe ...") was
    # withheld: "the number 90 does not appear in the evidence"
    claim = "In the '90s, Lee Sharpe backheeled a pass."
    assert [q.value for q in find_quantities(claim)] == []
    [decade] = find_dates(claim)
    assert decade.decade and decade.year == 1990
    by = {r.check: r for r in run_checks(claim, "In 1994 Lee Sharpe backheeled a pass.")}
    assert by["number"].status == "not_applicable" and by["date"].status == "pass"
    # a decade the evidence does not support is still not verified
    by = {r.check: r for r in run_checks(claim, "In 1984 Lee Sharpe backheeled a pass.")}
    assert by["date"].status == "fail"
    # '00s-'20s name no century for sure: neither a date nor the number 20
    assert find_dates("the Roaring ’20s") == [] and find_quantities("the Roaring ’20s") == []


@pytest.mark.parametrize(
    "text", ["these VH3-53 antibodies", "the effect of ASO#26 in mice", "an Airbus A320-200"]
)
def test_a_number_joined_to_a_lettered_word_is_part_of_a_name(text: str) -> None:
    # citation-integrity dev claims were withheld for "the number 53 / 26 does not appear"
    assert find_quantities(text) == []


@pytest.mark.parametrize(("text", "values"), [("ages 3-5", [3, 5]), ("item #5", [5])])
def test_ranges_and_ranks_stay_numbers(text: str, values: list[int]) -> None:
    assert [q.value for q in find_quantities(text)] == values


@pytest.mark.parametrize(
    ("claim", "evidence", "status"),
    [
        # the year of a citation the evidence gives its author with another year: wrong reference
        (
            "Neutrophils rose in patients (Chen et al., 2020, Qin et al., 2009).",
            "Neutrophils rose in patients (Chen et al., 2020, Qin et al., 2020).",
            "fail",
        ),
        (
            "IFN-I reduced replication (Lokugamage et al., 2008).",
            "IFN-I reduced replication, as others found (Lokugamage et al., 2020).",
            "fail",
        ),
        # the same citation, or an author the evidence does not cite: nothing against it
        (
            "IFN-I reduced replication (Lokugamage et al., 2020).",
            "IFN-I reduced replication, as others found (Lokugamage et al., 2020).",
            "not_applicable",
        ),
        (
            "IFN-I reduced replication (Smith and Jones, 2008).",
            "IFN-I reduced replication, as others found (Lokugamage et al., 2020).",
            "not_applicable",
        ),
    ],
)
def test_a_citation_year_changed_for_the_same_author_is_a_date_failure(
    claim: str, evidence: str, status: str
) -> None:
    """The perturbation benchmark's changed dates passed when the year sat in an author-year
    citation (read as a reference since Citation-Integrity's claims cite papers their evidence
    does not); the evidence citing the same author with another year is a wrong reference."""
    dates = {r.check: r for r in run_checks(claim, evidence)}["date"]
    assert dates.status == status, dates


def test_another_paper_of_the_same_first_author_is_no_changed_citation() -> None:
    """Citation-Integrity: "Daly and Robinson (2021)" beside "Daly et al., 2020" are two papers."""
    claim = "A second paper is Daly and Robinson (2021) [<|cit|>]."
    evidence = "Lockdowns raised distress (Daly et al., 2020)."
    assert {r.check: r for r in run_checks(claim, evidence)}["date"].status != "fail"
