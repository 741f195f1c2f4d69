"""API keys: argon2 hashes only, scopes, revocation seen by a running server."""

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
    assert "$argon2id$" in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
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
