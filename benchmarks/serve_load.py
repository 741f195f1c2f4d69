"""Load on ``affidavit serve`` (loopback only, bounded in count and time), in one run:

1. **audits/s, p50, p95** at concurrency 1, 8 and 32: ``POST /v1/audit`` on a real uvicorn process
   against the same audits run by the library in this process (``Auditor.audit`` in a thread pool
   of the same size), so the ratio is the cost of the HTTP layer (JSON, auth, queue, threads).
2. **overload**: more questions than the LLM queue holds (a scripted LLM that writes slowly),
   more audits than the verify queue holds, and more uploads than the ingest queue holds: every
   refusal must be a 503 with ``Retry-After``, nothing else may fail, and every accepted upload
   must be fully in the store (searchable, its chunks counted) while no refused one is.

    python benchmarks/serve_load.py [--requests 300] [--seconds 20] [--repeat 3]

Writes ``benchmarks/results/serve_load.json``. The server and this client share the machine's
cores, as a loopback benchmark must; numbers are for this machine only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("OMP_NUM_THREADS", "1")

import httpx  # noqa: E402

from affidavit.audit import Auditor  # noqa: E402
from affidavit.certify.keys import generate_key  # noqa: E402
from affidavit.core.settings import load_settings  # noqa: E402
from affidavit.server.apikeys import ApiKeyStore  # noqa: E402
from affidavit.testing.fake_llm import FakeOpenAIServer, FakeReply  # noqa: E402
from affidavit.testing.server import ServedProcess  # noqa: E402


def payloads() -> list[dict[str, Any]]:
    """Eight audits built from the sample corpus: true sentences, one altered number each."""
    docs = ROOT / "sample_corpus" / "docs"
    texts = [
        (docs / "us_constitution.txt").read_text(encoding="utf-8"),
        (docs / "declaration_of_independence.md").read_text(encoding="utf-8"),
    ]
    paragraphs = [
        p.strip() for t in texts for p in t.split("\n\n") if len(p.strip()) > 200 and "#" not in p
    ]
    out = []
    for i in range(8):
        chunks = paragraphs[i % len(paragraphs) : i % len(paragraphs) + 3]
        first = chunks[0].split(". ")
        response = ". ".join(first[:2]).strip().rstrip(".") + "."
        response += " It was adopted in 17" + str(70 + i) + " by 3" + str(i) + " states."
        out.append(
            {
                "query": "What does the text say?",
                "chunks": [
                    {"text": c, "url": f"https://example.org/doc{i}/{j}"}
                    for j, c in enumerate(chunks)
                ],
                "response": response,
            }
        )
    return out


def stats(latencies: list[float], seconds: float, statuses: dict[str, int]) -> dict[str, Any]:
    lat = sorted(latencies)
    ok = statuses.get("200", 0)
    return {
        "n": len(lat),
        "ok": ok,
        "statuses": statuses,
        "seconds": round(seconds, 3),
        "per_s": round(ok / seconds, 2) if seconds else 0.0,
        "p50_ms": round(1000 * statistics.median(lat), 2) if lat else None,
        "p95_ms": round(1000 * lat[min(len(lat) - 1, int(0.95 * len(lat)))], 2) if lat else None,
    }


def library_level(auditor: Auditor, items: list[dict[str, Any]], conc: int, n: int) -> dict:
    latencies: list[float] = []

    def one(i: int) -> None:
        p = items[i % len(items)]
        t0 = time.perf_counter()
        auditor.audit(p["query"], p["chunks"], p["response"])
        latencies.append(time.perf_counter() - t0)

    start = time.perf_counter()
    with ThreadPoolExecutor(conc) as pool:
        list(pool.map(one, range(n)))
    seconds = time.perf_counter() - start
    return stats(latencies, seconds, {"200": n})


async def http_level(
    url: str,
    headers: dict[str, str],
    items: list[dict[str, Any]],
    conc: int,
    n: int,
    limit_s: float,
) -> dict:
    latencies: list[float] = []
    statuses: dict[str, int] = {}
    retry_after_missing = 0
    deadline = time.monotonic() + limit_s
    counter = iter(range(n))
    limits = httpx.Limits(max_connections=conc, max_keepalive_connections=conc)
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=60) as c:

        async def worker() -> None:
            nonlocal retry_after_missing
            for i in counter:
                if time.monotonic() > deadline:
                    return
                t0 = time.perf_counter()
                r = await c.post("/v1/audit", json=items[i % len(items)])
                latencies.append(time.perf_counter() - t0)
                statuses[str(r.status_code)] = statuses.get(str(r.status_code), 0) + 1
                if r.status_code == 503 and not r.headers.get("Retry-After"):
                    retry_after_missing += 1

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(conc)))
        seconds = time.perf_counter() - start
    out = stats(latencies, seconds, statuses)
    out["retry_after_missing"] = retry_after_missing
    return out


async def overload_asks(url: str, headers: dict[str, str], n: int) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as c:

        async def one(i: int) -> tuple[int, str | None, float]:
            t0 = time.perf_counter()
            r = await c.post("/v1/ask", json={"question": f"Who discovered polonium? ({i})"})
            return r.status_code, r.headers.get("Retry-After"), time.perf_counter() - t0

        results = await asyncio.gather(*(one(i) for i in range(n)))
    codes: dict[str, int] = {}
    for code, _, _ in results:
        codes[str(code)] = codes.get(str(code), 0) + 1
    refused = [r for r in results if r[0] == 503]
    return {
        "requests": n,
        "statuses": codes,
        "refused_with_retry_after": sum(1 for r in refused if r[1]),
        "refused_without_retry_after": sum(1 for r in refused if not r[1]),
        "max_refusal_ms": round(1000 * max((r[2] for r in refused), default=0.0), 1),
        "other_failures": sum(v for k, v in codes.items() if k not in ("200", "503")),
    }


async def overload_ingest(url: str, headers: dict[str, str], n: int) -> dict[str, Any]:
    def doc(i: int) -> bytes:
        return (
            f"Report number {i}. The marker word is zqx{i:04d}marker. "
            f"Station {i} measured {i * 3} millimetres of rain on day {i % 28 + 1}. "
        ).encode() * 3

    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as c:
        before = await c.get("/readyz")
        chunks_before = int(
            next(x for x in before.json()["checks"] if x["name"] == "store")["detail"].split()[0]
        )

        async def one(i: int) -> tuple[int, int, str | None, dict[str, Any]]:
            files = {"files": (f"report{i}.txt", doc(i), "text/plain")}
            r = await c.post("/v1/documents", files=files)
            return i, r.status_code, r.headers.get("Retry-After"), r.json()

        sent = await asyncio.gather(*(one(i) for i in range(n)))
        accepted = [(i, body["id"]) for i, code, _, body in sent if code == 202]
        refused = [i for i, code, _, _ in sent if code == 503]
        jobs = {}
        deadline = time.monotonic() + 300
        for i, job_id in accepted:
            while True:
                job = (await c.get(f"/v1/jobs/{job_id}")).json()
                if job["state"] in ("done", "failed") or time.monotonic() > deadline:
                    jobs[i] = job
                    break
                await asyncio.sleep(0.2)
        after = await c.get("/readyz")
        chunks_after = int(
            next(x for x in after.json()["checks"] if x["name"] == "store")["detail"].split()[0]
        )

        async def found(i: int) -> bool:
            r = await c.get("/v1/search", params={"q": f"zqx{i:04d}marker", "mode": "bm25", "k": 1})
            hits = r.json()["hits"]
            return bool(hits) and f"zqx{i:04d}marker" in hits[0]["chunk"]["text"]

        accepted_found = [await found(i) for i, _ in accepted]
        refused_found = [await found(i) for i in refused]
    added_chunks = sum(o["chunks"] for j in jobs.values() for o in j["outcomes"])
    return {
        "uploads": n,
        "accepted": len(accepted),
        "refused_503": len(refused),
        "refused_with_retry_after": sum(1 for _, code, ra, _ in sent if code == 503 and ra),
        "other_failures": sum(1 for _, code, _, _ in sent if code not in (202, 503)),
        "jobs_done": sum(1 for j in jobs.values() if j["state"] == "done"),
        "jobs_failed": sum(1 for j in jobs.values() if j["state"] != "done"),
        "accepted_searchable": sum(accepted_found),
        "refused_in_store": sum(refused_found),
        "chunks_before": chunks_before,
        "chunks_after": chunks_after,
        "chunks_reported_by_jobs": added_chunks,
        "lost_or_half_written": (len(accepted) - sum(accepted_found))
        + sum(refused_found)
        + abs(chunks_after - chunks_before - added_chunks),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=300, help="Audits per level (at most).")
    ap.add_argument("--seconds", type=float, default=20.0, help="Time limit per level.")
    ap.add_argument("--overload-asks", type=int, default=24)
    ap.add_argument("--overload-audits", type=int, default=160)
    ap.add_argument("--overload-uploads", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=3, help="Runs of every level (medians kept).")
    ap.add_argument("--levels", default="1,8,32", help="Concurrency levels, comma-separated.")
    ap.add_argument("--no-overload", action="store_true", help="Skip the overload run.")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "serve_load.json")
    args = ap.parse_args()

    from typer.testing import CliRunner

    from affidavit.cli.main import app

    work = Path(tempfile.mkdtemp(prefix="serve-load-"))
    store = work / "store"
    res = CliRunner().invoke(
        app, ["ingest", str(ROOT / "sample_corpus" / "docs"), "--store", str(store)]
    )
    if res.exit_code != 0:
        sys.exit(f"ingest failed: {res.output}")
    home = work / "home"
    generate_key(home / "keys" / "signing.pem")
    token, _ = ApiKeyStore(home / "api_keys.json").create("bench", "write")
    headers = {"Authorization": f"Bearer {token}"}
    items = payloads()
    settings = load_settings()
    auditor = Auditor(settings)

    results: dict[str, Any] = {"library": {}, "http": {}, "load_average_before": os.getloadavg()}
    slow = FakeReply(content="Marie Curie discovered polonium in 1898 [1]. " * 4, delay_s=0.05)
    with FakeOpenAIServer([slow]) as llm:
        env = {
            "AFFIDAVIT_HOME": str(home),
            "AFFIDAVIT_STORE__PATH": str(store),
            "AFFIDAVIT_GENERATE__BACKEND": "openai",
            "AFFIDAVIT_GENERATE__BASE_URL": llm.url,
            "AFFIDAVIT_GENERATE__MAX_RETRIES": "0",
            "AFFIDAVIT_VERIFY__THREADS": "1",
            "AFFIDAVIT_EMBED__THREADS": "1",
            "AFFIDAVIT_SERVE__RATE_LIMIT_PER_MINUTE": "0",
            "AFFIDAVIT_SERVE__VERIFY_CONCURRENCY": "2",
            "AFFIDAVIT_SERVE__VERIFY_QUEUE": "64",
            "AFFIDAVIT_SERVE__LLM_CONCURRENCY": "1",
            "AFFIDAVIT_SERVE__LLM_QUEUE": "2",
            "AFFIDAVIT_SERVE__INGEST_QUEUE": "8",
            "AFFIDAVIT_SERVE__REQUEST_TIMEOUT_S": "60",
        }
        with ServedProcess(env, log_path=work / "serve.log") as srv:
            for p in items[:4]:  # warm both sides (first-use imports, caches)
                auditor.audit(p["query"], p["chunks"], p["response"])
                httpx.post(srv.url + "/v1/audit", json=p, headers=headers).raise_for_status()
            # the fixed cost of one loopback round trip (no body, no work, no thread hop)
            floor = []
            with httpx.Client(base_url=srv.url) as c:
                for _ in range(100):
                    t0 = time.perf_counter()
                    c.get("/healthz").raise_for_status()
                    floor.append(time.perf_counter() - t0)
            results["healthz_p50_ms"] = round(1000 * statistics.median(floor), 2)
            print(f"GET /healthz p50 {results['healthz_p50_ms']} ms (round-trip floor)")
            levels = [int(x) for x in args.levels.split(",")]
            runs: list[dict[str, Any]] = []
            for rep in range(args.repeat):
                run: dict[str, Any] = {"library": {}, "http": {}}
                for conc in levels:
                    lib = library_level(auditor, items, conc, args.requests)
                    web = asyncio.run(
                        http_level(srv.url, headers, items, conc, args.requests, args.seconds)
                    )
                    web["per_s_ratio_to_library"] = round(web["per_s"] / lib["per_s"], 3)
                    run["library"][str(conc)] = lib
                    run["http"][str(conc)] = web
                    print(
                        f"run {rep + 1} c={conc:>2}  library {lib['per_s']:>7.1f}/s "
                        f"p50 {lib['p50_ms']:>7.2f} ms p95 {lib['p95_ms']:>7.2f} ms | "
                        f"http {web['per_s']:>7.1f}/s p50 {web['p50_ms']:>7.2f} ms "
                        f"p95 {web['p95_ms']:>7.2f} ms ({web['per_s_ratio_to_library']:.2f}x) "
                        f"{web['statuses']}",
                        flush=True,
                    )
                runs.append(run)
            results["runs"] = runs
            # the headline numbers: medians over the repeats, per level
            for side in ("library", "http"):
                for conc in levels:
                    per = [r[side][str(conc)] for r in runs]
                    keys = ["per_s", "p50_ms", "p95_ms"]
                    if side == "http":
                        keys.append("per_s_ratio_to_library")
                    results[side][str(conc)] = {
                        k: round(statistics.median(x[k] for x in per), 3) for k in keys
                    }
            print("medians over", args.repeat, "runs:")
            for conc in levels:
                lib, web = results["library"][str(conc)], results["http"][str(conc)]
                print(
                    f"c={conc:>2}  library {lib['per_s']:>7.1f}/s p50 {lib['p50_ms']:>7.2f} ms "
                    f"p95 {lib['p95_ms']:>7.2f} ms | http {web['per_s']:>7.1f}/s "
                    f"p50 {web['p50_ms']:>7.2f} ms p95 {web['p95_ms']:>7.2f} ms "
                    f"({web['per_s_ratio_to_library']:.2f}x)",
                    flush=True,
                )
            if args.no_overload:
                print(json.dumps(results["http"]))
                return
            over_audits = asyncio.run(
                http_level(srv.url, headers, items, args.overload_audits, args.overload_audits, 60)
            )
            over_asks = asyncio.run(overload_asks(srv.url, headers, args.overload_asks))
            over_ingest = asyncio.run(overload_ingest(srv.url, headers, args.overload_uploads))
    results["overload"] = {
        "audits_at_concurrency": args.overload_audits,
        "audits": over_audits,
        "asks": over_asks,
        "ingest": over_ingest,
        "queues": {"verify": "2 running + 64 waiting", "llm": "1 running + 2 waiting", "ingest": 8},
    }
    print(
        "overload audits:",
        over_audits["statuses"],
        "retry-after missing:",
        over_audits["retry_after_missing"],
    )
    print("overload asks:  ", over_asks)
    print("overload ingest:", over_ingest)
    results["load_average_after"] = os.getloadavg()
    results["config"] = {
        "requests_per_level": args.requests,
        "repeats": args.repeat,
        "seconds_per_level": args.seconds,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (server and client share them)",
        "python": platform.python_version(),
        "server": "1 uvicorn worker, verify queue 2 threads",
        "command": "python benchmarks/serve_load.py",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
