"""API keys of ``affidavit serve``: created, listed and revoked by ``affidavit keys api``.

A key is the token ``afd_<id>_<secret>`` (a 256-bit random secret); the file
(``serve.keys_path``, default ``<home>/api_keys.json``, mode 0600) holds only its id, name,
scope and an HMAC-SHA-256 of the whole token under a server secret kept beside it
(``api_keys.json.secret``, mode 0600, created with the first key), so a leaked key file gives no
usable key. The token is shown once, at creation, and is never logged. A running server re-reads
the file when it changes, so a revocation takes effect at the next request.

Checking a token costs one HMAC (microseconds) whether its id exists or not, compared in
constant time: no slow hash an unauthenticated client can make the server compute (issue 25.7:
argon2id took 135-186 ms and 64 MiB a guess, and answered unknown ids 150 times faster, a timing
signal). A password hash buys nothing for a 256-bit random secret. Key files written by earlier
versions (argon2id hashes) still work: a key's first successful check rewrites its record with
the HMAC, and the server limits token checks per client address before any hashing.

Examples:
    >>> store = ApiKeyStore(tmp_path / "keys.json")  # doctest: +SKIP
    >>> token, info = store.create("ci", "read")  # doctest: +SKIP
    >>> store.authenticate(token).scope  # doctest: +SKIP
    'read'
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import secrets
import tempfile
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from affidavit.core.errors import AffidavitError, ConfigError, MissingDependencyError
from affidavit.core.service import ApiKeyInfo, ApiScope
from affidavit.core.settings import Settings

__all__ = ["ApiKeyStore", "AuthError", "default_keys_path"]

_PREFIX = "afd_"


class AuthError(AffidavitError):
    """A request's credentials are missing or wrong (401) or not enough (403)."""

    stage = "serve"

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


def default_keys_path(settings: Settings) -> Path:
    """``serve.keys_path``, else ``<home>/api_keys.json``."""
    return settings.serve.keys_path or settings.resolved_home() / "api_keys.json"


def _secret_path(keys_path: Path) -> Path:
    return keys_path.with_name(keys_path.name + ".secret")


def _hasher() -> Any:
    try:
        from argon2 import PasswordHasher
    except ImportError as exc:
        raise MissingDependencyError("argon2-cffi", "server", purpose="API keys") from exc
    return PasswordHasher()


class ApiKeyStore:
    """The API key file; every method re-reads it, so several processes share one file.

    Args:
        path: the key file (created on the first ``create``).
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._checked: dict[str, ApiKeyInfo] = {}
        # what the file looked like when last read (device, inode, size, mtime, ctime): the
        # mtime alone misses a rewrite within the file system's timestamp granularity
        self._seen_stamp: tuple[int, ...] | None = None
        self._generation = 0  # counts re-reads; a check caches its key only within one
        self._records: list[dict[str, Any]] = []
        self._secret: bytes | None = None

    # -- the file ------------------------------------------------------------------------------

    def _read(self) -> list[dict[str, Any]]:
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise ConfigError(f"cannot read API keys {self.path}: {exc.strerror}") from exc
        try:
            data = json.loads(raw)
            keys = data["keys"]
            if not isinstance(keys, list):
                raise TypeError("keys is not a list")
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"API key file {self.path} is damaged: {exc}") from exc
        # every record must be a key: one dropped or read half would change what the file
        # allows (a list of damaged records read as "no key": an open server), or crash a check
        for n, rec in enumerate(keys, 1):
            try:
                if not isinstance(rec, dict) or not isinstance(rec["id"], str):
                    raise TypeError("not a key record")
                self._info(rec)
            except (ValueError, KeyError, TypeError) as exc:
                raise ConfigError(
                    f"API key file {self.path} is damaged: record {n} is not a valid key "
                    f"({type(exc).__name__})"
                ) from None
        return keys

    def _write(self, records: list[dict[str, Any]]) -> None:
        """Replace the file (call inside `_changing`)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=self.path.name + ".", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:  # mkstemp: mode 0600
                json.dump({"keys": records}, fh, indent=1)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    @contextlib.contextmanager
    def _changing(self) -> Iterator[None]:
        """Hold the lock of every writer of the file, in this process (the thread lock) and
        in others (``flock`` on ``<keys>.lock``): read, change and write as one step. Without
        it, a `revoke` written between another writer's read and write was lost."""
        with self._lock:
            lock = self.path.with_name(self.path.name + ".lock")
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
            except OSError as exc:
                raise ConfigError(f"cannot lock API keys {lock}: {exc.strerror}") from exc
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)  # releases the flock

    def _key(self, *, create: bool = False) -> bytes:
        """The server secret the token HMACs are keyed with.

        Raises:
            ConfigError: it is missing while keys exist, or unreadable (never a guessable key).
        """
        if self._secret is not None:
            return self._secret
        path = _secret_path(self.path)
        try:
            raw = path.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            if not create:
                raise ConfigError(
                    f"the API key secret {path} is missing: keys cannot be checked (restore it, "
                    "or revoke and re-create the keys)"
                ) from None
            path.parent.mkdir(parents=True, exist_ok=True)
            raw = secrets.token_hex(32)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="ascii") as fh:
                fh.write(raw + "\n")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read the API key secret {path}: {exc}") from exc
        try:
            key = bytes.fromhex(raw)
        except ValueError as exc:
            raise ConfigError(f"the API key secret {path} is damaged") from exc
        if len(key) < 32:
            raise ConfigError(f"the API key secret {path} is damaged (too short)")
        self._secret = key
        return key

    def _mac(self, token: str, key: bytes) -> str:
        return hmac.new(key, token.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()

    def _refresh(self) -> list[dict[str, Any]]:
        """The records, re-read when the file changed (call with the lock held).

        Raises:
            ConfigError: the file cannot be looked at or read, or is damaged.
        """
        try:
            st = self.path.stat()
            stamp: tuple[int, ...] | None = (
                st.st_dev,
                st.st_ino,
                st.st_size,
                st.st_mtime_ns,
                st.st_ctime_ns,
            )
        except FileNotFoundError:
            stamp = None
        except OSError as exc:
            raise ConfigError(f"cannot read API keys {self.path}: {exc.strerror}") from exc
        if stamp != self._seen_stamp:
            self._checked.clear()  # a revoked key must not live on in the cache
            self._generation += 1
            self._records = []
            self._seen_stamp = None  # a failed read is tried again at the next call
            self._records = self._read()
            self._seen_stamp = stamp
        return self._records

    @staticmethod
    def _info(rec: dict[str, Any]) -> ApiKeyInfo:
        return ApiKeyInfo(
            id=rec["id"],
            name=rec["name"],
            scope=rec["scope"],
            created_at=rec["created_at"],
            revoked_at=rec.get("revoked_at"),
        )

    # -- management ----------------------------------------------------------------------------

    def create(self, name: str, scope: ApiScope) -> tuple[str, ApiKeyInfo]:
        """Make a key; returns the token (shown once) and its listing."""
        if not name.strip():
            raise ConfigError("an API key needs a non-empty --name")
        if scope not in ("read", "write"):
            raise ConfigError(f"scope must be read or write, got {scope!r}")
        with self._changing():
            records = self._read()
            key_id = secrets.token_hex(4)
            while any(r["id"] == key_id for r in records):
                key_id = secrets.token_hex(4)
            token = f"{_PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
            rec = {
                "id": key_id,
                "name": name.strip(),
                "scope": scope,
                "hmac": self._mac(token, self._key(create=True)),
                "created_at": datetime.now(UTC).isoformat(),
                "revoked_at": None,
            }
            records.append(rec)
            self._write(records)
        return token, self._info(rec)

    def list(self) -> list[ApiKeyInfo]:
        """Every key, revoked ones included (no secrets)."""
        return [self._info(r) for r in self._read()]

    def revoke(self, key_id: str) -> ApiKeyInfo:
        """Revoke a key by id (or by its whole token).

        Raises:
            ConfigError: no such key.
        """
        if key_id.startswith(_PREFIX):
            key_id = key_id[len(_PREFIX) :].split("_", 1)[0]
        with self._changing():
            records = self._read()
            for rec in records:
                if rec["id"] == key_id:
                    if rec.get("revoked_at") is None:
                        rec["revoked_at"] = datetime.now(UTC).isoformat()
                        self._write(records)
                    return self._info(rec)
        raise ConfigError(f"no API key with id {key_id!r} (see `affidavit keys api list`)")

    # -- checking ------------------------------------------------------------------------------

    def _legacy_check(self, rec: dict[str, Any], token: str, mac: str) -> bool:
        """A record from an earlier version (argon2id): check it once, then store its HMAC."""
        from argon2.exceptions import VerificationError

        try:
            _hasher().verify(rec["hash"], token)
        except VerificationError:
            return False
        with self._changing():
            records = self._read()
            for r in records:
                if r["id"] == rec["id"] and "hmac" not in r:
                    r["hmac"] = mac
                    r.pop("hash", None)
                    self._write(records)
                    break
        return True

    def active(self) -> bool:
        """True when at least one key is not revoked (the server then requires a key)."""
        with self._lock:
            return any(r.get("revoked_at") is None for r in self._refresh())

    def ever_had_keys(self) -> bool:
        """True when the file lists any key, revoked ones included: a server that had keys
        never serves without one again (revoking the last key closes it, never opens it).

        Raises:
            ConfigError: the file is unreadable or damaged (the caller refuses, not opens).
        """
        with self._lock:
            return bool(self._refresh())

    def known(self, token: str) -> ApiKeyInfo | None:
        """The key of a token already checked since the file last changed (no argon2), or None."""
        digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
        with self._lock:
            self._refresh()
            return self._checked.get(digest)

    def peek(self, token: str) -> bool:
        """Whether ``token`` is in the cache of checked keys, without re-reading the file.

        For the tarpit in front of the server: a stale answer (a key revoked a moment ago) only
        lets the request through to `known`, which re-reads the file and refuses it. The
        SHA-256 is the cache's index, not a check (no key, no file, no lock).
        """
        digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
        return digest in self._checked

    def authenticate(self, token: str) -> ApiKeyInfo:
        """The key a bearer token belongs to.

        Raises:
            AuthError: (401) malformed, unknown or revoked token.
        """
        digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
        with self._lock:
            records = self._refresh()
            generation = self._generation
            known = self._checked.get(digest)
            if known is not None:
                return known
            if not token.startswith(_PREFIX) or token.count("_") < 2:
                raise AuthError(
                    "the bearer token is not an affidavit API key (afd_<id>_<secret>)", status=401
                )
            key_id = token[len(_PREFIX) :].split("_", 1)[0]
            rec = next((r for r in records if r["id"] == key_id), None)
            # one HMAC and one constant-time comparison, whether the id exists or not
            # a key file of an earlier version (argon2 only) gets its secret now; once any
            # record holds an HMAC, a missing secret is an error, never a new secret
            mac = self._mac(token, self._key(create=not any("hmac" in r for r in records)))
            stored = rec.get("hmac") if rec is not None else None
            ok = hmac.compare_digest(mac, stored if isinstance(stored, str) else "0" * 64)
        if rec is not None and not isinstance(stored, str) and isinstance(rec.get("hash"), str):
            ok = self._legacy_check(rec, token, mac)
        if rec is None or not ok:
            raise AuthError("unknown API key", status=401)
        if rec.get("revoked_at") is not None:
            raise AuthError(f"API key {key_id} was revoked at {rec['revoked_at']}", status=401)
        info = self._info(rec)
        with self._lock:
            # cached only if the file was not re-read meanwhile: a revocation seen by another
            # request in between emptied the cache, and this check predates it
            if self._generation == generation:
                self._checked[digest] = info
        return info
