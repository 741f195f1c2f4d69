"""Sentence splitting and chunking: exact offsets, whole sentences, overlap, long sentences."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from affidavit.core.errors import ConfigError
from affidavit.core.types import Document
from affidavit.ingest.chunking import SentenceChunker, split_sentences

TEXT = (
    "Dr. Smith went to Washington on Jan. 5 with Mr. J. Doe. They met the U.S. delegation there. "
    "Was it useful? Yes! The talks lasted e.g. three hours.\n\n"
    "# Results\n- first item\n- second item\n\nThe end."
)


def test_sentences_handle_abbreviations_and_structure() -> None:
    got = [s.text for s in split_sentences(TEXT)]
    assert got == [
        "Dr. Smith went to Washington on Jan. 5 with Mr. J. Doe.",
        "They met the U.S. delegation there.",
        "Was it useful?",
        "Yes!",
        "The talks lasted e.g. three hours.",
        "# Results",
        "- first item",
        "- second item",
        "The end.",
    ]


def test_sentence_offsets_are_exact() -> None:
    for s in split_sentences(TEXT):
        assert TEXT[s.start : s.end] == s.text
        assert s.text == s.text.strip()


def _doc(text: str) -> Document:
    return Document(id="d", source="d.txt", text=text)


def test_chunks_pack_whole_sentences() -> None:
    sentences = [f"Sentence number {i} is here." for i in range(40)]
    text = " ".join(sentences)
    chunks = SentenceChunker(chunk_size=100, overlap=0).chunk(_doc(text))
    assert len(chunks) > 5
    for c in chunks:
        assert len(c.text) <= 100
        assert text[c.start : c.end] == c.text
        # every chunk starts and ends on a sentence boundary
        assert c.text.startswith("Sentence number") and c.text.endswith("is here.")
    # no overlap: consecutive chunks do not share text and nothing is lost
    joined = " ".join(c.text for c in chunks)
    assert joined == text


def test_overlap_repeats_whole_trailing_sentences() -> None:
    sentences = [f"S{i:02d} short one." for i in range(30)]  # 14 chars each
    text = " ".join(sentences)
    chunks = SentenceChunker(chunk_size=80, overlap=30).chunk(_doc(text))
    for a, b in itertools.pairwise(chunks):
        assert b.start is not None and a.end is not None and a.start is not None
        assert a.start < b.start < a.end  # overlapping, and progressing
        shared = text[b.start : a.end]
        assert len(shared) <= 30
        assert shared.endswith("short one.")


def test_long_sentence_split_at_words_and_flagged() -> None:
    long = "word " * 200 + "end."
    text = "Short intro. " + long.strip() + " Short outro."
    chunks = SentenceChunker(chunk_size=100, overlap=0).chunk(_doc(text))
    flagged = [c for c in chunks if c.metadata.get("split_sentence")]
    assert len(flagged) >= 8
    for c in chunks:
        assert len(c.text) <= 100
        assert text[c.start : c.end] == c.text
        assert not c.text.startswith(("ord", "rd", "d ")) or c.text.startswith("word")


def test_word_longer_than_chunk_is_cut_hard() -> None:
    text = "x" * 250
    chunks = SentenceChunker(chunk_size=100, overlap=0).chunk(_doc(text))
    assert [len(c.text) for c in chunks] == [100, 100, 50]


def test_sentence_spans_in_metadata_are_relative_to_chunk() -> None:
    chunks = SentenceChunker(chunk_size=200, overlap=0).chunk(_doc(TEXT))
    for c in chunks:
        for a, b in c.metadata["sentences"]:
            piece = c.text[a:b]
            assert piece and piece == piece.strip()


def test_pdf_page_mapping() -> None:
    text = "Page one text here.\n\nPage two text here."
    doc = Document(id="p", source="p.pdf", text=text, metadata={"pages": [[0, 19, 1], [21, 40, 2]]})
    chunks = SentenceChunker(chunk_size=25, overlap=0).chunk(doc)
    assert [(c.metadata["page"], c.metadata["page_end"]) for c in chunks] == [(1, 1), (2, 2)]
    assert "pages" not in chunks[0].metadata


@pytest.mark.parametrize("pages", [12, "123-145", [[0, 5, "iv"]], [[0]], {"a": 1}])
def test_a_pages_field_that_is_no_page_map_is_kept_as_data(pages: object) -> None:
    # a JSONL record's own metadata (a bibliographic "pages": 12) is not the PDF loader's page
    # map: it crashed the chunker (TypeError, IndexError, ValueError) and with it the whole
    # ingest (exit 3)
    text = "Page one text here.\n\nPage two text here."
    doc = Document(id="j", source="r.jsonl#L1", text=text, metadata={"pages": pages})
    chunks = SentenceChunker(chunk_size=25, overlap=0).chunk(doc)
    assert [c.text for c in chunks] == ["Page one text here.", "Page two text here."]
    assert all(c.metadata["pages"] == pages and "page" not in c.metadata for c in chunks)


def test_chunk_ids_are_stable_and_unique() -> None:
    text = "Same sentence. Same sentence. Same sentence."
    a = SentenceChunker(chunk_size=20, overlap=0).chunk(_doc(text))
    b = SentenceChunker(chunk_size=20, overlap=0).chunk(_doc(text))
    assert [c.id for c in a] == [c.id for c in b]
    assert len({c.id for c in a}) == len(a) == 3


@pytest.mark.parametrize(("size", "overlap"), [(10, 0), (100, 100), (100, -1)])
def test_bad_config(size: int, overlap: int) -> None:
    with pytest.raises(ConfigError):
        SentenceChunker(chunk_size=size, overlap=overlap)


_alphabet = st.sampled_from([*list("abc XYZ.!?\n\t,;'\"()é"), "Dr. ", "e.g. ", "\n\n", "# "])


@settings(max_examples=200, deadline=None)
@given(
    text=st.lists(_alphabet, max_size=300).map("".join),
    size=st.integers(min_value=20, max_value=120),
    overlap=st.integers(min_value=0, max_value=19),
)
def test_offsets_property(text: str, size: int, overlap: int) -> None:
    chunks = SentenceChunker(chunk_size=size, overlap=overlap).chunk(_doc(text))
    covered: set[int] = set()
    for c in chunks:
        assert c.start is not None and c.end is not None
        assert text[c.start : c.end] == c.text
        assert len(c.text) <= size
        covered.update(range(c.start, c.end))
        for a, b in c.metadata["sentences"]:
            assert 0 <= a < b <= len(c.text)
    for s in split_sentences(text):
        assert text[s.start : s.end] == s.text
    # every non-space character ends up in some chunk
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())


class _TooSlow(Exception):
    pass


def _within(seconds: float, fn: object) -> float:
    """Run ``fn`` and fail it (instead of hanging) once it runs past ``seconds``."""
    import signal
    import time

    def _alarm(signum: int, frame: object) -> None:
        raise _TooSlow(f"took more than {seconds}s")

    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    t0 = time.perf_counter()
    try:
        fn()  # type: ignore[operator]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return time.perf_counter() - t0


def test_splitting_a_large_document_is_linear_not_quadratic() -> None:
    # issue 13 defect 1: each boundary rescanned the text from offset 0 (and copied it), so
    # 250 kB took 31 s and 1 MB never finished; linear splitting does 2 MB in well under a second
    base = "Dr. Smith measured 3.5 m. It was approx. five metres in total! Was it? Yes. "
    text = (base * (2_000_000 // len(base) + 1))[:2_000_000]
    doc = Document(id="big", source="big.txt", text=text)
    chunks: list[object] = []
    _within(20.0, lambda: chunks.extend(SentenceChunker().chunk(doc)))
    assert len(chunks) > 3000
    small = Document(id="s", source="s.txt", text=text[:200_000])
    t_small = _within(20.0, lambda: SentenceChunker().chunk(small))
    t_big = _within(20.0, lambda: SentenceChunker().chunk(doc))
    # 10x the text: linear is ~10x the time; quadratic would be ~100x (generous for noisy CPUs)
    assert t_big < 40 * max(t_small, 0.01)


def test_window_for_the_word_before_a_stop_keeps_abbreviations() -> None:
    long_word = "x" * 200
    got = [s.text for s in split_sentences(f"{long_word}. Next one. Dr. Who came.")]
    assert got == [f"{long_word}.", "Next one.", "Dr. Who came."]
