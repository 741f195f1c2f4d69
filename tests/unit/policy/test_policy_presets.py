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


def test_preset_name_in_settings_brings_its_thresholds() -> None:
    from affidavit.core.settings import load_settings
    from affidavit.policy import resolve_policy

    strict = resolve_policy(load_settings(overrides={"policy": {"preset": "strict"}}).policy)
    assert (strict.tau_entail, strict.tau_contradict) == (0.8, 0.2)
    mixed = resolve_policy(load_settings(overrides={"policy": {"preset": "mixed"}}).policy)
    assert mixed.display == "mixed"
    own = load_settings(overrides={"policy": {"preset": "strict", "tau_entail": 0.7}}).policy
    assert (resolve_policy(own).tau_entail, resolve_policy(own).tau_contradict) == (0.7, 0.2)
    default = resolve_policy(load_settings().policy)
    assert (default.tau_entail, default.tau_contradict, default.display) == (0.5, 0.5, "strict")


def test_env_override_beats_preset(monkeypatch: pytest.MonkeyPatch) -> None:
    from affidavit.core.settings import load_settings
    from affidavit.policy import resolve_policy

    monkeypatch.setenv("AFFIDAVIT_POLICY__PRESET", "strict")
    monkeypatch.setenv("AFFIDAVIT_POLICY__TAU_CONTRADICT", "0.1")
    p = resolve_policy(load_settings().policy)
    assert (p.preset, p.tau_entail, p.tau_contradict) == ("strict", 0.8, 0.1)
