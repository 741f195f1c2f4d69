"""kill -9 at random points of a sharded ``affidavit check``, at least 50 times: after each kill
the state left on disk resumes to exactly the uninterrupted run's output (issue 26, "How it is
tested").

One chain of real ``affidavit check --engine local`` processes works on one output: each is
started where the last was killed (so resumes are themselves killed, and a run killed once its
output was whole is started again over it). After every kill the folder is copied aside and resumed
there to completion: exit code 0, the output byte for byte the uninterrupted run's (the join is
in input order, see ``affidavit.batch.shards``), and nothing beside it but the run lock.

The cascade is ``checks`` (the typed consistency checks, no model): what is under test is the
shard, join and resume machinery, which is the same for every cascade, and without model time a
larger share of the random kill points falls on shard writes, fsyncs and the join, where a crash
can do damage. Small shards (5 lines) make many of those points.
"""

from __future__ import annotations

import json
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from affidavit.cli.main import app

pytestmark = [pytest.mark.integration, pytest.mark.slow]

KILLS = 50
ROWS = 240
SHARD = 5
SHARDS = -(-ROWS // SHARD)
CHILD = "import sys; from affidavit.cli.main import main; sys.argv[0] = 'affidavit'; main()"


def _rows() -> str:
    lines = []
    for i in range(ROWS):
        year = 1800 + i % 200
        lines.append(
            json.dumps(
                {
                    "id": f"c{i:04d}",
                    "claim": f"Bridge {i} opened in {year}. It is {i % 90 + 10} metres long.",
                    "evidence": [
                        f"Bridge {i} crosses river {i % 7}. It opened in {year + i % 3}.",
                        f"It is {i % 90 + 10 + i % 2} metres long.",
                    ],
                }
            )
        )
    return "\n".join(lines) + "\n"


def _args(src: Path, out: Path) -> list[str]:
    return [
        "check",
        str(src),
        "--output",
        str(out),
        "--engine",
        "local",
        "--shard-size",
        str(SHARD),
        "--cascade",
        "checks",
    ]


def _start(src: Path, out: Path) -> tuple[subprocess.Popen[bytes], float]:
    """Start a child and wait until it holds the run lock (its pid in ``.OUT.lock``): from then
    on it is past its imports and working on the output."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, *_args(src, out)],
        cwd=src.parent,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    lock = out.with_name(f".{out.name}.lock")
    while proc.poll() is None:
        try:
            if lock.read_text().strip() == str(proc.pid):
                break
        except (FileNotFoundError, UnicodeDecodeError):
            pass
        time.sleep(0.002)
    return proc, time.perf_counter()


def _stage(folder: Path, out: Path) -> str:
    """Where a kill fell: among the shards, after the last one was marked done (joining or
    removing them), or before the shard folder was made or after it was gone."""
    shards = folder / f"{out.name}.shards"
    if any(folder.glob(".*.del")) or len(list(shards.glob("0*.json"))) == SHARDS:
        return "join"
    return "shards" if shards.is_dir() else "outside"


def _leftovers(folder: Path, out: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name not in {out.name, f".{out.name}.lock"})


def test_kill_9_at_random_points_of_sharded_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no affidavit.toml of the working tree decides the settings
    src = tmp_path / "in.jsonl"
    src.write_text(_rows())

    ref_dir = tmp_path / "reference"
    ref_dir.mkdir()
    ref = ref_dir / "out.jsonl"
    proc, t0 = _start(src, ref)
    # the time from the lock to the first shard written: start-up every resumed run pays again
    first_shard: float | None = None
    while proc.poll() is None:
        if first_shard is None and any(ref_dir.glob("out.jsonl.shards/0*.json")):
            first_shard = time.perf_counter() - t0
        time.sleep(0.002)
    _, err = proc.communicate()
    window = time.perf_counter() - t0  # from the lock to the end: where kills can do damage
    startup = min(first_shard if first_shard is not None else 0.0, window)
    assert proc.returncode == 0, err.decode()
    expected = ref.read_bytes()
    assert expected.count(b"\n") == ROWS
    assert _leftovers(ref_dir, ref) == []

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    out = run_dir / "out.jsonl"
    rng = random.Random(2026)
    runner = CliRunner()
    kills = finished = 0
    stages: Counter[str] = Counter()
    for attempt in range(8 * KILLS):
        # at least KILLS kills, and on until some fell among the shards and some in the join
        if kills >= KILLS and stages["shards"] > 0 and stages["join"] > 0:
            break
        # a kill point within what is left to do (a resumed run skips the finished shards)
        todo = (SHARDS + 1 - len(list(run_dir.glob("out.jsonl.shards/0*.json")))) / (SHARDS + 1)
        proc, t0 = _start(src, out)
        # (a resumed run pays its start-up again before it reaches the shards that are left:
        # without it the last shards' kill points all fall before any progress, none in the join)
        left = startup + (window - startup) * todo
        # one kill in three aims at the end of what is left (the last shard, the join, the
        # clean-up): a short stretch of the run that uniform points would rarely hit
        delay = left * (rng.uniform(0.7, 1.1) if rng.random() < 1 / 3 else rng.uniform(0.0, 1.0))
        time.sleep(max(0.0, delay - (time.perf_counter() - t0)))
        proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate()
        if proc.returncode != -signal.SIGKILL:  # it finished first: the run is whole
            assert proc.returncode == 0, (attempt, err.decode())
            assert out.read_bytes() == expected, attempt
            assert _leftovers(run_dir, out) == [], attempt
            finished += 1
            continue
        kills += 1
        stages[_stage(run_dir, out)] += 1
        # resume a copy of what the kill left; the chain goes on from the original
        copy_dir = tmp_path / f"resume{attempt}"
        shutil.copytree(run_dir, copy_dir)
        copy = copy_dir / "out.jsonl"
        result = runner.invoke(app, _args(src, copy))
        assert result.exit_code == 0, (attempt, result.output)
        assert copy.read_bytes() == expected, attempt
        assert _leftovers(copy_dir, copy) == [], attempt
        shutil.rmtree(copy_dir)

    assert kills >= KILLS, (kills, finished)
    # the kills fell both among the shards and after the last one (in the join and clean-up)
    assert stages["shards"] > 0 and stages["join"] > 0, stages
    # the chain's last killed state, finished by a real process
    proc = subprocess.Popen([sys.executable, "-c", CHILD, *_args(src, out)], cwd=tmp_path)
    assert proc.wait() == 0
    assert out.read_bytes() == expected
    assert _leftovers(run_dir, out) == []
