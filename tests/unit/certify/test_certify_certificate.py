"""Certificates: what they record, and that no edit survives verification."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from affidavit import __version__
from affidavit.certify import (
    build_certificate,
    canonical_bytes,
    key_id,
    load_certificate,
    sign_certificate,
    verify_certificate,
    write_certificate,
)
from affidavit.certify.keys import raw_public_key
from affidavit.core.certificate import Certificate
from affidavit.core.errors import CertificateError, InputError
from affidavit.core.policy import ClaimDecision
from affidavit.core.settings import Settings
from affidavit.core.types import sha256_text
from conftest import ANSWER, CHUNKS, CLAIMS, MODELS, VERDICTS, WHEN


def tree_of(cert: Certificate) -> dict[str, Any]:
    return json.loads(json.dumps(cert.model_dump(mode="json")))


def resign_tree(tree: dict[str, Any], key: Ed25519PrivateKey) -> dict[str, Any]:
    """What an attacker holding ``key`` does: set its own key id and sign the edited tree."""
    out = copy.deepcopy(tree)
    raw = raw_public_key(key.public_key())
    out["public_key"] = base64.b64encode(raw).decode()
    out["key_id"] = hashlib.sha256(raw).hexdigest()[:16]
    out.pop("signature", None)
    out["signature"] = base64.b64encode(key.sign(canonical_bytes(out))).decode()
    return out


def test_records_everything_the_issue_asks_for(signed: Certificate, key: Ed25519PrivateKey) -> None:
    assert signed.question == "When was the Eiffel Tower completed?"
    assert signed.answer == ANSWER
    assert [(r.claim.id, r.decision) for r in signed.claims] == [
        ("c1", "verified"),
        ("c2", "verified"),
        ("c3", "blocked"),
    ]
    c1 = signed.claims[0]
    assert c1.p_entail == 0.93 and c1.label == "supported" and c1.stages[0].stage == "cross_encoder"
    ev = c1.evidence[0]
    assert (ev.doc_id, ev.chunk_id) == ("d1", "k1")
    assert CHUNKS[0].text[ev.start : ev.end] == ev.text
    assert ev.sha256 == hashlib.sha256(ev.text.encode()).hexdigest()  # type: ignore[union-attr]
    assert "1925 disagrees with 1889" in signed.claims[2].reason
    assert (signed.policy.tau_entail, signed.policy.tau_contradict) == (0.5, 0.5)
    assert signed.config["policy"]["tau_entail"] == 0.5
    assert signed.config["verify"]["cascade"] == ["checks", "cross_encoder"]
    assert [m.model_dump() for m in signed.models] == MODELS
    assert signed.library_version == __version__
    assert signed.created_at == "2026-11-30T12:00:00.000000Z"
    raw = raw_public_key(key.public_key())
    assert base64.b64decode(signed.public_key) == raw
    assert signed.key_id == hashlib.sha256(raw).hexdigest()[:16] == key_id(key.public_key())


def test_secrets_are_masked_in_the_recorded_config(key: Ed25519PrivateKey) -> None:
    s = Settings(generate={"api_key": "sk-very-secret"})
    cert = build_certificate("q", "a", [], [], None, s, [])
    assert "sk-very-secret" not in json.dumps(cert.model_dump(mode="json"))


def test_valid_with_trusted_key(signed: Certificate, key: Ed25519PrivateKey) -> None:
    result = verify_certificate(signed, [key.public_key()])
    assert result.valid, result.reasons
    assert result.signature_ok and result.trusted
    assert result.evidence_checked == 3


def test_embedded_key_alone_is_not_trust(signed: Certificate) -> None:
    result = verify_certificate(signed)
    assert not result.valid
    assert result.signature_ok and not result.trusted
    assert result.reasons[0].startswith(f"unknown key {signed.key_id}")


def test_signed_by_another_key_fails_unless_that_key_is_trusted(
    signed: Certificate, key: Ed25519PrivateKey, other_key: Ed25519PrivateKey
) -> None:
    forged = resign_tree(tree_of(signed), other_key)
    bad = verify_certificate(forged, [key.public_key()])
    assert not bad.valid and bad.signature_ok and not bad.trusted
    assert any(r.startswith("unknown key") for r in bad.reasons)
    assert verify_certificate(forged, [key.public_key(), other_key.public_key()]).valid


def test_swapping_the_embedded_key_but_keeping_a_trusted_key_id_fails(
    signed: Certificate, key: Ed25519PrivateKey, other_key: Ed25519PrivateKey
) -> None:
    forged = resign_tree(tree_of(signed), other_key)
    forged["key_id"] = signed.key_id  # claim to be the trusted signer
    forged.pop("signature")
    forged["signature"] = base64.b64encode(other_key.sign(canonical_bytes(forged))).decode()
    result = verify_certificate(forged, [key.public_key()])
    assert not result.valid
    assert any("does not match the embedded public key" in r for r in result.reasons)


@pytest.mark.parametrize("signature", ["kept", "removed"])
def test_a_certificate_without_its_public_key_is_not_trusted(
    signed: Certificate, key: Ed25519PrivateKey, signature: str
) -> None:
    """The embedded public key emptied, the key id still a trusted one's: nothing was checked
    against any key, yet `trusted` said true; it does not, and the reason names the missing key
    (not an unknown one: the id is trusted)."""
    tree = tree_of(signed)
    tree["public_key"] = ""
    if signature == "removed":
        tree["signature"] = None
    result = verify_certificate(tree, [key.public_key()])
    assert not result.valid and not result.signature_ok
    assert not result.trusted
    if signature == "kept":
        assert "the certificate carries no public key" in result.reasons[0], result.reasons
    assert not any(r.startswith("unknown key") for r in result.reasons), result.reasons


def _set(tree: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    node: Any = tree
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value


EDITS = [
    (("question",), "When was it demolished?"),
    (("answer",), ANSWER.replace("1889", "1890")),
    (("claims", 0, "claim", "text"), "The Eiffel Tower was completed in 1890"),
    (("claims", 2, "decision"), "verified"),
    (("claims", 2, "decision"), "unverified"),
    (("claims", 1, "p_entail"), 0.99),
    (("claims", 1, "reason"), "trust me"),
    (("claims", 0, "stages", 0, "p_entail"), 0.5),
    (("policy", "tau_entail"), 0.1),
    (("policy", "tau_contradict"), 0.99),
    (("created_at",), "2027-01-01T00:00:00.000000Z"),
    (("config", "verify", "cascade"), ["checks"]),
    (("config", "policy", "tau_entail"), 0.2),
    (("models", 0, "sha256"), "cd" * 32),
    (("library_version",), "9.9.9"),
    (("claims", 0, "evidence", 0, "start"), 1),
    (("claims", 0, "evidence", 0, "doc_id"), "d2"),
]


@pytest.mark.parametrize(("path", "value"), EDITS, ids=[".".join(map(str, p)) for p, _ in EDITS])
def test_any_edit_fails(
    signed: Certificate, key: Ed25519PrivateKey, path: tuple[Any, ...], value: Any
) -> None:
    tree = tree_of(signed)
    _set(tree, path, value)
    result = verify_certificate(tree, [key.public_key()])
    assert not result.valid
    assert any("bad signature" in r for r in result.reasons)


def test_evidence_edit_with_its_hash_recomputed_still_fails(
    signed: Certificate, key: Ed25519PrivateKey
) -> None:
    tree = tree_of(signed)
    ev = tree["claims"][2]["evidence"][0]
    ev["text"] = "It opened to the public in 1925."
    ev["sha256"] = sha256_text(ev["text"])  # the attacker recomputes the evidence hash
    tree["claims"][2]["decision"] = "verified"
    raw = base64.b64decode(tree["public_key"])
    tree["key_id"] = hashlib.sha256(raw).hexdigest()[:16]  # and every other hash
    result = verify_certificate(tree, [key.public_key()])
    assert not result.valid and not result.signature_ok


def test_evidence_hash_mismatch_is_reported(signed: Certificate, key: Ed25519PrivateKey) -> None:
    tree = tree_of(signed)
    tree["claims"][0]["evidence"][0]["text"] = "The tower was completed in 1890."
    result = verify_certificate(tree, [key.public_key()])
    assert any(r.startswith("evidence hash mismatch: claim c1 evidence 0") for r in result.reasons)


def test_evidence_lookup_compares_stored_text(signed: Certificate, key: Ed25519PrivateKey) -> None:
    store = {c.id: c.text for c in CHUNKS}
    good = verify_certificate(
        signed, [key.public_key()], lambda ev: store[ev.chunk_id][ev.start : ev.end]
    )
    assert good.valid and good.evidence_checked == 6
    store["k2"] = store["k2"].replace("330", "331")
    bad = verify_certificate(
        signed, [key.public_key()], lambda ev: store[ev.chunk_id][ev.start : ev.end]
    )
    assert not bad.valid
    assert any("stored text of chunk k2" in r for r in bad.reasons)


def test_evidence_without_text_is_a_warning_not_a_pass(key: Ed25519PrivateKey) -> None:
    cert = sign_certificate(
        build_certificate(
            "q", ANSWER, CLAIMS, VERDICTS, None, Settings(), [], include_evidence_text=False
        ),
        key,
    )
    result = verify_certificate(cert, [key.public_key()])
    assert result.valid and result.evidence_checked == 0
    assert len(result.warnings) == 3


def test_unsigned_certificate_never_verifies(unsigned: Certificate, key: Ed25519PrivateKey) -> None:
    result = verify_certificate(unsigned, [key.public_key()])
    assert not result.valid
    assert "the certificate is not signed" in result.reasons


def test_laxer_decision_than_the_policy_is_refused(key: Ed25519PrivateKey) -> None:
    lie = [ClaimDecision(claim_id="c3", decision="verified", reason="looks fine")]
    with pytest.raises(CertificateError, match="c3 is marked verified but the policy decides"):
        build_certificate("q", ANSWER, CLAIMS, VERDICTS, lie, Settings(), [])
    stricter = [ClaimDecision(claim_id="c1", decision="unverified", reason="reviewer said no")]
    cert = build_certificate("q", ANSWER, CLAIMS, VERDICTS, stricter, Settings(), [])
    assert cert.claims[0].decision == "unverified"


def test_signer_that_records_an_unjustified_verified_is_caught(
    unsigned: Certificate, key: Ed25519PrivateKey
) -> None:
    records = list(unsigned.claims)
    records[2] = records[2].model_copy(update={"decision": "verified"})
    cert = sign_certificate(unsigned.model_copy(update={"claims": tuple(records)}), key)
    result = verify_certificate(cert, [key.public_key()])
    assert result.signature_ok and not result.valid
    assert any("claim c3 is recorded verified" in r for r in result.reasons)


def test_a_verified_claim_without_its_contradiction_score_is_caught(
    unsigned: Certificate, key: Ed25519PrivateKey
) -> None:
    """A p_contradict that is not recorded is no score, not a score of 0: the claim's own scores
    do not justify VERIFIED, so a signer that leaves it out is caught like any other."""
    records = list(unsigned.claims)
    assert records[0].decision == "verified"
    records[0] = records[0].model_copy(update={"p_contradict": None})
    cert = sign_certificate(unsigned.model_copy(update={"claims": tuple(records)}), key)
    result = verify_certificate(cert, [key.public_key()])
    assert result.signature_ok and result.trusted and not result.valid
    assert any("claim c1 is recorded verified" in r for r in result.reasons)


def test_schema_errors_are_reported(signed: Certificate, key: Ed25519PrivateKey) -> None:
    tree = tree_of(signed)
    tree["extra"] = 1
    result = verify_certificate(tree, [key.public_key()])
    assert not result.valid and result.reasons[0].startswith("schema:")
    tree = tree_of(signed)
    tree["claims"][0]["p_entail"] = "0.93"  # a string is not a number, even if it parses as one
    assert verify_certificate(tree, [key.public_key()]).reasons[0].startswith("schema:")
    tree = tree_of(signed)
    del tree["claims"][0]["claim"]["origin"]  # a default the schema would fill in
    assert verify_certificate(tree, [key.public_key()]).reasons[0].startswith("schema:")


def test_write_load_verify_roundtrip(
    signed: Certificate, key: Ed25519PrivateKey, tmp_path: Path
) -> None:
    path = tmp_path / "cert.json"
    write_certificate(signed, path)
    assert load_certificate(path) == signed
    assert verify_certificate(path, [key.public_key()]).valid
    # reformatting the file (indent, key order) does not matter: the canonical form is signed
    tree = json.loads(path.read_text())
    path.write_text(json.dumps(dict(reversed(tree.items())), separators=(",", ":")))
    assert verify_certificate(path, [key.public_key()]).valid


def test_duplicate_keys_are_refused(signed: Certificate, tmp_path: Path) -> None:
    path = tmp_path / "dup.json"
    text = json.dumps(signed.model_dump(mode="json"))
    path.write_text(text[:-1] + ', "question": "other"}')
    with pytest.raises(InputError, match="duplicate key 'question'"):
        verify_certificate(path)


def test_a_file_that_is_no_certificate_says_why_in_one_line(
    signed: Certificate, tmp_path: Path
) -> None:
    """`certificate show`, `prove` and `verify --log` read with `load_certificate`: its error is
    the field and what is wrong with it, not pydantic's report (lines, the input quoted)."""
    tree = tree_of(signed)
    tree["claims"][0]["p_entail"] = "\x1b[32mVERIFIED"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(tree))
    with pytest.raises(InputError) as info:
        load_certificate(path)
    message = info.value.message
    assert "\n" not in message and "\x1b" not in message and "errors.pydantic.dev" not in message
    assert (
        message
        == f"{path} is not a valid certificate: claims.0.p_entail: Input should be a valid number"
    )


def test_unsigned_is_never_written(unsigned: Certificate, tmp_path: Path) -> None:
    with pytest.raises(CertificateError, match="unsigned"):
        write_certificate(unsigned, tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()


def test_missing_verdict_is_recorded_unverified() -> None:
    cert = build_certificate("q", ANSWER, CLAIMS, VERDICTS[:1], None, Settings(), [])
    assert [r.decision for r in cert.claims] == ["verified", "unverified", "unverified"]
    assert cert.claims[1].label is None and cert.claims[1].complete is False


def test_created_at_defaults_to_now_utc() -> None:
    cert = build_certificate("q", "a", [], [], None, Settings(), [])
    assert cert.created_at.endswith("Z") and cert.created_at > WHEN.isoformat()


# --- property: any random edit of the signed JSON tree fails ------------------------------


def _leaves(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in _leaves(v, (*path, k))] or [path]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _leaves(v, (*path, i))] or [path]
    return [path]


JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**40), max_value=2**40)
    | st.floats(allow_nan=False, allow_infinity=False, width=64)
    | st.text(max_size=20)
)


def _same(a: Any, b: Any) -> bool:
    return (type(a) is type(b) and a == b) or canonical_bytes(a) == canonical_bytes(b)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_random_edits_never_verify(
    signed: Certificate, key: Ed25519PrivateKey, data: st.DataObject
) -> None:
    tree = tree_of(signed)
    paths = [p for p in _leaves(tree) if p and p[0] != "signature"]
    path = data.draw(st.sampled_from(paths))
    kind = data.draw(st.sampled_from(["replace", "delete", "add"]))
    parent: Any = tree
    for p in path[:-1]:
        parent = parent[p]
    if kind == "replace":
        new = data.draw(JSON_SCALARS | st.lists(JSON_SCALARS, max_size=2))
        if _same(new, parent[path[-1]]):
            return
        parent[path[-1]] = new
    elif kind == "delete":
        del parent[path[-1]]
    else:
        if isinstance(parent, dict):
            name = data.draw(st.text(min_size=1, max_size=8))
            if name in parent:
                return
            parent[name] = data.draw(JSON_SCALARS)
        else:
            parent.append(data.draw(JSON_SCALARS))
    result = verify_certificate(tree, [key.public_key()])
    assert not result.valid


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(max_size=5), JSON_SCALARS, max_size=8), st.randoms())
def test_canonical_json_ignores_key_order(d: dict[str, Any], rnd: Any) -> None:
    items = list(d.items())
    rnd.shuffle(items)
    shuffled = dict(items)
    nested = {"z": d, "a": [shuffled]}
    assert canonical_bytes(shuffled) == canonical_bytes(d)
    assert canonical_bytes(nested) == canonical_bytes({"a": [d], "z": shuffled})
    assert b" " not in canonical_bytes({"k": [1, 2]})


def test_canonical_json_reference_vectors() -> None:
    # RFC 8785 section 3.2.2 / 3.2.3: sorted keys, ECMAScript numbers, minimal escapes
    assert canonical_bytes({"b": 1.0, "a": [1e21, 1e-7, 0.1, -0.0]}) == (
        b'{"a":[1e+21,1e-7,0.1,0],"b":1}'
    )
    assert canonical_bytes({"\u20ac": "\n\u00e9", "1": None}) == (
        b'{"1":null,"\xe2\x82\xac":"\\n\xc3\xa9"}'
    )
    with pytest.raises(CertificateError):
        canonical_bytes({"x": float("nan")})


def test_certificate_records_the_presets_thresholds(key: Ed25519PrivateKey) -> None:
    cert = build_certificate(
        "q", ANSWER, CLAIMS, VERDICTS, None, Settings(policy={"preset": "strict"}), []
    )
    assert (cert.policy.preset, cert.policy.tau_entail, cert.policy.tau_contradict) == (
        "strict",
        0.8,
        0.2,
    )
    # c2 has p_entail 0.81 >= 0.8 and p_contradict 0.04 < 0.2: still verified; c1 too
    assert [r.decision for r in cert.claims] == ["verified", "verified", "blocked"]
    assert verify_certificate(sign_certificate(cert, key), [key.public_key()]).valid


def test_evidence_offsets_must_match_the_text(
    unsigned: Certificate, key: Ed25519PrivateKey
) -> None:
    records = list(unsigned.claims)
    ev = records[0].evidence[0].model_copy(update={"end": records[0].evidence[0].end + 5})
    records[0] = records[0].model_copy(update={"evidence": (ev,)})
    cert = sign_certificate(unsigned.model_copy(update={"claims": tuple(records)}), key)
    result = verify_certificate(cert, [key.public_key()])
    assert result.signature_ok and not result.valid
    assert any("do not match the length of its text" in r for r in result.reasons)
