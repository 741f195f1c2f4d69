"""Issue 27: the Eiffel question on the bundled sample corpus, with the default settings, through
``affidavit ask`` and the three framework integrations.

"When was the Eiffel Tower built, how tall is it, and who designed it?" With document-level fusion
the chunk with "March 1889" and "Gustave Eiffel" was never retrieved, so the true sentence "The
Eiffel Tower was completed in March 1889." was withheld everywhere ("the month March 1889
disagrees with 1930 in the evidence", checked against the height chunk). Each answer here also
carries a false sentence, so a guard that lets everything through fails the test too.

The store is ingested with the CLI, as a user would; the LLM is scripted (the sentences judged are
fixed), the retrieval, the corrective stage, the audit and the verifier are the shipped ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from affidavit.cli.main import app
from affidavit.testing.fake_llm import FakeGenerator, FakeOpenAIServer, FakeReply

pytestmark = [pytest.mark.integration, pytest.mark.slow]

QUESTION = "When was the Eiffel Tower built, how tall is it, and who designed it?"
TRUE = "The Eiffel Tower was completed in March 1889."
FALSE = "The Eiffel Tower was completed in 1930."
ANSWER = f"{TRUE} {FALSE}"
WITHHELD = "[withheld: not supported by the sources]"


def _answer_chunk(texts: list[str]) -> bool:
    """Whether the chunk that says when and by whom the tower was built is among ``texts``."""
    flat = [" ".join(t.split()) for t in texts]
    return any("March 1889" in t and "Gustave Eiffel" in t for t in flat)


def _claim(claims: Any, text: str) -> Any:
    found = [c for c in claims if c.text == text]
    assert len(found) == 1, [c.text for c in claims]
    return found[0]


# ---------------------------------------------------------------------------- affidavit ask


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    answer = f"{TRUE[:-1]} [1]. {FALSE[:-1]} [1]."  # cited, as the prompt asks
    with FakeOpenAIServer([FakeReply(content=answer)]) as srv:
        monkeypatch.setenv("AFFIDAVIT_GENERATE__BACKEND", "openai")
        monkeypatch.setenv("AFFIDAVIT_GENERATE__BASE_URL", srv.url)
        monkeypatch.setenv("AFFIDAVIT_GENERATE__MAX_RETRIES", "0")
        yield srv


def test_ask_cli_shows_the_true_sentence_verified_in_strict_mode(
    corpus_store: Path, llm: FakeOpenAIServer
) -> None:
    result = CliRunner().invoke(
        app, ["ask", QUESTION, "--store", str(corpus_store), "--json", "--mode", "strict"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # the model was shown the answer passage: it came through retrieval and correction
    assert "Gustave Eiffel" in llm.requests[0]["messages"][1]["content"]
    assert _answer_chunk([h["chunk"]["text"] for h in data["trace"]["retrieval_hits"]])
    decisions = {c["claim"]["text"]: c["decision"] for c in data["claims"]}
    assert decisions == {TRUE: "verified", FALSE: "unverified"}, data["claims"]
    verified = next(c for c in data["claims"] if c["claim"]["text"] == TRUE)
    assert verified["verdict"]["label"] == "supported"
    assert any("March 1889" in e["text"] for e in verified["verdict"]["evidence"])
    assert data["answer"].startswith("The Eiffel Tower was completed in March 1889 [")
    assert "1930" not in data["answer"]


# ---------------------------------------------------------------------------- LangChain


def test_langchain_guardrail_keeps_the_true_sentence(corpus_store: Path) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.language_models import FakeListChatModel
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnableParallel, RunnablePassthrough

    from affidavit.integrations.langchain import AffidavitRetriever, AuditRunnable

    prompt = ChatPromptTemplate.from_messages([("system", "{passages}"), ("human", "{question}")])
    llm = FakeListChatModel(responses=[ANSWER])

    def passages(inputs: dict[str, Any]) -> str:
        return "\n".join(d.page_content for d in inputs["context"])

    answer = RunnablePassthrough.assign(passages=passages) | prompt | llm | StrOutputParser()
    rag = RunnableParallel(
        context=AffidavitRetriever(store_path=str(corpus_store)), question=RunnablePassthrough()
    ).assign(answer=answer)
    out = (rag | AuditRunnable(settings={"mode": "guardrail"})).invoke(QUESTION)

    assert _answer_chunk([d.page_content for d in out["context"]])
    report = out["report"]
    assert _claim(report.claims, TRUE).supported, report.claims
    assert not _claim(report.claims, FALSE).supported
    assert out["answer"] == f"{TRUE} {WITHHELD}"


# ---------------------------------------------------------------------------- LlamaIndex


def test_llamaindex_verified_query_engine_keeps_the_true_sentence(corpus_store: Path) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.query_engine import RetrieverQueryEngine

    from affidavit.integrations.llamaindex import (
        REPORT_KEY,
        AffidavitLLM,
        AffidavitRetriever,
        VerifiedQueryEngine,
    )

    engine = RetrieverQueryEngine.from_args(
        AffidavitRetriever(str(corpus_store)), llm=AffidavitLLM(generator=FakeGenerator([ANSWER]))
    )
    response = VerifiedQueryEngine(engine, {"mode": "guardrail"}).query(QUESTION)

    assert _answer_chunk([n.node.get_content() for n in response.source_nodes])
    report = response.metadata[REPORT_KEY]
    assert _claim(report.claims, TRUE).supported, report.claims
    assert not _claim(report.claims, FALSE).supported
    assert response.response == f"{TRUE} {WITHHELD}"


# ---------------------------------------------------------------------------- Haystack


def _haystack_pipeline(corpus_store: Path, audit: Any) -> Any:
    from haystack import Pipeline
    from haystack.components.builders import ChatPromptBuilder
    from haystack.components.generators.chat import MockChatGenerator
    from haystack.dataclasses import ChatMessage

    from affidavit.integrations.haystack import AffidavitRetriever

    template = [
        ChatMessage.from_system("{% for d in documents %}{{ d.content }}\n{% endfor %}"),
        ChatMessage.from_user("{{ query }}"),
    ]
    p = Pipeline()
    p.add_component("retriever", AffidavitRetriever(str(corpus_store)))
    p.add_component(
        "prompt", ChatPromptBuilder(template=template, required_variables=["query", "documents"])
    )
    p.add_component("llm", MockChatGenerator(responses=[ANSWER]))
    p.add_component("audit", audit)
    p.connect("retriever.documents", "prompt.documents")
    p.connect("prompt.prompt", "llm.messages")
    p.connect("llm.replies", "audit.replies")
    p.connect("retriever.documents", "audit.documents")
    return p


def _run_haystack(corpus_store: Path, audit: Any) -> dict[str, Any]:
    out: dict[str, Any] = _haystack_pipeline(corpus_store, audit).run(
        {
            "retriever": {"query": QUESTION},
            "prompt": {"query": QUESTION},
            "audit": {"query": QUESTION},
        },
        include_outputs_from={"retriever"},
    )
    return out


def test_haystack_auditor_keeps_the_true_sentence(corpus_store: Path) -> None:
    pytest.importorskip("haystack")
    from affidavit.integrations.haystack import AffidavitAuditor

    out = _run_haystack(corpus_store, AffidavitAuditor(mode="guardrail"))
    assert _answer_chunk([d.content for d in out["retriever"]["documents"]])
    audit = out["audit"]
    assert _claim(audit["report"].claims, TRUE).supported, audit["report"].claims
    assert not _claim(audit["report"].claims, FALSE).supported
    assert audit["answer"] == f"{TRUE} {WITHHELD}"
    assert audit["replies"][0].text == audit["answer"]


# the audit hands the verifier every source that shares the claim's words (it used to hand it
# only the chunk it matched, where the cross-encoder scores 'completed in March 1889' p_entail
# 0.23: that chunk's date sentence does not name the tower)
def test_haystack_verifier_keeps_the_true_sentence(corpus_store: Path) -> None:
    pytest.importorskip("haystack")
    from affidavit.integrations.haystack import AffidavitVerifier

    out = _run_haystack(corpus_store, AffidavitVerifier(mode="guardrail"))
    audit = out["audit"]
    assert not _claim(audit["report"].claims, FALSE).supported
    claim = _claim(audit["report"].claims, TRUE)
    assert claim.verdict is not None and claim.verdict.label == "supported", claim
    assert audit["answer"] == f"{TRUE} {WITHHELD}"
