"""The log routes of a real server: a certificate from POST /v1/ask is in the log, and what the
routes return verifies offline against the signed checkpoint (issue 30)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from affidavit.certify.keys import load_public_key
from affidavit.cli.main import app
from affidavit.core.service import AskResponse
from affidavit.core.tlog import Checkpoint, ConsistencyProof, InclusionProof, LogEntryRecord
from affidavit.testing.server import ServedApi as Server
from affidavit.tlog.certificates import certificate_entry, check_log_entry
from affidavit.tlog.merkle import leaf_hash, verify_consistency, verify_inclusion
from affidavit.tlog.note import open_checkpoint

pytestmark = pytest.mark.integration


def _ask(served: Server) -> AskResponse:
    r = httpx.post(
        served.url + "/v1/ask",
        json={"question": "Who discovered polonium?", "mode": "mixed"},
        headers=served.auth(),
        timeout=60,
    )
    assert r.status_code == 200, r.text
    return AskResponse.model_validate(r.json())


def test_a_served_certificate_is_logged_and_the_log_routes_prove_it(served: Server) -> None:
    key = load_public_key(served.home / "keys" / "signing.pub.pem")
    first = _ask(served).certificate
    second = _ask(served).certificate
    assert first is not None and second is not None
    assert first.log_entry is not None and second.log_entry is not None
    assert check_log_entry(first, [key]) == [] and check_log_entry(second, [key]) == []

    get = lambda path, **params: httpx.get(  # noqa: E731
        served.url + path, params=params, headers=served.auth("read")
    )
    r = get("/v1/log/checkpoint")
    assert r.status_code == 200, r.text
    cp = open_checkpoint(Checkpoint.model_validate(r.json()).note, [key])
    assert cp.tree_size >= second.log_entry.checkpoint.tree_size

    index = first.log_entry.inclusion.leaf_index
    record = LogEntryRecord.model_validate(get(f"/v1/log/entries/{index}").json())
    assert record.entry == certificate_entry(first).hex()
    assert get(f"/v1/log/entries/{cp.tree_size}").status_code == 404

    entry = certificate_entry(first)
    proof = InclusionProof.model_validate(
        get("/v1/log/proof/inclusion", hash=entry.hex(), size=cp.tree_size).json()
    )
    verify_inclusion(
        leaf_hash(entry),
        proof.leaf_index,
        cp.tree_size,
        [bytes.fromhex(h) for h in proof.hashes],
        bytes.fromhex(cp.root_hash),
    )
    assert get("/v1/log/proof/inclusion", hash="00" * 32).status_code == 404

    old = first.log_entry.checkpoint
    consistency = ConsistencyProof.model_validate(
        get("/v1/log/proof/consistency", **{"from": old.tree_size, "to": cp.tree_size}).json()
    )
    if old.tree_size < cp.tree_size:
        verify_consistency(
            old.tree_size,
            cp.tree_size,
            bytes.fromhex(old.root_hash),
            bytes.fromhex(cp.root_hash),
            [bytes.fromhex(h) for h in consistency.hashes],
        )
    assert check_log_entry(first, [key], newer=cp.note, consistency=consistency) == []
    assert get("/v1/log/proof/consistency", **{"from": cp.tree_size + 1}).status_code == 404
    assert httpx.get(served.url + "/v1/log/checkpoint").status_code == 401


def test_a_witness_follows_a_served_log_over_http(served: Server, tmp_path: Path) -> None:
    env = {"AFFIDAVIT_HOME": str(served.home), "AFFIDAVIT_API_KEY": served.keys["read"]}
    args = ["log", "witness", served.url, "--state", str(tmp_path / "witness")]
    _ask(served)
    first = CliRunner().invoke(app, args, env=env)
    assert first.exit_code == 0 and "first-sight" in first.output, first.output
    _ask(served)
    second = CliRunner().invoke(app, args, env=env)
    assert second.exit_code == 0 and "accepted (consistent)" in second.output, second.output
    no_key = CliRunner().invoke(app, args, env={"AFFIDAVIT_HOME": str(served.home)})
    assert no_key.exit_code == 2 and "401" in no_key.output
