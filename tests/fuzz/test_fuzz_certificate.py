"""Fuzz certificate files: tampering never verifies, nothing crashes or drives the terminal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fuzzkit import (
    FUZZ,
    assert_clean_exit,
    assert_terminal_safe,
    clean_env,
    invoke,
    json_values,
)
from hypothesis import given
from hypothesis import strategies as st


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """One real signed certificate (and the key that signed it, in the module's home)."""
    base = tmp_path_factory.mktemp("cert")
    with pytest.MonkeyPatch.context() as mp:
        clean_env(base, mp)
        assert invoke(["keys", "generate"]).exit_code == 0
        (base / "a.json").write_text(
            json.dumps(
                {
                    "query": "Where is the tower?",
                    "chunks": [{"text": "The tower is in Paris.", "url": "https://e.org/t"}],
                    "response": "The tower is in Paris. It opened in 1889.",
                }
            ),
            encoding="utf-8",
        )
        r = invoke(["audit", str(base / "a.json"), "--certify", str(base / "c.json")])
        assert r.exit_code in (0, 1), r.output
    return base, json.loads((base / "c.json").read_text(encoding="utf-8"))


def _paths(tree: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(tree, dict):
        for k, v in tree.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            out += _paths(v, (*prefix, i))
    return out


def _replace(tree: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(tree, dict):
        return {**tree, head: _replace(tree[head], rest, value)}
    copy = list(tree)
    copy[head] = _replace(tree[head], rest, value)
    return copy


@FUZZ
@given(data=st.data(), flags=st.sampled_from([[], ["--json"]]))
def test_mutated_certificate_never_verifies(
    signed: tuple[Path, dict[str, Any]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    data: st.DataObject,
    flags: list[str],
) -> None:
    base, tree = signed
    monkeypatch.setenv("AFFIDAVIT_HOME", str(base / "home"))
    monkeypatch.delenv("AFFIDAVIT_EMBED__BACKEND", raising=False)
    path = data.draw(st.sampled_from(_paths(tree)))
    value = data.draw(json_values)
    mutated = _replace(tree, path, value)
    cert = tmp_path / "m.json"
    how = data.draw(st.sampled_from(["json", "bytes"]))
    if how == "json":
        cert.write_text(json.dumps(mutated, ensure_ascii=True), encoding="utf-8")
    else:
        raw = bytearray(json.dumps(tree).encode())
        pos = data.draw(st.integers(0, len(raw) - 1))
        raw[pos] = data.draw(st.integers(0, 255))
        cert.write_bytes(bytes(raw))
    r = invoke(["certificate", "verify", str(cert), *flags])
    assert_clean_exit(r)
    assert_terminal_safe(r.output)
    if r.exit_code == 0:  # only an unchanged certificate may verify
        assert json.loads(cert.read_text(encoding="utf-8")) == tree
    s = invoke(["certificate", "show", str(cert)])
    assert_clean_exit(s, {0, 2})
    assert_terminal_safe(s.output)
    v = invoke(["validate", str(cert), "--schema", "Certificate"])
    assert_clean_exit(v)
    assert_terminal_safe(v.output)
