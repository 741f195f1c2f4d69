"""``affidavit ask`` vs plain RAG on HaluEval qa (dev), in one run, with the embedded LLM.

Corpus: every distinct ``knowledge`` passage of ``halueval/qa_dev.jsonl`` (one store, hybrid
retrieval). For a seeded sample of questions from the rows held out of verifier training
(``training/splits.json``):

- **generated**: both systems answer with the same retriever and LLM. Plain RAG shows the model's
  text as is; ``ask`` adds corrective retrieval, citation clean-up, verification and the strict
  policy. Measured: retrieval hit rate (the question's own passage in the top-k), context hit
  rate (still in what the LLM saw), answer accuracy (the right answer appears in the shown
  text), abstention, wrong-shown rate (something shown, right answer absent), and the share of
  generated sentences that verify (for plain RAG: its sentences run through the same verifier,
  since it shows them all).
- **fed**: the dataset's ``hallucinated_answer`` is fed as if the LLM had written it (a scripted
  generator in the same pipeline): the rate at which any of its claims is shown as verified in
  strict mode (plain RAG shows every one). The ``right_answer`` is fed the same way as a contrast.

    python benchmarks/ask_halueval.py [--data ../shared/data] [--sample 20] [--fed-sample 60]

Writes ``benchmarks/results/ask_halueval.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def norm(text: str) -> str:
    """Lower-case, drop punctuation and articles (SQuAD-style answer matching)."""
    text = re.sub(r"[^\w\s]", " ", text.lower())
    return " ".join(w for w in text.split() if w not in {"a", "an", "the"})


def contains_answer(shown: str, right: str) -> bool:
    """The right answer appears in the shown text (normalised)."""
    r = norm(right)
    return bool(r) and f" {r} " in f" {norm(shown)} "


def pid(text: str) -> str:
    """The passage id (same scheme as benchmarks/retrieval_quality.py)."""
    return "p-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def build_store(path: Path, passages: dict[str, str], settings: Any) -> Any:
    from affidavit.ingest.pipeline import Ingestor
    from affidavit.retrieve.embedders import make_embedder
    from affidavit.store.local import LocalStore

    path.mkdir(parents=True, exist_ok=True)
    src = path / "corpus.jsonl"
    body = "\n".join(json.dumps({"id": i, "text": t}) for i, t in passages.items()) + "\n"
    if not src.exists() or src.read_text(encoding="utf-8") != body:
        src.write_text(body, encoding="utf-8")
    store = LocalStore(path / "store")
    t0 = time.perf_counter()
    report = Ingestor(store, make_embedder(settings.embed), settings.ingest).ingest([src])
    print(
        f"ingest: {report.counts()} chunks={report.chunks_total} "
        f"in {time.perf_counter() - t0:.1f}s",
        flush=True,
    )
    return store


def sentences_verified(result: Any) -> tuple[int, int]:
    """(sentences shown in strict mode, sentences in the draft) of an AskResult."""
    from affidavit.policy.render import render, split_sentences

    decisions = {c.claim.id: c.decision for c in result.claims}
    claims = [c.claim for c in result.claims]
    draft = result.draft
    if not draft.strip() or result.insufficient:
        return 0, 0
    from affidavit.core.policy import ClaimDecision

    rendered = render(
        draft,
        claims,
        [ClaimDecision(claim_id=k, decision=v, reason="") for k, v in decisions.items()],
        "strict",
    )
    return sum(s.shown for s in rendered.sentences), len(split_sentences(draft))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--sample", type=int, default=20, help="questions answered by the LLM")
    ap.add_argument("--fed-sample", type=int, default=60, help="answers fed as if generated")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument(
        "--cache", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "affidavit-bench"
    )
    ap.add_argument(
        "--split",
        choices=["eval", "dev"],
        default="eval",
        help="eval: held-out rows (the reported numbers); dev: the verifier's dev groups "
        "(training/data/dev.jsonl, built by training/build_data.py), for tuning without "
        "touching the eval rows",
    )
    ap.add_argument(
        "--replay",
        type=Path,
        default=None,
        help="a previous result JSON: re-use its LLM drafts (ours and plain) instead of "
        "generating, so a verification change is compared on the very same drafts; its seconds "
        "are then not generation times",
    )
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)

    from affidavit.claims.extractor import RuleBasedExtractor
    from affidavit.core.settings import load_settings
    from affidavit.generate.factory import make_generator
    from affidavit.pipeline.ask import AskPipeline
    from affidavit.pipeline.baseline import plain_rag
    from affidavit.pipeline.build import default_corrector
    from affidavit.retrieve.embedders import make_embedder
    from affidavit.retrieve.retriever import StoreRetriever
    from affidavit.testing.fake_llm import FakeGenerator
    from affidavit.verify.calibration import effective_policy
    from affidavit.verify.cascade import ClaimCascade

    rows = [
        json.loads(line)
        for line in (args.data / "halueval" / "qa_dev.jsonl").open(encoding="utf-8")
    ]
    passages: dict[str, str] = {}
    for r in rows:
        passages.setdefault(pid(r["knowledge"]), r["knowledge"])
    settings = load_settings(overrides={"generate": {"max_tokens": args.max_tokens}})
    store = build_store(args.cache / "halueval_qa_ask", passages, settings)
    retriever = StoreRetriever.from_settings(
        store, make_embedder(settings.embed), settings.retrieve
    )
    llm = make_generator(settings.generate, cache_dir=settings.resolved_home() / "models")
    t0 = time.perf_counter()
    getattr(llm, "load", lambda: None)()
    load_s = time.perf_counter() - t0
    verifier = ClaimCascade(settings.verify, effective_policy(settings))
    extractor = RuleBasedExtractor(settings.claims)
    corrector = default_corrector(settings, llm)

    def pipeline(generator: Any, *, correct: bool = True) -> AskPipeline:
        return AskPipeline(
            retriever=retriever,
            generator=generator,
            extractor=extractor,
            verifier=verifier,
            settings=settings,
            corrector=corrector if correct else None,
        )

    ours = pipeline(llm)
    # the fed answers and plain RAG's draft are checked as given: no second (quoting) draft
    settings_as_given = settings.model_copy(
        update={"generate": settings.generate.model_copy(update={"quote_retry": False})}
    )

    def checked_as_given(answer: str, *, correct: bool = True) -> AskPipeline:
        return AskPipeline(
            retriever=retriever,
            generator=FakeGenerator([answer or " "]),
            extractor=extractor,
            verifier=verifier,
            settings=settings_as_given,
            corrector=corrector if correct else None,
        )

    class RecordedThenLive:
        """The recorded first draft, then the live LLM (a retry the recording lacks)."""

        name = getattr(llm, "name", "llm")

        def __init__(self, first: str) -> None:
            self.first: str | None = first

        def stream(self, messages: Any, *, max_tokens: int | None = None) -> Any:
            if self.first is not None:
                text, self.first = self.first, None
                yield text
                return
            yield from llm.stream(messages, max_tokens=max_tokens)

        def generate(self, messages: Any, **kw: Any) -> Any:
            return llm.generate(messages, **kw)

    rng = np.random.default_rng(args.seed)
    # questions only from the rows the verifier never trained on (training/splits.json)
    splits = json.loads((ROOT / "training" / "splits.json").read_text())
    held = np.array(splits["halueval"]["qa"]["eval_row_indices"])
    if args.split == "dev":
        dev_file = ROOT / "training" / "data" / "dev.jsonl"
        if not dev_file.exists():
            raise SystemExit(f"--split dev needs {dev_file} (run training/build_data.py)")
        dev_groups = {
            json.loads(line)["group"] for line in dev_file.open(encoding="utf-8") if line.strip()
        }
        held = np.array(
            sorted(int(g.rsplit(":", 1)[1]) for g in dev_groups if g.startswith("halueval_qa:"))
        )
    if args.out is None:
        name = "ask_halueval.json" if args.split == "eval" else "ask_halueval_dev.json"
        args.out = ROOT / "benchmarks" / "results" / name
    order = held[rng.permutation(len(held))]
    gen_idx = [int(i) for i in order[: args.sample]]
    fed_idx = [int(i) for i in order[: args.fed_sample]]
    k = settings.correct.top_k_documents

    replay: dict[int, dict[str, Any]] = {}
    if args.replay is not None:
        replay = {q["index"]: q for q in json.loads(args.replay.read_text())["per_question"]}
    per_q: list[dict[str, Any]] = []
    started = time.perf_counter()
    for n, i in enumerate(gen_idx, start=1):
        row = rows[i]
        gold = pid(row["knowledge"])
        q = row["question"]
        prev = replay.get(i)
        if args.replay is not None and prev is None:
            raise SystemExit(f"--replay {args.replay} has no draft for question {i}")
        ta = time.perf_counter()
        if prev is not None:
            # the same drafts as the replayed run, verified by the current code
            first = prev["ours"].get("first_raw", prev["ours"]["raw"]) or " "
            if "retry_raw" in prev["ours"]:
                script = [first] + (
                    [prev["ours"]["retry_raw"]] if prev["ours"]["retry_raw"] else []
                )
                a = pipeline(FakeGenerator(script)).ask(q, mode="strict")
            else:  # recorded before generate.quote_retry: a retry, if any, is generated now
                a = pipeline(RecordedThenLive(first)).ask(q, mode="strict")
        else:
            a = ours.ask(q, mode="strict")
        ours_s = time.perf_counter() - ta
        tb = time.perf_counter()
        if prev is not None:
            plain_answer, plain_hit = prev["plain"]["answer"], prev["plain"]["context_hit"]
            plain_ttft = prev["plain"]["ttft"]
        else:
            b = plain_rag(q, retriever, llm, settings)
            plain_answer = b.answer
            plain_hit = any(c.doc_id == gold for c in b.context)
            plain_ttft = b.time_to_first_token_s
        plain_s = time.perf_counter() - tb
        # plain RAG shows everything: run its answer through the same verifier to see how much holds
        b_checked = checked_as_given(plain_answer, correct=False).ask(q, mode="strict")
        a_shown, a_total = sentences_verified(a)
        b_shown, b_total = sentences_verified(b_checked)
        retry = a.trace.quote_retry
        first_raw = retry.other_raw if retry is not None and retry.adopted else a.trace.raw_answer
        retry_raw = (
            None
            if retry is None
            else (a.trace.raw_answer if retry.adopted else retry.other_raw) or None
        )
        gold_in_context = any(c.doc_id == gold for c in a.trace.context) or any(
            gold in (c.doc_id or "") for c in a.trace.context
        )
        per_q.append(
            {
                "index": i,
                "question": q,
                "right_answer": row["right_answer"],
                "retrieval_hit": any(h.chunk.doc_id == gold for h in a.trace.retrieval_hits[:k]),
                "ours": {
                    "answer": a.answer,
                    # the first draft (what --replay feeds back), and the quoting retry's
                    "raw": first_raw,
                    "first_raw": first_raw,
                    "retry_raw": retry_raw,
                    "retry_adopted": retry is not None and retry.adopted,
                    "classification": a.trace.classification,
                    "context_hit": gold_in_context,
                    "correct": contains_answer(a.answer, row["right_answer"]),
                    # before verification: what the corrective context let the model write
                    "draft_correct": contains_answer(first_raw, row["right_answer"]),
                    "abstained": a.insufficient or a_shown == 0,
                    "shown_sentences": a_shown,
                    "generated_sentences": a_total,
                    "seconds": ours_s,
                    "ttft": a.trace.time_to_first_token_s,
                    "timings": a.timings,
                },
                "plain": {
                    "answer": plain_answer,
                    "context_hit": plain_hit,
                    "correct": contains_answer(plain_answer, row["right_answer"]),
                    "abstained": "enough information" in plain_answer.lower()
                    or not plain_answer.strip(),
                    "verified_sentences": b_shown,
                    "generated_sentences": b_total,
                    "seconds": prev["plain"]["seconds"] if prev is not None else plain_s,
                    "ttft": plain_ttft,
                },
            }
        )
        print(
            f"[{n}/{len(gen_idx)}] ours={'Y' if per_q[-1]['ours']['correct'] else '-'} "
            f"plain={'Y' if per_q[-1]['plain']['correct'] else '-'} "
            f"({ours_s:.0f}s/{plain_s:.0f}s) {q[:60]}",
            flush=True,
        )
    gen_seconds = time.perf_counter() - started

    fed: list[dict[str, Any]] = []
    tf = time.perf_counter()
    for i in fed_idx:
        row = rows[i]
        out: dict[str, Any] = {"index": i}
        for key in ("hallucinated_answer", "right_answer"):
            r = checked_as_given(row[key]).ask(row["question"], mode="strict")
            out[key] = {
                "claims": len(r.claims),
                "any_verified": any(c.decision == "verified" for c in r.claims),
                "any_blocked": any(c.decision == "blocked" for c in r.claims),
                "shown": r.answer if any(c.decision == "verified" for c in r.claims) else "",
            }
        fed.append(out)
    fed_seconds = time.perf_counter() - tf

    def rate(values: list[bool]) -> float:
        return round(sum(values) / len(values), 4) if values else 0.0

    def share(num: int, den: int) -> float | None:
        return round(num / den, 4) if den else None

    summary = {
        "questions": len(per_q),
        "retrieval_hit_rate": rate([p["retrieval_hit"] for p in per_q]),
        "ours": {
            "context_hit_rate": rate([p["ours"]["context_hit"] for p in per_q]),
            "answer_accuracy": rate([p["ours"]["correct"] for p in per_q]),
            "draft_accuracy_before_verification": rate([p["ours"]["draft_correct"] for p in per_q]),
            "abstention_rate": rate([p["ours"]["abstained"] for p in per_q]),
            "wrong_shown_rate": rate(
                [not p["ours"]["correct"] and not p["ours"]["abstained"] for p in per_q]
            ),
            "generated_sentences_verified": share(
                sum(p["ours"]["shown_sentences"] for p in per_q),
                sum(p["ours"]["generated_sentences"] for p in per_q),
            ),
            "shown_sentences_verified": 1.0,  # strict mode shows verified sentences only
            # generate.quote_retry: drafts with no claim verified, asked again for quotes
            "quote_retries": sum(p["ours"]["retry_raw"] is not None for p in per_q),
            "quote_retries_shown": sum(p["ours"]["retry_adopted"] for p in per_q),
            "median_seconds": statistics.median(p["ours"]["seconds"] for p in per_q)
            if per_q
            else None,
        },
        "plain_rag": {
            "context_hit_rate": rate([p["plain"]["context_hit"] for p in per_q]),
            "answer_accuracy": rate([p["plain"]["correct"] for p in per_q]),
            "abstention_rate": rate([p["plain"]["abstained"] for p in per_q]),
            "wrong_shown_rate": rate(
                [not p["plain"]["correct"] and not p["plain"]["abstained"] for p in per_q]
            ),
            "generated_sentences_verified": share(
                sum(p["plain"]["verified_sentences"] for p in per_q),
                sum(p["plain"]["generated_sentences"] for p in per_q),
            ),
            "shown_sentences_verified": share(
                sum(p["plain"]["verified_sentences"] for p in per_q),
                sum(p["plain"]["generated_sentences"] for p in per_q),
            ),
            "median_seconds": statistics.median(p["plain"]["seconds"] for p in per_q)
            if per_q
            else None,
        },
        "fed": {
            "answers": len(fed),
            "hallucinated_any_claim_shown_verified": rate(
                [f["hallucinated_answer"]["any_verified"] for f in fed]
            ),
            "hallucinated_any_claim_blocked": rate(
                [f["hallucinated_answer"]["any_blocked"] for f in fed]
            ),
            "hallucinated_with_claims": rate([f["hallucinated_answer"]["claims"] > 0 for f in fed]),
            "right_any_claim_shown_verified": rate(
                [f["right_answer"]["any_verified"] for f in fed]
            ),
            "right_with_claims": rate([f["right_answer"]["claims"] > 0 for f in fed]),
            "plain_rag_hallucinated_shown": 1.0,  # plain RAG shows whatever the model wrote
        },
        "seconds": {"model_load": load_s, "generated": gen_seconds, "fed": fed_seconds},
    }
    print()
    print(
        f"HaluEval qa dev: {len(per_q)} generated questions, {len(fed)} fed answers, "
        f"seed {args.seed}"
    )
    print(f"retrieval hit rate (top-{k}): {summary['retrieval_hit_rate']:.2f}")
    cols = [
        "context_hit_rate",
        "answer_accuracy",
        "abstention_rate",
        "wrong_shown_rate",
        "generated_sentences_verified",
        "shown_sentences_verified",
        "median_seconds",
    ]
    print(f"{'metric':32} {'ask':>10} {'plain RAG':>10}")
    for c in cols:
        a_val, b_val = summary["ours"][c], summary["plain_rag"][c]

        def fmt(v: Any) -> str:
            return "-" if v is None else f"{v:.2f}"

        print(f"{c:32} {fmt(a_val):>10} {fmt(b_val):>10}")
    f = summary["fed"]
    print(
        "hallucinated answer fed: any claim shown verified "
        f"{f['hallucinated_any_claim_shown_verified']:.2f} "
        f"(plain RAG shows it: 1.00); blocked {f['hallucinated_any_claim_blocked']:.2f}; "
        f"right answer fed: verified {f['right_any_claim_shown_verified']:.2f}"
    )
    result = {
        "benchmark": "ask_halueval",
        "command": "python " + " ".join(sys.argv),
        "data": str(args.data / "halueval" / "qa_dev.jsonl"),
        "corpus_passages": len(passages),
        "seed": args.seed,
        "split": args.split,
        "replayed_drafts_from": str(args.replay) if args.replay else None,
        "settings": settings.effective(),
        "pipeline": ours.config(),
        "summary": summary,
        "per_question": per_q,
        "fed": fed,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, default=str) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
