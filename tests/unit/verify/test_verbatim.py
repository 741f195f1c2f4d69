"""A claim the evidence states word for word is supported (issue 24: the README's own example)."""

from __future__ import annotations

import pytest

from affidavit.core.settings import PolicySettings, VerifySettings
from affidavit.core.types import CheckResult, Chunk
from affidavit.verify.cascade import ClaimCascade, chunks_from_texts, claim_from_text
from affidavit.verify.fakes import ScriptedScorer
from affidavit.verify.lexical import compressed_support, verbatim_support

FORTH = (
    "The Forth Bridge is a cantilever railway bridge across the Firth of Forth in the east of "
    "Scotland, 14 kilometres west of central Edinburgh. The Forth Bridge opened on 4 March 1890. "
    "It was designed by the English engineers Sir John Fowler and Sir Benjamin Baker."
)


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("The Forth Bridge opened on 4 March 1890.", FORTH),
        ("the forth bridge  opened on 4 March 1890", FORTH),
        ("Marie Curie won the prize.", "In 1903, Pierre Curie and Marie Curie won the prize."),
        ("It was built by Robert Stevenson.", "It was built by Robert Stevenson, an engineer."),
        (
            "The Eiffel Tower was completed in March 1889.",
            "The Eiffel Tower was completed in March 1889 and opened in May.",
        ),
    ],
)
def test_restatements_are_found(claim: str, evidence: str) -> None:
    span = verbatim_support(claim, evidence)
    assert span is not None
    assert claim.lower().strip(" .").split()[-1] in evidence[span[0] : span[1]].lower()


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        # under a negation, a report, a doubt or a condition: the evidence does not assert it
        ("Paris is the capital of France.", "It is not true that Paris is the capital of France."),
        ("Paris is the capital of France.", "Some claim that Paris is the capital of France."),
        ("Paris is the capital of France.", "If Paris is the capital of France, Lyon is not."),
        ("The bridge opened in 1890.", "The bridge opened in 1890, according to a myth."),
        # a fragment of a longer phrase
        ("Paris is the capital of", "Paris is the capital of France."),
        ("The bridge is 2 kilometres", "The bridge is 2 kilometres shorter than the tunnel."),
        ("Paris is the capital", "Paris is the capital of France."),
        # too short to count, and a negated claim is never matched this way
        ("It opened.", "It opened."),
        ("The bridge did not open.", "The bridge did not open."),
        # words from two sentences
        ("Scotland. The Forth Bridge opened", FORTH),
    ],
)
def test_non_assertions_and_fragments_are_not(claim: str, evidence: str) -> None:
    assert verbatim_support(claim, evidence) is None


def passing(claim: str, evidence: str) -> list[CheckResult]:
    return [CheckResult(check="number", status="pass")]


def test_the_cascade_never_calls_a_verbatim_restatement_unsupported() -> None:
    doubtful = ScriptedScorer(default=(0.47, 0.43, 0.10))
    casc = ClaimCascade(
        VerifySettings(cascade=["checks", "cross_encoder"], threads=1),
        PolicySettings(tau_entail=0.5, tau_contradict=0.5),
        scorers={"cross_encoder": doubtful},
        check_fn=passing,
    )
    chunk = Chunk(text=FORTH, id="forth")
    v = casc.verify(claim_from_text("The Forth Bridge opened on 4 March 1890."), [chunk])
    assert v.label == "supported" and v.complete
    (span,) = v.evidence
    assert span.text == "The Forth Bridge opened on 4 March 1890."
    assert v.stages[-1].stage == "verbatim"
    assert "word for word" in v.reason
    # two sentences, each restated: supported; one of them not: the model's verdict stands
    two = (
        "The Forth Bridge opened on 4 March 1890. It was designed by the English engineers "
        "Sir John Fowler and Sir Benjamin Baker."
    )
    assert casc.verify(claim_from_text(two), [chunk]).label == "supported"
    other = "The Forth Bridge opened on 4 March 1890. It was designed by Gustave Eiffel."
    assert casc.verify(claim_from_text(other), [chunk]).label == "unsupported"


def test_a_wrong_claim_inside_a_negated_sentence_stays_unverified() -> None:
    casc = ClaimCascade(
        VerifySettings(cascade=["checks", "cross_encoder"], threads=1),
        PolicySettings(tau_entail=0.5, tau_contradict=0.5),
        scorers={"cross_encoder": ScriptedScorer(default=(0.3, 0.6, 0.1))},
        check_fn=passing,
    )
    chunk = Chunk(text="It is false that the Forth Bridge opened on 4 March 1891.", id="x")
    v = casc.verify(claim_from_text("The Forth Bridge opened on 4 March 1891."), [chunk])
    assert v.label == "unsupported"


# ------------------------------------------------------------------ compressed support
HINDER = (
    "Hinder is an American rock band from Oklahoma that was formed in 2001 by lead singer "
    "Austin Winkler.The Fatima Mansions were an art rock group formed in 1988 by Cork "
    "singer/keyboardist Cathal Coughlan, formerly of Microdisney."
)


@pytest.mark.parametrize(
    "claim",
    [
        # the ask benchmark's withheld true sentences (the model: p_entail 0.07)
        "The Fatima Mansions was formed in 1988.",
        "The Fatima Mansions were formed in 1988.",
        "Hinder was formed in 2001.",
        "Hinder was formed in 2001 by lead singer Austin Winkler.",
    ],
)
def test_a_claim_stated_but_for_a_description_of_its_subject_is_found(claim: str) -> None:
    assert compressed_support(claim, HINDER) is not None


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("Hinder was formed in 1988.", HINDER),
        ("The Fatima Mansions was formed by Microdisney.", HINDER),
        ("Austin Winkler was formed in 2001.", HINDER),
        # the predicate belongs to another noun of the left-out phrase
        ("Tom was born in 1950.", "Tom is the brother of Jerry who was born in 1950."),
        ("Tom was born in 1950.", "Tom met Jerry, who was born in 1950."),
        ("Tom was born in 1950.", "Tom is a friend and a rival who was born in 1950."),
        # denied, hedged, or not the whole statement
        ("Tom was born in 1950.", "Tom is not a man who was born in 1950."),
        ("Tom was born in 1950.", "Tom is reportedly a man who was born in 1950."),
        ("Tom was born in 1950.", "Tom is a man who was born in 1950 or 1951."),
        # not at the start of the sentence: who it is about cannot be told
        ("Tom was born in 1950.", "Yesterday Tom is a man who was born in 1950."),
    ],
)
def test_no_compressed_support_where_the_shape_does_not_hold(claim: str, evidence: str) -> None:
    assert compressed_support(claim, evidence) is None


def test_the_cascade_supports_a_compressed_statement_the_model_doubts() -> None:
    doubtful = ScriptedScorer(default=(0.07, 0.6, 0.33))
    casc = ClaimCascade(
        VerifySettings(cascade=["checks", "cross_encoder"], threads=1),
        PolicySettings(tau_entail=0.5, tau_contradict=0.9),
        scorers={"cross_encoder": doubtful},
    )
    ev = chunks_from_texts([HINDER])
    v = casc.verify(claim_from_text("The Fatima Mansions was formed in 1988."), ev)
    assert v.label == "supported" and v.stages[-1].stage == "verbatim"
    assert "description of its subject" in v.reason
    # a typed check's conflict still wins: the year differs
    assert casc.verify(claim_from_text("Hinder was formed in 1988."), ev).label != "supported"
    off = ClaimCascade(
        VerifySettings(cascade=["checks", "cross_encoder"], threads=1, compressed_support=False),
        PolicySettings(tau_entail=0.5, tau_contradict=0.9),
        scorers={"cross_encoder": doubtful},
    )
    assert off.verify(claim_from_text("The Fatima Mansions was formed in 1988."), ev).label != (
        "supported"
    )
