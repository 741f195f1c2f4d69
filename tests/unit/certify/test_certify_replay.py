"""Replay re-runs a verifier on stored evidence; disagreement or missing evidence is reported."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from affidavit.certify import load_certificate, replay_certificate, store_lookup, verify_certificate
from affidavit.core.certificate import Certificate, EvidenceOrigin
from affidavit.core.correction import RefinedContext
from affidavit.core.settings import PolicySettings, VerifySettings
from affidavit.core.types import Chunk, Claim, EvidenceSpan, Verdict
from affidavit.correct.fakes import KeywordEvaluator
from affidavit.correct.refine import refine_chunk
from affidavit.verify.cascade import ClaimCascade
from affidavit.verify.fakes import ScriptedScorer
from conftest import CHUNKS, VERDICTS


class DictStore:
    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self.chunks = {c.id: c for c in chunks}
        self.asked: list[list[str]] = []

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        self.asked.append(list(chunk_ids))
        return [self.chunks[c] for c in chunk_ids if c in self.chunks]


class Recorded:
    """A verifier that answers what the original run answered (a deterministic verifier)."""

    def __init__(self, verdicts: Sequence[Verdict]) -> None:
        self.by_id = {v.claim_id: v for v in verdicts}
        self.seen: list[tuple[str, list[str]]] = []

    def verify(self, claim: Claim, chunks: Sequence[Chunk]) -> Verdict:
        self.seen.append((claim.id, [c.id for c in chunks]))
        return self.by_id[claim.id]


def test_same_verifier_same_evidence_agrees(signed: Certificate) -> None:
    verifier = Recorded(VERDICTS)
    result = replay_certificate(signed, verifier, DictStore(CHUNKS))
    assert result.agree, result.mismatches
    assert result.decisions == {"c1": "verified", "c2": "verified", "c3": "blocked"}
    assert verifier.seen == [("c1", ["k1"]), ("c2", ["k2"]), ("c3", ["k2"])]


def test_a_verifier_that_now_disagrees_is_reported(signed: Certificate) -> None:
    changed = list(VERDICTS)
    changed[1] = changed[1].model_copy(update={"p_entail": 0.3, "p_neutral": 0.66})
    result = replay_certificate(signed, Recorded(changed), DictStore(CHUNKS))
    assert not result.agree
    assert result.mismatches == (
        "claim c2: recorded verified, replay gives unverified "
        "(p_entail 0.30 is below the threshold 0.50)",
    )


def test_changed_or_missing_evidence_is_a_disagreement(signed: Certificate) -> None:
    edited = [CHUNKS[0].model_copy(update={"text": CHUNKS[0].text.replace("1889.", "1890.")})]
    result = replay_certificate(signed, Recorded(VERDICTS), DictStore([*edited, CHUNKS[1]]))
    assert not result.agree
    assert any("stored text of chunk k1" in m for m in result.mismatches)
    result = replay_certificate(signed, Recorded(VERDICTS), DictStore(CHUNKS[1:]))
    assert any("chunk(s) k1 not in the store" in m for m in result.mismatches)


def test_replay_with_the_real_cascade(key: Ed25519PrivateKey) -> None:
    """End to end with the project's ClaimCascade (scripted scorer, real checks)."""
    from affidavit.certify import build_certificate, sign_certificate
    from affidavit.core.settings import Settings

    scorer = ScriptedScorer({"330": (0.9, 0.08, 0.02), "1889": (0.95, 0.04, 0.01)})
    policy = PolicySettings()
    cascade = ClaimCascade(
        VerifySettings(cascade=["checks", "cross_encoder"]),
        policy,
        scorers={"cross_encoder": scorer},
    )
    answer = "The tower is 330 m tall. It opened in 1925."
    claims = [
        Claim(id="c1", text="The tower is 330 m tall.", start=0, end=24),
        Claim(id="c2", text="It opened in 1925.", start=25, end=43),
    ]
    verdicts = [cascade.verify(c, CHUNKS) for c in claims]
    cert = sign_certificate(
        build_certificate("q", answer, claims, verdicts, None, Settings(), []), key
    )
    assert [r.decision for r in cert.claims] == ["verified", "blocked"]
    result = replay_certificate(cert, cascade, DictStore(CHUNKS))
    assert result.agree, result.mismatches


# -- format 2: evidence in passages that corrective retrieval trimmed (issue 25 item 4) ----------

DATA = Path(__file__).resolve().parents[2] / "data" / "certificates"
STORED = Chunk(
    id="doc1#0",
    doc_id="doc1",
    url="https://example.org/eiffel",
    text="The tower is in Paris. It is 330 metres tall. Cats sleep all day.",
)


def _trimmed(origin: Literal["local", "web"] = "local") -> RefinedContext:
    evaluator = KeywordEvaluator(
        fixed={"The tower is in Paris.": 7.0, "It is 330 metres tall.": 6.0}
    )
    refined = refine_chunk(
        "How tall is the tower?",
        STORED,
        grade=6.0,
        evaluator=evaluator,
        strip_threshold=5.0,
        keep_whole_threshold=8.0,
        origin=origin,
    )
    assert refined is not None and refined.kept_spans == ((0, 22), (23, 45))
    return refined


def _certificate(key: Ed25519PrivateKey, context: RefinedContext) -> Certificate:
    from affidavit.certify import build_certificate, sign_certificate
    from affidavit.core.settings import Settings

    passage = context.chunk
    start = passage.text.index("It is 330")
    text = passage.text[start:]
    verdict = Verdict(
        claim_id="c1",
        label="supported",
        p_entail=0.9,
        p_neutral=0.08,
        p_contradict=0.02,
        evidence=(
            EvidenceSpan(chunk_id=passage.id, start=start, end=start + len(text), text=text),
        ),
    )
    claim = Claim(id="c1", text="The tower is 330 m tall.", start=0, end=24)
    cert = build_certificate(
        "How tall?", claim.text, [claim], [verdict], None, Settings(), [], context=[context]
    )
    return sign_certificate(cert, key)


def test_format_1_certificates_still_verify_and_replay() -> None:
    """A certificate signed before format 2 existed (kept in tests/data) verifies as it was."""
    path = DATA / "format1.cert.json"
    cert = load_certificate(path)
    assert cert.format == "affidavit-certificate/1"
    check = verify_certificate(path, [DATA / "format1.signer.pub"], store_lookup(DictStore(CHUNKS)))
    assert check.valid, check.reasons
    assert check.warnings == () and check.evidence_checked == 6
    result = replay_certificate(cert, Recorded(VERDICTS), DictStore(CHUNKS))
    assert result.agree, result.mismatches


def test_trimmed_evidence_names_the_stored_chunk_and_replays_from_it(
    key: Ed25519PrivateKey,
) -> None:
    context = _trimmed()
    cert = _certificate(key, context)
    assert cert.format == "affidavit-certificate/2"
    ev = cert.claims[0].evidence[0]
    assert ev.chunk_id == context.chunk.id != STORED.id  # the id the verifier saw
    assert ev.origin == EvidenceOrigin(kind="store", chunk_id=STORED.id, kept=((0, 22), (23, 45)))

    store = DictStore([STORED])
    check = verify_certificate(cert, [key.public_key()], store_lookup(store))
    assert check.valid, check.reasons
    assert check.warnings == () and check.evidence_checked == 2
    verifier = Recorded([_verdict_of(cert)])
    result = replay_certificate(cert, verifier, store)
    assert result.agree and result.decisions == {"c1": "verified"}, result.mismatches
    # the verifier is given the rebuilt passage, not the whole stored chunk
    assert verifier.seen == [("c1", [context.chunk.id])]
    assert store.asked[-1] == [STORED.id]


def test_a_changed_stored_chunk_or_edited_spans_do_not_pass(key: Ed25519PrivateKey) -> None:
    cert = _certificate(key, _trimmed())
    edited = STORED.model_copy(update={"text": STORED.text.replace("330", "324")})
    result = replay_certificate(cert, Recorded([_verdict_of(cert)]), DictStore([edited]))
    assert not result.agree
    assert any("no longer gives the passage" in m for m in result.mismatches)
    check = verify_certificate(cert, [key.public_key()], store_lookup(DictStore([edited])))
    assert check.warnings == ("claim c1 evidence 0: not found in the evidence source",)

    # the origin is signed: moving the kept spans breaks the signature
    tree = cert.model_dump(mode="json")
    tree["claims"][0]["evidence"][0]["origin"]["kept"] = [[0, 22]]
    check = verify_certificate(tree, [key.public_key()])
    assert not check.valid and any("signature" in r for r in check.reasons)


def test_web_evidence_is_said_not_replayable_neither_invalid_nor_passed(
    key: Ed25519PrivateKey,
) -> None:
    cert = _certificate(key, _trimmed(origin="web"))
    assert cert.claims[0].evidence[0].origin.kind == "web"  # type: ignore[union-attr]
    store = DictStore([STORED])
    check = verify_certificate(cert, [key.public_key()], store_lookup(store))
    assert check.valid, check.reasons
    assert len(check.warnings) == 1 and "from the web" in check.warnings[0]
    verifier = Recorded([_verdict_of(cert)])
    result = replay_certificate(cert, verifier, store)
    assert result.mismatches == () and result.decisions == {}
    assert not result.agree  # fail closed: not every claim was reproduced
    assert len(result.not_replayed) == 1 and result.not_replayed[0].startswith("claim c1:")
    assert verifier.seen == [] and store.asked == []


def test_origins_need_format_2(key: Ed25519PrivateKey) -> None:
    tree = _certificate(key, _trimmed()).model_dump(mode="json")
    tree["format"] = "affidavit-certificate/1"
    check = verify_certificate(tree, [key.public_key()])
    assert not check.valid and any("format affidavit-certificate/2" in r for r in check.reasons)


def _verdict_of(cert: Certificate) -> Verdict:
    from affidavit.certify.verify import record_verdict

    verdict = record_verdict(cert.claims[0])
    assert verdict is not None
    return verdict
