"""A claim whose support says "He" of someone else the evidence names, never the claim's subject."""

from __future__ import annotations

import pytest

from affidavit.core.settings import PolicySettings, VerifySettings
from affidavit.verify.cascade import ClaimCascade, chunks_from_texts, claim_from_text
from affidavit.verify.fakes import ScriptedScorer
from affidavit.verify.lexical import pronoun_for_someone_else

EINSTEIN = "Albert Einstein was born in Ulm in 1879. He developed the theory of relativity."
HE = EINSTEIN.index("He developed")
SPAN = [(0, HE, len(EINSTEIN))]
CURIE = "Pierre Curie was a physicist. He married in 1895. He won a Nobel Prize."
BOHR = "Niels Bohr was a physicist. He married in 1912. He won a Nobel Prize."


def _last(text: str) -> list[tuple[int, int, int]]:
    return [(0, text.rindex("He "), len(text))]


@pytest.mark.parametrize(
    ("claim", "evidence", "spans", "expected"),
    [
        ("Isaac Newton developed the theory of relativity.", [EINSTEIN], SPAN, "Albert Einstein"),
        ("Darwin developed the theory of evolution.", [EINSTEIN], SPAN, "Albert Einstein"),
        # a sentence that continues with a pronoun is walked back over
        (
            "Marie Curie won a Nobel Prize.",
            [CURIE],
            _last(CURIE),
            None,  # "Curie" is in the evidence: "He" may be about the claim's subject
        ),
        (
            "Isaac Newton won a Nobel Prize.",
            [BOHR],
            _last(BOHR),
            "Niels Bohr",
        ),
        # the claim's subject is named somewhere in the evidence: left to the other checks
        ("Einstein developed the theory of relativity.", [EINSTEIN], SPAN, None),
        (
            "Isaac Newton developed the theory of relativity.",
            [EINSTEIN, "Isaac Newton was an English mathematician."],
            SPAN,
            None,
        ),
        # a support that does not open with a personal pronoun
        (
            "Isaac Newton was born in Ulm.",
            [EINSTEIN],
            [(0, 0, EINSTEIN.index(" He"))],
            None,
        ),
        # no full name to stand for: a chunk that opens with "He", or a one-word name
        ("Isaac Newton developed gravity.", ["He developed gravity."], [(0, 0, 21)], None),
        (
            "The Crips are identified by the red color.",
            ["The Bloods are a street gang. They are identified by the red color."],
            [(0, 30, 67)],
            None,
        ),
        # the antecedent is named in the claim too
        (
            "Isaac Newton met Albert Einstein in 1905.",
            ["Albert Einstein was born in Ulm. He met many people in 1905."],
            _last("Albert Einstein was born in Ulm. He met many people in 1905."),
            None,
        ),
        ("Who developed the theory of relativity?", [EINSTEIN], SPAN, None),
    ],
)
def test_pronoun_for_someone_else(
    claim: str, evidence: list[str], spans: list[tuple[int, int, int]], expected: str | None
) -> None:
    assert pronoun_for_someone_else(claim, evidence, spans) == expected


def test_the_cascade_withholds_what_the_evidence_says_of_someone_else_by_a_pronoun() -> None:
    # a model that reads "He" as anyone (the MiniLM model scored the Newton claim 0.64)
    cascade = ClaimCascade(
        VerifySettings(cascade=["checks", "cross_encoder"], threads=1),
        PolicySettings(tau_entail=0.5, tau_contradict=0.5),
        scorers={"cross_encoder": ScriptedScorer(fn=lambda c, e: (0.99, 0.005, 0.005))},
    )
    chunks = chunks_from_texts([EINSTEIN])
    wrong = cascade.verify(
        claim_from_text("Isaac Newton developed the theory of relativity."), chunks
    )
    assert wrong.label == "unsupported"
    assert "Albert Einstein" in wrong.reason and "pronoun" in wrong.reason
    right = cascade.verify(claim_from_text("Einstein developed the theory of relativity."), chunks)
    assert right.label == "supported"
