"""``import affidavit`` imports no framework; each integration names its extra when missing."""

from __future__ import annotations

import subprocess
import sys

import pytest

from affidavit.core.errors import MissingDependencyError

HEAVY = ("langchain_core", "llama_index", "haystack", "mcp", "onnxruntime", "torch")


def test_import_affidavit_imports_no_framework() -> None:
    code = f"import sys, affidavit; print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == ""


@pytest.mark.parametrize(
    ("module", "framework", "extra"),
    [
        ("langchain", "langchain_core", "langchain"),
        ("llamaindex", "llama_index", "llamaindex"),
        ("haystack", "haystack", "haystack"),
        ("mcp", "mcp", "mcp"),
    ],
)
def test_a_missing_framework_names_the_pip_install(module: str, framework: str, extra: str) -> None:
    # a meta-path finder that refuses the framework stands in for "not installed"
    code = f"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == {framework!r} or name.startswith({framework!r} + "."):
            raise ImportError("blocked: " + name)
        return None
sys.meta_path.insert(0, Block())
try:
    import affidavit.integrations.{module}
except Exception as exc:
    print(type(exc).__name__, exc)
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.startswith(MissingDependencyError.__name__), out
    assert f'pip install "affidavit[{extra}]"' in out
