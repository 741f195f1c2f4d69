"""Named policy presets, shipped as TOML files inside the package (``policy/presets/*.toml``).

A preset holds the ``[policy]`` section values (thresholds, display mode) and the ``[display]``
style (badges). Invalid names fail with the list of valid ones.

Examples:
    >>> load_preset("strict").policy.tau_entail
    0.8
"""

from __future__ import annotations

import functools
import tomllib
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from affidavit.core.errors import ConfigError
from affidavit.core.settings import PolicySettings


class DisplayStyle(BaseModel):
    """How decisions are shown in mixed and debug modes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    verified: str = Field(default="[verified]", description="Badge of a verified sentence.")
    unverified: str = Field(default="[unverified]", description="Badge of an unverified sentence.")
    blocked: str = Field(default="[blocked]", description="Badge of a blocked sentence.")
    show_note: bool = Field(
        default=True, description="Append the note of what was withheld to the rendered text."
    )

    def badge(self, decision: str) -> str:
        """The badge for a decision (verified / unverified / blocked)."""
        return str(getattr(self, decision))


class Preset(BaseModel):
    """A named policy preset."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="Preset name (the TOML file's stem).")
    description: str = Field(default="", description="What the preset is for.")
    policy: PolicySettings = Field(description="The policy section values.")
    display: DisplayStyle = Field(default_factory=DisplayStyle, description="Badges.")


def _preset_dir() -> resources.abc.Traversable:
    return resources.files("affidavit.policy").joinpath("presets")


def preset_names() -> list[str]:
    """Names of the presets shipped with the package, sorted."""
    return list(_preset_names())


@functools.lru_cache(maxsize=1)
def _preset_names() -> tuple[str, ...]:
    return tuple(
        sorted(
            entry.name.removesuffix(".toml")
            for entry in _preset_dir().iterdir()
            if entry.name.endswith(".toml")
        )
    )


@functools.lru_cache(maxsize=16)
def _read_preset(name: str) -> Preset:
    path = _preset_dir().joinpath(f"{name}.toml")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        return Preset(name=name, **data)
    except (tomllib.TOMLDecodeError, ValidationError, TypeError) as exc:
        raise ConfigError(
            f"preset {name!r} is invalid: {exc}", stage="policy", source=name
        ) from exc


def load_preset(name: str) -> Preset:
    """Load a shipped preset by name.

    Args:
        name: ``default``, ``strict`` or ``mixed`` (see `preset_names`).

    Raises:
        ConfigError: unknown name (the message lists the valid ones) or a corrupt preset file.
    """
    valid = preset_names()
    if name not in valid:
        raise ConfigError(
            f"unknown policy preset {name!r}; valid presets: {', '.join(valid)}",
            stage="policy",
            source=name,
        )
    return _read_preset(name)


def resolve_policy(policy: PolicySettings) -> PolicySettings:
    """The policy actually applied: the named preset's values, overridden by explicit settings.

    ``preset = "strict"`` in a config means the strict thresholds unless ``tau_entail`` or
    ``tau_contradict`` are also set there; without this step a preset name would be a label
    whose thresholds are silently ignored.

    Examples:
        >>> resolve_policy(PolicySettings(preset="strict")).tau_entail
        0.8
        >>> resolve_policy(PolicySettings(preset="strict", tau_entail=0.7)).tau_entail
        0.7
    """
    base = load_preset(policy.preset).policy
    explicit = {name: getattr(policy, name) for name in policy.model_fields_set}
    return PolicySettings.model_validate({**base.model_dump(), **explicit})
