"""Passage retrieval: does the chunk that answers the question reach the top k?

Corpus: HaluEval qa (dev) knowledge passages grouped into long multi-section documents of
``--sections`` passages each (6: about 1,800 characters, four or five 500-character chunks). The
grouping is topical (greedy bm25s nearest neighbours of a seed passage), so a document's other
sections are hard negatives and whole-document scores stay meaningful. Questions come only from
the rows held out of verifier training (``training/splits.json``) whose right answer appears in
their own passage.

* **single**: the HaluEval question. Answer-passage recall@k: a hit among the first k is a chunk
  of the question's document that overlaps its passage and contains the right answer.
* **multi-part**: two questions whose passages are sections of one document, asked as one
  ("Q1, and q2?"). Both-answers recall@k: each part's answer-passage hit among the first k: the
  case of a question that needs two passages of one document.

Systems: affidavit's BM25, dense and hybrid at each granularity (``document``: parent-document
fusion, ``chunk``: uncapped chunk fusion, ``passage``: chunk fusion capped per document, with and
without neighbour merging), fused by reciprocal rank (rows without "convex") or by the convex
combination of min-max normalised scores (rows with "convex"; the default), and bm25s over the
very same chunks. ``--grades`` also grades the
default's top-5 with the CRAG relevance evaluator and counts answer-bearing chunks graded below
the Correct threshold. ``--ask N`` answers N single questions with the embedded LLM per
granularity (slow: about 30 s a question on 2 cores).

    python benchmarks/passage_retrieval.py [--data ../shared/data] [--questions 300] [--grades]

Writes ``benchmarks/results/passage_retrieval.json``.
"""

from __future__ import annotations

import argparse
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
sys.path.insert(0, str(ROOT / "src"))

KS = (1, 3, 5, 10)


def norm(text: str) -> str:
    """Lower-case, drop punctuation and articles (SQuAD-style answer matching)."""
    text = re.sub(r"[^\w\s]", " ", text.lower())
    return " ".join(w for w in text.split() if w not in {"a", "an", "the"})


def contains(text: str, answer: str) -> bool:
    a = norm(answer)
    return bool(a) and f" {a} " in f" {norm(text)} "


def load_questions(data: Path, n: int, seed: int) -> tuple[list[dict[str, Any]], list[str]]:
    """Held-out rows whose right answer is in their passage (seeded sample), and every passage."""
    rows = [
        json.loads(line) for line in (data / "halueval" / "qa_dev.jsonl").open(encoding="utf-8")
    ]
    splits = json.loads((ROOT / "training" / "splits.json").read_text())
    held = splits["halueval"]["qa"]["eval_row_indices"]
    usable = [
        int(i)
        for i in held
        if contains(rows[i]["knowledge"], rows[i]["right_answer"])
        and norm(rows[i]["right_answer"]) not in {"yes", "no"}
    ]
    rng = np.random.default_rng(seed)
    picked = [usable[i] for i in rng.permutation(len(usable))]
    out, seen = [], set()
    for i in picked:
        if rows[i]["knowledge"] in seen:
            continue  # one question per passage
        seen.add(rows[i]["knowledge"])
        out.append({"index": i, **rows[i]})
        if len(out) >= n:
            break
    passages = list(dict.fromkeys(r["knowledge"] for r in rows))
    return out, passages


def group_passages(
    questions: list[dict[str, Any]], passages: list[str], total: int, sections: int, seed: int
) -> list[list[str]]:
    """Topical documents: each seed passage with its ``sections - 1`` nearest unused passages.

    Every question's passage is in the pool; the rest of the pool is a seeded sample.
    """
    import bm25s
    import Stemmer

    must = list(dict.fromkeys(q["knowledge"] for q in questions))
    others = [p for p in passages if p not in set(must)]
    rng = np.random.default_rng(seed)
    pool = must + [others[i] for i in rng.permutation(len(others))[: max(0, total - len(must))]]
    stem = Stemmer.Stemmer("english")
    model = bm25s.BM25()
    model.index(bm25s.tokenize(pool, stopwords="en", stemmer=stem, show_progress=False))
    used = np.zeros(len(pool), dtype=bool)
    docs: list[list[str]] = []
    for s in rng.permutation(len(pool)).tolist():
        if used[s]:
            continue
        used[s] = True
        q = bm25s.tokenize([pool[s]], stopwords="en", stemmer=stem, show_progress=False)
        ids, _ = model.retrieve(q, k=min(len(pool), 200), show_progress=False)
        mates = [int(i) for i in ids[0] if not used[int(i)]][: sections - 1]
        for m in mates:
            used[m] = True
        docs.append([pool[s], *(pool[m] for m in mates)])
    return docs


def build_store(cache: Path, docs: list[list[str]], settings: Any, embedder: Any) -> Any:
    from affidavit.ingest.pipeline import Ingestor
    from affidavit.store.local import LocalStore

    cache.mkdir(parents=True, exist_ok=True)
    src = cache / "corpus.jsonl"
    body = "".join(
        json.dumps({"id": f"d{i:04d}", "text": "\n\n".join(d)}, ensure_ascii=False) + "\n"
        for i, d in enumerate(docs)
    )
    if not src.exists() or src.read_text(encoding="utf-8") != body:
        src.write_text(body, encoding="utf-8")
    store = LocalStore(cache / "store")
    t0 = time.perf_counter()
    report = Ingestor(store, embedder, settings.ingest).ingest([src])
    print(f"ingest: {report.counts()} in {time.perf_counter() - t0:.0f}s", flush=True)
    return store


def passage_span(store: Any, doc_id: str, passage: str) -> tuple[int, int]:
    text = store.get_document(doc_id).text
    at = text.find(passage)
    if at < 0:
        raise SystemExit(f"passage not found verbatim in {doc_id}; the loader changed the text")
    return at, at + len(passage)


def answer_rank(hits: list[Any], doc_id: str, span: tuple[int, int], answer: str) -> int | None:
    """1-based rank of the first hit that is an answer passage, or None."""
    for rank, h in enumerate(hits, start=1):
        c = h.chunk
        if c.doc_id != doc_id or c.start is None or c.end is None:
            continue
        if c.start < span[1] and c.end > span[0] and contains(c.text, answer):
            return rank
    return None


def recall(ranks: list[int | None], k: int) -> float:
    return float(np.mean([r is not None and r <= k for r in ranks])) if ranks else 0.0


class _Chunk:
    def __init__(self, chunk: Any) -> None:
        self.chunk = chunk


def bm25s_over_chunks(store: Any, queries: list[str], k: int) -> list[list[Any]]:
    """bm25s (English stop words + Snowball stemming, its own tokenizer) over the stored chunks."""
    import bm25s
    import Stemmer

    ids = [r[0] for r in store._db.execute("SELECT chunk_id FROM chunks ORDER BY rowid")]
    chunks = store.get_chunks(ids)
    stem = Stemmer.Stemmer("english")
    model = bm25s.BM25()
    model.index(
        bm25s.tokenize([c.text for c in chunks], stopwords="en", stemmer=stem, show_progress=False)
    )
    qt = bm25s.tokenize(queries, stopwords="en", stemmer=stem, show_progress=False)
    res, _ = model.retrieve(qt, k=k, show_progress=False)
    return [[_Chunk(chunks[int(i)]) for i in row] for row in res]


VARIANTS: dict[str, dict[str, Any]] = {
    "affidavit bm25": {"mode": "bm25"},
    "affidavit dense (MiniLM int8)": {"mode": "dense"},
    "hybrid document (parent-document fusion)": {"mode": "hybrid", "granularity": "document"},
    "hybrid chunk (uncapped chunk RRF)": {"mode": "hybrid", "granularity": "chunk"},
    "hybrid passage, 1 per document": {"granularity": "passage", "per_document": 1},
    "hybrid passage, 2 per document": {"granularity": "passage", "per_document": 2},
    "hybrid passage, 3 per document": {"granularity": "passage", "per_document": 3},
    "hybrid passage, 3 per document, merged": {
        "granularity": "passage",
        "per_document": 3,
        "merge_neighbours": True,
    },
    "hybrid passage, 3 per document, document prior": {
        "granularity": "passage",
        "per_document": 3,
        "document_prior": True,
    },
    "hybrid passage, 3 per document, document prior, question parts": {
        "granularity": "passage",
        "per_document": 3,
        "document_prior": True,
        "question_parts": True,
    },
    "hybrid passage, 3 per document, document prior, merged": {
        "granularity": "passage",
        "per_document": 3,
        "document_prior": True,
        "merge_neighbours": True,
    },
    "hybrid chunk (uncapped, convex)": {"granularity": "chunk", "fusion": "convex"},
    "hybrid passage, 3 per document, convex": {"per_document": 3, "fusion": "convex"},
    "hybrid passage, 3 per document, document prior, convex": {
        "granularity": "passage",
        "per_document": 3,
        "document_prior": True,
        "fusion": "convex",
    },
    "hybrid passage, 3 per document, document prior, convex, question parts": {
        "granularity": "passage",
        "per_document": 3,
        "document_prior": True,
        "fusion": "convex",
        "question_parts": True,
    },
    "hybrid passage, 3 per document, document prior, convex, reranked (top 20, rank fusion)": {
        "granularity": "passage",
        "per_document": 3,
        "document_prior": True,
        "fusion": "convex",
        "rerank": 20,
        "rerank_fusion": "rrf",
    },
    "hybrid passage, 3 per document, document prior, reranked (top 20, rank fusion)": {
        "granularity": "passage",
        "per_document": 3,
        "document_prior": True,
        "rerank": 20,
        "rerank_fusion": "rrf",
    },
    "hybrid passage, 3 per document, document prior, reranked (top 20, model order)": {
        "granularity": "passage",
        "per_document": 3,
        "document_prior": True,
        "rerank": 20,
        "rerank_fusion": "replace",
    },
    "affidavit bm25, reranked (top 20, rank fusion)": {
        "mode": "bm25",
        "rerank": 20,
        "rerank_fusion": "rrf",
    },
    "affidavit bm25, reranked (top 20, model order)": {
        "mode": "bm25",
        "rerank": 20,
        "rerank_fusion": "replace",
    },
}


def run_variants(
    store: Any, embedder: Any, queries: list[str], variants: dict[str, dict[str, Any]]
) -> tuple[dict[str, list[list[Any]]], dict[str, float]]:
    from affidavit.retrieve.rerank import CrossEncoderReranker
    from affidavit.retrieve.retriever import StoreRetriever

    out: dict[str, list[list[Any]]] = {}
    secs: dict[str, float] = {}
    reranker = None
    for label, v in variants.items():
        if v.get("rerank") and reranker is None:
            reranker = CrossEncoderReranker()
            reranker.scores("warm up", ["the model loads once, outside the timed queries"])
        if v.get("rerank"):
            assert reranker is not None
            reranker.depth = int(v["rerank"])
            reranker.fusion = str(v.get("rerank_fusion", "rrf"))
        r = StoreRetriever(
            store,
            embedder,
            reranker=reranker if v.get("rerank") else None,
            granularity=v.get("granularity", "passage"),
            per_document=v.get("per_document", 3),
            merge_neighbours=v.get("merge_neighbours", False),
            document_prior=v.get("document_prior", False),
            question_parts=v.get("question_parts", False),
            fusion=v.get("fusion", "rrf"),
        )
        per: list[float] = []
        res = []
        mode = v.get("mode", "hybrid")
        vecs = embedder.embed(queries) if mode != "bm25" else None
        for i, q in enumerate(queries):
            t0 = time.perf_counter()
            res.append(r._search(q, None if vecs is None else vecs[i], max(KS), mode, None))
            per.append(time.perf_counter() - t0)
        out[label] = res
        secs[label] = statistics.median(per)
    t0 = time.perf_counter()
    out["bm25s over the same chunks (stopwords+stem)"] = bm25s_over_chunks(store, queries, max(KS))
    secs["bm25s over the same chunks (stopwords+stem)"] = (time.perf_counter() - t0) / len(queries)
    return out, secs


def multipart(questions: list[dict[str, Any]], where: dict[str, str]) -> list[dict[str, Any]]:
    """Pairs of questions whose passages share a document, asked as one question."""
    by_doc: dict[str, list[dict[str, Any]]] = {}
    for q in questions:
        by_doc.setdefault(where[q["knowledge"]], []).append(q)
    out = []
    for doc, qs in sorted(by_doc.items()):
        for a, b in zip(qs[0::2], qs[1::2], strict=False):
            first = a["question"].rstrip(" ?")
            second = b["question"].rstrip(" ?")
            second = second[0].lower() + second[1:] if second[:2].istitle() else second
            out.append({"doc": doc, "question": f"{first}, and {second}?", "parts": [a, b]})
    return out


def grades_block(
    store: Any,
    hits: list[list[Any]],
    items: list[dict[str, Any]],
    settings: Any,
    embedder: Any,
) -> dict[str, Any]:
    """How the CRAG evaluator grades the answer-bearing chunks among the top k it grades."""
    from affidavit.correct.classify import classify
    from affidavit.correct.evaluator import ModelRelevanceEvaluator, PairScorerRelevanceEvaluator
    from affidavit.correct.multipart import MultiPartEvaluator
    from affidavit.retrieve.rerank import packaged_reranker_dir
    from affidavit.verify.crossencoder import OnnxCrossEncoder

    c = settings.correct
    plain = ModelRelevanceEvaluator(embedder.embed)
    evaluators: dict[str, Any] = {
        "whole question": plain,
        "whole question + parts (max)": MultiPartEvaluator(plain),
    }
    if (packaged_reranker_dir() / "config.json").is_file():
        # the reranker's calibrated p(relevant), as 0-10 grades (not the default evaluator)
        reranker = OnnxCrossEncoder(packaged_reranker_dir(), stage="reranker")
        pair = PairScorerRelevanceEvaluator(reranker, signal="entail")
        evaluators["reranker (10 x p_relevant)"] = pair
        evaluators["reranker + parts (max)"] = MultiPartEvaluator(pair)
    out: dict[str, Any] = {}
    for label, ev in evaluators.items():
        below, answer_grades, kinds = 0, [], {"correct": 0, "ambiguous": 0, "incorrect": 0}
        for item, hs in zip(items, hits, strict=True):
            top = hs[: c.top_k_documents]
            grades = [g.score for g in ev.score(item["question"], [h.chunk.text for h in top])]
            kinds[classify(grades, upper=c.upper_threshold, lower=c.lower_threshold).kind] += 1
            for part in item["parts"]:
                rank = answer_rank(top, part["doc"], part["span"], part["right_answer"])
                if rank is not None:
                    g = grades[rank - 1]
                    answer_grades.append(g)
                    below += g < c.upper_threshold
        n = len(answer_grades)
        out[label] = {
            "answer_chunks_graded": n,
            "answer_chunks_below_correct_threshold": below,
            "share_below_correct_threshold": below / n if n else None,
            "median_answer_chunk_grade": statistics.median(answer_grades) if n else None,
            "classification": kinds,
        }
    return out


def ask_block(
    store: Any,
    embedder: Any,
    single: list[dict[str, Any]],
    n: int,
    settings: Any,
    save: Any = None,
) -> dict[str, Any]:
    """``ask`` (strict) answer accuracy per granularity on the first n single questions.

    Each question is answered by both systems before the next one, and ``save`` is called after
    each, so a run stopped early still compares the two on the same questions.
    """
    from affidavit.claims.extractor import RuleBasedExtractor
    from affidavit.generate.factory import make_generator
    from affidavit.pipeline.ask import AskPipeline
    from affidavit.pipeline.build import default_corrector
    from affidavit.retrieve.retriever import StoreRetriever
    from affidavit.verify.calibration import effective_policy
    from affidavit.verify.cascade import ClaimCascade

    llm = make_generator(settings.generate, cache_dir=settings.resolved_home() / "models")
    getattr(llm, "load", lambda: None)()
    verifier = ClaimCascade(settings.verify, effective_policy(settings))
    extractor = RuleBasedExtractor(settings.claims)
    corrector = default_corrector(settings, llm)
    k = settings.correct.top_k_documents
    pipes = {}
    for gran in ("document", "passage"):
        # the configured retrieval (and grading) with only the granularity changed
        section = settings.retrieve.model_copy(update={"granularity": gran})
        pipes[gran] = AskPipeline(
            retriever=StoreRetriever.from_settings(store, embedder, section),
            generator=llm,
            extractor=extractor,
            verifier=verifier,
            settings=settings,
            corrector=corrector,
        )
    per: dict[str, list[dict[str, Any]]] = {g: [] for g in pipes}
    out: dict[str, Any] = {}
    for done, q in enumerate(single[:n], start=1):
        for gran, pipe in pipes.items():
            t0 = time.perf_counter()
            a = pipe.ask(q["question"], mode="strict")
            hits = list(a.trace.retrieval_hits[:k])
            context = " ".join(c.text for c in a.trace.context)
            per[gran].append(
                {
                    "index": q["index"],
                    "answer_passage_in_hits": answer_rank(
                        hits, q["doc"], q["span"], q["right_answer"]
                    )
                    is not None,
                    "answer_in_context": contains(context, q["right_answer"]),
                    "correct": contains(a.answer, q["right_answer"]),
                    "draft_correct": contains(a.trace.raw_answer, q["right_answer"]),
                    "seconds": time.perf_counter() - t0,
                }
            )
            print(f"  ask {gran} {done}/{n} {'Y' if per[gran][-1]['correct'] else '-'}", flush=True)
        for gran, rows in per.items():
            out[gran] = {
                "questions": len(rows),
                "answer_accuracy": float(np.mean([p["correct"] for p in rows])),
                "draft_accuracy_before_verification": float(
                    np.mean([p["draft_correct"] for p in rows])
                ),
                "answer_passage_in_hits": float(
                    np.mean([p["answer_passage_in_hits"] for p in rows])
                ),
                "answer_in_context": float(np.mean([p["answer_in_context"] for p in rows])),
                "median_seconds": statistics.median(p["seconds"] for p in rows),
                "per_question": rows,
            }
        out["complete"] = done == min(n, len(single))
        if save is not None:
            save(out)
    return out


def table(rows: dict[str, dict[str, float]], cols: list[str]) -> str:
    w = max(len(r) for r in rows) + 2
    lines = ["system".ljust(w) + "".join(c.rjust(12) for c in cols)]
    for name, r in rows.items():
        lines.append(name.ljust(w) + "".join(f"{100 * r[c]:12.1f}" for c in cols))
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--questions", type=int, default=300)
    ap.add_argument("--passages", type=int, default=1500, help="passages in the corpus")
    ap.add_argument("--sections", type=int, default=6, help="passages per document")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--grades", action="store_true", help="grade the default's top k (CRAG)")
    ap.add_argument("--ask", type=int, default=0, help="questions answered by the LLM per system")
    ap.add_argument(
        "--ask-only",
        action="store_true",
        help="only the ask block (writes passage_retrieval_ask.json unless --out is given)",
    )
    ap.add_argument(
        "--cache", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "affidavit-bench"
    )
    ap.add_argument(
        "--out", type=Path, default=None, help="default: benchmarks/results/passage_retrieval.json"
    )
    args = ap.parse_args()
    if args.out is None:
        name = "passage_retrieval_ask.json" if args.ask_only else "passage_retrieval.json"
        args.out = ROOT / "benchmarks" / "results" / name
    logging.basicConfig(level=logging.WARNING)

    from affidavit.core.settings import load_settings
    from affidavit.retrieve.embedders import MiniLMEmbedder

    settings = load_settings()
    embedder = MiniLMEmbedder(threads=args.threads, batch_size=32)
    t_all = time.perf_counter()
    questions, passages = load_questions(args.data, args.questions, args.seed)
    docs = group_passages(questions, passages, args.passages, args.sections, args.seed)
    store = build_store(args.cache / "passage_retrieval", docs, settings, embedder)
    where = {p: f"d{i:04d}" for i, d in enumerate(docs) for p in d}
    for q in questions:
        q["doc"] = where[q["knowledge"]]
        q["span"] = passage_span(store, q["doc"], q["knowledge"])
    single = [{"question": q["question"], "parts": [q]} for q in questions]
    multi = multipart(questions, where)
    n_chunks = store._db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    print(f"{len(docs)} documents, {n_chunks} chunks; {len(single)} + {len(multi)} multi-part")

    result: dict[str, Any] = {
        "command": " ".join(sys.argv),
        "corpus": {
            "documents": len(docs),
            "chunks": int(n_chunks),
            "passages": sum(len(d) for d in docs),
            "sections_per_document": args.sections,
            "chunk_size": settings.ingest.chunk_size,
            "seed": args.seed,
        },
        "embedder": embedder.config(),
    }
    default = "hybrid passage, 3 per document, document prior, convex"
    for label, items in () if args.ask_only else (("single", single), ("multi_part", multi)):
        runs, secs = run_variants(store, embedder, [it["question"] for it in items], VARIANTS)
        rows: dict[str, dict[str, float]] = {}
        for name, hits in runs.items():
            ranks = [
                [answer_rank(h, p["doc"], p["span"], p["right_answer"]) for p in it["parts"]]
                for it, h in zip(items, hits, strict=True)
            ]
            rows[name] = {
                f"recall@{k}": float(
                    np.mean([all(r is not None and r <= k for r in rr) for rr in ranks])
                )
                for k in KS
            }
            rows[name]["median_context_chars@5"] = float(
                statistics.median(sum(len(x.chunk.text) for x in h[:5]) for h in hits)
            )
        print(f"\n{label}: {len(items)} questions (answer-passage recall@k, %)")
        print(table(rows, [f"recall@{k}" for k in KS]))
        d = rows[default]["recall@5"]
        b = rows["bm25s over the same chunks (stopwords+stem)"]["recall@5"]
        doc = rows["hybrid document (parent-document fusion)"]["recall@5"]
        print(f"default - bm25s = {100 * (d - b):+.1f} recall@5 points (bar: +5.0)")
        print(f"default - document fusion = {100 * (d - doc):+.1f} recall@5 points")
        result[label] = {
            "questions": len(items),
            "rows": rows,
            "median_seconds_per_query": secs,
            "default": default,
            "default_minus_bm25s_recall@5": d - b,
            "default_minus_document_recall@5": d - doc,
        }
        if args.grades:
            result[label]["grades"] = grades_block(store, runs[default], items, settings, embedder)
            print(json.dumps(result[label]["grades"], indent=1))
    if args.ask:

        def save(block: dict[str, Any]) -> None:
            # after every question: a run stopped early keeps what it measured
            result["ask"] = block
            args.out.write_text(json.dumps(result, indent=2))

        result["ask"] = ask_block(store, embedder, questions, args.ask, settings, save)
        for gran in ("document", "passage"):
            r = result["ask"][gran]
            print(f"ask {gran}: accuracy {r['answer_accuracy']:.3f} ({r['questions']} questions)")
    else:
        result["ask"] = "not run (use --ask N; about 30 s a question per system on 2 cores)"
    store.close()
    result["seconds"] = time.perf_counter() - t_all
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"\nwrote {args.out} ({result['seconds']:.0f}s)")


if __name__ == "__main__":
    main()
