"""The LlamaIndex integration against the real llama-index-core."""

from __future__ import annotations

import asyncio
import sys
from datetime import date
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.base.response.schema import Response
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import NodeWithScore, TextNode

from affidavit.core.errors import ConfigError, EnforcementError
from affidavit.integrations.llamaindex import (
    REPORT_KEY,
    AffidavitLLM,
    AffidavitRetriever,
    AuditEvaluator,
    SourcePolicyPostprocessor,
    VerifiedQueryEngine,
)
from affidavit.testing.fake_llm import FakeGenerator

QUESTION = "When did the Forth Bridge open?"
FAITHFUL = "The Forth Bridge opened on 4 March 1890."
HALLUCINATED = "The Forth Bridge opened on 4 March 1925."


def engine(store: Path, answers: list[str]) -> RetrieverQueryEngine:
    return RetrieverQueryEngine.from_args(
        AffidavitRetriever(str(store), k=2, mode="bm25"),
        llm=AffidavitLLM(generator=FakeGenerator(answers)),
    )


def node(text: str, **meta: object) -> NodeWithScore:
    return NodeWithScore(node=TextNode(text=text, metadata=dict(meta)), score=1.0)


def test_retriever_returns_nodes_with_provenance(sample_store: Path) -> None:
    nodes = AffidavitRetriever(str(sample_store), k=2, mode="bm25").retrieve(QUESTION)
    assert nodes[0].node.metadata["doc_id"] == "forth_bridge"
    assert nodes[0].node.metadata["url"].endswith("Forth_Bridge")
    assert "4 March 1890" in nodes[0].node.get_content()
    anodes = asyncio.run(
        AffidavitRetriever(str(sample_store), k=2, mode="bm25").aretrieve(QUESTION)
    )
    assert [n.node.node_id for n in anodes] == [n.node.node_id for n in nodes]


def test_query_engine_wrapper_withholds_a_hallucination_in_guardrail_mode(
    sample_store: Path,
) -> None:
    wrapped = VerifiedQueryEngine(
        engine(sample_store, [HALLUCINATED, FAITHFUL]), {"mode": "guardrail"}
    )
    bad = wrapped.query(QUESTION)
    report = bad.metadata[REPORT_KEY]
    assert "1925" not in bad.response and "[withheld" in bad.response
    assert report.trust_passed is False and report.claims[0].failed_checks[0].check == "date"
    assert bad.metadata["affidavit_draft"] == HALLUCINATED
    assert bad.source_nodes and report.n_chunks == len(bad.source_nodes)
    good = wrapped.query(QUESTION)
    assert good.response == FAITHFUL and good.metadata[REPORT_KEY].trust_passed


def test_query_engine_wrapper_async_and_enforce(sample_store: Path) -> None:
    wrapped = VerifiedQueryEngine(engine(sample_store, [HALLUCINATED]), {"mode": "guardrail"})
    out = asyncio.run(wrapped.aquery(QUESTION))
    assert "[withheld" in str(out.response)
    enforcing = VerifiedQueryEngine(engine(sample_store, [HALLUCINATED]), {"mode": "enforce"})
    with pytest.raises(EnforcementError) as err:
        enforcing.query(QUESTION)
    assert err.value.report.trust_passed is False


def test_evaluator_checks_a_response_against_its_own_source_nodes(sample_store: Path) -> None:
    response = engine(sample_store, [HALLUCINATED]).query(QUESTION)
    result = AuditEvaluator().evaluate_response(query=QUESTION, response=response)
    assert result.passing is False and result.score == 0.0
    assert "1925" in (result.feedback or "")
    assert result.report is not None and result.report.n_chunks == len(response.source_nodes)
    good = Response(response=FAITHFUL, source_nodes=response.source_nodes)
    assert AuditEvaluator().evaluate_response(query=QUESTION, response=good).passing is True
    plain = asyncio.run(AuditEvaluator().aevaluate(QUESTION, HALLUCINATED, contexts=[FAITHFUL]))
    assert plain.passing is False and plain.contexts == [FAITHFUL]
    assert asyncio.run(AuditEvaluator().aevaluate(QUESTION, FAITHFUL, contexts=[FAITHFUL])).passing


def test_postprocessor_drops_blocked_and_stale_sources() -> None:
    nodes = [
        node("fresh", url="https://en.wikipedia.org/a", published_at="2026-10-01"),
        node("stale", url="https://en.wikipedia.org/b", published_at="2019-01-01"),
        node("undated", url="https://en.wikipedia.org/c"),
        node("blocked", url="https://spam.example.net/d", published_at="2026-10-01"),
        node("no url"),
    ]
    pp = SourcePolicyPostprocessor(
        settings={
            "allowlist": ["wikipedia.org"],
            "max_age_days": 365,
            "stale_action": "fail",
            "require_url": True,
        },
        today=date(2026, 12, 1),
    )
    kept = pp.postprocess_nodes(nodes)
    assert [n.node.get_content() for n in kept] == ["fresh"]
    assert len(pp.last_dropped) == 4
    warn = SourcePolicyPostprocessor(
        settings={"max_age_days": 365, "stale_action": "warn"}, today=date(2026, 12, 1)
    )
    assert [n.node.get_content() for n in warn.postprocess_nodes(nodes)] == [
        "fresh",
        "undated",
        "blocked",
        "no url",
    ]
    with pytest.raises(ConfigError):
        SourcePolicyPostprocessor(settings={"stale_action": "explode"})


def test_a_blocked_node_sharing_a_kept_nodes_chunk_id_is_still_dropped() -> None:
    """The postprocessor kept every node whose chunk id was among the allowed chunks' ids: a
    node from a blocked domain (or a stale one) that carried an allowed node's ``chunk_id`` in
    its metadata passed the policy."""
    nodes = [
        node("allowed", url="https://en.wikipedia.org/a", chunk_id="c1"),
        node("blocked", url="https://spam.example.net/d", chunk_id="c1"),
    ]
    pp = SourcePolicyPostprocessor(settings={"allowlist": ["wikipedia.org"]})
    assert [n.node.get_content() for n in pp.postprocess_nodes(nodes)] == ["allowed"]
    assert [b.reason for b in pp.last_dropped] == ["not_allowlisted"]


@pytest.mark.parametrize("form", ["Settings", "AuditSettings", "dict"])
def test_the_source_policy_round_trips_through_json(form: str) -> None:
    """Issue 25.3 for LlamaIndex, whose components serialise too (``to_json``/``from_json``):
    a postprocessor given Settings could not be saved (TypeError on a path in the settings)."""
    from affidavit.core.settings import Settings

    policy = {"allowlist": ["wikipedia.org"], "max_age_days": 365, "stale_action": "fail"}
    full = Settings(audit=policy, generate={"api_key": "sk-secret-never-written"})
    settings: Any = {"Settings": full, "AuditSettings": full.audit, "dict": policy}[form]
    pp = SourcePolicyPostprocessor(settings=settings, today=date(2026, 12, 1))
    text = pp.to_json()
    assert "sk-secret-never-written" not in text
    loaded = SourcePolicyPostprocessor.from_json(text)
    nodes = [
        node("fresh", url="https://en.wikipedia.org/a", published_at="2026-10-01"),
        node("stale", url="https://en.wikipedia.org/b", published_at="2019-01-01"),
        node("undated", url="https://en.wikipedia.org/c"),
        node("blocked", url="https://spam.example.net/d", published_at="2026-10-01"),
    ]
    assert [n.node.get_content() for n in loaded.postprocess_nodes(nodes)] == ["fresh"]
    assert loaded.today == date(2026, 12, 1)


def test_the_example_runs_offline(capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(__file__).resolve().parents[3]
    sys.path.insert(0, str(root / "examples"))
    try:
        import llamaindex_query_engine

        assert llamaindex_query_engine.main([]) == 0
    finally:
        sys.path.remove(str(root / "examples"))
    out = capsys.readouterr().out
    assert "trust passed: True" in out and "trust passed: False" in out and "[withheld" in out


TWO = f"{FAITHFUL} {HALLUCINATED}"
WITHHELD = "[withheld: not supported by the sources]"


def streaming_engine(store: Path, answers: list[str]) -> RetrieverQueryEngine:
    return RetrieverQueryEngine.from_args(
        AffidavitRetriever(str(store), k=2, mode="bm25"),
        llm=AffidavitLLM(generator=FakeGenerator(answers)),
        streaming=True,
    )


def test_a_streaming_engine_stays_streaming_through_the_guard(sample_store: Path) -> None:
    """Issue 28: a streaming engine wrapped by VerifiedQueryEngine came back non-streaming."""
    from llama_index.core.base.response.schema import StreamingResponse

    wrapped = VerifiedQueryEngine(streaming_engine(sample_store, [TWO]), {"mode": "guardrail"})
    response = wrapped.query(QUESTION)
    assert isinstance(response, StreamingResponse)
    assert REPORT_KEY not in (response.metadata or {})  # nothing decided before it streams
    pieces = list(response.response_gen)
    assert pieces == [FAITHFUL, f" {WITHHELD}"]  # one piece per decided sentence
    report = response.metadata[REPORT_KEY]
    assert report.trust_passed is False and response.metadata["affidavit_draft"] == TWO
    assert report.n_chunks == len(response.source_nodes) > 0


def test_an_async_streaming_engine_stays_streaming(sample_store: Path) -> None:
    from llama_index.core.base.response.schema import AsyncStreamingResponse, StreamingResponse

    wrapped = VerifiedQueryEngine(streaming_engine(sample_store, [TWO]), {"mode": "guardrail"})

    async def run() -> tuple[object, list[str]]:
        response = await wrapped.aquery(QUESTION)
        if isinstance(response, AsyncStreamingResponse):
            return response, [t async for t in response.async_response_gen()]
        assert isinstance(response, StreamingResponse)
        return response, list(response.response_gen)

    response, pieces = asyncio.run(run())
    assert "".join(pieces) == f"{FAITHFUL} {WITHHELD}"
    assert response.metadata[REPORT_KEY].trust_passed is False  # type: ignore[attr-defined]


def test_a_streaming_engine_in_enforce_mode_raises_mid_stream(sample_store: Path) -> None:
    wrapped = VerifiedQueryEngine(streaming_engine(sample_store, [TWO]), {"mode": "enforce"})
    shown: list[str] = []
    with pytest.raises(EnforcementError):
        for piece in wrapped.query(QUESTION).response_gen:
            shown.append(piece)
    assert shown == [FAITHFUL]


def test_postprocessor_keeps_local_files_the_allowlist_names(tmp_path: Path) -> None:
    """Issue 28: every local file was dropped as a malformed URL; an allowlist names local
    sources as file:PATH, the same way in the postprocessor and the audit."""
    import affidavit

    kept_dir, other_dir = tmp_path / "kept", tmp_path / "other"
    nodes = [
        node(FAITHFUL, file_path=str(kept_dir / "forth.txt")),  # as SimpleDirectoryReader sets
        node("Something else.", file_path=str(other_dir / "x.txt")),
        node("A web page.", url="https://en.wikipedia.org/wiki/Forth_Bridge"),
    ]
    settings = {"allowlist": ["wikipedia.org", f"file:{kept_dir}"]}
    pp = SourcePolicyPostprocessor(settings=settings)
    kept = pp.postprocess_nodes(nodes)
    assert [n.node.get_content() for n in kept] == [FAITHFUL, "A web page."]
    assert [d.reason for d in pp.last_dropped] == ["not_allowlisted"]  # type: ignore[union-attr]
    assert SourcePolicyPostprocessor(settings={"allowlist": []}).postprocess_nodes(nodes) == []
    report = affidavit.audit(
        QUESTION,
        [{"text": n.node.get_content(), "url": n.node.metadata.get("file_path")} for n in nodes],
        FAITHFUL,
        settings,
    )
    assert report.trust_passed and len(report.blocked_sources) == 1


def test_the_retriever_exposes_granularity_and_filters(sample_store: Path) -> None:
    """Issue 28: the integrations exposed no retrieval granularity."""
    r = AffidavitRetriever(
        str(sample_store), k=2, mode="bm25", granularity="document", filters={"doc_ids": ["x"]}
    )
    assert r._search.retriever().config()["granularity"] == "document"
    assert r.retrieve("the Forth Bridge and the Eiffel Tower") == []
    with pytest.raises(ConfigError, match="valid: passage, document, chunk"):
        AffidavitRetriever(str(sample_store), granularity="page")  # type: ignore[arg-type]


def test_a_node_with_a_numeric_doc_id_is_judged() -> None:
    """A numeric ``doc_id`` in a node's metadata raised pydantic's ValidationError."""
    nodes = [node(FAITHFUL, url="https://a.org/f", doc_id=42)]
    pp = SourcePolicyPostprocessor(settings={"allowlist": ["a.org"]})
    assert pp.postprocess_nodes(nodes) == nodes
    r = Response(response=FAITHFUL, source_nodes=nodes)
    result = AuditEvaluator().evaluate_response(query=QUESTION, response=r)
    assert result.passing is True
    assert result.report is not None and result.report.claims[0].evidence.doc_id == "42"


def test_without_settings_the_configured_allowlist_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An allowlist set in affidavit.toml (or AFFIDAVIT_AUDIT__ALLOWLIST) was ignored by the
    LlamaIndex and LangChain components built without settings (they used the built-in
    defaults: every domain allowed), where Haystack and MCP applied it."""
    from affidavit.integrations.langchain import AuditRunnable
    from affidavit.integrations.llamaindex import AuditEvaluator, SourcePolicyPostprocessor

    monkeypatch.chdir(tmp_path)
    (tmp_path / "affidavit.toml").write_text('[audit]\nallowlist = ["en.wikipedia.org"]\n')
    assert SourcePolicyPostprocessor()._audit.allowlist == ["en.wikipedia.org"]
    assert AuditRunnable().auditor.settings.allowlist == ["en.wikipedia.org"]
    assert AuditEvaluator().auditor.settings.allowlist == ["en.wikipedia.org"]
    (tmp_path / "affidavit.toml").unlink()
    monkeypatch.setenv("AFFIDAVIT_AUDIT__ALLOWLIST", '["example.org"]')
    assert SourcePolicyPostprocessor()._audit.allowlist == ["example.org"]
    # settings given: they are the policy, whatever the environment says
    assert SourcePolicyPostprocessor(settings={"mode": "audit"})._audit.allowlist is None


class _CutGenerator(FakeGenerator):
    """Streams its answer, then says the token budget ran out (as llama.cpp reports it)."""

    def stream(self, messages: Any, **kw: Any) -> Any:
        from affidavit.core.errors import GenerationTruncatedError

        yield from super().stream(messages, **kw)
        raise GenerationTruncatedError("cut", reason="length")


def test_a_completion_cut_at_its_token_budget_is_returned_marked_by_its_finish_reason() -> None:
    llm = AffidavitLLM(generator=_CutGenerator(["Paris is the capital"]))
    done = llm.complete("Hello")
    assert done.text == "Paris is the capital"
    assert done.additional_kwargs["finish_reason"] == "length"
    pieces = list(
        AffidavitLLM(generator=_CutGenerator(["Paris is the capital"])).stream_complete("Hi")
    )
    assert pieces[-1].text == "Paris is the capital"
    assert pieces[-1].additional_kwargs["finish_reason"] == "length"
    assert AffidavitLLM(generator=FakeGenerator(["Paris."])).complete("Hi").additional_kwargs == {
        "finish_reason": "stop"
    }


class _CharGenerator(FakeGenerator):
    """Streams its answer one character at a time, as a tokenizer splits "[1]"."""

    def stream(self, messages: Any, **kw: Any) -> Any:
        for piece in super().stream(messages, **kw):
            yield from piece


def test_a_streamed_answer_citing_after_the_stop_shows_what_the_guarded_answer_shows(
    sample_store: Path,
) -> None:
    """The "[1]" after a withheld sentence's full stop came out as a second withheld marker."""
    cited = f"{HALLUCINATED} [1] {FAITHFUL} [1]"
    engine = RetrieverQueryEngine.from_args(
        AffidavitRetriever(str(sample_store), k=2, mode="bm25"),
        llm=AffidavitLLM(generator=_CharGenerator([cited])),
        streaming=True,
    )
    response = VerifiedQueryEngine(engine, {"mode": "guardrail"}).query(QUESTION)
    streamed = "".join(response.response_gen)
    assert streamed == response.metadata[REPORT_KEY].guarded_response
    assert streamed == f"{WITHHELD} {FAITHFUL} [1]"


class _PieceGenerator(FakeGenerator):
    """Streams its answer in the given pieces (a server that sends several sentences at once)."""

    def __init__(self, pieces: list[str]) -> None:
        super().__init__(["".join(pieces)])
        self.pieces = pieces

    def stream(self, messages: Any, **kw: Any) -> Any:
        "".join(super().stream(messages, **kw))  # the fake's own bookkeeping
        yield from self.pieces


def test_a_streamed_piece_holding_two_sentences_shows_nothing_undecided(
    sample_store: Path,
) -> None:
    """A piece that completed two sentences and began a third: the start of the third (of a
    sentence withheld once complete) was yielded before it was decided."""
    fowler = "The bridge was designed by John Fowler."
    answer = f"{FAITHFUL} {fowler} {HALLUCINATED} {fowler}"
    at = len(FAITHFUL) + len(fowler) + 2 + 25
    engine = RetrieverQueryEngine.from_args(
        AffidavitRetriever(str(sample_store), k=2, mode="bm25"),
        llm=AffidavitLLM(generator=_PieceGenerator([answer[:at], answer[at:]])),
        streaming=True,
    )
    response = VerifiedQueryEngine(engine, {"mode": "guardrail"}).query(QUESTION)
    pieces = list(response.response_gen)
    assert pieces[0] == f"{FAITHFUL} {fowler}"  # two decided sentences, nothing of the third
    assert "".join(pieces) == response.metadata[REPORT_KEY].guarded_response
    assert "1925" not in "".join(pieces)
