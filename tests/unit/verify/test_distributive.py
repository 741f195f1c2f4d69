"""A claim about both of two members is said of each (`distributive_claims`, the cascade)."""

from __future__ import annotations

import pytest

from affidavit.core.settings import PolicySettings, VerifySettings
from affidavit.core.types import CheckResult, Chunk
from affidavit.verify.cascade import ClaimCascade, claim_from_text
from affidavit.verify.combiner import Combiner
from affidavit.verify.fakes import ScriptedScorer
from affidavit.verify.lexical import distributive_claims

BANDS = (
    "Yellowcard was an American pop punk band that formed in Jacksonville, Florida, in 1997. "
    "For Against is a United States post-punk/dream pop band from Lincoln, Nebraska."
)


@pytest.mark.parametrize(
    ("claim", "each"),
    [
        (
            "Both Yellowcard and For Against are American pop punk bands.",
            [
                "Yellowcard is an American pop punk band.",
                "For Against is an American pop punk band.",
            ],
        ),
        (
            "Yellowcard and For Against were both American bands.",
            ["Yellowcard was an American band.", "For Against was an American band."],
        ),
        # the members are read from the evidence: the two names it describes as a band
        (
            "Both bands are American pop punk bands.",
            [
                "Yellowcard is an American pop punk band.",
                "For Against is an American pop punk band.",
            ],
        ),
        (
            "Both Yellowcard and For Against formed in the United States.",
            [
                "Yellowcard formed in the United States.",
                "For Against formed in the United States.",
            ],
        ),
        (
            "Both Yellowcard and For Against are American.",
            ["Yellowcard is American.", "For Against is American."],
        ),
    ],
)
def test_a_claim_about_both_is_said_of_each(claim: str, each: list[str]) -> None:
    assert distributive_claims(claim, BANDS) == each


@pytest.mark.parametrize(
    "claim",
    [
        "Yellowcard is an American pop punk band.",  # one member
        "Both are American.",  # who, the claim does not say
        "Both films were released in 1990.",  # the evidence describes no film
        "Both Smith and Jones play for Chelsea.",  # present tense: 'plays' is not guessed
        "Both Smith and Jones are the founders of X.",  # a relation between them, not each
        "Are both Yellowcard and For Against American bands?",
    ],
)
def test_what_is_not_said_of_each_is_left_alone(claim: str) -> None:
    assert distributive_claims(claim, BANDS) is None


def _cascade(**kw: object) -> ClaimCascade:
    # a model that supports a claim when every word of what it says its subject is occurs in
    # the sentences about that subject (the whole evidence for a "Both ..." claim): it cannot
    # tell which member a description belongs to when it reads both at once
    def probs(claim: str, evidence: str) -> tuple[float, float, float]:
        words = claim.rstrip(".").split()
        verb = next(i for i, w in enumerate(words) if w in ("is", "are", "was", "were"))
        said = [w.lower().removesuffix("s") for w in words[verb + 1 :] if w not in ("a", "an")]
        about = (
            evidence
            if claim.startswith("Both")
            else " ".join(s for s in evidence.split(". ") if s.startswith(words[0]))
        )
        seen = {w.strip(".,").lower() for w in about.split()}
        ok = all(w in seen for w in said)
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


def test_the_cascade_withholds_what_one_member_lacks() -> None:
    chunk = Chunk(text=BANDS, id="bands")
    v = _cascade().verify(claim_from_text("Both bands are American pop punk bands."), [chunk])
    assert v.label == "unsupported" and v.complete
    assert v.stages[-1].stage == "roles"
    assert "For Against is an American pop punk band." in v.reason
    # what each member is said to be stays supported
    ok = _cascade().verify(claim_from_text("Both bands are pop bands."), [chunk])
    assert ok.label == "supported"
    # switched off, the whole claim's verdict stands
    off = _cascade(distributive=False).verify(
        claim_from_text("Both bands are American pop punk bands."), [chunk]
    )
    assert off.label == "supported"
