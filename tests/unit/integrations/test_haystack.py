"""The Haystack integration against the real haystack-ai (Pipeline, MockChatGenerator)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

pytest.importorskip("haystack")

from haystack import Document, Pipeline
from haystack.components.builders import ChatPromptBuilder
from haystack.components.generators.chat import MockChatGenerator
from haystack.core.errors import PipelineConnectError, PipelineRuntimeError
from haystack.dataclasses import ChatMessage

from affidavit.core.errors import EnforcementError
from affidavit.core.report import AuditReport
from affidavit.integrations.haystack import (
    AffidavitAuditor,
    AffidavitRetriever,
    AffidavitVerifier,
)
from affidavit.testing.verifiers import KeywordVerifier

QUESTION = "When did the Forth Bridge open?"
FAITHFUL = "The Forth Bridge opened on 4 March 1890."
HALLUCINATED = "The Forth Bridge opened on 4 March 1925."
TEMPLATE = [
    ChatMessage.from_system("{% for d in documents %}{{ d.content }}\n{% endfor %}"),
    ChatMessage.from_user("{{ query }}"),
]


def pipeline(store: Path, answers: list[str], auditor: object) -> Pipeline:
    p = Pipeline()
    p.add_component("retriever", AffidavitRetriever(str(store), top_k=2, mode="bm25"))
    p.add_component(
        "prompt", ChatPromptBuilder(template=TEMPLATE, required_variables=["query", "documents"])
    )
    p.add_component("llm", MockChatGenerator(responses=answers))
    p.add_component("audit", auditor)
    p.connect("retriever.documents", "prompt.documents")
    p.connect("prompt.prompt", "llm.messages")
    p.connect("llm.replies", "audit.replies")
    p.connect("retriever.documents", "audit.documents")
    return p


def inputs() -> dict:
    return {
        "retriever": {"query": QUESTION},
        "prompt": {"query": QUESTION},
        "audit": {"query": QUESTION},
    }


def test_sockets_are_typed() -> None:
    a = AffidavitAuditor()
    ins = {k: v.type for k, v in a.__haystack_input__._sockets_dict.items()}
    outs = {k: v.type for k, v in a.__haystack_output__._sockets_dict.items()}
    assert ins["query"] is str and ins["documents"] == list[Document]
    assert outs == {
        "answer": str,
        "replies": list[ChatMessage],
        "report": AuditReport,
        "trust_passed": bool,
    }
    p = Pipeline()
    p.add_component("audit", AffidavitAuditor())
    p.add_component("audit2", AffidavitAuditor())
    with pytest.raises(PipelineConnectError):
        p.connect("audit.trust_passed", "audit2.documents")  # bool into list[Document]


def test_auditor_in_a_pipeline_withholds_a_hallucination(sample_store: Path) -> None:
    p = pipeline(sample_store, [HALLUCINATED, FAITHFUL], AffidavitAuditor(mode="guardrail"))
    bad = p.run(inputs())["audit"]
    assert "1925" not in bad["answer"] and "[withheld" in bad["answer"]
    assert bad["replies"][0].text == bad["answer"]
    assert bad["trust_passed"] is False
    assert bad["report"].claims[0].failed_checks[0].check == "date"
    assert bad["report"].n_chunks > 0
    good = p.run(inputs())["audit"]
    assert good["answer"] == FAITHFUL and good["trust_passed"] is True


def test_enforce_mode_raises_with_the_report(sample_store: Path) -> None:
    p = pipeline(sample_store, [HALLUCINATED], AffidavitAuditor(mode="enforce"))
    with pytest.raises((EnforcementError, PipelineRuntimeError)) as err:
        p.run(inputs())
    cause = err.value if isinstance(err.value, EnforcementError) else err.value.__cause__
    assert isinstance(cause, EnforcementError) and cause.report.trust_passed is False


def test_verifier_component_uses_the_claim_verifier(sample_store: Path) -> None:
    p = pipeline(
        sample_store,
        [FAITHFUL],
        AffidavitVerifier(mode="guardrail", verifier=KeywordVerifier()),
    )
    good = p.run(inputs())["audit"]
    assert good["trust_passed"] is True
    assert good["report"].claims[0].verdict.label == "supported"  # the verifier ran
    assert good["report"].settings["use_verifier"] is True


def test_async_pipeline(sample_store: Path) -> None:
    p = pipeline(sample_store, [HALLUCINATED], AffidavitAuditor(mode="guardrail"))
    out = asyncio.run(p.run_async(inputs()))["audit"]
    assert "[withheld" in out["answer"]


def test_the_example_runs_offline(capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(__file__).resolve().parents[3]
    sys.path.insert(0, str(root / "examples"))
    try:
        import haystack_pipeline

        assert haystack_pipeline.main([]) == 0
    finally:
        sys.path.remove(str(root / "examples"))
    out = capsys.readouterr().out
    assert "trust passed: True" in out and "trust passed: False" in out and "[withheld" in out


def test_a_pipeline_with_the_components_round_trips_through_yaml() -> None:
    p = Pipeline()
    p.add_component("audit", AffidavitAuditor(mode="enforce", allowlist=["wikipedia.org"]))
    p.add_component("retriever", AffidavitRetriever(".affidavit", top_k=3, mode="bm25"))
    q = Pipeline.loads(p.dumps(), allowed_modules=["affidavit.integrations.haystack"])
    audit = q.get_component("audit")
    assert audit.auditor.settings.mode == "enforce"
    assert audit.auditor.settings.allowlist == ["wikipedia.org"]
    assert q.get_component("retriever").top_k == 3


def test_every_setting_of_the_audit_components_round_trips_through_yaml(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 25.3: a policy given as settings survived dumps/loads as settings: null, and the
    loaded pipeline ran with an empty allowlist and no freshness limit."""
    from affidavit.core.settings import Settings

    monkeypatch.setenv("AFFIDAVIT_GENERATE__API_KEY", "from-the-environment")
    s = Settings(
        audit={"allowlist": ["example.org"], "max_age_days": 30, "min_compliance": 0.75},
        generate={"api_key": "sk-secret-never-written"},
    )
    p = Pipeline()
    p.add_component("audit", AffidavitAuditor(settings=s))
    p.add_component("verify", AffidavitVerifier(settings=s, mode="enforce"))
    text = p.dumps()
    assert "sk-secret-never-written" not in text and "**********" not in text
    q = Pipeline.loads(text, allowed_modules=["affidavit.integrations.haystack"])
    for name, mode in (("audit", "guardrail"), ("verify", "enforce")):
        c = q.get_component(name)
        assert c.auditor.settings.allowlist == ["example.org"]
        assert c.auditor.settings.max_age_days == 30
        assert c.auditor.settings.mode == mode
        # every other setting too, the secret aside (it comes back from the environment)
        assert c.settings.model_dump(exclude={"generate"}) == s.model_dump(exclude={"generate"})
        assert c.settings.generate.api_key.get_secret_value() == "from-the-environment"
    assert q.get_component("audit").auditor.settings.min_compliance == 0.75


def test_the_other_components_round_trip_their_whole_configuration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 25.3, a test for each component: the stream guard, the evaluator and the retriever
    keep every setting and argument through dumps/loads too."""
    from haystack.components.generators.utils import print_streaming_chunk

    from affidavit.core.settings import Settings
    from affidavit.integrations.haystack import AffidavitEvaluator, AffidavitStreamGuard

    monkeypatch.setenv("AFFIDAVIT_GENERATE__API_KEY", "from-the-environment")
    s = Settings(
        audit={"allowlist": ["example.org"], "max_age_days": 30, "min_compliance": 0.75},
        generate={"api_key": "sk-secret-never-written"},
    )
    p = Pipeline()
    p.add_component(
        "guard", AffidavitStreamGuard(on_chunk=print_streaming_chunk, mode="enforce", settings=s)
    )
    p.add_component("evaluate", AffidavitEvaluator(settings=s, min_compliance=0.5))
    filters = {"domains": ["example.org"], "date_from": "2020-01-01"}
    retriever = AffidavitRetriever("s", top_k=7, mode="bm25", granularity="chunk", filters=filters)
    p.add_component("retrieve", retriever)
    text = p.dumps()
    assert "sk-secret-never-written" not in text
    q = Pipeline.loads(text, allowed_modules=["affidavit.integrations.haystack"])
    for name, mode, compliance in (("guard", "enforce", 0.75), ("evaluate", "audit", 0.5)):
        c = q.get_component(name)
        assert c.audit_settings.mode == mode
        assert c.audit_settings.allowlist == ["example.org"]
        assert c.audit_settings.max_age_days == 30
        assert c.audit_settings.min_compliance == compliance
        assert c.settings.model_dump(exclude={"generate", "audit"}) == s.model_dump(
            exclude={"generate", "audit"}
        )
        assert c.settings.generate.api_key.get_secret_value() == "from-the-environment"
    assert q.get_component("guard").on_chunk is print_streaming_chunk
    r = q.get_component("retrieve")
    assert (r.store_path, r.top_k, r.mode, r.granularity, r.filters) == (
        "s",
        7,
        "bm25",
        "chunk",
        filters,
    )


def test_the_verifier_loads_its_model_in_warm_up_not_in_init(
    monkeypatch: pytest.MonkeyPatch, sample_store: Path
) -> None:
    """Issue 28: AffidavitVerifier loaded its model in __init__; Haystack components load in
    warm_up, which Pipeline.run calls, so a pipeline is built, saved and loaded model-free."""
    import affidavit.pipeline.check as check

    loads: list[object] = []

    def fake_default_verifier(settings: object) -> KeywordVerifier:
        loads.append(settings)
        return KeywordVerifier()

    monkeypatch.setattr(check, "default_verifier", fake_default_verifier)
    verifier = AffidavitVerifier(mode="guardrail")
    assert loads == [] and verifier.audit_settings.use_verifier is True
    p = pipeline(sample_store, [FAITHFUL], verifier)
    q = Pipeline.loads(p.dumps(), allowed_modules=["affidavit.integrations.haystack"])
    assert loads == []
    out = q.run(inputs())["audit"]
    assert len(loads) == 1  # Pipeline.run warmed it up once
    assert out["trust_passed"] is True and out["report"].claims[0].verdict is not None
    q.run(inputs() | {"llm": {}})
    assert len(loads) == 1


def test_loading_a_pipeline_names_the_module_haystack_must_trust(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 28: Pipeline.loads needs the module allowed, which the docs did not say; they say
    it now (both ways Haystack offers), and this checks both."""
    from haystack.core.errors import DeserializationError

    p = Pipeline()
    p.add_component("audit", AffidavitAuditor(mode="enforce"))
    text = p.dumps()
    with pytest.raises(DeserializationError, match=r"affidavit\.integrations\.haystack"):
        Pipeline.loads(text)
    assert Pipeline.loads(text, allowed_modules=["affidavit.integrations.haystack"])
    monkeypatch.setenv("HAYSTACK_DESERIALIZATION_ALLOWLIST", "affidavit.integrations.haystack")
    assert Pipeline.loads(text).get_component("audit").audit_settings.mode == "enforce"
    docs = (Path(__file__).resolve().parents[3] / "docs/how-to/audit-your-chain.md").read_text()
    assert "allowed_modules" in docs and "HAYSTACK_DESERIALIZATION_ALLOWLIST" in docs


def test_the_retriever_takes_filters_in_either_syntax(sample_store: Path) -> None:
    """Issue 28: the retriever had no filters input."""
    from affidavit.core.errors import ConfigError

    both = "the Forth Bridge and the Eiffel Tower"
    r = AffidavitRetriever(str(sample_store), top_k=2, mode="bm25")
    assert {d.meta["doc_id"] for d in r.run(both)["documents"]} == {
        "forth_bridge",
        "eiffel_tower",
    }
    own = r.run(both, filters={"doc_ids": ["eiffel_tower"]})["documents"]
    assert own and {d.meta["doc_id"] for d in own} == {"eiffel_tower"}
    hay = {"field": "meta.doc_id", "operator": "==", "value": "eiffel_tower"}
    assert [d.id for d in r.run(both, filters=hay)["documents"]] == [d.id for d in own]
    assert r.run(both, filters={"domains": ["example.org"]})["documents"] == []
    fixed = AffidavitRetriever(str(sample_store), top_k=2, mode="bm25", filters=hay)
    assert {d.meta["doc_id"] for d in fixed.run(both)["documents"]} == {"eiffel_tower"}
    p = Pipeline()
    p.add_component("retriever", fixed)
    q = Pipeline.loads(p.dumps(), allowed_modules=["affidavit.integrations.haystack"])
    assert q.get_component("retriever").filters == hay
    out = q.run({"retriever": {"query": both, "filters": {"doc_ids": ["forth_bridge"]}}})
    assert {d.meta["doc_id"] for d in out["retriever"]["documents"]} == {"forth_bridge"}
    with pytest.raises(ConfigError, match="valid: domains"):
        AffidavitRetriever(str(sample_store), filters={"domain": ["x.org"]})


def test_the_retriever_exposes_granularity_and_mode(sample_store: Path) -> None:
    """Issue 28: the integrations exposed no retrieval granularity."""
    from affidavit.core.errors import ConfigError

    r = AffidavitRetriever(str(sample_store), top_k=2, mode="bm25", granularity="document")
    assert r._search.retriever().config()["granularity"] == "document"
    p = Pipeline()
    p.add_component("retriever", r)
    q = Pipeline.loads(p.dumps(), allowed_modules=["affidavit.integrations.haystack"])
    assert (q.get_component("retriever").granularity, q.get_component("retriever").mode) == (
        "document",
        "bm25",
    )
    with pytest.raises(ConfigError, match="valid: passage, document, chunk"):
        AffidavitRetriever(str(sample_store), granularity="sentence")  # type: ignore[arg-type]


WITHHELD = "[withheld: not supported by the sources]"
TWO = f"{FAITHFUL} {HALLUCINATED}"


def streaming_pipeline(store: Path, answers: list[str], guard: object, auditor: object) -> Pipeline:
    p = Pipeline()
    p.add_component("retriever", AffidavitRetriever(str(store), top_k=2, mode="bm25"))
    p.add_component("guard", guard)
    p.add_component(
        "prompt", ChatPromptBuilder(template=TEMPLATE, required_variables=["query", "documents"])
    )
    p.add_component(
        "llm", MockChatGenerator(responses=answers, streaming_callback=guard.streaming_callback)
    )
    p.add_component("audit", auditor)
    p.connect("retriever.documents", "guard.documents")
    p.connect("guard.documents", "prompt.documents")
    p.connect("prompt.prompt", "llm.messages")
    p.connect("llm.replies", "audit.replies")
    p.connect("retriever.documents", "audit.documents")
    return p


def test_a_streaming_callback_gets_each_sentence_once_decided(sample_store: Path) -> None:
    """Issue 28: a streaming generator's tokens reached the callback unguarded; now each
    sentence reaches it once decided, failing claims withheld, the same text as the auditor's."""
    from affidavit.integrations.haystack import AffidavitStreamGuard

    seen: list[str] = []
    guard = AffidavitStreamGuard(on_chunk=lambda c: seen.append(c.content), mode="guardrail")
    p = streaming_pipeline(sample_store, [TWO], guard, AffidavitAuditor(mode="guardrail"))
    out = p.run(inputs() | {"guard": {"query": QUESTION}})
    assert seen == [FAITHFUL, f" {WITHHELD}"]
    assert "".join(seen) == out["audit"]["answer"]
    assert guard.last_report is not None and guard.last_report.trust_passed is False


def test_a_streaming_guard_fails_closed(sample_store: Path) -> None:
    from haystack.dataclasses import StreamingChunk

    from affidavit.core.errors import InputError
    from affidavit.integrations.haystack import AffidavitStreamGuard

    seen: list[str] = []
    guard = AffidavitStreamGuard(on_chunk=lambda c: seen.append(c.content), mode="enforce")
    with pytest.raises(InputError, match="before AffidavitStreamGuard ran"):
        guard.streaming_callback(StreamingChunk(content="The sky is green."))
    p = streaming_pipeline(sample_store, [TWO], guard, AffidavitAuditor(mode="audit"))
    with pytest.raises((EnforcementError, PipelineRuntimeError)):
        p.run(inputs() | {"guard": {"query": QUESTION}})
    assert seen == [FAITHFUL]


def test_the_async_streaming_callback_and_a_saved_guard() -> None:
    from haystack.components.generators.utils import print_streaming_chunk
    from haystack.dataclasses import StreamingChunk

    from affidavit.integrations.haystack import AffidavitStreamGuard

    seen: list[str] = []

    async def on_chunk(chunk: StreamingChunk) -> None:
        seen.append(chunk.content)

    guard = AffidavitStreamGuard(on_chunk=on_chunk)
    guard.run(query=QUESTION, documents=[Document(content=FAITHFUL)])

    async def stream() -> None:
        for i, word in enumerate(TWO.split(" ")):
            last = i == len(TWO.split(" ")) - 1
            chunk = StreamingChunk(content=word + ("" if last else " "))
            if last:
                chunk = StreamingChunk(content=chunk.content, finish_reason="stop")
            await guard.astreaming_callback(chunk)

    asyncio.run(stream())
    assert "".join(seen) == f"{FAITHFUL} {WITHHELD}"
    p = Pipeline()
    p.add_component("guard", AffidavitStreamGuard(on_chunk=print_streaming_chunk, mode="audit"))
    q = Pipeline.loads(p.dumps(), allowed_modules=["affidavit.integrations.haystack"])
    loaded = q.get_component("guard")
    assert loaded.on_chunk is print_streaming_chunk and loaded.audit_settings.mode == "audit"


def test_the_evaluator_component_scores_a_dataset() -> None:
    """Issue 28: no Haystack evaluator component."""
    from affidavit.core.errors import InputError
    from affidavit.integrations.haystack import AffidavitEvaluator

    url = "https://en.wikipedia.org/wiki/Forth_Bridge"
    p = Pipeline()
    p.add_component("affidavit", AffidavitEvaluator(settings=None, min_compliance=1.0))
    q = Pipeline.loads(p.dumps(), allowed_modules=["affidavit.integrations.haystack"])
    out = q.run(
        {
            "affidavit": {
                "questions": [QUESTION, QUESTION],
                "predicted_answers": [FAITHFUL, HALLUCINATED],
                "documents": [[Document(content=FAITHFUL, meta={"url": url})]] * 2,
            }
        }
    )["affidavit"]
    assert out["individual_scores"] == [1.0, 0.0] and out["score"] == 0.5
    assert out["trust_passed"] == [True, False]
    assert "1925" in out["results"][1]["feedback"]
    assert out["reports"][0].claims[0].source_url == url
    ev = AffidavitEvaluator(settings=None)
    assert ev.audit_settings.mode == "audit"  # an evaluator scores, never enforces
    with pytest.raises(InputError, match="one item per example"):
        ev.run(questions=[QUESTION], predicted_answers=[], contexts=[[FAITHFUL]])
    with pytest.raises(InputError, match="contexts"):
        ev.run(questions=[QUESTION], predicted_answers=[FAITHFUL])


def test_a_document_with_a_numeric_doc_id_is_audited() -> None:
    """A numeric ``doc_id`` in a document's meta raised pydantic's ValidationError."""
    doc = Document(content=FAITHFUL, meta={"doc_id": 42, "url": "https://a.org/f"})
    out = AffidavitAuditor(mode="guardrail").run(query=QUESTION, documents=[doc], answer=FAITHFUL)
    assert out["trust_passed"] is True and out["answer"] == FAITHFUL
    assert out["report"].claims[0].evidence.doc_id == "42"


def test_the_settings_verifier_holds_for_every_audit_component(
    monkeypatch: pytest.MonkeyPatch, sample_store: Path
) -> None:
    """`audit.use_verifier = true` in the settings (affidavit.toml or the environment): the
    auditor, stream guard and evaluator components ran the lexical audit alone, a looser check
    than the one configured."""
    import affidavit.pipeline.check as check
    from affidavit.core.settings import Settings
    from affidavit.integrations.haystack import AffidavitEvaluator, AffidavitStreamGuard

    monkeypatch.setattr(check, "default_verifier", lambda settings: KeywordVerifier())
    settings = Settings(audit={"use_verifier": True})
    for cls in (AffidavitAuditor, AffidavitStreamGuard, AffidavitEvaluator):
        assert cls(settings=settings).audit_settings.use_verifier is True, cls.__name__
    monkeypatch.setenv("AFFIDAVIT_AUDIT__USE_VERIFIER", "true")
    assert AffidavitAuditor().audit_settings.use_verifier is True
    monkeypatch.delenv("AFFIDAVIT_AUDIT__USE_VERIFIER")
    assert AffidavitAuditor().audit_settings.use_verifier is False  # the lexical default
    out = pipeline(sample_store, [FAITHFUL], AffidavitAuditor(settings=settings)).run(inputs())
    assert out["audit"]["report"].claims[0].verdict is not None  # the verifier ran


def test_a_streamed_answer_citing_after_the_stop_shows_what_the_auditor_shows() -> None:
    """The generator streams character by character, as a tokenizer splits "[1]": the "[1]"
    after a withheld sentence's full stop reached the callback as a second withheld marker."""
    from haystack.dataclasses import StreamingChunk

    from affidavit.integrations.haystack import AffidavitStreamGuard

    cited = f"{HALLUCINATED} [1] {FAITHFUL} [1]"
    docs = [Document(content=FAITHFUL, meta={"url": "https://en.wikipedia.org/wiki/Forth_Bridge"})]
    seen: list[str] = []
    guard = AffidavitStreamGuard(on_chunk=lambda c: seen.append(c.content), mode="guardrail")
    guard.run(query=QUESTION, documents=docs)
    for i, ch in enumerate(cited):
        last = i == len(cited) - 1
        guard.streaming_callback(StreamingChunk(content=ch, finish_reason="stop" if last else None))
    shown = AffidavitAuditor(mode="guardrail").run(query=QUESTION, documents=docs, answer=cited)
    assert "".join(seen) == shown["answer"] == f"{WITHHELD} {FAITHFUL} [1]"


def test_a_streamed_chunk_holding_two_sentences_reaches_the_callback_only_when_decided() -> None:
    """A chunk that completed two sentences and began a third: the start of the third (of a
    sentence withheld once complete) reached the callback before it was decided."""
    from haystack.dataclasses import StreamingChunk

    from affidavit.integrations.haystack import AffidavitStreamGuard

    fowler = "It was designed by John Fowler."
    answer = f"{FAITHFUL} {fowler} {HALLUCINATED} {fowler}"
    at = len(FAITHFUL) + len(fowler) + 2 + 25
    docs = [
        Document(
            content=f"{FAITHFUL} {fowler}",
            meta={"url": "https://en.wikipedia.org/wiki/Forth_Bridge"},
        )
    ]
    seen: list[str] = []
    guard = AffidavitStreamGuard(on_chunk=lambda c: seen.append(c.content), mode="guardrail")
    guard.run(query=QUESTION, documents=docs)
    guard.streaming_callback(StreamingChunk(content=answer[:at]))
    assert seen == [f"{FAITHFUL} {fowler}"]
    guard.streaming_callback(StreamingChunk(content=answer[at:], finish_reason="stop"))
    shown = AffidavitAuditor(mode="guardrail").run(query=QUESTION, documents=docs, answer=answer)
    assert "".join(seen) == shown["answer"] == f"{FAITHFUL} {fowler} {WITHHELD} {fowler}"
