# ruff: noqa: E501  (long literal lines are the corpus text itself)
"""Rebuild the demo corpus: `python sample_corpus/build.py` (needs python-docx).

Public-domain texts (the Gettysburg Address, the Preamble and Article I, Sections 1-3 of the US
Constitution, the opening of the Declaration of Independence) and short encyclopaedia-style
factual notes written for this project (Eiffel Tower, Marie Curie, Apollo 11), in PDF, DOCX,
HTML, Markdown, plain text and JSONL so the demo exercises every loader.
"""

from __future__ import annotations

import io
import json
import textwrap
from pathlib import Path

HERE = Path(__file__).parent / "docs"

EIFFEL = [
    "The Eiffel Tower",
    "",
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. It is "
    "named after the engineer Gustave Eiffel, whose company designed and built the tower for the "
    "1889 World's Fair (Exposition Universelle), held to celebrate the centennial of the French "
    "Revolution.",
    "",
    "Construction began in January 1887 and was completed in March 1889, taking about two years, "
    "two months and five days. The structure is made of about 18,000 metallic parts joined by "
    "some 2.5 million rivets, and its iron frame weighs about 7,300 tonnes.",
    "",
    "When it opened, the tower was 300 metres tall, and it remained the tallest man-made "
    "structure in the world until the Chrysler Building in New York City was completed in 1930. "
    "With the antennas added at its top it now stands about 330 metres high.",
    "",
    "The tower has three levels for visitors, with restaurants on the first and second levels. "
    "The top level's upper platform is 276 metres above the ground, the highest observation deck "
    "accessible to the public in the European Union.",
    "",
    "Initially criticised by some of France's leading artists and intellectuals for its design, "
    "the tower has become a global cultural icon of France and one of the most recognisable "
    "structures in the world. It was originally given a permit to stand for 20 years, but it was "
    "kept because of its value for radiotelegraphy.",
]

CURIE = [
    ("Marie Curie", "title"),
    (
        "Marie Skłodowska Curie (7 November 1867 - 4 July 1934) was a Polish and naturalised-French "
        "physicist and chemist who conducted pioneering research on radioactivity.",
        "p",
    ),
    (
        "She was born in Warsaw, then part of the Russian Empire, and moved to Paris in 1891 to study "
        "at the University of Paris, where she earned degrees in physics and mathematics.",
        "p",
    ),
    (
        "In 1898, working with her husband Pierre Curie, she announced the discovery of two new "
        "elements: polonium, which she named after her native Poland, and radium.",
        "p",
    ),
    (
        "Marie Curie was the first woman to win a Nobel Prize. She shared the 1903 Nobel Prize in "
        "Physics with Pierre Curie and Henri Becquerel, and she won the 1911 Nobel Prize in Chemistry "
        "alone. She remains the only person to win Nobel Prizes in two different scientific fields.",
        "p",
    ),
    (
        "She was also the first woman to become a professor at the University of Paris. During the "
        "First World War she developed mobile X-ray units, known as 'petites Curies', to serve "
        "field hospitals.",
        "p",
    ),
    (
        "She died in 1934 at the sanatorium of Sancellemoz in Passy, France, of aplastic anaemia, "
        "likely caused by long exposure to radiation.",
        "p",
    ),
]

GETTYSBURG_HTML = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>The Gettysburg Address</title>
<meta name="date" content="1863-11-19">
</head>
<body>
<nav><a href="index.html">Home</a> | <a href="speeches.html">Speeches</a> | <a href="about.html">About this site</a></nav>
<article>
<h1>The Gettysburg Address</h1>
<p>The Gettysburg Address is a speech that President Abraham Lincoln delivered on November 19,
1863, at the dedication of the Soldiers' National Cemetery in Gettysburg, Pennsylvania, four and
a half months after the Union armies defeated those of the Confederacy at the Battle of
Gettysburg. The text below is the Bliss copy.</p>
<p>Four score and seven years ago our fathers brought forth on this continent, a new nation,
conceived in Liberty, and dedicated to the proposition that all men are created equal.</p>
<p>Now we are engaged in a great civil war, testing whether that nation, or any nation so
conceived and so dedicated, can long endure. We are met on a great battle-field of that war. We
have come to dedicate a portion of that field, as a final resting place for those who here gave
their lives that that nation might live. It is altogether fitting and proper that we should do
this.</p>
<p>But, in a larger sense, we can not dedicate -- we can not consecrate -- we can not hallow --
this ground. The brave men, living and dead, who struggled here, have consecrated it, far above
our poor power to add or detract. The world will little note, nor long remember what we say
here, but it can never forget what they did here. It is for us the living, rather, to be
dedicated here to the unfinished work which they who fought here have thus far so nobly
advanced. It is rather for us to be here dedicated to the great task remaining before us --
that from these honored dead we take increased devotion to that cause for which they gave the
last full measure of devotion -- that we here highly resolve that these dead shall not have died
in vain -- that this nation, under God, shall have a new birth of freedom -- and that government
of the people, by the people, for the people, shall not perish from the earth.</p>
</article>
<footer>This page is a demonstration file for affidavit. Cookie settings | Newsletter</footer>
</body>
</html>
"""

CONSTITUTION = """The Constitution of the United States (excerpt)

Preamble

We the People of the United States, in Order to form a more perfect Union, establish Justice,
insure domestic Tranquility, provide for the common defence, promote the general Welfare, and
secure the Blessings of Liberty to ourselves and our Posterity, do ordain and establish this
Constitution for the United States of America.

Article I, Section 1

All legislative Powers herein granted shall be vested in a Congress of the United States, which
shall consist of a Senate and House of Representatives.

Article I, Section 2

The House of Representatives shall be composed of Members chosen every second Year by the People
of the several States, and the Electors in each State shall have the Qualifications requisite for
Electors of the most numerous Branch of the State Legislature.

No Person shall be a Representative who shall not have attained to the Age of twenty five Years,
and been seven Years a Citizen of the United States, and who shall not, when elected, be an
Inhabitant of that State in which he shall be chosen.

Article I, Section 3

The Senate of the United States shall be composed of two Senators from each State, chosen by the
Legislature thereof, for six Years; and each Senator shall have one Vote.

No Person shall be a Senator who shall not have attained to the Age of thirty Years, and been
nine Years a Citizen of the United States, and who shall not, when elected, be an Inhabitant of
that State for which he shall be chosen.

The Vice President of the United States shall be President of the Senate, but shall have no Vote,
unless they be equally divided.

The Constitution was signed on September 17, 1787, at the Constitutional Convention in
Philadelphia, Pennsylvania, and came into force on March 4, 1789.
"""

DECLARATION = """# The Declaration of Independence (opening)

The Declaration of Independence was adopted by the Second Continental Congress meeting in
Philadelphia on July 4, 1776. Its principal author was Thomas Jefferson.

## Preamble

When in the Course of human events, it becomes necessary for one people to dissolve the political
bands which have connected them with another, and to assume among the powers of the earth, the
separate and equal station to which the Laws of Nature and of Nature's God entitle them, a decent
respect to the opinions of mankind requires that they should declare the causes which impel them
to the separation.

We hold these truths to be self-evident, that all men are created equal, that they are endowed by
their Creator with certain unalienable Rights, that among these are Life, Liberty and the pursuit
of Happiness.
"""

APOLLO = [
    {
        "id": "apollo-11",
        "title": "Apollo 11",
        "url": "https://www.example.org/apollo-11",
        "metadata": {"published_at": "2019-07-16"},
        "text": "Apollo 11 was the American spaceflight that first landed humans on the Moon. "
        "Commander Neil Armstrong and lunar module pilot Buzz Aldrin landed the lunar module "
        "Eagle on July 20, 1969. Armstrong became the first person to step onto the lunar "
        "surface six hours and 39 minutes later, and Aldrin joined him 19 minutes after "
        "that. Michael Collins flew the command module Columbia alone in lunar orbit while "
        "they were on the surface. The crew returned to Earth and splashed down in the "
        "Pacific Ocean on July 24, 1969.",
    },
    {
        "id": "saturn-v",
        "title": "Saturn V",
        "url": "https://history.example.com/saturn-v",
        "metadata": {"year": 1967},
        "text": "The Saturn V was an American super heavy-lift launch vehicle used by NASA between "
        "1967 and 1973. It was a three-stage, liquid-fuelled rocket, about 110.6 metres "
        "tall, and it launched the Apollo 11 mission to the Moon.",
    },
]


def _esc(s: str) -> str:
    return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(paragraphs: list[str], title: str, lines_per_page: int = 40) -> bytes:
    """A minimal text PDF (Helvetica), paragraphs wrapped at 90 characters."""
    lines: list[str] = []
    for p in paragraphs:
        lines.extend(textwrap.wrap(p, 90) if p else [""])
    pages = [lines[i : i + lines_per_page] for i in range(0, len(lines), lines_per_page)]
    objs: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(len(pages)))
    objs.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    objs.append(
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
    )
    for i, page in enumerate(pages):
        body = "BT /F1 10 Tf 13 TL 60 750 Td " + " ".join(f"({_esc(t)}) Tj T*" for t in page)
        data = (body + " ET").encode("latin-1")
        objs.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>".encode()
        )
        objs.append(b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream")
    objs.append(f"<< /Title ({_esc(title)}) /CreationDate (D:20240301000000Z) >>".encode())
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for n, obj in enumerate(objs, start=1):
        offsets.append(out.tell())
        out.write(f"{n} 0 obj\n".encode() + obj + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode())
    for off in offsets:
        out.write(f"{off:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R /Info {len(objs)} 0 R >>\n".encode())
    out.write(f"startxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


def main() -> None:
    import docx

    HERE.mkdir(exist_ok=True)

    (HERE / "eiffel_tower.pdf").write_bytes(make_pdf(EIFFEL, "The Eiffel Tower"))
    d = docx.Document()
    d.core_properties.title = "Marie Curie"
    for text, kind in CURIE:
        if kind == "title":
            d.add_heading(text, level=1)
        else:
            d.add_paragraph(text)
    d.save(str(HERE / "marie_curie.docx"))
    (HERE / "gettysburg_address.html").write_text(GETTYSBURG_HTML, encoding="utf-8")
    (HERE / "us_constitution.txt").write_text(CONSTITUTION, encoding="utf-8")
    (HERE / "declaration_of_independence.md").write_text(DECLARATION, encoding="utf-8")
    (HERE / "space.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in APOLLO), encoding="utf-8"
    )


if __name__ == "__main__":
    main()
