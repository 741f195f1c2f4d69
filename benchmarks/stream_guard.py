"""The delay the stream guard adds per sentence (``affidavit.audit.stream.StreamGuard``).

A streamed answer of N sentences (every third one with a changed date) is fed word by word
through the guard in guardrail mode, against C evidence chunks. For each sentence it records:

- the decision time: the audit of the answer up to that sentence, run once the sentence is
  complete (what the guard adds in wall-clock time, on top of waiting for the sentence);
- the hold in tokens: how many tokens after the sentence's last one it is released (1: the
  first token of the next sentence shows that the sentence is complete; the last sentence is
  released by ``finish``);
- the per-token cost of feeding (segmenting the open sentence), without decisions.

The lexical audit only (no verifier model). Prints a table and writes
``benchmarks/results/stream_guard.json``.

Usage:
    .venv/bin/python benchmarks/stream_guard.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from affidavit.audit.auditor import Auditor  # noqa: E402
from affidavit.audit.stream import StreamGuard  # noqa: E402

FACTS = [
    ("The Forth Bridge opened on 4 March 1890.", "The Forth Bridge opened on 4 March 1925."),
    ("The Eiffel Tower was completed in 1889.", "The Eiffel Tower was completed in 1930."),
    ("Marie Curie won the Nobel Prize in Physics in 1903.", "Marie Curie won it in 1911."),
    ("The Golden Gate Bridge opened in May 1937.", "The Golden Gate Bridge opened in 1950."),
    ("The Sydney Opera House opened in October 1973.", "It opened in October 1983."),
]


def chunks(n: int) -> list[dict[str, str]]:
    out = [
        {"text": good, "url": f"https://example.org/fact/{i}"} for i, (good, _) in enumerate(FACTS)
    ]
    filler = "The river runs past the old mill and the meadow near the village in spring."
    out += [
        {"text": f"{filler} Note {i}.", "url": f"https://example.org/f/{i}"}
        for i in range(n - len(out))
    ]
    return out[:n]


def answer(n: int) -> str:
    sentences = [FACTS[i % len(FACTS)][1 if i % 3 == 2 else 0] for i in range(n)]
    return " ".join(sentences)


def run_once(n_sentences: int, n_chunks: int) -> dict[str, object]:
    text = answer(n_sentences)
    tokens = re.findall(r"\s*\S+", text)
    guard = StreamGuard(Auditor({"mode": "guardrail"}), "q", chunks(n_chunks))
    ends: list[int] = []  # token index at which each released piece came out
    fed = 0
    t0 = time.perf_counter()
    for i, tok in enumerate(tokens):
        fed += len(tok)
        if guard.feed(tok):
            ends.append(i)
    guard.finish()
    total_ms = (time.perf_counter() - t0) * 1000.0
    # a sentence's last token: where its text ended in the token stream
    sentence_last: list[int] = []
    pos = 0
    for i, tok in enumerate(tokens):
        pos += len(tok)
        if tok.rstrip().endswith("."):
            sentence_last.append(i)
    holds = [e - last for e, last in zip(ends, sentence_last, strict=False)]
    decisions = guard.decision_ms
    return {
        "decision_ms": decisions,
        "holds": holds,
        "feed_only_ms_per_token": max(total_ms - sum(decisions), 0.0) / len(tokens),
        "released_equals_guarded": guard.report is not None
        and guard.released == guard.report.guarded_response,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/stream_guard.json")
    args = ap.parse_args(argv)
    rows = []
    for n_sentences in (5, 10, 20):
        for n_chunks in (5, 50):
            decisions: list[float] = []
            firsts: list[float] = []
            lasts: list[float] = []
            holds: list[int] = []
            per_token: list[float] = []
            same = True
            for _ in range(args.repeats):
                r = run_once(n_sentences, n_chunks)
                d = r["decision_ms"]
                assert isinstance(d, list) and isinstance(r["holds"], list)
                decisions += d
                firsts.append(d[0])
                lasts.append(d[-1])
                holds += r["holds"]
                per_token.append(float(r["feed_only_ms_per_token"]))  # type: ignore[arg-type]
                same = same and bool(r["released_equals_guarded"])
            q = statistics.quantiles(decisions, n=20)
            rows.append(
                {
                    "sentences": n_sentences,
                    "chunks": n_chunks,
                    "decision_ms_median": round(statistics.median(decisions), 2),
                    "decision_ms_p95": round(q[18], 2),
                    "first_sentence_ms_median": round(statistics.median(firsts), 2),
                    "last_sentence_ms_median": round(statistics.median(lasts), 2),
                    "hold_tokens_max": max(holds) if holds else 0,
                    "feed_ms_per_token": round(statistics.median(per_token), 4),
                    "released_equals_guarded_response": same,
                }
            )
    print(
        f"{'sent':>4} {'chunks':>6} {'median ms':>9} {'p95 ms':>7} {'1st ms':>7} {'last ms':>7} "
        f"{'hold tok':>8} {'ms/token':>8} same"
    )
    for r in rows:
        print(
            f"{r['sentences']:>4} {r['chunks']:>6} {r['decision_ms_median']:>9} "
            f"{r['decision_ms_p95']:>7} {r['first_sentence_ms_median']:>7} "
            f"{r['last_sentence_ms_median']:>7} {r['hold_tokens_max']:>8} "
            f"{r['feed_ms_per_token']:>8} {r['released_equals_guarded_response']}"
        )
    result = {
        "benchmark": "stream_guard",
        "command": "benchmarks/stream_guard.py --repeats " + str(args.repeats),
        "mode": "guardrail, lexical audit (no verifier model)",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "load_average": os.getloadavg(),
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
