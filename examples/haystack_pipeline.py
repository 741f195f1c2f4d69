"""A Haystack pipeline whose answers affidavit audits (``pip install "affidavit[haystack]"``).

    python examples/haystack_pipeline.py            # Haystack's MockChatGenerator, offline
    python examples/haystack_pipeline.py --verify   # + the entailment verifier (affidavit[models])

retriever -> prompt builder -> chat generator -> AffidavitAuditor (or AffidavitVerifier). The
auditor receives the query, the documents the retriever really returned and the generator's
replies; in guardrail mode a hallucinated claim comes out withheld, with the report attached.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

# offline: Haystack sends usage telemetry unless this is off before it is imported
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import FAITHFUL, HALLUCINATED, QUESTION, build_store
from haystack import Pipeline
from haystack.components.builders import ChatPromptBuilder
from haystack.components.generators.chat import MockChatGenerator
from haystack.dataclasses import ChatMessage

from affidavit.integrations.haystack import (
    AffidavitAuditor,
    AffidavitRetriever,
    AffidavitVerifier,
)

TEMPLATE = [
    ChatMessage.from_system(
        "Answer only from these passages:\n{% for d in documents %}{{ d.content }}\n{% endfor %}"
    ),
    ChatMessage.from_user("{{ query }}"),
]


def make_pipeline(
    store: Path, generator: object, verify: bool = False, mode: str = "guardrail"
) -> Pipeline:
    """The RAG pipeline with the audit (or verification) as its last component."""
    p = Pipeline()
    p.add_component("retriever", AffidavitRetriever(str(store), top_k=3, mode="bm25"))
    p.add_component(
        "prompt", ChatPromptBuilder(template=TEMPLATE, required_variables=["query", "documents"])
    )
    p.add_component("llm", generator)
    p.add_component(
        "audit", AffidavitVerifier(mode=mode) if verify else AffidavitAuditor(mode=mode)
    )
    p.connect("retriever.documents", "prompt.documents")
    p.connect("prompt.prompt", "llm.messages")
    p.connect("llm.replies", "audit.replies")
    p.connect("retriever.documents", "audit.documents")
    return p


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, default=None)
    ap.add_argument(
        "--verify", action="store_true", help="use AffidavitVerifier (the cross-encoder)"
    )
    ap.add_argument("--mode", choices=["audit", "guardrail", "enforce"], default="guardrail")
    args = ap.parse_args(argv)
    generator = MockChatGenerator(responses=[FAITHFUL, HALLUCINATED])
    pipe = make_pipeline(args.store or build_store(), generator, args.verify, args.mode)
    for _ in range(2):
        out = pipe.run(
            {
                "retriever": {"query": QUESTION},
                "prompt": {"query": QUESTION},
                "audit": {"query": QUESTION},
            }
        )
        report = out["audit"]["report"]
        print(
            f"Q: {QUESTION}\n  shown: {out['audit']['answer']}\n"
            f"  trust passed: {report.trust_passed}"
        )
        for c in report.claims:
            print(f"    {'ok ' if c.supported else 'BAD'} {c.text}  ({c.reason})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
