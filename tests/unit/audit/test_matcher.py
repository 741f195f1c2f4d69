"""BM25 matching: exact path vs bm25s vs a hand-computed case, windows and coverage."""

from __future__ import annotations

import math

import pytest

from affidavit.audit.matcher import Bm25sIndex, EvidenceIndex, ExactBM25, coverage, match_stems
from affidavit.core.types import Chunk

DOCS = [
    ["eiffel", "tower", "paris", "complet"],
    ["appl", "revenu", "cupertino"],
    ["tower", "bridge", "london", "tower"],
    [],
]


def test_exact_bm25_hand_computed() -> None:
    bm = ExactBM25([["a", "b"], ["b", "c", "c"]])
    # idf(c) = ln(1 + (2 - 1 + 0.5) / (1 + 0.5)) = ln 2; doc 2: tf=2, |d|=3, avgdl=2.5
    norm = 1.5 * (1 - 0.75 + 0.75 * 3 / 2.5)
    expected = math.log(2) * 2 / (2 + norm)  # Lucene: no (k1 + 1) factor
    assert bm.scores(["c"]) == pytest.approx([0.0, expected])


def test_exact_matches_bm25s_lucene() -> None:
    q = ["tower", "paris", "london", "unknown"]
    exact = ExactBM25(DOCS).scores(q)
    ref = Bm25sIndex(DOCS).scores(q)
    assert exact == pytest.approx(ref, rel=1e-5)
    assert max(range(len(exact)), key=lambda i: exact[i]) == 2


def test_backend_choice_and_same_ranking() -> None:
    chunks = [Chunk(text=f"Document {i} talks about topic {i} and tower {i}.") for i in range(80)]
    chunks.append(Chunk(text="The Eiffel Tower in Paris was completed in 1889."))
    auto = EvidenceIndex(chunks, backend="bm25s")
    exact = EvidenceIndex(chunks)
    assert auto.backend == "bm25s" and exact.backend == "exact"  # auto: exact below 2000
    a = auto.match("The Eiffel Tower is in Paris.")[0]
    b = exact.match("The Eiffel Tower is in Paris.")[0]
    assert a.chunk_index == b.chunk_index == 80
    assert a.bm25 == pytest.approx(b.bm25, rel=1e-5)


def test_best_window_is_a_sentence_span_of_the_chunk() -> None:
    text = "Intro about cats. The bridge opened in 1932 to traffic. It cost a lot. Dogs bark."
    idx = EvidenceIndex([Chunk(text=text)])
    m = idx.match("The bridge opened to traffic.")[0]
    assert m.window_text == "The bridge opened in 1932 to traffic."
    assert text[m.window_start : m.window_end] == m.window_text
    assert m.coverage == 1.0


def test_coverage_ignores_numbers_and_counts_prefixes() -> None:
    q = match_stems("The bridge opened in 1932 with 12 lanes.")
    assert "1932" not in q and "12" not in q
    assert coverage(["bridge", "celebration"], frozenset({"bridge"}), frozenset({"celeb"})) == 1.0
    assert coverage([], frozenset(), frozenset()) == 0.0


def test_no_chunks_no_matches() -> None:
    assert EvidenceIndex([]).match("anything") == []


def test_bm25s_path_handles_empty_corpora() -> None:
    assert Bm25sIndex([[], []]).scores(["a"]) == [0.0, 0.0]
    assert Bm25sIndex([[], ["a"]]).scores(["a"])[1] > 0
