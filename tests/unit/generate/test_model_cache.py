"""Assembling the embedded model from its parts: order, sha256 check, reuse, missing parts."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from affidavit.core.errors import MissingDependencyError, ModelError
from affidavit.generate import model_cache


def _parts(tmp_path: Path) -> tuple[list[Path], str]:
    blobs = [b"GGUF-part-one|", b"part-two|", b"part-three"]
    paths = []
    for i, blob in enumerate(blobs):
        p = tmp_path / f"part{i:02d}.bin"
        p.write_bytes(blob)
        paths.append(p)
    return paths, hashlib.sha256(b"".join(blobs)).hexdigest()


def test_assemble_joins_in_order(tmp_path: Path) -> None:
    parts, sha = _parts(tmp_path)
    out = model_cache.assemble(parts, tmp_path / "cache" / "m.gguf", sha)
    assert out.read_bytes() == b"GGUF-part-one|part-two|part-three"


def test_assemble_wrong_order_fails_closed(tmp_path: Path) -> None:
    parts, sha = _parts(tmp_path)
    target = tmp_path / "cache" / "m.gguf"
    with pytest.raises(ModelError, match="does not match"):
        model_cache.assemble(list(reversed(parts)), target, sha)
    assert not target.exists()
    assert list(target.parent.iterdir()) == []  # no temporary file left behind


def test_ensure_reuses_the_checked_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parts, sha = _parts(tmp_path)
    monkeypatch.setattr(model_cache, "MODEL_SHA256", sha)
    calls: list[int] = []

    def fake_parts() -> list[Path]:
        calls.append(1)
        return parts

    monkeypatch.setattr(model_cache, "part_paths", fake_parts)
    monkeypatch.setattr(model_cache, "assemble", lambda p, t: _ASSEMBLE(p, t, sha))
    cache = tmp_path / "cache"
    first = model_cache.ensure_model_file(cache)
    second = model_cache.ensure_model_file(cache)
    assert first == second
    assert calls == [1]  # assembled once


def test_ensure_rechecks_a_tampered_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parts, sha = _parts(tmp_path)
    monkeypatch.setattr(model_cache, "MODEL_SHA256", sha)
    monkeypatch.setattr(model_cache, "part_paths", lambda: parts)
    monkeypatch.setattr(model_cache, "assemble", lambda p, t: _ASSEMBLE(p, t, sha))
    cache = tmp_path / "cache"
    target = model_cache.ensure_model_file(cache)
    target.write_bytes(b"corrupted")  # size changes: the stamp no longer matches
    again = model_cache.ensure_model_file(cache)
    assert again.read_bytes() == b"GGUF-part-one|part-two|part-three"


def test_missing_part_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_cache, "PART_PACKAGE", "affidavit_no_such_package_{index}")
    with pytest.raises(MissingDependencyError) as info:
        model_cache.part_paths()
    assert 'pip install "affidavit[llm]"' in str(info.value)


_ASSEMBLE = model_cache.assemble
