"""Evidence windows, ranking and combinations."""

from __future__ import annotations

import itertools

import pytest
from rank_bm25 import BM25Okapi

from affidavit.core.errors import VerificationError
from affidavit.core.types import Chunk
from affidavit.verify.evidence import (
    Candidate,
    WhitespaceTokens,
    Windower,
    bm25_scores,
    combinations,
    content_words,
    rank_windows,
    sentence_candidates,
    sentence_spans,
)

TOK = WhitespaceTokens()


def long_text(n: int) -> str:
    return " ".join(f"Sentence number {i} talks about topic {i}." for i in range(n))


def test_windows_cover_the_whole_chunk_overlap_and_fit() -> None:
    chunk = Chunk(text=long_text(40))
    w = Windower(TOK, max_len=64, stride=20)
    claim = "Topic 7 is discussed."
    budget = w.budget(claim)
    spans = w.windows(claim, chunk)
    assert len(spans) > 3
    for s in spans:
        assert s.text == chunk.text[s.start : s.end]
        assert len(TOK.offsets(s.text)) <= budget
        assert s.checked_whole
    # every character of the chunk (bar spaces) is inside some window: nothing left unchecked
    covered = set()
    for s in spans:
        covered.update(range(s.start, s.end))
    assert all(i in covered for i, ch in enumerate(chunk.text) if not ch.isspace())
    # consecutive windows overlap
    for a, b in itertools.pairwise(spans):
        assert b.start < a.end


def test_windows_prefer_sentence_ends() -> None:
    chunk = Chunk(text=long_text(30))
    spans = Windower(TOK, max_len=64, stride=30).windows("Topic 3.", chunk)
    assert all(s.text.endswith(".") for s in spans)


def test_short_chunk_is_one_window() -> None:
    chunk = Chunk(text="  Paris is the capital of France.  ")
    (s,) = Windower(TOK, max_len=64, stride=16).windows("Paris", chunk)
    assert s.text == "Paris is the capital of France."


def test_claim_too_long_raises_never_truncates() -> None:
    w = Windower(TOK, max_len=48, stride=16)
    with pytest.raises(VerificationError, match="too long"):
        w.budget(" ".join(["word"] * 30))


def test_bm25_matches_rank_bm25_on_the_same_tokens() -> None:
    docs = [
        "The Eiffel Tower is in Paris and was completed in 1889.",
        "London is the capital of England.",
        "Paris hosts the Louvre museum; Paris is large.",
        "Tokyo is in Japan.",
    ]
    query = "Paris tower completed"
    ours = bm25_scores(query, docs)

    class LuceneIdf(BM25Okapi):  # type: ignore[misc]
        # we use Lucene's non-negative idf, log(1 + (N - df + .5) / (df + .5)); the tf and length
        # normalisation are rank_bm25's own
        def _calc_idf(self, nd: dict[str, int]) -> None:
            import math

            self.idf = {
                w: math.log((self.corpus_size - f + 0.5) / (f + 0.5) + 1.0) for w, f in nd.items()
            }

    ref = LuceneIdf([content_words(d) for d in docs]).get_scores(content_words(query))
    assert ours == pytest.approx(list(ref), rel=1e-6, abs=1e-9)


def test_rank_windows_searches_all_chunks() -> None:
    chunks = [
        Chunk(text="Unrelated text about cooking pasta and sauces."),
        Chunk(text="More unrelated material on gardening."),
        Chunk(text="Marie Curie won the Nobel Prize in Physics in 1903."),
    ]
    w = Windower(TOK, max_len=64, stride=32)
    top, n = rank_windows("Curie won a Nobel Prize in 1903.", chunks, w, top=2)
    assert n == 3
    assert top[0].chunk_index == 2 and "Curie" in top[0].span.text


def test_sentence_spans_offsets() -> None:
    text = "Dr. Who is here. It rained 2.5 mm! Then (finally) it stopped."
    spans = sentence_spans(text)
    assert [text[s:e] for s, e in spans][-1] == "Then (finally) it stopped."
    assert all(text[s:e].strip() == text[s:e] for s, e in spans)


def test_sentence_spans_split_glued_sentences() -> None:
    # concatenated paragraphs (HaluEval knowledge, PDF extraction) glue sentences without a space;
    # the evidence quoted for a claim must be the sentence that supports it, not both
    text = (
        "Hinder is a rock band that was formed in 2001 by Cody Hanson.The Fatima Mansions "
        "were an art rock group formed in 1988. The U.S. Army is big."
    )
    got = [text[s:e] for s, e in sentence_spans(text)]
    assert got[0].endswith("Cody Hanson.")
    assert got[1] == "The Fatima Mansions were an art rock group formed in 1988."
    assert got[2] == "The U.S. Army is big."


def test_combinations_in_document_order_and_fit() -> None:
    chunk = Chunk(
        text="Alice was born in Paris in the spring of the year 1960 to two teachers. "
        "She moved to Rome in 1990 after she had finished her studies at the university. "
        "Rome is in Italy, the country in southern Europe shaped like a long boot."
    )
    w = Windower(TOK, max_len=64, stride=32)
    top, _ = rank_windows("Alice moved to Italy.", [chunk], w, top=1)
    sents = sentence_candidates("Alice moved to Italy.", [chunk], top, top=3)
    assert len(sents) == 3
    pairs = combinations(sents, 2, "Alice moved to Italy.", w)
    assert len(pairs) == 3
    for p in pairs:
        assert p[0].span.start < p[1].span.start
    tiny = Windower(TOK, max_len=3 + 5 + 40, stride=8)
    big = [Candidate(s.span, 0, 0) for s in sents]
    assert combinations(big, 3, "Alice moved to Italy.", tiny) == []


def test_subword_windows_never_cut_inside_a_word_and_fit_when_retokenised() -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {
        "[UNK]": 0,
        "the": 1,
        "un": 2,
        "##believ": 3,
        "##able": 4,
        "story": 5,
        ".": 6,
        "is": 7,
        "##s": 8,
    }
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()

    class Offsets:
        def offsets(self, text: str) -> list[tuple[int, int]]:
            return list(tok.encode(text, add_special_tokens=False).offsets)

    text = " ".join(["the unbelievable stories is unbelievable ."] * 30)
    w = Windower(Offsets(), max_len=3 + 2 + 30, stride=11)
    claim = "the story"
    budget = w.budget(claim)
    spans = w.windows(claim, Chunk(text=text))
    assert len(spans) > 5
    for s in spans:
        assert len(Offsets().offsets(s.text)) <= budget
        # a window starts and ends on whole words
        assert s.start == 0 or text[s.start - 1] == " "
        assert s.end == len(text) or text[s.end] == " "


def test_windows_are_cut_to_the_trained_length_and_grow_only_for_long_claims() -> None:
    chunk = Chunk(text=long_text(40))
    w = Windower(TOK, max_len=128, stride=128, window_len=48)
    short = "Topic 7 is discussed."
    assert w.budget(short) == 48 - 3 - len(TOK.offsets(short))
    spans = w.windows(short, chunk)
    assert all(len(TOK.offsets(s.text)) <= w.budget(short) for s in spans)
    # the stride is clamped below the window: consecutive windows still overlap
    for a, b in itertools.pairwise(spans):
        assert b.start < a.end
    # a claim that leaves too little room at the trained length gets up to max_len
    long_claim = " ".join(["word"] * 30)
    assert w.budget(long_claim) == 128 - 3 - 30
    with pytest.raises(VerificationError, match="too long"):
        w.budget(" ".join(["word"] * 110))


def test_caseless_text_still_splits_into_sentences() -> None:
    text = "the match ended 0-0 . merson was brought on late ! fans left ."
    got = [text[a:b] for a, b in sentence_spans(text)]
    assert got == ["the match ended 0-0 .", "merson was brought on late !", "fans left ."]
    # with capitals present, a lower-case word after a full stop does not open a sentence
    assert len(sentence_spans("See e.g. the map. It helps.")) == 2
