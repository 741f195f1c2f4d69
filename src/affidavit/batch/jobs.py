"""The per-line work of batch jobs, shared by every engine.

A job is built once per worker (it loads its models in ``__init__``) and then turns shards of
input lines into output lines. The single-process ``affidavit check`` runs the same
`check_row`, so an engine cannot change a verdict.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from affidavit.core.batch import JobKind, ShardResult
from affidavit.core.certificate import ModelIdentity
from affidavit.core.errors import ConfigError
from affidavit.core.settings import Settings
from affidavit.core.text import json_line

if TYPE_CHECKING:
    from affidavit.core.verification import CheckInput, CheckOutput

Row = tuple[int, str]
"""An input line with its 1-based line number."""


class RowJob(Protocol):
    """Turns a shard of input lines into output lines (one per input line)."""

    def run(self, index: int, rows: Sequence[Row]) -> ShardResult:
        """Process one shard."""
        ...


def error_line(line_id: Any, message: str) -> dict[str, Any]:
    """The ``check`` output line of an input line that could not be read."""
    from affidavit.core.verification import CheckOutput

    return CheckOutput(
        id=line_id,
        label="unsupported",
        p_entail=0.0,
        p_contradict=0.0,
        evidence_used=[],
        error=message,
    ).to_line()


def check_row(lineno: int, raw: str, verifier: Any) -> tuple[dict[str, Any], str | None]:
    """Verify one ``check`` input line.

    Returns:
        (output line, outcome) where outcome is None, ``"malformed"`` or ``"incomplete"``.
    """
    from pydantic import ValidationError

    from affidavit.core.errors import InputError
    from affidavit.core.limits import loads_json, no_duplicate_keys
    from affidavit.core.text import find_lone_surrogate
    from affidavit.core.verification import CheckInput

    line_id: Any = None
    try:
        # a duplicate key is refused, as in audit input and POST /v1/check: which of its values
        # a reader takes is up to the reader
        data = loads_json(raw, f"line {lineno}", object_pairs_hook=no_duplicate_keys)
        bad = find_lone_surrogate(data)
        if isinstance(data, dict) and bad is None:
            line_id = data.get("id") if isinstance(data.get("id"), str | int) else None
        if bad is not None:
            raise ValueError(f"{bad} holds a lone surrogate (not valid Unicode text)")
        item = CheckInput.model_validate(data)
    except json.JSONDecodeError as exc:
        return error_line(line_id, f"line {lineno}: not JSON: {exc.msg}"), "malformed"
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "line"
        return error_line(line_id, f"line {lineno}: {where}: {first['msg']}"), "malformed"
    except InputError as exc:  # nested too deeply
        return error_line(line_id, exc.message), "malformed"
    except (ValueError, RecursionError) as exc:
        return error_line(line_id, f"line {lineno}: {exc}"), "malformed"
    checked, complete = check_one(item, verifier)
    return checked.to_line(), None if complete else "incomplete"


def check_one(item: CheckInput, verifier: Any) -> tuple[CheckOutput, bool]:
    """Verify one claim against its evidence (``affidavit check`` and ``POST /v1/check``).

    Returns:
        The output line, and whether the verdict is complete (every stage ran).
    """
    from affidavit.core.verification import CheckOutput
    from affidavit.verify.cascade import chunks_from_texts, claim_from_text

    verdict = verifier.verify(
        claim_from_text(item.claim, str(item.id)), chunks_from_texts(item.evidence)
    )
    out = CheckOutput(
        id=item.id,
        label=verdict.label,
        p_entail=round(verdict.p_entail, 6),
        p_contradict=round(verdict.p_contradict, 6),
        evidence_used=[e.text for e in verdict.evidence],
        error="; ".join(verdict.errors) if verdict.errors else None,
    )
    return out, verdict.complete


class CheckJob:
    """``affidavit check``: one ``{"id", "claim", "evidence"}`` line in, one verdict line out.

    Args:
        settings: settings whose ``policy`` already holds the thresholds to use (see
            ``affidavit.verify.calibration.effective_policy``).
    """

    def __init__(self, settings: Settings) -> None:
        from affidavit.verify.cascade import ClaimCascade

        self.verifier = ClaimCascade(settings.verify, settings.policy)
        self.warnings = tuple(
            f"{err} (claims stay unsupported)" for err in self.verifier.stage_errors.values()
        )
        self.models = _models(self.verifier)

    def run(self, index: int, rows: Sequence[Row]) -> ShardResult:
        """Verify a shard."""
        t0 = time.perf_counter()
        lines, counts = [], {"malformed": 0, "incomplete": 0}
        for lineno, raw in rows:
            row, outcome = check_row(lineno, raw, self.verifier)
            if outcome:
                counts[outcome] += 1
            lines.append(json_line(row))
        return ShardResult(
            index=index,
            lines=tuple(lines),
            counts=counts,
            warnings=self.warnings,
            seconds=time.perf_counter() - t0,
            models=self.models,
        )


class AuditJob:
    """``affidavit audit --batch``: one audit input (``{"query", "chunks", "response"}``) a line,
    one line out: ``{"line": n, "report": AuditReport}`` or ``{"line": n, "error": reason}``.

    Args:
        settings: settings whose ``policy`` already holds the thresholds to use (see
            ``affidavit.verify.calibration.effective_policy``).
    """

    def __init__(self, settings: Settings) -> None:
        from affidavit.audit import Auditor

        verifier = None
        warnings: tuple[str, ...] = ()
        if settings.audit.use_verifier:
            from affidavit.verify.cascade import ClaimCascade

            verifier = ClaimCascade(settings.verify, settings.policy)
            warnings = tuple(str(e) for e in verifier.stage_errors.values())
        self.auditor = Auditor(settings, verifier=verifier)
        self.warnings = warnings
        self.models = _models(verifier)

    def run(self, index: int, rows: Sequence[Row]) -> ShardResult:
        """Audit a shard."""
        from affidavit.audit.input import parse_input
        from affidavit.core.errors import AffidavitError, EnforcementError

        t0 = time.perf_counter()
        lines, counts = [], {"passed": 0, "failed": 0, "malformed": 0}
        for lineno, raw in rows:
            out: dict[str, Any] = {"line": lineno}
            try:
                data = parse_input(raw, f"line {lineno}")
                try:
                    report = self.auditor.audit(data["query"], data["chunks"], data["response"])
                except EnforcementError as exc:
                    report = exc.report
            except AffidavitError as exc:  # malformed input: recorded as its own line
                out["error"] = exc.message
                counts["malformed"] += 1
            else:
                out["report"] = report.model_dump(mode="json")
                counts["passed" if report.trust_passed else "failed"] += 1
            lines.append(json_line(out))
        return ShardResult(
            index=index,
            lines=tuple(lines),
            counts=counts,
            warnings=self.warnings,
            seconds=time.perf_counter() - t0,
            models=self.models,
        )


def _models(verifier: Any) -> tuple[ModelIdentity, ...]:
    """What identifies the verifier's models (name and sha256 of each), recorded with every
    shard: the settings name a model's path, not what the file at that path holds."""
    if verifier is None:
        return ()
    return tuple(ModelIdentity.model_validate(m) for m in verifier.model_identities())


def make_job(kind: JobKind, settings: Settings) -> RowJob:
    """Build the job ``kind`` (loads its models)."""
    if kind == "check":
        return CheckJob(settings)
    if kind == "audit":
        return AuditJob(settings)
    raise ConfigError(f"unknown batch job {kind!r}; valid: check, audit")


def job_fingerprint(kind: JobKind, settings: Settings) -> dict[str, Any]:
    """The settings that decide a job's output (a resumed run must match them)."""
    sections = ("verify", "policy") if kind == "check" else ("audit", "claims", "verify", "policy")
    dumped = settings.model_dump(mode="json")
    return {"kind": kind, **{s: dumped[s] for s in sections}}
