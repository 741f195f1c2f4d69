"""Fuzz ingest: hostile JSONL records and file names never crash, never lose stored documents."""

from __future__ import annotations

import json
import os
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

from fuzzkit import (
    FUZZ,
    MEMORY_CAP,
    assert_clean_exit,
    assert_terminal_safe,
    hostile_text,
    invoke,
    json_scalars,
    json_values,
)
from hypothesis import given
from hypothesis import strategies as st

from affidavit.core.settings import IngestSettings
from affidavit.ingest.pipeline import Ingestor
from affidavit.store.local import LocalStore
from affidavit.testing.embedder import FakeEmbedder

records = st.one_of(
    st.fixed_dictionaries(
        {"id": hostile_text | st.integers() | json_values, "text": hostile_text},
        optional={
            "title": hostile_text | json_scalars,
            "url": hostile_text | json_scalars,
            "metadata": st.dictionaries(hostile_text, json_values, max_size=3) | json_values,
        },
    ),
    json_values,
)

lines = st.lists(
    st.one_of(
        records.map(lambda r: json.dumps(r, ensure_ascii=True)),
        hostile_text.map(lambda t: t.replace("\n", " ")),
    ),
    max_size=6,
).map(lambda ls: "\n".join(ls).encode("utf-8", "surrogatepass"))

file_names = st.one_of(
    # a str name must be one the OS can encode (lone surrogates cannot be); arbitrary bytes,
    # undecodable ones included, come from the binary branch
    st.text(
        st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"),
        min_size=1,
        max_size=20,
    ),
    st.binary(min_size=1, max_size=20).filter(lambda b: b"/" not in b and b"\x00" not in b),
).filter(lambda n: n not in (".", "..", b".", b"..") and not str(n).startswith("."))

SEED = "The Eiffel Tower is in Paris. It opened in 1889."


def _stored(store: LocalStore) -> dict[str, str]:
    return {doc_id: rec.content_hash for doc_id, rec in store.records().items()}


@FUZZ
@given(raw=lines, chunk_size=st.sampled_from([50, 500]))
def test_jsonl_records_never_lose_stored_documents(
    fuzz_env: Path, raw: bytes, chunk_size: int
) -> None:
    work = Path(tempfile.mkdtemp(dir=fuzz_env))
    (work / "seed.txt").write_text(SEED, encoding="utf-8")
    store = LocalStore(work / "store")
    try:
        Ingestor(store, FakeEmbedder()).ingest([work / "seed.txt"])
        before = _stored(store)
        (work / "in.jsonl").write_bytes(raw)
        tracemalloc.start()
        try:
            report = Ingestor(
                store, FakeEmbedder(), IngestSettings(chunk_size=chunk_size, chunk_overlap=10)
            ).ingest([work / "in.jsonl", work / "seed.txt"])
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < MEMORY_CAP
        after = _stored(store)
        assert before.items() <= after.items()  # nothing stored was lost or changed
        added = {o.doc_id for o in report.outcomes if o.status in ("added", "replaced")}
        assert added <= set(after)
        assert store.count()[0] == len(after)
        json.dumps(report.model_dump(mode="json"), ensure_ascii=False).encode("utf-8")
    finally:
        store.close()


@FUZZ
@given(
    name=file_names,
    body=st.binary(max_size=300) | hostile_text.map(lambda t: t.encode("utf-8", "surrogatepass")),
)
def test_cli_ingest_any_file_name_and_bytes(fuzz_env: Path, name: Any, body: bytes) -> None:
    work = Path(tempfile.mkdtemp(dir=fuzz_env))
    docs = work / "docs"
    docs.mkdir()
    (docs / "seed.txt").write_text(SEED, encoding="utf-8")
    raw_name = name if isinstance(name, bytes) else os.fsencode(name)
    try:
        with open(os.path.join(os.fsencode(docs), raw_name), "wb") as fh:
            fh.write(body)
    except OSError:
        return  # the file system refuses the name (too long): nothing to ingest
    store = str(work / "store")
    first = invoke(["ingest", str(docs / "seed.txt"), "--store", store])
    assert first.exit_code == 0, first.output
    r = invoke(["ingest", str(docs), "--store", store])
    assert_clean_exit(r, {0, 1})
    assert_terminal_safe(r.output)
    r = invoke(["ingest", str(docs), "--store", store, "--json"])
    assert_clean_exit(r, {0, 1})
    report = json.loads(r.stdout)
    assert report["chunks_total"] >= 1  # the seed document is still there
    s = invoke(["search", "Eiffel", "--store", store, "--json"])
    assert s.exit_code == 0 and json.loads(s.stdout), s.output
