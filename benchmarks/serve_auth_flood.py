"""An unauthenticated flood against ``affidavit serve`` (loopback only, bounded in time):
p50/p95 of ``/healthz`` and of an authorised ``POST /v1/audit``, quiet and while 50 clients
send wrong bearer tokens for a real key id as fast as they are answered, in the same run.

Issue 25.7: with argon2id checks before any limit, 30 concurrent wrong guesses made ``/healthz``
take 2.5 s. The bar: with 50 concurrent wrong tokens, both p95s within 1.5x of the quiet run.

The flooding clients run in their own processes (``--flood-processes``, threads inside), so the
measuring client, alone in this process, never waits for them on the GIL; they stop at the end of
the measurement or after ``--seconds``, whichever comes first, and are killed if they linger.
All of them share 127.0.0.1 with the measuring client, as a flooder behind the same NAT would.
Quiet and flooded samples are taken in alternating blocks (``--blocks`` of each; the flooders
pause between flooded blocks, and a quiet block starts once the tarpit has let them all go), so
that the load of a shared machine drifting during the run falls on both sides alike. The first
flooded block starts once every flooder has been refused once (the flood's steady state).

    python benchmarks/serve_auth_flood.py [--requests 60] [--flooders 50] [--seconds 20]
    python benchmarks/serve_auth_flood.py --tarpit-s 0   # the 429 at once: what the delay buys

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
from collections import Counter
from multiprocessing import get_context
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


def measure(url: str, auth: dict[str, str], n: int, interval: float) -> dict[str, list[float]]:
    """Latencies of ``n`` of each request, alternated and ``interval`` seconds apart.

    Raises:
        RuntimeError: a measured request was not answered 200 (the bar is about served requests).
    """
    lat: dict[str, list[float]] = {"healthz": [], "audit": []}
    with httpx.Client(timeout=30) as c:
        calls = {
            "healthz": lambda: c.get(url + "/healthz"),
            "audit": lambda: c.post(url + "/v1/audit", json=AUDIT, headers=auth),
        }
        for _ in range(n):
            for name, call in calls.items():
                t = time.perf_counter()
                r = call()
                lat[name].append(time.perf_counter() - t)
                if r.status_code != 200:
                    raise RuntimeError(f"{name} answered {r.status_code}: {r.text[:200]}")
                time.sleep(interval)
    return lat


def summary(lat: list[float]) -> dict[str, Any]:
    return {
        "p50_ms": round(statistics.median(lat) * 1000, 2),
        "p95_ms": round(pct(lat, 0.95) * 1000, 2),
        "max_ms": round(max(lat) * 1000, 2),
        "n": len(lat),
    }


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) used so far by process ``pid`` and its children, from /proc:
    what the server spends, whatever else the machine is doing (0.0 where /proc is missing)."""
    total = 0.0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            for task in Path(f"/proc/{p}/task").iterdir():
                todo.extend(int(c) for c in (task / "children").read_text().split())
        except (OSError, ValueError, IndexError):
            continue
    return total


def rejections(url: str) -> dict[str, float]:
    text = httpx.get(url + "/metrics", timeout=30).text
    out = {}
    for line in text.splitlines():
        if line.startswith("affidavit_rejections_total{"):
            reason = line.split('reason="', 1)[1].split('"', 1)[0]
            out[reason] = float(line.rsplit(" ", 1)[1])
    return out


def wait_steady(url: str, flooders: int, limit: float) -> float:
    """Seconds until every flooder has been refused at least once (the flood's steady state:
    the burst of failed checks spent, each flooder in the tarpit), or ``limit``."""
    t = time.monotonic()
    while time.monotonic() - t < limit:
        seen = rejections(url)
        if seen.get("auth_tarpit", 0) + seen.get("auth_tarpit_full", 0) >= flooders:
            break
        time.sleep(0.1)
    return round(time.monotonic() - t, 2)


def flood(
    url: str, header: str, threads: int, seconds: float, go: Any, stop: Any, ready: Any, out: Any
) -> None:
    """One flooding process: ``threads`` clients sending wrong tokens back to back while ``go``
    is set, until ``stop`` or ``seconds``; puts its status counts and answer times on ``out``."""
    counts: Counter[str] = Counter()
    took: list[float] = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    made = threading.Barrier(threads + 1)

    def one() -> None:
        with httpx.Client(timeout=10) as c:
            made.wait()
            while not stop.is_set() and time.monotonic() < deadline:
                # paused: one blocking wait, no polling (a polling flooder would load the very
                # CPUs the quiet blocks are measured on); end() sets go with stop
                if not go.wait(max(0.0, deadline - time.monotonic())):
                    continue
                t = time.perf_counter()
                try:
                    r = c.get(url + "/v1/search?q=x", headers={"Authorization": header})
                    code = str(r.status_code)
                except httpx.HTTPError:
                    code = "error"
                with lock:
                    counts[code] += 1
                    took.append(time.perf_counter() - t)

    pool = [threading.Thread(target=one, daemon=True) for _ in range(threads)]
    for t in pool:
        t.start()
    made.wait()  # every client made (an SSL context each): none of that CPU in a quiet block
    ready.release()
    for t in pool:
        t.join(timeout=max(0.1, deadline - time.monotonic()) + 12)
    out.put({"by_status": dict(counts), "latencies": took})


class Flood:
    """The flooding processes: started paused, then switched on and off, always ended."""

    def __init__(self, url: str, header: str, flooders: int, processes: int, seconds: float):
        ctx = get_context("spawn")
        self.go, self.stop, self.out = ctx.Event(), ctx.Event(), ctx.Queue()
        ready = ctx.Semaphore(0)
        shares = [flooders // processes + (i < flooders % processes) for i in range(processes)]
        self.procs = [
            ctx.Process(
                target=flood,
                args=(url, header, n, seconds, self.go, self.stop, ready, self.out),
                daemon=True,
            )
            for n in shares
            if n
        ]
        self.began = time.monotonic()
        for p in self.procs:
            p.start()
        for _ in self.procs:  # imports done and threads waiting: none of it in a quiet block
            if not ready.acquire(timeout=60):
                break
        time.sleep(0.5)

    def cpu_s(self) -> float:
        return sum(cpu_s(p.pid) for p in self.procs if p.pid is not None)

    def end(self) -> dict[str, Any]:
        self.stop.set()
        self.go.set()
        counts: Counter[str] = Counter()
        took: list[float] = []
        reported = 0
        for _ in self.procs:
            try:
                got = self.out.get(timeout=20)
            except Exception:  # a process that never reported is killed below and counted
                break
            reported += 1
            counts.update(got["by_status"])
            took.extend(got["latencies"])
        killed = 0
        for p in self.procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
                p.join()
                killed += 1
        return {
            "n": sum(counts.values()),
            "by_status": dict(sorted(counts.items())),
            "p50_ms": round(statistics.median(took) * 1000, 1) if took else None,
            "processes": len(self.procs),
            "processes_reported": reported,
            "processes_killed": killed,
        }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=60, help="of each kind, quiet and flooded")
    ap.add_argument("--flooders", type=int, default=50)
    ap.add_argument("--flood-processes", type=int, default=2, help="processes the flooders share")
    ap.add_argument("--seconds", type=float, default=20.0, help="flood time limit")
    ap.add_argument("--blocks", type=int, default=4, help="quiet and flooded blocks, alternated")
    ap.add_argument(
        "--interval", type=float, default=0.02, help="seconds between measured requests"
    )
    ap.add_argument(
        "--tarpit-s", type=float, default=None, help="serve.auth_tarpit_s (default: its default)"
    )
    ap.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "results" / "serve_auth_flood.json"
    )
    args = ap.parse_args()

    from typer.testing import CliRunner

    from affidavit.cli.main import app
    from affidavit.core.settings import ServeSettings
    from affidavit.testing.fake_llm import FakeOpenAIServer, FakeReply
    from affidavit.testing.server import ServedProcess

    serve = ServeSettings(**({} if args.tarpit_s is None else {"auth_tarpit_s": args.tarpit_s}))
    per_block = [
        args.requests // args.blocks + (i < args.requests % args.blocks) for i in range(args.blocks)
    ]
    lat: dict[str, dict[str, list[float]]] = {
        side: {"healthz": [], "audit": []} for side in ("quiet", "flooded")
    }
    blocks: list[dict[str, Any]] = []
    # wall seconds, CPU seconds: of the server in quiet and flooded blocks, of the flooding
    # processes in flooded blocks (on this machine they share its cores with the server)
    cpu = {side: [0.0, 0.0] for side in ("quiet", "flooded", "flooders")}
    load_before = os.getloadavg()
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
                "AFFIDAVIT_SERVE__AUTH_TARPIT_S": str(serve.auth_tarpit_s),
            }
            with ServedProcess(env) as srv:
                if srv.proc is None:
                    raise RuntimeError("the server process did not start")
                pid = srv.proc.pid
                measure(srv.url, auth, 5, 0.0)  # warm-up (the key is checked once, then known)
                wrong = f"Bearer afd_{key_id}_" + "x" * 43
                flood_ = Flood(
                    srv.url, wrong, args.flooders, max(1, args.flood_processes), args.seconds
                )
                steady = None
                try:
                    for n in per_block:
                        flood_.go.clear()
                        if steady is not None:  # let the tarpit answer every held flooder
                            time.sleep(serve.auth_tarpit_s + 0.3)
                        t, c = time.monotonic(), cpu_s(pid)
                        q = measure(srv.url, auth, n, args.interval)
                        _add(lat["quiet"], q)
                        _add_cpu(cpu["quiet"], time.monotonic() - t, cpu_s(pid) - c)
                        flood_.go.set()
                        if steady is None:
                            steady = wait_steady(srv.url, args.flooders, args.seconds / 2)
                        else:
                            time.sleep(0.3)
                        t, c, fc = time.monotonic(), cpu_s(pid), flood_.cpu_s()
                        f = measure(srv.url, auth, n, args.interval)
                        _add(lat["flooded"], f)
                        _add_cpu(cpu["flooded"], time.monotonic() - t, cpu_s(pid) - c)
                        _add_cpu(cpu["flooders"], time.monotonic() - t, flood_.cpu_s() - fc)
                        blocks.append(
                            {
                                "n": n,
                                "flooded_s": round(time.monotonic() - t, 2),
                                "max_ms": {
                                    side: {k: round(max(v) * 1000, 1) for k, v in got.items()}
                                    for side, got in (("quiet", q), ("flooded", f))
                                },
                            }
                        )
                    # a flood that hit its time limit mid-measurement measured less than a flood
                    covered = time.monotonic() - flood_.began < args.seconds
                finally:
                    sent = flood_.end()
                refused = rejections(srv.url)
    quiet = {k: summary(v) for k, v in lat["quiet"].items()}
    flooded = {k: summary(v) for k, v in lat["flooded"].items()}
    ratio = {k: round(flooded[k]["p95_ms"] / max(quiet[k]["p95_ms"], 1e-6), 2) for k in quiet}
    result = {
        "benchmark": "serve_auth_flood",
        "command": " ".join(["python", *sys.argv]),
        "flooders": args.flooders,
        "flood_processes": sent["processes"],
        "serve": {
            "auth_attempts_per_minute": serve.auth_attempts_per_minute,
            "auth_attempts_burst": serve.auth_attempts_burst,
            "auth_tarpit_s": serve.auth_tarpit_s,
            "auth_tarpit_max_held": serve.auth_tarpit_max_held,
        },
        "quiet": quiet,
        "flooded": flooded,
        "blocks": blocks,
        # CPU per wall second while measured: the server's own cost of the flood, which the load
        # of a shared machine moves far less than it moves a p95 of 60 requests
        "cpu_ms_per_s": {
            side: round(1000 * used / max(wall, 1e-9), 1) for side, (wall, used) in cpu.items()
        },
        "interval_s": args.interval,
        "flood_steady_after_s": steady,
        "wrong_token_requests": sent,
        "server_rejections": refused,
        "p95_ratio_flooded_over_quiet": ratio,
        "bar": "p95 of /healthz and of authorised audits within 1.5x of the quiet run",
        "flood_covered_the_measurement": covered,
        "meets_bar": covered and all(v <= 1.5 for v in ratio.values()),
        "cpu_count": os.cpu_count(),
        "load_average_1min": {
            "before": round(load_before[0], 2),
            "after": round(os.getloadavg()[0], 2),
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    print(f"{'p95 ms':<8}{'quiet':>9}{'flooded':>9}{'ratio':>7}")
    for k in quiet:
        print(f"{k:<8}{quiet[k]['p95_ms']:>9.2f}{flooded[k]['p95_ms']:>9.2f}{ratio[k]:>7.2f}")
    print(f"CPU ms per s (server quiet, flooded; the flooders): {result['cpu_ms_per_s']}")
    print(
        f"wrong-token requests: {sent['n']} {sent['by_status']}; meets bar: {result['meets_bar']}"
    )


def _add_cpu(into: list[float], wall: float, used: float) -> None:
    into[0] += wall
    into[1] += used


def _add(into: dict[str, list[float]], got: dict[str, list[float]]) -> None:
    for k, v in got.items():
        into[k].extend(v)


if __name__ == "__main__":
    main()
