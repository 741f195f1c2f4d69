"""The ``affidavit`` command: a thin typer layer over the library.

Each command group lives in its own module with a ``register(app)`` function; heavy imports are
deferred into the command bodies so ``affidavit --help`` works without optional extras.

Exit codes: 0 success / trust passed, 1 policy, trust or verification failed, 2 usage or input
error.
"""

from __future__ import annotations

import importlib
import logging

import typer

app = typer.Typer(
    name="affidavit",
    help="Answers questions from your documents and proves every sentence it shows.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# command modules, each with register(app); imported here, their heavy deps are lazy
_COMMAND_MODULES = ("audit", "ingest", "verify", "certify", "ask", "mcp")


def _register_all() -> None:
    for name in _COMMAND_MODULES:
        module = importlib.import_module(f"affidavit.cli.{name}")
        module.register(app)


_register_all()


@app.callback()
def _root(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log debug detail to stderr."),
) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
