"""JSON Schemas of every public contract, and validation of a JSON file against one.

The contracts are discovered, not listed: every frozen pydantic model defined in a module of
``affidavit.core`` (``types``, ``certificate``, ``policy``, ``report``... whatever exists).

Examples:
    >>> "Certificate" in contracts() and "Verdict" in contracts()
    True
    >>> validate_json('{"text": "x", "url": null}', "Chunk")
    []
"""

from __future__ import annotations

import importlib
import inspect
import json
import logging
import pkgutil
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

import affidavit.core
from affidavit.core.errors import InputError

logger = logging.getLogger(__name__)

__all__ = ["contracts", "export_schemas", "schema_of", "validate_json"]


def contracts() -> dict[str, type[BaseModel]]:
    """Every frozen pydantic model defined in ``affidavit.core``, by class name."""
    found: dict[str, type[BaseModel]] = {}
    for info in sorted(pkgutil.iter_modules(affidavit.core.__path__), key=lambda i: i.name):
        try:
            module = importlib.import_module(f"affidavit.core.{info.name}")
        except ImportError as exc:
            logger.warning("contracts of affidavit.core.%s skipped: %s", info.name, exc)
            continue
        for name, obj in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(obj, BaseModel)
                and obj.__module__ == module.__name__
                and obj.model_config.get("frozen")
                and not name.startswith("_")
                and name != "Frozen"
            ):
                if name in found:
                    # two modules define the same name: keep both, the later one qualified
                    name = f"{info.name}.{name}"
                found[name] = obj
    return dict(sorted(found.items()))


def _lookup(name: str) -> type[BaseModel]:
    table = contracts()
    if name not in table:
        raise InputError(f"unknown schema {name!r}; valid schemas: {', '.join(table)}", source=name)
    return table[name]


def schema_of(name: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12, as pydantic writes it) of one contract.

    Raises:
        InputError: unknown name (the message lists the valid ones).
    """
    model = _lookup(name)
    schema = model.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema.setdefault("$id", f"https://affidavit.dev/schemas/{name}.json")
    return schema


def export_schemas(directory: Path | str) -> list[Path]:
    """Write ``<Name>.json`` for every contract into ``directory``; returns the files written.

    Raises:
        InputError: the directory cannot be created or written.
    """
    directory = Path(directory)
    written = []
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for name in contracts():
            path = directory / f"{name}.json"
            path.write_text(
                json.dumps(schema_of(name), indent=2, sort_keys=True, ensure_ascii=False) + "\n",
                encoding="utf-8",
            )
            written.append(path)
    except OSError as exc:
        raise InputError(
            f"cannot write schemas to {directory}: {exc.strerror or exc}", source=str(directory)
        ) from exc
    return written


def validate_json(text: str | bytes, name: str) -> list[str]:
    """Validate a JSON document against a contract; returns the errors (empty when valid).

    Validation is strict: no unknown field, no coercion of types (a string is not a number).

    Raises:
        InputError: unknown schema name.
    """
    model = _lookup(name)
    try:
        model.model_validate_json(text, strict=True)
    except ValidationError as exc:
        errors = []
        for e in exc.errors():
            loc = ".".join(str(x) for x in e["loc"]) or "(root)"
            errors.append(f"{loc}: {e['msg']}")
        return errors
    return []
