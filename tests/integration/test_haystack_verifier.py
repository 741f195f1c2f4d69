"""The Haystack verifier component with the project's shipped cross-encoder."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("haystack")
pytest.importorskip("onnxruntime")

from haystack import Pipeline
from haystack.components.builders import ChatPromptBuilder
from haystack.components.generators.chat import MockChatGenerator
from haystack.dataclasses import ChatMessage

from affidavit.integrations.haystack import AffidavitRetriever, AffidavitVerifier

pytestmark = pytest.mark.integration

QUESTION = "When did the Forth Bridge open?"
FAITHFUL = "The Forth Bridge opened on 4 March 1890."
HALLUCINATED = "The Forth Bridge opened on 4 March 1925."
TEMPLATE = [
    ChatMessage.from_system("{% for d in documents %}{{ d.content }}\n{% endfor %}"),
    ChatMessage.from_user("{{ query }}"),
]


def test_verifier_component_with_the_shipped_cross_encoder(sample_store: Path) -> None:
    p = Pipeline()
    p.add_component("retriever", AffidavitRetriever(str(sample_store), top_k=2, mode="bm25"))
    p.add_component(
        "prompt", ChatPromptBuilder(template=TEMPLATE, required_variables=["query", "documents"])
    )
    p.add_component("llm", MockChatGenerator(responses=[HALLUCINATED, FAITHFUL]))
    p.add_component("audit", AffidavitVerifier(mode="guardrail"))
    p.connect("retriever.documents", "prompt.documents")
    p.connect("prompt.prompt", "llm.messages")
    p.connect("llm.replies", "audit.replies")
    p.connect("retriever.documents", "audit.documents")
    inputs = {
        "retriever": {"query": QUESTION},
        "prompt": {"query": QUESTION},
        "audit": {"query": QUESTION},
    }
    bad = p.run(inputs)["audit"]
    assert bad["trust_passed"] is False and "[withheld" in bad["answer"]
    good = p.run(inputs)["audit"]
    verdict = good["report"].claims[0].verdict
    assert verdict is not None and verdict.stages  # the cascade really ran
    assert good["report"].claims[0].supported == (verdict.label == "supported")
