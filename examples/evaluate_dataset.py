"""Score a small RAG dataset with affidavit's evaluators, offline.

    python examples/evaluate_dataset.py                       # every framework installed
    python examples/evaluate_dataset.py --framework haystack  # or langchain / llamaindex

Six examples (question, the passages the application retrieved, the answer it gave): three
faithful, three with a changed date, a swapped name or a claim the passages do not hold. Each
framework's evaluator scores them the same way: ``trust`` (the report's ``trust_passed``) and
``compliance`` (the share of supported claims), with every unsupported claim and why.

- LangChain / LangSmith: ``AuditRunEvaluator`` (``langsmith.evaluate(..., evaluators=[it])``
  with a LangSmith account; here called directly, as ``evaluator(inputs, outputs)``).
- LlamaIndex: ``AuditEvaluator.aevaluate(query, response, contexts)``.
- Haystack: the ``AffidavitEvaluator`` component, run in a ``Pipeline``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import sys
from pathlib import Path

# offline: Haystack sends usage telemetry unless this is off before it is imported
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import DOCS

PASSAGES = {name: text for name, (_url, text) in DOCS.items()}

# (question, the retrieved passages, the answer, faithful?)
DATASET: list[tuple[str, list[str], str, bool]] = [
    (
        "When did the Forth Bridge open?",
        [PASSAGES["forth_bridge"]],
        "The Forth Bridge opened on 4 March 1890.",
        True,
    ),
    (
        "When did the Forth Bridge open?",
        [PASSAGES["forth_bridge"]],
        "The Forth Bridge opened on 4 March 1925.",
        False,
    ),
    (
        "How tall is the Eiffel Tower?",
        [PASSAGES["eiffel_tower"]],
        "The Eiffel Tower is 330 metres tall.",
        True,
    ),
    (
        "Who designed the Forth Bridge?",
        [PASSAGES["forth_bridge"]],
        "It was designed by Gustave Eiffel and Benjamin Baker.",
        False,
    ),
    (
        "What did Marie Curie discover?",
        [PASSAGES["marie_curie"]],
        "Marie Curie discovered polonium and radium in 1898.",
        True,
    ),
    (
        "What did Marie Curie win?",
        [PASSAGES["marie_curie"]],
        "She won the Nobel Prize in Chemistry in 1921.",
        False,
    ),
]

FRAMEWORKS = {
    "langchain": "langchain_core",
    "llamaindex": "llama_index.core",
    "haystack": "haystack",
}


def score_langchain() -> list[tuple[bool, float, str]]:
    from affidavit.integrations.langchain import AuditRunEvaluator

    evaluator = AuditRunEvaluator()
    out = []
    for question, passages, answer, _ in DATASET:
        scored = evaluator({"question": question}, {"answer": answer, "context": passages})
        trust, compliance = scored["results"]
        out.append((bool(trust["score"]), compliance["score"], compliance["comment"]))
    return out


def score_llamaindex() -> list[tuple[bool, float, str]]:
    from affidavit.integrations.llamaindex import AuditEvaluator

    evaluator = AuditEvaluator()

    async def run() -> list[tuple[bool, float, str]]:
        results = await asyncio.gather(
            *(evaluator.aevaluate(q, a, contexts=p) for q, p, a, _ in DATASET)
        )
        return [(bool(r.passing), float(r.score or 0.0), r.feedback or "") for r in results]

    return asyncio.run(run())


def score_haystack() -> list[tuple[bool, float, str]]:
    from haystack import Pipeline

    from affidavit.integrations.haystack import AffidavitEvaluator

    pipe = Pipeline()
    pipe.add_component("affidavit", AffidavitEvaluator())
    out = pipe.run(
        {
            "affidavit": {
                "questions": [q for q, _, _, _ in DATASET],
                "predicted_answers": [a for _, _, a, _ in DATASET],
                "contexts": [p for _, p, _, _ in DATASET],
            }
        }
    )["affidavit"]
    print(f"  haystack mean score: {out['score']:.2f}")
    return [(r["trust_passed"], r["compliance"], r["feedback"]) for r in out["results"]]


SCORERS = {"langchain": score_langchain, "llamaindex": score_llamaindex, "haystack": score_haystack}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--framework", choices=sorted(SCORERS), action="append")
    args = ap.parse_args(argv)
    names = args.framework or [
        n for n, module in FRAMEWORKS.items() if importlib.util.find_spec(module.split(".")[0])
    ]
    if not names:
        print("install one of: affidavit[langchain], affidavit[llamaindex], affidavit[haystack]")
        return 2
    for name in names:
        print(f"{name}:")
        rows = SCORERS[name]()
        for (_, _, answer, faithful), (trust, compliance, why) in zip(DATASET, rows, strict=True):
            mark = "ok " if trust == faithful else "MISS"
            print(f"  {mark} trust={trust!s:5} compliance={compliance:.2f}  {answer}")
            if not trust:
                print(f"       why: {why}")
        agree = sum(t == f for (_, _, _, f), (t, _, _) in zip(DATASET, rows, strict=True))
        print(f"  {name}: {agree}/{len(DATASET)} verdicts match the labels")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
