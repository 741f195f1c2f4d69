"""Text a reader of a DOCX sees is evidence: python-docx's ``paragraph.text`` and
``document.paragraphs`` leave out tracked insertions (``w:ins``), content controls (``w:sdt``),
text boxes and footnotes, and the loader stored the document without them and without a word.
Deleted text (``w:del``) is not seen by a reader of the final document and stays out; what is
still left out on purpose (headers and footers) is said in the metadata and the outcome."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from affidavit.core.settings import IngestSettings
from affidavit.ingest.loaders import load_docx
from affidavit.ingest.pipeline import Ingestor
from affidavit.store.local import LocalStore
from affidavit.testing.embedder import FakeEmbedder

docx = pytest.importorskip("docx")
from docx.opc.constants import CONTENT_TYPE as CT  # noqa: E402
from docx.opc.constants import RELATIONSHIP_TYPE as RT  # noqa: E402
from docx.opc.packuri import PackURI  # noqa: E402
from docx.opc.part import Part  # noqa: E402
from docx.oxml import OxmlElement, parse_xml  # noqa: E402
from docx.oxml.ns import nsdecls, qn  # noqa: E402

W = nsdecls("w")
MC = 'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"'
WPS = 'xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape"'
VML = 'xmlns:v="urn:schemas-microsoft-com:vml"'


def _run(text: str, tag: str = "w:t") -> Any:
    r = OxmlElement("w:r")
    t = OxmlElement(tag)
    t.text = text
    t.set(qn("xml:space"), "preserve")
    r.append(t)
    return r


def _wrap(tag: str, *children: Any) -> Any:
    el = OxmlElement(tag)
    if tag in ("w:ins", "w:del"):
        el.set(qn("w:id"), "1")
        el.set(qn("w:author"), "Reviewer")
    for c in children:
        el.append(c)
    return el


def _sdt(*content: Any) -> Any:
    """A content control: ``w:sdtPr`` (an alias) and ``w:sdtContent`` holding ``content``."""
    pr = OxmlElement("w:sdtPr")
    alias = OxmlElement("w:alias")
    alias.set(qn("w:val"), "Field")
    pr.append(alias)
    return _wrap("w:sdt", pr, _wrap("w:sdtContent", *content))


def _enclose(el: Any) -> None:
    """Put ``el`` (a paragraph, row or cell) inside a new content control where it stands."""
    sdt = _sdt()
    el.addprevious(sdt)
    sdt.find(qn("w:sdtContent")).append(el)


def _load(d: Any, tmp_path: Path) -> Any:
    buf = io.BytesIO()
    d.save(buf)
    [doc] = load_docx(tmp_path / "x.docx", buf.getvalue())
    return doc


def test_tracked_insertion_is_text(tmp_path: Path) -> None:
    d = docx.Document()
    p = d.add_paragraph("The bridge opened in ")
    p._p.append(_wrap("w:ins", _run("March 1890")))
    p.add_run(" to traffic.")
    doc = _load(d, tmp_path)
    assert doc.text == "The bridge opened in March 1890 to traffic."


def test_tracked_deletion_stays_out(tmp_path: Path) -> None:
    d = docx.Document()
    p = d.add_paragraph("The bridge opened in ")
    p._p.append(_wrap("w:del", _run("SECRET 1925 ", "w:delText")))
    p._p.append(_wrap("w:ins", _run("1890")))
    p._p.append(_wrap("w:moveFrom", _run("SECRET moved away", "w:t")))
    doc = _load(d, tmp_path)
    assert doc.text == "The bridge opened in 1890"


def test_block_content_control_is_text_in_document_order(tmp_path: Path) -> None:
    d = docx.Document()
    d.add_paragraph("First paragraph.")
    inner = d.add_paragraph("Inside the form field.")
    d.add_paragraph("Last paragraph.")
    also = d.add_paragraph("Also inside.")._p
    inner._p.addnext(also)
    _enclose(inner._p)
    inner._p.addnext(also)  # both paragraphs in one control
    doc = _load(d, tmp_path)
    assert (
        doc.text == "First paragraph.\n\nInside the form field.\n\nAlso inside.\n\nLast paragraph."
    )


def test_inline_content_control_is_text(tmp_path: Path) -> None:
    d = docx.Document()
    p = d.add_paragraph("Signed by ")
    p._p.append(_sdt(_run("Jane Roe"), _wrap("w:ins", _run(", witness"))))
    p.add_run(" on 4 March.")
    doc = _load(d, tmp_path)
    assert doc.text == "Signed by Jane Roe, witness on 4 March."


def test_table_cell_content_control_and_nested_table(tmp_path: Path) -> None:
    d = docx.Document()
    d.add_paragraph("Before.")
    table = d.add_table(rows=1, cols=2)
    table.cell(0, 0).text = "Opened"
    cell = table.cell(0, 1)
    cell.paragraphs[0]._p.append(_sdt(_run("1890")))
    cell._tc.append(_sdt(_wrap("w:p", _run("block in cell"))))
    nested = cell.add_table(rows=1, cols=2)
    nested.cell(0, 0).text = "inner a"
    nested.cell(0, 1).text = "inner b"
    cell.add_paragraph("")  # a cell ends with a paragraph
    d.add_paragraph("After.")
    doc = _load(d, tmp_path)
    assert doc.text == "Before.\n\nOpened | 1890\nblock in cell\ninner a | inner b\n\nAfter."


def test_row_and_cell_content_controls(tmp_path: Path) -> None:
    d = docx.Document()
    table = d.add_table(rows=2, cols=2)
    for i, row in enumerate(table.rows):
        for j, c in enumerate(row.cells):
            c.text = f"r{i}c{j}"
    tr1 = table.rows[1]._tr
    _enclose(tr1)  # a repeating-section control around the row
    _enclose(table.rows[0]._tr.tc_lst[1])  # a control around one cell
    doc = _load(d, tmp_path)
    assert doc.text == "r0c0 | r0c1\n\nr1c0 | r1c1"


_TXBX = f"<w:txbxContent {W}><w:p><w:r><w:t>{{}}</w:t></w:r></w:p></w:txbxContent>"


def test_text_box_is_text_once(tmp_path: Path) -> None:
    """Word writes a text box twice (DrawingML and a VML fallback): it is read once."""
    box = _TXBX.format("Boxed: it is 2.5 km long.")
    run = parse_xml(
        f"<w:r {W} {MC} {WPS} {VML}><mc:AlternateContent>"
        f"<mc:Choice Requires='wps'><w:drawing><wps:wsp><wps:txbx>{box}</wps:txbx></wps:wsp>"
        f"</w:drawing></mc:Choice><mc:Fallback><w:pict><v:shape><v:textbox>{box}</v:textbox>"
        "</v:shape></w:pict></mc:Fallback></mc:AlternateContent></w:r>"
    )
    vml_only = parse_xml(
        f"<w:r {W} {VML}><w:pict><v:shape><v:textbox>{_TXBX.format('Old box.')}</v:textbox>"
        "</v:shape></w:pict></w:r>"
    )
    d = docx.Document()
    p = d.add_paragraph("The Forth Bridge.")
    p._p.append(run)
    d.add_paragraph("Next.")._p.append(vml_only)
    doc = _load(d, tmp_path)
    assert doc.text == "The Forth Bridge.\n\nBoxed: it is 2.5 km long.\n\nNext.\n\nOld box."


def _add_notes(d: Any, kind: str, notes: list[str]) -> None:
    """A footnotes (or endnotes) part with Word's separator notes and ``notes``."""
    tag = f"w:{kind}"
    body = (
        f'<{tag} w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></{tag}>'
        f'<{tag} w:type="continuationSeparator" w:id="0"><w:p><w:r><w:continuationSeparator/>'
        f"</w:r></w:p></{tag}>"
    )
    for i, text in enumerate(notes, 1):
        ref = "footnoteRef" if kind == "footnote" else "endnoteRef"
        body += (
            f'<{tag} w:id="{i}"><w:p><w:r><w:{ref}/></w:r><w:r><w:t xml:space="preserve"> {text}'
            f"</w:t></w:r></w:p></{tag}>"
        )
    xml = f"<{tag}s {W}>{body}</{tag}s>".encode()
    ct, rt = (
        (CT.WML_FOOTNOTES, RT.FOOTNOTES) if kind == "footnote" else (CT.WML_ENDNOTES, RT.ENDNOTES)
    )
    part = Part(PackURI(f"/word/{kind}s.xml"), ct, xml, d.part.package)
    d.part.relate_to(part, rt)
    p = d.paragraphs[0]._p
    p.append(parse_xml(f'<w:r {W}><w:{kind}Reference w:id="1"/></w:r>'))


def test_footnotes_and_endnotes_are_text(tmp_path: Path) -> None:
    d = docx.Document()
    d.add_paragraph("The bridge opened in 1890.")
    d.add_paragraph("It is in Scotland.")
    _add_notes(d, "footnote", ["Source: Network Rail, 2015."])
    _add_notes(d, "endnote", ["See also the Tay Bridge."])
    doc = _load(d, tmp_path)
    assert doc.text == (
        "The bridge opened in 1890.\n\nIt is in Scotland.\n\n"
        "Source: Network Rail, 2015.\n\nSee also the Tay Bridge."
    )


def test_headers_and_footers_left_out_are_said(tmp_path: Path) -> None:
    """Page furniture repeated on every page is left out, and the outcome says so."""
    d = docx.Document()
    d.add_paragraph("The bridge opened in 1890.")
    d.sections[0].header.paragraphs[0].text = "CONFIDENTIAL draft"
    d.sections[0].footer.paragraphs[0].text = "Page 1"
    doc = _load(d, tmp_path)
    assert doc.text == "The bridge opened in 1890."
    assert doc.metadata["left_out"] == "header and footer text"
    docs = tmp_path / "docs"
    docs.mkdir()
    d.save(str(docs / "h.docx"))
    plain = docx.Document()
    plain.add_paragraph("No header here.")
    plain.save(str(docs / "plain.docx"))
    store = LocalStore(tmp_path / "store")
    try:
        report = Ingestor(store, FakeEmbedder(dim=16), IngestSettings()).ingest([docs])
    finally:
        store.close()
    reasons = {Path(o.source).name: (o.status, o.reason) for o in report.outcomes}
    assert reasons["h.docx"] == (
        "added",
        "header and footer text left out (not searchable, not citable)",
    )
    assert reasons["plain.docx"] == ("added", "")


def test_hidden_runs_inside_insertions_and_controls_stay_out(tmp_path: Path) -> None:
    d = docx.Document()
    p = d.add_paragraph("Shown. ")
    hidden = _run("SECRET one")
    rpr = OxmlElement("w:rPr")
    rpr.append(OxmlElement("w:vanish"))
    hidden.insert(0, rpr)
    p._p.append(_sdt(_wrap("w:ins", hidden)))
    p._p.append(_wrap("w:ins", _run("Inserted.")))
    doc = _load(d, tmp_path)
    assert doc.text == "Shown. Inserted."


def test_comments_and_equations_left_out_are_said(tmp_path: Path) -> None:
    d = docx.Document()
    p = d.add_paragraph("The area of a circle is ")
    d.add_comment(p.runs, text="REVIEW check this", author="Reviewer")
    p._p.append(
        parse_xml(
            '<m:oMath xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math">'
            "<m:r><m:t>πr²</m:t></m:r></m:oMath>"
        )
    )
    doc = _load(d, tmp_path)
    assert doc.text == "The area of a circle is"
    assert doc.metadata["left_out"] == "comments, equations"
