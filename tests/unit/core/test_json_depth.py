"""One bounded JSON reader for every door (issue 26.6): depth is measured before parsing."""

from __future__ import annotations

import json
import time

import pytest

from affidavit.core.errors import InputError
from affidavit.core.limits import MAX_JSON_DEPTH, json_depth, loads_json


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("1", 0),
        ("[]", 1),
        ('{"a": [1, {"b": []}]}', 4),
        ('{"a": "[[[[{{{{"}', 1),  # brackets inside strings do not count
        ('["\\"[[[", [2]]', 2),  # nor after an escaped quote
        (b'{"a": [[]]}', 3),
    ],
)
def test_json_depth(text: str | bytes, depth: int) -> None:
    assert json_depth(text) == depth


def test_deep_json_is_refused_before_parsing() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(InputError, match="nested too deeply"):
        loads_json(deep, "x.json")
    ok = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert loads_json(ok, "x.json") is not None


def test_depth_scan_is_linear() -> None:
    big = json.dumps([{"text": "x" * 50, "tags": ["a", "b"]} for _ in range(100_000)])
    t0 = time.perf_counter()
    assert json_depth(big) == 3
    assert time.perf_counter() - t0 < 3
