"""Training pairs for the passage reranker: (question, chunk) -> relevant / not relevant.

The reranker is trained with ``train_verifier.py`` (same student, same export): a relevant chunk
is an ``entail`` row, anything else a ``not_entail`` row, and the reranker's score is the model's
p(entail). Only rows that may train a shipped model (``../shared/data/README.md``) and that no
benchmark evaluates on:

* **HaluEval qa** (MIT): the rows of ``qa_dev.jsonl`` *not* held out in ``training/splits.json``
  (the passage benchmark and ``ask_halueval`` ask only held-out rows). Their passages are grouped
  into topical multi-section documents and chunked exactly as the passage benchmark and the
  library do (`affidavit.ingest.chunking.SentenceChunker`, 500/50), so a document's other sections
  are the hard negatives a reranker meets. Positive: a chunk of the question's own passage that
  contains its right answer. Negatives: the best bm25s chunks that are not positives (hard), one
  other chunk of the same document, one random chunk.
* **CitationIntegrity** (MIT): ``claims_train.jsonl`` only (``claims_dev.jsonl`` is the
  evaluation split). Positive: the cited abstract's evidence sentences' chunk; negatives: the best
  bm25s abstracts' chunks that are not cited.

A seeded 5% of the questions (by passage) is the dev split. Writes ``<out>/train.jsonl``,
``<out>/dev.jsonl`` and ``<out>/stats.json``.

Usage (project root):
    python training/build_rerank_data.py --out training/data_rerank
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import numpy as np  # noqa: E402
from passage_retrieval import contains, group_passages, norm  # noqa: E402

from affidavit.core.types import Document  # noqa: E402
from affidavit.ingest.chunking import SentenceChunker  # noqa: E402


def _bm25(texts: list[str]) -> Any:
    import bm25s
    import Stemmer

    stem = Stemmer.Stemmer("english")
    model = bm25s.BM25()
    model.index(bm25s.tokenize(texts, stopwords="en", stemmer=stem, show_progress=False))
    return model, stem


def _query(model: Any, stem: Any, queries: list[str], k: int) -> np.ndarray:
    import bm25s

    ids, _ = model.retrieve(
        bm25s.tokenize(queries, stopwords="en", stemmer=stem, show_progress=False),
        k=k,
        show_progress=False,
    )
    return ids


def halueval_rows(data: Path, seed: int, hard: int) -> tuple[list[dict], list[dict]]:
    rows = [json.loads(line) for line in (data / "halueval" / "qa_dev.jsonl").open()]
    splits = json.loads((HERE / "splits.json").read_text())
    held = set(int(i) for i in splits["halueval"]["qa"]["eval_row_indices"])
    usable = [
        i
        for i in range(len(rows))
        if i not in held
        and contains(rows[i]["knowledge"], rows[i]["right_answer"])
        and norm(rows[i]["right_answer"]) not in {"yes", "no"}
    ]
    qs = [{"index": i, **rows[i]} for i in usable]
    passages = list(dict.fromkeys(q["knowledge"] for q in qs))
    docs = group_passages(qs, passages, total=len(passages), sections=6, seed=seed)
    chunker = SentenceChunker(500, 50)
    chunks: list[dict] = []  # text, doc, start, end
    where: dict[str, tuple[int, int, int]] = {}  # passage -> (doc, start, end)
    for d, sections in enumerate(docs):
        text = "\n\n".join(sections)
        at = 0
        for s in sections:
            pos = text.find(s, at)
            where[s] = (d, pos, pos + len(s))
            at = pos + len(s)
        for c in _chunks(chunker, text):
            chunks.append({"text": text[c[0] : c[1]], "doc": d, "start": c[0], "end": c[1]})
    model, stem = _bm25([c["text"] for c in chunks])
    by_doc: dict[int, list[int]] = {}
    for j, c in enumerate(chunks):
        by_doc.setdefault(c["doc"], []).append(j)
    rng = random.Random(seed)
    dev_passages = set(rng.sample(passages, max(1, len(passages) // 20)))
    train, dev = [], []
    top = _query(model, stem, [q["question"] for q in qs], 30)
    for q, hits in zip(qs, top, strict=True):
        d, s, e = where[q["knowledge"]]
        pos = [
            j
            for j in by_doc[d]
            if chunks[j]["start"] < e
            and chunks[j]["end"] > s
            and contains(chunks[j]["text"], q["right_answer"])
        ]
        if not pos:
            continue
        negs = [int(j) for j in hits if int(j) not in pos][:10]
        pick = rng.sample(negs, min(hard, len(negs)))
        same = [j for j in by_doc[d] if j not in pos and j not in pick]
        if same:
            pick.append(rng.choice(same))
        pick.append(rng.randrange(len(chunks)))
        out = dev if q["knowledge"] in dev_passages else train
        group = f"halueval_qa:{q['index']}"
        out.append(_row(q["question"], chunks[rng.choice(pos)]["text"], True, "halueval_qa", group))
        out += [
            _row(q["question"], chunks[j]["text"], False, "halueval_qa", group)
            for j in dict.fromkeys(pick)
            if j not in pos
        ]
    return train, dev


def citation_rows(data: Path, seed: int, hard: int) -> tuple[list[dict], list[dict]]:
    folder = data / "citation_integrity"
    corpus = {}
    for line in (folder / "corpus.jsonl").open():
        r = json.loads(line)
        corpus[int(r.get("doc_id", r.get("id")))] = r
    ids = list(corpus)

    def text_of(r: dict) -> str:
        body = r.get("abstract") or r.get("text") or ""
        if isinstance(body, list):
            body = " ".join(body)
        title = r.get("title") or ""
        return f"{title}. {body}".strip(". ") if title else body

    texts = [text_of(corpus[i]) for i in ids]
    model, stem = _bm25(texts)
    claims = [json.loads(line) for line in (folder / "claims_train.jsonl").open()]
    claims = [c for c in claims if c.get("cited_doc_ids")]
    rng = random.Random(seed + 1)
    top = _query(model, stem, [_clean(c["claim"]) for c in claims], 20)
    train, dev = [], []
    dev_ids = set(rng.sample(range(len(claims)), max(1, len(claims) // 20)))
    for k, (c, hits) in enumerate(zip(claims, top, strict=True)):
        cited = {int(x) for x in c["cited_doc_ids"]}
        supported = [
            int(doc)
            for doc, ev in (c.get("evidence") or {}).items()
            if any(e.get("label") == "SUPPORT" for e in ev)
        ]
        if not supported or supported[0] not in corpus:
            continue
        q = _clean(c["claim"])
        pos_text = _first_chunk(texts[ids.index(supported[0])])
        negs = [ids[int(j)] for j in hits if ids[int(j)] not in cited][:10]
        out = dev if k in dev_ids else train
        group = f"citation_integrity:{c['id']}"
        out.append(_row(q, pos_text, True, "citation_integrity", group))
        for doc in rng.sample(negs, min(hard, len(negs))):
            out.append(
                _row(q, _first_chunk(texts[ids.index(doc)]), False, "citation_integrity", group)
            )
    return train, dev


def _clean(claim: str) -> str:
    return " ".join(claim.replace("[<|multi_cit|>]", "").replace("<|cit|>", "").split())


def _chunks(chunker: SentenceChunker, text: str) -> list[tuple[int, int]]:
    """(start, end) of each chunk the library makes of ``text``."""
    doc = Document(id="d", text=text, source="rerank")
    return [
        (c.start, c.end) for c in chunker.chunk(doc) if c.start is not None and c.end is not None
    ]


def _first_chunk(text: str) -> str:
    spans = _chunks(SentenceChunker(500, 50), text)
    return text[spans[0][0] : spans[0][1]] if spans else text[:500]


def _row(query: str, chunk: str, relevant: bool, source: str, group: str) -> dict:
    return {
        "claim": query,
        "evidence": chunk,
        "label": "entail" if relevant else "not_entail",
        "source": f"rerank_{source}",
        "group": group,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--out", type=Path, default=HERE / "data_rerank")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--hard", type=int, default=3, help="hard negatives per question")
    args = ap.parse_args()
    t1, d1 = halueval_rows(args.data, args.seed, args.hard)
    t2, d2 = citation_rows(args.data, args.seed, args.hard)
    train, dev = t1 + t2, d1 + d2
    random.Random(args.seed).shuffle(train)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("train", train), ("dev", dev)):
        with (args.out / f"{name}.jsonl").open("w", encoding="utf-8") as fh:
            for r in rows:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    stats = {
        "train": dict(Counter(f"{r['source']}/{r['label']}" for r in train)),
        "dev": dict(Counter(f"{r['source']}/{r['label']}" for r in dev)),
        "command": "python training/build_rerank_data.py " + " ".join(sys.argv[1:]),
    }
    (args.out / "stats.json").write_text(json.dumps(stats, indent=1) + "\n")
    print(json.dumps(stats, indent=1))


if __name__ == "__main__":
    main()
