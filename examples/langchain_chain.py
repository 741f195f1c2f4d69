"""An LCEL chain whose answers affidavit audits (``pip install "affidavit[langchain]"``).

    python examples/langchain_chain.py                    # LangChain's fake chat model
    python examples/langchain_chain.py --llm embedded     # the embedded LLM (affidavit[llm])
    python examples/langchain_chain.py --llm openai --base-url http://127.0.0.1:8080/v1

The chain retrieves from an affidavit store, prompts the model with the documents, and the
audit step checks the answer against exactly those documents (the chain's own ``context``). In
guardrail mode a hallucinated claim comes out withheld, with the report attached. With the fake
model the first question gets a faithful answer and the second a hallucinated one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import FAITHFUL, HALLUCINATED, QUESTION, build_store
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableParallel, RunnablePassthrough

from affidavit.core.settings import load_settings
from affidavit.integrations.langchain import (
    AffidavitChatModel,
    AffidavitRetriever,
    AuditRunnable,
)

PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", "Answer only from these passages, in one or two sentences:\n\n{passages}"),
        ("human", "{question}"),
    ]
)


def make_llm(kind: str, base_url: str | None) -> Runnable:
    """LangChain's fake chat model, or affidavit's generator as a LangChain chat model."""
    if kind == "fake":
        from langchain_core.language_models import FakeListChatModel

        return FakeListChatModel(responses=[FAITHFUL, HALLUCINATED])
    overrides = {"generate": {"backend": "llamacpp" if kind == "embedded" else "openai"}}
    if base_url:
        overrides["generate"]["base_url"] = base_url
    return AffidavitChatModel(settings=load_settings(overrides=overrides))


def make_chain(store: Path, llm: Runnable, mode: str = "guardrail") -> Runnable:
    """retrieve -> prompt -> LLM -> audit against the retrieved documents."""
    retriever = AffidavitRetriever(store_path=str(store), k=3, mode="bm25")

    def passages(inputs: dict) -> str:
        return "\n\n".join(d.page_content for d in inputs["context"])

    answer = RunnablePassthrough.assign(passages=passages) | PROMPT | llm | (lambda m: m.content)
    rag = RunnableParallel(context=retriever, question=RunnablePassthrough()).assign(answer=answer)
    return rag | AuditRunnable(settings={"mode": mode})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llm", choices=["fake", "embedded", "openai"], default="fake")
    ap.add_argument("--base-url", default=None)
    ap.add_argument(
        "--store", type=Path, default=None, help="an existing store (default: a new tiny one)"
    )
    ap.add_argument("--mode", choices=["audit", "guardrail", "enforce"], default="guardrail")
    args = ap.parse_args(argv)
    store = args.store or build_store()
    chain = make_chain(store, make_llm(args.llm, args.base_url), args.mode)
    for question in [QUESTION, QUESTION]:
        out = chain.invoke(question)
        report = out["report"]
        print(f"Q: {question}\n  draft: {out['draft']}\n  shown: {out['answer']}")
        print(f"  trust passed: {report.trust_passed}")
        for c in report.claims:
            print(f"    {'ok ' if c.supported else 'BAD'} {c.text}  ({c.reason})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
