"""The verify stage: claim verification against evidence (typed checks, cross-encoder, cascade).

Public entry points (imported lazily, so ``import affidavit.verify`` stays light):

* `ClaimCascade`: the ClaimVerifier (evidence selection, cascade,
  minimal sufficient evidence, fail closed).
* `OnnxCrossEncoder` and
  `load_cross_encoder`: the packaged ONNX model.
* `LLMJudge`, `load_external`.

Examples:
    >>> from affidavit.verify import ClaimCascade  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ClaimCascade": "affidavit.verify.cascade",
    "OnnxCrossEncoder": "affidavit.verify.crossencoder",
    "load_cross_encoder": "affidavit.verify.crossencoder",
    "LLMJudge": "affidavit.verify.llm_judge",
    "load_external": "affidavit.verify.external",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'affidavit.verify' has no attribute {name!r}")
