"""Contracts of batch jobs: what a shard produced and what a whole run did."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from affidavit.core.certificate import ModelIdentity
from affidavit.core.types import Frozen

JobKind = Literal["check", "audit"]
"""The batch jobs: ``check`` (a claim and its evidence a line), ``audit`` (an audit input)."""


class ShardResult(Frozen):
    """The output of one shard: its output lines, in input order, and what happened."""

    index: int = Field(ge=0, description="Shard number (0-based, in input order).")
    lines: tuple[str, ...] = Field(description="Output JSON lines (no trailing newline).")
    counts: dict[str, int] = Field(
        default_factory=dict,
        description="Outcome counts (check: malformed, incomplete; audit: passed, failed, "
        "malformed).",
    )
    warnings: tuple[str, ...] = Field(
        default=(), description="Worker warnings, e.g. a cascade stage that could not load."
    )
    seconds: float = Field(default=0.0, ge=0.0, description="Worker time spent on the shard.")
    models: tuple[ModelIdentity, ...] = Field(
        default=(),
        description="The models that made the lines (name, sha256): shards of one output made "
        "by other models are refused, never joined.",
    )


class BatchReport(Frozen):
    """A finished batch run."""

    kind: JobKind = Field(description="The job.")
    engine: Literal["local", "ray"] = Field(description="Where it ran.")
    output: str = Field(description="The joined output file.")
    rows: int = Field(ge=0, description="Input rows (non-blank lines).")
    shards: int = Field(ge=0, description="Shards in the run.")
    resumed_shards: int = Field(
        ge=0, description="Shards found finished from an earlier, interrupted run and skipped."
    )
    counts: dict[str, int] = Field(default_factory=dict, description="Summed outcome counts.")
    warnings: tuple[str, ...] = Field(default=(), description="Distinct worker warnings.")
    seconds: float = Field(ge=0.0, description="Wall time of this run.")
    workers: int = Field(ge=1, description="Workers used.")
