"""The ``affidavit`` command: a thin typer layer over the library.

Each command group lives in its own module with a ``register(app)`` function; heavy imports are
deferred into the command bodies so ``affidavit --help`` works without optional extras.

Exit codes (docs/cli-exit-codes.md): 0 success / trust passed; 1 the input was judged and failed
(trust, policy or verification failed, certificate invalid, some ingest inputs failed); 2 usage,
input, configuration or environment error (nothing was judged); 3 internal error (a bug);
130 interrupted (Ctrl-C, typer's own handling).
"""

from __future__ import annotations

import errno
import importlib
import logging
import sqlite3
import sys

import typer

app = typer.Typer(
    name="affidavit",
    help="Answers questions from your documents and proves every sentence it shows.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# command modules, each with register(app); imported here, their heavy deps are lazy
_COMMAND_MODULES = (
    "audit",
    "ingest",
    "documents",
    "store",
    "verify",
    "certify",
    "log",
    "ask",
    "serve",
    "mcp",
)


def _register_all() -> None:
    for name in _COMMAND_MODULES:
        module = importlib.import_module(f"affidavit.cli.{name}")
        module.register(app)


_register_all()


@app.callback()
def _root(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log debug detail to stderr."),
) -> None:
    level = logging.DEBUG if verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    # the handler filters too: a library that sets its own logger to DEBUG on import (bm25s
    # does) must not reach stderr without -v
    for handler in logging.getLogger().handlers:
        handler.setLevel(level)


# errors of the machine a command runs on (issue 26.8: a full disk ended in exit 3)
_ENVIRONMENT_ERRNOS = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG, errno.EMFILE, errno.ENFILE}
)


def main() -> None:
    """Console-script entry point: no traceback reaches the user unless ``-v`` asks for it."""
    from affidavit.cli.common import EXIT_INTERNAL, EXIT_USAGE
    from affidavit.core.text import safe_terminal

    try:
        try:
            app()
        except OSError as exc:
            if exc.errno not in _ENVIRONMENT_ERRNOS:
                raise
            # a full disk, a quota, a read-only or failing device: the machine, not a bug
            where = f": {safe_terminal(str(exc.filename))}" if exc.filename else ""
            sys.stderr.write(f"error: {safe_terminal(exc.strerror or str(exc))}{where}\n")
            sys.exit(EXIT_USAGE)
        except sqlite3.DatabaseError as exc:
            # the environment, not a bug (issue 26.9: a corrupt page ended in "internal error")
            msg = safe_terminal(str(exc))[:300]
            if any(k in msg for k in ("malformed", "not a database", "corrupt")):
                advice = (
                    "the store database is damaged; `affidavit store check` lists what is, "
                    "`affidavit store rebuild` salvages every row that can be read and names "
                    "the documents to ingest again; or restore the store from a backup"
                )
            else:
                advice = "the store database could not be used"
            sys.stderr.write(f"error: {advice} ({msg})\n")
            sys.exit(EXIT_USAGE)
    except MemoryError:
        # every input is capped (docs/cli-exit-codes.md); this is the last line of defence
        sys.stderr.write("error: out of memory (input too large for this machine)\n")
        sys.exit(EXIT_USAGE)
    except Exception as exc:  # a bug: one line (the traceback with -v), and a distinct code
        if {"-v", "--verbose"} & set(sys.argv[1:]):
            raise
        sys.stderr.write(
            f"internal error: {type(exc).__name__}: {safe_terminal(str(exc))[:500]}\n"
            "this is a bug in affidavit; rerun with -v for the traceback and please report it\n"
        )
        sys.exit(EXIT_INTERNAL)


if __name__ == "__main__":
    main()
