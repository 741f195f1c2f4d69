"""Fuzz ``affidavit audit`` and ``affidavit check``: any bytes on stdin, hostile JSON shapes."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

from fuzzkit import (
    FUZZ,
    MEMORY_CAP,
    assert_clean_exit,
    assert_terminal_safe,
    chunk_dicts,
    encode,
    hostile_text,
    invoke,
    json_values,
)
from hypothesis import given
from hypothesis import strategies as st

audit_inputs = st.one_of(
    st.fixed_dictionaries(
        {"chunks": st.lists(chunk_dicts(), max_size=5), "response": hostile_text},
        optional={"query": hostile_text | st.none()},
    ).map(encode),
    json_values.map(encode),  # any JSON at all
    st.binary(max_size=200),  # not UTF-8, not JSON
    st.fixed_dictionaries(  # deep nesting
        {"n": st.integers(min_value=1, max_value=5000)}
    ).map(lambda d: ("[" * d["n"] + "]" * d["n"]).encode()),
)


@FUZZ
@given(raw=audit_inputs, flags=st.sampled_from([[], ["--json"], ["--no-color"]]))
def test_audit_any_input(fuzz_env: Path, raw: bytes, flags: list[str]) -> None:
    tracemalloc.start()
    try:
        r = invoke(["audit", "-", *flags], input=raw)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert_clean_exit(r)
    assert_terminal_safe(r.output)
    assert peak < MEMORY_CAP
    if r.exit_code in (0, 1) and flags == ["--json"]:
        report = json.loads(r.stdout)
        assert report["trust_passed"] is (r.exit_code == 0)


@FUZZ
@given(raw=audit_inputs)
def test_audit_certify_any_input(fuzz_env: Path, raw: bytes) -> None:
    assert invoke(["keys", "generate", "--force"]).exit_code == 0
    cert = fuzz_env / "c.json"
    cert.unlink(missing_ok=True)
    r = invoke(["audit", "-", "--certify", str(cert)], input=raw)
    assert_clean_exit(r)
    assert_terminal_safe(r.output)
    if r.exit_code in (0, 1):  # judged: a certificate was written, and it verifies
        v = invoke(["certificate", "verify", str(cert)])
        assert v.exit_code == 0, v.output
        assert_terminal_safe(invoke(["certificate", "show", str(cert)]).output)
    else:
        assert not cert.exists()


def _check_line(d: dict[str, Any]) -> str:
    return json.dumps(d, ensure_ascii=True)


check_lines = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {
                "id": hostile_text | st.integers(),
                "claim": hostile_text,
                "evidence": st.lists(hostile_text, max_size=3),
            }
        ).map(_check_line),
        json_values.map(lambda v: json.dumps(v, ensure_ascii=True)),
        hostile_text.map(lambda t: t.replace("\n", " ")),
    ),
    max_size=4,
).map(lambda lines: "\n".join(lines).encode("utf-8", "surrogatepass"))


@FUZZ
@given(raw=check_lines)
def test_check_any_input(fuzz_env: Path, raw: bytes) -> None:
    # the model-free cascade: the property is about input handling, not the verifier
    r = invoke(["check", "-", "--cascade", "checks"], input=raw)
    assert_clean_exit(r)
    assert_terminal_safe(r.output)
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            json.loads(line)  # every output line is JSON
