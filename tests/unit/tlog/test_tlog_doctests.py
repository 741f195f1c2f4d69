"""The examples in the tlog docstrings run."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "affidavit.tlog.merkle",
    "affidavit.tlog.note",
    "affidavit.tlog.store",
    "affidavit.tlog.certificates",
    "affidavit.tlog.monitor",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0
