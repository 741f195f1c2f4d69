"""The packaged passage reranker, on the bundled sample corpus, through the real CLI.

The store is ingested with ``affidavit ingest`` as a user would; ``affidavit search --rerank``
loads the shipped reranker (its top layers joined to the installed embedder's lower layers,
both sha256-checked) and reorders the hybrid hits.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from affidavit.cli.main import app
from affidavit.retrieve.rerank import CrossEncoderReranker, packaged_reranker_dir

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _search(corpus_store: Path, query: str, *flags: str) -> list[dict]:
    out = CliRunner().invoke(
        app, ["search", query, "--store", str(corpus_store), "-k", "5", "--json", *flags]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    return data["hits"] if isinstance(data, dict) else data


def test_the_packaged_reranker_loads_and_ranks_the_answer_first() -> None:
    rr = CrossEncoderReranker(packaged_reranker_dir())
    info = rr.describe()
    assert info["sha256"] and info["base_sha256"]  # a split model: both parts checked
    q = "Who designed the Eiffel Tower?"
    s = rr.scores(
        q,
        [
            "The Saturn V rocket was used by NASA between 1967 and 1973.",
            "The tower was designed by the engineering company of Gustave Eiffel.",
            "The Eiffel Tower is 330 metres tall.",
        ],
    )
    assert s.argmax() == 1


def test_search_rerank_puts_the_answer_chunk_first(corpus_store: Path) -> None:
    q = "Which company designed and built the Eiffel Tower?"
    hits = _search(corpus_store, q, "--rerank")
    assert hits, "no hits"
    assert all(h["mode"] == "rerank" for h in hits[:5])
    assert "Gustave Eiffel" in " ".join(hits[0]["text"].split()), hits[0]["text"][:200]
    plain = _search(corpus_store, q, "--no-rerank")
    assert all(h["mode"] != "rerank" for h in plain)
