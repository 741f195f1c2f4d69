"""CLI commands of the transparency log.

Commands:
    affidavit log show [--log-dir DIR] [--json]
    affidavit log verify [--log-dir DIR] [--public-key FILE]...
    affidavit log prove-consistency OLD NEW [--log-dir DIR] [--output FILE]
    affidavit log witness URL|DIR|CHECKPOINT [--proof FILE] [--state DIR] [--public-key FILE]...
    affidavit certificate prove CERT [--log-dir DIR] [--output FILE]

The log is the one of your signing key (``tlog/<key id>/`` beside it), or ``tlog.path``, or
``--log-dir``. Exit codes: 0 valid / consistent / accepted, 1 the log or checkpoint was judged
and failed (the reason is printed: a changed entry, a fork, a rollback), 2 usage or input error
(no log, unreadable file). See ``docs/cli-exit-codes.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from affidavit.cli.common import (
    EXIT_FAIL,
    EXIT_OK,
    cli_settings,
    dump_json,
    fail_usage,
    usage_errors,
)
from affidavit.core.text import safe_terminal

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from affidavit.core.settings import Settings
    from affidavit.core.tlog import Checkpoint, ConsistencyProof
    from affidavit.tlog.monitor import Witness
    from affidavit.tlog.store import FileLog

ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="affidavit.toml to read (default: ./affidavit.toml)."),
]
LogDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--log-dir",
        help="The log folder (default: tlog.path, else tlog/<key id>/ beside your signing key).",
    ),
]
PublicKeyOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--public-key",
        "-k",
        help="Trust this log key (PEM); repeatable. certify.trusted_keys and your own key are "
        "trusted too.",
    ),
]

log_app = typer.Typer(
    help="The transparency log of the certificates you issued: show, verify, prove, witness.",
    no_args_is_help=True,
)

MAX_PROOF_BYTES = 1 << 20


def open_own_log(settings: Settings, log_dir: Path | None) -> FileLog:
    """The log to read: ``--log-dir``, ``tlog.path``, or the one of the signing key."""
    from affidavit.certify.keys import default_key_path, load_public_key, public_key_path
    from affidavit.tlog.certificates import default_log_path
    from affidavit.tlog.store import FileLog

    if log_dir is not None:
        path = log_dir
    elif settings.tlog.path is not None:
        path = settings.tlog.path.expanduser()
    else:
        pub = public_key_path(default_key_path(settings))
        if not pub.is_file():
            raise fail_usage(
                f"no signing key's public key at {pub}: run `affidavit keys generate`, or "
                "name the log with --log-dir"
            )
        with usage_errors():
            path = default_log_path(settings, load_public_key(pub))
    if not (path / "checkpoint").is_file():
        raise fail_usage(f"no log at {path} (no checkpoint: nothing has been logged there)")
    return FileLog(path)


def log_keys(settings: Settings, public_key: list[Path] | None) -> list[Ed25519PublicKey]:
    """The trusted keys (usage error when one cannot be read)."""
    from affidavit.certify.keys import trusted_keys

    with usage_errors():
        return list(trusted_keys(settings, public_key or []).values())


def read_checkpoint_file(path: Path, keys: list[Ed25519PublicKey], log: FileLog) -> Checkpoint:
    """A signed checkpoint file of ``log``: its origin, signed by its key (not merely by some
    trusted key); exit 1 when it is not, 2 when it cannot be read."""
    from affidavit.core.errors import ProofError
    from affidavit.core.limits import read_file_bounded
    from affidavit.tlog.monitor import open_log_checkpoint
    from affidavit.tlog.note import MAX_NOTE_BYTES

    with usage_errors():
        raw = read_file_bounded(path, MAX_NOTE_BYTES, "checkpoint")
    try:
        note = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise fail_usage(f"{path}: not UTF-8 text") from None
    with usage_errors():  # the log's own checkpoint unreadable: exit 2
        try:
            return open_log_checkpoint(note, log, keys)
        except ProofError as exc:
            typer.echo(f"INVALID checkpoint {safe_terminal(str(path))}: {exc.message}", err=True)
            raise typer.Exit(EXIT_FAIL) from None


def read_proof_file(path: Path) -> ConsistencyProof:
    """A consistency proof JSON (from ``log prove-consistency`` or the HTTP API)."""
    from pydantic import ValidationError

    from affidavit.certify.canonical import loads_strict
    from affidavit.core.limits import read_file_bounded
    from affidavit.core.tlog import ConsistencyProof

    with usage_errors():
        tree = loads_strict(read_file_bounded(path, MAX_PROOF_BYTES, "proof"), source=str(path))
    try:
        return ConsistencyProof.model_validate(tree)
    except ValidationError as exc:
        raise fail_usage(f"{path} is not a consistency proof: {exc.errors()[0]['msg']}") from None


@log_app.command("show")
def log_show(
    log_dir: LogDirOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the checkpoint as JSON.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Print the log's size, root hash and latest signed checkpoint (not checked: `log verify`)."""
    settings = cli_settings(config)
    with open_own_log(settings, log_dir) as log, usage_errors():
        checkpoint = log.checkpoint()
    assert checkpoint is not None  # open_own_log refuses a log without one
    if as_json:
        typer.echo(dump_json({"path": str(log.path), **checkpoint.model_dump(mode="json")}))
        return
    typer.echo(f"log:        {safe_terminal(str(log.path))}")
    typer.echo(f"origin:     {safe_terminal(checkpoint.origin)}")
    typer.echo(f"size:       {checkpoint.tree_size}")
    typer.echo(f"root hash:  {checkpoint.root_hash}")
    own = _own_verifier_key(settings, checkpoint.origin)
    if own:
        typer.echo(f"note key:   {own}")
    typer.echo("checkpoint:")
    typer.echo(safe_terminal(checkpoint.note, keep_newlines=True), nl=False)


def _own_verifier_key(settings: Settings, origin: str) -> str | None:
    """The signed-note verifier key of one's own key under ``origin`` (for other tools)."""
    from affidavit.certify.keys import default_key_path, load_public_key, public_key_path
    from affidavit.core.errors import AffidavitError
    from affidavit.tlog.note import verifier_key

    pub = public_key_path(default_key_path(settings))
    try:
        return verifier_key(origin, load_public_key(pub)) if pub.is_file() else None
    except AffidavitError:
        return None


@log_app.command("verify")
def log_verify(
    log_dir: LogDirOpt = None,
    public_key: PublicKeyOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Recompute the whole tree from the entries; compare every stored node and checkpoint."""
    from affidavit.tlog.monitor import verify_log

    settings = cli_settings(config)
    keys = log_keys(settings, public_key)
    with open_own_log(settings, log_dir) as log, usage_errors():
        result = verify_log(log, keys)
    if as_json:
        typer.echo(dump_json(result.model_dump(mode="json")))
    elif result.valid:
        typer.echo(
            f"valid: {result.tree_size} entries, root {result.root_hash}; "
            f"{result.checkpoints_checked} signed checkpoints agree"
        )
    else:
        typer.echo("INVALID", err=True)
        for r in result.reasons:
            typer.echo(f"  - {safe_terminal(r)}", err=True)
    raise typer.Exit(EXIT_OK if result.valid else EXIT_FAIL)


def _tree(value: str, keys: list[Ed25519PublicKey], log: FileLog) -> Checkpoint:
    """A size or a checkpoint file as a checkpoint to compare (a file must be one of this log's,
    signed by its key; a bare size takes its root from the log itself)."""
    from affidavit.core.tlog import Checkpoint
    from affidavit.tlog.note import MAX_TREE_SIZE

    if not (value.isascii() and value.isdigit()):
        if value.isdigit():
            raise fail_usage(f"{value[:40]!r} is no tree size: a size is written in 0-9")
        return read_checkpoint_file(Path(value), keys, log)
    if len(value) > len(str(MAX_TREE_SIZE)):
        raise fail_usage(f"tree size {value[:40]}... is larger than any log")
    size = int(value)
    current = log.checkpoint()
    assert current is not None  # open_own_log refuses a log without one
    with usage_errors():
        root = log.root(size).hex()
    return Checkpoint(origin=current.origin, tree_size=size, root_hash=root, note="")


@log_app.command("prove-consistency")
def log_prove_consistency(
    old: Annotated[str, typer.Argument(help="The older tree: a size, or a checkpoint file.")],
    new: Annotated[str, typer.Argument(help="The newer tree: a size, or a checkpoint file.")],
    log_dir: LogDirOpt = None,
    public_key: PublicKeyOpt = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the proof JSON here.")
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Prove that the newer tree extends the older; print the proof JSON (exit 1 if it does not).

    A checkpoint file must be of this log: under its origin and signed by its key (the key the
    origin names, else the one that signed the first checkpoint of the log; one signed by
    another trusted key, or of another log, is refused with exit 1); the proof is then checked
    against their roots. A size is taken from the log itself. The older tree comes first
    (exit 2 otherwise).
    """
    from affidavit.tlog.certificates import check_consistency

    settings = cli_settings(config)
    keys = log_keys(settings, public_key)
    with open_own_log(settings, log_dir) as log:
        older = _tree(old, keys, log)
        newer = _tree(new, keys, log)
        if older.tree_size > newer.tree_size:
            raise fail_usage(
                f"the older tree ({older.tree_size}) is larger than the newer ({newer.tree_size})"
            )
        with usage_errors():
            proof = log.prove_consistency(older.tree_size, newer.tree_size)
    refused = check_consistency(older, newer, proof)
    text = dump_json(proof.model_dump(mode="json"))
    if output is not None:
        with usage_errors():
            output.write_text(text + "\n", encoding="utf-8")
    else:
        typer.echo(text)
    if refused is not None:
        typer.echo(f"NOT CONSISTENT: {safe_terminal(refused[1])}", err=True)
        raise typer.Exit(EXIT_FAIL)
    typer.echo(f"consistent: size {newer.tree_size} extends size {older.tree_size}", err=True)


@log_app.command("witness")
def log_witness(
    source: Annotated[
        str,
        typer.Argument(
            help="A server's URL (http://host:port, its /v1/log routes), a log folder, or a "
            "signed checkpoint file."
        ),
    ],
    proof: Annotated[
        Path | None,
        typer.Option(
            "--proof",
            help="Consistency proof JSON from the last size seen (needed with a checkpoint "
            "file; fetched from a URL, built from a log folder).",
        ),
    ] = None,
    state: Annotated[
        Path | None,
        typer.Option(
            "--state", help="Witness folder (default: tlog.witness_path, else <home>/witness)."
        ),
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option("--api-key", envvar="AFFIDAVIT_API_KEY", help="Read key for a URL."),
    ] = None,
    public_key: PublicKeyOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Accept a log's new checkpoint only if it extends the last one seen (exit 1: fork,
    rollback or a bad signature or proof, with the reason)."""
    from affidavit.tlog.monitor import Witness
    from affidavit.tlog.store import FileLog

    settings = cli_settings(config)
    keys = log_keys(settings, public_key)
    folder = state or settings.tlog.witness_path or settings.resolved_home() / "witness"
    witness = Witness(folder.expanduser(), keys)
    given = read_proof_file(proof) if proof is not None else None
    log: FileLog | None = None
    if source.startswith(("http://", "https://")):
        note, given = _fetch_remote(source, api_key, witness, given)
    else:
        path = Path(source)
        log = FileLog(path) if path.is_dir() else None
        note = _read_note(path / "checkpoint" if log is not None else path)
    with usage_errors():
        result = witness.observe(note, given, log=log)
    if log is not None:
        log.close()
    if as_json:
        typer.echo(dump_json(result.model_dump(mode="json")))
    elif result.accepted:
        typer.echo(f"accepted ({result.kind}): {safe_terminal(result.reason)}")
    else:
        typer.echo(f"REFUSED ({result.kind}): {safe_terminal(result.reason)}", err=True)
    raise typer.Exit(EXIT_OK if result.accepted else EXIT_FAIL)


def _read_note(path: Path) -> str:
    from affidavit.core.limits import read_file_bounded
    from affidavit.tlog.note import MAX_NOTE_BYTES

    with usage_errors():
        raw = read_file_bounded(path, MAX_NOTE_BYTES, "checkpoint")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise fail_usage(f"{path}: not UTF-8 text") from None


def _fetch_remote(
    url: str, api_key: str | None, witness: Witness, given: ConsistencyProof | None
) -> tuple[str, ConsistencyProof | None]:
    """A server's latest checkpoint, and the proof from the size the witness last saw."""
    from affidavit.core.errors import ProofError
    from affidavit.tlog.note import parse_checkpoint
    from affidavit.tlog.remote import RemoteLog

    remote = RemoteLog(url, api_key)
    with usage_errors():
        note = remote.checkpoint().note
    try:
        served = parse_checkpoint(note)
    except ProofError:
        return note, given  # the witness says what is wrong with it
    with usage_errors():
        last = witness.last(served.origin)
    if given is None and last is not None and 0 < last.tree_size < served.tree_size:
        with usage_errors():
            given = remote.prove_consistency(last.tree_size, served.tree_size)
    return note, given


def register(app: typer.Typer) -> None:
    """Add this group's commands to the app."""
    app.add_typer(log_app, name="log")
