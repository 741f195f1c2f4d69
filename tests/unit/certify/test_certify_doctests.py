"""The examples in the public docstrings run."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "affidavit.policy",
    "affidavit.policy.presets",
    "affidavit.policy.render",
    "affidavit.certify",
    "affidavit.certify.canonical",
    "affidavit.certify.keys",
    "affidavit.certify.certificate",
    "affidavit.certify.verify",
    "affidavit.certify.replay",
    "affidavit.certify.schemas",
    "affidavit.core.policy",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0
