"""``affidavit audit FILE|-``: the runtime provenance audit from the command line.

Input is JSON: ``{"query": "...", "chunks": [{"text": ..., "url": ..., "metadata": {...}}],
"response": "..."}`` (``query`` may be omitted). Settings come from ``--config``, else an
``affidavit.toml`` beside FILE, else in the working directory, then ``AFFIDAVIT_*``.

Exit codes: 0 trust passed; 1 policy or trust failed (also ``--mode enforce``); 2 usage or input
error, with a one-line reason (malformed JSON with line and column, missing field, wrong type,
non-UTF-8 input or a lone surrogate, input over the 64 MiB cap, unknown or invalid setting, a
certificate that cannot be written). See ``docs/cli-exit-codes.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from affidavit.audit.input import parse_input
from affidavit.cli.batch import (
    AddressOpt,
    EngineOpt,
    ShardOpt,
    WorkersOpt,
    batch_overrides,
    run_with_progress,
)
from affidavit.cli.common import (
    EXIT_FAIL,
    EXIT_OK,
    EXIT_USAGE,
    cli_settings,
    dump_json,
    fail_usage,
    no_color_requested,
    read_text_arg,
    safe,
    usage_errors,
)
from affidavit.core.text import safe_terminal

if TYPE_CHECKING:
    from affidavit.core.report import AuditReport


def _print_report(report: AuditReport, no_color: bool) -> None:
    from rich.console import Console

    # every string below comes from the input (answer, chunks, URLs): printed with control
    # characters escaped, so an answer cannot paint a fake verdict or clear the screen
    console = Console(
        no_color=no_color,
        color_system=None if no_color else "auto",  # plain: no colour, no bold or dim either
        highlight=False,
        soft_wrap=True,
    )
    ok = report.trust_passed
    head = "[bold green]TRUST PASSED[/]" if ok else "[bold red]TRUST FAILED[/]"
    n_ok = sum(c.supported for c in report.claims)
    console.print(
        f"{head}  compliance {report.compliance_rate:.0%} "
        f"({n_ok}/{len(report.claims)} claims supported), mode {report.mode}, "
        f"{report.n_chunks_used}/{report.n_chunks} chunks used"
    )
    for c in report.claims:
        if c.supported:
            mark = "[green]✓ supported[/]"
            if c.freshness == "supported_stale":
                mark = "[yellow]✓ supported (stale source)[/]"
            where = safe(c.source_url or c.chunk_id or "")
            console.print(f"{mark} {safe(c.text)}  [dim]({c.confidence:.2f}, {where})[/]")
        else:
            console.print(f"[red]✗ unsupported[/] {safe(c.text)}  [dim]({c.confidence:.2f})[/]")
            console.print(f"    [red]{safe(c.reason)}[/]")
    for b in report.blocked_sources:
        console.print(
            f"[yellow]blocked source[/] {safe(b.url or b.chunk_id)}: {safe(b.reason)} "
            f"[dim]({safe(b.detail)})[/]"
        )
    shown = {"unsupported_claims", "contradicted_claims", "blocked_sources"}
    for i in report.policy_issues:
        if i.kind not in shown:
            console.print(f"[yellow]policy issue[/] {safe(i.kind)}: {safe(i.message)}")
    if report.guarded_response is not None:
        console.print("[bold]guarded response:[/]")
        console.print(safe_terminal(report.guarded_response, keep_newlines=True), markup=False)


def audit(
    file: Annotated[str, typer.Argument(help="Input JSON file, or - for stdin.", metavar="FILE|-")],
    config: Annotated[Path | None, typer.Option("--config", help="affidavit.toml to use.")] = None,
    mode: Annotated[
        str | None,
        typer.Option("--mode", help="audit | guardrail | enforce (overrides audit.mode)."),
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the full report as JSON.")
    ] = False,
    no_color: Annotated[
        bool,
        typer.Option("--no-color", help="Plain output without colour (also: NO_COLOR set)."),
    ] = False,
    certify: Annotated[
        Path | None,
        typer.Option(
            "--certify",
            help="Write a signed certificate of the audit to this path (runs the verifier).",
        ),
    ] = None,
    verify: Annotated[
        bool,
        typer.Option(
            "--verify/--no-verify",
            help="Also run the entailment verifier (sets audit.use_verifier).",
        ),
    ] = False,
    batch: Annotated[
        bool,
        typer.Option(
            "--batch",
            help="FILE is JSONL, one audit input a line; reports go to --output, one a line "
            '({"line", "report"} or {"line", "error"}).',
        ),
    ] = False,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Output JSONL of --batch.")
    ] = None,
    engine: EngineOpt = None,
    address: AddressOpt = None,
    workers: WorkersOpt = None,
    shard_size: ShardOpt = None,
) -> None:
    """Audit an answer against the chunks it was generated from.

    Exit 0 when trust passed, 1 when policy or trust failed, 2 on usage or input errors. With
    ``--batch``: 0 every line passed, 1 some failed trust, 2 some lines were malformed.
    """
    from affidavit.audit import Auditor
    from affidavit.core.errors import EnforcementError
    from affidavit.core.limits import MAX_AUDIT_INPUT_BYTES

    beside = None if file == "-" else Path(file)
    audit_over: dict[str, Any] = {}
    if mode is not None:
        audit_over["mode"] = mode
    if verify or certify is not None:
        # a certificate states that claims were verified: --certify runs the entailment verifier,
        # so what is printed and what is signed come from the same verdict, claim by claim
        audit_over["use_verifier"] = True
    overrides: dict[str, Any] = {"audit": audit_over} if audit_over else {}
    overrides |= batch_overrides(
        engine or ("local" if batch else None), address, workers, shard_size
    )
    settings = cli_settings(config, beside=beside, overrides=overrides or None)
    if batch or engine is not None:
        _audit_batch(file, output, settings, batch=batch, certify=certify)
    models: list[dict[str, str]] = []
    with usage_errors():
        if certify is not None:
            from affidavit.certify.keys import load_signing_key

            load_signing_key(settings)  # no key: exit before any work, never unsigned
        data = parse_input(
            read_text_arg(file, MAX_AUDIT_INPUT_BYTES), "stdin" if file == "-" else file
        )
        verifier = None
        if settings.audit.use_verifier:
            from affidavit.verify.calibration import effective_policy
            from affidavit.verify.cascade import ClaimCascade

            verifier = ClaimCascade(settings.verify, effective_policy(settings))
            models = verifier.model_identities()
        auditor = Auditor(settings, verifier=verifier)
        try:
            report = auditor.audit(data["query"], data["chunks"], data["response"])
        except EnforcementError as exc:
            report = exc.report
    if json_out:
        typer.echo(dump_json(report.model_dump(mode="json")))
    else:
        _print_report(report, no_color_requested(no_color))
    if certify is not None:
        from affidavit.audit.certify import certify_report

        with usage_errors():
            certify_report(report, settings, certify, models)
        typer.echo(f"certificate written to {safe_terminal(str(certify))}", err=True)
    if not report.trust_passed:
        raise typer.Exit(EXIT_FAIL)
    raise typer.Exit(EXIT_OK)


def _audit_batch(
    file: str, output: Path | None, settings: Any, *, batch: bool, certify: Path | None
) -> NoReturn:
    if not batch:
        raise fail_usage("--engine needs --batch (FILE is then JSONL, one audit input a line)")
    if output is None:
        raise fail_usage("--batch needs --output FILE (shards are written beside it)")
    if certify is not None:
        raise fail_usage("--certify certifies one audit; it cannot be combined with --batch")
    with usage_errors():
        text = read_text_arg(file)
        if settings.audit.use_verifier:
            from affidavit.verify.calibration import effective_policy

            # the thresholds a single audit verifies with (preset, model), as check --engine
            # passes them: the raw policy settings let a batch pass what a single audit withholds
            settings = settings.model_copy(update={"policy": effective_policy(settings)})
    report = run_with_progress("audit", text, output, settings)
    for warning in report.warnings:
        typer.echo(f"warning: {safe_terminal(warning)}", err=True)
    c = report.counts
    typer.echo(
        f"{c.get('passed', 0)} passed, {c.get('failed', 0)} failed, "
        f"{c.get('malformed', 0)} malformed; wrote {output}",
        err=True,
    )
    if c.get("malformed"):
        raise typer.Exit(EXIT_USAGE)
    raise typer.Exit(EXIT_FAIL if c.get("failed") else EXIT_OK)


def register(app: typer.Typer) -> None:
    """Add ``affidavit audit`` to the app."""
    app.command("audit")(audit)


__all__ = ["audit", "fail_usage", "parse_input", "register"]
