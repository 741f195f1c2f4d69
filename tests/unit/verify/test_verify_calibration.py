"""Temperature scaling, isotonic calibration and threshold presets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from affidavit.core.errors import ConfigError
from affidavit.verify.calibration import (
    IsotonicCalibrator,
    TemperatureScaler,
    nll,
    preset_thresholds,
)


def test_temperature_recovers_the_generating_temperature() -> None:
    rng = np.random.default_rng(0)
    true_logits = rng.normal(0, 2, (4000, 3))
    p = np.exp(true_logits) / np.exp(true_logits).sum(1, keepdims=True)
    labels = [int(rng.choice(3, p=row)) for row in p]
    # the model is over-confident by a factor 3: its logits are 3x the true ones
    t = TemperatureScaler().fit(true_logits * 3, labels).temperature
    assert t == pytest.approx(3.0, rel=0.1)
    assert nll(true_logits * 3, labels, t) < nll(true_logits * 3, labels, 1.0)


def test_not_entailed_rows_count_neutral_plus_contradict() -> None:
    logits = np.log(np.array([[0.2, 0.5, 0.3]]))
    assert nll(logits, [3], 1.0) == pytest.approx(-np.log(0.8))


def test_isotonic_is_monotone_and_matches_a_hand_worked_case() -> None:
    iso = IsotonicCalibrator().fit(np.array([0.1, 0.2, 0.3, 0.4, 0.5]), np.array([0, 1, 0, 1, 1]))
    # PAV: 0 | (1, 0) pooled to 0.5 | 1 | 1
    assert iso.transform(np.array([0.1, 0.2, 0.3, 0.45, 0.5])).tolist() == pytest.approx(
        [0.0, 0.5, 0.5, 1.0, 1.0]
    )
    grid = iso.transform(np.linspace(0, 1, 50))
    assert np.all(np.diff(grid) >= 0)


def test_presets() -> None:
    assert preset_thresholds("default") == (0.5, 0.5)
    assert preset_thresholds("strict")[0] > preset_thresholds("default")[0]
    cfg = {"thresholds": {"tau_entail": 0.42, "tau_entail_strict": 0.77, "tau_contradict": 0.6}}
    assert preset_thresholds("default", cfg) == (0.42, 0.6)
    assert preset_thresholds("strict", cfg)[0] == 0.77
    with pytest.raises(ConfigError, match="valid"):
        preset_thresholds("loose")


def test_apply_isotonic_keeps_distributions_and_ratio() -> None:
    from affidavit.verify.calibration import apply_isotonic

    iso = IsotonicCalibrator().fit(np.array([0.2, 0.8]), np.array([0, 1]))
    out = apply_isotonic(np.array([[0.8, 0.15, 0.05], [0.2, 0.4, 0.4]]), iso)
    assert out.sum(axis=1) == pytest.approx([1.0, 1.0])
    assert out[0, 0] == pytest.approx(1.0) and out[1, 0] == pytest.approx(0.0)
    assert out[1, 1] == pytest.approx(out[1, 2])  # neutral:contradict ratio kept


def test_malformed_isotonic_map_is_refused() -> None:
    from affidavit.core.errors import ModelError

    with pytest.raises(ModelError):
        IsotonicCalibrator.from_dict({"x": [0.1, 0.5], "y": [0.9, 0.1]})
    with pytest.raises(ModelError):
        IsotonicCalibrator.from_dict({"x": [0.1], "y": []})


def test_fit_on_dev_and_runtime_use(tmp_path: Path) -> None:
    import json

    from affidavit.core.settings import VerifySettings
    from affidavit.verify.calibration import fit_on_dev, main
    from affidavit.verify.crossencoder import OnnxCrossEncoder, load_cross_encoder
    from affidavit.verify.fakes import build_tiny_model

    d = build_tiny_model(tmp_path / "m", max_len=64)
    model = OnnxCrossEncoder(d, threads=1)
    words = ["paris", "france", "london", "river", "city", "capital", "born", "died"]
    rng = np.random.default_rng(0)
    rows = [
        {
            "claim": " ".join(rng.choice(words, 4)),
            "evidence": " ".join(rng.choice(words, 9)),
            "label": ["entail", "neutral", "contradict", "not_entail"][i % 4],
        }
        for i in range(80)
    ]
    res = fit_on_dev(model, rows)
    assert res["nll_after"] <= res["nll_before"] + 1e-9
    assert res["dev_rows"] == 80 and res["model_sha256"] == model.sha256
    dev = tmp_path / "dev.jsonl"
    dev.write_text("\n".join(json.dumps(r) for r in rows))
    out = tmp_path / "cal.json"
    main(["--dev", str(dev), "--model-dir", str(d), "--out", str(out), "--threads", "1"])
    calibrated = load_cross_encoder(VerifySettings(model_path=d, calibration_path=out, threads=1))
    assert calibrated.calibration is not None
    (s,) = calibrated.score([("paris france", "paris is in france")])
    assert "isotonic" in s.detail
    assert s.p_entail + s.p_neutral + s.p_contradict == pytest.approx(1.0)
