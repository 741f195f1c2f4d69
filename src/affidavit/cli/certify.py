"""CLI commands of the certify stage: signing keys, certificate checks and JSON Schemas.

Commands:
    affidavit keys generate [--force] [--encrypt]
    affidavit keys show
    affidavit certificate verify CERT.json [--public-key FILE]... [--store DIR [--replay]]
        [--log [--checkpoint NEWER [--consistency-proof FILE]]]
    affidavit certificate prove CERT.json [--output FILE]
    affidavit certificate show CERT.json
    affidavit export-schemas DIR
    affidavit validate FILE --schema NAME

``--store DIR`` compares each evidence span's sha256 with the text the store holds for it
(rebuilding passages that corrective retrieval trimmed); ``--replay`` also re-runs the verifier
on that evidence and compares the decisions. A claim whose evidence came from the web cannot be
replayed from a store: it is listed as "not replayed", and the replay is incomplete (exit 1,
``INCOMPLETE``, and with ``--json`` ``"valid": false`` with a ``replay incomplete`` reason per
claim: a check that could not run is not a pass; ``signature_ok`` and ``trusted`` still say
whether the signature holds). Replay is
for certificates of ``ask``: the chunks of an ``audit --certify`` certificate came from the
caller, not from a store, so their evidence is reported missing.

Exit codes: 0 valid / done, 1 invalid (the reason is printed), 2 usage or input error
(including ``--replay`` when the store or the verifier cannot run here, and a certificate over
the 16 MiB cap). See ``docs/cli-exit-codes.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from affidavit.cli.common import (
    EXIT_FAIL,
    EXIT_OK,
    cli_settings,
    dump_json,
    fail_usage,
    read_text_arg,
    safe,
    usage_errors,
)
from affidavit.core.errors import AffidavitError
from affidavit.core.text import safe_terminal

ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="affidavit.toml to read (default: ./affidavit.toml)."),
]

keys_app = typer.Typer(help="Manage the Ed25519 key that signs certificates.", no_args_is_help=True)
certificate_app = typer.Typer(help="Check signed certificates.", no_args_is_help=True)


@keys_app.command("generate")
def keys_generate(
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing key (the old one is lost).")
    ] = False,
    encrypt: Annotated[
        bool,
        typer.Option(
            "--encrypt",
            help="Encrypt the key with a passphrase (AFFIDAVIT_CERTIFY__KEY_PASSPHRASE, or asked).",
        ),
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """Create a signing key at the configured location (certify.key_path or <home>/keys)."""
    from affidavit.certify.keys import default_key_path, generate_key, key_id, public_key_path
    from affidavit.core.errors import SigningKeyError

    settings = cli_settings(config)
    path = default_key_path(settings)
    passphrase: str | None = None
    if encrypt:
        secret = settings.certify.key_passphrase
        passphrase = (
            secret.get_secret_value()
            if secret is not None
            else typer.prompt("passphrase", hide_input=True, confirmation_prompt=True)
        )
        if not passphrase:
            raise fail_usage("--encrypt needs a non-empty passphrase")
    try:
        key = generate_key(path, force=force, passphrase=passphrase)
    except SigningKeyError as exc:
        raise fail_usage(exc.message) from None
    except OSError as exc:
        from affidavit.cli.common import describe_os_error

        raise fail_usage(f"cannot write the key: {describe_os_error(exc)}") from None
    typer.echo(f"private key: {safe_terminal(str(path))}")
    typer.echo(f"public key:  {safe_terminal(str(public_key_path(path)))}")
    typer.echo(f"key id:      {key_id(key.public_key())}")


@keys_app.command("show")
def keys_show(config: ConfigOpt = None) -> None:
    """Print the signing key's id and public key file (share that file so others can trust it)."""
    from affidavit.certify.keys import default_key_path, key_id, load_signing_key, public_key_path
    from affidavit.core.errors import AffidavitError

    settings = cli_settings(config)
    path = default_key_path(settings)
    try:
        key = load_signing_key(settings)
    except AffidavitError as exc:
        raise fail_usage(exc.message) from None
    typer.echo(f"private key: {safe_terminal(str(path))}")
    typer.echo(f"public key:  {safe_terminal(str(public_key_path(path)))}")
    typer.echo(f"key id:      {key_id(key.public_key())}")


def _replay(cert_path: Path, store: Path, settings: Any) -> Any:
    """Run the replay; raises typer.Exit(2) when the store or verifier cannot run here."""
    from pydantic import ValidationError

    from affidavit.certify.certificate import load_certificate, policy_of
    from affidavit.certify.replay import replay_certificate
    from affidavit.core.errors import AffidavitError
    from affidavit.core.settings import VerifySettings

    cert = load_certificate(cert_path)
    try:
        from affidavit.store.local import LocalStore
    except ImportError as exc:
        raise fail_usage(f"--replay needs the local store, which is not available: {exc}") from None
    try:
        from affidavit.verify.cascade import ClaimCascade
    except ImportError as exc:
        raise fail_usage(
            f"--replay needs the claim verifier, which is not available: {exc}"
        ) from None
    try:
        recorded = VerifySettings.model_validate(cert.config.get("verify", {}))
    except ValidationError:
        recorded = settings.verify
        typer.echo("warning: recorded verify settings unreadable; using the current ones", err=True)
    try:
        verifier = ClaimCascade(recorded, policy_of(cert.policy))
    except AffidavitError as exc:
        raise fail_usage(f"--replay: the verifier cannot be built: {exc.message}") from None
    if verifier.stage_errors:
        problems = "; ".join(verifier.stage_errors.values())
        raise fail_usage(f"--replay: the verifier cannot run here ({problems})")
    try:
        source = LocalStore(store, read_only=True)
    except AffidavitError as exc:
        raise fail_usage(f"--replay: {exc.message}") from None
    try:
        return replay_certificate(cert, verifier, source)
    finally:
        source.close()


def _verify_with_store(cert: Path, trusted: Any, store: Path) -> Any:
    """Verify, comparing every evidence span with the text the store holds for it."""
    from affidavit.certify.replay import store_lookup
    from affidavit.certify.verify import verify_certificate

    try:
        from affidavit.store.local import LocalStore
    except ImportError as exc:
        raise fail_usage(f"--store needs the local store, which is not available: {exc}") from None
    from affidavit.core.errors import AffidavitError

    try:
        source = LocalStore(store, read_only=True)
    except AffidavitError as exc:
        raise fail_usage(f"--store: {exc.message}") from None

    try:
        return verify_certificate(cert, trusted, store_lookup(source))
    finally:
        source.close()


def _refuse_deep_json(cert: Path) -> None:
    """Exit 2 for a certificate nested too deeply, before the certify stage parses it.

    The stage's own parser (and the validators and encoders after it) recurse, so a hostile
    nesting ended in exit 3; the depth is measured here without parsing (issue 26.6). A file
    that cannot be read is left to the stage, which reports it in its own words.
    """
    from affidavit.core.limits import MAX_CERTIFICATE_BYTES, check_json_depth, read_file_bounded

    with usage_errors():
        try:
            raw = read_file_bounded(cert, MAX_CERTIFICATE_BYTES, "certificate")
        except AffidavitError:
            return
        check_json_depth(raw, str(cert))


@certificate_app.command("verify")
def certificate_verify(
    cert: Annotated[Path, typer.Argument(help="The certificate JSON file.")],
    public_key: Annotated[
        list[Path] | None,
        typer.Option(
            "--public-key",
            "-k",
            help="Trust this public key (PEM); repeatable. Settings' certify.trusted_keys and "
            "your own key are trusted too.",
        ),
    ] = None,
    replay: Annotated[
        bool,
        typer.Option(
            "--replay",
            help="Re-run verification on the stored evidence (certificates of ask, whose "
            "evidence is in the store; not those of audit --certify).",
        ),
    ] = False,
    store: Annotated[
        Path | None,
        typer.Option(
            "--store", help="Store folder: compare evidence hashes with it (and --replay on it)."
        ),
    ] = None,
    log: Annotated[
        bool,
        typer.Option(
            "--log",
            help="Also check its transparency-log entry offline: the checkpoint's signature and "
            "the inclusion proof to its root.",
        ),
    ] = False,
    checkpoint: Annotated[
        Path | None,
        typer.Option(
            "--checkpoint",
            help="With --log: a newer signed checkpoint of the same log; check that it extends "
            "the certificate's (proof from --consistency-proof, else from your log).",
        ),
    ] = None,
    consistency_proof: Annotated[
        Path | None,
        typer.Option(
            "--consistency-proof",
            help="Consistency proof JSON to --checkpoint (`log prove-consistency`, or "
            "GET /v1/log/proof/consistency).",
        ),
    ] = None,
    log_dir: Annotated[
        Path | None,
        typer.Option("--log-dir", help="The log to build a consistency proof from."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Check a certificate's schema, signature, signer and evidence hashes (exit 0 valid, 1 not),
    and the log entry it carries, if any (offline); with --log, an entry is required and a newer
    checkpoint can be checked against it."""
    from affidavit.certify.keys import trusted_keys
    from affidavit.certify.verify import verify_certificate
    from affidavit.core.errors import AffidavitError

    if replay and store is None:
        raise fail_usage("--replay needs --store DIR")
    if (checkpoint or consistency_proof) and not log:
        raise fail_usage("--checkpoint and --consistency-proof go with --log")
    settings = cli_settings(config)
    _refuse_deep_json(cert)
    try:
        trusted = trusted_keys(settings, public_key or [])
    except AffidavitError as exc:
        raise fail_usage(exc.message) from None  # a key file that cannot be read is a usage error
    with usage_errors():
        if store is not None:
            result = _verify_with_store(cert, trusted, store)
        else:
            result = verify_certificate(cert, trusted)
    reasons = list(result.reasons)
    if log:
        reasons.extend(
            _log_reasons(cert, settings, trusted, checkpoint, consistency_proof, log_dir)
        )
    elif result.valid and _carries_log_entry(cert):
        # a log entry the file carries is checked too, offline (its checkpoint's signature and
        # the inclusion proof): the entry is outside the certificate's signature, and an edited
        # one passed as valid
        reasons.extend(_log_reasons(cert, settings, trusted, None, None, None))
    replayed = None
    if replay and store is not None and result.valid:
        with usage_errors():
            replayed = _replay(cert, store, settings)
        reasons.extend(f"replay disagreement: {m}" for m in replayed.mismatches)
    # claims on web evidence cannot be replayed: neither a disagreement nor hidden
    not_replayed = list(replayed.not_replayed) if replayed is not None else []
    valid = not reasons
    # fail closed: --replay asked for every decision to be re-checked; one that could not be is
    # not a pass (exit 1, JSON "valid" false), even though the signature and the hashes hold
    # (JSON "signature_ok" and "trusted" still say so)
    passed = valid and not not_replayed
    if as_json:
        out = result.model_dump(mode="json")
        out["valid"] = passed
        out["reasons"] = reasons + [f"replay incomplete: {n}" for n in not_replayed]
        if replay:
            out["replay"] = {
                "ran": replayed is not None,
                "mismatches": list(replayed.mismatches) if replayed is not None else [],
                "not_replayed": not_replayed,
                "decisions": dict(replayed.decisions) if replayed is not None else {},
                "deleted_chunks": list(replayed.deleted_chunks) if replayed is not None else [],
                "complete": replayed is not None and not not_replayed,
            }
        typer.echo(dump_json(out))
    elif valid:
        if not replay:
            done = ""
        elif not_replayed:
            done = f"; replay agrees on {len(replayed.decisions) if replayed else 0} claims, "
            done += f"{len(not_replayed)} not replayable (listed below): replay incomplete"
        else:
            done = "; replay agrees"
        logged = ""
        if log:
            logged = "; in the log" + (", which a newer checkpoint extends" if checkpoint else "")
        typer.echo(
            f"{'valid' if passed else 'INCOMPLETE'}: signed by trusted key {result.key_id}; "
            f"{result.evidence_checked} evidence hashes checked" + logged + done
        )
        for n in not_replayed:
            typer.echo(f"not replayed: {safe_terminal(n)}")
        for w in result.warnings:
            typer.echo(f"warning: {safe_terminal(w)}", err=True)
    else:
        typer.echo("INVALID", err=True)
        for r in reasons:  # reasons quote the certificate: untrusted text
            typer.echo(f"  - {safe_terminal(r)}", err=True)
    raise typer.Exit(EXIT_OK if passed else EXIT_FAIL)


def _carries_log_entry(cert: Path) -> bool:
    from affidavit.certify.certificate import load_certificate

    with usage_errors():
        return load_certificate(cert).log_entry is not None


def _log_reasons(
    cert: Path,
    settings: Any,
    trusted: Any,
    checkpoint: Path | None,
    consistency_proof: Path | None,
    log_dir: Path | None,
) -> list[str]:
    """Why the certificate's log entry does not hold (``--log``), offline."""
    from affidavit.certify.certificate import load_certificate
    from affidavit.cli.log import open_own_log, read_proof_file
    from affidavit.core.limits import read_file_bounded
    from affidavit.tlog.certificates import check_log_entry
    from affidavit.tlog.note import MAX_NOTE_BYTES

    with usage_errors():
        model = load_certificate(cert)
        newer = (
            read_file_bounded(checkpoint, MAX_NOTE_BYTES, "checkpoint").decode("utf-8", "replace")
            if checkpoint is not None
            else None
        )
    proof = read_proof_file(consistency_proof) if consistency_proof is not None else None
    source = None
    if newer is not None and proof is None:
        source = open_own_log(settings, log_dir)
    try:
        return [
            f"log: {r}"
            for r in check_log_entry(
                model, trusted.values(), newer=newer, consistency=proof, log=source
            )
        ]
    finally:
        if source is not None:
            source.close()


@certificate_app.command("prove")
def certificate_prove(
    cert: Annotated[Path, typer.Argument(help="The certificate JSON file.")],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write the certificate here (default: in place)."),
    ] = None,
    log_dir: Annotated[
        Path | None, typer.Option("--log-dir", help="The log folder (default: your key's log).")
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Attach (or refresh) the certificate's log entry: its inclusion proof to the latest
    checkpoint. Only the unsigned log_entry changes (exit 1: not in the log)."""
    from affidavit.certify.certificate import load_certificate, write_certificate
    from affidavit.cli.log import open_own_log
    from affidavit.core.errors import TransparencyLogError
    from affidavit.tlog.certificates import prove_certificate

    settings = cli_settings(config)
    _refuse_deep_json(cert)
    with usage_errors():
        model = load_certificate(cert)
    with open_own_log(settings, log_dir) as source:
        try:
            proved = prove_certificate(model, source)
        except TransparencyLogError as exc:
            typer.echo(f"NOT IN THE LOG: {safe_terminal(exc.message)}", err=True)
            raise typer.Exit(EXIT_FAIL) from None
    with usage_errors():
        write_certificate(proved, output or cert)
    assert proved.log_entry is not None
    entry = proved.log_entry
    typer.echo(
        f"entry {entry.inclusion.leaf_index} of {entry.checkpoint.tree_size} in "
        f"{safe_terminal(entry.checkpoint.origin)}: proof written to "
        f"{safe_terminal(str(output or cert))}"
    )


@certificate_app.command("show")
def certificate_show(
    cert: Annotated[Path, typer.Argument(help="The certificate JSON file.")],
) -> None:
    """Print a certificate's claims, decisions and reasons (does not check the signature)."""
    from rich.console import Console
    from rich.table import Table

    from affidavit.certify.certificate import load_certificate

    _refuse_deep_json(cert)
    with usage_errors():
        c = load_certificate(cert)
    # nothing here is checked (no signature check): every string is printed escaped
    console = Console(highlight=False)
    console.print(f"question:  {safe(c.question)}")
    console.print(f"created:   {c.created_at}   key id: {safe(c.key_id or '(unsigned)')}")
    console.print(
        f"policy:    {safe(c.policy.preset)} (tau_entail {c.policy.tau_entail}, "
        f"tau_contradict {c.policy.tau_contradict}, display {safe(c.policy.display)})"
    )
    if c.models:
        console.print(
            "models:    " + ", ".join(f"{safe(m.name)} ({safe(m.sha256[:12])})" for m in c.models)
        )
    table = Table("claim", "decision", "p_entail", "p_contra", "text", "reason", show_lines=True)
    style = {"verified": "green", "unverified": "yellow", "blocked": "red"}
    for r in c.claims:
        table.add_row(
            safe(r.claim.id),
            f"[{style[r.decision]}]{r.decision}[/]",
            "-" if r.p_entail is None else f"{r.p_entail:.2f}",
            "-" if r.p_contradict is None else f"{r.p_contradict:.2f}",
            safe(r.claim.text),
            safe(r.reason),  # evidence locations look like [markup]
        )
    console.print(table)
    console.print("(not checked: run `affidavit certificate verify` to check the signature)")


def export_schemas_cmd(
    directory: Annotated[Path, typer.Argument(help="Folder to write <Name>.json files into.")],
) -> None:
    """Write the JSON Schema of every public contract, and the HTTP API's openapi.json."""
    from affidavit.certify.schemas import export_schemas
    from affidavit.server import export_openapi

    with usage_errors():
        written = export_schemas(directory)
        try:
            openapi = export_openapi(directory)
        except OSError as exc:
            raise fail_usage(f"cannot write openapi.json: {exc.strerror or exc}") from None
    typer.echo(f"wrote {len(written)} schemas to {safe_terminal(str(directory))}")
    if openapi is not None:
        typer.echo(f"wrote {safe_terminal(str(openapi))} (the HTTP API)")
    else:
        typer.echo('openapi.json not written: pip install "affidavit[server]"', err=True)


def validate_cmd(
    file: Annotated[str, typer.Argument(help="JSON file to check ('-' for stdin).")],
    schema: Annotated[
        str, typer.Option("--schema", "-s", help="Contract name, e.g. Certificate, Verdict.")
    ],
) -> None:
    """Validate a JSON file against a contract's schema (exit 0 valid, 1 invalid)."""
    from affidavit.certify.canonical import loads_strict
    from affidavit.certify.schemas import validate_json
    from affidavit.core.limits import MAX_CERTIFICATE_BYTES, check_json_depth

    with usage_errors():
        text = read_text_arg(file, MAX_CERTIFICATE_BYTES)
        check_json_depth(text, file)  # before any parser recurses into it (issue 26.6)
        loads_strict(text, source=file)  # not JSON at all is a usage error, not a schema failure
        errors = validate_json(text, schema)
    if errors:
        typer.echo(f"INVALID against {safe_terminal(schema)}:", err=True)
        for e in errors:
            typer.echo(f"  - {safe_terminal(e)}", err=True)
        raise typer.Exit(EXIT_FAIL)
    typer.echo(f"valid {safe_terminal(schema)}")


def register(app: typer.Typer) -> None:
    """Add this group's commands to the app."""
    app.add_typer(keys_app, name="keys")
    app.add_typer(certificate_app, name="certificate")
    app.command("export-schemas")(export_schemas_cmd)
    app.command("validate")(validate_cmd)
