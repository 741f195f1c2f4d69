"""Type detection by content and the recursive walk (symlink loops, broken links, hidden files)."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from affidavit.ingest.detect import UnsupportedType, detect
from affidavit.ingest.walk import walk


def _detect(tmp_path: Path, name: str, data: bytes) -> str:
    p = tmp_path / name
    p.write_bytes(data)
    return detect(p, data[:8192])


def test_pdf_by_magic_whatever_the_extension(tmp_path: Path) -> None:
    assert _detect(tmp_path, "report.txt", b"%PDF-1.7\n...") == "pdf"


def test_text_named_pdf_is_text(tmp_path: Path) -> None:
    assert _detect(tmp_path, "notes.pdf", b"just some notes\n") == "text"


def test_html_by_content(tmp_path: Path) -> None:
    assert _detect(tmp_path, "page", b"  <!DOCTYPE html><html><body>x</body></html>") == "html"


def test_jsonl_by_content(tmp_path: Path) -> None:
    assert _detect(tmp_path, "records.txt", b'{"id": 1, "text": "hi"}\n') == "jsonl"
    assert _detect(tmp_path, "x.md", b"# Title\n") == "markdown"


def test_docx_vs_other_zip(tmp_path: Path) -> None:
    p = tmp_path / "a.docx"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("word/document.xml", "<w/>")
    assert detect(p, p.read_bytes()[:8192]) == "docx"
    q = tmp_path / "b.docx"
    with zipfile.ZipFile(q, "w") as z:
        z.writestr("readme.txt", "hi")
    with pytest.raises(UnsupportedType, match="not a DOCX"):
        detect(q, q.read_bytes()[:8192])


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 20, "PNG"),
        (b"\x7fELF\x02\x01", "ELF"),
        (b"abc\x00def", "NUL"),
        (bytes(range(1, 32)) * 10, "control bytes"),
    ],
)
def test_binary_refused_with_reason(tmp_path: Path, data: bytes, reason: str) -> None:
    with pytest.raises(UnsupportedType, match=reason):
        _detect(tmp_path, "f.txt", data)


def test_walk_sorted_recursive_skips_hidden(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "z.txt").write_text("z")
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("x")
    (tmp_path / ".hidden.txt").write_text("x")
    found = list(walk([tmp_path]))
    assert [f.path.relative_to(tmp_path).as_posix() for f in found] == ["a.txt", "b/z.txt"]
    assert all(f.error is None for f in found)


def test_walk_symlink_loop_reported_once(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f.txt").write_text("f")
    os.symlink(tmp_path / "d", tmp_path / "d" / "loop")
    found = list(walk([tmp_path]))
    files = [f for f in found if f.error is None]
    errors = [f for f in found if f.error]
    assert [f.path.name for f in files] == ["f.txt"]
    assert len(errors) == 1 and "loop" in (errors[0].error or "")


def test_walk_broken_symlink_and_missing(tmp_path: Path) -> None:
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling.txt")
    found = list(walk([tmp_path, tmp_path / "missing"]))
    reasons = sorted(f.error or "" for f in found)
    assert any("broken symlink" in r for r in reasons)
    assert any("no such file" in r for r in reasons)


def test_walk_same_file_twice_once(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    os.symlink(tmp_path / "a.txt", tmp_path / "b.txt")
    assert [f.path.name for f in walk([tmp_path, tmp_path / "a.txt"])] == ["a.txt"]


def test_walk_skips_store_folder(tmp_path: Path) -> None:
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "x.txt").write_text("x")
    (tmp_path / "y.txt").write_text("y")
    assert [f.path.name for f in walk([tmp_path], skip=[tmp_path / "store"])] == ["y.txt"]


def _docx_zip() -> bytearray:
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("word/document.xml", "<w/>")
        z.writestr("\u00e9t\u00e9.xml", "x")  # a non-ASCII name: stored with the UTF-8 flag
    return bytearray(buf.getvalue())


def _corrupt_version(raw: bytearray) -> bytes:
    at = raw.index(b"PK\x01\x02") + 6  # the central directory's "version needed to extract"
    raw[at : at + 2] = b"\xff\x00"
    return bytes(raw)


def _corrupt_utf8_name(raw: bytearray) -> bytes:
    raw[raw.index("\u00e9".encode(), raw.index(b"PK\x01\x02"))] = 0xFF
    return bytes(raw)


@pytest.mark.parametrize("corrupt", [_corrupt_version, _corrupt_utf8_name])
def test_a_corrupt_zip_directory_is_unsupported_not_a_crash(
    tmp_path: Path, corrupt: object
) -> None:
    # zipfile raises NotImplementedError (version 25.5) or UnicodeDecodeError (a name flagged
    # UTF-8 that is not) for these, not BadZipFile: once an internal error that ended the run
    assert callable(corrupt)
    with pytest.raises(UnsupportedType, match="corrupt zip"):
        _detect(tmp_path, "x.docx", corrupt(_docx_zip()))


def test_walk_never_follows_a_symlink_out_of_the_folder(tmp_path: Path) -> None:
    """A link in an ingested folder to a file or folder elsewhere (~/.ssh, /etc) was followed:
    whoever could write to the folder made the ingesting user's private files searchable."""
    docs, private = tmp_path / "docs", tmp_path / "private"
    docs.mkdir()
    private.mkdir()
    (docs / "a.txt").write_text("a")
    (private / "key.txt").write_text("secret")
    os.symlink(private / "key.txt", docs / "key.txt")
    os.symlink(private, docs / "more")
    (docs / "sub").mkdir()
    os.symlink(docs / "a.txt", docs / "sub" / "same.txt")  # inside the folder: read (once)
    found = list(walk([docs]))
    assert [f.path.name for f in found if f.error is None] == ["a.txt"]
    errors = {f.path.name: f.error or "" for f in found if f.error}
    assert set(errors) == {"key.txt", "more"}
    assert all("outside the folder" in e and "not followed" in e for e in errors.values())
    # named on the command line, the target is ingested
    assert [f.path.name for f in walk([docs / "key.txt"])] == ["key.txt"]
