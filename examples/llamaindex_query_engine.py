"""A LlamaIndex query engine whose responses affidavit verifies
(``pip install "affidavit[llamaindex]"``).

    python examples/llamaindex_query_engine.py                 # scripted LLM, offline
    python examples/llamaindex_query_engine.py --llm embedded  # the embedded LLM (affidavit[llm])

A ``RetrieverQueryEngine`` over the affidavit store (nodes filtered by the source policy) is
wrapped in ``VerifiedQueryEngine``: each response is audited against its own ``source_nodes``;
in guardrail mode a hallucinated claim is withheld and the report rides along in
``response.metadata["affidavit_report"]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import FAITHFUL, HALLUCINATED, QUESTION, build_store
from llama_index.core.base.response.schema import Response
from llama_index.core.query_engine import RetrieverQueryEngine

from affidavit.core.settings import load_settings
from affidavit.integrations.llamaindex import (
    REPORT_KEY,
    AffidavitLLM,
    AffidavitRetriever,
    AuditEvaluator,
    SourcePolicyPostprocessor,
    VerifiedQueryEngine,
)
from affidavit.testing.fake_llm import FakeGenerator


def make_engine(store: Path, llm: AffidavitLLM, mode: str = "guardrail") -> VerifiedQueryEngine:
    """retriever -> source policy -> synthesis -> verification against the source nodes."""
    engine = RetrieverQueryEngine.from_args(
        AffidavitRetriever(str(store), k=3, mode="bm25"),
        llm=llm,
        node_postprocessors=[SourcePolicyPostprocessor(settings={"allowlist": ["wikipedia.org"]})],
    )
    return VerifiedQueryEngine(engine, {"mode": mode})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llm", choices=["scripted", "embedded"], default="scripted")
    ap.add_argument("--store", type=Path, default=None)
    ap.add_argument("--mode", choices=["audit", "guardrail", "enforce"], default="guardrail")
    args = ap.parse_args(argv)
    if args.llm == "scripted":
        llm = AffidavitLLM(generator=FakeGenerator([FAITHFUL, HALLUCINATED]))
    else:
        llm = AffidavitLLM(settings=load_settings(overrides={"generate": {"backend": "llamacpp"}}))
    engine = make_engine(args.store or build_store(), llm, args.mode)
    evaluator = AuditEvaluator()
    for _ in range(2):
        response = engine.query(QUESTION)
        report = response.metadata[REPORT_KEY]
        print(f"Q: {QUESTION}\n  draft: {response.metadata['affidavit_draft']}")
        print(f"  shown: {response.response}\n  trust passed: {report.trust_passed}")
        for c in report.claims:
            print(f"    {'ok ' if c.supported else 'BAD'} {c.text}  ({c.reason})")
        draft = Response(
            response=response.metadata["affidavit_draft"], source_nodes=response.source_nodes
        )
        result = evaluator.evaluate_response(QUESTION, draft)
        print(f"  AuditEvaluator on the draft: passing={result.passing} ({result.feedback})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
