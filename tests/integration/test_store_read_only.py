"""Issue 26.10: searching a store in a read-only folder needs no write access.

Tests run as root, which writes anywhere: the child process drops the capabilities that let
root ignore file permissions (``CAP_DAC_OVERRIDE``, ``CAP_DAC_READ_SEARCH``) before it starts,
so a folder of mode 0555 is read-only to it as it would be to any user.
"""

from __future__ import annotations

import ctypes
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from affidavit.cli.main import app

pytestmark = pytest.mark.integration

_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2


def _drop_root_powers() -> None:
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            os._exit(77)  # cannot drop: the test is skipped


def cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "affidavit.cli.main", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1", **env},
        preexec_fn=_drop_root_powers,
        timeout=120,
        check=False,
    )


def _chmod_tree(root: Path, read_only: bool) -> None:
    for p in [root, *root.rglob("*")]:
        if p.is_dir():
            p.chmod(0o555 if read_only else 0o755)
        else:
            p.chmod(0o444 if read_only else 0o644)


@pytest.fixture
def ro_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, dict]]:
    env = {"AFFIDAVIT_EMBED__BACKEND": "fake", "AFFIDAVIT_HOME": str(tmp_path / "home")}
    for name in list(os.environ):
        if name.upper().startswith("AFFIDAVIT_"):
            monkeypatch.delenv(name)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(5):
        (docs / f"d{i}.txt").write_text(f"Bridge {i} crosses the river. Its towers are tall.")
    st = tmp_path / "st"
    r = CliRunner().invoke(app, ["ingest", str(docs), "--store", str(st)])
    assert r.exit_code == 0, r.output
    probe = cli(["--help"], env)
    if probe.returncode == 77:
        pytest.skip("cannot drop CAP_DAC_OVERRIDE here")
    _chmod_tree(st, read_only=True)
    before = {p: p.read_bytes() for p in st.rglob("*") if p.is_file()}
    try:
        yield st, env
        assert {p: p.read_bytes() for p in st.rglob("*") if p.is_file()} == before
    finally:
        _chmod_tree(st, read_only=False)


def test_the_child_really_cannot_write(ro_store: tuple[Path, dict]) -> None:
    st, _ = ro_store
    assert stat.S_IMODE(st.stat().st_mode) == 0o555
    r = subprocess.run(
        [sys.executable, "-c", f"open({str(st / 'x')!r}, 'w')"],
        preexec_fn=_drop_root_powers,
        capture_output=True,
        check=False,
    )
    assert r.returncode != 0 and b"Permission denied" in r.stderr


@pytest.mark.parametrize("mode", ["bm25", "dense", "hybrid"])
def test_search_in_a_read_only_folder(ro_store: tuple[Path, dict], mode: str) -> None:
    st, env = ro_store
    r = cli(["search", "bridge towers", "--store", str(st), "--mode", mode, "--json"], env)
    assert r.returncode == 0, r.stderr
    hits = json.loads(r.stdout)
    assert hits and "Bridge" in hits[0]["text"]


def test_store_check_in_a_read_only_folder(ro_store: tuple[Path, dict]) -> None:
    st, env = ro_store
    r = cli(["store", "check", "--store", str(st)], env)
    assert r.returncode == 0, r.stdout + r.stderr
