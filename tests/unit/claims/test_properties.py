"""Property tests: whatever the text, offsets are exact and nothing crashes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from affidavit.claims import RuleBasedExtractor, extract_claims, split_sentences

_PIECES = st.sampled_from(
    [
        "Dr. ",
        "U.S. ",
        "e.g. ",
        "3.5 ",
        "and ",
        " died in 1955",
        "He ",
        "It ",
        "[1]",
        "[2, 3]",
        ". ",
        "? ",
        "! ",
        "\n",
        "\n- ",
        "\n1. ",
        ":\n",
        "Paris ",
        "was born in 1879 ",
        "may ",
        "I think ",
        "Hello! ",
        "東京。",
        "…",
        ";",
        ", and ",
        "**",
        "  ",
        "\t",
    ]
)
_TEXT = st.one_of(st.text(max_size=300), st.lists(_PIECES, max_size=60).map("".join))


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_claim_offsets_are_exact(answer: str) -> None:
    claims = extract_claims(answer)
    for c in claims:
        assert 0 <= c.start < c.end <= len(answer)
        assert answer[c.start : c.end] in answer
        assert answer[c.start : c.end].strip() == answer[c.start : c.end]
        assert c.text.strip()
    assert [c.id for c in claims] == [f"c{i + 1}" for i in range(len(claims))]


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_segments_are_ordered_exact_and_disjoint(answer: str) -> None:
    last_end = 0
    for seg in split_sentences(answer):
        assert answer[seg.start : seg.end] == seg.text
        assert seg.start >= last_end
        assert seg.start < seg.end
        last_end = seg.end


@settings(max_examples=200, deadline=None)
@given(_TEXT)
def test_every_sentence_is_claimed_or_recorded_as_skipped(answer: str) -> None:
    result = RuleBasedExtractor().run(answer)
    covered = {c.sentence_index for c in result.claims} | {s.sentence_index for s in result.skipped}
    assert covered == {s.index for s in split_sentences(answer)}
    for s in result.skipped:
        assert answer[s.start : s.end] == s.text
