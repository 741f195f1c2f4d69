"""Who did what: a predicate the evidence gives to someone else is never verified (issue 24)."""

from __future__ import annotations

import pytest

from affidavit.core.settings import PolicySettings, VerifySettings
from affidavit.core.types import CheckResult, Chunk
from affidavit.verify.cascade import ClaimCascade, claim_from_text
from affidavit.verify.fakes import ScriptedScorer
from affidavit.verify.lexical import role_mismatch

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
