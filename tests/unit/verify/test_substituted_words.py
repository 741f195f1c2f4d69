"""A claim that copies an evidence sentence but puts another ordinary word in a few words' place."""

from __future__ import annotations

import pytest

from affidavit.core.settings import PolicySettings, VerifySettings
from affidavit.verify.cascade import ClaimCascade, chunks_from_texts, claim_from_text
from affidavit.verify.fakes import ScriptedScorer
from affidavit.verify.lexical import substituted_words

EINSTEIN = "Albert Einstein developed the theory of relativity in the early twentieth century."
FILM = (
    "There Will Be Blood is a 2007 American drama film written and directed by Paul Thomas "
    "Anderson."
)


@pytest.mark.parametrize(
    ("claim", "evidence", "expected"),
    [
        (
            "Albert Einstein developed the theory of evolution in the early twentieth century.",
            EINSTEIN,
            [("evolution", "relativity")],
        ),
        (
            "There Will Be Blood is a 2007 gritty drama film written and directed by Paul "
            "Thomas Anderson.",
            FILM,
            [("gritty", "American")],
        ),
        # the same sentence, or one that only leaves words out: nothing replaced
        (EINSTEIN, EINSTEIN, []),
        ("Albert Einstein developed the theory of relativity.", EINSTEIN, []),
        # a word the evidence uses, or the same word inflected
        (
            "Albert Einstein developing the theory of relativity in the early twentieth century.",
            EINSTEIN,
            [],
        ),
        # numbers, negations and names belong to other checks
        (
            "Albert Einstein wrote nine papers on relativity in 1905.",
            "Albert Einstein wrote four papers on relativity in 1905.",
            [],
        ),
        (
            "Albert Einstein never developed the theory of relativity in the early twentieth "
            "century.",
            EINSTEIN,
            [],
        ),
        (
            "There Will Be Blood is a 2007 British drama film written and directed by Paul "
            "Thomas Anderson.",
            FILM,
            [],
        ),
        (
            "There Will Be Blood is a 2007 three drama film written and directed by Paul Thomas "
            "Anderson.",
            FILM,
            [],
        ),
        # a claim may say less than its evidence: "a ..." in place of a name
        (
            "There Will Be Blood is a 2007 a foreign drama film written and directed by Paul "
            "Thomas Anderson.",
            FILM,
            [],
        ),
        # two places changed: not a copy of the sentence
        (
            "Albert Einstein invented the theory of evolution in the early twentieth century.",
            EINSTEIN,
            [],
        ),
    ],
)
def test_substituted_words(claim: str, evidence: str, expected: list[tuple[str, str]]) -> None:
    assert substituted_words(claim, evidence) == expected


def _cascade(similarity: float | None) -> tuple[ClaimCascade, list[tuple[str, str]]]:
    asked: list[tuple[str, str]] = []

    def close(a: str, b: str) -> float:
        asked.append((a, b))
        if similarity is None:
            raise OSError("the embedder cannot load")
        return similarity

    # a model that supports anything close to the evidence (the MiniLM model gave the
    # "evolution" claim 0.85)
    cascade = ClaimCascade(
        VerifySettings(cascade=["checks", "cross_encoder"], threads=1, substituted_words=True),
        PolicySettings(tau_entail=0.5, tau_contradict=0.5),
        scorers={"cross_encoder": ScriptedScorer(fn=lambda c, e: (0.99, 0.005, 0.005))},
        similarity=close,
    )
    return cascade, asked


WRONG = "Albert Einstein developed the theory of evolution in the early twentieth century."


def test_another_attribute_in_a_copied_sentence_is_withheld() -> None:
    cascade, asked = _cascade(0.25)
    v = cascade.verify(claim_from_text(WRONG), chunks_from_texts([EINSTEIN]))
    assert v.label == "unsupported"
    assert "relativity" in v.reason and "evolution" in v.reason and "0.25" in v.reason
    assert asked == [("evolution", "relativity")]


def test_the_same_thing_said_otherwise_stays_supported() -> None:
    cascade, _ = _cascade(0.84)  # "movie" for "film"
    v = cascade.verify(claim_from_text(WRONG), chunks_from_texts([EINSTEIN]))
    assert v.label == "supported"


def test_a_comparison_that_cannot_run_withholds() -> None:
    cascade, _ = _cascade(None)
    v = cascade.verify(claim_from_text(WRONG), chunks_from_texts([EINSTEIN]))
    assert v.label == "unsupported" and "could not be compared" in v.reason
    assert "similarity" in cascade.stage_errors


def test_the_rule_is_off_by_default() -> None:
    assert VerifySettings().substituted_words is False  # held out it cost summaries
    cascade, asked = _cascade(0.25)
    cascade.settings = cascade.settings.model_copy(update={"substituted_words": False})
    v = cascade.verify(claim_from_text(WRONG), chunks_from_texts([EINSTEIN]))
    assert v.label == "supported" and asked == []


def test_the_packaged_embedder_tells_synonyms_from_other_attributes() -> None:
    pytest.importorskip("onnxruntime")
    from affidavit.core.errors import AffidavitError

    cascade = ClaimCascade(
        VerifySettings(cascade=["checks"], threads=1), PolicySettings(), scorers={}
    )
    try:
        film = cascade._similarity("film", "movie")
    except AffidavitError:  # pragma: no cover - the models extra is not installed
        pytest.skip("the MiniLM embedder is not installed")
    if film is None:
        pytest.skip(f"the MiniLM embedder is not installed: {cascade.stage_errors}")
    threshold = VerifySettings().substitution_min_similarity
    assert film >= threshold
    relativity = cascade._similarity("evolution", "relativity")
    assert relativity is not None and relativity < threshold
