"""The CRAG decision at and around its thresholds."""

from __future__ import annotations

import pytest

from affidavit.core.errors import ConfigError
from affidavit.correct.classify import classify


@pytest.mark.parametrize(
    ("scores", "kind"),
    [
        ([8.0, 1.0], "correct"),  # max exactly at upper: correct
        ([7.999, 7.0], "ambiguous"),  # just below upper
        ([3.0, 0.0], "ambiguous"),  # max exactly at lower: not incorrect
        ([2.999, 2.0], "incorrect"),  # every grade below lower
        ([0.0], "incorrect"),
        ([10.0], "correct"),
        ([], "incorrect"),  # nothing retrieved
    ],
)
def test_default_thresholds_boundaries(scores: list[float], kind: str) -> None:
    c = classify(scores, upper=8.0, lower=3.0)
    assert c.kind == kind
    assert c.upper_threshold == 8.0 and c.lower_threshold == 3.0


def test_thresholds_are_really_used() -> None:
    # the same grades change class when the thresholds move
    assert classify([6.0], upper=8.0, lower=3.0).kind == "ambiguous"
    assert classify([6.0], upper=6.0, lower=3.0).kind == "correct"
    assert classify([6.0], upper=9.0, lower=6.5).kind == "incorrect"


def test_equal_thresholds_leave_no_ambiguous_band() -> None:
    assert classify([5.0], upper=5.0, lower=5.0).kind == "correct"
    assert classify([4.99], upper=5.0, lower=5.0).kind == "incorrect"


def test_lower_above_upper_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        classify([5.0], upper=3.0, lower=8.0)


def test_max_score_and_reason_recorded() -> None:
    c = classify([2.0, 6.5, 4.0], upper=8.0, lower=3.0)
    assert c.max_score == 6.5
    assert "6.50" in c.reason
