"""Every certificate ``ask --certify`` issues verifies and replays on the store that produced it.

Issue 25, item 4: corrective retrieval trims a retrieved chunk to its relevant sentences, the
verifier checks claims against the trimmed passage, and the certificate named the trimmed
passage's id, which no store holds: ``certificate verify --store`` warned "not found in the
evidence source" and ``--replay`` said INVALID. Here the demo's questions (which the ask
benchmark asks too) run on the bundled sample corpus through the real CLI, store, corrective
stage and verifier, with the LLM scripted on loopback.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from affidavit.certify.certificate import load_certificate
from affidavit.certify.keys import generate_key, public_key_path
from affidavit.cli.main import app
from affidavit.demo import SAMPLE_QUESTIONS, default_corpus
from affidavit.testing.fake_llm import FakeOpenAIServer, FakeReply

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]

# one sentence the corpus states and one it does not, per question (the last is not in it)
ANSWERS = {
    SAMPLE_QUESTIONS[0]: (
        "In 1898 Marie Curie announced the discovery of two new elements, polonium and radium "
        "[1]. Marie Curie was born on the Moon in 1990 [1]."
    ),
    SAMPLE_QUESTIONS[1]: (
        "Construction of the Eiffel Tower began in January 1887 and was completed in March 1889 "
        "[1]. The tower was painted gold in 1925 [1]."
    ),
    SAMPLE_QUESTIONS[2]: (
        "Neil Armstrong and Buzz Aldrin landed the lunar module Eagle on July 20, 1969 [1]. "
        "Michael Collins walked on the Moon first [1]."
    ),
    SAMPLE_QUESTIONS[3]: "France won the 1998 football World Cup [1].",
}


@pytest.fixture(scope="module", params=["5.0", "off"], ids=["default", "refine-every-chunk"])
def certified(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path, dict[str, Path]]:
    """The store, the signer's public key, and one certificate per question.

    Run with the shipped settings (a relevant chunk is kept whole, but under a new id) and with
    every chunk refined to its relevant sentences (CRAG's own setting: trimmed passages).
    """
    assert set(ANSWERS) == set(SAMPLE_QUESTIONS)  # every demo question is asked
    corpus = default_corpus()
    assert corpus is not None, "sample_corpus/ is missing"
    root = tmp_path_factory.mktemp("replay")
    store = root / "store"
    result = CliRunner().invoke(app, ["ingest", str(corpus), "--store", str(store)])
    assert result.exit_code == 0, result.output
    key = root / "keys" / "signing.pem"
    generate_key(key)
    certificates: dict[str, Path] = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AFFIDAVIT_CERTIFY__KEY_PATH", str(key))
        mp.setenv("AFFIDAVIT_GENERATE__BACKEND", "openai")
        mp.setenv("AFFIDAVIT_GENERATE__MAX_RETRIES", "0")
        mp.setenv("AFFIDAVIT_CORRECT__KEEP_WHOLE_THRESHOLD", request.param)
        for i, question in enumerate(SAMPLE_QUESTIONS):
            with FakeOpenAIServer([FakeReply(content=ANSWERS[question])]) as llm:
                mp.setenv("AFFIDAVIT_GENERATE__BASE_URL", llm.url)
                out = root / f"answer{i}.cert.json"
                result = CliRunner().invoke(
                    app, ["ask", question, "--store", str(store), "--certify", str(out)]
                )
                assert result.exit_code == 0, result.output
                certificates[question] = out
    return store, public_key_path(key), certificates


@pytest.mark.parametrize("question", SAMPLE_QUESTIONS)
def test_certificate_verifies_and_replays_to_the_recorded_decisions(
    certified: tuple[Path, Path, dict[str, Path]], question: str
) -> None:
    store, public, certificates = certified
    path = certificates[question]
    result = CliRunner().invoke(
        app,
        [
            "certificate",
            "verify",
            str(path),
            "--store",
            str(store),
            "--replay",
            "--json",
            "--public-key",
            str(public),
        ],
    )
    out = json.loads(result.stdout)
    assert result.exit_code == 0, out
    assert out["valid"] is True, out["reasons"]
    assert out["warnings"] == []
    assert out["replay"]["mismatches"] == []
    assert out["replay"]["not_replayed"] == []
    recorded = {r.claim.id: r.decision for r in load_certificate(path).claims}
    assert out["replay"]["decisions"] == recorded
    # every evidence span was compared with the text rebuilt from the store
    evidence = sum(len(r.evidence) for r in load_certificate(path).claims)
    assert out["evidence_checked"] == 2 * evidence


def test_evidence_names_its_stored_chunk_and_how_it_was_refined(
    certified: tuple[Path, Path, dict[str, Path]], request: pytest.FixtureRequest
) -> None:
    """Every evidence span records its stored chunk; refining every chunk trims some."""
    _, _, certificates = certified
    origins = [
        ev.origin
        for path in certificates.values()
        for record in load_certificate(path).claims
        for ev in record.evidence
    ]
    assert origins and all(o is not None and o.kind == "store" for o in origins)
    if "refine-every-chunk" in request.node.callspec.id:
        # the case of the issue: claims rest on passages the refinement trimmed
        assert any(o.kept is not None for o in origins if o is not None)
    verified = [
        r.decision for p in certificates.values() for r in load_certificate(p).claims
    ].count("verified")
    assert verified >= 2  # the answers' supported sentences, not a run where nothing verifies


def test_web_evidence_is_reported_as_not_replayable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Evidence from the web fallback (here the offline one: a second store) is in no store the
    certificate can be replayed on: verify and replay say so, neither INVALID nor a silent pass."""
    local, web = tmp_path / "local", tmp_path / "web"
    local.mkdir()
    web.mkdir()
    (local / "light.txt").write_text(
        "The Bell Rock Lighthouse stands off the coast of Angus. It was built by Robert Stevenson.",
        encoding="utf-8",
    )
    (web / "bridge.txt").write_text(
        "The Forth Bridge is a railway bridge in Scotland. The Forth Bridge opened on 4 March "
        "1890. It was designed by John Fowler.",
        encoding="utf-8",
    )
    for corpus in (local, web):
        done = CliRunner().invoke(app, ["ingest", str(corpus), "--store", str(corpus / ".s")])
        assert done.exit_code == 0, done.output
    key = tmp_path / "keys" / "signing.pem"
    generate_key(key)
    monkeypatch.setenv("AFFIDAVIT_CERTIFY__KEY_PATH", str(key))
    monkeypatch.setenv("AFFIDAVIT_CORRECT__WEB_PROVIDER", "store")
    monkeypatch.setenv("AFFIDAVIT_CORRECT__FALLBACK_STORE", str(web / ".s"))
    monkeypatch.setenv("AFFIDAVIT_CORRECT__REWRITE_QUERY", "false")
    monkeypatch.setenv("AFFIDAVIT_GENERATE__BACKEND", "openai")
    monkeypatch.setenv("AFFIDAVIT_GENERATE__MAX_RETRIES", "0")
    path = tmp_path / "answer.cert.json"
    question = "When did the Forth Bridge open?"
    with FakeOpenAIServer(
        [FakeReply(content="The Forth Bridge opened on 4 March 1890 [1].")]
    ) as llm:
        monkeypatch.setenv("AFFIDAVIT_GENERATE__BASE_URL", llm.url)
        done = CliRunner().invoke(
            app, ["ask", question, "--store", str(local / ".s"), "--certify", str(path)]
        )
    assert done.exit_code == 0, done.output
    cert = load_certificate(path)
    web_claims = [
        r.claim.id
        for r in cert.claims
        if any(e.origin is not None and e.origin.kind == "web" for e in r.evidence)
    ]
    assert web_claims, cert.claims  # the answer rests on the fallback's passage

    args = ["certificate", "verify", str(path), "--store", str(local / ".s"), "--replay"]
    result = CliRunner().invoke(app, [*args, "--json", "--public-key", str(public_key_path(key))])
    out = json.loads(result.stdout)
    # signature and hashes valid, but a replay that could not re-check a claim is not a pass:
    # not for the exit code, nor for a client that reads only "valid"
    assert result.exit_code == 1, out
    assert out["signature_ok"] is True and out["trusted"] is True
    assert out["valid"] is False and out["replay"]["mismatches"] == []
    assert out["reasons"] == [f"replay incomplete: {n}" for n in out["replay"]["not_replayed"]]
    assert out["replay"]["complete"] is False
    assert [n.split(":")[0] for n in out["replay"]["not_replayed"]] == [
        f"claim {c}" for c in web_claims
    ]
    assert all("from the web" in w and "not in the store" in w for w in out["warnings"])
    assert len(out["warnings"]) == sum(
        len(r.evidence) for r in cert.claims if r.claim.id in web_claims
    )
    assert set(out["replay"]["decisions"]) == {r.claim.id for r in cert.claims} - set(web_claims)
    human = CliRunner().invoke(app, [*args, "--public-key", str(public_key_path(key))])
    assert human.exit_code == 1
    assert human.stdout.startswith("INCOMPLETE: signed by trusted key")
    assert "replay incomplete" in human.stdout
    assert (
        "not replayable" in human.stdout and f"not replayed: claim {web_claims[0]}" in human.stdout
    )


HALUEVAL = ROOT.parent / "shared" / "data" / "halueval" / "qa_dev.jsonl"
SPLITS = ROOT / "training" / "splits.json"


@pytest.mark.skipif(
    not (HALUEVAL.is_file() and SPLITS.is_file()), reason="../shared/data/halueval absent"
)
def test_the_ask_benchmarks_questions_certify_and_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 25.4 asks for the ask benchmark's questions too: the first held-out HaluEval qa
    questions of ``benchmarks/ask_halueval.py`` (its seed), right and hallucinated answers fed
    as the LLM's, every chunk refined (the trimmed passages of the issue), on a store of their
    passages and 40 others."""
    import numpy as np

    rows = [json.loads(line) for line in HALUEVAL.read_text(encoding="utf-8").splitlines()]
    held = json.loads(SPLITS.read_text())["halueval"]["qa"]["eval_row_indices"]
    order = [int(held[i]) for i in np.random.default_rng(13).permutation(len(held))]
    asked, others = order[:4], order[60:100]
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in asked + others:
        (corpus / f"k{i}.txt").write_text(rows[i]["knowledge"], encoding="utf-8")
    store = tmp_path / "store"
    done = CliRunner().invoke(app, ["ingest", str(corpus), "--store", str(store)])
    assert done.exit_code == 0, done.output
    key = tmp_path / "keys" / "signing.pem"
    generate_key(key)
    for name, value in {
        "AFFIDAVIT_CERTIFY__KEY_PATH": str(key),
        "AFFIDAVIT_GENERATE__BACKEND": "openai",
        "AFFIDAVIT_GENERATE__MAX_RETRIES": "0",
        "AFFIDAVIT_CORRECT__KEEP_WHOLE_THRESHOLD": "off",
    }.items():
        monkeypatch.setenv(name, value)
    decisions: list[str] = []
    for i in asked:
        for kind in ("right_answer", "hallucinated_answer"):
            path = tmp_path / f"{i}-{kind}.cert.json"
            with FakeOpenAIServer([FakeReply(content=rows[i][kind] + " [1]")]) as llm:
                monkeypatch.setenv("AFFIDAVIT_GENERATE__BASE_URL", llm.url)
                args = ["ask", rows[i]["question"], "--store", str(store), "--certify", str(path)]
                done = CliRunner().invoke(app, args)
            assert done.exit_code == 0, done.output
            args = ["certificate", "verify", str(path), "--store", str(store), "--replay"]
            args += ["--json", "--public-key", str(public_key_path(key))]
            result = CliRunner().invoke(app, args)
            out = json.loads(result.stdout)
            assert result.exit_code == 0, (i, kind, out)
            assert out["valid"] is True and out["warnings"] == [], (i, kind, out)
            assert out["replay"]["mismatches"] == [] and out["replay"]["not_replayed"] == []
            recorded = {r.claim.id: r.decision for r in load_certificate(path).claims}
            assert out["replay"]["decisions"] == recorded
            decisions += recorded.values()
    assert "verified" in decisions  # not a run where nothing verifies
