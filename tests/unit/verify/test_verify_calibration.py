"""Temperature scaling, isotonic calibration and threshold presets."""

from __future__ import annotations

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
