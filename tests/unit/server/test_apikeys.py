"""API keys: keyed HMACs only, scopes, revocation seen by a running server, legacy argon2."""

from __future__ import annotations

import stat
import time
from pathlib import Path

import pytest

from affidavit.core.errors import ConfigError
from affidavit.server import is_loopback
from affidavit.server.apikeys import ApiKeyStore, AuthError
from affidavit.server.jobs import safe_filename


def test_create_authenticate_revoke(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    admin = ApiKeyStore(path)
    server = ApiKeyStore(path)  # another process's view of the same file
    assert not server.active()
    token, info = admin.create("ci", "write")
    assert token.startswith(f"afd_{info.id}_")
    assert server.active()
    assert server.authenticate(token).scope == "write"
    assert server.authenticate(token).id == info.id  # cached
    text = path.read_text()
    assert token not in text and token.split("_", 2)[2] not in text
    assert '"hmac"' in text and "$argon2id$" not in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    secret = path.with_name(path.name + ".secret")
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    time.sleep(0.01)  # a new mtime
    admin.revoke(info.id)
    with pytest.raises(AuthError, match="revoked") as exc:
        server.authenticate(token)
    assert exc.value.status == 401
    assert not server.active()
    assert [k.revoked_at is not None for k in admin.list()] == [True]


def test_wrong_tokens(tmp_path: Path) -> None:
    keys = ApiKeyStore(tmp_path / "keys.json")
    _token, info = keys.create("reader", "read")
    for bad in ("nope", "afd_x", f"afd_{info.id}_wrong", "afd_00000000_secret"):
        with pytest.raises(AuthError) as exc:
            keys.authenticate(bad)
        assert exc.value.status == 401
    with pytest.raises(ConfigError, match="no API key"):
        keys.revoke("ffffffff")
    with pytest.raises(ConfigError):
        keys.create(" ", "read")
    with pytest.raises(ConfigError, match="read or write"):
        keys.create("x", "admin")  # type: ignore[arg-type]


def test_damaged_file_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="damaged"):
        ApiKeyStore(path).active()


def test_loopback_and_file_names() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("127.3.2.1")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.0.0.1") and not is_loopback("host")
    assert safe_filename("C:\\Users\\me\\report.pdf") == "report.pdf"
    assert safe_filename("a/b/<script>.html") == "_script_.html"
    with pytest.raises(Exception, match="unusable"):
        safe_filename("../..")


def test_known_and_unknown_ids_cost_the_same_and_little(tmp_path: Path) -> None:
    """Issue 25.7: a wrong secret for a real id cost one argon2id check (150 ms, 64 MiB),
    an unknown id 1 ms: a denial of service and a timing signal."""
    keys = ApiKeyStore(tmp_path / "keys.json")
    _token, info = keys.create("reader", "read")

    def cost(tok: str) -> float:
        best = float("inf")
        for _ in range(30):
            t = time.perf_counter()
            with pytest.raises(AuthError):
                keys.authenticate(tok)
            best = min(best, time.perf_counter() - t)
        return best

    real_id = cost(f"afd_{info.id}_" + "x" * 43)
    unknown_id = cost("afd_00000000_" + "x" * 43)
    assert real_id < 0.005 and unknown_id < 0.005
    assert abs(real_id - unknown_id) < 0.002


def test_a_legacy_argon2_record_still_works_and_is_upgraded(tmp_path: Path) -> None:
    import json

    from argon2 import PasswordHasher

    path = tmp_path / "keys.json"
    token = "afd_0a0b0c0d_" + "s" * 43
    rec = {
        "id": "0a0b0c0d",
        "name": "old",
        "scope": "read",
        "hash": PasswordHasher().hash(token),
        "created_at": "2026-01-01T00:00:00+00:00",
        "revoked_at": None,
    }
    path.write_text(json.dumps({"keys": [rec]}))
    keys = ApiKeyStore(path)
    with pytest.raises(AuthError):
        keys.authenticate(token[:-1] + "t")
    assert keys.authenticate(token).name == "old"
    stored = json.loads(path.read_text())["keys"][0]
    assert "hmac" in stored and "hash" not in stored
    assert ApiKeyStore(path).authenticate(token).name == "old"  # a fresh process, by HMAC


def test_a_missing_secret_refuses_never_guesses(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    keys = ApiKeyStore(path)
    token, _ = keys.create("ci", "read")
    path.with_name(path.name + ".secret").unlink()
    with pytest.raises(ConfigError, match="secret"):
        ApiKeyStore(path).authenticate(token)


def test_peek_sees_only_keys_already_checked(tmp_path: Path) -> None:
    keys = ApiKeyStore(tmp_path / "keys.json")
    token, info = keys.create("reader", "read")
    assert not keys.peek(token)  # never checked: the tarpit treats it as unknown
    keys.authenticate(token)
    assert keys.peek(token)
    assert not keys.peek(f"afd_{info.id}_wrong")
    with pytest.raises(AuthError):
        keys.authenticate(f"afd_{info.id}_wrong")
    assert not keys.peek(f"afd_{info.id}_wrong")  # failures are never cached


def test_an_app_bound_beyond_loopback_never_runs_open(tmp_path: Path) -> None:
    """Issue 25.1: "no keys means loopback only" held only in `serve`'s start-up check; an app
    for a non-loopback address whose key file is missing by the time it starts served everyone
    (here: past the key check to the 503 of models not loaded)."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from affidavit.core.settings import Settings
    from affidavit.server.app import create_app

    settings = Settings(
        home=tmp_path / "home", store={"path": tmp_path / "store"}, serve={"host": "0.0.0.0"}
    )
    client = TestClient(create_app(settings))  # no lifespan: nothing loads
    r = client.get("/v1/search", params={"q": "x"})
    assert r.status_code == 401, r.text
    assert client.get("/healthz").status_code == 200
