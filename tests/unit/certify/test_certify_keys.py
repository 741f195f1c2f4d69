"""Signing keys: created 0600, never overwritten silently, found from settings, clear errors."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from affidavit.certify import default_key_path, generate_key, key_id, load_signing_key, trusted_keys
from affidavit.certify.keys import load_private_key, load_public_key, public_key_path
from affidavit.core.errors import CertificateError, SigningKeyError
from affidavit.core.settings import Settings, load_settings


def test_generate_writes_private_0600_and_public_beside(tmp_path: Path) -> None:
    path = tmp_path / "keys" / "signing.pem"
    key = generate_key(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    pub = public_key_path(path)
    assert pub.name == "signing.pub.pem"
    assert key_id(load_public_key(pub)) == key_id(key.public_key())
    assert key_id(load_private_key(path).public_key()) == key_id(key.public_key())


def test_never_overwrites_silently(tmp_path: Path) -> None:
    path = tmp_path / "signing.pem"
    first = generate_key(path)
    with pytest.raises(SigningKeyError, match=r"already exists.*--force"):
        generate_key(path)
    assert key_id(load_private_key(path).public_key()) == key_id(first.public_key())
    second = generate_key(path, force=True)
    assert key_id(load_private_key(path).public_key()) == key_id(second.public_key())
    assert key_id(second.public_key()) != key_id(first.public_key())


def test_default_location_follows_affidavit_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AFFIDAVIT_HOME", str(tmp_path / "h"))
    settings = load_settings()
    assert default_key_path(settings) == tmp_path / "h" / "keys" / "signing.pem"
    explicit = Settings(certify={"key_path": tmp_path / "k.pem"})
    assert default_key_path(explicit) == tmp_path / "k.pem"


def test_missing_key_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SigningKeyError, match="run `affidavit keys generate`"):
        load_signing_key(Settings(home=tmp_path))


def test_not_an_ed25519_key_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pem"
    bad.write_text("-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n")
    with pytest.raises(SigningKeyError, match="cannot be read as a PEM private key"):
        load_private_key(bad)
    with pytest.raises(CertificateError):
        load_public_key(tmp_path / "missing.pub.pem")


def test_trusted_keys_gather_own_settings_and_extra(tmp_path: Path) -> None:
    own = generate_key(tmp_path / "home" / "keys" / "signing.pem")
    friend = generate_key(tmp_path / "friend.pem")
    stranger = generate_key(tmp_path / "stranger.pem")
    settings = Settings(
        home=tmp_path / "home", certify={"trusted_keys": [tmp_path / "friend.pub.pem"]}
    )
    keys = trusted_keys(settings, [tmp_path / "stranger.pub.pem"])
    assert set(keys) == {key_id(k.public_key()) for k in (own, friend, stranger)}
    assert key_id(own.public_key()) not in trusted_keys(settings, include_own=False)


def test_encrypted_key_needs_its_passphrase(tmp_path: Path) -> None:
    path = tmp_path / "home" / "keys" / "signing.pem"
    key = generate_key(path, passphrase="correct horse")
    assert b"ENCRYPTED PRIVATE KEY" in path.read_bytes()
    with pytest.raises(
        SigningKeyError, match="is encrypted: set AFFIDAVIT_CERTIFY__KEY_PASSPHRASE"
    ):
        load_private_key(path)
    with pytest.raises(SigningKeyError, match="passphrase is wrong"):
        load_private_key(path, "battery staple")
    assert key_id(load_private_key(path, "correct horse").public_key()) == key_id(key.public_key())
    settings = Settings(home=tmp_path / "home", certify={"key_passphrase": "correct horse"})
    assert key_id(load_signing_key(settings).public_key()) == key_id(key.public_key())
    assert "correct horse" not in str(settings.effective())
