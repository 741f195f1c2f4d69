"""CLI commands of the verify stage: ``affidavit check`` (batch JSONL) and ``affidavit eval``.

Thresholds: ``policy.tau_entail`` / ``policy.tau_contradict`` when set (TOML, environment);
otherwise the ``policy.preset`` with the verifier model's dev-tuned values from its config.json.

``check`` exit codes: 0 all lines verified (whatever their label), 1 some verdicts incomplete
(model missing, timeout, stage error: those claims are unsupported), 2 malformed input lines (each
gets an error line in the output; a lone surrogate makes a line malformed), input over the 64 MiB
cap, or a usage error. See ``docs/cli-exit-codes.md``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn, TextIO

import typer

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
    describe_os_error,
    fail_usage,
    usage_errors,
)
from affidavit.core.text import json_line, safe_terminal

CASCADE_HELP = "Comma-separated stages overriding verify.cascade (checks,cross_encoder,...)."


def _overrides(cascade: str | None, threads: int | None) -> dict[str, Any]:
    # an option given is passed on even when empty or 0, so that the settings refuse it (exit 2)
    # rather than the defaults running in its place
    verify: dict[str, Any] = {}
    if cascade is not None:
        verify["cascade"] = [s.strip() for s in cascade.split(",") if s.strip()]
    if threads is not None:
        verify["threads"] = threads
    return {"verify": verify} if verify else {}


def check_lines(text: str, verifier: Any, out: TextIO) -> tuple[int, int, int]:
    """Verify each JSONL line of ``text``, writing one output line per input line.

    Returns:
        (lines written, malformed lines, incomplete verdicts).
    """
    from affidavit.batch.jobs import check_row
    from affidavit.core.text import jsonl_lines

    written = malformed = incomplete = 0
    for lineno, raw in enumerate(jsonl_lines(text), start=1):
        if not raw.strip():
            continue
        row, outcome = check_row(lineno, raw, verifier)
        malformed += outcome == "malformed"
        incomplete += outcome == "incomplete"
        out.write(json_line(row) + "\n")
        out.flush()
        written += 1
    return written, malformed, incomplete


def _check_exit(malformed: int, incomplete: int) -> NoReturn:
    """Exit 2 on malformed lines, 1 on incomplete verdicts, else 0."""
    if malformed:
        typer.echo(f"error: {malformed} malformed input line(s); see their error lines", err=True)
        raise typer.Exit(EXIT_USAGE)
    if incomplete:
        typer.echo(f"warning: {incomplete} claim(s) could not be fully verified", err=True)
        raise typer.Exit(EXIT_FAIL)
    raise typer.Exit(EXIT_OK)


def register(app: typer.Typer) -> None:
    """Add this group's commands to the app."""

    @app.command("check")
    def check(
        input: Annotated[
            str, typer.Argument(help='JSONL, one {"id","claim","evidence"} a line; -')
        ],
        output: Annotated[
            str, typer.Option("--output", "-o", help="Output JSONL (- for stdout).")
        ] = "-",
        config: Annotated[
            Path | None, typer.Option("--config", help="affidavit.toml to use.")
        ] = None,
        cascade: Annotated[str | None, typer.Option("--cascade", help=CASCADE_HELP)] = None,
        threads: Annotated[int | None, typer.Option("--threads", help="Inference threads.")] = None,
        engine: EngineOpt = None,
        address: AddressOpt = None,
        workers: WorkersOpt = None,
        shard_size: ShardOpt = None,
    ) -> None:
        """Verify claims against their evidence, one JSON line in, one JSON line out.

        With ``--engine local|ray`` the input is cut into shards written beside OUTPUT and joined
        at the end; a run killed and started again with the same OUTPUT resumes.
        """
        from affidavit.cli.common import read_text_arg
        from affidavit.core.limits import MAX_CHECK_INPUT_BYTES
        from affidavit.verify.cascade import ClaimCascade

        beside = None if input == "-" else Path(input)
        overrides = _overrides(cascade, threads) | batch_overrides(
            engine, address, workers, shard_size
        )
        settings = cli_settings(config, beside, overrides)
        with usage_errors():
            text = read_text_arg(input, MAX_CHECK_INPUT_BYTES)
            from affidavit.verify.calibration import effective_policy

        if engine is not None:
            if output == "-":
                raise fail_usage("--engine needs --output FILE (shards are written beside it)")
            with usage_errors():
                settings = settings.model_copy(update={"policy": effective_policy(settings)})
            report = run_with_progress("check", text, Path(output), settings)
            for warning in report.warnings:
                typer.echo(f"warning: {safe_terminal(warning)}", err=True)
            _check_exit(report.counts.get("malformed", 0), report.counts.get("incomplete", 0))
        with usage_errors():
            verifier = ClaimCascade(settings.verify, effective_policy(settings))
        for stage, err in verifier.stage_errors.items():
            typer.echo(f"warning: {err} (claims stay unsupported)", err=True)
            del stage
        if output == "-":
            _, malformed, incomplete = check_lines(text, verifier, sys.stdout)
        else:
            try:
                with Path(output).open("w", encoding="utf-8") as fh:
                    _, malformed, incomplete = check_lines(text, verifier, fh)
            except OSError as exc:
                typer.echo(f"error: cannot write {output}: {describe_os_error(exc)}", err=True)
                raise typer.Exit(EXIT_USAGE) from None
        _check_exit(malformed, incomplete)

    @app.command("eval")
    def eval_(
        data: Annotated[Path, typer.Option("--data", help="The shared data folder.")] = Path(
            "../shared/data"
        ),
        sets: Annotated[
            str | None, typer.Option("--sets", help="Comma-separated set names (default: all).")
        ] = None,
        limit: Annotated[
            int | None, typer.Option("--limit", help="At most N rows per set (seeded sample).")
        ] = None,
        output: Annotated[
            Path, typer.Option("--output", help="Folder for eval.json and reliability.png.")
        ] = Path("benchmarks/results/verifier_cascade_eval"),
        splits: Annotated[
            Path, typer.Option("--splits", help="Held-out split file written by the trainer.")
        ] = Path("training/splits.json"),
        config: Annotated[
            Path | None, typer.Option("--config", help="affidavit.toml to use.")
        ] = None,
        cascade: Annotated[str | None, typer.Option("--cascade", help=CASCADE_HELP)] = None,
        threads: Annotated[int | None, typer.Option("--threads", help="Inference threads.")] = None,
        rounds: Annotated[int, typer.Option("--rounds", help="Bootstrap resamples.")] = 1000,
    ) -> None:
        """Balanced accuracy, F1, AUROC, ECE (bootstrap 95% CIs) per dataset + reliability plot."""
        from rich.console import Console
        from rich.table import Table

        from affidavit.core.verification import EvalReport
        from affidavit.verify.cascade import ClaimCascade
        from affidavit.verify.datasets import ALL_SETS, load_set, read_splits, sample
        from affidavit.verify.eval import metrics_for, reliability_plot, run_set

        err = Console(stderr=True)
        settings = cli_settings(config, None, _overrides(cascade, threads))
        names = [s.strip() for s in sets.split(",")] if sets else list(ALL_SETS)
        with usage_errors():
            split_data = read_splits(splits) if splits.is_file() else None
            from affidavit.verify.calibration import effective_policy

            verifier = ClaimCascade(settings.verify, effective_policy(settings))
            loaded = {n: sample(load_set(n, data, split_data), limit) for n in names}
        for e in verifier.stage_errors.values():
            err.print(f"[yellow]warning:[/] {e}")
        results = []
        curves: dict[str, Any] = {}
        import numpy as np

        for name, items in loaded.items():
            with err.status(f"{name}: {len(items)} rows"):
                verdicts, secs = run_set(verifier, items)
            note = f"seeded sample of {limit} rows" if limit and len(items) == limit else ""
            m = metrics_for(
                name,
                items,
                verdicts,
                verifier.policy.tau_entail,
                rounds=rounds,
                seconds=secs,
                note=note,
            )
            results.append(m)
            curves[name] = (
                np.array([it.label == "entail" for it in items]),
                np.array([v.p_entail for v in verdicts]),
            )
            err.print(f"{name}: bacc {m.balanced_accuracy:.3f} ({m.n} rows, {secs:.1f}s)")
        binary = [m.balanced_accuracy for m in results if not m.name.startswith("anli")]
        report = EvalReport(
            sets=results,
            mean_balanced_accuracy_binary=float(np.mean(binary)) if binary else None,
            config={**verifier.describe(), "data": str(data), "limit": limit, "sets": names},
        )
        output.mkdir(parents=True, exist_ok=True)
        (output / "eval.json").write_text(report.model_dump_json(indent=1), encoding="utf-8")
        reliability_plot(curves, output / "reliability.png")
        table = Table(title="verifier eval (supported vs not)")
        for col in ("set", "n", "bacc [95% CI]", "F1", "AUROC", "ECE", "3-way acc"):
            table.add_column(col)
        for m in sorted(results, key=lambda r: r.balanced_accuracy):
            ci = m.ci95.get("balanced_accuracy")
            table.add_row(
                m.name,
                str(m.n),
                f"{m.balanced_accuracy:.3f}" + (f" [{ci.low:.3f}, {ci.high:.3f}]" if ci else ""),
                f"{m.f1:.3f}",
                "-" if m.auroc is None else f"{m.auroc:.3f}",
                f"{m.ece:.3f}",
                "-" if m.accuracy_3way is None else f"{m.accuracy_3way:.3f}",
            )
        Console().print(table)
        if report.mean_balanced_accuracy_binary is not None:
            typer.echo(
                f"mean balanced accuracy (binary sets): {report.mean_balanced_accuracy_binary:.3f}"
            )
        typer.echo(f"wrote {output / 'eval.json'} and {output / 'reliability.png'}")
