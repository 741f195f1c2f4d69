"""``affidavit ask``: a question in, a streamed answer out, then the verified rendering.

In strict mode (the default) nothing unverified is shown: no streamed draft, and a withheld
claim is listed by id and status only.

Exit codes (docs/cli-exit-codes.md): 0 an answer was produced (sentences the policy withheld are
listed, not an error); 2 nothing could be answered: usage or input error (no store, bad option or
config, no signing key for ``--certify``) or a stage that could not run (retrieval, generation,
a certificate that cannot be written).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from affidavit.cli.common import cli_settings, dump_json, fail_usage

if TYPE_CHECKING:
    from rich.console import Console

    from affidavit.core.answer import AskResult
    from affidavit.core.types import DisplayMode

_MODES = ("strict", "mixed", "debug")
_BADGE = {
    "verified": ("verified", "green"),
    "unverified": ("unverified", "yellow"),
    "blocked": ("blocked", "red"),
}


def result_json(result: AskResult) -> dict[str, Any]:
    """The ``--json`` document: the whole result plus decisions and timings by name."""
    data = result.model_dump(mode="json")
    data["decisions"] = result.decisions
    data["timings"] = result.timings
    return data


def _safe(text: str) -> str:
    from affidavit.core.text import safe_terminal

    return safe_terminal(text, keep_newlines=True)


def _text(text: str, style: str = "") -> Any:
    """A rich Text of untrusted text (model output, documents): control characters escaped."""
    from rich.text import Text

    return Text(_safe(text), style=style)


def print_result(console: Console, result: AskResult) -> None:
    """The verified rendering: answer, claim badges, sources, corrections, certificate, timing."""
    from rich.panel import Panel
    from rich.table import Table

    body = _text(result.answer or "(nothing could be shown)")
    if result.note and result.note not in result.answer:
        body.append(_safe("\n\n" + result.note), style="dim")
    console.print(Panel(body, title=f"answer ({result.mode})", title_align="left"))

    if result.claims:
        table = Table(show_header=True, header_style="bold", expand=False)
        table.add_column("claim")
        table.add_column("status")
        table.add_column("p_entail", justify="right")
        table.add_column("evidence")
        table.add_column("text", overflow="fold")
        for outcome in result.claims:
            label, colour = _BADGE[outcome.decision]
            # strict mode shows only what is verified: a claim it withheld keeps its row, not
            # its text (--mode mixed or --json show it)
            withheld = result.mode == "strict" and outcome.decision != "verified"
            table.add_row(
                _text(outcome.claim.id),
                _text(label, style=f"bold {colour}"),
                f"{outcome.verdict.p_entail:.2f}",
                "".join(f"[{n}]" for n in outcome.evidence_numbers) or "-",
                _text("(withheld)", style="dim") if withheld else _text(outcome.claim.text),
            )
        console.print(table)

    if result.sources:
        console.print(_text("sources", style="bold"))
        for s in result.sources:
            where = s.title or s.url or s.doc_id or s.chunk_id
            extra = f"  ({s.url})" if s.title and s.url else ""
            tag = "  [web]" if s.origin == "web" else ""
            console.print(_text(f"  [{s.number}] {where}{extra}{tag}"))
    trace = result.trace
    for r in trace.removed_citations:
        console.print(_text(f"removed citation {r.marker}: {r.reason}", style="yellow"))
    for c in trace.citation_corrections:
        old = "".join(f"[{n}]" for n in c.from_numbers) or "none"
        new = "".join(f"[{n}]" for n in c.to_numbers)
        console.print(_text(f"citation corrected {old} -> {new}: {c.reason}", style="cyan"))
    if trace.classification:
        console.print(_text(f"retrieval judged {trace.classification}", style="dim"))
        fallback = trace.corrective_detail.get("fallback")
        if fallback:
            console.print(_text(f"kept whole: {fallback}", style="dim"))
    for skipped in trace.skipped_stages:
        console.print(_text(f"note: {skipped}", style="dim"))
    if result.certificate_path:
        console.print(_text(f"certificate: {result.certificate_path}", style="bold"))
    ttft = trace.time_to_first_token_s
    console.print(
        _text(
            f"{result.timings.get('total', 0.0):.1f}s total"
            + (f", first token after {ttft:.1f}s" if ttft is not None else "")
            + f", {len(result.claims)} claims, "
            + f"{sum(c.decision == 'verified' for c in result.claims)} verified",
            style="dim",
        )
    )


def ask(
    question: Annotated[str, typer.Argument(help="The question to answer from your documents.")],
    store: Annotated[
        Path | None,
        typer.Option(
            "--store", help="Store folder (default: store.path).", envvar="AFFIDAVIT_STORE"
        ),
    ] = None,
    mode: Annotated[
        str | None,
        typer.Option("--mode", help="strict (verified only), mixed (labelled) or debug."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the full result (trace, timings) as JSON.")
    ] = False,
    no_stream: Annotated[
        bool, typer.Option("--no-stream", help="Do not show tokens while they are generated.")
    ] = False,
    certify: Annotated[
        Path | None, typer.Option("--certify", help="Write a signed certificate to this path.")
    ] = None,
    no_correct: Annotated[
        bool, typer.Option("--no-correct", help="Skip corrective retrieval (plain retrieval).")
    ] = False,
    config: Annotated[Path | None, typer.Option("--config", help="affidavit.toml to use.")] = None,
) -> None:
    """Answer a question from the store; every shown sentence is verified and cited."""
    from rich.console import Console
    from rich.live import Live
    from rich.text import Text

    from affidavit.core.errors import AffidavitError, ConfigError, InputError, SigningKeyError
    from affidavit.pipeline.build import build_pipeline

    if mode is not None and mode not in _MODES:
        raise fail_usage(f"--mode must be one of {', '.join(_MODES)}, got {mode!r}")
    display = cast("DisplayMode | None", mode)
    settings = cli_settings(config)
    console = Console()
    err = Console(stderr=True)
    try:
        pipe = build_pipeline(
            settings, store_path=store, corrector=not no_correct, certify=certify is not None
        )
    except (ConfigError, InputError, SigningKeyError) as exc:
        raise fail_usage(exc.message) from None
    except AffidavitError as exc:
        raise fail_usage(exc.message) from None

    # the draft streams only where unverified text may be shown: strict mode shows nothing
    # that is not verified, not even while it is written (issue 25.2)
    shown_mode = display or settings.policy.display
    stream = not (no_stream or as_json) and console.is_terminal and shown_mode != "strict"
    provisional = Text(style="dim")
    try:
        if stream:
            with Live(provisional, console=console, transient=True, refresh_per_second=12) as live:

                def show(piece: str) -> None:
                    provisional.append(_safe(piece))
                    live.update(provisional)

                result = pipe.ask(question, mode=display, on_token=show, certify=certify)
        else:
            with err.status("answering...", spinner="dots"):
                result = pipe.ask(question, mode=display, certify=certify)
    except (ConfigError, InputError) as exc:
        raise fail_usage(exc.message) from None
    except AffidavitError as exc:  # a stage could not run: nothing was judged (exit 2)
        raise fail_usage(exc.message) from None
    except OSError as exc:
        from affidavit.cli.common import describe_os_error

        raise fail_usage(describe_os_error(exc)) from None

    if as_json:
        typer.echo(dump_json(result_json(result)))
    else:
        print_result(console, result)


def register(app: typer.Typer) -> None:
    """Add ``ask`` to the app."""
    app.command("ask")(ask)
