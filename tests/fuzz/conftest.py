"""Fixtures of the fuzzing suite; strategies and helpers live in fuzzkit.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from fuzzkit import clean_env


@pytest.fixture
def fuzz_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return clean_env(tmp_path, monkeypatch)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/fuzz/" in str(item.fspath):
            item.add_marker(pytest.mark.fuzz)
