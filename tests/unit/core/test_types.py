from affidavit.core.types import Chunk, Claim, EvidenceSpan, Verdict, sha256_text


def test_chunk_id_is_stable_and_content_derived() -> None:
    a = Chunk(text="Paris is the capital of France.", url="https://example.org/a")
    b = Chunk(text="Paris is the capital of France.", url="https://example.org/a")
    c = Chunk(text="Paris is the capital of France!", url="https://example.org/a")
    assert a.id == b.id != c.id


def test_evidence_hash_filled() -> None:
    e = EvidenceSpan(chunk_id="x", start=0, end=3, text="abc")
    assert e.sha256 == sha256_text("abc")


def test_round_trip_json() -> None:
    v = Verdict(
        claim_id="c1",
        label="supported",
        p_entail=0.9,
        p_neutral=0.05,
        p_contradict=0.05,
        evidence=(EvidenceSpan(chunk_id="x", start=0, end=3, text="abc"),),
    )
    assert Verdict.model_validate_json(v.model_dump_json()) == v
    c = Claim(id="c1", text="t", start=0, end=1, citations=(1, 2))
    assert Claim.model_validate_json(c.model_dump_json()) == c


def test_http_inputs_refuse_a_lone_surrogate_with_its_location() -> None:
    import pytest
    from pydantic import ValidationError

    from affidavit.core.service import AuditInput
    from affidavit.core.verification import CheckInput

    with pytest.raises(ValidationError, match=r"chunks\[0\]\.text holds a lone surrogate"):
        AuditInput.model_validate({"chunks": [{"text": "a \ud800"}], "response": "ok"})
    with pytest.raises(ValidationError, match=r"evidence\[1\] holds a lone surrogate"):
        CheckInput.model_validate({"id": 1, "claim": "ok", "evidence": ["ok", "\udc80"]})
    assert AuditInput.model_validate({"chunks": [], "response": "caf\u00e9"}).response == "café"
