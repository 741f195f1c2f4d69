"""The isotonic map of p_entail: shared by the cross-encoder (which applies it) and the
calibration module (which fits it), so neither imports the other.

Examples:
    >>> import numpy as np
    >>> iso = IsotonicCalibrator().fit(np.array([0.1, 0.4, 0.35, 0.8]), np.array([0, 0, 1, 1]))
    >>> [round(float(x), 3) for x in iso.transform(np.array([0.1, 0.375, 0.9]))]
    [0.0, 0.5, 1.0]
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from affidavit.core.errors import ModelError, VerificationError


class IsotonicCalibrator:
    """Monotone (non-decreasing) map of p_entail to the observed entailment rate."""

    def __init__(self) -> None:
        self.x: np.ndarray = np.array([0.0, 1.0])
        self.y: np.ndarray = np.array([0.0, 1.0])

    def fit(self, scores: np.ndarray, labels: np.ndarray) -> IsotonicCalibrator:
        """Pool-adjacent-violators on (score, 0/1 label) pairs.

        Raises:
            VerificationError: no rows or mismatched lengths.
        """
        s = np.asarray(scores, dtype=np.float64)
        y = np.asarray(labels, dtype=np.float64)
        if len(s) == 0 or len(s) != len(y):
            raise VerificationError("isotonic fit needs as many labels as scores (>0)")
        order = np.argsort(s, kind="mergesort")
        s, y = s[order], y[order]
        # blocks: [sum of y, count, min x, max x]
        blocks: list[list[float]] = []
        for xi, yi in zip(s, y, strict=True):
            blocks.append([yi, 1.0, xi, xi])
            while len(blocks) > 1 and (
                blocks[-2][0] / blocks[-2][1] >= blocks[-1][0] / blocks[-1][1]
            ):
                top = blocks.pop()
                blocks[-1][0] += top[0]
                blocks[-1][1] += top[1]
                blocks[-1][3] = top[3]
        xs: list[float] = []
        ys: list[float] = []
        for total, count, x0, x1 in blocks:
            v = total / count
            xs += [x0, x1] if x1 > x0 else [x0]
            ys += [v, v] if x1 > x0 else [v]
        self.x, self.y = np.array(xs), np.array(ys)
        return self

    def transform(self, scores: np.ndarray) -> np.ndarray:
        """Calibrated p_entail (linear between fitted steps, flat beyond them)."""
        result: np.ndarray = np.interp(np.asarray(scores, dtype=np.float64), self.x, self.y)
        return result

    def to_dict(self) -> dict[str, list[float]]:
        """JSON-safe fitted map."""
        return {"x": self.x.tolist(), "y": self.y.tolist()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> IsotonicCalibrator:
        """Rebuild a fitted map from `to_dict` output.

        Raises:
            ModelError: the map is malformed (lengths differ, not monotone, outside [0, 1]).
        """
        x = np.asarray(data.get("x", []), dtype=np.float64)
        y = np.asarray(data.get("y", []), dtype=np.float64)
        if len(x) == 0 or len(x) != len(y):
            raise ModelError("isotonic map needs equal-length non-empty x and y")
        if np.any(np.diff(x) < 0) or np.any(np.diff(y) < -1e-12) or y.min() < 0 or y.max() > 1:
            raise ModelError("isotonic map must be non-decreasing within [0, 1]")
        iso = cls()
        iso.x, iso.y = x, y
        return iso


def load_isotonic(path: str | Path) -> IsotonicCalibrator:
    """Read a calibration file written by `fit_on_dev`.

    Raises:
        ModelError: missing or malformed file.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ModelError(f"cannot read calibration {path}: {exc}", source=str(path)) from exc
    return IsotonicCalibrator.from_dict(data.get("isotonic", {}))


def apply_isotonic(probs: np.ndarray, iso: IsotonicCalibrator) -> np.ndarray:
    """Map column 0 (p_entail) through ``iso``; neutral/contradict rescaled to fill the rest."""
    pe = iso.transform(probs[:, 0])
    rest = probs[:, 1:].sum(axis=1, keepdims=True)
    share = np.where(rest > 0, probs[:, 1:] / np.where(rest > 0, rest, 1.0), 0.5)
    out: np.ndarray = np.concatenate([pe[:, None], share * (1.0 - pe)[:, None]], axis=1)
    return out
