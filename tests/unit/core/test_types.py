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
