"""A certificate whose evidence chunk was deleted from the store says so on replay."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from affidavit.certify import replay_certificate
from affidavit.core.certificate import Certificate
from affidavit.core.types import Chunk, Claim, Document, Verdict
from affidavit.store.base import DocumentBatchItem
from affidavit.store.local import LocalStore
from affidavit.testing.embedder import FakeEmbedder
from conftest import CHUNKS, VERDICTS


class Recorded:
    """A verifier that answers what the original run answered (a deterministic verifier)."""

    def __init__(self, verdicts: Sequence[Verdict]) -> None:
        self.by_id = {v.claim_id: v for v in verdicts}

    def verify(self, claim: Claim, chunks: Sequence[Chunk]) -> Verdict:
        return self.by_id[claim.id]


def _store(path: Path) -> LocalStore:
    store = LocalStore(path)
    emb = FakeEmbedder()
    store.upsert(
        [
            DocumentBatchItem(
                document=Document(id=c.doc_id or "", text=c.text, source=f"{c.doc_id}.txt"),
                chunks=(c.model_copy(update={"start": 0, "end": len(c.text)}),),
                vectors=emb.embed([c.text]),
                origin=f"/in/{c.doc_id}.txt",
            )
            for c in CHUNKS
        ],
        embedder=emb.name,
    )
    return store


def test_a_deleted_chunk_is_said_deleted_not_missing(signed: Certificate, tmp_path: Path) -> None:
    store = _store(tmp_path / "store")
    assert replay_certificate(signed, Recorded(VERDICTS), store).agree
    store.delete(["d1"])
    result = replay_certificate(signed, Recorded(VERDICTS), store)
    assert not result.agree  # fail closed: a claim that cannot be replayed is not a pass
    assert result.deleted_chunks == ("k1",)
    [said] = result.not_replayed
    assert said.startswith("claim c1: evidence chunk k1 was deleted from the store on ")
    assert "its document was deleted (d1 (d1.txt))" in said
    assert said.endswith("so the claim cannot be replayed")
    assert result.mismatches == ()  # neither a disagreement nor "not in the store"
    assert result.decisions == {"c2": "verified", "c3": "blocked"}
    # a chunk that was never stored is still missing evidence, a disagreement
    store.delete(["d2"])
    store._db.execute("DELETE FROM deleted_chunks WHERE chunk_id = 'k2'")
    result = replay_certificate(signed, Recorded(VERDICTS), store)
    assert any("chunk(s) k2 not in the store" in m for m in result.mismatches)
    store.close()
