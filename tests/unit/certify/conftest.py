"""A small answer with claims, verdicts and keys, shared by the certify tests."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from affidavit.certify import build_certificate, sign_certificate
from affidavit.core.certificate import Certificate
from affidavit.core.settings import Settings
from affidavit.core.types import CheckResult, Chunk, Claim, EvidenceSpan, StageScore, Verdict

ANSWER = "The Eiffel Tower was completed in 1889 [1]. It is 330 m tall. It opened in 1925."
CHUNKS = [
    Chunk(id="k1", doc_id="d1", text="Work ended in 1889. The tower was completed in 1889."),
    Chunk(
        id="k2", doc_id="d2", text="The tower is 330 metres tall. It opened to the public in 1889."
    ),
]
MODELS = [{"name": "affidavit-verifier-minilm", "sha256": "ab" * 32}]


def span(chunk: Chunk, text: str) -> EvidenceSpan:
    start = chunk.text.index(text)
    return EvidenceSpan(
        chunk_id=chunk.id, doc_id=chunk.doc_id, start=start, end=start + len(text), text=text
    )


def claim(cid: str, text: str) -> Claim:
    start = ANSWER.index(text)
    return Claim(id=cid, text=text, start=start, end=start + len(text))


CLAIMS = [
    claim("c1", "The Eiffel Tower was completed in 1889"),
    claim("c2", "It is 330 m tall"),
    claim("c3", "It opened in 1925"),
]
STAGE = StageScore(
    stage="cross_encoder", p_entail=0.93, p_neutral=0.05, p_contradict=0.02, label="supported"
)
VERDICTS = [
    Verdict(
        claim_id="c1",
        label="supported",
        p_entail=0.93,
        p_neutral=0.05,
        p_contradict=0.02,
        evidence=(span(CHUNKS[0], "The tower was completed in 1889."),),
        stages=(STAGE,),
    ),
    Verdict(
        claim_id="c2",
        label="supported",
        p_entail=0.81,
        p_neutral=0.15,
        p_contradict=0.04,
        evidence=(span(CHUNKS[1], "The tower is 330 metres tall."),),
    ),
    Verdict(
        claim_id="c3",
        label="contradicted",
        p_entail=0.02,
        p_neutral=0.08,
        p_contradict=0.9,
        evidence=(span(CHUNKS[1], "It opened to the public in 1889."),),
        checks=(
            CheckResult(check="date", status="fail", claim_value="1925", evidence_value="1889"),
        ),
    ),
]
WHEN = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


@pytest.fixture()
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home")


@pytest.fixture(scope="session")
def key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


@pytest.fixture(scope="session")
def other_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


@pytest.fixture(scope="session")
def unsigned() -> Certificate:
    return build_certificate(
        "When was the Eiffel Tower completed?",
        ANSWER,
        CLAIMS,
        VERDICTS,
        None,
        Settings(home=Path("/nonexistent-home")),
        MODELS,
        created_at=WHEN,
    )


@pytest.fixture(scope="session")
def signed(unsigned: Certificate, key: Ed25519PrivateKey) -> Certificate:
    return sign_certificate(unsigned, key)
