"""Schemas are discovered from core/ and validation is strict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from affidavit.certify import contracts, export_schemas, schema_of, validate_json
from affidavit.core.certificate import Certificate
from affidavit.core.errors import InputError

EXPECTED = {
    "Chunk",
    "Document",
    "Hit",
    "Claim",
    "CheckResult",
    "EvidenceSpan",
    "StageScore",
    "Verdict",
    "Certificate",
    "ClaimRecord",
    "RenderedAnswer",
    "ClaimDecision",
}


def test_every_core_contract_is_found() -> None:
    assert set(contracts()) >= EXPECTED
    assert "Frozen" not in contracts()


def test_export_writes_one_schema_per_contract(tmp_path: Path) -> None:
    written = export_schemas(tmp_path / "schemas")
    names = {p.stem for p in written}
    assert names == set(contracts())
    cert = json.loads((tmp_path / "schemas" / "Certificate.json").read_text())
    assert cert["$schema"].endswith("2020-12/schema")
    assert {"signature", "claims", "policy", "key_id"} <= set(cert["properties"])
    assert cert["additionalProperties"] is False


def test_validate_reports_errors(signed: Certificate) -> None:
    assert validate_json(signed.model_dump_json(), "Certificate") == []
    assert validate_json('{"text": "a", "url": 3}', "Chunk") == [
        "url: Input should be a valid string"
    ]
    errors = validate_json('{"claim_id": "c1"}', "Verdict")
    assert any(e.startswith("label:") for e in errors)


def test_unknown_schema_lists_valid_names() -> None:
    with pytest.raises(InputError, match=r"valid schemas: .*Certificate"):
        schema_of("Nope")


def test_exported_schemas_accept_real_instances_and_reject_edits(signed: Certificate) -> None:
    """The files export-schemas writes are usable by any JSON Schema validator."""
    jsonschema = pytest.importorskip("jsonschema")
    from affidavit.core.settings import PolicySettings
    from affidavit.policy import decide_all, render
    from conftest import CLAIMS, VERDICTS

    decisions = decide_all(CLAIMS, VERDICTS, PolicySettings())
    rendered = render(signed.answer, CLAIMS, decisions, "strict")
    cases = {
        "Certificate": signed.model_dump(mode="json"),
        "Verdict": VERDICTS[2].model_dump(mode="json"),
        "Claim": CLAIMS[0].model_dump(mode="json"),
        "RenderedAnswer": rendered.model_dump(mode="json"),
        "ClaimDecision": decisions[0].model_dump(mode="json"),
    }
    for name, instance in cases.items():
        validator = jsonschema.Draft202012Validator(schema_of(name))
        assert list(validator.iter_errors(instance)) == [], name
        assert list(validator.iter_errors({**instance, "surprise": 1})), name
    bad = signed.model_dump(mode="json")
    bad["claims"][0]["decision"] = "probably"
    assert list(jsonschema.Draft202012Validator(schema_of("Certificate")).iter_errors(bad))
