"""Replay re-runs a verifier on stored evidence; disagreement or missing evidence is reported."""

from __future__ import annotations

from collections.abc import Sequence

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from affidavit.certify import replay_certificate
from affidavit.core.certificate import Certificate
from affidavit.core.settings import PolicySettings, VerifySettings
from affidavit.core.types import Chunk, Claim, Verdict
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
