"""The JSON extraction and schema subset used when a server cannot constrain output."""

from __future__ import annotations

import pytest

from affidavit.generate._json import extract_json, schema_errors

SCHEMA = {
    "type": "object",
    "properties": {
        "score": {"type": "integer", "minimum": 0, "maximum": 10},
        "label": {"enum": ["yes", "no"]},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
    },
    "required": ["score"],
    "additionalProperties": False,
}


def test_conforming_value_has_no_errors() -> None:
    assert schema_errors({"score": 7, "label": "yes", "tags": ["a"]}, SCHEMA) == []


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ({}, "missing required 'score'"),
        ({"score": 11}, "maximum"),
        ({"score": "7"}, "expected integer"),
        ({"score": True}, "expected integer"),
        ({"score": 1, "label": "maybe"}, "one of"),
        ({"score": 1, "tags": ["a", "b", "c"]}, "more than 2"),
        ({"score": 1, "tags": [3]}, "expected string"),
        ({"score": 1, "extra": 1}, "unexpected property"),
        ([1], "expected object"),
    ],
)
def test_violations_are_reported(value: object, fragment: str) -> None:
    errors = schema_errors(value, SCHEMA)
    assert any(fragment in e for e in errors), errors


def test_extract_json_variants() -> None:
    assert extract_json('{"a": 1}') == {"a": 1}
    assert extract_json('```json\n{"a": 2}\n```') == {"a": 2}
    assert extract_json('Sure! Here it is: {"a": 3} hope that helps') == {"a": 3}
    with pytest.raises(ValueError):
        extract_json("no json here")
