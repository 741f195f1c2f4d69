"""The wrong-place check: a claim that names a country or state the evidence does not, where the
evidence names another, is not supported (issue 24: "Paris is in Germany." was verified)."""

from __future__ import annotations

import pytest

from affidavit.core.settings import PolicySettings, VerifySettings
from affidavit.verify.cascade import ClaimCascade, chunks_from_texts, claim_from_text
from affidavit.verify.checks import check_entities
from affidavit.verify.combiner import Combiner
from affidavit.verify.fakes import ScriptedScorer
from affidavit.verify.places import places_in, wrong_place


def test_places_are_found_with_their_short_forms_and_adjectives() -> None:
    keys = {p.key for p in places_in("An American band toured the UK, France and Ohio.")}
    assert keys == {"US", "GB", "FR", "US-OH"}
    assert places_in("a china plate") == ()  # names are written with capitals
    # more often a person than a country: left out
    assert places_in("Michael Jordan met Chad.") == ()
    # the longest name wins: New Mexico is a state, not Mexico
    assert {p.key for p in places_in("Santa Fe, New Mexico")} == {"US-NM"}


@pytest.mark.parametrize(
    ("claim", "evidence", "expected"),
    [
        ("Paris is in Germany.", "Paris is the capital of France.", ("DE", {"FR"})),
        ("She was born in Texas.", "She was born in Ohio in 1950.", ("US-TX", {"US-OH"})),
        ("Hinder is from Canada.", "Hinder is an American rock band.", ("CA", {"US"})),
    ],
)
def test_a_place_the_evidence_replaces_is_found(
    claim: str, evidence: str, expected: tuple[str, set[str]]
) -> None:
    found = wrong_place(claim, evidence)
    assert found is not None
    assert found[0].key == expected[0] and {q.key for q in found[1]} == expected[1]


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("Paris is in France.", "Paris is the capital of France."),
        ("Paris is a French city.", "Paris is the capital of France."),
        # a state inside the claim's country counts for it
        ("She was born in the United States.", "She was born in Ohio in 1950."),
        ("Hinder is a band from the United States.", "Hinder is an American rock band."),
        # the evidence names no place: absence is for the model and the combiner to weigh
        ("Paris is in Germany.", "Paris has many museums."),
        # a country against states: not the same kind
        ("The band is from Canada.", "The band formed in Ohio."),
    ],
)
def test_no_wrong_place_where_none_is_stated(claim: str, evidence: str) -> None:
    assert wrong_place(claim, evidence) is None


def test_the_entity_check_reports_the_place_the_evidence_names() -> None:
    r = check_entities("Paris is in Germany.", "Paris is the capital of France.")
    assert r.status == "fail" and r.claim_value == "Germany" and r.evidence_value == "France"


def test_the_cascade_does_not_support_a_claim_in_the_wrong_place() -> None:
    casc = ClaimCascade(
        VerifySettings(cascade=["checks", "cross_encoder"], threads=1),
        PolicySettings(tau_entail=0.5, tau_contradict=0.5),
        scorers={"cross_encoder": ScriptedScorer(default=(0.9, 0.08, 0.02))},
        combiner=Combiner(
            features=["pe_whole"], mean=[0.5], scale=[0.1], coef=[3.0], intercept=0.0, tau=0.5
        ),
    )
    ev = chunks_from_texts(["Paris is the capital of France."])
    v = casc.verify(claim_from_text("Paris is in Germany."), ev)
    assert v.label == "unsupported"  # not contradicted: the evidence says where, not where not
    assert "different country or state" in v.reason
    assert casc.verify(claim_from_text("Paris is in France."), ev).label == "supported"


def test_a_wrong_place_makes_a_differing_year_say_nothing() -> None:
    """The evidence is about somewhere else: its year is no contradiction (issue 12's
    University of Texas against a passage on the University of Virginia)."""
    casc = ClaimCascade(
        VerifySettings(cascade=["checks", "cross_encoder"], threads=1),
        PolicySettings(tau_entail=0.5, tau_contradict=0.5),
        scorers={"cross_encoder": ScriptedScorer(default=(0.3, 0.3, 0.4))},
        combiner=Combiner(
            features=["pe_whole"], mean=[0.5], scale=[0.1], coef=[3.0], intercept=0.0, tau=0.5
        ),
    )
    ev = chunks_from_texts(["The University of Virginia in Charlottesville was founded in 1819."])
    v = casc.verify(claim_from_text("The University of Texas was founded in 1883."), ev)
    assert v.label == "unsupported", v.reason
