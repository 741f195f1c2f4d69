"""API keys: keyed HMACs only, scopes, revocation seen by a running server, legacy argon2."""

from __future__ import annotations

import stat
import time
from pathlib import Path
from typing import Any

import pytest

from affidavit.core.errors import ConfigError
from affidavit.core.service import ApiKeyInfo
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


def test_a_revocation_seen_while_a_key_is_checked_is_not_undone_by_the_cache(
    tmp_path: Path,
) -> None:
    """A check computed from the key file as it was must not enter the cache after another
    request re-read the file (and emptied the cache) for a revocation: the revoked key was then
    accepted from the cache until the file changed again."""
    path = tmp_path / "keys.json"
    admin = ApiKeyStore(path)
    server = ApiKeyStore(path)
    token, info = admin.create("ci", "write")
    listing = ApiKeyStore._info

    def revoked_meanwhile(rec: dict[str, Any]) -> ApiKeyInfo:
        # the check has read the file and found the key good, and released the lock before
        # caching it: now the key is revoked and another request's thread re-reads the file
        if not server._lock.locked():
            time.sleep(0.01)  # a new mtime
            admin.revoke(info.id)
            server.active()
        return listing(rec)

    server._info = revoked_meanwhile  # type: ignore[method-assign]
    server.authenticate(token)  # this one request raced the revocation
    del server._info
    assert server.known(token) is None
    with pytest.raises(AuthError, match="revoked"):
        server.authenticate(token)


def test_a_revocation_within_the_same_mtime_tick_is_seen(tmp_path: Path) -> None:
    """The running server noticed a changed key file by its mtime alone: a revocation written
    within the file system's timestamp granularity of the previous write (coarse clocks, 1-2 s
    on some file systems) was never seen, and the revoked key stayed valid."""
    import os

    path = tmp_path / "keys.json"
    admin = ApiKeyStore(path)
    server = ApiKeyStore(path)
    token, info = admin.create("ci", "write")
    assert server.authenticate(token).id == info.id
    before = path.stat()
    admin.revoke(info.id)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # the same tick
    assert server.known(token) is None
    with pytest.raises(AuthError, match="revoked"):
        server.authenticate(token)
    assert not server.active()


@pytest.mark.parametrize(
    "keys",
    [
        "[1]",
        '["afd_x"]',
        "[{}]",
        '[{"id": "0a0b0c0d"}]',
        '[{"id": "0a0b0c0d", "name": "x", "scope": "admin", "created_at": "2026-01-01T00:00:00"}]',
        '[{"id": 7, "name": "x", "scope": "read", "created_at": "2026-01-01T00:00:00"}]',
        '[{"id": "0a0b0c0d", "name": "x", "scope": "read", "created_at": "yesterday"}]',
    ],
)
def test_a_damaged_key_record_is_a_config_error(tmp_path: Path, keys: str) -> None:
    """A record that is not a key (not an object, or missing or invalid fields) was dropped
    silently (the list then read as "no keys") or crashed the check (KeyError: a 500)."""
    path = tmp_path / "keys.json"
    path.write_text('{"keys": ' + keys + "}")
    store = ApiKeyStore(path)
    with pytest.raises(ConfigError, match="damaged"):
        store.ever_had_keys()
    with pytest.raises(ConfigError, match="damaged"):
        store.authenticate("afd_0a0b0c0d_" + "x" * 43)
    with pytest.raises(ConfigError, match="damaged"):
        ApiKeyStore(path).list()
    with pytest.raises(ConfigError, match="damaged"):
        ApiKeyStore(path).create("next", "read")  # never rewritten without the bad record
    assert path.read_text() == '{"keys": ' + keys + "}"


def test_a_key_file_that_cannot_even_be_looked_at_is_a_config_error(tmp_path: Path) -> None:
    """An error other than "not found" from the file's stat (here: a parent that is a file;
    likewise a directory without search permission) escaped as OSError: a 500 and a traceback
    for every request, and an app that could not be built at all."""
    blocker = tmp_path / "home"
    blocker.write_text("a file where the key file's folder should be")
    store = ApiKeyStore(blocker / "api_keys.json")
    with pytest.raises(ConfigError, match="cannot read API keys"):
        store.ever_had_keys()
    with pytest.raises(ConfigError, match="cannot read API keys"):
        store.active()


def test_a_damaged_or_unreachable_key_file_refuses_every_request(tmp_path: Path) -> None:
    """Through the app (loopback, no key when it starts): a key file whose records are damaged,
    or whose folder cannot be looked at, refuses with 503, never opens and never answers 500."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from affidavit.core.settings import Settings
    from affidavit.server.app import create_app

    home = tmp_path / "home"
    home.mkdir()
    keys = home / "api_keys.json"
    keys.write_text('{"keys": [1]}')  # read as "no key ever": the server ran open
    settings = Settings(home=home, store={"path": tmp_path / "store"})
    client = TestClient(create_app(settings), raise_server_exceptions=False)
    assert client.get("/v1/jobs/nope").status_code == 503
    keys.write_text('{"keys": [{"id": "0a0b0c0d"}]}')
    for auth in ({}, {"Authorization": "Bearer afd_0a0b0c0d_" + "x" * 43}):
        r = client.get("/v1/jobs/nope", headers=auth)
        assert r.status_code == 503, r.text
    keys.unlink()
    home.rmdir()
    home.write_text("not a folder")  # stat: NotADirectoryError
    r = client.get("/v1/jobs/nope")
    assert r.status_code == 503, r.text
    # an app built while it is so: it starts closed, never crashes nor opens
    fresh = TestClient(create_app(settings), raise_server_exceptions=False)
    assert fresh.get("/v1/jobs/nope").status_code == 503


def test_a_revocation_is_never_lost_to_a_concurrent_rewrite_of_the_file(tmp_path: Path) -> None:
    """Each writer (``keys api create``/``revoke``, the server upgrading a legacy record) read
    the file, changed its copy and replaced the file, with no lock between processes: a
    revocation written in between was overwritten, and the revoked key was valid again while
    ``revoke`` had said it was revoked."""
    import json
    import threading

    path = tmp_path / "keys.json"
    admin = ApiKeyStore(path)
    _, old = admin.create("old", "read")
    writer = ApiKeyStore(path)  # another process: here, one creating a key
    write = writer._write
    revoking: list[threading.Thread] = []

    def slow_write(records: list[dict[str, Any]]) -> None:
        if not revoking:  # between this writer's read and its write, `revoke` runs
            t = threading.Thread(target=admin.revoke, args=(old.id,))
            revoking.append(t)
            t.start()
            t.join(0.5)  # without a lock between writers, it is done by now
        write(records)

    writer._write = slow_write  # type: ignore[method-assign]
    writer.create("new", "read")
    revoking[0].join(10)
    records = {r["name"]: r for r in json.loads(path.read_text())["keys"]}
    assert set(records) == {"old", "new"}
    assert records["old"]["revoked_at"] is not None, records
