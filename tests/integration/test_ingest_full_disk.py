"""A full disk during ingest stops the run (issue 26.8): exit 2 and one line, what was stored
stays whole (store check passes, nothing is pruned), and a rerun once there is room ends where
an uninterrupted run does.

Before, every remaining document was embedded and retried one by one, each a failure line, and
the run ended with exit 1 as if those files were bad. Two real full disks: a file-size limit
(writes past it fail with EFBIG; SQLite says "disk I/O error") and, where this machine lets an
unprivileged user mount one, a small tmpfs (ENOSPC; "database or disk is full").
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from affidavit.store.local import LocalStore

pytestmark = pytest.mark.integration

CLI = [sys.executable, "-m", "affidavit.cli.main"]


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("AFFIDAVIT_")}
    return {
        **env,
        "OMP_NUM_THREADS": "1",
        "AFFIDAVIT_HOME": str(tmp_path / "home"),
        "AFFIDAVIT_EMBED__BACKEND": "fake",
    }


def _docs(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    for folder, n in (("old", 3), ("new", 60)):
        (docs / folder).mkdir(parents=True)
        for i in range(n):
            (docs / folder / f"{folder}{i:02d}.txt").write_text(
                f"Bridge {folder} {i} crosses river {i % 5} near town {i * 7}. " * 60,
                encoding="utf-8",
            )
    return docs


def _records(path: Path) -> dict[str, tuple[str, int]]:
    store = LocalStore(path, read_only=True)
    try:
        return {k: (r.content_hash, r.chunks) for k, r in store.records().items()}
    finally:
        store.close()


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _tmpfs_works(where: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    where.mkdir(exist_ok=True)
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs '{where}'"],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


@pytest.mark.parametrize("disk", ["file_size_limit", "tmpfs"])
def test_a_full_disk_stops_ingest_with_exit_2_and_the_store_stays_whole(
    tmp_path: Path, disk: str
) -> None:
    docs = _docs(tmp_path)
    env = _env(tmp_path)
    # what the first run leaves, measured on this disk: the small disk has room for it (twice:
    # the database and its write-ahead log until the checkpoint) and a little more
    reference = tmp_path / "reference"
    subprocess.run(
        [*CLI, "ingest", str(docs / "old"), "--store", str(reference)], env=env, check=True
    )
    room = 2 * _size(reference) + 96 * 1024
    # the tmpfs store is gone with its mount: the run works on it and leaves a copy here
    kept = tmp_path / "kept"
    first = [*CLI, "ingest", str(docs / "old"), "--store", "{store}"]
    full = [*CLI, "ingest", str(docs), "--prune", "--store", "{store}"]

    if disk == "tmpfs":
        small = tmp_path / "small"
        if not _tmpfs_works(small):
            pytest.skip("no unprivileged mount namespace here (unshare -rm) for a small tmpfs")
        store = small / "store"
        script = (
            f"mount -t tmpfs -o size={room} tmpfs '{small}' || exit 99\n"
            + " ".join(f"'{a}'" for a in first).format(store=store)
            + f" >/dev/null 2>&1 || exit 98\nrm '{docs / 'old' / 'old00.txt'}'\n"
            + " ".join(f"'{a}'" for a in full).format(store=store)
            + f"\nrc=$?\ncp -a '{store}' '{kept}'\nexit $rc\n"
        )
        r = subprocess.run(
            ["unshare", "-rm", "sh", "-c", script],
            capture_output=True,
            env=env,
            timeout=300,
            check=False,
        )
        reason = "database or disk is full"
    else:
        store = kept
        subprocess.run([a.format(store=store) for a in first], env=env, check=True)
        (docs / "old" / "old00.txt").unlink()
        limit = room

        def small_disk() -> None:
            # Python ignores SIGXFSZ: a write past the limit fails with EFBIG
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        r = subprocess.run(
            [a.format(store=store) for a in full],
            capture_output=True,
            env=env,
            preexec_fn=small_disk,
            timeout=300,
            check=False,
        )
        reason = "disk I/O error"

    out, err = r.stdout.decode(), r.stderr.decode()
    lines = [line for line in err.splitlines() if line.strip()]
    assert r.returncode == 2, (r.returncode, out[-2000:], err[-2000:])
    assert len(lines) == 1 and lines[0].startswith("error:"), err[-2000:]
    assert reason in err and "stopped" in err and "internal error" not in err
    assert "failed" not in out  # no failure line per remaining document

    # what was stored stays whole: it checks clean, the first run's documents are all there
    # (the stopped run pruned nothing, not even the file that vanished)
    check = subprocess.run([*CLI, "store", "check", "--store", str(kept)], env=env, check=False)
    assert check.returncode == 0
    stored = _records(kept)
    assert _records(reference).items() <= stored.items()
    assert len(stored) < 63

    # with room again the same run ends where an uninterrupted one does
    again = subprocess.run(
        [*CLI, "ingest", str(docs), "--prune", "--store", str(kept)],
        capture_output=True,
        env=env,
        check=False,
    )
    assert again.returncode == 0, again.stderr.decode()[-2000:]
    whole = tmp_path / "whole"
    subprocess.run([*CLI, "ingest", str(docs), "--store", str(whole)], env=env, check=True)
    assert _records(kept) == _records(whole)
    assert subprocess.run([*CLI, "store", "check", "--store", str(kept)], env=env).returncode == 0


def test_a_full_disk_stops_ingest_into_qdrant_local_mode_too(tmp_path: Path) -> None:
    """Qdrant's local mode writes through its own SQLite file: a full disk there stopped nothing
    either (each remaining document failed alone, exit 1)."""
    pytest.importorskip("qdrant_client")
    from affidavit.store.qdrant import QdrantStore

    docs = _docs(tmp_path)
    env = {**_env(tmp_path), "AFFIDAVIT_STORE__BACKEND": "qdrant"}
    store = tmp_path / "q"
    first = [*CLI, "ingest", str(docs / "old"), "--store", str(store)]
    subprocess.run(first, env=env, check=True, capture_output=True)
    stored_before = {k: r.content_hash for k, r in QdrantStore(path=store).records().items()}
    limit = _size(store) + 96 * 1024

    def small_disk() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    r = subprocess.run(
        [*CLI, "ingest", str(docs), "--prune", "--store", str(store)],
        capture_output=True,
        env=env,
        preexec_fn=small_disk,
        timeout=300,
        check=False,
    )
    err = r.stderr.decode()
    lines = [line for line in err.splitlines() if line.strip()]
    assert r.returncode == 2, (r.stdout.decode()[-2000:], err[-2000:])
    assert len(lines) == 1 and "disk I/O error" in err and "stopped" in err, err[-2000:]
    after = {k: r.content_hash for k, r in QdrantStore(path=store).records().items()}
    assert stored_before.items() <= after.items()
