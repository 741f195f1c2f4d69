"""``affidavit ingest`` / ``affidavit search`` end to end (CliRunner, fake embedder, real files)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from affidavit.cli.main import app

DATA = Path(__file__).resolve().parents[1] / "data" / "ingest"
pytestmark = pytest.mark.integration


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AFFIDAVIT_EMBED__BACKEND", "fake")
    monkeypatch.chdir(tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("sample.txt", "sample.md", "sample.html", "sample.jsonl", "sample.pdf"):
        shutil.copy(DATA / name, docs / name)
    return docs


def test_ingest_then_search(env: Path, tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["ingest", str(env), "--store", str(tmp_path / "st"), "--json"])
    assert r.exit_code == 1, r.output  # the two bad JSONL lines fail
    rep = json.loads(r.stdout)
    assert rep["counts"]["added"] == 6 and rep["counts"]["failed"] == 2
    r = CliRunner().invoke(app, ["ingest", str(env), "--store", str(tmp_path / "st")])
    assert "skipped" in r.stdout and r.exit_code == 1
    r = CliRunner().invoke(
        app,
        ["search", "Mount Everest height", "--store", str(tmp_path / "st"), "--json", "-k", "3"],
    )
    assert r.exit_code == 0, r.output
    hits = json.loads(r.stdout)
    assert hits[0]["doc_id"] == "rec-1"
    assert {"doc_id", "chunk_id", "score", "text", "metadata"} <= set(hits[0])
    r = CliRunner().invoke(
        app, ["search", "tower", "--store", str(tmp_path / "st"), "--mode", "bm25"]
    )
    assert r.exit_code == 0 and "Eiffel" in r.stdout


def test_exit_0_when_all_ingested(env: Path, tmp_path: Path) -> None:
    (env / "sample.jsonl").unlink()
    r = CliRunner().invoke(app, ["ingest", str(env), "--store", str(tmp_path / "st")])
    assert r.exit_code == 0, r.output


def test_batch_search(env: Path, tmp_path: Path) -> None:
    CliRunner().invoke(app, ["ingest", str(env), "--store", str(tmp_path / "st")])
    q = tmp_path / "q.jsonl"
    q.write_text('{"id": "q1", "query": "Gettysburg Lincoln"}\n{"id": 2, "query": "Everest"}\n')
    out = tmp_path / "out.jsonl"
    r = CliRunner().invoke(
        app,
        [
            "search",
            "--queries",
            str(q),
            "--output",
            str(out),
            "--store",
            str(tmp_path / "st"),
            "-k",
            "2",
            "--mode",
            "hybrid",
        ],
    )
    assert r.exit_code == 0, r.output
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["id"] for x in lines] == ["q1", 2]
    assert set(lines[0]["hits"][0]) == {"doc_id", "chunk_id", "score"}
    assert lines[1]["hits"][0]["doc_id"] == "rec-1"


def test_domain_filter_cli(env: Path, tmp_path: Path) -> None:
    CliRunner().invoke(app, ["ingest", str(env), "--store", str(tmp_path / "st")])
    r = CliRunner().invoke(
        app,
        [
            "search",
            "wall mountain tower",
            "--store",
            str(tmp_path / "st"),
            "--json",
            "--domain",
            "example.com",
        ],
    )
    assert {h["doc_id"] for h in json.loads(r.stdout)} == {"rec-2"}


@pytest.mark.parametrize(
    "args",
    [
        ["ingest", "does-not-exist"],
        ["search", "x", "--store", "nowhere"],
        ["search", "x", "--mode", "fuzzy"],
        ["search"],
        ["search", "--queries", "q.jsonl"],
        ["search", "x", "--since", "yesterday"],
    ],
)
def test_usage_errors_exit_2(env: Path, args: list[str]) -> None:
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 2, r.output


def test_bad_queries_file(env: Path, tmp_path: Path) -> None:
    CliRunner().invoke(app, ["ingest", str(env), "--store", str(tmp_path / "st")])
    q = tmp_path / "q.jsonl"
    q.write_text('{"id": 1}\n')
    r = CliRunner().invoke(
        app,
        [
            "search",
            "--queries",
            str(q),
            "--output",
            str(tmp_path / "o"),
            "--store",
            str(tmp_path / "st"),
        ],
    )
    assert r.exit_code == 2 and "q.jsonl:1" in r.output


def test_qdrant_backend_via_settings(
    env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("qdrant_client")
    monkeypatch.setenv("AFFIDAVIT_STORE__BACKEND", "qdrant")
    (env / "sample.jsonl").unlink()
    r = CliRunner().invoke(app, ["ingest", str(env), "--store", str(tmp_path / "qs")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "qs" / "qdrant").is_dir()
    r = CliRunner().invoke(
        app, ["search", "Gettysburg", "--store", str(tmp_path / "qs"), "--json", "-k", "1"]
    )
    assert r.exit_code == 0, r.output
    assert "Gettysburg" in json.loads(r.stdout)[0]["text"]


def test_prune_via_cli(env: Path, tmp_path: Path) -> None:
    st = str(tmp_path / "st")
    (env / "sample.jsonl").unlink()
    assert CliRunner().invoke(app, ["ingest", str(env), "--store", st]).exit_code == 0
    (env / "sample.md").unlink()
    r = CliRunner().invoke(app, ["ingest", str(env), "--store", st, "--prune", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["counts"]["pruned"] == 1


def test_reversed_dates_are_one_plain_error_line(env: Path) -> None:
    # pydantic's whole report reached stderr: its line breaks escaped as "\x0a", the input
    # echoed and a documentation link, where one reason was due
    r = CliRunner().invoke(app, ["search", "x", "--since", "2021-01-01", "--until", "2020-01-01"])
    assert r.exit_code == 2, r.output
    assert r.output.strip() == "error: bad filter: date_from 2021-01-01 is after date_to 2020-01-01"


def test_ingest_says_which_pdf_pages_have_no_text(env: Path, tmp_path: Path) -> None:
    from pypdf import PdfReader, PdfWriter

    sample = PdfReader(DATA / "sample.pdf")
    writer = PdfWriter()
    writer.add_page(sample.pages[0])
    writer.add_blank_page(width=612, height=792)
    writer.add_blank_page(width=612, height=792)
    with (env / "sample.pdf").open("wb") as fh:
        writer.write(fh)
    (env / "sample.jsonl").unlink()  # its bad lines fail on purpose
    r = CliRunner().invoke(app, ["ingest", str(env), "--store", str(tmp_path / "st")])
    assert r.exit_code == 0, r.output
    assert "pages 2-3 have no extractable text" in " ".join(r.output.split())
