"""Calibration of verifier probabilities (fitted on dev data only) and threshold presets.

* `TemperatureScaler`: one temperature for the 3-way logits, fitted by minimising the
  negative log-likelihood (binary "not entailed" rows count p_neutral + p_contradict).
* `IsotonicCalibrator`: a monotone map of p_entail, fitted by pool-adjacent-violators
  (numpy only), applied by linear interpolation between the fitted steps.
* `preset_thresholds`: tau_entail / tau_contradict for the policy presets; the packaged
  model's ``config.json`` may carry dev-tuned values, which then replace the defaults.

Fit these on a dev split (``training/data/dev.jsonl`` or your own), never on the rows you report::

    python -m affidavit.verify.calibration --dev training/data/dev.jsonl --out calibration.json

then set ``verify.calibration_path`` to the file: the cross-encoder maps p_entail through it.

Examples:
    >>> import numpy as np
    >>> iso = IsotonicCalibrator().fit(np.array([0.1, 0.4, 0.35, 0.8]), np.array([0, 0, 1, 1]))
    >>> [round(float(x), 3) for x in iso.transform(np.array([0.1, 0.375, 0.9]))]
    [0.0, 0.5, 1.0]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from affidavit.core.errors import ConfigError, VerificationError
from affidavit.verify.crossencoder import OnnxCrossEncoder, packaged_model_dir, softmax
from affidavit.verify.isotonic import IsotonicCalibrator, apply_isotonic, load_isotonic

__all__ = [
    "IsotonicCalibrator",
    "TemperatureScaler",
    "apply_isotonic",
    "fit_on_dev",
    "load_isotonic",
    "preset_thresholds",
]

Preset = Literal["default", "strict", "mixed"]

# tau_entail, tau_contradict. strict: fewer claims shown as verified, more blocked as contradicted
PRESETS: dict[str, tuple[float, float]] = {
    "default": (0.5, 0.5),
    "strict": (0.8, 0.3),
    "mixed": (0.5, 0.5),
}

# 3-way label ids used by the fitters; "not_entail" (binary sets) is id 3
LABEL_IDS = {"entail": 0, "neutral": 1, "contradict": 2, "not_entail": 3}


def preset_thresholds(
    name: str, model_config: Mapping[str, Any] | None = None
) -> tuple[float, float]:
    """(tau_entail, tau_contradict) of a preset, dev-tuned values of the model when it has them.

    Raises:
        ConfigError: unknown preset (the message lists the valid ones).
    """
    if name not in PRESETS:
        raise ConfigError(f"unknown threshold preset {name!r}; valid: {sorted(PRESETS)}")
    tau_e, tau_c = PRESETS[name]
    th = (model_config or {}).get("thresholds") or {}
    if isinstance(th, Mapping):
        key = "tau_entail_strict" if name == "strict" else "tau_entail"
        if isinstance(th.get(key), int | float):
            tau_e = float(th[key])
        if isinstance(th.get("tau_contradict"), int | float) and name != "strict":
            tau_c = float(th["tau_contradict"])
    return tau_e, tau_c


def effective_policy(settings: Any) -> Any:
    """The policy thresholds to verify with (every command and the library use this one rule).

    Explicit settings win (``policy.tau_entail`` / ``policy.tau_contradict`` from TOML,
    environment or arguments); otherwise the ``policy.preset`` with the verifier model's
    dev-tuned values from its ``config.json`` (the combiner's threshold when the model ships one).

    Args:
        settings: the whole `Settings`.

    Returns:
        A ``PolicySettings`` copy with the thresholds filled in.
    """
    from affidavit.core.errors import AffidavitError
    from affidavit.verify.crossencoder import read_config

    pol = settings.policy
    if {"tau_entail", "tau_contradict"} & pol.model_fields_set:
        return pol
    try:
        extra = read_config(settings.verify.model_path or packaged_model_dir()).model_extra or {}
    except AffidavitError:
        return pol
    tau_e, tau_c = preset_thresholds(pol.preset, extra)
    return pol.model_copy(update={"tau_entail": tau_e, "tau_contradict": tau_c})


def nll(logits: np.ndarray, labels: Sequence[int], temperature: float) -> float:
    """Mean negative log-likelihood of 3-way logits at a temperature (label 3 = not entailed)."""
    p = softmax(logits, temperature)
    y = np.asarray(labels)
    picked = np.where(y == 3, p[:, 1] + p[:, 2], p[np.arange(len(y)), np.minimum(y, 2)])
    return float(-np.mean(np.log(np.clip(picked, 1e-12, 1.0))))


class TemperatureScaler:
    """Temperature scaling of 3-way logits."""

    def __init__(self, temperature: float = 1.0) -> None:
        self.temperature = temperature

    def fit(self, logits: np.ndarray, labels: Sequence[int]) -> TemperatureScaler:
        """Fit T in [0.05, 20] by a log-spaced grid then golden-section refinement of the NLL.

        Raises:
            VerificationError: no rows, or logits and labels of different lengths.
        """
        if len(labels) == 0 or len(labels) != len(logits):
            raise VerificationError("temperature fit needs as many labels as logit rows (>0)")
        grid = np.exp(np.linspace(np.log(0.05), np.log(20.0), 121))
        losses = [nll(logits, labels, t) for t in grid]
        i = int(np.argmin(losses))
        lo, hi = np.log(grid[max(0, i - 1)]), np.log(grid[min(len(grid) - 1, i + 1)])
        g = (np.sqrt(5) - 1) / 2
        a, b = hi - g * (hi - lo), lo + g * (hi - lo)
        for _ in range(40):
            if nll(logits, labels, float(np.exp(a))) < nll(logits, labels, float(np.exp(b))):
                hi = b
            else:
                lo = a
            a, b = hi - g * (hi - lo), lo + g * (hi - lo)
        self.temperature = float(np.exp((lo + hi) / 2))
        return self

    def transform(self, logits: np.ndarray) -> np.ndarray:
        """Calibrated 3-way probabilities."""
        return softmax(logits, self.temperature)


def fit_on_dev(
    model: OnnxCrossEncoder, rows: Sequence[Mapping[str, Any]], *, source: str = ""
) -> dict[str, Any]:
    """Fit temperature and isotonic maps on dev rows ``{"claim", "evidence", "label"}``.

    The model's own temperature is ignored while fitting (raw logits), so the result is a full
    replacement: ``temperature`` for 3-way scores and ``isotonic`` for p_entail after it.
    """
    pairs = [(str(r["claim"]), str(r["evidence"])) for r in rows]
    all_labels = [LABEL_IDS[str(r["label"])] for r in rows]
    kept: list[int] = []
    chunks: list[np.ndarray] = []
    for s in range(0, len(pairs), model.batch_size):
        idx = list(range(s, min(len(pairs), s + model.batch_size)))
        try:
            chunks.append(model.logits([pairs[i] for i in idx])[0])
            kept += idx
        except ValueError:
            # a claim too long to check: score the batch pair by pair and leave it out (counted)
            for i in idx:
                try:
                    chunks.append(model.logits([pairs[i]])[0])
                    kept.append(i)
                except ValueError:
                    continue
    if not kept:
        raise VerificationError("no dev row could be scored")
    logits = np.concatenate(chunks)
    labels = [all_labels[i] for i in kept]
    scaler = TemperatureScaler().fit(logits, labels)
    p = softmax(logits, scaler.temperature)
    y = np.array([lab == 0 for lab in labels], dtype=np.float64)
    iso = IsotonicCalibrator().fit(p[:, 0], y)
    return {
        "method": "temperature + isotonic(p_entail)",
        "temperature": scaler.temperature,
        "nll_before": nll(logits, labels, model.temperature),
        "nll_after": nll(logits, labels, scaler.temperature),
        "isotonic": iso.to_dict(),
        "dev_rows": len(kept),
        "dev_rows_skipped": len(rows) - len(kept),
        "dev_source": source,
        "model_sha256": model.sha256,
    }


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m affidavit.verify.calibration``: fit on dev JSONL, write the calibration."""
    ap = argparse.ArgumentParser(description="Fit verifier calibration on dev data only.")
    ap.add_argument("--dev", type=Path, required=True, help="dev JSONL: claim, evidence, label")
    ap.add_argument("--model-dir", type=Path, default=packaged_model_dir())
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--limit", type=int, default=None, help="first N dev rows")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    rows = []
    with args.dev.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rows.append(json.loads(line))
            if args.limit and len(rows) >= args.limit:
                break
    model = OnnxCrossEncoder(args.model_dir, threads=args.threads)
    result = fit_on_dev(model, rows, source=str(args.dev))
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "isotonic"}, indent=1))


if __name__ == "__main__":
    main()
