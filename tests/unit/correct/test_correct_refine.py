"""Sentence splitting with offsets, strip threshold and keep-whole rule."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from affidavit.core.correction import refined_chunk
from affidavit.core.types import Chunk
from affidavit.correct.fakes import KeywordEvaluator
from affidavit.correct.refine import refine_chunk, refine_many, split_sentences

TEXT = "The tower is 330 metres tall. It was built in 1889. Cats sleep all day."


def _texts(text: str) -> list[str]:
    return [text[s:e] for s, e in split_sentences(text)]


def test_split_basic_and_offsets() -> None:
    assert _texts(TEXT) == [
        "The tower is 330 metres tall.",
        "It was built in 1889.",
        "Cats sleep all day.",
    ]


def test_split_keeps_abbreviations_initials_and_decimals() -> None:
    text = "Dr. Smith met J. R. R. Tolkien in 1950. He paid 3.5 dollars! Why? Fine."
    assert _texts(text) == [
        "Dr. Smith met J. R. R. Tolkien in 1950.",
        "He paid 3.5 dollars!",
        "Why?",
        "Fine.",
    ]


def test_split_concatenated_paragraphs() -> None:
    # HaluEval / HotpotQA knowledge joins paragraphs without a space
    text = "It was published in the 19th century.First for Women is a magazine."
    assert _texts(text) == [
        "It was published in the 19th century.",
        "First for Women is a magazine.",
    ]


@given(st.text(alphabet="ab .!?\nXY", max_size=80))
def test_split_offsets_are_exact_and_ordered(text: str) -> None:
    spans = split_sentences(text)
    prev_end = 0
    for s, e in spans:
        assert prev_end <= s < e <= len(text)
        piece = text[s:e]
        assert piece == piece.strip() and piece
        prev_end = e
    # every non-space character is covered by some span
    covered = {i for s, e in spans for i in range(s, e)}
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())


def _fixed(scores: dict[str, float]) -> KeywordEvaluator:
    return KeywordEvaluator(fixed=scores)


def test_strip_threshold_boundary_keeps_equal_drops_below() -> None:
    ev = _fixed(
        {
            "The tower is 330 metres tall.": 5.0,  # exactly at strip: kept
            "It was built in 1889.": 4.999,  # just below: dropped
            "Cats sleep all day.": 9.0,
        }
    )
    chunk = Chunk(text=TEXT, doc_id="d1", start=100, end=100 + len(TEXT))
    r = refine_chunk(
        "q", chunk, grade=6.0, evaluator=ev, strip_threshold=5.0, keep_whole_threshold=8.0
    )
    assert r is not None
    assert r.chunk.text == "The tower is 330 metres tall. Cats sleep all day."
    assert not r.kept_whole
    assert [s.kept for s in r.strips] == [True, False, True]
    assert r.source_chunk_id == chunk.id
    # every strip's offsets point back into the source chunk
    assert [TEXT[s.start : s.end] for s in r.strips if s.kept] == [
        "The tower is 330 metres tall.",
        "Cats sleep all day.",
    ]
    # a merged passage no longer lines up with the document offsets
    assert r.chunk.start is None and r.chunk.metadata["refined_from"] == chunk.id


def test_strip_threshold_is_used() -> None:
    ev = _fixed({"The tower is 330 metres tall.": 6.0, "It was built in 1889.": 4.0})
    text = "The tower is 330 metres tall. It was built in 1889."
    r = refine_chunk(
        "q", Chunk(text=text), grade=5, evaluator=ev, strip_threshold=3.0, keep_whole_threshold=8
    )
    assert r is not None and r.chunk.text == text  # both pass at 3.0
    r = refine_chunk(
        "q", Chunk(text=text), grade=5, evaluator=ev, strip_threshold=7.0, keep_whole_threshold=8
    )
    assert r is None  # none pass at 7.0 and the chunk is not highly relevant


def test_keep_whole_when_no_sentence_passes_and_grade_at_upper() -> None:
    ev = _fixed({t: 1.0 for t in _texts(TEXT)})
    chunk = Chunk(text=TEXT, start=5, end=5 + len(TEXT))
    r = refine_chunk(
        "q", chunk, grade=8.0, evaluator=ev, strip_threshold=5.0, keep_whole_threshold=8.0
    )
    assert r is not None and r.kept_whole
    assert r.chunk.text == TEXT and r.chunk.start == 5
    assert all(s.kept for s in r.strips)
    below = refine_chunk(
        "q", chunk, grade=7.99, evaluator=ev, strip_threshold=5.0, keep_whole_threshold=8.0
    )
    assert below is None


def test_whole_threshold_keeps_a_highly_graded_chunk_whole() -> None:
    # one sentence passes; without whole_threshold only it is kept, with it the whole chunk
    ev = _fixed({"The tower is 330 metres tall.": 6.0, "It was built in 1889.": 1.0})
    text = "The tower is 330 metres tall. It was built in 1889."
    chunk = Chunk(text=text, start=0, end=len(text))
    kw = {"evaluator": ev, "strip_threshold": 5.0, "keep_whole_threshold": 8.0}
    r = refine_chunk("q", chunk, grade=9.0, **kw)  # type: ignore[arg-type]
    assert r is not None and r.chunk.text == "The tower is 330 metres tall."
    r = refine_chunk("q", chunk, grade=9.0, whole_threshold=8.0, **kw)  # type: ignore[arg-type]
    assert r is not None and r.kept_whole and r.chunk.text == text and r.chunk.start == 0
    assert [s.score for s in r.strips] == [6.0, 1.0]  # still scored, for the trace
    r = refine_chunk("q", chunk, grade=7.9, whole_threshold=8.0, **kw)  # type: ignore[arg-type]
    assert r is not None and r.chunk.text == "The tower is 330 metres tall."


def test_refine_many_reports_dropped() -> None:
    ev = _fixed({"Nothing here.": 0.0, "Useful fact.": 9.0})
    a, b = Chunk(text="Nothing here."), Chunk(text="Useful fact.")
    out, dropped = refine_many(
        "q", [(a, 4.0), (b, 9.0)], evaluator=ev, strip_threshold=5.0, keep_whole_threshold=8.0
    )
    assert [r.source_chunk_id for r in out] == [b.id]
    assert len(dropped) == 1 and dropped[0].startswith(a.id)


class _WrongCount:
    name = "bad"

    def score(self, question: str, passages: list[str]) -> list[object]:
        return []


def test_wrong_score_count_fails_closed() -> None:
    r = refine_chunk(
        "q",
        Chunk(text=TEXT),
        grade=4.0,
        evaluator=_WrongCount(),  # type: ignore[arg-type]
        strip_threshold=5.0,
        keep_whole_threshold=8.0,
    )
    assert r is None


def test_window_keeps_a_second_hop_sentence() -> None:
    text = "Smith died en route to York Factory. It was built in 1684."
    joined = text  # the second sentence joined with the first
    ev = _fixed(
        {"Smith died en route to York Factory.": 6.0, "It was built in 1684.": 1.0, joined: 7.0}
    )
    alone = refine_chunk(
        "q",
        Chunk(text=text),
        grade=6.0,
        evaluator=ev,
        strip_threshold=5.0,
        keep_whole_threshold=8.0,
    )
    assert alone is not None and alone.chunk.text == "Smith died en route to York Factory."
    ev.calls.clear()
    win = refine_chunk(
        "q",
        Chunk(text=text),
        grade=6.0,
        evaluator=ev,
        strip_threshold=5.0,
        keep_whole_threshold=8.0,
        window=1,
    )
    assert win is not None and win.chunk.text == text
    assert ev.calls[0][1][-1] == joined  # scored in the same call
    assert [(s.score, s.own_score) for s in win.strips] == [(6.0, 6.0), (7.0, 1.0)]


def test_window_never_lowers_a_sentence() -> None:
    text = "Alpha is key. Beta is key too."
    ev = _fixed({"Alpha is key.": 2.0, "Beta is key too.": 9.0, text: 3.0})
    r = refine_chunk(
        "q",
        Chunk(text=text),
        grade=9.0,
        evaluator=ev,
        strip_threshold=5.0,
        keep_whole_threshold=8.0,
        window=1,
    )
    assert r is not None and r.chunk.text == "Beta is key too."
    assert r.strips[1].score == 9.0


def test_a_refined_passage_is_rebuilt_from_its_source_and_kept_spans() -> None:
    """Certificates record (source chunk, kept spans); replay rebuilds the very same passage."""
    ev = _fixed({"The tower is 330 metres tall.": 6.0, "It was built in 1889.": 1.0})
    text = "The tower is 330 metres tall. It was built in 1889. Cats sleep all day."
    chunk = Chunk(id="stored-1", text=text, url="https://example.org/t", doc_id="d", start=0)
    kw = {"evaluator": ev, "strip_threshold": 5.0, "keep_whole_threshold": 8.0}
    for grade, whole in ((6.0, None), (9.0, 8.0)):
        r = refine_chunk("q", chunk, grade=grade, whole_threshold=whole, **kw)  # type: ignore[arg-type]
        assert r is not None
        assert refined_chunk(chunk, r.kept_spans) == r.chunk
        # a refined passage is not the stored chunk: it has its own id, derived from its text
        assert r.chunk.id != chunk.id
    assert r.kept_spans is None and r.kept_whole
    with pytest.raises(ValueError, match="out of order or outside"):
        refined_chunk(chunk, [(30, 40), (0, 10)])
    with pytest.raises(ValueError, match="out of order or outside"):
        refined_chunk(chunk, [(0, len(text) + 1)])
