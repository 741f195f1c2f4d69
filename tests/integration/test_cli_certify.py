"""The certify CLI end to end: keys, a real signed certificate file, verify, schemas, validate."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from affidavit.certify import build_certificate, certify_answer, sign_certificate
from affidavit.certify.keys import generate_key
from affidavit.cli.main import app
from affidavit.core.settings import Settings
from affidavit.core.types import Chunk, Claim, EvidenceSpan, Verdict

pytestmark = pytest.mark.integration

ANSWER = "Paris is the capital of France [1]. It has 40 million people."
CHUNK = Chunk(id="k1", doc_id="d1", text="Paris is the capital and largest city of France.")
CLAIMS = [
    Claim(id="c1", text="Paris is the capital of France", start=0, end=30),
    Claim(id="c2", text="It has 40 million people", start=36, end=60),
]
VERDICTS = [
    Verdict(
        claim_id="c1",
        label="supported",
        p_entail=0.91,
        p_neutral=0.07,
        p_contradict=0.02,
        evidence=(EvidenceSpan(chunk_id="k1", doc_id="d1", start=0, end=48, text=CHUNK.text),),
    ),
    Verdict(claim_id="c2", label="unsupported", p_entail=0.1, p_neutral=0.85, p_contradict=0.05),
]


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AFFIDAVIT_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_keys_generate_then_sign_then_verify(home: Path, tmp_path: Path) -> None:
    code, out = run("keys", "generate")
    assert code == 0, out
    key_path = home / "keys" / "signing.pem"
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
    assert "key id:" in out
    code, out = run("keys", "generate")
    assert code == 2 and "already exists" in out
    code, shown = run("keys", "show")
    assert code == 0 and str(home / "keys" / "signing.pub.pem") in shown

    settings = Settings(home=home)
    cert_path = tmp_path / "cert.json"
    certify_answer("What is Paris?", ANSWER, CLAIMS, VERDICTS, settings, path=cert_path)

    code, out = run("certificate", "verify", str(cert_path))  # own key is trusted
    assert code == 0, out
    assert out.startswith("valid: signed by trusted key")

    tree = json.loads(cert_path.read_text())
    tree["claims"][1]["decision"] = "verified"
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(tree))
    code, out = run("certificate", "verify", str(tampered))
    assert code == 1
    assert "bad signature" in out

    code, out = run("certificate", "verify", str(cert_path), "--json")
    assert code == 0 and json.loads(out)["valid"] is True

    code, out = run("certificate", "show", str(cert_path))
    assert code == 0, out
    assert "What is Paris?" in out and "verified" in out and "unverified" in out
    assert "[doc d1" in out.replace("\n", " ")  # evidence locations are not eaten as markup


def test_foreign_key_needs_public_key_option(home: Path, tmp_path: Path) -> None:
    foreign = generate_key(tmp_path / "foreign.pem")
    cert = sign_certificate(
        build_certificate("q", ANSWER, CLAIMS, VERDICTS, None, Settings(), []), foreign
    )
    path = tmp_path / "c.json"
    path.write_text(cert.model_dump_json())
    code, out = run("certificate", "verify", str(path))
    assert code == 1 and "unknown key" in out
    code, out = run(
        "certificate", "verify", str(path), "--public-key", str(tmp_path / "foreign.pub.pem")
    )
    assert code == 0, out


def test_no_key_configured_is_a_clear_error(home: Path, tmp_path: Path) -> None:
    from affidavit.core.errors import SigningKeyError

    code, out = run("keys", "show")
    assert code == 2 and "run `affidavit keys generate`" in out

    with pytest.raises(SigningKeyError, match="keys generate"):
        certify_answer("q", ANSWER, CLAIMS, VERDICTS, Settings(home=home), path=tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()


def test_usage_errors_exit_2(home: Path, tmp_path: Path) -> None:
    assert run("certificate", "verify", str(tmp_path / "missing.json"))[0] == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert run("certificate", "verify", str(bad))[0] == 2
    assert run("certificate", "verify", str(bad), "--replay")[0] == 2
    assert (
        run("certificate", "verify", str(bad), "--public-key", str(tmp_path / "none.pem"))[0] == 2
    )


def test_replay_fails_closed_when_it_cannot_run(home: Path, tmp_path: Path) -> None:
    run("keys", "generate")
    path = tmp_path / "cert.json"
    certify_answer("q", ANSWER, CLAIMS, VERDICTS, Settings(home=home), path=path)
    code, out = run(
        "certificate", "verify", str(path), "--replay", "--store", str(tmp_path / "nostore")
    )
    assert code == 2
    assert "no store at" in out


@pytest.mark.parametrize("complete", [False, True], ids=["incomplete", "complete"])
def test_an_incomplete_replay_is_not_valid_in_json(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, complete: bool
) -> None:
    """`--replay --json` with a claim that could not be replayed (its evidence came from the
    web) printed "valid": true beside exit 1, so a client reading `valid` took an incomplete
    check for a pass. `valid` follows the exit code; a reason says why; `signature_ok` and
    `trusted` still say the signature holds. Here the store and the replay are stand-ins (the
    real run: test_ask_certificate_replay.py::test_web_evidence_is_reported_as_not_replayable)."""
    from affidavit.certify.verify import verify_certificate
    from affidavit.cli import certify as certify_cli
    from affidavit.core.certificate import ReplayResult

    run("keys", "generate")
    path = tmp_path / "cert.json"
    certify_answer("q", ANSWER, CLAIMS, VERDICTS, Settings(home=home), path=path)
    web = "claim c1: its evidence came from the web (https://example.org/), which the store ..."
    replayed = ReplayResult(
        agree=complete,
        not_replayed=() if complete else (web,),
        decisions={"c1": "verified", "c2": "unverified"} if complete else {"c2": "unverified"},
    )
    monkeypatch.setattr(
        certify_cli, "_verify_with_store", lambda cert, keys, store: verify_certificate(cert, keys)
    )
    monkeypatch.setattr(certify_cli, "_replay", lambda cert, store, settings: replayed)
    args = ["certificate", "verify", str(path), "--store", str(tmp_path), "--replay", "--json"]
    result = CliRunner().invoke(app, args)
    out = json.loads(result.stdout)
    assert out["signature_ok"] is True and out["trusted"] is True
    assert out["replay"]["complete"] is complete
    if complete:
        assert result.exit_code == 0 and out["valid"] is True and out["reasons"] == []
    else:
        assert result.exit_code == 1
        assert out["valid"] is False, out
        assert out["reasons"] == [f"replay incomplete: {web}"]
        assert out["replay"]["not_replayed"] == [web]


def test_export_schemas_and_validate(home: Path, tmp_path: Path) -> None:
    code, out = run("export-schemas", str(tmp_path / "schemas"))
    assert code == 0 and (tmp_path / "schemas" / "Certificate.json").is_file()
    good = tmp_path / "claim.json"
    good.write_text(CLAIMS[0].model_dump_json())
    assert run("validate", str(good), "--schema", "Claim") == (0, "valid Claim\n")
    bad = tmp_path / "bad_claim.json"
    bad.write_text(json.dumps({"id": "c1", "text": "x", "start": "0", "end": 1}))
    code, out = run("validate", str(bad), "--schema", "Claim")
    assert code == 1 and "start: Input should be a valid integer" in out
    code, out = run("validate", str(good), "--schema", "Nope")
    assert code == 2 and "valid schemas:" in out
    notjson = tmp_path / "n.json"
    notjson.write_text("nope")
    assert run("validate", str(notjson), "--schema", "Claim")[0] == 2


def test_replay_against_a_real_local_store(home: Path, tmp_path: Path) -> None:
    """Ingest real chunks into the LocalStore, certify with the cascade, replay from the store."""
    from affidavit.certify import replay_certificate
    from affidavit.core.settings import PolicySettings, VerifySettings
    from affidavit.core.types import Document
    from affidavit.ingest.chunking import SentenceChunker
    from affidavit.store.base import DocumentBatchItem
    from affidavit.store.local import LocalStore
    from affidavit.testing.embedder import FakeEmbedder
    from affidavit.verify.cascade import ClaimCascade
    from affidavit.verify.fakes import ScriptedScorer

    doc = Document(
        id="eiffel",
        source="eiffel.txt",
        text="The Eiffel Tower is 330 metres tall. It opened to the public in 1889.",
    )
    chunks = SentenceChunker(chunk_size=500, overlap=0).chunk(doc)
    embedder = FakeEmbedder(dim=16)
    store_dir = tmp_path / "store"
    store = LocalStore(store_dir)
    store.upsert(
        [
            DocumentBatchItem(
                document=doc,
                chunks=tuple(chunks),
                vectors=embedder.embed([c.text for c in chunks]),
                origin="eiffel.txt",
            )
        ],
        embedder=embedder.name,
    )
    store.refresh()
    store.close()

    cascade = ClaimCascade(
        VerifySettings(cascade=["checks", "cross_encoder"]),
        PolicySettings(),
        scorers={"cross_encoder": ScriptedScorer({"330": (0.92, 0.06, 0.02)})},
    )
    answer = "The tower is 330 m tall. It opened in 1925."
    claims = [
        Claim(id="c1", text="The tower is 330 m tall.", start=0, end=24),
        Claim(id="c2", text="It opened in 1925.", start=25, end=43),
    ]
    verdicts = [cascade.verify(c, chunks) for c in claims]
    generate_key(home / "keys" / "signing.pem")
    path = tmp_path / "cert.json"
    cert = certify_answer("q", answer, claims, verdicts, Settings(home=home), path=path)
    assert [r.decision for r in cert.claims] == ["verified", "blocked"]

    reader = LocalStore(store_dir, read_only=True)
    try:
        assert replay_certificate(cert, cascade, reader).agree
    finally:
        reader.close()

    code, out = run("certificate", "verify", str(path), "--store", str(store_dir), "--json")
    assert code == 0, out
    report = json.loads(out)
    assert report["evidence_checked"] == 2 * sum(len(r.evidence) for r in cert.claims) > 0
    assert report["warnings"] == []
    assert run("certificate", "verify", str(path), "--store", str(tmp_path / "none"))[0] == 2

    # the CLI replays with the packaged verifier; without it, it must refuse (exit 2), not pretend
    code, out = run("certificate", "verify", str(path), "--replay", "--store", str(store_dir))
    from affidavit.verify.crossencoder import packaged_model_dir

    if not (packaged_model_dir() / "config.json").is_file():
        assert code == 2 and "verifier cannot run here" in out
    else:
        assert code in (0, 1), out


def test_encrypted_key_from_the_cli(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = CliRunner().invoke(app, ["keys", "generate", "--encrypt"], input="s3cret\ns3cret\n")
    assert result.exit_code == 0, result.output
    assert b"ENCRYPTED" in (home / "keys" / "signing.pem").read_bytes()
    from affidavit.core.errors import SigningKeyError

    with pytest.raises(SigningKeyError, match="is encrypted"):
        certify_answer("q", ANSWER, CLAIMS, VERDICTS, Settings(home=home))
    monkeypatch.setenv("AFFIDAVIT_CERTIFY__KEY_PASSPHRASE", "s3cret")
    path = tmp_path / "c.json"
    from affidavit.core.settings import load_settings

    certify_answer("q", ANSWER, CLAIMS, VERDICTS, load_settings(), path=path)
    assert run("certificate", "verify", str(path))[0] == 0
    assert "s3cret" not in path.read_text()


def test_export_schemas_needs_no_server_extra(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 28: without fastapi, export-schemas failed (exit 2) instead of writing the
    contracts' schemas; it writes them and says openapi.json needs the server extra."""
    import sys

    for name in [m for m in sys.modules if m.startswith(("fastapi", "affidavit.server.app"))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "fastapi", None)
    code, out = run("export-schemas", str(tmp_path / "schemas"))
    assert code == 0, out
    assert (tmp_path / "schemas" / "Certificate.json").is_file()
    assert not (tmp_path / "schemas" / "openapi.json").exists()
    assert 'pip install "affidavit[server]"' in out


def test_replay_is_documented_for_ask_certificates_only() -> None:
    """Issue 28: --replay was shown next to `audit --certify` with no word that it replays
    `ask` certificates only (an audit's chunks are in no store)."""
    import re

    root = Path(__file__).resolve().parents[2]
    code, out = run("certificate", "verify", "--help")
    flat = re.sub(r"[\s│]+", " ", out)
    assert code == 0 and "certificates of ask" in flat, flat
    guide = (root / "docs" / "getting-started.md").read_text(encoding="utf-8")
    assert "`--replay` applies to certificates of `ask`" in re.sub(r"\s+", " ", guide)
