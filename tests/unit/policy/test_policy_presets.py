"""Presets ship as package data and load by name; a bad name lists the valid ones."""

from __future__ import annotations

import pytest

from affidavit.core.errors import ConfigError
from affidavit.policy import load_preset, preset_names


def test_three_presets_ship() -> None:
    assert preset_names() == ["default", "mixed", "strict"]


@pytest.mark.parametrize(
    ("name", "display", "tau_e", "tau_c"),
    [("default", "strict", 0.5, 0.5), ("strict", "strict", 0.8, 0.2), ("mixed", "mixed", 0.5, 0.5)],
)
def test_preset_values(name: str, display: str, tau_e: float, tau_c: float) -> None:
    preset = load_preset(name)
    assert preset.name == name
    assert preset.policy.preset == name
    assert preset.policy.display == display
    assert (preset.policy.tau_entail, preset.policy.tau_contradict) == (tau_e, tau_c)
    assert preset.display.badge("blocked") == "[blocked]"


def test_unknown_preset_lists_valid_names() -> None:
    with pytest.raises(ConfigError, match="valid presets: default, mixed, strict"):
        load_preset("lenient")
