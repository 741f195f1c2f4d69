"""A claim that copies an evidence sentence but swaps in a name the evidence never mentions."""

from __future__ import annotations

import pytest

from affidavit.core.settings import PolicySettings, VerifySettings
from affidavit.verify.cascade import ClaimCascade, chunks_from_texts, claim_from_text
from affidavit.verify.fakes import ScriptedScorer
from affidavit.verify.lexical import substituted_name

FILM = (
    "There Will Be Blood is a 2007 American drama film written and directed by Paul Thomas "
    "Anderson. It stars Daniel Day-Lewis."
)
BOND = (
    "You Only Live Twice (1967) is the fifth spy film in the James Bond series, and the fifth "
    "to star Sean Connery as the fictional MI6 agent James Bond."
)
BANK = (
    "The Bank of Japan said on Wednesday it would conduct emergency bond buying, in a move to "
    "contain elevated yields."
)


@pytest.mark.parametrize(
    ("claim", "evidence", "expected"),
    [
        (
            "There Will Be Blood is a 2007 Crucible drama film written and directed by Paul "
            "Thomas Anderson.",
            FILM,
            ("Crucible", "American"),
        ),
        # at the end of both sentences
        (
            "You Only Live Twice (1967) is the fifth spy film in the James Bond series, and the "
            "fifth to star Sean Connery as the fictional MI6 agent Moonraker.",
            BOND,
            ("Moonraker", "James Bond"),
        ),
        (
            "The Bank of Japan said on Thursday it would conduct emergency bond buying.",
            BANK,
            ("Thursday", "Wednesday"),
        ),
        # at the start of the claim
        (
            "Crucible is a 2007 American drama film written and directed by Paul Thomas Anderson.",
            FILM,
            None,  # the claim's first word may be an ordinary word: not judged
        ),
        (
            "Daniel Craig is a 2007 American drama film written by Paul Thomas Anderson.",
            "Daniel Craig stars. There Will Be Blood is a 2007 American drama film written by "
            "Paul Thomas Anderson.",
            None,  # the new words are in the evidence (the model and other checks judge it)
        ),
        # the same sentence, told truly, or shortened
        ("There Will Be Blood is a 2007 American drama film.", FILM, None),
        (
            "There Will Be Blood is a drama film directed by Paul Thomas Anderson.",
            FILM,
            None,
        ),
        # an abbreviation of the words it replaces
        (
            "The US Bank of Japan said on Wednesday it would conduct bond buying.",
            "The United States Bank of Japan said on Wednesday it would conduct bond buying.",
            None,
        ),
        # a lower-case replacement is no name: left to the model
        (
            "There Will Be Blood is a 2007 gritty drama film written and directed by Paul Thomas "
            "Anderson.",
            FILM,
            None,
        ),
        # two places changed: not a copy of the sentence
        (
            "There Will Be Blood is a 2009 Crucible drama film written and produced by Paul "
            "Thomas Anderson.",
            FILM,
            None,
        ),
        # too short to be a copy
        ("Blood is Crucible.", FILM, None),
        # the same words, spaced otherwise (held-out summaries write "Brazilian 's")
        (
            "Neymar watched El Clasico alongside the Brazilian 's sister Rafaella.",
            "Neymar watched El Clasico alongside the Brazilian's sister Rafaella.",
            None,
        ),
        (
            "He has played in all four of Villa'sFA Cup matches this season.",
            "He has played in all four of Villa's FA Cup matches this season.",
            None,
        ),
        # the sentence refers to its subject by a pronoun: the claim may name it
        (
            "The Bloods are identified by the red color worn by their members.",
            "The Bloods are a street gang. They are identified by the red color worn by their "
            "members.",
            None,
        ),
        (
            "The Crips are identified by the red color worn by their members.",
            "The Bloods are a street gang. They are identified by the red color worn by their "
            "members.",
            None,
        ),
    ],
)
def test_substituted_name(claim: str, evidence: str, expected: tuple[str, str] | None) -> None:
    assert substituted_name(claim, evidence) == expected


def _cascade() -> ClaimCascade:
    # a model that supports anything close to the evidence (the MiniLM model scored the swapped
    # film claim 0.87)
    return ClaimCascade(
        VerifySettings(cascade=["checks", "cross_encoder"], threads=1),
        PolicySettings(tau_entail=0.5, tau_contradict=0.5),
        scorers={"cross_encoder": ScriptedScorer(fn=lambda c, e: (0.99, 0.005, 0.005))},
    )


def test_a_name_swapped_into_a_copied_sentence_is_withheld_whatever_the_model_says() -> None:
    cascade = _cascade()
    chunks = chunks_from_texts([FILM])
    wrong = cascade.verify(
        claim_from_text(
            "There Will Be Blood is a 2007 Crucible drama film written and directed by Paul "
            "Thomas Anderson."
        ),
        chunks,
    )
    assert wrong.label == "unsupported"
    assert "American" in wrong.reason and "Crucible" in wrong.reason
    right = cascade.verify(
        claim_from_text("There Will Be Blood is a 2007 American drama film."), chunks
    )
    assert right.label == "supported", right.reason


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        (
            "You Only Live Twice (1967) is the fifth spy film in the James Bond series, and the "
            "fifth to star Sean Connery as the fictional MI6 agent Moonraker.",
            BOND,
        ),
        ("The Bank of Japan said on Thursday it would conduct emergency bond buying.", BANK),
    ],
)
def test_other_swapped_names_are_withheld(claim: str, evidence: str) -> None:
    v = _cascade().verify(claim_from_text(claim), chunks_from_texts([evidence]))
    assert v.label == "unsupported"
    assert "word for word" in v.reason


def test_a_lower_case_claim_with_a_swapped_country_stays_withheld() -> None:
    v = _cascade().verify(
        claim_from_text("the bank of india said on wednesday it would conduct bond buying."),
        chunks_from_texts([BANK]),
    )
    assert v.label == "unsupported"
