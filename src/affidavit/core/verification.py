"""Contracts of the verify stage beyond the shared ``Verdict``: batch-check lines and eval reports.

``CheckInput``/``CheckOutput`` are the JSONL lines of ``affidavit check``; ``SetMetrics`` and
``EvalReport`` are what ``affidavit eval`` and the benchmarks write.

Examples:
    >>> CheckInput(id="1", claim="Paris is in France.", evidence=["Paris is in France."]).id
    '1'
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from affidavit.core.text import require_unicode
from affidavit.core.types import Frozen, Label


class CheckInput(Frozen):
    """One input line of ``affidavit check``."""

    id: str | int = Field(description="Caller's id, echoed on the output line.")
    claim: str = Field(min_length=1, description="The claim to verify.")
    evidence: list[str] = Field(description="Evidence passages; each becomes one chunk.")

    @model_validator(mode="before")
    @classmethod
    def _unicode_only(cls, data: Any) -> Any:
        # a "\ud800" escape reached the verifier's tokenizer (TypeError) through POST /v1/check
        return require_unicode(data)


class CheckOutput(Frozen):
    """One output line of ``affidavit check`` (``error`` only on lines that could not be read)."""

    id: str | int | None = Field(description="The input line's id (None if it could not be read).")
    label: Label = Field(description="supported / contradicted / unsupported.")
    p_entail: float = Field(ge=0.0, le=1.0, description="Calibrated entailment probability.")
    p_contradict: float = Field(ge=0.0, le=1.0, description="Calibrated contradiction probability.")
    evidence_used: list[str] = Field(
        description="Minimal sufficient evidence (or the contradicting span), as text."
    )
    error: str | None = Field(
        default=None, description="Why the line failed (malformed input or an incomplete check)."
    )

    def to_line(self) -> dict[str, Any]:
        """The JSON object written out: the five documented keys, plus ``error`` when set."""
        data = self.model_dump(mode="json")
        if data["error"] is None:
            del data["error"]
        return data


class Interval(Frozen):
    """A bootstrap confidence interval."""

    low: float = Field(description="Lower bound (2.5th percentile).")
    high: float = Field(description="Upper bound (97.5th percentile).")


class SetMetrics(Frozen):
    """Metrics of one evaluation set (supported vs not, plus 3-way accuracy where labelled)."""

    name: str = Field(description="Dataset name, e.g. wice, halueval_qa, anli_r1.")
    n: int = Field(description="Rows scored.")
    n_positive: int = Field(description="Rows labelled supported (entailed).")
    n_errors: int = Field(default=0, description="Rows whose verdict was incomplete (failed).")
    balanced_accuracy: float = Field(description="Mean of TPR and TNR at the threshold.")
    f1: float = Field(description="F1 of the supported class at the threshold.")
    auroc: float | None = Field(description="Area under ROC of p_entail (None: one class only).")
    ece: float = Field(description="Expected calibration error of p_entail (10 equal-width bins).")
    accuracy_3way: float | None = Field(
        default=None, description="3-way accuracy (argmax) on 3-way labelled sets, else None."
    )
    threshold: float = Field(description="tau_entail used to binarise p_entail.")
    ci95: dict[str, Interval] = Field(
        default_factory=dict, description="Bootstrap 95% intervals by metric name."
    )
    seconds: float = Field(default=0.0, description="Wall time spent scoring this set.")
    note: str = Field(default="", description="Caps, splits and anything that limits the number.")


class EvalReport(Frozen):
    """A whole ``affidavit eval`` run."""

    sets: list[SetMetrics] = Field(description="One entry per dataset, in evaluation order.")
    mean_balanced_accuracy_binary: float | None = Field(
        description="Mean balanced accuracy over the binary (non-ANLI) sets."
    )
    config: dict[str, Any] = Field(
        default_factory=dict, description="Effective verify settings, model id, caps, seed."
    )
