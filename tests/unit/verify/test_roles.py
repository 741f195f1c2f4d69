"""Who did what: a predicate the evidence gives to someone else is never verified (issue 24)."""

from __future__ import annotations

import pytest

from affidavit.core.settings import PolicySettings, VerifySettings
from affidavit.core.types import CheckResult, Chunk
from affidavit.verify.cascade import ClaimCascade, claim_from_text
from affidavit.verify.combiner import Combiner
from affidavit.verify.fakes import ScriptedScorer
from affidavit.verify.lexical import role_mismatch, subject_focus, support_about_someone_else

APOLLO = (
    "Apollo 11 was the American spaceflight that first landed humans on the Moon. Commander "
    "Neil Armstrong and lunar module pilot Buzz Aldrin landed the lunar module Eagle on July 20, "
    "1969. Armstrong became the first person to step onto the lunar surface six hours and 39 "
    "minutes later, and Aldrin joined him 19 minutes after that."
)


@pytest.mark.parametrize(
    ("claim", "who"),
    [
        ("Buzz Aldrin became the first person to step onto the lunar surface.", "Armstrong"),
        ("Michael Collins landed the lunar module Eagle on July 20, 1969.", "Buzz Aldrin"),
    ],
)
def test_a_predicate_given_to_someone_else_is_found(claim: str, who: str) -> None:
    found = role_mismatch(claim, APOLLO)
    assert found is not None and found[0] == who


def test_the_name_read_backwards_stops_at_the_sentence_start() -> None:
    found = role_mismatch(
        "Michael Collins fell out with the head coach in 2009.",
        "He nearly joined Barcelona. Ribery fell out with the head coach in 2009.",
    )
    assert found is not None and found[0] == "Ribery"


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("Neil Armstrong became the first person to step onto the lunar surface.", APOLLO),
        ("Aldrin joined him 19 minutes after that.", APOLLO),
        # a pronoun before the predicate: who it is cannot be told, nothing is found
        ("Pierre Curie won the Nobel Prize alone.", "Then she won the Nobel Prize alone."),
        # names sharing a word count as the same subject (never withheld on a guess)
        ("Pierre Curie won the prize in 1903.", "Marie Curie won the prize in 1903."),
        # the evidence gives it to the claim's subject too
        (
            "Ada Lovelace wrote the first program for it.",
            "Charles Babbage wrote the first program for it. Ada Lovelace wrote the first "
            "program for it.",
        ),
        # too short a predicate to judge
        ("Aldrin walked there.", "Armstrong walked there."),
        ("The Eiffel Tower was completed in March 1889.", "The tower was completed in March 1889."),
        # a description, not a name, on either side: it may be the same one (held-out summaries)
        (
            "The Reds are seven points behind fourth placed Manchester City.",
            "Liverpool are seven points behind fourth placed Manchester City.",
        ),
        (
            "Leicester host Swansea on Saturday just three points from safety.",
            "Boss Nigel Pearson has urged Leicester to stay calm. The Foxes host Swansea on "
            "Saturday just three points from safety.",
        ),
        # a common noun capitalised at the sentence's start ("police" elsewhere) is no name
        (
            "Police also handled 115,000 drug-related crimes during the campaign.",
            "The police seized 43 tons of drugs. Authorities also handled 115,000 drug-related "
            "crimes during the campaign.",
        ),
        # the name read backwards stops at the sentence's start ("Barcelona. Ribery ...")
        (
            "Franck Ribery fell out with then-head coach Louis van Gaal.",
            "He nearly joined Barcelona. Ribery fell out with then-head coach Louis van Gaal.",
        ),
    ],
)
def test_nothing_is_found_where_it_cannot_be_told(claim: str, evidence: str) -> None:
    assert role_mismatch(claim, evidence) is None


def test_the_cascade_withholds_a_swapped_role_the_model_supports() -> None:
    sure = ScriptedScorer(default=(0.95, 0.04, 0.01))
    casc = ClaimCascade(
        VerifySettings(cascade=["checks", "cross_encoder"], threads=1),
        PolicySettings(tau_entail=0.5, tau_contradict=0.5),
        scorers={"cross_encoder": sure},
        check_fn=lambda c, e: [CheckResult(check="number", status="pass")],
    )
    chunk = Chunk(text=APOLLO, id="apollo")
    v = casc.verify(
        claim_from_text("Buzz Aldrin became the first person to step onto the lunar surface."),
        [chunk],
    )
    assert v.label == "unsupported" and v.complete and v.p_entail == 0.0
    assert v.stages[-1].stage == "roles" and "Armstrong" in v.reason
    ok = casc.verify(
        claim_from_text("Neil Armstrong became the first person to step onto the lunar surface."),
        [chunk],
    )
    assert ok.label == "supported"


# ---------------------------------------------------------------------- subject focus
COLLINS = (
    APOLLO + " Michael Collins flew the command module Columbia alone in lunar orbit while they "
    "were on the surface. The crew returned to Earth on July 24, 1969."
)
CURIE = (
    "Marie Curie was the first woman to win a Nobel Prize. She shared the 1903 Nobel Prize in "
    "Physics with Pierre Curie and Henri Becquerel, and she won the 1911 Nobel Prize in Chemistry "
    "alone. Albert Einstein won the 1921 Nobel Prize in Physics. He was born in Ulm."
)


def test_subject_focus_drops_the_sentences_about_someone_else() -> None:
    focused = subject_focus("Michael Collins walked on the Moon with Armstrong.", COLLINS)
    assert focused is not None
    assert "Collins flew the command module" in focused
    assert "The crew returned" in focused  # names no one: kept
    assert "Armstrong became" not in focused and "Buzz Aldrin landed" not in focused
    # a sentence opening with a pronoun goes with the one before it
    einstein = subject_focus("Marie Curie won the 1921 Nobel Prize with Albert Einstein.", CURIE)
    assert einstein is not None
    assert "she won the 1911 Nobel Prize" in einstein
    assert "Einstein" not in einstein and "Ulm" not in einstein


def test_subject_focus_drops_a_full_named_other_given_the_claims_partner() -> None:
    evidence = (
        "Thomas Edward Yorke (born 7 October 1968) is an English musician, the singer of the "
        "band Radiohead.Bruce Guthro (born 1961) is a Canadian singer. Guthro has recorded as a "
        "solo artist, and in 1998 joined the band Runrig."
    )
    focused = subject_focus("Bruce Guthro is a member of the band Radiohead.", evidence)
    assert focused is not None
    assert "Radiohead" not in focused and "joined the band Runrig" in focused
    # a one-word opener ("The Filipino", "Pacquiao's rival") is not a full name: it stays
    news = "The Scot beat Federer in the final. Andy Murray was born in Glasgow."
    assert subject_focus("Andy Murray beat Federer.", news) is None
    # Einstein's prize is no support for a claim about Curie's prizes
    curie = subject_focus("Marie Curie won two Nobel Prizes.", CURIE)
    assert curie is not None and "Einstein" not in curie and "Ulm" not in curie


def test_a_day_or_a_month_in_the_claim_is_no_partner() -> None:
    # SummEdits dev rows: six faithful paraphrases of the Bank of Japan sentence were withheld,
    # because the sentence about New Zealand's central bank "on Wednesday" was taken away as a
    # sentence about the claim's partner "Wednesday"
    evidence = (
        "New Zealand's central bank raised interest rates by 50 basis points on Wednesday. "
        "The Bank of Japan said on Wednesday it would conduct emergency bond buying."
    )
    claim = "The Bank of Japan declared on Wednesday it would perform emergency bond buying."
    assert subject_focus(claim, evidence) is None
    assert subject_focus(claim.replace("Wednesday", "5 January"), evidence) is None
    # a named partner still takes its sentences away
    with_partner = "The Bank of Japan bought bonds on Wednesday with New Zealand."
    focused = subject_focus(with_partner, evidence)
    assert focused is not None and "New Zealand" not in focused


def test_subject_focus_reads_a_full_name_followed_by_an_apposition() -> None:
    # HaluEval qa, a hallucinated answer ask showed verified (p 0.85): Sutter founded the fort;
    # his sentence opens "John Augustus Sutter (...), born Johann August Suter, was ..."
    evidence = (
        "The Kern and Sutter massacres refer to a campaign on March 23, 1847 in which men led by "
        "Captain Edward M. Kern and rancher John Sutter killed twenty California Indians.John "
        "Augustus Sutter (February 20, 1803 - June 18, 1880), born Johann August Suter, was a "
        "pioneer of California known for establishing Sutter's Fort in the area that would "
        "become Sacramento, California."
    )
    focused = subject_focus(
        "Captain Edward M. Kern established a fort in Sacramento, California.", evidence
    )
    assert focused is not None
    assert "Sutter's Fort" not in focused and "Captain Edward M. Kern" in focused


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        # the evidence never names the claim's subject: nothing to focus on
        ("Yuri Gagarin orbited the Earth.", APOLLO),
        # every sentence is about the subject (or no one): nothing would go
        ("Neil Armstrong walked on the Moon.", "Neil Armstrong walked on the Moon in 1969."),
        # not a claim that opens with a name
        ("The first Moon landing was in 1969.", APOLLO),
        ("Who walked on the Moon? Neil Armstrong.", APOLLO),
        # the claim names no one else: sentences about other people stay (news text calls its
        # subject "the Filipino" as often as by name)
        ("Marie Curie won two prizes.", CURIE),
        # a capitalised opener is not a name ("However ...")
        (
            "Marie Curie won two prizes with Pierre.",
            "Marie Curie won a prize with Pierre. However the second came later.",
        ),
    ],
)
def test_subject_focus_leaves_what_it_cannot_tell(claim: str, evidence: str) -> None:
    assert subject_focus(claim, evidence) is None


def _focus_cascade(**kw: object) -> ClaimCascade:
    # a model that reads only whether "walked on the Moon" appears anywhere (ignores who)
    def probs(claim: str, evidence: str) -> tuple[float, float, float]:
        ok = "step onto the lunar surface" in evidence or "Collins" not in claim
        return (0.9, 0.08, 0.02) if ok else (0.1, 0.8, 0.1)

    return ClaimCascade(
        VerifySettings(cascade=["checks", "cross_encoder"], threads=1, **kw),  # type: ignore[arg-type]
        PolicySettings(tau_entail=0.5, tau_contradict=0.5),
        scorers={"cross_encoder": ScriptedScorer(fn=probs)},
        check_fn=lambda c, e: [CheckResult(check="number", status="pass")],
        combiner=Combiner(
            features=["pe_whole"], mean=[0.5], scale=[0.1], coef=[3.0], intercept=0.0, tau=0.5
        ),
    )


def test_the_cascade_withholds_what_only_others_sentences_support() -> None:
    casc = _focus_cascade()
    chunk = Chunk(text=COLLINS, id="apollo")
    v = casc.verify(claim_from_text("Michael Collins walked on the Moon with Armstrong."), [chunk])
    assert v.label == "unsupported" and v.complete and v.p_entail == 0.0
    assert v.stages[-1].stage == "roles" and "someone else" in v.reason
    # the same claim about someone the focused sentences do support stays supported
    ok = casc.verify(claim_from_text("Neil Armstrong walked on the Moon."), [chunk])
    assert ok.label == "supported"
    # switched off, the model's verdict stands
    off = _focus_cascade(subject_focus=False)
    assert (
        off.verify(
            claim_from_text("Michael Collins walked on the Moon with Armstrong."), [chunk]
        ).label
        == "supported"
    )


@pytest.mark.parametrize(
    ("claim", "spans", "other"),
    [
        # the sentence that supports it speaks of someone else and never names the subject
        (
            "Norway was mentioned in the inscription of the disc.",
            ["The Danish Viking king, Harald Bluetooth, is mentioned in the inscription."],
            "Danish Viking",
        ),
        (
            "Buzz Aldrin walked on the Moon.",
            ["Neil Armstrong walked on the Moon."],
            "Neil Armstrong",
        ),
    ],
)
def test_support_about_someone_else_is_found(claim: str, spans: list[str], other: str) -> None:
    found = support_about_someone_else(claim, spans)
    assert found is not None and other.split()[-1] in found


@pytest.mark.parametrize(
    ("claim", "spans"),
    [
        # the span names the subject
        ("Neil Armstrong walked on the Moon.", ["Armstrong walked on the Moon with Aldrin."]),
        # a pronoun or "It" continues a sentence that may name the subject
        (
            "Marie Curie won the 1911 Nobel Prize in Chemistry alone.",
            [
                "She shared the 1903 Nobel Prize in Physics with Pierre Curie and Henri "
                "Becquerel, and she won the 1911 Nobel Prize in Chemistry alone."
            ],
        ),
        (
            "The Eiffel Tower was completed in March 1889.",
            ["It was completed in March 1889 by Gustave Eiffel's company."],
        ),
        # a description, no full name of anyone else ("the Scot" is how news names its subject)
        ("Andy Murray beat Roger Federer.", ["The Scot beat Roger Federer in the final."]),
        # not a claim that opens with a name
        ("The final was played in 2012.", ["Neil Armstrong walked on the Moon in 1969."]),
    ],
)
def test_support_about_someone_else_leaves_the_rest(claim: str, spans: list[str]) -> None:
    assert support_about_someone_else(claim, spans) is None


def test_the_cascade_withholds_support_about_someone_else_when_asked() -> None:
    disc = "The Danish Viking king, Harald Bluetooth, is mentioned in the inscription of the disc."
    claim = claim_from_text("Norway was mentioned in the inscription of the disc.")
    # the scripted model supports everything: only the rule can withhold
    assert _focus_cascade().verify(claim, [Chunk(text=disc, id="d")]).label == "supported"
    on = _focus_cascade(subject_in_support=True).verify(claim, [Chunk(text=disc, id="d")])
    assert on.label == "unsupported" and on.stages[-1].stage == "roles"
    assert "never name its subject" in on.reason
