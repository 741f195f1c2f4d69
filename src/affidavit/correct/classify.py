"""The CRAG decision: Correct, Ambiguous or Incorrect, from the chunk grades.

Examples:
    >>> classify([9.0, 2.0], upper=8.0, lower=3.0).kind
    'correct'
    >>> classify([2.9, 1.0], upper=8.0, lower=3.0).kind
    'incorrect'
"""

from __future__ import annotations

from collections.abc import Sequence

from affidavit.core.correction import Classification
from affidavit.core.errors import ConfigError


def classify(
    scores: Sequence[float], *, upper: float, lower: float, failed: int = 0
) -> Classification:
    """Classify a retrieval by its chunk grades.

    Correct when the best grade is ``>= upper``; Incorrect when every grade is ``< lower``
    (also when nothing was retrieved or no chunk could be graded); otherwise Ambiguous.

    Args:
        scores: the 0-10 grade of every chunk that was graded (a failed grade is left out: it
            never counts, whatever the thresholds, ``lower = 0`` included).
        upper: the upper threshold (``settings.correct.upper_threshold``).
        lower: the lower threshold (``settings.correct.lower_threshold``).
        failed: how many chunks could not be graded (named in the reason).

    Raises:
        ConfigError: ``lower > upper``.
    """
    if lower > upper:
        raise ConfigError(
            f"lower_threshold ({lower}) must not exceed upper_threshold ({upper})", stage="correct"
        )
    best = max(scores, default=0.0)
    if not scores:
        return Classification(
            kind="incorrect",
            max_score=0.0,
            upper_threshold=upper,
            lower_threshold=lower,
            reason=f"no chunk could be graded ({failed} failed)"
            if failed
            else "no chunk was retrieved",
        )
    if best >= upper:
        kind, reason = "correct", f"best grade {best:.2f} >= upper threshold {upper:g}"
    elif best < lower:
        kind, reason = "incorrect", f"every grade < lower threshold {lower:g} (best {best:.2f})"
    else:
        kind, reason = (
            "ambiguous",
            f"best grade {best:.2f} is between lower {lower:g} and upper {upper:g}",
        )
    if failed:
        reason += f"; {failed} chunk(s) could not be graded and do not count"
    return Classification(
        kind=kind, max_score=best, upper_threshold=upper, lower_threshold=lower, reason=reason
    )
