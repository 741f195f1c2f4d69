"""The wrong-attribute generator of the verifier's training data (training/build_data.py)."""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

import pytest

TRAINING = Path(__file__).resolve().parents[3] / "training"


@pytest.fixture(scope="module")
def build_data():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(TRAINING))
    try:
        import build_data as module
    finally:
        sys.path.remove(str(TRAINING))
    return module


ROWS = [
    {
        "id": "a",
        "group": "ga",
        "n_windows": 1,
        "evidence": "Yellowcard was an American pop punk band that formed in Jacksonville, "
        "Florida, in 1997. For Against is a United States post-punk/dream pop band from "
        "Lincoln, Nebraska.",
    },
    {
        "id": "b",
        "group": "gb",
        "n_windows": 1,
        "evidence": "Metallica is an American heavy metal band from Los Angeles. "
        "Jane Smith is a Canadian jazz singer.",
    },
    {
        "id": "c",
        "group": "gc",
        "n_windows": 1,
        "evidence": "Radiohead are an English rock band from Abingdon. "
        "Tom Hanks is an American film actor and producer.",
    },
]


def _words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[\w/'-]+", text)}


def test_each_wrong_attribute_comes_with_its_true_original(build_data) -> None:  # type: ignore[no-untyped-def]
    out = build_data.synthesize_attributes(ROWS, random.Random(3), 6)
    assert out, "no pair was made"
    assert len(out) % 2 == 0
    for orig, edited in zip(out[::2], out[1::2], strict=True):
        assert orig["label"] == "entail" and edited["label"] == "not_entail"
        assert orig["source"] == edited["source"] == "synthetic_attributes"
        assert orig["evidence"] == edited["evidence"]
        assert orig["claim"] in orig["evidence"]  # the original is the evidence's own sentence
        # the replaced modifiers state nothing the row's evidence says anywhere
        added = _words(edited["claim"]) - _words(orig["claim"]) - {"a", "an"}
        assert added, edited["claim"]
        assert not added & _words(edited["evidence"])
        # the head noun and what follows it stay: only the description changed
        assert edited["claim"].split()[-1] == orig["claim"].split()[-1]


def test_the_article_agrees_with_the_new_description(build_data) -> None:  # type: ignore[no-untyped-def]
    out = build_data.synthesize_attributes(ROWS, random.Random(0), 30)
    edited = [r["claim"] for r in out if r["label"] == "not_entail"]
    assert edited
    for text in edited:
        assert not re.search(r"\ban [bcdfgjklmnpqrstvwxyz]", text, re.IGNORECASE), text
        assert not re.search(r"\ba [aeio]", text, re.IGNORECASE), text


def test_descriptions_skip_ranks_numbers_and_determiners(build_data) -> None:  # type: ignore[no-untyped-def]
    found = build_data._descriptions
    assert [m.group("mods").strip() for m in found("X is a Canadian jazz singer.")] == [
        "Canadian jazz"
    ]
    assert found("X was the first female astronaut.") == []
    assert found("X is a 1997 American film.") == []
    assert found("X is a former professional footballer.") == []
