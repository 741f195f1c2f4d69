"""An unauthenticated flood against ``affidavit serve`` (loopback only, bounded in time):
p50/p95 of ``/healthz`` and of an authorised ``POST /v1/audit``, quiet and then while 50
clients send wrong bearer tokens for a real key id as fast as they can, in the same run.

Issue 25.7: with argon2id checks before any limit, 30 concurrent wrong guesses made ``/healthz``
take 2.5 s. The bar: with 50 concurrent wrong tokens, both p95s within 1.5x of the quiet run.

    python benchmarks/serve_auth_flood.py [--requests 60] [--flooders 50] [--seconds 20]

Writes ``benchmarks/results/serve_auth_flood.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

AUDIT = {
    "query": "When did the Forth Bridge open?",
    "chunks": [
        {
            "text": "The Forth Bridge opened on 4 March 1890.",
            "url": "https://en.wikipedia.org/wiki/Forth_Bridge",
        }
    ],
    "response": "The Forth Bridge opened on 4 March 1890.",
}


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def measure(url: str, auth: dict[str, str], n: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with httpx.Client(timeout=30) as c:
        for name, call in (
            ("healthz", lambda: c.get(url + "/healthz")),
            ("audit", lambda: c.post(url + "/v1/audit", json=AUDIT, headers=auth)),
        ):
            lat, codes = [], []
            for _ in range(n):
                t = time.perf_counter()
                r = call()
                lat.append(time.perf_counter() - t)
                codes.append(r.status_code)
            out[name] = {
                "p50_ms": round(statistics.median(lat) * 1000, 2),
                "p95_ms": round(pct(lat, 0.95) * 1000, 2),
                "ok": sum(code == 200 for code in codes),
                "n": n,
            }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=60)
    ap.add_argument("--flooders", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=20.0, help="flood time limit")
    ap.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "results" / "serve_auth_flood.json"
    )
    args = ap.parse_args()

    from typer.testing import CliRunner

    from affidavit.cli.main import app
    from affidavit.testing.fake_llm import FakeOpenAIServer, FakeReply
    from affidavit.testing.server import ServedProcess

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        made = CliRunner().invoke(
            app, ["keys", "api", "create", "--name", "bench"], env={"AFFIDAVIT_HOME": str(home)}
        )
        token = made.stdout.strip().splitlines()[-1]
        key_id = token.split("_")[1]
        auth = {"Authorization": f"Bearer {token}"}
        with FakeOpenAIServer([FakeReply(content="x")]) as llm:
            env = {
                "AFFIDAVIT_HOME": str(home),
                "AFFIDAVIT_STORE__PATH": str(Path(tmp) / "store"),
                "AFFIDAVIT_GENERATE__BACKEND": "openai",
                "AFFIDAVIT_GENERATE__BASE_URL": llm.url,
                "AFFIDAVIT_SERVE__RATE_LIMIT_PER_MINUTE": "0",
                "OMP_NUM_THREADS": "1",
            }
            with ServedProcess(env) as srv:
                measure(srv.url, auth, 5)  # warm-up
                quiet = measure(srv.url, auth, args.requests)
                stop = threading.Event()
                sent = {"n": 0, "401": 0, "429": 0, "other": 0}
                lock = threading.Lock()

                def flood() -> None:
                    wrong = {"Authorization": f"Bearer afd_{key_id}_" + "x" * 43}
                    with httpx.Client(timeout=30) as c:
                        while not stop.is_set():
                            code = c.get(srv.url + "/v1/search?q=x", headers=wrong).status_code
                            with lock:
                                sent["n"] += 1
                                key = str(code) if str(code) in ("401", "429") else "other"
                                sent[key] += 1

                threads = [threading.Thread(target=flood) for _ in range(args.flooders)]
                for t in threads:
                    t.start()
                time.sleep(1.0)
                deadline = time.monotonic() + args.seconds
                flooded = measure(srv.url, auth, args.requests)
                stop.set()
                for t in threads:
                    t.join(timeout=max(1.0, deadline - time.monotonic()))
    ratio = {k: round(flooded[k]["p95_ms"] / max(quiet[k]["p95_ms"], 1e-6), 2) for k in quiet}
    result = {
        "benchmark": "serve_auth_flood",
        "command": " ".join(["python", *sys.argv]),
        "flooders": args.flooders,
        "quiet": quiet,
        "flooded": flooded,
        "wrong_token_requests": sent,
        "p95_ratio_flooded_over_quiet": ratio,
        "bar": "p95 of /healthz and of authorised audits within 1.5x of the quiet run",
        "meets_bar": all(v <= 1.5 for v in ratio.values()),
        "cpu_count": os.cpu_count(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
