"""``python -m affidavit.demo`` (``make demo``): the whole job on a bundled sample corpus.

Ingests the sample corpus into a temporary store, then asks questions the documents answer and
one they do not, with the embedded LLM (no network). Each answer streams as it is generated,
then the verified rendering replaces it: badges per claim, sources, corrections.

Options: ``--corpus DIR`` (default: ``sample_corpus/`` at the repository root), ``--mode``
(default ``mixed`` so withheld sentences are visible with their badges), ``--question Q``
(repeatable; replaces the built-in questions), ``--store DIR`` (keep the store there),
``--certify DIR`` (keep the certificates there; by default they go to a temporary folder).

Every answer is certified: signed with a demo key of its own (``DIR/keys/signing.pem``, never the
user's key), appended to that key's transparency log, then checked as a user would check it,
``affidavit certificate verify CERT --log --store STORE --public-key PUB`` (the command is printed).
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from rich.console import Console

    from affidavit.core.types import DisplayMode

log = logging.getLogger(__name__)

# questions the sample corpus answers, and one it does not (the last)
SAMPLE_QUESTIONS = (
    "Which two elements did Marie Curie discover in 1898?",
    "When was the Eiffel Tower completed?",
    "On what date did the Apollo 11 lunar module land on the Moon?",
    "Who won the 1998 football World Cup?",
)

# a fallback corpus, used only when sample_corpus/ is missing (e.g. an installed wheel)
_FALLBACK_DOCS = {
    "marie_curie.txt": (
        "Marie Curie was a Polish and naturalised-French physicist and chemist. In 1898, "
        "working with her husband Pierre Curie, she announced the discovery of two new elements: "
        "polonium, which she named after her native Poland, and radium."
    ),
    "eiffel_tower.txt": (
        "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris. "
        "Construction began in January 1887 and was completed in March 1889."
    ),
    "apollo_11.txt": (
        "Apollo 11 was the American spaceflight that first landed humans on the Moon. Neil "
        "Armstrong and Buzz Aldrin landed the lunar module Eagle on July 20, 1969."
    ),
}


def default_corpus() -> Path | None:
    """``sample_corpus/`` at the repository root, when running from a checkout."""
    root = Path(__file__).resolve().parents[2] / "sample_corpus"
    for candidate in (root / "docs", root):
        if candidate.is_dir():
            return candidate
    return None


def _fallback_corpus(where: Path) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    for name, text in _FALLBACK_DOCS.items():
        (where / name).write_text(text + "\n", encoding="utf-8")
    return where


def _ingest(corpus: Path, store_dir: Path) -> None:
    from rich.console import Console

    from affidavit.core.settings import load_settings
    from affidavit.ingest.pipeline import Ingestor
    from affidavit.retrieve.embedders import make_embedder
    from affidavit.store.factory import make_store

    settings = load_settings()
    store = make_store(settings.store, path=store_dir)
    report = Ingestor(store, make_embedder(settings.embed), settings.ingest).ingest([corpus])
    console = Console()
    counts = ", ".join(f"{k} {v}" for k, v in report.counts().items() if v)
    console.print(
        f"ingested {corpus} -> {store_dir}: {counts}; {report.chunks_total} chunks "
        f"({report.seconds:.1f}s)",
        markup=False,
        highlight=False,
    )
    for outcome in report.failed:
        console.print(f"  failed {outcome.source}: {outcome.reason}", markup=False)


def run(
    corpus: Path | None,
    questions: Sequence[str],
    *,
    mode: str = "mixed",
    store_dir: Path | None = None,
    certify_dir: Path | None = None,
) -> int:
    """Ingest ``corpus``, ask each question and certify each answer; returns the exit code
    (1 when an answer or its certificate check fails)."""
    from rich.console import Console
    from rich.live import Live
    from rich.rule import Rule
    from rich.text import Text

    from affidavit.cli.ask import print_result
    from affidavit.core.errors import AffidavitError
    from affidavit.core.settings import load_settings
    from affidavit.pipeline.build import build_pipeline

    display = cast("DisplayMode", mode)
    console = Console()
    with tempfile.TemporaryDirectory(prefix="affidavit-demo-") as tmp:
        if corpus is None:
            corpus = _fallback_corpus(Path(tmp) / "corpus")
            console.print("sample_corpus/ not found: using the built-in two-document corpus")
        where = store_dir or Path(tmp) / "store"
        _ingest(corpus, where)
        certs = certify_dir or Path(tmp) / "certificates"
        key = _demo_key(certs)
        settings = load_settings()
        settings = settings.model_copy(
            update={"certify": settings.certify.model_copy(update={"key_path": key})}
        )
        try:
            pipe = build_pipeline(settings, store_path=where, certify=True)
        except AffidavitError as exc:
            console.print(f"error: {exc.message}", markup=False)
            return 2
        with console.status("loading the embedded LLM (first run assembles it, ~1 GB)..."):
            load = getattr(pipe.generator, "load", None)
            try:
                if callable(load):
                    load()
            except AffidavitError as exc:
                console.print(f"error: {exc.message}", markup=False)
                return 1
        failed = False
        for n, question in enumerate(questions, start=1):
            console.print(Rule(question))
            cert = certs / f"answer-{n}.cert.json"
            provisional = Text(style="dim")
            # strict mode shows nothing unverified: not the draft as it is written, nor what
            # the model wrote (issue 25.2)
            strict = display == "strict"
            try:
                if strict:
                    with console.status("answering..."):
                        result = pipe.ask(question, mode=display, certify=cert)
                else:
                    with Live(provisional, console=console, transient=True) as live:

                        def show(piece: str, live: Live = live, text: Text = provisional) -> None:
                            text.append(piece)
                            live.update(text)

                        result = pipe.ask(question, mode=display, on_token=show, certify=cert)
            except AffidavitError as exc:
                console.print(f"error: {exc.message}", markup=False)
                return 1
            if not strict and result.trace.raw_answer and result.trace.raw_answer != result.draft:
                # citations were removed or corrected: show what the model actually wrote
                console.print(Text("model wrote: " + result.trace.raw_answer, style="dim"))
            print_result(console, result)
            failed |= not _check_certificate(console, cert, where, key)
        if certify_dir is None:
            console.print(
                "(the certificates and the store go with this run's temporary folder: "
                "--certify DIR --store DIR keep them)",
                style="dim",
                markup=False,
            )
    return 1 if failed else 0


def _demo_key(certs: Path) -> Path:
    """The demo's own signing key under ``certs/keys`` (made on first use; never the user's)."""
    from affidavit.certify.keys import generate_key

    key = certs / "keys" / "signing.pem"
    if not key.exists():
        generate_key(key)
    return key


def _check_certificate(console: Console, cert: Path, store: Path, key: Path) -> bool:
    """Run ``affidavit certificate verify CERT --log`` as a user would; print its verdict."""
    import os
    import subprocess

    from affidavit.certify.keys import public_key_path

    pub = public_key_path(key)
    args = ["certificate", "verify", str(cert), "--log", "--store", str(store)]
    args += ["--public-key", str(pub)]
    env = {**os.environ, "AFFIDAVIT_CERTIFY__KEY_PATH": str(key)}
    done = subprocess.run(
        [sys.executable, "-m", "affidavit.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    said = (done.stdout.strip() or done.stderr.strip()).splitlines()
    verdict = said[0] if said else f"exit {done.returncode}"
    console.print(f"certificate {cert.name}: {verdict}", markup=False, soft_wrap=True)
    command = f"  check it yourself: affidavit {' '.join(args)}"
    console.print(command, markup=False, style="dim", soft_wrap=True)
    if done.returncode != 0:
        for line in said[1:]:
            console.print(f"  {line}", markup=False)
    return done.returncode == 0


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m affidavit.demo", description=__doc__)
    parser.add_argument("--corpus", type=Path, default=None, help="folder of documents")
    parser.add_argument("--store", type=Path, default=None, help="keep the store in this folder")
    parser.add_argument("--mode", choices=("strict", "mixed", "debug"), default="mixed")
    parser.add_argument("--question", action="append", default=None, help="ask this instead")
    parser.add_argument(
        "--certify", type=Path, default=None, help="keep the certificates (and demo key) here"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs index builds at DEBUG
    corpus = args.corpus or default_corpus()
    if corpus is not None and not corpus.is_dir():
        print(f"error: no such folder: {corpus}", file=sys.stderr)
        return 2
    return run(
        corpus,
        args.question or SAMPLE_QUESTIONS,
        mode=args.mode,
        store_dir=args.store,
        certify_dir=args.certify,
    )


if __name__ == "__main__":
    sys.exit(main())
