"""Regenerate the ingest sample files: `python tests/data/make_ingest_samples.py` (repo root).

Every file is tiny and made by code, so it can be rebuilt and reviewed. The PDFs are written by
hand (no reportlab): one Helvetica text object per line.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

HERE = Path(__file__).parent / "ingest"

PAGE1 = [
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris.",
    "It is named after the engineer Gustave Eiffel, whose company designed and built it.",
    "Construction began in 1887 and the tower was completed in March 1889.",
]
PAGE2 = [
    "The tower is 330 metres tall, about the same height as an 81-storey building.",
    "It was the tallest man-made structure in the world until 1930.",
]


def _esc(s: str) -> str:
    return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(pages: list[list[str]], title: str | None = None) -> bytes:
    """A minimal valid PDF with one text line per entry (Type1 Helvetica, WinAnsi)."""
    objs: list[bytes] = []
    n_pages = len(pages)
    # 1 catalog, 2 pages, 3 font, then (page, content) pairs, then info
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(n_pages))
    objs.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objs.append(f"<< /Type /Pages /Kids [{kids}] /Count {n_pages} >>".encode())
    objs.append(
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
    )
    for i, lines in enumerate(pages):
        stream = "BT /F1 11 Tf 14 TL 72 740 Td " + " ".join(f"({_esc(t)}) Tj T*" for t in lines)
        stream += " ET"
        data = stream.encode("latin-1")
        objs.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>".encode()
        )
        objs.append(b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream")
    info_ref = ""
    if title is not None:
        objs.append(f"<< /Title ({_esc(title)}) /CreationDate (D:20240115120000Z) >>".encode())
        info_ref = f" /Info {len(objs)} 0 R"
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for n, body in enumerate(objs, start=1):
        offsets.append(out.tell())
        out.write(f"{n} 0 obj\n".encode() + body + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode())
    for off in offsets:
        out.write(f"{off:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R{info_ref} >>\n".encode())
    out.write(f"startxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


def make_docx(path: Path) -> None:
    import docx

    d = docx.Document()
    d.core_properties.title = "Marie Curie"
    d.add_heading("Marie Curie", level=1)
    d.add_paragraph(
        "Marie Curie was a Polish and naturalised-French physicist and chemist who conducted "
        "pioneering research on radioactivity."
    )
    d.add_paragraph(
        "She was the first woman to win a Nobel Prize, and the only person to win Nobel Prizes "
        "in two scientific fields: physics in 1903 and chemistry in 1911."
    )
    table = d.add_table(rows=2, cols=2)
    table.cell(0, 0).text = "Element"
    table.cell(0, 1).text = "Discovered"
    table.cell(1, 0).text = "Polonium"
    table.cell(1, 1).text = "1898"
    d.save(str(path))


def make_bomb(src: Path, dst: Path) -> None:
    """A DOCX carrying a 40 MB member of zeros (deflates to ~40 KB): a zip bomb in miniature."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            zout.writestr(item, zin.read(item.filename))
        zout.writestr("word/media/padding.bin", b"\x00" * (40 * 1024 * 1024))


HTML = """<!DOCTYPE html>
<html lang="en"><head><title>Gettysburg Address</title>
<meta name="date" content="2021-11-19">
<link rel="canonical" href="https://www.example.org/gettysburg">
</head><body>
<nav><a href="/">Home</a> | <a href="/about">About</a> | <a href="/shop">Shop our store</a></nav>
<article>
<h1>Gettysburg Address</h1>
<p>Four score and seven years ago our fathers brought forth on this continent, a new nation,
conceived in Liberty, and dedicated to the proposition that all men are created equal.</p>
<p>Now we are engaged in a great civil war, testing whether that nation, or any nation so
conceived and so dedicated, can long endure. We are met on a great battle-field of that war.</p>
<p>The address was delivered by Abraham Lincoln on November 19, 1863, at the dedication of the
Soldiers' National Cemetery in Gettysburg, Pennsylvania.</p>
</article>
<footer>Copyright 2021 Example Org. Subscribe to our newsletter for cookie settings.</footer>
</body></html>
"""

TEXT = """Preamble to the Constitution of the United States

We the People of the United States, in Order to form a more perfect Union, establish Justice,
insure domestic Tranquility, provide for the common defence, promote the general Welfare, and
secure the Blessings of Liberty to ourselves and our Posterity, do ordain and establish this
Constitution for the United States of America.

The Constitution was signed on September 17, 1787, in Philadelphia.
"""

MARKDOWN = """# Photosynthesis

Photosynthesis is the process by which green plants convert light energy into chemical energy.

## Inputs

- carbon dioxide
- water
- light

The products are glucose and oxygen. Dr. Jan Ingenhousz showed in 1779 that light is essential.
"""


def main() -> None:
    (HERE / "sample.pdf").write_bytes(make_pdf([PAGE1, PAGE2], title="The Eiffel Tower"))
    (HERE / "empty.pdf").write_bytes(make_pdf([[]]))
    # corrupt: a PDF header followed by damaged bytes and no cross-reference table
    good = make_pdf([PAGE1])
    (HERE / "corrupt.pdf").write_bytes(good[:200] + b"\x00garbage\xff" * 20)
    from pypdf import PdfReader, PdfWriter

    w = PdfWriter()
    for page in PdfReader(io.BytesIO(make_pdf([PAGE1]))).pages:
        w.add_page(page)
    w.encrypt(user_password="secret", owner_password="owner", algorithm="AES-128")
    with (HERE / "encrypted.pdf").open("wb") as fh:
        w.write(fh)
    make_docx(HERE / "sample.docx")
    make_bomb(HERE / "sample.docx", HERE / "bomb.docx")
    (HERE / "sample.html").write_text(HTML, encoding="utf-8")
    (HERE / "sample.txt").write_text(TEXT, encoding="utf-8")
    (HERE / "sample.md").write_text(MARKDOWN, encoding="utf-8")
    (HERE / "latin1.txt").write_bytes("Café crème brûlée à la française.\n".encode("latin-1"))
    (HERE / "binary.bin").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 2)
    (HERE / "mislabelled.pdf").write_text(
        "This file says PDF but holds plain text about the Moon landing in 1969.\n",
        encoding="utf-8",
    )
    records = [
        {
            "id": "rec-1",
            "title": "Mount Everest",
            "url": "https://en.example.org/everest",
            "text": "Mount Everest is Earth's highest mountain above sea level, at 8,849 metres.",
            "metadata": {"published_at": "2020-12-08"},
        },
        {
            "id": "rec-2",
            "title": "Great Wall",
            "url": "https://history.example.com/wall",
            "text": "The Great Wall of China was built over many centuries.",
            "metadata": {"year": 1987},
        },
    ]
    lines = [json.dumps(r) for r in records] + ["{not json", json.dumps({"id": "rec-3"})]
    (HERE / "sample.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
