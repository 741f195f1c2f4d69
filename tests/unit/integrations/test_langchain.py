"""The LangChain integration against the real langchain-core (LCEL, fake chat model)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain_core")

from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableParallel, RunnablePassthrough

from affidavit.core.errors import EnforcementError, InputError
from affidavit.integrations.langchain import (
    AffidavitChatModel,
    AffidavitRetriever,
    AuditCallbackHandler,
    AuditRunnable,
)
from affidavit.testing.fake_llm import FakeGenerator

QUESTION = "When did the Forth Bridge open?"
FAITHFUL = "The Forth Bridge opened on 4 March 1890."
HALLUCINATED = "The Forth Bridge opened on 4 March 1925."
PROMPT = ChatPromptTemplate.from_messages([("system", "{passages}"), ("human", "{question}")])


def _passages(inputs: dict) -> str:
    return "\n".join(d.page_content for d in inputs["context"])


def rag_dict(store: Path, answers: list[str]):
    """context + question + answer: the chain's output carries its own documents."""
    retriever = AffidavitRetriever(store_path=str(store), k=2, mode="bm25")
    llm = FakeListChatModel(responses=answers)
    answer = RunnablePassthrough.assign(passages=_passages) | PROMPT | llm | StrOutputParser()
    return RunnableParallel(context=retriever, question=RunnablePassthrough()).assign(answer=answer)


def rag_string(store: Path, answers: list[str]):
    """A chain that returns only the answer string: its documents are seen in callbacks."""
    retriever = AffidavitRetriever(store_path=str(store), k=2, mode="bm25")
    llm = FakeListChatModel(responses=answers)
    return (
        RunnableParallel(context=retriever, question=RunnablePassthrough())
        | RunnablePassthrough.assign(passages=_passages)
        | PROMPT
        | llm
        | StrOutputParser()
    )


def test_retriever_returns_documents_with_provenance(sample_store: Path) -> None:
    docs = AffidavitRetriever(store_path=str(sample_store), k=2, mode="bm25").invoke(QUESTION)
    assert docs[0].metadata["url"] == "https://en.wikipedia.org/wiki/Forth_Bridge"
    assert docs[0].metadata["doc_id"] == "forth_bridge"
    assert "4 March 1890" in docs[0].page_content
    adocs = asyncio.run(
        AffidavitRetriever(store_path=str(sample_store), k=2, mode="bm25").ainvoke(QUESTION)
    )
    assert [d.page_content for d in adocs] == [d.page_content for d in docs]


def test_guardrail_withholds_a_hallucination_and_passes_a_faithful_answer(
    sample_store: Path,
) -> None:
    chain = rag_dict(sample_store, [HALLUCINATED, FAITHFUL]) | AuditRunnable(
        settings={"mode": "guardrail"}
    )
    bad = chain.invoke(QUESTION)
    assert bad["draft"] == HALLUCINATED
    assert "1925" not in bad["answer"] and "[withheld" in bad["answer"]
    assert bad["report"].trust_passed is False
    assert bad["report"].claims[0].failed_checks[0].check == "date"
    assert bad["context"] and bad["context"][0].metadata["doc_id"] == "forth_bridge"
    good = chain.invoke(QUESTION)
    assert good["answer"] == FAITHFUL and good["report"].trust_passed


def test_wrapping_a_chain_takes_the_documents_from_its_callbacks(sample_store: Path) -> None:
    audited = AuditRunnable(
        rag_string(sample_store, [HALLUCINATED]), settings={"mode": "guardrail"}
    )
    out = audited.invoke(QUESTION)
    assert out["question"] == QUESTION
    assert out["context"][0].metadata["doc_id"] == "forth_bridge"
    assert "[withheld" in out["answer"] and out["trust_passed"] is False
    # without the retrieved documents nothing could be supported: the audit saw them
    assert out["report"].n_chunks == len(out["context"]) > 0


def test_audit_mode_attaches_the_report_and_enforce_mode_raises(sample_store: Path) -> None:
    out = (rag_dict(sample_store, [HALLUCINATED]) | AuditRunnable()).invoke(QUESTION)
    assert out["answer"] == HALLUCINATED and out["report"].trust_passed is False
    chain = rag_dict(sample_store, [HALLUCINATED]) | AuditRunnable(settings={"mode": "enforce"})
    with pytest.raises(EnforcementError) as err:
        chain.invoke(QUESTION)
    assert err.value.report.claims[0].failed_checks


def test_async_path(sample_store: Path) -> None:
    chain = rag_dict(sample_store, [HALLUCINATED]) | AuditRunnable(settings={"mode": "guardrail"})
    out = asyncio.run(chain.ainvoke(QUESTION))
    assert "[withheld" in out["answer"]
    wrapped = AuditRunnable(rag_string(sample_store, [FAITHFUL]), settings={"mode": "guardrail"})
    assert asyncio.run(wrapped.ainvoke(QUESTION))["trust_passed"] is True


def test_callback_handler_audits_every_run(sample_store: Path) -> None:
    handler = AuditCallbackHandler()
    chain = rag_string(sample_store, [FAITHFUL, HALLUCINATED])
    assert chain.invoke(QUESTION, config={"callbacks": [handler]}) == FAITHFUL
    chain.invoke(QUESTION, config={"callbacks": [handler]})
    assert [r.trust_passed for r in handler.reports] == [True, False]
    assert handler.reports[0].query == QUESTION
    assert handler.reports[1].n_chunks > 0


def test_callback_handler_in_enforce_mode_raises(sample_store: Path) -> None:
    handler = AuditCallbackHandler({"mode": "enforce"})
    with pytest.raises(EnforcementError):
        rag_string(sample_store, [HALLUCINATED]).invoke(QUESTION, config={"callbacks": [handler]})
    assert handler.reports and not handler.reports[0].trust_passed


def test_callback_handler_in_enforce_mode_raises_when_it_finds_no_answer() -> None:
    # a chain whose output the handler cannot read was passed unaudited in enforce mode (the
    # error only recorded): enforce fails closed
    from langchain_core.runnables import RunnableLambda

    chain = RunnableLambda(lambda q: {"result": "The Forth Bridge opened in 1925."})
    enforcing = AuditCallbackHandler({"mode": "enforce"})
    with pytest.raises(InputError, match="answer"):
        chain.invoke(QUESTION, config={"callbacks": [enforcing]})
    assert enforcing.errors and not enforcing.reports
    # audit mode records the error and leaves the chain alone
    auditing = AuditCallbackHandler()
    assert chain.invoke(QUESTION, config={"callbacks": [auditing]}) == {
        "result": "The Forth Bridge opened in 1925."
    }
    assert auditing.errors and not auditing.reports


def test_missing_answer_is_an_input_error() -> None:
    with pytest.raises(InputError, match="answer"):
        AuditRunnable().invoke({"question": "q", "context": []})


def test_affidavit_chat_model_wraps_an_affidavit_generator() -> None:
    llm = AffidavitChatModel(generator=FakeGenerator(["Paris [1]."]))
    chain = PROMPT | llm | StrOutputParser()
    assert chain.invoke({"passages": "x", "question": "y"}) == "Paris [1]."


def test_the_example_runs_offline(capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(__file__).resolve().parents[3]
    sys.path.insert(0, str(root / "examples"))
    try:
        import langchain_chain

        assert langchain_chain.main([]) == 0
    finally:
        sys.path.remove(str(root / "examples"))
    out = capsys.readouterr().out
    assert "trust passed: True" in out and "trust passed: False" in out
    assert "[withheld" in out


def test_the_audit_is_a_traced_run_with_the_chain_as_its_child(sample_store: Path) -> None:
    from langchain_core.tracers.context import collect_runs

    audited = AuditRunnable(rag_string(sample_store, [FAITHFUL]))
    with collect_runs() as cb:
        audited.invoke(QUESTION)
    root = cb.traced_runs[0]
    assert root.name == "AuditRunnable"
    assert any(child.run_type == "retriever" for child in _descendants(root))
    assert root.outputs is not None and root.outputs["trust_passed"] is True


def _descendants(run):
    for child in run.child_runs:
        yield child
        yield from _descendants(child)


def test_callback_handler_takes_an_audit_runnables_report_as_is(sample_store: Path) -> None:
    handler = AuditCallbackHandler()
    chain = rag_dict(sample_store, [HALLUCINATED]) | AuditRunnable(settings={"mode": "guardrail"})
    out = chain.invoke(QUESTION, config={"callbacks": [handler]})
    assert handler.reports == [out["report"]]


def test_the_same_text_from_two_urls_stays_two_sources() -> None:
    """Issue 25.6: documents were deduplicated on chunk_id/source only, so a passage quoted by
    two URLs (given as 'url') collapsed into one, and the report lost a source."""
    from langchain_core.documents import Document

    text = "The Forth Bridge opened on 4 March 1890."
    docs = [
        Document(page_content=text, metadata={"url": "https://a.example.org/forth"}),
        Document(page_content=text, metadata={"url": "https://b.example.org/bridge"}),
    ]
    out = AuditRunnable(settings={"mode": "audit"}).invoke(
        {"question": QUESTION, "context": docs, "answer": FAITHFUL}
    )
    assert len(out["context"]) == 2
    dumped = out["report"].model_dump_json()
    assert "a.example.org" in dumped and "b.example.org" in dumped


TWO = f"{FAITHFUL} {HALLUCINATED}"


@pytest.mark.parametrize("form", ["dict", "chunk", "string", "document"])
def test_context_in_every_promised_form(form: str) -> None:
    """Issue 28: chunk dicts, Chunk models and strings raised AttributeError ('dict' object has
    no attribute 'page_content') where the docstring promised them."""
    from langchain_core.documents import Document

    from affidavit.core.types import Chunk

    url = "https://en.wikipedia.org/wiki/Forth_Bridge"
    item = {
        "dict": {"text": FAITHFUL, "url": url},
        "chunk": Chunk(text=FAITHFUL, url=url),
        "string": FAITHFUL,
        "document": Document(page_content=FAITHFUL, metadata={"url": url}),
    }[form]
    runnable = AuditRunnable(settings={"mode": "guardrail"})
    out = runnable.invoke({"question": QUESTION, "context": [item, item], "answer": TWO})
    assert out["answer"] == f"{FAITHFUL} [withheld: not supported by the sources]"
    assert out["report"].n_chunks == 1 and out["context"] == [item]  # the repeat dropped
    assert out["report"].claims[0].supported and not out["report"].claims[1].supported
    streamed = list(runnable.stream({"question": QUESTION, "context": [item], "answer": TWO}))
    assert "".join(c.get("answer", "") for c in streamed) == out["answer"]
    with pytest.raises(InputError, match=r"context\[0\]"):
        runnable.invoke({"question": QUESTION, "context": [3], "answer": TWO})


def _answer_chunks(chunks: list[dict]) -> list[str]:
    return [c["answer"] for c in chunks if c.get("answer")]


def test_stream_releases_each_sentence_once_decided(sample_store: Path) -> None:
    """Issue 28: stream yielded one chunk at the end; now each sentence comes as soon as it is
    decided, and nothing of a failing sentence is ever yielded."""
    chain = rag_dict(sample_store, [TWO, TWO]) | AuditRunnable(settings={"mode": "guardrail"})
    chunks = list(chain.stream(QUESTION))
    answers = _answer_chunks(chunks)
    assert answers == [FAITHFUL, " [withheld: not supported by the sources]"]
    final = chunks[-1]
    assert final["report"].trust_passed is False and final["draft"] == TWO
    assert final["context"][0].metadata["doc_id"] == "forth_bridge"
    assert "".join(answers) == chain.invoke(QUESTION)["answer"]


def test_stream_of_a_wrapped_chain_and_astream(sample_store: Path) -> None:
    wrapped = AuditRunnable(rag_string(sample_store, [TWO, TWO]), settings={"mode": "guardrail"})
    chunks = list(wrapped.stream(QUESTION))
    assert _answer_chunks(chunks)[0] == FAITHFUL
    assert chunks[-1]["report"].n_chunks > 0 and chunks[-1]["question"] == QUESTION

    async def collect() -> list[dict]:
        return [c async for c in wrapped.astream(QUESTION)]

    achunks = asyncio.run(collect())
    assert _answer_chunks(achunks) == _answer_chunks(chunks)
    chain = rag_dict(sample_store, [TWO]) | AuditRunnable(settings={"mode": "guardrail"})

    async def collect_chain() -> list[dict]:
        return [c async for c in chain.astream(QUESTION)]

    assert "1925" not in "".join(_answer_chunks(asyncio.run(collect_chain())))


def test_stream_in_enforce_mode_stops_at_the_first_failing_sentence(sample_store: Path) -> None:
    chain = rag_dict(sample_store, [TWO]) | AuditRunnable(settings={"mode": "enforce"})
    seen: list[dict] = []
    with pytest.raises(EnforcementError):
        for chunk in chain.stream(QUESTION):
            seen.append(chunk)
    assert _answer_chunks(seen) == [FAITHFUL]


def test_the_retriever_exposes_granularity_and_filters(sample_store: Path) -> None:
    """Issue 28: the integrations exposed no retrieval granularity."""
    from pydantic import ValidationError

    from affidavit.core.errors import ConfigError

    r = AffidavitRetriever(
        store_path=str(sample_store),
        k=2,
        mode="bm25",
        granularity="chunk",
        filters={"doc_ids": ["eiffel_tower"]},
    )
    assert r._search.retriever().config()["granularity"] == "chunk"
    docs = r.invoke("the Forth Bridge and the Eiffel Tower")
    assert docs and {d.metadata["doc_id"] for d in docs} == {"eiffel_tower"}
    with pytest.raises(ValidationError, match="'passage', 'document' or 'chunk'"):
        AffidavitRetriever(store_path=str(sample_store), granularity="page")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="valid: domains"):
        AffidavitRetriever(store_path=str(sample_store), filters={"domain": ["x.org"]})


def test_the_run_evaluator_scores_answers_as_langsmith_calls_it(sample_store: Path) -> None:
    """Issue 28: no LangChain/LangSmith evaluator for datasets."""
    import datetime
    import uuid

    from langsmith.evaluation import RunEvaluator
    from langsmith.schemas import Example, Run

    from affidavit.integrations.langchain import AuditRunEvaluator

    evaluator = AuditRunEvaluator()
    assert isinstance(evaluator, RunEvaluator)
    assert evaluator.feedback_keys == ["affidavit_trust", "affidavit_compliance"]
    # the plain evaluator-function form: (inputs, outputs, reference_outputs)
    bad = evaluator({"question": QUESTION}, {"answer": HALLUCINATED, "context": [FAITHFUL]})
    assert [(r["key"], r["score"]) for r in bad["results"]] == [
        ("affidavit_trust", 0),
        ("affidavit_compliance", 0.0),
    ]
    assert "1925" in bad["results"][0]["comment"]
    # LangSmith's interface: a traced run of a real chain against its dataset example, the
    # documents taken from the example's reference outputs when the run kept none
    answer = rag_string(sample_store, [FAITHFUL]).invoke(QUESTION)
    run = Run(
        id=uuid.uuid4(),
        trace_id=uuid.uuid4(),
        name="rag",
        run_type="chain",
        start_time=datetime.datetime.now(datetime.UTC),
        inputs={"question": QUESTION},
        outputs={"output": answer},
    )
    example = Example(
        id=uuid.uuid4(), inputs={"question": QUESTION}, outputs={"context": [FAITHFUL]}
    )
    scored = AuditRunEvaluator(answer_key="output").evaluate_run(run, example)
    assert [(r.key, r.score) for r in scored["results"]] == [
        ("affidavit_trust", 1),
        ("affidavit_compliance", 1.0),
    ]
    assert scored["results"][0].target_run_id == run.id
    # an AuditRunnable's output is scored by its own report; enforce settings never raise
    audited = (rag_dict(sample_store, [HALLUCINATED]) | AuditRunnable()).invoke(QUESTION)
    enforcing = AuditRunEvaluator({"mode": "enforce"})
    assert enforcing({"question": QUESTION}, audited)["results"][0]["score"] == 0
    assert enforcing.report({"question": QUESTION}, audited) is audited["report"]
    assert (
        enforcing({}, {"answer": HALLUCINATED, "context": [FAITHFUL]})["results"][0]["score"] == 0
    )


def _fixed_output(answer: str):
    """A chain whose output carries its own documents (the Forth Bridge passage, its URL)."""
    from langchain_core.runnables import RunnableLambda

    context = [{"text": FAITHFUL, "url": "https://en.wikipedia.org/wiki/Forth_Bridge"}]
    return RunnableLambda(lambda q: {"question": q, "context": context, "answer": answer})


def test_an_audit_runnables_report_is_taken_only_under_the_same_settings() -> None:
    """An AuditRunnable's report was taken as is: an enforcing handler let the run it failed
    pass (recorded, not raised), and a handler or an evaluator with an allowlist took a report
    made without one as passed."""
    from affidavit.integrations.langchain import AuditRunEvaluator

    enforcing = AuditCallbackHandler({"mode": "enforce"})
    with pytest.raises(EnforcementError):
        (_fixed_output(HALLUCINATED) | AuditRunnable()).invoke(
            QUESTION, config={"callbacks": [enforcing]}
        )
    assert [r.trust_passed for r in enforcing.reports] == [False]
    narrow = {"allowlist": ["example.org"]}
    handler = AuditCallbackHandler(narrow)
    out = (_fixed_output(FAITHFUL) | AuditRunnable()).invoke(
        QUESTION, config={"callbacks": [handler]}
    )
    assert out["trust_passed"] is True  # no allowlist there
    (report,) = handler.reports
    assert report.trust_passed is False and report.blocked_sources
    scored = AuditRunEvaluator(narrow)({"question": QUESTION}, out)
    assert [r["score"] for r in scored["results"]] == [0, 0.0]
    # the same settings (the mode aside): the report is taken as is
    assert AuditRunEvaluator().report({"question": QUESTION}, out) is out["report"]


def test_a_handler_given_to_a_nested_chain_audits_it() -> None:
    """A handler attached to a chain that runs inside another (``with_config``) never saw a
    run without a parent, so it audited nothing: in enforce mode the run passed unaudited."""
    from langchain_core.runnables import RunnableLambda

    enforcing = AuditCallbackHandler({"mode": "enforce"})
    outer = RunnableLambda(lambda q: q) | _fixed_output(HALLUCINATED).with_config(
        callbacks=[enforcing]
    )
    with pytest.raises(EnforcementError):
        outer.invoke(QUESTION)
    assert [r.trust_passed for r in enforcing.reports] == [False]


def test_a_nested_handler_keeps_the_documents_of_its_own_run(sample_store: Path) -> None:
    from langchain_core.runnables import RunnableLambda

    handler = AuditCallbackHandler()
    inner = rag_string(sample_store, [FAITHFUL]).with_config(callbacks=[handler])
    assert (RunnableLambda(lambda q: q) | inner).invoke(QUESTION) == FAITHFUL
    (report,) = handler.reports
    assert report.trust_passed is True and report.n_chunks > 0


def test_a_chunk_dict_of_the_wrong_shape_is_an_input_error() -> None:
    """A chunk dict whose url is not a string or whose metadata is not an object raised
    AttributeError ('int' object has no attribute 'strip') from the source policy."""
    runnable = AuditRunnable()
    for item, field in [
        ({"text": FAITHFUL, "url": 5}, "url"),
        ({"text": FAITHFUL, "url": {"href": "https://a.org"}}, "url"),
        ({"text": FAITHFUL, "metadata": ["a"]}, "metadata"),
    ]:
        with pytest.raises(InputError, match=rf"context\[0\]\.{field}"):
            runnable.invoke({"question": QUESTION, "context": [item], "answer": FAITHFUL})


def test_a_document_with_a_numeric_doc_id_is_audited() -> None:
    """A numeric ``doc_id`` in a document's metadata (a database key) raised pydantic's
    ValidationError from the Chunk model instead of being audited."""
    from langchain_core.documents import Document

    doc = Document(page_content=FAITHFUL, metadata={"doc_id": 42, "url": "https://a.org/f"})
    out = AuditRunnable().invoke({"question": QUESTION, "context": [doc], "answer": FAITHFUL})
    assert out["trust_passed"] is True
    assert out["report"].claims[0].evidence.doc_id == "42"


class _CutGenerator(FakeGenerator):
    """Streams its answer, then says the token budget ran out (as llama.cpp reports it)."""

    def stream(self, messages: Any, **kw: Any) -> Any:
        from affidavit.core.errors import GenerationTruncatedError

        yield from super().stream(messages, **kw)
        raise GenerationTruncatedError("cut", reason="length")


def test_a_reply_cut_at_its_token_budget_is_returned_marked_by_its_finish_reason() -> None:
    cut = AffidavitChatModel(generator=_CutGenerator(["Paris is the capital"])).invoke("Hello")
    assert cut.content == "Paris is the capital"
    assert cut.response_metadata["finish_reason"] == "length"
    whole = AffidavitChatModel(generator=FakeGenerator(["Paris [1]."])).invoke("Hello")
    assert whole.response_metadata["finish_reason"] == "stop"


def test_a_streamed_answer_citing_after_the_stop_shows_what_the_invoked_one_shows(
    sample_store: Path,
) -> None:
    """The chat model streams character by character, as a tokenizer splits "[1]": the "[1]"
    after a withheld sentence's full stop came out as a second withheld marker."""
    cited = f"{HALLUCINATED} [1] {FAITHFUL} [1]"
    chain = rag_dict(sample_store, [cited, cited]) | AuditRunnable(settings={"mode": "guardrail"})
    streamed = "".join(_answer_chunks(list(chain.stream(QUESTION))))
    assert streamed == chain.invoke(QUESTION)["answer"]
    assert streamed == f"[withheld: not supported by the sources] {FAITHFUL} [1]"


def test_a_streamed_piece_holding_two_sentences_shows_nothing_undecided() -> None:
    """An upstream chain streamed a piece that completed two sentences and began a third: the
    start of the third ("The Forth Bridge opened o", of a sentence withheld once complete) was
    yielded before it was decided."""
    fowler = "It was designed by John Fowler."
    answer = f"{FAITHFUL} {fowler} {HALLUCINATED} {fowler}"
    at = len(FAITHFUL) + len(fowler) + 2 + 25
    context = [f"{FAITHFUL} {fowler}"]
    runnable = AuditRunnable(settings={"mode": "guardrail"})
    chunks = [{"question": QUESTION, "context": context}, {"answer": answer[:at]}]
    streamed = _answer_chunks(list(runnable.transform(iter([*chunks, {"answer": answer[at:]}]))))
    assert streamed[0] == f"{FAITHFUL} {fowler}"
    whole = runnable.invoke({"question": QUESTION, "context": context, "answer": answer})
    assert "".join(streamed) == whole["answer"]
