"""The policy stage: the fail-closed render decision per claim and the rendered answer.

Examples:
    >>> from affidavit.policy import decide, load_preset
    >>> decide(None, load_preset("default").policy)
    ('unverified', 'the claim was not verified (no verdict)')
"""

from affidavit.policy.presets import (
    DisplayStyle,
    Preset,
    load_preset,
    preset_names,
    resolve_policy,
)
from affidavit.policy.render import decide, decide_all, decide_claim, render, split_sentences

__all__ = [
    "DisplayStyle",
    "Preset",
    "decide",
    "decide_all",
    "decide_claim",
    "load_preset",
    "preset_names",
    "render",
    "resolve_policy",
    "split_sentences",
]
