"""Birth and death dates in a parenthesis after a name (`affidavit.verify.lifespan`)."""

from __future__ import annotations

import pytest

from affidavit.core.settings import PolicySettings, VerifySettings
from affidavit.verify.cascade import ClaimCascade, chunks_from_texts, claim_from_text
from affidavit.verify.fakes import ScriptedScorer
from affidavit.verify.lifespan import lifespan_support

CAMPBELL = (
    "Elspeth Mary Campbell, Baroness Campbell of Pittenweem (born January 1940) is the wife of "
    "the former Liberal Democrat leader Sir Menzies Campbell."
)
DOOLITTLE = (
    "He served as the wingman for Jimmy Doolittle during a raid on Rome.James Harold Doolittle "
    "(December 14, 1896 – September 27, 1993) was an American aviation pioneer."
)


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("Elspeth Campbell was born on January 1940.", CAMPBELL),
        ("Elspeth Campbell was born in 1940.", CAMPBELL),
        ("James Doolittle died on September 27, 1993.", DOOLITTLE),
        ("James Doolittle was born in 1896.", DOOLITTLE),
        ("Doolittle was born on December 14, 1896.", DOOLITTLE),
        ("Doolittle died on 27 September 1993.", DOOLITTLE),
    ],
)
def test_a_date_in_the_parenthesis_after_the_name_supports(claim: str, evidence: str) -> None:
    span = lifespan_support(claim, evidence)
    assert span is not None
    assert "(" in evidence[span[0] : span[1]]


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        # another date
        ("Elspeth Campbell was born in 1941.", CAMPBELL),
        ("James Doolittle died in 1896.", DOOLITTLE),
        ("James Doolittle was born on December 15, 1896.", DOOLITTLE),
        # the claim states more than a date
        ("James Doolittle was born in Alameda in 1896.", DOOLITTLE),
        ("James Doolittle was born in 1896 and flew in 1942.", DOOLITTLE),
        # someone else: another person the sentence names, a name the evidence does not give
        ("Menzies Campbell was born in January 1940.", CAMPBELL),
        ("Jimmy Doolittle was born in 1896.", DOOLITTLE),
        # the parenthesis is not after the sentence's opening name
        (
            "John Smith was born in 1900.",
            "The son of John Smith (born 1900) was a painter.",
        ),
        ("John Smith was born in 1900.", "John Smith's father (born 1900) was a painter."),
        # not a birth or a death
        ("John Smith was married in 1900.", "John Smith (born 1900) was a painter."),
        # a decade is not a date
        ("John Smith was born in the 1900s.", "John Smith (born 1900) was a painter."),
    ],
)
def test_anything_else_is_left_to_the_model(claim: str, evidence: str) -> None:
    assert lifespan_support(claim, evidence) is None


def _cascade(**kw: object) -> ClaimCascade:
    # a model that never reads the parenthesis
    return ClaimCascade(
        VerifySettings(cascade=["checks", "cross_encoder"], threads=1, **kw),  # type: ignore[arg-type]
        PolicySettings(tau_entail=0.5, tau_contradict=0.5),
        scorers={"cross_encoder": ScriptedScorer(fn=lambda c, e: (0.2, 0.7, 0.1))},
    )


def test_the_cascade_supports_it_and_says_why() -> None:
    claim = claim_from_text("Elspeth Campbell was born in January 1940.")
    v = _cascade().verify(claim, chunks_from_texts([CAMPBELL]))
    assert v.label == "supported"
    assert "parenthesis" in v.reason
    assert v.evidence and "(born January 1940)" in v.evidence[0].text
    # the setting turns it off: the model's verdict stands
    off = _cascade(lifespan_support=False).verify(claim, chunks_from_texts([CAMPBELL]))
    assert off.label != "supported"


def test_a_wrong_date_is_not_supported_by_it() -> None:
    claim = claim_from_text("Elspeth Campbell was born in January 1941.")
    assert _cascade().verify(claim, chunks_from_texts([CAMPBELL])).label != "supported"
