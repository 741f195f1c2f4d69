"""JSON output helpers shared by the backends: extract a JSON value from text, check a schema.

The core install has no ``jsonschema``; the generators only need the subset of JSON Schema that
structured-output prompts use (type, properties, required, additionalProperties, enum, const,
minimum/maximum, minLength/maxLength, items, minItems/maxItems, anyOf), checked here.
"""

from __future__ import annotations

import json
from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def schema_errors(value: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """Return the ways ``value`` breaks ``schema`` (empty when it conforms to the subset)."""
    errors: list[str] = []
    if "anyOf" in schema:
        if all(schema_errors(value, s, path) for s in schema["anyOf"]):
            errors.append(f"{path}: matches none of anyOf")
        return errors
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: must be {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: must be one of {schema['enum']!r}")
    declared = schema.get("type")
    if declared is not None:
        names = declared if isinstance(declared, list) else [declared]
        ok = False
        for name in names:
            kinds = _TYPES.get(name, ())
            # bool is an int in Python but not in JSON Schema
            if isinstance(value, bool) and name in ("integer", "number"):
                continue
            if isinstance(value, kinds) or (
                name == "integer" and isinstance(value, float) and value.is_integer()
            ):
                ok = True
        if not ok:
            return [f"{path}: expected {declared}, got {type(value).__name__}"]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: {value} < minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: {value} > maximum {schema['maximum']}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(f"{path}: shorter than {schema['minLength']}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{path}: longer than {schema['maxLength']}")
    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{path}: missing required {key!r}")
        for key, item in value.items():
            if key in props:
                errors.extend(schema_errors(item, props[key], f"{path}.{key}"))
            elif schema.get("additionalProperties") is False:
                errors.append(f"{path}: unexpected property {key!r}")
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(f"{path}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: more than {schema['maxItems']} items")
        if isinstance(schema.get("items"), dict):
            for i, item in enumerate(value):
                errors.extend(schema_errors(item, schema["items"], f"{path}[{i}]"))
    return errors


def extract_json(text: str) -> Any:
    """Parse the JSON value in ``text``: the whole text, a fenced block, or the first {...}/[...].

    Raises:
        ValueError: no JSON value could be parsed.
    """
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.strip("`")
        if stripped.lower().startswith("json"):
            stripped = stripped[4:]
        stripped = stripped.strip()
    try:
        return json.loads(stripped)
    except ValueError:
        pass
    decoder = json.JSONDecoder()
    for i, ch in enumerate(stripped):
        if ch in "{[":
            try:
                value, _ = decoder.raw_decode(stripped[i:])
            except ValueError:
                continue
            return value
    raise ValueError(f"no JSON value in model output: {text[:120]!r}")


def schema_instruction(schema: dict[str, Any]) -> str:
    """The system instruction used when a server cannot constrain output to a schema."""
    return (
        "Reply with one JSON value only, no prose and no code fence, matching this JSON Schema:\n"
        + json.dumps(schema, separators=(",", ":"))
    )
