"""Fuzz the loaders (issue 26): crafted PDF page trees, deep JSON records, broken DOCX.

Each loader turns any input into documents or one ``IngestError`` with a reason, never another
exception, within a time and memory bound per example.
"""

from __future__ import annotations

import io
import time
import tracemalloc
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fuzzkit import FUZZ, MEMORY_CAP
from hypothesis import given
from hypothesis import strategies as st

from affidavit.core.errors import IngestError
from affidavit.core.types import Document
from affidavit.ingest.loaders import iter_jsonl, load_docx, load_pdf

DATA = Path(__file__).resolve().parents[1] / "data" / "ingest"
SECONDS = 10.0  # per example, on a shared 2-core machine (the probes' file took 182 s)


def _bounded(load: Callable[[], Any]) -> Any:
    """Run a loader; documents or IngestError, under the time and memory caps."""
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        try:
            out = load()
        except IngestError as exc:
            assert exc.message
            out = exc
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - t0 < SECONDS
    assert peak < MEMORY_CAP
    return out


# -- PDF page trees ----------------------------------------------------------------------------

refs = st.integers(min_value=1, max_value=12)  # object numbers, some absent (dangling)
nodes = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(["/Pages", "/Page", "/Catalog", "/Font", "junk"]),
        "kids": st.lists(refs, max_size=40),
        "repeat": st.integers(min_value=1, max_value=400),  # how often the kids repeat
        "count": st.integers(min_value=-5, max_value=10**9),
        "parent": refs,
        "text": st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40),
    }
)


def _pdf(tree: list[dict[str, Any]], xref_ok: bool, trailer_root: int) -> bytes:
    objs: dict[int, bytes] = {}
    streams: dict[int, bytes] = {}  # each page's content, numbered 100 + its page's number
    for n, node in enumerate(tree, start=1):
        kids = b" ".join(b"%d 0 R" % k for k in node["kids"])
        kids = b" ".join([kids] * node["repeat"]) if kids else b""
        text = node["text"].replace("\\", "").replace("(", "").replace(")", "").encode()
        if node["kind"] == "/Catalog":
            body = b"<< /Type /Catalog /Pages %d 0 R >>" % node["parent"]
        elif node["kind"] == "/Pages":
            body = b"<< /Type /Pages /Parent %d 0 R /Kids [%b] /Count %d >>" % (
                node["parent"],
                kids,
                node["count"],
            )
        elif node["kind"] == "/Page":
            content = b"BT /F1 12 Tf 72 720 Td (" + text + b") Tj ET"
            body = (
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                b"/Resources << /Font << /F1 << /Type /Font /Subtype /Type1 "
                b"/BaseFont /Helvetica >> >> >> >>" % (node["parent"], 100 + n)
            )
            streams[100 + n] = b"<< /Length %d >>\nstream\n%b\nendstream" % (
                len(content),
                content,
            )
        elif node["kind"] == "/Font":
            body = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
        else:
            body = b"<< /Kids [%b] >> (" % kids + text + b")"
        objs[n] = body
    objs.update(streams)
    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for n, body in objs.items():
        offsets[n] = len(out)
        out += b"%d 0 obj\n%b\nendobj\n" % (n, body)
    xref = len(out)
    size = max(objs) + 1
    out += b"xref\n0 %d\n" % size
    for n in range(size):
        if n in offsets:
            out += b"%010d 00000 n \n" % (offsets[n] if xref_ok else offsets[n] + 7)
        else:
            out += b"0000000000 65535 f \n"
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        size,
        trailer_root,
        xref,
    )
    return bytes(out)


@FUZZ
@given(
    tree=st.lists(nodes, min_size=1, max_size=10),
    xref_ok=st.booleans(),
    root=refs,
)
def test_pdf_page_trees(tree: list[dict[str, Any]], xref_ok: bool, root: int) -> None:
    raw = _pdf(tree, xref_ok, root)
    out = _bounded(lambda: load_pdf(Path("fuzz.pdf"), raw))
    if not isinstance(out, IngestError):
        assert out and all(isinstance(d, Document) and d.text.strip() for d in out)


@FUZZ
@given(
    cut=st.integers(min_value=0, max_value=1400),
    flips=st.lists(st.tuples(st.integers(0, 1400), st.integers(0, 255)), max_size=8),
)
def test_pdf_byte_damage(cut: int, flips: list[tuple[int, int]]) -> None:
    raw = bytearray((DATA / "sample.pdf").read_bytes())
    for pos, value in flips:
        if pos < len(raw):
            raw[pos] = value
    data = bytes(raw[: max(cut, 8)])
    _bounded(lambda: load_pdf(Path("fuzz.pdf"), data))


# -- deep JSON records -------------------------------------------------------------------------


@FUZZ
@given(
    depth=st.integers(min_value=0, max_value=5000),
    opener=st.sampled_from(['{"x": ', "[", '[{"y": ']),
    where=st.sampled_from(["metadata", "title", "id", "text", "top"]),
)
def test_deep_json_records(depth: int, opener: str, where: str) -> None:
    closer = {'{"x": ': "}", "[": "]", '[{"y": ': "}]"}[opener]
    deep = opener * depth + "1" + closer * depth
    if where == "top":
        line = deep
    else:
        fields = {"id": '"r1"', "text": '"Deep record."', where: deep}
        line = "{" + ", ".join(f'"{k}": {v}' for k, v in fields.items()) + "}"
    plain = '{"id": "r2", "text": "A plain record."}'
    raw = (line + "\n" + plain + "\n").encode()
    out = _bounded(lambda: list(iter_jsonl(Path("fuzz.jsonl"), raw)))
    assert not isinstance(out, IngestError)
    assert [n for n, _ in out] == [1, 2]
    assert isinstance(out[1][1], Document) and out[1][1].id == "r2"


# -- broken DOCX -------------------------------------------------------------------------------


def _docx_members() -> dict[str, bytes]:
    with zipfile.ZipFile(DATA / "sample.docx") as zf:
        return {name: zf.read(name) for name in zf.namelist()}


MEMBERS = _docx_members()


@FUZZ
@given(
    drop=st.sets(st.sampled_from(sorted(MEMBERS)), max_size=3),
    cut=st.one_of(st.none(), st.integers(min_value=0, max_value=3000)),
    junk=st.binary(max_size=64),
    deep=st.integers(min_value=0, max_value=3000),
    damage_zip=st.one_of(st.none(), st.integers(min_value=0, max_value=4000)),
)
def test_broken_docx(
    drop: set[str], cut: int | None, junk: bytes, deep: int, damage_zip: int | None
) -> None:
    members = {k: v for k, v in MEMBERS.items() if k not in drop}
    if "word/document.xml" in members:
        doc = members["word/document.xml"]
        if cut is not None:
            doc = doc[:cut] + junk
        if deep:
            doc = doc.replace(b"<w:body>", b"<w:body>" + b"<w:p>" * deep + b"</w:p>" * deep, 1)
        members["word/document.xml"] = doc
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    raw = bytearray(buf.getvalue())
    if damage_zip is not None and damage_zip < len(raw):
        raw[damage_zip : damage_zip + 16] = b"\xa5" * 16
    _bounded(lambda: load_docx(Path("fuzz.docx"), bytes(raw)))
