"""The async and Python API as a user's script meets it (issue 28)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

UNGUARDED = """
import asyncio
import affidavit

chunks = [{{"text": "Rome is in Italy. " * {repeat}}}]
r = asyncio.run(affidavit.aaudit("q", chunks, "Rome is in Italy."))
print("RESULT", r.compliance_rate)
"""


def _run_script(tmp_path: Path, repeat: int) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "unguarded.py"
    script.write_text(UNGUARDED.format(repeat=repeat), encoding="utf-8")
    env = {**os.environ, "AFFIDAVIT_HOME": str(tmp_path / "home"), "AFFIDAVIT_MAX_WORKERS": "2"}
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_script_without_a_main_guard_audits_small_inputs(tmp_path: Path) -> None:
    """A spawned worker re-imported the unguarded script and failed ("An attempt has been made
    to start a new process before the current process has finished its bootstrapping phase");
    a small audit needs no worker process at all."""
    p = _run_script(tmp_path, repeat=1)
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("RESULT 1.0") == 1, p.stdout
    assert "bootstrapping" not in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_a_script_without_a_main_guard_is_told_what_to_do(tmp_path: Path) -> None:
    """A large audit uses worker processes; when they find the script unguarded the message
    names the fix, and the audit still completes in the main process."""
    p = _run_script(tmp_path, repeat=2000)
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("RESULT 1.0") == 1, p.stdout
    assert 'if __name__ == "__main__":' in p.stderr, p.stderr
    assert "bootstrapping phase" not in p.stderr, p.stderr


PUBLIC_MODULES = (
    "affidavit",
    "affidavit.audit",
    "affidavit.certify",
    "affidavit.certify.keys",
    "affidavit.generate",
    "affidavit.pipeline.build",
    "affidavit.verify",
)


def _public_functions() -> list[object]:
    import importlib
    import inspect

    found: list[object] = []
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        names = getattr(module, "__all__", None) or [
            n for n in vars(module) if not n.startswith("_")
        ]
        for attr in names:
            obj = getattr(module, attr, None)
            if inspect.isfunction(obj) and obj.__module__.startswith("affidavit"):
                found.append(obj)
            elif inspect.isclass(obj) and obj.__module__.startswith("affidavit"):
                found += [
                    f
                    for n, f in vars(obj).items()
                    if inspect.isfunction(f) and (n == "__init__" or not n.startswith("_"))
                ]
    return found


def test_every_public_path_parameter_takes_a_str() -> None:
    """Issue 28: ``aask(..., store_path="/path")`` raised TypeError (str / str); every path
    parameter of the public API is annotated ``str | Path`` (and converts)."""
    import inspect

    narrow = []
    for fn in _public_functions():
        for p in inspect.signature(fn).parameters.values():  # type: ignore[arg-type]
            ann = p.annotation if isinstance(p.annotation, str) else repr(p.annotation)
            if "Path" in ann and "str" not in ann:
                narrow.append(f"{fn.__module__}.{fn.__qualname__}({p.name}: {ann})")  # type: ignore[attr-defined]
    assert sorted(set(narrow)) == []


def test_aask_takes_a_str_store_path(tmp_path: Path) -> None:
    import asyncio

    import affidavit
    from affidavit.core.errors import AffidavitError
    from affidavit.core.settings import Settings

    settings = Settings(home=tmp_path / "home")
    with pytest.raises(AffidavitError) as info:  # no store there: a typed error, not TypeError
        asyncio.run(affidavit.aask("q", settings=settings, store_path=str(tmp_path / "none")))
    assert "store" in info.value.message
