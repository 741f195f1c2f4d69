"""A chunk's ``domain`` (what ``--domain`` search filters and the store's domain index match) is
the host a browser opens for its URL, read by the one parser the allowlist and the web guard use
(`affidavit.core.hosts`). ``urlparse`` read ``https://evil.com\\@nih.gov/`` as nih.gov (a browser
opens evil.com), and a JSONL record's own ``metadata.domain`` was kept when its URL gave none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from affidavit.core.retrieval import SearchFilters
from affidavit.ingest.loaders import domain_of
from affidavit.ingest.pipeline import Ingestor
from affidavit.retrieve.retriever import StoreRetriever
from affidavit.store.local import LocalStore
from affidavit.testing.embedder import FakeEmbedder


@pytest.mark.parametrize(
    ("url", "domain"),
    [
        ("https://pubmed.nih.gov/123", "pubmed.nih.gov"),
        ("https://PubMed.NIH.gov./x", "pubmed.nih.gov"),
        ("https://evil.com\\@nih.gov/", None),
        ("https://nih.gov@evil.com/", None),
        ("https://evil.com\t.nih.gov/", None),
        ("http://0x7f.1/", None),
        ("ftp://nih.gov/x", None),
        ("not a url", None),
        (None, None),
    ],
)
def test_the_domain_is_the_host_a_browser_opens(url: str | None, domain: str | None) -> None:
    assert domain_of(url) == domain


def test_a_domain_filter_never_admits_a_record_of_another_host(tmp_path: Path) -> None:
    records = [
        {
            "id": "a",
            "text": "Aspirin lowers fever in adults.",
            "url": "https://evil.com\\@nih.gov/",
        },
        {
            "id": "b",
            "text": "Aspirin lowers fever in children.",
            "url": "https://evil.com/b",
            "metadata": {"domain": "nih.gov"},
        },
        {
            "id": "c",
            "text": "Aspirin lowers fever in most patients.",
            "metadata": {"domain": "nih.gov"},
        },
        {"id": "d", "text": "Aspirin lowers fever quickly.", "url": "https://www.nih.gov/d"},
    ]
    src = tmp_path / "docs.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    emb = FakeEmbedder()
    store = LocalStore(tmp_path / "store")
    Ingestor(store, emb).ingest([src])
    hits = StoreRetriever(store, emb).search(
        "aspirin fever", k=10, filters=SearchFilters(domains=("nih.gov",))
    )
    assert {h.chunk.doc_id for h in hits} == {"d"}
    by_id = {h.chunk.doc_id: h.chunk for h in StoreRetriever(store, emb).search("aspirin", k=10)}
    assert by_id["b"].metadata.get("domain") == "evil.com"
    assert "domain" not in by_id["a"].metadata and "domain" not in by_id["c"].metadata
