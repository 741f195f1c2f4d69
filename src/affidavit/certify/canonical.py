"""Canonical JSON (RFC 8785, the JSON Canonicalization Scheme) and strict JSON reading.

Signatures are computed over these bytes, so two parties that hold the same JSON value always
sign and check the same bytes, whatever the key order, whitespace or float spelling of a file.

Examples:
    >>> canonical_bytes({"b": 1.0, "a": [0.1, "é"]})
    b'{"a":[0.1,"\\xc3\\xa9"],"b":1}'
"""

from __future__ import annotations

import json
from typing import Any

import rfc8785

from affidavit.core.errors import CertificateError, InputError
from affidavit.core.limits import no_duplicate_keys

__all__ = ["canonical_bytes", "loads_strict"]


def canonical_bytes(value: Any) -> bytes:
    """RFC 8785 canonical UTF-8 bytes of a JSON value (sorted keys, no whitespace).

    Raises:
        CertificateError: the value is not representable (NaN, infinity, lone surrogate,
            integer beyond IEEE 754 double precision, non-JSON type).
    """
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise CertificateError(f"value has no canonical JSON form: {exc}") from exc


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def loads_strict(text: str | bytes, *, source: str | None = None) -> Any:
    """Parse JSON, refusing duplicate keys and NaN/Infinity (both could hide what was signed).

    Raises:
        InputError: not valid JSON, or a duplicate key or non-finite number.
    """
    try:
        return json.loads(text, object_pairs_hook=no_duplicate_keys, parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        where = f"{source}: " if source else ""
        raise InputError(f"{where}not valid JSON ({exc})", source=source) from exc
